"""Head variants (``Config.head``: the paper's frozen encoder, ``finetune``, ``concat``) and the
heads' row weights (``sample_weight``, ``class_weight``): settings, content keys, the runner, the
estimator, and that weights matter on an imbalanced table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tcclib import TCCClassifier
from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import store
from tcclib.data.preprocess import prepare
from tcclib.method import heads, training
from tcclib.method.config import HEADS, Config, ConfigError
from tcclib.method.inputs import prepare_config
from tcclib.method.metrics import accuracy
from tcclib.running.train import run_dataset, run_prepared

SMALL = dict(epochs=2, head_epochs=40, hidden_dim=32, encoder_depth=2, batch_size=64)


def _cfg(**kw):
    base = dict(seeds=(11, 22), epochs=2, head_epochs=5, pseudo_every=1, batch_size=128, progress=False)
    base.update(kw)
    return Config(**base)


# --------------------------------------------------------------------------- settings and keys


def test_head_settings_are_checked_and_default_to_the_paper():
    assert Config().head == "frozen" and Config().head_variant() == {}
    assert HEADS == ("frozen", "finetune", "concat", "probe")
    with pytest.raises(ConfigError, match=r"head: .*got 'fine_tune' \(did you mean 'finetune'\?\)"):
        Config(head="fine_tune")
    with pytest.raises(ConfigError, match="encoder_lr: must be > 0"):
        Config(head="finetune", encoder_lr=0.0)
    with pytest.raises(ConfigError, match="encoder_lr: expected a finite number"):
        Config.from_dict({"encoder_lr": "1e-4"})
    assert Config(head="concat").head_variant() == {"head": "concat"}
    assert Config(head="probe").head_variant() == {"head": "probe"}
    assert Config(head="finetune", encoder_lr=3e-4).head_variant() == {"head": "finetune", "encoder_lr": 3e-4}


def test_a_head_variant_is_its_own_member_key_and_nothing_else_moves(bc_small):
    cfg = Config(seeds=(7,), methods=("no_pretrain", "random", "class", "class_least"), baselines=("logreg",))
    prep = prepare_config(bc_small, cfg)
    base = content_keys.run_keys(prep, cfg)
    # encoder_lr is unused by the frozen head: no key moves
    assert content_keys.run_keys(prep, cfg.replace(encoder_lr=5e-4)).members == base.members
    seen = {"frozen": base.members}
    for variant in ("finetune", "concat", "probe"):
        k = content_keys.run_keys(prep, cfg.replace(head=variant))
        assert all(k.members[t] != base.members[t] for t in base.members), variant
        assert k.baselines == base.baselines and k.importance == base.importance, variant
        seen[variant] = k.members
    assert seen["finetune"] != seen["concat"]
    lr = content_keys.run_keys(prep, cfg.replace(head="finetune", encoder_lr=5e-4)).members
    assert all(lr[t] != seen["finetune"][t] for t in lr)


def test_old_config_files_read_as_the_frozen_head(tmp_path):
    cfg = Config(seeds=(1,), epochs=3)
    old = {k: v for k, v in cfg.to_dict().items() if k not in ("head", "encoder_lr")}
    (tmp_path / "config.json").write_text(pd.Series(old).to_json())
    assert store.same_settings(tmp_path / "config.json", cfg)[0]
    same, why = store.same_settings(tmp_path / "config.json", cfg.replace(head="concat"))
    assert not same and "head 'concat' vs 'frozen'" in why


# --------------------------------------------------------------------------- the runner


@pytest.mark.parametrize("head", ["finetune", "concat"])
def test_each_variant_trains_every_method_in_the_ensemble_as_alone(bc_small, head):
    """Stacked like the frozen heads: a member of the ensemble is the member trained alone; the
    variant changes the results of every method (no_pretrain included) and not the pretraining."""
    from tcclib.artifacts.importances import importance_matrices

    methods = ("no_pretrain", "random", "class", "class_most")
    cfg = _cfg(methods=methods, head=head)
    prep = prepare(bc_small, cfg.seeds)
    imp = importance_matrices("bc12", prep.splits, cfg)
    together = run_prepared(prep, cfg, imp)
    frozen = run_prepared(prep, cfg.replace(head="frozen"), imp)
    pd.testing.assert_frame_equal(together.history, frozen.history)  # pretraining is the same
    assert not np.allclose(together.results.auroc, frozen.results.auroc)
    for si, seed in enumerate(cfg.seeds):
        for m in ("no_pretrain", "class"):
            alone = run_prepared(prepare(bc_small, [seed]), cfg.replace(seeds=[seed], methods=[m]), imp[si : si + 1])
            t = together.results.query("seed == @seed and method == @m").iloc[0]
            assert alone.results.accuracy.iloc[0] == pytest.approx(t.accuracy, abs=1e-9), (seed, m)
            assert alone.results.auroc.iloc[0] == pytest.approx(t.auroc, abs=1e-6), (seed, m)


def test_finetune_moves_the_encoder_and_concat_keeps_it(bc_small):
    cfg = _cfg(seeds=(11,), methods=("random",), keep_embeddings=True)
    prep = prepare(bc_small, cfg.seeds)
    emb = {h: run_prepared(prep, cfg.replace(head=h)).embeddings["random"]["test"] for h in HEADS}
    np.testing.assert_array_equal(emb["concat"], emb["frozen"])
    assert np.abs(emb["finetune"] - emb["frozen"]).max() > 1e-4
    # a tiny encoder_lr leaves the fine-tuned encoder close to the pretrained one
    still = run_prepared(prep, cfg.replace(head="finetune", encoder_lr=1e-9)).embeddings["random"]["test"]
    np.testing.assert_allclose(still, emb["frozen"], atol=1e-5)


def test_concat_head_reads_the_embedding_and_the_features():
    enc = training.StackedMLP(2, [5, 4], [torch.Generator().manual_seed(i) for i in range(2)], in_widths=[5, 3])
    onehot = torch.rand(2, 6, 5)
    onehot[1, :, 3:] = 0  # member 1's padding
    x = heads.head_inputs(enc, onehot, "concat")
    assert x.shape == (2, 6, 9)
    torch.testing.assert_close(x[:, :, :4], enc(onehot))
    torch.testing.assert_close(x[:, :, 4:], onehot)
    assert heads.head_inputs(enc, onehot, "finetune").shape == (2, 6, 4)


def test_stored_results_are_reused_per_head_variant(bc_small, tmp_path):
    cfg = _cfg(seeds=(11,), methods=("no_pretrain", "random"), baselines=("logreg",))
    for head in ("frozen", "concat"):
        folder = tmp_path / head
        first = run_dataset(bc_small, cfg.replace(head=head), store_dir=folder)
        store.save_run(first, folder)
        again = run_dataset(bc_small, cfg.replace(head=head), store_dir=folder)
        assert again.timings["trained_members"] == 0 and not again.trained
        pd.testing.assert_frame_equal(again.results, first.results)
    # the frozen folder holds nothing the concat head can reuse
    other = run_dataset(bc_small, cfg.replace(head="concat"), store_dir=tmp_path / "frozen")
    assert other.timings["trained_members"] == 2


# --------------------------------------------------------------------------- the estimator


def test_a_kept_pretraining_serves_the_other_heads_bit_for_bit(bc_small, tmp_path, capsys):
    cfg = _cfg(seeds=(11,), methods=("no_pretrain", "random", "class"), epochs=3)
    kept = run_dataset(bc_small, cfg, cache_dir=tmp_path, keep_pretrained=True)
    assert len(list((tmp_path / "checkpoints").glob("*.pt"))) == 1  # the finished pretraining, kept
    for head in ("finetune", "concat", "probe"):
        shared = run_dataset(bc_small, cfg.replace(head=head), cache_dir=tmp_path, keep_pretrained=True)
        assert "pretraining of these members already finished" in capsys.readouterr().out
        alone = run_dataset(bc_small, cfg.replace(head=head))
        pd.testing.assert_frame_equal(shared.results, alone.results)
        pd.testing.assert_frame_equal(shared.history, alone.history)
        pd.testing.assert_frame_equal(shared.pseudo, alone.pseudo)
    frozen_again = run_dataset(bc_small, cfg, cache_dir=tmp_path)  # without keep: resumed, then removed
    pd.testing.assert_frame_equal(frozen_again.results, kept.results)
    assert not list((tmp_path / "checkpoints").glob("*.pt"))
    with pytest.raises(ValueError, match="keep_pretrained needs a checkpoint_dir"):
        run_prepared(prepare_config(bc_small, cfg), cfg, keep_pretrained=True)


def _table(n=240, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    color = rng.choice(["red", "green", "blue"], size=n)
    y = ((a + (color == "red") * 1.5 + 0.3 * rng.normal(size=n)) > 0.5).astype(int)
    return pd.DataFrame({"a": a, "b": b, "color": color, "c": rng.normal(size=n)}), y


@pytest.mark.parametrize("head", ["finetune", "concat"])
def test_the_estimator_variant_trains_like_the_runner_member(bc_small, head):
    seed = 11
    cfg = Config(seeds=(seed,), methods=("class",), epochs=2, head_epochs=10, head=head, progress=False)
    prep = prepare(bc_small, cfg.seeds)
    sp = prep.splits[0]
    run = run_prepared(prep, cfg)
    codes = bc_small.y.cat.codes.to_numpy()
    clf = TCCClassifier("class", epochs=2, head_epochs=10, head=head, random_state=seed)
    clf.fit(bc_small.X.iloc[sp.train_index], np.where(sp.labeled, codes[sp.train_index], -1))
    prob = clf.predict_proba(bc_small.X.iloc[sp.test_index])
    assert accuracy(codes[sp.test_index], prob) == run.results.accuracy.iloc[0]
    assert clf.head_kind_ == head


def test_estimator_heads_predict_transform_and_pickle(tmp_path):
    import pickle

    X, y = _table()
    y = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    frozen = TCCClassifier("random", random_state=0, **SMALL).fit(X, y)
    fine = TCCClassifier("random", head="finetune", encoder_lr=1e-3, random_state=0, **SMALL).fit(X, y)
    concat = TCCClassifier("random", head="concat", random_state=0, **SMALL).fit(X, y)
    # concat keeps the pretrained encoder, fine-tuning moves it
    np.testing.assert_array_equal(concat.transform(X), frozen.transform(X))
    assert not np.allclose(fine.transform(X), frozen.transform(X))
    for clf in (fine, concat):
        p = clf.predict_proba(X)
        assert p.shape == (len(X), 2) and np.allclose(p.sum(1), 1)
        assert not np.allclose(p, frozen.predict_proba(X))
        back = pickle.loads(pickle.dumps(clf))
        np.testing.assert_array_equal(back.predict_proba(X), p)
    with pytest.raises(ConfigError, match="head: "):
        TCCClassifier(head="linear", **SMALL).fit(X, y)


# --------------------------------------------------------------------------- weights


def _imbalanced(n=600, seed=1):
    """95 % class 0: the minority (1) sits at higher ``a``, overlapping the majority."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.06).astype(int)
    a = rng.normal(size=n) + 1.6 * y
    X = pd.DataFrame({"a": a, "b": rng.normal(size=n), "c": rng.normal(size=n) + 0.8 * y})
    return X, y


