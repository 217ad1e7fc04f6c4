"""Statistical tests of the reproduction: per cell against the paper, and over datasets.

**Per cell** (one dataset x method x metric of Tables 2-5): our seeds against the paper's
published mean and standard error.

* :func:`welch_test`: two-sided Welch t-test of "our mean = the paper's mean". The paper's
  standard error is ``std(ddof=0) / sqrt(8)`` over 8 seeds, so its sample std (ddof=1) is
  ``se * sqrt(8) * sqrt(8 / 7)`` (:func:`paper_sample_sd`), with n = 8.
* :func:`tost`: equivalence test (two one-sided Welch tests, TOST) of ``|ours - paper| < margin``,
  with the margins :data:`ACCURACY_MARGIN` (1 percentage point: the tables show accuracy in
  percent, while ``results.csv`` stores fractions) and :data:`AUROC_MARGIN` (0.01). A cell is
  *equivalent* when the TOST p-value is below :data:`ALPHA`.
* :func:`cell_tests`: every cell of Tables 2-5 with both tests, marked ``distinct`` (each
  dataset x paper column x metric once: Table 4's uniform-choice column *is* Table 2's
  ``class`` column, so those cells count once) and ``separate`` (``class_most_published``, the
  authors' flipped run, scored against the paper's ``most_correlated`` column that
  ``class_most`` is scored against too: reported on its own, never in the distinct counts).
  :func:`cell_summary` counts them.

**Over datasets** (per-dataset means, one value per dataset and method):

* :func:`sign_test`: one-sided binomial test of the significant wins among the decided datasets
  (the counts behind the paper's Figure 3); the claims' verdicts rest on it.
* :func:`wilcoxon` / :func:`class_vs_random`: Wilcoxon signed-rank test on the per-dataset means
  (the paper reports p = 0.038 for class vs random accuracy, which is the two-sided test on its
  Table 2 means).
* :func:`friedman` + :func:`nemenyi_cd` (:func:`rank_test`): Friedman test of all methods and
  baselines over the datasets, with the Nemenyi critical difference from the studentized range
  distribution (Demšar 2006), and :func:`plot_cd`, the critical-difference diagram.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as _st

from tcclib.method import registry
from tcclib.paper import tables
from tcclib.paper.cell_tests import (  # noqa: F401  (part of this module's API)
    ACCURACY_MARGIN,
    ALPHA,
    AUROC_MARGIN,
    MARGINS,
    PAPER_COLUMNS,
    PAPER_N,
    PAPER_WILCOXON_P,
    SEPARATE,
    TABLE_NAMES,
    _tiny,
    _welch_parts,
    add_cell_tests,
    holm,
    paper_sample_sd,
    tost,
    welch_test,
)

__all__ = [
    "ALPHA",
    "ACCURACY_MARGIN",
    "AUROC_MARGIN",
    "MARGINS",
    "PAPER_N",
    "PAPER_WILCOXON_P",
    "SEPARATE",
    "paper_sample_sd",
    "welch_test",
    "tost",
    "holm",
    "add_cell_tests",
    "cell_tests",
    "cell_summary",
    "sign_test",
    "dataset_means",
    "wilcoxon",
    "hodges_lehmann",
    "paper_wilcoxon",
    "class_vs_random",
    "friedman",
    "nemenyi_cd",
    "cd_groups",
    "rank_test",
    "paper_rank_test",
    "plot_cd",
]


def cell_tests(results: pd.DataFrame, alpha: float = ALPHA, paper_rounding: dict | None = None) -> pd.DataFrame:
    """Every cell of Tables 2-5 that our results share with the paper, with both tests.

    Columns of :func:`tcclib.paper.tables.compare_with_paper` and :func:`add_cell_tests`, plus
    ``metric``, ``kind``, ``table`` ("Table 2" ...), ``paper_column`` (the paper's name of the
    column), ``separate`` (True for :data:`SEPARATE` methods: ``class_most_published``, scored
    against ``most_correlated`` like ``class_most``) and ``distinct`` (True for the first
    occurrence of each (metric, dataset, our method), excluding the separate ones: Table 4's
    ``random_features`` cells are Table 2's ``class`` cells and are not distinct again).
    ``paper_rounding``: ``{metric: width}`` passed to :func:`add_cell_tests`.
    """
    parts = []
    for metric in ("accuracy", "auroc"):
        for kind in ("how", "where"):
            cmp = tables.compare_with_paper(results, metric, kind)
            if cmp.empty:
                continue
            if alpha != ALPHA or (paper_rounding or {}).get(metric):
                cmp = add_cell_tests(cmp, metric, alpha=alpha, paper_rounding=(paper_rounding or {}).get(metric, 0.0))
            cmp.insert(0, "metric", metric)
            cmp.insert(1, "kind", kind)
            cmp.insert(2, "table", TABLE_NAMES[metric, kind])
            cmp.insert(5, "paper_column", cmp["method"].map(registry.compared_columns(kind)))
            parts.append(cmp)
    if not parts:
        return pd.DataFrame()
    cells = pd.concat(parts, ignore_index=True)
    cells["separate"] = cells["method"].isin(registry.separate_methods())
    key = cells[["metric", "did", "method"]].astype(str).agg("|".join, axis=1)
    cells["distinct"] = ~cells["separate"] & ~key.duplicated()
    return cells


def cell_summary(cells: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Counts of the per-cell tests, per metric: the distinct cells, then the separate ones.

    Rows: for each metric, ``distinct`` (Tables 2 and 4 for accuracy, 3 and 5 for AUROC, each
    dataset x paper column once) and ``class_most_published`` (vs. the paper's
    ``most_correlated``). Columns: metric, cells, tables, ``inside`` (the paper's mean in our
    95 % interval), ``differ`` (Welch p < alpha), ``differ (Holm)`` (after Holm's correction over
    the row's cells), ``equivalent`` (TOST within the margin), ``equivalent, no difference``,
    ``differ, not equivalent``, ``inconclusive`` (neither test decides), ``margin``, ``median se
    of diff`` (the typical standard error of ours - paper: a TOST can show equivalence only where
    it is well below the margin).
    """
    cols = ["metric", "cells", "scope", "tables", "inside", "differ", "differ (Holm)", "equivalent"]
    cols += ["equivalent, no difference", "differ, not equivalent", "inconclusive", "margin", "median se of diff"]
    if cells is None or cells.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for metric, g in cells.groupby("metric", sort=False):
        for scope, part in (("distinct", g[g["distinct"]]),) + tuple(
            (m, g[g["method"] == m]) for m in registry.separate_methods()
        ):
            if part.empty:
                continue
            eq, dif = part["equivalent"].astype(bool), part["differ"].astype(bool)
            rows.append(
                {
                    "metric": metric,
                    "cells": len(part),
                    "scope": scope,
                    "tables": " + ".join(dict.fromkeys(part["table"])),
                    "inside": int(part["inside"].sum()),
                    "differ": int(dif.sum()),
                    "differ (Holm)": int((holm(part["welch_p"]) < alpha).sum()),
                    "equivalent": int(eq.sum()),
                    "equivalent, no difference": int((eq & ~dif).sum()),
                    "differ, not equivalent": int((dif & ~eq).sum()),
                    "inconclusive": int((~eq & ~dif).sum()),
                    "margin": part["margin"].iloc[0],
                    "median se of diff": float(part["diff_se"].median()) if "diff_se" in part else np.nan,
                }
            )
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------- over datasets


def sign_test(wins: int, decided: int, alternative: str = "greater") -> float:
    """One-sided (default) sign test: p of at least ``wins`` of ``decided`` under a fair coin.

    NaN when nothing is decided. ``alternative="less"``: p of at most ``wins``.
    """
    wins, decided = int(wins), int(decided)
    if decided <= 0:
        return np.nan
    return float(_st.binomtest(wins, decided, 0.5, alternative=alternative).pvalue)


def dataset_means(results: pd.DataFrame, metric: str, methods=None, complete: bool = True) -> pd.DataFrame:
    """Per-dataset means, wide: index dataset, one column per method (accuracy in percent).

    ``methods``: these columns, in this order (those absent from ``results`` left out);
    ``complete``: keep only the datasets where every column has a value.
    """
    s = tables.summarize(results, metric, methods)
    wide = s.pivot(index="dataset", columns="method", values="mean")
    order = [m for m in (methods if methods is not None else dict.fromkeys(s["method"])) if m in wide.columns]
    wide = wide.reindex(columns=order)
    wide.columns.name = None
    return wide.dropna() if complete else wide


def wilcoxon(a, b, alternative: str = "two-sided") -> dict:
    """Wilcoxon signed-rank test of paired per-dataset values ``a`` vs ``b``.

    Zero differences are dropped (scipy's default ``zero_method="wilcox"``); ``n`` counts the
    pairs, ``nonzero`` those left. Returns n, nonzero, ``better`` / ``worse`` (datasets where a
    is above / below b), ``median_diff`` (of a - b), ``statistic`` and ``p`` (NaN with fewer
    than one non-zero difference).
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = ~(np.isnan(a) | np.isnan(b))
    d = a[ok] - b[ok]
    out = {
        "n": int(ok.sum()),
        "nonzero": int((d != 0).sum()),
        "better": int((d > 0).sum()),
        "worse": int((d < 0).sum()),
        "median_diff": float(np.median(d)) if d.size else np.nan,
        "statistic": np.nan,
        "p": np.nan,
    }
    if out["nonzero"] >= 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = _st.wilcoxon(a[ok], b[ok], alternative=alternative)
        out["statistic"], out["p"] = float(r.statistic), float(r.pvalue)
    return out


def hodges_lehmann(d, level: float = 0.95) -> tuple[float, float, float]:
    """``(estimate, low, high)``: the Hodges-Lehmann estimate of the median of the paired
    differences ``d`` (the median of their Walsh averages, the pairwise means ``(d_i + d_j) / 2``,
    i <= j) and its ``level`` interval, the one that goes with the Wilcoxon signed-rank test
    (a shift outside it is rejected at 1 - ``level``, one inside is not): the Walsh averages
    ranked ``c + 1`` and ``M - c`` of ``M``, with ``c`` the largest count with P(T+ <= c) <=
    (1 - level) / 2 under the exact null distribution of the signed-rank statistic. NaN bounds
    below 6 differences (no interval at 95 % exists); NaN values are dropped."""
    d = np.asarray(d, dtype=float)
    d = d[~np.isnan(d)]
    n = d.size
    if n == 0:
        return np.nan, np.nan, np.nan
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    estimate = float(np.median(walsh))
    counts = np.zeros(n * (n + 1) // 2 + 1)  # ways to reach each signed-rank sum: the exact null distribution
    counts[0] = 1
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    cdf = np.cumsum(counts) / 2.0**n
    below = np.flatnonzero(cdf <= (1 - level) / 2)
    if below.size == 0:
        return estimate, np.nan, np.nan
    c = int(below[-1])  # the Walsh averages left outside the interval on each side
    return estimate, float(walsh[c]), float(walsh[walsh.size - 1 - c])


def diff_decimals(metric: str) -> int:
    """The decimals :func:`paired_row` rounds ``median_diff`` to: 2 of accuracy points, 4 of AUROC."""
    return 2 if metric == "accuracy" else 4


def diff_places(metric: str) -> dict[str, int]:
    """``{"median_diff": decimals}`` (:func:`diff_decimals`), for :func:`tcclib.paper.tables.to_markdown`."""
    return {"median_diff": diff_decimals(metric)}


def paired_row(a, b, metric: str) -> dict:
    """:func:`wilcoxon` of ``a`` against ``b`` as a table row: ``datasets``, ``better``, ``worse``,
    ``median_diff`` (2 decimals of accuracy points, 4 of AUROC) and ``p`` (2 significant digits)."""
    w = wilcoxon(a, b)
    return dict(
        datasets=w["n"],
        better=w["better"],
        worse=w["worse"],
        median_diff=round(w["median_diff"], diff_decimals(metric)),
        p=float(f"{w['p']:.2g}"),
    )


def paper_wilcoxon(metric: str, kind: str, a: str, b: str, alternative: str = "two-sided", datasets=None) -> dict:
    """:func:`wilcoxon` on the paper's published per-dataset means of methods ``a`` and ``b``
    (our names) in the table of ``metric`` and ``kind``; ``datasets``: restrict to these OpenML
    ids."""
    p = tables.paper_long(metric, kind)
    if datasets is not None:
        p = p[p["did"].isin(list(datasets))]
    wide = p.pivot(index="did", columns="method", values="mean")
    if a not in wide.columns or b not in wide.columns:
        return wilcoxon([], [], alternative)
    return wilcoxon(wide[a], wide[b], alternative)


def class_vs_random(results: pd.DataFrame, a: str = "class", b: str = "random") -> pd.DataFrame:
    """The paper's test of class vs random over datasets, for our results and for its tables.

    Per metric: the Wilcoxon signed-rank test on the per-dataset means (two-sided, as the paper's
    p = 0.038; and one-sided, ``a`` better), on our results and recomputed from the paper's Table
    2 / 3, on all its datasets and on the datasets we share with it (``shared datasets`` of them);
    and the p the paper states.
    """
    rows = []
    for metric in ("accuracy", "auroc"):
        wide = dataset_means(results, metric, [a, b])
        if a not in wide.columns or b not in wide.columns or wide.empty:
            continue
        two = wilcoxon(wide[a], wide[b])
        one = wilcoxon(wide[a], wide[b], "greater")
        paper = paper_wilcoxon(metric, "how", a, b)
        dids = _dids(results, wide.index)
        same = paper_wilcoxon(metric, "how", a, b, datasets=dids)
        rows.append(
            {
                "metric": metric,
                "datasets": two["n"],
                f"{a} better": two["better"],
                f"{a} worse": two["worse"],
                "median diff": two["median_diff"],
                "p (two-sided)": two["p"],
                f"p ({a} better, one-sided)": one["p"],
                "paper, recomputed from its table": paper["p"],
                "paper, same datasets": same["p"],
                "shared datasets": len(dids),
                "paper states": PAPER_WILCOXON_P.get(metric, np.nan),
            }
        )
    return pd.DataFrame(rows)


def _dids(results: pd.DataFrame, datasets) -> list:
    """OpenML ids of ``datasets`` as the paper's tables know them (by id, else by name)."""
    paper = tables.paper_long("accuracy", "how")
    wide = tables.load_paper_table("accuracy", "how")
    by_name = {tables._norm(n): int(d) for n, d in zip(paper["dataset"], paper["did"])}
    by_name.update({tables._norm(n): int(d) for n, d in zip(wide["dataset"], wide["did"])})
    ids = dict(zip(results["dataset"], results["did"])) if "did" in results.columns else {}
    out = []
    for d in datasets:
        v = ids.get(d)
        v = int(v) if v is not None and not pd.isna(v) else by_name.get(tables._norm(d))
        if v is not None:
            out.append(v)
    return out


def friedman(wide: pd.DataFrame) -> dict:
    """Friedman test over datasets (rows) of the methods (columns); higher values are better.

    Ranks per dataset (1 = best, ties averaged). Returns ``ranks`` (average rank per method,
    sorted), ``n`` (datasets), ``k`` (methods), ``chi2`` and ``p`` (scipy's
    ``friedmanchisquare``, tie-corrected), and the Iman-Davenport ``F`` and ``p_F``
    (F = (n-1) chi2 / (n (k-1) - chi2) with (k-1, (k-1)(n-1)) degrees of freedom; Demšar 2006).
    """
    wide = wide.dropna()
    n, k = wide.shape
    ranks = wide.rank(axis=1, ascending=False, method="average").mean().sort_values()
    out = {"ranks": ranks, "n": n, "k": k, "chi2": np.nan, "p": np.nan, "F": np.nan, "p_F": np.nan}
    if k >= 3 and n >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = _st.friedmanchisquare(*[wide[c].to_numpy() for c in wide.columns])
        chi2 = float(r.statistic)
        out["chi2"], out["p"] = chi2, float(r.pvalue)
        denom = n * (k - 1) - chi2
        if denom > 0:
            F = (n - 1) * chi2 / denom
            out["F"], out["p_F"] = F, float(_st.f.sf(F, k - 1, (k - 1) * (n - 1)))
    return out


def nemenyi_cd(k: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Nemenyi's critical difference of average ranks for ``k`` methods over ``n`` datasets.

    ``CD = q_alpha * sqrt(k (k+1) / (6 n))`` with ``q_alpha`` the (1 - alpha) quantile of the
    studentized range of k means with infinite degrees of freedom divided by sqrt(2) (Demšar
    2006, Table 5a: 2.569 for k = 4, 3.164 for k = 10 at alpha = 0.05). Returns (q_alpha, CD).
    """
    if k < 2 or n < 1:
        raise ValueError(f"need k >= 2 methods and n >= 1 datasets, got k={k}, n={n}")
    q = float(_st.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q, q * math.sqrt(k * (k + 1) / (6 * n))


def cd_groups(ranks: pd.Series, cd: float) -> list[list[str]]:
    """Maximal groups of methods whose average ranks lie within ``cd`` of each other (the bars of
    a critical-difference diagram), in rank order; groups of one method are left out."""
    r = ranks.sort_values()
    names, vals = list(r.index), r.to_numpy()
    spans = []
    for i in range(len(vals)):
        j = i
        while j + 1 < len(vals) and vals[j + 1] - vals[i] < cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in spans):
            spans.append((i, j))
    return [names[a : b + 1] for a, b in spans]


def _rank_result(wide: pd.DataFrame, alpha: float) -> dict:
    out = friedman(wide)
    out["alpha"] = alpha
    if out["k"] >= 2 and out["n"] >= 1:
        out["q"], out["cd"] = nemenyi_cd(out["k"], out["n"], alpha)
        ranks = out["ranks"]
        out["groups"] = cd_groups(ranks, out["cd"])
        names = list(ranks.index)
        out["pairs"] = [
            (a, b, float(ranks[b] - ranks[a]))
            for i, a in enumerate(names)
            for b in names[i + 1 :]
            if ranks[b] - ranks[a] > out["cd"]
        ]
    else:
        out.update(q=np.nan, cd=np.nan, groups=[], pairs=[])
    return out


#: re-runs of another method kept to check fidelity, not methods of their own: the rank test
#: leaves them out by default (a near-copy raises k and with it the CD, moving the verdict on
#: every other pair: on the paper set adding ``class_most_published_exact`` took the CD from 2.47
#: to 2.76 and turned AUROC's self_training > class into "not shown"), and names them in ``repeats``
#: (a live view of the registry's ``repeats``: :func:`tcclib.method.registry.rank_repeats`)
RANK_REPEATS = registry.LiveMapping(registry.rank_repeats)


def rank_test(results: pd.DataFrame, metric: str, methods=None, alpha: float = ALPHA) -> dict:
    """Friedman + Nemenyi over the datasets where every method has a result.

    ``methods``: default every method and baseline in ``results`` that has results on as many
    datasets as the best-covered one (a method run on a few datasets so far would otherwise shrink
    the test to those few), less the fidelity re-runs of :data:`RANK_REPEATS`; the first are named
    in ``left_out`` as ``{method: (datasets, of)}``, the second in ``repeats`` as ``{re-run: the
    method it repeats}``.  Name them in ``methods`` to rank them too.
    Returns :func:`friedman`'s dict plus ``metric``, ``alpha``, ``left_out``, ``repeats``, ``q`` and ``cd``
    (:func:`nemenyi_cd`), ``groups`` (:func:`cd_groups`) and ``pairs`` (``(better, worse, rank
    difference)`` for every pair whose average ranks differ by more than the CD: significantly
    different by Nemenyi's test).
    """
    left_out, repeats = {}, {}
    if methods is None:
        present = list(dict.fromkeys(results["method"]))
        methods = [m for m in registry.ORDER if m in present] + [m for m in present if m not in registry.ORDER]
        cover = results.dropna(subset=[metric]).groupby("method")["dataset"].nunique()
        most = int(cover.max()) if len(cover) else 0
        left_out = {m: (int(cover.get(m, 0)), most) for m in methods if cover.get(m, 0) < most}
        repeats = {m: of for m, of in RANK_REPEATS.items() if m in methods and m not in left_out}
        methods = [m for m in methods if m not in left_out and m not in repeats]
    out = _rank_result(dataset_means(results, metric, methods), alpha)
    out["metric"] = metric
    out["left_out"] = left_out
    out["repeats"] = repeats
    return out


def paper_rank_test(metric: str, kind: str = "how", alpha: float = ALPHA, datasets=None) -> dict:
    """:func:`rank_test` on the paper's published per-dataset means (its methods only);
    ``datasets``: restrict to these OpenML ids."""
    p = tables.paper_long(metric, kind)
    if datasets is not None:
        p = p[p["did"].isin(list(datasets))]
    methods = list(dict.fromkeys(p["method"]))
    wide = p.pivot(index="did", columns="method", values="mean").reindex(columns=methods)
    wide.columns.name = None
    out = _rank_result(wide, alpha)
    out["metric"] = metric
    return out


def plot_cd(res: dict, ax=None, title: str | None = None):
    """Critical-difference diagram (Demšar 2006) of a :func:`rank_test` result.

    The axis shows average ranks (1 = best, on the left); each method hangs from its rank, the
    better half labelled on the left, the rest on the right; thick bars join methods whose ranks
    differ by less than the Nemenyi CD (not significantly different), and the CD itself is drawn
    above the axis. Returns the Axes.
    """
    import matplotlib.pyplot as plt  # deferred: matplotlib loads only when a figure is drawn

    ranks = res["ranks"].sort_values()
    k = len(ranks)
    groups = res.get("groups", [])
    half = (k + 1) // 2
    step = 0.32
    top_of_labels = 0.25 + 0.14 * (len(groups) + 1)
    bottom = top_of_labels + step * (max(half, k - half) - 0.5)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 1.6 + 1.15 * bottom))
    lo, hi = 1, max(k, 2)
    ax.hlines(0, lo, hi, color="black", lw=1)
    for r in range(lo, hi + 1):
        ax.vlines(r, 0, 0.08, color="black", lw=1)
        ax.text(r, 0.12, str(r), ha="center", va="bottom", fontsize=9)
    for r in np.arange(lo + 0.5, hi, 1.0):
        ax.vlines(r, 0, 0.04, color="black", lw=0.6)
    cd = res.get("cd", np.nan)
    if np.isfinite(cd):
        ax.hlines(0.55, lo, lo + cd, color="black", lw=1.5)
        ax.vlines([lo, lo + cd], 0.5, 0.6, color="black", lw=1.5)
        ax.text(lo + cd / 2, 0.64, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    left_x, right_x = lo - 0.35 - 0.02 * k, hi + 0.35 + 0.02 * k
    for i, (name, r) in enumerate(ranks.items()):
        if i < half:
            y = -(top_of_labels + step * i)
            ax.plot([r, r, left_x], [0, y, y], color="black", lw=0.8)
            ax.text(left_x - 0.05, y, f"{name} ({r:.2f})", ha="right", va="center", fontsize=9)
        else:
            y = -(top_of_labels + step * (k - 1 - i))
            ax.plot([r, r, right_x], [0, y, y], color="black", lw=0.8)
            ax.text(right_x + 0.05, y, f"({r:.2f}) {name}", ha="left", va="center", fontsize=9)
    for g_i, g in enumerate(groups):
        y = -(0.18 + 0.14 * g_i)
        ax.hlines(y, ranks[g[0]] - 0.03, ranks[g[-1]] + 0.03, color="0.25", lw=3.5)
    ax.set_xlim(left_x - 2.6, right_x + 2.6)
    ax.set_ylim(-bottom, 0.95)
    ax.axis("off")
    if title is None:
        title = (
            f"{res.get('metric', '')}: average rank over {res['n']} datasets (1 = best; "
            f"Friedman p = {res['p']:.2g})\nbars join methods within the Nemenyi critical "
            f"difference (not shown to differ at α = {res.get('alpha', ALPHA)})"
        )
    ax.set_title(title, fontsize=10)
    return ax
