"""Datasets: the paper's 30 OpenML-CC18 ids, any other OpenML dataset or suite, local tables;
loading, and input checks.

* What a name means is :func:`source`'s answer (``breast_cancer``, scikit-learn's bundled copy;
  an OpenML id or name; a local table ``PATH:TARGET``, read as :func:`csv_format` says);
  :func:`expand` also turns an OpenML suite (``suite:99``) into its datasets.
* An OpenML id is read from ``<data_dir>/<did>.arff`` (``data_dir``, else ``$TCC_DATA_DIR``)
  when it exists, with liac-arff (as openml-python does), without the row-id / ignored columns,
  and checked against the ``MANIFEST.tsv`` beside it (sha256, rows, columns: a cut or edited copy
  would otherwise train silently on part of the data); a damaged file is a :class:`DatasetError`
  naming it (and the line).  Else openml-python downloads it (with its cache); offline, a
  :class:`DataUnavailableError` says what to set.
* Nominal columns come back as pandas ``category`` (declared level order), numeric as float64,
  the target as a ``category`` series.
* :func:`from_frame` wraps a practitioner's own pandas table with the same checks
  (:func:`validate_dataset`: duplicate names, inf, numbers beyond float32, ...), and refuses a
  text column of numbers with a few stray tokens such as ``n/a`` (:func:`numeric_text_tokens`).
* Checks that depend on the run's settings (class sizes for the split, features to corrupt, the
  memory budget) are in :mod:`tcclib.data.preprocess`; :func:`tcclib.running.train.run_dataset` makes them
  before any training.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import difflib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from tcclib.data.columns import expand_datetimes, parse_date_text
from tcclib.util import paths
from tcclib.util.errors import register_short

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


register_short(DatasetError, DataUnavailableError)


@dataclass(frozen=True)
class Dataset:
    """A classification table: features ``X`` (float64 / category columns), target ``y`` (category)."""

    name: str
    did: int | None
    X: pd.DataFrame
    y: pd.Series
    source: str = ""  # the ARFF path, "openml", "sklearn" or "frame"
    reading: dict | None = field(default=None, compare=False)  # how its file was read (local_source)
    loaded_as: tuple | None = field(default=None, compare=False, repr=False)  # load_dataset's (digest, rows, columns)

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, did={self.did}, rows={len(self.X)}, "
            f"features={self.X.shape[1]}, classes={self.y.nunique()}, source={self.source!r})"
        )


# --------------------------------------------------------------------------- registry


@lru_cache(maxsize=1)
def _registry() -> pd.DataFrame:
    with resources.files("tcclib.data").joinpath("openml_cc18.csv").open(encoding="utf-8") as f:
        return pd.read_csv(f, dtype={"name": str, "target": str, "ignore_columns": str}, keep_default_na=False)


def list_datasets() -> pd.DataFrame:
    """All known datasets: ``breast_cancer`` and the paper's 30 OpenML-CC18 ones.

    Columns: name, did (nullable Int64; none for breast_cancer), target, ignore_columns
    (``;``-separated), n_classes.
    """
    bc = pd.DataFrame([dict(name=BREAST_CANCER, did=pd.NA, target="target", ignore_columns="", n_classes=2)])
    out = pd.concat([bc, _registry()[_COLUMNS]], ignore_index=True)
    out["did"] = out["did"].astype("Int64")
    return out[_COLUMNS]


FILE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".arff")
"""Local table files :func:`load_dataset` reads, as ``PATH:TARGET`` (the target column named)."""
_FILE_RE = re.compile(r"^(?P<path>.+?\.(?:csv|tsv|parquet|pq|arff))(?::(?P<target>[^:/\\]*))?$", re.IGNORECASE)
SUITES_DIR = "suites"
"""``<data_dir>/suites/<id or alias>.json``: a saved OpenML suite listing (see :func:`expand`)."""


class DatasetMetadataError(UnknownDatasetError):
    """An OpenML dataset outside the paper's 30 whose description (name, target, ignored
    columns) is neither in the data folder's ``MANIFEST.tsv`` nor readable from OpenML."""


@dataclass(frozen=True)
class Source:
    """Where a dataset comes from: ``kind`` "sklearn" (breast_cancer), "paper" (one of the
    paper's 30), "openml" (any other OpenML id) or "file" (a local CSV/TSV/Parquet/ARFF table).

    ``name`` is the dataset's name everywhere (results, folders); ``spec`` the text
    :func:`load_dataset` reads it back from (a registry name, an OpenML id, ``PATH:TARGET``)."""

    name: str
    kind: str
    did: int | None = None
    target: str | None = None
    ignore: tuple[str, ...] = ()
    path: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # a CSV/TSV file's reading options given by the user (sep, ...)

    @property
    def spec(self) -> str:
        """The text :func:`source` reads this source back from: ``PATH:TARGET`` for a file, or the
        file's mapping as JSON (``{"path": ..., "target": ..., "sep": ";"}``) when it has options."""
        if self.kind == "file":
            if self.options:
                return json.dumps(
                    {"path": str(paths.relative_to_root(self.path)), "target": self.target, **dict(self.options)}
                )
            return f"{paths.relative_to_root(self.path)}:{self.target}"
        if self.kind == "openml":
            return str(self.did)
        return self.name


def _paper_source(row) -> Source:
    return Source(
        str(row["name"]),
        "paper",
        int(row["did"]),
        str(row["target"]),
        tuple(c for c in str(row["ignore_columns"]).split(";") if c),
    )


