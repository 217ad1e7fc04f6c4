"""The notebooks' results said in words: a sentence after each result, Markdown tables beside it.

Each function reads results only and returns Markdown text, which a notebook shows with
:class:`tcclib.util.markdown.Markdown` (rendered, with the same text as its plain-text twin):

* :func:`dataset_result` (notebook 03): one dataset's result against the paper's row, in a
  sentence and a table of every method, ours | paper;
* :func:`settings_note`: how a run's settings depart from the published ones;
* :func:`split_sentence` (01), :func:`corr_range_sentence` (02);
* :func:`learning_curves_sentence`, :func:`embeddings_sentence`, :func:`win_matrix_sentence` (05,
  under Figures 1-3);
* :func:`sweep_sentence` and :func:`sweep_table` (07, per sweep of the ablation grid);
* :func:`one_split` (08): a table's methods and baselines on one split, in sentences and a table.

The verdicts of notebooks 04 and 06 are :mod:`tcclib.paper.report`'s sentences.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from tcclib.method import registry
from tcclib.method.config import SETTINGS, Config, split_variant
from tcclib.paper import tables
from tcclib.util.errors import counted

LEAD_METHODS = ("class", "random", "no_pretrain")
"""The method a dataset's sentence leads with: the first of these present (the paper's is ``class``)."""


_SETTING_STAGES = ("data", "pretraining", "classifier", "importance", "run")
_NOT_SAID = ("methods", "baselines", "draws", "keep_embeddings", "progress")
_UNITS = {"accuracy": " %", "auroc": ""}


# --------------------------------------------------------------------------- numbers as text


def _number(value: float, metric: str) -> str:
    """A mean in a sentence: accuracy (percent) to 0.1, AUROC to 0.001."""
    digits = 1 if metric == "accuracy" else 3
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _paper_number(mean: float, se: float) -> str:
    """The paper's mean ± se as it printed them (accuracy to 0.01 points, AUROC to 0.01)."""
    return f"{mean:.2f} ± {se:.2f}"


def _interval(mean: float, sd: float, n: int) -> tuple[float, float]:
    """Our 95 % t-interval (NaN with fewer than two seeds), as :func:`tables.compare_with_paper`."""
    if n < 2 or not np.isfinite(sd):
        return np.nan, np.nan
    half = scipy_stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    return mean - half, mean + half


# --------------------------------------------------------------------------- settings


def settings_note(cfg: Config | None) -> str:
    """How ``cfg`` departs from the published settings, in a sentence ('' for none, or no ``cfg``):
    e.g. ``Ours at 100 pretraining epochs (the paper: 500) and 2 seeds (the paper: 8).``"""
    if cfg is None:
        return ""
    published = Config()
    parts = []
    if len(cfg.seeds) != len(published.seeds):
        parts.append(f"{counted(len(cfg.seeds), 'seed')} (the paper: {len(published.seeds)})")
    for name, setting in SETTINGS.items():
        if name in ("seeds", *_NOT_SAID) or setting.stage not in _SETTING_STAGES:
            continue
        mine, theirs = getattr(cfg, name), getattr(published, name)
        if mine == theirs:
            continue
        if name == "epochs":
            parts.append(f"{mine} pretraining epochs (the paper: {theirs})")
        elif name == "fidelity":
            parts.append(f"the authors' published code where it departs from the paper (`fidelity: {mine}`)")
        else:
            parts.append(f"`{name}` {mine} (the paper: {theirs})")
    if not parts:
        return f"Run with the published settings ({cfg.epochs} pretraining epochs, {counted(len(cfg.seeds), 'seed')})."
    listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return f"Not the published settings: {listed}; read the comparison with that in mind."


# --------------------------------------------------------------------------- notebook 03


def _lead(methods) -> str:
    return next((m for m in LEAD_METHODS if m in methods), methods[0])


