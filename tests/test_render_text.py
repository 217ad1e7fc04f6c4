"""Results said in words and shown as what they are (issue 58): the notebooks' Markdown outputs and
their plain-text twins, the sentences of :mod:`tcclib.paper.words`, the ``.md`` tables next to the
paper's, the one-line status, 03's reproduction check, short injected parameters, collapsed
defaults, and ``tools/render_text_check.py`` over small notebooks and over the committed renders."""

import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import scripts
from IPython.core.formatters import DisplayFormatter
from nbval.plugin import get_sanitize_patterns

from tcclib.artifacts import store
from tcclib.method.config import Config
from tcclib.paper import report, tables, words
from tcclib.running import nbparams, notebooks
from tcclib.running import params as param_files
from tcclib.util.markdown import Markdown

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ROOT / "outputs"


def _checker():
    return scripts.load("tools/render_text_check.py")


def _stored_config(folder: Path) -> Config:
    recorded = json.loads((folder / "config.json").read_text())
    return Config.from_dict(store.settings_of(recorded))  # (the settings, not the code and data records)


# --------------------------------------------------------------------------- shown as Markdown


def test_markdown_is_shown_rendered_with_its_text_as_the_plain_twin():
    text = "**On diabetes**, `class` scores 74.9 %.\n\n| a | b |\n| --- | --- |\n| 1 | 2 |"
    data, _ = DisplayFormatter().format(Markdown(text))  # what a kernel sends for the cell's output
    assert data["text/markdown"] == text and data["text/plain"] == text
    assert Markdown("a", "", "b\n").text == "a\n\nb"  # parts joined with a blank line, empty ones left out


# --------------------------------------------------------------------------- status in one line


def test_the_status_of_a_set_is_one_line(tmp_path):
    (tmp_path / "datasets.json").write_text(json.dumps(["a", "b", "c", "d"]))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "_DONE.json").write_text("{}")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "_FAILED.json").write_text(json.dumps({"error": "out of memory"}))
    (tmp_path / "c").mkdir()  # started, not finished
    assert store.status_line(tmp_path) == "1 of 4 datasets done; failed: b (out of memory); incomplete: c; pending: d."
    assert store.status_line(OUTPUTS / "paper") == "30 of 30 datasets done."


# --------------------------------------------------------------------------- 03's reproduction check


def _sanitized(line: str) -> str:
    """``line`` as nbval compares it: every pattern of tests/nbval_sanitize.cfg applied, read by nbval."""
    for regex, replace in get_sanitize_patterns((ROOT / "tests" / "nbval_sanitize.cfg").read_text()):
        line = re.sub(regex, replace, line)
    return line


def test_a_rerender_says_nothing_was_retrained_and_a_retraining_says_what_it_compared():
    stored = pd.read_csv(OUTPUTS / "demo" / "breast_cancer" / "results.csv")
    same = store.compare_means(stored, stored)
    text = store.reproduction_text(same, "the results stored here before", trained=0, reused=48)
    assert text.startswith("Nothing was retrained: all 48 members were reused") and "identical" not in text
    retrained = store.reproduction_text(same, "the results stored here before", trained=48, reused=0)
    assert retrained == "Compared with the results stored here before (48 members trained now): every mean identical."
    moved = stored.assign(accuracy=np.where(stored.method == "class", stored.accuracy - 0.05, stored.accuracy))
    drift = store.compare_means(stored, moved)
    assert "1 method moved more than 0.02" in store.reproduction_text(drift, "x", trained=8, reused=40)
    assert store.reproduction_text(None, "no stored results and no committed reference", 48, 0) == (
        "Nothing to compare with: no stored results and no committed reference."
    )
    # the checked line: a re-render says it compared nothing, in words nbval reads as a retraining's "none"
    rerender, clean = store.drift_line(same, retrained=False), store.drift_line(same)
    assert rerender.endswith("none compared, nothing was retrained (a re-render)") and clean.endswith(": none")
    assert _sanitized(rerender) == _sanitized(clean)
    assert _sanitized(store.drift_line(drift)) != _sanitized(rerender)  # a real drift still fails nbval