def source(item, data_dir=None, download: bool = True) -> Source:
    """Where ``item`` comes from (:class:`Source`).  ``item`` is one of:

    * ``breast_cancer`` or a name / OpenML id of the paper's 30 (case-insensitive; ids as text too);
    * any other OpenML id (``3``, ``"openml:3"``) or name (``"openml:kr-vs-kp"``; a plain name
      too, unless it is a near-miss of a known one): its name, target
      (``default_target_attribute``) and ignored columns (``ignore_attribute``,
      ``row_id_attribute``) come from the ``MANIFEST.tsv`` of the data folder (``data_dir``, else
      ``$TCC_DATA_DIR``) when it lists the id, else from openml-python (its cache, then the
      server unless ``download`` is False);
    * a local table ``PATH:TARGET`` (``.csv``, ``.tsv``, ``.parquet``, ``.arff``; a relative
      path lies under the project root), or a mapping ``{path: ..., target: ...}``.

    Unknown names are an :class:`UnknownDatasetError` with the closest known names; an OpenML id
    whose description cannot be read, a :class:`DatasetMetadataError` naming what to download.
    """
    if isinstance(item, Mapping):
        return _mapping_source(item, data_dir, download)
    if isinstance(item, bool) or not isinstance(item, (str, int)):
        raise UnknownDatasetError(
            f"{item!r} is not a dataset: give a name, an OpenML id, a file as "
            f"PATH:TARGET or a mapping {{path: ..., target: ...}}"
        )
    key = str(item).strip()
    if key.startswith("{"):
        try:
            mapping = json.loads(key)
        except ValueError as e:
            raise UnknownDatasetError(f"{item!r}: not a valid dataset mapping (JSON: {e})") from None
        if isinstance(mapping, dict):
            return _mapping_source(mapping, data_dir, download)
    if key.lower() == BREAST_CANCER:
        return Source(BREAST_CANCER, "sklearn", None, "target")
    m = _FILE_RE.match(key)
    if m:
        return file_source(m["path"], m["target"])
    low = key.lower()
    if low.startswith(("suite:", "study:")):
        raise UnknownDatasetError(
            f"{key!r} is an OpenML suite, which lists several datasets: give it in a "
            f"parameter file's datasets list, or expand it with tcclib.data.sources.expand"
        )
    explicit = low.startswith("openml:")
    if explicit:
        key = key.split(":", 1)[1].strip()
    if not key:
        raise UnknownDatasetError(
            f"{item!r} names no dataset (an unset shell variable?): give a dataset's name, its OpenML id, or "
            "your own table as PATH:TARGET"
        )
    if re.fullmatch(r"[+-]\d+|0+", key):
        raise UnknownDatasetError(
            f"{item!r} is not a dataset id: OpenML ids are positive whole numbers (e.g. 31); "
            "give a dataset's id, its name, or your own table as PATH:TARGET"
        )
    return _named_source(item, key, explicit, data_dir, download)


def _named_source(item, key: str, explicit: bool, data_dir, download: bool) -> Source:
    """A dataset given by OpenML id or name: the paper's, the data folder's MANIFEST, else OpenML
    (or an error with the closest names)."""
    reg = _registry()
    hit = reg.loc[reg.did == int(key)] if key.isdigit() else reg.loc[reg.name.str.lower() == key.lower()]
    if len(hit):
        return _paper_source(hit.iloc[0])
    if key.isdigit():
        return _openml_source(int(key), data_dir, download)
    man = _manifest_rows(data_dir)
    by_name = [r for r in man.values() if r["name"].lower() == key.lower()]
    if by_name:
        return _openml_source(by_name[0]["did"], data_dir, download)
    if Path(key).suffix.lower() not in ("", *FILE_SUFFIXES) or "/" in key or "\\" in key:
        raise UnknownDatasetError(
            f"{item!r}: not a known dataset, and as a file it is not one of {', '.join(FILE_SUFFIXES)} "
            f"written PATH:TARGET (e.g. data/my.csv:label)"
        )
    names = [BREAST_CANCER, *reg.name, *(r["name"] for r in man.values())]
    by_lower = {n.lower(): n for n in names}
    close = [by_lower[n] for n in difflib.get_close_matches(key.lower(), list(by_lower), n=3, cutoff=0.5)]
    near = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.8)
    if explicit or (download and not near):
        return _openml_by_name(key, close)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UnknownDatasetError(
        f"unknown dataset {item!r}.{hint} tcclib.data.sources.list_datasets() lists breast_cancer and "
        f"the paper's {len(reg)} (name or OpenML id); any other OpenML dataset: its id or openml:NAME; your own "
        f"table: PATH:TARGET (e.g. data/my.csv:label) or from_frame(X, y)."
    )


def resolve(name_or_did, data_dir=None, download: bool = True) -> tuple[str, int | None]:
    """``(name, did)`` of a dataset (see :func:`source` for what is accepted).

    ``did`` is None for ``breast_cancer`` and local files.  An unknown name raises
    :class:`UnknownDatasetError` with the closest names.
    """
    s = source(name_or_did, data_dir, download)
    return s.name, s.did


FILE_OPTIONS = ("sep", "decimal", "encoding")
"""Reading options of a CSV/TSV file in the mapping form ``{path, target, sep, decimal, encoding}``."""


def _mapping_source(item: Mapping, data_dir, download) -> Source:
    keys = set(item)
    if keys == {"openml"}:
        return source(f"openml:{item['openml']}", data_dir, download)
    if "path" in keys and keys <= {"path", "target", *FILE_OPTIONS}:
        if not item.get("target"):
            raise UnknownDatasetError(
                f"{dict(item)!r}: name the target column: {{path: {item['path']}, target: COLUMN}}"
            )
        return file_source(item["path"], item["target"], **{k: item[k] for k in FILE_OPTIONS if k in item})
    if keys in ({"suite"}, {"study"}):
        raise UnknownDatasetError(
            f"{dict(item)!r} is an OpenML suite, which lists several datasets: give it "
            f"in a parameter file's datasets list, or expand it with tcclib.data.sources.expand"
        )
    extra = sorted(str(k) for k in keys - {"path", "target", *FILE_OPTIONS}) if "path" in keys else []
    hint = f" (unknown key(s) {', '.join(map(repr, extra))})" if extra else ""
    raise UnknownDatasetError(
        f"{dict(item)!r}: a dataset mapping is {{path: FILE, target: COLUMN}} (a CSV/TSV file may add "
        f"sep, decimal and encoding), {{openml: ID_OR_NAME}} or {{suite: ID_OR_ALIAS}}{hint}"
    )


