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
from torch.nn import functional as F


class StackedMLP:
    """K stacked MLPs with ReLU between layers (none after the last).

    dims: layer widths, e.g. ``[D, 256, 256, 256, 256]`` for the 4-layer encoder.
    in_widths: ``[K]`` true input width of each member (inputs are zero-padded to ``dims[0]``);
    the padded weight rows are zero and receive zero gradient.
    views: None, or (for an encoder read as a representation) ``[(members, masks)]``: those
    members' outputs are the mean of their outputs on the masked inputs ``x * masks[:, v]``
    (``members`` ``[k]`` positions, ``masks`` ``[k, V, 1, in]``; an objective's
    :meth:`~tcclib.method.objectives.Objective.embedding_views`).
    deep: None, or (for an encoder read as a representation) ``[d]`` member positions whose output
    is every layer's output side by side (:meth:`every_layer`; an objective's ``embedding``
    ``"deep_stack"``); the other members' outputs are then zero-padded to that width
    (:meth:`output_widths`: each member's own).
    input_maps: None, or (for an encoder read as a representation) ``[(members, shift, scale)]``:
    those members read ``(x - shift) * scale`` (``[k, 1, in]`` each; an objective's
    :meth:`~tcclib.method.objectives.Objective.encoder_inputs`) instead of ``x``.
    """

    views: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # (also a model pickled before views)
    deep: torch.Tensor | None = None  # (also a model pickled before the deep stack)
    input_maps: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None  # (and before these)

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
        """Forward ``x`` ``[K, n, in]`` (or ``[len(members), n, in]`` for a subset of members),
        through the :attr:`views` where they are set."""
        if self.views is None and self.deep is None and self.input_maps is None:
            return self.forward(x, members)
        if members is not None:
            raise ValueError("a StackedMLP with views, a deep stack or input maps runs every member at once")
        for idx, shift, scale in self.input_maps or ():
            x = x.index_copy(0, idx, ((x[idx] - shift) * scale).to(x.dtype))
        out = self.forward(x)
        if self.deep is not None:
            out = self._padded(out)
            out = out.index_copy(0, self.deep, self.every_layer(x[self.deep], self.deep).to(out.dtype))
        for idx, masks in self.views or ():
            read = self.every_layer if self._deep_group(idx) else self.forward
            out = out.index_copy(0, idx, self._padded(view_mean(read, x[idx], masks, idx)).to(out.dtype))
        return out

    def forward(self, x: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """Forward ``x`` ``[K, n, in]`` (or ``[len(members), n, in]`` for a subset of members)
        through the layers (no views)."""
        n = len(self.weights)
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            if members is not None:
                W, b = W[members], b[members]
            x = torch.baddbmm(b, x, W)
            if i < n - 1:
                x = torch.relu_(x)  # in place: baddbmm's backward does not need its output
        return x

    def every_layer(self, x: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """Every layer's output of ``x`` side by side, ``[.., n, sum(dims[1:])]``: the hidden
        layers' after their ReLU, the last layer's as :meth:`forward` gives it (the deep stack)."""
        outputs, n = [], len(self.weights)
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            if members is not None:
                W, b = W[members], b[members]
            x = torch.baddbmm(b, x, W)
            if i < n - 1:
                x = torch.relu(x)
            outputs.append(x)
        return torch.cat(outputs, -1)

    def output_widths(self) -> list[int]:
        """Each member's own output width when read through ``__call__``: ``sum(dims[1:])`` for
        a :attr:`deep` member, ``dims[-1]`` for the others."""
        deep = set() if self.deep is None else set(self.deep.tolist())
        return [self._every_layer_width if k in deep else self.dims[-1] for k in range(self.K)]

    @property
    def _every_layer_width(self) -> int:
        """The width of :meth:`every_layer`'s output."""
        return sum(self.dims[1:])

    def _padded(self, out: torch.Tensor) -> torch.Tensor:
        """``out`` zero-padded on its last axis to the widest member's output."""
        width = self._every_layer_width if self.deep is not None else self.dims[-1]
        return F.pad(out, (0, width - out.shape[-1]))

    def _deep_group(self, idx: torch.Tensor) -> bool:
        """Whether the members ``idx`` (one objective's: all or none of them) are deep."""
        if self.deep is None:
            return False
        inside = torch.isin(idx, self.deep)
        if bool(inside.any()) != bool(inside.all()):
            raise ValueError("a StackedMLP's views group holds deep and other members; expected one objective's")
        return bool(inside.all())

    def select(self, members: torch.Tensor) -> list[torch.Tensor]:
        """Detached copies of the chosen members' parameters (for inspection)."""
        return [p.detach()[members].clone() for p in self.parameters()]

    def input_maps_on(self, device: torch.device) -> list[tuple[torch.Tensor, ...]] | None:
        """:attr:`input_maps` with their tensors on ``device``."""
        if self.input_maps is None:
            return None
        return [tuple(t.to(device) for t in group) for group in self.input_maps]

    def views_on(self, device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        """:attr:`views` with their tensors on ``device``."""
        if self.views is None:
            return None
        return [(idx.to(device), masks.to(device)) for idx, masks in self.views]


def view_mean(forward, x: torch.Tensor, masks: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
    """The mean over ``v`` of ``forward(x * masks[:, v], members)`` (float32): ``x`` ``[k, n, in]``,
    ``masks`` ``[k, V, 1, in]``; the views' embeddings averaged into one."""
    total = forward(x * masks[:, 0], members).float()
    for v in range(1, masks.shape[1]):
        total = total + forward(x * masks[:, v], members).float()
    return total / masks.shape[1]


class Adam:
    """Adam with torch's defaults (betas 0.9 and 0.999, eps 1e-8, no weight decay) over stacked
    parameters, stepped as ``torch.optim.Adam(fused=True)`` steps them: the same two operations
    (``torch._foreach_add_`` on the step counts, ``torch._fused_adam_``) on the same state, so the
    same bits (tests/test_train.py). Element-wise, so each member has its own state.

    Why not ``torch.optim.Adam`` itself: its first use in a process imports ``torch._dynamo``
    (its ``__init__`` and ``step`` are wrapped to keep ``torch.compile`` out), 1.5-2.0 s on a
    2-core EPYC, in every kernel and worker that trains. ``groups``: ``(parameters, lr)`` pairs.
    Each step count is a device tensor (fused Adam's), so a CUDA graph can hold the step."""

    BETAS, EPS = (0.9, 0.999), 1e-8

    def __init__(self, groups: list[tuple[list[torch.Tensor], float]]):
        self.groups = [(list(params), float(lr)) for params, lr in groups]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def _state(self, p: torch.Tensor) -> dict[str, torch.Tensor]:
        if p not in self.state:  # (zeros at the first step, as torch's lazy initialisation)
            self.state[p] = dict(
                step=torch.zeros((), dtype=torch.float32, device=p.device),
                exp_avg=torch.zeros_like(p, memory_format=torch.preserve_format),
                exp_avg_sq=torch.zeros_like(p, memory_format=torch.preserve_format),
            )
        return self.state[p]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for params, _ in self.groups:
            for p in params:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient (the others, and their step
        counts, stay as they are), per group and per device and dtype, as torch groups them."""
        for params, lr in self.groups:
            parts: dict[tuple, list[list[torch.Tensor]]] = {}
            for p in params:
                if p.grad is None:
                    continue
                state = self._state(p)
                lists = parts.setdefault((p.device, p.dtype), [[], [], [], [], []])
                for into, value in zip(lists, (p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"])):
                    into.append(value)
            for ps, grads, exp_avgs, exp_avg_sqs, steps in parts.values():
                torch._foreach_add_(steps, 1)
                torch._fused_adam_(
                    ps,
                    grads,
                    exp_avgs,
                    exp_avg_sqs,
                    [],
                    steps,
                    amsgrad=False,
                    lr=lr,
                    beta1=self.BETAS[0],
                    beta2=self.BETAS[1],
                    weight_decay=0.0,
                    eps=self.EPS,
                    maximize=False,
                    grad_scale=None,
                    found_inf=None,
                )

    def state_dict(self) -> dict:
        """torch's layout (what a checkpoint holds): each parameter's state by its position over
        the groups (the tensors themselves, not copies), and each group's ``lr`` and positions."""
        flat = [p for params, _ in self.groups for p in params]
        ends = [0]
        for params, _ in self.groups:
            ends.append(ends[-1] + len(params))
        return dict(
            state={i: dict(self.state[p]) for i, p in enumerate(flat) if p in self.state},
            param_groups=[dict(lr=lr, params=list(range(a, b))) for (_, lr), a, b in zip(self.groups, ends, ends[1:])],
        )

    def load_state_dict(self, saved: dict) -> None:
        """The state of :meth:`state_dict`, or of ``torch.optim.Adam``'s (a checkpoint written
        before this class): the same names and positions; copied, never shared with ``saved``."""
        flat = [p for params, _ in self.groups for p in params]
        groups = saved["param_groups"]
        if [len(g["params"]) for g in groups] != [len(params) for params, _ in self.groups]:
            raise ValueError("the saved optimiser state has other parameter groups than this one")
        self.state = {
            flat[i]: {name: value.to(flat[i].device, copy=True) for name, value in state.items()}
            for i, state in saved["state"].items()
        }
        self.groups = [(params, float(g["lr"])) for (params, _), g in zip(self.groups, groups)]


def adam(params: list[torch.Tensor], lr: float) -> Adam:
    """:class:`Adam` over stacked parameters ``params``, one learning rate (a CUDA graph can hold
    its step: the step counts are device tensors)."""
    return Adam([(params, lr)])


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
