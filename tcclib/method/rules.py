"""Vectorised corruption: *where* (which features) and *how* (which replacement values).

All functions work on a stack of K ensemble members at once, each row of each member
independently, with no Python loop over rows or features.  Random numbers come in as tensors
(drawn by the caller from each member's own generator) so that a member's views do not depend
on which other members share the ensemble.

*Where*
  - :func:`uniform_mask`: exactly ``k`` of the row's active features, uniformly.
  - :func:`correlation_mask`: Algorithm 4 of the paper.  The first feature is uniform; each next
    one is drawn among the features not yet chosen with probabilities
    ``softmax(sign * s / T)``, where ``s_j = min_{i chosen} W[i, j]`` is the candidate's smallest
    importance for predicting a chosen feature, normalised over the candidates (by their sum by
    default, or min-max: the paper does not say which), ``T`` the
    temperature 0.25 and ``sign`` +1 for "most" and -1 for "least" correlated.  The draws are
    sequential by definition (``k`` steps, each vectorised over all rows and members).
  - :func:`sampler_inputs`: the matrices and signs the sampler uses for each member, by one of two
    rules (``Config.corr_rule``): ``direct`` (ours, Algorithm 4 as written: "least" samples by
    ``softmax(-s/T)`` on the importances) or ``authors`` (their corruption_mask_generators.py:
    "least" first rank-reverses every importance row, :func:`authors_least_matrix`, then samples
    by ``softmax(+s/T)`` like "most").  The flipped ``class_most_published`` ranks as "least"
    (``MethodSpec.ranking``): under ``authors`` that is exactly their least rule, which their
    in-place flip made the published "most correlated" run use.

*How*
  - :func:`draw_donors`: for each (row, feature) a donor row whose value replaces the anchor's.
    Donors come from the rows sharing the anchor's label; with every label 0 that is the whole
    column (conventional SCARF corruption; :func:`column_donors` draws it without the sort), with
    pseudo- or true labels it is class-conditioned.

*Rule objects* (the end of this module): :class:`HowRule` and :class:`WhereRule`, the interface a
corruption rule implements (what it needs from the data, how it draws for a stack of members,
what enters its content key), and the built-ins over the functions above: :class:`SameLabel`
(``column``, ``pseudo``, ``oracle``), :class:`NoPretraining` (``none``), :class:`Uniform` and
:class:`Correlated` (``most``, ``least``).  The registry (:mod:`tcclib.method.registry`) holds them.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import inspect
import math
import random
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tcclib.method import identity
from tcclib.method.draws import VIEW, WHERE, GeneratorDraws
from tcclib.method.plugins import undefined_name_fix
from tcclib.method.settings import UnkeyedSettingError
from tcclib.util.errors import register_short


def checked_number(
    name: str, value, meaning: str, low: float, high: float = math.inf, *, low_open=False, high_open=False
) -> float:
    """A rule's or objective's numeric parameter ``value`` as a float, checked: a finite real
    number (not a bool, not text) within ``low .. high`` (``low_open``/``high_open``: excluding the
    bound); otherwise a ``ValueError`` naming ``name``, what it is (``meaning``) and the range."""
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    number = float(value) if real else math.nan
    inside = (number > low if low_open else number >= low) and (number < high if high_open else number <= high)
    if not (real and math.isfinite(number) and inside):
        left, right = "(" if low_open else "[", ")" if high_open or high == math.inf else "]"
        upper = "inf" if high == math.inf else f"{high:g}"
        raise ValueError(f"{name}: {meaning}, a finite number in {left}{low:g}, {upper}{right}, got {value!r}")
    return number


def uniform_mask(scores: torch.Tensor, active: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Choose exactly ``k[m]`` active features per row, uniformly.

    scores: ``[K, N, M]`` uniform(0, 1) draws; active: ``[K, M]`` bool; k: ``[K]`` int.
    Returns a bool mask ``[K, N, M]``.
    """
    s = scores.masked_fill(~active.unsqueeze(1), 2.0)  # inactive features rank last
    order = s.argsort(dim=-1)
    # each feature's rank is the inverse of that permutation: written by a scatter instead of a
    # second sort (the same mask, ties included, at half the cost)
    first_k = torch.arange(s.shape[-1], device=s.device) < k.view(-1, 1, 1)  # [K, 1, M]
    return torch.zeros_like(s, dtype=torch.bool).scatter_(-1, order, first_k.expand_as(s))


def gumbel(u: torch.Tensor) -> torch.Tensor:
    """Gumbel(0, 1) noise from uniform draws (a new tensor)."""
    return _log_neg_log_(u.clone()).neg_()  # -log(-log(u))


def _log_neg_log_(u: torch.Tensor) -> torch.Tensor:
    """``log(-log(u))`` in place on uniform draws ``u`` (minus a Gumbel(0, 1) draw; clamped as
    :func:`gumbel` clamps)."""
    eps = torch.finfo(u.dtype).tiny
    return u.clamp_(eps, 1.0 - 1e-7).log_().neg_().log_()


