"""Run a parameter set: the per-dataset notebooks for every dataset, then the aggregate ones.

    python -m tcclib params/demo.yaml                      # -> runs/demo/
    python -m tcclib params/paper.yaml --outputs outputs   # the committed reference renders
    python -m tcclib params/smoke.yaml --force all         # re-render, reusing stored results
    python -m tcclib params/smoke.yaml --force credit-g --retrain   # redo one dataset

Each dataset's notebooks (``notebooks/*.py``, jupytext sources) are executed with papermill, in
this interpreter (no kernelspec is consulted; each worker keeps one kernel, reset before every
notebook, or ``--fresh-kernels``), into ``<outputs>/<set>/<dataset>/``; the default
output root is ``runs/`` (not tracked by git), so a run never skips or overwrites the committed
reference renders in ``outputs/``; a finished run is compared with the reference of the same set
and dataset when there is one.  A ``_DONE.json`` marker, written last and atomically, marks a
finished dataset, which a later run skips (unless ``--force``; a forced re-run that trains keeps
the earlier runs' records under ``earlier``); it records the wall time, the
machine, the interpreter, and the pretraining time over all stretches (``pretrain_s``;
``resumed_at_epoch`` when pretraining resumed from the checkpoint an interrupted run left under
``<outputs>/.cache/checkpoints``).  Stored results whose data and settings match are reused
(:mod:`tcclib.artifacts.keys`): ``--force`` re-renders without training; ``--retrain`` trains anew.  A
dataset that fails gets a ``_FAILED.json`` with its error and traceback, the others go on, and the
failures are listed at the end, one line each (exit status 1).  Interrupting the sweep loses
nothing already finished.

Datasets that run at once share the cores: each gets ``cores // jobs`` threads for torch and
XGBoost (:mod:`tcclib.util.threads`; ``--threads N`` or an explicit ``OMP_NUM_THREADS`` instead), and
the sweep prints its choice.  ``--scheduler local[:N]`` or ``--scheduler tcp://host:port`` runs
the datasets (or groups of their seeds, ``--seeds-per-unit K``) on a Dask cluster
(:mod:`tcclib.running.scale`).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib.util
import json
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from tcclib.artifacts import store
from tcclib.data.sources import DATA_DIR_ENV
from tcclib.method import plugins
from tcclib.method.config import cli_help
from tcclib.running import folders, notebooks
from tcclib.running import params as param_files
from tcclib.running import scale as dask_scale
from tcclib.running.checkpointing import checkpoint_interval
from tcclib.running.folders import (
    DISK_ERRNOS,
    DONE,
    PREVIOUS,
    Interrupted,
    SweepError,
    check_room,
    check_writable,
    disk_error_line,
    failed_record,
    recover,
    set_lock,
    short_line,
)
from tcclib.util import paths
from tcclib.util import threads as thread_budget
from tcclib.util.progress import Overall


def run_aggregate(ps: param_files.ParamSet, out_root: Path, fresh_kernels: bool = False) -> None:
    set_dir = out_root / ps.name
    with notebooks.KernelSession(fresh=fresh_kernels) as kernel:
        for nb in ps.aggregate_notebooks:
            notebooks.execute(
                nb,
                set_dir / f"{nb}.ipynb",
                dict(set_name=ps.name, set_dir=paths.relative_to_root(set_dir), figure_dataset=ps.figure_dataset),
                set_dir,
                kernel=kernel,
            )


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


def write_index(ps: param_files.ParamSet, out_root: Path) -> Path:
    """``outputs/<set>/index.md``: links to every rendered notebook, result and figure."""
    set_dir = out_root / ps.name
    st = store.status(set_dir)
    lines = [
        f"# Outputs of the `{ps.name}` parameter set",
        "",
        ps.description.strip(),
        "",
        f"Settings: `{ps.path}`" if ps.path else "",
        "",
        "## Aggregate",
        "",
    ]
    for nb in ps.aggregate_notebooks:
        if (set_dir / f"{nb}.ipynb").exists():
            lines.append(f"- [{nb}]({nb}.ipynb)")
    for sub in ("results", "figures"):
        files = sorted((set_dir / sub).glob("*")) if (set_dir / sub).exists() else []
        if files:
            lines += ["", f"## {sub.capitalize()}", ""]
            lines += [f"- [{f.name}]({sub}/{f.name})" for f in files if f.suffix in (".csv", ".md", ".png", ".pdf")]
    lines += ["", "## Datasets", "", "| dataset | status | notebooks |", "| --- | --- | --- |"]
    for _, r in st.iterrows():
        # an incomplete dataset's notebooks are partial renders, rewritten when it resumes: no links
        nbs = " ".join(
            f"[{nb[:2]}]({r.dataset}/{nb}.ipynb)"
            for nb in ps.per_dataset_notebooks
            if r.status != "incomplete" and (set_dir / r.dataset / f"{nb}.ipynb").exists()
        )
        one = " ".join(str(r.error).split()).replace("|", "\\|")
        err = f" ({one[:160]})" if r.error else ""
        lines.append(f"| {r.dataset} | {r.status}{err} | {nbs} |")
    return store.write_text("\n".join(lines) + "\n", set_dir / "index.md")


def resolve_data_dir(ps: param_files.ParamSet, explicit: str | None = None) -> str | None:
    """The data folder a run uses (:func:`tcclib.running.params.data_folder`): ``explicit``
    (--data-dir), else ``$TCC_DATA_DIR``, else the parameter file's ``data_dir``, else
    ``../shared/datasets/openml-cc18`` beside the checkout where it exists.  A :class:`SweepError`
    naming where the folder came from when it does not exist (no folder at all: OpenML's download)."""
    try:
        return param_files.data_folder(explicit, ps.data_dir, str(ps.path) if ps.path else "params")[0]
    except param_files.ParamsError as e:
        raise SweepError(str(e)) from None


def check_checkpoint_interval() -> None:
    """A :class:`SweepError` before any work when ``$TCC_CHECKPOINT_SECONDS`` (the least seconds
    between two pretraining checkpoints, :mod:`tcclib.running.checkpointing`) is not usable."""
    try:
        checkpoint_interval()
    except ValueError as e:
        raise SweepError(str(e)) from None


STALE = "stale"  # --force stale: the finished datasets whose stored settings are not the file's


def settings_changed(ps: param_files.ParamSet, set_dir: Path, dataset: str) -> str | None:
    """How the settings a finished ``dataset`` ran with (its ``config.json``) differ from what the
    parameter file asks now, e.g. ``methods +class_most_published_exact``; None when they are the
    same (or nothing was stored)."""
    f = set_dir / dataset / "config.json"
    if not f.exists():
        return None
    same, why = store.same_settings(f, ps.config_for(dataset))
    return None if same else why


def skipped_line(set_dir: Path, dataset: str, changed: str | None) -> str:
    """What the sweep says of a finished dataset it does not run now."""
    if changed:
        return (
            f"{dataset}: done in {set_dir / dataset}, but with other settings than the parameter file "
            f"({changed}): --force {STALE} (or --force {dataset}) brings it up to date, reusing its "
            f"stored results"
        )
    return f"{dataset}: already done in {set_dir / dataset} (--force {dataset} re-renders it)"


def _names_in_set(names, ps: param_files.ParamSet, where: str) -> list[str]:
    """Dataset names for --force/--only, matched as dataset names are everywhere (case-insensitive,
    OpenML ids); one that is not in the set is an error with the set's closest names."""
    out = param_files.dataset_names(names, where, ps.datasets)
    missing = [n for n in out if n not in ps.datasets]
    if missing:
        close = {n: difflib.get_close_matches(n, ps.datasets, n=2, cutoff=0.5) for n in missing}
        hint = "; ".join(f"{n}" + (f" (did you mean {', '.join(c)}?)" if c else "") for n, c in close.items())
        raise param_files.ParamsError(
            f"{where}: not a dataset of the set {ps.name!r}: {hint}. The set has: {', '.join(ps.datasets)}"
        )
    return out


@dataclass(frozen=True)
class SweepOptions:
    """How :func:`sweep` runs a set (the command line's options).

    out_root aside (an argument of :func:`sweep`): ``only`` runs just these datasets of the set
    now (the others stay pending).  ``force`` re-executes these ('all': every one; 'stale': the
    finished ones whose stored settings are not the parameter file's, e.g. after a method was
    added) even when finished; with ``reuse`` (the default) their stored results are reused where
    data and settings match, so that re-renders train nothing and an added method trains only its
    members; ``reuse=False`` retrains.  A finished dataset with other settings than the file's is
    not re-run unless forced: ``stale`` names it with the difference.  Every finished dataset is
    compared with the committed reference run (``reference_root``, default ``outputs/``) of the
    same set when there is one.

    ``scheduler``: run on a Dask cluster (``local``, ``local:N``, ``tcp://host:port``; default:
    the parameter file's ``scheduler``, else threads here), in units of a dataset or of
    ``seeds_per_unit`` seeds (:mod:`tcclib.running.scale`; ``shared_fs=False`` acts as if no
    worker shared this filesystem); ``connect_timeout``: seconds for reaching a running scheduler
    (connection, handshake, first answer); ``worker_wait``: seconds to wait for its first worker.
    ``threads``: torch/XGBoost threads per job (default: the cores shared among the jobs,
    :func:`tcclib.util.threads.budget`).  ``fresh_kernels``: a kernel for every notebook instead of
    one per worker thread, reset between notebooks (:class:`tcclib.running.notebooks.KernelSession`).

    ``progress``: one overall bar (datasets done, members trained, elapsed, estimate; in a log, the
    same state at the end of each dataset's line), :class:`tcclib.util.progress.Overall`, with
    ``weights`` (dataset: expected seconds) for its estimate.  ``list_skipped`` False: one line for
    the finished datasets left as they are, not one each.  ``resume_hint``: how an interrupted run
    is resumed, for its last line (default: run the same command again)."""

    data_dir: str | None = None
    workers: int | None = None
    force: list[str] | None = None
    progress: bool = True
    aggregate: bool = True
    only: list[str] | None = None
    reuse: bool = True
    reference_root: Path | None = None
    scheduler: str | None = None
    seeds_per_unit: int | None = None
    threads: int | None = None
    shared_fs: bool | None = None
    connect_timeout: float = dask_scale.CONNECT_TIMEOUT
    worker_wait: float = dask_scale.WORKER_WAIT
    fresh_kernels: bool = False
    list_skipped: bool = True
    weights: dict | None = None
    resume_hint: str = ""


@dataclass
class _Plan:
    """The datasets a sweep runs now (``todo``), those finished it leaves (``skipped``), and the
    finished ones whose stored settings differ from the file's (``stale``: how)."""

    todo: list[str]
    skipped: list[str]
    stale: dict[str, str]


def _plan(ps: param_files.ParamSet, set_dir: Path, options: SweepOptions) -> _Plan:
    force = options.force
    force_all = force == ["all"]
    force_stale = bool(force) and STALE in force
    forced = [] if (force is None or force_all) else _names_in_set([f for f in force if f != STALE], ps, "--force")
    chosen = _names_in_set(options.only, ps, "--only") if options.only else None
    plan = _Plan([], [], {})
    for d in ps.datasets:
        if chosen is not None and d not in chosen:
            continue
        done = (set_dir / d / "_DONE.json").exists()
        why = settings_changed(ps, set_dir, d) if done else None
        if why:
            plan.stale[d] = why
        rerun = force_all or d in forced or (force_stale and why)
        (plan.skipped if done and not rerun else plan.todo).append(d)
    return plan


def sweep(
    ps: param_files.ParamSet, out_root: Path | None = None, options: SweepOptions | None = None, say=print, **settings
):
    """Run the set into ``<out_root>/<set>`` (default ``runs/``; the committed references are
    ``outputs/``) with ``options`` (a :class:`SweepOptions`, or its fields as keywords); returns
    ``{"done": [...], "skipped": [...], "failed": {dataset: error}, "reference": {dataset: line},
    "stale": {dataset: how}}``.

    Before any work: the options, the cluster address, the data folder, and that every folder the
    run writes can be written and has room (:func:`tcclib.running.folders.check_room`); a
    :class:`SweepError` otherwise.  A full disk or a read-only folder met during the run is a
    :class:`SweepError` too (one line; every dataset finished before it is intact).  An interrupt
    (Ctrl-C, Lab's Kernel > Interrupt, SIGINT) ends every worker (kernels, worker processes, the
    Dask futures) within seconds and raises :class:`~tcclib.running.folders.Interrupted`, whose text
    says what was kept and how to resume.  ``say``: where the lines go (``print``)."""
    options = options if options is not None else SweepOptions(**settings)
    check_checkpoint_interval()
    plugins.export()  # the kernels and local workers started from here load the same plugins
    cluster = _cluster(ps, options)
    out_root = paths.resolve(Path(out_root) if out_root is not None else paths.runs_root())
    data_dir = resolve_data_dir(ps, options.data_dir)
    if data_dir:
        os.environ[DATA_DIR_ENV] = data_dir
    set_dir = out_root / ps.name
    plan = _plan(ps, set_dir, options)
    ref_root = Path(options.reference_root) if options.reference_root is not None else paths.reference_root()
    if _nothing_to_run(ps, set_dir, plan, options):
        # only reads (a read-only or locked folder is no obstacle)
        _say_skipped(set_dir, plan, options, say)
        reference = {
            d: line
            for d in plan.skipped
            if (line := store.reference_line(set_dir / d, ref_root / ps.name / d)) is not None
        }
        return {"done": [], "skipped": plan.skipped, "failed": {}, "reference": reference, "stale": plan.stale}
    check_room(ps, out_root, len(plan.todo), cluster.jobs if cluster is not None else (options.workers or ps.workers))
    connection = _connect(cluster) if cluster is not None and plan.todo else None
    try:
        with set_lock(set_dir):
            for d in ps.datasets:
                note = recover(set_dir, d)
                if note:
                    say(f"{d}: {note}")
            plan = _plan(ps, set_dir, options)
            rep = _sweep_locked(ps, out_root, plan, options, (cluster, connection), ref_root, say)
    except OSError as e:
        if e.errno not in DISK_ERRNOS:
            raise
        raise SweepError(disk_error_line(e)) from None
    finally:
        if connection is not None:
            dask_scale.disconnect(connection)
    rep["stale"] = {d: w for d, w in plan.stale.items() if d in plan.skipped}
    return rep


def _connect(cluster: dask_scale.ClusterOptions):
    """The cluster's connection, before any work (a :class:`SweepError` in one line)."""
    try:
        return dask_scale.connect(cluster)
    except dask_scale.ScaleError as e:
        raise SweepError(str(e)) from None


def _nothing_to_run(ps: param_files.ParamSet, set_dir: Path, plan: _Plan, options: SweepOptions) -> bool:
    interrupted = any((set_dir / PREVIOUS / d).exists() for d in ps.datasets)
    return (
        not plan.todo
        and not interrupted
        and (ps.train_only or (set_dir / "index.md").exists())
        and not (options.aggregate and aggregates_stale(ps, set_dir))
    )


def _cluster(ps: param_files.ParamSet, options: SweepOptions) -> dask_scale.ClusterOptions | None:
    """The cluster and thread options, checked before any work (a :class:`SweepError` naming the
    bad value and the fix); None when the set runs on threads here."""
    scheduler = options.scheduler if options.scheduler is not None else ps.scheduler
    seeds_per_unit = options.seeds_per_unit
    try:
        if scheduler is not None:
            param_files.check_scheduler(scheduler, "--scheduler")
        thread_budget.budget(1, options.threads)
    except (param_files.ParamsError, thread_budget.ThreadsError) as e:
        raise SweepError(str(e)) from None
    if seeds_per_unit is not None and (
        isinstance(seeds_per_unit, bool) or not isinstance(seeds_per_unit, int) or seeds_per_unit < 1
    ):
        raise SweepError(f"--seeds-per-unit must be a positive integer, got {seeds_per_unit!r}")
    if seeds_per_unit is not None and scheduler is None:
        raise SweepError(
            "--seeds-per-unit splits datasets into units for a cluster: add --scheduler local "
            "(or an address), or leave it out"
        )
    for name in ("connect_timeout", "worker_wait"):
        value = getattr(options, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise SweepError(f"--{name.replace('_', '-')} must be a positive number of seconds, got {value!r}")
    if scheduler is None:
        return None
    if importlib.util.find_spec("distributed") is None:
        raise SweepError(
            "--scheduler needs dask: pip install 'dask[distributed]' (the 'scale' extra), or run without --scheduler"
        )
    return dask_scale.ClusterOptions(
        address=scheduler,
        seeds_per_unit=seeds_per_unit or ps.seeds_per_unit,
        threads=options.threads,
        shared_fs=options.shared_fs,
        connect_timeout=float(options.connect_timeout),
        worker_wait=float(options.worker_wait),
    )


class _environ:
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


def aggregates_stale(ps: param_files.ParamSet, set_dir: Path) -> bool:
    """Whether an aggregate notebook is missing or older than a finished dataset's marker."""
    renders = [set_dir / f"{nb}.ipynb" for nb in ps.aggregate_notebooks]
    if not renders:
        return False
    if not all(r.exists() for r in renders):
        return True
    marks = [m.stat().st_mtime for d in ps.datasets if (m := set_dir / d / "_DONE.json").exists()]
    return bool(marks) and max(marks) > min(r.stat().st_mtime for r in renders)


def _sweep_locked(
    ps, out_root: Path, plan: _Plan, options: SweepOptions, cluster: tuple, ref_root: Path, say=print
) -> dict:
    """The sweep under the set's lock; ``cluster``: ``(ClusterOptions, connection)``, both None on
    threads here.  An interrupt (Ctrl-C, Kernel > Interrupt) ends the workers and raises
    :class:`~tcclib.running.folders.Interrupted` with the line saying what was kept."""
    set_dir = out_root / ps.name
    if not ps.train_only:  # a train_only set (the screen) has no notebooks to list
        store.write_json(ps.datasets, set_dir / "datasets.json")
    progress = Overall(
        plan.todo,
        len(plan.skipped),
        f"{'screen' if ps.train_only else 'sweep'} {ps.name}",
        options.progress,
        options.weights,
        say,
        folder=set_dir,
    )
    _say_skipped(set_dir, plan, options, progress.say)
    try:
        if cluster[1] is not None and plan.todo:
            done, failed = _run_on_cluster(ps, out_root, plan.todo, options, cluster, progress)
        else:
            done, failed = _run_on_threads(ps, out_root, plan.todo, options, progress)
    except KeyboardInterrupt:
        progress.close()
        raise Interrupted(interrupted_line(set_dir, plan.todo, progress.members, options.resume_hint)) from None
    finally:
        progress.close()
    if options.aggregate and (done or plan.skipped):
        run_aggregate(ps, out_root, options.fresh_kernels)
    if not ps.train_only:
        write_index(ps, out_root)
    reference = {}
    for d in done + plan.skipped:
        line = store.reference_line(out_root / ps.name / d, ref_root / ps.name / d)
        if line is not None:
            reference[d] = line
    return {"done": done, "skipped": plan.skipped, "failed": failed, "reference": reference}


def _say_skipped(set_dir: Path, plan: _Plan, options: SweepOptions, say) -> None:
    """A line per finished dataset the sweep leaves, or (``list_skipped`` False) one for them all."""
    if options.list_skipped:
        for d in plan.skipped:
            say(skipped_line(set_dir, d, plan.stale.get(d)))
    elif plan.skipped:
        say(
            f"{len(plan.skipped)} of {len(plan.skipped) + len(plan.todo)} datasets already done in "
            f"{paths.relative_to_root(set_dir)} with these settings (reused; --force NAME runs one again)"
        )


def interrupted_line(set_dir: Path, todo: list[str], members: int, hint: str = "") -> str:
    """The one line of an interrupted run: what it finished and kept, and how to resume."""
    finished = [d for d in todo if (set_dir / d / DONE).exists()]
    left = len(todo) - len(finished)
    return (
        f"interrupted: {len(finished)} of the {len(todo)} datasets this run had to do finished and are kept in "
        f"{paths.relative_to_root(set_dir)} ({members} members trained); {left} not finished (a pretraining that "
        f"had started resumes from its last checkpoint). {hint or 'Run the same command again to resume'}: "
        f"finished datasets are skipped, only what is missing trains."
    )


def _run_on_cluster(ps, out_root: Path, todo: list[str], options: SweepOptions, cluster: tuple, progress):
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


def _members_trained(folder: Path, before: bytes | None = None) -> int:
    """Members a dataset's unit trained: its ``timings.json`` (rewritten only by a run that
    trained) when that differs from ``before``; 0 otherwise."""
    f = folder / "timings.json"
    try:
        now = f.read_bytes()
    except OSError:
        return 0
    if before is not None and now == before:
        return 0
    try:
        return int(json.loads(now).get("trained_members", 0))
    except ValueError:
        return 0


def _read(f: Path) -> bytes | None:
    try:
        return f.read_bytes()
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


def _run_on_threads(ps, out_root: Path, todo: list[str], options: SweepOptions, progress):
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
        return secs, _members_trained(set_dir / dataset, before or b"")

    def finished(dataset: str, outcome) -> None:
        try:
            secs, trained = outcome()
            done.append(dataset)
            msg = f"{dataset}: done in {secs:.0f} s, {trained} members trained"
        except Exception as e:  # noqa: BLE001 - recorded in _FAILED.json, reported at the end
            failed[dataset], trained = short_line(e), 0
            msg = f"{dataset}: FAILED: {failed[dataset]}"
        progress.done(dataset, msg, trained)

    env = {**thread_budget.env(budget), **thread_budget.allocator_env()}
    if ps.train_only and workers == 1:
        with _environ(env):
            for d in todo:
                finished(d, lambda d=d: run(d))
        return done, failed
    with _environ(env):
        pool = _Threads(workers, run, todo)
        try:
            pending = set(pool.futures)
            while pending:
                ended, pending = wait(pending, timeout=TICK, return_when=FIRST_COMPLETED)
                for f in ended:
                    finished(pool.futures[f], f.result)
                progress.tick()
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
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"tcc-worker-{i}") for i in range(n)]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
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

    def cancel(self) -> None:
        """The items not started yet will not start."""
        for f in self.futures:
            f.cancel()

    def join(self) -> None:
        for t in self.threads:
            t.join()


