"""A re-run never loses finished results; one sweep per set; read-only folders; kill -9 at the swap."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest

from tcclib.artifacts import store
from tcclib.running import cli, sweep
from tcclib.running import params as param_files

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TCC_DATA_DIR") or ROOT.parent / "shared" / "datasets" / "openml-cc18")
CFG = {"seeds": [1], "methods": ["no_pretrain", "random"], "epochs": 2, "head_epochs": 2, "progress": False}


def _params(tmp_path, notebooks="[01_data_prep, 03_pretraining]") -> Path:
    p = tmp_path / "safe.yaml"
    p.write_text(
        f"name: safe\ndatasets: [breast_cancer]\nper_dataset_notebooks: {notebooks}\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(CFG)}\n"
    )
    return p


def test_a_failed_rerun_keeps_the_previous_results_exactly(tmp_path, monkeypatch, folder_digest):
    ps = param_files.load(_params(tmp_path))
    out = tmp_path / "out"
    assert sweep.sweep(ps, out, progress=False)["done"] == ["breast_cancer"]
    ddir = out / "safe" / "breast_cancer"
    before = folder_digest(ddir)
    # the next run of the notebooks fails (a broken notebook source)
    broken = tmp_path / "nbs"
    broken.mkdir()
    (broken / "01_data_prep.py").write_text("# %%\nraise RuntimeError('boom')\n")
    monkeypatch.setenv("TCC_NOTEBOOKS", str(broken))
    rep = sweep.sweep(ps, out, progress=False, force=["all"])
    assert "RuntimeError: boom" in rep["failed"]["breast_cancer"]
    assert "previous results are kept" in rep["failed"]["breast_cancer"]
    assert folder_digest(ddir) == before  # results, marker and notebooks exactly as they were
    assert json.loads((out / "safe" / ".failed" / "breast_cancer" / "_FAILED.json").read_text())["error"]
    assert not (out / "safe" / ".previous" / "breast_cancer").exists()
    monkeypatch.delenv("TCC_NOTEBOOKS")
    # a later successful re-render replaces it and clears the failed render
    assert sweep.sweep(ps, out, progress=False, force=["all"])["done"] == ["breast_cancer"]
    assert not (out / "safe" / ".failed" / "breast_cancer").exists()


KILLER = textwrap.dedent("""
    import os, shutil, signal, sys
    from pathlib import Path
    from tcclib.running import params as param_files
    from tcclib.running import notebooks, sweep
    where = sys.argv[3]
    if where == "swap":  # killed right after the new marker, before the old copy is dropped
        real = shutil.rmtree
        def rmtree(path, *a, **k):
            if ".previous" in str(path):
                os.kill(os.getpid(), signal.SIGKILL)
            return real(path, *a, **k)
        shutil.rmtree = rmtree
    else:  # killed in the middle of the re-run's notebooks
        real_exec = notebooks.execute
        def _execute(nb, *a, **k):
            if nb == "03_pretraining":
                os.kill(os.getpid(), signal.SIGKILL)
            return real_exec(nb, *a, **k)
        notebooks.execute = _execute
    sweep.sweep(param_files.load(sys.argv[1]), Path(sys.argv[2]), progress=False, force=["all"], reuse=False)