def correlation_mask(
    importance: torch.Tensor,
    active: torch.Tensor,
    k: torch.Tensor,
    sign: torch.Tensor,
    uniforms,
    temperature: float = 0.25,
    normalization: str = "sum",
    steps: int | None = None,
) -> torch.Tensor:
    """Correlation-based feature choice (Algorithm 4), ``k[m]`` features per row.

    importance: ``[K, M, M]``, ``importance[m, i, j]`` = importance of feature j in the model
    predicting feature i (rows normalised, zero diagonal).  sign: ``[K]`` float, +1 "most"
    correlated, -1 "least".  uniforms: a callable ``t -> [K, N, M]`` uniform draws for step t, a
    new tensor each call (the sampler overwrites it), or a tensor ``[T, K, N, M]`` (left as it
    is).  normalization: how the candidates' min-importances are "normalised" before the softmax:
    "sum" (divided by their sum, the default: close to uniform unless the importances are
    concentrated; on balance-scale it reproduces the paper's numbers) or "minmax" (to [0, 1]: a
    sharp preference even when the importances are nearly flat; on balance-scale about 7 points
    below the paper).  steps: ``max(k)`` when the caller knows it (no read of ``k`` back to the
    host).  Returns a bool mask ``[K, N, M]``.
    """
    _check_normalization(normalization)
    K, M, _ = importance.shape
    draw = uniforms if callable(uniforms) else (lambda t: uniforms[t].clone())
    act = active.unsqueeze(1)  # [K, 1, M]
    first = gumbel(draw(0)).masked_fill_(~act, float("-inf")).argmax(-1)  # [K, N]
    N = first.shape[1]
    chosen = torch.zeros(K, N, M, dtype=torch.bool, device=importance.device)
    chosen.scatter_(-1, first.unsqueeze(-1), True)
    # the candidates (active, not yet chosen) and their complement, kept step by step
    cand = act & ~chosen
    outside = ~cand
    minimp = take_rows(importance, first)  # W[first, :]
    sgn = sign.view(K, 1, 1)
    for t in range(1, int(k.max()) if steps is None else steps):
        logits = _candidate_logits(minimp, cand, sgn, temperature, normalization, outside)
        # Gumbel-max: argmax(logits + (-log(-log u))), written as logits - log(-log u) (the same
        # sums, bit for bit: x - y is x + (-y)), one pass fewer
        pick = logits.sub_(_log_neg_log_(draw(t))).argmax(-1)
        # a member with all its k features chosen "picks" its first one again: already chosen,
        # and its row cannot lower the running minimum, which started from it
        pick = torch.where((t < k).view(K, 1), pick, first).unsqueeze(-1)
        chosen.scatter_(-1, pick, True)
        cand.scatter_(-1, pick, False)
        outside.scatter_(-1, pick, True)
        torch.minimum(minimp, take_rows(importance, pick.squeeze(-1)), out=minimp)
    return chosen


def member_uniforms(gens, shape: tuple, device, skip=None) -> torch.Tensor:
    """``[len(gens), *shape]`` uniform(0, 1) draws, member j's from its own generator ``gens[j]``
    (:meth:`tcclib.method.draws.GeneratorDraws.uniform`); a member with ``skip[j]`` true draws
    nothing and gets 0.5."""
    return GeneratorDraws(gens, device).uniform(0, shape, skip)


