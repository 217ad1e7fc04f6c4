"""TCCClassifier: scikit-learn's estimator checks, the -1 convention, pipelines, pickling, new rows,
and the same training core as the benchmark runner."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from tcclib import TCCClassifier
from tcclib.data.preprocess import ColumnError, prepare
from tcclib.data.sources import load_dataset
from tcclib.method.config import PAPER_SEEDS, Config, ConfigError
from tcclib.method.metrics import accuracy
from tcclib.running.train import run_prepared

SMALL = dict(epochs=2, head_epochs=40, hidden_dim=32, encoder_depth=2, batch_size=64)

# Checks that do not apply to a semi-supervised classifier, with why:
EXPECTED_FAILED = {
    # it fits with the class labels -1 and 1: -1 marks an unlabeled row here (scikit-learn's
    # semi-supervised convention, as in SelfTrainingClassifier), so one class is left
    "check_classifiers_classes": "-1 is the unlabeled-row marker, not a class label",
    # a weight is not a repetition here: a repeated row is one more anchor of the (unweighted,
    # unsupervised) contrastive pretraining and one more row of the head's mini-batch epochs,
    # while a weight only scales the row's cross-entropy (as in scikit-learn's SGD estimators)
    "check_sample_weight_equivalence_on_dense_data": "weights scale the head's loss; repeated rows also pretrain",
}


@parametrize_with_checks(
    [TCCClassifier("random", random_state=0, **SMALL)], expected_failed_checks=lambda est: EXPECTED_FAILED
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _table(n=240, seed=0):
    """A small table with numeric, categorical (text) and missing values; the class depends on both."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    color = rng.choice(["red", "green", "blue"], size=n)
    y = ((a + (color == "red") * 1.5 + 0.3 * rng.normal(size=n)) > 0.5).astype(int)
    X = pd.DataFrame({"a": a, "b": b, "color": color, "c": rng.normal(size=n)})
    X.loc[rng.random(n) < 0.1, "b"] = np.nan
    X.loc[rng.random(n) < 0.05, "color"] = None
    return X, y


def test_unlabeled_rows_are_minus_one():
    X, y = _table()
    yl = y.copy()
    yl[::2] = -1
    clf = TCCClassifier("class", random_state=3, **SMALL).fit(X, yl)
    assert list(clf.classes_) == [0, 1]  # -1 is not a class
    assert set(np.unique(clf.predict(X))) <= {0, 1}
    # the head learns from labeled rows only: relabelling the unlabeled rows changes nothing
    y2 = yl.copy()
    y2[::2] = 1 - y[::2]
    with_wrong = TCCClassifier("class", random_state=3, **SMALL).fit(X, np.where(yl == -1, -1, y2))
    np.testing.assert_array_equal(clf.predict_proba(X), with_wrong.predict_proba(X))
    # ... but labelling them does (more labeled rows)
    full = TCCClassifier("class", random_state=3, **SMALL).fit(X, y)
    assert not np.array_equal(clf.predict_proba(X), full.predict_proba(X))
    # pseudo-labels of every row after pretraining; labeled rows keep theirs
    assert clf.pseudo_labels_.shape == (len(X),)
    np.testing.assert_array_equal(clf.pseudo_labels_[1::2], y[1::2])
    # string classes with -1 for unlabeled rows
    ys = np.array(["no", "yes"], dtype=object)[y].astype(object)
    ys[::2] = -1
    clf_s = TCCClassifier("random", random_state=3, **SMALL).fit(X, ys)
    assert list(clf_s.classes_) == ["no", "yes"]
    with pytest.raises(ValueError, match="1 class among its"):
        TCCClassifier("random", **SMALL).fit(X, np.where(np.arange(len(y)) < 5, 1, -1))


def test_pipeline_clone_cross_val_and_grid_search():
    X, y = _table(160)
    pipe = Pipeline(
        [("id", FunctionTransformer(validate=False)), ("clf", TCCClassifier("random", random_state=0, **SMALL))]
    )
    scores = cross_val_score(pipe, X, y, cv=2)
    assert scores.shape == (2,) and (scores > 0.5).all()
    grid = GridSearchCV(pipe, {"clf__method": ["no_pretrain", "random"], "clf__corruption_rate": [0.3, 0.6]}, cv=2).fit(
        X, y
    )
    assert grid.best_params_["clf__method"] in ("no_pretrain", "random")
    assert len(grid.cv_results_["params"]) == 4
    c = clone(TCCClassifier("class_least", epochs=7))
    assert c.get_params()["method"] == "class_least" and c.get_params()["epochs"] == 7
    assert not hasattr(c, "encoder_")


