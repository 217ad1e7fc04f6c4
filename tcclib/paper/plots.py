"""The figures of the notebooks: titled, labelled, readable at a glance, in the collection's one
convention (:mod:`tcclib.paper.style`: colour-blind-safe colours, accuracy in percent, every band a
95 % interval over seeds that says so, with its n).

Per dataset: :func:`class_balance`, :func:`importance_heatmap`, :func:`masks` (01, 02);
:func:`results_figure` (each method's seeds, mean and interval, and the paper's mean ± se where it
reports the dataset), :func:`learning_curves`, :func:`pseudo_accuracy` (03); :func:`ablation_figure`
(07). Per set: :func:`figure3` and :func:`win_matrices` (Figure 3, no matrix below
:data:`MIN_WIN_DATASETS` datasets), :func:`pca_3d` with :func:`separability` (Figure 2 and its claim
measured), :func:`paper_vs_ours` (every cell of Tables 2-5 against the paper, coloured by the
report's verdict; :func:`write_paper_vs_ours` saves one per metric).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from tcclib.method import registry
from tcclib.paper import stats, style, tables

METHOD_ORDER = registry.ORDER
"""Every method and baseline in the figures' order: a live view of :mod:`tcclib.method.registry`."""
LABELS = registry.LABELS
"""Legend label of each method (baselines: their name): a live view of :mod:`tcclib.method.registry`."""
MIN_WIN_DATASETS = 3
"""The fewest datasets a win matrix is drawn for: it counts datasets, and with one or two nearly
every cell reads '– (0/0)'."""
PAPER_VS_OURS = "paper_vs_ours_{metric}"
"""The file name (no suffix) of :func:`write_paper_vs_ours`'s figure of a metric."""


def palette(methods) -> dict:
    """Each method's registry colour (:data:`tcclib.paper.style.NEUTRAL` for a name it does not know)."""
    return style.palette(methods)


def savefig(fig, path_stem) -> list[Path]:
    """Save ``fig`` as PNG and PDF next to each other; returns the paths."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in ("png", "pdf"):
        p = stem.with_suffix(f".{ext}")
        fig.savefig(p, dpi=130, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
        out.append(p)
    return out


def _legible(ax) -> None:
    ax.tick_params(labelsize=style.TICK_SIZE)


def class_balance(y: pd.Series, title: str, ax=None):
    ax = ax or plt.subplots(figsize=(6, 3))[1]
    counts = y.value_counts().sort_index()
    ax.bar(counts.index.astype(str), counts.values, color=style.OKABE_ITO["blue"])
    ax.set(title=title, xlabel="class", ylabel="rows")
    for i, v in enumerate(counts.values):
        ax.text(i, v, str(v), ha="center", va="bottom", fontsize=8)
    ax.tick_params(axis="x", rotation=30 if len(counts) > 4 else 0)
    _legible(ax)
    return ax


def importance_heatmap(W: np.ndarray, names, title: str, ax=None):
    n = len(names)
    ax = ax or plt.subplots(figsize=(min(12, 3 + 0.25 * n), min(10, 2.5 + 0.22 * n)))[1]
    sns.heatmap(
        W,
        ax=ax,
        cmap="viridis",
        square=True,
        xticklabels=names if n <= 40 else False,
        yticklabels=names if n <= 40 else False,
        cbar_kws={"label": "normalised gain importance"},
    )
    ax.set(title=title, xlabel="predictor feature j", ylabel="predicted feature i")
    return ax


def masks(panels: dict, title: str):
    """Side-by-side corruption masks (rows x features) for several samplers."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), sharey=True)
    for ax, (name, m) in zip(np.atleast_1d(axes), panels.items()):
        ax.imshow(np.asarray(m, float), aspect="auto", cmap="Greys", interpolation="nearest")
        ax.set(title=name, xlabel="feature")
        _legible(ax)
    np.atleast_1d(axes)[0].set_ylabel("row")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _band_lines(ax, frame: pd.DataFrame, x: str, value: str, what: str = "seeds", bounds=(-np.inf, np.inf)) -> str:
    """One line per method of ``frame`` (its mean over ``what`` against ``x``) with the 95 %
    interval as a band (cut at ``bounds``, the values the quantity can take), in the method's
    colour and line style; returns the band's label."""
    ns = []
    for m in registry.sort(frame["method"].unique()):
        ci = style.intervals(frame[frame["method"] == m], x, value).sort_values(x)
        ns += list(ci["n"])
        colour = style.colour(m)
        ax.plot(ci[x], ci["mean"], label=LABELS.get(m, m), color=colour, ls=style.line_style(m), lw=1.4)
        low, high = np.clip(ci["low"], *bounds), np.clip(ci["high"], *bounds)
        ax.fill_between(ci[x], low, high, color=colour, alpha=0.15, lw=0)
    return style.band_label(ns, what)


