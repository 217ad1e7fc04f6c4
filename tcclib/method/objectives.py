"""What the encoder learns from the views: the objective, a method's third part.

A method corrupts every anchor row into views by its two rules (*how* and *where*,
:mod:`tcclib.method.rules`); its **objective** says what the encoder is trained to do with them:
the pretraining heads on the encoder's output and the loss.  An objective is an object of a
subclass of :class:`Objective`, registered by name (:func:`tcclib.method.registry.register_objective`,
or passed to ``register_method(..., objective=...)``), that declares

- ``views``: how many corrupted views of each anchor an epoch draws (each by the method's rules);
- ``needs_changed``: whether its loss reads which features a view really changed;
- :meth:`~Objective.heads`: the pretraining heads after the encoder, as layer widths (stacked
  MLPs, ReLU between layers, none after the last, each member's own weights from its own
  generator, trained with the encoder by the same Adam);
- :meth:`~Objective.prepare`: work done once per run (e.g. feature subsets), handed to every
  batch as :attr:`Batch.state`;
- :meth:`~Objective.loss`: the members' losses ``[k]`` of one batch (:class:`Batch`: its anchors,
  views, the encoder and the heads), of which training steps on the sum;
- :meth:`~Objective.embedding_views` (optional): the views whose embeddings a member's embedding
  averages wherever it is read (the pseudo-label refresh, the classifier, the plots; SubTab's
  ``evaluation="subsets"``), instead of the encoder reading the whole row;
- :meth:`~Objective.encoder_inputs` (optional): a per-column affine map ``(row - shift) * scale``
  of the rows the encoder reads, in pretraining and wherever the embedding is read (VIME's
  ``inputs="min_max"``), instead of the preprocessed rows themselves;
- ``embedding``: which of the encoder's outputs a member's embedding is wherever it is read:
  ``"last"`` (the default: the last layer's) or ``"deep_stack"`` (every layer's side by side, the
  hidden layers' after their ReLU: the autoencoder's ``embedding="deep_stack"``);
- ``settings`` (the :class:`~tcclib.method.config.Config` fields it reads) and
  :meth:`~Objective.key_params` (its own parameters): what enters its members' content keys, with
  its code for a user's objective (:func:`tcclib.method.registry.objective_code`).

The built-ins, each at its paper's published defaults (``docs/methods.md``): :class:`NTXent` (the
paper's and SCARF's contrastive loss; every method before objectives existed, keyed as before),
:class:`VIME` (mask estimation and feature reconstruction; Yoon et al., NeurIPS 2020),
:class:`DenoisingAutoencoder` (reconstruction of the clean row from a swap-noised one; the
Porto Seguro winner's recipe) and :class:`SubTab` (feature subsets: reconstruction, contrast and
distance; Ucar et al., NeurIPS 2021).  A member's loss never reads another member's rows or
weights, so a member does the same work alone, in a stack and in the screen (on the CPU the last
bits of an element-wise kernel's scalar tail can differ: ``tools/stack_bits.py``).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from tcclib.method import identity, rules
from tcclib.method.losses import nt_xent_pairs, nt_xent_subsets
from tcclib.method.settings import UnkeyedSettingError
from tcclib.util.errors import register_short


@dataclass
class Stack:
    """The shape of the members an objective serves, as :meth:`Objective.heads` and
    :meth:`Objective.prepare` see it: ``k`` members, ``n_rows`` training rows, ``n_features`` raw
    columns ``M``, ``width`` the one-hot width ``D`` (padded to the widest member), ``hidden`` the
    encoder's output width ``H``; ``active`` ``[k, M]`` bool; ``in_widths`` ``[k]`` each member's
    own one-hot width; ``column_feature`` ``[k, D]`` the raw column of each one-hot column (-1:
    padding); ``cfg`` the run's :class:`~tcclib.method.config.Config`; ``rows`` ``[k, n_rows, D]``
    the members' clean training rows (one-hot, as the encoder reads them)."""

    k: int
    n_rows: int
    n_features: int
    width: int
    hidden: int
    active: torch.Tensor
    in_widths: torch.Tensor
    column_feature: torch.Tensor
    cfg: Any
    rows: torch.Tensor | None = None  # (None: a Stack made before rows were handed over)

    @property
    def device(self) -> torch.device:
        return self.active.device


