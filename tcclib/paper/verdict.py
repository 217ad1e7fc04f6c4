"""The screen's verdict: is a new method better than ``class``, ``random``, no pretraining and the
baselines over the datasets?  Reads results only (:mod:`tcclib.running.screen` trains them).

For the new method(s) among the compared ones, on accuracy and AUROC: average ranks over the
datasets' means (:func:`summary`), a paired Wilcoxon test over the datasets' means against each
compared method (:func:`paired`), Friedman + Nemenyi with a critical-difference diagram
(:func:`tcclib.paper.stats.rank_test`, :func:`~tcclib.paper.stats.plot_cd`), per-dataset wins by
Welch's t-test over the seeds (:func:`wins`), and the answer in plain sentences
(:func:`sentences`).  :func:`write` puts it all on one page, ``verdict.md``, with its figures.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from tcclib.paper import plots, stats, style, tables
from tcclib.util.errors import counted

ALPHA = 0.05
METRICS = ("accuracy", "auroc")


def methods_of(new, compared) -> list[str]:
    """The ranked methods: the new ones first, then the compared ones."""
    return list(dict.fromkeys([*new, *compared]))


def summary(results: pd.DataFrame, new, compared) -> pd.DataFrame:
    """Per method: mean over the datasets and average rank (1 = best) on accuracy and AUROC,
    best accuracy rank first."""
    columns = {}
    for metric in METRICS:
        wide = stats.dataset_means(results, metric, methods_of(new, compared))
        columns[f"{metric} rank"] = wide.rank(axis=1, ascending=False, method="average").mean()
        columns[f"mean {metric}"] = wide.mean()
    return pd.DataFrame(columns).sort_values("accuracy rank")


def paired(results: pd.DataFrame, new, compared, metric: str, adjusted: dict | None = None) -> pd.DataFrame:
    """Each new method against each compared one: paired Wilcoxon over the datasets' means
    (``better`` / ``worse``: datasets above / below; ``median_diff`` in points of accuracy or in AUROC);
    with ``adjusted`` (:func:`holm_over_page`), a column ``p (Holm)``."""
    wide = stats.dataset_means(results, metric, methods_of(new, compared))
    pairs = [(n, c) for n in new for c in compared if c in wide.columns and n in wide.columns]
    return _paired_rows(wide, pairs, metric, adjusted)


def shown(table: pd.DataFrame, metric: str | None = None, index: bool = False) -> str:
    """``table`` as the Markdown table notebook 09 displays: :func:`summary` (no ``metric``; its
    methods named), :func:`paired` (``metric``) or :func:`wins` (``index``: its datasets named),
    columns named in words with their units, ranks and differences at fixed decimals, no row
    numbers."""
    if metric is None:
        columns = {
            "accuracy rank": "accuracy: average rank",
            "mean accuracy": "mean accuracy (%)",
            "auroc rank": "AUROC: average rank",
            "mean auroc": "mean AUROC",
        }
        decimals = {"accuracy: average rank": 2, "mean accuracy (%)": 2, "AUROC: average rank": 2, "mean AUROC": 3}
        return tables.to_markdown(table.rename(columns=columns).rename_axis("method"), decimals=decimals)
    difference = f"median difference ({style.difference_unit(metric)})"
    columns = {"better": "datasets above", "worse": "datasets below", "median_diff": difference, "p": "Wilcoxon p"}
    named = table.rename(columns=columns)
    if index:
        named = named.rename_axis("dataset")
    return tables.to_markdown(named, index=index, decimals={difference: stats.diff_decimals(metric)})


def _paired_rows(wide: pd.DataFrame, pairs, metric: str, adjusted: dict | None) -> pd.DataFrame:
    rows = [dict(method=a, against=b, **stats.paired_row(wide[a], wide[b], metric)) for a, b in pairs]
    table = pd.DataFrame(rows)
    if adjusted is not None and rows:
        table["p (Holm)"] = [float(f"{adjusted[metric, a, b]:.2g}") for a, b in pairs]
    return table


def holm_over_page(results: pd.DataFrame, new, compared) -> dict[tuple[str, str, str], float]:
    """``{(metric, method, against): p}``: every paired Wilcoxon test on the verdict page (each new
    method against each compared one and each ``_class`` variant against its method, on both
    metrics) Holm-adjusted over all of them, so that "significant" holds for the page as a whole."""
    keys, raw = [], []
    for metric in METRICS:
        wide = stats.dataset_means(results, metric, methods_of(new, compared))
        pairs = [(n, c) for n in new for c in compared if c in wide.columns and n in wide.columns]
        for a, b in [*pairs, *class_pairs(new)]:
            keys.append((metric, a, b))
            raw.append(stats.wilcoxon(wide[a], wide[b])["p"])
    return dict(zip(keys, stats.holm(raw)))


def class_pairs(new) -> list[tuple[str, str]]:
    """``(variant, method)`` for each new method ``<m>_class`` whose ``<m>`` is new too: the
    class-conditioned draw against the whole column's, the same objective and where rule."""
    return [(n, n.removesuffix("_class")) for n in new if n.endswith("_class") and n.removesuffix("_class") in new]


