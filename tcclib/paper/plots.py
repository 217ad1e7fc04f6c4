"""The figures of the notebooks: titled, labelled, readable at a glance."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from tcclib.method import registry

METHOD_ORDER = registry.ORDER
"""Every method and baseline in the figures' order: a live view of :mod:`tcclib.method.registry`."""
LABELS = registry.LABELS
"""Legend label of each method (baselines: their name): a live view of :mod:`tcclib.method.registry`."""


def palette(methods) -> dict:
    """Each method's registry colour (gray for a name the registry does not know)."""
    cols = registry.colors()
    return {m: cols.get(m, "gray") for m in methods}


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


def class_balance(y: pd.Series, title: str, ax=None):
    ax = ax or plt.subplots(figsize=(6, 3))[1]
    counts = y.value_counts().sort_index()
    sns.barplot(x=counts.index.astype(str), y=counts.values, ax=ax, color="#4C72B0")
    ax.set(title=title, xlabel="class", ylabel="rows")
    for i, v in enumerate(counts.values):
        ax.text(i, v, str(v), ha="center", va="bottom", fontsize=8)
    ax.tick_params(axis="x", rotation=30 if len(counts) > 4 else 0)
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
    np.atleast_1d(axes)[0].set_ylabel("row")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


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
    """Pretraining loss per epoch: mean over seeds, band = min..max."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    pal = palette(history.method.unique())
    for m, g in history.groupby("method", sort=False):
        s = g.groupby("epoch").loss
        mean, lo, hi = s.mean(), s.min(), s.max()
        ax.plot(mean.index, mean.values, label=LABELS.get(m, m), color=pal[m])
        ax.fill_between(mean.index, lo.values, hi.values, color=pal[m], alpha=0.15)
    ax.set(title=title, xlabel="epoch", ylabel=ylabel)
    ax.legend(fontsize=8)
    return ax


def pseudo_accuracy(pseudo: pd.DataFrame, title: str, ax=None):
    ax = ax or plt.subplots(figsize=(7, 3.5))[1]
    if pseudo.empty:
        ax.set_title(title + " (no pseudo-labelled method)")
        return ax
    if pseudo.epoch.nunique() == 1:  # one refresh (a short run): a marker per seed, not a line
        sns.stripplot(
            pseudo, x="method", y="pseudo_accuracy", hue="method", ax=ax, palette=palette(pseudo.method.unique())
        )
        ax.set(
            title=f"{title} (one refresh, at epoch {pseudo.epoch.iloc[0]})",
            xlabel="",
            ylabel="accuracy of pseudo-labels",
        )
        return ax
    sns.lineplot(
        pseudo,
        x="epoch",
        y="pseudo_accuracy",
        hue="method",
        ax=ax,
        errorbar=("pi", 100),
        palette=palette(pseudo.method.unique()),
    )
    ax.set(title=title, xlabel="epoch of the refresh", ylabel="accuracy of pseudo-labels (unlabeled rows)")
    return ax


def results_bars(results: pd.DataFrame, metric: str, title: str, ax=None):
    ax = ax or plt.subplots(figsize=(7, 3.5))[1]
    order = registry.sort(results.method)
    sns.pointplot(
        results, x="method", y=metric, order=order, ax=ax, errorbar="se", linestyle="none", capsize=0.2, color="#4C72B0"
    )
    sns.stripplot(results, x="method", y=metric, order=order, ax=ax, color="0.6", size=3, jitter=0.15)
    ax.set(title=title, xlabel="", ylabel=f"test {metric} (dots: seeds; bars: mean ± se)")
    ax.tick_params(axis="x", rotation=25)
    return ax


def pca_3d(embeddings: dict, methods, part: str, title: str, class_names=None):
    """3-D PCA of encoder embeddings (``part`` = "train" or "test"), one panel per method."""
    from sklearn.decomposition import PCA  # deferred: scikit-learn loads only when this runs

    fig = plt.figure(figsize=(4.2 * len(methods), 4.4))
    for i, m in enumerate(methods):
        e = embeddings[m]
        z = PCA(n_components=3, random_state=0).fit_transform(e[part])
        y = np.asarray(e[f"y_{part}"])
        ax = fig.add_subplot(1, len(methods), i + 1, projection="3d")
        cols = sns.color_palette("Set1", int(y.max()) + 1)
        for c in np.unique(y):
            name = class_names[c] if class_names is not None else f"class {c}"
            ax.scatter(z[y == c, 0], z[y == c, 1], z[y == c, 2], color=cols[c], s=6, alpha=0.7, label=name)
        ax.set(title=LABELS.get(m, m), xlabel="PC1", ylabel="PC2", zlabel="PC3")
        ax.tick_params(labelsize=6)
    fig.axes[-1].legend(loc="upper right", fontsize=8, markerscale=2)
    fig.suptitle(title)
    return fig


def ablation(df: pd.DataFrame, varied: str, metric: str, title: str, ax=None):
    """Mean ± se of ``metric`` against the varied setting, one line per method."""
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    d = df[df.varied == varied]
    sns.lineplot(
        d, x=varied, y=metric, hue="method", marker="o", errorbar="se", ax=ax, palette=palette(d.method.unique())
    )
    ax.set(title=title, xlabel=varied.replace("_", " "), ylabel=f"test {metric} (mean ± se over seeds)")
    ax.set_xticks(sorted(d[varied].unique()))
    return ax
