"""Objectives (issue 60): what the encoder learns from the views, a method's third part beside its
how and where rules.  The built-in family (VIME, a denoising autoencoder, SubTab, each with SCARF's
draw and the class-conditioned one) trains in stacks of its own beside NT-Xent's without touching
them, is keyed by name and parameters (NT-Xent adds nothing to a key), and a user's objective is
one file: loaded as a plugin, keyed by its code, its contract checked, its errors one line."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scripts
import torch
from notebook_runs import papermill_09
from PIL import Image

import tcclib
from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import store
from tcclib.data.sources import from_frame
from tcclib.method import objectives, plugins, pretraining, registry, rules, training
from tcclib.method.config import METHODS, Config
from tcclib.method.inputs import estimate_memory, prepare_config
from tcclib.method.losses import nt_xent_pairs_reference
from tcclib.paper import plots
from tcclib.running import sweep
from tcclib.running.folders import SweepError
from tcclib.running.train import run_dataset

ROOT = Path(__file__).resolve().parents[1]
BARLOW = ROOT / "examples" / "barlow_objective.py"
FAMILY = ("vime", "vime_class", "dae", "dae_class", "subtab", "subtab_class")
TINY = dict(seeds=(0, 1), epochs=2, head_epochs=3, hidden_dim=16, progress=False)


@pytest.fixture(scope="module")
def mixed():
    """A small table with numeric, binary and multi-level categorical columns (one-hot width > M)."""
    g = np.random.default_rng(0)
    n = 120
    X = pd.DataFrame(
        {
            "a": g.normal(size=n),
            "b": g.normal(size=n),
            "colour": g.choice(["red", "green", "blue", "grey"], size=n),
            "flag": g.choice(["yes", "no"], size=n),
            "c": g.normal(size=n),
            "d": g.integers(0, 5, size=n).astype(float),
        }
    )
    y = (X["a"] + (X["colour"] == "red") > 0.3).astype(int)
    return from_frame(X, y, name="mixed")


@contextlib.contextmanager
def _loaded(plugin: Path):
    """The plugin ``plugin`` loaded inside, unloaded after (also on a failure)."""
    plugins.load(str(plugin))
    try:
        yield
    finally:
        plugins.unload(str(plugin))


def _history(run, method):
    return run.history[run.history.method == method].reset_index(drop=True)


def test_the_family_is_registered_with_its_papers_rules_and_objectives():
    expected = {
        "vime": ("column", "bernoulli_30", "vime"),
        "vime_class": ("pseudo", "bernoulli_30", "vime"),
        "dae": ("column", "bernoulli_15", "dae"),
        "dae_class": ("pseudo", "bernoulli_15", "dae"),
        "subtab": ("column", "bernoulli_30", "subtab"),
        "subtab_class": ("pseudo", "bernoulli_30", "subtab"),
    }
    for name, (how, where, objective) in expected.items():
        spec = METHODS[name]
        assert (spec.how, spec.where, spec.objective) == (how, where, objective), name
    assert {m for m, s in METHODS.items() if s.objective == "ntxent"} >= {"random", "class", "no_pretrain"}
    assert registry.where_rule("bernoulli_30").p == 0.3 and registry.where_rule("bernoulli_15").p == 0.15
    assert registry.objective("vime").alpha == 2.0
    sub = registry.objective("subtab")
    assert (sub.n_subsets, sub.overlap, sub.tau, sub.views) == (4, 0.75, 0.1, 4)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: objectives.VIME(alpha="2"), "alpha: the weight of the reconstruction loss, a finite number in [0, "),
        (lambda: objectives.VIME(alpha=float("inf")), "alpha: "),
        (lambda: objectives.SubTab(overlap="0.5"), "overlap: a share of a subset's size, a finite number in [0, 1)"),
        (lambda: objectives.SubTab(tau=None), "tau: the contrastive temperature, a finite number in (0, inf)"),
        (lambda: objectives.SubTab(n_subsets=4.0), "n_subsets: a whole number of subsets"),
        (lambda: rules.Bernoulli("b", "0.3"), "p: the probability of replacing a feature, a finite number in (0, 1)"),
    ],
)
def test_a_family_parameter_of_the_wrong_type_or_range_is_named_with_its_range(make, words):
    """What a user passes to the objectives and the Bernoulli rule is checked where they are made:
    a text, None, a float for a count or infinity is named with the range it must be in."""
    with pytest.raises(ValueError) as e:
        make()
    assert words in str(e.value)
    assert objectives.SubTab(n_subsets=np.int64(3)).n_subsets == 3 and objectives.VIME(alpha=np.float32(1)).alpha == 1


def test_ntxent_adds_nothing_to_a_key_and_the_family_is_keyed_by_objective(mixed):
    cfg = Config(methods=("random", "class", *FAMILY), **TINY)
    prep = prepare_config(mixed, cfg)
    keys = content_keys.run_keys(prep, cfg).members
    sp = prep.splits[0]
    # NT-Xent's key is the digest it always was (no objective part), computed here by hand
    spec = METHODS["random"]
    names = list(content_keys._ALL) + list(content_keys._PRETRAIN)
    by_hand = content_keys.digest(
        "member",
        content_keys.TRAIN_VERSION,
        content_keys.split_digest(sp, prep.classes),
        "random",
        [spec.how, spec.where, spec.flipped],
        {k: getattr(cfg, k) for k in names},
        None,
    )
    assert keys[content_keys.tag(sp.seed, "random")] == by_hand
    assert METHODS["random"].objective_key() is None and METHODS["no_pretrain"].objective_key() is None
    assert METHODS["vime"].objective_key() == {"name": "vime", "params": {"alpha": 2.0}, "settings": []}
    assert len({keys[content_keys.tag(sp.seed, m)] for m in ("random", "class", *FAMILY)}) == 8


def test_the_family_trains_beside_ntxent_without_touching_it(mixed):
    """Every objective's members train (finite losses that fall); the NT-Xent members of a mixed
    run equal a run of them alone, bit for bit, and so does each family member alone."""
    both = run_dataset(mixed, Config(methods=("random", "vime", "dae", "subtab_class"), **TINY))
    alone = run_dataset(mixed, Config(methods=("random",), **TINY))
    pd.testing.assert_frame_equal(_history(both, "random"), _history(alone, "random"))
    pd.testing.assert_frame_equal(
        both.results[both.results.method == "random"].reset_index(drop=True), alone.results.reset_index(drop=True)
    )
    vime = run_dataset(mixed, Config(methods=("vime",), **TINY))
    pd.testing.assert_frame_equal(_history(both, "vime"), _history(vime, "vime"))
    assert set(both.results.method) == {"random", "vime", "dae", "subtab_class"}
    assert np.isfinite(both.history.loss).all() and not both.pseudo.empty  # subtab_class refreshes
    for method in ("vime", "dae", "subtab_class"):
        h = _history(both, method).groupby("epoch").loss.mean()
        assert h.iloc[-1] < h.iloc[0], method


def test_a_member_alone_and_beside_its_class_variant(mixed):
    """tools/stack_bits.py at the published widths: the autoencoder's members are the same bits
    alone and beside dae_class; of VIME's, none but the stack's last (whose elements hold an
    elementwise kernel's scalar tail, on one thread) may part."""
    tool = scripts.load("tools/stack_bits.py")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (two threads split a kernel mid-stack: a middle member may part too)
    try:
        dae = tool.first_parting(mixed, ("dae",), ("dae_class",), 3)
        vime = tool.first_parting(mixed, ("vime",), ("vime_class",), 3)
    finally:
        torch.set_num_threads(threads)
    assert len(dae) == 8 and all(epoch is None for epoch in dae.values()), dae  # (the paper's 8 seeds)
    last = list(vime)[-1]
    assert all(epoch is None for member, epoch in vime.items() if member != last), vime


def test_vime_targets_are_the_features_a_view_changed(mixed):
    cfg = Config(methods=("vime",), **TINY)
    members = training.set_up(prepare_config(mixed, cfg), cfg, None, "mixed")
    pt = members.pretraining
    assert isinstance(pt.objective, objectives.VIME) and pt.V == 1
    _, views = pt.draw_views(0)
    changed = pt.changed
    assert changed.shape == (pt.Kp, pt.N, pt.M) and changed.dtype == torch.bool
    assert not (changed & ~pt.active.unsqueeze(1)).any()  # only active features change
    share = changed.float().sum() / (pt.N * pt.active.sum())
    assert 0.1 < float(share) < 0.3  # Bernoulli(0.3), less the swaps that drew the same value
    # the views differ from the anchors exactly on the changed features' columns
    differs = views != pt.anchors
    column = pt.stack_shape().column_feature
    for j in range(pt.Kp):
        for i in range(5):
            cols = set(column[j][differs[j, i]].tolist())
            assert cols == set(changed[j, i].nonzero().squeeze(1).tolist())


def test_subtab_subsets_follow_the_authors_code_and_each_view_draws_its_own_noise(mixed):
    # the authors' subset_generator: 8 features, 4 subsets: size 2, overlap int(0.75 * 2) = 1
    assert objectives.subset_features(list(range(8)), 4, 0.75) == [[0, 1, 2], [1, 2, 3], [3, 4, 5], [5, 6, 7]]
    assert objectives.subset_features([3, 5], 4, 0.75) == [[3], [5], [3], [5]]  # fewer features than subsets
    for draws in ("generator", "counter"):
        cfg = Config(methods=("subtab",), draws=draws, **TINY)
        pt = training.set_up(prepare_config(mixed, cfg), cfg, None, "mixed").pretraining
        shape = pt.stack_shape()
        # one-hot columns of each raw feature: the 4-level colour spans 4 columns, the others one
        assert shape.column_feature.shape == (pt.Kp, pt.tab.width)
        assert sorted(shape.column_feature[0].tolist()).count(2) == 4
        masks = pt.objective_state  # [k, V, 1, D]
        assert masks.shape == (pt.Kp, 4, 1, pt.tab.width) and bool((masks.sum(-1) > 0).all())
        _, views = pt.draw_views(0)
        assert views.shape == (pt.Kp, 4 * pt.N, pt.tab.width)
        first, second = views[:, : pt.N], views[:, pt.N : 2 * pt.N]
        assert not torch.equal(first, second), draws  # each view its own swap noise


def _subtab_loss_pair_by_pair(batch, objective):
    """SubTab's loss as its paper and the authors' code compute it: each pair of subsets apart
    (NT-Xent and the squared distance of the pair's projections), the reconstruction of every
    subset against the repeated clean rows."""
    k, b, V = batch.k, batch.size, objective.n_subsets
    views = batch.views.view(k, V, b, -1).mul(batch.state).view(k, V * b, -1)
    h = batch.encode(views)
    reconstruction = objectives.row_squared_error(batch.head("decoder", h), batch.anchors.repeat(1, V, 1))
    z = torch.nn.functional.normalize(batch.head("projection", h).float(), dim=-1).view(k, V, b, -1)
    contrast, distance = [], []
    for a, c in itertools.combinations(range(V), 2):
        contrast.append(nt_xent_pairs_reference(torch.cat([z[:, a], z[:, c]], 1), objective.tau))
        distance.append((z[:, a] - z[:, c]).square().sum(-1).mean(1))
    return reconstruction + torch.stack(contrast, 1).mean(1) + torch.stack(distance, 1).mean(1)


def test_subtab_loss_is_its_papers_pair_by_pair_loss_and_keys_its_revision(mixed):
    """The shared product (one [V b, V b] similarity matrix, distances from the subsets' sums)
    computes the pair-by-pair loss and gradient up to float rounding; its revision 2 enters the
    members' keys, as no other objective's does."""
    cfg = Config(methods=("subtab",), **TINY)
    pt = training.set_up(prepare_config(mixed, cfg), cfg, None, "mixed").pretraining
    perm, views = pt.draw_views(0)
    pt.pairs = torch.cat([pt.anchors, views], dim=1)
    batch = objectives.Batch(pt, perm[:, :50], pt.objective_state)
    weights = list(pt.parameters())  # (what Adam steps)
    new = pt.objective.loss(batch)
    reference = _subtab_loss_pair_by_pair(batch, pt.objective)
    torch.testing.assert_close(new, reference, rtol=1e-5, atol=1e-6)
    for a, b in zip(torch.autograd.grad(new.sum(), weights), torch.autograd.grad(reference.sum(), weights)):
        # (float32 sums in another order: one element near 0 differed by 1.5e-6 in a full-suite run)
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5 * float(b.abs().max()))
    assert objectives.revision(pt.objective) == 2
    for method in ("subtab", "subtab_class"):
        assert METHODS[method].objective_codes(cfg) == {"objective:subtab": "revision:2"}
    assert not any(METHODS[m].objective_codes(cfg) for m in ("random", "vime", "vime_class", "dae", "dae_class"))
    mine = type("Mine", (objectives.SubTab,), {"__module__": "mine"})()  # (a user's: keyed by its code)
    assert objectives.revision(mine) == 1


