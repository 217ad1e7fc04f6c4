"""The paper's datasets: a registry of the 30 OpenML-CC18 ids, loading, and input checks.

* ``breast_cancer`` is scikit-learn's bundled copy (the paper's Figure 1-2 dataset; offline).
* An OpenML id is read from ``<data_dir>/<did>.arff`` when that file exists (``data_dir``
  argument, else ``$TCC_DATA_DIR``), parsed with liac-arff (the parser openml-python uses), and
  the columns OpenML leaves out (row-id / ignore attributes) are dropped as OpenML does.
  When a ``MANIFEST.tsv`` beside the file lists the id, the file must agree with it (sha256 of
  the bytes; rows and columns after parsing), else a :class:`DatasetError` names the file and
  the difference (a cut or edited copy would otherwise train silently on part of the data).
  An empty, binary or unparsable file is a :class:`DatasetError` naming the file (and line).
  Otherwise openml-python downloads it (``openml.datasets.get_dataset``, with openml's cache);
  without network that ends in a :class:`DataUnavailableError` saying what to set.
* Nominal columns come back as pandas ``category`` (declared level order), numeric as float64,
  the target as a ``category`` series.
* :func:`from_frame` wraps a practitioner's own pandas table with the same checks
  (:func:`validate_dataset`: duplicate names, inf, numbers beyond float32, ...), and refuses a
  text column of numbers with a few stray tokens such as ``n/a`` (:func:`numeric_text_tokens`).
* Checks that depend on the run's settings (class sizes for the split, features to corrupt, the
  memory budget) are in :mod:`tcclib.preprocess`; :func:`tcclib.train.run_dataset` makes them
  before any training.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import warnings
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
    """The data cannot be used: a damaged or unparsable file, or a table the method cannot use
    (empty, duplicate names, one class, missing target values, inf or huge numbers, classes too
    small to split, a one-hot width beyond the memory budget).  The message names the file or
    dataset, the columns or classes, and the fix."""


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

MANIFEST_NAME = "MANIFEST.tsv"
"""A table beside the ARFF files (``did``, ``sha256``, ``rows``, ``cols``) that the loader checks them against."""


def _frame_from_arff(path: Path) -> pd.DataFrame:
    """All columns of an ARFF file: nominal -> category (declared level order), numeric -> float64.

    An empty file, a file that is not UTF-8 text, and one liac-arff cannot parse are a
    :class:`DatasetError` naming the file (and the line, where liac-arff gives one).
    """
    import arff  # liac-arff

    if path.stat().st_size == 0:
        raise DatasetError(f"{path}: the file is empty (0 bytes); re-download it or restore the copy")
    try:
        with open(path, encoding="utf-8") as f:
            d = arff.load(f)
    except UnicodeDecodeError as e:
        with open(path, "rb") as f:
            head = f.read(4)
        kind = ("it looks gzip-compressed: unpack it" if head[:2] == b"\x1f\x8b" else
                "it looks like a zip archive: unpack it" if head[:2] == b"PK" else
                "it is damaged or not an ARFF file; re-download it")
        raise DatasetError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}): "
                           f"an ARFF file is text, and {kind}") from None
    except arff.ArffException as e:
        line = getattr(e, "line", -1)
        where = f"{path}, line {line}" if isinstance(line, int) and line > 0 else f"{path}"
        raise DatasetError(f"{where}: not a valid ARFF file (liac-arff {type(e).__name__}: {e}); "
                           "the copy is damaged or not ARFF: re-download it") from None
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


@lru_cache(maxsize=8)
def _read_manifest(path: Path, mtime_ns: int, size: int) -> dict[int, dict]:
    """``{did: {"sha256", "rows", "cols"}}`` of a MANIFEST.tsv (cached per file version)."""
    m = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = {"did", "sha256", "rows", "cols"} - set(m.columns)
    if missing:
        raise ValueError(f"no column(s) {', '.join(sorted(missing))}")
    out = {}
    for r in m.itertuples(index=False):
        if str(r.did).strip().isdigit():
            out[int(r.did)] = dict(sha256=str(r.sha256).strip().lower(), rows=str(r.rows).strip(),
                                   cols=str(r.cols).strip())
    return out


def manifest_entry(path: Path, did: int) -> dict | None:
    """What the ``MANIFEST.tsv`` beside ``path`` says about ``did`` (None: no manifest, or not listed).

    An unreadable manifest is warned about and treated as absent.
    """
    mf = Path(path).parent / MANIFEST_NAME
    if not mf.is_file():
        return None
    st = mf.stat()
    try:
        return _read_manifest(mf, st.st_mtime_ns, st.st_size).get(int(did))
    except Exception as e:  # noqa: BLE001 - a broken manifest must not stop a good file loading
        warnings.warn(f"{mf}: unreadable ({type(e).__name__}: {e}); {Path(path).name} is loaded unchecked",
                      stacklevel=3)
        return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _checked_arff_frame(path: Path, did: int) -> pd.DataFrame:
    """The ARFF file's columns, checked against the ``MANIFEST.tsv`` beside it when it lists ``did``.

    The sha256 of the bytes is compared first; rows and columns (target and ignored columns
    included) after parsing.  Any disagreement is a :class:`DatasetError` naming the file and
    what differs.  A file the manifest does not list, or no manifest, loads unchecked.
    """
    entry = manifest_entry(path, did)
    if entry is None:
        return _frame_from_arff(path)
    sha = _sha256(path) if entry["sha256"] else ""
    sha_differs = sha != entry["sha256"]
    try:
        df = _frame_from_arff(path)
    except DatasetError as e:
        if sha_differs:
            raise DatasetError(f"{e} (its sha256 differs from {MANIFEST_NAME}'s too)") from None
        raise
    got = {"rows": len(df), "cols": df.shape[1]}
    word = {"rows": "rows", "cols": "columns"}
    bad = [k for k in ("rows", "cols") if entry[k].isdigit() and int(entry[k]) != got[k]]
    fix = "the copy is damaged or not OpenML's; re-download it"
    if bad:
        ours = " and ".join(f"{got[k]} {word[k]}" for k in bad)
        theirs = " and ".join(f"{entry[k]}" for k in bad)
        too = " (sha256 differs too)" if sha_differs else ""
        raise DatasetError(f"{path}: {ours}, {MANIFEST_NAME} says {theirs}{too}: {fix}")
    if sha_differs:
        raise DatasetError(
            f"{path}: sha256 {sha[:12]}... differs from {MANIFEST_NAME}'s {entry['sha256'][:12]}... "
            f"(rows and columns agree: {got['rows']} x {got['cols']}): the file was changed after "
            f"{MANIFEST_NAME} was written; {fix} (or, for a deliberate new copy, update {MANIFEST_NAME})")
    return df


def _ignored(did: int) -> list[str]:
    value = _registry().set_index("did").loc[did, "ignore_columns"]
    return [c for c in str(value).split(";") if c]


def _load_arff(name: str, did: int, path: Path) -> Dataset:
    df = _checked_arff_frame(path, did)
    target = _registry().set_index("did").loc[did, "target"]
    if target not in df.columns:
        raise DatasetError(f"{path}: target column {target!r} not found (columns: {', '.join(df.columns[:8])}, ...)")
    y = df.pop(target)
    X = df.drop(columns=[c for c in _ignored(did) if c in df.columns])
    return Dataset(name, did, X, y, str(path))


NUMERIC_TEXT_SHARE = 0.9
"""A text column whose non-missing values are at least this share numbers ...

