"""The Slurm example of docs/scale-out.md, run on a real one-node Slurm started in a temporary folder.

munged (on its own socket, with a key made here), slurmctld and slurmd (their own slurm.conf,
ports, state and spool folders) run for the test only and are stopped after it, also when it
fails. The docs' ``slurm_cluster.py`` runs as written, only its sizes made to fit this machine
(two one-core jobs); a two-dataset sweep runs on it through ``--scheduler``; once pretraining has
written its first checkpoint, the job of the worker running that dataset is cancelled with
``scancel``. The sweep must end with 0 failed and the files of a plain run.

Skipped, with the reason, where Slurm, munge or dask_jobqueue is missing (``make slurm-test``
installs them) or where the test does not run as root (slurmd launches the jobs)."""

import ast
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TCC_DATA_DIR", ROOT.parent / "shared" / "datasets" / "openml-cc18"))
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])  # the daemons live in sbin
LIMIT = 420  # seconds the sweep may take, whatever happens

CFG = {
    "seeds": [1],
    "methods": ["random", "class"],
    "epochs": 40,  # four checkpoints: the cancel lands mid-pretraining
    "head_epochs": 2,
    "pseudo_every": 5,
    "xgb_trees": 5,
    "xgb_depth": 3,
    "progress": False,
}


def _which(name: str) -> str | None:
    return shutil.which(name, path=SBIN)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, wait: float = 10) -> None:
    """SIGTERM, then SIGKILL: the process this test started (by its PID)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _started_under(conf: Path) -> list[int]:
    """PIDs of processes whose environment names this test's slurm.conf: the daemons, the slurmstepd
    they forked and the jobs' processes (sbatch passes its environment to the job)."""
    mark = f"SLURM_CONF={conf}".encode()
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                if mark in (p / "environ").read_bytes().split(b"\0"):
                    pids.append(int(p.name))
            except OSError:
                pass
    return pids


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _node_line() -> str:
    """This machine as `slurmd -C` sees it (real CPUs and memory), named for the test."""
    out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    first = out.splitlines()[0]  # NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105
    facts = " ".join(w for w in first.split() if not w.startswith("NodeName="))
    return f"NodeName=tccnode NodeAddr=127.0.0.1 NodeHostname=localhost {facts} State=UNKNOWN"


@pytest.fixture
def slurm(monkeypatch):
    """A one-node Slurm: munged, slurmctld, slurmd in the foreground, each stopped by its PID at the
    end (after its jobs are cancelled), and anything left that they started."""
    missing = [b for b in (*DAEMONS, *CLIENTS) if not _which(b)]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} not found): `make slurm-test` installs it")
    pytest.importorskip("dask_jobqueue", reason="dask_jobqueue is not installed: pip install -e '.[slurm]'")
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root to launch jobs (SlurmUser=root)")
    node = _node_line()
    # under /tmp, not $TMPDIR: munged wants every folder above its socket searchable by all
    base = Path(tempfile.mkdtemp(prefix="tcc-slurm-", dir="/tmp" if os.path.isdir("/tmp") else None))
    base.chmod(0o755)
    for d in ("munge", "state", "spool", "log", "login"):
        (base / d).mkdir()
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = base / "munge" / "munge.socket"
    conf = base / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=tcctest",
                "SlurmctldHost=localhost(127.0.0.1)",
                f"SlurmctldPort={_free_port()}",
                f"SlurmdPort={_free_port()}",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={sock}",
                f"StateSaveLocation={base / 'state'}",
                f"SlurmdSpoolDir={base / 'spool'}",
                f"SlurmctldPidFile={base / 'slurmctld.pid'}",
                f"SlurmdPidFile={base / 'slurmd.pid'}",
                f"SlurmctldLogFile={base / 'log' / 'slurmctld.log'}",
                f"SlurmdLogFile={base / 'log' / 'slurmd.log'}",
                "ProctrackType=proctrack/linuxproc",  # no cgroups needed (a container)
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "MpiDefault=none",
                "ReturnToService=2",
                "KillWait=5",  # a cancelled job's processes get SIGKILL 5 s after SIGTERM
                node,
                "PartitionName=tcc Nodes=tccnode Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    env = dict(os.environ, SLURM_CONF=str(conf))
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        with open(base / "log" / f"{name}.out", "wb") as log:
            procs.append(subprocess.Popen([_which(name), *args], stdout=log, stderr=log, env=env, cwd=base))

    try:
        start(
            "munged",
            "-F",
            f"--socket={sock}",
            f"--key-file={key}",
            f"--pid-file={base / 'munge' / 'munged.pid'}",
            f"--log-file={base / 'log' / 'munged.log'}",
            f"--seed-file={base / 'munge' / 'munged.seed'}",
        )
        _wait(lambda: sock.exists(), 15, "munged's socket", base / "log" / "munged.log")
        start("slurmctld", "-D")
        start("slurmd", "-D", "-N", "tccnode")
        _wait(lambda: _node_state() == "idle", 30, "the node to be idle", base / "log" / "slurmctld.log")
        yield base
    finally:
        if len(procs) > 1:  # the jobs first, while slurmctld and slurmd can still end them
            try:
                subprocess.run([_which("scancel"), "--user", "root"], env=env, capture_output=True, timeout=20)
                _wait(lambda: not _jobs(), 20, "the jobs to end", base / "log" / "slurmd.log")
            except (AssertionError, subprocess.SubprocessError):
                pass  # a hung controller: the daemons and what is left are killed below
        for p in reversed(procs):  # slurmd, slurmctld, munged
            _stop(p)
        for pid in _started_under(conf):  # a slurmstepd or job process that outlived them
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(base, ignore_errors=True)


