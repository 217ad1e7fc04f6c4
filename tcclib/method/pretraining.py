"""The epoch loop: the pretraining members' state and every step of their contrastive pretraining.

:class:`Pretraining` (set up by :func:`tcclib.method.training.set_up`, run by its ``pretrain``):
one method per step, :meth:`~Pretraining.refresh_pseudo_labels`, :meth:`~Pretraining.draw_views`
(where and how to corrupt), :meth:`~Pretraining.contrastive_epoch`; its ``state_dict`` for
checkpoints.  :func:`make_step`: the step eager, as a CUDA graph (:class:`CapturedStep`,
:class:`CapturedEpoch`) or compiled (:class:`CompiledStep`), as ``Config.compile`` says; it reads
nothing back to the host (the losses are read once per epoch).  Also what the loop draws and
checks with: each member's generators, :class:`TrainingDiverged` (the pseudo-label heads:
:func:`tcclib.method.heads.fit_heads`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tcclib.data.encoding import TensorTable
from tcclib.method import draws, objectives, registry, rules
from tcclib.method.config import METHODS, Config, KeyedSettings
from tcclib.method.heads import fit_heads, labeled_rows
from tcclib.method.model import StackedMLP, adam, autocast, batches, view_mean
from tcclib.util.errors import register_short


def member_seed(seed: int, tag: str) -> int:
    """A stable 63-bit generator seed for (seed, tag)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{tag}".encode()).digest()[:8], "little") >> 1