def spec_folder(spec) -> str:
    """The folder name of a dataset spec without reading anything: a file's name without its
    extension (``PATH:TARGET`` or a mapping / its JSON text), else the spec itself."""
    text = str(spec).strip()
    if isinstance(spec, Mapping) or text.startswith("{"):
        try:
            mapping = spec if isinstance(spec, Mapping) else json.loads(text)
            return Path(str(mapping["path"])).stem
        except (ValueError, KeyError, TypeError):
            return text
    m = _FILE_RE.match(text)
    return Path(m["path"]).stem if m else text


def file_source(path, target, **options) -> Source:
    """A local table with its target column, checked now: the file exists, has a known type and
    has the column (a :class:`DatasetError` naming the file and the fix otherwise).

    ``options`` (CSV/TSV only): ``sep``, ``decimal``, ``encoding`` (see :func:`csv_format`; what
    is not given is detected)."""
    p = paths.resolve(str(path).strip())
    if p.suffix.lower() not in FILE_SUFFIXES:
        raise DatasetError(f"{path}: unknown file type {p.suffix!r}; tcclib reads {', '.join(FILE_SUFFIXES)}")
    if not target or not str(target).strip():
        raise DatasetError(
            f"{path}: name the target column: write {path}:COLUMN (in a parameter file also "
            f"{{path: {path}, target: COLUMN}})"
        )
    unknown = sorted(set(options) - set(FILE_OPTIONS))
    if unknown:
        raise DatasetError(
            f"{path}: unknown reading option(s) {', '.join(unknown)}; a CSV/TSV file takes {', '.join(FILE_OPTIONS)}"
        )
    for k, v in options.items():
        if not isinstance(v, str) or not v:
            raise DatasetError(
                f"{path}: {k} must be a non-empty text (e.g. sep: ';', decimal: ',', encoding: latin-1), got {v!r}"
            )
    if options and p.suffix.lower() not in (".csv", ".tsv"):
        raise DatasetError(f"{path}: {', '.join(options)} apply to CSV/TSV files only; this is a {p.suffix[1:]} file")
    if p.is_dir():
        raise DatasetError(f"{path}: is a directory ({p}), not a table file; give the path of the file itself")
    if not p.is_file():
        raise DatasetError(f"{path}: no such file ({p}); a relative path lies under the project root (or $TCC_ROOT)")
    target = str(target).strip()
    fmt = csv_format(p, **options, note=False) if p.suffix.lower() in (".csv", ".tsv") else None
    cols = fmt.header if fmt else _file_columns(p)
    if target not in cols:
        raise DatasetError(_no_target(path, target, cols, fmt))
    opts = tuple((k, options[k]) for k in FILE_OPTIONS if k in options)
    return Source(p.stem, "file", None, target, (), str(p), opts)


def _no_target(path, target, cols, fmt) -> str:
    """The message for a target column the file does not have (what was read, and how)."""
    how = f" (read as {fmt.describe()})" if fmt else ""
    seps = [c for c in ",;\t|" if fmt and c != fmt.sep and any(c in str(n) for n in cols)]
    if fmt and len(cols) == 1 and seps:
        return (
            f"{path}: no target column {target!r}: the header is one column {str(cols[0])[:80]!r}{how}; "
            f"the file seems separated by {seps[0]!r}: give {{path: {path}, target: {target}, sep: {seps[0]!r}}}"
        )
    close = difflib.get_close_matches(target, [str(c) for c in cols], n=2)
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    return (
        f"{path}: no target column {target!r}{hint}; its columns: {_names(cols)}{how}; "
        f"write {path}:COLUMN with one of them"
    )


# --------------------------------------------------------------------------- CSV / TSV files

CSV_SEPARATORS = (",", ";", "\t", "|")
"""Separators :func:`csv_format` detects (the one giving the same field count > 1 on the most lines)."""
SNIFF_BYTES = 1 << 18


@dataclass(frozen=True)
class CsvFormat:
    """How a CSV/TSV file is read: separator, decimal mark, encoding (each given or detected), and
    its header as written (read with the csv module, so duplicates are not renamed)."""

    sep: str
    decimal: str
    encoding: str
    header: list
    detected: tuple[str, ...]  # which of sep, decimal, encoding were detected
    skip: int = 0  # 1 when the file starts with Excel's "sep=;" line

    def describe(self) -> str:
        parts = [f"{k}={getattr(self, k)!r}" + (" (detected)" if k in self.detected else "") for k in FILE_OPTIONS]
        return ", ".join(parts)

    def read_options(self) -> dict:
        enc = "utf-8-sig" if self.encoding.lower().replace("_", "-") in ("utf-8", "utf8") else self.encoding
        # (utf-8-sig: a byte-order mark is dropped)
        return dict(sep=self.sep, decimal=self.decimal, encoding=enc, skiprows=self.skip)


def _decode(p: Path, raw: bytes, encoding: str | None, complete: bool) -> tuple[str, str]:
    """``(text, encoding)`` of a file's bytes; a :class:`DatasetError` saying how to pass the encoding."""
    if encoding is None:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            encoding = "utf-16"
        else:
            encoding = "utf-8-sig"  # UTF-8, with or without a byte-order mark
        given = False
    else:
        given = True
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise DatasetError(f"{p}: unknown encoding {encoding!r}; e.g. utf-8, latin-1, cp1252") from None
    try:
        return codecs.getincrementaldecoder(encoding)().decode(raw, final=complete), encoding
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        what = f"not {encoding}" if given else "not UTF-8 text"
        raise DatasetError(
            f"{p}: {what} (byte 0x{raw[e.start]:02x} at offset {e.start}, line {line}); "
            f"give its encoding: {{path: {p.name}, target: COLUMN, encoding: latin-1}} in a parameter file "
            "(or cp1252, utf-16, ...), or save it as UTF-8"
        ) from None


def _field_counts(lines: list[str], sep: str) -> list[int]:
    return [len(r) for r in csv.reader(lines, delimiter=sep) if r]