def _paper_comparison(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """:func:`tables.compare_with_paper` of every method of ``results`` on ``metric``: the how-table's
    rows, then the where-table's methods not in it, by method."""
    parts = [tables.compare_with_paper(results, metric, kind) for kind in registry.TABLE_KINDS]
    both = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else None
    if both is None:
        return pd.DataFrame(columns=["method"]).set_index("method")
    return both.drop_duplicates("method").set_index("method")


def _under_alias(results: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``results`` under the name the paper reports them by, and that name (None when it is
    their own; :data:`tcclib.paper.tables.PAPER_ALIASES`)."""
    dataset = str(results["dataset"].iloc[0])
    if dataset not in tables.PAPER_ALIASES:
        return results, None
    name, did = tables.PAPER_ALIASES[dataset]
    return results.assign(dataset=name, did=did), name


def _verdict(row, metric: str) -> str:
    """Where the paper's mean falls against our seeds, in words."""
    if not row["inside"]:
        if row["differ"]:
            return f"outside our interval; Welch's test finds a difference (p = {row['welch_p']:.2g})"
        return f"outside our interval, though Welch's test finds no difference (p = {row['welch_p']:.2g})"
    unit = (" point" if row["margin"] == 1 else " points") if metric == "accuracy" else ""
    if row["equivalent"]:
        return f"inside our interval, and equivalent within ±{row['margin']:g}{unit} (TOST p = {row['tost_p']:.2g})"
    return "inside our interval"


def _our_cell(summary: pd.DataFrame, method: str) -> dict:
    r = summary.loc[method]
    low, high = _interval(r["mean"], r["sd"], int(r["n"]))
    return dict(mean=r["mean"], se=r["se"], low=low, high=high, n=int(r["n"]))


def _lead_sentence(method, ours: dict, paper: pd.DataFrame, metric, alias, first: bool) -> str:
    """``class scores 74.9 % accuracy (95 % interval ..., 8 seeds); the paper reports 74.80 ± 0.88: inside ...``
    (the second metric's without the method's name)."""
    unit, name = _UNITS[metric], "accuracy" if metric == "accuracy" else "AUROC"
    top = 100.0 if metric == "accuracy" else 1.0  # a t-interval of few seeds may pass the scale's end
    low, high = max(ours["low"], 0.0), min(ours["high"], top)
    interval = f"95 % interval {_number(low, metric)} to {_number(high, metric)}, " if np.isfinite(low) else ""
    score = f"{_number(ours['mean'], metric)}{unit} {name} ({interval}{counted(ours['n'], 'seed')})"
    said = (
        f"`{method}` scores {score}"
        if first
        else f"its {name} is {_number(ours['mean'], metric)}{unit} ({interval}{counted(ours['n'], 'seed')})"
    )
    if method not in paper.index:
        return said
    p = paper.loc[method]
    where = f" for `{alias}`, OpenML's copy of this table," if alias and first else ""
    return f"{said}; the paper reports{where} {_paper_number(p['paper_mean'], p['paper_se'])}: {_verdict(p, metric)}"


def _counts_sentence(dataset: str, by_metric: dict) -> str:
    """How many of the paper's methods on ``dataset`` agree with ours, per metric."""
    parts, differing, n = [], [], 0
    for metric, c in by_metric.items():
        if not len(c):
            continue
        own = c[~c.index.isin(list(registry.separate_methods()))]  # each paper column counted once
        n = max(n, len(own))
        parts.append(f"{int(own['inside'].sum())} of {len(own)} on {'AUROC' if metric == 'auroc' else metric}")
        differing += [
            f"`{m}` {'AUROC' if metric == 'auroc' else metric}" for m in own.index[own["differ"].astype(bool)]
        ]
    tail = (
        f"Welch's test finds a difference (p < 0.05) for {', '.join(differing)}."
        if differing
        else "Welch's test finds a difference (p < 0.05) for none."
    )
    return (
        f"Over the paper's {counted(n, 'method')} on {dataset} (Tables 2-5), its mean lies inside our 95 % "
        f"interval for {' and '.join(parts)}; {tail}"
    )


def result_table(results: pd.DataFrame, by_metric: dict | None = None) -> str:
    """Every method of one dataset's ``results``: ours (mean ± se over seeds, the paper's
    definition) next to the paper's row where it has one, per metric, as a Markdown table."""
    if by_metric is None:
        aliased, _ = _under_alias(results)
        by_metric = {m: _paper_comparison(aliased, m) for m in ("accuracy", "auroc")}
    methods = list(dict.fromkeys(results["method"]))
    summaries = {metric: tables.summarize(results, metric).set_index("method") for metric in ("accuracy", "auroc")}
    rows = []
    for method in methods:
        row = {"method": f"`{method}`"}
        for metric, summary in summaries.items():
            label = "accuracy %" if metric == "accuracy" else "AUROC"
            if method in summary.index:
                r = summary.loc[method]
                d = tables.DIGITS[metric]
                row[f"{label}: ours"] = f"{r['mean']:.{d}f} ± {r['se']:.{d}f}"
            else:
                row[f"{label}: ours"] = "–"
            c = by_metric.get(metric)
            if c is not None and method in c.index:
                p = c.loc[method]
                row[f"{label}: paper"] = (
                    f"{_paper_number(p['paper_mean'], p['paper_se'])} ({'inside' if p['inside'] else 'outside'})"
                )
            else:
                row[f"{label}: paper"] = "–"
        rows.append(row)
    return tables.to_markdown(pd.DataFrame(rows), index=False)


def dataset_result(results: pd.DataFrame, cfg: Config | None = None) -> str:
    """Notebook 03's result of one dataset in words, then in a table.

    The lead method (``class``, the paper's, where it ran) on accuracy and AUROC: our mean, its
    95 % interval over the seeds, the paper's mean ± se for this dataset and where it falls (inside
    our interval or not; Welch's test and the TOST of :func:`tables.compare_with_paper`); then how
    many of the paper's methods on this dataset agree, how the settings depart from the published
    ones (:func:`settings_note`), and every method ours | paper (:func:`result_table`).  A dataset
    the paper does not report says so; ``breast_cancer`` is compared with the paper's ``wdbc`` row
    (:data:`tcclib.paper.tables.PAPER_ALIASES`)."""
    if results.empty:
        return "No result yet."
    dataset = str(results["dataset"].iloc[0])
    aliased, alias = _under_alias(results)
    by_metric = {m: _paper_comparison(aliased, m) for m in ("accuracy", "auroc")}
    methods = list(dict.fromkeys(results["method"]))
    lead = _lead(methods)
    said = []
    for metric in ("accuracy", "auroc"):
        summary = tables.summarize(results, metric).set_index("method")
        if lead in summary.index:
            cell = _our_cell(summary, lead)
            said.append(_lead_sentence(lead, cell, by_metric[metric], metric, alias, first=not said))
    first = f"**On {dataset}, {said[0]}.**" if said else f"On {dataset}: no result for `{lead}`."
    if len(said) > 1:
        first += f" {said[1][0].upper()}{said[1][1:]}."
    paragraphs = [first]
    if not any(len(c) for c in by_metric.values()):
        paragraphs.append(
            f"The paper does not report {dataset} in its tables: there is no published number to set beside ours."
        )
    else:
        paragraphs.append(_counts_sentence(alias or dataset, by_metric))
    note = settings_note(cfg)
    if note:
        paragraphs[-1] += " " + note
    paragraphs.append(result_table(results, by_metric))
    paragraphs.append(
        "Mean ± standard error over the seeds (the paper's definition, std with ddof=0 over √n); "
        "*inside*: the paper's mean lies in our 95 % t-interval."
    )
    return "\n\n".join(paragraphs)


# --------------------------------------------------------------------------- notebooks 01 and 02


def split_sentence(split, n_features_total: int, classes) -> str:
    """Notebook 01: the first seed's split and labeled subset, in a sentence."""
    return (
        f"With seed {split.seed}: **{len(split.y_train)} training rows, {int(split.labeled.sum())} of them "
        f"labeled**, and {len(split.y_test)} test rows; {split.n_features} of {n_features_total} features kept, "
        f"{int(split.widths.sum())} columns after one-hot encoding; classes {', '.join(map(str, classes))}."
    )


def corr_range_sentence(dataset: str, ranges: list, paper_value: float | None) -> str:
    """Notebook 02: the feature correlation value range over the seeds against the paper's (Table 4)."""
    r = np.asarray(ranges, dtype=float)
    ours = (
        f"The feature correlation value range of {dataset} is **{r.mean():.2f}** on average over "
        f"{counted(len(r), 'seed')} (from {r.min():.2f} to {r.max():.2f})"
    )
    if paper_value is None or not np.isfinite(paper_value):
        return ours + "; the paper's Table 4 does not report this dataset."
    return ours + f"; the paper's Table 4 gives {paper_value:.2f} ({r.mean() - paper_value:+.2f})."


# --------------------------------------------------------------------------- notebook 05


def learning_curves_sentence(history: pd.DataFrame, dataset: str) -> str:
    """Under Figure 1: each method's contrastive loss at the first and the last epoch (mean over seeds)."""
    if history.empty:
        return f"No learning curve stored for {dataset}."
    mean = history.groupby(["method", "epoch"], sort=False)["loss"].mean()
    last = int(history["epoch"].max())
    first = int(history["epoch"].min())
    ends = {m: (mean[m].loc[first], mean[m].loc[last]) for m in dict.fromkeys(history["method"])}
    ranked = sorted(ends, key=lambda m: ends[m][1])
    each = "; ".join(f"`{m}` {ends[m][0]:.2f} → {ends[m][1]:.2f}" for m in ranked)
    n = history["seed"].nunique()
    return (
        f"On {dataset}, the contrastive loss (mean over {counted(n, 'seed')}) from epoch {first} to epoch {last}: "
        f"{each}. `{ranked[0]}` ends lowest. The loss depends on how far each rule's views lie from their "
        f"anchors, so its level compares the rules' views, not the encoders' quality (Tables 2-5 do that)."
    )


def embeddings_sentence(embeddings: dict, methods, dataset: str) -> str:
    """Under Figure 2: what the panels show (the rows, the classes, the methods)."""
    shown = [m for m in methods if m in embeddings]
    if not shown:
        return f"No embeddings stored for {dataset}."
    e = embeddings[shown[0]]
    n_train = len(e.get("y_train", []))
    n_test = len(e.get("y_test", []))
    classes = len(np.unique(np.concatenate([np.asarray(e.get("y_train", [])), np.asarray(e.get("y_test", []))])))
    return (
        f"The encoders of the first seed on {dataset}, {counted(n_train, 'training row')} and "
        f"{counted(n_test, 'test row')} in {classes} class{'' if classes == 1 else 'es'}, one panel per method "
        f"({', '.join(f'`{m}`' for m in shown)}): the paper's Figure 2 claims that class-conditioned "
        "corruption separates the classes more clearly than `random` and `no_pretrain`."
    )


KEY_PAIRS = (("class", "random"), ("class", "no_pretrain"), ("random", "no_pretrain"), ("oracle", "class"))
"""The pairs of the paper's claims on Figure 3, row method first."""


def _wins_text(matrices, a: str, b: str, long: bool) -> str:
    """``6 of the 9 datasets where they differ`` (``long``) or ``6 of 9``, from a win matrix's
    ``(frac, wins, decided)``."""
    d, w = int(matrices[2].loc[a, b]), int(matrices[1].loc[a, b])
    if not d:
        return "none of them" if long else "they differ on none"
    return f"{w} of the {counted(d, 'dataset')} where they differ" if long else f"{w} of {d}"


def win_matrix_sentence(results: pd.DataFrame, metric: str = "accuracy") -> str:
    """Under Figure 3: for the paper's claims (:data:`KEY_PAIRS`), our significant wins next to the
    paper's on the same datasets (and on all of its 30 where ours are fewer), of the datasets
    where the pair differs significantly either way."""
    methods = [m for m in tables.HOW_METHODS if m in set(results["method"])]
    datasets = list(dict.fromkeys(results["dataset"]))
    if len(methods) < 2:
        return "Fewer than two of the paper's methods ran: no win matrix."
    ours = tables.win_matrix(results, metric, methods)
    paper_all = tables.paper_win_matrix(metric, "how")
    paper_same = tables.paper_win_matrix(metric, "how", datasets=datasets)
    n_paper = len(tables.load_paper_table(metric, "how"))
    shared = int(tables.compare_with_paper(results[results["method"] == methods[0]], metric, "how")["did"].nunique())
    parts = []
    for a, b in KEY_PAIRS:
        if a in methods and b in methods:
            theirs = f"the paper: {_wins_text(paper_all, a, b, False)}"
            if 0 < shared < n_paper:
                theirs = (
                    f"the paper on these {shared}: {_wins_text(paper_same, a, b, False)}, "
                    f"on its {n_paper}: {_wins_text(paper_all, a, b, False)}"
                )
            if int(ours[2].loc[a, b]):
                parts.append(f"`{a}` beats `{b}` on {_wins_text(ours, a, b, True)} ({theirs})")
            else:
                parts.append(f"`{a}` and `{b}` differ on none ({theirs})")
    n = len(datasets)
    few = (
        f" With {counted(n, 'dataset')}, most pairs differ on none: the matrix needs the set's datasets "
        "to say anything."
        if n < 3
        else ""
    )
    return (
        f"Over our {counted(n, 'dataset')} ({metric}, Welch's test p < 0.05 per dataset): "
        + "; ".join(parts)
        + "."
        + few
    )


# --------------------------------------------------------------------------- notebook 07


def sweep_table(grid: pd.DataFrame, varied: str, methods, metric: str = "accuracy") -> pd.DataFrame:
    """One sweep of the ablation grid: mean ``metric`` over the seeds per value (rows) and method
    (columns), accuracy in percent."""
    part = grid[grid["varied"] == varied]
    scale = 100 if metric == "accuracy" else 1
    t = part.pivot_table(index=varied, columns="method", values=metric, aggfunc="mean") * scale
    t = t[[m for m in methods if m in t.columns]].round(1 if metric == "accuracy" else 3)
    t.columns.name = f"{'accuracy %' if metric == 'accuracy' else metric} by method"
    return t


def _paired_gain(part: pd.DataFrame, varied: str, a: str, b: str, metric: str) -> pd.DataFrame:
    """Per value of ``varied``: ``a`` minus ``b`` per seed (same splits), its mean and se."""
    wide = part.pivot_table(index=[varied, "seed"], columns="method", values=metric)
    diff = (wide[a] - wide[b]) * (100 if metric == "accuracy" else 1)
    g = diff.groupby(level=0)
    return pd.DataFrame({"mean": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count()), "n": g.count()})


def _each_value(gain: pd.DataFrame, with_se: bool = True) -> str:
    """``+1.0 ± 0.8 at 0.1, ...``: a paired gain (:func:`_paired_gain`) at each value."""
    return ", ".join(
        f"{g['mean']:+.1f}" + (f" ± {g['se']:.1f}" if with_se else "") + f" at {v:g}" for v, g in gain.iterrows()
    )


def sweep_sentence(grid: pd.DataFrame, varied: str, dataset: str, published: float, metric: str = "accuracy") -> str:
    """One sweep of 07 in words: ``class``'s gain over ``random`` (and ``oracle``'s over ``class``,
    ``random``'s over ``no_pretrain``, where the grid has them) at each value, paired by seed, with
    where it is largest and how it compares with the ``published`` value's."""
    part = grid[grid["varied"] == varied]
    have = set(part["method"])
    if not {"class", "random"} <= have:
        return f"The {varied.replace('_', ' ')} sweep on {dataset} lacks `class` or `random`: no gain to state."
    gain = _paired_gain(part, varied, "class", "random", metric)
    unit = " points" if metric == "accuracy" else ""
    name = varied.replace("_", " ")
    each = _each_value(gain)
    best = gain["mean"].idxmax()
    line = (
        f"Varying the {name} on {dataset} ({metric}, mean ± se over {counted(int(gain['n'].max()), 'seed')}, "
        f"paired by split): `class` minus `random` is {each}{unit}. The gain is largest at {best:g}"
    )
    if published in gain.index and best != published:
        at_best, at_published = gain.loc[best, "mean"], gain.loc[published, "mean"]
        line += f" ({at_best:+.1f} against {at_published:+.1f} at the published {published:g})"
    elif best == published:
        line += ", the published value"
    sure = (gain["mean"].abs() > 2 * gain["se"]).sum()
    line += f"; {sure} of {len(gain)} gains are more than twice their standard error."
    if "oracle" in have:
        o = _paired_gain(part, varied, "oracle", "class", metric)
        line += f" True labels (`oracle`) over pseudo-labels (`class`): {_each_value(o, with_se=False)}{unit}."
    if "no_pretrain" in have:
        n = _paired_gain(part, varied, "random", "no_pretrain", metric)
        line += f" Pretraining itself (`random` over `no_pretrain`): {_each_value(n)}{unit}."
    return line


# --------------------------------------------------------------------------- one table, one split (08)


def one_split(results: pd.DataFrame) -> str:
    """Notebook 08: a table's methods and baselines fitted on one split (``own.compare``'s
    results), in sentences (the best accuracy and AUROC, the best pretrained method against the
    untrained encoder and the best baseline, how large a difference one split can tell, the fits'
    seconds) and a table (accuracy in percent, AUROC, fit seconds)."""
    r = results.reset_index(drop=True)
    first = r.iloc[0]
    acc, auc = r.set_index("method")["accuracy"] * 100, r.set_index("method")["auroc"]
    digits = tables.DIGITS["accuracy"]
    rows = f"{int(first['n_labeled'])} labeled of {int(first['n_train'])} training rows, " if "n_train" in r else ""
    n_test = int(first["n_test"])
    lines = [
        f"On {first['dataset']} (seed {first['seed']}: {rows}{n_test} test rows), {acc.idxmax()} has the best "
        f"accuracy, {acc.max():.{digits}f} %, and {auc.idxmax()} the best AUROC, {auc.max():.3f}."
    ]
    pretrained = [m for m in acc.index if _pretrains(m)]
    baselines = [m for m in acc.index if split_variant(m)[0] not in registry.METHODS]
    if pretrained:
        best = acc[pretrained].idxmax()
        against = [("the untrained encoder", "no_pretrain")] if "no_pretrain" in acc else []
        if baselines:
            against.append(("the best baseline", acc[baselines].idxmax()))
        said = [
            f"{abs(acc[best] - acc[m]):.{digits}f} points {'above' if acc[best] >= acc[m] else 'below'} {what} "
            f"({m}, {acc[m]:.{digits}f} %)"
            for what, m in against
        ]
        if said:
            lines.append(
                f"The best pretrained method, {best} ({acc[best]:.{digits}f} %), is " + " and ".join(said) + "."
            )
    p = acc.max() / 100
    se = 100 * np.sqrt(p * (1 - p) / n_test)
    lines.append(
        f"One split is one draw: on {n_test} test rows an accuracy near {acc.max():.0f} % has a binomial standard "
        f"error of about {se:.1f} points, so differences under about {2 * se:.1f} points are within this split's "
        f"noise; the benchmark below averages the paper's 30 datasets x 8 seeds."
    )
    if "fit_s" in r and pretrained:
        fits = r.set_index("method")["fit_s"]
        timing = f"The pretrained fits took {_seconds(fits[pretrained].min())}-{_seconds(fits[pretrained].max())} s"
        if baselines:
            timing += f", the baselines' {_seconds(fits[baselines].min())}-{_seconds(fits[baselines].max())} s"
        lines.append(timing + ".")
    table = pd.DataFrame(
        {"method": acc.index, "accuracy (%)": acc.to_numpy(), "AUROC": auc.to_numpy()}
        | ({"fit (s)": r["fit_s"].to_numpy()} if "fit_s" in r else {})
    )
    places = {"accuracy (%)": digits, "AUROC": tables.DIGITS["auroc"], "fit (s)": 2}
    return " ".join(lines) + "\n\n" + tables.to_markdown(table, index=False, decimals=places)


def _seconds(value: float) -> str:
    """A wall time in a sentence: hundredths under a second, tenths under 100 s, else whole seconds."""
    return f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _pretrains(name: str) -> bool:
    method = split_variant(name)[0]
    return method in registry.METHODS and registry.METHODS[method].pretrain
