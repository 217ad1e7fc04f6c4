"""How long the command takes to stop: after Ctrl-C, and at a scheduler address that never answers
or has no worker, against the bound it was given.

    python bench/stop_times.py            # 3 runs of each
    python bench/stop_times.py --runs 5

* ``interrupt``: a sweep of breast_cancer (``03_pretraining``, 400 epochs, so that it is still
  training) runs ``python -m tcclib`` in a session of its own; once its notebook runs in its kernel
  (and 5 s more) the process group gets SIGINT, as Ctrl-C in a terminal sends it: seconds from the
  signal to the command's exit (exit status 130 expected);
* ``silent scheduler``: ``--scheduler`` a port that accepts connections and never answers, with
  ``--connect-timeout 2``: seconds to the one-line error, in this process (the first run also
  imports Dask, as every fresh ``python -m tcclib`` with ``--scheduler`` does);
* ``no worker``: a real Dask scheduler without workers, with ``--worker-wait 3``: seconds to the
  one-line error, in this process.

The tests check what does not depend on the machine (the words of each bound's own error, exit
status 130 before the work was done, no process left); these seconds do, so they are printed here,
the fewest, the median and the most of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcclib.running import cli  # noqa: E402

SWEEP = (
    "name: stop\ndatasets: [breast_cancer]\nper_dataset_notebooks: [03_pretraining]\naggregate_notebooks: []\n"
    "config: {seeds: [0, 1], epochs: 400, methods: [random], baselines: []}\n"
)
SMALL = "name: c\ndatasets: [breast_cancer]\nper_dataset_notebooks: [01_data_prep]\naggregate_notebooks: []\n"


def _default_sigint() -> None:
    """SIGINT's default action in the child, as from a terminal (not a background shell's SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_seconds(folder: Path) -> float:
    """Seconds from SIGINT to the exit of a sweep whose notebook runs in its kernel."""
    params = folder / "stop.yaml"
    params.write_text(SWEEP)
    out = folder / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TCC_PROGRESS": "lines"}
    with (folder / "log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tcclib", str(params), "--outputs", str(out)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_default_sigint,
            env=env,
        )
    try:
        while not list(out.rglob("*.running.ipynb")):
            if proc.poll() is not None:
                raise RuntimeError(f"the sweep ended before its notebook ran: {(folder / 'log').read_text()[-2000:]}")
            time.sleep(0.5)
        time.sleep(5)
        start = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=600)
        seconds = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if code != 130:
        raise RuntimeError(f"exit status {code}, not 130: {(folder / 'log').read_text()[-2000:]}")
    return seconds


def command_seconds(folder: Path, *options: str) -> float:
    """Seconds of ``python -m tcclib`` (in this process) on a small set with ``options``, which
    must end in its one-line error (exit status 2)."""
    params = folder / "c.yaml"
    params.write_text(SMALL)
    start = time.monotonic()
    with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
        code = cli.main([str(params), "--outputs", str(folder / "out"), *options])
    seconds = time.monotonic() - start
    if code != 2:
        raise RuntimeError(f"exit status {code}, not 2: {err.getvalue()[-2000:]}")
    return seconds


def _line(what: str, seconds: list[float], bound: str) -> str:
    s = sorted(seconds)
    runs = ", ".join(f"{x:.1f}" for x in seconds)
    return (
        f"  {what:18s} fewest {s[0]:6.1f} s  median {statistics.median(s):6.1f} s  most {s[-1]:6.1f} s  "
        f"({bound}; runs in order: {runs})"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")
    args = ap.parse_args(argv)
    import distributed  # deferred: only this benchmark's scheduler needs it

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; {args.runs} runs each")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        interrupt = [interrupt_seconds(Path(tempfile.mkdtemp(dir=folder))) for _ in range(args.runs)]
        print(_line("interrupt", interrupt, "Ctrl-C to exit, a notebook in its kernel"), flush=True)
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        with silent:
            options = ("--scheduler", address, "--connect-timeout", "2")
            quiet = [command_seconds(folder, *options) for _ in range(args.runs)]
        print(_line("silent scheduler", quiet, "--connect-timeout 2"), flush=True)
        cluster = distributed.LocalCluster(
            n_workers=0, processes=True, dashboard_address=None, host="127.0.0.1", silence_logs=50
        )
        with cluster:
            alone = [
                command_seconds(folder, "--scheduler", cluster.scheduler_address, "--worker-wait", "3")
                for _ in range(args.runs)
            ]
        print(_line("no worker", alone, "--worker-wait 3"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