def _sniff_sep(lines: list[str], default: str) -> str:
    best, score = default, 0
    for sep in CSV_SEPARATORS:
        counts = _field_counts(lines, sep)
        if not counts or counts[0] < 2:
            continue
        agree = sum(c == counts[0] for c in counts)
        if (agree, counts[0]) > (score, 0) and agree >= max(1, len(counts) // 2):
            best, score = sep, agree
    return best


_COMMA_DECIMAL = re.compile(r"^[+-]?\d+,\d+$")
_POINT_DECIMAL = re.compile(r"^[+-]?\d*\.\d+$")


def _sniff_decimal(lines: list[str], sep: str) -> str:
    if sep == ",":
        return "."
    fields = [f.strip() for r in list(csv.reader(lines, delimiter=sep))[1:] for f in r]
    comma = sum(bool(_COMMA_DECIMAL.match(f)) for f in fields)
    point = sum(bool(_POINT_DECIMAL.match(f)) for f in fields)
    return "," if comma > 0 and point == 0 else "."


def csv_format(
    p: Path, sep: str | None = None, decimal: str | None = None, encoding: str | None = None, note: bool = True
) -> CsvFormat:
    """How to read CSV/TSV file ``p``: ``sep`` (else detected among :data:`CSV_SEPARATORS` from the
    first lines; the extension's, ``,`` or tab, when no separator splits them), ``decimal`` (else
    ``,`` when the separator is not a comma and numbers are written ``1,5`` and never ``1.5``),
    ``encoding`` (else UTF-8, with or without a byte-order mark, or UTF-16 with one).  A first
    line ``sep=;`` (as Excel writes) names the separator and is skipped.

    A :class:`DatasetError` for an empty file, bytes that are not the encoding (saying how to give
    one), a separator equal to the decimal mark, and duplicate header names."""
    p = Path(p)
    with open(p, "rb") as f:
        raw = f.read(SNIFF_BYTES + 1)
    if not raw.strip():
        raise DatasetError(f"{p}: the file is empty; a CSV file starts with a header line of column names")
    text, enc = _decode(p, raw[:SNIFF_BYTES], encoding, complete=len(raw) <= SNIFF_BYTES)
    lines = text.splitlines()[:50]
    if len(raw) > SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    default = "\t" if p.suffix.lower() == ".tsv" else ","
    skip = 0
    excel = re.fullmatch(r"sep=(.)", lines[0].strip("\r\n")) if lines else None
    if excel:  # Excel's first line naming the separator
        skip, lines = 1, lines[1:]
        sep = sep if sep is not None else excel[1]
    detected = tuple(k for k, v in (("sep", sep), ("decimal", decimal), ("encoding", encoding)) if v is None)
    sep = sep if sep is not None else _sniff_sep(lines, default)
    decimal = decimal if decimal is not None else _sniff_decimal(lines, sep)
    if sep == decimal:
        raise DatasetError(
            f"{p}: the separator and the decimal mark are both {sep!r}; give them apart (sep: ';', decimal: ',')"
        )
    try:
        header = next(csv.reader(lines[:1], delimiter=sep))
    except (csv.Error, StopIteration, TypeError) as e:
        raise DatasetError(f"{p}: cannot read the header line with sep={sep!r} ({e})") from None
    header = [h.strip() for h in header]
    fmt = CsvFormat(sep, decimal, "utf-8" if enc == "utf-8-sig" and encoding is None else enc, header, detected, skip)
    if note and "sep" in detected and sep != default:
        warnings.warn(
            f"{p.name}: separated by {sep!r} (detected), not {default!r} as its extension suggests; read as such",
            stacklevel=3,
        )
    dup = sorted({h for h in header if h and header.count(h) > 1})  # (empty names: pandas's "Unnamed: N")
    if dup:
        raise DatasetError(
            f"{p}: duplicate column name(s) in the header "
            f"{', '.join(f'{h!r} ({header.count(h)} columns)' for h in dup[:10])} (read as {fmt.describe()}): "
            "every feature needs its own name; rename them in the file's first line"
        )
    return fmt


def _read_csv(p: Path, target: str, options: dict) -> pd.DataFrame:
    fmt = csv_format(p, **options)
    if target not in fmt.header:
        raise DatasetError(_no_target(p, target, fmt.header, fmt))
    try:
        df = pd.read_csv(p, skipinitialspace=True, **fmt.read_options())
    except UnicodeDecodeError as e:
        raise DatasetError(
            f"{p}: not {fmt.encoding} text further into the file ({e.reason} at byte {e.start} of a block); "
            f"give its encoding: {{path: {p.name}, target: {target}, encoding: latin-1}} (or cp1252, ...)"
        ) from None
    except (pd.errors.ParserError, ValueError) as e:
        raise DatasetError(f"{p}: cannot be read as CSV ({fmt.describe()}): {' '.join(str(e).split())[:200]}") from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df.columns) != len(fmt.header):
        raise DatasetError(
            f"{p}: {len(fmt.header)} names in the header but {len(df.columns)} columns read ({fmt.describe()})"
        )
    df.columns = [h if h else str(c) for h, c in zip(fmt.header, df.columns)]  # (pandas names empty ones)
    features = parse_date_text(df.drop(columns=[target]))
    features[target] = df[target]
    return features


def _parquet(p: Path):
    """``pyarrow.parquet``; a :class:`DatasetError` naming ``p`` and the fix where pyarrow does not
    load (pyarrow 26 and later need NumPy 2, which a pip install beside an older NumPy does not bring)."""
    try:
        import pyarrow.parquet as pq  # deferred: only for parquet files
    except ImportError as e:
        raise DatasetError(
            f"{p}: reading Parquet needs pyarrow, which does not load here ({e}); install one that does "
            f"(beside NumPy 1.x: pip install 'pyarrow<26')"
        ) from None
    return pq


def _file_columns(p: Path) -> list:
    suf = p.suffix.lower()
    try:
        if suf in (".parquet", ".pq"):
            return list(_parquet(p).read_schema(p).names)
    except DatasetError:
        raise
    except Exception as e:  # noqa: BLE001 - any reader failure: the file is damaged or not that type
        raise DatasetError(f"{p}: cannot be read as {suf[1:]} ({type(e).__name__}: {str(e)[:200]})") from None
    return list(_frame_from_arff(p).columns)


