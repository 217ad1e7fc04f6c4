"""The paper's datasets: a registry of the 30 OpenML-CC18 ids, loading, and input checks.

* ``breast_cancer`` is scikit-learn's bundled copy (the paper's Figure 1-2 dataset; offline).
* An OpenML id is read from ``<data_dir>/<did>.arff`` when that file exists (``data_dir``
  argument, else ``$TCC_DATA_DIR``), parsed with liac-arff, the parser openml-python uses, and
  the columns OpenML leaves out (row-id / ignore attributes) are dropped as OpenML does.
  Otherwise openml-python downloads it (``openml.datasets.get_dataset``, with openml's cache).
* Nominal columns come back as pandas ``category`` (declared level order), numeric as float64,
  the target as a ``category`` series.
* :func:`from_frame` wraps a practitioner's own pandas table with the same checks.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

DATA_DIR_ENV = "TCC_DATA_DIR"
BREAST_CANCER = "breast_cancer"


class DatasetError(ValueError):
    """The table cannot be used (empty, one class, missing target values, non-finite numbers)."""


class UnknownDatasetError(DatasetError):
    """The name or id is not in the registry."""


class DataUnavailableError(FileNotFoundError):
    """No local copy, and OpenML could not be reached."""


@dataclass(frozen=True)
class Dataset:
    name: str
    did: int | None
    X: pd.DataFrame
    y: pd.Series
    source: str = ""

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, did={self.did}, rows={len(self.X)}, "
                f"features={self.X.shape[1]}, classes={self.y.nunique()}, source={self.source!r})")


@lru_cache(maxsize=1)
def _registry() -> pd.DataFrame:
    with resources.files("tcclib").joinpath("data/openml_cc18.csv").open() as f:
        reg = pd.read_csv(f, dtype={"ignore_columns": str}, keep_default_na=False)
    return reg


def list_datasets() -> pd.DataFrame:
    """All known datasets: the 30 OpenML-CC18 ones of the paper and ``breast_cancer``."""
    bc = pd.DataFrame([dict(did=pd.NA, name=BREAST_CANCER, target="target", ignore_columns="",
                            n_classes=2, n_rows=569)])
    out = pd.concat([bc, _registry()], ignore_index=True)
    out["did"] = out["did"].astype("Int64")
    return out[["name", "did", "target", "ignore_columns", "n_classes", "n_rows"]]


def resolve(name_or_did) -> tuple[str, int | None]:
    """``(name, did)`` for a registry name, an OpenML id, or an id as a string."""
    reg = _registry()
    key = str(name_or_did).strip()
    if key == BREAST_CANCER:
        return BREAST_CANCER, None
    if key.isdigit() and int(key) in set(reg.did):
        row = reg.loc[reg.did == int(key)].iloc[0]
        return str(row["name"]), int(row.did)
    hit = reg.loc[reg.name.str.lower() == key.lower()]
    if len(hit):
        return str(hit.iloc[0]["name"]), int(hit.iloc[0].did)
    names = [BREAST_CANCER] + list(reg.name)
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UnknownDatasetError(
        f"unknown dataset {name_or_did!r}.{hint} tcclib.datasets.list_datasets() lists the "
        f"{len(names)} known ones (names or OpenML ids); for your own table use from_frame(X, y).")


def resolve_data_dir(explicit=None) -> Path | None:
    """The folder of ``<did>.arff`` files: the argument, else ``$TCC_DATA_DIR``, else None."""
    d = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV)
    return Path(d).expanduser() if d else None


def _frame_from_arff(path: Path) -> tuple[pd.DataFrame, dict]:
    import arff  # liac-arff

    with open(path) as f:
        d = arff.load(f)
    cols = [a for a, _ in d["attributes"]]
    df = pd.DataFrame(d["data"], columns=cols)
    for a, t in d["attributes"]:
        if isinstance(t, list):
            df[a] = pd.Categorical(df[a], categories=t)
        else:
            df[a] = pd.to_numeric(df[a], errors="coerce").astype("float64")
    return df, dict(d["attributes"])


def _load_arff(name: str, did: int, path: Path) -> Dataset:
    reg = _registry().set_index("did").loc[did]
    df, _ = _frame_from_arff(path)
    target = reg["target"]
    if target not in df.columns:
        raise DatasetError(f"{path}: target column {target!r} not found")
    ignore = [c for c in str(reg["ignore_columns"]).split(";") if c]
    y = df.pop(target)
    X = df.drop(columns=[c for c in ignore if c in df.columns])
    return Dataset(name, did, X, y, str(path))


def _load_openml(name: str, did: int, searched: Path | None) -> Dataset:
    where = f"no file {did}.arff in {searched}" if searched else f"no data directory set (${DATA_DIR_ENV})"
    try:
        import openml

        ds = openml.datasets.get_dataset(did, download_data=True, download_qualities=False,
                                         download_features_meta_data=False)
        X, y, _, _ = ds.get_data(target=ds.default_target_attribute)  # DataFrame in openml 0.15 and 0.16
    except Exception as e:  # noqa: BLE001 - any failure to reach OpenML gets one clear message
        raise DataUnavailableError(
            f"dataset {name} (OpenML {did}): {where}, and OpenML could not be reached "
            f"({type(e).__name__}: {str(e)[:200]}). Set ${DATA_DIR_ENV} or pass data_dir= to a "
            f"folder holding {did}.arff.") from e
    X = X.copy()
    for c in X.columns:
        if not isinstance(X[c].dtype, pd.CategoricalDtype):
            X[c] = pd.to_numeric(X[c], errors="coerce").astype("float64")
    return Dataset(name, did, X, pd.Series(y).astype("category"), "openml")


def load_dataset(name_or_did, data_dir=None, allow_download: bool = True) -> Dataset:
    """Load a dataset of the registry (see the module docstring for where it comes from)."""
    name, did = resolve(name_or_did)
    if did is None:
        from sklearn.datasets import load_breast_cancer

        b = load_breast_cancer(as_frame=True)
        y = pd.Series(pd.Categorical.from_codes(b.target, list(b.target_names)), name="target")
        ds = Dataset(BREAST_CANCER, None, b.data.astype("float64"), y, "sklearn")
    else:
        folder = resolve_data_dir(data_dir)
        path = folder / f"{did}.arff" if folder else None
        if path is not None and path.exists():
            ds = _load_arff(name, did, path)
        elif not allow_download:
            where = f"no file {did}.arff in {folder}" if folder else f"no data directory set (${DATA_DIR_ENV})"
            raise DataUnavailableError(
                f"dataset {name} (OpenML {did}): {where}. Set ${DATA_DIR_ENV} or pass data_dir= "
                f"to a folder holding {did}.arff, or allow the OpenML download.")
        else:
            ds = _load_openml(name, did, folder)
    validate(ds)
    return ds


def validate(ds: Dataset) -> Dataset:
    """Raise a clear :class:`DatasetError` for tables the method cannot use."""
    X, y = ds.X, ds.y
    if len(X) == 0 or X.shape[1] == 0:
        raise DatasetError(f"{ds.name}: empty table ({len(X)} rows, {X.shape[1]} feature columns)")
    if len(y) != len(X):
        raise DatasetError(f"{ds.name}: {len(X)} rows but {len(y)} target values")
    n_missing = int(y.isna().sum())
    if n_missing:
        raise DatasetError(f"{ds.name}: {n_missing} missing target value(s); drop those rows first")
    classes = y.dropna().unique()
    if len(classes) < 2:
        raise DatasetError(f"{ds.name}: the target has one class only ({classes[0]!r}); "
                           "classification needs at least two")
    num = X.select_dtypes(include="number")
    bad = [c for c in num.columns if np.isinf(num[c].to_numpy(dtype=float)).any()]
    if bad:
        raise DatasetError(f"{ds.name}: non-finite numbers (inf) in column(s) {', '.join(map(str, bad[:10]))}")
    other = [c for c in X.columns if not (isinstance(X[c].dtype, pd.CategoricalDtype)
                                          or pd.api.types.is_numeric_dtype(X[c]))]
    if other:
        raise DatasetError(f"{ds.name}: columns must be numeric or category: {', '.join(map(str, other[:10]))} "
                           "(use from_frame to convert text columns)")
    return ds


def from_frame(X: pd.DataFrame, y, name: str = "custom") -> Dataset:
    """Wrap your own table: text/bool/object columns become categories, numbers float64."""
    X = pd.DataFrame(X).copy()
    for c in X.columns:
        s = X[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            continue
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            X[c] = s.astype("category")
        else:
            X[c] = s.astype("float64")
    y = pd.Series(y, index=X.index).astype("category") if len(X) else pd.Series(y, dtype="category")
    return validate(Dataset(name, None, X.reset_index(drop=True), y.reset_index(drop=True), "frame"))


def summary(ds: Dataset) -> pd.Series:
    """Rows, features (nominal / numeric), missing values and class balance of a dataset."""
    nominal = sum(isinstance(t, pd.CategoricalDtype) for t in ds.X.dtypes)
    counts = ds.y.value_counts()
    return pd.Series({
        "dataset": ds.name, "OpenML id": ds.did if ds.did is not None else "-", "rows": len(ds.X),
        "features": ds.X.shape[1], "nominal": nominal, "numeric": ds.X.shape[1] - nominal,
        "missing cells": int(ds.X.isna().sum().sum()),
        "rows with missing": int(ds.X.isna().any(axis=1).sum()),
        "classes": len(counts), "largest class": f"{counts.iloc[0]} ({counts.iloc[0] / len(ds.y):.1%})",
        "smallest class": f"{counts.iloc[-1]} ({counts.iloc[-1] / len(ds.y):.1%})",
        "source": Path(ds.source).name if ds.source.endswith(".arff") else ds.source,
    })