# --------------------------------------------------------------------------- papermill's injected cell


@pytest.mark.parametrize("set_name", ["paper", "smoke", "authors"])
def test_the_injected_parameters_are_only_what_differs_and_give_the_same_run(set_name, tmp_path):
    ps = param_files.load(ROOT / "params" / f"{set_name}.yaml")
    every = notebooks.notebook_parameters(ps, ps.datasets[0], tmp_path)
    nb = notebooks.load_source("03_pretraining")
    needed = notebooks.needed_parameters(nb, every)
    assert len(needed) + 1 <= 20  # the injected cell: "# Parameters" and a line each
    assert {"dataset", "set_name", "output_dir"} <= set(needed) and "data_dir" not in needed
    cell = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))

    def namespace(injected: dict) -> dict:
        ns = {}
        exec(cell, ns)  # the notebook's defaults, then papermill's assignments
        ns.update(injected)
        return ns

    short, full = namespace(needed), namespace({k: v for k, v in every.items() if k in ns_names(cell)})
    assert nbparams.config_from(short) == nbparams.config_from(full)
    assert {k: short[k] for k in nbparams.PER_DATASET_PATHS} == {k: full[k] for k in nbparams.PER_DATASET_PATHS}


def ns_names(cell: str) -> set:
    ns = {}
    exec(cell, ns)
    return set(ns) - {"__builtins__"}


def test_a_parameter_at_the_notebooks_default_is_left_out_but_the_dataset_is_always_named():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "dataset: str = 'breast_cancer'\nepochs: int = 100\nseeds: list = [1, 2]\nreuse: bool = True",
            metadata={"tags": ["parameters"]},
        )
    ]
    given = {"dataset": "breast_cancer", "epochs": 100, "seeds": (1, 2), "reuse": 1, "lr": 0.001}
    assert notebooks.needed_parameters(nb, given) == {"dataset": "breast_cancer", "reuse": 1}  # 1 is not True


def test_the_defaults_cell_of_a_per_dataset_notebook_is_collapsed_in_lab():
    for name in ("01_data_prep", "02_correlation", "03_pretraining", "07_ablation"):
        cell = next(c for c in notebooks.load_source(name).cells if "parameters" in c.metadata.get("tags", []))
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, name  # what the render carries


# --------------------------------------------------------------------------- 03: the result in words


def test_a_dataset_s_result_is_said_with_the_paper_s_number_beside_ours():
    folder = OUTPUTS / "paper" / "diabetes"
    results = pd.read_csv(folder / "results.csv")
    text = words.dataset_result(results, _stored_config(folder))
    ours = results.loc[results.method == "class", "accuracy"].mean() * 100  # 74.92
    paper = pd.read_csv(ROOT / "tcclib" / "paper" / "published" / "accuracy-results-how.csv").set_index("dataset")
    published = f"{paper.loc['diabetes', 'class_mean']:.2f} ± {paper.loc['diabetes', 'class_se']:.2f}"
    assert text.startswith(f"**On diabetes, `class` scores {ours:.1f} % accuracy (95 % interval ")
    assert f"the paper reports {published}: inside our interval" in text
    assert "Run with the published settings (500 pretraining epochs, 8 seeds)." in text
    assert "| `class` | 74.92 ± 1.13 | 74.76 ± 0.91 (inside) |" in text
    assert "| `logreg` |" in text and text.count("\n") < 60
    assert _checker().PAPER_BESIDE_OURS.search(text)


def test_breast_cancer_is_set_beside_the_paper_s_wdbc_row_and_a_table_of_yours_is_not():
    folder = OUTPUTS / "demo" / "breast_cancer"
    results = pd.read_csv(folder / "results.csv")
    text = words.dataset_result(results, _stored_config(folder))
    assert "the paper reports for `wdbc`, OpenML's copy of this table, 97.15 ± 0.37" in text
    assert "Not the published settings: 100 pretraining epochs (the paper: 500)" in text
    mine = results.assign(dataset="my_table", did=np.nan)
    text = words.dataset_result(mine, None)
    assert "The paper does not report my_table in its tables" in text
    assert not _checker().PAPER_BESIDE_OURS.search(text)


