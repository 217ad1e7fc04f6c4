"""The thread budget, and sweeps on a real Dask LocalCluster: seed groups give the whole dataset's
results, files come back without a shared filesystem, a worker killed mid-unit loses nothing."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import alive, interrupt_when

from tcclib.running import params as param_files
from tcclib.running import scale, sweep
from tcclib.util import threads

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- thread budget


def test_budget_shares_the_cores_and_respects_an_explicit_count():
    assert threads.budget(2, n_cores=2, environ={}).threads == 1
    assert threads.budget(3, n_cores=8, environ={}).threads == 2
    assert threads.budget(5, n_cores=2, environ={}).threads == 1  # at least one
    assert threads.budget(1, n_cores=16, environ={}).threads == 16
    assert threads.budget(2, n_cores=2, environ={}).line() == "2 workers x 1 thread (2 cores)"
    b = threads.budget(4, n_cores=16, environ={"OMP_NUM_THREADS": "3"})
    assert (b.threads, b.source) == (3, "OMP_NUM_THREADS")
    assert threads.budget(4, threads=2, n_cores=16, environ={"OMP_NUM_THREADS": "3"}).threads == 2  # --threads wins
    assert threads.env(b) == {
        "OMP_NUM_THREADS": "3",
        "MKL_NUM_THREADS": "3",
        "OPENBLAS_NUM_THREADS": "3",
        "TCC_THREADS": "3",
    }
    with pytest.raises(threads.ThreadsError, match="--threads must be a positive integer"):
        threads.budget(1, threads=0)
    with pytest.raises(threads.ThreadsError, match=r"\$OMP_NUM_THREADS must be a positive integer"):
        threads.budget(1, environ={"OMP_NUM_THREADS": "many"})


def test_xgboost_n_jobs_follows_the_budget(monkeypatch):
    from tcclib.method.baselines import _model
    from tcclib.method.config import Config
    from tcclib.method.correlation import _xgb_params

    monkeypatch.setenv("TCC_THREADS", "3")
    assert _xgb_params(Config(), 1)["n_jobs"] == 3
    assert _model("xgboost", 1, Config()).get_params()["n_jobs"] == 3
    monkeypatch.delenv("TCC_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert _xgb_params(Config(), 1)["n_jobs"] == 2


PROBE = """# %%
import json, os, torch
from tcclib.util import threads
from tcclib.method.correlation import _xgb_params
from tcclib.method.config import Config
json.dump({"env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TCC_THREADS")},
           "torch": torch.get_num_threads(), "xgb": _xgb_params(Config(), 1)["n_jobs"],
           "allocator": {k: os.environ.get(k) for k in threads.ALLOCATOR_ENV}},
          open(os.path.join(output_dir, "threads.json"), "w"))  # (papermill's cwd is process-wide)
