"""Stacked MLPs: K independent networks whose weights live in ``[K, in, out]`` tensors; Adam for
them, :func:`autocast` (the context of their forward passes) and :func:`batches` (row ranges).

One ``baddbmm`` per layer runs every member at once.  Members never mix: member k's output and
gradients depend only on member k's weights and inputs, so an ensemble is numerically the same
(up to float summation order) as training each member alone.  Weights are Xavier-uniform with
each member's own fan-in and its own generator; biases are the constant 0.01, as published.
"""

from __future__ import annotations

import contextlib
import math

import torch


class StackedMLP:
    """K stacked MLPs with ReLU between layers (none after the last).

    dims: layer widths, e.g. ``[D, 256, 256, 256, 256]`` for the 4-layer encoder.
    in_widths: ``[K]`` true input width of each member (inputs are zero-padded to ``dims[0]``);
    the padded weight rows are zero and receive zero gradient.
    """

    def __init__(
        self,
        K: int,
        dims: list[int],
        generators: list[torch.Generator],
        in_widths: list[int] | None = None,
        bias_init: float = 0.01,
        device: str | torch.device = "cpu",
    ):
        self.dims = list(dims)
        self.K = K
        self.bias_init = bias_init
        self.device = torch.device(device)
        self.in_widths = list(in_widths) if in_widths is not None else [dims[0]] * K
        self.weights: list[torch.Tensor] = []
        self.biases: list[torch.Tensor] = []
        for a, b in zip(dims[:-1], dims[1:]):
            self.weights.append(torch.zeros(K, a, b, device=self.device, requires_grad=True))
            self.biases.append(torch.full((K, 1, b), bias_init, device=self.device, requires_grad=True))
        self.reset(generators)

    def reset(self, generators: list[torch.Generator], members=None) -> None:
        """(Re-)initialise the given members (all by default), each from its own generator."""
        members = range(self.K) if members is None else members
        with torch.no_grad():
            for li, (W, b) in enumerate(zip(self.weights, self.biases)):
                out = W.shape[2]
                for k in members:
                    fan_in = self.in_widths[k] if li == 0 else W.shape[1]
                    bound = math.sqrt(6.0 / (fan_in + out))
                    w = torch.rand(fan_in, out, generator=generators[k], device=self.device)
                    W[k].zero_()
                    W[k, :fan_in] = (w * 2 - 1) * bound
                    b[k].fill_(self.bias_init)

    def parameters(self) -> list[torch.Tensor]:
        return self.weights + self.biases

    def __call__(self, x: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """Forward ``x`` ``[K, n, in]`` (or ``[len(members), n, in]`` for a subset of members)."""
        n = len(self.weights)
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            if members is not None:
                W, b = W[members], b[members]
            x = torch.baddbmm(b, x, W)
            if i < n - 1:
                x = torch.relu_(x)  # in place: baddbmm's backward does not need its output
        return x

    def select(self, members: torch.Tensor) -> list[torch.Tensor]:
        """Detached copies of the chosen members' parameters (for inspection)."""
        return [p.detach()[members].clone() for p in self.parameters()]


def adam(params: list[torch.Tensor], lr: float, capturable: bool = False) -> torch.optim.Optimizer:
    """Adam over stacked parameters: element-wise, so each member has its own state.
    ``capturable``: its step count kept on the device, as a CUDA graph that holds the step needs."""
    if capturable:
        return torch.optim.Adam(params, lr=lr, fused=True, capturable=True)
    return torch.optim.Adam(params, lr=lr, fused=True)


def autocast(cfg, device, cache: bool = True):
    """The context of the networks' forward passes: bfloat16 autocast when ``cfg.matmul_precision``
    (or ``cfg`` itself, a precision name) is ``"bf16"`` (the matrix products, and so their
    backward, in bfloat16; weights, Adam, NT-Xent and the heads' cross-entropy stay float32), else
    nothing (exact float32, the default).  Backward passes run outside it, as autocast asks.
    ``cache=False``: no cast cache (what a CUDA graph capture needs; each weight is cast once per
    step anyway, so the values are the same)."""
    if getattr(cfg, "matmul_precision", cfg) != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, cache_enabled=cache)


def batches(n: int, size: int) -> list[tuple[int, int]]:
    """The ranges ``(start, end)`` of ``n`` rows in batches of ``size`` (the last one shorter)."""
    return [(i, min(i + size, n)) for i in range(0, n, size)]