def test_the_interval_stays_on_the_scale():
    results = pd.DataFrame(
        dict(dataset="wdbc", did=1510, seed=[1, 2], method="class", accuracy=[0.93, 0.99], auroc=[0.98, 1.0])
    )
    text = words.dataset_result(results)
    assert "95 % interval 57.9 to 100.0, 2 seeds" in text and "to 1.000, 2 seeds" in text


# --------------------------------------------------------------------------- 04: Tables 2-5, ours | paper


def test_the_markdown_tables_hold_ours_next_to_the_paper_s(tmp_path):
    rows = [
        dict(dataset="balance-scale", did=11, seed=s, method=m, accuracy=v, auroc=v)
        for m, vals in (("no_pretrain", [0.9, 0.91]), ("class", [0.8, 0.82]), ("logreg", [0.85, 0.85]))
        for s, v in enumerate(vals)
    ]
    results = pd.DataFrame(rows)
    lines = tables.to_markdown(tables.markdown_table(results, "accuracy", "how")).splitlines()
    assert lines[0] == "| dataset | no_pretrain: ours | no_pretrain: paper | class: ours | class: paper | logreg |"
    # the published row of balance-scale: no_pretrain 90.00 ± 0.66, class 91.60 ± 0.97 (the paper's best)
    row = "| balance-scale | **90.50 ± 0.35** | 90.00 ± 0.66 | 81.00 ± 0.71 | **91.60 ± 0.97** | 85.00 ± 0.00 |"
    assert lines[2] == row
    blocks = tables.write_set_tables(tmp_path, results)
    assert blocks[0].startswith("### Table 2: accuracy (%), how to corrupt\n\n| dataset | no_pretrain: ours")
    assert (tmp_path / "results" / "table_accuracy_how.md").read_text().splitlines()[2] == lines[2]


def test_every_table_of_the_paper_set_fits_one_screenful():
    results = store.gather(OUTPUTS / "paper")
    for metric in ("accuracy", "auroc"):
        for kind, methods in tables.method_groups(results).items():
            text = tables.to_markdown(tables.markdown_table(results, metric, kind, methods))
            assert len(text.splitlines()) <= 60 and ": paper" in text.splitlines()[0]


# --------------------------------------------------------------------------- 05, 06, 07


def test_figure_3_s_sentence_sets_our_wins_beside_the_paper_s():
    results = store.gather(OUTPUTS / "paper")
    text = words.win_matrix_sentence(results)
    _, wins, decided = tables.win_matrix(results, "accuracy", tables.HOW_METHODS)
    won, of = wins.loc["class", "random"], decided.loc["class", "random"]
    expected = f"`class` beats `random` on {won} of the {of} datasets"
    assert expected in text and "(the paper: 5 of 6)" in text  # the paper's Figure 3: 83.3 % (5/6)
    few = words.win_matrix_sentence(store.gather(OUTPUTS / "demo"))
    assert "`class` and `random` differ on none" in few and "With 1 dataset" in few


def test_figure_1_and_2_sentences_say_what_is_drawn():
    history = pd.read_csv(OUTPUTS / "paper" / "diabetes" / "history.csv")
    text = words.learning_curves_sentence(history, "diabetes")
    last = history[history.epoch == 500].groupby("method").loss.mean()
    assert f"`random` {history[history.epoch == 1].groupby('method').loss.mean()['random']:.2f} → " in text
    assert f"`{last.idxmin()}` ends lowest" in text
    embeddings = {"class": dict(y_train=np.array([0, 1, 1]), y_test=np.array([2]))}
    text = words.embeddings_sentence(embeddings, ["random", "class"], "d")
    assert "3 training rows and 1 test row in 3 classes" in text and "(`class`)" in text


