"""Bad input is a clear error before any work starts (issue: "Nothing lost, nothing silent").

Damaged ARFF copies (checked against the MANIFEST.tsv beside them), unparsable, binary and empty
files, and tables the method cannot use (duplicate names, numbers written as text with a few
stray tokens, numbers too large for float32, classes too small to split, too few features to
corrupt, a one-hot width beyond the memory budget, no unlabeled rows).  Every table is tiny; the
ARFF cases copy one shared file into pytest's tmp_path and damage the copy there.
"""

import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tcclib.data import sources

DATA = Path(os.environ.get(sources.DATA_DIR_ENV) or Path(__file__).resolve().parents[2] / "shared/datasets/openml-cc18")
needs_data = pytest.mark.skipif(
    not (DATA / "MANIFEST.tsv").exists(),
    reason=f"no ARFF folder with MANIFEST.tsv at {DATA} (set {sources.DATA_DIR_ENV})",
)


# --------------------------------------------------------------------------- ARFF copies
@pytest.fixture
def folder(tmp_path):
    """A data folder with the shared MANIFEST.tsv and an intact copy of balance-scale (11.arff)."""
    shutil.copy(DATA / "MANIFEST.tsv", tmp_path / "MANIFEST.tsv")
    shutil.copy(DATA / "11.arff", tmp_path / "11.arff")
    (tmp_path / "11.arff").chmod(0o644)
    return tmp_path


def _lines(folder):
    lines = (folder / "11.arff").read_text(encoding="utf-8").splitlines(keepends=True)
    data = next(i for i, line in enumerate(lines) if line.lower().startswith("@data"))
    return lines, data


def _load(folder):
    return sources.load_dataset(11, data_dir=folder, allow_download=False)


@needs_data
def test_intact_copy_with_its_manifest_loads(folder):
    ds = _load(folder)
    assert ds.X.shape == (625, 4) and ds.source == str(folder / "11.arff")


@needs_data
def test_copy_cut_at_a_line_boundary_is_refused(folder):
    lines, data = _lines(folder)
    (folder / "11.arff").write_text("".join(lines[: data + 1 + 300]), encoding="utf-8")
    with pytest.raises(sources.DatasetError) as e:
        _load(folder)
    msg = str(e.value)
    assert str(folder / "11.arff") in msg
    assert "300 rows, MANIFEST.tsv says 625 (sha256 differs too)" in msg and "re-download" in msg


@needs_data
def test_copy_changed_in_place_is_refused_by_its_sha256(folder):
    lines, data = _lines(folder)
    lines[data + 1] = lines[data + 1].replace("1,1,1,1,B", "1,1,1,1,L")  # same shape, other data
    (folder / "11.arff").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(sources.DatasetError, match="sha256 .* differs from MANIFEST.tsv's .*rows and columns agree"):
        _load(folder)


@needs_data
def test_copy_with_a_column_less_is_refused(folder):
    lines, data = _lines(folder)
    header = [line for line in lines[:data] if not line.lower().startswith("@attribute right-distance")]
    rows = [",".join(r.split(",")[:3] + r.split(",")[4:]) for r in lines[data + 1 :]]
    (folder / "11.arff").write_text("".join(header + [lines[data]] + rows), encoding="utf-8")
    with pytest.raises(sources.DatasetError, match=r"11\.arff: 4 columns, MANIFEST.tsv says 5 \(sha256 differs too\)"):
        _load(folder)


@needs_data
def test_unlisted_file_or_no_manifest_loads_as_before(folder):
    lines, data = _lines(folder)
    (folder / "11.arff").write_text("".join(lines[: data + 1 + 300]), encoding="utf-8")
    (folder / "MANIFEST.tsv").unlink()
    assert len(_load(folder).X) == 300  # nothing to check against: loaded as it is
    m = pd.read_csv(DATA / "MANIFEST.tsv", sep="\t", dtype=str, keep_default_na=False)
    m[m.did != "11"].to_csv(folder / "MANIFEST.tsv", sep="\t", index=False)
    assert len(_load(folder).X) == 300


@needs_data
def test_parse_error_names_the_file_and_the_line(folder):
    lines, data = _lines(folder)
    lines[data + 3] = "1,2,3,4,5,L\n"  # one value too many
    (folder / "11.arff").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(sources.DatasetError) as e:
        _load(folder)
    msg = str(e.value)
    assert f"{folder / '11.arff'}, line {data + 4}: not a valid ARFF file" in msg and "BadDataFormat" in msg