def loss_parts(history: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """The learning curves' panels: ``(what, y label, rows)`` per objective of the methods in
    ``history`` (their losses are on other scales), NT-Xent's first as ``contrastive loss``; the
    methods the registry does not know go with NT-Xent."""

    def objective(method):
        spec = registry.METHODS.get(method)
        return spec.objective if spec is not None else registry.DEFAULT_OBJECTIVE

    if history.empty:
        return []
    of = history.method.map(objective)
    names = sorted(of.unique(), key=lambda o: (o != registry.DEFAULT_OBJECTIVE, list(of).index(o)))
    return [
        (
            "contrastive loss" if o == registry.DEFAULT_OBJECTIVE else f"{o} loss",
            "NT-Xent loss (training)" if o == registry.DEFAULT_OBJECTIVE else f"{o} objective's loss (training)",
            history[of == o],
        )
        for o in names
    ]


def learning_curves(history: pd.DataFrame, title: str, ax=None, ylabel: str = "NT-Xent loss (training)"):
    """Pretraining loss per epoch: the mean over seeds, the band its 95 % interval (the legend says n)."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    band = _band_lines(ax, history, "epoch", "loss")
    ax.set(title=title, xlabel="epoch", ylabel=ylabel)
    ax.legend(fontsize=8, title=f"mean; band: {band}", title_fontsize=8)
    _legible(ax)
    return ax


def pseudo_accuracy(pseudo: pd.DataFrame, title: str, ax=None):
    """Accuracy of the pseudo-labels (percent) at each refresh: the mean over seeds and its 95 %
    interval; a single refresh (a short run): a marker per seed."""
    ax = ax or plt.subplots(figsize=(7, 3.5))[1]
    _legible(ax)
    if pseudo.empty:
        ax.set_title(title + " (no pseudo-labelled method)")
        return ax
    pseudo = pseudo.assign(pct=style.scaled("accuracy", pseudo["pseudo_accuracy"]))
    if pseudo.epoch.nunique() == 1:  # one refresh (a short run): a marker per seed, not a line
        order = registry.sort(pseudo.method.unique())
        for i, m in enumerate(order):
            v = pseudo.loc[pseudo.method == m, "pct"]
            ax.scatter(np.full(len(v), i), v, color=style.colour(m), s=14, label=LABELS.get(m, m))
        ax.set_xticks(range(len(order)), labels=order)
        ax.set(
            title=f"{title} (one refresh, at epoch {pseudo.epoch.iloc[0]})",
            ylabel="accuracy of pseudo-labels (%)\n(dots: seeds)",
        )
        return ax
    band = _band_lines(ax, pseudo, "epoch", "pct", bounds=style.BOUNDS["accuracy"])
    ax.set(title=title, xlabel="epoch of the refresh", ylabel="accuracy of pseudo-labels (%, unlabeled rows)")
    ax.legend(fontsize=8, title=f"mean; band: {band}", title_fontsize=8)
    return ax


def paper_numbers(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The paper's mean and se of each of our methods on the one dataset of ``results`` (in the
    figures' unit), from its Tables 2-5: columns method, mean, se; empty where it does not report
    the dataset (or ``results`` holds several)."""
    if results["dataset"].nunique() != 1:
        return pd.DataFrame(columns=["method", "mean", "se"])
    parts = [tables.compare_with_paper(results, metric, kind) for kind in ("how", "where")]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=["method", "mean", "se"])
    both = pd.concat(parts).drop_duplicates("method")
    return pd.DataFrame({"method": both["method"], "mean": both["paper_mean"], "se": both["paper_se"]})