def test_pickle_and_joblib_round_trips_give_identical_probabilities(tmp_path):
    X, y = _table()
    clf = TCCClassifier("class", random_state=1, **SMALL).fit(X, y)
    p = clf.predict_proba(X)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), p)
    joblib.dump(clf, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict_proba(X), p)
    np.testing.assert_array_equal(again.transform(X), clf.transform(X))


def test_new_rows_unseen_category_missing_values_reordered_and_missing_columns():
    X, y = _table()
    clf = TCCClassifier("class", random_state=2, **SMALL).fit(X, y)
    new = X.iloc[:6].copy()
    base = clf.predict_proba(new)
    # reordered columns: the same rows, the same answers
    np.testing.assert_array_equal(clf.predict_proba(new[["c", "color", "b", "a"]]), base)
    # missing values are imputed with the training statistics (mean / mode)
    cols = clf.columns_
    filled = new.copy()
    filled["b"] = cols.fill[1]
    filled["color"] = cols.fill[2]
    holes = new.copy()
    holes["b"] = np.nan
    holes["color"] = None
    np.testing.assert_allclose(clf.predict_proba(holes), clf.predict_proba(filled), rtol=0, atol=1e-6)
    # an unseen category encodes as all zeros (handle_unknown="ignore"): finite, like no colour at all
    unseen = new.copy()
    unseen["color"] = "purple"
    emb = clf.transform(unseen)
    assert np.isfinite(emb).all() and np.isfinite(clf.predict_proba(unseen)).all()
    assert not np.allclose(emb, clf.transform(new))
    # an extra column is ignored, with a warning
    with pytest.warns(UserWarning, match="'extra'"):
        np.testing.assert_array_equal(clf.predict_proba(new.assign(extra=1.0)), base)
    # a missing column: a clear error naming it
    with pytest.raises(ColumnError, match="'color'.*missing from X"):
        clf.predict(new.drop(columns="color"))
    # a numeric column that holds text
    with pytest.raises(ColumnError, match="'a' was numeric in training"):
        clf.predict(new.assign(a="high"))


def test_a_frame_with_integer_column_labels_is_matched_by_its_labels_too():
    """``pd.DataFrame(array)`` labels its columns 0, 1, ...: scikit-learn keeps no names for them,
    but its columns are still matched by label (reordered: the same answers; other labels: the
    missing ones named), never by position."""
    X, y = _table()
    X = X[["a", "b", "c"]].set_axis([0, 1, 2], axis=1)
    clf = TCCClassifier("class", random_state=2, **SMALL).fit(X, y)
    assert clf.column_labels_ == ["0", "1", "2"] and not hasattr(clf, "feature_names_in_")
    base = clf.predict_proba(X.iloc[:6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no warning about names sklearn does not keep)
        np.testing.assert_array_equal(clf.predict_proba(X.iloc[:6][[2, 0, 1]]), base)
        np.testing.assert_array_equal(clf.predict_proba(X.iloc[:6].to_numpy()), base)
    with pytest.raises(ColumnError, match="'0', '1', '2' missing from X"):
        clf.predict(X.set_axis([7, 8, 9], axis=1))


def test_bad_settings_are_clear_errors_before_any_work():
    X, y = _table(60)
    with pytest.raises(ConfigError, match="method: 'oracle'.*true class"):
        TCCClassifier("oracle").fit(X, y)
    with pytest.raises(ConfigError, match="method: 'clas' is not one"):
        TCCClassifier("clas").fit(X, y)
    with pytest.raises(ConfigError, match="epochs: must be >= 0"):
        TCCClassifier(epochs=-1).fit(X, y)
    with pytest.raises(ConfigError, match="corruption needs at least 2 features"):
        TCCClassifier("random", **SMALL).fit(X[["a"]], y)


@pytest.mark.parametrize("method", ["class", "class_least"])
def test_the_estimator_trains_like_the_runner_member(method):
    """Same rows, same seed, same settings: the estimator and the benchmark runner's member
    (one training core) give the same test accuracy and the same probabilities."""
    ds = load_dataset("breast_cancer")
    seed = PAPER_SEEDS[0]
    # 10 trees a feature's importance model (published: 100): the same for both, a fifth of the time
    cfg = Config(seeds=(seed,), methods=(method,), epochs=3, head_epochs=10, xgb_trees=10, progress=False)
    prep = prepare(ds, cfg.seeds)
    sp = prep.splits[0]
    importance = None
    if method != "class":
        from tcclib.method.correlation import importance_matrix

        importance = importance_matrix(sp, cfg)[None]
    run = run_prepared(prep, cfg, importance)
    codes = ds.y.cat.codes.to_numpy()
    y_fit = np.where(sp.labeled, codes[sp.train_index], -1)
    clf = TCCClassifier(method, epochs=3, head_epochs=10, xgb_trees=10, random_state=seed)
    clf.fit(ds.X.iloc[sp.train_index], y_fit)
    prob = clf.predict_proba(ds.X.iloc[sp.test_index])
    expected = run.results.set_index("method").loc[method, "accuracy"]
    assert accuracy(codes[sp.test_index], prob) == expected
    if importance is not None:
        np.testing.assert_array_equal(clf.importance_, importance[0])
    # the losses per epoch are the member's
    np.testing.assert_array_equal(clf.history_["loss"].to_numpy(), run.history["loss"].to_numpy())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_model_fitted_on_a_gpu_loads_and_predicts_on_a_cpu_only_machine(tmp_path):
    X, y = _table()
    clf = TCCClassifier("class", device="cuda", random_state=0, **SMALL).fit(X, y)
    joblib.dump(clf, tmp_path / "gpu.joblib")
    X.to_pickle(tmp_path / "X.pkl")
    np.save(tmp_path / "p.npy", clf.predict_proba(X))
    code = (
        "import joblib, numpy as np, pandas as pd, torch; assert not torch.cuda.is_available(); "
        f"m = joblib.load({str(tmp_path / 'gpu.joblib')!r}); X = pd.read_pickle({str(tmp_path / 'X.pkl')!r}); "
        f"np.testing.assert_allclose(m.predict_proba(X), np.load({str(tmp_path / 'p.npy')!r}), atol=1e-5)"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""}
    )


