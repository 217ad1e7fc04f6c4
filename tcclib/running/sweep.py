"""Run a parameter set (``python -m tcclib PARAMS``, :mod:`tcclib.running.cli`): the per-dataset
notebooks for every dataset, on the workers of :mod:`tcclib.running.executor`, then the aggregate ones.

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

import dataclasses
import difflib
import importlib.util
import json
import os
import runpy
from dataclasses import dataclass, field
from pathlib import Path

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import own_code, store
from tcclib.data.sources import DATA_DIR_ENV, local_source
from tcclib.method import check, identity, plugins, registry, rules
from tcclib.running import executor, notebooks
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
    disk_error_line,
    recover,
    set_lock,
)
from tcclib.util import errors, paths
from tcclib.util import threads as thread_budget
from tcclib.util.progress import PROGRESS_FILE, Overall


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


NOTEBOOK_LINES = {
    "01_data_prep": "the table, its class balance, the split and the labeled rows",
    "02_correlation": "the XGBoost importance matrices and the corrupted features they choose",
    "03_pretraining": "every method trained and evaluated, against the paper's numbers where it reports the dataset",
    "04_evaluation": "the paper's Tables 2-5 from this set, next to the paper's, and the win matrices",
    "05_figures": "the paper's Figures 1-3 re-made, Figure 2's claim measured",
    "06_report": "the report: ours against the paper cell by cell and claim by claim, ranks, the baselines",
    "07_ablation": "the labeled fraction and the corruption rate varied one at a time",
}
"""What each notebook shows, in one line (the gallery of :func:`write_index`)."""
FIGURE_CAPTIONS = {
    "paper_vs_ours_accuracy": "Ours against the paper, accuracy: every cell of Tables 2 and 4, our mean minus the "
    "paper's with our 95 % interval, coloured by the verdict (equivalent, differs, undecided)",
    "paper_vs_ours_auroc": "Ours against the paper, AUROC: the same for Tables 3 and 5",
    "figure1_learning_curves": "Figure 1: the contrastive loss per epoch, mean and 95 % interval over the seeds",
    "figure2_pca_train": "Figure 2: 3-D PCA of the training rows' embeddings (first seed), each panel's class "
    "separation measured (silhouette, linear probe)",
    "figure2_pca_test": "Figure 2: the same for the test rows",
    "figure3_win_matrix": "Figure 3: significant wins of the row method over the column method, ours, and the "
    "paper's on the same datasets where it reports three or more",
    "win_matrices_accuracy": "Win matrices, accuracy: how and where to corrupt, with the baselines",
    "win_matrices_auroc": "Win matrices, AUROC: how and where to corrupt, with the baselines",
    "report_win_matrices": "The report's win matrix: ours with the baselines, next to the paper's",
    "cd_accuracy": "Average ranks over the datasets, accuracy: Friedman and Nemenyi's critical difference",
    "cd_auroc": "Average ranks over the datasets, AUROC: Friedman and Nemenyi's critical difference",
    "ablation": "Accuracy and AUROC against the labeled fraction and the corruption rate",
}
"""A figure's file name (no suffix) -> its one-line caption in the gallery of :func:`write_index`;
the gallery shows these first, in this order, then any other figure under its name."""


def _gallery(set_dir: Path) -> list[str]:
    """The index's figures: each PNG of ``figures/`` (or, for a set without one, of its datasets'
    folders) as an image with a one-line caption and its PDF."""
    if (set_dir / "figures").is_dir():
        pngs = sorted((set_dir / "figures").glob("*.png"))
    else:
        pngs = sorted(set_dir.glob("*/*.png"))
    order = list(FIGURE_CAPTIONS)
    pngs.sort(key=lambda f: (order.index(f.stem) if f.stem in order else len(order), str(f)))
    lines = []
    for png in pngs:
        rel = png.relative_to(set_dir).as_posix()
        caption = FIGURE_CAPTIONS.get(png.stem, png.stem.replace("_", " "))
        if png.parent != set_dir / "figures":
            caption += f" ({png.parent.name})"
        pdf = f" ([PDF]({rel[:-4]}.pdf))" if png.with_suffix(".pdf").exists() else ""
        lines += [f"![{caption}]({rel})", "", f"*{caption}*{pdf}", ""]
    return lines


def write_index(ps: param_files.ParamSet, out_root: Path) -> Path:
    """``outputs/<set>/index.md``, where a reader lands: the set in a sentence, its notebooks one
    line each, its figures as a gallery (each with a caption, :data:`FIGURE_CAPTIONS`), the result
    files, and every dataset's status with its notebooks."""
    set_dir = out_root / ps.name
    st = store.status(set_dir)
    lines = [
        f"# Outputs of the `{ps.name}` parameter set",
        "",
        ps.description.strip(),
        "",
        f"Settings: `{ps.path}`" if ps.path else "",
        "",
        "## Notebooks",
        "",
    ]
    for nb in ps.aggregate_notebooks:
        if (set_dir / f"{nb}.ipynb").exists():
            lines.append(f"- [{nb}]({nb}.ipynb): {NOTEBOOK_LINES.get(nb, 'over the whole set')}")
    if (set_dir / "report.md").exists():
        lines.append("- [report.md](report.md): the report as one page (06 writes it)")
    per = ", ".join(f"{nb[:2]} {NOTEBOOK_LINES[nb]}" for nb in ps.per_dataset_notebooks if nb in NOTEBOOK_LINES)
    lines.append(f"- per dataset (the table below): {per}" if per else "- per dataset: the table below")
    gallery = _gallery(set_dir)
    if gallery:
        lines += ["", "## Figures", "", *gallery[:-1]]  # (its last line is a blank)
    files = sorted((set_dir / "results").glob("*")) if (set_dir / "results").exists() else []
    if files:
        lines += ["", "## Results", ""]
        lines += [f"- [{f.name}](results/{f.name})" for f in files if f.suffix in (".csv", ".md")]
    lines += ["", "## Datasets", "", "| dataset | status | notebooks |", "| --- | --- | --- |"]
    stale = store.stale_noted(set_dir)
    for _, r in st.iterrows():
        # an incomplete dataset's notebooks are partial renders, rewritten when it resumes: no links
        nbs = " ".join(
            f"[{nb[:2]}]({r.dataset}/{nb}.ipynb)"
            for nb in ps.per_dataset_notebooks
            if r.status != "incomplete" and (set_dir / r.dataset / f"{nb}.ipynb").exists()
        )
        one = " ".join(str(r.error).split()).replace("|", "\\|")
        err = f" ({one[:160]})" if r.error else ""
        if r.status == "done" and r.dataset in stale:  # (shown as stored: see stale.json)
            err = f", STALE: run with other settings than the parameter file ({stale[r.dataset][:120]})"
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