SUBTAB_AUTHORS = ROOT / "examples" / "subtab_authors.py"


def _ignored_columns(clf, X: pd.DataFrame) -> list[str]:
    """The columns of ``X`` that ``clf``'s embedding does not read (shuffling one changes nothing)."""
    before = clf.transform(X)
    g = np.random.default_rng(1)
    ignored = []
    for column in X.columns:
        shuffled = X.assign(**{column: g.permutation(X[column].to_numpy())})
        if np.array_equal(clf.transform(shuffled), before):
            ignored.append(column)
    return ignored


def test_subtab_with_the_authors_evaluation_reads_no_feature_outside_its_subsets(mixed):
    """SubTab(evaluation="subsets") embeds a row as the mean of its subsets' embeddings (the
    authors' evaluation): the M mod 4 features no subset holds are never read, where the default
    (the encoder on the whole row) reads every feature; the default keeps the stored keys."""
    assert objectives.SubTab().key_params() == {"n_subsets": 4, "overlap": 0.75, "tau": 0.1}
    assert objectives.SubTab(evaluation="subsets").key_params()["evaluation"] == "subsets"
    with pytest.raises(ValueError, match=r"^evaluation: 'row' .* or 'subsets' .*, got 'mean'$"):
        objectives.SubTab(evaluation="mean")
    with _loaded(SUBTAB_AUTHORS):
        cfg = Config(methods=("subtab", "subtab_mean"), **TINY)
        keys = content_keys.run_keys(prepare_config(mixed, cfg), cfg).members
        assert {t.split("/")[1] for t in keys} == {"subtab", "subtab_mean"} and len(set(keys.values())) == len(keys)
        fitted = {
            m: tcclib.TCCClassifier(m, epochs=2, head_epochs=3, hidden_dim=16, verbose=False).fit(mixed.X, mixed.y)
            for m in ("subtab", "subtab_mean")
        }
        # 6 features, 4 subsets of one feature each: 2 features in none
        assert _ignored_columns(fitted["subtab"], mixed.X) == []
        assert len(_ignored_columns(fitted["subtab_mean"], mixed.X)) == 2