def paired_within(results: pd.DataFrame, pairs, metric: str, adjusted: dict | None = None) -> pd.DataFrame:
    """Paired Wilcoxon over the datasets' means of each ``(method, against)`` in ``pairs`` (with
    ``adjusted``, a column ``p (Holm)`` as :func:`paired`'s)."""
    names = list(dict.fromkeys(m for pair in pairs for m in pair))
    wide = stats.dataset_means(results, metric, names)
    return _paired_rows(wide, list(pairs), metric, adjusted)


def wins(results: pd.DataFrame, method: str, compared, metric: str = "accuracy") -> pd.DataFrame:
    """Per dataset: ``win`` / ``loss`` where ``method``'s seeds differ from the compared one's by
    Welch's t-test at :data:`ALPHA` (``=`` otherwise), and the mean difference; a last row counts
    the wins, ties and losses."""
    rows = {}
    for dataset, part in results.groupby("dataset"):
        mine = part.loc[part["method"] == method, metric].dropna().to_numpy()
        row = {}
        for c in compared:
            theirs = part.loc[part["method"] == c, metric].dropna().to_numpy()
            row[c] = _welch(mine, theirs)
        rows[dataset] = row
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(compared))
    counts = {c: "{} / {} / {}".format(*(int((table[c] == k).sum()) for k in ("win", "=", "loss"))) for c in table}
    return pd.concat([table, pd.DataFrame(counts, index=["wins / ties / losses"])])


def _welch(a: np.ndarray, b: np.ndarray) -> str:
    if len(a) < 2 or len(b) < 2:
        return ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # equal seeds give a NaN statistic: a tie
        p = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
    if not np.isfinite(p) or p >= ALPHA:
        return "="
    return "win" if a.mean() > b.mean() else "loss"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _place(ranks: pd.Series, method: str, metric: str) -> str:
    """``5th of 7 on accuracy (average rank 4.75)``, or ``tied 5th of 7 ... (average rank 4.75,
    with random)`` where others have the same average rank."""
    mine = ranks[method]
    tied = [m for m in ranks.index if m != method and abs(ranks[m] - mine) < 1e-9]
    place = int((ranks < mine - 1e-9).sum()) + 1
    shared = f", with {', '.join(tied)}" if tied else ""
    return f"{'tied ' if tied else ''}{_ordinal(place)} of {len(ranks)} on {metric} (average rank {mine:.2f}{shared})"


