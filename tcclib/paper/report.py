"""The reproduction report: our results next to the paper's, claim by claim.

:func:`build_report` turns a set's gathered results into one markdown document (the report
notebook shows the same pieces and writes this document to ``outputs/<set>/report.md``).
Only datasets that finished are compared; the ones that did not are listed with the reason.

Sections: the answer in plain words (:func:`plain_summary`); the paper's claims with win shares
and a verdict resting on a test over datasets (:func:`claims`, :data:`VERDICT_RULE`); per-cell
tests against the published tables over distinct cells (:mod:`tcclib.paper.stats`); the agreement per
table; ranks over datasets (Friedman, Nemenyi, critical-difference diagrams written by
:func:`write_rank_figures`); the Wilcoxon test of class vs random; the win matrix; correlation
value ranges; every deviation from the paper and the authors' code (:func:`deviations`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from tcclib.artifacts import store
from tcclib.method import registry
from tcclib.paper import cell_tests, heads, stats, style, tables
from tcclib.paper.plots import savefig
from tcclib.util.errors import counted

CLAIMS = [
    ("class", "random", "class-conditioned corruption beats conventional (random) corruption"),
    ("random", "no_pretrain", "contrastive pretraining (random) beats no pretraining"),
    ("class", "no_pretrain", "class-conditioned pretraining beats no pretraining"),
    ("oracle", "class", "true-label conditioning (oracle) beats pseudo-labels"),
    ("oracle", "random", "true-label conditioning (oracle) beats random"),
]
# Where to corrupt (Tables 4-5): the published tables show almost no significant difference
# between choosing the corrupted features by correlation and choosing them uniformly, so the
# statement checked is "row is no better than column". (row, column, statement); the paper's
# figure of a row is that of the method owning the row's paper column (the registry's
# paper_columns: class_most_published's is class_most's)
WHERE_CLAIMS = [
    ("class_least", "class", "choosing the least-correlated features is no better than uniform choice"),
    ("class_most", "class", "choosing the most-correlated features is no better than uniform choice"),
    (
        "class_most_published",
        "class",
        "the authors' published 'most correlated' selection is no better than uniform choice",
    ),
]
BASELINES = registry.BASELINES  # every registered baseline (a live view of tcclib.method.registry)
#: the methods the baselines are set against in the summary, the first present: the paper's
#: class-conditioned method, else SCARF, else no pretraining (the paper's claims are about these)
BASELINE_REFERENCES = ("class", "random", "no_pretrain")
N_PAPER_DATASETS = 30  # the paper's benchmark: 30 OpenML-CC18 datasets


def _cell(frac, wins, decided, i, j) -> str:
    d = int(decided.loc[i, j])
    return f"{frac.loc[i, j]:.1%} ({int(wins.loc[i, j])}/{d})" if d else "– (0/0)"


def _paper_cell(mat, i, j) -> str:
    frac = mat[0]
    return _cell(*mat, i, j) if i in frac.index and j in frac.columns else "n/a"


def _p(p) -> str:
    """A p-value as text: '0.254', '0.0107', '< 0.001', '–' for none."""
    if p is None or not np.isfinite(p):
        return "–"
    return "< 0.001" if p < 0.001 else (f"{p:.3f}" if p >= 0.01 else f"{p:.4f}")


def _peq(p) -> str:
    """'p = 0.254', 'p < 0.001', 'no p' for none: for sentences."""
    t = _p(p)
    return "no p" if t == "–" else ("p " + t if t.startswith("<") else "p = " + t)


def _sign_p(mat, i, j, alternative="greater") -> float:
    frac, wins, decided = mat
    if i not in frac.index or j not in frac.columns:
        return np.nan
    return stats.sign_test(int(wins.loc[i, j]), int(decided.loc[i, j]), alternative)


def _wilcoxon_p(wide: pd.DataFrame, i: str, j: str) -> float:
    if wide is None or i not in wide.columns or j not in wide.columns:
        return np.nan
    w = wide[[i, j]].dropna()
    return stats.wilcoxon(w[i], w[j], "greater")["p"]


#: the verdict rule, as the report states it
VERDICT_RULE = (
    "Verdicts rest on a test over datasets, not on a win share: a **one-sided sign test** "
    "(binomial, p = P(at least the observed wins | a fair coin)) on the datasets where Welch's "
    'test finds a significant difference either way, at alpha = 0.05. A "row beats column" claim '
    "is *supported* when the row's wins are significant (p < 0.05), *contradicted* when the "
    "column's wins are, and *not shown* otherwise (a share above one half that a coin could give "
    'is not enough). A "row is no better than column" claim (where to corrupt) is *refuted* when '
    "the row's wins are significant, *supported* when the column's are, and *not refuted* otherwise. "
    "The Wilcoxon signed-rank p (one-sided, row above column, on the per-dataset means of all "
    "datasets) is shown beside it as a second test; the win shares are kept for comparison with "
    "the paper's Figure 3."
)


#: per kind of claim, the verdict with no decided dataset, when the row's wins are significant,
#: when the column's are, and when neither are ("where" claims say "row is no better than column")
_VERDICT_WORDS = {
    "how": ("not shown (no significant dataset)", "supported", "contradicted", "not shown"),
    "where": ("not refuted (no significant dataset)", "refuted", "supported", "not refuted"),
}


def _verdict(kind: str, p_for: float, p_against: float, decided: int, alpha: float) -> str:
    none, row_wins, column_wins, neither = _VERDICT_WORDS[kind]
    if decided == 0:
        return none
    return row_wins if p_for < alpha else column_wins if p_against < alpha else neither


def _share_verdict(kind: str, f: float, d: int) -> str:
    """The rule used before the tests: a win share above one half."""
    if kind == "how":
        return (
            "undecided (no significant dataset)"
            if d == 0
            else "supported"
            if f > 0.5
            else "split"
            if f == 0.5
            else "not supported"
        )
    return "supported (no significant dataset)" if d == 0 else ("not supported" if f > 0.5 else "supported")


def _with_paper_rows(specs, kind: str) -> list[tuple]:
    """``(row, column, statement, the paper's row)``: the method that owns the row's paper column."""
    owners = registry.column_owners(kind)
    return [(i, j, text, owners[registry.get(i).paper_column(kind)]) for i, j, text in specs]


def _separately_scored() -> str:
    """The separate methods in words, from the registry: what each is and whose column it shares."""
    parts = []
    for m in registry.separate_methods():
        entry = registry.get(m)
        kind, column = entry.paper_columns[0]
        parts.append(
            f"`{m}` ({entry.about}) is scored against the same `{column}` column as "
            f"`{registry.column_owners(kind)[column]}`"
        )
    return "; ".join(parts)


def claims(
    results: pd.DataFrame, metric: str = "accuracy", alpha: float = stats.ALPHA, raw: bool = False
) -> pd.DataFrame:
    """For each claim of the paper: its figure (recomputed from its tables, as in Figure 3), on
    all 30 datasets and on the datasets our results cover, ours, the tests over datasets, and
    whether ours supports it.

    Share cells are "share (wins / datasets with a significant difference either way)", rows beat
    columns. ``paper: sign p`` / ``ours: sign p``: one-sided sign test of those wins
    (:func:`tcclib.paper.stats.sign_test`); ``paper: Wilcoxon p`` / ``ours: Wilcoxon p``: one-sided
    Wilcoxon signed-rank test (row above column) on the per-dataset means. The verdict follows
    :data:`VERDICT_RULE` (the sign test on our results at ``alpha``); ``share rule`` is the verdict
    of the former rule (a win share above one half), kept to show where the two differ.
    ``raw``: also the unformatted sign-test p-values, ``_p_ours`` and ``_p_paper``.
    """
    have = set(results.method)
    datasets = list(dict.fromkeys(results.dataset))
    rows = []
    for kind, specs in (("how", _with_paper_rows(CLAIMS, "how")), ("where", _with_paper_rows(WHERE_CLAIMS, "where"))):
        specs = [c for c in specs if {c[0], c[1]} <= have]
        if not specs:
            continue
        methods = list(dict.fromkeys(m for c in specs for m in c[:2]))
        ours = tables.win_matrix(results, metric, methods, alpha)
        paper_all = tables.paper_win_matrix(metric, kind, alpha)
        paper_ours = tables.paper_win_matrix(metric, kind, alpha, datasets=datasets)
        wide = stats.dataset_means(results, metric, methods, complete=False)
        pw = tables.paper_long(metric, kind).pivot(index="did", columns="method", values="mean")
        for i, j, text, pi in specs:
            f, d = ours[0].loc[i, j], int(ours[2].loc[i, j])
            p_for, p_against = _sign_p(ours, i, j), _sign_p(ours, j, i)
            verdict = _verdict(kind, p_for, p_against, d, alpha)
            rows.append(
                {
                    "claim": text,
                    "paper": _paper_cell(paper_all, pi, j),
                    "paper: sign p": _p(_sign_p(paper_all, pi, j)),
                    "paper: Wilcoxon p": _p(_wilcoxon_p(pw, pi, j)),
                    "paper, same datasets": _paper_cell(paper_ours, pi, j),
                    "ours": _cell(*ours, i, j),
                    "ours: sign p": _p(p_for),
                    "ours: Wilcoxon p": _p(_wilcoxon_p(wide, i, j)),
                    "verdict": verdict,
                    "share rule": _share_verdict(kind, f, d),
                    "_p_ours": p_for,
                    "_p_paper": _sign_p(paper_all, pi, j),
                }
            )
    out = pd.DataFrame(rows)
    return out if raw else out.drop(columns=["_p_ours", "_p_paper"], errors="ignore")


VERDICT_ORDER = (
    "supported",
    "not shown",
    "not shown (no significant dataset)",
    "contradicted",
    "not refuted",
    "not refuted (no significant dataset)",
    "refuted",
)
_VERDICT_GLOSS = {
    "supported": "one-sided sign test p < 0.05 over the decided datasets",
    "not shown": "p ≥ 0.05: the wins cannot be told from a coin",
    "not shown (no significant dataset)": "",
    "contradicted": "the column's wins are significant",
    "not refuted": "the row's wins are not significant",
    "not refuted (no significant dataset)": "",
    "refuted": "the row's wins are significant",
}


def _holds(verdict: str) -> bool:
    """Whether a verdict (either rule) lets the claim stand: "supported", or "not refuted"."""
    return verdict.startswith("supported") or verdict.startswith("not refuted")


def _pairs_text(pairs) -> str:
    """[(a, b, d), (a, c, d)] -> 'a > b, c' grouped by the better method."""
    by = {}
    for a, b, _ in pairs:
        by.setdefault(a, []).append(b)
    return "; ".join(f"{a} > {', '.join(bs)}" for a, bs in by.items())


def _metric_label(metric: str) -> str:
    return "AUROC" if metric == "auroc" else metric.capitalize()


def _coverage(results: pd.DataFrame) -> str:
    """How many of the paper's datasets the run covers, and which of its datasets the paper does not report."""
    ours = sorted(results.dataset.unique())
    paper = set(tables.paper_long("accuracy", "how").dataset)
    k, others = sum(d in paper for d in ours), [d for d in ours if d not in paper]
    line = f"- Our run covers **{k} of {N_PAPER_DATASETS}** of the paper's datasets"
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        line += f" and {len(others)} the paper does not report ({shown})"
    if k >= N_PAPER_DATASETS and not others:
        return line + " (all of them)."
    if len(ours) == 1:  # a claim is a test over datasets: one dataset cannot show one
        return line + ": every statement below rests on this one dataset, too few to show a claim."
    return line + f": every statement below rests on these {len(ours)} alone."


def plain_summary(results: pd.DataFrame, set_dir=None) -> list[str]:
    """The report's answer in sentences (markdown bullets): which claims our run supports (by a
    test over datasets), how close our tables are to the published ones (over distinct cells),
    how the methods rank, what the baselines do, how many datasets it rests on.

    Each sentence is built from the figures of :func:`summary_facts` (the statistics), method
    names from the registry."""
    if results.empty:
        return ["- No finished dataset yet: nothing to say."]
    facts = summary_facts(results, set_dir)
    return [
        _coverage(results),
        *_claims_text(facts["claims"]),
        *_cells_text(facts["cells"]),
        *_separate_text(facts["separate"]),
        *_ranks_text(facts["ranks"]),
        *_class_vs_random_text(facts["class_vs_random"]),
        *_baselines_text(facts["baselines"]),
        *_corr_range_text(facts["corr_range"]),
    ]


def claims_lines(results: pd.DataFrame) -> list[str]:
    """The paper's claims tested on our win matrices, in sentences (markdown bullets), as
    :func:`plain_summary` says them: how many of the paper's datasets they rest on, then per
    metric the claims grouped by verdict (:func:`claims`)."""
    if results.empty:
        return ["- No finished dataset yet: nothing to say."]
    n = results.dataset.nunique()
    if stats.sign_test(n, n) >= stats.ALPHA:  # (every dataset a significant win cannot reach p < 0.05)
        return [_coverage(results).split(": every statement")[0] + ".", _too_few_for_claims(n)]
    lines = _claims_text({metric: claims(results, metric, raw=True) for metric in ("accuracy", "auroc")})
    return [_coverage(results), *(lines or ["- None of the paper's claims has both of its methods in these results."])]


def _too_few_for_claims(n: int) -> str:
    """Why no claim is tested over ``n`` datasets, and how many it takes."""
    needed = next(k for k in range(1, 64) if stats.sign_test(k, k) < stats.ALPHA)
    return (
        f"- A claim is a one-sided sign test over the datasets a method wins or loses significantly: over "
        f"{counted(n, 'dataset')}, even a win on every one gives p = {stats.sign_test(n, n):.2g}, so none is "
        f"tested here (it takes at least {needed}). The paper set's own run tests them over all 30 "
        f"(`outputs/paper/04_evaluation.ipynb`)."
    )


def agreement_lines(results: pd.DataFrame) -> list[str]:
    """How close our numbers come to the paper's, cell by cell, in sentences (markdown bullets),
    as :func:`plain_summary` says it: the distinct cells inside our 95 % interval, Welch's
    differences and TOST equivalences per metric, then the separately scored methods."""
    if results.empty:
        return ["- No finished dataset yet: nothing to say."]
    cells = stats.cell_tests(results)
    if not len(cells):
        return ["- The paper reports none of these datasets: no cell to set beside ours."]
    summ = stats.cell_summary(cells)
    return _cells_text(_distinct_cell_facts(cells, summ)) + _separate_text(_separate_facts(cells, summ))


def summary_facts(results: pd.DataFrame, set_dir=None) -> dict:
    """The statistics behind :func:`plain_summary`, one entry per sentence group: ``datasets``
    (how many), ``claims`` (per metric, :func:`claims`), ``cells`` and ``separate`` (the per-cell
    tests, :func:`tcclib.paper.stats.cell_summary`), ``ranks`` (:func:`tcclib.paper.stats.rank_test`),
    ``class_vs_random``, ``baselines`` and ``corr_range``."""
    cells = stats.cell_tests(results)
    summ = stats.cell_summary(cells)
    return {
        "datasets": results.dataset.nunique(),
        "claims": {metric: claims(results, metric, raw=True) for metric in ("accuracy", "auroc")},
        "cells": _distinct_cell_facts(cells, summ),
        "separate": _separate_facts(cells, summ),
        "ranks": {metric: stats.rank_test(results, metric) for metric in ("accuracy", "auroc")},
        "class_vs_random": stats.class_vs_random(results),
        "baselines": _baseline_facts(results),
        "corr_range": corr_range_table(set_dir) if set_dir is not None else None,
    }


def _claims_text(by_metric: dict) -> list[str]:
    """The claims grouped by verdict, per metric; then those whose verdict the rule change moved."""
    out, changed = [], []
    for metric, c in by_metric.items():
        if c.empty:
            continue
        groups = {}
        for r in c.to_dict("records"):
            groups.setdefault(r["verdict"], []).append(
                f"{r['claim']} (ours {r['ours']}, sign {_peq(r['_p_ours'])}; paper {r['paper']}, "
                f"sign {_peq(r['_p_paper'])})"
            )
            if _holds(r["verdict"]) != _holds(r["share rule"]):
                changed.append(f"{metric}: {r['claim']} ({r['share rule']} → {r['verdict']})")
        for key in VERDICT_ORDER:
            if key in groups:
                gloss = _VERDICT_GLOSS.get(key)
                out.append(
                    f"- {_metric_label(metric)}, **{key}**{f' ({gloss})' if gloss else ''}: "
                    + "; ".join(groups[key])
                    + "."
                )
    if changed:
        out.append(
            "- Verdicts that changed when the rule moved from a win share above one half to the "
            "sign test: " + "; ".join(changed) + "."
        )
    return out


def _distinct_cell_facts(cells: pd.DataFrame, summ: pd.DataFrame) -> list[dict]:
    """Per metric, the distinct cells' counts (:func:`tcclib.paper.stats.cell_summary`) and, per
    table of the paper, how many of its own cells hold the paper's mean inside our interval."""
    out = []
    for r in summ[summ["scope"] == "distinct"].to_dict("records"):
        per_table = []
        for kind in registry.TABLE_KINDS:
            t = cells[(cells.metric == r["metric"]) & (cells.kind == kind) & ~cells.separate]
            if len(t):
                per_table.append((stats.TABLE_NAMES[r["metric"], kind], int(t.inside.sum()), len(t)))
        out.append({**r, "per_table": per_table})
    return out


def _cells_text(facts: list[dict]) -> list[str]:
    out = []
    for r in facts:
        metric = r["metric"]
        margin = f"±{r['margin']:g} point" if metric == "accuracy" else f"±{r['margin']:g}"
        per_table = ", ".join(f"{name} {inside} of {n}" for name, inside, n in r["per_table"])
        out.append(
            f"- {_metric_label(metric)}, each dataset × paper column counted once ({r['cells']} distinct cells "
            f"of {r['tables']}; the where-table's uniform-choice column is the how-table's `class` column and "
            f"counts once): the paper's mean lies inside our 95 % interval in **{r['inside']} of "
            f"{r['cells']}** ({r['inside'] / r['cells']:.0%}; per table: {per_table}). Welch's "
            f"test against the paper's mean and se finds a difference (p < 0.05) in **{r['differ']}** "
            f"({r['differ (Holm)']} after Holm's correction; about {0.05 * r['cells']:.0f} would by chance "
            f"if all agreed); a TOST shows equivalence within {margin} for **{r['equivalent']}**; "
            f"{r['inconclusive']} are inconclusive (the median standard error of the difference is "
            f"{r['median se of diff']:.{2 if metric == 'accuracy' else 3}f})."
        )
    return out


def _separate_facts(cells: pd.DataFrame, summ: pd.DataFrame) -> list[dict]:
    """Per separately scored method (the registry's ``separate``): its counts per metric, its
    mean |gap| to the paper, and those of the methods it is set beside (the column's owner and
    the method it re-runs) on the same datasets."""
    out = []
    for scope, rows in summ[summ["scope"] != "distinct"].groupby("scope", sort=False):
        entry = registry.get(scope)
        column = next(c for _, c in entry.paper_columns)
        others = [registry.column_owners()[column]] + ([entry.repeats] if entry.repeats else [])
        parts = []
        for r in rows.itertuples():
            own = cells[(cells.metric == r.metric) & (cells.method == scope)]
            # the others on the same cells (a run under way covers fewer datasets than they do)
            same = cells[(cells.metric == r.metric) & cells.did.isin(set(own.did))]
            beside = [
                (m, int(c.inside.sum()), int(c.differ.sum()), c["diff"].abs().mean())
                for m in others
                for c in [same[same.method == m]]
                if len(c)
            ]
            parts.append({"row": r, "gap": own["diff"].abs().mean(), "beside": beside})
        out.append({"method": scope, "about": entry.about, "column": column, "parts": parts})
    return out


def _separate_text(facts: list[dict]) -> list[str]:
    out = []
    for f in facts:
        parts = []
        for part in f["parts"]:
            r = part["row"]
            dec, unit = (2, " points") if r.metric == "accuracy" else (3, "")
            ref = "; ".join(
                f"`{m}`: inside {inside}, differ {differ}, mean |gap| {gap:.{dec}f}"
                for m, inside, differ, gap in part["beside"]
            )
            parts.append(
                f"{r.metric} inside {r.inside} of {r.cells}, differ {r.differ}, equivalent "
                f"{r.equivalent}, mean |gap| {part['gap']:.{dec}f}{unit} (on the same "
                f"{r.cells} dataset{'s' if r.cells != 1 else ''}: {ref})"
            )
        out.append(
            f"- `{f['method']}` ({f['about']}) is scored separately against "
            f"the paper's `{f['column']}` column: " + "; ".join(parts) + "."
        )
    return out


def _ranks_text(by_metric: dict) -> list[str]:
    out = []
    for metric, rt in by_metric.items():
        if rt["k"] >= 3 and rt["n"] >= 2:
            best = ", ".join(f"{m} {v:.2f}" for m, v in rt["ranks"].items())
            out.append(
                f"- {_metric_label(metric)}, average ranks over {rt['n']} datasets (Friedman {_peq(rt['p'])}; "
                f"Nemenyi CD = {rt['cd']:.2f} at alpha 0.05): {best}. "
                + (
                    "Pairs further apart than the CD: " + _pairs_text(rt["pairs"]) + "."
                    if rt["pairs"]
                    else "No pair is further apart than the CD."
                )
            )
    return out


def _class_vs_random_text(cvr: pd.DataFrame) -> list[str]:
    parts = []
    for row in cvr.to_dict("records"):
        if row["datasets"] < 2:
            continue
        stated = row["paper states"]
        same = (
            f", on the {row['shared datasets']} datasets we share with it {_p(row['paper, same datasets'])}"
            if 0 < row["shared datasets"] < N_PAPER_DATASETS
            else ""
        )
        parts.append(
            f"{row['metric']} {_peq(row['p (two-sided)'])} over {row['datasets']} datasets "
            f"(one-sided {_p(row['p (class better, one-sided)'])}; the paper's table gives "
            f"{_p(row['paper, recomputed from its table'])}{same}"
            + (f", its text states {stated:g}" if np.isfinite(stated) else "")
            + ")"
        )
    if not parts:
        return []
    return [
        "- Class vs random over datasets, Wilcoxon signed-rank on the per-dataset means "
        "(two-sided, as the paper's test): " + "; ".join(parts) + "."
    ]


def _baseline_facts(results: pd.DataFrame) -> dict | None:
    """The reference method (the first of :data:`BASELINE_REFERENCES` present) against every
    baseline present: win shares and mean accuracies."""
    present = set(results.method)
    base = [b for b in BASELINES if b in present]
    ref = [m for m in BASELINE_REFERENCES if m in present]
    if not (base and ref):
        return None
    frac, wins, decided = tables.win_matrix(results, "accuracy", ref[:1] + base)
    means = results.groupby("method").accuracy.mean() * 100
    return {
        "reference": ref[0],
        "versus": [(b, _cell(frac, wins, decided, ref[0], b)) for b in base],
        "means": [(x, means[x]) for x in ref + base if x in means.index],
    }


def _baselines_text(facts: dict | None) -> list[str]:
    if facts is None:
        return []
    vs = ", ".join(f"{b} {cell}" for b, cell in facts["versus"])
    return [
        f"- Against the baselines on the same labeled rows and test split, `{facts['reference']}` wins "
        f"(share of datasets with a significant accuracy difference): {vs}. Mean accuracy "
        f"over the datasets: " + ", ".join(f"{x} {v:.1f} %" for x, v in facts["means"]) + "."
    ]


def _corr_range_text(cr: pd.DataFrame | None) -> list[str]:
    if cr is None or not len(cr) or not cr.paper.notna().any():
        return []
    return [
        f"- Feature correlation value ranges: mean absolute difference to the paper "
        f"{np.nanmean(np.abs(cr['diff'])):.3f} over {int(cr.paper.notna().sum())} datasets."
    ]


def ranks_lines(results: pd.DataFrame) -> list[str]:
    """What the critical-difference diagrams show, in sentences (markdown bullets): per metric the
    average ranks, Friedman's p, Nemenyi's CD and the pairs further apart than it (none without
    3 methods on 2 datasets)."""
    return _ranks_text({metric: stats.rank_test(results, metric) for metric in ("accuracy", "auroc")})


def corr_range_lines(cr: pd.DataFrame, largest: int = 3) -> list[str]:
    """What the correlation-range scatter shows, in sentences: the mean absolute difference to the
    paper's ranges and the ``largest`` differences, named (none where the paper reports none)."""
    out = _corr_range_text(cr)
    if not out:
        return out
    known = cr[cr["paper"].notna()].assign(gap=lambda f: f["diff"].abs()).nlargest(largest, "gap")
    named = ", ".join(f"{r.dataset} {r.ours:.3f} against {r.paper:.3f}" for r in known.itertuples())
    return [out[0].removesuffix(".") + f"; the largest differences (ours against the paper's): {named}."]


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


AUTHORS_CODE = (
    "github.com/layer6ai-labs/Tabular-Class-Conditioned-SSL at commit d8e7baa, the released "
    "version of github.com/willtop/Tabular-Class-Conditioned-SSL, which the paper names"
)

DEVIATIONS_FILE = "deviations.csv"
"""The deviations table, shipped as package data beside this module (one row per difference)."""


def deviations() -> pd.DataFrame:
    """Every known difference between this code, the paper's text and the authors' code.

    Columns: ``topic``, ``paper's text`` ("not described": the text gives no such detail),
    ``authors' code`` (see :data:`AUTHORS_CODE`; file names are theirs), ``here`` (module names
    are ours), ``why``, ``switch`` (the setting that changes it, or "none yet").  Read from
    ``tcclib/paper/deviations.csv`` (:data:`DEVIATIONS_FILE`), every cell as written.
    """
    with resources.files("tcclib.paper").joinpath(DEVIATIONS_FILE).open("r", encoding="utf-8") as f:
        return pd.read_csv(f, dtype=str, keep_default_na=False)


def fidelity_comparison(ours: pd.DataFrame, authors: pd.DataFrame, metrics=("accuracy", "auroc")) -> pd.DataFrame:
    """Does the authors' mode close the gaps to the paper?  Per dataset x method x metric (the
    datasets and methods both result tables and the paper's Tables 2-5 have): the paper's mean,
    ours (default settings) and the authors' mode's, each one's distance to the paper, whether the
    paper's mean lies in each one's 95 % interval, and ``closer`` (the authors' mode is nearer).

    ``ours`` / ``authors``: results tables (:func:`tcclib.artifacts.store.gather`) of the same datasets.
    Accuracy in %, as in the paper."""
    parts = []
    for metric in metrics:
        for kind in ("how", "where"):
            a = tables.compare_with_paper(ours, metric, kind)
            b = tables.compare_with_paper(authors, metric, kind)
            if a.empty or b.empty:
                continue
            m = a[["dataset", "method", "paper_mean", "mean", "inside"]].merge(
                b[["dataset", "method", "mean", "inside"]], on=["dataset", "method"], suffixes=("_ours", "_authors")
            )
            parts.append(m.assign(metric=metric))
    cols = ["dataset", "method", "metric", "paper_mean", "mean_ours", "mean_authors"]
    cols += ["gap_ours", "gap_authors", "inside_ours", "inside_authors", "closer"]
    if not parts:
        return pd.DataFrame(columns=cols)
    df = pd.concat(parts, ignore_index=True).drop_duplicates(["dataset", "method", "metric"])
    df["gap_ours"] = (df["mean_ours"] - df["paper_mean"]).abs()
    df["gap_authors"] = (df["mean_authors"] - df["paper_mean"]).abs()
    df["closer"] = df["gap_authors"] < df["gap_ours"]
    return df[cols].reset_index(drop=True)


def fidelity_summary(cmp: pd.DataFrame) -> pd.DataFrame:
    """:func:`fidelity_comparison` per dataset and metric: mean distance to the paper for ours and
    the authors' mode, cells with the paper's mean inside each one's interval, cells closer."""
    g = cmp.groupby(["dataset", "metric"], sort=False)
    return pd.DataFrame(
        {
            "cells": g.size(),
            "gap_ours": g.gap_ours.mean(),
            "gap_authors": g.gap_authors.mean(),
            "inside_ours": g.inside_ours.sum(),
            "inside_authors": g.inside_authors.sum(),
            "closer": g.closer.sum(),
        }
    ).reset_index()


def switch_effects(runs: dict, methods, metrics=("accuracy", "auroc")) -> pd.DataFrame:
    """Which fidelity switch moves ``methods`` towards the paper: each run of
    :func:`tcclib.running.switches.switch_runs` (``{switch: results}``: ours "none", each switch
    alone at the authors' value, all of them "all") compared with the paper
    (:func:`tcclib.paper.tables.compare_with_paper`).  Columns: switch, method, metric,
    paper_mean, mean, gap (|ours - paper|), inside (the paper's mean in our 95 % interval).
    Accuracy in %, as in the paper."""
    parts = []
    for switch, res in runs.items():
        for metric in metrics:
            for kind in ("how", "where"):
                cmp = tables.compare_with_paper(res, metric, kind)
                cmp = cmp[cmp["method"].isin(methods)]
                if cmp.empty:  # (pandas 2.3 warns on concatenating empty frames)
                    continue
                parts.append(
                    cmp.assign(switch=switch, metric=metric)[
                        ["switch", "method", "metric", "paper_mean", "mean", "diff", "inside"]
                    ]
                )
    if not parts:
        return pd.DataFrame(columns=["switch", "method", "metric", "paper_mean", "mean", "gap", "inside"])
    out = pd.concat(parts, ignore_index=True).drop_duplicates(["switch", "method", "metric"])
    out["gap"] = out.pop("diff").abs()
    return out[["switch", "method", "metric", "paper_mean", "mean", "gap", "inside"]].reset_index(drop=True)


RANK_FIGURES = {"accuracy": "cd_accuracy", "auroc": "cd_auroc"}


def write_rank_figures(set_dir, results: pd.DataFrame | None = None, fig_dir=None) -> list[Path]:
    """Critical-difference diagrams (Friedman + Nemenyi, all methods and baselines) for accuracy
    and AUROC, as PNG and PDF in ``<set_dir>/figures/`` (or ``fig_dir``): ``cd_accuracy`` and
    ``cd_auroc``. Returns the paths written (none for a metric with fewer than 3 methods or 2
    datasets)."""
    import matplotlib.pyplot as plt  # deferred: matplotlib loads only when a figure is drawn

    set_dir = Path(set_dir)
    results = store.gather(set_dir, "results") if results is None else results
    fig_dir = set_dir / "figures" if fig_dir is None else Path(fig_dir)
    paths = []
    if results.empty:
        return paths
    for metric, stem in RANK_FIGURES.items():
        rt = stats.rank_test(results, metric)
        if rt["k"] < 3 or rt["n"] < 2:
            continue
        ax = stats.plot_cd(rt)
        paths += savefig(ax.figure, fig_dir / stem)
        plt.close(ax.figure)
    return paths


def _rank_section(results: pd.DataFrame, set_dir: Path, figures: bool) -> list[str]:
    """Friedman and Nemenyi per metric (every method and baseline), then the paper's four
    how-methods alone next to the paper's own ranks."""
    out = [
        "## Ranks over datasets (Friedman, Nemenyi)",
        "",
        "Every method and baseline ranked on each dataset by its mean over seeds (1 = best, ties "
        "averaged), over the datasets where all have a result. Friedman's test asks whether the "
        "average ranks differ more than chance allows (the Iman-Davenport F is its less conservative "
        "form); Nemenyi's post-hoc test calls two methods different when their average ranks differ "
        "by more than the critical difference CD = q_0.05 · sqrt(k(k+1)/(6N)), with q from the "
        "studentized range distribution (Demšar 2006). Nemenyi compares all pairs at once and is "
        "conservative: a pair inside the CD is not shown to differ, which is not the same as equal.",
        "",
    ]
    rows, have = [], False
    for metric in ("accuracy", "auroc"):
        rt = stats.rank_test(results, metric)
        if rt["k"] < 3 or rt["n"] < 2:
            continue
        have = True
        out += _rank_metric_block(results, rt, metric, set_dir, figures)
        rows += _paper_four_rows(results, metric)
    if not have:
        return []
    if rows:
        out += [
            "### The paper's four methods alone",
            "",
            "Average ranks of the four how-to-corrupt methods only, ours and the paper's (from its "
            "Tables 2-3, on the same datasets), so the two are comparable. The paper's AUROC is "
            "printed to two decimals, so its ranks have many ties.",
            "",
            tables.to_markdown(pd.DataFrame(rows), index=False),
            "",
        ]
    return out


def _rank_metric_block(results: pd.DataFrame, rt: dict, metric: str, set_dir: Path, figures: bool) -> list[str]:
    """One metric's rank test (:func:`tcclib.paper.stats.rank_test` result ``rt``) in words, a
    table and its diagram's link."""
    rk = rt["ranks"]
    table = pd.DataFrame({"method": rk.index, "average rank": rk.map(lambda v: f"{v:.2f}").to_numpy()})
    fig = f"figures/{RANK_FIGURES[metric]}"
    exists = figures or (set_dir / f"{fig}.png").exists()
    pairs = "; ".join(f"{a} > {b} ({d:.2f})" for a, b, d in rt["pairs"]) or "none"
    groups = "; ".join("{" + ", ".join(g) + "}" for g in rt["groups"]) or "none"
    later = "; ".join(f"`{m}` ({n} of {of})" for m, (n, of) in rt["left_out"].items())
    again = []
    for m, of in rt["repeats"].items():
        if not (res := stats.rank_test(results, metric, [*rk.index, m]))["n"]:
            continue
        again.append(
            f"`{m}` (a fidelity re-run of `{of}`, not a method of its own: ranked with the "
            f"others it would stand at {res['ranks'][m]:.2f} of {res['k']}, with CD "
            f"{res['cd']:.2f} for all pairs)"
        )
    out = [
        f"### {metric}",
        "",
        *([f"Left out, with results on fewer datasets than the others so far: {later}.", ""] if later else []),
        *([f"Left out: {'; '.join(again)}.", ""] if again else []),
        f"{rt['k']} methods over {rt['n']} datasets: Friedman chi² = {rt['chi2']:.2f}, "
        f"{_peq(rt['p'])}; Iman-Davenport F = {rt['F']:.2f}, {_peq(rt['p_F'])}. "
        f"Nemenyi q_0.05 = {rt['q']:.3f}, CD = {rt['cd']:.2f}.",
        "",
        tables.to_markdown(table, index=False),
        "",
        f"Pairs further apart than the CD (rank difference): {pairs}.",
        "",
        f"Groups not shown to differ (the bars of the diagram): {groups}.",
        "",
    ]
    if exists:
        return out + [f"![critical-difference diagram, {metric}]({fig}.png) ([PDF]({fig}.pdf))", ""]
    return out + [
        f"(The diagram is not written yet: `tcclib.paper.report.write_rank_figures(set_dir)` "
        f"writes `{fig}.png` and `.pdf`.)",
        "",
    ]


def _paper_four_rows(results: pd.DataFrame, metric: str) -> list[dict]:
    """The paper's how-methods ranked alone, ours and the paper's on the same datasets."""
    paper_how = registry.paper_table_methods("how")  # the paper's four how-to-corrupt methods
    ours4 = stats.rank_test(results, metric, paper_how)
    if ours4["k"] != len(paper_how):
        return []
    four = stats.dataset_means(results, metric, paper_how)
    pp = stats.paper_rank_test(metric, "how", datasets=stats._dids(results, four.index))
    rows = [
        {
            "metric": metric,
            "method": m,
            "ours": f"{ours4['ranks'][m]:.2f}",
            "paper": f"{pp['ranks'][m]:.2f}" if m in pp["ranks"] else "",
        }
        for m in paper_how
    ]
    rows.append(
        {
            "metric": metric,
            "method": "Friedman p (CD)",
            "ours": f"{_p(ours4['p'])} ({ours4['cd']:.2f})",
            "paper": f"{_p(pp['p'])} ({pp['cd']:.2f})" if pp["n"] else "",
        }
    )
    return rows


def _wilcoxon_section(results: pd.DataFrame) -> list[str]:
    cvr = stats.class_vs_random(results)
    if cvr.empty or cvr["datasets"].max() < 2:
        return []
    show = cvr.copy()
    for c in show.columns:
        if c.startswith("p ") or c.startswith("paper"):
            show[c] = show[c].map(_p)
    show["median diff"] = [
        f"{v:+.3f}" if m == "auroc" else f"{v:+.2f}" for m, v in zip(cvr["metric"], cvr["median diff"])
    ]
    full = stats.paper_wilcoxon("accuracy", "how", "class", "random")["p"]
    return [
        "## Class vs random over datasets (Wilcoxon)",
        "",
        "Wilcoxon signed-rank test of `class` against `random` on the per-dataset means (paired "
        "by dataset; zero differences dropped). The paper states p = 0.038 for accuracy: that is the "
        f"two-sided test on its Table 2 means (recomputed here: p = {full:.4f}). The *paper* columns "
        "are two-sided, on all 30 of its datasets and on the ones we share with it. *median diff* "
        "is class - random (accuracy in points).",
        "",
        tables.to_markdown(show, index=False),
        "",
    ]


def _cells_section(results: pd.DataFrame) -> list[str]:
    cells = stats.cell_tests(results)
    if cells.empty:
        return []
    summ = stats.cell_summary(cells)
    show = summ.assign(
        **{
            "median se of diff": summ["median se of diff"].map(lambda v: f"{v:.3g}"),
            "margin": summ["margin"].map(lambda v: f"±{v:g}"),
        }
    )
    out = [
        "## Per-cell tests against the paper (distinct cells)",
        "",
        "Each cell is one dataset × one column of the paper's tables × one metric. Three checks: "
        "*inside*: the paper's mean lies in our 95 % t-interval (our seeds only); *differ*: a "
        "two-sided Welch t-test of our 8 seeds against the paper's mean and standard error (its se is "
        "std(ddof=0)/sqrt(8), so its sample std is se·sqrt(8)·sqrt(8/7), n = 8), p < 0.05; "
        f"*equivalent*: two one-sided Welch tests (TOST) show |ours - paper| < the margin "
        f"(±{stats.ACCURACY_MARGIN:g} point of accuracy, ±{stats.AUROC_MARGIN:g} AUROC), p < 0.05. "
        "A cell can differ and still be equivalent (a small but real difference), or be neither "
        "(inconclusive: the standard error of the difference is too large for the margin).",
        "",
        "**What is counted.** Each (metric, dataset, paper column) once: Tables 2 and 4 share the "
        "`class` column (Table 4's uniform-choice column is Table 2's class column), so accuracy has "
        "4 × 30 + 2 × 30 = 180 distinct cells, and so has AUROC (Tables 3 and 5). The per-table counts "
        "further down count Table 4's class cells again. "
        f"{_separately_scored()}: so each is reported on "
        "its own row and in no distinct count. *differ (Holm)*: Welch p-values corrected for the "
        "number of cells in the row (family-wise 5 %); with 180 tests about 9 uncorrected "
        "differences arise by chance alone.",
        "",
        tables.to_markdown(show, index=False),
        "",
    ]
    return out + _auroc_rounding_lines(results, cells) + _differing_cells_lines(cells)


def _auroc_rounding_lines(results: pd.DataFrame, cells: pd.DataFrame) -> list[str]:
    """The distinct AUROC cells' counts again, allowing for the paper's two printed decimals."""
    out = []
    if "auroc" in set(cells.metric):
        rounded = stats.cell_summary(stats.cell_tests(results, paper_rounding={"auroc": 0.01}))
        r = rounded[(rounded.metric == "auroc") & (rounded.scope == "distinct")]
        if len(r):
            r = r.iloc[0]
            out += [
                f"The paper prints AUROC to two decimals (many se read 0.00). Allowing for that "
                f"rounding (a uniform error of ±0.005 added to the paper's side), {int(r['differ'])} of "
                f"{int(r['cells'])} distinct AUROC cells differ ({int(r['differ (Holm)'])} after Holm) "
                f"and {int(r['equivalent'])} are equivalent; the table above takes the printed numbers "
                f"as exact.",
                "",
            ]
    return out


def _plus_minus(metrics, means, ses) -> list[str]:
    """'mean ± se' per cell, to its metric's digits (accuracy in points: 2, AUROC: 3)."""
    return [f"{m:.{tables.DIGITS[k]}f} ± {s:.{tables.DIGITS[k]}f}" for k, m, s in zip(metrics, means, ses)]


def _differing_cells_lines(cells: pd.DataFrame) -> list[str]:
    """A folded table of the cells that differ from the paper (Welch p < 0.05)."""
    out = []
    d = cells[(cells["distinct"] | cells["separate"]) & cells["differ"]]
    if len(d):
        show = pd.DataFrame(
            {
                "metric": d["metric"],
                "table": d["table"],
                "dataset": d["dataset"],
                "method": d["method"],
                "ours": _plus_minus(d["metric"], d["mean"], d["se"]),
                "paper": _plus_minus(d["metric"], d["paper_mean"], d["paper_se"]),
                "diff": [f"{v:+.{tables.DIGITS[k]}f}" for k, v in zip(d["metric"], d["diff"])],
                "Welch p": d["welch_p"].map(_p),
                "equivalent": d["equivalent"].map({True: "yes", False: "no"}),
            }
        )
        out += [
            "<details><summary>the cells that differ (Welch p < 0.05)</summary>",
            "",
            tables.to_markdown(show, index=False),
            "",
            "</details>",
            "",
        ]
    return out


FIDELITY_SETS = {"paper": "authors"}
"""The report of a set (key) shows the authors'-mode results of the set beside it (value) that
runs some of its datasets with ``fidelity: authors`` (``outputs/paper`` -> ``outputs/authors``)."""


def _fidelity_section(set_dir: Path, results: pd.DataFrame) -> list[str]:
    """The authors' mode against our defaults, on the datasets both ran (:func:`fidelity_comparison`)."""
    other = set_dir.parent / FIDELITY_SETS.get(set_dir.resolve().name, "")
    if other.resolve() == set_dir.resolve() or not other.is_dir():
        return []
    theirs = store.gather(other, "results")
    if theirs.empty:
        return []
    both = sorted(set(theirs.dataset) & set(results.dataset))
    cmp = fidelity_comparison(results[results.dataset.isin(both)], theirs[theirs.dataset.isin(both)])
    if cmp.empty:
        return []
    summ = fidelity_summary(cmp)
    out = [
        f"## The authors' mode (`{other.name}`)",
        "",
        f"The same datasets, seeds and settings with `fidelity: authors` (every switch of the "
        f"deviations table below at the authors' code) against this run, both next to the paper: "
        f"{len(both)} dataset(s) ran in both ({', '.join(both)}). *gap*: mean distance of the "
        f"means to the paper's (accuracy in points, AUROC); *inside*: cells with the paper's mean in "
        f"the run's 95 % interval; *closer*: cells where the authors' mode is nearer the paper. "
        f"Which switch moves what: `{other.name}/NOTE.md`.",
        "",
    ]
    for metric in ("accuracy", "auroc"):
        c, dig = cmp[cmp.metric == metric], 2 if metric == "accuracy" else 3
        if len(c):
            out.append(
                f"- {metric}: gap {c.gap_ours.mean():.{dig}f} (ours) vs {c.gap_authors.mean():.{dig}f} (authors' "
                f"mode); inside {int(c.inside_ours.sum())} vs {int(c.inside_authors.sum())} of "
                f"{len(c)} cells; the authors' mode nearer in {int(c.closer.sum())}."
            )
    out += ["", tables.to_markdown(summ, index=False, decimals={"gap_ours": 3, "gap_authors": 3}), ""]
    return out


HEAD_VARIANT_SETS = {"paper": "head_variants"}
"""The report of a set (key) shows the head-variant comparison stored beside it (value;
``tools/head_variants.py``, :mod:`tcclib.paper.heads`)."""


def _head_variants_section(set_dir: Path) -> list[str]:
    """The frozen encoder against the opt-in heads, when the set has a stored comparison."""
    name = HEAD_VARIANT_SETS.get(set_dir.resolve().name)
    return heads.section(set_dir.parent / name) if name else []


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def report_link(text: str, path) -> str:
    """Notebook 06's pointer to the report it wrote (``text`` at ``path``) instead of the report
    itself: its name, a link, its length and its sections, each linked (anchors as GitHub makes them)."""
    name = Path(path).name
    heads = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    lines = [
        f"The full report is [`{name}`]({name}), beside this notebook ({len(text.splitlines()):,} lines). "
        "Its sections:",
        "",
    ]
    return "\n".join(lines + [f"- [{h}]({name}#{_anchor(h)})" for h in heads])


def build_report(set_dir, title: str | None = None, figures: bool = True) -> str:
    """The whole report as markdown.

    ``figures``: also write the critical-difference diagrams into ``<set_dir>/figures/``
    (:func:`write_rank_figures`); with False the report links them only where they exist.
    """
    set_dir = Path(set_dir)
    results = store.gather(set_dir, "results")
    out = _head_section(set_dir, title)
    if results.empty:
        out.append("No finished dataset yet: nothing to compare.")
        return "\n".join(out) + "\n"
    if figures:
        write_rank_figures(set_dir, results)
    out += glance_lines(results)
    out += ["## In plain words", ""] + plain_summary(results, set_dir) + [""]
    out += _claims_section(results)
    out += _cells_section(results)
    out += _agreement_section(results)
    out += _rank_section(results, set_dir, figures)
    out += _wilcoxon_section(results)
    out += _win_matrix_section(results)
    out += _fidelity_section(set_dir, results)
    out += _head_variants_section(set_dir)
    out += _corr_range_section(set_dir)
    out += _deviations_section()
    return "\n".join(out) + "\n"


def _head_section(set_dir: Path, title: str | None) -> list[str]:
    """The title, what the columns mean, and the datasets not finished yet with why."""
    st = store.status(set_dir)
    name = set_dir.resolve().name
    out = [
        f"# Reproduction report: `{name}`",
        "",
        title
        or "Our run of Cui et al. (arXiv:2404.17489) next to the paper's published numbers "
        "(Tables 2-5, Figure 3). Mean ± standard error over seeds (std ddof=0 / sqrt(n), the "
        "paper's definition); *inside* = the paper's mean lies in our 95 % t-interval; *differ* = "
        "Welch's test against the paper's mean and se, p < 0.05; *equivalent* = within "
        f"±{stats.ACCURACY_MARGIN:g} point of accuracy or ±{stats.AUROC_MARGIN:g} AUROC by a TOST.",
        "",
    ]
    done = st[st.status == "done"]
    out += [f"Datasets finished: **{len(done)}**; not finished: {len(st) - len(done)}.", ""]
    if len(st) - len(done):
        out += ["| dataset | status | why |", "| --- | --- | --- |"]
        why = {
            "pending": "not started yet: the run stopped before it; the sweep resumes it",
            "incomplete": "started but not finished (interrupted, or running now); the sweep re-runs it",
        }
        out += [
            f"| {r.dataset} | {r.status} | {r.error or why.get(r.status, '')} |"
            for r in st[st.status != "done"].itertuples()
        ]
        out.append("")
    return out


def _claims_section(results: pd.DataFrame) -> list[str]:
    n_done = results.dataset.nunique()
    coverage = (
        f"Ours rest on all {n_done} datasets, as the paper's do."
        if n_done >= N_PAPER_DATASETS
        else f"Ours rest on the {n_done} finished dataset(s) only, the paper's on {N_PAPER_DATASETS}: "
        "with few datasets a verdict is provisional."
    )
    out = [
        "## The paper's claims",
        "",
        f"Win shares over datasets with a significant difference (Welch, p < 0.05), as in the "
        f"paper's Figure 3. {coverage} *paper, same datasets*: the paper's figure recomputed on "
        f"the datasets we finished. Where-to-corrupt rows check what Tables 4-5 show: "
        f"correlation-based feature choice is no better than uniform choice.",
        "",
        VERDICT_RULE + " *share rule*: the verdict the former rule (a win share above one half) gave, for comparison.",
        "",
    ]
    for metric in ("accuracy", "auroc"):
        c = claims(results, metric)
        if len(c):
            out += [f"### {metric}", "", tables.to_markdown(c, index=False), ""]
    return out


def _agreement_section(results: pd.DataFrame) -> list[str]:
    """Per table of the paper: the agreement summary and, folded, every cell."""
    separate = ", ".join(f"`{m}`" for m in registry.separate_methods())
    out = [
        "## Agreement with the published tables",
        "",
        "Per table of the paper, each method once against its column; *all* counts the table's own "
        f"cells once (it leaves out {separate}, whose rows score them against a column another method "
        "owns). Tables 4-5 repeat Tables 2-3's class column, so the where-to-"
        "corrupt *all* rows overlap the how-to-corrupt ones; the distinct counts are above.",
        "",
    ]
    for metric in ("accuracy", "auroc"):
        for kind in registry.TABLE_KINDS:
            cmp = tables.compare_with_paper(results, metric, kind)
            if cmp.empty:
                continue
            out += [
                f"### {metric}, {kind} to corrupt ({stats.TABLE_NAMES[metric, kind]})",
                "",
                tables.to_markdown(tables.agreement_summary(cmp, metric=metric), index=False),
                "",
                tables.agreement_caption(metric, tests="differ" in cmp.columns),
                "",
            ]
            out += _agreement_cells(cmp, metric)
    return out


def _agreement_cells(cmp: pd.DataFrame, metric: str) -> list[str]:
    digits, metrics = tables.DIGITS[metric], [metric] * len(cmp)
    show = cmp.assign(
        ours=_plus_minus(metrics, cmp["mean"], cmp.se),
        paper=_plus_minus(metrics, cmp.paper_mean, cmp.paper_se),
        diff=cmp["diff"].map(lambda v: f"{v:+.{digits}f}"),
        inside=cmp.inside.map({True: "yes", False: "no"}),
        **{
            "Welch p": cmp["welch_p"].map(_p),
            "TOST p": cmp["tost_p"].map(_p),
            "equivalent": cmp["equivalent"].map({True: "yes", False: "no"}),
        },
    )
    return [
        "<details><summary>per dataset</summary>",
        "",
        tables.to_markdown(
            show[["dataset", "method", "ours", "paper", "diff", "inside", "Welch p", "TOST p", "equivalent"]],
            index=False,
        ),
        "",
        "</details>",
        "",
    ]


def _win_matrix_section(results: pd.DataFrame) -> list[str]:
    how = registry.table_methods("how", set(results.method))
    if len(how) < 2:
        return []
    mat = tables.win_matrix(results, "accuracy", how)
    frac = mat[0]
    cell = pd.DataFrame(
        [["" if i == j else _cell(*mat, i, j) for j in frac.columns] for i in frac.index],
        index=frac.index.rename("row beats column"),
        columns=frac.columns,
    )
    return ["## Win matrix (accuracy, Welch p < 0.05), ours incl. baselines", "", tables.to_markdown(cell), ""]


def _corr_range_section(set_dir: Path) -> list[str]:
    cr = corr_range_table(set_dir)
    if not len(cr):
        return []
    lead = (
        f"Mean absolute difference to the paper: {np.nanmean(np.abs(cr['diff'])):.3f} over "
        f"{int(cr.paper.notna().sum())} datasets."
        if cr.paper.notna().any()
        else "The paper reports none of these datasets."
    )
    return [
        "## Feature correlation value range",
        "",
        f"{lead} Ours is the mean over seeds, the paper's the last seed's value (see the deviations below).",
        "",
        tables.to_markdown(cr, index=False, decimals={"ours": 3, "paper": 2, "diff": 3}),
        "",
    ]


def _deviations_section() -> list[str]:
    return [
        "## Deviations from the paper and the authors' code",
        "",
        f"Every known difference between this code, the paper's text and the authors' code "
        f"({AUTHORS_CODE}), with the reason and the setting that switches it. *not described*: "
        f"the paper's text gives no such detail.",
        "",
        tables.to_markdown(deviations(), index=False),
        "",
    ]


GLANCE_METHODS = ("no_pretrain", "random", "class", "oracle", "class_least", "class_most")
"""The paper's methods in the at-a-glance table, in the order of its Tables 2-5."""


def glance_table(results: pd.DataFrame, metric: str, level: float = 0.95) -> pd.DataFrame:
    """Our headline numbers next to the paper's, a row per method of its Tables 2-5, over the
    datasets both have: our mean over the datasets (each one's mean over its seeds) and the
    paper's; our mean minus the paper's with its ``level`` t-interval over the datasets (paired by
    dataset); the cells whose published mean lies in our 95 % interval, and those Welch's test
    calls different; and a word on the average (:func:`_on_average`)."""
    compared = pd.concat([tables.compare_with_paper(results, metric, kind) for kind in ("how", "where")])
    if compared.empty:
        return pd.DataFrame()
    compared = compared.drop_duplicates(["dataset", "method"])  # (class is in both kinds' tables)
    margin, digits, unit = cell_tests.MARGINS[metric], 2 if metric == "accuracy" else 3, style.difference_unit(metric)
    rows = []
    for method in [m for m in GLANCE_METHODS if m in set(compared["method"])]:
        cells = compared[compared["method"] == method]
        mean_difference, low, high, n = style.interval(cells["diff"], level)
        rows.append(
            {
                "method": f"`{method}`",
                "datasets": n,
                "ours: mean": f"{cells['mean'].mean():.{digits}f}",
                "the paper's": f"{cells['paper_mean'].mean():.{digits}f}",
                f"ours − paper ({unit}), {level * 100:g} % interval": f"{mean_difference:+.{digits}f} "
                f"({low:+.{digits}f} to {high:+.{digits}f})",
                "the paper's mean in our 95 % interval": f"{int(cells['inside'].sum())} of {n}",
                "cells that differ (Welch p < 0.05)": f"{int(cells['differ'].sum())} of {n}",
                f"on average (margin ±{margin:g})": _on_average(low, high, margin),
            }
        )
    return pd.DataFrame(rows)


def _on_average(low: float, high: float, margin: float) -> str:
    """``equivalent``: the interval of the mean difference within ±``margin``; ``differs``: it
    leaves out 0; ``consistent``: it holds 0 and reaches past the margin."""
    if np.isnan(low):
        return "one dataset: no interval"
    if -margin < low and high < margin:
        return "equivalent"
    return "differs" if low > 0 or high < 0 else "consistent"


def glance_lines(results: pd.DataFrame, heading: bool = True) -> list[str]:
    """The at-a-glance section of ``report.md`` (notebook 06 shows it without its ``heading``): per
    metric, :func:`glance_table` and what it says; [] where no dataset is one of the paper's."""
    out = []
    for metric, name in (("accuracy", "Accuracy (%, its Tables 2 and 4)"), ("auroc", "AUROC (its Tables 3 and 5)")):
        table = glance_table(results, metric)
        if table.empty:
            continue
        verdicts = table.iloc[:, -1]
        named = {v: ", ".join(table.loc[verdicts == v, "method"]) for v in ("equivalent", "differs", "consistent")}
        said = [
            f"{(verdicts == v).sum()} {words} ({named[v]})"
            for v, words in (
                ("equivalent", "equivalent to the paper's average within the margin"),
                ("differs", "different from it on average"),
                ("consistent", "consistent with it, their interval reaching past the margin"),
            )
            if named[v]
        ]
        out += [f"**{name}**", "", tables.to_markdown(table, index=False), ""]
        named_metric = "AUROC" if metric == "auroc" else metric
        out += [
            f"On {named_metric}, of the paper's {len(table)} methods: {'; '.join(said)}. The interval is a "
            "t-interval over the datasets of our mean minus the paper's (each dataset's mean over its seeds); it "
            "leaves out the seeds' spread within a dataset, which the per-cell columns carry.",
            "",
        ]
    if not out or not heading:
        return out
    return ["## At a glance: our numbers against the paper's", "", *out]