def take_rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``idx`` ([K, b]) of ``x`` ([K, N, d]) -> [K, b, d]: whole rows copied by one
    ``index_select`` on the flattened rows (the values of ``gather`` along dim 1, about 6x faster
    on the CPU, where ``gather`` reads one index per element)."""
    K, N, d = x.shape
    flat = (idx + torch.arange(K, device=x.device).unsqueeze(1) * N).reshape(-1)
    return x.reshape(K * N, d).index_select(0, flat).view(K, idx.shape[1], d)


def _check_normalization(normalization: str) -> None:
    if normalization not in ("minmax", "sum"):
        raise ValueError(f"normalization must be 'minmax' or 'sum', got {normalization!r}")


def _candidate_logits(
    minimp: torch.Tensor,
    cand: torch.Tensor,
    sgn: torch.Tensor,
    temperature: float,
    normalization: str,
    outside: torch.Tensor | None = None,
) -> torch.Tensor:
    """The sampler's logits ``sign * s / T`` of one step (``-inf`` off the candidates), from the
    candidates' min-importances ``minimp`` (``[..., M]``), normalised by their sum or min-max.
    With every candidate's min-importance 0 (sum 0) all logits are equal: a uniform pick.
    ``outside``: ``~cand``, when the caller keeps it."""
    outside = ~cand if outside is None else outside
    if normalization == "minmax":
        lo = minimp.masked_fill(outside, float("inf")).amin(-1, keepdim=True)
        hi = minimp.masked_fill(outside, float("-inf")).amax(-1, keepdim=True)
        s = (minimp - lo) / (hi - lo).clamp_min(1e-12)
    else:
        s = minimp / (minimp * cand).sum(-1, keepdim=True).clamp_min(1e-12)
    return s.mul_(sgn).div_(temperature).masked_fill_(outside, float("-inf"))  # sign * s / T, in place


def next_pick_probabilities(
    importance: torch.Tensor,
    chosen,
    active: torch.Tensor,
    sign: float,
    temperature: float = 0.25,
    normalization: str = "sum",
) -> torch.Tensor:
    """The probabilities ``[M]`` with which :func:`correlation_mask` picks the next feature of a
    row whose features ``chosen`` (a non-empty list of indices) are already picked: one member's
    matrix ``importance`` ``[M, M]`` (as :func:`sampler_inputs` gives it), its ``active`` ``[M]``
    bool and ``sign``.  The same logits as the sampler's Gumbel-max draw; for tests and figures."""
    _check_normalization(normalization)
    chosen = list(chosen)
    if not chosen:
        raise ValueError("chosen: the first feature is uniform; give at least one chosen feature")
    W = torch.as_tensor(importance, dtype=torch.float32)
    act = torch.as_tensor(active, dtype=torch.bool)
    cand = act.clone()
    cand[chosen] = False
    minimp = W[chosen].amin(0)
    logits = _candidate_logits(minimp, cand, torch.tensor(float(sign)), temperature, normalization)
    return torch.softmax(logits, -1)


CORR_RULES = ("direct", "authors")


def authors_least_matrix(importance, active=None) -> np.ndarray:
    """The authors' "least correlated" matrix (``CorrelationMaskGenerator.initialize_feature_importances``
    with ``high_correlation=False``): in every row the importances of the other features get
    reversed ranks, ``np.sort(row)[::-1][np.argsort(np.argsort(row))]`` (the largest value moves to
    where the smallest was, and so on; ties broken as NumPy's default argsort breaks them), the
    diagonal stays 0.  Their table holds only the kept columns, so the reversal runs over the
    ``active`` features only (inactive rows and columns, 0 in our matrices, are left as
    they are).  float32, as their XGBoost importances; a new array (their in-place flip is
    :class:`~tcclib.method.registry.MethodSpec`'s ``flipped``)."""
    W = np.array(importance, dtype=np.float32, copy=True)
    M = W.shape[0]
    idx = np.flatnonzero(np.ones(M, bool) if active is None else np.asarray(active, dtype=bool))
    sub = W[np.ix_(idx, idx)]
    for i in range(len(idx)):
        row = np.delete(sub[i], i)
        row = np.sort(row)[::-1][np.argsort(np.argsort(row))]
        sub[i] = np.insert(row, i, 0)
    W[np.ix_(idx, idx)] = sub
    return W


def sampler_inputs(importance, seed_index, active, rankings, rule: str = "direct", device=None):
    """``(W [Kc, M, M] float32, sign [Kc])`` for :func:`correlation_mask`, one per correlation member.

    importance: ``[S, M, M]`` per-seed matrices (numpy); seed_index: ``[Kc]`` each member's seed
    position; active: ``[Kc, M]`` each member's active features; rankings: each member's
    ``MethodSpec.ranking`` ("most" or "least"); rule: ``Config.effective("corr_rule")``, or one
    rule per member (``MethodSpec.effective_rule``: a method may fix its own).

    ``direct`` (ours): the importances as they are, sign +1 for "most", -1 for "least".
    ``authors``: "most" the importances, "least" :func:`authors_least_matrix`, both with sign +1
    (their generators differ only in that reversal).
    """
    rules = [rule] * len(rankings) if isinstance(rule, str) else list(rule)
    if len(rules) != len(rankings):
        raise ValueError(f"rule: one per member ({len(rankings)}), got {len(rules)}")
    bad = [r for r in rules if r not in CORR_RULES]
    if bad:
        raise ValueError(f"corr_rule must be 'direct' or 'authors', got {bad[0]!r}")
    bad = [r for r in rankings if r not in ("most", "least")]
    if bad:
        raise ValueError(f"rankings: 'most' or 'least', got {bad[0]!r}")
    if len(set(rules)) > 1:  # members with different rules: each as its own rule says
        parts = [
            sampler_inputs(importance, seed_index[j : j + 1], active[j : j + 1], [rankings[j]], rules[j], device)
            for j in range(len(rankings))
        ]
        return torch.cat([w for w, _ in parts]), torch.cat([s for _, s in parts])
    rule = rules[0] if rules else "direct"
    if rule == "direct":
        W = torch.as_tensor(importance, dtype=torch.float32, device=device)[seed_index]
        sign = torch.tensor([1.0 if r == "most" else -1.0 for r in rankings], device=device)
        return W, sign
    imp = np.asarray(importance.cpu() if isinstance(importance, torch.Tensor) else importance)
    si = torch.as_tensor(seed_index).cpu().tolist()
    act = torch.as_tensor(active).cpu().numpy().astype(bool)
    mats = [
        authors_least_matrix(imp[s], a) if r == "least" else imp[s].astype(np.float32)
        for s, a, r in zip(si, act, rankings)
    ]
    W = torch.as_tensor(np.stack(mats), dtype=torch.float32, device=device)
    return W, torch.ones(len(rankings), device=device)


