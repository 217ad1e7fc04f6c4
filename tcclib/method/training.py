"""The training core: the set-up, the classifier heads and the one sequence that both the
benchmark ensemble and the estimator run.

A *member* is one (seed, method) pair; members are stacked (:class:`tcclib.method.model.StackedMLP`)
and train together, each with its own generator, labels and Adam state.  :func:`member_layout`:
which members exist, their seeds, widths and who pretrains; :func:`init_encoders`: every member's
encoder from its seed's ``"init"`` generator (all methods of a seed start from the same encoder);
:func:`fit_classifier`: the member's classifier on its labeled rows as ``Config.head`` says, a
:class:`Classifier`; :func:`embed`, :func:`row_weights`.  :func:`set_up`, :func:`pretrain` (the
epoch loop of :mod:`tcclib.method.pretraining`) and :func:`fit_member_heads`: the one sequence that
:func:`tcclib.running.train.run_prepared` runs for a benchmark ensemble and
:class:`tcclib.method.estimator.TCCClassifier` for one member, so a member trains identically in both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tcclib.data.encoding import TensorTable
from tcclib.data.preprocess import Prepared
from tcclib.method import probe, rules
from tcclib.method.config import METHODS, Config
from tcclib.method.model import StackedMLP
from tcclib.method.pretraining import (  # noqa: F401 - also read from here
    Layout,
    Pretraining,
    Stacks,
    TrainingDiverged,
    autocast,
    batches,
    encoder_dims,
    fit_heads,
    generator,
    head_epochs,
    labeled_rows,
    member_seed,
    new_head,
    stacks,
)
from tcclib.util.progress import bar


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


# --------------------------------------------------------------------------- layout


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


def init_encoders(layout: Layout, tab: TensorTable, cfg: Config, device, idx=None) -> StackedMLP:
    """Encoders of members ``idx`` (all by default), each from its seed's ``"init"`` generator
    (``encoder_init: per_method``: its own ``"init:<method>"`` one, :meth:`Config.encoder_init_tag`)."""
    idx = list(range(layout.K)) if idx is None else list(idx)
    gens = [generator(layout.seeds[i], cfg.encoder_init_tag(layout.members[i][1]), device) for i in idx]
    return StackedMLP(len(idx), encoder_dims(tab, cfg), gens, [layout.in_widths[i] for i in idx], cfg.bias_init, device)


def training_generators(layout: Layout, device) -> list[torch.Generator]:
    """Each member's own generator (data order, corruption draws, head initialisation)."""
    return [generator(s, m, device) for s, (_, m) in zip(layout.seeds, layout.members)]


# --------------------------------------------------------------------------- heads and classifiers


def row_weights(y: np.ndarray, labeled: np.ndarray, sample_weight=None, class_weight=None) -> np.ndarray | None:
    """Each row's weight in the heads' cross-entropy: ``sample_weight`` times the weight of the
    row's class, scaled so that the labeled rows' weights average 1 (the learning rate then
    means what it means unweighted); unlabeled rows get 0.  None when neither is given.

    ``y``: class codes ``0 .. C-1`` (anything on unlabeled rows); ``class_weight``: ``[C]``
    (``"balanced"`` is ``n_labeled / (C x n_c)`` per class, scikit-learn's, computed by the
    caller).  A labeled total of 0 is a ``ValueError``.  Each factor is first divided by its
    largest value, so that weights of any size (1e307 or 1e-320 on every row) neither overflow
    nor underflow: uniform weights of any size give the model of weights of 1."""
    if sample_weight is None and class_weight is None:
        return None
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64).copy()
    w[~labeled] = 0.0
    w = _unit_max(w)
    if class_weight is not None:
        w[labeled] *= _unit_max(np.asarray(class_weight, dtype=np.float64))[y[labeled]]
    w = _unit_max(w)  # the products' largest is 1 again: the sum below lies in [1, n]
    total = w[labeled].sum()
    if not total > 0:
        raise ValueError(
            "the weights of the labeled rows are all zero (sample_weight times class_weight): "
            "give at least one labeled row a positive weight"
        )
    return w * (labeled.sum() / total)


def _unit_max(w: np.ndarray) -> np.ndarray:
    """``w`` divided by its largest value (unchanged when that is not positive)."""
    top = w.max(initial=0.0)
    return w / top if top > 0 else w


def head_inputs(enc: StackedMLP, onehot: torch.Tensor, kind: str = "frozen") -> torch.Tensor:
    """What a head of variant ``kind`` reads of one-hot rows ``[K, n, D]``: the embedding
    ``[K, n, H]`` (``frozen``, ``finetune``), or the embedding and the rows ``[K, n, H + D]``
    (``concat``, ``probe``).  No gradient; float32."""
    with torch.no_grad():
        emb = enc(onehot).float()
    return torch.cat([emb, onehot.float()], -1) if kind in ("concat", "probe") else emb


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
        lab = rules.take_rows(anchors, rows)
        head = new_head(enc.K, H, gens, cfg, n_classes, anchors.device)
        opt = torch.optim.Adam(
            [{"params": head.parameters(), "lr": cfg.lr}, {"params": enc.parameters(), "lr": cfg.encoder_lr}],
            fused=True,
        )
        head_epochs(lambda idx: head(enc(rules.take_rows(lab, idx))), opt, y, gens, cfg, n_classes, weights)
        return Classifier(enc, head, cfg.head)
    with autocast(cfg, anchors.device):
        inputs = head_inputs(enc, anchors, cfg.head)  # (every row, then the labeled ones, as published)
    if cfg.head == "probe":
        return Classifier(
            enc, fit_probes(rules.take_rows(inputs, rows), y, gens, H, in_widths, n_classes, weights), "probe"
        )
    widths = [H + w for w in in_widths] if cfg.head == "concat" else None
    return Classifier(enc, fit_heads(rules.take_rows(inputs, rows), y, gens, cfg, n_classes, weights, widths), cfg.head)