FAMILY_AUTHORS = ROOT / "examples" / "family_authors.py"


def _stack_of(members, objective_name: str):
    return next(pt for pt in members.pretraining.stacks if pt.objective.name == objective_name)


def _keyed_apart_and_set_up(data, methods: tuple, objective_name: str):
    """``methods`` on ``data`` at the TINY settings: every member's key its own; the members set up
    and the stack of the objective ``objective_name``."""
    cfg = Config(methods=methods, **TINY)
    prep = prepare_config(data, cfg)
    keys = content_keys.run_keys(prep, cfg).members
    assert len(set(keys.values())) == len(keys) == len(cfg.seeds) * len(methods)
    members = training.set_up(prep, cfg, None, data.name)
    return members, _stack_of(members, objective_name)


def _first_batch(pt, rows: int = 50) -> objectives.Batch:
    perm, views = pt.draw_views(0)
    pt.pairs = torch.cat([pt.anchors, views], dim=1)
    return objectives.Batch(pt, perm[:, :rows], pt.objective_state)


def test_vime_with_the_authors_outputs_reconstructs_the_row_scaled_to_0_1_through_a_sigmoid(mixed):
    """VIME(reconstruction="sigmoid"): the loss is the mask loss plus alpha x the squared error of
    the feature estimator's sigmoid against each column min-max scaled over the member's training
    rows; padding and constant columns add nothing; the default keeps the stored keys."""
    assert objectives.VIME().key_params() == {"alpha": 2.0}
    assert objectives.VIME(reconstruction="sigmoid").key_params() == {"alpha": 2.0, "reconstruction": "sigmoid"}
    with pytest.raises(ValueError, match=r"^reconstruction: one of 'linear', 'sigmoid', got 'tanh'$"):
        objectives.VIME(reconstruction="tanh")
    with _loaded(FAMILY_AUTHORS):
        members, pt = _keyed_apart_and_set_up(mixed, ("vime", "vime_sigmoid", "vime_sigmoid_class"), "vime_sigmoid")
        batch = _first_batch(pt)
        rows = pt.anchors.float()
        low, high = rows.amin(1, keepdim=True), rows.amax(1, keepdim=True)
        real = high > low
        target = torch.where(real, (batch.anchors.float() - low) / (high - low).clamp_min(1e-30), 0.0)
        assert float(target.min()) >= 0 and float(target.max()) <= 1
        features = batch.head("features", batch.encode(batch.views)).float()
        by_hand = ((torch.sigmoid(features) * real - target).square().sum(-1).mean(1)) / pt.in_widths
        linear = objectives.VIME(alpha=pt.objective.alpha).loss(batch)  # (the mask loss + alpha x linear)
        mask_loss = linear - pt.objective.alpha * objectives.row_squared_error(features, batch.anchors, pt.in_widths)
        torch.testing.assert_close(pt.objective.loss(batch), mask_loss + pt.objective.alpha * by_hand)
        training.pretrain(members, "pretraining")
        assert all(np.isfinite(loss) for *_, loss in pt.history)
    # padding (column_feature -1) and a constant column: inverse range 0, so no target and no output
    stack = objectives.Stack(
        k=1,
        n_rows=3,
        n_features=2,
        width=3,
        hidden=4,
        active=torch.ones(1, 2, dtype=torch.bool),
        in_widths=torch.tensor([2.0]),
        column_feature=torch.tensor([[0, 1, -1]]),
        cfg=None,
        rows=torch.tensor([[[1.0, 5.0, 0.0], [3.0, 5.0, 0.0], [2.0, 5.0, 0.0]]]),
    )
    low, inverse_range = objectives.min_max_scaling(stack)
    assert low.flatten().tolist() == [1.0, 5.0, 0.0] and inverse_range.flatten().tolist() == [0.5, 0.0, 0.0]


