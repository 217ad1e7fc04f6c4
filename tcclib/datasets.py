"""The paper's datasets: a registry of the 30 OpenML-CC18 ids, loading, and input checks.

* ``breast_cancer`` is scikit-learn's bundled copy (the paper's Figure 1-2 dataset; offline).
* An OpenML id is read from ``<data_dir>/<did>.arff`` when that file exists (``data_dir``
  argument, else ``$TCC_DATA_DIR``), parsed with liac-arff (the parser openml-python uses), and
  the columns OpenML leaves out (row-id / ignore attributes) are dropped as OpenML does.
  Otherwise openml-python downloads it (``openml.datasets.get_dataset``, with openml's cache);
  without network that ends in a :class:`DataUnavailableError` saying what to set.
* Nominal columns come back as pandas ``category`` (declared level order), numeric as float64,
  the target as a ``category`` series.
* :func:`from_frame` wraps a practitioner's own pandas table with the same checks
  (:func:`validate_dataset`).
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
_COLUMNS = ["name", "did", "target", "ignore_columns", "n_classes"]


class DatasetError(ValueError):
    """The table cannot be used (empty, one class, missing target values, non-finite numbers)."""


class UnknownDatasetError(DatasetError):
    """The name or id is not in the registry (a ``ValueError``)."""


class DataUnavailableError(FileNotFoundError):
    """No local ``<did>.arff`` copy, and OpenML could not be reached (or download was off)."""


@dataclass(frozen=True)
class Dataset:
    """A classification table: features ``X`` (float64 / category columns), target ``y`` (category)."""

    name: str
    did: int | None
    X: pd.DataFrame
    y: pd.Series
    source: str = ""  # the ARFF path, "openml", "sklearn" or "frame"

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, did={self.did}, rows={len(self.X)}, "
                f"features={self.X.shape[1]}, classes={self.y.nunique()}, source={self.source!r})")


# --------------------------------------------------------------------------- registry

@lru_cache(maxsize=1)
def _registry() -> pd.DataFrame:
    with resources.files("tcclib").joinpath("data/openml_cc18.csv").open(encoding="utf-8") as f:
        return pd.read_csv(f, dtype={"name": str, "target": str, "ignore_columns": str},
                           keep_default_na=False)


def list_datasets() -> pd.DataFrame:
    """All known datasets: ``breast_cancer`` and the paper's 30 OpenML-CC18 ones.

    Columns: name, did (nullable Int64; none for breast_cancer), target, ignore_columns
    (``;``-separated), n_classes.
    """
    bc = pd.DataFrame([dict(name=BREAST_CANCER, did=pd.NA, target="target", ignore_columns="", n_classes=2)])
    out = pd.concat([bc, _registry()[_COLUMNS]], ignore_index=True)
    out["did"] = out["did"].astype("Int64")
    return out[_COLUMNS]


def resolve(name_or_did) -> tuple[str, int | None]:
    """``(name, did)`` for a registry name (case-insensitive), an OpenML id, or an id as a string.

    ``did`` is None for ``breast_cancer``. Anything else raises :class:`UnknownDatasetError`
    with the closest names.
    """
    reg = _registry()
    key = str(name_or_did).strip()
    if key.lower() == BREAST_CANCER:
        return BREAST_CANCER, None
    hit = reg.loc[reg.did == int(key)] if key.isdigit() else reg.loc[reg.name.str.lower() == key.lower()]
    if len(hit):
        return str(hit.iloc[0]["name"]), int(hit.iloc[0]["did"])
    names = [BREAST_CANCER, *reg.name]
    by_lower = {n.lower(): n for n in names}
    close = [by_lower[n] for n in difflib.get_close_matches(key.lower(), list(by_lower), n=3, cutoff=0.5)]
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UnknownDatasetError(
        f"unknown dataset {name_or_did!r}.{hint} tcclib.datasets.list_datasets() lists the "
        f"{len(names)} known ones (name or OpenML id); for your own table use from_frame(X, y).")


def data_dir(explicit=None) -> Path | None:
    """The folder of ``<did>.arff`` files: the argument, else ``$TCC_DATA_DIR``, else None."""
    d = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV)
    return Path(d).expanduser() if d else None


resolve_data_dir = data_dir  # older name, kept for callers


# --------------------------------------------------------------------------- loading

def _frame_from_arff(path: Path) -> pd.DataFrame:
    """All columns of an ARFF file: nominal -> category (declared level order), numeric -> float64."""
    import arff  # liac-arff

    with open(path, encoding="utf-8") as f:
        d = arff.load(f)
    cols = [a for a, _ in d["attributes"]]
    raw = pd.DataFrame(d["data"], columns=cols, dtype=object)
    out = {}
    for a, t in d["attributes"]:
        if isinstance(t, list):  # nominal: liac-arff gives the declared levels; None is missing
            out[a] = pd.Categorical(raw[a], categories=t)
        elif str(t).upper() == "STRING":  # free text (row ids); levels as they occur
            out[a] = pd.Categorical(raw[a])
        else:  # REAL / NUMERIC / INTEGER
            out[a] = pd.to_numeric(raw[a]).astype("float64")
    return pd.DataFrame(out)


def _ignored(did: int) -> list[str]:
    value = _registry().set_index("did").loc[did, "ignore_columns"]
    return [c for c in str(value).split(";") if c]


def _load_arff(name: str, did: int, path: Path) -> Dataset:
    df = _frame_from_arff(path)
    target = _registry().set_index("did").loc[did, "target"]
    if target not in df.columns:
        raise DatasetError(f"{path}: target column {target!r} not found (columns: {', '.join(df.columns[:8])}, ...)")
    y = df.pop(target)
    X = df.drop(columns=[c for c in _ignored(did) if c in df.columns])
    return Dataset(name, did, X, y, str(path))


def _standard_types(X: pd.DataFrame) -> pd.DataFrame:
    """Category for nominal/text/bool columns, float64 for numbers."""
    X = X.copy()
    for c in X.columns:
        s = X[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            continue
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            X[c] = s.astype("category")
        else:
            X[c] = s.astype("float64")
    return X


def _load_openml(name: str, did: int, searched: Path | None) -> Dataset:
    """Download with openml-python (its cache first); any failure -> DataUnavailableError."""
    where = f"no file {did}.arff in {searched}" if searched else f"no data directory set (${DATA_DIR_ENV})"
    target = _registry().set_index("did").loc[did, "target"]
    try:
        import openml

        ds = openml.datasets.get_dataset(did, download_data=True, download_qualities=False,
                                         download_features_meta_data=False)
        X, y, _, _ = ds.get_data(target=target)  # a DataFrame in openml 0.15 and 0.16
    except Exception as e:  # noqa: BLE001 - requests/OSError/openml errors all mean "not reachable"
        raise DataUnavailableError(
            f"dataset {name} (OpenML {did}): {where}, and OpenML could not be reached "
            f"({type(e).__name__}: {str(e)[:200]}). Set ${DATA_DIR_ENV} or pass data_dir= to a "
            f"folder holding {did}.arff.") from e
    X = _standard_types(pd.DataFrame(X).drop(columns=[c for c in _ignored(did) if c in X.columns]))
    y = pd.Series(y, name=target).astype("category")
    return Dataset(name, did, X.reset_index(drop=True), y.reset_index(drop=True), "openml")


def _load_breast_cancer() -> Dataset:
    from sklearn.datasets import load_breast_cancer

    b = load_breast_cancer(as_frame=True)
    y = pd.Series(pd.Categorical.from_codes(b.target.to_numpy(), list(b.target_names)), name="target")
    return Dataset(BREAST_CANCER, None, b.data.astype("float64"), y, "sklearn")


def load_dataset(name_or_did, data_dir=None, allow_download: bool = True) -> Dataset:
    """Load ``breast_cancer`` or one of the 30 OpenML-CC18 datasets (name, id, or id string).

    An OpenML dataset is read from ``<data_dir>/<did>.arff`` (``data_dir`` argument, else
    ``$TCC_DATA_DIR``) when that file exists; otherwise it is downloaded with openml-python,
    unless ``allow_download`` is False. No copy and no download raise
    :class:`DataUnavailableError`. The result is checked with :func:`validate_dataset`.
    """
    name, did = resolve(name_or_did)
    if did is None:
        return validate_dataset(_load_breast_cancer())
    folder = _data_dir(data_dir)
    path = folder / f"{did}.arff" if folder else None
    if path is not None and path.is_file():
        ds = _load_arff(name, did, path)
    elif allow_download:
        ds = _load_openml(name, did, folder)
    else:
        where = f"no file {did}.arff in {folder}" if folder else f"no data directory set (${DATA_DIR_ENV})"
        raise DataUnavailableError(
            f"dataset {name} (OpenML {did}): {where}, and download is off. Set ${DATA_DIR_ENV} or "
            f"pass data_dir= to a folder holding {did}.arff (or allow the OpenML download).")
    return validate_dataset(ds)


_data_dir = data_dir  # load_dataset's parameter shadows the function's name


# --------------------------------------------------------------------------- checks, own tables

def validate_dataset(ds: Dataset) -> Dataset:
    """Return ``ds`` unchanged, or raise a clear :class:`DatasetError` for a table the method cannot use.

    Refused: no rows or no feature columns, X/y length mismatch, missing target values, a single
    class, infinite numbers, columns that are neither numeric nor category. Missing feature values
    (NaN) are allowed; preprocessing imputes them.
    """
    X, y = ds.X, ds.y
    if len(X) == 0 or X.shape[1] == 0:
        raise DatasetError(f"{ds.name}: empty table ({len(X)} rows, {X.shape[1]} feature columns)")
    if len(y) != len(X):
        raise DatasetError(f"{ds.name}: {len(X)} rows but {len(y)} target values")
    n_missing = int(y.isna().sum())
    if n_missing:
        raise DatasetError(f"{ds.name}: {n_missing} missing target value(s) of {len(y)}; drop those rows first")
    classes = pd.unique(y.to_numpy())
    if len(classes) < 2:
        raise DatasetError(f"{ds.name}: the target has one class only ({classes[0]!r}); "
                           "classification needs at least two")
    num = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c]) and not pd.api.types.is_bool_dtype(X[c])]
    bad = [c for c in num if np.isinf(X[c].to_numpy(dtype="float64", na_value=np.nan)).any()]
    if bad:
        raise DatasetError(f"{ds.name}: non-finite numbers (inf) in column(s) {', '.join(map(str, bad[:10]))}"
                           f"{' ...' if len(bad) > 10 else ''}; replace them (NaN is allowed)")
    other = [c for c in X.columns if c not in num and not isinstance(X[c].dtype, pd.CategoricalDtype)]
    if other:
        raise DatasetError(f"{ds.name}: columns must be numeric or category: {', '.join(map(str, other[:10]))} "
                           "(from_frame converts text and bool columns)")
    return ds


validate = validate_dataset  # older name, kept for callers


def from_frame(X: pd.DataFrame, y, name: str = "custom") -> Dataset:
    """Wrap your own table: object/string/bool columns become category, numbers float64.

    ``y`` is any sequence of class labels, one per row of ``X`` (matched by position, not index).
    """
    X = _standard_types(pd.DataFrame(X)).reset_index(drop=True)
    if isinstance(y, pd.Series) and isinstance(y.dtype, pd.CategoricalDtype):
        y = y.reset_index(drop=True)  # keep the declared class order
    else:
        y = pd.Series(y.to_numpy() if isinstance(y, (pd.Series, pd.Index)) else list(y),
                      name=getattr(y, "name", None)).astype("category")
    if len(y) != len(X):
        raise DatasetError(f"{name}: {len(X)} rows but {len(y)} target values")
    y = y.rename(y.name if y.name is not None else "target")
    return validate_dataset(Dataset(name, None, X, y, "frame"))


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
