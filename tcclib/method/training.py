"""The training core: the named steps that both the benchmark ensemble and the estimator run.

A *member* is one (seed, method) pair; members are stacked (:class:`tcclib.method.model.StackedMLP`)
and train together, each with its own generator, labels and Adam state.  The steps:

* :func:`member_layout`: which members exist, their seeds, widths and who pretrains;
* :func:`init_encoders`: every member's encoder from its seed's ``"init"`` generator (all
  methods of a seed start from the same encoder);
* :class:`Pretraining`: the pretraining members' encoders, projection heads, optimiser,
  generators and (pseudo-)labels, with one method per step:
  :meth:`~Pretraining.refresh_pseudo_labels`, :meth:`~Pretraining.draw_views` (where and how to
  corrupt) and :meth:`~Pretraining.contrastive_epoch`; :meth:`~Pretraining.state_dict` /
  :meth:`~Pretraining.load_state_dict` for checkpoints (written by :mod:`tcclib.artifacts.store`);
* :func:`fit_heads` / :func:`embed`: frozen-encoder embeddings and fresh classification heads;
* :func:`fit_classifier`: the member's classifier on its labeled rows as ``Config.head`` says
  (the paper's frozen encoder, or the opt-in ``finetune`` / ``concat`` variants), a
  :class:`Classifier`; :func:`row_weights`: the heads' per-row weights (``sample_weight``,
  ``class_weight``).

:func:`tcclib.running.train.run_prepared` strings them together for a benchmark ensemble (all seeds x
methods, test-split evaluation, checkpoints); :class:`tcclib.method.estimator.TCCClassifier` runs the
same steps for one member on the user's rows.  A member therefore trains identically in both.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from tcclib.data.encoding import TensorTable
from tcclib.method import rules
from tcclib.method.config import METHODS, Config
from tcclib.method.losses import nt_xent_pairs
from tcclib.method.model import StackedMLP, adam


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


def first_bad(finite, members: list[tuple[int, str]]) -> tuple[int, str, int] | None:
    """``(seed, method, how many others)`` of the first member whose ``finite`` flag is False."""
    bad = [j for j, ok in enumerate(finite) if not ok]
    if not bad:
        return None
    return members[bad[0]][0], members[bad[0]][1], len(bad) - 1


def autocast(cfg: Config | str, device):
    """The context of the networks' forward passes: bfloat16 autocast when ``cfg.matmul_precision``
    (or ``cfg`` itself, a precision name) is ``"bf16"`` (the matrix products, and so their
    backward, in bfloat16; weights, Adam, NT-Xent and the heads' cross-entropy stay float32), else
    nothing (exact float32, the default).  Backward passes run outside it, as autocast asks."""
    if getattr(cfg, "matmul_precision", cfg) != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def float32_precision(cfg: Config) -> str:
    """What :func:`torch.set_float32_matmul_precision` gets for ``cfg`` (``bf16``: float32 products
    outside the autocast regions stay exact)."""
    return "highest" if cfg.matmul_precision == "bf16" else cfg.matmul_precision


@contextlib.contextmanager
def matmul_precision(cfg: Config):
    """torch's float32 matmul precision held at :func:`float32_precision` of ``cfg`` inside, and
    given back as it was afterwards (also on an error): a run leaves the process's setting alone."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(float32_precision(cfg))
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def batches(n: int, size: int):
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def take(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``idx`` ([K, b]) of ``x`` ([K, N, d]) -> [K, b, d]."""
    return x.gather(1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


# --------------------------------------------------------------------------- layout


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


def member_layout(
    tab: TensorTable, split_seeds: list[int], n_features: list[int], methods, pretraining: bool = True
) -> Layout:
    """Members ``seed x method`` of a table whose seeds are ``split_seeds`` (one per table seed).

    ``n_features``: active features of each table seed; ``pretraining``: False when no epoch runs
    (then nobody pretrains)."""
    members = [(si, m) for si in range(len(split_seeds)) for m in methods]
    return Layout(
        members=members,
        seeds=[split_seeds[si] for si, _ in members],
        n_features=[n_features[si] for si, _ in members],
        in_widths=[int(tab.widths[si]) for si, _ in members],
        pre=[i for i, (_, m) in enumerate(members) if METHODS[m].pretrain and pretraining],
    )


def encoder_dims(tab: TensorTable, cfg: Config) -> list[int]:
    return [tab.width] + [cfg.hidden_dim] * cfg.encoder_depth


def init_encoders(layout: Layout, tab: TensorTable, cfg: Config, device, idx=None) -> StackedMLP:
    """Encoders of members ``idx`` (all by default), each from its seed's ``"init"`` generator
    (``encoder_init: per_method``: its own ``"init:<method>"`` one, :meth:`Config.encoder_init_tag`)."""
    idx = list(range(layout.K)) if idx is None else list(idx)
    gens = [generator(layout.seeds[i], cfg.encoder_init_tag(layout.members[i][1]), device) for i in idx]
    return StackedMLP(len(idx), encoder_dims(tab, cfg), gens, [layout.in_widths[i] for i in idx], cfg.bias_init, device)


def training_generators(layout: Layout, device) -> list[torch.Generator]:
    """Each member's own generator (data order, corruption draws, head initialisation)."""
    return [generator(s, m, device) for s, (_, m) in zip(layout.seeds, layout.members)]


# --------------------------------------------------------------------------- heads


def fit_heads(
    emb: torch.Tensor,
    y: torch.Tensor,
    gens: list[torch.Generator],
    cfg: Config,
    n_classes: int,
    weights: torch.Tensor | None = None,
    in_widths: list[int] | None = None,
) -> StackedMLP:
    """Train fresh classification heads (``head_depth`` layers) on fixed inputs ``[K, NL, F]``
    (the frozen embeddings, or for ``head: concat`` the embeddings and the features).

    ``weights``: ``[K, NL]`` per-row weights of the cross-entropy (None: every row counts
    once, the paper; see :func:`row_weights`); ``in_widths``: each member's true input width
    (inputs zero-padded to ``F``; None: all ``F``)."""
    K, NL, F_in = emb.shape
    head = new_head(K, F_in, gens, cfg, n_classes, emb.device, in_widths)
    opt = adam(head.parameters(), cfg.lr)
    _head_epochs(lambda idx: head(take(emb, idx)), opt, y, gens, cfg, n_classes, weights)
    return head


def new_head(K: int, width: int, gens, cfg: Config, n_classes: int, device, in_widths=None) -> StackedMLP:
    """Fresh heads ``[width, hidden_dim, ..., n_classes]``, each from its member's generator."""
    dims = [width] + [cfg.hidden_dim] * (cfg.head_depth - 1) + [n_classes]
    return StackedMLP(K, dims, gens, in_widths, bias_init=cfg.bias_init, device=device)


def _head_epochs(forward, opt, y: torch.Tensor, gens, cfg: Config, n_classes: int, weights) -> None:
    """``cfg.head_epochs`` epochs over the ``NL`` labeled rows in each member's own order:
    ``forward(idx)`` gives the logits of rows ``idx`` ``[K, b]``; one ``opt`` step per batch
    on the sum over members of each member's mean (weighted) cross-entropy."""
    K, NL = y.shape
    dev = y.device
    amp = autocast(cfg, dev)
    for _ in range(cfg.head_epochs):
        perm = torch.stack([torch.randperm(NL, generator=g, device=dev) for g in gens])
        for a, b in batches(NL, cfg.batch_size):
            idx = perm[:, a:b]
            with amp:
                logits = forward(idx)
            yb = y.gather(1, idx)
            loss = F.cross_entropy(logits.float().reshape(-1, n_classes), yb.reshape(-1), reduction="none")
            loss = loss.view(K, -1)
            if weights is not None:
                loss = loss * weights.gather(1, idx)
            loss = loss.mean(1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def row_weights(y: np.ndarray, labeled: np.ndarray, sample_weight=None, class_weight=None) -> np.ndarray | None:
    """Each row's weight in the heads' cross-entropy: ``sample_weight`` times the weight of the
    row's class, scaled so that the labeled rows' weights average 1 (the learning rate then
    means what it means unweighted); unlabeled rows get 0.  None when neither is given.

    ``y``: class codes ``0 .. C-1`` (anything on unlabeled rows); ``class_weight``: ``[C]``
    (``"balanced"`` is ``n_labeled / (C x n_c)`` per class, scikit-learn's, computed by the
    caller).  A labeled total of 0 is a ``ValueError``."""
    if sample_weight is None and class_weight is None:
        return None
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64).copy()
    if class_weight is not None:
        w[labeled] *= np.asarray(class_weight, dtype=np.float64)[y[labeled]]
    w[~labeled] = 0.0
    total = w[labeled].sum()
    if not total > 0:
        raise ValueError(
            "the weights of the labeled rows are all zero (sample_weight times class_weight): "
            "give at least one labeled row a positive weight"
        )
    return w * (labeled.sum() / total)


# --------------------------------------------------------------------------- classifiers


def head_inputs(enc: StackedMLP, onehot: torch.Tensor, kind: str = "frozen") -> torch.Tensor:
    """What a head of variant ``kind`` reads of one-hot rows ``[K, n, D]``: the embedding
    ``[K, n, H]`` (``frozen``, ``finetune``), or the embedding and the rows ``[K, n, H + D]``
    (``concat``).  No gradient; float32."""
    with torch.no_grad():
        emb = enc(onehot).float()
    return torch.cat([emb, onehot.float()], -1) if kind == "concat" else emb


@dataclass
class Classifier:
    """Every member's trained encoder and head, and how the head reads a row (``head``: the
    :data:`tcclib.method.config.HEADS` variant): what :func:`fit_classifier` returns."""

    enc: StackedMLP
    head: StackedMLP
    kind: str = "frozen"

    def inputs(self, onehot: torch.Tensor) -> torch.Tensor:
        """The head's inputs of one-hot rows ``[K, n, D]`` (:func:`head_inputs`)."""
        return head_inputs(self.enc, onehot, self.kind)

    def logits(self, tab: TensorTable, raw: torch.Tensor, seed_idx: torch.Tensor, chunk: int | None = None):
        """Class logits ``[K, n, C]`` (float32) of raw rows ``[K, n, M]``, ``chunk`` rows per pass."""
        parts = []
        for a, b in batches(raw.shape[1], chunk or max(raw.shape[1], 1)):
            parts.append(self.head(self.inputs(tab.encode(raw[:, a:b], seed_idx))).float())
        return torch.cat(parts, 1) if len(parts) != 1 else parts[0]


def fit_classifier(
    enc: StackedMLP,
    anchors: torch.Tensor,
    rows: torch.Tensor,
    y: torch.Tensor,
    gens: list[torch.Generator],
    cfg: Config,
    n_classes: int,
    in_widths: list[int],
    weights: torch.Tensor | None = None,
) -> Classifier:
    """The classifier of every member on its labeled rows, as ``cfg.head`` says.

    ``enc``: the (pretrained) encoders; ``anchors``: every member's one-hot training rows
    ``[K, N, D]``; ``rows``: the labeled rows' positions ``[K, NL]``; ``y``: their class codes
    ``[K, NL]``; ``in_widths``: each member's one-hot width; ``weights``: ``[K, NL]`` row weights
    of the cross-entropy (None: unweighted).  ``frozen`` (the paper): :func:`fit_heads` on the
    embeddings; ``concat``: on the embeddings and the one-hot rows; ``finetune``: the encoder
    (updated in place) and a fresh head train together, the encoder at ``cfg.encoder_lr``.
    Call it inside :func:`autocast` for ``bf16`` as the caller does its embedding passes."""
    H = enc.dims[-1]
    if cfg.head == "finetune":
        lab = take(anchors, rows)
        head = new_head(enc.K, H, gens, cfg, n_classes, anchors.device)
        opt = torch.optim.Adam(
            [{"params": head.parameters(), "lr": cfg.lr}, {"params": enc.parameters(), "lr": cfg.encoder_lr}],
            fused=True,
        )
        _head_epochs(lambda idx: head(enc(take(lab, idx))), opt, y, gens, cfg, n_classes, weights)
        return Classifier(enc, head, cfg.head)
    with autocast(cfg, anchors.device):
        inputs = head_inputs(enc, anchors, cfg.head)  # (every row, then the labeled ones, as published)
    widths = [H + w for w in in_widths] if cfg.head == "concat" else None
    return Classifier(enc, fit_heads(take(inputs, rows), y, gens, cfg, n_classes, weights, widths), cfg.head)


@torch.no_grad()
def embed(
    enc: StackedMLP, tab: TensorTable, raw: torch.Tensor, seed_idx: torch.Tensor, chunk: int | None = None
) -> torch.Tensor:
    """Encoder embeddings ``[K, N, H]`` of raw rows ``[K, N, M]`` (one-hot encoded first).

    ``chunk``: rows per pass (None: all at once), so that very long tables need memory for one
    chunk's one-hot rows only."""
    if chunk is None or raw.shape[1] <= chunk:
        return enc(tab.encode(raw, seed_idx))
    return torch.cat([enc(tab.encode(raw[:, a:b], seed_idx)) for a, b in batches(raw.shape[1], chunk)], 1)


def labeled_rows(labeled: torch.Tensor) -> torch.Tensor:
    """Positions ``[K, NL]`` of each member's labeled rows (every member has as many)."""
    return torch.stack([labeled[j].nonzero().squeeze(1) for j in range(labeled.shape[0])])


# --------------------------------------------------------------------------- pretraining


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
    ):
        dev = anchors_all.device
        self.cfg, self.name, self.tab, self.dev = cfg, name, tab, dev
        pre = layout.pre
        self.pre = pre
        self.Kp = Kp = len(pre)
        S, N, M = tab.raw_train.shape
        self.N, self.M, self.Cn = N, M, tab.n_classes
        H = cfg.hidden_dim
        self.pidx = torch.tensor(pre, device=dev)
        # encoder and projection head of the pretrained members (own stacks: only they train);
        # one "init" generator per member starts both, the encoder first (as init_encoders does)
        ig = [generator(layout.seeds[i], cfg.encoder_init_tag(layout.members[i][1]), dev) for i in pre]
        self.enc = StackedMLP(Kp, encoder_dims(tab, cfg), ig, [layout.in_widths[i] for i in pre], cfg.bias_init, dev)
        self.proj = StackedMLP(Kp, [H] * (cfg.head_depth + 1), ig, bias_init=cfg.bias_init, device=dev)
        self.opt = adam(self.enc.parameters() + self.proj.parameters(), cfg.lr)
        self.gens = [train_gens[i] for i in pre]
        self.seed_idx = torch.tensor([layout.members[i][0] for i in pre], device=dev)
        self.specs = [METHODS[layout.members[i][1]] for i in pre]
        self.named = layout.named(pre)  # (seed, method) of each pretrained member
        self.raw = tab.raw_train[self.seed_idx]  # [Kp, N, M]
        self.anchors = anchors_all[self.pidx]
        self.active = tab.active[self.seed_idx]
        self.k = torch.tensor([cfg.corrupted_count(layout.n_features[i]) for i in pre], device=dev)
        self.y_true = tab.y_train[self.seed_idx]
        self.labeled = tab.labeled[self.seed_idx]
        self.labels = torch.zeros(Kp, N, dtype=torch.int64, device=dev)
        orc = [j for j, s in enumerate(self.specs) if s.how == "oracle"]
        if orc:
            self.labels[orc] = self.y_true[orc]
        self.pse = [j for j, s in enumerate(self.specs) if s.how == "pseudo"]
        self.cor = [j for j, s in enumerate(self.specs) if s.ranking != "uniform"]
        self.uni = [j for j, s in enumerate(self.specs) if s.ranking == "uniform"]
        if self.cor:
            if importance is None:
                raise ValueError("correlation methods need the importance matrices (see run_dataset)")
            # the ranking each member samples by, as our rule or the authors' (corr_rule)
            self.W, self.sign = rules.sampler_inputs(
                importance,
                self.seed_idx[self.cor],
                self.active[self.cor],
                [self.specs[j].ranking for j in self.cor],
                [self.specs[j].effective_rule(cfg) for j in self.cor],
                dev,
            )
        self.lab_rows = labeled_rows(self.labeled)  # [Kp, NL]
        # the pseudo-label heads' row weights [Kp, NL] (None: unweighted, the paper)
        self.lab_weights = None if weights is None else weights[self.pidx].gather(1, self.lab_rows)
        self.refresh_at = frozenset(cfg.refresh_epochs(cfg.epochs))  # pseudo_schedule
        self.batches = batches(N, cfg.batch_size)
        self.epoch = 0
        self.history: list[tuple] = []  # (seed, method, epoch, loss)
        self.pseudo: list[tuple] = []  # (seed, method, epoch, pseudo_accuracy)

    # ---------------------------------------------------------------- steps
    def refresh_due(self, epoch: int) -> bool:
        """Whether the pseudo-labels are refreshed before pretraining epoch ``epoch`` (0-based)."""
        return bool(self.pse) and epoch in self.refresh_at

    def refresh_pseudo_labels(self, epoch: int) -> None:
        """Fit a head per pseudo-label member on its labeled rows' current embeddings, label the
        unlabeled rows with its predictions (labeled rows keep their true labels) and record the
        pseudo-label accuracy on the unlabeled rows whose class is known (NaN if none)."""
        cfg, pse = self.cfg, self.pse
        pidx_t = torch.tensor(pse, device=self.dev)
        with torch.no_grad(), autocast(cfg, self.dev):
            emb = self.enc(self.anchors[pidx_t], pidx_t)
        head = fit_heads(
            take(emb, self.lab_rows[pidx_t]),
            self.y_true[pidx_t].gather(1, self.lab_rows[pidx_t]),
            [self.gens[j] for j in pse],
            cfg,
            self.Cn,
            None if self.lab_weights is None else self.lab_weights[pidx_t],
        )
        with torch.no_grad(), autocast(cfg, self.dev):
            logits = head(emb).float()
            pred = logits.argmax(-1)
        bad = first_bad(torch.isfinite(logits).flatten(1).all(1).tolist(), [self.named[j] for j in pse])
        if bad is not None:
            raise TrainingDiverged(
                self.name,
                bad[0],
                bad[1],
                epoch,
                f"the pseudo-label head's predictions are not finite at the "
                f"refresh before pretraining epoch {epoch + 1} of {cfg.epochs}",
                bad[2],
                cfg.lr,
            )
        y_true = self.y_true[pidx_t]
        new = torch.where(self.labeled[pidx_t], y_true, pred)
        self.labels[pidx_t] = new
        unl = ~self.labeled[pidx_t] & (y_true >= 0)
        acc = ((new == y_true) & unl).sum(1).float() / unl.sum(1)  # NaN: no unlabeled row of known class
        for j, a in zip(pse, acc.tolist()):
            self.pseudo.append((*self.named[j], epoch, a))

    def draw_views(self) -> tuple[torch.Tensor, torch.Tensor]:
        """This epoch's data order ``[Kp, N]`` and corrupted views ``[Kp, N, D]`` (one-hot).

        Where: ``ceil(p M)`` features per row, uniformly or by the correlation ranking
        (:func:`tcclib.method.rules.correlation_mask`); how: each replaced value comes from a row
        drawn among the member's donors (whole column, pseudo-class or true class).  Every draw
        comes from the member's own generator, in a fixed order."""
        Kp, N, M, dev, gens, cfg = self.Kp, self.N, self.M, self.dev, self.gens, self.cfg
        perm = torch.stack([torch.randperm(N, generator=g, device=dev) for g in gens])
        donor_u = torch.stack([torch.rand(N, M, generator=g, device=dev) for g in gens])
        mask = torch.zeros(Kp, N, M, dtype=torch.bool, device=dev)
        if self.uni:
            su = torch.stack([torch.rand(N, M, generator=gens[j], device=dev) for j in self.uni])
            mask[self.uni] = rules.uniform_mask(su, self.active[self.uni], self.k[self.uni])
        if self.cor:
            kc = self.k[self.cor].tolist()
            half = torch.full((N, M), 0.5, device=dev)

            def draw(t, _kc=kc):
                return torch.stack(
                    [
                        torch.rand(N, M, generator=gens[j], device=dev) if t < kj else half
                        for j, kj in zip(self.cor, _kc)
                    ]
                )

            mask[self.cor] = rules.correlation_mask(
                self.W,
                self.active[self.cor],
                self.k[self.cor],
                self.sign,
                draw,
                cfg.corr_temperature,
                cfg.corr_normalization,
            )
        donors = rules.draw_donors(self.labels, self.Cn, donor_u)
        views = self.tab.encode(rules.corrupt(self.raw, mask, donors), self.seed_idx)
        return perm, views

    def contrastive_epoch(self, epoch: int) -> list[float]:
        """One pass over the rows in batches: NT-Xent between anchors and views, one Adam step per
        batch.  Returns each member's mean loss; a non-finite one is :class:`TrainingDiverged`."""
        cfg, N = self.cfg, self.N
        perm, views = self.draw_views()
        pairs = torch.cat([self.anchors, views], dim=1)  # [Kp, 2N, D]: anchor i, view N + i
        tot = torch.zeros(self.Kp, device=self.dev)
        amp = autocast(cfg, self.dev)
        for a, b in self.batches:
            idx = perm[:, a:b]
            x = take(pairs, torch.cat([idx, idx + N], dim=1))
            with amp:
                z = self.proj(self.enc(x))
            loss = nt_xent_pairs(z, cfg.temperature)  # (bf16: its products in bf16, the rest float32)
            self.opt.zero_grad(set_to_none=True)
            loss.sum().backward()
            self.opt.step()
            tot += loss.detach() * (b - a)
        ep_loss = (tot / N).tolist()
        bad = first_bad([math.isfinite(v) for v in ep_loss], self.named)
        if bad is not None:
            raise TrainingDiverged(
                self.name,
                bad[0],
                bad[1],
                epoch + 1,
                f"the contrastive loss is {ep_loss[self.named.index(bad[:2])]} at "
                f"pretraining epoch {epoch + 1} of {cfg.epochs}",
                bad[2],
                cfg.lr,
            )
        return ep_loss

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
        bad = first_bad(finite.tolist(), self.named)
        if bad is not None:
            raise TrainingDiverged(
                self.name,
                bad[0],
                bad[1],
                self.epoch,
                f"an encoder weight is not finite after pretraining epoch {self.epoch}",
                bad[2],
                self.cfg.lr,
            )

    def copy_into(self, enc_all: StackedMLP) -> None:
        """Put the trained encoders into the full stack of every member."""
        with torch.no_grad():
            for Wa, Wp in zip(enc_all.parameters(), self.enc.parameters()):
                Wa[self.pidx] = Wp

    # ---------------------------------------------------------------- checkpoints
    def expect(self) -> dict:
        """What a checkpoint of this run must look like (shapes and counts)."""
        return dict(
            params=[tuple(p.shape) for p in self.enc.parameters() + self.proj.parameters()],
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
            params=[p.detach().cpu() for p in self.enc.parameters() + self.proj.parameters()],
            opt=self.opt.state_dict(),
            gens=[g.get_state() for g in self.gens],
            labels=self.labels.cpu(),
            history=self.history,
            pseudo=self.pseudo,
        )

    def load_state_dict(self, state: dict) -> None:
        self.opt.load_state_dict(state["opt"])
        with torch.no_grad():
            for p, v in zip(self.enc.parameters() + self.proj.parameters(), state["params"]):
                p.copy_(v.to(self.dev))
        for g, gs in zip(self.gens, state["gens"]):
            g.set_state(gs)
        self.labels = state["labels"].to(self.dev)
        self.history, self.pseudo = list(state["history"]), list(state["pseudo"])
        self.epoch = state["epoch"]
