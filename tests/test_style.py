"""The figures' one convention (tcclib.paper.style): colour-blind-safe colours that stay apart under a
simulation of the three colour blindnesses, no red-green colour map anywhere in tcclib, and every
figure kind drawn with what it promises (the paper's numbers, bands that say what they are, percent,
no win matrix below three datasets)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

import tcclib  # noqa: E402
from tcclib.method import registry  # noqa: E402
from tcclib.paper import heads, plots, stats, style, tables, verdict  # noqa: E402

# Machado, Oliveira & Fernandes (2009): dichromacy (severity 1) on linear RGB
CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}
RED_GREEN = re.compile(r"RdYlGn|RdGn|Spectral|\bjet\b|rainbow|\bbrg\b|tab:green|tab:red")


def _lab(colour, seen_as: str | None = None) -> np.ndarray:
    """CIELAB (D65) of ``colour`` as a person with ``seen_as`` (a CVD key, None: normal vision) sees it."""
    c = np.asarray(to_rgb(colour))
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    if seen_as:
        linear = np.clip(np.asarray(CVD[seen_as]) @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _delta_e(a, b, seen_as=None) -> float:
    return float(np.linalg.norm(_lab(a, seen_as) - _lab(b, seen_as)))


def test_no_red_green_colour_map_in_tcclib():
    package = Path(tcclib.__file__).parent
    found = [
        f"{p.relative_to(package)}:{i}"
        for p in package.rglob("*.py")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if RED_GREEN.search(line) and p.name != "style.py"  # (style.py names them only to say they are not used)
    ]
    assert found == []


FAMILY = ["vime", "vime_class", "dae", "dae_class", "subtab", "subtab_class"]


@pytest.mark.parametrize(
    "shared",
    [
        # the paper's sets: the learning curves draw every NT-Xent method together
        [m for m in registry.with_group("how", "where", "published") if m not in ["no_pretrain", *FAMILY]],
        # the family's verdict: the six beside what params/family.yaml compares them with (pairs
        # with one of the six at least: the paper's sets above hold the others)
        [*FAMILY, "class", "random", "no_pretrain", "logreg", "self_training", "xgboost"],
        # the pseudo-label plot: every class-conditioned method
        [m for m in registry.with_group("how", "where", "published") if registry.METHODS[m].pseudo_labelled],
    ],
    ids=["paper", "family", "pseudo-labelled"],
)
def test_the_methods_that_share_a_figure_stay_apart_for_every_colour_blindness(shared):
    colours = {m: style.colour(m) for m in shared}
    assert len(set(colours.values())) == len(colours)
    pairs = [
        (colours[a], colours[b])
        for a, b in itertools.combinations(shared, 2)
        if not set(shared) & set(FAMILY) or {a, b} & set(FAMILY)
    ]
    for seen_as in (None, *CVD):
        closest = min(_delta_e(a, b, seen_as) for a, b in pairs)
        assert closest > 12, seen_as  # matplotlib's tab10, the old colours: 4.6 (protanopia), 7.3 (deuteranopia)
    # and the class variants have line styles of their own, not only colours
    styles = [style.line_style(m) for m in ("class", "class_least", "class_most", "class_most_published")]
    assert len({str(s) for s in styles}) == len(styles)


def test_win_matrix_map_diverges_for_every_colour_blindness_and_undecided_cells_stand_apart():
    cmap = plt.get_cmap(style.WIN_CMAP)
    for seen_as in (None, *CVD):
        # a row winning 3 of 4 decided datasets against one winning 1 of 4 (RdYlGn: 12 for deuteranopia)
        assert _delta_e(cmap(0.25)[:3], cmap(0.75)[:3], seen_as) > 30, seen_as
    assert _delta_e(style.UNDECIDED_COLOUR, cmap(0.5)[:3]) > 8 and style.UNDECIDED_HATCH
    frac, wins, decided = tables.paper_win_matrix("accuracy", "where")
    ax = tables.plot_win_matrix(frac, wins, decided)
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == int((frac.isna().to_numpy() & ~np.eye(len(frac), dtype=bool)).sum()) == 2
    assert all(_delta_e(p.get_facecolor()[:3], cmap(0.5)[:3]) > 8 for p in hatched)
    plt.close("all")


def test_intervals_are_t_intervals_and_say_so():
    mean, low, high, n = style.interval([1.0, 2.0, 3.0, 4.0])
    half = scipy_stats.t.ppf(0.975, 3) * np.std([1, 2, 3, 4], ddof=1) / 2
    assert (mean, n) == (2.5, 4) and low == pytest.approx(2.5 - half) and high == pytest.approx(2.5 + half)
    assert np.isnan(style.interval([5.0])[1])
    assert style.band_label([8, 8]) == "95 % interval over n = 8 seeds"
    assert style.band_label([4, 8], "datasets") == "95 % interval over n = 4-8 datasets"


def test_hodges_lehmann_interval_is_the_wilcoxon_tests_own():
    d = np.random.default_rng(3).normal(0.4, 1.0, 20)
    estimate, low, high = stats.hodges_lehmann(d)
    assert low < estimate < high

    def p(shift):
        return scipy_stats.wilcoxon(d - shift, method="exact").pvalue

    assert p(low + 1e-6) >= 0.05 and p(high - 1e-6) >= 0.05  # just inside: not rejected
    assert p(low - 1e-6) < 0.05 and p(high + 1e-6) < 0.05  # just outside: rejected
    assert np.isnan(stats.hodges_lehmann([1.0, 2.0, 3.0])[1])  # 3 pairs: no 95 % interval exists


# --------------------------------------------------------------------------- every figure kind


def _near_the_paper(datasets, methods=("no_pretrain", "random", "class", "oracle", "class_least", "class_most")):
    """8 seeds per dataset and method around the paper's accuracy and AUROC (fractions, as results.csv)."""
    rng = np.random.default_rng(0)
    acc, auc = tables.paper_long("accuracy", "how"), tables.paper_long("auroc", "how")
    acc = pd.concat([acc, tables.paper_long("accuracy", "where")]).drop_duplicates(["did", "method"])
    auc = pd.concat([auc, tables.paper_long("auroc", "where")]).drop_duplicates(["did", "method"])
    rows = []
    for name in datasets:
        for m in methods:
            a = acc[(acc.dataset == name) & (acc.method == m)].iloc[0]
            u = auc[(auc.dataset == name) & (auc.method == m)].iloc[0]
            for seed in range(8):
                rows.append(
                    dict(
                        dataset=name, did=int(a.did), seed=seed, method=m,
                        accuracy=a["mean"] / 100 + rng.normal(0, 0.004), auroc=u["mean"] + rng.normal(0, 0.004),
                    )
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_glance_table_sets_our_averages_beside_the_papers_with_a_verdict_from_its_interval():
    """report.md's and notebook 06's first table: per method of the paper, our mean over the shared
    datasets beside the published one, the difference's interval and the word it earns."""
    from tcclib.paper import report

    datasets = ["balance-scale", "breast-w", "mfeat-fourier", "kc2"]
    res = _near_the_paper(datasets)
    table = report.glance_table(res, "accuracy").set_index("method")
    assert list(table.index) == [f"`{m}`" for m in report.GLANCE_METHODS] and (table["datasets"] == 4).all()
    per_dataset = res[res.method == "class"].groupby("dataset")["accuracy"].mean() * 100
    assert table.loc["`class`", "ours: mean"] == f"{per_dataset.mean():.2f}"
    assert set(table.iloc[:, -1]) == {"equivalent"}  # (each dataset within 0.4 points of the paper's)
    better = res.assign(accuracy=res["accuracy"] + np.where(res["method"] == "class", 0.03, 0.0))
    shifted = report.glance_table(better, "accuracy").set_index("method").loc["`class`"]
    assert shifted.iloc[-1] == "differs" and shifted["ours − paper (points), 95 % interval"].startswith("+2.9")
    words = "\n".join(report.glance_lines(better))
    assert words.startswith("## At a glance") and "1 different from it on average (`class`)" in words
    assert report.glance_lines(res.assign(dataset="mine", did=pd.NA)) == []  # (none of the paper's)
    one = report.glance_table(_near_the_paper(["kc2"]), "auroc")
    assert set(one.iloc[:, -1]) == {"one dataset: no interval"}


def test_notebook_06_says_what_its_rank_diagrams_and_range_scatter_show():
    from tcclib.paper import report

    res = _near_the_paper(["balance-scale", "breast-w", "mfeat-fourier", "kc2"])
    lines = report.ranks_lines(res)
    assert len(lines) == 2 and lines[0].startswith("- Accuracy, average ranks over 4 datasets (Friedman ")
    assert "Nemenyi CD = " in lines[0] and "oracle " in lines[0]
    ranges = pd.DataFrame(
        {"dataset": ["a", "b", "c"], "ours": [0.30, 0.50, 0.41], "paper": [0.38, 0.49, np.nan]}
    ).assign(diff=lambda f: f["ours"] - f["paper"])
    [line] = report.corr_range_lines(ranges)
    assert "mean absolute difference to the paper 0.045 over 2 datasets" in line
    largest = "the largest differences (ours against the paper's): a 0.300 against 0.380, b 0.500 against 0.490."
    assert line.endswith(largest)
    assert report.corr_range_lines(ranges.assign(paper=np.nan)) == []


def test_results_figure_sets_the_papers_mean_beside_ours_in_percent():
    res = _near_the_paper(["balance-scale"])
    fig = plots.results_figure(res, "balance-scale")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(registry.sort(res.method.unique()))
    diamonds = [line for line in ax.lines if line.get_marker() == "D"]
    assert len(diamonds) == res.method.nunique()  # the paper's mean ± se of every method
    paper = tables.paper_long("accuracy", "how").set_index(["dataset", "method"])
    assert diamonds[0].get_xdata()[0] == pytest.approx(paper.loc[("balance-scale", "no_pretrain"), "mean"])
    assert ax.get_xlim()[0] > 1  # percent, not a fraction
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "ours: mean, 95 % interval over n = 8 seeds" in texts and "the paper: mean ± se (8 seeds)" in texts
    # a dataset the paper does not report: ours alone
    other = res.assign(dataset="mine", did=pd.NA)
    ax = plots.results_bars(other, "accuracy", "mine")
    assert not [line for line in ax.lines if line.get_marker() == "D"]
    plt.close("all")


def test_no_win_matrix_below_three_datasets_and_the_papers_on_the_same_ones():
    how = ("no_pretrain", "random", "class", "oracle")
    fig, words = plots.figure3(_near_the_paper(["balance-scale", "breast-w"], how))
    assert fig is None and "has 2 finished datasets (it takes at least 3" in words
    three = _near_the_paper(["balance-scale", "breast-w", "mfeat-fourier"], how)
    fig, words = plots.figure3(three)
    matrices = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in matrices] == ["ours (3 datasets)", "the paper, the same 3 datasets (its Table 2)"]
    assert len(fig.axes) == 3  # two matrices, one colour bar
    expected = tables.paper_win_matrix("accuracy", "how", datasets=["balance-scale", "breast-w", "mfeat-fourier"])
    shown = [t.get_text() for t in matrices[1].texts]
    assert shown.count("–\n(0/0)") == int((expected[0].isna().to_numpy() & ~np.eye(4, dtype=bool)).sum())
    plt.close("all")