EMBEDDINGS = ("last", "deep_stack")
"""What an objective's ``embedding`` may be: the encoder's last layer, or every layer side by side."""


class Objective:
    """What the encoder learns from the views (see the module's docstring).

    A subclass sets ``name`` (a simple identifier), ``views``, ``needs_changed`` and
    ``settings``, and overrides :meth:`heads` and :meth:`loss` (and :meth:`prepare`,
    :meth:`key_params` when it has work done once or parameters of its own)."""

    name: str = ""
    views: int = 1
    needs_changed: bool = False
    settings: tuple[str, ...] = ()
    embedding: str = "last"  # (or "deep_stack": see the module's docstring)

    def key_params(self) -> dict:
        """The objective's own parameters: they enter its members' content keys."""
        return {}

    def heads(self, stack: Stack) -> dict[str, list[int]]:
        """``{head name: [width of each layer]}``: the pretraining heads on the encoder's output
        (of width ``stack.hidden``), e.g. ``{"decoder": [stack.width]}`` for one linear layer."""
        raise NotImplementedError(f"{type(self).__name__}.heads")

    def prepare(self, stack: Stack):
        """Work done once per run; what it returns is :attr:`Batch.state` in every batch."""
        return None

    def loss(self, batch: Batch) -> torch.Tensor:
        """The members' losses ``[k]`` (float, with gradient) of the batch: training takes one
        Adam step on their sum."""
        raise NotImplementedError(f"{type(self).__name__}.loss")

    def embedding_views(self, stack: Stack, state) -> torch.Tensor | None:
        """How a member's embedding reads a row once it is read as a representation (by the
        pseudo-label refresh, the classifier, the plots and ``transform``): ``None`` (the default)
        for the encoder on the row as it is, or masks ``[k, V, 1, D]`` (float) for the mean of the
        encoder's outputs on the ``V`` masked rows ``row * masks[:, v]``.  ``state``: what
        :meth:`prepare` returned.  Pretraining itself reads the views :meth:`loss` makes."""
        return None

    def encoder_inputs(self, stack: Stack, state) -> tuple[torch.Tensor, torch.Tensor] | None:
        """What the encoder reads of a one-hot row, in pretraining (:meth:`Batch.encode`) and
        wherever the embedding is read: ``None`` (the default) the row itself, or ``(shift,
        scale)`` float ``[k, 1, D]`` for ``(row - shift) * scale``.  ``state``: what
        :meth:`prepare` returned."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Batch:
    """One step's rows of a stack of members, as an objective's :meth:`~Objective.loss` reads them.

    ``idx``: ``[k, b]`` the batch's rows (positions in the members' training rows); :attr:`anchors`
    ``[k, b, D]`` their clean one-hot rows, :attr:`views` ``[k, V b, D]`` their corrupted views
    (view ``v`` in rows ``v b .. (v + 1) b``), :attr:`pairs` both in one gather; :attr:`changed`
    ``[k, V b, M]`` which raw features each view changed (objectives with ``needs_changed``);
    :meth:`encode` and :meth:`head` run the members' encoder and heads; ``state``: what
    :meth:`Objective.prepare` returned; ``active`` ``[k, M]``, ``in_widths`` ``[k]`` (float),
    ``cfg``."""

    def __init__(self, pretraining, idx: torch.Tensor, state):
        self._pt, self.idx, self.state = pretraining, idx, state
        self.cfg = pretraining.objective_settings
        self.active = pretraining.active
        self.in_widths = pretraining.in_widths

    @property
    def k(self) -> int:
        return self.idx.shape[0]

    @property
    def size(self) -> int:
        """Rows ``b`` in the batch."""
        return self.idx.shape[1]

    def _rows(self, blocks) -> torch.Tensor:
        N, idx = self._pt.N, self.idx
        at = torch.cat([idx + block * N if block else idx for block in blocks], dim=1) if len(blocks) > 1 else None
        if at is None:
            at = idx + blocks[0] * N if blocks[0] else idx
        return rules.take_rows(self._pt.pairs, at)

    @property
    def anchors(self) -> torch.Tensor:
        return self._rows([0])

    @property
    def views(self) -> torch.Tensor:
        return self._rows(list(range(1, self._pt.V + 1)))

    @property
    def pairs(self) -> torch.Tensor:
        """Anchors then views ``[k, (1 + V) b, D]``, one gather."""
        return self._rows(list(range(self._pt.V + 1)))

    @property
    def changed(self) -> torch.Tensor:
        N, idx = self._pt.N, self.idx
        at = idx if self._pt.V == 1 else torch.cat([idx + v * N for v in range(self._pt.V)], dim=1)
        return rules.take_rows(self._pt.changed, at)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """The members' encoder on rows ``x`` ``[k, n, D]`` -> ``[k, n, H]`` (bfloat16 products
        under ``matmul_precision: bf16``), through the objective's :meth:`Objective.encoder_inputs`."""
        with self._pt.autocast():
            return self._pt.enc(self._pt.encoder_rows(x))

    def head(self, name: str, h: torch.Tensor) -> torch.Tensor:
        """The members' head ``name`` (of :meth:`Objective.heads`) on ``h`` ``[k, n, H]``."""
        with self._pt.autocast():
            return self._pt.heads[name](h)


