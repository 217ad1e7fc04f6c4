"""Tables, win matrices and the comparison with the published numbers."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from tcclib import tables  # noqa: E402


def _results(spec):
    """spec: {dataset: {method: [values...]}} -> tidy results (accuracy as fraction)."""
    rows = []
    for d, (did, per) in spec.items():
        for m, vals in per.items():
            for s, v in enumerate(vals):
                rows.append(dict(dataset=d, did=did, seed=s, method=m, accuracy=v, auroc=v))
    return pd.DataFrame(rows)


def test_standard_error_is_the_papers_definition():
    vals = [0.90, 0.92, 0.95, 0.91]
    s = tables.summarize(_results({"d": (11, {"a": vals})}), "accuracy")
    assert s["mean"].iloc[0] == pytest.approx(92.0)
    assert s["se"].iloc[0] == pytest.approx(np.std(np.array(vals) * 100, ddof=0) / 2)
    s2 = tables.summarize(_results({"d": (11, {"a": vals})}), "auroc")
    assert s2["mean"].iloc[0] == pytest.approx(0.92)


def test_win_matrix_counts_significant_wins_only():
    rs = np.random.RandomState(0)
    good = lambda: list(0.90 + 0.005 * rs.randn(8))  # noqa: E731
    bad = lambda: list(0.80 + 0.005 * rs.randn(8))  # noqa: E731
    same = list(0.85 + 0.005 * rs.randn(8))
    spec = {f"d{i}": (i, {"A": good(), "B": bad()}) for i in range(3)}
    spec["tie"] = (99, {"A": same, "B": list(same)})
    spec["flip"] = (98, {"A": bad(), "B": good()})
    frac, wins, decided = tables.win_matrix(_results(spec), "accuracy", ["A", "B"])
    assert wins.loc["A", "B"] == 3 and wins.loc["B", "A"] == 1
    assert decided.loc["A", "B"] == 4
    assert frac.loc["A", "B"] == pytest.approx(0.75) and frac.loc["B", "A"] == pytest.approx(0.25)
    assert np.isnan(frac.loc["A", "A"])


def test_paper_win_matrix_reproduces_figure_3():
    frac, wins, decided = tables.paper_win_matrix("accuracy", "how")
    expect = {("class", "random"): (5, 6), ("no_pretrain", "random"): (5, 12),
              ("random", "oracle"): (0, 15), ("class", "oracle"): (0, 12),
              ("no_pretrain", "oracle"): (1, 15), ("no_pretrain", "class"): (4, 14),
              ("random", "class"): (1, 6), ("oracle", "random"): (15, 15)}
    for (i, j), (w, d) in expect.items():
        assert (wins.loc[i, j], decided.loc[i, j]) == (w, d), (i, j)
    assert frac.loc["class", "random"] == pytest.approx(5 / 6)


def test_compare_with_paper_flags_far_cells():
    paper = tables.paper_long("accuracy", "how")
    row = paper[(paper.did == 37) & (paper.method == "class")].iloc[0]
    sd = row.se * np.sqrt(8) * np.sqrt(8 / 7)
    near = list((row["mean"] + sd * np.array([-1.5, -1, -0.5, 0, 0, 0.5, 1, 1.5]) / 1.2) / 100)
    far = [v - 0.10 for v in near]
    res = pd.concat([_results({"diabetes": (37, {"class": near})}),
                     _results({"diabetes": (37, {"random": far})})])
    cmp = tables.compare_with_paper(res, "accuracy", "how").set_index("method")
    assert bool(cmp.loc["class", "inside"]) and not bool(cmp.loc["random", "inside"])
    assert cmp.loc["class", "mean"] == pytest.approx(row["mean"], abs=1e-6)
    summ = tables.agreement_summary(cmp.reset_index()).set_index("method")
    assert summ.loc["all", "inside"] == 1 and summ.loc["all", "datasets"] == 2


@pytest.mark.parametrize("metric,kind", [("acc", "how"), ("accuracy", "when")])
def test_bad_table_names_are_clear_errors(metric, kind):
    with pytest.raises(ValueError, match="must be one of"):
        tables.load_paper_table(metric, kind)


def test_paper_tables_ship_with_the_package():
    for metric in ("accuracy", "auroc"):
        for kind in ("how", "where"):
            t = tables.load_paper_table(metric, kind)
            assert len(t) == 30
    assert set(tables.paper_long("accuracy", "where").method) == {"class", "class_least", "class_most"}
    cr = tables.paper_corr_range()
    assert cr.loc[cr.did == 458, "dataset"].iloc[0] == "analcatdata_authorship"  # registry spelling


def test_markdown_and_paper_style_table():
    res = _results({"balance-scale": (11, {"A": [0.9, 0.91], "B": [0.8, 0.82]})})
    t = tables.paper_style_table(res, "accuracy", ["A", "B"])
    assert t.loc["balance-scale", "A"] == "**90.50 ± 0.35**"
    assert t.loc["balance-scale", "B"] == "81.00 ± 0.71"
    assert t.loc["average rank", "A"] == "1.00"
    md = tables.to_markdown(t)
    lines = md.splitlines()
    assert lines[0] == "| dataset | A | B |" and lines[1] == "| --- | --- | --- |"
    assert "| balance-scale | **90.50 ± 0.35** | 81.00 ± 0.71 |" in lines


def test_plot_win_matrix_labels():
    frac, wins, decided = tables.paper_win_matrix()
    ax = tables.plot_win_matrix(frac, wins, decided, title="paper")
    assert [t.get_text() for t in ax.get_xticklabels()] == list(frac.columns)
    texts = [t.get_text() for t in ax.texts]
    assert "83.3%\n(5/6)" in texts


def test_report_states_claims_and_lists_unfinished_datasets(tmp_path):
    from tcclib import report, store

    rs = np.random.RandomState(1)
    spec = {}
    for name, did in (("diabetes", 37), ("credit-g", 31), ("balance-scale", 11)):
        spec[name] = (did, {"random": list(0.70 + 0.005 * rs.randn(8)),
                            "class": list(0.75 + 0.005 * rs.randn(8)),
                            "no_pretrain": list(0.70 + 0.005 * rs.randn(8))})
    res = _results(spec)
    for name, g in res.groupby("dataset"):
        store.write_csv(g, tmp_path / name / "results.csv")
        store.write_json({}, tmp_path / name / "_DONE.json")
    store.write_json({"error": "boom"}, tmp_path / "kc2" / "_FAILED.json")
    store.write_json(["diabetes", "credit-g", "balance-scale", "kc2", "pc1"], tmp_path / "datasets.json")
    c = report.claims(res).set_index("claim")
    row = c.loc["class-conditioned corruption beats conventional (random) corruption"]
    assert row.ours == "100.0% (3/3)" and row.verdict == "supported" and row.paper == "83.3% (5/6)"
    text = report.build_report(tmp_path)
    assert "Datasets finished: **3**" in text
    assert "| kc2 | failed | boom |" in text and "| pc1 | pending | not run yet |" in text
    assert "supported" in text and "accuracy, how to corrupt" in text