def class_index(labels: torch.Tensor, n_classes: int):
    """Group rows by label: (order [K, N], start [K, C], count [K, C])."""
    order = labels.argsort(dim=-1, stable=True)
    count = torch.zeros(labels.shape[0], n_classes, dtype=torch.int64, device=labels.device)
    count.scatter_add_(1, labels, torch.ones_like(labels))
    start = count.cumsum(1) - count
    return order, start, count


def draw_donors(labels: torch.Tensor, n_classes: int, u: torch.Tensor) -> torch.Tensor:
    """Donor row per (anchor, feature), drawn uniformly among rows with the anchor's label.

    labels: ``[K, N]`` int (all zeros = whole column); u: ``[K, N, M]`` uniform(0, 1).
    Returns int64 ``[K, N, M]`` row indices.
    """
    order, start, count = class_index(labels, n_classes)
    st = start.gather(1, labels).unsqueeze(-1)
    ct = count.gather(1, labels).unsqueeze(-1)
    pos = (u * ct).long().clamp_max_(ct - 1).add_(st)  # st + min(floor(u ct), ct - 1), in place
    K, N, M = u.shape
    return order.gather(1, pos.reshape(K, N * M)).reshape(K, N, M)


def column_donors(u: torch.Tensor) -> torch.Tensor:
    """:func:`draw_donors` with every label 0, the whole column: the same rows (its class order
    is then ``0 .. N-1``), without the sort and the gather of ``[K, N M]`` positions."""
    N = u.shape[1]
    return (u * N).long().clamp_max_(N - 1)


def corrupt(raw: torch.Tensor, mask: torch.Tensor, donors: torch.Tensor) -> torch.Tensor:
    """The view: anchor values where ``mask`` is False, the donor row's value where True."""
    donor_vals = raw.gather(1, donors)  # out[m, i, j] = raw[m, donors[m, i, j], j]
    return torch.where(mask, donor_vals, raw)


def example_masks(importance, active, n_features: int, cfg, n_rows: int = 20, seed: int = 0) -> dict:
    """Corruption masks ``{panel title: [n_rows, M] bool}`` drawn for ``n_rows`` rows by the
    library's own samplers with the run's settings (corruption rate, sampler temperature,
    ``corr_normalization`` and the ``corr_rule`` in force): uniform, most and least correlated
    (``02_correlation``'s figure)."""
    M = len(active)
    k = torch.tensor([cfg.corrupted_count(n_features)])
    act = torch.as_tensor(np.asarray(active)).unsqueeze(0)
    g = torch.Generator().manual_seed(seed)

    def draw(t):
        return torch.rand(1, n_rows, M, generator=g)

    panels = {"random (uniform)": uniform_mask(draw(0), act, k)[0]}
    for title, ranking in (("most correlated", "most"), ("least correlated", "least")):
        W, sign = sampler_inputs(
            np.asarray(importance)[None], torch.tensor([0]), act, [ranking], cfg.effective("corr_rule")
        )
        panels[title] = correlation_mask(W, act, k, sign, draw, cfg.corr_temperature, cfg.corr_normalization)[0]
    return panels


# --------------------------------------------------------------------------- rule objects
#
# A method corrupts by two rules: a *how* rule (:class:`HowRule`: which row gives each replaced
# value) and a *where* rule (:class:`WhereRule`: which features of a row are replaced).  Each says
# what it needs from the data, draws for a stack of members at once, and names the settings that
# enter a member's content key.  The registry (:mod:`tcclib.method.registry`) holds them by name;
# :class:`tcclib.method.pretraining.Pretraining` calls them for the members that use them.

NOTHING = "nothing"
"""A how rule's ``needs``: no label (every row's label is 0: the whole column)."""
TRUE_LABELS = "labels"
"""A how rule's ``needs``: every training row's true label (the runner has them; the estimator not)."""
PSEUDO_LABELS = "pseudo_labels"
"""A how rule's ``needs``: pseudo-labels (true on labeled rows, predicted on the others), refreshed
during pretraining on ``Config``'s schedule (``pseudo_every``, ``pseudo_schedule``)."""
NEEDS = (NOTHING, TRUE_LABELS, PSEUDO_LABELS)


