"""Does the head matter?  The comparison of the paper's frozen encoder with the opt-in head
variants (``Config.head``: ``finetune``, ``concat``, ``probe``), ``no_pretrain`` and the baselines, measured
by ``tools/head_variants.py`` and stored as one ``results.csv`` (``outputs/head_variants/``).

A *variant* is a method under a head: the method's own name for the paper's frozen head,
``method+head`` otherwise (``class+finetune``); the baselines keep their names.  The tables: the
mean over seeds per dataset and the average rank (:func:`mean_table`), the rank test of
:func:`tcclib.paper.stats.rank_test` (Friedman + Nemenyi over the datasets), and a paired Wilcoxon
test over the datasets' means of each variant against ``logreg``, against the tuned
``logreg_cv`` and against ``no_pretrain`` under the same head (:func:`paired_table`).  Every table
is over the datasets where every variant has results (:func:`complete`): while a newly added
variant is being measured, that is the datasets it has reached, and :func:`coverage` says so.
:func:`plain_answer` says it in words; :func:`section` is the paper report's section.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from tcclib.artifacts import store
from tcclib.method.config import HEADS, split_variant, variant_name
from tcclib.method.registry import METHODS
from tcclib.paper import plots, stats, style, tables

RESULTS = "results.csv"
REFERENCE = "logreg"  # the baseline every variant is held against (the best one in the paper report)
TUNED = "logreg_cv"  # the same with its strength tuned on the labeled rows (the probe's procedure)


def variant(method: str, head: str) -> str:
    """The name of ``method`` under ``head`` in the tables (:func:`tcclib.method.config.variant_name`)."""
    return variant_name(method, head)


def head_of(name: str) -> str:
    """The head of a variant's name (``frozen`` for a plain method or a baseline)."""
    return split_variant(name)[1]


def base_method(name: str) -> str:
    """The method (or baseline) of a variant's name."""
    return split_variant(name)[0]


def is_pretrained(name: str) -> bool:
    """Whether the variant's method pretrains an encoder (not ``no_pretrain``, not a baseline)."""
    method = METHODS.get(base_method(name))
    return method is not None and method.pretrain


def gather(base) -> pd.DataFrame:
    """Every finished dataset stored under ``base/<head>/<dataset>/`` (``tools/head_variants.py``'s
    ``OUT/<epochs>ep``), one frame: ``method`` renamed to its variant, the baselines kept, an
    ``epochs`` column from the stored settings."""
    parts = []
    for head in HEADS:
        if not (Path(base) / head).is_dir():  # (a head not measured there)
            continue
        res = store.gather(Path(base) / head)
        if res.empty:
            continue
        res["method"] = [variant(m, head) if m in METHODS else m for m in res["method"]]
        res["epochs"] = [_stored_epochs(Path(base) / head / d) for d in res["dataset"]]
        parts.append(res)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _stored_epochs(folder: Path):
    """The pretraining epochs in a stored run's ``config.json`` (NA without one)."""
    path = folder / "config.json"
    return json.loads(path.read_text()).get("epochs", pd.NA) if path.is_file() else pd.NA


def load(folder) -> pd.DataFrame | None:
    """The stored comparison in ``folder``: its ``results.csv``, else that of its ``<E>ep``
    subfolder with the most epochs; None when there is none."""
    folder = Path(folder)
    if (folder / RESULTS).is_file():
        return pd.read_csv(folder / RESULTS)
    runs = sorted(
        (int(d.name[:-2]), d) for d in folder.glob("*ep") if d.name[:-2].isdigit() and (d / RESULTS).is_file()
    )
    return pd.read_csv(runs[-1][1] / RESULTS) if runs else None


def names(results: pd.DataFrame) -> list[str]:
    """The variants in table order: by head (frozen, finetune, concat), then the baselines."""
    present = list(dict.fromkeys(results["method"]))
    methods = [n for n in present if base_method(n) in METHODS]
    heads = list(dict.fromkeys(head_of(n) for n in methods))
    ordered = [n for h in heads for n in methods if head_of(n) == h]
    return ordered + [n for n in present if n not in ordered]


