"""The classification heads: what a member's classifier reads and how it is trained.

:func:`fit_classifier`: every member's classifier on its labeled rows, as ``Config.head`` says
(``frozen``, the paper: :func:`fit_heads` on the frozen embeddings; ``concat``: on the embeddings
and the one-hot rows; ``finetune``: the encoder and a fresh head together; ``probe``:
:func:`fit_probes`, a cross-validated logistic regression per member), a :class:`Classifier`.
:func:`fit_heads` also trains the pretraining's pseudo-label heads
(:class:`tcclib.method.pretraining.Pretraining`).  :func:`row_weights`: each row's weight in the
heads' cross-entropy; :func:`labeled_rows`: each member's labeled rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from tcclib.data.encoding import TensorTable
from tcclib.method import draws, probe, rules
from tcclib.method.config import Config
from tcclib.method.model import Adam, StackedMLP, adam, autocast, batches


def labeled_rows(labeled: torch.Tensor) -> torch.Tensor:
    """Positions ``[K, NL]`` of each member's labeled rows (every member has as many)."""
    return torch.stack([labeled[j].nonzero().squeeze(1) for j in range(labeled.shape[0])])


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


def new_head(K: int, width: int, gens, cfg: Config, n_classes: int, device, in_widths=None) -> StackedMLP:
    """Fresh heads ``[width, hidden_dim, ..., n_classes]``, each from its member's generator."""
    dims = [width] + [cfg.hidden_dim] * (cfg.head_depth - 1) + [n_classes]
    return StackedMLP(K, dims, gens, in_widths, bias_init=cfg.bias_init, device=device)


def head_epochs(forward, opt, y: torch.Tensor, gens, cfg: Config, n_classes: int, weights, orders=None) -> None:
    """``cfg.head_epochs`` epochs over the ``NL`` labeled rows in each member's own order
    (``orders(e)``, or a ``randperm`` from each member's generator): ``forward(idx)`` gives the
    logits of rows ``idx`` ``[K, b]``; one ``opt`` step per batch on the sum over members of each
    member's mean (weighted) cross-entropy."""
    K, NL = y.shape
    dev = y.device
    amp = autocast(cfg, dev)
    source = draws.GeneratorDraws(gens, dev) if orders is None else None
    for e in range(cfg.head_epochs):
        perm = source.order(NL) if orders is None else orders(e)
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


def fit_heads(
    emb: torch.Tensor,
    y: torch.Tensor,
    gens: list[torch.Generator],
    cfg: Config,
    n_classes: int,
    weights: torch.Tensor | None = None,
    in_widths: list[int] | None = None,
    orders: Callable[[int], torch.Tensor] | None = None,
) -> StackedMLP:
    """Train fresh classification heads (``head_depth`` layers) on fixed inputs ``[K, NL, F]``
    (the frozen embeddings, or for ``head: concat`` the embeddings and the features).

    ``weights``: ``[K, NL]`` per-row weights of the cross-entropy (None: every row counts
    once, the paper; see :func:`row_weights`); ``in_widths``: each member's true input width
    (inputs zero-padded to ``F``; None: all ``F``); ``orders``: head epoch ``e`` -> every
    member's row order ``[K, NL]`` (None: a ``randperm`` from each member's generator)."""
    K, NL, F_in = emb.shape
    head = new_head(K, F_in, gens, cfg, n_classes, emb.device, in_widths)
    opt = adam(head.parameters(), cfg.lr)
    head_epochs(lambda idx: head(rules.take_rows(emb, idx)), opt, y, gens, cfg, n_classes, weights, orders)
    return head