@dataclass
class Members:
    """The pretraining members a rule serves, stacked (``k`` of them): what a rule may read.

    ``index``: their positions in the pretraining stack; :attr:`raw`: ``[k, N, M]`` training rows
    as preprocessed (z-scored numbers, category codes; sliced when first read); ``active``:
    ``[k, M]`` bool; ``labels``: ``[k, N]`` int, each row's label as the how rule's ``needs`` asks
    (all 0 for :data:`NOTHING`; current pseudo-labels for :data:`PSEUDO_LABELS`); ``n_classes``;
    ``corrupted``: ``[k]`` features replaced per row; ``gens``: each member's generator (draw from
    these only); ``specs``: each member's :class:`~tcclib.method.registry.MethodSpec`;
    ``seed_index``: ``[k]`` table-seed positions; ``cfg``: the run's
    :class:`~tcclib.method.config.Config`; ``all_rows``: every pretraining member's rows (the
    stack :attr:`raw` is sliced from); ``draws``: the members' random draws of this epoch
    (:mod:`tcclib.method.draws`, as ``Config.draws`` says; :meth:`uniform` reads them; None: from
    ``gens``).

    When each hook runs and what it may read: :meth:`HowRule.prepare` and
    :meth:`WhereRule.prepare` run once per run, before the first epoch and before the first
    pseudo-label refresh: for a how rule that needs :data:`PSEUDO_LABELS`, ``labels`` is not known
    then and reading it raises :class:`RuleContractError` (read it in ``donors()``, which runs
    every epoch after any refresh due, with the current pseudo-labels).  ``mask()`` and
    ``donors()`` run once per pretraining epoch."""

    index: list[int]
    active: torch.Tensor
    labels: torch.Tensor
    n_classes: int
    corrupted: torch.Tensor
    gens: list
    specs: list
    seed_index: torch.Tensor
    cfg: Any
    all_rows: torch.Tensor
    draws: Any = None
    view: int = 0

    def uniform(self, stream: int, shape: tuple[int, ...], skip=None, first: int = 0) -> torch.Tensor:
        """Uniform(0, 1) draws ``[k, *shape]`` for these members from ``stream`` (a small integer;
        :data:`tcclib.method.draws.WHERE` is the where rules'), from its position ``first`` on:
        from the run's counter draws, or each member's generator in call order (``skip[j]``:
        member ``j`` draws nothing).  View ``view`` of an objective with several views per anchor
        draws from its own streams (:data:`tcclib.method.draws.VIEW`)."""
        return self.source().uniform(stream + self.view * VIEW, shape, skip, first)

    def source(self):
        """Where these members' draws come from (:mod:`tcclib.method.draws`)."""
        return self.draws if self.draws is not None else GeneratorDraws(self.gens, self.device)

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(k, N, M)``: members, rows, features."""
        return len(self.index), self.all_rows.shape[1], self.all_rows.shape[2]

    @property
    def device(self) -> torch.device:
        return self.all_rows.device

    @property
    def raw(self) -> torch.Tensor:
        """``[k, N, M]``: these members' training rows (a copy unless they are the whole stack)."""
        if self.index == list(range(self.all_rows.shape[0])):
            return self.all_rows
        return self.all_rows[torch.tensor(self.index, device=self.device)]


class HowRule:
    """How the replacement values of a view are drawn: a donor row per (anchor, feature).

    A subclass sets ``name``; ``needs`` (:data:`NEEDS`); ``settings``: the
    :class:`~tcclib.method.config.Config` fields its draws read (they enter a member's content key);
    ``switches``: the fidelity switches they read; and overrides :meth:`donors` (and
    :meth:`prepare` for work done once per run, :meth:`key_params` for its own parameters)."""

    name: str = ""
    needs: str = NOTHING
    pretrains: bool = True
    settings: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()

    def key_params(self) -> dict:
        """The rule's own parameters (e.g. a neighbour count): they enter the content key of its
        members when not empty."""
        return {}

    def prepare(self, members: Members):
        """Work done once per run (e.g. an index of the rows); what it returns is handed to
        :meth:`donors` every epoch.  It runs before the first pseudo-label refresh: for a rule
        that needs :data:`PSEUDO_LABELS`, ``members.labels`` is :class:`UnknownLabels` here (read
        the labels in :meth:`donors`)."""
        return None

    def donors(self, members: Members, state, u: torch.Tensor) -> torch.Tensor:
        """Donor rows ``[k, N, M]`` (int64 row positions of the same member's training rows), one
        per (anchor, feature), from uniform draws ``u`` ``[k, N, M]`` made by the caller from each
        member's generator."""
        raise NotImplementedError(f"{type(self).__name__}.donors")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class SameLabel(HowRule):
    """Donors drawn uniformly among the rows that share the anchor's label (:func:`draw_donors`):
    the whole column when every label is 0 (SCARF), the anchor's pseudo- or true class otherwise."""

    def __init__(self, name: str, needs: str = NOTHING, settings=(), switches=()):
        self.name, self.needs, self.settings, self.switches = name, needs, tuple(settings), tuple(switches)

    def donors(self, members: Members, state, u: torch.Tensor) -> torch.Tensor:
        if self.needs == NOTHING:  # every label 0
            return column_donors(u)
        return draw_donors(members.labels, members.n_classes, u)