def row_squared_error(output: torch.Tensor, target: torch.Tensor, in_widths=None) -> torch.Tensor:
    """``[k]``: each member's squared error summed over the columns, divided by its own one-hot
    width ``in_widths`` (the mean over its columns; None: the sum), averaged over the rows."""
    per_row = (output.float() - target.float()).square_().sum(-1).mean(1)
    return per_row if in_widths is None else per_row / in_widths


# --------------------------------------------------------------------------- the built-ins


class NTXent(Objective):
    """NT-Xent between each anchor and its view through the encoder and a projection head
    (``head_depth`` layers of ``hidden_dim``): the paper's (and SCARF's) objective, at
    ``Config.temperature``.  Every method's objective unless it names another; its members' keys
    hold no objective part (the committed results keep their keys)."""

    name = "ntxent"
    settings = ("temperature",)

    def heads(self, stack: Stack) -> dict[str, list[int]]:
        return {"projection": [stack.hidden] * stack.cfg.head_depth}

    def loss(self, batch: Batch) -> torch.Tensor:
        z = batch.head("projection", batch.encode(batch.pairs))
        return nt_xent_pairs(z, batch.cfg.temperature)  # (bf16: its products in bf16, the rest float32)


class VIME(Objective):
    """VIME's self-supervised objective (Yoon et al., NeurIPS 2020, ``vime_self``): from the
    corrupted view alone, a mask estimator predicts which features were changed (binary
    cross-entropy, the mean over the member's active features) and a feature estimator
    reconstructs the clean row (squared error, the mean over its one-hot columns); loss = mask
    loss + ``alpha`` x reconstruction loss.  Each estimator is one linear layer on the encoder's
    output, as published.  ``alpha`` = 2.0, the published default (the views' ``p_m`` = 0.3 is the
    method's where rule, :class:`tcclib.method.rules.Bernoulli`).

    ``inputs``: what the encoder reads, in pretraining and wherever the embedding is read:
    ``"preprocessed"`` (the collection's, the default of every stored result) the preprocessed
    row; ``"min_max"`` (the authors', whose data are scaled to [0, 1] before VIME sees them) the
    row min-max scaled per column over the member's training rows (:func:`min_max_scaling`).

    ``reconstruction``: what the feature estimator outputs: ``"linear"`` (the collection's, the
    default of every stored result) the preprocessed row itself (z-scored numbers, one-hot
    categories); ``"sigmoid"`` (the authors' ``Dense(dim, activation='sigmoid')`` on data scaled to
    [0, 1]) a sigmoid of it, against the clean row min-max scaled per column over the member's
    training rows (a one-hot column stays 0/1; a constant column's target is 0)."""

    needs_changed = True
    RECONSTRUCTIONS = ("linear", "sigmoid")
    INPUTS = ("preprocessed", "min_max")

    def __init__(
        self, alpha: float = 2.0, name: str = "vime", reconstruction: str = "linear", inputs: str = "preprocessed"
    ):
        self.alpha = rules.checked_number("alpha", alpha, "the weight of the reconstruction loss", 0)
        self.reconstruction = _checked_choice("reconstruction", reconstruction, self.RECONSTRUCTIONS)
        self.inputs = _checked_choice("inputs", inputs, self.INPUTS)
        self.name = name

    def key_params(self) -> dict:
        params = {"alpha": self.alpha}
        if self.reconstruction != "linear":  # (absent at the default: the stored results' keys stay)
            params["reconstruction"] = self.reconstruction
        if self.inputs != "preprocessed":  # (likewise)
            params["inputs"] = self.inputs
        return params

    def heads(self, stack: Stack) -> dict[str, list[int]]:
        return {"mask": [stack.n_features], "features": [stack.width]}

    def prepare(self, stack: Stack) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``reconstruction="sigmoid"`` or ``inputs="min_max"``: each member's column minimum and
        the inverse of its range ``[k, 1, D]`` over its training rows (0 where the range is 0 and
        on padding); else None."""
        sigmoid = _checked_choice("reconstruction", self.reconstruction, self.RECONSTRUCTIONS) == "sigmoid"
        if not sigmoid and _checked_choice("inputs", self.inputs, self.INPUTS) == "preprocessed":
            return None
        return min_max_scaling(stack)

    def encoder_inputs(self, stack: Stack, state) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``inputs="min_max"``: the rows min-max scaled (``state``, :meth:`prepare`); else None."""
        return state if _checked_choice("inputs", self.inputs, self.INPUTS) == "min_max" else None

    def loss(self, batch: Batch) -> torch.Tensor:
        h = batch.encode(batch.views)
        mask_logits = batch.head("mask", h).float()
        active = batch.active.unsqueeze(1).float()  # [k, 1, M]
        bce = F.binary_cross_entropy_with_logits(mask_logits, batch.changed.float(), reduction="none")
        mask_loss = ((bce * active).sum(-1) / active.sum(-1).clamp_min(1)).mean(1)
        features = batch.head("features", h)
        if self.reconstruction == "linear":
            reconstruction = row_squared_error(features, batch.anchors, batch.in_widths)
        else:
            low, inverse_range = batch.state
            target = (batch.anchors.float() - low) * inverse_range
            output = torch.sigmoid(features.float()) * (inverse_range > 0)  # (padding and constant columns: 0)
            reconstruction = row_squared_error(output, target, batch.in_widths)
        return mask_loss + self.alpha * reconstruction