""")


@pytest.mark.parametrize("where", ["notebooks", "swap"])
def test_kill_during_a_rerun_then_run_again_gives_an_uninterrupted_runs_results(tmp_path, where):
    p = _params(tmp_path)
    ps = param_files.load(p)
    out, clean = tmp_path / "out", tmp_path / "clean"
    sweep.sweep(ps, out, progress=False)
    sweep.sweep(ps, clean, progress=False)
    first = (out / "safe" / "breast_cancer" / "results.csv").read_bytes()
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    r = subprocess.run(
        [sys.executable, str(script), str(p), str(out), where],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == -9, r.stderr[-2000:]
    assert (out / "safe" / ".lock").exists()  # the dead sweep's lock is left behind
    rep = sweep.sweep(ps, out, progress=False)  # takes over the stale lock, recovers, skips the finished dataset
    assert rep["skipped"] == ["breast_cancer"] and not rep["failed"]
    ddir = out / "safe" / "breast_cancer"
    assert (ddir / "_DONE.json").exists() and not (out / "safe" / ".previous" / "breast_cancer").exists()
    for f in ("results.csv", "history.csv", "pseudo.csv"):
        assert (ddir / f).read_bytes() == (clean / "safe" / "breast_cancer" / f).read_bytes(), f
    assert (ddir / "results.csv").read_bytes() == first
    if where == "notebooks":
        assert (out / "safe" / ".failed" / "breast_cancer" / "01_data_prep.ipynb").exists()


def test_one_sweep_per_set_at_a_time(tmp_path):
    ps = param_files.load(_params(tmp_path, "[01_data_prep]"))
    out = tmp_path / "out"
    lock = out / "safe" / ".lock"
    lock.parent.mkdir(parents=True)
    import socket

    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": "now"}))
    with pytest.raises(sweep.SweepError, match="being run by another sweep"):
        sweep.sweep(ps, out, progress=False)
    assert not (out / "safe" / "breast_cancer").exists()  # nothing ran
    assert cli.main([str(tmp_path / "safe.yaml"), "--outputs", str(out)]) == 2
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": "then"}))
    assert sweep.sweep(ps, out, progress=False)["done"] == ["breast_cancer"]  # a stale lock is taken over
    assert not lock.exists()


@contextmanager
def _read_only(folder: Path):
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("root, and no immutable attribute here: cannot make a read-only folder")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_read_only_output_folder(tmp_path, capsys):
    p = _params(tmp_path, "[01_data_prep]")
    ps = param_files.load(p)
    out = tmp_path / "out"
    (out / "safe").mkdir(parents=True)
    with _read_only(out / "safe"):
        with pytest.raises(sweep.SweepError, match="cannot write the output folder"):
            sweep.sweep(ps, out, progress=False)
        assert cli.main([str(p), "--outputs", str(out)]) == 2
        assert "cannot write the output folder" in capsys.readouterr().err
    sweep.sweep(ps, out, progress=False)
    with _read_only(out / "safe"):  # finished: nothing to run, so no error at all
        rep = sweep.sweep(ps, out, progress=False)
        assert rep["skipped"] == ["breast_cancer"] and not rep["failed"]
        assert cli.main([str(p), "--outputs", str(out)]) == 0


def test_kill_9_mid_pretraining_then_rerun_resumes_byte_identical(tmp_path):
    """kill -9 of the sweep and its kernel once the first checkpoint is on disk; the
    next sweep resumes from it and ends with the files of an uninterrupted run."""
    import signal
    import time

    cfg = {**CFG, "methods": ["random", "class"], "epochs": 60, "pseudo_every": 5}
    p = tmp_path / "k9.yaml"
    p.write_text(
        f"name: k9\ndatasets: [breast_cancer]\nper_dataset_notebooks: [03_pretraining]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(cfg)}\n"
    )
    out, clean = tmp_path / "out", tmp_path / "clean"
    sweep.sweep(param_files.load(p), clean, progress=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tcclib.running.sweep", str(p), "--outputs", str(out)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "TCC_CHECKPOINT_SECONDS": "0"},  # (one every 10 epochs)
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while not list((out / ".cache" / "checkpoints").glob("*.pt")):
        assert proc.poll() is None and time.time() < deadline, "the sweep ended before its first checkpoint"
        time.sleep(0.01)
    # the kernel runs in a session of its own (jupyter_client): kill it and the sweep together
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True)
    for pid in [int(x) for x in kids.stdout.split()] + [proc.pid]:
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    ddir = out / "k9" / "breast_cancer"
    assert not (ddir / "_DONE.json").exists()
    rep = sweep.sweep(param_files.load(p), out, progress=False)
    assert rep["done"] == ["breast_cancer"]
    done = json.loads((ddir / "_DONE.json").read_text())
    assert done.get("resumed_at_epoch", 0) >= 10  # it did resume, not start over
    for f in ("results.csv", "history.csv", "pseudo.csv"):
        assert (ddir / f).read_bytes() == (clean / "k9" / "breast_cancer" / f).read_bytes(), f


def test_a_finished_dataset_whose_results_are_gone_runs_again(tmp_path, capsys):
    """``_DONE.json`` lists the result files it finished; one deleted since (by hand, or by a copy
    of the set that left it out) makes the dataset unfinished to the sweep, ``--check``, the status
    line and the aggregate, and the next sweep makes it again (``history.csv`` too, byte for
    byte).  A set whose notebooks write no results (01 alone) stays done, and so does a marker
    from before the list where the run's files are all there."""
    p = _params(tmp_path)
    ps = param_files.load(p)
    out = tmp_path / "out"
    assert sweep.sweep(ps, out, progress=False, reuse=False)["done"] == ["breast_cancer"]
    ddir = out / "safe" / "breast_cancer"
    listed = json.loads((ddir / "_DONE.json").read_text())["files"]
    assert {"results.csv", "history.csv", "keys.json", "config.json"} <= set(listed)
    first = (ddir / "results.csv").read_bytes()
    (ddir / "results.csv").unlink()
    assert store.status_line(out / "safe") == (
        "0 of 1 dataset done; incomplete: breast_cancer (results.csv missing from its finished folder)."
    )
    assert store.gather(out / "safe").empty
    assert cli.main([str(p), "--outputs", str(out), "--check"]) == 0
    assert "breast_cancer: results.csv missing from its finished folder: it runs again" in capsys.readouterr().out
    rep = sweep.sweep(ps, out, progress=False)
    assert rep["done"] == ["breast_cancer"] and not rep["skipped"]
    assert (ddir / "results.csv").read_bytes() == first  # the same results (from the stored checkpoints' keys)
    assert store.status_line(out / "safe") == "1 of 1 dataset done."
    # a stored member is its rows, its losses and its pseudo-labels: with history.csv gone they train
    # again (reused, they would bring back no losses), so the file comes back as it was
    history = (ddir / "history.csv").read_bytes()
    assert len(history.splitlines()) > 1
    (ddir / "history.csv").unlink()
    assert sweep.sweep(ps, out, progress=False)["done"] == ["breast_cancer"]
    assert (ddir / "history.csv").read_bytes() == history
    # a marker from before the list: results.csv expected where the run's other files are
    done = json.loads((ddir / "_DONE.json").read_text())
    (ddir / "_DONE.json").write_text(json.dumps({k: v for k, v in done.items() if k != "files"}))
    assert sweep.sweep(ps, out, progress=False)["skipped"] == ["breast_cancer"]
    (ddir / "results.csv").unlink()
    assert store.missing_files(ddir) == ["results.csv"]
    # notebook 01 alone writes no results: done, and done again
    p01 = _params(tmp_path, "[01_data_prep]")
    out01 = tmp_path / "out01"
    assert sweep.sweep(param_files.load(p01), out01, progress=False)["done"] == ["breast_cancer"]
    assert sweep.sweep(param_files.load(p01), out01, progress=False)["skipped"] == ["breast_cancer"]