def test_vime_with_the_authors_inputs_encodes_the_rows_min_max_scaled_wherever_it_reads_them(mixed, monkeypatch):
    """VIME(inputs="min_max"): the encoder reads each column min-max scaled over the member's
    training rows, in pretraining (Batch.encode), in the pseudo-label refresh and in the
    classifier's encoder; the other members read their rows as they are; the default keeps the
    stored keys; a bad value is named."""
    assert "inputs" not in objectives.VIME().key_params()
    assert objectives.VIME(inputs="min_max").key_params()["inputs"] == "min_max"
    with pytest.raises(ValueError, match=r"^inputs: one of 'preprocessed', 'min_max', got 'rank'$"):
        objectives.VIME(inputs="rank")
    with _loaded(FAMILY_AUTHORS):
        members, pt = _keyed_apart_and_set_up(
            mixed, ("vime_sigmoid", "vime_authors", "vime_authors_class"), "vime_authors"
        )
        low, inverse_range = objectives.min_max_scaling(pt.stack_shape())
        scaled = (pt.anchors - low) * inverse_range
        assert float(scaled.min()) == 0.0 and float(scaled.max()) == 1.0
        torch.testing.assert_close(pt.encoder_rows(pt.anchors), scaled)
        batch = _first_batch(pt)
        torch.testing.assert_close(batch.encode(batch.anchors), pt.enc((batch.anchors - low) * inverse_range))
        assert _stack_of(members, "vime_sigmoid").input_map is None
        with torch.no_grad():  # (the first refresh, before epoch 0, reads the initial encoder)
            first = rules.take_rows(pt.enc(scaled)[pt.pse_t], pt.lab_rows[pt.pse_t])
        read = []
        real_fit_heads = pretraining.fit_heads
        monkeypatch.setattr(
            pretraining, "fit_heads", lambda emb, *a, **k: read.append(emb) or real_fit_heads(emb, *a, **k)
        )
        training.pretrain(members, "pretraining")
        torch.testing.assert_close(read[0], first)
        assert all(np.isfinite(loss) for *_, loss in pt.history)
        encoders, layout = members.encoders, members.layout
        out = encoders(members.anchors)
        for j in range(layout.K):
            position = pt.pre.index(j) if j in pt.pre else None
            x = members.anchors[j] if position is None else scaled[position]
            expected = x @ encoders.weights[0][j] + encoders.biases[0][j]
            for W, b in zip(encoders.weights[1:], encoders.biases[1:]):
                expected = torch.relu(expected) @ W[j] + b[j]
            torch.testing.assert_close(out[j], expected)


def test_subtab_with_the_authors_projection_puts_a_leaky_relu_between_its_two_layers(mixed):
    """SubTab(projection="leaky_relu") (the authors' AEWrapper): the projection's two layers with
    F.leaky_relu (slope 0.01) between them, where the default's ReLU cuts the negative part; the
    default keeps the stored keys and heads."""
    assert "projection" not in objectives.SubTab().key_params()
    assert objectives.SubTab(projection="leaky_relu").key_params()["projection"] == "leaky_relu"
    with pytest.raises(ValueError, match=r"^projection: one of 'relu', 'leaky_relu', got 'gelu'$"):
        objectives.SubTab(projection="gelu")
    with _loaded(FAMILY_AUTHORS):
        cfg = Config(methods=("subtab", "subtab_leaky"), **TINY)
        members = training.set_up(prepare_config(mixed, cfg), cfg, None, "mixed")
        assert list(_stack_of(members, "subtab").heads) == ["projection", "decoder"]
        pt = _stack_of(members, "subtab_leaky")
        assert list(pt.heads) == ["projection_in", "projection_out", "decoder"]
        batch = _first_batch(pt)
        h = batch.encode(batch.anchors)
        inner = pt.heads["projection_in"](h)
        assert bool((inner < 0).any())
        leaky = pt.heads["projection_out"](torch.nn.functional.leaky_relu(inner, 0.01))
        torch.testing.assert_close(pt.objective._project(batch, h), leaky)
        assert not torch.allclose(leaky, pt.heads["projection_out"](torch.relu(inner)))
        training.pretrain(members, "pretraining")
        assert all(np.isfinite(loss) for *_, loss in pt.history)


def _every_layer_by_hand(encoder, x: torch.Tensor, member: int) -> torch.Tensor:
    outputs, h = [], x
    for i, (W, b) in enumerate(zip(encoder.weights, encoder.biases)):
        h = h @ W[member] + b[member]
        if i < len(encoder.weights) - 1:
            h = torch.relu(h)
        outputs.append(h)
    return torch.cat(outputs, -1)


