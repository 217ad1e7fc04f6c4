"""The paths a newcomer takes: kernels, notebook parameters, sources, re-renders, output paths."""

import contextlib
import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from tcclib.artifacts import keys as content_keys
from tcclib.method.config import Config
from tcclib.running import cli, nbparams, notebooks, sweep
from tcclib.running import params as param_files
from tcclib.util import paths

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks").glob("*.py"))
TINY = {"seeds": [1], "methods": ["random"], "epochs": 2, "head_epochs": 2, "progress": False}


def _paired_ipynb(src: Path, folder: Path) -> str:
    """The .ipynb that `make notebooks` (or JupyterLab) writes beside a source, here in ``folder``."""
    import jupytext

    out = folder / f"{src.stem}.ipynb"
    jupytext.write(jupytext.read(src), out)
    return str(out)


def _execute(nb, out, parameters, cwd):
    """papermill as a user calls it, in this interpreter's kernel."""
    import papermill as pm

    from tcclib.util.kernel import KERNEL_NAME, kernel_manager

    km = kernel_manager()
    try:
        return pm.execute_notebook(
            nb, str(out), parameters=parameters, cwd=str(cwd), progress_bar=False, kernel_name=KERNEL_NAME, km=km
        )
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)


# ------------------------------------------------------------------ kernels


def test_sweep_runs_notebooks_in_this_interpreter_despite_a_decoy_python3_kernel(tmp_path, monkeypatch):
    decoy = tmp_path / "jupyter" / "kernels" / "python3"
    decoy.mkdir(parents=True)
    (decoy / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/nonexistent/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "decoy",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    from jupyter_client.kernelspec import KernelSpecManager

    assert KernelSpecManager().get_kernel_spec("python3").argv[0] == "/nonexistent/bin/python"  # the decoy is live
    p = tmp_path / "k.yaml"
    p.write_text(
        f"name: k\ndatasets: [breast_cancer]\nper_dataset_notebooks: [01_data_prep]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(TINY)}\n"
    )
    rep = sweep.sweep(param_files.load(p), tmp_path / "out", progress=False)
    assert rep["done"] == ["breast_cancer"], rep
    done = json.loads((tmp_path / "out" / "k" / "breast_cancer" / "_DONE.json").read_text())
    assert done["python"] == Path(sys.executable).name  # its name: no folder of this machine
    import torch

    assert done["torch"] == torch.__version__
    assert not list(Path.home().glob(".local/share/jupyter/kernels/*tcc*"))  # nothing written for the user


def test_makefile_writes_no_kernelspec():
    text = (ROOT / "Makefile").read_text()
    assert "kernelspec install" not in text and "ipykernel install" not in text


# ------------------------------------------------------------------ parameters


def _parameters_cell(src: Path) -> str:
    import jupytext

    nb = jupytext.read(src)
    return next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))


@pytest.mark.parametrize("src", [s for s in SOURCES if s.stem[:2] in ("01", "02", "03", "07")], ids=lambda s: s.stem)
def test_every_setting_is_a_top_level_parameter_with_its_default(src):
    ns: dict = {}
    exec(_parameters_cell(src), ns)  # noqa: S102 - our own notebook source
    expected = {f.name: getattr(Config(), f.name) for f in dataclasses.fields(Config) if f.name != "extra"}
    expected.update(nbparams.NOTEBOOK_DEFAULTS)
    expected["keep_embeddings"] = True  # interactive runs keep the PCA figure's embeddings
    for name, value in expected.items():
        assert name in ns, f"{src.name}: no parameter {name}"
        got = tuple(ns[name]) if isinstance(ns[name], list) else ns[name]
        assert got == value, f"{src.name}: {name} = {got!r}, Config default {value!r}"
    assert set(nbparams.PER_DATASET_PATHS) <= set(ns)
    assert {k for k in ns if not k.startswith("__")} <= set(nbparams.per_dataset_names(ablation=True))


@pytest.mark.parametrize("src", SOURCES, ids=lambda s: s.stem)
def test_papermill_help_lists_typed_parameters(src, tmp_path):
    import papermill as pm

    found = pm.inspect_notebook(_paired_ipynb(src, tmp_path))
    assert found and all(p["inferred_type_name"] != "None" for p in found.values()), found
    assert all(p["help"] for p in found.values())