def test_your_own_table_compares_every_method_with_the_baselines_on_one_split(tmp_path):
    from tcclib.data.sources import load_dataset
    from tcclib.running import own

    X, y = own.synthetic_table(n_rows=300, n_features=6, cat_fraction=0.34, n_classes=3, missing=0.05, seed=1)
    assert X.select_dtypes(exclude="number").shape[1] == 2 and X.isna().any().any() and y.nunique() == 3
    path = own.example_table(tmp_path / "t.csv", n_rows=300, n_features=6, seed=1)
    ds = load_dataset(f"{path}:target")
    cmp = own.compare(
        ds,
        ["no_pretrain", "class", "class_least", "class_most"],
        ["logreg", "xgboost"],
        seed=5,
        epochs=2,
        head_epochs=20,
        hidden_dim=32,
        xgb_trees=5,
    )
    assert list(cmp.results.method) == ["no_pretrain", "class", "class_least", "class_most", "logreg", "xgboost"]
    assert cmp.results.n_labeled.nunique() == 1 and cmp.results.n_test.nunique() == 1  # the same rows
    assert cmp.results.accuracy.between(0, 1).all() and (cmp.results.fit_s > 0).all()
    # the correlation methods share one importance matrix; the models predict class names
    np.testing.assert_array_equal(cmp.models["class_least"].importance_, cmp.models["class_most"].importance_)
    assert set(cmp.models["class"].predict(ds.X.iloc[:20])) <= set(cmp.classes)
    with pytest.raises(ConfigError, match="method: 'oracle'"):
        own.compare(ds, ["oracle"], [], epochs=1)


def test_your_own_table_takes_a_head_after_the_method():
    """``random+probe`` in notebook 08's ``methods`` is ``TCCClassifier("random", head="probe")``,
    the variant the head comparison recommends; a misspelled head is refused before any work."""
    from tcclib.data.sources import from_frame
    from tcclib.running import own

    X, y = own.synthetic_table(n_rows=240, n_features=5, n_classes=2, seed=3)
    ds = from_frame(X, y, name="t")
    small = dict(seed=1, epochs=2, head_epochs=5, hidden_dim=16)
    cmp = own.compare(ds, ["random", "random+probe"], ["logreg"], **small)
    assert list(cmp.results.method) == ["random", "random+probe", "logreg"]
    assert cmp.models["random"].head == "frozen" and cmp.models["random+probe"].head == "probe"
    assert cmp.results.accuracy.between(0, 1).all()
    with pytest.raises(ConfigError, match="prob"):
        own.compare(ds, ["random+prob"], [], **small)
