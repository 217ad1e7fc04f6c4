"""Dataset registry, ARFF loading against the shared MANIFEST, and clear errors on bad input."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tcclib import datasets as D

DATA = Path(os.environ.get(D.DATA_DIR_ENV) or Path(__file__).resolve().parents[2] / "shared/datasets/openml-cc18")
MANIFEST = DATA / "MANIFEST.tsv"
needs_data = pytest.mark.skipif(not MANIFEST.exists(), reason=f"no ARFF folder at {DATA} (set {D.DATA_DIR_ENV})")


def _manifest():
    if not MANIFEST.exists():
        return []
    m = pd.read_csv(MANIFEST, sep="\t", dtype=str, keep_default_na=False)
    return [r for _, r in m.iterrows()]


@needs_data
@pytest.mark.parametrize("row", _manifest(), ids=lambda r: f"{r.did}-{r['name']}")
def test_every_arff_loads_with_the_manifest_shape(row):
    ds = D.load_dataset(int(row.did), data_dir=DATA, allow_download=False)
    ignore = [c for c in row.ignore_columns.split(";") if c]
    assert ds.name == row["name"] and ds.did == int(row.did)
    assert len(ds.X) == int(row.rows) == len(ds.y)
    assert ds.X.shape[1] == int(row.cols) - 1 - len(ignore)
    assert not set(ignore) & set(ds.X.columns) and row.target_name not in ds.X.columns
    assert ds.y.nunique() == int(row.n_classes)
    # nominal columns: the MANIFEST counts the target and ignored columns too
    import arff

    attrs = dict(arff.load(open(DATA / f"{row.did}.arff"))["attributes"])
    nominal_dropped = sum(isinstance(attrs[c], list) for c in ignore + [row.target_name])
    n_cat = sum(isinstance(t, pd.CategoricalDtype) for t in ds.X.dtypes)
    assert n_cat == int(row.n_nominal) - nominal_dropped
    assert all(isinstance(t, pd.CategoricalDtype) or t == np.float64 for t in ds.X.dtypes)
    # missing cells: all of them, less those in the ignored columns (the target has none)
    full, _ = D._frame_from_arff(DATA / f"{row.did}.arff")
    missing_ignored = int(full[ignore].isna().sum().sum()) if ignore else 0
    assert int(ds.X.isna().sum().sum()) == int(row.n_missing_cells) - missing_ignored


def test_breast_cancer_loads_offline():
    ds = D.load_dataset("breast_cancer")
    assert ds.X.shape == (569, 30) and ds.did is None
    assert list(ds.y.cat.categories) == ["malignant", "benign"]


def test_registry_has_the_30_paper_datasets_and_breast_cancer():
    reg = D.list_datasets()
    assert len(reg) == 31 and reg.name.is_unique
    assert D.resolve("credit-g") == ("credit-g", 31)
    assert D.resolve(31) == D.resolve("31") == ("credit-g", 31)
    assert D.resolve("MICEPROTEIN") == ("MiceProtein", 40966)


def test_unknown_dataset_suggests_a_close_name():
    with pytest.raises(D.UnknownDatasetError, match="credit-g") as e:
        D.load_dataset("credit_g")
    assert "list_datasets" in str(e.value)
    with pytest.raises(D.UnknownDatasetError):
        D.resolve(999999)


def test_missing_local_file_is_a_clear_error(tmp_path):
    with pytest.raises(D.DataUnavailableError) as e:
        D.load_dataset("diabetes", data_dir=tmp_path, allow_download=False)
    msg = str(e.value)
    assert str(tmp_path) in msg and "37.arff" in msg and D.DATA_DIR_ENV in msg


def test_data_dir_setting_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv(D.DATA_DIR_ENV, str(tmp_path))
    assert D.resolve_data_dir() == tmp_path
    assert D.resolve_data_dir("/elsewhere") == Path("/elsewhere")
    monkeypatch.delenv(D.DATA_DIR_ENV)
    assert D.resolve_data_dir() is None


@pytest.mark.parametrize("X,y,word", [
    (pd.DataFrame({"a": []}), [], "empty"),
    (pd.DataFrame(index=range(4)), ["a", "b", "a", "b"], "empty"),
    (pd.DataFrame({"a": [1.0, 2, 3, 4]}), ["x", "x", "x", "x"], "one class"),
    (pd.DataFrame({"a": [1.0, 2, 3, 4]}), ["x", None, "y", "x"], "missing target"),
    (pd.DataFrame({"a": [1.0, np.inf, 3, 4]}), ["x", "y", "y", "x"], "non-finite"),
])
def test_bad_tables_are_clear_errors(X, y, word):
    with pytest.raises(D.DatasetError, match=word):
        D.from_frame(X, y)


def test_from_frame_types_columns():
    X = pd.DataFrame({"n": [1, 2, 3, 4], "s": ["a", "b", "a", None], "b": [True, False, True, True]})
    ds = D.from_frame(X, ["p", "q", "p", "q"])
    assert ds.X["n"].dtype == np.float64
    assert isinstance(ds.X["s"].dtype, pd.CategoricalDtype) and isinstance(ds.X["b"].dtype, pd.CategoricalDtype)
    assert D.summary(ds)["missing cells"] == 1
