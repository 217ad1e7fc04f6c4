"""The paper's tables and win matrices, for our results and for the published numbers.

Our results are a tidy frame with one row per (dataset, seed, method) and the columns
``dataset`` (str), ``did`` (OpenML id, int or NA), ``seed``, ``method``, ``accuracy`` (a
fraction) and ``auroc``.

* **Tables 2-5** (:func:`summarize`, :func:`paper_style_table`): mean ± standard error per
  dataset and method. The standard error is the paper's: ``np.std(values, ddof=0) / sqrt(n)``
  (population std). Accuracy is shown in percent, AUROC as is, as in the paper.
* **Win matrices** (Figure 3; :func:`win_matrix`, :func:`paper_win_matrix`): for each dataset
  and each ordered pair of methods (i, j), a one-sided Welch t-test of ``mean_i > mean_j``;
  p < alpha is a significant win of i over j. Entry (i, j) is
  ``wins(i over j) / (wins(i over j) + wins(j over i))`` over the datasets where either direction
  is significant, NaN where none is.
* **Comparison with the paper** (:func:`compare_with_paper`, :func:`agreement_summary`): our
  mean and se next to the published ones, whether the published mean lies inside our 95 %
  t-interval, and per cell a Welch t-test against the paper's mean and se and an equivalence
  test (TOST) within a stated margin (:mod:`tcclib.paper.stats`).
* **Markdown and LaTeX** (:func:`markdown_table`, :func:`latex_table`): Tables 2-5 with ours next
  to the paper's, best per row in bold; :func:`write_set_tables` writes both.
* The published Tables 2-5 ship with the package (``tcclib/paper/published/``, see its README), so
  nothing here reads files outside the project.

Method names: which paper column each of our methods is compared with is its registry entry's
``paper_columns`` (:mod:`tcclib.method.registry`): the "how to corrupt" columns use our names
(``no_pretrain``, ``random``, ``class``, ``oracle``); the "where to corrupt" columns map
``random_features`` -> ``class``, ``least_correlated`` -> ``class_least`` and
``most_correlated`` -> ``class_most``. The separately scored methods (``class_most_published``,
the authors' flipped selection, and ``class_most_published_exact``, the same with their sampling
rule) are compared with their column too in :func:`compare_with_paper`.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from tcclib.artifacts import store
from tcclib.data.sources import list_datasets
from tcclib.method import registry
from tcclib.paper import cell_tests, style

__all__ = [
    "HOW_METHODS",
    "WHERE_METHODS",
    "PAPER_NAMES",
    "PAPER_SEEDS",
    "load_paper_table",
    "paper_long",
    "paper_corr_range",
    "summarize",
    "paper_style_table",
    "win_matrix",
    "paper_win_matrix",
    "compare_with_paper",
    "agreement_summary",
    "plot_win_matrix",
    "to_markdown",
    "latex_table",
    "method_groups",
    "markdown_table",
    "write_set_tables",
    "write_paper_comparisons",
]

#: the paper's own methods of its how- and where-tables, and paper column -> our method (live
#: views of the registry's ``paper_columns``: :func:`tcclib.method.registry.paper_table_methods`,
#: :func:`tcclib.method.registry.column_owners`)
HOW_METHODS = registry.LiveNames(lambda: registry.paper_table_methods("how"))
WHERE_METHODS = registry.LiveNames(lambda: registry.paper_table_methods("where"))
PAPER_NAMES = registry.LiveMapping(registry.column_owners)
#: number of seeds behind every published mean / se
PAPER_SEEDS = 8
#: datasets the paper's tables report under another name, with that name and its OpenML id:
#: scikit-learn's ``breast_cancer`` is the UCI WDBC table (569 rows, 30 features), OpenML's ``wdbc``
#: (1510), a row of Tables 2-5; the paper uses ``breast_cancer`` itself in Figures 1-2 only. The
#: comparisons here match by id and name only; notebook 03 sets such a dataset beside that row
#: (:func:`tcclib.paper.words.dataset_result`) and says so.
PAPER_ALIASES = {"breast_cancer": ("wdbc", 1510)}
_METRICS = ("accuracy", "auroc")
_KINDS = ("how", "where")
#: the decimals our means are shown with, per metric (percent of accuracy, AUROC)
DIGITS = {"accuracy": 2, "auroc": 3}
#: the decimals of a table of average ranks and means over datasets (:func:`to_markdown`'s ``decimals``)
RANK_DECIMALS = {"accuracy rank": 2, "auroc rank": 2, **{f"mean {metric}": places for metric, places in DIGITS.items()}}
_PAPER_DIGITS = {"accuracy": 2, "auroc": 2}  # as the paper printed them


def _check(metric: str, kind: str | None = None) -> None:
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS}, got {metric!r}")
    if kind is not None and kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")


def _norm(name) -> str:
    """Spelling-insensitive dataset key: 'analcatdata_authorship' == 'Analcatdata-Authorship'."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _did_by_name(metric: str = "accuracy", kind: str = "how") -> dict:
    """Spelling-insensitive dataset name (:func:`_norm`; tcclib's registry spelling and the
    paper's) -> OpenML id, of the datasets in the paper's ``metric``/``kind`` table."""
    wide, long = load_paper_table(metric, kind), paper_long(metric, kind)
    pairs = [*zip(long["dataset"], long["did"]), *zip(wide["dataset"], wide["did"])]
    return {_norm(n): int(d) for n, d in pairs}


def _registry_names() -> dict:
    """OpenML id -> tcclib's registry spelling of the dataset name (empty if unavailable)."""
    try:
        reg = list_datasets().dropna(subset=["did"])
        return {int(d): str(n) for d, n in zip(reg["did"], reg["name"])}
    except Exception:  # the tables must work without the dataset registry
        return {}


# --------------------------------------------------------------------------- published tables