def head_inputs(enc: StackedMLP, onehot: torch.Tensor, kind: str = "frozen") -> torch.Tensor:
    """What a head of variant ``kind`` reads of one-hot rows ``[K, n, D]``: the embedding
    ``[K, n, H]`` (``frozen``, ``finetune``), or the embedding and the rows ``[K, n, H + D]``
    (``concat``, ``probe``).  No gradient; float32.  Where the members' embeddings differ in
    width (a deep stack, :meth:`StackedMLP.output_widths`), each member's inputs are its own
    embedding, then (``concat``, ``probe``) its rows, then zeros."""
    with torch.no_grad():
        emb = enc(onehot).float()
    if kind not in ("concat", "probe"):
        return emb
    widths = enc.output_widths()
    if len(set(widths)) == 1:
        return torch.cat([emb, onehot.float()], -1)
    inputs = emb.new_zeros(*emb.shape[:2], max(widths) + onehot.shape[-1])
    for k, width in enumerate(widths):
        inputs[k, :, :width] = emb[k, :, :width]
        inputs[k, :, width : width + onehot.shape[-1]] = onehot[k]
    return inputs


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
    Call it inside :func:`autocast` for ``bf16`` as the caller does its embedding passes.
    Where the members' embeddings differ in width (a deep stack), each head reads its own
    member's first inputs (:func:`head_inputs`; the others are zeros)."""
    embedding_widths = enc.output_widths()
    H = max(embedding_widths)
    mixed = len(set(embedding_widths)) > 1
    if cfg.head == "finetune":
        lab = rules.take_rows(anchors, rows)
        head = new_head(enc.K, H, gens, cfg, n_classes, anchors.device, embedding_widths if mixed else None)
        opt = Adam([(head.parameters(), cfg.lr), (enc.parameters(), cfg.encoder_lr)])
        head_epochs(lambda idx: head(enc(rules.take_rows(lab, idx))), opt, y, gens, cfg, n_classes, weights)
        return Classifier(enc, head, cfg.head)
    with autocast(cfg, anchors.device):
        inputs = head_inputs(enc, anchors, cfg.head)  # (every row, then the labeled ones, as published)
    labeled = rules.take_rows(inputs, rows)
    if cfg.head == "probe":
        return Classifier(enc, fit_probes(labeled, y, gens, embedding_widths, in_widths, n_classes, weights), "probe")
    if cfg.head == "concat":
        widths = [e + w for e, w in zip(embedding_widths, in_widths)]
    else:
        widths = embedding_widths if mixed else None
    return Classifier(enc, fit_heads(labeled, y, gens, cfg, n_classes, weights, widths), cfg.head)


def fit_probes(
    inputs: torch.Tensor,
    y: torch.Tensor,
    gens: list[torch.Generator],
    embedding_widths: list[int],
    in_widths: list[int],
    n_classes: int,
    weights: torch.Tensor | None = None,
) -> StackedMLP:
    """``head: probe``: each member's logistic regression on its labeled rows' embedding and
    features ``inputs`` ``[K, NL, H + D]`` (member k's embedding its first ``embedding_widths[k]``
    inputs, then its ``in_widths[k]`` features; :mod:`tcclib.method.probe`: the design and ``C``
    chosen by stratified cross-validation on those rows only, folds seeded by one draw of the
    member's generator), folded into one linear layer ``[K, H + D, n_classes]``, whose ``choices``
    hold each member's :class:`~tcclib.method.probe.Choice`."""
    fits, choices = [], []
    for k, g in enumerate(gens):
        width = embedding_widths[k]
        x = inputs[k, :, : width + in_widths[k]].double().cpu().numpy()
        blocks = {"embedding": x[:, :width], "features": x[:, width:]}
        yk = y[k].cpu().numpy()
        wk = None if weights is None else weights[k].double().cpu().numpy()
        seed = int(torch.randint(2**31 - 1, (1,), generator=g, device=g.device))
        choices.append(probe.choose(blocks, yk, seed, wk))
        fits.append(probe.fit_linear(blocks, yk, choices[-1], seed, wk))
    W, b = probe.linear_layer(fits, [e + w for e, w in zip(embedding_widths, in_widths)], n_classes)
    W = np.pad(W, ((0, 0), (0, inputs.shape[-1] - W.shape[1]), (0, 0)))  # (the widest member's inputs)
    layer = StackedMLP(
        len(fits), [W.shape[1], n_classes], [torch.Generator(inputs.device) for _ in fits], device=inputs.device
    )
    with torch.no_grad():  # (the layer's own initialisation, from throwaway generators, is overwritten)
        layer.weights[0].copy_(torch.as_tensor(W))
        layer.biases[0].copy_(torch.as_tensor(b))
    layer.choices = choices  # (what each member's cross-validation chose: probe.Choice)
    return layer