def test_a_sweep_is_said_as_class_s_gain_over_random_paired_by_seed():
    grid = pd.read_csv(OUTPUTS / "ablation" / "diabetes" / "results.csv")
    part = grid[(grid.varied == "labeled_fraction") & (grid.labeled_fraction == 0.3)]
    wide = part.pivot(index="seed", columns="method", values="accuracy") * 100
    gain = wide["class"] - wide["random"]
    text = words.sweep_sentence(grid, "labeled_fraction", "diabetes", 0.3)
    assert f"{gain.mean():+.1f} ± {gain.std(ddof=1) / np.sqrt(len(gain)):.1f} at 0.3" in text
    assert "True labels (`oracle`) over pseudo-labels (`class`)" in text
    pretrained = wide["random"] - wide["no_pretrain"]
    said = f"{pretrained.mean():+.1f} ± {pretrained.std(ddof=1) / np.sqrt(len(pretrained)):.1f} at 0.3"
    assert "Pretraining itself (`random` over `no_pretrain`): " in text and said in text.split("Pretraining")[1]
    table = words.sweep_table(grid, "corruption_rate", ["random", "class", "oracle"])
    at = grid[(grid.varied == "corruption_rate") & (grid.corruption_rate == 0.4) & (grid.method == "class")]
    assert list(table.columns) == ["random", "class", "oracle"]
    assert table.loc[0.4, "class"] == round(at.accuracy.mean() * 100, 1)


def test_a_table_of_yours_on_one_split_is_said_with_the_noise_one_split_holds():
    """Notebook 08: the best method, the best pretrained one against the untrained encoder and the
    best baseline, the binomial standard error of one accuracy on the test rows, the fits' seconds,
    and a table in percent with each column's decimals."""
    results = pd.read_csv(OUTPUTS / "own" / "example_table" / "results.csv")
    text = words.one_split(results)
    acc = results.set_index("method")["accuracy"] * 100
    best = acc[["random", "class", "class_least", "class_most"]].idxmax()
    baseline = acc[["xgboost", "logreg", "self_training"]].idxmax()
    assert text.startswith(
        f"On example_table (seed 0: 480 labeled of 1600 training rows, 400 test rows), {acc.idxmax()}"
    )
    below = acc[baseline] - acc[best]
    assert f"{acc[best] - acc['no_pretrain']:.2f} points above the untrained encoder (no_pretrain" in text
    assert f"{below:.2f} points below the best baseline ({baseline}, {acc[baseline]:.2f} %)" in text
    se = 100 * np.sqrt(acc.max() / 100 * (1 - acc.max() / 100) / 400)
    assert f"binomial standard error of about {se:.1f} points" in text
    table = text.split("\n\n")[1].splitlines()
    assert table[0] == "| method | accuracy (%) | AUROC | fit (s) |" and len(table) == 2 + len(results)
    assert all(re.fullmatch(r"\| \w+ \| \d+\.\d\d \| 0\.\d{3} \| \d+\.\d\d \|", row) for row in table[2:])
    only_pretrained = words.one_split(results[results.method.isin(["random", "class"])])
    assert "The best pretrained method" not in only_pretrained and "binomial" in only_pretrained


def test_notebook_06_links_the_report_instead_of_printing_it():
    text = (OUTPUTS / "paper" / "report.md").read_text()
    link = report.report_link(text, OUTPUTS / "paper" / "report.md")
    lines = len(text.splitlines())
    assert link.startswith(f"The full report is [`report.md`](report.md), beside this notebook ({lines:,} lines)")
    assert "- [In plain words](report.md#in-plain-words)" in link
    assert "(report.md#win-matrix-accuracy-welch-p--005-ours-incl-baselines)" in link  # as GitHub makes anchors
    assert len(link.splitlines()) < 60


def test_04_s_verdicts_are_sentences():
    results = store.gather(OUTPUTS / "paper")
    lines = report.agreement_lines(results)
    assert any("the paper's mean lies inside our 95 % interval in **151 of 180**" in line for line in lines)
    claims = report.claims_lines(results)
    assert claims[0].startswith("- Our run covers **30 of 30**") and any("**supported**" in line for line in claims)
    assert report.agreement_lines(store.gather(OUTPUTS / "demo")) == [
        "- The paper reports none of these datasets: no cell to set beside ours."
    ]


# --------------------------------------------------------------------------- the checker


def _notebook(*cells) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return json.loads(nbformat.writes(nb))