def load_paper_table(metric: str, kind: str) -> pd.DataFrame:
    """The published table, wide, exactly as shipped in ``tcclib/paper/published/``.

    Parameters
    ----------
    metric : "accuracy" (Tables 2 and 4, percent) or "auroc" (Tables 3 and 5).
    kind : "how" (how to corrupt: Tables 2, 3) or "where" (where to corrupt: Tables 4, 5).

    Returns columns ``dataset`` (the paper's spelling), ``did``, then ``<method>_mean`` and
    ``<method>_se`` per paper method (and ``corr_range`` for the "where" tables), one row per
    dataset in the paper's order. Raises ValueError for any other metric or kind.
    """
    _check(metric, kind)
    path = resources.files("tcclib.paper").joinpath("published", f"{metric}-results-{kind}.csv")
    with path.open("r", encoding="utf-8") as f:
        return pd.read_csv(f)


def paper_long(metric: str, kind: str) -> pd.DataFrame:
    """The published table in long format: ``dataset, did, method, mean, se``.

    ``method`` uses our names (see :data:`PAPER_NAMES`); ``dataset`` uses tcclib's registry
    spelling (e.g. ``analcatdata_authorship``) so it matches the names in our results. Rows keep
    the paper's dataset order, methods in the paper's column order.
    """
    wide = load_paper_table(metric, kind)
    names = _registry_names()
    owners = registry.column_owners(kind)
    prefixes = [c[: -len("_mean")] for c in wide.columns if c.endswith("_mean")]
    parts = []
    for p in prefixes:
        parts.append(
            pd.DataFrame(
                {
                    "dataset": [names.get(int(d), n) for d, n in zip(wide["did"], wide["dataset"])],
                    "did": wide["did"].astype(int),
                    "method": owners[p],
                    "mean": wide[f"{p}_mean"].astype(float),
                    "se": wide[f"{p}_se"].astype(float),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def paper_corr_range() -> pd.DataFrame:
    """The paper's "feature correlation value range" per dataset (Table 4).

    Columns ``dataset`` (registry spelling), ``did``, ``corr_range``.
    """
    t = load_paper_table("accuracy", "where")[["dataset", "did", "corr_range"]].copy()
    names = _registry_names()
    t["dataset"] = [names.get(int(d), n) for d, n in zip(t["did"], t["dataset"])]
    return t


# --------------------------------------------------------------------------- our tables


def _values(results: pd.DataFrame, metric: str) -> pd.Series:
    _check(metric)
    v = pd.to_numeric(results[metric], errors="coerce").astype(float)
    return v * 100 if metric == "accuracy" else v


def _paper_se(v) -> float:
    v = np.asarray(v, dtype=float)
    return float(np.std(v, ddof=0) / np.sqrt(len(v))) if len(v) else np.nan


def _sample_sd(v) -> float:
    v = np.asarray(v, dtype=float)
    return float(np.std(v, ddof=1)) if len(v) > 1 else np.nan


def summarize(results: pd.DataFrame, metric: str, methods=None) -> pd.DataFrame:
    """Per dataset x method: ``mean``, ``se``, ``sd`` and ``n`` of ``metric`` over seeds.

    * ``se`` is the paper's standard error, ``np.std(values, ddof=0) / sqrt(n)``;
    * ``sd`` is the sample standard deviation (ddof=1; NaN for a single value), the one the
      t-tests and confidence intervals use;
    * accuracy is reported in percent (x100), AUROC as is; missing values are dropped.

    ``methods`` (optional) keeps only those methods. Columns: dataset, did (if ``results`` has
    it), method, mean, n, se, sd; rows in order of first appearance.
    """
    df = results.assign(value=_values(results, metric)).dropna(subset=["value"])
    if methods is not None:
        df = df[df["method"].isin(list(methods))]
    g = df.groupby(["dataset", "method"], sort=False)["value"]
    out = g.agg(mean="mean", n="count", se=_paper_se, sd=_sample_sd).reset_index()
    if "did" in results.columns:
        dids = results.drop_duplicates("dataset").set_index("dataset")["did"]
        out.insert(1, "did", out["dataset"].map(dids))
    return out


def _dataset_order(names, dids: dict) -> list:
    """The paper's dataset order (by OpenML id, else name), then any others alphabetically."""
    paper = load_paper_table("accuracy", "how")
    by_did = {int(d): i for i, d in enumerate(paper["did"])}
    by_name = {_norm(n): i for i, n in enumerate(paper["dataset"])}

    def key(n):
        d = dids.get(n)
        pos = by_did.get(int(d)) if d is not None and not pd.isna(d) else None
        if pos is None:
            pos = by_name.get(_norm(n))
        return (0, pos, "") if pos is not None else (1, 0, str(n))

    return sorted(names, key=key)


def _laid_out(results: pd.DataFrame, metric: str, methods):
    """``(summary, methods present, mean, se, dids)``: :func:`summarize`'s means and standard
    errors as dataset x method frames, rows in :func:`_dataset_order`."""
    s = summarize(results, metric, methods)
    present = set(s["method"])
    methods = [m for m in methods if m in present]
    mean = s.pivot(index="dataset", columns="method", values="mean").reindex(columns=methods)
    se = s.pivot(index="dataset", columns="method", values="se").reindex(columns=methods)
    dids = dict(zip(s["dataset"], s["did"])) if "did" in s.columns else {}
    order = _dataset_order(list(mean.index), dids)
    return s, methods, mean.loc[order], se.loc[order], dids


def paper_style_table(results: pd.DataFrame, metric: str, methods) -> pd.DataFrame:
    """Our results laid out like the paper's Tables 2-5: strings ``"mean ± se"``.

    Rows are datasets in the paper's order (others after it, alphabetically), columns the given
    ``methods`` that occur in ``results``. Accuracy (percent) has 2 decimals, AUROC 3. The best
    mean of each row (ties at the shown precision included) is bold (``**...**``). Two summary
    rows follow, computed over the datasets where every shown method has a result:
    ``mean`` (mean over datasets) and, last, ``average rank`` (rank 1 = best, ties averaged).
    """
    _, methods, mean, se, _ = _laid_out(results, metric, methods)
    digits = DIGITS[metric]
    cells = pd.DataFrame("", index=mean.index, columns=methods, dtype=object)
    for d in mean.index:
        best = mean.loc[d].max()
        for m in methods:
            mu, e = mean.loc[d, m], se.loc[d, m]
            if pd.isna(mu):
                continue
            txt = f"{mu:.{digits}f} ± {e:.{digits}f}"
            cells.loc[d, m] = f"**{txt}**" if round(mu, digits) == round(best, digits) else txt
    full = mean.dropna()
    avg = full.mean() if len(full) else pd.Series(np.nan, index=methods)
    ranks = full.rank(axis=1, ascending=False, method="average").mean() if len(full) else avg
    cells.loc["mean"] = ["" if pd.isna(avg[m]) else f"{avg[m]:.{digits}f}" for m in methods]
    cells.loc["average rank"] = ["" if pd.isna(ranks[m]) else f"{ranks[m]:.2f}" for m in methods]
    cells.index.name = "dataset"
    cells.columns.name = None
    return cells


# --------------------------------------------------------------------------- win matrices


def _p_greater(a: tuple, b: tuple, test) -> float:
    """One-sided p-value of mean_a > mean_b, NaN where no decision can be made.

    ``a``, ``b``: ``(mean, sample variance (ddof=1), n)``. Fewer than two values on a side: NaN.
    Both variances zero: 0 if mean_a > mean_b (a certain win), 1 if smaller, NaN if equal (a tie).
    Otherwise ``test()`` (a scipy Welch t-test) gives the p-value; a NaN from it is no decision.
    """
    (m_a, v_a, n_a), (m_b, v_b, n_b) = a, b
    if n_a < 2 or n_b < 2:
        return np.nan
    if v_a == 0 and v_b == 0:
        return np.nan if m_a == m_b else (0.0 if m_a > m_b else 1.0)
    with warnings.catch_warnings():  # near-identical samples: scipy warns, p is NaN or large
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(test().pvalue)


def _zeros(methods) -> pd.DataFrame:
    return pd.DataFrame(0, index=list(methods), columns=list(methods), dtype=int)


def _var(a: np.ndarray) -> float:
    """Sample variance (ddof=1), exactly 0 for a constant sample, NaN for fewer than 2 values."""
    if len(a) < 2:
        return np.nan
    return 0.0 if np.ptp(a) == 0 else float(np.var(a, ddof=1))


def _finish(wins: pd.DataFrame):
    wins = wins.astype(int)
    decided = (wins + wins.T).astype(int)
    frac = (wins.astype(float) / decided.where(decided > 0)).mask(np.eye(len(wins), dtype=bool))
    for m in (frac, wins, decided):
        m.index.name, m.columns.name = "row beats column", None
    return frac, wins, decided


def win_matrix(results: pd.DataFrame, metric: str, methods, alpha: float = 0.05):
    """Figure 3's win matrix from our per-seed results.

    For every dataset and ordered pair (i, j) of ``methods`` with results on it, a one-sided
    Welch t-test ``scipy.stats.ttest_ind(a_i, a_j, equal_var=False, alternative="greater")`` on
    the per-seed values; p < ``alpha`` is a significant win of i over j. Degenerate cases:
    identical constant samples (both variances zero, equal means) are no decision; both
    variances zero with different means are a significant win for the larger; fewer than two
    seeds on either side is no decision.

    Returns ``(frac, wins, decided)``, square frames indexed by ``methods`` (rows beat columns):
    ``wins[i, j]`` = datasets where i significantly beats j, ``decided[i, j]`` =
    ``wins[i, j] + wins[j, i]``, ``frac[i, j]`` = ``wins / decided`` (NaN where nothing is
    decided and on the diagonal).
    """
    methods = list(methods)
    df = results.assign(value=_values(results, metric)).dropna(subset=["value"])
    df = df[df["method"].isin(methods)]
    wins = _zeros(methods)
    for _, g in df.groupby("dataset", sort=False):
        vals = {m: v.to_numpy(dtype=float) for m, v in g.groupby("method", sort=False)["value"]}
        for i in methods:
            for j in methods:
                if i == j or i not in vals or j not in vals:
                    continue
                a, b = vals[i], vals[j]
                p = _p_greater(
                    (a.mean(), _var(a), len(a)),
                    (b.mean(), _var(b), len(b)),
                    lambda a=a, b=b: stats.ttest_ind(a, b, equal_var=False, alternative="greater"),
                )
                if p < alpha:
                    wins.loc[i, j] += 1
    return _finish(wins)


def paper_win_matrix(
    metric: str = "accuracy", kind: str = "how", alpha: float = 0.05, n: int = PAPER_SEEDS, datasets=None
):
    """The win matrix recomputed from the published means and standard errors.

    The paper's se is ``std(ddof=0) / sqrt(n)``, so the sample std is
    ``se * sqrt(n) * sqrt(n / (n - 1))``; each pair is tested with
    ``scipy.stats.ttest_ind_from_stats(..., nobs=n, equal_var=False, alternative="greater")``
    (n = 8 seeds). Same degenerate-case rules and return value as :func:`win_matrix`; methods
    are the table's, in our names. With the defaults this reproduces Figure 3 of the paper.

    ``datasets``: restrict to these datasets (names, matched ignoring case, ``-`` and ``_``, or
    OpenML ids), e.g. the ones a partial run of ours finished, for a like-for-like comparison.
    """
    p = paper_long(metric, kind)
    if datasets is not None:
        by_name = _did_by_name(metric, kind)
        keep = {int(d) if isinstance(d, (int, np.integer)) else by_name.get(_norm(d)) for d in datasets}
        p = p[p["did"].isin(keep)]
    methods = list(dict.fromkeys(p["method"]))
    p = p.assign(sd=p["se"] * np.sqrt(n) * np.sqrt(n / (n - 1)))
    wins = _zeros(methods)
    for _, g in p.groupby("did", sort=False):
        st = g.set_index("method")
        for i in methods:
            for j in methods:
                if i == j:
                    continue
                a, b = st.loc[i], st.loc[j]
                pv = _p_greater(
                    (a["mean"], a["sd"] ** 2, n),
                    (b["mean"], b["sd"] ** 2, n),
                    lambda a=a, b=b: stats.ttest_ind_from_stats(
                        a["mean"], a["sd"], n, b["mean"], b["sd"], n, equal_var=False, alternative="greater"
                    ),
                )
                if pv < alpha:
                    wins.loc[i, j] += 1
    return _finish(wins)


# --------------------------------------------------------------------------- comparison


def compare_with_paper(results: pd.DataFrame, metric: str, kind: str) -> pd.DataFrame:
    """Our numbers next to the published ones, per dataset x method.

    Datasets are matched on the OpenML id (``did``) where our results have one, else on the
    name (ignoring case, ``-`` and ``_``); methods on our names, with the separately scored
    ``class_most_published`` and ``class_most_published_exact`` (:data:`tcclib.paper.cell_tests.SEPARATE`)
    compared to the paper's ``most_correlated`` as well (where-tables). Only cells present on
    both sides are returned.

    Columns: dataset, did, method, ``mean`` and ``se`` (ours, paper definition; accuracy in %),
    ``paper_mean``, ``paper_se``, ``diff`` = ours - paper, ``ci_low``/``ci_high`` = our 95 %
    t-interval ``mean ± t(0.975, n-1) * sd / sqrt(n)`` with the sample std ``sd`` (ddof=1), and
    ``inside`` (the paper's mean lies in that interval; False when n < 2, where the interval is
    undefined), ``n``, ``sd``; then the tests of :func:`tcclib.paper.stats.add_cell_tests`: ``diff_se``
    (standard error of the difference),
    ``welch_p`` / ``differ`` (two-sided Welch test against the paper's mean and reconstructed
    sample std, n = 8, p < 0.05) and ``tost_p`` / ``equivalent`` (equivalence within ``margin``:
    1 point of accuracy, 0.01 AUROC).
    """
    _check(metric, kind)
    cols = ["dataset", "did", "method", "mean", "se", "paper_mean", "paper_se", "diff", "ci_low", "ci_high", "inside"]
    cols += ["n", "sd", "diff_se", "welch_p", "differ", "tost_p", "equivalent", "margin"]
    paper = paper_long(metric, kind).rename(columns={"mean": "paper_mean", "se": "paper_se"})
    owners = registry.column_owners(kind)
    extra = [  # a separate method is compared with the column its owner is compared with
        paper[paper["method"] == owners[column]].assign(method=method)
        for method, column in registry.compared_columns(kind).items()
        if method in registry.separate_methods()
    ]
    paper = pd.concat([paper, *extra], ignore_index=True)
    ours = summarize(results, metric)
    if ours.empty:
        return pd.DataFrame(columns=cols)
    by_name = _did_by_name(metric, kind)
    if "did" in ours.columns:
        ours_did = [int(d) if not pd.isna(d) else by_name.get(_norm(n)) for n, d in zip(ours["dataset"], ours["did"])]
        ours = ours.drop(columns="did")
    else:
        ours_did = [by_name.get(_norm(n)) for n in ours["dataset"]]
    ours.insert(1, "did", pd.array(ours_did, dtype="Int64"))
    ours = ours.dropna(subset=["did"]).astype({"did": int})
    m = ours.merge(paper.drop(columns="dataset"), on=["did", "method"], how="inner")
    if m.empty:
        return pd.DataFrame(columns=cols)
    n = m["n"].astype(float)
    tq = pd.Series(np.where(n > 1, stats.t.ppf(0.975, np.maximum(n - 1, 1)), np.nan), index=m.index)
    half = tq * m["sd"] / np.sqrt(n)
    m["diff"] = m["mean"] - m["paper_mean"]
    m["ci_low"], m["ci_high"] = m["mean"] - half, m["mean"] + half
    m["inside"] = ((m["paper_mean"] >= m["ci_low"]) & (m["paper_mean"] <= m["ci_high"])).astype(bool)
    m = cell_tests.add_cell_tests(m, metric)
    return m[cols].reset_index(drop=True)


def agreement_summary(comparison: pd.DataFrame, separate=None, metric: str | None = None) -> pd.DataFrame:
    """How often the paper's mean lies inside our 95 % interval, per method and overall.

    Columns: method (last row ``all``), datasets (cells compared), inside, outside,
    share inside (e.g. ``"75%"``), mean diff (ours - paper, signed, as text with ``metric``'s
    :data:`DIGITS`, 3 decimals without it), and, where the
    comparison has the per-cell tests, ``differ`` (Welch p < 0.05) and ``equivalent`` (TOST
    within the margin). The ``all`` row counts each cell of the paper's table once: it leaves
    out the ``separate`` methods (``class_most_published``, scored against the paper's
    ``most_correlated`` column that ``class_most`` is scored against too), whose own rows stay.
    """
    cols = ["method", "datasets", "inside", "outside", "share inside", "mean diff"]
    if comparison is None or len(comparison) == 0:
        return pd.DataFrame(columns=cols)
    c = comparison.assign(inside=comparison["inside"].astype(bool))
    tests = [t for t in ("differ", "equivalent") if t in c.columns]
    c = c.assign(**{t: c[t].astype(bool) for t in tests})
    g = c.groupby("method", sort=False)
    out = pd.DataFrame(
        {
            "datasets": g.size(),
            "inside": g["inside"].sum().astype(int),
            "mean diff": g["diff"].mean(),
            **{t: g[t].sum().astype(int) for t in tests},
        }
    ).reset_index()
    if separate is None:
        separate = registry.separate_methods()
    base = c[~c["method"].isin(list(separate))]
    total = pd.DataFrame(
        [
            {
                "method": "all",
                "datasets": len(base),
                "inside": int(base["inside"].sum()),
                "mean diff": base["diff"].mean(),
                **{t: int(base[t].sum()) for t in tests},
            }
        ]
    )
    out = pd.concat([out, total], ignore_index=True)
    out["outside"] = out["datasets"] - out["inside"]
    out["share inside"] = (out["inside"] / out["datasets"]).map(lambda v: f"{v:.0%}" if v == v else "")
    places = DIGITS.get(metric, 3)
    out["mean diff"] = out["mean diff"].map(lambda v: f"{v:+.{places}f}" if v == v else "")
    return out[cols + tests]


# --------------------------------------------------------------------------- rendering


def _pct(f: float) -> str:
    """83.33 % -> '83.3%', 1.0 -> '100%', 0 -> '0%'."""
    return f"{100 * f:.1f}".rstrip("0").rstrip(".") + "%"


def plot_win_matrix(
    frac: pd.DataFrame,
    wins: pd.DataFrame,
    decided: pd.DataFrame,
    ax=None,
    title: str = "win matrix (Welch t-test, p < 0.05)",
    colorbar: bool = True,
):
    """Heatmap of a win matrix (as returned by :func:`win_matrix` / :func:`paper_win_matrix`).

    Cells read like ``"83.3%\\n(5/6)"`` (share of significant wins, wins / decided datasets), in
    the collection's diverging colour-blind-safe map centred at 50 %
    (:data:`tcclib.paper.style.WIN_CMAP`), pale where fewer than :data:`tcclib.paper.style.FEW_DECIDED`
    datasets decide it; undecided pairs read "–\\n(0/0)" on grey, hatched; the
    diagonal is blank. Rows beat columns. ``colorbar``: draw this matrix's colour bar (a figure
    of several draws one: :func:`tcclib.paper.plots.win_matrices`). Draws on ``ax`` (a new figure
    if None) and returns the Axes.
    """
    import matplotlib.pyplot as plt  # deferred: matplotlib loads only when a figure is drawn
    from matplotlib.patches import Rectangle  # deferred: as above
    from matplotlib.ticker import PercentFormatter  # deferred: as above

    if ax is None:
        _, ax = plt.subplots(figsize=(1.3 * len(frac.columns) + 2.5, 1.1 * len(frac.index) + 1.5))
    shown = frac.astype(float).to_numpy()
    cmap = plt.get_cmap(style.WIN_CMAP)
    image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=0, vmax=1)
    for r, i in enumerate(frac.index):
        for c, j in enumerate(frac.columns):
            f = shown[r, c]
            if not np.isnan(f) and decided.loc[i, j] < style.FEW_DECIDED:  # (a share of 1 or 2: pale, not decisive)
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor="white", alpha=style.FEW_DECIDED_FADE, lw=0))
                text, colour = f"{_pct(f)}\n({int(wins.loc[i, j])}/{int(decided.loc[i, j])})", "black"
            elif not np.isnan(f):
                text, colour = (
                    f"{_pct(f)}\n({int(wins.loc[i, j])}/{int(decided.loc[i, j])})",
                    style.text_colour(cmap(f)),
                )
            elif i != j:  # no significant difference either way: say so, grey and hatched
                ax.add_patch(
                    Rectangle(
                        (c - 0.5, r - 0.5),
                        1,
                        1,
                        facecolor=style.UNDECIDED_COLOUR,
                        hatch=style.UNDECIDED_HATCH,
                        edgecolor="0.6",
                        lw=0,
                    )
                )
                text, colour = "–\n(0/0)", "black"
            else:
                continue
            ax.text(c, r, text, ha="center", va="center", fontsize=9, color=colour)
    ax.set_xticks(range(len(frac.columns)), labels=[str(c) for c in frac.columns])
    ax.set_yticks(range(len(frac.index)), labels=[str(i) for i in frac.index])
    ax.set_xticks(np.arange(len(frac.columns) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(frac.index) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    ax.tick_params(labelsize=style.TICK_SIZE)
    for side in ax.spines.values():
        side.set_visible(False)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, shrink=0.8, format=PercentFormatter(1.0))
        bar.set_label("share of significant wins of the row method")
    ax.set_title(title)
    ax.set_xlabel("column method (beaten)")
    ax.set_ylabel("row method (row beats column)")
    ax.tick_params(axis="x", rotation=30)
    plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
    return ax


def _md_cell(v, places: int | None = None) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return ""
        return f"{v:.4g}" if places is None else f"{v:.{places}f}"
    try:
        if pd.isna(v):
            return ""
    except (TypeError, ValueError):  # lists and other non-scalars
        pass
    return str(v).replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")


def to_markdown(df: pd.DataFrame, index: bool = True, decimals: int | dict[str, int] | None = None) -> str:
    """Render a DataFrame as a GitHub-markdown table (no need for the ``tabulate`` package).

    With ``index=True`` the index becomes the first column (headed by its name, or empty) unless
    it is a plain unnamed RangeIndex. Floats are shown with 4 significant digits, or with a fixed
    number of decimals (so a column's numbers line up: ``5.30``, ``8.00``): ``decimals`` as a
    number for every column, as ``{column: decimals}`` for those it names; NaN/NA as an empty
    cell; ``|`` is escaped and newlines become ``<br>``. A column of numbers (``96.2 ± 0.8``,
    ``< 0.001``, ``90.0% (9/10)``, dashes for none) is right-aligned (``---:``), as a notebook
    shows a DataFrame's, so that fixed decimals line up; the others are left-aligned.
    """
    d = df
    if index and (df.index.name is not None or not isinstance(df.index, pd.RangeIndex)):
        d = df.reset_index()
        if df.index.name is None and d.columns[0] == "index":
            d = d.rename(columns={"index": ""})
    header = [_md_cell(c) for c in d.columns]
    by_column = dict.fromkeys(d.columns, decimals) if isinstance(decimals, int) else decimals or {}
    places = [by_column.get(c) for c in d.columns]
    rows = [[_md_cell(v, n) for v, n in zip(row, places)] for row in d.itertuples(index=False, name=None)]
    rules = ["---:" if _numeric_column([r[i] for r in rows]) else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rules) + " |"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


_NUMBER = r"[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?"
_NUMERIC_CELL = re.compile(
    rf"(?:[<>≤≥]=?\s*|x|±)?{_NUMBER}(?:\s*(?:±|/)\s*{_NUMBER}|,\s*x?{_NUMBER})*"
    r"\s*(?:%|s|x)?(?:\s*\([^()]*\))?"
)
"""A cell that reads as a number: ``79.28``, ``-0.59``, ``96.2 ± 0.8``, ``90.0% (9/10)``,
``< 0.001``, ``5.6e-05``, ``1.2 (x1.4)``, ``3 / 1 / 26`` (bold or code marks around it allowed)."""
_EMPTY_CELL = re.compile(r"|[–—-](?:\s*\([^()]*\))?")
"""A cell that holds no number: empty, or a dash (``–``, ``– (0/0)``)."""


def _numeric_column(cells: list[str]) -> bool:
    """Whether a column's cells are numbers (and dashes), so that it is right-aligned: at least
    one number, every other cell empty or a dash."""
    bare = [cell.strip().strip("*`").strip() for cell in cells]
    numbers = [cell for cell in bare if not _EMPTY_CELL.fullmatch(cell)]
    return bool(numbers) and all(_NUMERIC_CELL.fullmatch(cell) for cell in numbers)


#: the methods and baselines each kind of set table shows, in order: live views of the registry
#: (:func:`tcclib.method.registry.table_methods`; the paper's methods are HOW_METHODS / WHERE_METHODS
#: above, these must not shadow them)
SET_HOW_METHODS = registry.LiveNames(lambda: registry.table_methods("how"))
SET_WHERE_METHODS = registry.LiveNames(lambda: registry.table_methods("where"))


# --------------------------------------------------------------------------- LaTeX


_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _tex(text) -> str:
    """Escape LaTeX's special characters in plain text."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def _paper_dids(names, dids: dict) -> dict:
    """Our dataset name -> OpenML id the paper's tables know (by id, else by name), where known."""
    by_name, known = _did_by_name(), set(load_paper_table("accuracy", "how")["did"])
    out = {}
    for n in names:
        d = dids.get(n)
        d = int(d) if d is not None and not pd.isna(d) else by_name.get(_norm(n))
        if d is not None and d in known:
            out[n] = d
    return out


def _best_mask(mean: pd.DataFrame, digits: int) -> pd.DataFrame:
    """True where a row's mean equals its best at the shown precision (ties all True)."""
    r = mean.round(digits)
    return r.eq(r.max(axis=1), axis=0) & r.notna()


@dataclass
class _LatexData:
    """What a LaTeX table shows: ours and the paper's means and standard errors per dataset
    (rows in ``order``) and method, and which cells are the best of their row."""

    methods: list
    paper_methods: list
    order: list
    mean: pd.DataFrame
    se: pd.DataFrame
    paper_mean: pd.DataFrame
    paper_se: pd.DataFrame
    n_seeds: int

    @property
    def columns(self) -> list[tuple[str, str]]:
        """``(method, "ours" | "paper")`` of every column after the dataset's."""
        return [
            (m, side) for m in self.methods for side in ("ours", "paper") if side == "ours" or m in self.paper_methods
        ]


def _latex_data(results: pd.DataFrame, metric: str, kind: str, methods) -> _LatexData:
    """Ours (:func:`summarize`) and the paper's numbers of one table, aligned by dataset."""
    if methods is None:
        methods = method_groups(results)[kind]
    s, methods, mean, se, dids = _laid_out(results, metric, methods)
    if not methods:
        raise ValueError(f"no result for any of the methods {methods!r}")
    order = list(mean.index)
    to_did = _paper_dids(order, dids)
    pl = paper_long(metric, kind)
    paper_methods = [m for m in methods if m in set(pl["method"])]

    def paper(values: str) -> pd.DataFrame:
        wide = pl.pivot(index="did", columns="method", values=values)
        return pd.DataFrame(
            {m: [wide.loc[to_did[d], m] if d in to_did else np.nan for d in order] for m in paper_methods}, index=order
        )

    paper_mean, paper_se = paper("mean"), paper("se")
    if not (bool(paper_methods) and paper_mean.notna().any().any()):
        paper_methods = []
    n_seeds = int(s["n"].max()) if len(s) else 0
    return _LatexData(methods, paper_methods, order, mean, se, paper_mean, paper_se, n_seeds)


def _latex_cell(mu, e, bold: bool, digits: int) -> str:
    if pd.isna(mu):
        return "--"
    body = f"{mu:.{digits}f} \\pm {e:.{digits}f}"
    return f"$\\mathbf{{{body}}}$" if bold else f"${body}$"


def _latex_head(data: _LatexData, metric: str, kind: str, caption, label) -> list[str]:
    """The table's opening lines and its column heads (a method over "ours" and "paper")."""
    name = cell_tests.TABLE_NAMES[metric, kind]
    unit = "accuracy (\\%)" if metric == "accuracy" else "AUROC"
    caption = caption or (
        f"{name} ({'how' if kind == 'how' else 'where'} to corrupt), test {unit}: ours ({data.n_seeds} seeds) "
        f"next to the paper's, mean $\\pm$ standard error (std with ddof=0 over $\\sqrt{{n}}$). Bold: the "
        f"best of each row, ours and the paper's separately."
    )
    label = label or f"tab:{metric}-{kind}"
    lines = [
        f"% {name}, {metric}, {kind} to corrupt: generated by tcclib.paper.tables.latex_table; needs "
        f"\\usepackage{{booktabs}}",
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{caption}}}",
        f"\\label{{{label}}}",
        "\\begin{tabular}{l" + "r" * len(data.columns) + "}",
        "\\toprule",
    ]
    head, rules, sub, c = ["Dataset"], [], [""], 2
    for m in data.methods:
        w = 2 if m in data.paper_methods else 1
        head.append(f"\\multicolumn{{{w}}}{{c}}{{{_tex(m)}}}" if w == 2 else _tex(m))
        rules.append(f"\\cmidrule(lr){{{c}-{c + w - 1}}}")
        sub += ["ours", "paper"] if w == 2 else ["ours"]
        c += w
    if data.paper_methods:
        head[0] = ""
        lines += [" & ".join(head) + " \\\\", " ".join(rules), "Dataset & " + " & ".join(sub[1:]) + " \\\\"]
    else:
        lines += [" & ".join(head) + " \\\\"]
    return lines + ["\\midrule"]