@pytest.fixture(scope="module")
def finished_pair(tmp_path_factory):
    """A finished set of breast_cancer and kc2 (tiny settings), made once: each test takes a copy."""
    if not (DATA / "1063.arff").is_file():
        pytest.skip("needs ../shared/datasets/openml-cc18 (kc2)")
    folder = tmp_path_factory.mktemp("pair")
    p = _params(folder).with_name("pair.yaml")
    p.write_text(_params(folder).read_text().replace("[breast_cancer]", "[breast_cancer, kc2]"))
    assert sweep.sweep(param_files.load(p), folder / "out", progress=False)["done"] == ["breast_cancer", "kc2"]
    return p, folder / "out"


def _copy_of(finished_pair, tmp_path) -> tuple[Path, Path]:
    p, out = finished_pair
    (tmp_path / p.name).write_text(p.read_text())
    shutil.copytree(out, tmp_path / "out", symlinks=True)
    return tmp_path / p.name, tmp_path / "out"


def test_aggregates_rendered_from_stale_datasets_say_so(finished_pair, tmp_path, capsys):
    """``--aggregates`` renders the set's stored results as they are: a dataset that ran with other
    settings than the parameter file says so on the console (with the fix), in the aggregate
    notebooks' status line (``stale.json``) and in index.md; a run of one dataset (``--only kc2
    --force kc2``) leaves the other's note in place; brought up to date, the note goes."""
    p, out = _copy_of(finished_pair, tmp_path)
    p.write_text(p.read_text().replace('"epochs": 2', '"epochs": 3'))
    capsys.readouterr()
    assert cli.main([str(p), "--outputs", str(out), "--aggregates"]) == 0
    said = capsys.readouterr().out
    assert "breast_cancer: done in" in said and "(epochs 3 vs 2): --force stale" in said
    assert "members whose keys the changed settings reach train again" in said
    assert store.status_line(out / "safe") == (
        "2 of 2 datasets done; STALE, shown as stored but run with other settings than the parameter file: "
        "breast_cancer (epochs 3 vs 2), kc2 (epochs 3 vs 2)."
    )
    assert (
        "| breast_cancer | done, STALE: run with other settings than the parameter file (epochs 3 vs 2)"
        in (out / "safe" / "index.md").read_text()
    )
    rep = sweep.sweep(param_files.load(p), out, progress=False, only=["kc2"], force=["kc2"])
    assert rep["done"] == ["kc2"] and store.stale_noted(out / "safe") == {"breast_cancer": "epochs 3 vs 2"}
    p.write_text(p.read_text().replace('"epochs": 3', '"epochs": 2'))
    assert cli.main([str(p), "--outputs", str(out), "--aggregates", "--only", "breast_cancer"]) == 0
    assert store.stale_noted(out / "safe") == {"kc2": "epochs 2 vs 3"}


