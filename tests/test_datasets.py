"""Dataset registry, ARFF loading checked against the shared MANIFEST, and clear errors on bad input.

The ARFF folder is ``$TCC_DATA_DIR`` if set, else ``<repo>/../shared/datasets/openml-cc18``;
the ARFF tests are skipped when it is missing. No test touches the network.
"""

import os
from pathlib import Path

import arff
import numpy as np
import pandas as pd
import pytest

from tcclib.data import sources
from tcclib.util import paths

DATA = Path(os.environ.get(sources.DATA_DIR_ENV) or Path(__file__).resolve().parents[2] / "shared/datasets/openml-cc18")
MANIFEST = DATA / "MANIFEST.tsv"
needs_data = pytest.mark.skipif(
    not MANIFEST.exists(), reason=f"no ARFF folder with MANIFEST.tsv at {DATA} (set {sources.DATA_DIR_ENV})"
)


def _manifest_rows():
    if not MANIFEST.exists():
        return []
    m = pd.read_csv(MANIFEST, sep="\t", dtype=str, keep_default_na=False)
    return [r for _, r in m.iterrows()]


@needs_data
@pytest.mark.parametrize("row", _manifest_rows(), ids=lambda r: f"{r.did}-{r['name']}")
def test_every_arff_loads_with_the_manifest_facts(row):
    ds = sources.load_dataset(int(row.did), data_dir=DATA, allow_download=False)
    ignore = [c for c in row.ignore_columns.split(";") if c]
    assert (ds.name, ds.did, ds.source) == (row["name"], int(row.did), str(DATA / f"{row.did}.arff"))
    assert len(ds.X) == len(ds.y) == int(row.rows)
    assert ds.X.shape[1] == int(row.cols) - 1 - len(ignore)
    assert not set(ignore) & set(ds.X.columns) and row.target_name not in ds.X.columns
    assert ds.y.nunique() == int(row.n_classes) and isinstance(ds.y.dtype, pd.CategoricalDtype)
    assert all(isinstance(t, pd.CategoricalDtype) or t == np.float64 for t in ds.X.dtypes)

    # the raw file, read independently: the MANIFEST counts include the target and ignored columns
    with open(DATA / f"{row.did}.arff", encoding="utf-8") as f:
        raw = arff.load(f)
    types = dict(raw["attributes"])
    names = [a for a, _ in raw["attributes"]]
    nominal_dropped = sum(isinstance(types[c], list) for c in ignore + [row.target_name])
    assert sum(isinstance(t, pd.CategoricalDtype) for t in ds.X.dtypes) == int(row.n_nominal) - nominal_dropped
    dropped_idx = [names.index(c) for c in ignore]
    missing_dropped = sum(r[i] is None for r in raw["data"] for i in dropped_idx)
    assert int(ds.X.isna().sum().sum()) + int(ds.y.isna().sum()) == int(row.n_missing_cells) - missing_dropped
    # nominal levels keep the declared order
    assert list(ds.y.cat.categories) == types[row.target_name]
    for c in ds.X.columns:
        if isinstance(types[c], list):
            assert list(ds.X[c].cat.categories) == types[c]


@needs_data
def test_quoted_attribute_names_and_ignored_columns():
    cmc = sources.load_dataset("cmc", data_dir=DATA, allow_download=False)
    assert "Wifes_now_working%3F" in cmc.X.columns
    mice = sources.load_dataset(40966, data_dir=DATA, allow_download=False)
    assert mice.X.shape == (1080, 77) and "MouseID" not in mice.X.columns


@needs_data
def test_env_var_is_the_default_data_dir(monkeypatch):
    monkeypatch.setenv(sources.DATA_DIR_ENV, str(DATA))
    ds = sources.load_dataset("diabetes", allow_download=False)
    assert ds.X.shape == (768, 8) and ds.source.endswith("37.arff")


def test_breast_cancer_loads_offline():
    ds = sources.load_dataset("breast_cancer")
    assert ds.X.shape == (569, 30) and ds.did is None and ds.source == "sklearn"
    assert (ds.X.dtypes == np.float64).all()
    assert list(ds.y.cat.categories) == ["malignant", "benign"] and len(ds.y) == 569


def test_registry_lists_the_30_paper_datasets_and_breast_cancer():
    reg = sources.list_datasets()
    assert list(reg.columns) == ["name", "did", "target", "ignore_columns", "n_classes"]
    assert len(reg) == 31 and reg.name.is_unique and reg.did.dropna().is_unique
    assert reg.did.isna().sum() == 1


def test_resolve_by_name_id_or_string():
    assert (
        sources.resolve("credit-g")
        == sources.resolve(31)
        == sources.resolve("31")
        == sources.resolve(" 31 ")
        == ("credit-g", 31)
    )
    assert sources.resolve("MICEPROTEIN") == ("MiceProtein", 40966)
    assert sources.resolve("breast_cancer") == ("breast_cancer", None)


def test_unknown_dataset_suggests_a_close_name():
    with pytest.raises(sources.UnknownDatasetError, match="credit-g") as e:
        sources.load_dataset("credit_g")
    assert "list_datasets" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(sources.UnknownDatasetError):
        sources.resolve(999999)


def test_missing_local_file_is_a_clear_error(tmp_path):
    with pytest.raises(sources.DataUnavailableError) as e:
        sources.load_dataset("diabetes", data_dir=tmp_path, allow_download=False)
    msg = str(e.value)
    assert str(tmp_path) in msg and "37.arff" in msg and sources.DATA_DIR_ENV in msg and "diabetes" in msg
    assert isinstance(e.value, FileNotFoundError)