def _latex_body(data: _LatexData, metric: str) -> list[str]:
    """One line per dataset, the best mean of each side bold."""
    digits, pdigits = DIGITS[metric], _PAPER_DIGITS[metric]
    best = _best_mask(data.mean, digits)
    pbest = _best_mask(data.paper_mean, pdigits) if data.paper_methods else None
    lines = []
    for d in data.order:
        row = [_tex(d)]
        for m, side in data.columns:
            if side == "ours":
                row.append(_latex_cell(data.mean.loc[d, m], data.se.loc[d, m], bool(best.loc[d, m]), digits))
            else:
                row.append(
                    _latex_cell(data.paper_mean.loc[d, m], data.paper_se.loc[d, m], bool(pbest.loc[d, m]), pdigits)
                )
        lines.append(" & ".join(row) + " \\\\")
    return lines + ["\\midrule"]


def _mean_and_rank(frame: pd.DataFrame, digits: int) -> tuple[dict, dict]:
    """Each column's mean and average rank (1 = best) over the rows where every column has a value."""
    full = frame.dropna()
    if not len(full):
        return {m: "--" for m in frame.columns}, {m: "--" for m in frame.columns}
    avg = full.mean()
    rk = full.rank(axis=1, ascending=False, method="average").mean()
    return ({m: f"{avg[m]:.{digits}f}" for m in frame.columns}, {m: f"{rk[m]:.2f}" for m in frame.columns})