def generator(seed: int, tag: str, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(member_seed(seed, tag))
    return g


class TrainingDiverged(RuntimeError):
    """Training produced a non-finite loss, weight or prediction: the run stops here, naming the
    dataset, seed, method and pretraining epoch, instead of scoring NaNs later.

    Attributes ``dataset``, ``seed``, ``method``, ``epoch`` (pretraining epochs done when it was
    seen; None for the evaluation head) and ``what`` (the quantity that is not finite)."""

    def __init__(
        self,
        dataset: str,
        seed: int,
        method: str,
        epoch: int | None,
        what: str,
        others: int = 0,
        lr: float | None = None,
    ):
        self.dataset, self.seed, self.method, self.epoch, self.what = dataset, seed, method, epoch, what
        more = f" (and {others} other member{'s' if others > 1 else ''})" if others else ""
        hint = f"; lower lr (now {lr:g})" if lr is not None else ""
        super().__init__(f"training diverged: dataset {dataset}, seed {seed}, method {method}{more}: {what}{hint}")


register_short(TrainingDiverged)  # shown short (tcclib.util.errors)


def check_finite(finite, members: list[tuple[int, str]], dataset: str, epoch: int | None, what, lr: float) -> None:
    """A :class:`TrainingDiverged` naming the first of ``members`` (``(seed, method)``) whose
    ``finite`` flag is False, and how many others; ``what``: its text, or a function of that
    member's index giving it."""
    bad = [j for j, ok in enumerate(finite) if not ok]
    if bad:
        seed, method = members[bad[0]]
        text = what(bad[0]) if callable(what) else what
        raise TrainingDiverged(dataset, seed, method, epoch, text, len(bad) - 1, lr)


@dataclass
class Layout:
    """The members of one run, in order: seed-major, then the configured methods."""

    members: list[tuple[int, str]]  # (seed index in the table, method)
    seeds: list[int]  # each member's seed
    n_features: list[int]  # each member's active feature count M
    in_widths: list[int]  # each member's one-hot input width
    pre: list[int]  # the members that pretrain (positions in ``members``)

    @property
    def K(self) -> int:
        return len(self.members)

    def seed_index(self, device) -> torch.Tensor:
        return torch.tensor([si for si, _ in self.members], device=device)

    def named(self, idx=None) -> list[tuple[int, str]]:
        """(seed, method) of the members ``idx`` (all by default)."""
        idx = range(self.K) if idx is None else idx
        return [(self.seeds[i], self.members[i][1]) for i in idx]


def encoder_dims(tab: TensorTable, cfg: Config) -> list[int]:
    return [tab.width] + [cfg.hidden_dim] * cfg.encoder_depth


def _stacked(parts, shape, dtype, device, index_of=None) -> torch.Tensor:
    """One ``[Kp, ...]`` tensor from ``(member positions, their rows)`` parts (the part itself
    when one part holds every member in order); ``index_of``: positions -> their device index
    tensor, made once (no host-to-device copy per call; a captured epoch could not hold one)."""
    if len(parts) == 1 and parts[0][0] == list(range(shape[0])):
        return parts[0][1]
    covered = sorted(j for idx, _ in parts for j in idx) == list(range(shape[0]))
    out = (torch.empty if covered else torch.zeros)(shape, dtype=dtype, device=device)  # (no fill when all written)
    for idx, part in parts:
        out[idx if index_of is None else index_of(idx)] = part
    return out


def _groups(rules_of_members) -> list[tuple[object, list[int]]]:
    """``(rule, the positions of the members that use it)``, rules in order of first use, grouped
    by the objects themselves: a user's ``__eq__`` that calls two rules equal must not make one of
    them draw for the other's members."""
    groups: dict[int, tuple[object, list[int]]] = {}
    for j, rule in enumerate(rules_of_members):
        groups.setdefault(id(rule), (rule, []))[1].append(j)
    return list(groups.values())


class Pretraining:
    """The pretraining members of a run and every step of their contrastive pretraining.

    ``tab``: the stacked table; ``layout``: the members (only ``layout.pre`` pretrain);
    ``importance``: ``[S, M, M]`` matrices per table seed (correlation methods only);
    ``train_gens``: every member's generator (the pretraining members' are used and advanced);
    ``anchors_all``: every member's one-hot training rows ``[K, N, D]``; ``weights``: every
    member's row weights ``[K, N]`` for the pseudo-label heads (None: unweighted; the contrastive
    loss is never weighted: pretraining is unsupervised and row-wise).

    Labels: the ``oracle`` members corrupt within their true class, the pseudo-label members
    within their current pseudo-class (refreshed by :meth:`refresh_pseudo_labels`); a true label
    below 0 (an unlabeled row whose class nobody knows, as in the estimator) is never compared.
    """

    # long on purpose: the pretraining state in one place (generators, rules, pseudo-labels, step)
    def __init__(
        self,
        tab: TensorTable,
        layout: Layout,
        cfg: Config,
        importance: np.ndarray | None,
        train_gens: list[torch.Generator],
        anchors_all: torch.Tensor,
        name: str = "dataset",
        weights: torch.Tensor | None = None,
        pre: list[int] | None = None,
    ):
        dev = anchors_all.device
        self.cfg, self.name, self.tab, self.dev = cfg, name, tab, dev
        pre = layout.pre if pre is None else list(pre)  # (one objective's members: see stacks())
        self.pre = pre
        self.Kp = Kp = len(pre)
        S, N, M = tab.raw_train.shape
        self.N, self.M, self.Cn = N, M, tab.n_classes
        self.pidx = torch.tensor(pre, device=dev)
        self.gens = [train_gens[i] for i in pre]
        self.seed_idx = torch.tensor([layout.members[i][0] for i in pre], device=dev)
        self.specs = [METHODS[layout.members[i][1]] for i in pre]
        self.named = layout.named(pre)  # (seed, method) of each pretrained member
        self.raw = tab.raw_train[self.seed_idx]  # [Kp, N, M]
        self.anchors = anchors_all[self.pidx]
        self.active = tab.active[self.seed_idx]
        self.in_widths = torch.tensor([float(layout.in_widths[i]) for i in pre], device=dev)
        # what the encoder learns from the views (one objective per stack: see stacks())
        self.objective = self.specs[0].learns
        if any(spec.learns is not self.objective for spec in self.specs):
            raise ValueError("a Pretraining stack holds the members of one objective (see pretraining.stacks)")
        self.V = self.objective.views
        self._seen: dict[tuple, KeyedSettings] = {}  # (a user's rule or objective -> the settings it reads)
        self.objective_settings = self.settings_seen_by(self.objective, range(Kp))  # (Stack.cfg, Batch.cfg)
        shape = self.stack_shape()
        # encoder and the objective's heads of the pretrained members (own stacks: only they train);
        # one "init" generator per member starts them all, the encoder first (as init_encoders does)
        ig = [generator(layout.seeds[i], cfg.encoder_init_tag(layout.members[i][1]), dev) for i in pre]
        self.enc = StackedMLP(Kp, encoder_dims(tab, cfg), ig, [layout.in_widths[i] for i in pre], cfg.bias_init, dev)
        widths = objectives.call(self.objective, "heads", lambda: self.objective.heads(shape))
        if not objectives.is_own(self.objective):
            objectives.check_heads(self.objective, widths)
        self.heads = {
            head: StackedMLP(Kp, [cfg.hidden_dim, *layers], ig, bias_init=cfg.bias_init, device=dev)
            for head, layers in widths.items()
        }
        self.proj = self.heads.get("projection")  # (NT-Xent's projection head)
        self.mode = self.specs[0].step_mode(cfg)  # eager, cuda_graph or torch_compile (Config.compile)
        if self.mode == "cuda_graph" and dev.type != "cuda":
            self.mode = "eager"  # (the fallback; Config.step_mode already says so for device "cpu")
        self.opt = adam(self.parameters(), cfg.lr)
        self.objective_state = objectives.call(self.objective, "prepare", lambda: self.objective.prepare(shape))
        self.embedding_views = self._embedding_views(shape)  # (None: the embedding reads the whole row)
        self.deep_stack = objectives.deep_stack(self.objective)  # (the embedding: every encoder layer)
        self.input_map = self._encoder_inputs(shape)  # (None: the encoder reads the rows as they are)
        self.changed: torch.Tensor | None = None  # [Kp, V N, M]: which features each view changed
        reads = [spec.reads("corruption_rate") for spec in self.specs]  # (a Bernoulli mask's count: unchecked)
        counts = [cfg.corrupted_count(layout.n_features[i], checked) for i, checked in zip(pre, reads)]
        self.k = torch.tensor(counts, device=dev)
        self.y_true = tab.y_train[self.seed_idx]
        self.labeled = tab.labeled[self.seed_idx]
        self.labels = torch.zeros(Kp, N, dtype=torch.int64, device=dev)
        true = [j for j, spec in enumerate(self.specs) if spec.needs_true_labels]
        if true:
            self.labels[true] = self.y_true[true]
        self.pse = [j for j, spec in enumerate(self.specs) if spec.pseudo_labelled]
        self._index: dict[tuple, torch.Tensor] = {}  # member positions -> index tensor (made once)
        self.pse_t = self.index_of(self.pse)
        # where the views' random numbers come from (Config.draws): each member's generator, or
        # counter draws keyed by the member (tcclib.method.draws)
        self.draw_scheme = cfg.draw_scheme()
        if self.draw_scheme == "counter":
            keys = [member_seed(layout.seeds[i], layout.members[i][1]) for i in pre]
            self.draws = draws.CounterDraws.of(keys, dev)
        else:
            self.draws = draws.GeneratorDraws(self.gens, dev)
        # the members of each how rule and each where rule, and what each rule prepares once
        self.how_groups = _groups(spec.draw for spec in self.specs)
        self.where_groups = _groups(spec.choice for spec in self.specs)
        self.how_state = {
            rule: rules.run_rule(
                rule,
                "prepare",
                lambda r=rule, i=idx: r.prepare(self.members(i, r, labels_known=r.needs != rules.PSEUDO_LABELS)),
            )
            for rule, idx in self.how_groups
        }
        needed = any(rule.needs_importance for rule, _ in self.where_groups)
        self.where_state = {
            rule: rules.run_rule(
                rule, "prepare", lambda r=rule, i=idx: r.prepare(self.members(i, r), importance if needed else None)
            )
            for rule, idx in self.where_groups
        }
        # a user rule's draws are checked on every call: dtype and shape on the host, the donors'
        # range on the device (a flag per how rule, read with the epoch's losses)
        self.contract_checked = False  # (and its first draws in full, rules.check_donors)
        self.loss_files_checked = False  # (a user objective's first loss: the files it opens, objectives.user_loss)
        self.user_how = [rule for rule, _ in self.how_groups if not rules.is_own(rule)]
        self.out_of_range = torch.zeros(len(self.user_how), dtype=torch.bool, device=dev)
        self.pending: list[tuple] = []  # a refresh's checks and records, read with the epoch's losses
        self.lab_rows = labeled_rows(self.labeled)  # [Kp, NL]
        # the pseudo-label heads' row weights [Kp, NL] (None: unweighted, the paper)
        self.lab_weights = None if weights is None else weights[self.pidx].gather(1, self.lab_rows)
        self.refresh_at = frozenset(cfg.refresh_epochs(cfg.epochs))  # pseudo_schedule
        self.batches = batches(N, cfg.batch_size)
        self.pairs: torch.Tensor | None = None  # [Kp, (1 + V) N, D]: anchors, then this epoch's views
        self.step = make_step(self)
        self.epoch = 0
        self.history: list[tuple] = []  # (seed, method, epoch, loss)
        self.pseudo: list[tuple] = []  # (seed, method, epoch, pseudo_accuracy)

    def parameters(self) -> list[torch.Tensor]:
        """What trains: the encoder's parameters, then each head's, in the objective's order."""
        return self.enc.parameters() + [p for head in self.heads.values() for p in head.parameters()]

    def stack_shape(self) -> objectives.Stack:
        """These members' shape as the objective sees it (:class:`tcclib.method.objectives.Stack`)."""
        tab, D = self.tab, self.tab.width
        offsets = tab.offsets[self.seed_idx]  # [Kp, M] (D_max for inactive columns)
        starts = offsets.masked_fill(~self.active, D).sort(dim=1).values  # active columns' first positions
        feature_of_start = offsets.masked_fill(~self.active, D).argsort(dim=1)
        at = (
            torch.searchsorted(
                starts.contiguous(), torch.arange(D, device=self.dev).expand(self.Kp, D).contiguous(), right=True
            )
            - 1
        )
        column = feature_of_start.gather(1, at.clamp_min(0))
        padding = torch.arange(D, device=self.dev).unsqueeze(0) >= self.in_widths.long().unsqueeze(1)
        return objectives.Stack(
            k=self.Kp,
            n_rows=self.N,
            n_features=self.M,
            width=D,
            hidden=self.cfg.hidden_dim,
            active=self.active,
            in_widths=self.in_widths,
            column_feature=column.masked_fill(padding | (at < 0), -1),
            cfg=self.objective_settings,
            rows=self.anchors,
        )

    def _embedding_views(self, shape: objectives.Stack) -> torch.Tensor | None:
        """The objective's :meth:`~tcclib.method.objectives.Objective.embedding_views` of these
        members (a user's checked), float32."""
        objective, state = self.objective, self.objective_state
        views = objectives.call(objective, "embedding_views", lambda: objective.embedding_views(shape, state))
        if not objectives.is_own(objective):
            objectives.check_embedding_views(objective, views, shape)
        return None if views is None else views.float()

    def _encoder_inputs(self, shape: objectives.Stack) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The objective's :meth:`~tcclib.method.objectives.Objective.encoder_inputs` of these
        members (a user's checked), float32."""
        objective, state = self.objective, self.objective_state
        found = objectives.call(objective, "encoder_inputs", lambda: objective.encoder_inputs(shape, state))
        if not objectives.is_own(objective):
            objectives.check_encoder_inputs(objective, found, shape)
        return None if found is None else (found[0].float(), found[1].float())

    def encoder_rows(self, x: torch.Tensor) -> torch.Tensor:
        """One-hot rows ``x`` ``[Kp, n, D]`` as these members' encoder reads them."""
        if self.input_map is None:
            return x
        shift, scale = self.input_map
        return (x - shift) * scale

    def input_members(self) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``[(positions in every member's stack, shift, scale)]`` of these members when their
        encoder reads mapped rows (:attr:`tcclib.method.model.StackedMLP.input_maps`), else empty."""
        return [] if self.input_map is None else [(self.pidx, *self.input_map)]

    def view_members(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``[(positions in every member's stack, masks)]`` of these members' embedding views
        (:attr:`tcclib.method.model.StackedMLP.views`), empty when they read the whole row."""
        return [] if self.embedding_views is None else [(self.pidx, self.embedding_views)]

    def deep_members(self) -> list[torch.Tensor]:
        """``[positions in every member's stack]`` of these members when their embedding is the
        deep stack (:attr:`tcclib.method.model.StackedMLP.deep`), else empty."""
        return [self.pidx] if self.deep_stack else []

    def autocast(self):
        """The context of the networks' forward passes (:func:`autocast`)."""
        return autocast(self.cfg, self.dev, cache=self.mode != "cuda_graph")

    @property
    def stacks(self) -> list[Pretraining]:
        """The stacks of this pretraining: itself (:class:`Stacks` holds several)."""
        return [self]

    # ---------------------------------------------------------------- steps
    def refresh_due(self, epoch: int) -> bool:
        """Whether the pseudo-labels are refreshed before pretraining epoch ``epoch`` (0-based)."""
        return bool(self.pse) and epoch in self.refresh_at

    def refresh_pseudo_labels(self, epoch: int) -> None:
        """Fit a head per pseudo-label member on its labeled rows' current embeddings, label the
        unlabeled rows with its predictions (labeled rows keep their true labels) and record the
        pseudo-label accuracy on the unlabeled rows whose class is known (NaN if none).

        Nothing is read back here: the heads' finiteness check and the accuracies wait on the
        device and are read with the next contrastive epoch's losses (:meth:`read_epoch`).  Under
        counter draws the heads' row orders are counter draws too (one set of operations per head
        epoch, whatever the members)."""
        cfg, pse, pidx_t = self.cfg, self.pse, self.pse_t
        read = self.enc.every_layer if self.deep_stack else self.enc  # (as the classifier will read them)
        rows = self.encoder_rows(self.anchors)[pidx_t]
        with torch.no_grad(), autocast(cfg, self.dev):
            if self.embedding_views is None:
                emb = read(rows, pidx_t)
            else:  # (the mean of the views' embeddings)
                emb = view_mean(read, rows, self.embedding_views[pidx_t], pidx_t)
        orders = None
        if self.draw_scheme == "counter":
            source = self.draws_of(pse)
            source.set_epoch(epoch)
            n_labeled = self.lab_rows.shape[1]
            orders = lambda e: source.order(n_labeled, draws.HEAD + e)  # noqa: E731
        head = fit_heads(
            rules.take_rows(emb, self.lab_rows[pidx_t]),
            self.y_true[pidx_t].gather(1, self.lab_rows[pidx_t]),
            [self.gens[j] for j in pse],
            cfg,
            self.Cn,
            None if self.lab_weights is None else self.lab_weights[pidx_t],
            orders=orders,
        )
        with torch.no_grad(), autocast(cfg, self.dev):
            logits = head(emb).float()
            pred = logits.argmax(-1)
        finite = torch.isfinite(logits).flatten(1).all(1)
        y_true = self.y_true[pidx_t]
        new = torch.where(self.labeled[pidx_t], y_true, pred)
        self.labels[pidx_t] = new
        unl = ~self.labeled[pidx_t] & (y_true >= 0)
        acc = ((new == y_true) & unl).sum(1).float() / unl.sum(1)  # NaN: no unlabeled row of known class
        self.pending.append((epoch, finite, acc))

    def read_epoch(self, total: torch.Tensor) -> list[float]:
        """The epoch's one read back to the host: the members' summed losses ``total`` ``[Kp]``,
        the user rules' out-of-range flags and any refresh's checks and accuracies, in one copy.
        Raises :class:`TrainingDiverged` for a non-finite pseudo-label head and
        :class:`~tcclib.method.rules.RuleContractError` for donors out of range; records the
        refreshes' pseudo-label accuracies; returns each member's mean loss."""
        parts = [total / self.N, self.out_of_range.float()]
        for _, finite, acc in self.pending:
            parts += [finite.float(), acc]
        values = torch.cat(parts).tolist()
        Kp, P, pending = self.Kp, len(self.pse), self.pending
        self.pending = []
        ep_loss, at = values[:Kp], Kp + len(self.user_how)
        for n, (epoch, _, _) in enumerate(pending):
            finite = values[at + 2 * n * P : at + (2 * n + 1) * P]
            check_finite(
                [bool(f) for f in finite],
                [self.named[j] for j in self.pse],
                self.name,
                epoch,
                f"the pseudo-label head's predictions are not finite at the "
                f"refresh before pretraining epoch {epoch + 1} of {self.cfg.epochs}",
                self.cfg.lr,
            )
            accuracy = values[at + (2 * n + 1) * P : at + (2 * n + 2) * P]
            for j, a in zip(self.pse, accuracy):
                self.pseudo.append((*self.named[j], epoch, a))
        for rule, flag in zip(self.user_how, values[Kp:at]):
            if flag:
                raise rules.out_of_range_error(rule, self.N, self.epoch + 1)
        return ep_loss

    def correlation_inputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The correlation sampler's matrices ``[Kc, M, M]`` and signs ``[Kc]`` of the members that
        sample by :class:`~tcclib.method.rules.Correlated` rules, in member order (for tests)."""
        found = []
        for rule, idx in self.where_groups:
            if isinstance(rule, rules.Correlated):
                W, sign, _ = self.where_state[rule]
                found += [(j, W[pos], sign[pos]) for pos, j in enumerate(idx)]
        found.sort(key=lambda item: item[0])
        return torch.stack([W for _, W, _ in found]), torch.stack([sign for _, _, sign in found])

    def index_of(self, idx: list[int]) -> torch.Tensor:
        """Member positions ``idx`` as a device tensor, made once per set of positions (no
        host-to-device copy in a later epoch, which a captured epoch could not hold)."""
        key = tuple(idx)
        if key not in self._index:
            self._index[key] = torch.tensor(list(idx), dtype=torch.int64, device=self.dev)
        return self._index[key]

    def members(self, idx: list[int], rule, labels_known: bool = True, view: int = 0) -> rules.Members:
        """Pretraining members ``idx`` as ``rule`` sees them (their current labels included;
        ``labels_known=False``: :class:`~tcclib.method.rules.UnknownLabels` instead, what a
        pseudo-label rule's ``prepare()`` gets; a user's rule reads the settings its members'
        keys hold, :meth:`settings_seen_by`)."""
        whole = idx == list(range(self.Kp))
        t = self.index_of(idx)
        labels = (self.labels if whole else self.labels[t]) if labels_known else None
        return rules.Members(
            index=list(idx),
            active=self.active if whole else self.active[t],
            labels=labels if labels_known else rules.UnknownLabels(rule),
            n_classes=self.Cn,
            corrupted=self.k if whole else self.k[t],
            gens=[self.gens[j] for j in idx],
            specs=[self.specs[j] for j in idx],
            seed_index=self.seed_idx if whole else self.seed_idx[t],
            cfg=self.settings_seen_by(rule, idx),
            all_rows=self.raw,
            draws=self.draws_of(idx),
            view=view,
        )

    def settings_seen_by(self, reader, idx) -> Config | KeyedSettings:
        """The run's settings as ``reader`` (a rule or objective of members ``idx``, or
        ``check_rule``'s probe of one) reads them: :attr:`cfg` for tcclib's own; for a user's,
        only what its members' content keys hold
        (:meth:`~tcclib.method.config.Config.seen_by_members`), made once per reader and members."""
        reader = getattr(reader, "checked", reader)  # (check_rule's probe of a user's rule or objective)
        if rules.is_own(reader):
            return self.cfg
        key = (id(reader), tuple(idx))
        if key not in self._seen:
            self._seen[key] = self.cfg.seen_by_members([self.specs[j] for j in idx], registry.named_as(reader))
        return self._seen[key]

    def draws_of(self, idx: list[int]):
        """The draws of members ``idx`` (:mod:`tcclib.method.draws`), made once per set."""
        key = ("draws", tuple(idx))
        if key not in self._index:
            self._index[key] = self.draws.subset(list(idx))
        return self._index[key]

    def draw_views(self, epoch: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Pretraining epoch ``epoch``'s (None: the one set last) data order ``[Kp, N]`` and
        corrupted views ``[Kp, V N, D]`` (one-hot; ``V`` the objective's views per anchor, view
        ``v`` in rows ``v N ..``; an objective that reads which features changed gets them in
        :attr:`changed`).

        Where: ``ceil(p M)`` features per row, chosen by each member's where rule
        (:class:`tcclib.method.rules.WhereRule`: uniformly or by the correlation ranking); how: each
        replaced value comes from a donor row that the member's how rule draws
        (:class:`tcclib.method.rules.HowRule`: whole column, pseudo-class, true class, ...).  The
        draws come from :attr:`draws` (``Config.draws``): each member's own generator in a fixed
        order (data order, donor draws, then the where rule's), or counter draws of the epoch,
        every member's in one set of operations per kind."""
        if epoch is not None:  # (None: the epoch set already, as a captured epoch sets it outside its graph)
            self.draws.set_epoch(epoch)
        perm = self.draws.order(self.N)
        views, changed = zip(*(self.draw_view(v) for v in range(self.V)))
        self.contract_checked = True
        if self.objective.needs_changed:
            self.changed = changed[0] if self.V == 1 else torch.cat(changed, 1)
        return perm, views[0] if self.V == 1 else torch.cat(views, 1)

    def draw_view(self, view: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One view of every anchor ``[Kp, N, D]`` (view ``view`` draws from its own streams) and,
        for an objective that reads them, the features it changed ``[Kp, N, M]`` (else None)."""
        Kp, N, M, dev = self.Kp, self.N, self.M, self.dev
        donor_u = self.draws.uniform(draws.DONORS + view * draws.VIEW, (N, M))
        masks = [(idx, self.rule_mask(rule, idx, view)) for rule, idx in self.where_groups]
        donors = [
            (idx, self.rule_donors(rule, idx, donor_u if len(idx) == Kp else donor_u[self.index_of(idx)], view))
            for rule, idx in self.how_groups
        ]
        mask = _stacked(masks, (Kp, N, M), torch.bool, dev, self.index_of)
        donors = _stacked(donors, (Kp, N, M), torch.int64, dev, self.index_of)
        corrupted = rules.corrupt(self.raw, mask, donors)
        changed = corrupted != self.raw if self.objective.needs_changed else None
        return self.tab.encode(corrupted, self.seed_idx), changed

    def rule_mask(self, rule, idx: list[int], view: int = 0) -> torch.Tensor:
        """The where rule's mask for its members ``idx``; a user rule's is checked on every call
        (its first one in full)."""
        mask = rules.run_rule(
            rule, "mask", lambda: rule.mask(self.members(idx, rule, view=view), self.where_state[rule])
        )
        if not rules.is_own(rule):
            rules.check_mask(rule, mask, (len(idx), self.N, self.M))
        return mask

    def rule_donors(self, rule, idx: list[int], u: torch.Tensor, view: int = 0) -> torch.Tensor:
        """The how rule's donor rows for its members ``idx``.  A user rule's are checked on every
        call: dtype and shape on the host; the range in full on its first call, then on the
        device (clamped for the gather, flagged in :attr:`out_of_range`, reported by
        :meth:`read_epoch` naming the rule and the epoch)."""
        donors = rules.run_rule(
            rule, "donors", lambda: rule.donors(self.members(idx, rule, view=view), self.how_state[rule], u)
        )
        if rules.is_own(rule):
            return donors
        shape = (len(idx), self.N, self.M)
        rules.check_donors(rule, donors, shape, values=not self.contract_checked)
        at = self.user_how.index(rule)
        self.out_of_range[at] |= rules.donors_out_of_range(donors, self.N)
        return donors.clamp(0, self.N - 1)

    def contrastive_epoch(self, epoch: int) -> list[float]:
        """One pass over the rows in batches: the objective's loss (NT-Xent between anchors and
        views by default), one Adam step per batch.  Returns each member's mean loss; a
        non-finite one is :class:`TrainingDiverged`."""
        if isinstance(self.step, CapturedEpoch):
            total = self.step.run(epoch)
        else:
            total = self.epoch_total(epoch)
        ep_loss = self.read_epoch(total)  # the epoch's one read back to the host
        check_finite(
            [math.isfinite(v) for v in ep_loss],
            self.named,
            self.name,
            epoch + 1,
            lambda j: (
                f"the {self.loss_name} loss is {ep_loss[j]} at pretraining epoch {epoch + 1} of {self.cfg.epochs}"
            ),
            self.cfg.lr,
        )
        return ep_loss

    def epoch_total(self, epoch: int | None, step=None) -> torch.Tensor:
        """The contrastive epoch's work on the device: its views (of ``epoch``; None: the epoch
        set last), every batch's step (``step``, default :attr:`step`); returns the members'
        summed losses ``[Kp]`` (nothing read back)."""
        N, step = self.N, step or self.step
        perm, views = self.draw_views(epoch)
        if self.pairs is None:  # one buffer for the run (a captured step reads it in place)
            self.pairs = torch.cat([self.anchors, views], dim=1)  # anchor i, view N + i
        else:
            self.pairs[:, N:].copy_(views)
        del views
        tot = torch.zeros(self.Kp, device=self.dev)
        for a, b in self.batches:
            tot += step(perm[:, a:b]) * (b - a)  # (on the device: no host round trip)
        return tot

    @property
    def loss_name(self) -> str:
        """How a message names the loss: ``contrastive`` (NT-Xent) or the objective's name."""
        return "contrastive" if isinstance(self.objective, objectives.NTXent) else f"{self.objective.name} objective's"

    def forward_loss(self, idx: torch.Tensor) -> torch.Tensor:
        """The members' losses ``[Kp]`` on the batch ``idx`` (``[Kp, b]`` rows of the epoch's
        order): the objective's (:class:`tcclib.method.objectives.Objective`; NT-Xent: its
        anchors and their views through encoder and projection head).  A user objective's loss
        is checked at every call (one line naming it)."""
        batch = objectives.Batch(self, idx, self.objective_state)
        if objectives.is_own(self.objective):
            return self.objective.loss(batch)
        # every call records the files it opens, not the first alone: a loss may open one on a later
        # step (after a warm-up kept in batch.state), which no key sees either
        self.loss_files_checked = True
        return objectives.user_loss(self.objective, batch, True)

    def eager_step(self, idx: torch.Tensor, forward_loss=None) -> torch.Tensor:
        """One contrastive step on the batch ``idx``: loss, backward, one Adam step.  Returns the
        members' losses, detached, on the device."""
        loss = (forward_loss or self.forward_loss)(idx)
        self.opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        self.opt.step()
        return loss.detach()

    def run_epoch(self) -> list[float]:
        """Pretraining epoch ``self.epoch``: refresh the pseudo-labels when due, then one
        contrastive epoch; the losses go to :attr:`history`."""
        epoch = self.epoch
        if self.refresh_due(epoch):
            self.refresh_pseudo_labels(epoch)
        ep_loss = self.contrastive_epoch(epoch)
        for (s, m), lv in zip(self.named, ep_loss):
            self.history.append((s, m, epoch + 1, lv))
        self.epoch = epoch + 1
        return ep_loss

    def check_weights(self) -> None:
        """The last step may have made a weight non-finite after the last loss was computed."""
        finite = torch.stack([torch.isfinite(p).flatten(1).all(1) for p in self.enc.parameters()]).all(0)
        what = f"an encoder weight is not finite after pretraining epoch {self.epoch}"
        check_finite(finite.tolist(), self.named, self.name, self.epoch, what, self.cfg.lr)

    def copy_into(self, enc_all: StackedMLP) -> None:
        """Put the trained encoders into the full stack of every member."""
        with torch.no_grad():
            for Wa, Wp in zip(enc_all.parameters(), self.enc.parameters()):
                Wa[self.pidx] = Wp

    # ---------------------------------------------------------------- checkpoints
    def expect(self) -> dict:
        """What a checkpoint of this run must look like (shapes and counts)."""
        return dict(
            params=[tuple(p.shape) for p in self.parameters()],
            gens=[int(g.get_state().numel()) for g in self.gens],
            labels=(self.Kp, self.N),
            classes=self.Cn,
            epochs=self.cfg.epochs,
            members=self.Kp,
        )

    def state_dict(self) -> dict:
        """Everything a resumed run needs to continue bit for bit."""
        return dict(
            epoch=self.epoch,
            params=[p.detach().cpu() for p in self.parameters()],
            opt=self.opt.state_dict(),
            gens=[g.get_state() for g in self.gens],
            labels=self.labels.cpu(),
            history=self.history,
            pseudo=self.pseudo,
        )

    def load_state_dict(self, state: dict) -> None:
        self.opt.load_state_dict(state["opt"])
        with torch.no_grad():
            for p, v in zip(self.parameters(), state["params"]):
                p.copy_(v.to(self.dev))
        for g, gs in zip(self.gens, state["gens"]):
            g.set_state(gs)
        self.labels = state["labels"].to(self.dev)
        self.history, self.pseudo = list(state["history"]), list(state["pseudo"])
        self.epoch = state["epoch"]
        self.step = make_step(self)  # (a captured step held the old optimiser state's addresses)

    def release(self) -> None:
        """Drop what only pretraining needs (the rows' copies, the views' buffer, a captured
        step's graph); histories and labels stay."""
        self.anchors = self.raw = self.pairs = self.step = self.changed = None


class Stacks:
    """The pretraining of members whose methods learn different objectives: one
    :class:`Pretraining` (one stacked model, its own heads and Adam) per objective, run epoch by
    epoch side by side, with :class:`Pretraining`'s interface (a stack trains the same bits beside
    other stacks as alone).  :func:`stacks` makes it only when there are several
    objectives, so a run of NT-Xent methods alone is one :class:`Pretraining` as before (and its
    checkpoints are what they were)."""

    def __init__(self, parts: list[Pretraining]):
        self.parts = parts
        self.cfg, self.name, self.dev = parts[0].cfg, parts[0].name, parts[0].dev
        self.named = [member for part in parts for member in part.named]

    @property
    def stacks(self) -> list[Pretraining]:
        return self.parts

    @property
    def Kp(self) -> int:
        return sum(part.Kp for part in self.parts)

    @property
    def epoch(self) -> int:
        return self.parts[0].epoch

    @property
    def history(self) -> list[tuple]:
        return [row for part in self.parts for row in part.history]

    @property
    def pseudo(self) -> list[tuple]:
        return [row for part in self.parts for row in part.pseudo]

    def run_epoch(self) -> list[float]:
        return [loss for part in self.parts for loss in part.run_epoch()]

    def contrastive_epoch(self, epoch: int) -> list[float]:
        return [loss for part in self.parts for loss in part.contrastive_epoch(epoch)]

    def check_weights(self) -> None:
        for part in self.parts:
            part.check_weights()

    def copy_into(self, enc_all: StackedMLP) -> None:
        for part in self.parts:
            part.copy_into(enc_all)

    def view_members(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [group for part in self.parts for group in part.view_members()]

    def deep_members(self) -> list[torch.Tensor]:
        return [group for part in self.parts for group in part.deep_members()]

    def input_members(self) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        return [group for part in self.parts for group in part.input_members()]

    def release(self) -> None:
        for part in self.parts:
            part.release()

    def expect(self) -> dict:
        return dict(stacks=[part.expect() for part in self.parts], epochs=self.cfg.epochs)

    def state_dict(self) -> dict:
        return dict(epoch=self.epoch, stacks=[part.state_dict() for part in self.parts])

    def load_state_dict(self, state: dict) -> None:
        for part, part_state in zip(self.parts, state["stacks"]):
            part.load_state_dict(part_state)


def stacks(tab: TensorTable, layout: Layout, cfg: Config, importance, train_gens, anchors_all, name, weights=None):
    """The pretraining of ``layout``'s pretrained members: one :class:`Pretraining` when they all
    learn one objective (every run before objectives existed), else a :class:`Stacks` of one per
    objective, in the order of their first member."""
    groups: dict[str, list[int]] = {}
    for i in layout.pre:
        groups.setdefault(METHODS[layout.members[i][1]].objective, []).append(i)
    parts = [
        Pretraining(tab, layout, cfg, importance, train_gens, anchors_all, name, weights=weights, pre=pre)
        for pre in groups.values()
    ]
    return parts[0] if len(parts) == 1 else Stacks(parts)


def make_step(pt: Pretraining) -> Callable[[torch.Tensor], torch.Tensor]:
    """The contrastive step ``idx -> losses`` of ``pt`` as :attr:`Pretraining.mode` says: eager
    (:meth:`Pretraining.eager_step`), :class:`CompiledStep` (:func:`torch.compile`), or on a GPU
    :class:`CapturedEpoch` (the whole epoch as one CUDA graph, where it applies) or else
    :class:`CapturedStep` (each full batch's step as a CUDA graph)."""
    if pt.mode == "cuda_graph":
        return CapturedEpoch(pt) if CapturedEpoch.applies(pt) else CapturedStep(pt)
    if pt.mode == "torch_compile":
        return CompiledStep(pt)
    return pt.eager_step


class CompiledStep:
    """The step with its forward and loss (gather, encoder, projection head, NT-Xent) compiled by
    :func:`torch.compile` (fixed shapes: one graph for the full batches, one for the last partial
    batch); backward and Adam as in the eager step.  Close to, not the same bits as, eager."""

    def __init__(self, pt: Pretraining):
        self.pt = pt
        self.forward_loss = torch.compile(pt.forward_loss, dynamic=False)

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:
        return self.pt.eager_step(idx, self.forward_loss)


class CapturedStep:
    """The full-batch step (gather, forward, NT-Xent, backward, Adam) as one CUDA graph, replayed
    once per full batch: a few launches instead of hundreds, and no host work per batch.

    Shapes are fixed per dataset: the graph reads the batch's row positions from a buffer of
    ``batch_size`` columns and the rows from :attr:`Pretraining.pairs` (refilled in place every
    epoch).  The last partial batch of an epoch (``N % batch_size`` rows) runs the same step
    eagerly, so every batch means what it means eagerly.  The first :attr:`WARMUP` full-batch
    steps run eagerly on a side stream (real steps of the run, as capture asks: the optimiser's
    state and autograd's streams exist before capture); the next is captured, then replayed.
    Only on CUDA (:meth:`tcclib.method.config.Config.step_mode`); the optimiser is capturable."""

    WARMUP = 3

    def __init__(self, pt: Pretraining):
        self.pt, self.size = pt, pt.cfg.batch_size
        self.idx = torch.zeros(pt.Kp, self.size, dtype=torch.int64, device=pt.dev)
        self.graph = None
        self.loss: torch.Tensor | None = None
        self.warm = 0

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:
        pt = self.pt
        if idx.shape[1] != self.size:  # the last partial batch: the same step, eagerly
            return pt.eager_step(idx)
        if self.graph is None and self.warm < self.WARMUP:
            side = torch.cuda.Stream(pt.dev)
            side.wait_stream(torch.cuda.current_stream(pt.dev))
            with torch.cuda.stream(side):
                loss = pt.eager_step(idx)
            torch.cuda.current_stream(pt.dev).wait_stream(side)
            self.warm += 1
            return loss
        self.idx.copy_(idx)
        if self.graph is None:
            pt.opt.zero_grad(set_to_none=True)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.loss = pt.eager_step(self.idx)
        self.graph.replay()
        return self.loss  # (the graph's output buffer: read before the next replay, in stream order)


class CapturedEpoch:
    """The whole contrastive epoch (counter draws, masks, donors, views, every batch's step with
    its Adam update, the losses' sum) as one CUDA graph, replayed once per epoch: one launch and
    one read of the losses an epoch (:meth:`Pretraining.read_epoch`), no host work inside.

    It applies (:meth:`applies`) under counter draws (``Config.draws``: generators' draws are
    host-side calls per member) when every rule is tcclib's own (a user's rule may read the device
    back or allocate from the host, which a capture cannot hold; its members take
    :class:`CapturedStep`).  The epoch number lives in a device tensor
    (:attr:`tcclib.method.draws.CounterDraws.epoch`) set before each replay; the pseudo-label
    refresh runs eagerly between epochs and writes the labels in place, where the graph reads
    them.  The first :attr:`WARMUP` epochs run eagerly on a side stream (as capture asks: the
    optimiser's state and autograd's streams exist before it); the next is captured, then
    replayed.  The same operations in the same order as the eager epoch."""

    WARMUP = 2

    def __init__(self, pt: Pretraining):
        self.pt = pt
        self.graph = None
        self.total: torch.Tensor | None = None
        self.warm = 0

    @staticmethod
    def applies(pt: Pretraining) -> bool:
        """Whether ``pt``'s epoch can be captured whole: counter draws, tcclib's own rules only."""
        own = all(rules.is_own(rule) for rule, _ in pt.how_groups + pt.where_groups)
        return pt.draw_scheme == "counter" and own

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:  # (a batch outside an epoch: eagerly)
        return self.pt.eager_step(idx)

    def run(self, epoch: int) -> torch.Tensor:
        """Pretraining epoch ``epoch``'s summed losses ``[Kp]`` on the device."""
        pt = self.pt
        current = torch.cuda.current_stream(pt.dev)
        if self.graph is None and self.warm < self.WARMUP:
            side = torch.cuda.Stream(pt.dev)
            side.wait_stream(current)
            with torch.cuda.stream(side):
                total = pt.epoch_total(epoch, pt.eager_step)
            current.wait_stream(side)
            self.warm += 1
            return total
        pt.draws.set_epoch(epoch)  # (outside the graph, which reads the epoch tensor)
        if self.graph is None:
            pt.opt.zero_grad(set_to_none=True)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.total = pt.epoch_total(None, pt.eager_step)
        self.graph.replay()
        return self.total  # (the graph's output buffer: read before the next replay, in stream order)