@needs_data
def test_copy_cut_in_the_middle_of_a_line(folder):
    text = (folder / "11.arff").read_text(encoding="utf-8")
    (folder / "11.arff").write_text(text[: len(text) // 2 - 3], encoding="utf-8")
    with pytest.raises(sources.DatasetError, match="11.arff, line .*not a valid ARFF file.*sha256 differs"):
        _load(folder)


def test_binary_and_empty_files_are_clear_errors(tmp_path):
    (tmp_path / "11.arff").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(sources.DatasetError, match=r"11\.arff: not UTF-8 text \(byte 0x80 at offset 128\)"):
        _load(tmp_path)
    (tmp_path / "11.arff").write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(128, 256)))
    with pytest.raises(sources.DatasetError, match="gzip-compressed: unpack it"):
        _load(tmp_path)
    (tmp_path / "11.arff").write_bytes(b"")
    with pytest.raises(sources.DatasetError, match=r"11\.arff: the file is empty \(0 bytes\)"):
        _load(tmp_path)
    (tmp_path / "11.arff").write_text("\n\n% only a comment\n", encoding="utf-8")
    with pytest.raises(sources.DatasetError, match=r"11\.arff(, line \d+)?: not a valid ARFF file \(liac-arff Bad"):
        _load(tmp_path)