def test_paper_vs_ours_counts_the_reports_verdicts():
    res = _near_the_paper(["balance-scale", "breast-w", "mfeat-fourier"])
    cells = stats.cell_tests(res)
    summary = stats.cell_summary(cells).set_index("metric")
    for metric in ("accuracy", "auroc"):
        fig = plots.paper_vs_ours(cells, metric)
        s = summary.loc[metric]
        title = fig._suptitle.get_text()
        assert f"{s['equivalent']} equivalent" in title and f"{s['differ, not equivalent']} differ" in title
        assert f"{s['inconclusive']} undecided" in title and f"{s['cells']} cells" in title
        assert len([ax for ax in fig.axes if ax.get_visible()]) == 6  # a panel per method of the paper
        markers = {h.get_marker() for h in fig.legends[0].legend_handles[:3]}
        assert markers == set(style.VERDICT_MARKERS.values()) and len(markers) == 3  # (not by colour alone)
    acc = summary.loc["accuracy"]
    assert f"accuracy: {acc['equivalent']} of {acc['cells']} cells" in plots.paper_vs_ours_words(res)
    assert plots.paper_vs_ours(stats.cell_tests(res.assign(dataset="mine", did=pd.NA)), "accuracy") is None
    plt.close("all")


def test_ablation_figure_says_seeds_epochs_and_draws_no_pretrain_on_a_log_axis():
    rows = []
    for varied, values in (("labeled_fraction", (0.05, 0.1, 0.3)), ("corruption_rate", (0.2, 0.4))):
        for v in values:
            for m in ("no_pretrain", "random", "class"):
                for seed in range(4):
                    rows.append(dict(varied=varied, labeled_fraction=v if varied == "labeled_fraction" else 0.3,
                                     corruption_rate=v if varied == "corruption_rate" else 0.4, method=m, seed=seed,
                                     accuracy=0.9 + 0.01 * seed, auroc=0.95))  # fmt: skip
    fig = plots.ablation_figure(pd.DataFrame(rows), "toy", epochs=100)
    assert "4 seeds, 100 contrastive epochs" in fig._suptitle.get_text()
    top_left = fig.axes[0]
    assert top_left.get_xscale() == "log" and fig.axes[1].get_xscale() == "linear"
    assert "no pretraining" in [t.get_text() for t in top_left.get_legend().get_texts()]
    assert top_left.get_legend().get_title().get_text() == "mean; band: 95 % interval over n = 4 seeds"
    assert min(line.get_ydata().min() for line in top_left.lines) > 80  # percent
    plt.close("all")