def _read_file(s: Source) -> Dataset:
    p = Path(s.path)
    suf = p.suffix.lower()
    try:
        if suf in (".csv", ".tsv"):
            df = _read_csv(p, s.target, dict(s.options))
        elif suf in (".parquet", ".pq"):
            _parquet(p)  # (pandas' own line for a pyarrow that does not load names no fix)
            df = pd.read_parquet(p)
        else:
            df = _frame_from_arff(p)
    except DatasetError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DatasetError(f"{p}: cannot be read as {suf[1:]} ({type(e).__name__}: {str(e)[:200]})") from None
    if s.target not in df.columns:
        raise DatasetError(f"{p}: no target column {s.target!r}; its columns: {_names(df.columns)}")
    y = df.pop(s.target)
    ds = from_frame(df, y, name=s.name)
    return Dataset(s.name, None, ds.X, ds.y, str(p))


def _manifest_rows(data_dir) -> dict[int, dict]:
    """``{did: {"did", "name", "target", "ignore"}}`` from the data folder's MANIFEST.tsv (empty
    without one, or without its name and target_name columns)."""
    folder = _data_dir(data_dir)
    mf = folder / MANIFEST_NAME if folder else None
    if mf is None or not mf.is_file():
        return {}
    try:
        m = pd.read_csv(mf, sep="\t", dtype=str, keep_default_na=False)
    except Exception:  # noqa: BLE001 - manifest_entry warns about an unreadable one when a file loads
        return {}
    if not {"did", "name", "target_name"} <= set(m.columns):
        return {}
    out = {}
    for r in m.to_dict("records"):
        if str(r["did"]).strip().isdigit() and r["target_name"].strip():
            did = int(r["did"])
            out[did] = dict(
                did=did,
                name=r["name"].strip(),
                target=r["target_name"].strip(),
                ignore=tuple(c for c in str(r.get("ignore_columns", "")).split(";") if c),
            )
    return out


def _openml_meta(dataset_id):
    """openml-python's description of a dataset (its cache first, then the server); no data."""
    import openml  # deferred: optional, only for OpenML datasets

    return openml.datasets.get_dataset(
        dataset_id, download_data=False, download_qualities=False, download_features_meta_data=False
    )


def _source_from_openml(d) -> Source:
    ignore = d.ignore_attribute or []
    ignore = [ignore] if isinstance(ignore, str) else list(ignore)
    if d.row_id_attribute:
        ignore.append(d.row_id_attribute)
    target = d.default_target_attribute
    if not target or "," in str(target):
        raise DatasetError(
            f"OpenML dataset {d.dataset_id} ({d.name}) has no single default target "
            f"({target!r}); download it and use it as a file: PATH:TARGET"
        )
    return Source(str(d.name), "openml", int(d.dataset_id), str(target), tuple(dict.fromkeys(ignore)))


def _openml_source(did: int, data_dir, download: bool) -> Source:
    man = _manifest_rows(data_dir).get(did)
    if man:
        return Source(man["name"], "openml", did, man["target"], man["ignore"])
    folder = _data_dir(data_dir)
    where = (
        f"no row for {did} in {folder / MANIFEST_NAME}"
        if folder
        else f"no data folder set (${DATA_DIR_ENV} or data_dir)"
    )
    fix = (
        f"Download it while online (openml.datasets.get_dataset({did}) keeps it in openml's cache), or "
        f"save https://www.openml.org/d/{did}'s ARFF as {folder or '<data folder>'}/{did}.arff with a "
        f"{MANIFEST_NAME} row (did, name, target_name, ignore_columns)"
    )
    if not download:
        raise DatasetMetadataError(
            f"OpenML dataset {did} is not one of the paper's 30 and {where}; download is off. {fix}."
        )
    try:
        return _source_from_openml(_openml_meta(did))
    except DatasetError:
        raise
    except Exception as e:  # noqa: BLE001 - no network, unknown id, server error
        if "Unknown dataset" in str(e):
            raise UnknownDatasetError(f"OpenML has no dataset {did} ({str(e)[:120]})") from None
        raise DatasetMetadataError(
            f"OpenML dataset {did} is not one of the paper's 30, {where}, and OpenML could not be "
            f"reached ({type(e).__name__}: {str(e)[:150]}). {fix}."
        ) from None


def _openml_by_name(name: str, close) -> Source:
    try:
        return _source_from_openml(_openml_meta(name))
    except DatasetError:
        raise
    except Exception as e:  # noqa: BLE001
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise UnknownDatasetError(
            f"unknown dataset {name!r}: not one of the paper's 30 nor in the data folder's "
            f"{MANIFEST_NAME}, and OpenML could not look the name up ({type(e).__name__}: "
            f"{str(e)[:150]}).{hint} Give an OpenML id, or your own table as PATH:TARGET."
        ) from None


def expand(item, data_dir=None, download: bool = True) -> list[Source]:
    """The datasets of one entry of a dataset list: an OpenML suite or study (``suite:99``,
    ``suite:OpenML-CC18``, ``{suite: 99}``, ``study:...``) gives each of its datasets, anything
    else the one :func:`source` gives.

    A suite's listing (its dataset ids) is read from ``<data_dir>/suites/<id or alias>.json``
    (``{"id": 99, "alias": "OpenML-CC18", "data": [3, 6, ...]}``; any file there whose id or alias
    matches), else from OpenML (``openml.study.get_suite`` / ``get_study``), and then saved there.
    Offline without that file: a :class:`DatasetMetadataError` saying what to write."""
    kind = key = None
    if isinstance(item, Mapping) and set(item) in ({"suite"}, {"study"}):
        kind, key = next(iter(item.items()))
    elif isinstance(item, str) and item.strip().lower().startswith(("suite:", "study:")):
        kind, key = item.strip().split(":", 1)
        kind = kind.lower()
    if kind is None:
        return [source(item, data_dir, download)]
    key = "" if key is None else str(key).strip()
    if not key:
        raise UnknownDatasetError(f"{item!r}: name the suite, e.g. suite:99 or suite:OpenML-CC18")
    dids = suite_datasets(key, kind, data_dir, download)
    return [source(d, data_dir, download) for d in dids]