def min_max_scaling(stack: Stack) -> tuple[torch.Tensor, torch.Tensor]:
    """Each member's column minimum and inverse range ``[k, 1, D]`` over its training rows
    ``stack.rows`` (float32): ``(row - low) * inverse_range`` scales each column to [0, 1]; the
    inverse range is 0 on a constant column and on padding."""
    rows = stack.rows.float()
    low, high = rows.amin(1, keepdim=True), rows.amax(1, keepdim=True)
    span = high - low
    real = (span > 0) & (stack.column_feature >= 0).unsqueeze(1)
    return low, torch.where(real, 1.0 / span.clamp_min(torch.finfo(span.dtype).tiny), 0.0)


class DenoisingAutoencoder(Objective):
    """A denoising autoencoder: the clean row reconstructed from its swap-noised view (the Porto
    Seguro winner's recipe, M. Jahrer 2017: "inputSwapNoise" 0.15, squared error, a linear output
    layer; the swap noise is the method's rules: the whole column's values, 15 % of the
    features, :class:`tcclib.method.rules.Bernoulli`).  The decoder is one linear layer on the
    encoder's output; the loss is the mean squared error over the member's one-hot columns.

    ``embedding``: what the classifier (and the pseudo-label refresh, the plots, ``transform``)
    reads: ``"last"`` (the collection's, the default of every stored result) the encoder's last
    layer; ``"deep_stack"`` (Jahrer's) every layer's activations side by side, ``encoder_depth x
    hidden_dim`` wide.  Pretraining is the same either way."""

    name = "dae"

    def __init__(self, name: str = "dae", embedding: str = "last"):
        self.name = name
        self.embedding = _checked_choice("embedding", embedding, EMBEDDINGS)

    def key_params(self) -> dict:
        return {} if self.embedding == "last" else {"embedding": self.embedding}  # (the stored keys stay)

    def heads(self, stack: Stack) -> dict[str, list[int]]:
        return {"decoder": [stack.width]}

    def loss(self, batch: Batch) -> torch.Tensor:
        reconstruction = batch.head("decoder", batch.encode(batch.views))
        return row_squared_error(reconstruction, batch.anchors, batch.in_widths)