def test_figure2_measures_separation_in_each_panel():
    rng = np.random.default_rng(1)
    y_train, y_test = np.repeat([0, 1], 40), np.repeat([0, 1], 20)

    def embedding(gap):
        return {
            "train": rng.normal(0, 1, (80, 6)) + gap * y_train[:, None], "y_train": y_train,
            "test": rng.normal(0, 1, (40, 6)) + gap * y_test[:, None], "y_test": y_test,
        }  # fmt: skip

    emb = {"random": embedding(0.0), "class": embedding(3.0)}
    sep = plots.separability(emb, ["random", "class"]).set_index(["method", "part"])
    assert sep.loc[("class", "test"), "silhouette"] > sep.loc[("random", "test"), "silhouette"] + 0.2
    assert sep.loc[("class", "test"), "probe_accuracy"] > 90 > sep.loc[("random", "test"), "probe_accuracy"]
    fig = plots.pca_3d(emb, ["random", "class"], "test", "t", separation=sep.reset_index())
    assert "silhouette" in fig.axes[1].get_title() and "linear probe" in fig.axes[1].get_title()
    assert all(t.get_fontsize() >= 8 for t in fig.axes[0].get_xticklabels())
    assert "separate more" in plots.separability_words(sep.reset_index())
    plt.close("all")