def test_p_epochs_changes_what_runs_and_a_misspelled_parameter_stops(tmp_path):
    nb = _paired_ipynb(ROOT / "notebooks" / "03_pretraining.py", tmp_path)
    runs = {}
    for epochs in (2, 3):
        out = tmp_path / f"e{epochs}"
        _execute(nb, tmp_path / f"e{epochs}.ipynb", dict(output_dir=str(out), **{**TINY, "epochs": epochs}), tmp_path)
        runs[epochs] = pd.read_csv(out / "history.csv")
    assert sorted(runs[2].epoch) == [1, 2] and sorted(runs[3].epoch) == [1, 2, 3]
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as e:
        _execute(nb, tmp_path / "typo.ipynb", dict(output_dir=str(tmp_path / "t"), epoch=2), tmp_path)
    assert e.value.ename == "ParameterError" and "did you mean 'epochs'?" in e.value.evalue
    assert not (tmp_path / "t" / "results.csv").exists()  # stopped before any work


def test_a_list_given_as_text_with_p_is_read_as_yaml():
    cfg = nbparams.config_from({"seeds": "[1, 2]", "methods": "random", "epochs": 3})
    assert cfg.seeds == (1, 2) and cfg.methods == ("random",) and cfg.epochs == 3
    with pytest.raises(nbparams.ParameterError, match="corruption_rate"):
        nbparams.config_from({"corruption_rate": 3.0})