def _latex_foot(data: _LatexData, metric: str) -> list[str]:
    """The ``mean`` and ``average rank`` lines, each side over its own complete rows, and the closing."""
    o_avg, o_rank = _mean_and_rank(data.mean, DIGITS[metric])
    p_avg, p_rank = _mean_and_rank(data.paper_mean, _PAPER_DIGITS[metric] + 1) if data.paper_methods else ({}, {})
    lines = []
    for title, o, p in (("mean", o_avg, p_avg), ("average rank", o_rank, p_rank)):
        row = [title] + [o[m] if side == "ours" else p[m] for m, side in data.columns]
        lines.append(" & ".join(row) + " \\\\")
    return lines + ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]


def latex_table(
    results: pd.DataFrame, metric: str, kind: str, methods=None, caption: str | None = None, label: str | None = None
) -> str:
    r"""One of Tables 2-5 as LaTeX (booktabs): ours next to the paper's, per dataset.

    Rows: datasets in the paper's order (others after), then ``mean`` and ``average rank`` (each
    side over the datasets where all its columns have a value). Columns: for each of ``methods``
    (default: those of ``kind`` in ``results``) our "mean ± se" and, where the paper has that
    column, the paper's next to it (the separate methods, e.g. ``class_most_published``, and the
    baselines have ours only: the paper's column sits under the method that owns it). Accuracy in
    percent with 2 decimals; AUROC with 3 for ours and 2 for the paper's, as it printed them (its
    mean row gets one more). The best mean of each row is bold, ours among
    ours and the paper's among the paper's, ties at the shown precision included. Needs
    ``\usepackage{booktabs}``. Returns the text of a ``table`` environment.
    """
    _check(metric, kind)
    data = _latex_data(results, metric, kind, methods)
    lines = _latex_head(data, metric, kind, caption, label) + _latex_body(data, metric) + _latex_foot(data, metric)
    return "\n".join(lines)