def test_the_verdict_s_ranks_carry_their_bootstrap_interval_and_pair_each_class_variant():
    res = _near_the_paper(["balance-scale", "breast-w", "mfeat-fourier", "credit-g"], ("class", "random"))
    new = res[res.method == "class"].assign(method="new", accuracy=lambda d: d["accuracy"] + 0.05)
    variant = new.assign(method="new_class", accuracy=lambda d: d["accuracy"] + 0.01)
    both = pd.concat([res, new, variant])
    found = verdict.rank_intervals(both, ["new", "new_class", "class", "random"], "accuracy")
    assert found.loc["new_class", "rank"] == 1 and found.loc["new", "rank"] == 2  # (ahead on every dataset)
    assert ((found["low"] <= found["rank"]) & (found["rank"] <= found["high"])).all()
    assert found.equals(verdict.rank_intervals(both, ["new", "new_class", "class", "random"], "accuracy"))
    assert verdict._bar_style("new_class", ["new", "new_class"]) == (style.colour("new"), "///")
    assert verdict._bar_style("class", ["new"]) == ("0.75", "")
    fig = verdict.rank_figure(both, ["new", "new_class"], ["class", "random"])
    assert len(fig.axes[0].containers) == 2  # the bars and their error bars
    assert "95 % bootstrap interval" in fig.texts[0].get_text() and "Hatched" in fig.texts[0].get_text()
    plt.close(fig)


def test_screen_and_head_differences_have_intervals():
    res = _near_the_paper(["balance-scale", "breast-w", "mfeat-fourier"], ("class",))
    better = res.assign(method="new", accuracy=res["accuracy"] + 0.02)
    d = verdict.differences(pd.concat([res, better]), "new", "class")
    assert d["paired"].all() and np.allclose(d["diff"], 2.0) and (d["low"] <= 2.0 + 1e-9).all()
    fig = verdict.difference_figure(pd.concat([res, better]), "new", "class")
    title = fig.axes[0].get_title()
    assert "ahead on 3, behind on 0" in title and "95 % interval over n = 8" in title
    # head variants: each against logreg, the interval the Wilcoxon test's own
    rows = []
    for i in range(12):
        for variant, shift in (("logreg", 0.0), ("class", 0.01 + 0.002 * i), ("class+probe", 0.0)):
            for seed in range(2):
                rows.append(dict(dataset=f"d{i}", seed=seed, method=variant, accuracy=0.8 + shift + 0.01 * (i % 3),
                                 auroc=0.9))  # fmt: skip
    diffs = heads.reference_differences(pd.DataFrame(rows), "accuracy").set_index("variant")
    assert diffs.loc["class", "low"] > 0 and diffs.loc["class", "p"] < 0.05
    plt.close("all")