def _recall(clf, X, y, label=1):
    return float((clf.predict(X)[y == label] == label).mean())


def test_balanced_class_weight_raises_minority_recall():
    X, y = _imbalanced()
    fit_y = np.where(np.arange(len(y)) < 400, y, -1)
    test = np.arange(len(y)) >= 400
    plain = TCCClassifier("random", random_state=0, **SMALL).fit(X, fit_y)
    balanced = TCCClassifier("random", class_weight="balanced", random_state=0, **SMALL).fit(X, fit_y)
    r_plain, r_bal = _recall(plain, X[test], y[test]), _recall(balanced, X[test], y[test])
    assert r_bal >= r_plain + 0.3, (r_plain, r_bal)
    # the same weights given per row are the same model
    lab = fit_y >= 0
    counts = np.bincount(fit_y[lab])
    per_row = np.where(lab, lab.sum() / (2 * counts[np.clip(fit_y, 0, None)]), 1.0)
    by_rows = TCCClassifier("random", random_state=0, **SMALL).fit(X, fit_y, sample_weight=per_row)
    np.testing.assert_allclose(by_rows.predict_proba(X), balanced.predict_proba(X), atol=1e-5)
    # a dict: weighing the minority up raises its recall too
    up = TCCClassifier("random", class_weight={1: 15.0}, random_state=0, **SMALL).fit(X, fit_y)
    assert _recall(up, X[test], y[test]) >= r_plain + 0.3