class NoPretraining(HowRule):
    """No corruption and no pretraining: the encoder keeps its initial weights."""

    name = "none"
    pretrains = False


class WhereRule:
    """Which features of each row are replaced: a bool mask per view.

    A subclass sets ``name``, ``needs_importance`` (it reads the XGBoost importance matrices,
    :mod:`tcclib.method.correlation`), ``settings`` and ``switches`` (as :class:`HowRule`'s) and
    overrides :meth:`mask` (and :meth:`prepare`)."""

    name: str = ""
    needs_importance: bool = False
    fixed_count: bool = True
    settings: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()

    def key_params(self) -> dict:
        return {}

    def prepare(self, members: Members, importance):
        """Work done once per run; ``importance``: ``[S, M, M]`` per-seed matrices (None when no
        member needs them)."""
        return None

    def mask(self, members: Members, state) -> torch.Tensor:
        """Bool ``[k, N, M]``: ``members.corrupted[m]`` active features per row, drawn from each
        member's generator."""
        raise NotImplementedError(f"{type(self).__name__}.mask")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Uniform(WhereRule):
    """The features chosen uniformly (:func:`uniform_mask`)."""

    name = "uniform"

    def mask(self, members: Members, state) -> torch.Tensor:
        _, N, M = members.shape
        return uniform_mask(members.uniform(WHERE, (N, M)), members.active, members.corrupted)


class Bernoulli(WhereRule):
    """Each active feature of each row replaced with probability ``p``, independently (VIME's
    ``mask_generator``, SubTab's masking and the denoising autoencoder's swap noise): the count
    per row varies (``fixed_count`` False), ``Config.corruption_rate`` is not read."""

    fixed_count = False

    def __init__(self, name: str, p: float):
        self.name = name
        self.p = checked_number("p", p, "the probability of replacing a feature", 0, 1, low_open=True, high_open=True)

    def key_params(self) -> dict:
        return {"p": self.p}

    def mask(self, members: Members, state) -> torch.Tensor:
        _, N, M = members.shape
        return (members.uniform(WHERE, (N, M)) < self.p) & members.active.unsqueeze(1)


class Correlated(WhereRule):
    """The features chosen by the correlation sampler (Algorithm 4, :func:`correlation_mask`),
    ranked by each member's ``MethodSpec.ranking`` and sampler rule (:func:`sampler_inputs`)."""

    needs_importance = True
    settings = ("corr_temperature", "corr_normalization")
    switches = ("corr_rule",)

    def __init__(self, ranking: str):
        self.name = ranking

    def prepare(self, members: Members, importance):
        """``(W, sign, counts)``: the sampler's matrices and signs (:func:`sampler_inputs`) and each
        member's feature count as Python ints (so that no epoch reads them back from the device)."""
        if importance is None:
            raise ValueError("correlation methods need the importance matrices (see run_dataset)")
        W, sign = sampler_inputs(
            importance,
            members.seed_index,
            members.active,
            [spec.ranking for spec in members.specs],
            [spec.effective_rule(members.cfg) for spec in members.specs],
            members.device,
        )
        return W, sign, [int(c) for c in members.corrupted.tolist()]

    def mask(self, members: Members, state) -> torch.Tensor:
        W, sign, counts = state
        _, N, M = members.shape
        steps = max(counts)
        if members.source().fits(steps * N * M):  # counter draws: every step's in one draw
            block = members.uniform(WHERE, (steps, N, M))

            def draw(t):
                return block[:, t].clone()
        else:

            def draw(t):  # a member whose k features are all chosen draws nothing more (generators)
                return members.uniform(WHERE, (N, M), skip=[t >= kj for kj in counts], first=t * N * M)

        cfg = members.cfg
        return correlation_mask(
            W, members.active, members.corrupted, sign, draw, cfg.corr_temperature, cfg.corr_normalization, steps=steps
        )


# --------------------------------------------------------------------------- the rules' contract


class RuleContractError(ValueError):
    """A rule returned what its contract does not allow, or failed: one line naming the rule."""


register_short(RuleContractError)


class LabelsNotKnown(RuleContractError):
    """A how rule's ``prepare()`` read ``members.labels`` before the pseudo-labels are known."""


def rule_name(rule) -> str:
    """``'mine' (myrule.py)``: the rule's name and, where known, its file."""
    where = Path(source_file(rule) or "").name
    return f"{rule.name!r}" + (f" ({where})" if where and not where.startswith("<") else "")


