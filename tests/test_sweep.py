"""Parameter files and the papermill sweep (real papermill, real notebooks, tiny settings)."""

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from processes import alive, interrupt_when

from tcclib.data.sources import DATA_DIR_ENV
from tcclib.running import cli, nbparams, notebooks, sweep
from tcclib.running import params as param_files

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["demo", "smoke", "paper", "ablation"])
def test_shipped_parameter_files_are_valid(name):
    ps = param_files.load(ROOT / "params" / f"{name}.yaml")
    assert ps.name == name and ps.datasets
    if name == "paper":
        assert len(ps.datasets) == 30 and ps.config.epochs == 500 and len(ps.config.seeds) == 8
        assert "class_most_published" in ps.config.methods
    if name == "demo":
        assert ps.datasets == ["breast_cancer"]


@pytest.mark.parametrize(
    "text,word",
    [
        ("name: x\ndatasets: [breast_cancer]\nconfg: {}\n", "config"),
        ("name: x\ndatasets: [breast_cancer]\nconfig: {epochs: -3}\n", "epochs"),
        ("name: x\ndatasets: [breast_cancer]\nconfig: {corruption_rate: 1.4}\n", "corruption_rate"),
        ("name: x\ndatasets: [breast_cancer]\nconfig: {epoch: 3}\n", "did you mean 'epochs'"),
        ("name: x\ndatasets: [breast_cancr]\n", "breast_cancer"),
        ("name: x\ndatasets: []\n", "non-empty"),
        ("name: x y\ndatasets: [breast_cancer]\n", "identifier"),
        ("name: x\ndatasets: [breast_cancer\n", "YAML"),
    ],
)
def test_a_typo_in_a_parameter_file_is_a_clear_error(tmp_path, text, word):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(param_files.ParamsError, match=word):
        param_files.load(p)
    assert cli.main([str(p), "--check"]) == 2


def test_sweep_runs_resumes_and_records_failures(tmp_path, monkeypatch):
    # a data folder with a broken copy of diabetes: that dataset fails, the others go on
    data = tmp_path / "data"
    data.mkdir()
    (data / "37.arff").write_text("@relation broken\n@attribute a NUMERIC\n@data\nnot,arff\n")
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    p = tmp_path / "tiny.yaml"
    p.write_text(
        "name: tiny\ndatasets: [breast_cancer, diabetes]\nkeep_embeddings: [breast_cancer]\n"
        "config: {seeds: [1, 2], methods: [no_pretrain, random, class], epochs: 2, head_epochs: 3,"
        " pseudo_every: 1}\nper_dataset_notebooks: [01_data_prep, 03_pretraining]\n"
        "aggregate_notebooks: [04_evaluation]\n"
    )
    ps = param_files.load(p)
    out = tmp_path / "outputs"
    rep = sweep.sweep(ps, out, progress=False)
    assert rep["done"] == ["breast_cancer"] and list(rep["failed"]) == ["diabetes"]
    bc = out / "tiny" / "breast_cancer"
    assert (bc / "_DONE.json").exists() and (bc / "03_pretraining.ipynb").exists()
    done = json.loads((bc / "_DONE.json").read_text())
    assert done["pretrain_s"] > 0 and "resumed_at_epoch" not in done
    assert "cores" in done["machine"] and "torch" in done["machine"]  # provenance of the floats
    assert not list((out / ".cache" / "checkpoints").glob("*.pt"))  # removed when finished
    res = pd.read_csv(bc / "results.csv")
    assert len(res) == 6 and set(res.method) == {"no_pretrain", "random", "class"}
    fail = json.loads((out / "tiny" / "diabetes" / "_FAILED.json").read_text())
    assert "diabetes" == fail["dataset"] and fail["error"]
    assert (out / "tiny" / "diabetes" / "01_data_prep.ipynb").exists()  # rendered up to the error
    assert (out / "tiny" / "results" / "results.csv").exists()
    index = (out / "tiny" / "index.md").read_text()
    assert "breast_cancer | done" in index and "diabetes | failed" in index
    # one line per failure: the notebook's own exception type and message
    assert rep["failed"]["diabetes"].startswith("DatasetError: ")
    assert "37.arff, line 4: not a valid ARFF file" in rep["failed"]["diabetes"]  # the file and line
    assert "\n" not in rep["failed"]["diabetes"]
    row = next(line for line in index.splitlines() if line.startswith("| diabetes |"))
    assert "DatasetError: " in row and row.count("|") == 4
    # the rendered notebook of a sweep is a first run; re-executed (as nbval does, with reuse off
    # so that it really trains) it finds its stored results and reproduces them on this machine
    nb = bc / "03_pretraining.ipynb"
    assert _cell_text(nb, "store.reproduction_text") == (
        "Nothing to compare with: no stored results and no committed reference."
    )
    assert _cell_text(nb, "NBVAL_CHECK_OUTPUT").endswith(
        "stored results: nothing compared (no stored results, and no committed reference with these settings)"
    )
    assert json.loads(nb.read_text())["metadata"]["tcc"]["source"] == "notebooks/03_pretraining.py"
    import papermill as pm

    from tcclib.util.kernel import KERNEL_NAME, kernel_manager

    monkeypatch.setenv("TCC_REUSE", "0")
    again = tmp_path / "again.ipynb"
    km = kernel_manager()
    try:
        pm.execute_notebook(str(nb), str(again), cwd=str(bc), progress_bar=False, kernel_name=KERNEL_NAME, km=km)
    finally:
        km.shutdown_kernel(now=True)
    assert "members trained now: 6" in _cell_text(again, "store.time_record")
    assert _cell_text(again, "store.reproduction_text") == (
        "Compared with the results stored here before (6 members trained now): every mean identical."
    )
    # a first run's line says nothing was compared; re-executed, it compares and nothing moved
    assert _cell_text(again, "NBVAL_CHECK_OUTPUT").endswith("stored results: none")
    monkeypatch.delenv("TCC_REUSE")
    # resume: the finished dataset is skipped, the failed one is tried again
    stamp = (bc / "_DONE.json").stat().st_mtime_ns
    rep2 = sweep.sweep(ps, out, progress=False, aggregate=False)
    assert rep2["skipped"] == ["breast_cancer"] and list(rep2["failed"]) == ["diabetes"]
    assert (bc / "_DONE.json").stat().st_mtime_ns == stamp