def results_bars(results: pd.DataFrame, metric: str, title: str, ax=None, paper: bool = True, legend: bool = True):
    """Each method's test ``metric`` on one dataset (a row per method, accuracy in percent): the
    seeds as grey dots, our mean and its 95 % interval in the method's colour, and, with
    ``paper`` and where the paper reports the dataset, its mean ± se as a black diamond below;
    ``legend``: the key under the axes."""
    order = registry.sort(results["method"].unique())
    ax = ax or plt.subplots(figsize=(6.5, 0.42 * len(order) + 1.6))[1]
    values = results.assign(value=style.scaled(metric, results[metric]))
    ci = style.intervals(values, "method", "value").set_index("method")
    theirs = paper_numbers(results, metric).set_index("method") if paper else pd.DataFrame()
    jitter = np.random.default_rng(0)
    for y, m in enumerate(order):
        v = values.loc[values["method"] == m, "value"].dropna()
        r = ci.loc[m]
        if r["n"] > 1:  # (one seed: its own marker below)
            ax.scatter(v, y - 0.1 + jitter.uniform(-0.09, 0.09, len(v)), s=8, color=style.NEUTRAL, alpha=0.7, lw=0)
        low, high = np.clip([r["low"], r["high"]], *style.BOUNDS.get(metric, (-np.inf, np.inf)))  # (what can be)
        err = [[r["mean"] - low], [high - r["mean"]]] if r["n"] > 1 else None
        ax.errorbar(r["mean"], y - 0.1, xerr=err, fmt="o", ms=5, color=style.colour(m), capsize=3, lw=1.4)
        if m in theirs.index:
            p = theirs.loc[m]
            ax.errorbar(p["mean"], y + 0.22, xerr=p["se"], fmt="D", ms=4, color="black", capsize=2, lw=1)
    ax.set_yticks(range(len(order)), labels=order)
    ax.set_ylim(len(order) - 0.5, -0.6)
    ax.set(title=title, xlabel=style.metric_label(metric))
    ax.grid(axis="x", color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    if legend:
        handles = _results_key(ci["n"], len(theirs) > 0)
        ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=len(handles))
    _legible(ax)
    return ax


def _results_key(n, with_paper: bool) -> list:
    """The key of :func:`results_bars`: ours (mean and interval over ``n`` seeds), a seed, the paper's."""
    if max(np.atleast_1d(n), default=0) < 2:  # one seed: no interval, no mean
        handles = [Line2D([], [], marker="o", color="0.3", ls="", label="ours (one seed)")]
    else:
        handles = [
            Line2D([], [], marker="o", color="0.3", ls="-", label=f"ours: mean, {style.band_label(n)}"),
            Line2D([], [], marker="o", color=style.NEUTRAL, ls="", ms=3, label="ours: one seed"),
        ]
    if with_paper:
        handles.append(Line2D([], [], marker="D", color="black", ls="-", ms=4, label="the paper: mean ± se (8 seeds)"))
    return handles


def results_figure(results: pd.DataFrame, dataset: str, paper: bool = True):
    """03's figure: :func:`results_bars` for accuracy and AUROC side by side."""
    k = results["method"].nunique()
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.42 * k + 2.2), sharey=True)
    results_bars(results, "accuracy", f"{dataset}: test accuracy", ax=axes[0], paper=paper, legend=False)
    results_bars(results, "auroc", f"{dataset}: test AUROC", ax=axes[1], paper=paper, legend=False)
    with_paper = paper and len(paper_numbers(results, "accuracy")) > 0
    handles = _results_key(results.groupby("method")["seed"].nunique(), with_paper)
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


# --------------------------------------------------------------------------- Figure 2


def separability(embeddings: dict, methods) -> pd.DataFrame:
    """How well the classes separate in each method's embedding (first seed), the number behind
    Figure 2's claim: per method and part (``train``, ``test``), the silhouette of the true
    classes in the embedding (-1 to 1, higher: more separate) and a linear probe's accuracy (%;
    a logistic regression on the standardised embedding: 5-fold cross-validated on the training
    rows, and fitted on them and scored on the test rows). Columns method, part, silhouette,
    probe_accuracy, rows."""
    from sklearn.linear_model import LogisticRegression  # deferred: scikit-learn loads only when this runs
    from sklearn.metrics import silhouette_score  # deferred: as above
    from sklearn.model_selection import StratifiedKFold, cross_val_score  # deferred: as above
    from sklearn.pipeline import make_pipeline  # deferred: as above
    from sklearn.preprocessing import StandardScaler  # deferred: as above

    rows = []
    for m in methods:
        e = embeddings[m]
        x_train, y_train = np.asarray(e["train"], float), np.asarray(e["y_train"])
        x_test, y_test = np.asarray(e["test"], float), np.asarray(e["y_test"])
        probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        folds = min(5, int(np.bincount(y_train).min()))
        cv = (
            cross_val_score(probe, x_train, y_train, cv=StratifiedKFold(folds, shuffle=True, random_state=0)).mean()
            if folds >= 2
            else np.nan
        )
        test = probe.fit(x_train, y_train).score(x_test, y_test)
        for part, x, y, acc in (("train", x_train, y_train, cv), ("test", x_test, y_test, test)):
            sil = silhouette_score(x, y) if len(np.unique(y)) > 1 else np.nan
            rows.append(dict(method=m, part=part, silhouette=float(sil), probe_accuracy=100 * float(acc), rows=len(y)))
    return pd.DataFrame(rows)