def _node_state() -> str:
    r = subprocess.run([_which("sinfo"), "-h", "-o", "%t"], capture_output=True, text=True, timeout=10)
    return r.stdout.strip()


def _jobs() -> list[str]:
    r = subprocess.run([_which("squeue"), "-h", "-o", "%i %T"], capture_output=True, text=True, timeout=10)
    return r.stdout.splitlines()


def _wait(ok, seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}; {log}:\n{_tail(log)}"
        time.sleep(0.2)


def docs_example() -> str:
    """The ``slurm_cluster.py`` of docs/scale-out.md, as written there."""
    text = (ROOT / "docs" / "scale-out.md").read_text()
    m = re.search(r"```python\n(# slurm_cluster\.py.*?)```", text, re.S)
    assert m, "docs/scale-out.md has no slurm_cluster.py example"
    return m.group(1)


def sized(source: str, sizes: dict, jobs: int) -> str:
    """The example with the values of its SLURMCluster(...) keywords in ``sizes`` and its
    ``cluster.scale(jobs=...)`` replaced; every other line as in the docs."""
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    (make,) = [c for c in calls if getattr(c.func, "id", None) == "SLURMCluster"]
    given = {k.arg for k in make.keywords}
    assert set(sizes) <= given, f"the example lacks {set(sizes) - given}"
    for k in make.keywords:
        if k.arg in sizes:
            k.value = ast.parse(repr(sizes[k.arg]), mode="eval").body
    (scale,) = [c for c in calls if getattr(c.func, "attr", None) == "scale"]
    (kw,) = scale.keywords
    assert kw.arg == "jobs"
    kw.value = ast.parse(repr(jobs), mode="eval").body
    return ast.unparse(tree)


def test_the_docs_example_gives_one_thread_per_worker():
    """As written (8 cores, 2 processes a job), the job script's last --nthreads is the example's 1:
    dask's worker command takes the last one given."""
    slurm = pytest.importorskip("dask_jobqueue.slurm", reason="dask_jobqueue is not installed")
    from distributed.cli.dask_worker import main as worker_cli

    tree = ast.parse(docs_example())
    (make,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "SLURMCluster"]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in make.keywords}
    job = slurm.SLURMJob(scheduler="tcp://127.0.0.1:8786", name="x", **kwargs)
    script = job.job_script()
    assert "#SBATCH --cpus-per-task=8" in script and "export OMP_NUM_THREADS=4" in script
    cmd = next(line for line in script.splitlines() if "distributed.cli.dask_worker" in line).split()
    args = cmd[cmd.index("distributed.cli.dask_worker") + 1 :]
    ctx = worker_cli.make_context("dask-worker", args)
    assert ctx.params["nthreads"] == 1 and ctx.params["n_workers"] == "2"