def sentences(results: pd.DataFrame, new, compared, adjusted: dict | None = None) -> list[str]:
    """The answer in plain words, one sentence per new method; ``adjusted``: :func:`holm_over_page`
    (computed here when not given)."""
    table = summary(results, new, compared)
    n_datasets = results["dataset"].nunique()
    adjusted = holm_over_page(results, new, compared) if adjusted is None else adjusted
    out = []
    for n in new:
        if n not in table.index:
            out.append(f"{n}: no results to compare.")
            continue
        places = []
        for metric in METRICS:
            places.append(_place(table[f"{metric} rank"], n, metric))
        parts, held = [], {}  # held: what stays after Holm -> the metrics it stays on
        for metric in METRICS:
            rows = paired(results, [n], compared, metric, adjusted).to_dict("records")
            ahead, behind = _sides_at(rows, "p")
            level = [r["against"] for r in rows if not (r["p"] < ALPHA)]
            bits = []
            if ahead:
                bits.append(f"significantly ahead of {', '.join(ahead)}")
            if behind:
                bits.append(f"significantly behind {', '.join(behind)}")
            if level:
                bits.append(f"not distinguishable from {', '.join(level)}")
            parts.append(f"on {metric} it is " + "; ".join(bits))
            ahead, behind = _sides_at(rows, "p (Holm)")
            stays = [f"{side} {', '.join(names)}" for side, names in (("ahead of", ahead), ("behind", behind)) if names]
            if stays:
                held.setdefault(" and ".join(stays), []).append(metric)
        where = f"after Holm's correction over the page's {len(adjusted)} tests"
        after = (
            f"{where}, it stays significantly " + "; ".join(f"{b} on {' and '.join(m)}" for b, m in held.items()) + "."
            if held
            else f"{where}, none of these differences stays."
        )
        out.append(
            f"{n} ranks {' and '.join(places)} over {counted(n_datasets, 'dataset')}; in paired Wilcoxon tests over "
            f"the datasets' means (p < {ALPHA}), " + "; ".join(parts) + "; " + after
        )
    if out and smallest_p(n_datasets) >= ALPHA:
        out.append(too_few_line(n_datasets))
    return out


def _sides_at(rows: list[dict], column: str) -> tuple[list[str], list[str]]:
    """The compared methods that ``rows`` (:func:`paired`'s) put significantly ahead of and behind at
    ``column``'s p."""
    ahead = [r["against"] for r in rows if r[column] < ALPHA and r["better"] > r["worse"]]
    behind = [r["against"] for r in rows if r[column] < ALPHA and r["better"] < r["worse"]]
    return ahead, behind


def smallest_p(n: int) -> float:
    """The smallest p a two-sided paired Wilcoxon test over ``n`` datasets can give (every
    difference of one sign): ``2 / 2**n`` in the exact test, so below 0.05 from 6 datasets on."""
    if n < 1:
        return 1.0
    return float(stats.wilcoxon(np.arange(1.0, n + 1), np.zeros(n))["p"])


def too_few_line(n: int) -> str:
    """Why "not distinguishable" says nothing over ``n`` datasets, and how many it takes."""
    needed = next(k for k in range(1, 64) if smallest_p(k) < ALPHA)
    return (
        f"With {counted(n, 'dataset')} no paired Wilcoxon test can reach p < {ALPHA} (the smallest "
        f'possible p is {smallest_p(n):.2g}): "not distinguishable" here says nothing either way; screen at '
        f"least {needed} datasets for a verdict."
    )


# --------------------------------------------------------------------------- figures


def rank_intervals(results: pd.DataFrame, methods, metric: str, resamples: int = 2000) -> pd.DataFrame:
    """Per method: its average rank over the datasets and the 95 % bootstrap interval of it
    (``resamples`` draws of the datasets with replacement, a fixed seed: the same figure each time),
    columns ``rank``, ``low``, ``high``."""
    wide = stats.dataset_means(results, metric, list(methods))
    ranks = wide.rank(axis=1, ascending=False, method="average").to_numpy()
    draws = np.random.default_rng(0).integers(0, len(ranks), size=(resamples, len(ranks)))
    with warnings.catch_warnings():  # (a method missing from every drawn dataset: NaN, as summary()'s mean)
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(ranks[draws], axis=1)
        low, high = np.nanpercentile(means, [2.5, 97.5], axis=0)
        rank = np.nanmean(ranks, axis=0)
    return pd.DataFrame({"rank": rank, "low": low, "high": high}, index=wide.columns)


