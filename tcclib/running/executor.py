"""The workers of a sweep (and of the screen, a ``train_only`` set): threads here, each driving its
notebook kernel or worker process, or a Dask cluster (:mod:`tcclib.running.scale`); an interrupt
ends every kernel, process and Dask future within seconds and is raised again."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import multiprocessing
import os
import queue
import signal
import threading
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path

from tcclib.method import plugins
from tcclib.running import folders, notebooks
from tcclib.running import params as param_files
from tcclib.running import scale as dask_scale
from tcclib.running.folders import SweepError, short_line
from tcclib.util import errors
from tcclib.util import threads as thread_budget


class _WorkerKernels:
    """A :class:`~tcclib.running.notebooks.KernelSession` for each worker thread of the sweep, kept
    from one dataset to the next (a kernel's start and imports are paid once per worker, not three
    times per dataset); :meth:`close` shuts them all down."""

    def __init__(self, fresh: bool = False):
        self.fresh = fresh
        self._local = threading.local()
        self._sessions = []
        self._lock = threading.Lock()

    def current(self) -> notebooks.KernelSession:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = notebooks.KernelSession(fresh=self.fresh)
            with self._lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        for session in self._sessions:
            session.close()

    def kill(self) -> None:
        """End every kernel now, with what it started (its process group): an interrupt.  The
        worker threads' notebooks then fail at once (the kernel died) and the threads end."""
        for session in list(self._sessions):
            # the kernel's process group, directly: the manager's own calls run on an event loop
            # that the worker thread's notebook holds
            provisioner = getattr(session.km, "provisioner", None)
            pgid, process = getattr(provisioner, "pgid", None), getattr(provisioner, "process", None)
            try:
                if pgid:
                    os.killpg(pgid, signal.SIGKILL)
                elif process is not None:
                    process.kill()
            except OSError:
                pass  # already gone
            context = getattr(session.km, "context", None)  # the manager's own zmq context
            if context is not None:  # its end wakes a notebook blocked on the dead kernel's output
                threading.Thread(target=context.term, daemon=True, name="tcc-kernel-context").start()


def connect(cluster: dask_scale.ClusterOptions):
    """The cluster's connection, before any work (a :class:`SweepError` in one line)."""
    try:
        return dask_scale.connect(cluster)
    except dask_scale.ScaleError as e:
        raise SweepError(str(e)) from None


class environ:
    """Set environment variables for a block (the kernels started in it inherit them), then put
    the previous values back."""

    def __init__(self, values: dict):
        self.values, self.saved = values, {}

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.values}
        os.environ.update(self.values)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return False


def run_on_cluster(ps, out_root: Path, todo: list[str], options, cluster: tuple, progress):
    set_dir = out_root / ps.name
    try:
        return dask_scale.run_units(
            ps,
            out_root,
            todo,
            options.reuse,
            cluster[0],
            say=progress.say,
            on_dataset=lambda d, line: progress.done(d, line, _members_trained(set_dir / d)),
            connection=cluster[1],
        )
    except dask_scale.ScaleError as e:
        raise SweepError(str(e)) from None


def _members_trained(folder: Path, before: tuple | None = None) -> int:
    """Members a dataset's unit trained: its ``timings.json`` (rewritten only by a run that
    trained) when it is not the file ``before`` (:func:`_read`) was; 0 otherwise."""
    now = _read(folder / "timings.json")
    if now is None or now == before:
        return 0
    try:
        return int(json.loads(now[-1]).get("trained_members", 0))
    except ValueError:
        return 0


def _read(f: Path) -> tuple | None:
    """``f``'s inode, modification time and bytes (None: no such file). A run that trained writes
    a new file (atomically: a new inode), so it counts even where its rounded seconds, and so its
    bytes, came out as the run's before."""
    try:
        st = f.stat()
        return st.st_ino, st.st_mtime_ns, f.read_bytes()
    except OSError:
        return None


class _WorkerProcesses:
    """A worker process for each worker thread of a ``train_only`` set (spawned: a fresh
    interpreter, no torch state forked), kept from one dataset to the next: it holds the job's
    threads, loads this process's plugins and ignores SIGINT (a terminal's Ctrl-C or Lab's
    interrupt reaches the whole process group: the sweep ends its workers itself, :meth:`kill`)."""

    def __init__(self, n_threads: int):
        self.n_threads = n_threads
        self._local = threading.local()
        self._pools: list[ProcessPoolExecutor] = []
        self._lock = threading.Lock()

    def run(self, fn, *args):
        """``fn(*args)`` in this thread's worker process (started on the first call)."""
        pool = getattr(self._local, "pool", None)
        if pool is None:
            # SIGINT blocked in this thread, so in the process it starts (a mask is inherited):
            # an interrupt that comes while the worker still imports never reaches it either
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            context = multiprocessing.get_context("spawn")
            specs = plugins.user_specs()
            pool = ProcessPoolExecutor(1, context, initializer=_start_worker, initargs=(self.n_threads, specs))
            self._local.pool = pool
            with self._lock:
                self._pools.append(pool)
        return pool.submit(fn, *args).result()

    def kill(self) -> None:
        """End every worker process now (what it was training is lost; its checkpoint stays)."""
        with self._lock:
            pools = list(self._pools)
        for pool in pools:
            procs = list((getattr(pool, "_processes", None) or {}).values())  # the executor's own
            for proc in procs:
                proc.kill()
            for proc in procs:
                proc.join(10)
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        for pool in self._pools:
            pool.shutdown(wait=True)


