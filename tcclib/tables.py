"""The paper's tables and win matrices, for our results and for the published numbers.

* Tables 2-5: mean ± standard error per dataset and method, the paper's definition of the
  standard error being ``np.std(values, ddof=0) / sqrt(n)``; accuracy in percent.
* Win matrices (Figure 3): for each pair of methods and each dataset, a one-sided Welch t-test
  (p < 0.05) decides whether the row method significantly beats the column method; the entry
  is wins / (wins + losses) over the datasets where either direction is significant.
* The published Tables 2-5 ship with the package (``tcclib/data/paper/``, see its README) so
  comparisons never depend on files outside the project.
"""

from __future__ import annotations

import warnings
from importlib import resources

import numpy as np
import pandas as pd
from scipy import stats

HOW_METHODS = ("no_pretrain", "random", "class", "oracle")
WHERE_METHODS = ("class", "class_least", "class_most")
# paper column prefix -> our method name
_PAPER_NAMES = {"no_pretrain": "no_pretrain", "random": "random", "class": "class", "oracle": "oracle",
                "random_features": "class", "least_correlated": "class_least", "most_correlated": "class_most"}
_METRICS = ("accuracy", "auroc")
_KINDS = ("how", "where")


def _check(metric: str, kind: str | None = None) -> None:
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS}, got {metric!r}")
    if kind is not None and kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")


def load_paper_table(metric: str, kind: str) -> pd.DataFrame:
    """The published table as shipped (wide: ``<method>_mean``, ``<method>_se``)."""
    _check(metric, kind)
    with resources.files("tcclib").joinpath(f"data/paper/{metric}-results-{kind}.csv").open() as f:
        return pd.read_csv(f)


def paper_long(metric: str, kind: str) -> pd.DataFrame:
    """The published table, long: dataset, did, method (our names), mean, se."""
    wide = load_paper_table(metric, kind)
    rows = []
    for col in wide.columns:
        if col.endswith("_mean"):
            p = col[: -len("_mean")]
            for _, r in wide.iterrows():
                rows.append((r.dataset, int(r.did), _PAPER_NAMES[p], r[col], r[f"{p}_se"]))
    return pd.DataFrame(rows, columns=["dataset", "did", "method", "mean", "se"])


def paper_corr_range() -> pd.DataFrame:
    """The paper's feature correlation value range per dataset (Table 4)."""
    t = load_paper_table("accuracy", "where")[["dataset", "did", "corr_range"]]
    from .datasets import list_datasets

    names = list_datasets().dropna(subset=["did"]).set_index("did")["name"]
    t = t.assign(dataset=[names.get(d, n) for d, n in zip(t.did, t.dataset)])  # registry spelling
    return t


def _values(results: pd.DataFrame, metric: str) -> pd.Series:
    _check(metric)
    v = results[metric].astype(float)
    return v * 100 if metric == "accuracy" else v


def summarize(results: pd.DataFrame, metric: str, methods=None) -> pd.DataFrame:
    """Per dataset x method: mean, se (std ddof=0 / sqrt(n)), sd (ddof=1) and n; accuracy in %."""
    df = results.assign(value=_values(results, metric))
    if methods is not None:
        df = df[df.method.isin(methods)]
    g = df.groupby(["dataset", "method"], sort=False)["value"]
    out = g.agg(mean="mean", n="count",
                se=lambda v: float(np.std(v, ddof=0) / np.sqrt(len(v))),
                sd=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else np.nan).reset_index()
    if "did" in results.columns:
        dids = results.drop_duplicates("dataset").set_index("dataset")["did"]
        out.insert(1, "did", out.dataset.map(dids))
    return out


def _order_datasets(names) -> list:
    from .datasets import list_datasets

    reg = list(list_datasets().name)
    return sorted(names, key=lambda n: (reg.index(n) if n in reg else len(reg), str(n)))