def _bar_style(method: str, new) -> tuple[str, str]:
    """A bar's colour and hatch: a new method in its colour, a ``_class`` variant in its method's
    colour hatched (the pair reads as one objective), the compared ones grey."""
    if method not in new:
        return "0.75", ""
    base = method.removesuffix("_class")
    if base != method and base in new:
        return style.colour(base), "///"
    return style.colour(method), ""


def rank_figure(results: pd.DataFrame, new, compared):
    """Average ranks on accuracy and AUROC (shorter is better) with their 95 % bootstrap interval over
    the datasets (:func:`rank_intervals`) and their value, the new methods in their colour (a
    ``_class`` variant hatched in its method's), the compared ones grey."""
    table = summary(results, new, compared)
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.38 * len(table) + 1.6), sharey=True)
    y = np.arange(len(table))
    colours, hatches = zip(*(_bar_style(m, new) for m in table.index))
    for ax, metric in zip(axes, METRICS):
        found = rank_intervals(results, table.index, metric).loc[table.index]
        ax.barh(y, found["rank"], color=colours, hatch=hatches, edgecolor="white", lw=0)
        ax.errorbar(
            found["rank"],
            y,
            xerr=[found["rank"] - found["low"], found["high"] - found["rank"]],
            fmt="none",
            ecolor="black",
            elinewidth=0.9,
            capsize=2.5,
        )
        for row, (value, high) in enumerate(zip(found["rank"], found["high"])):
            ax.text(high + 0.12, row, f"{value:.2f}", va="center", fontsize=style.TICK_SIZE)
        over = counted(results["dataset"].nunique(), "dataset")
        ax.set(title=f"{metric}: average rank over {over}", xlabel="average rank (1 = best)")
        ax.set_xlim(0, len(table) + 0.9)
        ax.set_yticks(y, labels=table.index)
        ax.tick_params(labelsize=style.TICK_SIZE)
    axes[0].invert_yaxis()
    caption = "Error bars: the 95 % bootstrap interval of the average rank over the datasets (2,000 resamples)."
    if "///" in hatches:
        caption += "\nHatched: the class-conditioned draw (_class) of the objective in the same colour."
    fig.text(0.5, 0.005, caption, ha="center", va="bottom", fontsize=style.TICK_SIZE)
    fig.tight_layout(rect=(0, 0.03 * (caption.count("\n") + 1) + 0.01, 1, 1))
    return fig


def cd_figure(results: pd.DataFrame, new, compared, metric: str):
    """The critical-difference diagram (Friedman + Nemenyi) of the new and compared methods."""
    rt = stats.rank_test(results, metric, methods_of(new, compared))
    ax = stats.plot_cd(rt)
    return ax.figure, rt


def differences(results: pd.DataFrame, method: str, against: str, metric: str = "accuracy") -> pd.DataFrame:
    """Per dataset, ``method``'s mean minus ``against``'s (points of accuracy, or AUROC) with its
    95 % interval: over the seeds' paired differences where both have the same seeds (the same
    split and labeled rows per seed), else Welch's interval of the two means. Columns dataset,
    diff, low, high, n, paired; sorted by diff."""
    rows = []
    d = results[results["method"].isin([method, against])]
    for name, g in d.groupby("dataset", sort=False):
        wide = g.assign(value=style.scaled(metric, g[metric])).pivot_table(
            index="seed", columns="method", values="value"
        )
        if method not in wide or against not in wide:
            continue
        a, b = wide[method].dropna(), wide[against].dropna()
        if set(a.index) == set(b.index):
            mean, low, high, n = style.interval(a - b.loc[a.index])
            rows.append((name, mean, low, high, n, True))
            continue
        rows.append((name, *_welch_interval(a.to_numpy(), b.to_numpy()), min(len(a), len(b)), False))
    out = pd.DataFrame(rows, columns=["dataset", "diff", "low", "high", "n", "paired"])
    return out.sort_values("diff", ignore_index=True)