def settings_changed(ps: param_files.ParamSet, set_dir: Path, dataset: str, data_dir=None) -> str | None:
    """How the settings a finished ``dataset`` ran with (its ``config.json``) differ from what the
    parameter file asks now, e.g. ``methods +class_most_published_exact``, or ``data file
    mytable.csv changed`` where the file it is read from (in ``data_dir``, the run's data folder,
    for an OpenML dataset) changed since; None when they are the same (or nothing was stored)."""
    f = set_dir / dataset / "config.json"
    if not f.exists():
        return None
    file, reading = local_source(ps.spec(dataset), data_dir)
    same, why = store.same_settings(f, ps.config_for(dataset), file, reading)
    return None if same else why


def skipped_line(set_dir: Path, dataset: str, changed: str | None) -> str:
    """What the sweep says of a finished dataset it does not run now."""
    if changed:
        return (
            f"{dataset}: done in {set_dir / dataset}, but with other settings than the parameter file "
            f"({changed}): --force {STALE} (or --force {dataset}) brings it up to date, {store.reuse_words(changed)}"
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


def check_names(ps: param_files.ParamSet, options: SweepOptions) -> None:
    """The names of ``--force``/``--only``: datasets of the set (a ParamsError naming the closest)."""
    if options.force and options.force != ["all"]:
        _names_in_set([f for f in options.force if f != STALE], ps, "--force")
    if options.only:
        _names_in_set(options.only, ps, "--only")


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
    """The datasets a sweep runs now (``todo``), those finished it leaves (``skipped``), the
    finished ones whose stored settings differ from the file's (``stale``: how), and those marked
    finished whose result files are gone (``incomplete``: which; they run again)."""

    todo: list[str]
    skipped: list[str]
    stale: dict[str, str]
    incomplete: dict[str, str] = field(default_factory=dict)


def _plan(ps: param_files.ParamSet, set_dir: Path, options: SweepOptions) -> _Plan:
    force = options.force
    force_all = force == ["all"]
    force_stale = bool(force) and STALE in force
    forced = [] if (force is None or force_all) else _names_in_set([f for f in force if f != STALE], ps, "--force")
    chosen = _names_in_set(options.only, ps, "--only") if options.only else None
    plan = _Plan([], [], {})
    try:
        data_dir = resolve_data_dir(ps, options.data_dir)
    except SweepError:  # (told by the run's own check of it)
        data_dir = None
    for d in ps.datasets:
        if chosen is not None and d not in chosen:
            continue
        done = (set_dir / d / "_DONE.json").exists()
        missing = store.missing_files(set_dir / d) if done else []
        why = settings_changed(ps, set_dir, d, data_dir) if done and not missing else None
        unrendered = _unrendered(ps, set_dir / d) if done and not missing else []
        if why:
            plan.stale[d] = why
        if missing:
            plan.incomplete[d] = store.missing_words(missing, set_dir / d)
        elif unrendered:
            plan.incomplete[d] = f"{errors.first_few(unrendered, 3)} not rendered (finished by a notebook run by hand)"
        rerun = force_all or d in forced or (force_stale and why) or missing or unrendered
        (plan.skipped if done and not rerun else plan.todo).append(d)
    return plan


def _unrendered(ps: param_files.ParamSet, folder: Path) -> list[str]:
    """The set's per-dataset notebooks with no render in ``folder``, where its marker is a hand
    run's (notebook 03 in Lab or papermill: :data:`tcclib.artifacts.store.OUTSIDE_A_SWEEP`): the
    sweep renders them, reusing what is stored.  [] for a sweep's marker."""
    try:
        record = json.loads((folder / "_DONE.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(record, dict) or record.get("by") != store.OUTSIDE_A_SWEEP:
        return []
    return [f"{nb}.ipynb" for nb in ps.per_dataset_notebooks if not (folder / f"{nb}.ipynb").is_file()]


def sweep(
    ps: param_files.ParamSet, out_root: Path | None = None, options: SweepOptions | None = None, say=print, **settings
):
    """Run the set into ``<out_root>/<set>`` (default ``runs/``; the committed references are
    ``outputs/``) with ``options`` (a :class:`SweepOptions`, or its fields as keywords); returns
    ``{"done": [...], "skipped": [...], "failed": {dataset: error}, "reference": {dataset: line},
    "stale": {dataset: how}}`` (``stale``: the finished datasets it left whose stored settings are not
    the file's, and those it ran whose notebooks trained them otherwise: an edited notebook).

    Before any work: the options, the cluster address, the data folder, and that every folder the
    run writes can be written and has room (:func:`tcclib.running.folders.check_room`); a
    :class:`SweepError` otherwise.  A full disk or a read-only folder met during the run is a
    :class:`SweepError` too (one line; every dataset finished before it is intact).  An interrupt
    (Ctrl-C, Lab's Kernel > Interrupt, SIGINT) ends every worker (kernels, worker processes, the
    Dask futures) within seconds and raises :class:`~tcclib.running.folders.Interrupted`, whose text
    says what was kept and how to resume.  ``say``: where the lines go (``print``)."""
    options = options if options is not None else SweepOptions(**settings)
    check_checkpoint_interval()
    identities = check_keyable(ps)
    plugins.export()  # the kernels and local workers started from here load the same plugins
    cluster = cluster_options(ps, options)
    out_root = paths.resolve(Path(out_root) if out_root is not None else paths.runs_root())
    data_dir = resolve_data_dir(ps, options.data_dir)
    if data_dir:
        os.environ[DATA_DIR_ENV] = data_dir
    set_dir = out_root / ps.name
    plan = _plan(ps, set_dir, options)
    ref_root = Path(options.reference_root) if options.reference_root is not None else paths.reference_root()
    if _nothing_to_run(ps, set_dir, plan, options):
        # only reads (a read-only or locked folder is no obstacle)
        _say_skipped(set_dir, plan, options, say, identities)
        reference = {
            d: line
            for d in plan.skipped
            if (line := store.reference_line(set_dir / d, ref_root / ps.name / d)) is not None
        }
        return {"done": [], "skipped": plan.skipped, "failed": {}, "reference": reference, "stale": plan.stale}
    check_contracts(ps, identities)
    check_room(ps, out_root, len(plan.todo), cluster.jobs if cluster is not None else (options.workers or ps.workers))
    connection = executor.connect(cluster) if cluster is not None and plan.todo else None
    try:
        with set_lock(set_dir):
            for d in ps.datasets:
                note = recover(set_dir, d)
                if note:
                    say(f"{d}: {note}")
            plan = _plan(ps, set_dir, options)
            rep = _sweep_locked(ps, out_root, plan, options, (cluster, connection), ref_root, say, identities)
    except OSError as e:
        if e.errno not in DISK_ERRNOS:
            raise
        raise SweepError(disk_error_line(e)) from None
    finally:
        if connection is not None:
            dask_scale.disconnect(connection)
    rep["stale"] = {**{d: w for d, w in plan.stale.items() if d in plan.skipped}, **rep.pop("ran", {})}
    return rep


def stale_datasets(ps: param_files.ParamSet, set_dir: Path, options: SweepOptions) -> dict[str, str]:
    """The finished datasets of the whole set (``--only`` aside: the aggregates show them all)
    whose stored settings are not the parameter file's (how: :func:`settings_changed`)."""
    try:
        return _plan(ps, set_dir, dataclasses.replace(options, only=None, force=None)).stale
    except param_files.ParamsError as e:
        raise SweepError(str(e)) from None


def _nothing_to_run(ps: param_files.ParamSet, set_dir: Path, plan: _Plan, options: SweepOptions) -> bool:
    interrupted = any((set_dir / PREVIOUS / d).exists() for d in ps.datasets)
    return (
        not plan.todo
        and not interrupted
        and (ps.train_only or (set_dir / "index.md").exists())
        and not (options.aggregate and aggregates_stale(ps, set_dir))
    )


def cluster_options(ps: param_files.ParamSet, options: SweepOptions) -> dask_scale.ClusterOptions | None:
    """The run's options (workers, threads, cluster), checked before any work by the sweep and the
    screen alike, at ``--check`` and at the run (a :class:`SweepError` naming the bad value and the
    fix); the cluster's options, None when the set runs on threads here."""
    scheduler = options.scheduler if options.scheduler is not None else ps.scheduler
    seeds_per_unit = options.seeds_per_unit
    try:
        if scheduler is not None:
            param_files.check_scheduler(scheduler, "--scheduler")
        thread_budget.budget(1, options.threads)
    except (param_files.ParamsError, thread_budget.ThreadsError) as e:
        raise SweepError(str(e)) from None
    for name in ("workers", "seeds_per_unit"):
        value = getattr(options, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise SweepError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
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
    ps, out_root: Path, plan: _Plan, options: SweepOptions, cluster: tuple, ref_root: Path, say=print, identities=None
) -> dict:
    """The sweep under the set's lock; ``cluster``: ``(ClusterOptions, connection)``, both None on
    threads here; ``identities``: the set's user code keyed by value (:func:`check_keyable`).  An
    interrupt (Ctrl-C, Kernel > Interrupt) ends the workers and raises
    :class:`~tcclib.running.folders.Interrupted` with the line saying what was kept."""
    set_dir = out_root / ps.name
    if not ps.train_only:  # a train_only set (the screen) has no notebooks to list
        store.write_json(ps.datasets, set_dir / "datasets.json")
    for dataset in plan.todo:  # what an interrupted run's killed workers left: the bar shows this run's state
        (set_dir / dataset / PROGRESS_FILE).unlink(missing_ok=True)
    progress = Overall(
        plan.todo,
        len(plan.skipped),
        f"{'screen' if ps.train_only else 'sweep'} {ps.name}",
        options.progress,
        options.weights,
        say,
        folder=set_dir,
    )
    _say_skipped(set_dir, plan, options, progress.say, identities or {})
    _say_changed(plan, progress.say)
    try:
        if cluster[1] is not None and plan.todo:
            done, failed = executor.run_on_cluster(ps, out_root, plan.todo, options, cluster, progress)
        else:
            done, failed = executor.run_on_threads(ps, out_root, plan.todo, options, progress)
    except KeyboardInterrupt:
        progress.close()
        raise Interrupted(interrupted_line(set_dir, plan.todo, progress.members, options.resume_hint)) from None
    finally:
        progress.close()
    stale = {d: why for d, why in plan.stale.items() if d in plan.skipped}
    ran_otherwise = _ran_otherwise(ps, set_dir, done, options)
    for d, why in ran_otherwise.items():
        progress.say(ran_otherwise_line(d, why))
    stale.update(ran_otherwise)
    if options.only:  # (the datasets this run leaves out are in the aggregates too)
        whole = stale_datasets(ps, set_dir, options)
        stale.update({d: why for d, why in whole.items() if d not in done})
    store.note_stale(set_dir, stale)
    if options.aggregate and (done or plan.skipped):
        run_aggregate(ps, out_root, options.fresh_kernels)
    if not ps.train_only:
        write_index(ps, out_root)
    reference = {}
    for d in done + plan.skipped:
        line = store.reference_line(out_root / ps.name / d, ref_root / ps.name / d)
        if line is not None:
            reference[d] = line
    return {"done": done, "skipped": plan.skipped, "failed": failed, "reference": reference, "ran": ran_otherwise}


def _ran_otherwise(ps: param_files.ParamSet, set_dir: Path, done: list[str], options: SweepOptions) -> dict:
    """Of the datasets this run finished, those whose notebooks trained them with other settings or
    data than the parameter file's (an edited notebook 03 run with ``--force``): how
    (:func:`settings_changed`)."""
    try:
        data_dir = resolve_data_dir(ps, options.data_dir)
    except SweepError:
        data_dir = None
    return {d: why for d in done if (why := settings_changed(ps, set_dir, d, data_dir))}


def ran_otherwise_line(dataset: str, why: str) -> str:
    """What the sweep says of a dataset its notebooks trained otherwise than the parameter file says."""
    return (
        f"{dataset}: its notebooks trained it with other settings than the parameter file ({why}; an edited "
        f"notebook?): index.md marks it STALE, --force {STALE} trains it as the file says"
    )


def _say_skipped(set_dir: Path, plan: _Plan, options: SweepOptions, say, identities: dict) -> None:
    """A line per finished dataset the sweep leaves, or (``list_skipped`` False) one for them all;
    with the identities the user's rules matched (:func:`keyed_as`)."""
    current = [d for d in plan.skipped if d not in plan.stale]  # (the others were said stale, one by one)
    if options.list_skipped:
        for d in plan.skipped:
            say(skipped_line(set_dir, d, plan.stale.get(d)))
        if current and identities:
            say(f"reused{store.keyed_as(identities)}".replace("reused; ", "reused: "))
    elif current:
        say(
            f"{len(current)} of {errors.counted(len(plan.skipped) + len(plan.todo), 'dataset')} already done in "
            f"{paths.relative_to_root(set_dir)} with these settings (reused{store.keyed_as(identities)}; --force NAME "
            f"runs one again)"
        )


def _say_changed(plan: _Plan, say) -> None:
    """Before any training: a line per reason the finished datasets that run again differ from
    their stored settings (``code of nearby changed``), naming them."""
    reasons: dict[str, list[str]] = {}
    for d in plan.todo:
        if d in plan.stale:
            reasons.setdefault(plan.stale[d], []).append(d)
    for why, names in reasons.items():
        say(changed_line(names, why))
    for d, what in plan.incomplete.items():
        say(incomplete_line(d, what))


def changed_line(names: list[str], why: str) -> str:
    """What the sweep (and the screen) says of finished datasets that run again because ``why``
    (:func:`settings_changed`) changed since they were stored."""
    shown = errors.first_few(names, 4)
    return (
        f"{shown}: {why} since stored: {'they run' if len(names) > 1 else 'it runs'} again, and only the members "
        "whose keys changed train"
    )


def incomplete_line(dataset: str, what: str) -> str:
    """What the sweep says of a dataset marked finished whose result files are gone."""
    return f"{dataset}: {what}: it runs again (members whose keys and checkpoints are stored are not retrained)"


def check_keyable(ps: param_files.ParamSet) -> dict:
    """The set's user rules and baselines keyed by value now (:func:`tcclib.artifacts.keys.code_identities`),
    before any work; what cannot be keyed stops the run in one line (a :class:`SweepError`), and
    so does a rule changed in this process after it was registered, or a value of tcclib's training
    code set in this process (:func:`tcclib.artifacts.own_code.set_in_process`): the kernels and
    workers load the files afresh and would train as the files say."""
    try:
        found = content_keys.code_identities(ps.config)
        set_here = own_code.set_in_process()
    except identity.Unkeyable as e:
        raise SweepError(str(e)) from None
    if set_here:
        names = errors.first_few(set_here, 3)
        raise SweepError(
            f"{names}: set in this process after tcclib imported {'them' if len(set_here) > 1 else 'it'} (by a cell, a "
            "script or a plugin), but a sweep runs tcclib as its files say (its kernels and workers import it afresh): "
            "make the change in tcclib's file (then python tools/record_training_code.py --check --record), or "
            "register a rule or objective of your own in a plugin file and name it"
        )
    for method in ps.config.methods:
        spec = registry.METHODS[method]
        for rule in (spec.draw, spec.choice, spec.learns):
            changed = registry.changed_since_registered(rule)
            if changed:
                fix = (
                    "register one of your own with that value in a plugin file (e.g. registry.register_method("
                    "'mine', rules.Bernoulli('bernoulli_50', 0.5), ...)) and name it"
                    if registry.code_identity(rule) is None
                    else "make the change in the file (or where the rule is made and registered) and load it again"
                )
                raise SweepError(
                    f"{registry.named_as(rule)}: its {' and '.join(changed)} changed in this process after it was "
                    f"registered (e.g. an attribute set on it), but the run's kernels and workers load its "
                    f"file afresh and would not see that: {fix}"
                )
    return found


def check_contracts(ps: param_files.ParamSet, identities: dict) -> None:
    """Every method of the set with a user's rule or objective (``identities``: what
    :func:`check_keyable` found) keeps the contract (:func:`tcclib.method.check.check_methods`): a
    breach stops the run in one line before any work, instead of at each dataset's first step."""
    try:
        check.check_methods(ps.config.methods, identities)
    except rules.RuleContractError as e:
        raise SweepError(str(e)) from None


def interrupted_line(set_dir: Path, todo: list[str], members: int, hint: str = "") -> str:
    """The one line of an interrupted run: what it finished and kept, and how to resume."""
    finished = [d for d in todo if (set_dir / d / DONE).exists()]
    left = len(todo) - len(finished)
    return (
        f"interrupted: {len(finished)} of the {errors.counted(len(todo), 'dataset')} this run had to do finished and "
        f"are kept in {paths.relative_to_root(set_dir)} ({members} members trained); {left} not finished (a "
        f"pretraining that had started resumes from its last checkpoint). "
        f"{hint or 'Run the same command again to resume'}: finished datasets are skipped, only what is missing trains."
    )


def check_options(
    ps: param_files.ParamSet, options: SweepOptions, out_root: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """What ``--check`` checks of a run's options, before any work: the cluster's options and a
    running scheduler's answer, the checkpoint interval, the names of ``--force``/``--only``, and
    the folders the run writes (writable, with room).  A :class:`SweepError` in one line.  Returns
    the finished datasets whose settings or data file changed since, and how (:func:`settings_changed`),
    then those marked finished whose result files are gone (which: :func:`incomplete_line`)."""
    cluster = cluster_options(ps, options)
    if cluster is not None and cluster.remote:
        try:
            dask_scale.probe(cluster.address, cluster.connect_timeout)
        except dask_scale.ScaleError as e:
            raise SweepError(str(e)) from None
    check_checkpoint_interval()
    check_contracts(ps, check_keyable(ps))
    try:
        plan = _plan(ps, out_root / ps.name, options)
    except param_files.ParamsError as e:
        raise SweepError(str(e)) from None
    if plan.todo:
        workers = cluster.jobs if cluster is not None else (options.workers or ps.workers)
        check_room(ps, out_root, len(plan.todo), workers)
    return plan.stale, plan.incomplete


def __getattr__(name: str):
    """``main``: a ``tcc-sweep`` script installed by an older tcclib imports it from here; the
    command line is :func:`tcclib.running.cli.main` (which imports this module: no cycle back)."""
    if name == "main":
        raise ImportError(
            "tcclib.running.sweep.main is tcclib.running.cli.main since 0.2.0: this tcc-sweep script was installed "
            "by an older tcclib; reinstall (make install, or pip install -e .) to get the light one, or run "
            "python -m tcclib"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # python -m tcclib.running.sweep, the older spelling: run python -m tcclib
    runpy.run_module("tcclib", run_name="__main__", alter_sys=True)  # (the program, not an import of cli)