def test_learning_curves_and_pseudo_labels_say_what_their_bands_are_in_percent():
    epochs = np.arange(0, 30, 10)
    rows = [(m, s, e) for m in ("random", "class", "class_least") for s in range(3) for e in epochs]
    history = pd.DataFrame(rows, columns=["method", "seed", "epoch"]).assign(
        loss=lambda f: 5 - 0.01 * f.epoch + 0.01 * f.seed
    )
    ax = plots.learning_curves(history, "t")
    assert ax.get_legend().get_title().get_text() == "mean; band: 95 % interval over n = 3 seeds"
    styles = {t.get_label(): t.get_linestyle() for t in ax.lines}
    assert styles["class-conditioned (pseudo)"] == "-" and styles["class + least-correlated"] == "--"
    pseudo = history[history.method != "random"].assign(pseudo_accuracy=0.8).drop(columns="loss")
    ax = plots.pseudo_accuracy(pseudo, "t")
    assert "%" in ax.get_ylabel() and all(np.allclose(line.get_ydata(), 80) for line in ax.lines)
    assert ax.get_legend().get_title().get_text() == "mean; band: 95 % interval over n = 3 seeds"
    plt.close("all")


def test_the_table_s_and_the_figure_s_counts_are_said_apart_with_why():
    # a split effect much larger than the gap: Welch's test over the seeds cannot see a gap that
    # every seed's pair shows
    rows = []
    for d in ("d1", "d2"):
        for seed in range(8):
            for method, gap in (("class", 0.0), ("new", 0.005)):
                rows.append(dict(dataset=d, seed=seed, method=method, accuracy=0.7 + 0.03 * seed + gap, auroc=0.9))
    res = pd.DataFrame(rows)
    assert (verdict.wins(res, "new", ["class"])["class"].iloc[:-1] == "=").all()
    line = verdict.two_counts(res, "new", "class")
    assert "finds 0 wins, 0 losses and 2 ties" in line, line
    assert "ahead on 2, behind on 0 (counted otherwise: d1, d2)." in line, line
    assert "pairs each seed's two runs" in line
    plt.close("all")


def test_a_methods_place_says_a_tie():
    ranks = pd.Series({"a": 2.0, "new": 4.75, "random": 4.75, "b": 5.5})
    assert verdict._place(ranks, "new", "accuracy") == "tied 2nd of 4 on accuracy (average rank 4.75, with random)"
    assert verdict._place(ranks, "b", "auroc") == "4th of 4 on auroc (average rank 5.50)"


def test_the_verdict_says_what_stays_after_holm_over_every_test_of_its_page():
    # new ahead of "far" on every dataset (p about 2e-6 over 20), level with "near": Holm over the
    # page's 4 tests (2 compared x 2 metrics) keeps the first, and the table carries both p's
    g = np.random.default_rng(0)
    rows = []
    for d in range(20):
        for seed in range(2):
            for method, gap in (("new", 0.05), ("near", 0.05 + g.normal(0, 0.01)), ("far", 0.0)):
                rows.append(dict(dataset=f"d{d}", seed=seed, method=method, accuracy=0.7 + gap, auroc=0.8 + gap))
    res = pd.DataFrame(rows)
    adjusted = verdict.holm_over_page(res, ["new"], ["near", "far"])
    assert len(adjusted) == 4 and adjusted["accuracy", "new", "far"] < 0.05
    table = verdict.paired(res, ["new"], ["near", "far"], "accuracy", adjusted)
    assert list(table.columns[-2:]) == ["p", "p (Holm)"] and (table["p (Holm)"] >= table["p"]).all()
    [line] = verdict.sentences(res, ["new"], ["near", "far"])
    assert line.endswith("over the page's 4 tests, it stays significantly ahead of far on accuracy and auroc."), line
    shown = verdict.shown(table, "accuracy").splitlines()  # (notebook 09's tables: words, units, no row numbers)
    assert shown[0] == (
        "| method | against | datasets | datasets above | datasets below | median difference (points) | Wilcoxon p "
        "| p (Holm) |"
    )
    assert all(line.split("|")[6].strip().count(".") <= 1 for line in shown[2:])
    assert all(len(line.split("|")[6].strip().split(".")[1]) == 2 for line in shown[2:])
    summary = verdict.shown(verdict.summary(res, ["new"], ["near", "far"])).splitlines()
    assert summary[0].startswith("| method | accuracy: average rank | mean accuracy (%) | AUROC: average rank |")
    assert all(len(line.split("|")[2].strip().split(".")[1]) == 2 for line in summary[2:])
    wins = verdict.shown(verdict.wins(res, "new", ["near", "far"]), "accuracy", index=True).splitlines()
    assert wins[0] == "| dataset | near | far |" and "| d0 |" in wins[2]