def test_sample_weight_ones_and_scaling_change_nothing_and_zero_weights_do():
    X, y = _table()
    y = np.where(np.arange(len(y)) % 2 == 0, y, -1)
    plain = TCCClassifier("class", random_state=0, **SMALL).fit(X, y)
    ones = TCCClassifier("class", random_state=0, **SMALL).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(ones.predict_proba(X), plain.predict_proba(X))
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    a = TCCClassifier("class", random_state=0, **SMALL).fit(X, y, sample_weight=w)
    b = TCCClassifier("class", random_state=0, **SMALL).fit(X, y, sample_weight=4 * w)  # (exact in floats)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(a.predict_proba(X), plain.predict_proba(X))
    # pretraining is not weighted: without pseudo-labels (random) its losses are the unweighted fit's
    r_plain = TCCClassifier("random", random_state=0, **SMALL).fit(X, y)
    r_weighted = TCCClassifier("random", random_state=0, **SMALL).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(r_weighted.history_.loss, r_plain.history_.loss)
    assert not np.array_equal(r_weighted.predict_proba(X), r_plain.predict_proba(X))
    # weights of unlabeled rows are unused
    w2 = w.copy()
    w2[y == -1] = 100.0
    c = TCCClassifier("class", random_state=0, **SMALL).fit(X, y, sample_weight=w2)
    np.testing.assert_array_equal(c.predict_proba(X), a.predict_proba(X))