def _welch_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """``(mean a - mean b, low, high)``: Welch's 95 % interval of the difference of two means."""
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if not (len(a) > 1 and len(b) > 1) or va + vb == 0:
        return diff, np.nan, np.nan
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(scipy_stats.t.ppf(0.975, df) * np.sqrt(va + vb))
    return diff, diff - half, diff + half


def _sides(d: pd.DataFrame) -> np.ndarray:
    """Per row of :func:`differences`: ``ahead`` (interval above 0), ``behind`` (below) or ``not
    distinguishable``."""
    return np.where(d["low"] > 0, "ahead", np.where(d["high"] < 0, "behind", "not distinguishable"))


def two_counts(results: pd.DataFrame, method: str, against: str, metric: str = "accuracy") -> str:
    """Why :func:`wins`' table and :func:`difference_figure` count differently, in words, with both
    counts: Welch's t-test takes the two methods' seeds as independent samples (the paper's test);
    the figure's intervals pair each seed's two runs where the seeds match (the same split and
    labeled rows), which leaves the splits' share of the spread out."""
    table = wins(results, method, [against], metric)[against].iloc[:-1]
    welch = {k: int((table == k).sum()) for k in ("win", "=", "loss")}
    d = differences(results, method, against, metric)
    side = pd.Series(_sides(d), index=d["dataset"])
    figure = {k: int((side == k).sum()) for k in ("ahead", "behind")}
    line = (
        f"{method} against {against} on {metric}, counted two ways: Welch's t-test over the seeds (the table: the "
        f"two methods' seeds as independent samples, the paper's test) finds {counted(welch['win'], 'win')}, "
        f"{welch['loss']} loss{'' if welch['loss'] == 1 else 'es'} and {counted(welch['='], 'tie')}; "
    )
    if not d["paired"].all():
        return line + (
            f"the figure's 95 % intervals (Welch's, where the seeds differ) put it ahead on {figure['ahead']} and "
            f"behind on {figure['behind']}."
        )
    moved = [name for name in side.index if (side[name], table.get(name)) not in MATCHING]
    return line + (
        f"the figure pairs each seed's two runs (the same split and labeled rows), which takes the splits' share "
        f"of the spread out, so its 95 % intervals separate more: ahead on {figure['ahead']}, behind on "
        f"{figure['behind']}" + (f" (counted otherwise: {', '.join(moved)})." if moved else ".")
    )


MATCHING = {("ahead", "win"), ("behind", "loss"), ("not distinguishable", "=")}
"""The figure's side and the table's cell that say the same of a dataset."""


def difference_figure(results: pd.DataFrame, method: str, against: str, metric: str = "accuracy"):
    """Per dataset: ``method``'s mean minus ``against``'s with its 95 % interval (:func:`differences`),
    sorted, coloured by whether the interval lies above zero, below it or across it; the counts in
    the title."""
    d = differences(results, method, against, metric)
    side = _sides(d)
    colours = {"ahead": style.VERDICT_COLOURS["equivalent"], "behind": style.VERDICT_COLOURS["differs"]}
    colour = [colours.get(s, style.VERDICT_COLOURS["undecided"]) for s in side]
    fig, ax = plt.subplots(figsize=(7.5, 0.24 * len(d) + 1.8))
    y = np.arange(len(d))
    ax.hlines(y, d["low"], d["high"], color=colour, lw=1.4)
    ax.scatter(d["diff"], y, color=colour, s=18, zorder=3)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y, labels=d["dataset"])
    ax.set_ylim(-0.7, len(d) - 0.3)
    unit = style.difference_unit(metric)
    kind = "paired seeds" if d["paired"].all() else "seeds (paired where the seeds match, else Welch)"
    counts = pd.Series(side).value_counts()
    ax.set_title(
        f"{method} minus {against}, {metric}, per dataset: ahead on {counts.get('ahead', 0)}, behind on "
        f"{counts.get('behind', 0)}, not distinguishable on {counts.get('not distinguishable', 0)}\n"
        f"(mean and {style.band_label(d['n'], kind)})",
        fontsize=style.LABEL_SIZE,
    )
    ax.set_xlabel(f"{method} − {against} ({unit})")
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(axis="x", color="0.92", lw=0.6)
    ax.set_axisbelow(True)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- the page