def complete(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the datasets where every variant in ``results`` has results."""
    counts = results.groupby("dataset")["method"].nunique()
    return results[results["dataset"].isin(counts.index[counts == results["method"].nunique()])]


def newer(results: pd.DataFrame) -> list[str]:
    """The variants that have not reached every stored dataset yet (being measured)."""
    per = results.groupby("method")["dataset"].nunique()
    return list(per.index[per < results["dataset"].nunique()])


def everywhere(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the variants measured on every stored dataset."""
    return results[~results["method"].isin(newer(results))]


def mean_table(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean over seeds per dataset (rows) and variant (columns; accuracy in percent), the
    average rank (1 = best) as the last row."""
    wide = stats.dataset_means(results, metric, names(results))
    ranks = wide.rank(axis=1, ascending=False, method="average").mean()
    return pd.concat([wide, ranks.to_frame("average rank").T])


def paired_table(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each variant against ``logreg``, ``logreg_cv`` and ``no_pretrain`` under its head: a
    paired Wilcoxon test over the datasets' means (better / worse: datasets above / below; the
    median difference in points of accuracy or in AUROC)."""
    wide = stats.dataset_means(results, metric, names(results))
    rows = []
    for n in wide.columns:
        refs = [REFERENCE, TUNED] + ([variant("no_pretrain", head_of(n))] if base_method(n) in METHODS else [])
        for ref in refs:
            if ref == n or ref not in wide.columns or n in (REFERENCE, TUNED):
                continue
            rows.append(dict(variant=n, against=ref, **stats.paired_row(wide[n], wide[ref], metric)))
    return pd.DataFrame(rows)


def rank_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per variant: the mean over datasets and the average rank on accuracy and AUROC, best
    accuracy rank first."""
    cols = {}
    for metric in ("accuracy", "auroc"):
        table = mean_table(results, metric)
        cols[f"{metric} rank"] = table.loc["average rank"]
        cols[f"mean {metric}"] = table.iloc[:-1].mean()
    return pd.DataFrame(cols).sort_values("accuracy rank")


def _variant_colour(name: str) -> str:
    """A variant's colour: its head's (:data:`tcclib.paper.style.HEAD_COLOURS`) for a method under
    a head, dark grey for ``logreg`` and ``logreg_cv``, light grey for the other baselines."""
    if base_method(name) in METHODS:
        return style.HEAD_COLOURS.get(head_of(name), style.NEUTRAL)
    return "0.35" if name in (REFERENCE, TUNED) else "0.7"


def rank_figure(results: pd.DataFrame):
    """Average ranks of every variant on accuracy and AUROC (1 = best: shorter bars are better),
    the pretrained variants coloured by head, logreg dark grey, ``no_pretrain`` and the other
    baselines light grey."""
    summary = rank_summary(everywhere(results))
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.32 * len(summary) + 1.2), sharey=True)
    for ax, metric in zip(axes, ("accuracy", "auroc")):
        ranks = summary[f"{metric} rank"]
        colour = [_variant_colour(n) if is_pretrained(n) or n in (REFERENCE, TUNED) else "0.7" for n in ranks.index]
        ax.barh(ranks.index, ranks.values, color=colour)
        ax.set(title=f"{metric}: average rank over {results['dataset'].nunique()} datasets", xlabel="rank (1 = best)")
        ax.tick_params(labelsize=style.TICK_SIZE)
    axes[0].invert_yaxis()  # (the y axis is shared: the best variant on top in both)
    fig.tight_layout()
    return fig


def cd_figure(results: pd.DataFrame, metric: str):
    """The critical-difference diagram (Friedman + Nemenyi) of every variant measured on every dataset."""
    results = everywhere(results)
    ax = stats.plot_cd(stats.rank_test(results, metric, names(results)))
    return ax.figure


def reference_differences(results: pd.DataFrame, metric: str, reference: str = REFERENCE) -> pd.DataFrame:
    """Each variant's paired difference from ``reference`` over the datasets: per dataset, the
    variant's mean over seeds minus the reference's (points of accuracy, or AUROC); per variant
    the Hodges-Lehmann estimate of the median difference with its 95 % interval
    (:func:`tcclib.paper.stats.hodges_lehmann`: the interval of the Wilcoxon test in
    :func:`paired_table`, so it leaves out zero where p < 0.05), the plain median, the datasets
    above and below, and that test's p. Columns variant, estimate, low, high, n, median, better,
    worse, p, ``per_dataset`` (the differences); the largest estimate first."""
    wide = stats.dataset_means(everywhere(results), metric, names(everywhere(results)))
    rows = []
    for n in wide.columns:
        if n == reference:
            continue
        d = (wide[n] - wide[reference]).dropna()
        estimate, low, high = stats.hodges_lehmann(d)
        w = stats.wilcoxon(wide[n], wide[reference])
        rows.append(
            dict(
                variant=n,
                estimate=estimate,
                low=low,
                high=high,
                n=len(d),
                median=w["median_diff"],
                better=w["better"],
                worse=w["worse"],
                p=w["p"],
                per_dataset=d.to_numpy(),
            )
        )
    return pd.DataFrame(rows).sort_values("estimate", ascending=False, ignore_index=True)


def difference_figure(results: pd.DataFrame, reference: str = REFERENCE):
    """Each variant against ``reference`` (logistic regression), accuracy and AUROC side by side:
    a row per variant (the best on top), the datasets' differences as dots, the Hodges-Lehmann
    estimate and its 95 % interval (:func:`reference_differences`) in the head's colour, the
    paired Wilcoxon p at the right."""
    fig, axes = plt.subplots(1, 2, figsize=(14, 0.34 * (len(names(everywhere(results))) - 1) + 2.4))
    jitter = np.random.default_rng(0)
    for ax, metric in zip(axes, ("accuracy", "auroc")):
        d = reference_differences(results, metric, reference)
        low, high = _shown_range(d)
        for y, r in d.iterrows():
            colour = _variant_colour(r["variant"])
            dots = np.clip(r["per_dataset"], low, high)
            ax.scatter(dots, y + jitter.uniform(-0.15, 0.15, len(dots)), s=6, color=colour, alpha=0.35, lw=0)
            for edge, sign, marker in ((low, -1, "<"), (high, 1, ">")):
                beyond = int((sign * (r["per_dataset"] - edge) > 0).sum())
                if beyond:
                    ax.scatter([edge], [y], marker=marker, s=22, color=colour)
            err = [[r["estimate"] - r["low"]], [r["high"] - r["estimate"]]]
            ax.errorbar(r["estimate"], y, xerr=err, fmt="o", ms=5, color=colour, capsize=3, lw=1.5)
            ax.annotate(f"p {r['p']:.2g}", (1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=8)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_xlim(low - 0.03 * (high - low), high + 0.03 * (high - low))
        ax.set_yticks(range(len(d)), labels=d["variant"])
        ax.set_ylim(len(d) - 0.5, -0.5)
        ax.set_xlabel(f"variant − {reference} ({style.difference_unit(metric)})", fontsize=style.LABEL_SIZE)
        ax.set_title("accuracy" if metric == "accuracy" else "AUROC", fontsize=style.LABEL_SIZE + 1)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.grid(axis="x", color="0.92", lw=0.6)
        ax.set_axisbelow(True)
    n = int(results["dataset"].nunique())
    seeds = int(results["seed"].nunique())
    fig.suptitle(
        f"Each variant minus {reference} on the same labeled rows, per dataset (its mean over {seeds} seeds): "
        f"the median difference (Hodges-Lehmann) and its {style.LEVEL * 100:g} % interval over n = {n} datasets, "
        "the paired\nWilcoxon test's (its p at the right); dots: datasets, a triangle where some lie beyond the "
        "axis; colour: the head (frozen blue, finetune orange, concat green, probe purple), baselines grey",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _shown_range(d: pd.DataFrame) -> tuple[float, float]:
    """The x range of :func:`difference_figure`'s panel: every interval and 96 % of the datasets'
    differences (a few far-off datasets would squeeze the rest into a line)."""
    dots = np.concatenate(list(d["per_dataset"]))
    low = min(np.nanmin(d["low"]), np.nanquantile(dots, 0.02), 0.0)
    high = max(np.nanmax(d["high"]), np.nanquantile(dots, 0.98), 0.0)
    return float(low), float(high)


FIGURES = {
    "against_logreg": "Each variant minus logistic regression, per dataset: the median difference (Hodges-Lehmann) "
    "and its 95 % interval over the datasets, the paired Wilcoxon p",
    "cd_accuracy": "Average ranks of the variants over the datasets, accuracy: Friedman and Nemenyi's critical "
    "difference",
    "cd_auroc": "Average ranks of the variants over the datasets, AUROC: Friedman and Nemenyi's critical difference",
}
"""The figures :func:`write_figures` writes (file name without suffix -> what it shows)."""


def write_figures(base, results: pd.DataFrame) -> list[Path]:
    """:data:`FIGURES` as PNG and PDF in ``base/figures/``, from the stored ``results``; returns the paths."""
    out = Path(base) / "figures"
    figures = {
        "against_logreg": difference_figure(results),
        "cd_accuracy": cd_figure(results, "accuracy"),
        "cd_auroc": cd_figure(results, "auroc"),
    }
    paths = []
    for stem, fig in figures.items():
        paths += plots.savefig(fig, out / stem)
        plt.close(fig)
    return paths


def rank_words(results: pd.DataFrame, metric: str) -> str:
    """The rank test in one sentence (Friedman, Nemenyi's critical difference, the significant pairs)."""
    rt = stats.rank_test(results, metric, names(results))
    pairs = ", ".join(f"{a} > {b}" for a, b, _ in rt.get("pairs", [])) or "none"
    return (
        f"Friedman over {rt['n']} datasets x {rt['k']} variants: chi2 {rt['chi2']:.1f}, p {rt['p']:.2g}; "
        f"Nemenyi critical difference {rt.get('cd', float('nan')):.2f} ranks (alpha {rt['alpha']}); "
        f"significant pairs: {pairs}."
    )


def coverage(results: pd.DataFrame) -> str:
    """How the comparison was run (datasets, seeds, epochs) and which of the paper's datasets it
    covers (those the published tables report, as the paper report counts them); a variant that
    has not reached every stored dataset yet is named, with how many it has (a partial run)."""
    ours = set(results["dataset"])
    epochs = ", ".join(str(e) for e in sorted(results["epochs"].dropna().unique())) if "epochs" in results else "?"
    text = f"{len(ours)} datasets x {results['seed'].nunique()} seeds, {epochs} pretraining epochs"
    paper = list(dict.fromkeys(tables.paper_long("accuracy", "how")["dataset"]))
    missing = [n for n in paper if n not in ours]
    if not missing:
        text += f"; all {len(paper)} of the paper's datasets"
    elif len(missing) < len(paper):
        text += (
            f"; {len(paper) - len(missing)} of the paper's {len(paper)}, still to run: {', '.join(missing)} "
            f"(the same command resumes: stored members are reused)"
        )
    if newer(results):
        done = sorted(complete(results)["dataset"].unique())
        text += (
            f". **Partial**: {', '.join(newer(results))} measured so far on {len(done)} of these "
            f"{len(ours)} datasets ({', '.join(done)}; the same command resumes), compared on those apart"
        )
    return text + "."


def plain_answer(results: pd.DataFrame) -> list[str]:
    """The answer in words, from the average ranks and the paired tests on both metrics: the
    best pretrained variant against ``logreg`` and the tuned ``logreg_cv`` (where measured); over
    the variants measured on every dataset, then (a partial run) over every variant on the
    datasets they all have."""
    lines = _answer(everywhere(results))
    if newer(results):
        n = complete(results)["dataset"].nunique()
        lines += [f"- **Partial**, every variant on the {n} datasets that {', '.join(newer(results))} reached so far:"]
        lines += ["  " + line for line in _answer(complete(results))]
    return lines


def _answer(results: pd.DataFrame) -> list[str]:
    """:func:`plain_answer` of ``results``, one line per metric."""
    lines = []
    for metric in ("accuracy", "auroc"):
        ranks = mean_table(results, metric).loc["average rank"].sort_values()
        pretrained = [n for n in ranks.index if is_pretrained(n)]
        best = pretrained[0] if pretrained else None
        pt = paired_table(results, metric)
        unit = "points" if metric == "accuracy" else "AUROC"
        line = f"- **{metric}**: best average rank {ranks.index[0]} ({ranks.iloc[0]:.2f})"
        parts = []
        for ref in (REFERENCE, TUNED):
            against = pt[(pt.variant == best) & (pt.against == ref)] if best else pt.iloc[0:0]
            if len(against):
                a = against.iloc[0]
                parts.append(
                    f"against {ref} ({ranks[ref]:.2f}): above on {a.better} of {a.datasets} datasets, below on "
                    f"{a.worse}, median difference {a.median_diff:+g} {unit}, Wilcoxon p {a.p:g}"
                )
        if parts:
            line += f"; the best pretrained variant, {best} ({ranks[best]:.2f}), " + "; ".join(parts) + "."
        lines.append(line)
    return lines


def section(folder, title: str = "## Does the head matter? (head variants)") -> list[str]:
    """The paper report's section on the stored comparison in ``folder`` (nothing when none is stored)."""
    results = load(folder)
    if results is None or results.empty:
        return []
    return section_lines(results, Path(folder).name, title)


def section_lines(results: pd.DataFrame, where: str, title: str) -> list[str]:
    """:func:`section`'s text for ``results`` stored in ``where``."""
    out = [
        title,
        "",
        f"The paper freezes the pretrained encoder and trains a head on its embedding. The opt-in "
        f"variants `head: finetune` (the encoder trains with the head, at `encoder_lr`), `head: concat` "
        f"(the head reads the embedding and the preprocessed features) and `head: probe` (a logistic "
        f"regression on both, its design and strength chosen by cross-validation on the labeled rows), "
        f"each with `no_pretrain` under the same head as its reference, against the baselines on the same "
        f"labeled rows (`logreg_cv`: the probe's tuning on the features alone), other settings "
        f"published (`tools/head_variants.py`; stored in `{where}/`): {coverage(results)}",
        "",
    ]
    out += plain_answer(results) + [""]
    out += _tables(everywhere(results), "")
    if newer(results):
        n = complete(results)["dataset"].nunique()
        out += [f"### Partial: every variant on the {n} datasets that {', '.join(newer(results))} reached so far", ""]
        out += _tables(complete(results), " (partial)")
    return out


def _tables(results: pd.DataFrame, tag: str) -> list[str]:
    """The rank summary, then per metric the rank test and the paired tests, of ``results``."""
    out = [tables.to_markdown(rank_summary(results), decimals=tables.RANK_DECIMALS), ""]
    for metric in ("accuracy", "auroc"):
        out += [f"### {metric}{tag}", "", rank_words(results, metric), ""]
        out += [tables.to_markdown(paired_table(results, metric), index=False, decimals=stats.diff_places(metric)), ""]
    return out