def test_a_sweep_on_slurm_survives_a_cancelled_job(slurm, tmp_path):
    distributed = pytest.importorskip("distributed")
    p = tmp_path / "slurm.yaml"
    p.write_text(
        "name: slurm\ndatasets: [breast_cancer, balance-scale]\nper_dataset_notebooks: [03_pretraining]\n"
        f"aggregate_notebooks: []\nconfig: {json.dumps(CFG)}\n"
    )
    env = dict(os.environ, TCC_DATA_DIR=str(DATA), OMP_NUM_THREADS="1")
    # the docs' example, sized for this machine: two one-core jobs of one worker each
    prologue = [f"export TCC_DATA_DIR={DATA}", "export OMP_NUM_THREADS=1", "export TCC_CHECKPOINT_SECONDS=0"]
    if sys.prefix != sys.base_prefix:
        prologue.insert(0, f"source {sys.prefix}/bin/activate")
    source = sized(
        docs_example(),
        {"cores": 1, "processes": 1, "memory": "2GB", "walltime": "00:30:00", "job_script_prologue": prologue},
        jobs=2,
    )
    script, logs = slurm / "login" / "slurm_cluster.py", slurm / "log"
    script.write_text(source)
    with open(logs / "login.log", "wb") as login_log:
        login = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=script.parent,  # where sbatch writes the jobs' slurm-*.out
            env=dict(env, DASK_JOBQUEUE__SLURM__INTERFACE="lo"),  # scheduler and workers on 127.0.0.1
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=login_log,
            text=True,
        )
    sweep = None
    try:
        ready, _, _ = select.select([login.stdout], [], [], 60)
        address = login.stdout.readline().strip() if ready else ""
        assert address.startswith("tcp://127.0.0.1:"), f"{address!r}; {_tail(logs / 'login.log')}"
        # the plain run (no scheduler) while the jobs start
        t = time.monotonic()
        plain = subprocess.run(
            [sys.executable, "-m", "tcclib", str(p), "--outputs", str(tmp_path / "plain")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
        assert plain.returncode == 0, plain.stdout + plain.stderr
        plain_s = time.monotonic() - t
        out = tmp_path / "out"
        t = time.monotonic()
        with open(logs / "sweep.log", "wb") as sweep_log:  # (a file: a full pipe would stall the sweep)
            sweep = subprocess.Popen(
                [sys.executable, "-m", "tcclib", str(p), "--outputs", str(out), "--scheduler", address],
                cwd=ROOT,
                env=env,
                stdout=sweep_log,
                stderr=subprocess.STDOUT,
            )
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            assert sorted(j.split()[1] for j in _jobs()) == ["RUNNING", "RUNNING"]
            ckpts = out / ".cache" / "checkpoints"
            while not list(ckpts.glob("*.pt")):
                assert sweep.poll() is None, "the sweep ended before its first checkpoint:\n" + _tail(
                    logs / "sweep.log"
                )
                assert time.monotonic() - t < LIMIT, "no checkpoint"
                time.sleep(0.1)
            name = list(ckpts.glob("*.pt"))[0].name
            dataset = next(d for d in ("breast_cancer", "balance-scale") if name.startswith(f"{d}-"))
            busy = [
                w for w, keys in client.processing().items() if any(f"tcc-slurm-{dataset}-" in str(k) for k in keys)
            ]
            assert len(busy) == 1, client.processing()
            # (a lambda: a bound os.environ.get would carry this process's environment along)
            job = client.run(lambda: os.environ.get("SLURM_JOB_ID"), workers=busy)[busy[0]]
            assert job, "the worker runs outside a Slurm job"
            cancel_s = time.monotonic() - t
            subprocess.run([_which("scancel"), job], check=True, timeout=20)
            _wait(lambda: job not in [j.split()[0] for j in _jobs()], 30, f"job {job} to end", logs / "slurmd.log")
            sweep.wait(LIMIT)
            sweep_s = time.monotonic() - t
            assert len(client.scheduler_info()["workers"]) == 1  # the cancelled job's worker is gone
        text = (logs / "sweep.log").read_text()
        state = subprocess.run([_which("scontrol"), "show", "job", job], capture_output=True, text=True).stdout
        assert "JobState=CANCELLED" in state, state
        assert sweep.returncode == 0, text
        assert "slurm: 2 run, 0 already done, 0 failed" in text, text
        for d in ("breast_cancer", "balance-scale"):
            a, b = tmp_path / "plain" / "slurm" / d, out / "slurm" / d
            for f in ("results.csv", "history.csv", "pseudo.csv"):
                assert (a / f).read_bytes() == (b / f).read_bytes(), (d, f)
        done = json.loads((out / "slurm" / dataset / "_DONE.json").read_text())
        assert done.get("resumed_at_epoch", 0) >= 10, done  # another worker went on from the checkpoint
        print(
            f"\nSlurm sweep: {sweep_s:.0f} s (plain run {plain_s:.0f} s); job {job} of the worker running "
            f"{dataset} cancelled at {cancel_s:.0f} s; resumed at epoch {done['resumed_at_epoch']}; "
            f"0 failed; results identical"
        )
    finally:
        if sweep is not None:
            _stop(sweep)
        if login.poll() is None:  # Enter stops the example's cluster (it cancels its jobs)
            try:
                login.communicate("\n", timeout=30)
            except subprocess.TimeoutExpired:
                pass
        _stop(login)
