"""Tables, win matrices and the comparison with the published numbers."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from tcclib.paper import tables


def _results(spec):
    """spec: {dataset: (did, {method: [values...]})} -> tidy results (accuracy as a fraction)."""
    rows = []
    for d, (did, per) in spec.items():
        for m, vals in per.items():
            for s, v in enumerate(vals):
                rows.append(dict(dataset=d, did=did, seed=s, method=m, accuracy=v, auroc=v))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- summaries


def test_standard_error_is_the_papers_definition():
    vals = [0.90, 0.92, 0.95, 0.91]  # mean 0.92; deviations -2, 0, 3, -1 (percent)
    s = tables.summarize(_results({"d": (11, {"a": vals})}), "accuracy").iloc[0]
    assert s["mean"] == pytest.approx(92.0)
    assert s["se"] == pytest.approx(np.sqrt(14 / 4) / 2)  # population std / sqrt(n), by hand
    assert s["sd"] == pytest.approx(np.sqrt(14 / 3))  # sample std
    assert s["n"] == 4 and s["did"] == 11
    a = tables.summarize(_results({"d": (11, {"a": vals})}), "auroc").iloc[0]
    assert a["mean"] == pytest.approx(0.92) and a["se"] == pytest.approx(np.sqrt(14 / 4) / 200)


def test_summarize_filters_methods_and_drops_missing_values():
    res = _results({"d": (11, {"a": [0.9, np.nan, 0.7], "b": [0.5, 0.5]})})
    s = tables.summarize(res, "accuracy", methods=["a"])
    assert list(s["method"]) == ["a"] and s["n"].iloc[0] == 2 and s["mean"].iloc[0] == pytest.approx(80.0)


def test_paper_style_table_order_bold_and_summary_rows():
    res = _results(
        {
            "credit-g": (31, {"A": [0.70, 0.72], "B": [0.75, 0.75]}),
            "balance-scale": (11, {"A": [0.9, 0.91], "B": [0.8, 0.82]}),
        }
    )
    t = tables.paper_style_table(res, "accuracy", ["A", "B", "missing"])
    assert list(t.columns) == ["A", "B"]
    assert list(t.index) == ["balance-scale", "credit-g", "mean", "average rank"]  # paper order
    assert t.loc["balance-scale", "A"] == "**90.50 ± 0.35**"
    assert t.loc["balance-scale", "B"] == "81.00 ± 0.71"
    assert t.loc["credit-g", "B"] == "**75.00 ± 0.00**"
    assert t.loc["mean", "A"] == "80.75" and t.loc["average rank", "A"] == "1.50"
    a = tables.paper_style_table(res, "auroc", ["A", "B"])
    assert a.loc["balance-scale", "A"] == "**0.905 ± 0.004**"  # se = 0.005 / sqrt(2)


# --------------------------------------------------------------------------- win matrices


def test_win_matrix_three_wins_and_a_tie():
    rs = np.random.RandomState(0)
    same = list(0.85 + 0.005 * rs.randn(8))
    spec = {
        f"d{i}": (i, {"A": list(0.90 + 0.005 * rs.randn(8)), "B": list(0.80 + 0.005 * rs.randn(8))}) for i in range(3)
    }
    spec["tie"] = (99, {"A": same, "B": list(same)})
    frac, wins, decided = tables.win_matrix(_results(spec), "accuracy", ["A", "B"])
    assert wins.loc["A", "B"] == 3 and wins.loc["B", "A"] == 0
    assert decided.loc["A", "B"] == 3 and decided.loc["B", "A"] == 3
    assert frac.loc["A", "B"] == 1.0 and frac.loc["B", "A"] == 0.0
    assert np.isnan(frac.loc["A", "A"]) and wins.loc["A", "A"] == 0


def test_win_matrix_counts_both_directions():
    rs = np.random.RandomState(0)
    good = lambda: list(0.90 + 0.005 * rs.randn(8))  # noqa: E731
    bad = lambda: list(0.80 + 0.005 * rs.randn(8))  # noqa: E731
    spec = {f"d{i}": (i, {"A": good(), "B": bad(), "C": good()}) for i in range(3)}
    spec["flip"] = (98, {"A": bad(), "B": good()})
    frac, wins, decided = tables.win_matrix(_results(spec), "accuracy", ["A", "B", "C"])
    assert wins.loc["A", "B"] == 3 and wins.loc["B", "A"] == 1 and decided.loc["A", "B"] == 4
    assert frac.loc["A", "B"] == pytest.approx(0.75) and frac.loc["B", "A"] == pytest.approx(0.25)
    assert wins.loc["C", "B"] == 3 and decided.loc["B", "C"] == 3
    assert pd.isna(frac.loc["A", "C"]) or decided.loc["A", "C"] <= 1  # same distribution: rarely decided


def test_win_matrix_zero_variance_and_single_seed():
    spec = {
        "const_equal": (1, {"A": [0.9] * 8, "B": [0.9] * 8}),
        "const_diff": (2, {"A": [0.9] * 8, "B": [0.8] * 8}),
        "one_seed": (3, {"A": [0.99], "B": [0.1]}),
        "one_method": (4, {"A": [0.9, 0.8]}),
    }
    with np.errstate(all="raise"):
        frac, wins, decided = tables.win_matrix(_results(spec), "auroc", ["A", "B"])
    assert wins.loc["A", "B"] == 1 and wins.loc["B", "A"] == 0 and decided.loc["A", "B"] == 1


def test_win_matrix_matches_scipy_on_values():
    from scipy import stats

    rs = np.random.RandomState(3)
    a, b = 0.80 + 0.02 * rs.randn(8), 0.79 + 0.02 * rs.randn(8)
    p = stats.ttest_ind(a * 100, b * 100, equal_var=False, alternative="greater").pvalue
    alpha = float(p) * 1.001  # just above p: a win; just below: none
    _, w_hi, _ = tables.win_matrix(_results({"d": (1, {"A": list(a), "B": list(b)})}), "accuracy", ["A", "B"], alpha)
    _, w_lo, _ = tables.win_matrix(
        _results({"d": (1, {"A": list(a), "B": list(b)})}), "accuracy", ["A", "B"], float(p) * 0.999
    )
    assert w_hi.loc["A", "B"] == 1 and w_lo.loc["A", "B"] == 0


FIGURE_3 = {  # (row, column): (wins, decided), accuracy, from the paper's Figure 3
    ("no_pretrain", "random"): (5, 12),
    ("no_pretrain", "class"): (4, 14),
    ("no_pretrain", "oracle"): (1, 15),
    ("random", "no_pretrain"): (7, 12),
    ("random", "class"): (1, 6),
    ("random", "oracle"): (0, 15),
    ("class", "no_pretrain"): (10, 14),
    ("class", "random"): (5, 6),
    ("class", "oracle"): (0, 12),
    ("oracle", "no_pretrain"): (14, 15),
    ("oracle", "random"): (15, 15),
    ("oracle", "class"): (12, 12),
}
FIGURE_3_PCT = {
    ("no_pretrain", "random"): 41.7,
    ("no_pretrain", "class"): 28.6,
    ("no_pretrain", "oracle"): 6.7,
    ("random", "no_pretrain"): 58.3,
    ("class", "no_pretrain"): 71.4,
    ("oracle", "no_pretrain"): 93.3,
    ("class", "random"): 83.3,
    ("random", "class"): 16.7,
}


def test_paper_win_matrix_reproduces_figure_3():
    frac, wins, decided = tables.paper_win_matrix("accuracy", "how")
    assert list(frac.index) == list(tables.HOW_METHODS) == list(frac.columns)
    for (i, j), (w, d) in FIGURE_3.items():
        assert (wins.loc[i, j], decided.loc[i, j]) == (w, d), (i, j)
    for (i, j), pct in FIGURE_3_PCT.items():
        assert round(100 * frac.loc[i, j], 1) == pct, (i, j)
    assert frac.loc["random", "oracle"] == 0.0 and frac.loc["oracle", "class"] == 1.0


def test_paper_win_matrix_other_tables_run():
    for metric in ("accuracy", "auroc"):
        frac, wins, decided = tables.paper_win_matrix(metric, "where")
        assert list(frac.index) == list(tables.WHERE_METHODS)
        assert (decided.to_numpy() == decided.to_numpy().T).all()
    _, wins, _ = tables.paper_win_matrix("auroc", "how")
    assert wins.loc["oracle", "random"] > wins.loc["random", "oracle"]


# --------------------------------------------------------------------------- comparison


def _near_far():
    paper = tables.paper_long("accuracy", "how")
    row = paper[(paper.did == 37) & (paper.method == "class")].iloc[0]
    sd = row.se * np.sqrt(8) * np.sqrt(8 / 7)
    near = list((row["mean"] + sd * np.array([-1.5, -1, -0.5, 0, 0, 0.5, 1, 1.5]) / 1.2) / 100)
    far = [v - 0.10 for v in near]
    return row, near, far


def test_compare_with_paper_flags_far_cells():
    row, near, far = _near_far()
    res = pd.concat([_results({"diabetes": (37, {"class": near})}), _results({"diabetes": (37, {"random": far})})])
    cmp = tables.compare_with_paper(res, "accuracy", "how").set_index("method")
    assert bool(cmp.loc["class", "inside"]) and not bool(cmp.loc["random", "inside"])
    assert cmp.loc["class", "mean"] == pytest.approx(row["mean"], abs=1e-6)
    assert cmp.loc["class", "paper_mean"] == row["mean"] and cmp.loc["class", "paper_se"] == row.se
    assert cmp.loc["random", "diff"] == pytest.approx(cmp.loc["random", "mean"] - cmp.loc["random", "paper_mean"])
    # the interval is the t-interval with the sample std
    from scipy import stats

    v = np.array(near) * 100
    half = stats.t.ppf(0.975, 7) * np.std(v, ddof=1) / np.sqrt(8)
    assert cmp.loc["class", "ci_high"] - cmp.loc["class", "mean"] == pytest.approx(half)
    summ = tables.agreement_summary(cmp.reset_index()).set_index("method")
    assert summ.loc["all", "inside"] == 1 and summ.loc["all", "outside"] == 1 and summ.loc["all", "datasets"] == 2
    assert summ.loc["class", "share inside"] == "100%" and summ.loc["random", "inside"] == 0


def test_compare_with_paper_matches_by_name_and_maps_where_methods():
    _, near, _ = _near_far()
    res = _results(
        {
            "Analcatdata-Authorship": (
                pd.NA,
                {
                    "class_least": [0.9963] * 4 + [0.9962, 0.9964] * 2,
                    "class_most_published": [0.99] * 8,
                    "xgboost": [0.99] * 8,
                },
            )
        }
    )
    cmp = tables.compare_with_paper(res, "accuracy", "where").set_index("method")
    assert set(cmp.index) == {"class_least", "class_most_published"}
    assert (cmp.did == 458).all()
    assert cmp.loc["class_most_published", "paper_mean"] == 99.63
    assert bool(cmp.loc["class_least", "inside"]) and not bool(cmp.loc["class_most_published", "inside"])
    empty = tables.compare_with_paper(_results({"unknown": (pd.NA, {"class": near})}), "accuracy", "how")
    assert empty.empty and "inside" in empty.columns
    assert tables.agreement_summary(empty).empty


# --------------------------------------------------------------------------- published tables


@pytest.mark.parametrize("metric,kind", [("acc", "how"), ("accuracy", "when"), ("AUROC", "where")])
def test_bad_table_names_are_clear_errors(metric, kind):
    with pytest.raises(ValueError, match="must be one of"):
        tables.load_paper_table(metric, kind)


def test_bad_metric_elsewhere_is_a_clear_error():
    with pytest.raises(ValueError, match="metric must be one of"):
        tables.summarize(_results({"d": (1, {"a": [0.5]})}), "f1")
    with pytest.raises(ValueError, match="kind must be one of"):
        tables.paper_win_matrix("accuracy", "why")


def test_paper_tables_ship_with_the_package():
    from importlib import resources

    for metric in ("accuracy", "auroc"):
        for kind in ("how", "where"):
            t = tables.load_paper_table(metric, kind)
            assert len(t) == 30 and t.did.is_unique
            assert t.filter(like="_mean").notna().all().all()
    assert resources.files("tcclib.paper").joinpath("published", "README.md").is_file()
    how = tables.load_paper_table("accuracy", "how").set_index("did")
    assert how.loc[31, "class_mean"] == 72.88 and how.loc[31, "class_se"] == 1.35  # credit-g, Table 2
    long = tables.paper_long("accuracy", "where")
    assert set(long.method) == {"class", "class_least", "class_most"} and len(long) == 90
    assert list(long.columns) == ["dataset", "did", "method", "mean", "se"]
    # Table 4's random_features column is Table 2's class column
    assert (long[long.method == "class"]["mean"].to_numpy() == how["class_mean"].to_numpy()).all()
    cr = tables.paper_corr_range()
    assert cr.loc[cr.did == 458, "dataset"].iloc[0] == "analcatdata_authorship"  # registry spelling
    assert cr.loc[cr.did == 18, "corr_range"].iloc[0] == 0.72


# --------------------------------------------------------------------------- rendering


def test_markdown_renderer():
    df = pd.DataFrame(
        {"a": [1, 2], "b": [0.123456, np.nan], "c": ["x|y", "two\nlines"], "d": [True, pd.NA]},
        index=pd.Index(["r1", "r2"], name="row"),
    )
    assert tables.to_markdown(df).splitlines() == [
        "| row | a | b | c | d |",
        "| --- | ---: | ---: | --- | --- |",  # numbers right-aligned
        "| r1 | 1 | 0.1235 | x\\|y | True |",
        "| r2 | 2 |  | two<br>lines |  |",
    ]
    assert tables.to_markdown(df, index=False).splitlines()[0] == "| a | b | c | d |"
    plain = pd.DataFrame({"a": [1]})
    assert tables.to_markdown(plain) == "| a |\n| ---: |\n| 1 |"


def test_markdown_right_aligns_the_columns_of_numbers_only():
    df = pd.DataFrame(
        {
            "method": ["class", "random", "oracle"],
            "accuracy": ["**96.2 ± 0.8**", "95.4 ± 0.6", "–"],
            "wins": ["90.0% (9/10)", "– (0/0)", "66.7% (6/9)"],
            "p": ["< 0.001", "5.6e-05", "0.26"],
            "counts": ["3 / 1 / 26", "0 / 0 / 30", ""],
            "ratio": ["1.2 (x1.4)", "x1.33", "12 s"],
            "verdict": ["supported", "not shown", "0.5"],
            "dataset": ["pc1", "kc2", "pc3"],
            "none": ["–", "", "–"],
        }
    )
    rule = tables.to_markdown(df, index=False).splitlines()[1]
    assert rule == "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"


def test_markdown_fixed_decimals_line_a_column_up():
    df = pd.DataFrame({"rank": [5.3, 8.0, 4.7833], "mean": [79.5, 0.86, np.nan], "n": [30, 30, 29]})
    # 4 significant digits by default: a column of ranks reads 5.3, 8, 4.783
    assert [line.split(" | ")[0] for line in tables.to_markdown(df, index=False).splitlines()[2:]] == [
        "| 5.3",
        "| 8",
        "| 4.783",
    ]
    named = tables.to_markdown(df, index=False, decimals={"rank": 2}).splitlines()[2:]
    assert named == ["| 5.30 | 79.5 | 30 |", "| 8.00 | 0.86 | 30 |", "| 4.78 |  | 29 |"]
    every = tables.to_markdown(df, index=False, decimals=1).splitlines()[2:]
    assert every == ["| 5.3 | 79.5 | 30 |", "| 8.0 | 0.9 | 30 |", "| 4.8 |  | 29 |"]  # integers stay integers


def test_agreement_summary_says_the_mean_difference_in_the_metrics_decimals():
    cmp = pd.DataFrame(
        {"method": ["A", "A"], "inside": [True, False], "diff": [0.1234, 0.2]},
    )
    assert tables.agreement_summary(cmp, separate=(), metric="accuracy")["mean diff"].tolist() == ["+0.16", "+0.16"]
    assert tables.agreement_summary(cmp, separate=(), metric="auroc")["mean diff"].tolist() == ["+0.162", "+0.162"]


def test_the_markdown_tables_rank_ours_among_the_papers_methods_beside_the_papers_ranks():
    """Tables 2-5's footer: our average rank among the paper's methods alone (comparable with the
    paper's, which ranks its 4), then among all our columns (baselines too); the means at one
    precision on both sides."""
    res = _results(
        {
            "credit-g": (31, {"no_pretrain": [0.70, 0.72], "random": [0.74, 0.74], "logreg": [0.80, 0.80]}),
            "balance-scale": (11, {"no_pretrain": [0.9, 0.91], "random": [0.8, 0.82], "logreg": [0.95, 0.95]}),
        }
    )
    t = tables.markdown_table(res, "accuracy", "how", methods=["no_pretrain", "random", "logreg"])
    assert list(t.index[-3:]) == [
        "mean over datasets",
        "average rank among the paper's 2 methods",
        "average rank among all 3 of ours",
    ]
    among_paper, among_all = t.iloc[-2], t.iloc[-1]
    assert among_paper["no_pretrain: ours"] == "1.50" and among_paper["random: ours"] == "1.50"
    assert among_all["no_pretrain: ours"] == "2.50" and among_all["logreg"] == "1.00"
    assert among_all["no_pretrain: paper"] == "" and among_paper["logreg"] == ""
    assert all(len(v.split(".")[1]) == 2 for v in t.loc["mean over datasets"] if v not in ("", "–"))


def test_markdown_of_paper_style_table():
    res = _results({"balance-scale": (11, {"A": [0.9, 0.91], "B": [0.8, 0.82]})})
    lines = tables.to_markdown(tables.paper_style_table(res, "accuracy", ["A", "B"])).splitlines()
    assert lines[0] == "| dataset | A | B |" and lines[1] == "| --- | ---: | ---: |"
    assert "| balance-scale | **90.50 ± 0.35** | 81.00 ± 0.71 |" in lines
    assert lines[-1] == "| average rank | 1.00 | 2.00 |"


def test_plot_win_matrix_labels_and_undecided_cells():
    frac, wins, decided = tables.paper_win_matrix()
    ax = tables.plot_win_matrix(frac, wins, decided, title="paper")
    assert [t.get_text() for t in ax.get_xticklabels()] == list(frac.columns)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(frac.index)
    texts = [t.get_text() for t in ax.texts]
    assert "83.3%\n(5/6)" in texts and "100%\n(15/15)" in texts and "0%\n(0/15)" in texts
    assert len(texts) == 12 and ax.get_title() == "paper" and "row beats column" in ax.get_ylabel()
    plt.close(ax.figure)
    # undecided pairs (NaN off the diagonal) say so; the diagonal stays blank
    frac, wins, decided = tables.paper_win_matrix("accuracy", "where")
    fig, ax = plt.subplots()
    assert tables.plot_win_matrix(frac, wins, decided, ax=ax) is ax
    texts = [t.get_text() for t in ax.texts]
    assert len([t for t in texts if t and t != "–\n(0/0)"]) == int(frac.notna().to_numpy().sum()) == 4
    assert texts.count("–\n(0/0)") == 6 - 4
    plt.close(fig)
    # a cell that one or two datasets decide is pale (a white veil) and keyed in the figure's legend
    few = [(r, c) for r in frac.index for c in frac.columns if 0 < decided.loc[r, c] < 3]
    assert few, "the paper's where-matrix has cells decided by one or two datasets"
    fig, ax = plt.subplots()
    tables.plot_win_matrix(frac, wins, decided, ax=ax)
    veils = [p for p in ax.patches if p.get_facecolor()[:3] == (1.0, 1.0, 1.0)]
    assert len(veils) == len(few)
    plt.close(fig)
    from tcclib.paper import plots

    figure = plots.win_matrices([(frac, wins, decided, "where")])
    keys = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
    assert any(k.startswith("pale: fewer than 3 datasets decide the cell") for k in keys)
    plt.close(figure)


# --------------------------------------------------------------------------- the report's use


def test_report_states_claims_and_lists_unfinished_datasets(tmp_path):
    from tcclib.artifacts import store
    from tcclib.paper import report

    rs = np.random.RandomState(1)
    spec = {}
    for name, did in (("diabetes", 37), ("credit-g", 31), ("balance-scale", 11)):
        spec[name] = (
            did,
            {
                "random": list(0.70 + 0.005 * rs.randn(8)),
                "class": list(0.75 + 0.005 * rs.randn(8)),
                "no_pretrain": list(0.70 + 0.005 * rs.randn(8)),
            },
        )
    res = _results(spec)
    for name, g in res.groupby("dataset"):
        store.write_csv(g, tmp_path / name / "results.csv")
        store.write_json({}, tmp_path / name / "_DONE.json")
    store.write_json({"error": "boom"}, tmp_path / "kc2" / "_FAILED.json")
    store.write_json(["diabetes", "credit-g", "balance-scale", "kc2", "pc1", "wdbc"], tmp_path / "datasets.json")
    (tmp_path / "wdbc").mkdir()  # started, no marker: interrupted
    c = report.claims(res).set_index("claim")
    row = c.loc["class-conditioned corruption beats conventional (random) corruption"]
    # 3 of 3 significant wins: a share of 100 %, but a sign test cannot tell it from a coin (p = 1/8)
    assert row.ours == "100.0% (3/3)" and row.verdict == "not shown" and row.paper == "83.3% (5/6)"
    assert row["share rule"] == "supported" and row["ours: sign p"] == "0.125"
    # the paper's figure on the same three datasets: class vs random is decided on none of them
    # in Table 2 (diabetes, credit-g, balance-scale), and oracle is absent from our results
    assert row["paper, same datasets"] == "– (0/0)"
    assert "true-label conditioning (oracle) beats random" not in c.index
    undecided = c.loc["contrastive pretraining (random) beats no pretraining"]
    assert undecided.verdict == "not shown (no significant dataset)"
    words = "\n".join(report.plain_summary(res))
    assert (
        "**3 of 30**" in words
        and "**not shown** (p ≥ 0.05: the wins cannot be told from a coin): class-conditioned corruption" in words
    )
    assert "**not shown (no significant dataset)**: contrastive pretraining (random)" in words
    assert "(supported → not shown)" in words  # the rule change is stated
    text = report.build_report(tmp_path)
    assert "Datasets finished: **3**" in text
    assert "Ours rest on the 3 finished dataset(s) only" in text and "Ours rest on all" not in text
    assert "| kc2 | failed | boom |" in text and "| pc1 | pending | not started yet" in text
    assert "| wdbc | incomplete | started but not finished" in text
    assert "not shown" in text and "accuracy, how to corrupt" in text
    assert text.index("## In plain words") < text.index("## The paper's claims")


def test_where_claims_and_paper_figure_on_a_subset():
    from tcclib.paper import report

    # Table 4 has exactly one significant accuracy difference for each correlation method (class
    # beats it); on a subset without that dataset the paper's figure is undecided
    _, wins, decided = tables.paper_win_matrix("accuracy", "where")
    assert int(decided.loc["class_least", "class"]) == 1 and int(wins.loc["class", "class_least"]) == 1
    _, _, dec3 = tables.paper_win_matrix("accuracy", "where", datasets=["diabetes", 31, "Balance-Scale"])
    assert int(dec3.to_numpy().sum()) == 0
    _, wins_how, _ = tables.paper_win_matrix("accuracy", "how", datasets=[])
    assert int(wins_how.to_numpy().sum()) == 0
    rs = np.random.RandomState(2)
    spec = {
        "diabetes": (
            37,
            {
                "class": list(0.70 + 0.005 * rs.randn(8)),
                "class_least": list(0.80 + 0.005 * rs.randn(8)),
                "class_most": list(0.70 + 0.005 * rs.randn(8)),
            },
        )
    }
    c = report.claims(_results(spec)).set_index("claim")
    least = c.loc["choosing the least-correlated features is no better than uniform choice"]
    # one significant win of least over uniform: a sign test cannot refute the claim on one dataset
    assert least.ours == "100.0% (1/1)" and least.verdict == "not refuted" and least.paper == "0.0% (0/1)"
    assert least["share rule"] == "not supported" and least["ours: sign p"] == "0.500"
    most = c.loc["choosing the most-correlated features is no better than uniform choice"]
    assert most.verdict == "not refuted (no significant dataset)"


def test_a_dataset_the_paper_does_not_report_is_named_not_counted(tmp_path):
    from tcclib.paper import report

    rs = np.random.RandomState(0)
    res = _results({"breast_cancer": (None, {m: list(0.95 + 0.01 * rs.randn(8)) for m in ("random", "class")})})
    words = "\n".join(report.plain_summary(res))
    assert "**0 of 30** of the paper's datasets and 1 the paper does not report (breast_cancer)" in words
    assert "rests on this one dataset, too few to show a claim" in words
    assert tables.write_paper_comparisons(res, tmp_path) == [
        "The paper reports none of this set's datasets (breast_cancer): nothing to set beside it. By name, "
        "that is; breast_cancer (the paper's `wdbc` row is the same table): notebook 03 sets it beside ours."
    ]
    both = pd.concat([res, _results({"diabetes": (37, {"random": [0.7] * 8})})])
    assert "**1 of 30** of the paper's datasets and 1 the paper does not report" in report.plain_summary(both)[0]


def test_pseudo_label_plot_of_one_refresh_draws_markers_not_a_line():
    from tcclib.paper import plots

    one = pd.DataFrame(
        {"seed": [1, 2, 1, 2], "method": ["class", "class", "class_most", "class_most"], "epoch": [0] * 4}
    ).assign(pseudo_accuracy=[0.8, 0.82, 0.79, 0.81])
    ax = plots.pseudo_accuracy(one, "bc: pseudo-labels")
    assert "one refresh, at epoch 0" in ax.get_title()
    assert not ax.lines and sum(len(c.get_offsets()) for c in ax.collections) == 4  # a marker per seed and method
    plt.close(ax.figure)