def _markdown_cell(mu, e, bold: bool, digits: int) -> str:
    if pd.isna(mu):
        return "–"
    body = f"{mu:.{digits}f} ± {e:.{digits}f}"
    return f"**{body}**" if bold else body


def markdown_table(results: pd.DataFrame, metric: str, kind: str, methods=None) -> pd.DataFrame:
    """One of Tables 2-5 as the ``.md`` files and notebook 04 show it: ours next to the paper's.

    The layout of :func:`latex_table`: a row per dataset (the paper's order, others after), then
    ``mean over datasets`` (both sides at our precision), the ``average rank among the paper's N
    methods`` (ours ranked among those methods alone, as the paper ranked them, so that the two
    sides compare) and, where the set has more columns (baselines, other methods), ours ``among all
    K of ours`` (each side over the datasets where all its columns have a value). For each method
    our "mean ± se" (``<method>: ours``) and, where the paper has that column, the paper's
    (``<method>: paper``; a dataset the paper does not report reads "–"). Accuracy in percent
    with 2 decimals, AUROC with 3 for ours and 2 for the paper's, as it printed them (the means
    over datasets at ours). The best mean of each row is bold, ours among ours, the paper's among the
    paper's. Returns the cells as a frame (:func:`to_markdown` renders it)."""
    _check(metric, kind)
    data = _latex_data(results, metric, kind, methods)
    digits, pdigits = DIGITS[metric], _PAPER_DIGITS[metric]
    best = _best_mask(data.mean, digits)
    pbest = _best_mask(data.paper_mean, pdigits) if data.paper_methods else None
    labels = [f"{m}: {side}" if m in data.paper_methods else m for m, side in data.columns]
    rows = {}
    for d in data.order:
        rows[d] = [
            _markdown_cell(data.mean.loc[d, m], data.se.loc[d, m], bool(best.loc[d, m]), digits)
            if side == "ours"
            else _markdown_cell(data.paper_mean.loc[d, m], data.paper_se.loc[d, m], bool(pbest.loc[d, m]), pdigits)
            for m, side in data.columns
        ]
    o_avg, o_rank = _mean_and_rank(data.mean, digits)
    # the means at one precision for both sides
    p_avg, p_rank = _mean_and_rank(data.paper_mean, digits) if data.paper_methods else ({}, {})
    # ranks comparable with the paper's: ours among the paper's methods only, as the paper ranks
    _, o_rank_paper = _mean_and_rank(data.mean[data.paper_methods], digits) if data.paper_methods else ({}, {})
    n_paper, n_all = len(data.paper_methods), len(data.methods)
    rows["mean over datasets"] = [
        (o_avg[m] if side == "ours" else p_avg[m]).replace("--", "–") for m, side in data.columns
    ]
    if data.paper_methods:
        rows[f"average rank among the paper's {n_paper} methods"] = [
            (o_rank_paper.get(m, "") if side == "ours" else p_rank[m]).replace("--", "–") for m, side in data.columns
        ]
    if n_all > n_paper:
        rows[f"average rank among all {n_all} of ours"] = [
            o_rank[m].replace("--", "–") if side == "ours" else "" for m, side in data.columns
        ]
    cells = pd.DataFrame.from_dict(rows, orient="index", columns=labels)
    cells.index.name = "dataset"
    return cells


