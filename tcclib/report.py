"""The reproduction report: our results next to the paper's, claim by claim.

:func:`build_report` turns a set's gathered results into one markdown document (the report
notebook shows the same pieces and writes this document to ``outputs/<set>/report.md``).
Only datasets that finished are compared; the ones that did not are listed with the reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import store, tables

# (row method, column method, the paper's statement)
CLAIMS = [
    ("class", "random", "class-conditioned corruption beats conventional (random) corruption"),
    ("random", "no_pretrain", "contrastive pretraining (random) beats no pretraining"),
    ("class", "no_pretrain", "class-conditioned pretraining beats no pretraining"),
    ("oracle", "class", "true-label conditioning (oracle) beats pseudo-labels"),
    ("oracle", "random", "true-label conditioning (oracle) beats random"),
]


def _cell(frac, wins, decided, i, j) -> str:
    d = int(decided.loc[i, j])
    return f"{frac.loc[i, j]:.1%} ({int(wins.loc[i, j])}/{d})" if d else "– (0/0)"


def claims(results: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """For each claim of the paper: its figure (recomputed from its tables, as in Figure 3), ours,
    and whether ours supports it.

    Supported: the row method wins more than half of the decided datasets; "undecided" where no
    dataset gives a significant difference either way.
    """
    have = set(results.method)
    methods = [m for m in ("no_pretrain", "random", "class", "oracle") if m in have]
    if len(methods) < 2:
        return pd.DataFrame()
    ours = tables.win_matrix(results, metric, methods)
    paper = tables.paper_win_matrix(metric, "how")
    rows = []
    for i, j, text in CLAIMS:
        if not {i, j} <= have:
            continue
        f, d = ours[0].loc[i, j], int(ours[2].loc[i, j])
        verdict = "undecided (no significant dataset)" if d == 0 else ("supported" if f > 0.5 else "not supported")
        rows.append(dict(claim=text, paper=_cell(*paper, i, j), ours=_cell(*ours, i, j), verdict=verdict))
    return pd.DataFrame(rows)


def corr_range_table(set_dir) -> pd.DataFrame:
    """Our feature correlation value range (mean over seeds) next to the paper's."""
    ours = store.gather(set_dir, "corr_range")
    if ours.empty:
        return ours
    ours = ours.groupby("dataset", as_index=False).corr_range.mean().rename(columns={"corr_range": "ours"})
    paper = tables.paper_corr_range().rename(columns={"corr_range": "paper"})
    m = ours.merge(paper[["dataset", "paper"]], on="dataset", how="left")
    m["diff"] = m.ours - m.paper
    return m


def build_report(set_dir, title: str | None = None) -> str:
    """The whole report as markdown."""
    set_dir = Path(set_dir)
    results = store.gather(set_dir, "results")
    st = store.status(set_dir)
    name = set_dir.resolve().name
    out = [f"# Reproduction report: `{name}`", "",
           title or "Our run of Cui et al. (arXiv:2404.17489) next to the paper's published numbers "
           "(Tables 2-5, Figure 3). Mean ± standard error over seeds (std ddof=0 / sqrt(n), the "
           "paper's definition); *inside* = the paper's mean lies in our 95 % t-interval.", ""]
    done = st[st.status == "done"]
    out += [f"Datasets finished: **{len(done)}**; not finished: {len(st) - len(done)}.", ""]
    if len(st) - len(done):
        out += ["| dataset | status | why |", "| --- | --- | --- |"]
        out += [f"| {r.dataset} | {r.status} | {r.error or 'not run yet'} |" for r in st[st.status != 'done'].itertuples()]
        out.append("")
    if results.empty:
        out.append("No finished dataset yet: nothing to compare.")
        return "\n".join(out) + "\n"
    out += ["## The paper's claims", "",
            f"Win shares over datasets with a significant difference (Welch, p < 0.05). Ours rest on "
            f"the {results.dataset.nunique()} finished dataset(s) only, the paper's on 30: with few "
            f"datasets a verdict is provisional.", ""]
    for metric in ("accuracy", "auroc"):
        c = claims(results, metric)
        if len(c):
            out += [f"### {metric}", "", tables.to_markdown(c, index=False), ""]
    out += ["## Agreement with the published tables", ""]
    for metric in ("accuracy", "auroc"):
        for kind in ("how", "where"):
            cmp = tables.compare_with_paper(results, metric, kind)
            if cmp.empty:
                continue
            out += [f"### {metric}, {kind} to corrupt", "", tables.to_markdown(tables.agreement_summary(cmp), index=False), ""]
            digits = 2 if metric == "accuracy" else 3
            show = cmp.assign(
                ours=[f"{m:.{digits}f} ± {s:.{digits}f}" for m, s in zip(cmp["mean"], cmp.se)],
                paper=[f"{m:.{digits}f} ± {s:.{digits}f}" for m, s in zip(cmp.paper_mean, cmp.paper_se)],
                diff=cmp["diff"].map(lambda v: f"{v:+.{digits}f}"),
                inside=cmp.inside.map({True: "yes", False: "no"}))
            out += ["<details><summary>per dataset</summary>", "",
                    tables.to_markdown(show[["dataset", "method", "ours", "paper", "diff", "inside"]], index=False),
                    "", "</details>", ""]
    how = [m for m in ["no_pretrain", "random", "class", "oracle", "xgboost", "logreg", "self_training"]
           if m in set(results.method)]
    if len(how) >= 2:
        frac, wins, decided = tables.win_matrix(results, "accuracy", how)
        cell = frac.copy().astype(object)
        for i in frac.index:
            for j in frac.columns:
                cell.loc[i, j] = "" if i == j else (f"{frac.loc[i, j]:.1%} ({wins.loc[i, j]}/{decided.loc[i, j]})"
                                                     if decided.loc[i, j] else "– (0/0)")
        cell.index.name = "row beats column"
        out += ["## Win matrix (accuracy, Welch p < 0.05), ours incl. baselines", "", tables.to_markdown(cell), ""]
    cr = corr_range_table(set_dir)
    if len(cr):
        out += ["## Feature correlation value range", "",
                f"Mean absolute difference to the paper: {np.nanmean(np.abs(cr['diff'])):.3f} over "
                f"{int(cr.paper.notna().sum())} datasets.", "",
                tables.to_markdown(cr.round(3), index=False), ""]
    return "\n".join(out) + "\n"