@needs_data
def test_unreadable_manifest_is_warned_about_and_the_file_loads(folder):
    (folder / "MANIFEST.tsv").write_text("name\tsomething\nx\ty\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="MANIFEST.tsv: unreadable.*loaded unchecked"):
        assert len(_load(folder).X) == 625


# --------------------------------------------------------------------------- table checks
def test_duplicate_column_names_are_a_clear_error():
    X = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a", "a", "b"])
    with pytest.raises(sources.DatasetError, match=r"custom: duplicate column name\(s\) 'a' \(2 columns\).*rename"):
        sources.from_frame(X, ["x", "y", "x", "y"])
    ds = sources.from_frame(X.set_axis(["a", "c", "b"], axis=1), ["x", "y", "x", "y"])
    with pytest.raises(sources.DatasetError, match="duplicate column name"):  # a Dataset built by hand
        sources.validate_dataset(sources.Dataset("mine", None, ds.X.set_axis(["a", "a", "b"], axis=1), ds.y))


def _numbers_as_text(n=200, seed=0):
    return [f"{v:.3f}" for v in np.random.default_rng(seed).normal(size=n)]


def test_numeric_text_column_with_a_stray_token_lists_the_tokens():
    a = _numbers_as_text()
    a[5] = "n/a"
    a[9] = "n/a"
    a[17] = "-"
    X = pd.DataFrame({"a": a, "b": np.arange(200.0)})
    with pytest.raises(sources.DatasetError) as e:
        sources.from_frame(X, ["x", "y"] * 100)
    msg = str(e.value)
    assert "'a' (197 of 200 values are numbers; not numbers: 'n/a' x2, '-' x1)" in msg
    assert "pd.to_numeric(X['a'], errors='coerce')" in msg and "astype('category')" in msg
    # the fixes the message names both work
    X1 = X.assign(a=pd.to_numeric(X.a, errors="coerce"))
    assert sources.from_frame(X1, ["x", "y"] * 100).X.a.dtype == np.float64
    X2 = X.assign(a=X.a.astype("category"))
    assert isinstance(sources.from_frame(X2, ["x", "y"] * 100).X.a.dtype, pd.CategoricalDtype)


def test_text_columns_of_words_or_of_numbers_only():
    words = pd.DataFrame({"w": ["red", "green", "1", "blue"] * 25, "b": np.arange(100.0)})
    assert isinstance(sources.from_frame(words, ["x", "y"] * 50).X.w.dtype, pd.CategoricalDtype)  # mostly words
    numbers = pd.DataFrame({"t": _numbers_as_text(100), "b": np.arange(100.0)})
    with pytest.warns(UserWarning, match=r"text column\(s\) 't' \(9\d levels\) hold only numbers"):
        ds = sources.from_frame(numbers, ["x", "y"] * 50)
    assert isinstance(ds.X.t.dtype, pd.CategoricalDtype)  # categorical as before, but not silently
    mostly = _numbers_as_text(10)
    mostly[:2] = ["?", "?"]  # 80 % numbers: not "a few" stray tokens
    assert sources.numeric_text_tokens(pd.Series(mostly)) is None
    assert list(sources.numeric_text_tokens(pd.Series(["1", "2", "nan", None] * 5 + ["x"]))) == [1]


@pytest.mark.parametrize(
    "value,pattern",
    [
        (np.inf, r"custom: non-finite numbers \(inf\) in column\(s\) big; 2 cell\(s\) in all: replace them with NaN"),
        (
            1e308,
            r"custom: numbers too large for float32 \(\|x\| > 3.4e\+38\) in column\(s\) big; 2 cell\(s\), "
            r"the largest 1e\+308",
        ),
        (4e38, r"too large for float32 .* column\(s\) big; 2 cell\(s\), the largest 4e\+38"),
    ],
    ids=["inf", "1e308", "beyond-float32"],
)
def test_infinite_and_huge_numbers_are_clear_errors(value, pattern):
    X = pd.DataFrame({"ok": np.arange(6.0), "big": [1.0, value, 2.0, -value, 3.0, np.nan]})
    with pytest.raises(sources.DatasetError, match=pattern):
        sources.from_frame(X, ["x", "y"] * 3)


def test_largest_float32_still_loads():
    f32 = float(np.finfo(np.float32).max)
    X = pd.DataFrame({"ok": np.arange(6.0), "big": [1.0, f32, 2.0, -f32, 3.0, np.nan]})
    assert sources.from_frame(X, ["x", "y"] * 3).X.big.max() == f32


# --------------------------------------------------------------------------- split sizes
def _classes(sizes, seed=0):
    """A two-feature table with ``sizes[c]`` rows of class c ('a', 'b', ...)."""
    y = np.repeat([chr(ord("a") + i) for i in range(len(sizes))], sizes)
    X = pd.DataFrame(np.random.default_rng(seed).normal(size=(len(y), 2)), columns=["u", "v"])
    return sources.from_frame(X, y, name="tiny")


def test_minimum_rows_per_class_follows_the_fractions():
    from tcclib.data.preprocess import min_rows_per_class

    assert min_rows_per_class(0.2, 0.3) == 5  # the published split: 1/0.2 = 5, 1/(0.8 x 0.3) = 4.2
    assert min_rows_per_class(0.2, 0.1) == 13  # 1/(0.8 x 0.1) = 12.5
    assert min_rows_per_class(0.5, 0.05) == 40
    assert min_rows_per_class(0.2, 1.0) == 5
    assert min_rows_per_class(0.9, 1.0) == 10  # one training row: 1/0.1


def test_too_small_class_names_the_class_and_the_minimum():
    from tcclib.data.preprocess import prepare

    with pytest.raises(sources.DatasetError) as e:
        prepare(_classes([40, 3]), [1])  # today: splits silently, class 'b' gets 1 labeled row or none
    msg = str(e.value)
    assert msg.startswith(
        "tiny: class 'b' has 3 row(s); the stratified 80/20 train/test split with 30 % of "
        "the training rows labeled needs at least 5 rows per class"
    )
    with pytest.raises(sources.DatasetError, match=r"class 'c' has 1 row\(s\) \(class 'b' 4\).*at least 13 rows"):
        prepare(_classes([60, 4, 1]), [1], labeled_fraction=0.1)


def test_too_many_classes_for_the_test_split_is_not_a_scikit_learn_message():
    from tcclib.data.preprocess import prepare

    # today: scikit-learn's "The test_size = 2 should be greater or equal to the number of classes = 5"
    with pytest.raises(sources.DatasetError, match=r"tiny: class 'a' has 2 row\(s\) \(class 'b' 2, .*at least 5 rows"):
        prepare(_classes([2] * 5), [1])


def test_classes_at_the_minimum_split_into_test_and_labeled_rows():
    from tcclib.data.preprocess import prepare

    for sizes, lf in (([5, 5, 5], 0.3), ([5, 30, 7, 5], 0.3), ([13, 13], 0.1)):
        prep = prepare(_classes(sizes), range(6), labeled_fraction=lf)
        for sp in prep.splits:
            assert (np.bincount(sp.y_test, minlength=len(sizes)) >= 1).all()
            assert (np.bincount(sp.y_train[sp.labeled], minlength=len(sizes)) >= 1).all()


def test_run_dataset_refuses_small_classes_before_training(monkeypatch):
    from tcclib.running import train

    monkeypatch.setattr(train, "run_prepared", lambda *a, **k: pytest.fail("training started"))
    with pytest.raises(sources.DatasetError, match="class 'b' has 4 row"):
        train.run_dataset(_classes([30, 4]), train.Config(seeds=(1,), epochs=1, progress=False))


# --------------------------------------------------------------------------- features to corrupt
@pytest.mark.parametrize("rate", [0.05, 0.4, 1.0])
def test_one_feature_cannot_be_corrupted_at_any_rate(rate):
    from tcclib.method.config import Config, ConfigError

    with pytest.raises(ConfigError) as e:
        Config(corruption_rate=rate).corrupted_count(1)
    msg = str(e.value)
    assert "corruption needs at least 2 features, got 1" in msg and "no rate can help" in msg
    assert "lower the rate" not in msg and "no_pretrain" in msg


def test_too_high_rate_names_a_rate_that_works():
    from tcclib.method.config import Config, ConfigError

    with pytest.raises(ConfigError, match=r"corrupts 3 of 3 .*intact; lower the rate to at most 2/3 \(e\.g\. 0\.666\)"):
        Config(corruption_rate=0.7).corrupted_count(3)
    assert Config(corruption_rate=0.666).corrupted_count(3) == 2


def test_run_dataset_names_the_seed_and_the_dropped_columns(monkeypatch):
    from tcclib.method.config import ConfigError
    from tcclib.running import train

    monkeypatch.setattr(train, "run_prepared", lambda *a, **k: pytest.fail("training started"))
    X = pd.DataFrame({"u": np.random.default_rng(0).normal(size=40), "const": 1.0})
    y = np.where(X.u > 0, "p", "n")
    cfg = train.Config(seeds=(3,), methods=("random",), epochs=1, progress=False)
    with pytest.raises(ConfigError) as e:
        train.run_dataset(sources.from_frame(X, y, name="narrow"), cfg)
    msg = str(e.value)
    assert msg.startswith("narrow: seed 3: corruption needs at least 2 features, got 1")
    assert "1 of 2 columns are constant or missing on this seed's training split and dropped: const" in msg


# --------------------------------------------------------------------------- memory budget
@pytest.fixture(scope="module")
def wide():
    """12,000 rows with a 10,000-level categorical column 'zip' (two numeric ones besides), prepared
    for the paper's 8 seeds."""
    from tcclib.data.preprocess import prepare
    from tcclib.method.config import Config

    rng = np.random.default_rng(0)
    n = 12_000
    X = pd.DataFrame(
        {"zip": pd.Categorical((np.arange(n) % 10_000).astype(str)), "u": rng.normal(size=n), "v": rng.normal(size=n)}
    )
    ds = sources.from_frame(X, np.where(X.u > 0, "p", "n"), name="wide")
    return ds, prepare(ds, Config().seeds)


def test_memory_estimate_of_a_10000_level_column(wide):
    from tcclib.method.config import Config
    from tcclib.method.inputs import estimate_memory

    _, prep = wide
    est = estimate_memory(prep, Config())
    assert (est.members, est.pretrained, est.n_train) == (48, 40, 9600)
    assert est.column_widths["u"] == est.column_widths["v"] == 1
    assert est.width == sum(est.column_widths.values()) > 5000  # the levels seen in training
    assert est.gib > 40  # 48 members x 9600 rows x > 5000 one-hot columns, float32
    assert est.without(["zip"]).gib < 2  # (mostly the 48 members' 256-wide embeddings of 12,000 rows)
    # fewer members, smaller estimate; no pretraining, much smaller
    assert estimate_memory(prep, Config(methods=("no_pretrain", "random"))).gib < est.gib / 3
    assert estimate_memory(prep, Config(epochs=0)).pretrained == 0


def test_memory_budget_is_a_clear_error_before_training(wide, monkeypatch):
    from tcclib.method.inputs import MEMORY_BUDGET_ENV
    from tcclib.running import train

    ds, _ = wide
    monkeypatch.delenv(MEMORY_BUDGET_ENV, raising=False)
    monkeypatch.setattr(train, "run_prepared", lambda *a, **k: pytest.fail("training started"))
    monkeypatch.setattr(train, "stored_or_computed", lambda *a, **k: pytest.fail("importances started"))
    with pytest.raises(sources.DatasetError) as e:
        train.run_dataset(ds, train.Config(progress=False))
    msg = str(e.value)
    assert msg.startswith("wide: training would allocate about ")
    assert "(48 members = 8 seeds x 6 methods, 40 of them pretraining; 9600 training rows" in msg
    assert "more than the memory budget of 8 GiB ($TCC_MEMORY_BUDGET_GB)" in msg
    assert "categorical column(s) 'zip' (" in msg and "Group rare levels" in msg and "fewer seeds" in msg


def test_memory_budget_can_be_raised_or_set_by_environment(wide, monkeypatch):
    from tcclib.method.config import Config, ConfigError
    from tcclib.method.inputs import MEMORY_BUDGET_ENV, check_memory, memory_budget_gb

    _, prep = wide
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "inf")
    assert check_memory(prep, Config()).gib > 40
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "0.01")
    with pytest.raises(sources.DatasetError, match=r"budget of 0.01 GiB"):
        check_memory(prep, Config(seeds=(1,), methods=("no_pretrain",)))
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(ConfigError, match=r"\$TCC_MEMORY_BUDGET_GB='lots': expected a number of GiB > 0"):
        memory_budget_gb()
    monkeypatch.delenv(MEMORY_BUDGET_ENV)
    assert memory_budget_gb() == 8.0