def paper_style_table(results: pd.DataFrame, metric: str, methods) -> pd.DataFrame:
    """Strings "mean ± se" (best per dataset in bold), datasets as rows, plus the average rank."""
    s = summarize(results, metric, methods)
    methods = [m for m in methods if m in set(s.method)]
    mean = s.pivot(index="dataset", columns="method", values="mean").reindex(columns=methods)
    se = s.pivot(index="dataset", columns="method", values="se").reindex(columns=methods)
    order = _order_datasets(mean.index)
    mean, se = mean.loc[order], se.loc[order]
    digits = 2 if metric == "accuracy" else 3
    best = mean.max(axis=1)
    cells = pd.DataFrame(index=mean.index, columns=methods, dtype=object)
    for d in mean.index:
        for m in methods:
            mu, e = mean.loc[d, m], se.loc[d, m]
            txt = "" if pd.isna(mu) else f"{mu:.{digits}f} ± {e:.{digits}f}"
            if not pd.isna(mu) and round(mu, digits) == round(best[d], digits):
                txt = f"**{txt}**"
            cells.loc[d, m] = txt
    ranks = mean.rank(axis=1, ascending=False).mean()
    cells.loc["average rank"] = [f"{ranks[m]:.2f}" for m in methods]
    cells.index.name = "dataset"
    return cells


def _welch_greater(a, b) -> float:
    """One-sided Welch p-value of mean(a) > mean(b) from (mean, sd, n) rows; handles zero variances."""
    if a.sd == 0 and b.sd == 0:
        return 0.0 if a["mean"] > b["mean"] else 1.0
    with warnings.catch_warnings():  # nearly identical samples: scipy warns, the p-value is large
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind_from_stats(a["mean"], a.sd, a.n, b["mean"], b.sd, b.n,
                                                equal_var=False, alternative="greater").pvalue)


def _win_from_stats(st: pd.DataFrame, methods, alpha: float):
    """(fraction, wins, decided) from per (dataset, method) rows of mean, sd (ddof=1) and n."""
    st = st.set_index(["dataset", "method"])
    wins = pd.DataFrame(0, index=list(methods), columns=list(methods))
    for d in st.index.get_level_values(0).unique():
        have = [m for m in methods if (d, m) in st.index]
        for i in have:
            for j in have:
                if i != j and _welch_greater(st.loc[(d, i)], st.loc[(d, j)]) < alpha:
                    wins.loc[i, j] += 1
    decided = wins + wins.T
    frac = wins / decided.replace(0, np.nan)
    for m in methods:
        frac.loc[m, m] = np.nan
    return frac, wins, decided


def win_matrix(results: pd.DataFrame, metric: str, methods, alpha: float = 0.05):
    """(fraction, wins, decided) of significant per-dataset wins of row over column
    (one-sided Welch t-test on the per-seed values)."""
    s = summarize(results, metric, methods)
    return _win_from_stats(s[["dataset", "method", "mean", "sd", "n"]].fillna({"sd": 0.0}), methods, alpha)


def paper_win_matrix(metric: str = "accuracy", kind: str = "how", alpha: float = 0.05, n: int = 8):
    """The same win matrix computed from the published mean/se (sample std = se*sqrt(n)*sqrt(n/(n-1)))."""
    p = paper_long(metric, kind)
    methods = list(dict.fromkeys(p.method))
    p = p.assign(sd=p.se * np.sqrt(n) * np.sqrt(n / (n - 1)), n=n, dataset=p.did)
    return _win_from_stats(p[["dataset", "method", "mean", "sd", "n"]], methods, alpha)