def test_weights_reach_the_pseudo_label_model():
    X, y = _imbalanced()
    fit_y = np.where(np.arange(len(y)) < 300, y, -1)
    kw = dict(SMALL, epochs=3, pseudo_every=1)
    plain = TCCClassifier("class", random_state=0, **kw).fit(X, fit_y)
    balanced = TCCClassifier("class", class_weight="balanced", random_state=0, **kw).fit(X, fit_y)
    unl = fit_y == -1
    assert (balanced.pseudo_labels_[unl] == 1).sum() > 2 * max((plain.pseudo_labels_[unl] == 1).sum(), 1)


@pytest.mark.parametrize(
    "kw, fit_kw, match",
    [
        ({}, dict(sample_weight=np.ones(5)), r"sample_weight.shape == \(5,\), expected \(240,\)"),
        ({}, dict(sample_weight=-np.ones(240)), "finite and non-negative"),
        ({}, dict(sample_weight=np.full(240, np.nan)), "finite and non-negative"),
        ({}, dict(sample_weight=np.zeros(240)), "labeled rows are all zero"),
        (dict(class_weight="equal"), {}, "class_weight: 'balanced', a dict"),
        (dict(class_weight={7: 2.0}), {}, r"class_weight: 7 not among the classes"),
        (dict(class_weight={1: -2.0}), {}, "class_weight: weights must be finite and non-negative"),
    ],
)
def test_bad_weights_are_clear_errors(kw, fit_kw, match):
    X, y = _table()
    with pytest.raises(ValueError, match=match):
        TCCClassifier("random", **kw, **SMALL).fit(X, y, **fit_kw)


