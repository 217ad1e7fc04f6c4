"""TCCClassifier as a practitioner feeds it, on tables that ship with scikit-learn (wine, iris,
digits; none of the paper's 30): partly labeled ``y`` (10 % labeled) with every unlabeled-row
marker, marker-like text refused, ``score`` and model selection on the labeled rows, column types
(categorical codes, dates, durations, text, numbers beyond float32, mixed object arrays),
``n_jobs``, ``verbose="auto"`` and a pickle round trip in a fresh process.

Epochs are tiny: these tests check inputs and conventions, not accuracy."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import GridSearchCV, cross_val_score

from tcclib import TCCClassifier
from tcclib.data import columns
from tcclib.method import estimator, heads
from tcclib.method.config import ConfigError

TINY = dict(epochs=1, head_epochs=20, hidden_dim=16, encoder_depth=2, batch_size=64, random_state=0)
WINE_CLASSES = np.array(["barolo", "grignolino", "barbera"], dtype=object)


def _wine():
    X, y = load_wine(return_X_y=True, as_frame=True)
    unlabeled = np.random.default_rng(0).random(len(y)) > 0.1  # about 10 % labeled
    return X, y.to_numpy(), unlabeled


def _marked(marker: str, y: np.ndarray, unlabeled: np.ndarray):
    """``y`` with its unlabeled rows marked as a user would (integer or text classes)."""
    text = WINE_CLASSES[y]
    return {
        "int -1": np.where(unlabeled, -1, y),
        "float NaN": np.where(unlabeled, np.nan, y),
        "Int64 pd.NA": pd.Series(y).astype("Int64").mask(unlabeled),
        "list with None": [None if u else int(v) for u, v in zip(unlabeled, y)],
        "text None": pd.Series(np.where(unlabeled, None, text)),
        "text NaN": pd.Series(text).mask(unlabeled),
        "string pd.NA": pd.Series(text).astype("string").mask(unlabeled),
        "text with -1 (object)": np.where(unlabeled, -1, text).astype(object),
        "text with -1 (list)": [-1 if u else t for u, t in zip(unlabeled, text)],
        "category NaN": pd.Series(text).astype("category").mask(unlabeled),
    }[marker]


MARKERS = [
    "int -1",
    "float NaN",
    "Int64 pd.NA",
    "list with None",
    "text None",
    "text NaN",
    "string pd.NA",
    "text with -1 (object)",
    "text with -1 (list)",
    "category NaN",
]


@pytest.mark.parametrize("marker", MARKERS)
def test_every_marker_fits_predicts_scores_and_grid_searches_on_ten_percent_labels(marker):
    X, y, unlabeled = _wine()
    ym = _marked(marker, y, unlabeled)
    clf = TCCClassifier("random", **TINY).fit(X, ym)
    text = "text" in marker or "string" in marker or "category" in marker
    expected = sorted(set(WINE_CLASSES[y[~unlabeled]])) if text else sorted(set(y[~unlabeled]))
    assert list(clf.classes_) == expected  # no marker became a class, integers stay integers
    assert clf.classes_.dtype.kind == ("O" if text else "i")
    pred = clf.predict(X)
    assert set(pred) <= set(expected)
    # score: accuracy on the labeled rows only
    truth = (WINE_CLASSES[y] if text else y)[~unlabeled]
    assert clf.score(X, ym) == pytest.approx(accuracy_score(truth, pred[~unlabeled]))
    # model selection: every marker with the semi-supervised splitter, and a scorer on labeled rows
    grid = GridSearchCV(
        TCCClassifier("random", **TINY),
        {"corruption_rate": [0.3, 0.6]},
        cv=estimator.SemiSupervisedKFold(2, shuffle=True, random_state=0),
        scoring=estimator.labeled_scorer("balanced_accuracy"),
    ).fit(X, ym)
    assert len(grid.cv_results_["params"]) == 2 and np.isfinite(grid.cv_results_["mean_test_score"]).all()
    assert set(grid.predict(X)) <= set(expected)


def test_integer_labels_with_minus_one_work_with_scikit_learns_default_splitter():
    X, y, unlabeled = _wine()
    ym = np.where(unlabeled, -1, y)
    scores = cross_val_score(TCCClassifier("random", **TINY), X, ym, cv=3)
    # each fold's score is the accuracy of its labeled rows (the -1 rows are not counted as wrong)
    assert np.isfinite(scores).all()
    clf = TCCClassifier("random", **TINY).fit(X, ym)
    counted_as_wrong = accuracy_score(ym, clf.predict(X))
    assert clf.score(X, ym) > counted_as_wrong
    grid = GridSearchCV(TCCClassifier("no_pretrain", **TINY), {"head_epochs": [5, 20]}, cv=2).fit(X, ym)
    assert grid.best_params_["head_epochs"] in (5, 20)


@pytest.mark.parametrize("token", ["-1", "", " nan", "NA", "None", "?", "N/A", "null", "NaT"])
def test_text_that_looks_like_a_marker_is_refused_not_made_a_class(token):
    X, y, unlabeled = _wine()
    ym = np.where(unlabeled, token, WINE_CLASSES[y]).astype(object)
    with pytest.raises(
        ValueError,
        match=rf"text label\(s\) {re.escape(repr(token))} .* look like a marker.*Mark an unlabeled row with the number",
    ):
        TCCClassifier("random", **TINY).fit(X, ym)


def test_numpy_turning_minus_one_into_text_is_refused_and_a_list_keeps_it_a_number():
    X, y, unlabeled = _wine()
    as_numpy = np.array([-1 if u else t for u, t in zip(unlabeled, WINE_CLASSES[y])])  # numpy makes '-1' text
    assert as_numpy.dtype.kind == "U"
    with pytest.raises(ValueError, match=r"'-1' \(\d+ rows\).*numpy makes -1 in a list of text labels"):
        TCCClassifier("random", **TINY).fit(X, as_numpy)
    with pytest.raises(ValueError, match=r"'-1'"):
        TCCClassifier("random", **TINY).fit(X, y).score(X, as_numpy)


def test_mixed_label_types_infinity_and_no_labeled_rows_are_clear_errors():
    X, y, _ = _wine()
    mixed = WINE_CLASSES[y].copy()
    mixed[:5] = 7
    with pytest.raises(ValueError, match="mixes class labels of different types"):
        TCCClassifier("random", **TINY).fit(X, mixed)
    with pytest.raises(ValueError, match="infinity"):
        TCCClassifier("random", **TINY).fit(X, np.where(np.arange(len(y)) < 3, np.inf, y))
    with pytest.raises(
        ValueError, match=r"0 class among its 0 labeled rows \(unlabeled rows: -1, NaN, None or pd.NA\)"
    ):
        TCCClassifier("random", **TINY).fit(X, np.full(len(y), np.nan))
    clf = TCCClassifier("random", **TINY).fit(X, y)
    with pytest.raises(ValueError, match="no labeled row"):
        clf.score(X, [None] * len(y))


def test_score_and_labeled_scorer_leave_unlabeled_rows_and_their_weights_out():
    X, y = load_iris(return_X_y=True)
    ym = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    clf = TCCClassifier("random", **TINY).fit(X, ym)
    pred = clf.predict(X)
    lab = ym != -1
    w = np.linspace(0.5, 2, len(y))
    assert clf.score(X, ym, sample_weight=w) == pytest.approx(accuracy_score(y[lab], pred[lab], sample_weight=w[lab]))
    scorer = estimator.labeled_scorer("balanced_accuracy")
    assert scorer(clf, X, ym) == pytest.approx(balanced_accuracy_score(y[lab], pred[lab]))


def _typed_table():
    """Wine with the column types a practitioner's table has: an integer-coded category, text,
    a date, a timestamp with times of day, a duration and missing values."""
    X, y, unlabeled = _wine()
    rng = np.random.default_rng(1)
    n = len(X)
    X = X.iloc[:, :6].copy()
    X["region_code"] = (y * 3 + rng.integers(0, 3, n)) * 100  # codes, not quantities
    X["cellar"] = rng.choice(["north", "south", "east"], n)
    X["bottled"] = pd.Timestamp("2019-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D")
    X["tasted"] = pd.Timestamp("2024-05-01 09:00", tz="Europe/Rome") + pd.to_timedelta(
        rng.integers(0, 600, n), unit="min"
    )
    X["aged"] = pd.to_timedelta(rng.integers(100, 2000, n), unit="D")
    X.loc[rng.random(n) < 0.05, "bottled"] = pd.NaT
    return X, y, unlabeled


def test_datetime_and_duration_columns_become_documented_numeric_parts():
    X, y, unlabeled = _typed_table()
    ym = np.where(unlabeled, -1, y)
    with pytest.warns(
        columns.DatetimeNote, match=r"'bottled' -> bottled_year, bottled_month, bottled_day, bottled_weekday"
    ):
        clf = TCCClassifier("random", **TINY).fit(X, ym)
    assert clf.datetime_parts_ == {
        "bottled": ("year", "month", "day", "weekday"),
        "tasted": ("year", "month", "day", "weekday", "hour"),
    }
    names = clf.columns_.names
    assert {"bottled_year", "tasted_hour", "aged"} <= set(names) and "bottled" not in names
    assert not clf.columns_.is_cat[names.index("bottled_day")] and not clf.columns_.is_cat[names.index("aged")]
    # new dates at prediction are ordinary numbers, and a date column given as text is parsed
    new = X.iloc[:5].copy()
    new["bottled"] = pd.Timestamp("2031-07-04")
    assert np.isfinite(clf.predict_proba(new)).all()
    as_text = new.assign(bottled=new["bottled"].dt.strftime("%Y-%m-%d"))
    np.testing.assert_allclose(clf.predict_proba(as_text), clf.predict_proba(new), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="'bottled' held dates in training"):
        clf.predict(new.assign(bottled="soon"))


def test_categorical_features_by_name_index_mask_and_from_dtype():
    X, y, unlabeled = _typed_table()
    X = X.drop(columns=["bottled", "tasted", "aged"])
    ym = np.where(unlabeled, -1, y)
    j = list(X.columns).index("region_code")
    fitted = {}
    for how in (["region_code"], [j], np.arange(X.shape[1]) == j):
        clf = TCCClassifier("random", categorical_features=how, **TINY).fit(X, ym)
        assert clf.categorical_features_ == ["region_code"] and clf.columns_.is_cat[j]
        fitted[str(how)] = clf.predict_proba(X)
    first, *others = fitted.values()
    for p in others:
        np.testing.assert_array_equal(p, first)  # the three spellings are one model
    for default in ("from_dtype", None):
        clf = TCCClassifier("random", categorical_features=default, **TINY).fit(X, ym)
        assert not clf.columns_.is_cat[j] and clf.columns_.is_cat[list(X.columns).index("cellar")]
    # an unseen code at prediction encodes as all zeros, like an unseen text category
    clf = TCCClassifier("random", categorical_features=["region_code"], **TINY).fit(X, ym)
    assert np.isfinite(clf.predict_proba(X.iloc[:3].assign(region_code=123456))).all()
    # a text column given as its integer codes matches no level at all: refused, not all unseen
    codes = X.assign(cellar=pd.Categorical(X.cellar).codes)
    with pytest.raises(ValueError, match=r"column 'cellar' was categorical in training with levels .*from_codes"):
        clf.predict(codes)
    assert np.isfinite(clf.predict_proba(X.iloc[:1].assign(cellar="a cellar never seen"))).all()


@pytest.mark.parametrize(
    "bad, match",
    [
        (["regoin_code"], r"no column\(s\) 'regoin_code' in X \(did you mean 'region_code'"),
        ([99], r"column index\(es\) \[99\] outside 0 .. 7"),
        ([True, False], "a boolean mask needs one value per column of X"),
        ("region_code", "expected 'from_dtype', None, or a list"),
        ([1.5], "give column names, integer indices or a boolean mask"),
    ],
)
def test_bad_categorical_features_are_clear_errors(bad, match):
    X, y, _ = _typed_table()
    X = X.drop(columns=["bottled", "tasted", "aged"])
    with pytest.raises(ConfigError, match=match):
        TCCClassifier("random", categorical_features=bad, **TINY).fit(X, y)
    with pytest.raises(ConfigError, match="column names need a DataFrame X"):
        TCCClassifier("random", categorical_features=["a"], **TINY).fit(X.select_dtypes("number").to_numpy(), y)


@pytest.mark.parametrize("value", [1e300, -1e39, np.inf])
def test_values_beyond_float32_are_refused_with_the_column_named(value):
    X, y, _ = _wine()
    bad = X.assign(flow=X["alcohol"].where(np.arange(len(X)) != 4, value))
    with pytest.raises(ValueError, match=r"column\(s\) 'flow'"):
        TCCClassifier("random", **TINY).fit(bad, y)
    arr = bad.to_numpy()
    with pytest.raises(ValueError, match=r"column\(s\) x13 \(0-based indices 13\)"):
        TCCClassifier("random", **TINY).fit(arr, y)
    clf = TCCClassifier("random", **TINY).fit(X.assign(flow=X["alcohol"]), y)
    with pytest.raises(ValueError, match=r"column\(s\) 'flow' that standardise to infinity"):
        clf.predict(bad)
    if not np.isfinite(value):  # an array at prediction: its column named as at fit
        fitted = TCCClassifier("random", **TINY).fit(X.assign(flow=X["alcohol"]).to_numpy(), y)
        with pytest.raises(ValueError, match=r"contains infinity in column\(s\) x13"):
            fitted.predict(arr)


def test_a_mixed_object_array_is_read_like_the_dataframe_of_the_same_columns():
    X, y, unlabeled = _typed_table()
    X = X[["alcohol", "malic_acid", "cellar", "ash"]]
    ym = np.where(unlabeled, -1, y)
    arr = X.to_numpy(dtype=object)
    frame = pd.DataFrame(arr.tolist(), columns=["x0", "x1", "x2", "x3"]).infer_objects()
    from_array = TCCClassifier("random", **TINY).fit(arr, ym)
    from_frame = TCCClassifier("random", **TINY).fit(frame, ym)
    assert list(from_array.columns_.is_cat) == [False, False, True, False]
    np.testing.assert_array_equal(from_array.predict_proba(arr), from_frame.predict_proba(frame))
    np.testing.assert_array_equal(from_array.transform(arr[:7]), from_frame.transform(frame.iloc[:7]))
    bad = arr.copy()
    bad[0, 0] = {"not": "a value"}
    with pytest.raises(TypeError):
        TCCClassifier("random", **TINY).fit(bad, ym)


class _Watching(TCCClassifier):
    """Records the threads torch and XGBoost are given while the training runs."""

    def _train(self, *args):
        self.seen_threads_ = (torch.get_num_threads(), os.environ.get("TCC_THREADS"))
        return super()._train(*args)


def test_n_jobs_holds_training_to_its_threads_and_restores_the_process():
    X, y = load_iris(return_X_y=True)
    before = (torch.get_num_threads(), os.environ.get("TCC_THREADS"), os.environ.get("OMP_NUM_THREADS"))
    clf = _Watching("random", n_jobs=1, **TINY).fit(X, y)
    assert clf.seen_threads_ == (1, "1")
    assert (torch.get_num_threads(), os.environ.get("TCC_THREADS"), os.environ.get("OMP_NUM_THREADS")) == before
    clf.predict(X)  # prediction runs on n_jobs threads too, and restores them
    assert torch.get_num_threads() == before[0]
    assert _Watching("random", n_jobs=None, **TINY).fit(X, y).seen_threads_ == (before[0], before[1])
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ConfigError, match="n_jobs: expected None or a non-zero whole number"):
            TCCClassifier("random", n_jobs=bad, **TINY).fit(X, y)


def test_verbose_auto_is_quiet_for_small_fits_and_on_for_long_ones(capfd):
    X, y = load_iris(return_X_y=True)
    clf = TCCClassifier("random", **TINY)
    assert clf.get_params()["verbose"] == "auto"
    clf.fit(X, y)
    assert "pretraining" not in capfd.readouterr().err
    TCCClassifier("random", verbose=True, **TINY).fit(X, y)
    assert "pretraining" in capfd.readouterr().err
    default = TCCClassifier().config(0)
    assert (
        estimator.expected_fit_seconds(150, 4, default)
        < estimator.AUTO_PROGRESS_SECONDS
        < (estimator.expected_fit_seconds(20_000, 60, default))
    )
    with pytest.raises(ConfigError, match="verbose: expected True, False or 'auto'"):
        TCCClassifier("random", verbose="loud", **TINY).fit(X, y)


def test_the_same_random_state_gives_the_same_model_on_the_cpu():
    X, y = load_digits(return_X_y=True)
    X, y = X[:300], np.where(np.arange(300) % 10 == 0, y[:300], -1)
    a = TCCClassifier("class", **TINY).fit(X, y)
    b = TCCClassifier("class", **TINY).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_pickle_round_trip_in_a_fresh_process(tmp_path):
    X, y, unlabeled = _typed_table()
    ym = pd.Series(WINE_CLASSES[y]).astype("string").mask(unlabeled)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", columns.DatetimeNote)
        clf = TCCClassifier("class", categorical_features=["region_code"], **TINY).fit(X, ym)
    joblib.dump(clf, tmp_path / "m.joblib")
    X.to_pickle(tmp_path / "X.pkl")
    np.save(tmp_path / "p.npy", clf.predict_proba(X))
    np.save(tmp_path / "c.npy", clf.predict(X).astype(str))
    code = (
        "import joblib, numpy as np, pandas as pd; "
        f"m = joblib.load({str(tmp_path / 'm.joblib')!r}); X = pd.read_pickle({str(tmp_path / 'X.pkl')!r}); "
        f"np.testing.assert_array_equal(m.predict_proba(X), np.load({str(tmp_path / 'p.npy')!r})); "
        f"np.testing.assert_array_equal(m.predict(X).astype(str), np.load({str(tmp_path / 'c.npy')!r})); "
        "print(m.datetime_parts_['tasted'][-1], m.categorical_features_)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["hour", "['region_code']"]


@pytest.mark.parametrize("size", [1e307, 1e-300, 1e-320])
def test_uniform_weights_of_any_size_give_the_model_of_weights_of_one(size):
    """1e307 on every row overflowed the labeled total (a different model); 1e-320 ended in
    "training diverged ... lower lr".  Uniform weights are now the unweighted fit, exactly."""
    X, y, unlabeled = _wine()
    ym = np.where(unlabeled, -1, y)
    ones = TCCClassifier("random", **TINY).fit(X, ym, sample_weight=np.ones(len(y)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or underflow on the way
        sized = TCCClassifier("random", **TINY).fit(X, ym, sample_weight=np.full(len(y), size))
        by_class = TCCClassifier("random", class_weight=dict.fromkeys(range(3), size), **TINY).fit(X, ym)
    np.testing.assert_array_equal(sized.predict_proba(X), ones.predict_proba(X))
    np.testing.assert_array_equal(by_class.predict_proba(X), ones.predict_proba(X))


def test_huge_class_weights_times_huge_sample_weights_do_not_overflow():
    y = np.array([0, 0, 1, 1, -1])
    w = heads.row_weights(y, y >= 0, np.full(5, 1e307), np.array([1e307, 3e307]))
    np.testing.assert_allclose(w, [0.5, 0.5, 1.5, 1.5, 0.0])


def test_a_setting_the_method_never_reads_warns_and_a_bernoulli_mask_takes_any_rate():
    """VIME, the autoencoder and SubTab corrupt each feature with a probability of their own (a
    Bernoulli mask) and read no temperature: ``corruption_rate`` or ``temperature`` set away from
    the default warns that it trains as at the default (a grid over it fits one model again and
    again), and a rate that would corrupt every feature under a fixed count is no refusal for them."""
    X, y, _ = _wine()
    with pytest.warns(UserWarning, match=r"corruption_rate=0\.99 is not read by method 'vime' \(its where rule"):
        at_rate = TCCClassifier("vime", corruption_rate=0.99, **TINY).fit(X, y).predict_proba(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(TCCClassifier("vime", **TINY).fit(X, y).predict_proba(X), at_rate)
        TCCClassifier("random", corruption_rate=0.5, temperature=0.5, **TINY).fit(X, y)  # read: no warning
    with pytest.warns(UserWarning, match=r"temperature=0\.5 is not read by method 'dae' \(its objective 'dae'"):
        TCCClassifier("dae", temperature=0.5, **TINY).fit(X, y)
    with pytest.raises(ConfigError, match="corrupts 13 of 13 features"):
        TCCClassifier("random", corruption_rate=0.99, **TINY).fit(X, y)
    one = TCCClassifier("vime", **TINY).fit(X[["alcohol"]], y)  # one feature: a mask still draws
    assert np.isfinite(one.predict_proba(X[["alcohol"]])).all()


def test_set_params_after_fit_leaves_the_fitted_models_predictions_alone():
    X, y, _ = _wine()
    clf = TCCClassifier("random", **TINY).fit(X, y)
    before = clf.predict_proba(X)
    clf.set_params(matmul_precision="bf16")  # (for the next fit)
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    assert clf.computed_ == {"device": "cpu", "matmul_precision": "highest"}


@pytest.mark.parametrize(
    "given, words",
    [
        (dict(method="Vime"), "(did you mean 'vime'?)"),
        (dict(random_state=1.5), "random_state: an int in 0 .. 4294967295, a numpy RandomState or None, got 1.5"),
        (dict(random_state="0"), "random_state: an int"),
    ],
)
def test_a_misspelt_method_or_a_bad_random_state_is_named_with_the_fix(given, words):
    X, y, _ = _wine()
    with pytest.raises(ConfigError) as e:
        TCCClassifier(**{**TINY, **given}).fit(X, y)
    assert words in str(e.value)


def test_the_probe_head_says_which_design_its_cross_validation_chose():
    """``probe_choice_``: the block (embedding, features or both) and ``C`` the probe's
    cross-validation chose, so that a user sees when the head reads no pretrained embedding; it
    survives a pickle; other heads have none."""
    X, y, _ = _wine()
    clf = TCCClassifier("vime", head="probe", **TINY).fit(X, y)
    choice = clf.probe_choice_
    assert choice.block in ("embedding", "features", "both") and choice.C > 0 and choice.folds >= 2
    assert pickle.loads(pickle.dumps(clf)).probe_choice_ == choice
    assert TCCClassifier("vime", **TINY).fit(X, y).probe_choice_ is None
