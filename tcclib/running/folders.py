"""A dataset's folder as a transaction: keep the previous results, finish, fail, recover.

A run of a dataset writes into ``<set>/<dataset>``; a re-run first copies the finished results to
``<set>/.previous/<dataset>``, and a failure puts them back (:func:`run_dataset_notebooks`,
:func:`recover`).  :class:`set_lock` keeps two sweeps off one set; :func:`check_writable` refuses
an output folder that cannot be written before any work starts.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
import traceback
from pathlib import Path

from tcclib.artifacts import store
from tcclib.running import notebooks
from tcclib.running import params as param_files
from tcclib.util.kernel import interpreter


def error_line(e: BaseException) -> str:
    """An exception as one line: type and message (a notebook's own exception for a
    PapermillExecutionError), for the console and ``index.md``; the traceback is in _FAILED.json."""
    name, msg = type(e).__name__, str(e)
    if isinstance(e, RerunFailed):
        return " ".join(msg.split())
    if hasattr(e, "ename") and hasattr(e, "evalue"):
        name, msg = e.ename, str(e.evalue)
    msg = " ".join(msg.split())
    return f"{name}: {msg}" if msg else name


def _files_digest(ddir: Path) -> dict:
    return {
        f: hashlib.sha256((ddir / f).read_bytes()).hexdigest()
        for f in ("results.csv", "history.csv", "timings.json")
        if (ddir / f).exists()
    }


PREVIOUS = ".previous"
FAILED_DIR = ".failed"
LOCK = ".lock"


class SweepError(RuntimeError):
    """The sweep cannot start: the set is locked by another sweep, or its folder is not writable."""


class RerunFailed(RuntimeError):
    """A re-run of a finished dataset failed; its previous results were put back."""


def recover(set_dir: Path, dataset: str) -> str | None:
    """Finish or undo a re-run of ``dataset`` that was cut short (killed, power loss).

    A re-run keeps the finished results in ``<set>/.previous/<dataset>`` until it succeeds.  If
    that folder is still there: when the dataset's own folder has its (new) ``_DONE.json`` the
    re-run finished and only the clean-up was cut short, so the copy goes; otherwise the previous
    results come back and the unfinished render moves to ``<set>/.failed/<dataset>``."""
    prev, cur = set_dir / PREVIOUS / dataset, set_dir / dataset
    if not prev.exists():
        return None
    if (cur / "_DONE.json").exists():
        shutil.rmtree(prev)
        return "a finished re-run's clean-up was cut short: completed"
    if cur.exists():
        failed = set_dir / FAILED_DIR / dataset
        shutil.rmtree(failed, ignore_errors=True)
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(cur, failed)
    os.replace(prev, cur)
    return f"an interrupted re-run was undone: the previous results are back (its partial render is in {FAILED_DIR}/)"


def keep_previous(set_dir: Path, dataset: str) -> Path:
    """Copy the finished results of ``dataset`` to ``.previous/`` (complete, or not at all)."""
    prev = set_dir / PREVIOUS / dataset
    tmp = set_dir / PREVIOUS / f".{dataset}.copying"
    shutil.rmtree(tmp, ignore_errors=True)
    prev.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(set_dir / dataset, tmp, symlinks=True)
    os.replace(tmp, prev)
    return prev


def run_dataset_notebooks(ps: param_files.ParamSet, dataset: str, out_root: Path, reuse: bool = True) -> float:
    """Execute the per-dataset notebooks of ``dataset``; ``_DONE.json`` last.

    Re-running a finished dataset never loses it: its results are first copied to
    ``<set>/.previous/<dataset>`` and the notebooks run in the dataset's folder (where the stored
    results are reused where they match); only when they all succeed is the copy dropped.  When
    they fail, the failed render moves to ``<set>/.failed/<dataset>`` (with ``_FAILED.json``) and
    the previous results, marker and notebooks come back exactly as they were
    (:class:`RerunFailed`).  A run killed at any point is finished or undone by :func:`recover`
    on the next sweep."""
    set_dir = out_root / ps.name
    ddir = set_dir / dataset
    t = time.perf_counter()
    recover(set_dir, dataset)
    previous = json.loads((ddir / "_DONE.json").read_text()) if (ddir / "_DONE.json").exists() else None
    before = _files_digest(ddir) if ddir.exists() else {}
    prev_dir = keep_previous(set_dir, dataset) if previous is not None else None
    for marker in ("_DONE.json", "_FAILED.json"):
        (ddir / marker).unlink(missing_ok=True)
    ddir.mkdir(parents=True, exist_ok=True)
    params = notebooks.notebook_parameters(ps, dataset, out_root, reuse)
    try:
        for nb in ps.per_dataset_notebooks:
            notebooks.execute(nb, ddir / f"{nb}.ipynb", params, ddir)
    except BaseException as e:
        store.write_json(
            {
                "dataset": dataset,
                "error": error_line(e)[:2000],
                "traceback": traceback.format_exc()[-8000:],
                "at": _dt.datetime.now().isoformat(timespec="seconds"),
            },
            ddir / "_FAILED.json",
        )
        if prev_dir is None or not isinstance(e, Exception):
            raise  # a first run (nothing to restore), or an interrupt (recover() undoes it next time)
        recover(set_dir, dataset)
        raise RerunFailed(
            f"{error_line(e)} [re-run failed; the previous results are kept, the failed "
            f"render is in {FAILED_DIR}/{dataset}/]"
        ) from e
    secs = time.perf_counter() - t
    now = _dt.datetime.now().isoformat(timespec="seconds")
    if previous is not None and before and _files_digest(ddir) == before:
        # re-rendered from the stored results: the training provenance stays as it was
        done = {**previous, "rendered": {"at": now, "seconds": round(secs, 1), **interpreter()}}
    else:
        done = {
            "dataset": dataset,
            "seconds": round(secs, 1),
            "finished": now,
            "machine": notebooks.machine(),
            **interpreter(),
        }
        tfile = ddir / "timings.json"
        if tfile.exists():  # pretraining time over all stretches, when resumed from a checkpoint
            tim = json.loads(tfile.read_text())
            done.update(
                {k: tim[k] for k in ("pretrain_s", "resumed_at_epoch", "trained_members", "reused_members") if k in tim}
            )
        if previous:  # a re-run that trained (e.g. a method added): the earlier runs' records stay
            done["earlier"] = [{k: v for k, v in previous.items() if k != "earlier"}, *previous.get("earlier", [])]
    store.write_json(done, ddir / "_DONE.json")  # the new results count from here on
    if prev_dir is not None:
        shutil.rmtree(prev_dir, ignore_errors=True)
    shutil.rmtree(set_dir / FAILED_DIR / dataset, ignore_errors=True)
    return secs


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class set_lock:
    """One sweep per output set at a time: ``<set>/.lock`` holds the owner's pid and host.

    A second sweep on the same set stops with a :class:`SweepError` naming the owner; a lock
    left by a process that no longer runs (same host) is taken over, with a message."""

    def __init__(self, set_dir: Path, say=print):
        self.file = Path(set_dir) / LOCK
        self.say = say

    def __enter__(self):
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": _dt.datetime.now().isoformat(timespec="seconds"),
        }
        self.file.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                fd = os.open(self.file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    owner = json.loads(self.file.read_text() or "{}")
                except (OSError, ValueError):
                    owner = {}
                pid, host = owner.get("pid"), owner.get("host")
                if isinstance(pid, int) and host == me["host"] and not _pid_alive(pid):
                    self.say(f"removing a stale lock {self.file} (pid {pid} is gone)")
                    self.file.unlink(missing_ok=True)
                    continue
                raise SweepError(
                    f"{self.file.parent} is being run by another sweep (pid {pid} on {host} since "
                    f"{owner.get('since')}): wait for it to finish, or stop it; a lock left by a dead "
                    f"process on this host is removed automatically"
                ) from None
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            return self
        raise SweepError(f"could not take the lock {self.file}")

    def __exit__(self, *exc):
        self.file.unlink(missing_ok=True)
        return False


def check_writable(folder: Path) -> None:
    """A clear :class:`SweepError` when ``folder`` (or, if it does not exist yet, the nearest
    existing folder above it) cannot be written, before any work starts."""
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(f"{probe} is not a folder")
        fd, name = tempfile.mkstemp(dir=probe, prefix=".tcc-write-test-")
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise SweepError(
            f"cannot write the output folder {folder} ({type(e).__name__}: {e}); choose "
            f"another with --outputs, or make it writable"
        ) from None