def _cell_text(nb_path, marker: str) -> str:
    """Output of the first code cell whose source contains ``marker``: what it printed, or the
    plain-text form of what it showed."""
    nb = json.loads(Path(nb_path).read_text())
    for c in nb["cells"]:
        if c["cell_type"] == "code" and marker in "".join(c["source"]):
            shown = ("".join(o.get("text", o.get("data", {}).get("text/plain", ""))) for o in c["outputs"])
            return "".join(shown).strip()
    raise AssertionError(f"no cell with {marker!r} in {nb_path}")


def test_reproduction_check_allows_cpu_rounding_and_names_real_changes():
    from tcclib.artifacts import store

    rows = [
        dict(method=m, seed=s, accuracy=a, auroc=0.9) for m, a in (("random", 0.80), ("class", 0.85)) for s in (1, 2)
    ]
    stored = pd.DataFrame(rows)
    assert store.drift_line(store.compare_means(stored, stored)).endswith(": none")
    assert store.drift_line(None).endswith(
        ": nothing compared (no stored results, and no committed reference with these settings)"
    )
    nudged = stored.assign(accuracy=stored.accuracy + 0.003)  # another CPU's rounding
    cmp = store.compare_means(stored, nudged)
    assert cmp.within.all() and cmp["diff"].abs().max() == pytest.approx(0.003)
    broken = stored.copy()
    broken.loc[broken.method == "class", "accuracy"] -= 0.05
    line = store.drift_line(store.compare_means(stored, broken))
    assert "class accuracy 0.850 -> 0.800" in line and "random" not in line
    other_seeds = stored.assign(seed=stored.seed + 10)
    assert "(not run on the same seeds both times)" in store.drift_line(store.compare_means(stored, other_seeds))
    missing = stored[stored.method != "random"]
    assert "random (not run" in store.drift_line(store.compare_means(stored, missing))


def test_time_record_of_a_rerender_is_the_stored_training_not_zeros(tmp_path):
    """The committed 03 render said "members trained now: 0 ... in all 0.0": a re-render now names
    the record of the last training stored with the results."""
    from types import SimpleNamespace

    from tcclib.artifacts import store

    record = {"pretrain_s": 131.3, "total_s": 132.569, "importance_s": 6.901, "baselines_s": 0.006}
    (tmp_path / "timings.json").write_text(json.dumps({**record, "trained_members": 8}))
    rerender = SimpleNamespace(
        timings={"trained_members": 0, "reused_members": 64, "importance_s": 0.0, "baselines_s": 0.04}
    )
    lines = store.time_record(rerender, tmp_path).splitlines()
    assert lines[0] == "members trained now: 0, reused from stored results: 64"
    assert lines[1].startswith("re-rendered from stored results; the last training stored here (")
    assert lines[1].endswith("timings.json, 8 members): XGBoost importances 6.9 s, pretraining and evaluation 132.6 s")
    trained = SimpleNamespace(
        timings={"trained_members": 48, "reused_members": 0, "importance_s": 61.0, "total_s": 105.0}
    )
    assert store.time_record(trained, tmp_path).splitlines()[1] == (
        "time (s): XGBoost importances 61.0, pretraining and evaluation 105.0"
    )
    (tmp_path / "timings.json").unlink()
    assert "no record of their training" in store.time_record(rerender, tmp_path)