def test_the_autoencoders_deep_stack_is_every_encoder_layer_wherever_the_embedding_is_read(mixed, monkeypatch):
    """DenoisingAutoencoder(embedding="deep_stack") (Jahrer's): its members' embedding is every
    encoder layer's output side by side (4 x hidden_dim), in the classifier and in the pseudo-label
    refresh; the default keeps the stored keys; a bad value is named."""
    assert objectives.DenoisingAutoencoder().key_params() == {}
    deep = objectives.DenoisingAutoencoder(embedding="deep_stack")
    assert deep.key_params() == {"embedding": "deep_stack"}
    with pytest.raises(ValueError, match=r"^embedding: one of 'last', 'deep_stack', got 'all'$"):
        objectives.DenoisingAutoencoder(embedding="all")
    with _loaded(FAMILY_AUTHORS):
        cfg = Config(methods=("random", "dae", "dae_deep", "dae_deep_class"), **TINY)
        keys = content_keys.run_keys(prepare_config(mixed, cfg), cfg).members
        assert len(set(keys.values())) == len(keys) == 8
        prep = prepare_config(mixed, cfg)
        wide, narrow = (
            estimate_memory(prep, cfg),
            estimate_memory(prep, cfg.replace(methods=("random", "dae", "vime", "subtab"))),
        )
        assert wide.nbytes - narrow.nbytes == 2 * 4 * (64 - 16) * wide.members * (wide.n_train + wide.n_test)
        members = training.set_up(prep, cfg, None, "mixed")
        layout = members.layout
        assert members.encoders.deep.tolist() == [
            j for j, (_, m) in enumerate(layout.members) if m in ("dae_deep", "dae_deep_class")
        ]
        assert members.encoders.output_widths() == [64 if m.startswith("dae_deep") else 16 for _, m in layout.members]
        read = []  # (what the refresh's heads are fitted on: the real fit_heads runs)
        real_fit_heads = pretraining.fit_heads
        monkeypatch.setattr(
            pretraining, "fit_heads", lambda emb, *a, **k: read.append(emb.shape) or real_fit_heads(emb, *a, **k)
        )
        training.pretrain(members, "pretraining")
        assert read and all(shape[-1] == 64 for shape in read)
        x = members.anchors[:, :7]
        out = members.encoders(x)
        assert out.shape == (layout.K, 7, 64)
        for j, (_, m) in enumerate(layout.members):
            if m.startswith("dae_deep"):
                torch.testing.assert_close(out[j], _every_layer_by_hand(members.encoders, x[j], j))
            else:
                assert torch.equal(out[j, :, :16], members.encoders.forward(x)[j]) and not out[j, :, 16:].any()


@pytest.mark.parametrize("head", ["frozen", "finetune", "concat", "probe"])
def test_a_deep_stack_beside_other_methods_leaves_their_results_unchanged(mixed, head):
    """With deep-stack members in the run, the other members' heads read zero-padded embeddings,
    and VIME's members with min-max scaled inputs read their own rows: the others' results,
    pseudo-labels and embeddings are the same bits as without them."""
    with _loaded(FAMILY_AUTHORS):
        settings = dict(TINY, head=head, keep_embeddings=True, pseudo_every=1)
        alone = run_dataset(mixed, Config(methods=("random", "dae", "vime_class"), **settings))
        beside = run_dataset(
            mixed,
            Config(
                methods=("random", "dae_deep", "dae", "vime_class", "dae_deep_class", "vime_authors_class"), **settings
            ),
        )

    def _kept(frame, columns):
        kept = frame[frame.method.isin(["random", "dae", "vime_class"])]
        return kept.sort_values(["seed", "method", *columns[:1]])[columns].to_numpy().tolist()

    for part, columns in (("results", ["accuracy", "auroc"]), ("pseudo", ["epoch", "pseudo_accuracy"])):
        expected = _kept(getattr(alone, part), columns)
        assert expected and expected == _kept(getattr(beside, part), columns)
    for method in ("random", "dae", "vime_class"):
        assert np.array_equal(alone.embeddings[method]["test"], beside.embeddings[method]["test"])
    assert beside.embeddings["dae_deep"]["test"].shape[1] == 64 and beside.embeddings["dae"]["test"].shape[1] == 16
    assert set(beside.results.method) == {
        "random",
        "dae_deep",
        "dae",
        "vime_class",
        "dae_deep_class",
        "vime_authors_class",
    }


@pytest.mark.parametrize("head", ["frozen", "finetune", "concat", "probe"])
@pytest.mark.parametrize("method, width", [("dae_deep_class", 64), ("vime_authors_class", 16)])
def test_the_estimator_fits_the_deep_stack_and_vimes_scaled_inputs_with_every_head(mixed, head, method, width):
    with _loaded(FAMILY_AUTHORS):
        clf = tcclib.TCCClassifier(method, head=head, epochs=2, head_epochs=3, hidden_dim=16, verbose=False)
        clf.fit(mixed.X, mixed.y)
        assert clf.transform(mixed.X).shape == (len(mixed.X), width) and len(clf.get_feature_names_out()) == width
        again = pickle.loads(pickle.dumps(clf))
        assert np.array_equal(again.predict_proba(mixed.X), clf.predict_proba(mixed.X))


def test_an_objectives_embedding_is_one_of_two_and_set_after_registration_it_is_keyed_or_refused(mixed):
    """``embedding``: 'last' or 'deep_stack'; another value is refused at registration, by
    check_objective and by a run; the built-in dae's set after registration moves its key alone."""
    bad = objectives.DenoisingAutoencoder(name="dae_bad")
    bad.embedding = "every"
    with pytest.raises(
        registry.RegistryError,
        match=r"^register_objective 'dae_bad': embedding must be one of 'last', 'deep_stack', got 'every'$",
    ):
        registry.register_objective(bad)
    everywhere = _Blind()
    everywhere.embedding = "every"
    report = tcclib.check_objective(everywhere, raise_on_breach=False)
    assert report.breaches == ["embedding must be one of 'last', 'deep_stack', got 'every'"]
    cfg = Config(methods=("dae", "dae_class", "vime"), **TINY)
    before = content_keys.run_keys(prepare_config(mixed, cfg), cfg).members
    dae = registry.objective("dae")
    dae.embedding = "deep_stack"
    try:
        after = content_keys.run_keys(prepare_config(mixed, cfg), cfg).members
        assert {member.split("/")[1] for member, key in after.items() if key != before[member]} == {"dae", "dae_class"}
        dae.embedding = "every"
        with pytest.raises(
            objectives.ObjectiveContractError,
            match=r"^objective 'dae'.*: embedding must be one of 'last', 'deep_stack', got 'every'$",
        ):
            run_dataset(mixed, cfg)
    finally:
        del dae.embedding
    assert content_keys.run_keys(prepare_config(mixed, cfg), cfg).members == before


