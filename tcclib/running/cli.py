"""``python -m tcclib PARAMS [options]`` (or ``tcc-sweep``): run a parameter set
(:mod:`tcclib.running.sweep`), or, for a set with a ``screen:`` section (``params/screen.yaml``),
screen new methods against the stored built-ins (:mod:`tcclib.running.screen`) and write the
verdict (:mod:`tcclib.paper.verdict`).

    python -m tcclib params/demo.yaml                      # -> runs/demo/
    python -m tcclib demo                                  # the same, by its name (anywhere)
    python -m tcclib params/paper.yaml --outputs outputs   # the committed reference renders
    python -m tcclib params/smoke.yaml --force all         # re-render, reusing stored results
    python -m tcclib params/smoke.yaml --force credit-g --retrain   # redo one dataset

The command line is read once into the parameter set and one ``SweepOptions``, which the sweep and
the screen validate alike (``check_options``, at ``--check`` and at the run); what one of them
cannot honour is refused in one line (:data:`SCREEN_REFUSES`, :data:`SWEEP_REFUSES`).  tcclib's own
errors end the command short: a bad input with its line and exit status 2; a rule that breaks its
contract, a dataset that cannot be had and the like with the error's line after the file holding
its traceback, exit status 1 (``--traceback`` or ``TCC_TRACEBACK=1``: the traceback); an interrupt
with one line, exit status 130.  A front door (any layer): what trains or renders loads only on
the path that runs, so ``--help`` and a bad file or option answer at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from tcclib.data.sources import DATA_DIR_ENV
from tcclib.method import registry
from tcclib.method.config import cli_help
from tcclib.running import params as param_files
from tcclib.util import errors, paths

TRACEBACK = "--traceback"
"""The switch that shows a tcclib error's full traceback instead of its two lines."""
SCREEN_REFUSES = {
    "retrain": "the screen always reuses the stored members whose rule and settings match (an edited rule "
    "retrains only its own); --force NAME runs a dataset again",
    "no_aggregate": "a screen renders no aggregate notebook (its verdict is verdict.md)",
    "aggregates": "a screen renders no aggregate notebook (its verdict is verdict.md)",
    "fresh_kernels": "a screen trains in worker processes, not notebook kernels",
}
"""The sweep's options a screen refuses, with why (it takes every other one)."""
SWEEP_REFUSES = {
    "methods": "--methods is the screen's option (params/screen.yaml); {params} is a sweep: "
    "name its methods in its config: methods: [...]",
}
"""The screen's options a sweep refuses, with the fix."""