def test_row_weights_average_one_over_labeled_rows():
    y = np.array([0, 0, 0, 1, -1, -1])
    lab = y >= 0
    assert heads.row_weights(y, lab) is None
    w = heads.row_weights(y, lab, class_weight=[1.0, 3.0])
    np.testing.assert_allclose(w, [2 / 3, 2 / 3, 2 / 3, 2, 0, 0])
    assert w[lab].mean() == pytest.approx(1.0)


def test_class_weight_by_string_label():
    X, y = _imbalanced(300)
    names = np.array(["no", "yes"], dtype=object)[y]
    fit_y = np.where(np.arange(len(y)) < 200, names, -1).astype(object)
    test = np.arange(len(y)) >= 200
    plain = TCCClassifier("random", random_state=0, **SMALL).fit(X, fit_y)
    up = TCCClassifier("random", class_weight={"yes": 15.0}, random_state=0, **SMALL).fit(X, fit_y)
    assert list(up.classes_) == ["no", "yes"]
    assert _recall(up, X[test], names[test], "yes") > _recall(plain, X[test], names[test], "yes")


# --------------------------------------------------------------------------- the comparison's tables


def _variant_results(n_datasets=6, seeds=(1, 2)):
    """A stored comparison where ``class+concat`` beats logreg on every dataset by 2 points and
    ``class+finetune`` loses to it by 1, the others in between."""
    offsets = {
        "no_pretrain": -0.5,
        "class": 0.0,
        "no_pretrain+finetune": -3.0,
        "class+finetune": -1.0,
        "no_pretrain+concat": 0.5,
        "class+concat": 2.0,
        "logreg": 0.0,
        "xgboost": -2.0,
    }
    rows = []
    for d in range(n_datasets):
        for s in seeds:
            for m, off in offsets.items():
                acc = 0.6 + 0.05 * d + (off + 0.01 * d * (m == "class")) / 100
                rows.append(dict(dataset=f"d{d}", seed=s, method=m, accuracy=acc, auroc=acc, epochs=100))
    return pd.DataFrame(rows)


def test_head_tables_name_rank_and_pair_the_variants(tmp_path):
    from tcclib.paper import heads

    res = _variant_results()
    assert heads.variant("class", "frozen") == "class" and heads.variant("class", "concat") == "class+concat"
    assert heads.head_of("class+concat") == "concat" and heads.head_of("logreg") == "frozen"
    assert heads.is_pretrained("class+finetune") and not heads.is_pretrained("no_pretrain+concat")
    assert not heads.is_pretrained("logreg")
    assert heads.names(res)[:2] == ["no_pretrain", "class"] and heads.names(res)[-2:] == ["logreg", "xgboost"]
    ranks = heads.mean_table(res, "accuracy").loc["average rank"]
    assert ranks["class+concat"] == 1 and ranks["no_pretrain+finetune"] == len(ranks)
    pt = heads.paired_table(res, "accuracy").set_index(["variant", "against"])
    assert pt.loc[("class+concat", "logreg"), "better"] == 6 and pt.loc[("class+concat", "logreg"), "worse"] == 0
    assert pt.loc[("class+concat", "logreg"), "median_diff"] == pytest.approx(2.0, abs=0.1)
    assert pt.loc[("class+finetune", "no_pretrain+finetune"), "better"] == 6  # its own head's reference
    assert ("xgboost", "no_pretrain") not in pt.index  # a baseline is held against logreg only
    words = "\n".join(heads.plain_answer(res))
    assert "best pretrained variant, class+concat" in words and "above on 6 of 6 datasets" in words
    # the paper report shows a stored comparison beside the paper set, and nothing without one
    assert heads.section(tmp_path / "none") == []
    (tmp_path / "head_variants").mkdir()
    res.to_csv(tmp_path / "head_variants" / "results.csv", index=False)
    text = "\n".join(heads.section(tmp_path / "head_variants"))
    assert "## Does the head matter?" in text and "6 datasets x 2 seeds, 100 pretraining epochs" in text