def test_a_method_added_beside_a_stored_one_of_its_objective_is_said_added_not_changed(tmp_path):
    """A stored run of subtab_leaky, run again with subtab_leaky_class beside it (the same objective):
    the difference is the added method alone, not "code of objective:subtab_leaky changed" (what the
    screen said when the fourth method joined outputs/family_authors); a changed objective still is."""
    from tcclib.artifacts import store

    with _loaded(FAMILY_AUTHORS):
        stored = tmp_path / "config.json"
        store.write_json(store.settings_record(Config(methods=("subtab_leaky",), **TINY)), stored)
        same, words = store.same_settings(stored, Config(methods=("subtab_leaky", "subtab_leaky_class"), **TINY))
        assert not same and words == "methods +subtab_leaky_class", words
        record = json.loads(stored.read_text())
        record["plugin_code"]["subtab_leaky"]["objective:subtab_leaky"] = "revision:1"
        stored.write_text(json.dumps(record))
        same, words = store.same_settings(stored, Config(methods=("subtab_leaky", "subtab_leaky_class"), **TINY))
        assert words == "methods +subtab_leaky_class; code of objective:subtab_leaky changed", words


def test_the_embedding_views_are_the_mean_of_the_masked_rows_for_their_members_alone(mixed):
    with _loaded(SUBTAB_AUTHORS):
        cfg = Config(methods=("random", "subtab", "subtab_mean", "subtab_mean_class"), **TINY)
        members = training.set_up(prepare_config(mixed, cfg), cfg, None, "mixed")
        training.pretrain(members, "pretraining")
        enc, x = members.encoders, members.anchors
        viewed = [j for j, (_, m) in enumerate(members.layout.named()) if m.startswith("subtab_mean")]
        assert sorted(j for idx, _ in enc.views for j in idx.tolist()) == viewed
        embedding, plain = enc(x), enc.forward(x)
        for idx, masks in enc.views:
            assert masks.shape[1] == 4
            expected = sum(enc.forward(x[idx] * masks[:, v], idx) for v in range(4)) / 4
            torch.testing.assert_close(embedding[idx], expected)
        others = [j for j in range(enc.K) if j not in viewed]
        assert torch.equal(embedding[others], plain[others])


class _Reconstruction(objectives.Objective):
    """Each member's squared error of the clean rows reconstructed from its views (one linear decoder)."""

    def heads(self, stack):
        return {"decoder": [stack.width]}

    def loss(self, batch):
        return objectives.row_squared_error(batch.head("decoder", batch.encode(batch.views)), batch.anchors)


class _Blind(_Reconstruction):
    """A reconstruction objective whose embedding reads nothing of a row (every mask 0)."""

    name = "blind"

    def embedding_views(self, stack, state):
        return torch.zeros(stack.k, 1, 1, stack.width, device=stack.device)


class _Misshapen(_Blind):
    name = "misshapen"

    def embedding_views(self, stack, state):
        return torch.ones(stack.k, 1, stack.width, device=stack.device)


def test_the_pseudo_label_refresh_reads_the_embedding_views_and_a_bad_view_is_a_breach(mixed):
    """An objective's embedding views are what the pseudo-label heads read too: an embedding that
    reads nothing labels every unlabeled row alike; views of the wrong shape are named."""
    origin = "test_blind_views"
    with plugins.registering_as(origin):
        registry.register_objective(_Blind())
        registry.register_method("blind_class", "pseudo", "bernoulli_15", objective="blind")
    try:
        y = np.asarray(mixed.y).astype(int)
        y[1::2] = -1  # (unlabeled)
        clf = tcclib.TCCClassifier("blind_class", epochs=2, head_epochs=3, hidden_dim=16, verbose=False)
        clf.fit(mixed.X, y)
        assert len(set(clf.pseudo_labels_[1::2])) == 1 and len(set(clf.predict(mixed.X))) == 1
        assert np.ptp(clf.transform(mixed.X), axis=0).max() == 0.0
    finally:
        registry.remove_origin(origin)
    report = tcclib.check_objective(_Misshapen(), raise_on_breach=False)
    assert report.breaches == [
        "objective 'misshapen' (test_objectives.py): embedding_views() must return None or float masks "
        "[2, V, 1, 12] on cpu; got a torch.float32 tensor of shape [2, 1, 12]"
    ]


class _Mismapped(_Blind):
    name = "mismapped"

    def encoder_inputs(self, stack, state):
        return torch.zeros(stack.k, stack.width), torch.ones(stack.k, 1, stack.width)


def test_encoder_inputs_of_the_wrong_shape_are_a_breach_of_check_objective():
    report = tcclib.check_objective(_Mismapped(), raise_on_breach=False)
    assert report.breaches == [
        "objective 'mismapped' (test_objectives.py): encoder_inputs() must return None or (shift, scale), "
        "float tensors [2, 1, 12] on cpu; got a torch.float32 tensor of shape [2, 12]"
    ]