class SubTab(Objective):
    """SubTab (Ucar et al., NeurIPS 2021; the authors' code, ``config/mnist.yaml``): each row's
    features are divided into ``n_subsets`` consecutive subsets that overlap by ``overlap`` of a
    subset's size; every subset is a view (the features outside it set to 0, the features in it
    swap-noised by the method's rules), encoded by the encoder; from each, a linear decoder
    reconstructs the whole clean row (squared error summed over the columns); over every pair of
    subsets, NT-Xent at ``tau`` on the L2-normalised projections (two layers) and their squared
    distance; loss = reconstruction + contrast + distance, averaged over the pairs.  Published
    defaults: 4 subsets, overlap 0.75, tau 0.1, all three losses (masking ratio 0.3: the method's
    where rule).

    ``evaluation``: how the trained encoder embeds a row: ``"row"`` (the collection's, the
    default of every stored result) reads the whole row, the features no subset holds too;
    ``"subsets"`` (the authors' ``aggregation: mean``) averages the embeddings of the row's
    subsets (:meth:`embedding_views`).  ``projection``: the activation between the projection's
    two layers: ``"relu"`` (the collection's stacked MLPs, the default of every stored result) or
    ``"leaky_relu"`` (the authors' ``AEWrapper``: ``F.leaky_relu``, slope 0.01)."""

    EVALUATIONS = ("row", "subsets")
    PROJECTIONS = ("relu", "leaky_relu")

    def __init__(
        self,
        n_subsets: int = 4,
        overlap: float = 0.75,
        tau: float = 0.1,
        name: str = "subtab",
        evaluation: str = "row",
        projection: str = "relu",
    ):
        whole = isinstance(n_subsets, (int, np.integer)) and not isinstance(n_subsets, (bool, np.bool_))
        if not (whole and n_subsets >= 2):
            raise ValueError(
                f"n_subsets: a whole number of subsets, at least 2 (the losses compare pairs), got {n_subsets!r}"
            )
        self.n_subsets = int(n_subsets)
        self.overlap = rules.checked_number("overlap", overlap, "a share of a subset's size", 0, 1, high_open=True)
        self.tau = rules.checked_number("tau", tau, "the contrastive temperature", 0, low_open=True)
        self.evaluation = self._checked_evaluation(evaluation)
        self.projection = _checked_choice("projection", projection, self.PROJECTIONS)
        self.name = name
        self.views = self.n_subsets

    revision = 2
    """(:func:`revision`) 2: the pairs' contrast from one shared product
    (:func:`~tcclib.method.losses.nt_xent_subsets`) and their distance from the subsets' sums,
    where 1 took each pair apart: the same loss, other float rounding."""

    def key_params(self) -> dict:
        params = {"n_subsets": self.n_subsets, "overlap": self.overlap, "tau": self.tau}
        if self.evaluation != "row":  # (absent at the defaults: the stored results' keys stay)
            params["evaluation"] = self.evaluation
        if self.projection != "relu":
            params["projection"] = self.projection
        return params

    def heads(self, stack: Stack) -> dict[str, list[int]]:
        if self._leaky():  # (the two layers apart, the activation between them in _project)
            return {"projection_in": [stack.hidden], "projection_out": [stack.hidden], "decoder": [stack.width]}
        return {"projection": [stack.hidden, stack.hidden], "decoder": [stack.width]}

    def _leaky(self) -> bool:
        return _checked_choice("projection", self.projection, self.PROJECTIONS) == "leaky_relu"

    def _project(self, batch: Batch, h: torch.Tensor) -> torch.Tensor:
        """The projection of the encoder's outputs ``h`` (before the L2 normalisation)."""
        if self._leaky():
            return batch.head("projection_out", F.leaky_relu(batch.head("projection_in", h)))
        return batch.head("projection", h)

    def prepare(self, stack: Stack) -> torch.Tensor:
        """The subsets' one-hot column masks ``[k, V, 1, D]`` (float; on the device once: a
        captured epoch copies nothing from the host)."""
        features = torch.zeros(stack.k, self.n_subsets, stack.n_features, dtype=torch.bool)
        for j, active in enumerate(stack.active.cpu()):
            for v, columns in enumerate(
                subset_features(active.nonzero().squeeze(1).tolist(), self.n_subsets, self.overlap)
            ):
                features[j, v, columns] = True
        column = stack.column_feature.cpu()  # [k, D]
        masks = torch.where(
            column.unsqueeze(1) >= 0,
            features.gather(2, column.clamp_min(0).unsqueeze(1).expand(-1, self.n_subsets, -1)),
            False,
        )
        return masks.unsqueeze(2).float().to(stack.device)

    def loss(self, batch: Batch) -> torch.Tensor:
        k, b, V = batch.k, batch.size, self.n_subsets
        views = batch.views.view(k, V, b, -1).mul_(batch.state).view(k, V * b, -1)
        h = batch.encode(views)
        decoded = batch.head("decoder", h).float().view(k, V, b, -1)
        reconstruction = (decoded - batch.anchors.float().unsqueeze(1)).square_().sum(-1).view(k, -1).mean(1)
        z = F.normalize(self._project(batch, h).float(), dim=-1).view(k, V, b, -1)
        contrast = nt_xent_subsets(z, self.tau)  # (every pair of subsets from one [V b, V b] product)
        # sum over pairs a < c of |z_a - z_c|^2 = V sum_a |z_a|^2 - |sum_a z_a|^2, per row
        pairs = V * (V - 1) // 2
        distance = (V * z.square().sum((1, 3)) - z.sum(1).square().sum(-1)).mean(1) / pairs
        return reconstruction + contrast + distance

    def embedding_views(self, stack: Stack, state: torch.Tensor) -> torch.Tensor | None:
        """``evaluation="subsets"``: the subsets' masks (:meth:`prepare`), so that a member's
        embedding is the mean of its subsets' embeddings, as the authors' evaluation; ``"row"``:
        None."""
        return state if self._checked_evaluation(self.evaluation) == "subsets" else None

    def _checked_evaluation(self, evaluation):
        if evaluation not in self.EVALUATIONS:
            raise ValueError(
                f"evaluation: 'row' (the encoder reads the whole row) or 'subsets' (the mean of the subsets' "
                f"embeddings, the authors'), got {evaluation!r}"
            )
        return evaluation