def test_kernels_import_this_checkouts_tcclib(tmp_path, monkeypatch):
    """A kernel started by the sweep finds the same tcclib, wherever its working folder is."""
    import subprocess

    from tcclib.running import notebooks

    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    notebooks.share_tcclib_with_kernels()
    parts = os.environ["PYTHONPATH"].split(os.pathsep)
    assert parts == [str(notebooks.ROOT), "/elsewhere"]
    notebooks.share_tcclib_with_kernels()  # idempotent
    assert os.environ["PYTHONPATH"].split(os.pathsep) == parts
    # -S: no site-packages, so no installed copy can answer; find_spec locates without importing
    code = "import importlib.util as u; print(u.find_spec('tcclib').origin)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": os.environ["PYTHONPATH"]},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve().parent == notebooks.ROOT / "tcclib"


def test_index_links_notebooks_of_finished_datasets_only(tmp_path):
    p = tmp_path / "tiny.yaml"
    p.write_text(
        "name: tiny\ndatasets: [breast_cancer, diabetes, wdbc]\nper_dataset_notebooks: [01_data_prep, 03_pretraining]\n"
    )
    ps = param_files.load(p)
    set_dir = tmp_path / "outputs" / "tiny"
    for d in ("breast_cancer", "diabetes"):
        (set_dir / d).mkdir(parents=True)
        (set_dir / d / "01_data_prep.ipynb").write_text("{}")
    (set_dir / "breast_cancer" / "_DONE.json").write_text("{}")  # diabetes: still running
    (set_dir / "datasets.json").write_text(json.dumps(ps.datasets))
    index = sweep.write_index(ps, tmp_path / "outputs").read_text()
    assert "| breast_cancer | done | [01](breast_cancer/01_data_prep.ipynb) |" in index
    assert "| diabetes | incomplete |  |" in index  # its partial render is not linked
    assert "| wdbc | pending |  |" in index


def test_index_is_a_gallery_of_the_figures_and_says_what_each_notebook_shows(tmp_path):
    p = tmp_path / "tiny.yaml"
    p.write_text("name: tiny\ndatasets: [breast_cancer]\naggregate_notebooks: [05_figures]\n")
    ps = param_files.load(p)
    set_dir = tmp_path / "outputs" / "tiny"
    (set_dir / "figures").mkdir(parents=True)
    for name in ("zz_other.png", "figure3_win_matrix.png", "figure3_win_matrix.pdf", "paper_vs_ours_accuracy.png"):
        (set_dir / "figures" / name).write_bytes(b"")
    (set_dir / "05_figures.ipynb").write_text("{}")
    (set_dir / "datasets.json").write_text(json.dumps(ps.datasets))
    index = sweep.write_index(ps, tmp_path / "outputs").read_text()
    assert f"- [05_figures](05_figures.ipynb): {sweep.NOTEBOOK_LINES['05_figures']}" in index
    assert "- per dataset (the table below): 01 the table, its class balance" in index
    images = [line for line in index.splitlines() if line.startswith("![")]
    assert images[0].endswith("(figures/paper_vs_ours_accuracy.png)")  # ours against the paper first
    assert images[-1] == "![zz other](figures/zz_other.png)"  # a figure without a caption: its name
    caption = sweep.FIGURE_CAPTIONS["figure3_win_matrix"]
    assert f"*{caption}* ([PDF](figures/figure3_win_matrix.pdf))" in index


