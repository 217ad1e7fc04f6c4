"""The training core: the set-up and the one sequence that both the benchmark ensemble and the
estimator run.

A *member* is one (seed, method) pair; members are stacked (:class:`tcclib.method.model.StackedMLP`)
and train together, each with its own generator, labels and Adam state.  :func:`member_layout`:
which members exist, their seeds, widths and who pretrains; :func:`init_encoders`: every member's
encoder from its seed's ``"init"`` generator (all methods of a seed start from the same encoder);
:func:`embed`.  :func:`set_up`, :func:`pretrain` (the epoch loop of
:mod:`tcclib.method.pretraining`) and :func:`fit_member_heads` (the classifier heads of
:mod:`tcclib.method.heads`): the one sequence that :func:`tcclib.running.train.run_prepared` runs
for a benchmark ensemble and :class:`tcclib.method.estimator.TCCClassifier` for one member, so a
member trains identically in both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tcclib.data.encoding import TensorTable
from tcclib.data.preprocess import Prepared
from tcclib.method.config import METHODS, Config
from tcclib.method.heads import Classifier, fit_classifier, labeled_rows
from tcclib.method.model import StackedMLP, batches
from tcclib.method.pretraining import Layout, Pretraining, Stacks, encoder_dims, generator, stacks
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


@torch.no_grad()
def embed(
    enc: StackedMLP, tab: TensorTable, raw: torch.Tensor, seed_idx: torch.Tensor, chunk: int | None = None
) -> torch.Tensor:
    """Encoder embeddings ``[K, N, H]`` of raw rows ``[K, N, M]`` (one-hot encoded first; ``H``
    the widest member's, :meth:`StackedMLP.output_widths`).

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
    views = pt.view_members() if pt is not None else []
    if views:  # (an objective's embedding reads views of the row)
        encoders.views = views
    deep = pt.deep_members() if pt is not None else []
    if deep:  # (an objective's embedding is every encoder layer)
        encoders.deep = torch.cat(deep).sort().values
    input_maps = pt.input_members() if pt is not None else []
    if input_maps:  # (an objective's encoder reads mapped rows)
        encoders.input_maps = input_maps
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