def test_the_family_resumes_from_a_checkpoint_of_several_stacks(mixed, tmp_path):
    """A run of two objectives checkpoints both stacks in one file; loaded into a fresh set-up it
    continues as the uninterrupted run does."""
    cfg = Config(methods=("random", "dae"), **{**TINY, "epochs": 3})
    prep = prepare_config(mixed, cfg)
    straight = training.set_up(prep, cfg, None, "mixed").pretraining
    assert isinstance(straight, training.Stacks) and [p.objective.name for p in straight.stacks] == ["ntxent", "dae"]
    resumed = training.set_up(prep, cfg, None, "mixed").pretraining
    resumed.run_epoch()
    store.save_checkpoint(tmp_path / "checkpoint.pt", dict(key="k", seconds=1.0, **resumed.state_dict()))
    state = store.load_checkpoint(tmp_path / "checkpoint.pt", "k", resumed.expect())
    assert state is not None and store.checkpoint_problem(state, "k", resumed.expect()) is None
    bad = {**{k: v for k, v in state.items() if k != "sha256"}, "stacks": state["stacks"][:1]}  # (no checksum)
    assert "1 stacks, expected 2" in store.checkpoint_problem(bad, "k", resumed.expect())
    fresh = training.set_up(prep, cfg, None, "mixed").pretraining
    fresh.load_state_dict(state)
    losses = [straight.run_epoch() for _ in range(3)]
    assert fresh.epoch == 1 and [fresh.run_epoch() for _ in range(2)] == losses[1:]


def test_the_learning_curves_have_a_panel_per_objective():
    history = pd.DataFrame(
        {"seed": 0, "method": ["subtab", "random", "class", "vime", "nope"], "epoch": 1, "loss": [30.0, 5, 5, 2, 1]}
    )
    parts = plots.loss_parts(history)
    assert [(what, set(rows.method)) for what, _, rows in parts] == [
        ("contrastive loss", {"random", "class", "nope"}),  # NT-Xent's first; an unknown name goes with it
        ("subtab loss", {"subtab"}),
        ("vime loss", {"vime"}),
    ]
    assert parts[0][1] == "NT-Xent loss (training)" and plots.loss_parts(history.iloc[:0]) == []


def test_the_verdict_compares_each_class_variant_with_its_sibling(tmp_path):
    from tcclib.paper import verdict

    g = np.random.default_rng(1)
    rows = [
        dict(
            dataset=f"d{d}", seed=s, method=m, accuracy=0.7 + 0.01 * (m == "vime_class") + g.normal(0, 1e-3), auroc=0.8
        )
        for d in range(8)
        for s in range(2)
        for m in ("vime", "vime_class", "dae", "random")
    ]
    results = pd.DataFrame(rows)
    assert verdict.class_pairs(["vime", "vime_class", "dae", "subtab_class"]) == [("vime_class", "vime")]
    table = verdict.paired_within(results, [("vime_class", "vime")], "accuracy")
    assert table.loc[0, "better"] == 8 and table.loc[0, "p"] < 0.05
    page = verdict.write(results, ["vime", "vime_class", "dae"], ["random"], tmp_path).read_text()
    assert "## The class-conditioned draw within each objective" in page and "| vime_class | vime | 8 | 8 | 0 |" in page


@pytest.mark.parametrize("head", ["frozen", "finetune", "concat", "probe"])
def test_the_estimator_fits_vime_with_every_head(mixed, head):
    clf = tcclib.TCCClassifier("vime", head=head, epochs=2, head_epochs=3, hidden_dim=16, verbose=False)
    clf.fit(mixed.X, mixed.y)
    assert clf.predict_proba(mixed.X).shape == (len(mixed.X), 2) and clf.transform(mixed.X).shape[0] == len(mixed.X)


# --------------------------------------------------------------------------- a user's objective


def _plugin(tmp_path: Path, text: str | None = None) -> Path:
    path = tmp_path / "barlow_objective.py"
    path.write_text(text if text is not None else BARLOW.read_text())
    return path


def test_a_users_objective_in_one_file_trains_and_its_edit_retrains_only_it(mixed, tmp_path):
    path = _plugin(tmp_path)
    plugins.load(str(path))
    try:
        cfg = Config(methods=("random", "vime", "barlow"), **TINY)
        prep = prepare_config(mixed, cfg)
        before = content_keys.run_keys(prep, cfg).members
        assert "code" in METHODS["barlow"].objective_key()
        run = run_dataset(mixed, cfg, store_dir=tmp_path / "store")
        store.save_run(run, tmp_path / "store")
        assert set(run.results.method) == {"random", "vime", "barlow"} and run.timings["trained_members"] == 6
        again = run_dataset(mixed, cfg, store_dir=tmp_path / "store")
        assert again.timings["trained_members"] == 0
        # a comment changes nothing; an edit of what the loss computes retrains barlow alone
        _plugin(tmp_path, path.read_text().replace("return on + ", "# a comment\n        return on + "))
        plugins.load(str(path))
        assert content_keys.run_keys(prep, cfg).members == before
        _plugin(tmp_path, path.read_text().replace("return on + ", "return 2 * on + "))
        plugins.load(str(path))
        after = content_keys.run_keys(prep, cfg).members
        assert {t.split("/")[1] for t in after if after[t] != before[t]} == {"barlow"}
        edited = run_dataset(mixed, cfg, store_dir=tmp_path / "store")
        assert edited.timings["trained_members"] == 2
        assert "barlow" in content_keys.code_identities(cfg) and "vime" not in content_keys.code_identities(cfg)
    finally:
        plugins.unload(str(path))
    assert "barlow" not in registry.OBJECTIVES and "barlow" not in METHODS


def test_a_users_objective_changed_after_registration_is_refused_by_a_sweep(tmp_path):
    """A sweep's kernels load the objective's file afresh: an attribute set in this process would
    not reach them, so the sweep stops in one line (as for a rule)."""
    path = _plugin(tmp_path)
    plugins.load(str(path))
    try:
        cfg = types.SimpleNamespace(config=Config(methods=("barlow",), **TINY))
        assert "barlow" in sweep.check_keyable(cfg)
        registry.objective("barlow").off_diagonal = 0.1
        with pytest.raises(SweepError, match=r"^objective 'barlow' \(barlow_objective.py\): its arguments changed in"):
            sweep.check_keyable(cfg)
    finally:
        plugins.unload(str(path))