def test_no_wide_column_to_blame(monkeypatch):
    from tcclib.data.preprocess import prepare
    from tcclib.method.config import Config
    from tcclib.method.inputs import check_memory

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(50, 4)), columns=list("abcd"))
    prep = prepare(sources.from_frame(X, ["x", "y"] * 25, name="numbers"), [1])
    with pytest.raises(sources.DatasetError, match="No single wide column is to blame"):
        check_memory(prep, Config(), budget_gb=1e-6)


@needs_data
def test_paper_datasets_fit_the_default_budget():
    from tcclib.data.preprocess import prepare
    from tcclib.method.config import Config
    from tcclib.method.inputs import estimate_memory

    ds = sources.load_dataset("mfeat-fourier", data_dir=DATA, allow_download=False)  # the widest of the 30
    assert estimate_memory(prepare(ds, Config().seeds[:2]), Config(seeds=Config().seeds[:2])).gib < 0.5


# --------------------------------------------------------------------------- no unlabeled rows
def test_all_rows_labeled_gives_nan_pseudo_accuracy_with_a_warning():
    from tcclib.running import train

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(60, 3)), columns=list("abc"))
    ds = sources.from_frame(X, np.where(X.a > 0, "p", "n"), name="all-labeled")
    cfg = train.Config(
        seeds=(1,), methods=("class",), epochs=2, pseudo_every=1, head_epochs=1, batch_size=64, progress=False
    )
    with pytest.warns(UserWarning, match=r"all-labeled: labeled_fraction=1: every training row is labeled.*NaN"):
        run = train.run_dataset(ds, cfg.replace(labeled_fraction=1.0))
    assert len(run.pseudo) == 2 and run.pseudo.pseudo_accuracy.isna().all()  # today: 0.0, as if all wrong
    assert run.results.n_labeled.tolist() == [48]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        part = train.run_dataset(ds, cfg)  # with unlabeled rows: a real accuracy, no warning
    assert part.pseudo.pseudo_accuracy.between(0, 1).all()


def test_labeled_subset_that_cannot_be_stratified_is_warned_about():
    from tcclib.data.preprocess import prepare

    # 90 % labeled of 20 training rows leaves 2 unlabeled rows for 5 classes: not stratifiable
    with pytest.warns(
        UserWarning,
        match=r"tiny: seed 1: the labeled subset \(0.9 of 20 training rows\) "
        r"cannot be stratified over 5 classes",
    ):
        sp = prepare(_classes([5] * 5), [1], labeled_fraction=0.9).splits[0]
    assert sp.labeled.sum() == 18