def test_a_forced_rerun_that_trains_keeps_the_earlier_runs_record(tmp_path, caplog):
    text = (
        "name: grow\ndatasets: [breast_cancer]\nconfig: {seeds: [1], methods: [no_pretrain], epochs: 1,"
        " head_epochs: 2, pseudo_every: 1}\nper_dataset_notebooks: [03_pretraining]\naggregate_notebooks: []\n"
    )
    p = tmp_path / "grow.yaml"
    p.write_text(text)
    out = tmp_path / "outputs"
    sweep.sweep(param_files.load(p), out, progress=False)
    done_file = out / "grow" / "breast_cancer" / "_DONE.json"
    first = json.loads(done_file.read_text())
    assert "earlier" not in first and first["trained_members"] == 1
    assert "unknown parameter" not in caplog.text  # only what the notebook declares, or a non-default
    p.write_text(text.replace("methods: [no_pretrain]", "methods: [no_pretrain, random]"))
    sweep.sweep(param_files.load(p), out, force=["breast_cancer"], progress=False)  # adds a method: trains its member
    second = json.loads(done_file.read_text())
    assert second["trained_members"] == 1 and second["reused_members"] == 1
    assert second["earlier"] == [first]  # the first run's record (its time, machine) is not lost
    sweep.sweep(param_files.load(p), out, force=["breast_cancer"], progress=False)  # a re-render trains nothing
    third = json.loads(done_file.read_text())
    assert third["earlier"] == [first] and third["finished"] == second["finished"] and "rendered" in third


def test_settings_newer_than_a_notebook_are_passed_only_off_their_default():
    import nbformat

    assert {"dataset", "epochs", "methods", "fidelity"} <= notebooks.declared_parameters(
        notebooks.load_source("03_pretraining")
    )
    nb = nbformat.v4.new_notebook()  # a notebook whose parameter cell predates most settings
    nb.cells = [
        nbformat.v4.new_code_cell(
            "dataset = 'breast_cancer'\nepochs: int = 100  # epochs", metadata={"tags": ["parameters"]}
        ),
        nbformat.v4.new_code_cell("lr = 1"),
    ]  # not a parameter cell
    assert notebooks.declared_parameters(nb) == {"dataset", "epochs"}
    params = {"dataset": "x", "epochs": 5, "output_dir": "o"}
    assert notebooks.needed_parameters(nb, params) == params  # declared, or not a setting at all: passed
    assert notebooks.needed_parameters(nb, {"lr": 0.001, "xgb_max_bin": 256}) == {}  # newer, at the default
    assert notebooks.needed_parameters(nb, {"lr": 0.01, "xgb_max_bin": 64}) == {"lr": 0.01, "xgb_max_bin": 64}


def test_the_sweep_tells_notebook_03_by_a_parameter_not_to_write_the_marker(tmp_path):
    """No environment variable: the sweep passes write_marker=False to the notebook that declares
    it (03, which hands it to store.save_run); the others are not given an unknown parameter."""
    ps = param_files.load(ROOT / "params" / "demo.yaml")
    params = notebooks.notebook_parameters(ps, "breast_cancer", tmp_path)
    assert params["write_marker"] is False
    assert notebooks.needed_parameters(notebooks.load_source("03_pretraining"), params)["write_marker"] is False
    for nb in ("01_data_prep", "02_correlation", "07_ablation"):
        assert "write_marker" not in notebooks.needed_parameters(notebooks.load_source(nb), params)
    run = nbparams.per_dataset({"output_dir": str(tmp_path / "o"), "write_marker": False}, load=False)
    assert run.write_marker is False
    assert nbparams.per_dataset({"output_dir": str(tmp_path / "o")}, load=False).write_marker is True
    assert "write_marker=run_.write_marker" in notebooks.source_path("03_pretraining").read_text()


def test_an_interrupt_ends_the_sweep_and_its_kernel_within_seconds(tmp_path):
    """Ctrl-C (SIGINT to the process group) while a dataset's notebook runs in its kernel: the
    kernel (in a session of its own, so the signal never reaches it) is killed, the command ends
    within seconds with the one line, exit status 130, no traceback, no process left."""
    p = tmp_path / "s.yaml"
    p.write_text(
        "name: sw\ndatasets: [breast_cancer]\naggregate_notebooks: []\n"
        "config: {seeds: [0, 1], epochs: 400, methods: [random], baselines: []}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "TCC_PROGRESS": "lines"}
    cmd = [sys.executable, "-m", "tcclib", str(p), "--outputs", str(tmp_path / "out")]
    running = lambda: list((tmp_path / "out").rglob("*.running.ipynb"))  # noqa: E731
    seen = interrupt_when(cmd, tmp_path / "log", running, 300, settle_s=5, env=env)
    assert seen.workers, "the notebook runs in a kernel"  # (it had 60 s to stop; seconds: bench/stop_times.py)
    assert seen.code == 130 and "Traceback" not in seen.text, seen.text[-2000:]
    assert seen.last_line.startswith("interrupted: 0 of the 1 dataset this run had to do finished")
    time.sleep(2)
    assert [k for k in seen.workers if alive(k)] == []