def _checked_choice(name: str, value, choices: tuple[str, ...]):
    """``value`` when it is one of ``choices``, else a ValueError naming ``name`` and them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def subset_features(active: list[int], n_subsets: int, overlap: float) -> list[list[int]]:
    """SubTab's subsets of the features ``active`` (in column order): ``n = len // n_subsets``
    features each (at least 1), the first extended forward and the others backward by
    ``int(overlap n)`` features, as the authors' ``subset_generator``; a table with fewer
    features than subsets gives subset ``v`` the feature ``v mod len``."""
    count = len(active)
    size = max(count // n_subsets, 1)
    extra = int(overlap * size)
    out = []
    for v in range(n_subsets):
        if count < n_subsets:
            out.append([active[v % count]])
            continue
        start, stop = (0, size + extra) if v == 0 else (v * size - extra, (v + 1) * size)
        out.append(active[start:stop])
    return out


# --------------------------------------------------------------------------- the files prepare reads


CONTRACT_ATTRIBUTES = ("views", "needs_changed", "settings", "embedding")
"""The attributes of the objective's contract that pretraining reads (a property among them runs then)."""


def files_setup_reads(objective, cfg) -> str:
    """A digest of the user's files that its contract's attributes (:data:`CONTRACT_ATTRIBUTES`,
    one a property computes), ``objective.heads`` and ``objective.prepare`` open on a
    small probe stack (2 members, 16 rows, 5 features, the run's settings ``cfg``;
    :func:`tcclib.method.identity.files_read`), ``""`` when they open none (a failure there is left
    to the run to name): what its code and state cannot show, keyed beside them."""
    k, n_rows, n_features = 2, 16, 5
    stack = Stack(
        k=k,
        n_rows=n_rows,
        n_features=n_features,
        width=n_features,
        hidden=8,
        active=torch.ones(k, n_features, dtype=torch.bool),
        in_widths=torch.full((k,), n_features),
        column_feature=torch.arange(n_features).repeat(k, 1),
        cfg=cfg,
        rows=torch.zeros(k, n_rows, n_features),
    )
    with identity.files_read() as opened:
        _quietly(lambda: [getattr(objective, name) for name in CONTRACT_ATTRIBUTES])  # (a property may read one)
        _quietly(lambda: objective.heads(stack))
        state = _quietly(lambda: objective.prepare(stack))
        _quietly(lambda: objective.embedding_views(stack, state))
        _quietly(lambda: objective.encoder_inputs(stack, state))
    return identity.files_digest(opened, f"objective {objective_name(objective)}")