def method_groups(results: pd.DataFrame) -> dict:
    """``{"how": [...], "where": [...]}``: the methods (and baselines) of each kind present in
    ``results``, in the tables' order."""
    present = set(results.method) if len(results) else set()
    return {kind: registry.table_methods(kind, present) for kind in _KINDS}


def write_set_tables(set_dir, results: pd.DataFrame) -> list[str]:
    """``04_evaluation``'s tables: gather every finished dataset's files of ``set_dir`` into
    ``results/`` (results, history, pseudo, corr_range), write Tables 2-5 per metric and kind as
    Markdown, ours next to the paper's (``table_<metric>_<kind>.md``, :func:`markdown_table`),
    as LaTeX (``table_<metric>_<kind>.tex``, :func:`latex_table`) and their summaries (CSV);
    returns the tables as Markdown blocks, one per table (a heading, then the table)."""
    set_dir = Path(set_dir)
    res_dir = set_dir / "results"
    store.write_csv(results, res_dir / "results.csv")
    for what in ("history", "pseudo", "corr_range"):
        df = store.gather(set_dir, what)
        if len(df):
            store.write_csv(df, res_dir / f"{what}.csv")
    blocks = []
    groups = method_groups(results)
    for metric in ("accuracy", "auroc"):
        for kind, methods in groups.items():
            if len(methods) < 2:
                continue
            table = to_markdown(markdown_table(results, metric, kind, methods))
            store.write_text(table + "\n", res_dir / f"table_{metric}_{kind}.md")
            store.write_text(latex_table(results, metric, kind, methods), res_dir / f"table_{metric}_{kind}.tex")
            store.write_csv(summarize(results, metric, methods), res_dir / f"summary_{metric}_{kind}.csv")
            name = cell_tests.TABLE_NAMES[metric, kind]
            unit = "accuracy (%)" if metric == "accuracy" else "AUROC"
            blocks.append(f"### {name}: {unit}, {kind} to corrupt\n\n{table}")
    return blocks