def source_file(rule) -> str | None:
    """The file of the rule's class; for a class without one (a notebook cell, ``python -c``), the
    file its methods' code names (a cell's name in IPython's linecache, ``<string>``)."""
    try:
        return inspect.getsourcefile(type(rule))
    except (TypeError, OSError):
        functions = [f for c in type(rule).__mro__ for f in vars(c).values() if hasattr(f, "__code__")]
        return functions[0].__code__.co_filename if functions else None


class UnknownLabels:
    """``Members.labels`` inside the ``prepare()`` of a how rule that needs pseudo-labels: they are
    not known before the first refresh, so any use of it is a :class:`RuleContractError` naming
    the rule (read the labels in ``donors()``, which gets the current ones every epoch)."""

    def __init__(self, rule):
        self.rule = rule

    def _refuse(self, *args, **kwargs):
        raise LabelsNotKnown(
            f"how rule {rule_name(self.rule)}: prepare() read members.labels, but the pseudo-labels are "
            "not known when prepare() runs (once, before the first refresh); read members.labels in "
            "donors(), which gets the current pseudo-labels every epoch"
        )

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in (*args, *(kwargs or {}).values()):
            if isinstance(a, UnknownLabels):
                a._refuse()
        return NotImplemented

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()

    __getitem__ = __len__ = __iter__ = __array__ = __bool__ = __index__ = __int__ = __float__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __sub__ = __mul__ = _refuse
    __hash__ = None

    def __repr__(self) -> str:
        return "UnknownLabels(pseudo-labels are not known at prepare())"


def check_donors(rule, donors, shape: tuple[int, int, int], values: bool = True) -> None:
    """A how rule's :meth:`HowRule.donors`: int64 row positions ``[k, N, M]`` in ``0..N-1``
    (``values=False``: dtype and shape only, what the host knows without reading the device)."""
    k, N, M = shape
    expected = f"int64 row positions of shape [k, N, M] = {list(shape)} in 0..{N - 1}"
    must = f"how rule {rule_name(rule)}: donors() must return"
    if not isinstance(donors, torch.Tensor):
        raise RuleContractError(f"{must} a torch tensor of {expected}; got {type(donors).__name__}")
    if donors.dtype != torch.int64:
        raise RuleContractError(f"{must} {expected}; got dtype {donors.dtype} (use .long())")
    if tuple(donors.shape) != tuple(shape):
        raise RuleContractError(f"{must} {expected}; got shape {list(donors.shape)}")
    if values and donors.numel() and (int(donors.min()) < 0 or int(donors.max()) >= N):
        raise RuleContractError(
            f"{must} {expected} (each member's own training rows); "
            f"got values from {int(donors.min())} to {int(donors.max())}"
        )


def donors_out_of_range(donors: torch.Tensor, n_rows: int) -> torch.Tensor:
    """A bool on the device: whether any donor lies outside ``0 .. n_rows - 1`` (nothing read back:
    the epoch's one read of the losses carries it)."""
    if not donors.numel():
        return torch.zeros((), dtype=torch.bool, device=donors.device)
    low, high = torch.aminmax(donors)
    return (low < 0) | (high >= n_rows)


def out_of_range_error(rule, n_rows: int, epoch: int) -> RuleContractError:
    """The error of a how rule whose donors left ``0 .. n_rows - 1`` at (1-based) pretraining ``epoch``."""
    return RuleContractError(
        f"how rule {rule_name(rule)}: donors() returned row positions outside 0..{n_rows - 1} (each member's "
        f"own training rows) at pretraining epoch {epoch}; its earlier calls were in range: check what "
        "changes between epochs (e.g. the pseudo-labels)"
    )


def check_mask(rule, mask, shape: tuple[int, int, int]) -> None:
    """A where rule's :meth:`WhereRule.mask`: a bool ``[k, N, M]`` tensor."""
    must = f"where rule {rule_name(rule)}: mask() must return a bool mask of shape [k, N, M] = {list(shape)} "
    must += "(True: the feature is replaced); got"
    if not isinstance(mask, torch.Tensor):
        raise RuleContractError(f"{must} {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise RuleContractError(f"{must} dtype {mask.dtype} (compare, e.g. scores < p)")
    if tuple(mask.shape) != tuple(shape):
        raise RuleContractError(f"{must} shape {list(mask.shape)}")


def call_rule(rule, what: str, action):
    """Run a user rule's ``what`` (``prepare``, ``donors``, ``mask``); its own error becomes one
    line naming the rule and the line of its file where it happened."""
    try:
        return action()
    except (RuleContractError, UnkeyedSettingError):
        raise
    except Exception as e:  # the rule's own failure, named
        raise RuleContractError(
            f"{rule_kind(rule)} rule {rule_name(rule)}: {what}() failed{_line_in(rule, e)}: "
            f"{type(e).__name__}: {_first_line(e)}{undefined_name_fix(e, source_file(rule))}"
        ) from e


def rule_kind(rule) -> str:
    return "how" if isinstance(rule, HowRule) else "where"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _line_in(rule, error: BaseException) -> str:
    """`` at line 12`` of the rule's file in the error's traceback (empty when not there)."""
    source = source_file(rule)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if source and f.filename == source]
    return f" at line {frames[-1].lineno}" if frames else ""