def _start_worker(n_threads: int, specs: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    thread_budget.apply(n_threads)
    plugins.load_many(specs, "worker process")


def run_on_threads(ps, out_root: Path, todo: list[str], options, progress):
    """The datasets ``todo`` on ``workers`` threads here, each driving its kernel (notebooks) or
    its worker process (``train_only``); a ``train_only`` set with one worker trains in this very
    thread.  An interrupt ends every kernel and worker process within
    seconds and is raised again."""
    workers = max(1, min(options.workers or ps.workers, len(todo) or 1))
    plan = thread_budget.plan(workers, ps.config.device, options.threads)
    budget = plan.budget
    if todo:
        progress.say(plan.line("worker"))
    set_dir = out_root / ps.name
    if ps.train_only and (workers > 1 or progress.bar is not None):
        ps = _quiet(ps)  # one bar: the overall one says how far each dataset's training is
    failed, done = {}, []
    kernels = None if ps.train_only else _WorkerKernels(options.fresh_kernels)
    processes = _WorkerProcesses(budget.threads) if ps.train_only and workers > 1 else None

    def run(dataset: str) -> tuple[float, int]:
        before = _read(set_dir / dataset / "timings.json")
        if processes is not None:
            secs = processes.run(folders.train_dataset, ps, dataset, out_root, options.reuse)
        else:
            secs = folders.run_unit(ps, dataset, out_root, options.reuse, kernel=kernels and kernels.current())
        return secs, _members_trained(set_dir / dataset, before)

    def finished(dataset: str, outcome) -> None:
        try:
            secs, trained = outcome()
            done.append(dataset)
            msg = f"{dataset}: done in {secs:.0f} s, {errors.counted(trained, 'member')} trained"
        except Exception as e:  # noqa: BLE001 - recorded in _FAILED.json, reported at the end
            failed[dataset], trained = short_line(e), 0
            msg = f"{dataset}: FAILED: {failed[dataset]}"
        progress.done(dataset, msg, trained)

    env = thread_budget.job_env(budget)
    if ps.train_only and workers == 1:
        with environ(env):
            for d in todo:
                finished(d, lambda d=d: run(d))
        return done, failed
    with environ(env):
        pool = _Threads(workers, run, todo)
        try:
            pending = set(pool.futures)
            while pending:
                ended, pending = wait(pending, timeout=TICK, return_when=FIRST_COMPLETED)
                for f in ended:
                    finished(pool.futures[f], f.result)
        except BaseException:  # an interrupt: no dataset starts any more, every worker ends now
            pool.cancel()
            if processes is not None:
                processes.kill()
            if kernels is not None:
                kernels.kill()
            raise
    pool.join()
    if processes is not None:
        processes.close()
    if kernels is not None:
        kernels.close()
    pool.close_loops()
    return done, failed


class _Threads:
    """``n`` daemon threads calling ``fn`` on each of ``items`` in turn; ``futures`` maps each
    item's future to it.  Daemon threads, not an executor's: a thread that an interrupt leaves
    waiting on a killed kernel holds up neither the interrupt nor the interpreter's exit."""

    def __init__(self, n: int, fn, items):
        self.fn = fn
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.futures: dict[Future, str] = {}
        for item in items:
            f = Future()
            self.futures[f] = item
            self.queue.put((item, f))
        self.loops: list[asyncio.AbstractEventLoop] = []  # the threads' event loops, closed by close_loops
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"tcc-worker-{i}") for i in range(n)]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        try:
            while True:
                try:
                    item, f = self.queue.get_nowait()
                except queue.Empty:
                    return
                if not f.set_running_or_notify_cancel():
                    continue
                try:
                    f.set_result(self.fn(item))
                except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                    f.set_exception(e)
        finally:
            loop = _thread_event_loop()
            if loop is not None:
                self.loops.append(loop)

    def close_loops(self) -> None:
        """Close the event loops the threads were given by what they ran (jupyter's synchronous
        calls make one per thread and never close it; left to the garbage collector, each was an
        "unclosed event loop" ResourceWarning in whatever ran then), once their kernels are shut."""
        for loop in self.loops:
            if not (loop.is_running() or loop.is_closed()):
                loop.close()

    def cancel(self) -> None:
        """The items not started yet will not start."""
        for f in self.futures:
            f.cancel()

    def join(self) -> None:
        for t in self.threads:
            t.join()


def _thread_event_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop set for this thread, if something set one (None otherwise)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (the policy functions, from Python 3.14)
        try:
            return asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return None


TICK = 5.0
"""Seconds the main thread waits for a dataset to end before it waits again: each wait is bounded,
so that an interrupt is taken at least this often on every platform.  Nothing is redrawn here: the
overall bar redraws on its own thread (:data:`tcclib.util.progress.TICK_SECONDS`)."""


def _quiet(ps: param_files.ParamSet) -> param_files.ParamSet:
    """``ps`` with every dataset's progress bars off."""
    return dataclasses.replace(
        ps,
        config=ps.config.replace(progress=False),
        configs={d: c.replace(progress=False) for d, c in ps.configs.items()},
    )