def pca_3d(embeddings: dict, methods, part: str, title: str, class_names=None, separation=None):
    """3-D PCA of encoder embeddings (``part`` = "train" or "test"), one panel per method; with
    ``separation`` (:func:`separability`'s frame) each panel's title gives its numbers."""
    from sklearn.decomposition import PCA  # deferred: scikit-learn loads only when this runs

    ncols = len(methods) if len(methods) <= 2 else 2  # two abreast: ticks legible at the width a notebook shows
    nrows = -(-len(methods) // ncols)
    height = 4.6 * nrows + 1.4
    fig = plt.figure(figsize=(4.6 * ncols, height))
    for i, m in enumerate(methods):
        e = embeddings[m]
        z = PCA(n_components=3, random_state=0).fit_transform(e[part])
        y = np.asarray(e[f"y_{part}"])
        ax = fig.add_subplot(nrows, ncols, i + 1, projection="3d")
        for c in np.unique(y):
            name = class_names[c] if class_names is not None else f"class {c}"
            colour = style.CLASS_COLOURS[c] if c < len(style.CLASS_COLOURS) else plt.get_cmap("tab20")(c % 20)
            ax.scatter(z[y == c, 0], z[y == c, 1], z[y == c, 2], color=colour, s=6, alpha=0.7, label=name)
        head = LABELS.get(m, m)
        if separation is not None:
            s = separation[(separation["method"] == m) & (separation["part"] == part)]
            if len(s):
                head += f"\nsilhouette {s['silhouette'].iloc[0]:.3f}\nlinear probe {s['probe_accuracy'].iloc[0]:.1f} %"
        ax.set_title(head, fontsize=style.LABEL_SIZE)
        ax.set(xlabel="PC1", ylabel="PC2", zlabel="PC3")
        ax.tick_params(labelsize=style.TICK_SIZE - 1, pad=0)
        for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
            axis.set_major_locator(plt.MaxNLocator(4))
    fig.axes[-1].legend(loc="upper right", fontsize=8, markerscale=2)
    if separation is not None:
        probe = "5-fold cross-validated on the training rows" if part == "train" else "fitted on the training rows"
        title += (
            f"\nunder each method: the classes' silhouette in the full embedding of the {part} rows\n"
            f"(-1 to 1, higher: more separate) and a linear probe's accuracy ({probe})"
        )
    fig.suptitle(title, fontsize=11)
    fig.subplots_adjust(top=1 - 1.3 / height, hspace=0.25)
    return fig


BREAST_CANCER = ("breast_cancer", "wdbc")
"""The paper's Figures 1-2 data: scikit-learn's ``breast_cancer`` (the Wisconsin diagnostic data,
569 rows x 30 features), which is OpenML's ``wdbc``, one of the paper's 30, row for row."""


def figure_dataset_words(dataset: str) -> str:
    """Whether ``dataset`` is the data of the paper's Figures 1-2 (:data:`BREAST_CANCER`), in a sentence."""
    if dataset == "breast_cancer":
        return "On breast_cancer, scikit-learn's copy of the Wisconsin diagnostic data: the paper's Figures 1-2 use it."
    if dataset == "wdbc":
        return (
            "On wdbc: OpenML's copy of the Wisconsin diagnostic data, the same 569 rows and 30 features as "
            "scikit-learn's breast_cancer, which the paper's Figures 1-2 use."
        )
    return (
        f"On {dataset} (`figure_dataset` of this set's parameter file), not on the data of the paper's "
        f"Figures 1-2: scikit-learn's breast_cancer (OpenML's wdbc)."
    )


def separability_words(separation: pd.DataFrame) -> str:
    """Figure 2's claim (the classes separate more in the class-conditioned embedding than in the
    others) put to :func:`separability`'s numbers, in a sentence: ``class`` against ``random`` and
    ``no_pretrain`` on the test rows, where the claim would have to hold."""
    test = separation[separation["part"] == "test"].set_index("method")
    if "class" not in test.index:
        return "No class-conditioned embedding here: Figure 2's claim cannot be measured."
    others = [m for m in ("random", "no_pretrain") if m in test.index]
    parts = []
    for m in others:
        sil = test.loc["class", "silhouette"] - test.loc[m, "silhouette"]
        acc = test.loc["class", "probe_accuracy"] - test.loc[m, "probe_accuracy"]
        parts.append(
            f"{m}: silhouette {test.loc['class', 'silhouette']:.3f} against {test.loc[m, 'silhouette']:.3f} "
            f"({sil:+.3f}), linear probe {test.loc['class', 'probe_accuracy']:.1f} % against "
            f"{test.loc[m, 'probe_accuracy']:.1f} % ({acc:+.1f} points)"
        )
    rows = int(test.loc["class", "rows"])
    return (
        f"Figure 2's claim, that the classes separate more in the class-conditioned embedding, measured on the "
        f"{rows} test rows of the first seed: class against {'; against '.join(parts)}. One seed of one dataset: "
        f"a description, not a test."
    )


def embedding_dataset(set_dir, preferred: str) -> tuple[str | None, str]:
    """The dataset of the set's Figure 2: ``preferred`` where its embeddings were kept, else the
    first dataset that kept them; with a sentence saying which and why (empty when ``preferred``)."""
    set_dir = Path(set_dir)
    if (set_dir / preferred / "embeddings.npz").exists():
        return preferred, ""
    kept = sorted(p.parent.name for p in set_dir.glob("*/embeddings.npz"))
    if not kept:
        return (
            None,
            "No dataset of this set kept its embeddings (`keep_embeddings` in the parameter file): no Figure 2.",
        )
    return kept[0], (
        f"Figure 2 is drawn on {kept[0]}, not on {preferred}: this set kept the embeddings of "
        f"{', '.join(kept)} only (`keep_embeddings` in its parameter file), and drawing {preferred}'s "
        f"would mean training its first seed again."
    )


# --------------------------------------------------------------------------- win matrices (Figure 3)


def too_few_for_win_matrix(results: pd.DataFrame) -> str:
    """Why no win matrix is drawn for ``results`` (fewer than :data:`MIN_WIN_DATASETS` datasets), else ''."""
    n = results["dataset"].nunique()
    if n >= MIN_WIN_DATASETS:
        return ""
    return (
        f"No win matrix: it counts the datasets where one method beats another significantly (Welch, "
        f"p < 0.05), and this set has {n} finished dataset{'' if n == 1 else 's'} (it takes at least "
        f"{MIN_WIN_DATASETS}; the paper's matrix rests on 30)."
    )


def win_matrices(panels, title: str | None = None):
    """Win matrices side by side with one colour bar: ``panels`` is a list of ``(frac, wins,
    decided, title)`` (:func:`tcclib.paper.tables.win_matrix`), each panel as wide as its matrix;
    returns the figure. The keys to the hatched and the pale cells are drawn where there are any."""
    sizes = [len(p[0].columns) for p in panels]
    cell = 0.82  # inches: room for "93.3%" over "(14/15)" at 9 pt
    fig, axes = plt.subplots(
        1, len(panels), figsize=(cell * sum(sizes) + 2.3 * len(panels) + 1.2, cell * max(sizes) + 2.6),
        squeeze=False, layout="constrained", gridspec_kw={"width_ratios": sizes},
    )  # fmt: skip
    undecided, few = False, False
    for ax, (frac, wins, decided, name) in zip(axes[0], panels):
        tables.plot_win_matrix(frac, wins, decided, ax=ax, title=name, colorbar=False)
        undecided |= bool((frac.isna().to_numpy() & ~np.eye(len(frac), dtype=bool)).any())
        few |= bool((frac.notna().to_numpy() & (decided.to_numpy() < style.FEW_DECIDED)).any())
    bar = fig.colorbar(
        ScalarMappable(Normalize(0, 1), style.WIN_CMAP), ax=list(axes[0]), shrink=0.8, format=PercentFormatter(1.0)
    )
    bar.set_label("share of significant wins of the row method", fontsize=style.LABEL_SIZE)
    bar.ax.tick_params(labelsize=style.TICK_SIZE)
    keys = []
    if undecided:
        keys.append(Patch(
            facecolor=style.UNDECIDED_COLOUR, hatch=style.UNDECIDED_HATCH, edgecolor="0.5",
            label="– (0/0): no significant difference either way on any dataset",
        ))  # fmt: skip
    if few:
        keys.append(Patch(
            facecolor="0.85", edgecolor="0.5",
            label=f"pale: fewer than {style.FEW_DECIDED} datasets decide the cell (its share rests on one or two)",
        ))  # fmt: skip
    if keys:
        fig.legend(handles=keys, loc="outside lower center", fontsize=9, frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def figure3(results: pd.DataFrame, metric: str = "accuracy", kind: str = "how", methods=None, title: str = ""):
    """Figure 3: our win matrix of the ``kind`` methods (or ``methods``, e.g. with the baselines)
    next to the paper's on the same datasets (recomputed from its Tables 2-5). Returns ``(figure
    or None, a sentence)``: no figure below :data:`MIN_WIN_DATASETS` datasets; only ours where
    the paper reports fewer of them."""
    words = too_few_for_win_matrix(results)
    methods = registry.with_group(kind, present=results["method"]) if methods is None else list(methods)
    if words or len(methods) < 2:
        return None, words or "No win matrix: it takes at least two methods."
    n = results["dataset"].nunique()
    shared = sorted(tables.compare_with_paper(results, metric, kind)["dataset"].unique())
    table = stats.TABLE_NAMES[metric, kind]
    panels = [(*tables.win_matrix(results, metric, methods), f"ours ({n} datasets)")]
    if len(shared) >= MIN_WIN_DATASETS:
        everything = len(shared) == len(tables.load_paper_table(metric, kind))
        name = (
            f"the paper ({len(shared)} datasets, its {table})"
            if everything
            else f"the paper, the same {len(shared)} datasets (its {table})"
        )
        panels.append((*tables.paper_win_matrix(metric, kind, datasets=shared), name))
        words = f"Ours on {n} datasets next to the paper's on the {len(shared)} of them it reports" + (
            " (all of its datasets)." if everything else "."
        )
    else:
        words = f"The paper reports {len(shared)} of these datasets: too few for its matrix beside ours."
    title = title or f"Figure 3 · {metric}, row beats column: significant wins / decided datasets"
    return win_matrices(panels, title), words


# --------------------------------------------------------------------------- ours against the paper


def paper_vs_ours(cells: pd.DataFrame, metric: str, title: str = ""):
    """Ours against the paper at a glance: for every distinct cell of Tables 2-5 of ``metric``
    (:func:`tcclib.paper.stats.cell_tests`; one panel per method, its datasets sorted by the
    difference) our mean minus the paper's with our 95 % interval, the paper's ± se around zero,
    the equivalence margin, each cell coloured by the report's verdict (:func:`tcclib.paper.style.verdict`),
    the counts in the title. Returns the figure, or None without any such cell."""
    c = cells[(cells["metric"] == metric) & cells["distinct"]] if len(cells) else cells
    if c is None or c.empty:
        return None
    c = c.assign(verdict=[style.verdict(e, d) for e, d in zip(c["equivalent"], c["differ"])])
    methods = registry.sort(c["method"].unique())
    ncols = min(3, len(methods))
    nrows = -(-len(methods) // ncols)
    rows = c.groupby("method")["dataset"].nunique().max()
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(4.6 * ncols, nrows * (0.2 * rows + 1.3) + 1.8),
        squeeze=False,
        sharex=True,
        layout="constrained",
    )
    margin = float(c["margin"].iloc[0])
    unit = style.difference_unit(metric, margin)
    for ax, m in zip(axes.flat, methods):
        g = c[c["method"] == m].sort_values("diff")
        y = np.arange(len(g))
        colours = [style.VERDICT_COLOURS[v] for v in g["verdict"]]
        ax.hlines(y, -g["paper_se"], g["paper_se"], color=style.PAPER_BAND, lw=6, zorder=1)
        ax.hlines(y, g["ci_low"] - g["paper_mean"], g["ci_high"] - g["paper_mean"], color=colours, lw=1.3, zorder=2)
        for v, gv in g.assign(_y=y).groupby("verdict"):  # a shape per verdict: not colour alone
            ax.scatter(
                gv["diff"], gv["_y"], color=style.VERDICT_COLOURS[v], marker=style.VERDICT_MARKERS[v], s=22, zorder=3
            )
        ax.axvline(0, color="black", lw=0.8)
        for x in (-margin, margin):
            ax.axvline(x, color="black", lw=0.8, ls="--")
        ax.set_yticks(y, labels=g["dataset"], fontsize=8.5)
        ax.set_ylim(-0.7, len(g) - 0.3)
        ax.set_title(f"{m} ({', '.join(dict.fromkeys(g['table']))})\n{_verdict_counts(g)}", fontsize=style.LABEL_SIZE)
        ax.tick_params(axis="x", labelsize=style.TICK_SIZE)
        ax.grid(axis="x", color="0.92", lw=0.6)
        ax.set_axisbelow(True)
    _margin_scale(axes[0, 0], margin, c)
    for ax in axes.flat[len(methods) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel(f"ours − the paper ({style.difference_unit(metric)})", fontsize=style.LABEL_SIZE)
    counts = c["verdict"].value_counts()
    head = title or f"{metric}: ours against the paper, {len(c)} cells of its {_tables_named(c)}"
    fig.suptitle(
        f"{head}\n{counts.get('equivalent', 0)} equivalent within ±{margin:g} {unit} (TOST), "
        f"{counts.get('differs', 0)} differ and are not equivalent (Welch p < 0.05), "
        f"{counts.get('undecided', 0)} undecided",
        fontsize=12,
    )
    n = style.band_label(c["n"])
    handles = [
        Line2D(
            [],
            [],
            marker=style.VERDICT_MARKERS["equivalent"],
            ls="",
            color=style.VERDICT_COLOURS["equivalent"],
            label=f"equivalent within ±{margin:g} {unit} (TOST p < 0.05)",
        ),
        Line2D(
            [],
            [],
            marker=style.VERDICT_MARKERS["differs"],
            ls="",
            color=style.VERDICT_COLOURS["differs"],
            label="differs (Welch p < 0.05), not equivalent",
        ),
        Line2D(
            [],
            [],
            marker=style.VERDICT_MARKERS["undecided"],
            ls="",
            color=style.VERDICT_COLOURS["undecided"],
            label="undecided (neither test)",
        ),
        Line2D([], [], marker="o", color="0.3", label=f"our mean − the paper's, with our {n}"),
        Line2D([], [], color=style.PAPER_BAND, lw=6, label="the paper's ± se (8 seeds), around its mean"),
        Line2D(
            [],
            [],
            color="black",
            lw=0.8,
            ls="--",
            label=f"equivalence margin ±{margin:g} {unit} (axis linear within ±{3 * margin:g}, logarithmic beyond)",
        ),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    return fig


def _margin_scale(ax, margin: float, cells: pd.DataFrame) -> None:
    """A symmetric log x axis (shared by the panels): linear within three margins, where the
    verdicts are decided, logarithmic beyond, so that a few large gaps leave the rest legible;
    ticks at 1, 10, 100 margins (3 where nothing reaches 10)."""
    ax.set_xscale("symlog", linthresh=3 * margin, linscale=1.5)
    ends = pd.concat([cells["ci_low"] - cells["paper_mean"], cells["ci_high"] - cells["paper_mean"], cells["diff"]])
    reach = float(np.nanmax(np.abs(ends))) if ends.notna().any() else margin
    steps = [1] + [10**e for e in range(1, 4) if 10**e * margin <= reach * 1.05]
    if len(steps) == 1 and 3 * margin <= reach * 1.05:
        steps.append(3)  # (ticks at 3 and 10 margins would crowd each other on the logarithmic part)
    ticks = sorted({0.0, *(s * margin for s in steps), *(-s * margin for s in steps)})
    ax.set_xticks(ticks, labels=[f"{t:+g}" if t else "0" for t in ticks])
    ax.minorticks_off()


def _verdict_counts(cells: pd.DataFrame) -> str:
    """'9 equivalent, 2 differ, 19 undecided' for the ``verdict`` column of ``cells``."""
    counts = cells["verdict"].value_counts()
    words = {"equivalent": "equivalent", "differs": "differ", "undecided": "undecided"}
    return ", ".join(f"{counts.get(v, 0)} {words[v]}" for v in style.VERDICT_COLOURS)


def _tables_named(cells: pd.DataFrame) -> str:
    """'Tables 2 and 4' (or 'Table 2') for the tables of ``cells``."""
    numbers = [t.split()[-1] for t in dict.fromkeys(cells["table"])]
    return f"Table {numbers[0]}" if len(numbers) == 1 else f"Tables {', '.join(numbers[:-1])} and {numbers[-1]}"


def paper_vs_ours_words(results: pd.DataFrame) -> str:
    """Under :func:`paper_vs_ours`: the verdicts' counts per metric in a sentence (the report's per-cell tests)."""
    summary = stats.cell_summary(stats.cell_tests(results))
    distinct = summary[summary["scope"] == "distinct"] if len(summary) else summary
    if distinct.empty:
        return "The paper reports none of this set's datasets: nothing to set beside it."
    parts = []
    for _, r in distinct.iterrows():
        unit = style.difference_unit(r["metric"], r["margin"])
        parts.append(
            f"{r['metric']}: {r['equivalent']} of {r['cells']} cells ({r['tables']}) equivalent within "
            f"±{r['margin']:g} {unit}, {r['differ, not equivalent']} different and not equivalent, "
            f"{r['inconclusive']} undecided"
        )
    return (
        "Ours against the paper, cell by cell (TOST for equivalence, Welch for a difference, p < 0.05): "
        + "; ".join(parts)
        + ". An undecided cell is one whose difference is too uncertain at these seeds for either test."
    )


def write_paper_vs_ours(results: pd.DataFrame, fig_dir, set_name: str = "") -> list[Path]:
    """:func:`paper_vs_ours` for accuracy and AUROC as PNG and PDF in ``fig_dir``
    (``paper_vs_ours_accuracy``, ``paper_vs_ours_auroc``); returns the paths written (none where
    the paper reports none of the datasets)."""
    cells = stats.cell_tests(results)
    paths = []
    for metric in ("accuracy", "auroc"):
        where = f" ({set_name} set)" if set_name else ""
        c = cells[(cells["metric"] == metric) & cells["distinct"]] if len(cells) else cells
        if c is None or c.empty:
            continue
        fig = paper_vs_ours(
            cells, metric, f"{metric}{where}: ours against the paper, {len(c)} cells of its {_tables_named(c)}"
        )
        paths += savefig(fig, Path(fig_dir) / PAPER_VS_OURS.format(metric=metric))
        plt.close(fig)
    return paths


# --------------------------------------------------------------------------- ablation (07)


def ablation(df: pd.DataFrame, varied: str, metric: str, title: str, ax=None):
    """``metric`` against the varied setting, one line per method (its mean over seeds, the band its
    95 % interval; accuracy in percent); the labeled fraction on a log axis. ``no_pretrain``, where
    the grid has it, is the dashed black reference."""
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    d = df[df.varied == varied].assign(value=lambda f: style.scaled(metric, f[metric]))
    ns = []
    for m in registry.sort(d["method"].unique()):
        ci = style.intervals(d[d["method"] == m], varied, "value").sort_values(varied)
        ns += list(ci["n"])
        colour, ls = ("black", "--") if m == "no_pretrain" else (style.colour(m), style.line_style(m))
        ax.plot(ci[varied], ci["mean"], marker="o", ms=4, color=colour, ls=ls, label=LABELS.get(m, m))
        low, high = np.clip(ci["low"], *style.BOUNDS[metric]), np.clip(ci["high"], *style.BOUNDS[metric])
        ax.fill_between(ci[varied], low, high, color=colour, alpha=0.13, lw=0)  # (cut where the metric ends)
    if varied == "labeled_fraction":
        ax.set_xscale("log")
    values = sorted(d[varied].unique())
    ax.set_xticks(values, labels=[f"{v:g}" for v in values])
    ax.minorticks_off()
    ax.set(title=title, xlabel=varied.replace("_", " ") + (" (log scale)" if varied == "labeled_fraction" else ""))
    ax.set_ylabel(style.metric_label(metric))
    ax.legend(fontsize=8, title=f"mean; band: {style.band_label(ns)}", title_fontsize=8)
    _legible(ax)
    return ax


def ablation_figure(grid: pd.DataFrame, dataset: str, epochs: int | None = None):
    """07's figure: accuracy and AUROC against the labeled fraction and the corruption rate, with
    the seeds and epochs it rests on."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4))
    for col, varied in enumerate(("labeled_fraction", "corruption_rate")):
        for row, metric in enumerate(("accuracy", "auroc")):
            name = "accuracy" if metric == "accuracy" else "AUROC"
            ablation(grid, varied, metric, f"{name} vs {varied.replace('_', ' ')}", ax=axes[row, col])
    seeds = grid["seed"].nunique()
    other = "the other setting at the paper's value (labeled fraction 0.3, corruption rate 0.4)"
    fig.suptitle(
        f"{dataset}: one setting varied at a time, {other}; {seeds} seeds"
        + (f", {epochs} contrastive epochs" if epochs else ""),
        fontsize=11,
    )
    fig.tight_layout()
    return fig