def _code(source="x", outputs=(), **metadata):
    cell = nbformat.v4.new_code_cell(source, metadata=metadata)
    cell.outputs = list(outputs)
    return cell


def _stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _shown(markdown):
    return nbformat.v4.new_output("display_data", data={"text/markdown": markdown, "text/plain": markdown})


def test_the_checker_counts_each_kind_of_offence():
    check = _checker()
    found = check.Findings()
    lines = "\n".join(f"line {i}" for i in range(61))
    check.check_notebook(_notebook(_code(outputs=[_stdout("| a |\n| --- |\n| 1 |\n")])), "table.ipynb", found)
    check.check_notebook(_notebook(_code(outputs=[_stdout("**bold**\n")])), "bold.ipynb", found)
    check.check_notebook(_notebook(_code(outputs=[_stdout(lines[:-8]), _stdout(lines[-8:])])), "long.ipynb", found)
    check.check_notebook(_notebook(_code(outputs=[_shown(lines)])), "long_md.ipynb", found)
    no_paper = _notebook(_code(outputs=[_shown("On d, class scores 74.9 %.")]))
    check.check_notebook(no_paper, "x/03_pretraining.ipynb", found)
    defaults = "\n".join(f"p{i} = {i}" for i in range(49))
    check.check_notebook(_notebook(_code(defaults, tags=["parameters"])), "defaults.ipynb", found)
    check.check_notebook(_notebook(_code(defaults, tags=["injected-parameters"])), "injected.ipynb", found)
    bar = "".join(f"fit: pretraining: {10 * i:3d}%|#| {i}/10\n" for i in range(1, 11))
    bars = nbformat.v4.new_output("stream", name="stderr", text=bar)
    check.check_notebook(_notebook(_code(outputs=[bars])), "bars.ipynb", found)
    assert [r for r, _ in found.markdown_on_stdout] == ["table.ipynb", "bold.ipynb"]
    assert found.long_outputs == [
        ("long.ipynb", "cell 0: stdout of 61 lines"),  # its two stream outputs, joined as shown
        ("long_md.ipynb", "cell 0: Markdown of 61 lines"),
    ]
    assert found.no_result_sentence == [("x/03_pretraining.ipynb", "no sentence with the paper's number")]
    assert found.defaults_shown == [("defaults.ipynb", "cell 0: 49 lines shown")]
    assert found.long_injected == [("injected.ipynb", "cell 0: 49 lines")]
    assert found.passing_bars == [("bars.ipynb", "cell 0: 9 passing states of its bars")]
    assert found.failed() and found.checked == 8


def test_the_checker_passes_what_reads_well(tmp_path):
    check = _checker()
    defaults = "\n".join(f"p{i} = {i}" for i in range(49))
    good = _notebook(
        _code(defaults, tags=["parameters"], jupyter={"source_hidden": True}),
        _code("# Parameters\ndataset = 'diabetes'", tags=["injected-parameters"]),
        _code(outputs=[_stdout("\n".join(["members trained now: 0"] * 60))]),
        _code(outputs=[_shown("**On diabetes, `class` scores 74.9 %; the paper reports 74.76 ± 0.91: inside.**")]),
    )
    (tmp_path / "paper" / "diabetes").mkdir(parents=True)
    (tmp_path / "paper" / "diabetes" / "03_pretraining.ipynb").write_text(json.dumps(good))
    (tmp_path / "paper" / ".ipynb_checkpoints").mkdir()  # Lab's copy of an opened render: not a render
    bad = _notebook(_code(outputs=[_stdout("**")]))
    (tmp_path / "paper" / ".ipynb_checkpoints" / "x.ipynb").write_text(json.dumps(bad))
    assert check.main([str(tmp_path)]) == 0
    assert check.check(tmp_path).checked == 1


def test_the_committed_renders_read_as_results_not_printouts(capsys):
    """The targets of issue 58 on every committed render (0 of each); they hold after a re-render
    from the current notebook sources (``make rerender SET=...``), as the stale-render test asks."""
    rc = _checker().main([str(OUTPUTS)])
    assert rc == 0, capsys.readouterr().out