def compare_with_paper(results: pd.DataFrame, metric: str, kind: str) -> pd.DataFrame:
    """Ours next to the paper's per dataset x method, with whether the paper's mean lies inside
    our 95 % interval ``mean ± t(0.975, n-1) * sd / sqrt(n)`` (sd with ddof=1)."""
    _check(metric, kind)
    paper = paper_long(metric, kind).rename(columns={"mean": "paper_mean", "se": "paper_se"})
    if kind == "where" and "class_most_published" in set(results.method):
        extra = paper[paper.method == "class_most"].assign(method="class_most_published")
        paper = pd.concat([paper, extra], ignore_index=True)
    ours = summarize(results, metric)
    if "did" not in ours.columns or ours.did.isna().all():
        return pd.DataFrame()
    ours = ours.dropna(subset=["did"]).astype({"did": int})
    m = ours.merge(paper.drop(columns="dataset"), on=["did", "method"], how="inner")
    if m.empty:
        return m
    half = stats.t.ppf(0.975, (m.n - 1).clip(lower=1)) * m.sd / np.sqrt(m.n)
    m["diff"] = m["mean"] - m.paper_mean
    m["ci_low"], m["ci_high"] = m["mean"] - half, m["mean"] + half
    m["inside"] = (m.paper_mean >= m.ci_low) & (m.paper_mean <= m.ci_high)
    return m[["dataset", "did", "method", "mean", "se", "paper_mean", "paper_se", "diff",
              "ci_low", "ci_high", "inside", "n"]]


def agreement_summary(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per method and overall: cells whose paper mean is inside our interval, and the mean difference."""
    if comparison.empty:
        return pd.DataFrame(columns=["method", "datasets", "inside", "share inside", "mean diff"])
    g = comparison.groupby("method", sort=False)
    out = pd.DataFrame({"datasets": g.size(), "inside": g.inside.sum().astype(int),
                        "mean diff": g["diff"].mean()}).reset_index()
    total = pd.DataFrame([{"method": "all", "datasets": len(comparison), "inside": int(comparison.inside.sum()),
                           "mean diff": comparison["diff"].mean()}])
    out = pd.concat([out, total], ignore_index=True)
    out.insert(3, "share inside", (out.inside / out.datasets).map(lambda v: f"{v:.0%}"))
    out["mean diff"] = out["mean diff"].map(lambda v: f"{v:+.3f}")
    return out


def to_markdown(df: pd.DataFrame, index: bool = True) -> str:
    """A GitHub-markdown table (no dependency on the ``tabulate`` package)."""
    d = df.reset_index() if index and (df.index.name or not isinstance(df.index, pd.RangeIndex)) else df
    cols = [str(c) for c in d.columns]

    def fmt(v):
        if isinstance(v, float):
            return "" if np.isnan(v) else f"{v:.4g}"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in d.itertuples(index=False)]
    return "\n".join(lines)


def plot_win_matrix(frac: pd.DataFrame, wins: pd.DataFrame, decided: pd.DataFrame, ax=None, title: str = ""):
    """Heatmap of a win matrix; cells read "83.3%\\n(5/6)", undecided cells blank."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    ax = ax or plt.subplots(figsize=(6, 5))[1]
    annot = frac.copy().astype(object)
    for i in frac.index:
        for j in frac.columns:
            f = frac.loc[i, j]
            if i == j:
                annot.loc[i, j] = ""
            elif pd.isna(f):
                annot.loc[i, j] = "–\n(0/0)"  # no significant difference either way
            else:
                annot.loc[i, j] = f"{f:.1%}\n({wins.loc[i, j]}/{decided.loc[i, j]})"
    # undecided pairs sit at the neutral 0.5 colour; the diagonal stays blank
    shown = frac.astype(float).fillna(0.5).mask(np.eye(len(frac), dtype=bool))
    sns.heatmap(shown, annot=annot.values, fmt="", cmap="RdYlGn", vmin=0, vmax=1, ax=ax,
                cbar_kws={"label": "share of significant wins"}, linewidths=0.5, square=True)
    ax.set(title=title, xlabel="column method", ylabel="row method (row beats column)")
    ax.tick_params(axis="x", rotation=30)
    ax.tick_params(axis="y", rotation=0)
    return ax
