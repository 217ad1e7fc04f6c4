"""A dataset's folder as a transaction, the set's lock, and the checks of the folders a run writes.

:class:`DatasetFolder` is the one transaction on ``<set>/<dataset>`` (keep the previous results,
finish, fail, recover), used by the sweep (:func:`run_dataset_notebooks`) and by the Dask client
(:func:`tcclib.running.scale.install`).  :class:`set_lock` keeps two sweeps off one set;
:func:`check_room` refuses, before any work, a folder the run writes that cannot be written or
has too little room; :func:`disk_error_line` is the one line of a disk that fills during a run.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
import traceback
from pathlib import Path

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import store
from tcclib.running import notebooks
from tcclib.running import params as param_files
from tcclib.running.train import run_dataset
from tcclib.util.errors import register_short
from tcclib.util.kernel import interpreter
from tcclib.util.progress import PROGRESS_FILE


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


def short_line(e: BaseException, limit: int = 300) -> str:
    """:func:`error_line` cut to about ``limit`` characters; a failed re-run's note (the previous
    results are kept, where the failed render is) is never cut, only the error before it."""
    if isinstance(e, RerunFailed):
        error = e.error if len(e.error) <= limit else e.error[: limit - 3] + "..."
        return f"{error} {e.note}"
    line = error_line(e)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _files_digest(ddir: Path) -> dict:
    return {
        f: hashlib.sha256((ddir / f).read_bytes()).hexdigest()
        for f in ("results.csv", "history.csv", "timings.json")
        if (ddir / f).exists()
    }


PREVIOUS = ".previous"
FAILED_DIR = ".failed"
LOCK = ".lock"
DONE, FAILED = "_DONE.json", "_FAILED.json"
MARKERS = (DONE, FAILED, PROGRESS_FILE)  # (a killed run's progress file too)


class SweepError(RuntimeError):
    """The sweep cannot start or go on: the set is locked by another sweep, a folder is not
    writable or full, the cluster cannot be used."""


register_short(SweepError)  # its line says it all (tcclib.util.errors: shown short)


class Interrupted(KeyboardInterrupt):
    """A run ended by an interrupt (Ctrl-C, Lab's Kernel > Interrupt): its workers are gone; the
    text is the one line saying what was kept and how to resume."""


register_short(Interrupted)  # its line says what was kept and how to resume: shown short in a kernel


class RerunFailed(RuntimeError):
    """A re-run of a finished dataset failed; its previous results were put back.

    ``error``: the failure as one line; ``note``: what was kept and where the failed render is."""

    def __init__(self, error: str, note: str):
        super().__init__(f"{error} {note}")
        self.error, self.note = error, note


def failed_record(set_dir: Path, dataset: str) -> Path:
    """Where the ``_FAILED.json`` of ``dataset`` is: ``<set>/.failed/<dataset>/`` after a failed
    re-run (the finished results stayed in ``<set>/<dataset>``), else in the dataset's folder."""
    here = Path(set_dir) / dataset / FAILED
    moved = Path(set_dir) / FAILED_DIR / dataset / FAILED
    return moved if moved.exists() and not here.exists() else here


def recover(set_dir: Path, dataset: str) -> str | None:
    """Finish or undo a re-run of ``dataset`` that was cut short (killed, power loss).

    A re-run keeps the finished results in ``<set>/.previous/<dataset>`` until it succeeds.  If
    that folder is still there: when the dataset's own folder has its (new) ``_DONE.json`` the
    re-run finished and only the clean-up was cut short, so the copy goes; otherwise the previous
    results come back and the unfinished render moves to ``<set>/.failed/<dataset>``."""
    prev, cur = set_dir / PREVIOUS / dataset, set_dir / dataset
    if not prev.exists():
        return None
    if (cur / DONE).exists():
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
    """Copy the finished results of ``dataset`` to ``.previous/`` (complete, or not at all: a copy
    cut short, e.g. by a full disk, is removed)."""
    prev = set_dir / PREVIOUS / dataset
    tmp = set_dir / PREVIOUS / f".{dataset}.copying"
    shutil.rmtree(tmp, ignore_errors=True)
    prev.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(set_dir / dataset, tmp, symlinks=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(tmp, prev)
    return prev


class DatasetFolder:
    """``<set>/<dataset>`` as a transaction: :meth:`begin` keeps a finished dataset's results
    in ``<set>/.previous/<dataset>``; :meth:`finish` writes the new ``_DONE.json`` (last) and
    drops that copy; :meth:`fail` writes ``_FAILED.json`` and, for a re-run, moves the failed
    render to ``<set>/.failed/<dataset>`` and puts the previous results back exactly as they
    were.  A process killed anywhere in between is finished or undone by :func:`recover` on the
    next :meth:`begin`.  The sweep (:func:`run_dataset_notebooks`) and the Dask client
    (:func:`tcclib.running.scale.install`) both write a dataset's folder through it."""

    def __init__(self, set_dir: Path, dataset: str):
        self.set_dir, self.dataset = Path(set_dir), dataset
        self.path = self.set_dir / dataset
        self.previous: dict | None = None  # the finished run's _DONE.json, when there was one
        self.kept: Path | None = None

    def begin(self) -> DatasetFolder:
        """Recover an interrupted re-run, keep the finished results, clear the markers."""
        recover(self.set_dir, self.dataset)
        marker = self.path / DONE
        self.previous = json.loads(marker.read_text()) if marker.exists() else None
        self.kept = keep_previous(self.set_dir, self.dataset) if self.previous is not None else None
        if self.previous is not None and store.unlike_finished(self.path):
            # (files not as the run finished them: nothing of them is reused; the kept copy has them)
            (self.path / content_keys.KEYS_FILE).unlink(missing_ok=True)
        for name in MARKERS:
            (self.path / name).unlink(missing_ok=True)
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def finish(self, done: dict) -> None:
        """The new results count from here on: ``_DONE.json`` (with the result files it finished,
        :func:`tcclib.artifacts.store.result_files`), then the clean-up."""
        files, digests = store.result_files(self.path), store.result_digests(self.path)  # (checked later)
        store.write_json({**done, "files": files, "sha256": digests}, self.path / DONE)
        if self.kept is not None:
            shutil.rmtree(self.kept, ignore_errors=True)
        shutil.rmtree(self.set_dir / FAILED_DIR / self.dataset, ignore_errors=True)

    def fail(self, record: dict) -> str | None:
        """Record the failure; a failed re-run gets its previous results back.  Returns the note
        for a re-run (None for a first run).  A record that cannot be written (a full disk) does
        not stop the previous results from coming back."""
        try:
            store.write_json(record, self.path / FAILED)
        except OSError:
            if self.kept is None:
                raise
        if self.kept is None:
            return None
        recover(self.set_dir, self.dataset)
        return (
            f"[re-run failed; the previous results are kept, the failed render and its traceback are in "
            f"{self.set_dir / FAILED_DIR / self.dataset}/]"
        )


def failure(dataset: str, error: str, trace: str = "") -> dict:
    """The contents of a ``_FAILED.json``."""
    return {
        "dataset": dataset,
        "error": error[:2000],
        "traceback": trace[-8000:],
        "at": _dt.datetime.now().isoformat(timespec="seconds"),
    }


def run_dataset_notebooks(
    ps: param_files.ParamSet, dataset: str, out_root: Path, reuse: bool = True, kernel=None
) -> float:
    """Execute the per-dataset notebooks of ``dataset`` in a :class:`DatasetFolder` transaction;
    ``_DONE.json`` last.

    ``kernel``: a :class:`tcclib.running.notebooks.KernelSession` to run them in (the sweep keeps
    one per worker, from dataset to dataset); without one, the notebooks share a kernel of their own.

    Re-running a finished dataset never loses it: the notebooks run in the dataset's folder
    (where the stored results are reused where they match) while the finished results wait in
    ``.previous/``; when they fail, :class:`RerunFailed` says that the previous results are back
    and where the failed render is."""
    params = notebooks.notebook_parameters(ps, dataset, out_root, reuse)
    session = kernel if kernel is not None else notebooks.KernelSession()

    def work(folder: Path) -> None:
        for nb in ps.per_dataset_notebooks:
            notebooks.execute(nb, folder / f"{nb}.ipynb", params, folder, kernel=session)

    try:
        return _transaction(ps, dataset, out_root, work, on_error=session.close)
    finally:
        if kernel is None:
            session.close()


def train_dataset(ps: param_files.ParamSet, dataset: str, out_root: Path, reuse: bool = True) -> float:
    """Train (or reuse) the members of ``dataset`` with its settings (``ps.config_for``) and store
    them (:func:`tcclib.artifacts.store.save_run`) in the same :class:`DatasetFolder` transaction
    as :func:`run_dataset_notebooks`, rendering no notebook: the unit of a set with ``train_only``
    (the screen, :mod:`tcclib.running.screen`).  The data folder is ``ps.data_folder``; the cache
    (importance matrices, pretraining checkpoints) ``<out_root>/.cache``."""

    def work(folder: Path) -> None:
        run = run_dataset(
            ps.spec(dataset),
            ps.config_for(dataset),
            data_dir=ps.data_folder,
            cache_dir=Path(out_root) / ".cache",
            store_dir=folder,
            reuse=reuse,
        )
        store.save_run(run, folder, write_marker=False)  # the transaction writes _DONE.json, last

    return _transaction(ps, dataset, out_root, work)


def run_unit(ps: param_files.ParamSet, dataset: str, out_root: Path, reuse: bool = True, kernel=None) -> float:
    """The unit of work of one dataset of ``ps``: :func:`train_dataset` for a ``train_only`` set,
    else :func:`run_dataset_notebooks`; its seconds."""
    if ps.train_only:
        return train_dataset(ps, dataset, out_root, reuse)
    return run_dataset_notebooks(ps, dataset, out_root, reuse, kernel)


def _transaction(ps: param_files.ParamSet, dataset: str, out_root: Path, work, on_error=None) -> float:
    """``work(folder)`` on ``<out_root>/<set>/<dataset>`` between :meth:`DatasetFolder.begin` and
    :meth:`~DatasetFolder.finish`: a failure is recorded (a re-run's previous results put back,
    :class:`RerunFailed`), an interrupt leaves its record for :func:`recover`."""
    folder = DatasetFolder(out_root / ps.name, dataset)
    t = time.perf_counter()
    folder.begin()
    before = _files_digest(folder.path) if folder.previous is not None else {}
    try:
        work(folder.path)
    except BaseException as e:
        if on_error is not None:
            on_error()  # e.g. the next dataset gets a fresh kernel, not one a failure left behind
        if not isinstance(e, Exception):  # an interrupt: recover() finishes or undoes it next time
            store.write_json(failure(dataset, error_line(e), traceback.format_exc()), folder.path / FAILED)
            raise
        note = folder.fail(failure(dataset, error_line(e), traceback.format_exc()))
        if note is None:
            raise  # a first run: nothing to restore
        raise RerunFailed(error_line(e), note) from e
    secs = time.perf_counter() - t
    folder.finish(_done_record(folder, dataset, secs, before))
    return secs


def _done_record(folder: DatasetFolder, dataset: str, secs: float, before: dict) -> dict:
    """The ``_DONE.json`` of a finished run: its provenance, or a re-render's note beside the
    training provenance that stays as it was."""
    now = _dt.datetime.now().isoformat(timespec="seconds")
    previous = folder.previous
    if previous is not None and before and _files_digest(folder.path) == before:
        # re-rendered from the stored results: the training provenance stays as it was
        return {**previous, "rendered": {"at": now, "seconds": round(secs, 1), **interpreter()}}
    done = {
        "dataset": dataset,
        "seconds": round(secs, 1),
        "finished": now,
        "machine": notebooks.machine(),
        **interpreter(),
    }
    tfile = folder.path / "timings.json"
    if tfile.exists():  # pretraining time over all stretches, when resumed from a checkpoint
        tim = json.loads(tfile.read_text())
        done.update(
            {k: tim[k] for k in ("pretrain_s", "resumed_at_epoch", "trained_members", "reused_members") if k in tim}
        )
    if previous:  # a re-run that trained (e.g. a method added): the earlier runs' records stay
        done["earlier"] = [{k: v for k, v in previous.items() if k != "earlier"}, *previous.get("earlier", [])]
    return done


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host exists (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
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
                if isinstance(pid, int) and host == me["host"] and not pid_alive(pid):
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


DISK_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT)
"""The errors of a folder that cannot take what the run writes (full, read-only, forbidden)."""

OUTPUT_BYTES = 20 * 2**20
"""A dataset's folder: rendered notebooks, results, importance matrices, embeddings (the largest
committed one, with the paper's settings, holds 5 MB)."""
AGGREGATE_BYTES = 50 * 2**20
"""The set's tables, figures and aggregate notebooks (the paper's 30 datasets: about 45 MB)."""
CACHE_BYTES = 5 * 2**20
"""A dataset's importance cache (one matrix of features x features per seed)."""


def _probe_folder(folder: Path) -> Path:
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB" if n < 10 * 2**30 else f"{n / 2**30:,.1f} GiB"


def check_writable(folder: Path, need: int = 0, what: str = "the output folder") -> None:
    """A clear :class:`SweepError` when ``folder`` (or, if it does not exist yet, the nearest
    existing folder above it) cannot be written, or has less than ``need`` bytes free, before any
    work starts.  The probe writes real bytes and syncs them (an empty file is created even on a
    full disk), then removes its file."""
    probe = _probe_folder(folder)
    try:
        if not probe.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(probe))
        fd, name = tempfile.mkstemp(dir=probe, prefix=".tcc-write-test-")
        try:
            os.write(fd, b"\0" * 65536)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else str(e)
        raise SweepError(
            f"cannot write {what} {folder} ({type(e).__name__}: {reason}, at {probe}); choose "
            f"another with --outputs, or make it writable (and give it room)"
        ) from None
    free = shutil.disk_usage(probe).free
    if free < need:
        raise SweepError(
            f"not enough room for {what} {folder}: {_mib(free)} free, the run writes up to about "
            f"{_mib(need)}; free some space, or choose another folder with --outputs"
        )


def room_needed(ps: param_files.ParamSet, datasets: int, at_once: int) -> tuple[int, int]:
    """A conservative estimate of the bytes a run of ``datasets`` datasets (``at_once`` of them at
    a time) writes: ``(outputs, cache)``.  The cache holds the importance matrices and, while a
    dataset pretrains, its checkpoint (every member's parameters and Adam's two moments, as float32;
    twice, while a new one replaces the old)."""
    cfg = ps.config
    members = len(cfg.seeds) * len(cfg.methods)
    # the encoder's and the projection head's layers, each taken as hidden x hidden (+ bias)
    weights = (cfg.encoder_depth + cfg.head_depth) * cfg.hidden_dim * (cfg.hidden_dim + 1)
    checkpoint = 2 * members * 3 * 4 * weights
    outputs = datasets * OUTPUT_BYTES + (AGGREGATE_BYTES if ps.aggregate_notebooks else 0)
    return outputs, datasets * CACHE_BYTES + max(1, min(at_once, datasets)) * checkpoint


def check_room(ps: param_files.ParamSet, out_root: Path, datasets: int, at_once: int) -> None:
    """Every folder a run of ``datasets`` datasets writes, the set's folder and ``<outputs>/.cache``
    (importance cache, ``checkpoints/``), writable and with room for :func:`room_needed`; two of
    them on one filesystem need the sum.  A :class:`SweepError` naming the folder otherwise."""
    outputs, cache = room_needed(ps, datasets, at_once)
    set_dir, cache_dir = Path(out_root) / ps.name, Path(out_root) / ".cache"
    same = _probe_folder(set_dir).stat().st_dev == _probe_folder(cache_dir).stat().st_dev
    check_writable(set_dir, outputs + cache if same else outputs)
    check_writable(cache_dir, outputs + cache if same else cache, "the cache folder")
    if (cache_dir / "checkpoints").exists():
        check_writable(cache_dir / "checkpoints", 0, "the checkpoint folder")


def disk_error_line(e: OSError) -> str:
    """A full disk or a read-only folder met during a run, as the sweep's one line."""
    where = f" {e.filename}" if e.filename else ""
    name = errno.errorcode.get(e.errno, "")
    return (
        f"cannot write{where}: {os.strerror(e.errno)} ({name}); every dataset finished before this is "
        f"intact; free some space or make the folder writable and run again (finished datasets are "
        f"skipped), or choose another --outputs"
    )