def test_no_data_dir_set_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv(sources.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(sources, "SHARED_DATA_DIR", str(tmp_path / "no-shared-here"))
    with pytest.raises(sources.DataUnavailableError, match="no data directory set"):
        sources.load_dataset(37, allow_download=False)


def test_real_openml_path_without_a_local_copy(tmp_path):
    """The real openml-python download: offline (as here) it must end in one clear error; with
    network it must give the same table as the local ARFF copy."""
    import openml

    old = openml.config._root_cache_directory
    openml.config.set_root_cache_directory(str(tmp_path / "openml-cache"))
    try:
        ds = sources.load_dataset("diabetes", data_dir=tmp_path / "empty")
    except sources.DataUnavailableError as e:
        msg = str(e)
        assert "could not be reached" in msg and "empty" in msg and sources.DATA_DIR_ENV in msg
    else:
        assert ds.source == "openml" and ds.X.shape == (768, 8) and ds.y.nunique() == 2
    finally:
        openml.config.set_root_cache_directory(str(old))


def test_openml_path_types_and_drops_ignored_columns(monkeypatch, tmp_path):
    import openml

    class Fake:
        def get_data(self, target):
            X = pd.DataFrame(
                {
                    "Study": [1, 1, 2, 2],
                    "Run": [1, 2, 3, 4],
                    "a": [1, 2, 3, 4],
                    "s": pd.Categorical(["u", "v", "u", None]),
                }
            )
            return X, pd.Series(["0", "1", "0", "1"], name=target), [], list(X.columns)

    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *a, **k: Fake())
    ds = sources.load_dataset(40994, data_dir=tmp_path)
    assert list(ds.X.columns) == ["a", "s"] and ds.source == "openml"
    assert ds.X["a"].dtype == np.float64 and isinstance(ds.X["s"].dtype, pd.CategoricalDtype)
    assert ds.y.name == "outcome" and isinstance(ds.y.dtype, pd.CategoricalDtype)


def test_data_dir_setting_precedence(monkeypatch, tmp_path):
    """The argument, else $TCC_DATA_DIR, else the copies beside the checkout (as the sweep finds
    them), else none."""
    monkeypatch.setenv(sources.DATA_DIR_ENV, str(tmp_path))
    assert sources.data_dir() == tmp_path
    assert sources.data_dir("/elsewhere") == Path("/elsewhere")
    monkeypatch.delenv(sources.DATA_DIR_ENV)
    monkeypatch.setattr(sources, "SHARED_DATA_DIR", str(tmp_path))
    assert sources.data_dir() == tmp_path
    monkeypatch.setattr(sources, "SHARED_DATA_DIR", str(tmp_path / "none"))
    assert sources.data_dir() is None


def test_a_plain_shell_beside_shared_reads_the_local_copy(monkeypatch):
    beside = paths.resolve(sources.SHARED_DATA_DIR)
    if not (beside / "37.arff").is_file():
        pytest.skip(f"no local copies beside the checkout ({beside})")
    monkeypatch.delenv(sources.DATA_DIR_ENV, raising=False)
    ds = sources.load_dataset("diabetes", allow_download=False)
    assert ds.X.shape == (768, 8) and ds.source == str((beside / "37.arff").resolve())


@pytest.mark.parametrize(
    "X,y,pattern",
    [
        (pd.DataFrame({"a": []}), [], "empty"),
        (pd.DataFrame(index=range(4)), ["a", "b", "a", "b"], "empty"),
        (pd.DataFrame({"a": [1.0, 2, 3, 4]}), ["x", "x", "x", "x"], "one class only \\('x'\\)"),
        (pd.DataFrame({"a": [1.0, 2, 3, 4]}), ["x", None, "y", "x"], "1 missing target"),
        (pd.DataFrame({"a": [1.0, np.inf, 3, 4], "b": [1.0, 2, 3, 4]}), ["x", "y", "y", "x"], "inf.*column\\(s\\) a;"),
        (pd.DataFrame({"a": [1.0, 2, 3, 4]}), ["x", "y", "x"], "4 rows but 3"),
    ],
    ids=["no-rows", "no-columns", "one-class", "missing-target", "inf", "length"],
)
def test_bad_tables_are_clear_errors(X, y, pattern):
    with pytest.raises(sources.DatasetError, match=pattern):
        sources.from_frame(X, y)


def test_from_frame_types_columns_and_allows_missing_features():
    X = pd.DataFrame(
        {"n": [1, 2, 3, 4], "f": [0.5, np.nan, 1, 2], "s": ["a", "b", "a", None], "b": [True, False, True, True]},
        index=[10, 11, 12, 13],
    )
    y = pd.Series(["p", "q", "p", "q"], index=[0, 1, 2, 3], name="label")  # matched by position
    ds = sources.from_frame(X, y, name="mine")
    assert ds.name == "mine" and ds.did is None and ds.source == "frame"
    assert ds.X["n"].dtype == ds.X["f"].dtype == np.float64
    assert isinstance(ds.X["s"].dtype, pd.CategoricalDtype) and isinstance(ds.X["b"].dtype, pd.CategoricalDtype)
    assert list(ds.y) == ["p", "q", "p", "q"] and ds.y.name == "label"
    assert sources.summary(ds)["missing cells"] == 2
    assert sources.validate_dataset(ds) is ds