def is_own(rule) -> bool:
    """Whether ``rule`` is one of tcclib's own rule classes (its contract is not checked at run time)."""
    return type(rule).__module__.startswith("tcclib.")


def run_rule(rule, what: str, action):
    """``action()`` for tcclib's own rules; :func:`call_rule` (errors named) for a user's."""
    return action() if is_own(rule) else call_rule(rule, what, action)


# --------------------------------------------------------------------------- what a rule draws, as a key part

PROBE_SHAPE = (2, 16, 5)
"""The fixed probe a user rule draws on for its key (:func:`draws_fingerprint`): members, rows, features."""


def draws_fingerprint(rule, spec, cfg) -> str:
    """A hash of what a user's rule draws on a fixed small probe (:data:`PROBE_SHAPE`, fixed rows,
    labels, uniforms and generators; the global random states fixed too), on a copy of the rule so
    that nothing it does here reaches the run.  Part of its members' key beside its code and state
    (:mod:`tcclib.method.identity`): an edit that changes what the rule draws there changes the key
    even where reading the code would miss it.  A rule that fails on the probe is keyed by its
    error's type (the run itself says what failed)."""
    try:
        trial = copy.deepcopy(rule)
    except Exception as e:  # (a state that does not copy: keyed by its code and state alone)
        return f"uncopied-{type(e).__name__}"
    k, n_rows, n_features = PROBE_SHAPE
    fixed = torch.Generator().manual_seed(2404_17489)
    raw = torch.randn(k, n_rows, n_features, generator=fixed)
    labels = (torch.arange(n_rows) % 2).repeat(k, 1)
    needs = getattr(trial, "needs", NOTHING)
    members = Members(
        index=list(range(k)),
        active=torch.ones(k, n_features, dtype=torch.bool),
        labels=torch.zeros_like(labels) if needs == NOTHING else labels,
        n_classes=2,
        corrupted=torch.full((k,), 2, dtype=torch.int64),
        gens=[torch.Generator().manual_seed(seed) for seed in range(1, k + 1)],
        specs=[spec] * k,
        seed_index=torch.arange(k),
        cfg=cfg,
        all_rows=raw,
    )
    try:
        with _fixed_global_randomness(), identity.files_read() as opened:
            if isinstance(trial, HowRule):
                before = members if needs != PSEUDO_LABELS else _with_labels(members, UnknownLabels(trial))
                state = trial.prepare(before)
                drawn = trial.donors(members, state, torch.rand(k, n_rows, n_features, generator=fixed))
            else:
                importance = torch.rand(k, n_features, n_features, generator=fixed, dtype=torch.float64).numpy()
                drawn = trial.mask(members, trial.prepare(members, importance if trial.needs_importance else None))
    except Exception as e:  # (keyed by what failed; training names the failure)
        return f"fails-{type(e).__name__}"
    if not isinstance(drawn, torch.Tensor):
        return f"returns-{type(drawn).__name__}"
    values = drawn.detach().to("cpu").contiguous().to(torch.int64).numpy()
    drew = hashlib.sha256(f"{drawn.dtype}{list(drawn.shape)}".encode() + values.tobytes()).hexdigest()[:16]
    read = identity.files_digest(opened, f"{rule_kind(rule)} rule {rule_name(rule)}")  # (its files' bytes)
    return f"{drew}+files-{read}" if read else drew


def _with_labels(members: Members, labels) -> Members:
    return Members(**{**members.__dict__, "labels": labels})


@contextlib.contextmanager
def seeded_global_generators(seed: int):
    """torch's (CPU), numpy's and Python's global random states set from ``seed`` inside the block,
    put back after: what a user's code draws from them is decided by ``seed`` alone."""
    torch_state, numpy_state, python_state = (
        torch.default_generator.get_state(),
        np.random.get_state(),
        random.getstate(),
    )
    torch.default_generator.manual_seed(seed)  # (torch.manual_seed would seed every accelerator too)
    np.random.seed(seed)
    random.seed(seed)
    try:
        yield
    finally:
        torch.default_generator.set_state(torch_state)
        np.random.set_state(numpy_state)
        random.setstate(python_state)


@contextlib.contextmanager
def _fixed_global_randomness():
    """The global random states fixed for the probe (:func:`seeded_global_generators` at 0), one
    torch thread (a probe this small gains nothing from more, and a busy machine's thread pool
    wakes slowly), all put back after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with seeded_global_generators(0):
            yield
    finally:
        torch.set_num_threads(threads)