def suite_datasets(key: str, kind: str = "suite", data_dir=None, download: bool = True) -> list[int]:
    """The dataset ids of an OpenML suite (``kind`` "suite") or study, by id or alias; see :func:`expand`."""
    folder = _data_dir(data_dir)
    sdir = folder / SUITES_DIR if folder else None
    if sdir is not None and sdir.is_dir():
        for f in sorted(sdir.glob("*.json")):
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise DatasetError(
                    f"{f}: not a readable suite listing ({type(e).__name__}: {e}); fix or delete it"
                ) from None
            names = {str(d.get("id", "")).lower(), str(d.get("alias") or "").lower(), f.stem.lower()}
            if key.lower() in names:
                data = d.get("data")
                if (
                    not isinstance(data, list)
                    or not data
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in data)
                ):
                    raise DatasetError(f"{f}: 'data' must be a non-empty list of OpenML dataset ids, got {data!r}")
                return list(data)
    where = f"no {SUITES_DIR}/{key}.json in {folder}" if folder else f"no data folder set (${DATA_DIR_ENV})"
    fix = (
        f"run once online (the listing is then saved there), or write {folder or '<data folder>'}/"
        f'{SUITES_DIR}/{key}.json as {{"id": ID, "alias": "{key}", "data": [dataset ids]}}'
    )
    if not download:
        raise DatasetMetadataError(f"OpenML {kind} {key!r}: {where}, and download is off; {fix}")
    try:
        import openml  # deferred: optional, only for OpenML datasets

        ident = int(key) if key.isdigit() else key
        st = openml.study.get_suite(ident) if kind == "suite" else openml.study.get_study(ident)
        data = [int(x) for x in (st.data or [])]
    except Exception as e:  # noqa: BLE001
        raise DatasetMetadataError(
            f"OpenML {kind} {key!r}: {where}, and OpenML could not be reached "
            f"({type(e).__name__}: {str(e)[:150]}); {fix}"
        ) from None
    if sdir is not None:
        try:
            sdir.mkdir(parents=True, exist_ok=True)
            (sdir / f"{key}.json").write_text(
                json.dumps({"id": st.id, "alias": getattr(st, "alias", None), "name": st.name, "data": data}) + "\n"
            )
        except OSError:
            pass  # a read-only data folder: the listing is fetched again next time
    return data


SHARED_DATA_DIR = "../shared/datasets/openml-cc18"
"""The local copies' folder beside a checkout (relative to the project root)."""


def data_dir(explicit=None) -> Path | None:
    """The folder of ``<did>.arff`` files: the argument, else ``$TCC_DATA_DIR``, else
    :data:`SHARED_DATA_DIR` where that folder exists (as the sweep finds it), else None."""
    d = explicit if explicit is not None else os.environ.get(DATA_DIR_ENV)
    if d:
        return Path(d).expanduser()
    beside = paths.resolve(SHARED_DATA_DIR)
    return beside.resolve() if beside.is_dir() else None


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
        kind = (
            "it looks gzip-compressed: unpack it"
            if head[:2] == b"\x1f\x8b"
            else "it looks like a zip archive: unpack it"
            if head[:2] == b"PK"
            else "it is damaged or not an ARFF file; re-download it"
        )
        raise DatasetError(
            f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}): "
            f"an ARFF file is text, and {kind}"
        ) from None
    except arff.ArffException as e:
        line = getattr(e, "line", -1)
        where = f"{path}, line {line}" if isinstance(line, int) and line > 0 else f"{path}"
        raise DatasetError(
            f"{where}: not a valid ARFF file (liac-arff {type(e).__name__}: {e}); "
            "the copy is damaged or not ARFF: re-download it"
        ) from None
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
    """``{did: {"sha256", "rows", "cols"}}`` of a MANIFEST.tsv (cached per file version).

    Only ``did`` is required: a manifest of ``did, name, target_name, ignore_columns`` (the form
    that describes a dataset outside the paper's 30) is read, and a check whose column or cell is
    absent or empty is not made."""
    m = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    m.columns = [str(c).strip() for c in m.columns]
    if "did" not in m.columns:
        raise ValueError("no column did")
    out = {}
    for r in m.to_dict("records"):
        if str(r["did"]).strip().isdigit():
            out[int(r["did"])] = {k: str(r.get(k, "")).strip() for k in ("sha256", "rows", "cols")}
            out[int(r["did"])]["sha256"] = out[int(r["did"])]["sha256"].lower()
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
        warnings.warn(
            f"{mf}: unreadable ({type(e).__name__}: {e}); {Path(path).name} is loaded unchecked", stacklevel=3
        )
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
            f"{MANIFEST_NAME} was written; {fix} (or, for a deliberate new copy, update {MANIFEST_NAME})"
        )
    return df


def _load_arff(src: Source, path: Path) -> Dataset:
    df = _checked_arff_frame(path, src.did)
    if src.target not in df.columns:
        raise DatasetError(_missing_arff_target(path, src, list(df.columns)))
    y = df.pop(src.target)
    X = df.drop(columns=[c for c in src.ignore if c in df.columns])
    if src.kind == "openml":  # not the paper's curated copies: any column type a table may have
        X, y = _standard_types(X, src.name), y.astype("category")
    return Dataset(src.name, src.did, X, y, str(path))


TARGET_LIKE = ("class", "target", "label", "y", "outcome")
"""Column names (any case) that look like a table's target."""


def _missing_arff_target(path: Path, src: Source, columns: list) -> str:
    """The message for an ARFF file without the target column its source names: where that name
    came from (the ``MANIFEST.tsv`` row, when it is the manifest's) and the column that looks like
    the target."""
    row = _manifest_rows(path.parent).get(src.did) if src.did is not None else None
    from_manifest = row is not None and row["target"] == src.target
    said = f"{path.parent / MANIFEST_NAME} names target_name {src.target!r} for {src.did}" if from_manifest else ""
    guess, why = _target_like(columns, src.target)
    fix = f"set that row's target_name to {guess!r}" if from_manifest else f"give the file as {path}:{guess}"
    return (
        f"{path}: no column {src.target!r}" + (f" ({said})" if said else "") + f"; the column that looks like the "
        f"target is {guess!r} ({why}): {fix}; its columns: {_names(columns, 8)}"
    )