def agreement_caption(metric: str, tests: bool = True) -> str:
    """What :func:`agreement_summary`'s columns hold for ``metric``, in words with their unit."""
    unit = "percentage points of accuracy" if metric == "accuracy" else "AUROC"
    margin = f"±{cell_tests.MARGINS[metric]:g} {'point' if metric == 'accuracy' else 'AUROC'}"
    line = (
        f"*inside*: the paper's mean lies in our 95 % interval; *mean diff*: our mean minus the paper's, "
        f"averaged over the datasets, in {unit}"
    )
    if tests:
        line += f"; *differ*: Welch's test finds a difference (p < 0.05); *equivalent*: a TOST within {margin}"
    return line + "."


def write_paper_comparisons(results: pd.DataFrame, res_dir) -> list[str]:
    """Our means next to the paper's for every dataset it reports, per metric and kind
    (``paper_comparison_*.csv``); returns the agreement summaries as Markdown blocks, one per
    table, or one sentence when the paper reports none of the datasets."""
    blocks = []
    for metric in ("accuracy", "auroc"):
        for kind in ("how", "where"):
            cmp = compare_with_paper(results, metric, kind)
            if len(cmp):
                store.write_csv(cmp, Path(res_dir) / f"paper_comparison_{metric}_{kind}.csv")
                name = cell_tests.TABLE_NAMES[metric, kind]
                summary = to_markdown(agreement_summary(cmp, metric=metric))
                blocks.append(
                    f"### {name} ({metric}, {kind}): agreement with the paper\n\n{summary}"
                    f"\n\n{agreement_caption(metric, tests='differ' in cmp.columns)}"
                )
    if not blocks:
        names = sorted(map(str, results.dataset.unique()))
        aliased = [
            f"{n} (the paper's `{PAPER_ALIASES[n][0]}` row is the same table)" for n in names if n in PAPER_ALIASES
        ]
        also = f" By name, that is; {', '.join(aliased)}: notebook 03 sets it beside ours." if aliased else ""
        blocks.append(
            f"The paper reports none of this set's datasets ({', '.join(names)}): nothing to set beside it.{also}"
        )
    return blocks
