"""The ``probe`` head and the ``logreg_cv`` baseline (:mod:`tcclib.method.probe`): the choice made
on the labeled rows only, deterministic from the seed, the same model as scikit-learn's, in the
runner, the estimator (scikit-learn's checks, pickling in a fresh process) and as a baseline."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_info, threadpool_limits

from tcclib import TCCClassifier
from tcclib.method import heads, probe
from tcclib.method.config import Config
from tcclib.method.model import StackedMLP
from tcclib.running.train import run_dataset

TINY = dict(epochs=1, head_epochs=5, hidden_dim=8, encoder_depth=1, batch_size=64)
EXPECTED_FAILED = {
    "check_classifiers_classes": "-1 is the unlabeled-row marker, not a class label",
    "check_sample_weight_equivalence_on_dense_data": "repeated rows also pretrain (see tests/test_estimator.py)",
}


def _blocks(n=90, seed=0, classes=3):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    feats = rng.normal(size=(n, 4)) + y[:, None] * 0.7
    emb = np.maximum(rng.normal(size=(n, 12)) + y[:, None] * 0.3, 0)
    return {"embedding": emb, "features": feats}, y


# --------------------------------------------------------------------------- the procedure


def test_folds_fit_the_smallest_class_and_fall_back_below_two():
    y = np.array([0] * 20 + [1] * 3)
    splits = probe.folds(y, 0)
    assert len(splits) == 3 and all(set(y[te]) == {0, 1} for _, te in splits)
    assert len(probe.folds(np.array([0] * 20 + [1] * 9), 0)) == probe.FOLDS
    blocks, _ = _blocks(21)
    one = np.array([0] * 20 + [1])  # a class with one labeled row: no CV, the fixed C
    choice = probe.choose(blocks, one, 0)
    assert choice.folds == 0 and choice.C == probe.FALLBACK_C and choice.block == "both"


def test_the_choice_is_the_best_mean_held_out_likelihood_and_deterministic():
    blocks, y = _blocks()
    choice = probe.choose(blocks, y, 3)
    assert choice.block in ("embedding", "features", "both") and choice.C in probe.STRENGTHS
    for cand in ("embedding", "features", "both"):
        mean = probe.path_scores(blocks, cand, y, probe.folds(y, 3), 3, None).mean(0)
        assert mean.max() <= choice.score + 1e-12
    assert probe.choose(blocks, y, 3) == choice
    # another seed shuffles other folds
    assert any((a[1] != b[1]).any() for a, b in zip(probe.folds(y, 3), probe.folds(y, 4)))


def test_the_folded_linear_map_is_scikit_learns_model():
    blocks, y = _blocks()
    X = np.concatenate(list(blocks.values()), 1)
    for n_classes in (2, 3):
        rows = y < n_classes
        sub = {k: v[rows] for k, v in blocks.items()}
        choice = probe.Choice("both", 0.3, float("nan"), 0)
        fit = probe.fit_linear(sub, y[rows], choice, 0)
        scale, shift = probe.design(sub, "both", np.arange(rows.sum()))
        ref = LogisticRegression(C=0.3, max_iter=probe.MAX_ITER).fit(X[rows] * scale + shift, y[rows])
        W, b = probe.linear_layer([fit], [X.shape[1]], 4)  # a 4th class never seen: probability 0
        z = X @ W[0] + b[0]
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        np.testing.assert_allclose(p[:, :n_classes], ref.predict_proba(X * scale + shift), atol=1e-9)
        assert (p[:, n_classes:] < 1e-30).all()


def test_every_fit_and_score_runs_on_one_blas_thread_whatever_is_in_force(monkeypatch):
    seen = []

    class Recording(LogisticRegression):
        def fit(self, *args, **kwargs):
            seen.append(_blas_threads())
            return super().fit(*args, **kwargs)

        def predict_proba(self, X):
            seen.append(_blas_threads())
            return super().predict_proba(X)

    monkeypatch.setattr(probe, "LogisticRegression", Recording)
    blocks, y = _blocks()
    scores = []
    for outside in (1, 2):
        with threadpool_limits(outside, user_api="blas"):  # (a 1-core machine stays at 1)
            scores.append(probe.path_scores(blocks, "both", y, probe.folds(y, 3), 3, None))
            probe.fit_linear(blocks, y, probe.Choice("both", 1.0, float("nan"), 0), 3)
    assert seen and all(threads == {probe.BLAS_THREADS} for threads in seen)
    np.testing.assert_array_equal(scores[0], scores[1])


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_both_weighs_the_embedding_block_as_the_features_block():
    blocks, _ = _blocks()
    scale, shift = probe.design(blocks, "both", np.arange(90))
    Z = np.concatenate(list(blocks.values()), 1) * scale + shift
    assert Z[:, :12].var(0).sum() == pytest.approx(Z[:, 12:].var(0).sum())
    only = probe.design(blocks, "features", np.arange(90))[0]
    assert (only[:12] == 0).all() and (only[12:] > 0).all()


# --------------------------------------------------------------------------- the head


def _members(seed=0):
    K, N, D = 2, 60, 5
    gens = [torch.Generator().manual_seed(seed + k) for k in range(K)]
    enc = StackedMLP(K, [D, 6], gens, in_widths=[5, 4])
    anchors = torch.randn(K, N, D, generator=torch.Generator().manual_seed(9))
    anchors[1, :, 4:] = 0  # member 1's padding
    rows = torch.stack([torch.arange(0, 40, 2), torch.arange(1, 41, 2)])  # 20 labeled rows each
    y = (rows % 4 == 0).long() + (rows % 6 == 0).long()  # 3 classes
    return enc, anchors, rows, y


def _probe(enc, anchors, rows, y, seed=5):
    gens = [torch.Generator().manual_seed(seed + k) for k in range(2)]
    return heads.fit_classifier(enc, anchors, rows, y, gens, Config(head="probe"), 3, [5, 4])


def test_the_probe_reads_only_the_labeled_rows():
    enc, anchors, rows, y = _members()
    first = _probe(enc, anchors, rows, y)
    unlabeled = torch.ones(anchors.shape[1], dtype=torch.bool)
    unlabeled[rows[0]] = False
    changed = anchors.clone()
    changed[0, unlabeled] = torch.randn(int(unlabeled.sum()), 5) * 10 + 3  # other unlabeled rows
    changed[1] = changed[1, torch.randperm(60)]  # member 1: its unlabeled rows permuted...
    changed[1, rows[1]] = anchors[1, rows[1]]  # ...its labeled rows kept in place
    again = _probe(enc, changed, rows, y)
    for a, b in zip(first.head.parameters(), again.head.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert first.kind == "probe" and first.head.weights[0].shape == (2, 6 + 5, 3)
    assert (first.head.weights[0][1, 6 + 4 :] == 0).all()  # nothing read from member 1's padding


def test_the_probe_is_deterministic_from_the_members_generators():
    enc, anchors, rows, y = _members()
    a, b = _probe(enc, anchors, rows, y), _probe(enc, anchors, rows, y)
    torch.testing.assert_close(a.head.weights[0], b.head.weights[0], rtol=0, atol=0)


# --------------------------------------------------------------------------- the estimator


def _table(n=200, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    color = rng.choice(["red", "green", "blue"], size=n)
    y = ((a + (color == "red") * 1.5 + 0.3 * rng.normal(size=n)) > 0.5).astype(int)
    y = np.where(np.arange(n) % 3 == 0, y, -1)
    return pd.DataFrame({"a": a, "b": b, "color": color}), y


@parametrize_with_checks(
    [TCCClassifier("random", head="probe", random_state=0, **TINY)], expected_failed_checks=lambda e: EXPECTED_FAILED
)
def test_sklearn_estimator_checks_with_the_probe(estimator, check, monkeypatch):
    monkeypatch.setattr(probe, "STRENGTHS", probe.STRENGTHS[::4])  # 3 strengths: the same code, faster
    check(estimator)


def test_the_estimator_probe_is_deterministic_and_predicts_the_same_in_a_fresh_process(tmp_path):
    X, y = _table()
    clf = TCCClassifier("class", head="probe", random_state=3, **TINY).fit(X, y)
    again = TCCClassifier("class", head="probe", random_state=3, **TINY).fit(X, y)
    p = clf.predict_proba(X)
    np.testing.assert_array_equal(again.predict_proba(X), p)
    assert clf.head_kind_ == "probe" and np.allclose(p.sum(1), 1)
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(clf))
    X.to_pickle(tmp_path / "X.pkl")
    np.save(tmp_path / "p.npy", p)
    code = (
        "import pickle, numpy as np, pandas as pd; "
        f"m = pickle.loads(open({str(tmp_path / 'm.pkl')!r}, 'rb').read()); "
        f"X = pd.read_pickle({str(tmp_path / 'X.pkl')!r}); "
        f"np.testing.assert_array_equal(m.predict_proba(X), np.load({str(tmp_path / 'p.npy')!r}))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


# --------------------------------------------------------------------------- runner and baseline


def test_probe_and_logreg_cv_in_the_runner(bc_small):
    cfg = Config(
        seeds=(11, 22),
        methods=("no_pretrain", "random"),
        baselines=("logreg", "logreg_cv"),
        epochs=2,
        head="probe",
        progress=False,
    )
    run = run_dataset(bc_small, cfg)
    assert list(run.results.method) == ["no_pretrain", "random"] * 2 + ["logreg", "logreg_cv"] * 2
    assert run.results.accuracy.between(0.7, 1).all()
    frozen = run_dataset(bc_small, cfg.replace(head="frozen", baselines=("logreg_cv",)))
    pd.testing.assert_frame_equal(  # the baseline does not depend on the head
        frozen.results.query("method == 'logreg_cv'").reset_index(drop=True),
        run.results.query("method == 'logreg_cv'").reset_index(drop=True),
    )


def test_logreg_cv_chooses_its_strength_like_the_probe_on_the_features():
    blocks, y = _blocks()
    X = blocks["features"]
    model = probe.TunedLogisticRegression(random_state=7).fit(X, np.array(["a", "b", "c"])[y])
    assert model.choice_ == probe.choose({"features": X}, y, 7)
    assert set(model.predict(X)) <= {"a", "b", "c"} and model.score(X, np.array(["a", "b", "c"])[y]) > 0.6


# --------------------------------------------------------------------------- the report while measuring


def test_a_partly_measured_variant_is_compared_apart_and_the_rest_stays_whole():
    from tcclib.paper import heads

    rows = []
    for d in range(6):
        for s in (1, 2):
            for m, off in {"class": 0.0, "logreg": 1.0, "logreg_cv": 0.5, "class+probe": 2.0}.items():
                if m in ("class+probe", "logreg_cv") and d >= 3:
                    continue  # the new variants reached 3 of the 6 datasets so far
                acc = 0.6 + 0.05 * d + off / 100
                rows.append(dict(dataset=f"d{d}", seed=s, method=m, accuracy=acc, auroc=acc, epochs=100))
    res = pd.DataFrame(rows)
    assert heads.newer(res) == ["class+probe", "logreg_cv"]
    assert set(heads.everywhere(res)["method"]) == {"class", "logreg"}
    assert set(heads.complete(res)["dataset"]) == {"d0", "d1", "d2"}
    assert "**Partial**: class+probe, logreg_cv measured so far on 3 of these 6 datasets" in heads.coverage(res)
    words = "\n".join(heads.plain_answer(res))
    assert "above on 0 of 6 datasets" in words  # class against logreg over all six
    assert "class+probe (1.00), against logreg (2.00): above on 3 of 3 datasets" in words
    assert "against logreg_cv (3.00): above on 3 of 3 datasets" in words
    text = "\n".join(heads.section_lines(res, "x", "## t"))
    assert "### Partial: every variant on the 3 datasets" in text and "### accuracy (partial)" in text


# --------------------------------------------------------------------------- bad inputs


def test_logreg_cv_names_a_sample_weight_of_the_wrong_length_and_bad_weights():
    blocks, y = _blocks()
    X = blocks["features"]
    n = len(y)
    with pytest.raises(ValueError, match=rf"one weight per row of X is needed \({n} rows\), got shape \({n - 1},\)"):
        probe.TunedLogisticRegression().fit(X, y, sample_weight=np.ones(n - 1))
    with pytest.raises(ValueError, match="every weight must be finite and >= 0"):
        probe.TunedLogisticRegression().fit(X, y, sample_weight=np.r_[np.ones(n - 1), np.nan])


def test_logreg_cv_says_when_every_column_is_constant():
    y = np.r_[np.zeros(20), np.ones(20)]
    with pytest.raises(ValueError, match="X: every one of its 3 column.s. is constant over the 40 rows"):
        probe.TunedLogisticRegression().fit(np.full((40, 3), 2.5), y)
    X = np.full((40, 3), 2.5)
    X[:, 1] = np.arange(40)  # one column that varies is enough
    assert probe.TunedLogisticRegression().fit(X, y).score(X, y) > 0.9


def test_logreg_cv_fits_a_column_of_any_finite_scale_as_the_same_column_near_one(bc):
    """A column at 1e-308 gave NaN probabilities, one at 1e-320 scikit-learn's "Input X contains
    NaN" (its standardisation and the weights folded onto it overflowed): now the same column
    scaled by any power of two (exact, subnormals too) fits and predicts to the bit as near 1.
    The probe head reads preprocessed features, so a tiny raw column reaches it near 1: finite."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(120, 3)) * 64) / 64  # few bits: every scaling below is exact
    y = (X[:, 0] + 0.5 * rng.normal(size=120) > 0).astype(int)
    near_one = probe.TunedLogisticRegression().fit(X, y)
    for exponent in (-1060, -1023, -997, 1000, 1015):  # 3e-319 (subnormal), 4e-308, 3e-300, 4e301, 1e306
        scaled = X.copy()
        scaled[:, 0] = np.ldexp(X[:, 0], exponent)
        model = probe.TunedLogisticRegression().fit(scaled, y)
        assert model.choice_ == near_one.choice_, exponent
        np.testing.assert_array_equal(model.predict_proba(scaled), near_one.predict_proba(X))
    tiny = bc.X.iloc[:150, :5].copy()
    tiny.iloc[:, 0] *= 1e-320
    labels = bc.y.iloc[:150].to_numpy().copy()
    labels[50:] = -1
    clf = TCCClassifier("random", head="probe", random_state=0, verbose=False, **TINY).fit(tiny, labels)
    assert np.isfinite(clf.predict_proba(tiny)).all()