def _target_like(columns: list, target: str) -> tuple[str, str]:
    """The column most like a target named ``target``, and why: the closest name, a target-like
    name, else the last column (where OpenML's ARFF files put it)."""
    names = [str(c) for c in columns]
    close = difflib.get_close_matches(target.lower(), [n.lower() for n in names], n=1, cutoff=0.6)
    if close:
        return next(n for n in names if n.lower() == close[0]), "the closest name"
    for n in names:
        if n.lower() in TARGET_LIKE:
            return n, "named like a target"
    return names[-1], "the last column, where OpenML puts the target"


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
        "(X.loc[:, ~X.columns.duplicated()])"
    )


def numeric_text_tokens(s: pd.Series) -> pd.Series | None:
    """The non-numeric tokens of a text column that otherwise holds numbers, with their counts.

    For an object/string column: its non-missing values are read with ``pd.to_numeric`` (the
    text ``nan`` counts as a number: a missing one).  When at least :data:`NUMERIC_TEXT_SHARE`
    of them are numbers and at most :data:`NUMERIC_TEXT_MAX_TOKENS` distinct tokens are not,
    those tokens are returned (a Series: token -> count; empty when every value is a number).
    None for any other column (not text, nothing present, or mostly words).
    """
    if isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
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

    Datetime columns become numeric parts and durations seconds (:func:`tcclib.data.columns.expand_datetimes`).
    Refused (:class:`DatasetError`): duplicate column names, and text columns that are numbers
    with a few stray tokens (:func:`numeric_text_tokens`).  A text column of numbers only becomes
    categorical as before, with a warning (convert it with ``pd.to_numeric`` if it is a number).
    """
    _check_unique_names(X, name)
    X, _ = expand_datetimes(X.copy())  # dates -> numeric parts, durations -> seconds (tcclib.data.columns)
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
            f"X[{c0!r}] = X[{c0!r}].astype('category')"
        )
    if all_numbers:
        warnings.warn(
            f"{name}: text column(s) {_names(all_numbers)} hold only numbers and become categorical "
            "(one level per distinct value); if they are numeric, convert them with pd.to_numeric, "
            "and to keep them categorical without this warning, make them category yourself",
            stacklevel=3,
        )
    return X


def _load_openml(src: Source, where: str) -> Dataset:
    """Download with openml-python (its cache first); any failure -> DataUnavailableError."""
    name, did, target = src.name, src.did, src.target
    try:
        import openml  # deferred: optional, only for OpenML datasets

        ds = openml.datasets.get_dataset(
            did, download_data=True, download_qualities=False, download_features_meta_data=False
        )
        X, y, _, _ = ds.get_data(target=target)  # a DataFrame in openml 0.15 and 0.16
    except Exception as e:  # noqa: BLE001 - requests/OSError/openml errors all mean "not reachable"
        raise DataUnavailableError(
            f"dataset {name} (OpenML {did}): {where}, and OpenML could not be reached "
            f"({type(e).__name__}: {str(e)[:200]}). Set ${DATA_DIR_ENV} or pass data_dir= to a "
            f"folder holding {did}.arff."
        ) from e
    X = _standard_types(pd.DataFrame(X).drop(columns=[c for c in src.ignore if c in X.columns]), name)
    y = pd.Series(y, name=target).astype("category")
    return Dataset(name, did, X.reset_index(drop=True), y.reset_index(drop=True), "openml")


def _load_breast_cancer() -> Dataset:
    from sklearn.datasets import load_breast_cancer  # deferred: scikit-learn loads only when this runs

    b = load_breast_cancer(as_frame=True)
    y = pd.Series(pd.Categorical.from_codes(b.target.to_numpy(), list(b.target_names)), name="target")
    return Dataset(BREAST_CANCER, None, b.data.astype("float64"), y, "sklearn")


def local_source(name_or_did, data_dir=None) -> tuple[Path | None, dict | None]:
    """The local file :func:`load_dataset` reads ``name_or_did`` from (a table file, or
    ``<data_dir>/<did>.arff`` where it is there) and how it reads it beside the file's bytes (its
    target column, the columns it leaves out and a CSV's reading options: ``{"target": ...,
    "ignore": [...], "options": {...}}``); ``(None, None)`` for a name that does not resolve without
    a download, no file for breast_cancer (scikit-learn's) or a download."""
    try:
        src = source(name_or_did, data_dir, download=False)
    except (ValueError, DataUnavailableError):
        return None, None
    if src.kind == "file":
        return Path(src.path), _reading(src)
    folder = _data_dir(data_dir) if src.did is not None else None
    path = folder / f"{src.did}.arff" if folder else None
    return (path if path is not None and path.is_file() else None), _reading(src)


def _reading(src: Source) -> dict | None:
    """How a source's file is read (:func:`local_source`); None for breast_cancer, which has none."""
    if src.kind == "sklearn":
        return None
    return {"target": src.target, "ignore": sorted(src.ignore), "options": dict(src.options)}


def source_file(name_or_did, data_dir=None) -> Path | None:
    """The local file :func:`load_dataset` reads ``name_or_did`` from (:func:`local_source`)."""
    return local_source(name_or_did, data_dir)[0]


def load_dataset(name_or_did, data_dir=None, allow_download: bool = True) -> Dataset:
    """Load a dataset: ``breast_cancer``, any OpenML dataset (name or id; the paper's 30 and any
    other, see :func:`source`), or a local table ``PATH:TARGET`` (CSV, TSV, Parquet, ARFF).

    An OpenML dataset is read from ``<data_dir>/<did>.arff`` (``data_dir`` argument, else
    ``$TCC_DATA_DIR``) when that file exists; otherwise it is downloaded with openml-python,
    unless ``allow_download`` is False. No copy and no download raise
    :class:`DataUnavailableError`. A local copy that disagrees with the ``MANIFEST.tsv`` beside
    it, or cannot be parsed, raises :class:`DatasetError` naming the file. A local table is
    read with pandas (text columns become categorical, as :func:`from_frame` does). The result
    is checked with :func:`validate_dataset`.
    """
    src = source(name_or_did, data_dir, allow_download)
    if src.kind == "sklearn":
        return _as_loaded(validate_dataset(_load_breast_cancer()))
    if src.kind == "file":
        return _as_loaded(dataclasses.replace(validate_dataset(_read_file(src)), reading=_reading(src)))
    name, did = src.name, src.did
    folder = _data_dir(data_dir)
    path = folder / f"{did}.arff" if folder else None
    where = f"no file {did}.arff in {folder}" if folder else f"no data directory set (${DATA_DIR_ENV})"
    if path is not None and path.is_file():
        ds = _load_arff(src, path)
    elif allow_download:
        ds = _load_openml(src, where)
    else:
        raise DataUnavailableError(
            f"dataset {name} (OpenML {did}): {where}, and download is off. Set ${DATA_DIR_ENV} or "
            f"pass data_dir= to a folder holding {did}.arff (or allow the OpenML download)."
        )
    return _as_loaded(dataclasses.replace(validate_dataset(ds), reading=_reading(src)))


_data_dir = data_dir  # load_dataset's parameter shadows the function's name


def data_digest(X: pd.DataFrame, y: pd.Series) -> str:
    """The first 16 hex of a digest of a table's features and target: their values, row order,
    column names and types."""
    digest = hashlib.sha256(repr([(str(c), str(t)) for c, t in X.dtypes.items()] + [str(y.dtype)]).encode())
    for part in (X, y):
        digest.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def _as_loaded(ds: Dataset) -> Dataset:
    """``ds`` with its digest and shape as :func:`load_dataset` returns it (``Dataset.loaded_as``)."""
    return dataclasses.replace(ds, loaded_as=(data_digest(ds.X, ds.y), *ds.X.shape))


def changed_since_loaded(ds: Dataset) -> str | None:
    """How ``ds`` differs from the table :func:`load_dataset` returned it as (a cell that dropped
    columns, changed or took rows: ``"569 rows x 10 columns, loaded as 569 x 30"``, ``"its values,
    loaded as 569 rows x 30 columns"``), None when it is that table or did not come from
    :func:`load_dataset` (a frame of the user's, a Dataset built by hand)."""
    if ds.loaded_as is None:
        return None
    digest, rows, columns = ds.loaded_as
    if data_digest(ds.X, ds.y) == digest:
        return None
    if ds.X.shape == (rows, columns):
        return f"its values or columns' names, loaded as {rows} rows x {columns} columns"
    return f"{ds.X.shape[0]} rows x {ds.X.shape[1]} columns, loaded as {rows} x {columns}"


# --------------------------------------------------------------------------- checks, own tables

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""Largest finite float32 (about 3.4e38): training runs in float32, so larger numbers are refused."""


def validate_dataset(ds: Dataset) -> Dataset:
    """Return ``ds`` unchanged, or raise a clear :class:`DatasetError` for a table the method cannot use.

    Refused: no rows or no feature columns, duplicate column names, X/y length mismatch, missing
    target values, a single class, infinite numbers, finite numbers beyond float32's range
    (``|x| >`` :data:`FLOAT32_MAX`: they become inf in training's float32), columns that are
    neither numeric nor category. Missing
    feature values (NaN) are allowed; preprocessing imputes them.  Class sizes are checked where the split is made
    (:func:`tcclib.data.preprocess.prepare`), as they depend on the split fractions.
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
        raise DatasetError(
            f"{ds.name}: the target has one class only ({classes[0]!r}); classification needs at least two"
        )
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
        raise DatasetError(
            f"{ds.name}: non-finite numbers (inf) in column(s) {_names(inf)}; "
            f"{sum(inf.values())} cell(s) in all: replace them with NaN (missing values "
            "are imputed) or with finite numbers"
        )
    if big:
        raise DatasetError(
            f"{ds.name}: numbers too large for float32 (|x| > {FLOAT32_MAX:.3g}) in column(s) {_names(big)}; "
            f"{sum(big.values())} cell(s), the largest {largest:.3g}: training runs in float32, where they "
            "become inf; rescale the column(s) (divide by a power of ten, or take a log) or replace those "
            "values with NaN"
        )
    other = [c for c in X.columns if c not in num and not isinstance(X[c].dtype, pd.CategoricalDtype)]
    if other:
        raise DatasetError(
            f"{ds.name}: columns must be numeric or category: {', '.join(map(str, other[:10]))} "
            "(from_frame converts text and bool columns)"
        )
    return ds


validate = validate_dataset  # older name, kept for callers


def from_frame(X: pd.DataFrame, y, name: str = "custom") -> Dataset:
    """Wrap your own table: object/string/bool columns become category, numbers float64, dates
    numeric parts and durations seconds (:func:`tcclib.data.columns.expand_datetimes`).

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
        y = pd.Series(
            y.to_numpy() if isinstance(y, (pd.Series, pd.Index)) else list(y), name=getattr(y, "name", None)
        ).astype("category")
    if len(y) != len(X):
        raise DatasetError(f"{name}: {len(X)} rows but {len(y)} target values")
    y = y.rename(y.name if y.name is not None else "target")
    return validate_dataset(Dataset(name, None, X, y, "frame"))


def _shown_source(source: str) -> str:
    """A dataset's source as a summary shows it: an ARFF file by its name, a file under the project
    root relative to it (no folder of this machine in a rendered notebook), anything else as it is."""
    if source.endswith(".arff"):
        return Path(source).name
    return paths.relative_to_root(source) if Path(source).is_absolute() else source


def summary(ds: Dataset) -> pd.Series:
    """Rows, features (nominal / numeric), missing values and class balance of a dataset."""
    nominal = sum(isinstance(t, pd.CategoricalDtype) for t in ds.X.dtypes)
    counts = ds.y.value_counts()
    return pd.Series(
        {
            "dataset": ds.name,
            "OpenML id": ds.did if ds.did is not None else "-",
            "rows": len(ds.X),
            "features": ds.X.shape[1],
            "nominal": nominal,
            "numeric": ds.X.shape[1] - nominal,
            "missing cells": int(ds.X.isna().sum().sum()),
            "rows with missing": int(ds.X.isna().any(axis=1).sum()),
            "classes": len(counts),
            "largest class": f"{counts.iloc[0]} ({counts.iloc[0] / len(ds.y):.1%})",
            "smallest class": f"{counts.iloc[-1]} ({counts.iloc[-1] / len(ds.y):.1%})",
            "source": _shown_source(ds.source),
        }
    )
