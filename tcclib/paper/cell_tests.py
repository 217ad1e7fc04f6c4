"""The per-cell tests: one dataset x method x metric, our seeds against the paper's mean.

:func:`welch_test` (are they different?), :func:`tost` (are they within a margin?), :func:`holm`
and :func:`add_cell_tests`, which adds both to a comparison frame; see :mod:`tcclib.paper.stats`
for how the report uses them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as _st

from tcclib.method import registry

#: significance level of every test here
ALPHA = 0.05
#: equivalence margin for accuracy, in percentage points (tables and paper: percent; results.csv: fractions)
ACCURACY_MARGIN = 1.0
#: equivalence margin for AUROC (a fraction, as in the tables)
AUROC_MARGIN = 0.01
MARGINS = {"accuracy": ACCURACY_MARGIN, "auroc": AUROC_MARGIN}
#: seeds behind every published mean and standard error
PAPER_N = 8
#: p-values the paper states in its text: class vs random, Wilcoxon signed-rank over datasets
PAPER_WILCOXON_P = {"accuracy": 0.038}
#: methods scored against a paper column that another method is scored against as well (a live
#: view of the registry: :func:`tcclib.method.registry.separate_methods`)
SEPARATE = registry.LiveNames(registry.separate_methods)
#: which paper table each (metric, kind) is
TABLE_NAMES = {
    ("accuracy", "how"): "Table 2",
    ("auroc", "how"): "Table 3",
    ("accuracy", "where"): "Table 4",
    ("auroc", "where"): "Table 5",
}
#: paper column (the paper's own names) of each of our methods, per kind (a live view of the
#: registry: :func:`tcclib.method.registry.compared_columns`)
PAPER_COLUMNS = registry.LiveMapping(lambda: {kind: registry.compared_columns(kind) for kind in registry.TABLE_KINDS})


# --------------------------------------------------------------------------- per cell


def paper_sample_sd(se, n: int = PAPER_N):
    """The sample std (ddof=1) behind a published se = std(ddof=0) / sqrt(n)."""
    return np.asarray(se, dtype=float) * np.sqrt(n) * np.sqrt(n / (n - 1))


def _tiny(x: float, scale: float) -> bool:
    return abs(x) <= 1e-9 * max(1.0, abs(scale))


def _welch_parts(m1, sd1, n1, m2, sd2, n2, extra_var: float = 0.0):
    """(diff, se of the difference, Welch-Satterthwaite df); None where no test is possible."""
    if not all(np.isfinite([m1, sd1, m2, sd2])) or n1 < 2 or n2 < 2:
        return None
    sd1 = 0.0 if _tiny(sd1, m1) else float(sd1)
    sd2 = 0.0 if _tiny(sd2, m2) else float(sd2)
    v1, v2 = sd1**2 / n1, sd2**2 / n2 + extra_var
    diff = float(m1 - m2)
    if _tiny(diff, max(abs(m1), abs(m2))):
        diff = 0.0
    v = v1 + v2
    if v == 0:
        return diff, 0.0, np.inf
    df = v**2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    return diff, math.sqrt(v), df


def welch_test(m1, sd1, n1, m2, sd2, n2, extra_var: float = 0.0) -> float:
    """Two-sided p-value of Welch's t-test of mean 1 = mean 2 from summary statistics.

    ``sd*`` are sample standard deviations (ddof=1), ``n*`` the sample sizes; ``extra_var`` is
    added to side 2's variance of the mean (e.g. the rounding of a published mean). Equal to
    ``scipy.stats.ttest_ind_from_stats(..., equal_var=False)``. Degenerate cases: fewer than two
    values on a side is NaN; both variances zero gives 0 for different means (a certain
    difference) and 1 for equal ones.
    """
    parts = _welch_parts(m1, sd1, n1, m2, sd2, n2, extra_var)
    if parts is None:
        return np.nan
    diff, se, df = parts
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return float(2 * _st.t.sf(abs(diff) / se, df))


def tost(m1, sd1, n1, m2, sd2, n2, margin: float, extra_var: float = 0.0) -> float:
    """p-value of the equivalence test |mean 1 - mean 2| < ``margin`` (TOST, Welch).

    Two one-sided Welch tests: H0 diff <= -margin against diff > -margin, and H0 diff >= margin
    against diff < margin; the p-value is the larger of the two (equivalence is shown when it is
    below alpha). Same degenerate cases as :func:`welch_test`; with both variances zero the
    difference is known exactly: 0 inside the margin, 1 outside.
    """
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    parts = _welch_parts(m1, sd1, n1, m2, sd2, n2, extra_var)
    if parts is None:
        return np.nan
    diff, se, df = parts
    if se == 0:
        return 0.0 if abs(diff) < margin else 1.0
    p_low = _st.t.sf((diff + margin) / se, df)
    p_high = _st.t.cdf((diff - margin) / se, df)
    return float(max(p_low, p_high))


def holm(p) -> np.ndarray:
    """Holm-adjusted p-values (family-wise error), NaN kept as NaN."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def add_cell_tests(
    cmp: pd.DataFrame,
    metric: str,
    margin: float | None = None,
    alpha: float = ALPHA,
    paper_n: int = PAPER_N,
    paper_rounding: float = 0.0,
) -> pd.DataFrame:
    """Add the per-cell tests to a :func:`tcclib.paper.tables.compare_with_paper` frame.

    New columns: ``diff_se`` (standard error of our mean minus the paper's), ``welch_p``
    (two-sided Welch test of our seeds against the paper's mean and
    reconstructed sample std, n = ``paper_n``), ``differ`` (``welch_p < alpha``), ``tost_p``,
    ``equivalent`` (``tost_p < alpha``: within ``margin``, default :data:`MARGINS` of the metric,
    in the table's units) and ``margin``. ``paper_rounding``: width of the last digit the paper
    printed (0.01 for AUROC's two decimals); its uniform rounding error (variance w²/12) is added
    to the paper's side. Default 0: the published numbers taken as exact.
    """
    margin = MARGINS[metric] if margin is None else float(margin)
    out = cmp.copy()
    sd2 = paper_sample_sd(out["paper_se"].astype(float), paper_n) if len(out) else []
    extra = paper_rounding**2 / 12
    if "sd" not in out.columns:
        raise ValueError("add_cell_tests needs our sample std per cell (column 'sd')")
    w, t, se = [], [], []
    for m1, s1, n1, m2, s2 in zip(out["mean"], out["sd"], out["n"], out["paper_mean"], sd2):
        w.append(welch_test(m1, s1, int(n1), m2, s2, paper_n, extra))
        t.append(tost(m1, s1, int(n1), m2, s2, paper_n, margin, extra))
        parts = _welch_parts(m1, s1, int(n1), m2, s2, paper_n, extra)
        se.append(parts[1] if parts is not None else np.nan)
    out["diff_se"] = np.asarray(se, dtype=float)
    out["welch_p"] = np.asarray(w, dtype=float)
    out["differ"] = (out["welch_p"] < alpha).astype(bool)
    out["tost_p"] = np.asarray(t, dtype=float)
    out["equivalent"] = (out["tost_p"] < alpha).astype(bool)
    out["margin"] = margin
    return out