def fit_probes(
    inputs: torch.Tensor,
    y: torch.Tensor,
    gens: list[torch.Generator],
    H: int,
    in_widths: list[int],
    n_classes: int,
    weights: torch.Tensor | None = None,
) -> StackedMLP:
    """``head: probe``: each member's logistic regression on its labeled rows' embedding and
    features ``inputs`` ``[K, NL, H + D]`` (:mod:`tcclib.method.probe`: the design and ``C``
    chosen by stratified cross-validation on those rows only, folds seeded by one draw of the
    member's generator), folded into one linear layer ``[K, H + D, n_classes]``."""
    fits = []
    for k, g in enumerate(gens):
        x = inputs[k, :, : H + in_widths[k]].double().cpu().numpy()
        blocks = {"embedding": x[:, :H], "features": x[:, H:]}
        yk = y[k].cpu().numpy()
        wk = None if weights is None else weights[k].double().cpu().numpy()
        seed = int(torch.randint(2**31 - 1, (1,), generator=g, device=g.device))
        fits.append(probe.fit_linear(blocks, yk, probe.choose(blocks, yk, seed, wk), seed, wk))
    W, b = probe.linear_layer(fits, [H + w for w in in_widths], n_classes)
    layer = StackedMLP(
        len(fits), [W.shape[1], n_classes], [torch.Generator(inputs.device) for _ in fits], device=inputs.device
    )
    with torch.no_grad():  # (the layer's own initialisation, from throwaway generators, is overwritten)
        layer.weights[0].copy_(torch.as_tensor(W))
        layer.biases[0].copy_(torch.as_tensor(b))
    return layer


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


# --------------------------------------------------------------------------- the sequence


@dataclass
class Members:
    """A run's members, set up by :func:`set_up`: the table on the device, the layout, every
    member's encoder (one stack), generator, seed position and one-hot training rows, and the
    pretraining members' :class:`Pretraining` (None when nobody pretrains)."""

    tab: TensorTable
    layout: Layout
    encoders: StackedMLP
    gens: list[torch.Generator]
    seed_idx: torch.Tensor
    anchors: torch.Tensor
    pretraining: Pretraining | Stacks | None


def set_up(
    prep: Prepared, cfg: Config, importance: np.ndarray | None, name: str, weights: torch.Tensor | None = None
) -> Members:
    """The set-up sequence the runner and the estimator share, in its fixed order (the generators
    are drawn from in this order, so a member trains the same in both): table, layout, every
    member's encoder, its generator, its one-hot rows, then the pretraining members' state
    (``weights``: ``[K, N]`` row weights of the pseudo-label heads, None: unweighted)."""
    dev = torch.device(cfg.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' but torch sees no CUDA device; use device='cpu'")
    if any(METHODS[m].needs_importance for m in cfg.methods) and importance is None:
        raise ValueError("correlation methods need the importance matrices (see run_dataset)")
    tab = TensorTable.from_prepared(prep, dev)
    layout = member_layout(
        tab,
        [sp.seed for sp in prep.splits],
        [sp.n_features for sp in prep.splits],
        cfg.methods,
        pretraining=cfg.epochs > 0,
    )
    encoders = init_encoders(layout, tab, cfg, dev)
    gens = training_generators(layout, dev)
    seed_idx = layout.seed_index(dev)
    anchors = tab.encode(tab.raw_train[seed_idx], seed_idx)
    pt = stacks(tab, layout, cfg, importance, gens, anchors, name, weights=weights) if layout.pre else None
    return Members(tab, layout, encoders, gens, seed_idx, anchors, pt)


def pretrain(members: Members, desc: str, after_epoch: Callable[[Pretraining], None] | None = None) -> None:
    """The pretraining loop: epochs from where :attr:`Members.pretraining` stands (0, or a
    resumed checkpoint's epoch) to ``cfg.epochs``, a progress bar ``desc`` (when ``cfg.progress``)
    showing the members' mean loss, ``after_epoch(pt)`` after each epoch (checkpoints, callbacks);
    then the weights' divergence check and the trained encoders copied into
    :attr:`Members.encoders`.  Nothing when no member pretrains."""
    pt = members.pretraining
    if pt is None:
        return
    epochs = pt.cfg.epochs
    progress = bar(epochs, desc, pt.cfg.progress, leave=True)
    if progress is not None and pt.epoch:
        progress.update(pt.epoch)
    while pt.epoch < epochs:
        ep_loss = pt.run_epoch()  # (its losses read once per epoch, on the host)
        if progress is not None:
            progress.update(1)
            progress.set_postfix(loss=f"{np.mean(ep_loss):.4f}", refresh=False)
        if after_epoch is not None:
            after_epoch(pt)
    if progress is not None:
        progress.close()
    pt.check_weights()
    pt.copy_into(members.encoders)
    pt.release()  # (the pretraining copies of the rows, the views' buffer, a captured step's graph)


def fit_member_heads(members: Members, cfg: Config, weights: torch.Tensor | None = None) -> Classifier:
    """Every member's classifier on its labeled rows (:func:`fit_classifier`, as ``cfg.head``
    says); ``weights``: ``[K, N]`` row weights of the training rows (None: unweighted)."""
    rows = labeled_rows(members.tab.labeled[members.seed_idx])
    y = members.tab.y_train[members.seed_idx].gather(1, rows)
    return fit_classifier(
        members.encoders,
        members.anchors,
        rows,
        y,
        members.gens,
        cfg,
        members.tab.n_classes,
        members.layout.in_widths,
        None if weights is None else weights.gather(1, rows),
    )
