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


SUBSETS_SHIFT_LIMIT = 80.0
"""``2 / temperature`` up to which :func:`nt_xent_subsets` exponentiates with a fixed shift (every
term at least ``exp(-80)``, a normal float32); above it (a temperature under 0.025) it takes
NT-Xent pair by pair (:func:`nt_xent_pairs`), whose softmax subtracts each row's own maximum."""


def nt_xent_subsets(z: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """NT-Xent over every pair of ``V`` views of the same rows, averaged over the pairs: ``z``
    ``[K, V, b, d]`` (view ``a``'s row ``r`` is ``z[:, a, r]``); returns ``[K]``, the mean over
    the ``V (V - 1) / 2`` pairs ``(a, c)`` of ``nt_xent_pairs(cat([z_a, z_c]))`` (SubTab's
    contrastive loss).

    The pairs share their similarities: one ``[K, V b, V b]`` product and one exponential of it
    serve all of them (:class:`_NTXentSubsets`), where the pairs one at a time compute each
    view's own block ``V - 1`` times: a third fewer products forward and two thirds fewer
    backward for ``V = 4``."""
    if z.dim() != 4 or z.shape[1] < 2:
        raise ValueError(f"nt_xent_subsets: z must be [K, V, b, d] with at least 2 views, got {list(z.shape)}")
    if 2.0 / temperature > SUBSETS_SHIFT_LIMIT:
        K, V, b, d = z.shape
        first, second = (torch.tensor(side, device=z.device) for side in zip(*_pairs(V)))
        both = torch.cat([z.index_select(1, first), z.index_select(1, second)], 2)
        return nt_xent_pairs(both.view(K * len(first), 2 * b, d), temperature).view(K, -1).mean(1)
    return _NTXentSubsets.apply(z, float(temperature))


def _pairs(V: int) -> list[tuple[int, int]]:
    return [(a, c) for a in range(V) for c in range(a + 1, V)]


def nt_xent_subsets_reference(z: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """:func:`nt_xent_subsets` pair by pair through :func:`nt_xent_pairs_reference` (autograd):
    the reference the shared form is tested against."""
    K, V, b, d = z.shape
    losses = [nt_xent_pairs_reference(torch.cat([z[:, a], z[:, c]], 1), temperature) for a, c in _pairs(V)]
    return torch.stack(losses, 1).mean(1)


class _NTXentSubsets(torch.autograd.Function):
    """:func:`nt_xent_subsets` with a hand-written backward.

    Forward: ``u = z / max(|z|, eps)`` over the ``n = V b`` rows, ``S = (u / tau) u^T`` (one bmm,
    ``[K, n, n]``), ``E = exp(S - 1/tau)`` with the diagonal 0 (a fixed shift: ``S <= 1/tau``);
    ``R[a, r, c]``: the sum of row ``ar`` of ``E`` over view ``c``'s columns.  In pair ``(a, c)``
    row ``r`` of view ``a`` has the denominator ``D[a, r, c] = R[a, r, a] + R[a, r, c]`` and the
    loss ``log D - (S[ar, cr] - 1/tau)``; the member's loss is their mean over the ``V (V - 1) b``
    rows of all pairs.  Backward, with ``g`` over that count: ``dS = g (E W - Y)``, ``W[ar, col]
    = w[a, r, view of col]``, ``w[a, r, c] = 1 / D[a, r, c]`` for ``c != a`` and ``w[a, r, a]``
    their sum over ``c``, ``Y`` the positives (``[ar, cr]``, ``c != a``: symmetric).  ``S`` is
    symmetric, so ``du = (dS + dS^T) u / tau``: one bmm of ``E (W + W^T)`` (``W^T[ar, cs] =
    w[c, s, a]``, a broadcast sum) with ``u``, less ``2 (sum_c u_cr - u_ar)`` for ``Y``; then
    normalize's backward, as :class:`_NTXent`.  Float32 inside (a bfloat16 ``z`` too)."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, temperature: float):
        K, V, b, d = z.shape
        n = V * b
        dtype = z.dtype
        x = z.reshape(K, n, d)
        if dtype in (torch.bfloat16, torch.float16):
            x = x.float()
        norm = x.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # F.normalize's eps
        u = x / norm
        shift = 1.0 / temperature
        ut = u * shift
        diagonal = torch.eye(V, dtype=torch.bool, device=z.device).view(V, 1, V)  # c = a: not a pair
        E, D, losses = [], [], []
        for lo, hi in _member_chunks(K, n):
            S = torch.bmm(ut[lo:hi], u[lo:hi].transpose(1, 2))  # [k, n, n]: s / tau
            k = hi - lo
            positives = S.view(k, V, b, V, b).diagonal(dim1=2, dim2=4).permute(0, 1, 3, 2)  # [k, a, r, c]
            positives = positives - shift  # (a copy: S is exponentiated in place next)
            S.sub_(shift).exp_().diagonal(dim1=1, dim2=2).zero_()  # E, j != i
            R = S.view(k, V, b, V, b).sum(-1)  # [k, a, r, c]
            D.append(R + R.diagonal(dim1=1, dim2=3).transpose(1, 2).unsqueeze(-1))  # R[a, r, c] + R[a, r, a]
            losses.append((D[-1].log() - positives).masked_fill_(diagonal, 0.0).sum((1, 2, 3)))
            E.append(S)
        ctx.save_for_backward(u, norm, torch.cat(D), *E)
        ctx.shape, ctx.temperature, ctx.dtype = (K, V, b, d), temperature, dtype
        return torch.cat(losses) / (V * (V - 1) * b)

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        u, norm, D, *E = ctx.saved_tensors
        K, V, b, d = ctx.shape
        n = V * b
        diagonal = torch.eye(V, dtype=torch.bool, device=u.device).view(V, 1, V)
        w = D.reciprocal().masked_fill_(diagonal, 0.0)  # [K, a, r, c]: 1 / D, 0 for c = a
        w.diagonal(dim1=1, dim2=3).copy_(w.sum(-1).transpose(1, 2))  # w[a, r, a]: the sum over c
        columns = w.permute(0, 3, 1, 2).contiguous()  # [K, a, c, s]: w[c, s, a] (small; a strided add is slow)
        du = torch.empty_like(u)
        for (lo, hi), part in zip(_member_chunks(K, n), E):
            # (W + W^T)[ar, cs] = w[a, r, c] + w[c, s, a], times E: the symmetric dS, one buffer
            G = torch.add(w[lo:hi].unsqueeze(-1), columns[lo:hi].unsqueeze(2)).view(hi - lo, n, n).mul_(part)
            torch.bmm(G, u[lo:hi], out=du[lo:hi])
            del G
        uv = u.view(K, V, b, d)
        du.view(K, V, b, d).sub_(uv.sum(1, keepdim=True) - uv, alpha=2.0)  # the positives
        du.mul_((g.to(du.dtype) / (V * (V - 1) * b * ctx.temperature)).view(K, 1, 1))
        work = torch.mul(u, du)  # (one [K, n, d] buffer: u du, then u (u . du))
        torch.mul(u, work.sum(-1, keepdim=True), out=work)
        dz = du.sub_(work).div_(norm)  # (du - u (u . du)) / |z|, in place
        return dz.view(K, V, b, d).to(ctx.dtype), None


CHUNK_BYTES = 16 << 20
"""The most bytes of one ``[k, n, n]`` block :class:`_NTXentSubsets` makes at once: the members
go in groups this size, so each block is reused from the heap (the jobs' allocator settings keep
freed blocks under 32 MiB there) where a larger one is mapped and faulted in afresh each step."""


def _member_chunks(K: int, n: int) -> list[tuple[int, int]]:
    """``(lo, hi)`` groups of the ``K`` members whose ``[k, n, n]`` float32 blocks fit
    :data:`CHUNK_BYTES` (one member at least)."""
    size = max(1, CHUNK_BYTES // (4 * n * n))
    return [(lo, min(lo + size, K)) for lo in range(0, K, size)]
