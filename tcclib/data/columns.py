"""Column types the method does not take as they come: dates, times of day, durations, and
text columns of dates in a CSV file.  One convention for the whole project (the estimator,
:func:`tcclib.data.sources.from_frame` and your own CSV/TSV/Parquet files):

* a datetime column ``<col>`` (``datetime64``, with or without a time zone) becomes numeric
  columns ``<col>_year``, ``<col>_month``, ``<col>_day``, ``<col>_weekday`` (Monday 0), plus
  ``<col>_hour`` (fractional: 13:30 is 13.5) when any value has a time of day; a missing date
  is missing in every part (imputed like any missing number).  A one-line note says so
  (:class:`DatetimeNote`, a ``UserWarning``: ``warnings.simplefilter("ignore", DatetimeNote)``
  silences it).  A date is thereby not a categorical column with one level per date, so new
  dates at prediction are ordinary numbers;
* a duration column (``timedelta64``) becomes its length in seconds (float), same name;
* in a CSV/TSV file, a text column is read as dates only when pandas can parse *every*
  non-missing value with one format (one that :func:`pandas.tseries.api.guess_datetime_format`
  guesses from its first value, month first, else day first); otherwise it stays text
  (categorical).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

DATE_PARTS = ("year", "month", "day", "weekday")
"""The parts every datetime column becomes (``hour`` is added when a value has a time of day)."""


class DatetimeNote(UserWarning):
    """The one-line note that datetime columns were expanded into numeric parts."""


def is_datetime(s: pd.Series) -> bool:
    """``s`` holds datetimes (``datetime64``, time zone or not)."""
    return pd.api.types.is_datetime64_any_dtype(s.dtype)


def datetime_parts(s: pd.Series) -> tuple[str, ...]:
    """The parts a datetime column expands into: :data:`DATE_PARTS`, and ``hour`` when any value
    has a time of day."""
    present = s.dropna()
    timed = bool(len(present)) and bool(
        ((present.dt.hour != 0) | (present.dt.minute != 0) | (present.dt.second != 0)).any()
    )
    return (*DATE_PARTS, "hour") if timed else DATE_PARTS


def _part(s: pd.Series, part: str) -> pd.Series:
    if part == "hour":
        v = s.dt.hour + s.dt.minute / 60 + s.dt.second / 3600
    else:
        v = s.dt.day_of_week if part == "weekday" else getattr(s.dt, part)
    return v.astype("float64")


def expand_datetimes(frame: pd.DataFrame, parts: dict | None = None, note: bool = True):
    """``frame`` with each datetime column replaced by its numeric parts (see the module docstring)
    and each duration column by seconds; returns ``(frame, parts)``.

    ``parts``: ``{column: (part, ...)}`` of a previous call (the fitted ones, at prediction): those
    columns are expanded into the same parts (a column given as text then is parsed as dates; one
    that cannot be is a ``ValueError`` naming it).  ``None``: every datetime column, parts chosen
    here.  ``note``: warn with a :class:`DatetimeNote` when a column was expanded.
    """
    fitted = parts is not None
    parts = dict(parts or {})
    if not fitted:
        for c in frame.columns:
            if is_datetime(frame[c]):
                parts[c] = datetime_parts(frame[c])
    durations = [c for c in frame.columns if pd.api.types.is_timedelta64_dtype(frame[c].dtype)]
    if not parts and not durations:
        return frame, parts
    taken = [f"{c}_{p}" for c in parts for p in parts[c] if f"{c}_{p}" in frame.columns]
    if taken:
        raise ValueError(
            f"datetime column(s) expand into name(s) that other columns already have: "
            f"{', '.join(map(repr, taken))}; rename those columns"
        )
    out = {}
    for c in frame.columns:
        s = frame[c]
        if c in parts:
            if not is_datetime(s):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)  # "could not infer format": parsed one by one
                        s = pd.to_datetime(s)
                except (ValueError, TypeError) as e:
                    raise ValueError(
                        f"column {c!r} held dates in training but here holds values that are not dates "
                        f"({str(e)[:120]}); give it as dates (pd.to_datetime)"
                    ) from None
            for p in parts[c]:
                out[f"{c}_{p}"] = _part(s, p)
        elif c in durations:
            out[c] = s.dt.total_seconds().astype("float64")
        else:
            out[c] = s
    expanded = pd.DataFrame(out, index=frame.index)
    if note and parts and not fitted:
        shown = ", ".join(f"{c!r} -> {', '.join(f'{c}_{p}' for p in ps)}" for c, ps in list(parts.items())[:5])
        warnings.warn(f"datetime column(s) expanded into numeric parts: {shown}", DatetimeNote, stacklevel=3)
    return expanded, parts


def parse_date_text(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text column whose non-missing values all parse as dates with one format
    turned into ``datetime64`` (see the module docstring); other columns unchanged."""
    out = frame.copy()
    for c in frame.columns:
        s = frame[c]
        if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype) or is_datetime(s):
            continue
        present = s.dropna()
        if present.empty or not all(isinstance(v, str) for v in present.iloc[:100]):
            continue
        first = str(present.iloc[0]).strip()
        formats = {pd.tseries.api.guess_datetime_format(first, dayfirst=d) for d in (False, True)} - {None}
        for fmt in sorted(formats):  # (month first and day first, when the first value allows both)
            try:
                out[c] = pd.to_datetime(s.str.strip(), format=fmt, errors="raise")
                break
            except (ValueError, TypeError):
                continue
    return out


def float_columns_out_of_range(frame: pd.DataFrame, limit: float) -> dict:
    """``{column: (n_inf, n_over, largest)}`` of the numeric columns holding inf or finite values
    beyond ``limit`` (float32's largest, for training in float32)."""
    bad = {}
    for c in frame.columns:
        s = frame[c]
        if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s.dtype):
            continue
        if pd.api.types.is_bool_dtype(s.dtype):
            continue
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        n_inf = int(np.isinf(v).sum())
        with np.errstate(invalid="ignore"):
            over = np.isfinite(v) & (np.abs(v) > limit)
        if n_inf or over.any():
            bad[c] = (n_inf, int(over.sum()), float(np.abs(v[over]).max()) if over.any() else 0.0)
    return bad


__all__ = [
    "DATE_PARTS",
    "DatetimeNote",
    "datetime_parts",
    "expand_datetimes",
    "float_columns_out_of_range",
    "is_datetime",
    "parse_date_text",
]