def _quietly(action):
    """``action()``, or None when it fails (the run itself says what failed)."""
    try:
        return action()
    except Exception:
        return None


# --------------------------------------------------------------------------- the contract


class ObjectiveContractError(rules.RuleContractError):
    """An objective returned what its contract does not allow, or failed: one line naming it."""


register_short(ObjectiveContractError)


def revision(objective) -> int:
    """What one of tcclib's own objectives computes, numbered (its class's ``revision``, 1 when it
    sets none): an edit that changes its numbers and no other method's raises it, so only its own
    members train again (from 2 on it enters their keys and a run's ``config.json`` as
    ``revision:<r>``, :func:`tcclib.method.registry.objective_code`, so a finished dataset is
    stale; ``tools/record_training_code.py --check`` then compares every other member bit for
    bit).  Always 1 for a user's objective, which is keyed by its code (a ``version`` there pins
    its code, as for a rule: docs/rules.md)."""
    return getattr(type(objective), "revision", 1) if is_own(objective) else 1


def is_own(objective) -> bool:
    """Whether ``objective`` is one of tcclib's own (its contract is not checked at run time)."""
    return type(objective).__module__.startswith("tcclib.")


def objective_name(objective) -> str:
    """``'mine' (mine.py)``: the objective's name and, where known, its file."""
    return rules.rule_name(objective)


def call(objective, what: str, action):
    """``action()``; for a user's objective, its own error as one line naming the objective, its
    file and the line where it happened."""
    if is_own(objective):
        return action()
    try:
        return action()
    except (rules.RuleContractError, UnkeyedSettingError):
        raise
    except Exception as e:  # the objective's own failure, named
        source = rules.source_file(objective)
        frames = [f for f in traceback.extract_tb(e.__traceback__) if source and f.filename == source]
        line = f" at line {frames[-1].lineno}" if frames else ""
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ObjectiveContractError(
            f"objective {objective_name(objective)}: {what}() failed{line}: {type(e).__name__}: {text}"
        ) from e


def user_loss(objective, batch: Batch, first: bool) -> torch.Tensor:
    """A user's objective's loss on ``batch``, its errors one line (:func:`call`), checked
    (:func:`check_loss`); with ``first`` (a run passes it at every step, a check at its first) the
    files it opens are recorded: no key sees a file ``loss()`` reads (those ``prepare()`` opens are
    keyed by their bytes), so one of the user's is refused in one line, naming it and the fix."""
    compute = lambda: objective.loss(batch)  # noqa: E731
    loss = call(objective, "loss", (lambda: _opening_no_files(objective, compute)) if first else compute)
    check_loss(objective, loss, batch.k)
    return loss


def _opening_no_files(objective, action):
    with identity.files_read() as opened:
        loss = action()
    read = identity.data_files(opened)
    if read:
        names = ", ".join(Path(path).name for path in read)
        raise ObjectiveContractError(
            f"objective {objective_name(objective)}: loss() opened {names} as it trained, which no key sees (an "
            f"edit of it would not train its members again): read it in prepare(), whose files are keyed by their "
            f"bytes, or into a module constant"
        )
    return loss


