"""NT-Xent, the paper's contrastive loss, for a stack of ensemble members.

For a batch of N anchors z_i and views z'_i (2N embeddings), with cosine similarities
``s_ij`` and temperature ``tau``:

    L = 1/(2N) * sum_{i=1}^{2N} -log( exp(s_{i,i'}/tau) / sum_{j != i} exp(s_{i,j}/tau) )

where i' is the partner (view of anchor i, or anchor of view i).  Computed with one batched
matrix product of L2-normalised embeddings: ``[K, 2N, 2N]`` similarities, no ``[2N, 2N, d]``
broadcast.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def nt_xent(z_anchor: torch.Tensor, z_view: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Per-member NT-Xent loss.  Inputs ``[K, N, d]`` (or ``[N, d]``); returns ``[K]`` (or scalar)."""
    squeeze = z_anchor.dim() == 2
    if squeeze:
        z_anchor, z_view = z_anchor.unsqueeze(0), z_view.unsqueeze(0)
    loss = nt_xent_pairs(torch.cat([z_anchor, z_view], dim=1), temperature)
    return loss[0] if squeeze else loss


def nt_xent_pairs(z: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """NT-Xent of ``[K, 2N, d]`` embeddings whose first N rows are anchors and last N their views
    (the layout the training loop already has: no split and re-concatenation).  Returns ``[K]``."""
    K, N2, _ = z.shape
    N = N2 // 2
    z = F.normalize(z, dim=-1)
    if temperature != 1.0:
        z = z * temperature ** -0.5  # s_ij / tau as one product, no [2N, 2N] division
    sim = torch.bmm(z, z.transpose(1, 2))  # [K, 2N, 2N]
    eye = torch.eye(2 * N, dtype=torch.bool, device=z.device)
    sim.masked_fill_(eye, float("-inf"))  # j != i (bmm's backward does not need its output)
    partner = torch.cat([torch.arange(N, 2 * N), torch.arange(N)]).to(z.device)
    loss = F.cross_entropy(sim.reshape(K * 2 * N, 2 * N), partner.repeat(K), reduction="none")
    return loss.view(K, 2 * N).mean(1)
