"""NT-Xent, the paper's contrastive loss, for a stack of ensemble members.

For a batch of N anchors z_i and views z'_i (2N embeddings), with cosine similarities
``s_ij`` and temperature ``tau``:

    L = 1/(2N) * sum_{i=1}^{2N} -log( exp(s_{i,i'}/tau) / sum_{j != i} exp(s_{i,j}/tau) )

where i' is the partner (view of anchor i, or anchor of view i).  Computed with one batched
matrix product of L2-normalised embeddings: ``[K, 2N, 2N]`` similarities, no ``[2N, 2N, d]``
broadcast, and a hand-written backward (one more bmm-sized product, no autograd passes over the
``[K, 2N, 2N]`` matrix): about a quarter less CPU time for the loss than autograd's.
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
    (the layout the training loop already has: no split and re-concatenation).  Returns ``[K]``.

    Computed by :class:`_NTXent` (one bmm forward, one fused softmax, a hand-written backward);
    :func:`nt_xent_pairs_reference` is the same loss through autograd."""
    return _NTXent.apply(z, float(temperature))


def nt_xent_pairs_reference(z: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The textbook form of :func:`nt_xent_pairs` (autograd through normalize, bmm, masked_fill,
    cross_entropy): the reference the fused loss is tested against."""
    K, N2, _ = z.shape
    N = N2 // 2
    z = F.normalize(z, dim=-1)
    if temperature != 1.0:
        z = z * temperature**-0.5
    sim = torch.bmm(z, z.transpose(1, 2))
    eye = torch.eye(2 * N, dtype=torch.bool, device=z.device)
    sim.masked_fill_(eye, float("-inf"))
    partner = torch.cat([torch.arange(N, 2 * N), torch.arange(N)]).to(z.device)
    loss = F.cross_entropy(sim.reshape(K * 2 * N, 2 * N), partner.repeat(K), reduction="none")
    return loss.view(K, 2 * N).mean(1)


class _NTXent(torch.autograd.Function):
    """NT-Xent with a hand-written backward (what :func:`nt_xent_pairs` computes).

    Forward: ``u = z / max(|z|, eps)``, ``S = (u / tau) u^T`` (one bmm), the diagonal set to
    -inf in place, ``P = softmax(S)`` row-wise (one fused kernel) and the loss of row i
    ``-log P_{i,i'}`` (``logsumexp_j S_ij - S_{i,i'}`` where that probability underflows).
    Backward, with ``G = g/(2N) (P - Y)`` (``Y``: the partners' one-hot, symmetric because the
    partner of a partner is the row itself): ``du = (G + G^T) u / tau
    = g/(2N) ((P + P^T) u - 2 u_{partner}) / tau``, i.e. ``bmm(P, u)`` plus ``P^T u`` accumulated
    into it (a transposed operand, no copy), instead of autograd's backward passes of
    cross_entropy, masked_fill and both bmm operands; then normalize's backward
    ``(du - u (u . du)) / |z|``.  Same loss and gradient up to float rounding (the tests compare
    it with :func:`nt_xent_pairs_reference` and check it against finite differences).

    A bfloat16 (or float16) ``z``, as ``matmul_precision: bf16`` gives it, runs the three
    ``[2N, 2N]`` products in that dtype and everything else (norms, softmax, the loss, the
    gradient's other terms) in float32; its gradient comes back in ``z``'s dtype.
    """

    @staticmethod
    def forward(ctx, z: torch.Tensor, temperature: float):
        K, N2, _ = z.shape
        N = N2 // 2
        low = z.dtype if z.dtype in (torch.bfloat16, torch.float16) else None
        if low is not None:  # (matmul_precision bf16) products in z's dtype, the rest in float32
            z = z.float()
        norm = z.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # F.normalize's eps
        u = z / norm
        ut = u if temperature == 1.0 else u * (1.0 / temperature)
        if low is None:
            S = torch.bmm(ut, u.transpose(1, 2))  # [K, 2N, 2N]: s_ij / tau
        else:
            S = torch.bmm(ut.to(low), u.to(low).transpose(1, 2)).float()
        S.diagonal(dim1=1, dim2=2).fill_(float("-inf"))  # j != i
        idx = torch.arange(N2, device=z.device)
        partner = torch.where(idx < N, idx + N, idx - N)
        P = torch.softmax(S, dim=-1)
        ppos = P[:, idx, partner]  # [K, 2N]
        rows = _partner_loss(S, ppos, idx, partner)
        del S
        ctx.save_for_backward(u, norm, P)
        ctx.temperature, ctx.low = temperature, low
        return rows.mean(1)

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        u, norm, P = ctx.saved_tensors
        K, N2, _ = u.shape
        low = ctx.low
        if low is None:
            du = torch.baddbmm(torch.bmm(P, u), P.transpose(1, 2), u)  # (P + P^T) u
        else:
            Pl, ul = P.to(low), u.to(low)
            du = torch.baddbmm(torch.bmm(Pl, ul), Pl.transpose(1, 2), ul).float()
        N = N2 // 2  # (the partner of row i < N is N + i: two halves, no gather of u)
        du[:, :N].sub_(u[:, N:], alpha=2.0)
        du[:, N:].sub_(u[:, :N], alpha=2.0)
        du.mul_((g / (N2 * ctx.temperature)).view(K, 1, 1))
        work = torch.mul(u, du)  # (one [K, 2N, d] buffer: u du, then u (u . du))
        torch.mul(u, work.sum(-1, keepdim=True), out=work)
        dz = du.sub_(work).div_(norm)  # (du - u (u . du)) / |z|, in place
        return (dz if low is None else dz.to(low)), None


SYNC_FREE = False
"""True: NT-Xent's sync-free form on the CPU too (as on a GPU; the same values): what
``bench/profile_epoch.py --launches`` sets to count the host reads a GPU would make."""


def _partner_loss(
    S: torch.Tensor, ppos: torch.Tensor, idx: torch.Tensor, partner: torch.Tensor, sync_free: bool | None = None
) -> torch.Tensor:
    """Each row's ``-log P_{i,i'}``, or ``logsumexp_j S_ij - S_{i,i'}`` where that probability
    underflowed to 0 (a tiny temperature).  On the CPU (eager) the exact form is computed only
    when some probability underflowed: reading the flag costs nothing there.  On a GPU, and while
    ``torch.compile`` traces, both forms are computed and picked element-wise: no host round trip
    and no branch on a tensor's value, so the step can be captured; the values are the same.
    ``sync_free``: force that form (None: as the device says)."""
    if sync_free is None:
        sync_free = SYNC_FREE or ppos.device.type != "cpu" or torch.compiler.is_compiling()
    if not sync_free:
        if bool((ppos > 0).all()):
            return -torch.log(ppos)
        return torch.logsumexp(S, dim=-1) - S[:, idx, partner]
    exact = torch.logsumexp(S, dim=-1) - S[:, idx, partner]
    return torch.where(ppos > 0, -torch.log(ppos), exact)