def test_a_users_objective_keeps_its_contract_and_a_breach_is_one_line_naming_its_file(mixed, tmp_path):
    path = _plugin(tmp_path)
    plugins.load(str(path))
    try:
        report = tcclib.check_objective("barlow")
        assert report.ok and "keeps the objective contract" in str(report)
    finally:
        plugins.unload(str(path))
    failing = _plugin(
        tmp_path,
        BARLOW.read_text()
        .replace('name: str = "barlow"', 'name: str = "broken"')
        .replace('register_method("barlow"', 'register_method("broken"')
        .replace("        b = batch.size\n", "        b = batch.size\n        b = b / undefined\n"),
    )
    plugins.load(str(failing))
    try:
        with pytest.raises(rules.RuleContractError) as caught:
            run_dataset(mixed, Config(methods=("broken",), **TINY))
        line = str(caught.value)
        assert line.startswith("method broken: objective 'broken' (barlow_objective.py): loss() failed at line ")
        assert "NameError: name 'undefined' is not defined" in line and "\n" not in line
    finally:
        plugins.unload(str(failing))


class _Summed(_Reconstruction):
    name = "summed"

    def loss(self, batch):
        return super().loss(batch).sum()  # one number for the whole stack: mixes the members


class _Mixing(_Reconstruction):
    name = "mixing"

    def loss(self, batch):
        error = super().loss(batch)
        return error + error.mean()  # each member's loss reads the others'


def test_check_objective_lists_the_breaches_of_a_bad_objective():
    summed = tcclib.check_objective(_Summed(), raise_on_breach=False)
    assert not summed.ok and "loss() must return each member's loss" in summed.breaches[0]
    assert "got shape [] (a sum over the members mixes them" in summed.breaches[0]
    mixing = tcclib.check_rule(_Mixing(), raise_on_breach=False)  # check_rule hands an objective over
    assert mixing.breaches == [
        "member 0's loss depends on the other members of its stack: trained alone it gave other losses; compute "
        "each member's loss from its own rows (reduce over rows and columns, never over the first dimension)"
    ]
    assert tcclib.check_objective("subtab").ok  # (the others: tests/test_objectives' runs)
    assert tcclib.check_rule("bernoulli_15").ok  # a count that varies by row is the Bernoulli rule's contract
    with pytest.raises(registry.RegistryError, match="no objective or method is called 'vim' .did you mean vime"):
        tcclib.check_objective("vim")


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TCC_DATA_DIR", plugins.ENV)}
    return {**env, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TCC_PROGRESS": "lines"}


def test_the_example_objective_through_a_parameter_file_and_notebook_03(tmp_path):
    """``plugins: [examples/barlow_objective.py]`` in a parameter file: the sweep trains barlow beside
    a built-in objective and an NT-Xent method, and notebook 03 shows each objective's loss."""
    params = tmp_path / "tiny.yaml"
    params.write_text(
        "\n".join(
            [
                "name: tiny_barlow",
                "datasets: [breast_cancer]",
                f"plugins: [{BARLOW}]",
                "config: {seeds: [0], epochs: 2, head_epochs: 2, methods: [random, vime, barlow], baselines: []}",
                "per_dataset_notebooks: [03_pretraining]",
                "aggregate_notebooks: []",
            ]
        )
        + "\n"
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "tcclib", str(params), "--outputs", str(out)]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    folder = out / "tiny_barlow" / "breast_cancer"
    assert set(pd.read_csv(folder / "results.csv")["method"]) == {"random", "vime", "barlow"}
    assert set(json.loads((folder / "config.json").read_text())[store.PLUGIN_CODE]) == {"barlow"}
    assert (folder / "03_pretraining.ipynb").is_file()
    # its learning curves: a panel per objective (NT-Xent, vime, barlow) and the pseudo-labels' (two
    # panels, 13 x 4 inches, for NT-Xent methods alone)
    width, height = Image.open(folder / "learning_curves.png").size
    assert width / height > 5.7, (width, height)  # four panels of 6.5 x 4 inches (three: 4.9)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A reference store of breast_cancer (no_pretrain and logreg, 2 seeds, 2 epochs)."""
    folder = tmp_path_factory.mktemp("reference")
    cfg = Config(methods=("no_pretrain",), baselines=("logreg",), seeds=(0, 1), epochs=2, head_epochs=2, progress=False)
    store.save_run(run_dataset("breast_cancer", cfg), folder / "breast_cancer")
    return folder


def test_the_example_objective_through_the_screen_and_its_edit_retrains_it(tmp_path, reference, capsys, kept_environ):
    from tcclib.__main__ import main

    yaml = tmp_path / "screen.yaml"
    yaml.write_text(
        "name: screen\ndatasets: [breast_cancer]\n"
        f"screen:\n  reference: {reference}\n  compare: [no_pretrain, logreg]\n  out: {tmp_path / 'screen'}\n"
    )
    path = _plugin(tmp_path)
    args = [str(yaml), "--plugin", str(path), "--workers", "1"]
    try:
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "screen: 1 dataset, barlow" in out and "2 members trained" in out
        assert (tmp_path / "screen" / "verdict.md").is_file()
        assert main(args) == 0  # unchanged: nothing trains
        assert "members trained" not in capsys.readouterr().out.split("training record")[0]
        path.write_text(path.read_text().replace("return on + ", "return 2 * on + "))
        assert main(args) == 0  # edited: its members train again
        assert "2 members trained" in capsys.readouterr().out
    finally:
        plugins.unload(str(path))


def test_notebook_09_screens_the_example_objective(tmp_path, reference):
    """papermill on 09 with the objective's plugin: its contract checked, the screen, the verdict."""
    done = papermill_09(
        tmp_path,
        _env(),
        plugin=str(BARLOW),
        reference=str(reference),
        compare="[no_pretrain, logreg]",
        out_dir=str(tmp_path / "screen"),
        workers="1",
        progress="False",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = (tmp_path / "09_out.ipynb").read_text()
    assert "objective 'barlow' (barlow_objective.py): keeps the objective contract" in rendered
    assert "breast_cancer: done in" in rendered and "barlow ranks" in rendered


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