def main(argv=None) -> int:
    """The command line ``argv`` (default: ``sys.argv[1:]``) run; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if TRACEBACK in argv:
        os.environ[errors.TRACEBACK_ENV] = "1"  # (what a failed dataset's report reads too)
    full = errors.full_tracebacks()
    argv = [a for a in argv if a != TRACEBACK]
    try:
        return run(argv)
    except KeyboardInterrupt as e:  # Ctrl-C: the workers are gone; one line, no traceback
        print(f"\n{e or 'interrupted'}", file=sys.stderr)  # (Interrupted's text: what was kept)
        return 130
    except tuple(errors.SHORT) as e:
        _close_bars()
        if full:
            raise
        if isinstance(e, (errors.ConfigError, registry.RegistryError)):  # a bad input: its line names it
            print(f"error: {errors.error_text(e)}", file=sys.stderr)
            return 2
        note, line = errors.short_lines(e, f"{TRACEBACK} or {errors.TRACEBACK_ENV}=1")
        print(note, file=sys.stderr)
        print(f"error: {line}", file=sys.stderr)
        return 1


def _close_bars() -> None:
    """Close the progress bars the error left open (else tqdm redraws them after its lines)."""
    tqdm = sys.modules.get("tqdm")
    for open_bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ())):
        open_bar.close()


def run(argv) -> int:
    """The sweep, or the screen when the parameter file asks for one (tcclib's errors raised)."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # --help, or argparse's own usage error (said already)
        return int(e.code or 0)
    try:
        ps = param_files.load(param_files.find(args.params), args.data_dir, args.plugin)
    except param_files.ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    refused = _refused(args, ps)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    from tcclib.running import screen, sweep  # deferred: what trains or renders loads only to run or check

    options = sweep.SweepOptions(
        data_dir=args.data_dir,
        workers=args.workers,
        force=args.force,
        aggregate=not args.no_aggregate,
        only=args.only,
        reuse=not args.retrain,
        scheduler=args.scheduler,
        seeds_per_unit=args.seeds_per_unit,
        threads=args.threads,
        connect_timeout=args.connect_timeout,
        worker_wait=args.worker_wait,
        fresh_kernels=args.fresh_kernels,
    )
    refusals = (param_files.ParamsError, sweep.SweepError, *((ValueError,) if ps.screen is not None else ()))
    try:
        if ps.screen is not None:
            return _screen(args, ps, options)
        sweep.check_names(ps, options)
        if args.check:
            return _check_sweep(args, ps, options)
        return _run_sweep(args, ps, options)
    except screen.ScreenFailed:
        raise  # (a run's failure, not an input's: shown short, exit status 1)
    except refusals as e:  # locked, not writable, no data, no cluster; a screen's bad input
        print(f"error: {e}", file=sys.stderr)
        return 2


def _refused(args, ps) -> str | None:
    """The line refusing an option the command (a sweep or a screen) cannot honour; None."""
    table = SCREEN_REFUSES if ps.screen is not None else SWEEP_REFUSES
    given = [name for name in table if getattr(args, name) not in (None, False)]
    if not given:
        return None
    if ps.screen is None:
        return table[given[0]].format(params=args.params)
    flags = ", ".join("--" + n.replace("_", "-") for n in given)
    return f"screen: {flags} does not apply to a screen: {table[given[0]]}"


def _screen(args, ps, options) -> int:
    """The screen of the set: ``--check``, or its run and verdict."""
    from tcclib.paper import verdict  # deferred: what trains or renders loads only to run or check
    from tcclib.running import screen  # deferred: as above

    job = screen.from_params(ps, options, args.methods, args.outputs)
    if args.check:
        todo = screen.check(job)
        print(f"{args.params}: OK (a screen of {', '.join(job.methods)} on {errors.counted(len(todo), 'dataset')})")
        return 0
    results = screen.run(job)
    page = verdict.write(results, list(job.methods), list(job.compared), job.out)
    for line in verdict.sentences(results, list(job.methods), list(job.compared)):
        print(line)
    print(f"verdict: {page}")
    return 0


def _check_sweep(args, ps, options) -> int:
    """``--check``: beyond the file itself (param_files.load checked every value in it): the
    options, the cluster's address, the data folder, the notebook sources the run will execute,
    and the output folders; every problem found, one line each."""
    from tcclib.running import notebooks, sweep  # deferred: what trains or renders loads only to run or check

    problems, stale, incomplete = [], {}, {}
    for nb in (*ps.per_dataset_notebooks, *ps.aggregate_notebooks):
        try:
            notebooks.source_path(nb)
        except FileNotFoundError as e:
            problems.append(str(e))
    out_root = paths.resolve(args.outputs or paths.runs_root())
    try:
        sweep.resolve_data_dir(ps, args.data_dir)
    except sweep.SweepError as e:
        problems.append(str(e))
    try:
        stale, incomplete = sweep.check_options(ps, options, out_root)
    except sweep.SweepError as e:
        problems.append(str(e))
    for line in problems:
        print(f"error: {args.params}: {line}", file=sys.stderr)
    if problems:
        return 2
    counts = [errors.counted(len(v), n) for v, n in ((ps.datasets, "dataset"), (ps.config.seeds, "seed"))]
    methods, epochs = errors.counted(len(ps.config.methods), "method"), errors.counted(ps.config.epochs, "epoch")
    print(f"{args.params}: OK ({', '.join(counts)}, {methods}, {epochs}, device {ps.config.device})")
    for dataset, changed in stale.items():
        print(f"  {sweep.skipped_line(out_root / ps.name, dataset, changed)}")
    for dataset, what in incomplete.items():
        print(f"  {sweep.incomplete_line(dataset, what)}")
    return 0


def _run_sweep(args, ps, options) -> int:
    """The sweep's run (after the parameter file and the options passed their checks)."""
    from tcclib.artifacts import store  # deferred: what trains or renders loads only to run
    from tcclib.running import folders, sweep  # deferred: as above

    t = time.perf_counter()
    out_root = paths.resolve(args.outputs or paths.runs_root())
    if args.aggregates:
        folders.check_writable(out_root / ps.name)
        with folders.set_lock(out_root / ps.name):
            stale = sweep.stale_datasets(ps, out_root / ps.name, options)
            for dataset, why in stale.items():  # (shown as stored: the notebooks' status line says so too)
                print(sweep.skipped_line(out_root / ps.name, dataset, why))
            store.note_stale(out_root / ps.name, stale)
            sweep.run_aggregate(ps, out_root, args.fresh_kernels)
            sweep.write_index(ps, out_root)
        print(
            f"{ps.name}: aggregate notebooks re-rendered in {time.perf_counter() - t:.0f} s; outputs in "
            f"{out_root / ps.name}"
        )
        return 0
    rep = sweep.sweep(ps, out_root, options)
    print(
        f"\n{ps.name}: {len(rep['done'])} run, {len(rep['skipped'])} already done, "
        f"{len(rep['failed'])} failed in {time.perf_counter() - t:.0f} s; outputs in "
        f"{out_root / ps.name} (index.md lists them)"
    )
    if rep.get("stale"):
        changed = "; ".join(sorted(set(rep["stale"].values())))
        print(
            f"  {len(rep['stale'])} of those done ran with other settings than {args.params} ({changed}): "
            f"--force {sweep.STALE} brings them up to date, {store.reuse_words(changed, plural=True)}"
        )
    for d, line in rep["reference"].items():
        print(f"  {d}: {line}")
    for d, err in rep["failed"].items():
        print(f"  FAILED {d}: {err}  (traceback in {folders.failed_record(out_root / ps.name, d)})")
    return 1 if rep["failed"] else 0


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m tcclib`` (the sweep's options, and the screen's ``--methods``)."""
    ap = argparse.ArgumentParser(
        prog="python -m tcclib",
        description=__doc__.split("\n\nThe command line")[0],
        epilog=cli_help(),  # the settings, from their declarations
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _what_runs(ap)
    _where_it_runs(ap)
    _what_runs_again(ap)
    _what_it_does(ap)
    return ap


def _what_runs(ap: argparse.ArgumentParser) -> None:
    """The parameter file (or a built-in set's name), the plugins, the screen's methods and the
    folders read and written."""
    sets = param_files.builtin_sets()
    ap.add_argument(
        "params",
        help="parameter file, e.g. params/demo.yaml, or the name of a built-in set, e.g. demo (the main job): "
        + (", ".join(sets) if sets else "none found"),
    )
    ap.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="PATH_OR_MODULE",
        help="load a plugin (a .py file or a module name that registers rules, objectives, methods or baselines) "
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


def _where_it_runs(ap: argparse.ArgumentParser) -> None:
    """Where the datasets run: workers, threads, a Dask cluster and its waits."""
    ap.add_argument("--workers", type=int, default=None, help="datasets run in parallel")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch/XGBoost threads per dataset job (default: the cores shared among the jobs, "
        "or $OMP_NUM_THREADS when set)",
    )
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
        default=param_files.CONNECT_TIMEOUT,
        help="seconds to reach a running scheduler: connection, handshake and first answer "
        f"(default {param_files.CONNECT_TIMEOUT:g})",
    )
    ap.add_argument(
        "--worker-wait",
        type=float,
        default=param_files.WORKER_WAIT,
        help=f"seconds to wait for a running scheduler's first worker (default {param_files.WORKER_WAIT:g})",
    )


def _what_runs_again(ap: argparse.ArgumentParser) -> None:
    """Which datasets run now, and what of their stored results is reused."""
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


def _what_it_does(ap: argparse.ArgumentParser) -> None:
    """What the run does beyond training: notebooks, kernels, checks, tracebacks."""
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
    ap.add_argument(TRACEBACK, action="store_true", help="show a tcclib error's full traceback (or TCC_TRACEBACK=1)")