TICK = 5.0
"""Seconds between two redraws of the overall bar (its elapsed time) while datasets run."""


def _quiet(ps: param_files.ParamSet) -> param_files.ParamSet:
    """``ps`` with every dataset's progress bars off."""
    return dataclasses.replace(
        ps,
        config=ps.config.replace(progress=False),
        configs={d: c.replace(progress=False) for d, c in ps.configs.items()},
    )


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m tcclib`` (the sweep's options, and the screen's ``--methods``)."""
    ap = argparse.ArgumentParser(
        prog="python -m tcclib",
        description=__doc__,
        epilog=cli_help(),  # the settings, from their declarations
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("params", help="parameter file, e.g. params/demo.yaml")
    ap.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="PATH_OR_MODULE",
        help="load a plugin (a .py file or a module name that registers rules, methods or baselines) "
        "before the parameter file is checked; repeat for several (also: the file's 'plugins' key, $TCC_PLUGINS)",
    )
    ap.add_argument(
        "--methods",
        nargs="*",
        default=None,
        help="with a screen (params/screen.yaml): the new methods to train (default: those the plugins register)",
    )
    ap.add_argument(
        "--outputs",
        default=None,
        help="output root; a relative path lies under the repository root (default: runs/; "
        "the committed reference renders are outputs/)",
    )
    ap.add_argument(
        "--data-dir",
        default=None,
        help=f"folder of <did>.arff files (default: ${DATA_DIR_ENV}, else the file's data_dir)",
    )
    ap.add_argument("--workers", type=int, default=None, help="datasets run in parallel")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch/XGBoost threads per dataset job (default: the cores shared among the jobs, "
        "or $OMP_NUM_THREADS when set)",
    )
    _cluster_arguments(ap)
    ap.add_argument(
        "--force",
        nargs="*",
        default=None,
        help="re-execute these finished datasets ('all' for every one; 'stale' for those "
        "whose stored settings are not the file's), reusing stored results",
    )
    ap.add_argument(
        "--retrain", action="store_true", help="train everything again instead of reusing stored results that match"
    )
    ap.add_argument("--only", nargs="*", default=None, help="run only these datasets of the set now")
    ap.add_argument("--no-aggregate", action="store_true", help="skip the aggregate notebooks")
    ap.add_argument(
        "--fresh-kernels",
        action="store_true",
        help="start a kernel for every notebook (default: one per worker, reset between notebooks, "
        "which saves the kernel's start and imports, about 3 s a notebook)",
    )
    ap.add_argument(
        "--aggregates",
        action="store_true",
        help="only re-render the aggregate notebooks (tables, figures, report) of the "
        "finished datasets, e.g. after a change to the report code",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="only validate: the parameter file, the options, the data folder, the output folders "
        "(writable, with room) and a running scheduler's address (it answers as Dask does)",
    )
    return ap


def _cluster_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--scheduler",
        default=None,
        help="run on a Dask cluster: local (one worker process per core), local:N, or the "
        "address of a running scheduler, e.g. tcp://host:8786 (default: the file's scheduler)",
    )
    ap.add_argument(
        "--seeds-per-unit",
        type=int,
        default=None,
        help="with --scheduler: split each dataset into units of this many seeds "
        "(default: the file's seeds_per_unit; results are those of the dataset run whole)",
    )
    ap.add_argument(
        "--connect-timeout",
        type=float,
        default=dask_scale.CONNECT_TIMEOUT,
        help="seconds to reach a running scheduler: connection, handshake and first answer "
        f"(default {dask_scale.CONNECT_TIMEOUT:g})",
    )
    ap.add_argument(
        "--worker-wait",
        type=float,
        default=dask_scale.WORKER_WAIT,
        help=f"seconds to wait for a running scheduler's first worker (default {dask_scale.WORKER_WAIT:g})",
    )


def _options(a) -> SweepOptions:
    return SweepOptions(
        data_dir=a.data_dir,
        workers=a.workers,
        force=a.force,
        aggregate=not a.no_aggregate,
        only=a.only,
        reuse=not a.retrain,
        scheduler=a.scheduler,
        seeds_per_unit=a.seeds_per_unit,
        threads=a.threads,
        connect_timeout=a.connect_timeout,
        worker_wait=a.worker_wait,
        fresh_kernels=a.fresh_kernels,
    )


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    try:
        ps = param_files.load(a.params, a.data_dir, a.plugin)
        if a.force and a.force != ["all"]:
            _names_in_set([f for f in a.force if f != STALE], ps, "--force")
        if a.only:
            _names_in_set(a.only, ps, "--only")
    except param_files.ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.methods is not None:
        print(
            f"error: --methods is the screen's option (params/screen.yaml); {a.params} is a sweep: "
            f"name its methods in its config: methods: [...]",
            file=sys.stderr,
        )
        return 2
    if a.check:
        return _check_command(a, ps)
    try:
        return _run_command(a, ps)
    except SweepError as e:  # locked, not writable or full, no data folder, no cluster
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C: the workers are gone; one line, no traceback
        print(f"\n{e}" if isinstance(e, Interrupted) else "\ninterrupted", file=sys.stderr)
        return 130


def check_options(ps: param_files.ParamSet, options: SweepOptions, out_root: Path) -> None:
    """What ``--check`` checks of a run's options, before any work: the cluster's options and a
    running scheduler's answer, the checkpoint interval, the names of ``--force``/``--only``, and
    the folders the run writes (writable, with room).  A :class:`SweepError` in one line."""
    cluster = _cluster(ps, options)
    if cluster is not None and cluster.remote:
        try:
            dask_scale.probe(cluster.address, cluster.connect_timeout)
        except dask_scale.ScaleError as e:
            raise SweepError(str(e)) from None
    check_checkpoint_interval()
    try:
        todo = _plan(ps, out_root / ps.name, options).todo
    except param_files.ParamsError as e:
        raise SweepError(str(e)) from None
    if todo:
        check_room(ps, out_root, len(todo), cluster.jobs if cluster is not None else (options.workers or ps.workers))


def _check_command(a, ps: param_files.ParamSet) -> int:
    """``--check``: beyond the file itself (param_files.load checked every value in it): the
    command line, the cluster's address, the data folder, the notebook sources the run will
    execute, and the output folders."""
    problems = []
    if a.workers is not None and a.workers < 1:
        problems.append(f"--workers must be a positive integer, got {a.workers}")
    try:
        cluster = _cluster(ps, _options(a))
        if cluster is not None and cluster.remote:
            dask_scale.probe(cluster.address, cluster.connect_timeout)
    except (SweepError, dask_scale.ScaleError) as e:
        cluster = None
        problems.append(str(e))
    for nb in (*ps.per_dataset_notebooks, *ps.aggregate_notebooks):
        try:
            notebooks.source_path(nb)
        except FileNotFoundError as e:
            problems.append(str(e))
    try:
        check_checkpoint_interval()
        resolve_data_dir(ps, a.data_dir)
        out_root = paths.resolve(a.outputs) if a.outputs else paths.runs_root()
        todo = _plan(ps, out_root / ps.name, _options(a)).todo
        if todo:
            check_room(ps, out_root, len(todo), cluster.jobs if cluster is not None else (a.workers or ps.workers))
    except SweepError as e:
        problems.append(str(e))
    if problems:
        for line in problems:
            print(f"error: {a.params}: {line}", file=sys.stderr)
        return 2
    print(
        f"{a.params}: OK ({len(ps.datasets)} datasets, {len(ps.config.seeds)} seeds, "
        f"{len(ps.config.methods)} methods, {ps.config.epochs} epochs, device {ps.config.device})"
    )
    return 0


def _run_command(a, ps: param_files.ParamSet) -> int:
    """The command line's run (after the parameter file passed its checks)."""
    t = time.perf_counter()
    out_root = paths.resolve(a.outputs) if a.outputs else paths.runs_root()
    if a.aggregates:
        check_writable(out_root / ps.name)
        with set_lock(out_root / ps.name):
            run_aggregate(ps, out_root, a.fresh_kernels)
            write_index(ps, out_root)
        print(
            f"{ps.name}: aggregate notebooks re-rendered in {time.perf_counter() - t:.0f} s; outputs in "
            f"{out_root / ps.name}"
        )
        return 0
    rep = sweep(ps, out_root, _options(a))
    print(
        f"\n{ps.name}: {len(rep['done'])} run, {len(rep['skipped'])} already done, "
        f"{len(rep['failed'])} failed in {time.perf_counter() - t:.0f} s; outputs in "
        f"{out_root / ps.name} (index.md lists them)"
    )
    if rep.get("stale"):
        print(
            f"  {len(rep['stale'])} of those done ran with other settings than {a.params} "
            f"({'; '.join(sorted(set(rep['stale'].values())))}): --force {STALE} brings them up to date, "
            f"reusing their stored results"
        )
    for d, line in rep["reference"].items():
        print(f"  {d}: {line}")
    for d, err in rep["failed"].items():
        print(f"  FAILED {d}: {err}  (traceback in {failed_record(out_root / ps.name, d)})")
    return 1 if rep["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