def test_relative_output_paths_land_under_the_repository(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # e.g. a notebook started from notebooks/ or elsewhere
    assert paths.project_root() == ROOT
    r = nbparams.per_dataset({"output_dir": "runs/_pytest_rel/x", "cache_dir": ""}, load=False)
    try:
        assert r.out == ROOT / "runs" / "_pytest_rel" / "x" and r.out.is_dir()
        assert not (tmp_path / "runs").exists()
        d = nbparams.per_dataset({"set_name": "_pytest_rel", "dataset": "y"}, load=False)
        assert d.out == ROOT / "runs" / "_pytest_rel" / "y"  # the default: runs/, never outputs/
        assert d.cache_dir == ROOT / "runs" / ".cache"
    finally:
        import shutil

        shutil.rmtree(ROOT / "runs" / "_pytest_rel", ignore_errors=True)
    monkeypatch.setenv(paths.ROOT_ENV, str(tmp_path))  # a copy of the collection elsewhere (nbval)
    assert nbparams.per_dataset({"output_dir": "o"}, load=False).out == tmp_path / "o"


def test_aggregate_notebook_without_results_says_what_to_run_first(tmp_path):
    with pytest.raises(nbparams.ParameterError, match="run the per-dataset notebooks first"):
        nbparams.aggregate({"set_name": "nothing", "set_dir": str(tmp_path)})


# ------------------------------------------------------------------ sources


@pytest.mark.parametrize("src", SOURCES, ids=lambda s: s.stem)
def test_a_source_saved_from_lab_unchanged_stays_byte_identical(src):
    """JupyterLab saves a notebook's .py through jupytext once its kernel has connected (adding
    ``language_info``): with the header's metadata filter the text is the committed one (no
    jupytext version numbers), so opening and saving a notebook changes no tracked file."""
    import jupytext

    nb = jupytext.read(src)
    nb.metadata["language_info"] = {"name": "python", "version": sys.version.split()[0], "mimetype": "text/x-python"}
    text = jupytext.writes(nb, "py:percent")
    assert "jupytext_version: " not in text and "format_version: " not in text
    assert text == src.read_text(), f"{src.name}: saving it from JupyterLab would rewrite it"


def test_paired_notebooks_are_ignored_by_git():
    import subprocess

    ignored = subprocess.run(
        ["git", "check-ignore", "notebooks/03_pretraining.ipynb", "notebooks/.ipynb_checkpoints/x.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == ["notebooks/03_pretraining.ipynb", "notebooks/.ipynb_checkpoints/x.ipynb"]


def stale_renders(folder: Path) -> list[str]:
    """Rendered notebooks under ``folder`` whose recorded source hash is not the current one (Lab's
    ignored ``.ipynb_checkpoints`` copies of opened renders are not renders)."""
    current = {f"notebooks/{s.name}": hashlib.sha256(s.read_bytes()).hexdigest() for s in SOURCES}
    bad = []
    for nb in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in nb.relative_to(folder).parts:
            continue
        meta = json.loads(nb.read_text()).get("metadata", {}).get("tcc", {})
        if current.get(meta.get("source")) != meta.get("source_sha256"):
            bad.append(str(nb.relative_to(folder)))
    return bad


def test_every_committed_render_comes_from_the_current_sources():
    stale = stale_renders(ROOT / "outputs")
    assert not stale, f"{len(stale)} stale renders, e.g. {stale[:3]}: re-render with `make rerender SET=...`"


def test_a_stale_render_is_detected(tmp_path):
    nb = notebooks.load_source("01_data_prep")
    nbformat.write(nb, tmp_path / "fresh.ipynb")
    assert stale_renders(tmp_path) == []
    nb.metadata["tcc"]["source_sha256"] = "0" * 64  # rendered from an older source
    nbformat.write(nb, tmp_path / "old.ipynb")
    assert stale_renders(tmp_path) == ["old.ipynb"]
    (tmp_path / "demo" / ".ipynb_checkpoints").mkdir(parents=True)  # Lab opened a render once
    nbformat.write(nb, tmp_path / "demo" / ".ipynb_checkpoints" / "04_evaluation-checkpoint.ipynb")
    assert stale_renders(tmp_path) == ["old.ipynb"]


# ------------------------------------------------------------------ re-render without retraining


def test_rerender_of_a_finished_dataset_trains_nothing_and_keeps_its_numbers(tmp_path, bc_small):
    from tcclib.artifacts import store
    from tcclib.running import train

    cfg = Config(
        seeds=(12, 22),
        methods=("no_pretrain", "random", "class", "class_most"),
        epochs=2,
        head_epochs=2,
        pseudo_every=1,
        xgb_trees=5,
        progress=False,
        keep_embeddings=True,
        baselines=("logreg",),
    )
    first = train.run_dataset(bc_small, cfg, store_dir=tmp_path)
    store.save_run(first, tmp_path)
    files = {f: (tmp_path / f).read_bytes() for f in ("results.csv", "history.csv", "pseudo.csv", "corr_range.csv")}
    from tcclib.method import correlation

    with calls_of(train.run_prepared, correlation.importance_matrix) as called:
        again = train.run_dataset(bc_small, cfg, store_dir=tmp_path)
    assert called == [] and again.timings["trained_members"] == 0 and not again.trained
    store.save_run(again, tmp_path)
    assert {f: (tmp_path / f).read_bytes() for f in files} == files  # byte for byte
    assert set(again.embeddings) == set(cfg.methods)
    # a changed setting retrains exactly what it changes: pseudo_every only touches the class members
    with calls_of(train.run_prepared, correlation.importance_matrix) as called:
        changed = train.run_dataset(bc_small, cfg.replace(pseudo_every=2, keep_embeddings=False), store_dir=tmp_path)
    calls = [arguments["cfg"] for name, arguments in called if name == "run_prepared"]
    assert [c.methods for c in calls] == [("class", "class_most")] and calls[0].seeds == (12, 22)
    assert "importance_matrix" not in {name for name, _ in called}  # (the stored importances)
    assert changed.timings["trained_members"] == 4 and changed.timings["reused_members"] == 4
    same = first.results.set_index(["seed", "method"]).sort_index()
    now = changed.results.set_index(["seed", "method"]).sort_index()
    assert now.loc[(12, "random"), "accuracy"] == pytest.approx(same.loc[(12, "random"), "accuracy"], abs=1e-6)
    assert now.loc[(12, "class"), "accuracy"] == pytest.approx(  # the same run: pseudo_every=2 alone
        train.run_dataset(bc_small, cfg.replace(pseudo_every=2, keep_embeddings=False, methods=["class"]))
        .results.set_index(["seed", "method"])
        .loc[(12, "class"), "accuracy"],
        abs=1e-6,
    )
    # a new method trains that method only (its embeddings too); reuse=False retrains everything
    with calls_of(train.run_prepared) as called:
        more = train.run_dataset(bc_small, cfg.replace(methods=[*cfg.methods, "oracle"]), store_dir=tmp_path)
    calls = [arguments["cfg"] for _, arguments in called]
    assert [c.methods for c in calls] == [("oracle",)] and calls[0].keep_embeddings
    assert list(more.embeddings) == [*cfg.methods, "oracle"]
    assert (more.embeddings["random"]["train"] == again.embeddings["random"]["train"]).all()
    with calls_of(train.run_prepared) as called:
        train.run_dataset(bc_small, cfg, store_dir=tmp_path, reuse=False)
    assert [arguments["cfg"].methods for _, arguments in called] == [cfg.methods]


@contextlib.contextmanager
def calls_of(*functions):
    """``[(name, {argument: value})]``: the calls of the given functions while the block runs,
    seen by a trace function (replacing a function of tcclib's training code would key the run by
    the replacement, and every member would train again)."""
    codes = {function.__code__: function.__name__ for function in functions}
    called = []

    def trace(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            called.append((codes[frame.f_code], dict(frame.f_locals)))

    before = sys.gettrace()
    sys.settrace(trace)
    try:
        yield called
    finally:
        sys.settrace(before)


def test_keys_change_with_what_determines_a_member_only(bc_small):
    from tcclib.data.preprocess import prepare

    cfg = Config(seeds=(12,), epochs=2)
    sp = prepare(bc_small, cfg.seeds).splits[0]
    k = content_keys.member_key
    assert k(sp, "random", cfg) == k(sp, "random", cfg.replace(xgb_trees=7, pseudo_every=3, progress=False))
    assert k(sp, "random", cfg) != k(sp, "random", cfg.replace(epochs=3))
    assert k(sp, "class_most", cfg) != k(sp, "class_most", cfg.replace(xgb_trees=7))
    assert k(sp, "no_pretrain", cfg) == k(sp, "no_pretrain", cfg.replace(epochs=9, corruption_rate=0.2))
    assert k(sp, "class", cfg) != k(sp, "class_most", cfg)


def test_sweep_compares_a_run_with_the_committed_reference(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text(
        f"name: r\ndatasets: [breast_cancer]\nper_dataset_notebooks: [03_pretraining]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(TINY)}\n"
    )
    ps = param_files.load(p)
    ref = tmp_path / "ref"
    sweep.sweep(ps, ref, progress=False, reference_root=tmp_path / "none")
    rep = sweep.sweep(ps, tmp_path / "mine", progress=False, reference_root=ref)
    assert rep["done"] == ["breast_cancer"]  # not skipped because the reference is finished
    assert rep["reference"]["breast_cancer"].startswith("AGREES with the committed reference")
    p.write_text(p.read_text().replace('"epochs": 2', '"epochs": 3'))
    rep = sweep.sweep(param_files.load(p), tmp_path / "other", progress=False, reference_root=ref)
    assert "other settings (epochs 3 vs 2)" in rep["reference"]["breast_cancer"]
    assert json.loads((ref / "r" / "breast_cancer" / "config.json").read_text())["epochs"] == 2  # untouched


def test_a_finished_dataset_with_other_settings_is_named_and_force_stale_updates_it(tmp_path, capsys):
    # a method added to the parameter file after the run: the sweep says so instead of a plain
    # "already done", and --force stale trains only the new method's members
    p = tmp_path / "s.yaml"
    tiny = {**TINY, "methods": ["no_pretrain", "random"]}
    p.write_text(
        f"name: s\ndatasets: [breast_cancer]\nper_dataset_notebooks: [03_pretraining]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(tiny)}\n"
    )
    out = tmp_path / "out"
    sweep.sweep(param_files.load(p), out, progress=False)
    before = pd.read_csv(out / "s" / "breast_cancer" / "results.csv")
    p.write_text(p.read_text().replace('"random"]', '"random", "class"]'))
    capsys.readouterr()
    rep = sweep.sweep(param_files.load(p), out, progress=False)
    assert rep["done"] == [] and rep["stale"] == {"breast_cancer": "methods +class"}
    said = capsys.readouterr().out
    assert "other settings than the parameter file (methods +class): --force stale" in said
    rep = sweep.sweep(param_files.load(p), out, progress=False, force=["stale"])
    assert rep["done"] == ["breast_cancer"] and rep["stale"] == {}
    after = pd.read_csv(out / "s" / "breast_cancer" / "results.csv")
    assert list(after.method.unique()) == ["no_pretrain", "random", "class"]
    pd.testing.assert_frame_equal(after[after.method != "class"].reset_index(drop=True), before)
    done = json.loads((out / "s" / "breast_cancer" / "_DONE.json").read_text())
    assert done["trained_members"] == len(TINY["seeds"]) and done["reused_members"] == 2 * len(TINY["seeds"])
    assert sweep.sweep(param_files.load(p), out, progress=False, force=["stale"])["done"] == []  # up to date now
    assert cli.main([str(p), "--outputs", str(out), "--force", "stale", "wdbc"]) == 2  # names still checked


def test_force_and_only_name_datasets_of_the_set(tmp_path, capsys):
    p = tmp_path / "f.yaml"
    p.write_text("name: f\ndatasets: [breast_cancer, diabetes]\n")
    assert cli.main([str(p), "--force", "Breast_Cancer", "--check"]) == 0  # matched case-insensitively
    assert cli.main([str(p), "--force", "wdbc"]) == 2
    assert "not a dataset of the set 'f'" in capsys.readouterr().err
    assert cli.main([str(p), "--only", "breast_cancr"]) == 2
    assert "breast_cancer" in capsys.readouterr().err


def test_data_dir_in_a_params_file_resolves_against_the_root(tmp_path, monkeypatch):
    monkeypatch.delenv("TCC_DATA_DIR", raising=False)
    ps = param_files.load(ROOT / "params" / "smoke.yaml")
    assert ps.data_dir == "../shared/datasets/openml-cc18"
    assert paths.resolve(ps.data_dir) == ROOT / ".." / "shared" / "datasets" / "openml-cc18"
    bad = tmp_path / "b.yaml"
    bad.write_text("name: b\ndatasets: [breast_cancer]\ndata_dir: 5\n")
    with pytest.raises(param_files.ParamsError, match="data_dir"):
        param_files.load(bad)


def test_install_files_agree():
    text = (ROOT / "pyproject.toml").read_text()
    for dep in ("jupyterlab", "ipywidgets", "jupytext", "torch>=2.4"):
        assert dep in text, dep
    import tcclib

    assert f'version = "{tcclib.__version__}"' in text
    for src in SOURCES:  # the Colab cell installs this very version's wheel
        assert f"tcclib-{tcclib.__version__}-py3-none-any.whl" in src.read_text()
    assert "lab:" in (ROOT / "Makefile").read_text()


def test_a_missing_data_folder_is_a_check_error(tmp_path, monkeypatch, capsys):
    p = tmp_path / "d.yaml"
    p.write_text("name: d\ndatasets: [breast_cancer]\n")
    monkeypatch.setenv("TCC_DATA_DIR", str(tmp_path / "nowhere"))
    assert cli.main([str(p), "--check"]) == 2
    assert "does not exist" in capsys.readouterr().err
    monkeypatch.delenv("TCC_DATA_DIR")
    assert cli.main([str(p), "--check", "--data-dir", str(tmp_path)]) == 0
    p.write_text("name: d\ndatasets: [breast_cancer]\ndata_dir: nowhere/at/all\n")
    assert cli.main([str(p), "--check"]) == 2  # the file's folder is missing: an error at load, not mid-run
    assert "data_dir: the folder" in capsys.readouterr().err
    assert cli.main([str(p), "--check", "--data-dir", str(tmp_path)]) == 0  # an explicit folder wins


def test_a_run_outside_a_sweep_is_marked_finished_for_the_aggregate_notebooks(tmp_path, monkeypatch, bc_small):
    """JupyterLab: 01-03 run by hand, then 04 finds the dataset (save_run writes the marker)."""
    from tcclib.artifacts import store
    from tcclib.running import train

    cfg = Config(seeds=(12,), methods=("random",), epochs=1, head_epochs=1, progress=False)
    out = tmp_path / "lab" / "bc12"
    store.save_run(train.run_dataset(bc_small, cfg), out)
    assert json.loads((out / "_DONE.json").read_text())["by"] == "store.save_run outside a sweep"
    set_dir, results = nbparams.aggregate({"set_name": "lab", "set_dir": str(tmp_path / "lab")})
    assert list(results.dataset.unique()) == ["bc12"]
    # under a sweep (notebook 03's write_marker parameter is False), the sweep writes the marker, last
    store.save_run(train.run_dataset(bc_small, cfg), tmp_path / "swept", write_marker=False)
    assert not (tmp_path / "swept" / "_DONE.json").exists()


def test_notebooks_read_the_shared_data_folder_beside_the_checkout(monkeypatch):
    assert param_files.load(ROOT / "params" / "paper.yaml").data_dir == nbparams.SHARED_DATA_DIR
    monkeypatch.delenv("TCC_DATA_DIR", raising=False)
    beside = paths.resolve(nbparams.SHARED_DATA_DIR)
    assert nbparams.notebook_data_dir("") == (str(beside) if beside.is_dir() else None)
    assert nbparams.notebook_data_dir("/some/where") == "/some/where"
    monkeypatch.setenv("TCC_DATA_DIR", "/else/where")
    assert nbparams.notebook_data_dir("") is None  # the loader reads $TCC_DATA_DIR


def test_matplotlib_writes_its_cache_under_the_checkout_not_home(tmp_path):
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    code = "import tcclib, matplotlib; print(matplotlib.get_cachedir())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**env, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    assert Path(out) == ROOT / ".cache" / "matplotlib"
    assert not list(tmp_path.iterdir()), "nothing written in the home folder"