def check_loss(objective, loss, k: int) -> None:
    """An objective's :meth:`~Objective.loss`: a floating tensor ``[k]`` with a gradient."""
    must = (
        f"objective {objective_name(objective)}: loss() must return each member's loss, "
        f"a float tensor of shape [k] = [{k}] with a gradient"
    )
    if not isinstance(loss, torch.Tensor):
        raise ObjectiveContractError(f"{must}; got {type(loss).__name__}")
    if not loss.is_floating_point():
        raise ObjectiveContractError(f"{must}; got dtype {loss.dtype}")
    if tuple(loss.shape) != (k,):
        hint = (
            " (a sum over the members mixes them: return one loss per member, e.g. .mean(1))" if loss.dim() == 0 else ""
        )
        raise ObjectiveContractError(f"{must}; got shape {list(loss.shape)}{hint}")
    if not loss.requires_grad:
        raise ObjectiveContractError(f"{must}; got one without a gradient (computed outside batch.encode?)")


def check_embedding_views(objective, views, stack: Stack) -> None:
    """An objective's :meth:`~Objective.embedding_views`: None, or finite float masks
    ``[stack.k, V, 1, stack.width]`` with ``V >= 1`` on the stack's device."""
    if views is None:
        return
    must = (
        f"objective {objective_name(objective)}: embedding_views() must return None or float masks "
        f"[{stack.k}, V, 1, {stack.width}] on {stack.device}"
    )
    if not isinstance(views, torch.Tensor):
        raise ObjectiveContractError(f"{must}; got {type(views).__name__}")
    if not views.is_floating_point() or views.dim() != 4:
        raise ObjectiveContractError(f"{must}; got a {views.dtype} tensor of shape {list(views.shape)}")
    k, V, one, width = views.shape
    if (k, one, width) != (stack.k, 1, stack.width) or V < 1:
        raise ObjectiveContractError(f"{must}; got shape {list(views.shape)}")
    if views.device != stack.device:
        raise ObjectiveContractError(f"{must}; got them on {views.device}")
    if not bool(torch.isfinite(views).all()):
        raise ObjectiveContractError(f"{must}; got values that are not finite")


def check_encoder_inputs(objective, found, stack: Stack) -> None:
    """An objective's :meth:`~Objective.encoder_inputs`: None, or ``(shift, scale)``, finite float
    tensors ``[stack.k, 1, stack.width]`` on the stack's device."""
    if found is None:
        return
    must = (
        f"objective {objective_name(objective)}: encoder_inputs() must return None or (shift, scale), "
        f"float tensors [{stack.k}, 1, {stack.width}] on {stack.device}"
    )
    if not (isinstance(found, tuple) and len(found) == 2 and all(isinstance(t, torch.Tensor) for t in found)):
        raise ObjectiveContractError(f"{must}; got {type(found).__name__}")
    for tensor in found:
        if not tensor.is_floating_point() or tuple(tensor.shape) != (stack.k, 1, stack.width):
            raise ObjectiveContractError(f"{must}; got a {tensor.dtype} tensor of shape {list(tensor.shape)}")
        if tensor.device != stack.device:
            raise ObjectiveContractError(f"{must}; got them on {tensor.device}")
        if not bool(torch.isfinite(tensor).all()):
            raise ObjectiveContractError(f"{must}; got values that are not finite")


def deep_stack(objective) -> bool:
    """Whether ``objective``'s members read every encoder layer as their embedding
    (``embedding`` ``"deep_stack"``); another value than :data:`EMBEDDINGS` is an
    :class:`ObjectiveContractError` naming the objective."""
    value = getattr(objective, "embedding", "last")
    if not isinstance(value, str) or value not in EMBEDDINGS:
        raise ObjectiveContractError(
            f"objective {objective_name(objective)}: embedding must be one of "
            f"{', '.join(map(repr, EMBEDDINGS))}, got {value!r}"
        )
    return value == "deep_stack"


def check_heads(objective, heads) -> None:
    """An objective's :meth:`~Objective.heads`: ``{name: [positive widths]}``, names identifiers."""
    must = (
        f"objective {objective_name(objective)}: heads() must return {{name: [layer widths]}}, "
        "e.g. {'decoder': [stack.width]}"
    )
    if not isinstance(heads, dict):
        raise ObjectiveContractError(f"{must}; got {type(heads).__name__}")
    for name, widths in heads.items():
        if not (isinstance(name, str) and name.isidentifier()):
            raise ObjectiveContractError(f"{must}; got the head name {name!r}")
        if not (isinstance(widths, (list, tuple)) and widths and all(isinstance(w, int) and w > 0 for w in widths)):
            raise ObjectiveContractError(f"{must}; got {name!r}: {widths!r}")