...and whose other values are at most :data:`NUMERIC_TEXT_MAX_TOKENS` distinct tokens is
refused by :func:`from_frame` (:func:`numeric_text_tokens`): it is a numeric column with a few
stray markers (``n/a``, ``-``, ``?``), which would otherwise become a categorical column with one
level per distinct number."""
NUMERIC_TEXT_MAX_TOKENS = 5


def _names(cols, limit: int = 10) -> str:
    cols = list(cols)
    return ", ".join(map(str, cols[:limit])) + (f", ... ({len(cols)} in all)" if len(cols) > limit else "")


def _check_unique_names(X: pd.DataFrame, name: str) -> None:
    """Duplicate column names are a :class:`DatasetError` (a feature must be addressable by name)."""
    if X.columns.is_unique:
        return
    counts = X.columns.value_counts()
    dup = [c for c in counts.index if counts[c] > 1]
    raise DatasetError(
        f"{name}: duplicate column name(s) {', '.join(f'{c!r} ({counts[c]} columns)' for c in dup[:10])}: "
        "every feature needs its own name; rename them (X.columns = [...]) or drop the copies "
        "(X.loc[:, ~X.columns.duplicated()])")


def numeric_text_tokens(s: pd.Series) -> pd.Series | None:
    """The non-numeric tokens of a text column that otherwise holds numbers, with their counts.

    For an object/string column: its non-missing values are read with ``pd.to_numeric`` (the
    text ``nan`` counts as a number: a missing one).  When at least :data:`NUMERIC_TEXT_SHARE`
    of them are numbers and at most :data:`NUMERIC_TEXT_MAX_TOKENS` distinct tokens are not,
    those tokens are returned (a Series: token -> count; empty when every value is a number).
    None for any other column (not text, nothing present, or mostly words).
    """
    if isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(s) or \
            pd.api.types.is_numeric_dtype(s):
        return None
    text = s.dropna().astype(str).str.strip()
    if text.empty:
        return None
    counts = text.value_counts(sort=False)
    tokens = counts.index.to_series()
    parsed = pd.to_numeric(tokens, errors="coerce")
    bad = parsed.isna() & ~tokens.str.lower().isin(["nan", "+nan", "-nan"])
    n_bad = int(counts[bad.to_numpy()].sum())
    if int(bad.sum()) > NUMERIC_TEXT_MAX_TOKENS or len(text) - n_bad < NUMERIC_TEXT_SHARE * len(text):
        return None
    return counts[bad.to_numpy()].sort_values(ascending=False, kind="stable")


def _standard_types(X: pd.DataFrame, name: str = "custom") -> pd.DataFrame:
    """Category for nominal/text/bool columns, float64 for numbers.

    Refused (:class:`DatasetError`): duplicate column names, and text columns that are numbers
    with a few stray tokens (:func:`numeric_text_tokens`).  A text column of numbers only becomes
    categorical as before, with a warning (convert it with ``pd.to_numeric`` if it is a number).
    """
    _check_unique_names(X, name)
    X = X.copy()
    stray, all_numbers = {}, []
    for c in X.columns:
        s = X[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            continue
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            tokens = numeric_text_tokens(s)
            if tokens is not None and len(tokens):
                stray[c] = (tokens, int(s.notna().sum()))
            elif tokens is not None:
                all_numbers.append(f"{c!r} ({s.nunique()} levels)")
            X[c] = s.astype("category")
        else:
            X[c] = s.astype("float64")
    if stray:
        parts = []
        for c, (tokens, n) in list(stray.items())[:10]:
            shown = ", ".join(f"{t!r} x{k}" for t, k in tokens.items())
            parts.append(f"{c!r} ({n - int(tokens.sum())} of {n} values are numbers; not numbers: {shown})")
        c0 = next(iter(stray))
        raise DatasetError(
            f"{name}: text column(s) holding numbers and a few other tokens: {'; '.join(parts)}. "
            "Read as text they would become categorical, one level per distinct number. If the column "
            f"is numeric, turn those tokens into NaN (missing values are imputed), e.g. "
            f"X[{c0!r}] = pd.to_numeric(X[{c0!r}], errors='coerce'); if it is categorical, say so: "
            f"X[{c0!r}] = X[{c0!r}].astype('category')")
    if all_numbers:
        warnings.warn(
            f"{name}: text column(s) {_names(all_numbers)} hold only numbers and become categorical "
            "(one level per distinct value); if they are numeric, convert them with pd.to_numeric, "
            "and to keep them categorical without this warning, make them category yourself", stacklevel=3)
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
    X = _standard_types(pd.DataFrame(X).drop(columns=[c for c in _ignored(did) if c in X.columns]), name)
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
    :class:`DataUnavailableError`. A local copy that disagrees with the ``MANIFEST.tsv`` beside
    it, or cannot be parsed, raises :class:`DatasetError` naming the file. The result is checked
    with :func:`validate_dataset`.
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

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""Largest finite float32 (about 3.4e38): training runs in float32, so larger numbers are refused."""