"""


def test_sweep_kernels_get_the_budget(tmp_path, monkeypatch, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "01_data_prep.py").write_text(PROBE)
    monkeypatch.setenv("TCC_NOTEBOOKS", str(nbs))
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TCC_THREADS", threads.ALLOCATOR_SWITCH, *threads.ALLOCATOR_ENV):
        monkeypatch.delenv(k, raising=False)
    p = tmp_path / "th.yaml"
    p.write_text(
        "name: th\ndatasets: [breast_cancer, diabetes]\nper_dataset_notebooks: [01_data_prep]\n"
        "aggregate_notebooks: []\n"
    )
    out = tmp_path / "out"
    rep = sweep.sweep(param_files.load(p), out, workers=2, progress=False)
    assert sorted(rep["done"]) == ["breast_cancer", "diabetes"]
    share = max(1, threads.cores() // 2)
    assert f"threads: 2 workers x {share} thread" in capsys.readouterr().out
    for d in rep["done"]:
        got = json.loads((out / "th" / d / "threads.json").read_text())
        assert got == {
            "env": {"OMP_NUM_THREADS": str(share), "MKL_NUM_THREADS": str(share), "TCC_THREADS": str(share)},
            "torch": share,
            "xgb": share,
            "allocator": threads.ALLOCATOR_ENV,
        }  # the kernels keep freed memory (test_speed)
    assert "OMP_NUM_THREADS" not in os.environ  # the sweep's own environment is as it was
    assert not set(threads.ALLOCATOR_ENV) & set(os.environ)
    # --threads wins over the share
    rep = sweep.sweep(param_files.load(p), out, workers=2, progress=False, force=["all"], threads=1)
    got = json.loads((out / "th" / "diabetes" / "threads.json").read_text())
    assert got["env"]["OMP_NUM_THREADS"] == "1" and got["torch"] == 1 and got["xgb"] == 1
    # TCC_ALLOCATOR=system leaves the kernels' allocators alone
    monkeypatch.setenv(threads.ALLOCATOR_SWITCH, "system")
    sweep.sweep(param_files.load(p), out, workers=1, progress=False, force=["diabetes"], only=["diabetes"])
    got = json.loads((out / "th" / "diabetes" / "threads.json").read_text())
    assert got["allocator"] == {k: None for k in threads.ALLOCATOR_ENV}


@pytest.mark.parametrize(
    "kw,word",
    [
        (dict(scheduler="locl"), "scheduler must be local, local:N"),
        (dict(scheduler="local:0"), "scheduler must be local, local:N"),
        (dict(seeds_per_unit=2), "--seeds-per-unit splits datasets into units for a cluster"),
        (dict(scheduler="local", seeds_per_unit=0), "--seeds-per-unit must be a positive integer"),
        (dict(threads=0), "--threads must be a positive integer"),
    ],
)
def test_bad_cluster_options_stop_before_any_work(tmp_path, kw, word):
    p = tmp_path / "b.yaml"
    p.write_text("name: b\ndatasets: [breast_cancer]\nper_dataset_notebooks: [01_data_prep]\n")
    with pytest.raises(sweep.SweepError, match=word):
        sweep.sweep(param_files.load(p), tmp_path / "out", progress=False, **kw)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "text,word",
    [
        ("scheduler: tpc//host\n", "scheduler must be local"),
        ("seeds_per_unit: 0\n", "'seeds_per_unit' must be a positive integer"),
    ],
)
def test_bad_cluster_keys_in_a_parameter_file(tmp_path, text, word):
    p = tmp_path / "b.yaml"
    p.write_text("name: b\ndatasets: [breast_cancer]\n" + text)
    with pytest.raises(param_files.ParamsError, match=word):
        param_files.load(p)
    p.write_text("name: b\ndatasets: [breast_cancer]\nscheduler: local:2\nseeds_per_unit: 2\n")
    ps = param_files.load(p)
    assert (ps.scheduler, ps.seeds_per_unit) == ("local:2", 2)
    # a GPU set run on a remote cluster loads on a client without a GPU; run here, it does not
    gpu = "name: b\ndatasets: [breast_cancer]\nconfig: {device: cuda}\n"
    p.write_text(gpu + "scheduler: tcp://gpu-login:8786\n")
    assert param_files.load(p).config.device == "cuda"
    import torch

    if not torch.cuda.is_available():
        p.write_text(gpu)
        with pytest.raises(param_files.ParamsError, match="no CUDA device is visible here"):
            param_files.load(p)


# ---------------------------------------------------------------- on a LocalCluster

CFG = {
    "seeds": [1, 2, 3],
    "methods": ["no_pretrain", "random", "class_most"],
    "epochs": 2,
    "head_epochs": 2,
    "pseudo_every": 1,
    "xgb_trees": 5,
    "xgb_depth": 3,
    "progress": False,
}


def test_seed_groups_without_a_shared_filesystem_give_the_whole_datasets_results(tmp_path):
    pytest.importorskip("distributed")
    p = tmp_path / "g.yaml"
    p.write_text(
        f"name: g\ndatasets: [breast_cancer]\nkeep_embeddings: [breast_cancer]\n"
        f"per_dataset_notebooks: [02_correlation, 03_pretraining]\naggregate_notebooks: []\n"
        f"config: {json.dumps(CFG)}\n"
    )
    ps = param_files.load(p)
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert sweep.sweep(ps, whole, progress=False)["done"] == ["breast_cancer"]
    rep = sweep.sweep(ps, split, progress=False, scheduler="local:2", seeds_per_unit=2, shared_fs=False)
    assert rep["done"] == ["breast_cancer"] and not rep["failed"]
    a, b = whole / "g" / "breast_cancer", split / "g" / "breast_cancer"
    ra, rb = pd.read_csv(a / "results.csv"), pd.read_csv(b / "results.csv")
    assert len(rb) == 9
    pd.testing.assert_frame_equal(ra, rb)  # the same numbers, in the same order
    for f in ("results.csv", "history.csv", "pseudo.csv", "corr_range.csv"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    with np.load(a / "importance.npz") as za, np.load(b / "importance.npz") as zb:
        assert za.files == zb.files == ["seed_1", "seed_2", "seed_3"]
        assert all(np.array_equal(za[n], zb[n]) for n in za.files)
    with np.load(a / "embeddings.npz") as za, np.load(b / "embeddings.npz") as zb:
        assert sorted(za.files) == sorted(zb.files) and all(np.array_equal(za[n], zb[n]) for n in za.files)
    assert json.loads((a / "keys.json").read_text()) == json.loads((b / "keys.json").read_text())
    done = json.loads((b / "_DONE.json").read_text())
    assert done["trained_members"] == 9 and done["worker"]["shared_fs"] is False
    assert [u["seeds"] for u in done["seed_units"]] == [[1, 2], [3]]
    # the notebooks came back as bytes; the worker's temporary folder is nowhere in them
    nb = (b / "03_pretraining.ipynb").read_text()
    assert "tcc-unit-" not in nb and f'output_dir = \\"{b}\\"' in nb
    assert "members trained now: 0, reused from stored results: 9" in nb  # rendered from the merged store
    assert not (split / "g" / ".scale-token").exists()
    # finished units are never redone: a second sweep skips the dataset
    stamp = (b / "_DONE.json").stat().st_mtime_ns
    assert sweep.sweep(ps, split, progress=False, scheduler="local:1")["skipped"] == ["breast_cancer"]
    assert (b / "_DONE.json").stat().st_mtime_ns == stamp


@pytest.mark.parametrize("per_unit", [None, 2])
def test_a_failed_unit_is_reported_like_a_failed_dataset(tmp_path, monkeypatch, per_unit):
    pytest.importorskip("distributed")
    data = tmp_path / "data"
    data.mkdir()
    (data / "37.arff").write_text("@relation broken\n@attribute a NUMERIC\n@data\nnot,arff\n")
    monkeypatch.setenv("TCC_DATA_DIR", str(data))
    p = tmp_path / "f.yaml"
    p.write_text(
        f"name: f\ndatasets: [diabetes]\nper_dataset_notebooks: [03_pretraining]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps({**CFG, 'methods': ['no_pretrain']})}\n"
    )
    rep = sweep.sweep(
        param_files.load(p), tmp_path / "out", progress=False, scheduler="local:1", seeds_per_unit=per_unit
    )
    err = rep["failed"]["diabetes"]
    assert "DatasetError: " in err and "37.arff, line 4" in err and "\n" not in err
    fail = json.loads((tmp_path / "out" / "f" / "diabetes" / "_FAILED.json").read_text())
    assert "37.arff, line 4" in fail["error"]
    assert "| diabetes | failed" in (tmp_path / "out" / "f" / "index.md").read_text()
    if per_unit is None:  # the notebook rendered up to the error came back from the worker
        assert (tmp_path / "out" / "f" / "diabetes" / "03_pretraining.ipynb").exists()


def _kill_tree(pid: int) -> None:
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    for k in [int(x) for x in kids.stdout.split()]:
        _kill_tree(k)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_worker_killed_mid_unit_loses_nothing(tmp_path):
    """A real LocalCluster; the worker running the dataset is killed (with its kernel) once the
    first pretraining checkpoint is on disk: the unit goes to another worker, which resumes from
    that checkpoint, and the results are those of an uninterrupted run."""
    distributed = pytest.importorskip("distributed")
    cfg = {**CFG, "seeds": [1], "methods": ["random", "class"], "epochs": 40, "pseudo_every": 5}
    p = tmp_path / "k.yaml"
    p.write_text(
        f"name: k\ndatasets: [breast_cancer]\nper_dataset_notebooks: [03_pretraining]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(cfg)}\n"
    )
    ps = param_files.load(p)
    clean, out = tmp_path / "clean", tmp_path / "out"
    sweep.sweep(ps, clean, progress=False)
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs=scale.QUIET_SCHEDULER,
        env={"OMP_NUM_THREADS": "1", "TCC_CHECKPOINT_SECONDS": "0"},  # (a checkpoint every 10 epochs)
    )
    client = distributed.Client(cluster)
    try:
        box = {}
        th = threading.Thread(
            target=lambda: box.setdefault(
                "rep", sweep.sweep(ps, out, progress=False, scheduler=cluster.scheduler_address)
            )
        )
        th.start()
        deadline = time.time() + 300
        while not list((out / ".cache" / "checkpoints").glob("*.pt")):
            assert th.is_alive() and time.time() < deadline, "the sweep ended before its first checkpoint"
            time.sleep(0.05)
        busy = [w for w, keys in client.processing().items() if any("tcc-k-breast_cancer" in str(k) for k in keys)]
        assert len(busy) == 1
        pid = client.run(os.getpid, workers=busy)[busy[0]]
        _kill_tree(pid)
        th.join(600)
        assert not th.is_alive()
    finally:
        client.close()
        cluster.close()
    rep = box["rep"]
    assert rep["done"] == ["breast_cancer"] and not rep["failed"]
    ddir = out / "k" / "breast_cancer"
    done = json.loads((ddir / "_DONE.json").read_text())
    assert done.get("resumed_at_epoch", 0) >= 10  # resumed from the dead worker's checkpoint
    assert done["worker"]["shared_fs"] is True
    for f in ("results.csv", "history.csv", "pseudo.csv"):
        assert (ddir / f).read_bytes() == (clean / "k" / "breast_cancer" / f).read_bytes(), f
    assert not list((out / ".cache" / "checkpoints").glob("*.pt"))


def test_the_client_installs_units_through_the_sweeps_folder_transaction(tmp_path):
    """scale.install uses folders.DatasetFolder: a failed re-run leaves the finished results byte for
    byte and puts its render and record in .failed/; a finished one replaces them, marker last."""
    from tcclib.running import folders, scale

    set_dir = tmp_path / "s"
    ddir = set_dir / "d"
    ddir.mkdir(parents=True)
    (ddir / "results.csv").write_text("seed,accuracy\n1,0.5\n")
    (ddir / "_DONE.json").write_text('{"dataset": "d", "finished": "then"}\n')
    before = {f.name: f.read_bytes() for f in ddir.iterdir()}
    res = {"ok": False, "error": "RuntimeError: boom", "host": "h", "shared_fs": False, "threads": 1}
    note = scale.install(set_dir, "d", {**res, "files": {"results.csv": b"seed,accuracy\n1,0.1\n"}})
    assert "previous results are kept" in note and str(set_dir / ".failed" / "d") in note
    assert {f.name: f.read_bytes() for f in ddir.iterdir()} == before
    assert (set_dir / ".failed" / "d" / "results.csv").read_text().endswith("0.1\n")
    assert json.loads((set_dir / ".failed" / "d" / "_FAILED.json").read_text())["error"] == "RuntimeError: boom"
    assert folders.failed_record(set_dir, "d") == set_dir / ".failed" / "d" / "_FAILED.json"
    assert not (set_dir / ".previous" / "d").exists()
    done = {"results.csv": b"seed,accuracy\n1,0.9\n", "_DONE.json": b'{"dataset": "d", "finished": "now"}'}
    assert scale.install(set_dir, "d", {**res, "ok": True, "error": None, "files": done}) is None
    assert (ddir / "results.csv").read_text().endswith("0.9\n")
    assert json.loads((ddir / "_DONE.json").read_text())["worker"] == {"host": "h", "shared_fs": False, "threads": 1}
    assert not (set_dir / ".previous" / "d").exists() and not (set_dir / ".failed" / "d").exists()
    assert folders.failed_record(set_dir, "d") == ddir / "_FAILED.json"


def test_an_interrupt_cancels_a_dask_sweep_and_the_next_run_resumes(tmp_path):
    """Ctrl-C (SIGINT to the process group) while two seed units train on a LocalCluster: the
    futures are cancelled and the cluster closed within seconds, one line, exit 130, no worker
    process left; the next run removes the killed units' temporary folders and resumes their
    pretraining from its checkpoints."""
    pytest.importorskip("distributed")
    p = tmp_path / "d.yaml"
    p.write_text(
        "name: d\ndatasets: [breast_cancer]\nper_dataset_notebooks: [03_pretraining]\naggregate_notebooks: []\n"
        "scheduler: local:2\nseeds_per_unit: 1\n"
        "config: {seeds: [0, 1], epochs: 150, methods: [random], baselines: [], progress: false}\n"
    )  # (stopped at the first checkpoints, epoch 10-30: the workers end at the signal, scale.end_local_workers)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TCC_PROGRESS": "lines", "TCC_CHECKPOINT_SECONDS": "1",
           "TMPDIR": str(scratch)}  # fmt: skip
    cmd = [sys.executable, "-m", "tcclib", str(p), "--outputs", str(tmp_path / "out")]
    checkpoints = tmp_path / "out" / ".cache" / "checkpoints"
    seen = interrupt_when(cmd, tmp_path / "log", lambda: len(list(checkpoints.glob("*"))) >= 2, 300, env=env)
    assert len(seen.workers) >= 2, "the units run in the LocalCluster's worker processes"
    assert seen.code == 130, seen.text[-3000:]  # before its work was done (seconds: bench/stop_times.py)
    assert "Traceback" not in seen.text
    assert seen.last_line.startswith("interrupted: 0 of the 1 dataset this run had to do finished"), seen.last_line
    time.sleep(3)
    assert [w for w in seen.workers if alive(w)] == []
    assert len(list(scratch.glob("tcc-unit-*"))) == 2, "a killed unit cannot remove its own folder"
    assert not (tmp_path / "out" / "d" / "breast_cancer" / "_DONE.json").exists()
    # the rest on one worker: both units resume from their checkpoints (the keys hold no scheduler),
    # and two workers on this test's one core train half as fast (100 epochs of the two seeds: 31 s
    # of pretraining on local:2, 14 s on local:1)
    again = subprocess.run([*cmd, "--scheduler", "local:1"], env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert list(scratch.glob("tcc-unit-*")) == [], "the killed units' folders are removed"
    timings = json.loads((tmp_path / "out" / "d" / "breast_cancer" / "timings.json").read_text())
    assert timings.get("resumed_at_epoch", 0) > 0, timings


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # (a unit's training: nothing a worker's close can stop)
        time.sleep(0.05)


def test_an_interrupt_ends_a_local_cluster_s_busy_workers_and_none_starts_again():
    """What an interrupt does to a LocalCluster (:func:`scale.end_local_workers`): a worker running a
    task that will not stop is ended, its nanny starts no new one, and this process's dask logs no
    longer speak below ERROR (each killed connection was an INFO line with a traceback)."""
    pytest.importorskip("distributed")
    dask_log = logging.getLogger("distributed")
    level = dask_log.level
    connection = scale.connect(scale.ClusterOptions(address="local:1"), say=lambda *_: None)
    client, cluster, _ = connection  # (the sweep's own LocalCluster)
    try:
        future = client.submit(_busy, 600)
        while not client.processing() or not any(client.processing().values()):
            time.sleep(0.05)
        (pid,) = client.run(os.getpid).values()
        scale.end_local_workers(cluster)
        deadline = time.monotonic() + 30  # (only stops a hang)
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), "the busy worker still runs"
        time.sleep(2)  # (a nanny that restarts its worker does so at once)
        assert [n.pid for n in cluster.workers.values()] == [None]
        # (the scheduler's INFO line and traceback for each killed worker's closed connection)
        assert not logging.getLogger("distributed.batched").isEnabledFor(logging.INFO)
        future.cancel()
    finally:
        scale.disconnect(connection)
        dask_log.setLevel(level)


def test_a_local_cluster_s_workers_drop_only_the_lost_heartbeat(caplog):
    """An interrupt closes the LocalCluster's scheduler (in the sweep's process) while its workers
    still beat: each logged "Failed to communicate with scheduler during heartbeat" with a
    traceback after the sweep's one line. Their other errors still show."""
    import logging

    from tcclib.running.scale import quiet_heartbeats

    worker_log = logging.getLogger("distributed.worker")
    saved = list(worker_log.filters)
    try:
        quiet_heartbeats()
        with caplog.at_level(logging.ERROR, logger="distributed.worker"):
            worker_log.error("Failed to communicate with scheduler during heartbeat.")
            worker_log.error("Compute Failed")
        assert [r.getMessage() for r in caplog.records] == ["Compute Failed"]
    finally:
        worker_log.filters[:] = saved


def test_a_local_cluster_leaves_the_dashboard_port_alone(recwarn):
    """Our LocalCluster's scheduler serves HTTP on a free port, not on 8787 (the port a user's
    own Dask dashboard or a second sweep holds): held here, it is not taken and nothing warns."""
    import socket

    pytest.importorskip("distributed")
    holder = socket.socket()
    try:
        holder.bind(("", 8787))
        holder.listen()
    except OSError:
        pass  # (held already: the same test)
    try:
        connection = scale.connect(scale.ClusterOptions(address="local:1"), say=lambda *_: None)
        try:
            port = connection[1].scheduler.http_server.port
        finally:
            scale.disconnect(connection)
    finally:
        holder.close()
    assert port != 8787
    assert not [w for w in recwarn if "already in use" in str(w.message)]