def test_a_forced_run_of_an_edited_notebook_is_said_stale_as_it_finishes(finished_pair, tmp_path, monkeypatch, capsys):
    """``--force`` with a notebook 03 edited to train otherwise than the parameter file (a cell
    setting ``epochs``): the run said a clean "1 run" and index.md "done" until the next run; now
    the sweep says so as the dataset finishes, and index.md and the status line mark it STALE."""
    p, out = _copy_of(finished_pair, tmp_path)
    edited = tmp_path / "nbs"
    edited.mkdir()
    for name in ("01_data_prep.py", "03_pretraining.py"):
        (edited / name).write_text((ROOT / "notebooks" / name).read_text())
    source = (edited / "03_pretraining.py").read_text()
    line = "cfg, ds, out = run_.cfg, run_.ds, run_.out\n"
    assert line in source
    (edited / "03_pretraining.py").write_text(source.replace(line, line + "cfg = cfg.replace(epochs=3)\n"))
    monkeypatch.setenv("TCC_NOTEBOOKS", str(edited))
    capsys.readouterr()
    assert cli.main([str(p), "--outputs", str(out), "--only", "breast_cancer", "--force", "breast_cancer"]) == 0
    said = capsys.readouterr().out
    assert "breast_cancer: its notebooks trained it with other settings than the parameter file (epochs 2 vs 3" in said
    assert "1 of those done ran with other settings than" in said
    assert store.stale_noted(out / "safe") == {"breast_cancer": "epochs 2 vs 3"}
    assert "| breast_cancer | done, STALE" in (out / "safe" / "index.md").read_text()


def test_a_result_file_edited_after_its_run_finished_is_not_reused_or_shown(finished_pair, tmp_path, capsys):
    """``_DONE.json`` records each result file's digest: a number edited by hand in results.csv (or
    a file cut short) makes the dataset unfinished to ``--check``, the status line and the
    aggregates, and the next sweep reuses none of its results: it makes them again, byte for byte.
    Another dataset's folder copied in under this one's name is no finished run either."""
    p, out = _copy_of(finished_pair, tmp_path)
    ddir = out / "safe" / "breast_cancer"
    recorded = json.loads((ddir / "_DONE.json").read_text())["sha256"]
    assert set(recorded) >= {"results.csv", "history.csv", "keys.json"}
    first = (ddir / "results.csv").read_bytes()
    lines = first.decode().splitlines()
    cells = lines[1].split(",")
    cells[4] = "0.999999"  # (one accuracy, by hand)
    (ddir / "results.csv").write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    assert store.status_line(out / "safe") == (
        "1 of 2 datasets done; incomplete: breast_cancer (results.csv changed since its run finished "
        "(not the bytes its _DONE.json recorded))."
    )
    assert set(store.gather(out / "safe").dataset) == {"kc2"}
    assert cli.main([str(p), "--outputs", str(out), "--check"]) == 0
    assert "breast_cancer: results.csv changed since its run finished" in capsys.readouterr().out
    rep = sweep.sweep(param_files.load(p), out, progress=False, aggregate=False)
    assert rep["done"] == ["breast_cancer"]
    assert (ddir / "results.csv").read_bytes() == first and store.status_line(out / "safe") == "2 of 2 datasets done."
    shutil.rmtree(out / "safe" / "kc2")
    shutil.copytree(ddir, out / "safe" / "kc2")  # (another dataset's results under this name)
    assert store.missing_files(out / "safe" / "kc2") == ["_DONE.json"]
    assert "kc2 (its _DONE.json names another dataset" in store.status_line(out / "safe")