def validate_dataset(ds: Dataset) -> Dataset:
    """Return ``ds`` unchanged, or raise a clear :class:`DatasetError` for a table the method cannot use.

    Refused: no rows or no feature columns, duplicate column names, X/y length mismatch, missing
    target values, a single class, infinite numbers, finite numbers beyond float32's range
    (``|x| >`` :data:`FLOAT32_MAX`: they become inf in training's float32; beyond about 1e154
    even float64 z-scoring overflows), columns that are neither numeric nor category. Missing
    feature values (NaN) are allowed; preprocessing imputes them.  Class sizes are checked where the split is made
    (:func:`tcclib.preprocess.prepare`), as they depend on the split fractions.
    """
    X, y = ds.X, ds.y
    if len(X) == 0 or X.shape[1] == 0:
        raise DatasetError(f"{ds.name}: empty table ({len(X)} rows, {X.shape[1]} feature columns)")
    _check_unique_names(X, ds.name)
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
    inf, big, largest = {}, {}, 0.0
    for c in num:
        v = X[c].to_numpy(dtype="float64", na_value=np.nan)
        n_inf = int(np.isinf(v).sum())
        if n_inf:
            inf[c] = n_inf
        with np.errstate(invalid="ignore"):
            over = np.isfinite(v) & (np.abs(v) > FLOAT32_MAX)
        if over.any():
            big[c] = int(over.sum())
            largest = max(largest, float(np.abs(v[over]).max()))
    if inf:
        raise DatasetError(f"{ds.name}: non-finite numbers (inf) in column(s) {_names(inf)}; "
                           f"{sum(inf.values())} cell(s) in all: replace them with NaN (missing values "
                           "are imputed) or with finite numbers")
    if big:
        raise DatasetError(
            f"{ds.name}: numbers too large for float32 (|x| > {FLOAT32_MAX:.3g}) in column(s) {_names(big)}; "
            f"{sum(big.values())} cell(s), the largest {largest:.3g}: training runs in float32, where they "
            "become inf (and beyond about 1e154 z-scoring overflows even in float64); rescale the "
            "column(s) (divide by a power of ten, or take a log) or replace those values with NaN")
    other = [c for c in X.columns if c not in num and not isinstance(X[c].dtype, pd.CategoricalDtype)]
    if other:
        raise DatasetError(f"{ds.name}: columns must be numeric or category: {', '.join(map(str, other[:10]))} "
                           "(from_frame converts text and bool columns)")
    return ds


validate = validate_dataset  # older name, kept for callers


def from_frame(X: pd.DataFrame, y, name: str = "custom") -> Dataset:
    """Wrap your own table: object/string/bool columns become category, numbers float64.

    ``y`` is any sequence of class labels, one per row of ``X`` (matched by position, not index).
    Checked with :func:`validate_dataset`; besides, a text column that holds numbers and a few
    other tokens (``n/a``, ``-``: :func:`numeric_text_tokens`) is a :class:`DatasetError` listing
    the tokens (make them NaN, or make the column category yourself), and a text column of
    numbers only becomes categorical with a warning.
    """
    X = _standard_types(pd.DataFrame(X), name).reset_index(drop=True)
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