def write(results: pd.DataFrame, new, compared, out: Path) -> Path:
    """The verdict page ``out/verdict.md`` with its figures under ``out/figures/``; returns its path."""
    out = Path(out)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    adjusted = holm_over_page(results, new, compared)
    lines = [
        f"# Verdict: {', '.join(new)} against {', '.join(compared)}",
        "",
        f"{counted(results['dataset'].nunique(), 'dataset')} x {results['seed'].nunique()} seeds; the compared "
        f"methods' results are the stored ones, the new method(s) trained with each dataset's stored settings "
        f"(`tcclib.running.screen`).",
        "",
        *(f"- {line}" for line in sentences(results, new, compared, adjusted)),
        "",
        "## Average ranks",
        "",
        tables.to_markdown(summary(results, new, compared), decimals=tables.RANK_DECIMALS),
        "",
    ]
    plots.savefig(rank_figure(results, new, compared), figures / "ranks")
    hatched = "; a class-conditioned variant (`_class`) hatched in its objective's colour" if class_pairs(new) else ""
    lines += [
        "![average ranks](figures/ranks.png)",
        "",
        f"*Average ranks with the 95 % bootstrap interval of each over the datasets (2,000 resamples){hatched}.*",
        "",
    ]
    for metric in METRICS:
        fig, rt = cd_figure(results, new, compared, metric)
        plots.savefig(fig, figures / f"cd_{metric}")
        pairs = ", ".join(f"{a} > {b}" for a, b, _ in rt.get("pairs", [])) or "none"
        lines += [
            f"## {metric}",
            "",
            f"Friedman over {counted(rt['n'], 'dataset')} x {rt['k']} methods: chi2 {rt['chi2']:.1f}, p {rt['p']:.2g}; "
            f"Nemenyi critical difference {rt.get('cd', float('nan')):.2f} ranks; significant pairs: {pairs}.",
            "",
            f"![critical difference, {metric}](figures/cd_{metric}.png)",
            "",
            f"Paired Wilcoxon over the datasets' means; *p (Holm)*: adjusted over the page's {len(adjusted)} tests:",
            "",
            tables.to_markdown(
                paired(results, new, compared, metric, adjusted), index=False, decimals=stats.diff_places(metric)
            ),
            "",
        ]
    pairs = class_pairs(new)
    if pairs:
        lines += [
            "## The class-conditioned draw within each objective",
            "",
            "Each `_class` variant against the same objective and where rule with the whole column's values "
            "(paired Wilcoxon over the datasets' means):",
            "",
        ]
        for metric in METRICS:
            within = paired_within(results, pairs, metric, adjusted)
            lines += [f"{metric}:", "", tables.to_markdown(within, index=False, decimals=stats.diff_places(metric)), ""]
    for n in new:
        lines += [f"## Per dataset: {n} (Welch's t-test over the seeds, accuracy, p < {ALPHA})", ""]
        lines += [tables.to_markdown(wins(results, n, compared)), ""]
        if "class" in compared:
            plots.savefig(difference_figure(results, n, "class"), figures / f"{n}_minus_class")
            lines += [two_counts(results, n, "class"), "", f"![{n} minus class](figures/{n}_minus_class.png)", ""]
    page = out / "verdict.md"
    page.write_text("\n".join(lines), encoding="utf-8")
    plt.close("all")
    return page
