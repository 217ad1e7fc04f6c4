"""The screen: from a new rule to a verdict over the paper's 30 datasets, training only the new rule.

    python -m tcclib params/screen.yaml --plugin examples/nearby_rule.py     # or: make screen PLUGIN=...
    python -m tcclib params/screen.yaml --plugin my_rule.py --only kc2 credit-g --workers 1

The built-ins' results at the screen's settings are stored already (``outputs/head_variants/100ep/frozen``:
the paper's 30 datasets, 8 seeds, 100 pretraining epochs, ``no_pretrain``, ``random``, ``class``
and the baselines).  For each of those datasets the screen takes the stored run's settings (its
``config.json``: the same seeds, splits and every setting), trains the new method(s) with them
into ``runs/screen/<dataset>/`` and reuses what is stored there (so a second run with the rule
unchanged trains nothing, and an edited rule retrains only its own members: its code is in its
content key).  The reference store is only read.  :func:`run` returns the new and the compared
results together (also written as ``runs/screen/results.csv``); :mod:`tcclib.paper.verdict`
(which only reads results) ranks the new method(s) among the compared ones and writes the
verdict page, ``runs/screen/verdict.md`` with its figures (``python -m tcclib`` and notebook
``09_your_rule`` call both).

**One front door.**  The screen is a sweep (:func:`tcclib.running.sweep.sweep`) of a set whose
unit of work trains and stores a dataset instead of rendering notebooks
(:func:`tcclib.running.folders.train_dataset`): the same workers (default: one per core, each on
its share of the cores, in worker processes), thread budget, overall progress bar, interrupt
handling (Ctrl-C or Kernel > Interrupt ends the workers within seconds and keeps every finished
dataset; the next run resumes), Dask path (``--scheduler``, so a screen runs on a cluster or
Slurm too), lock and folder checks, and the same options, validated once
(:mod:`tcclib.running.cli` names those a screen refuses).  A dataset finished with the rule as it
is now is skipped; one whose stored rule or settings differ is run again, reusing what matches.

Datasets run the longest first (by the reference's recorded time), so that the workers end
together; each is saved as soon as it is done.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import InitVar, dataclass, field
from pathlib import Path

import pandas as pd

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import own_code, store
from tcclib.data.sources import load_dataset, local_source
from tcclib.method import plugins, registry
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.running import folders, notebooks
from tcclib.running import params as param_files
from tcclib.running import sweep as sweeps
from tcclib.running.folders import SweepError
from tcclib.util import errors, paths, threads
from tcclib.util.errors import ConfigError

REFERENCE = Path("outputs") / "head_variants" / "100ep" / "frozen"
"""The stored built-ins the screen compares with (under the project root)."""
IMPORTANCES = Path("outputs") / "paper"
"""A committed store of the same datasets, splits and XGBoost settings whose importance matrices a
correlation rule's screen takes (reused only where an importance key matches; the rest computed)."""
COMPARED = ("class", "random", "no_pretrain", "logreg", "self_training", "xgboost")
"""What the new method is ranked among (those the reference store holds)."""
OUT = Path("runs") / "screen"
HOW_IT_COMPUTES = ("device", "matmul_precision", "compile", "draws")
"""The settings a screen may set apart from the stored ones (``Screen.extra``, a screen file's
``config:``): where and how its members compute, not what they train on."""
SET_BY_THE_SCREEN = {
    "methods": "the new methods are the screen's (its section's methods:, --methods or the plugins')",
    "baselines": "the screen trains no baseline; the compared ones are the reference's (screen: compare:)",
    "keep_embeddings": "the screen keeps no embeddings; a sweep of the dataset does (keep_embeddings:)",
    "progress": "the screen shows one overall bar (TCC_PROGRESS=lines: a line per dataset)",
}
"""The settings a screen sets itself, with why they cannot be given."""


class ScreenError(ConfigError):
    """A screen that cannot start: no new method, an unknown one, no reference store."""


@dataclass(frozen=True)
class Screen:
    """What a screen runs: the new ``methods``, the ``reference`` store, what they are ``compared``
    with, the ``datasets`` (default: every finished one of the reference, the longest first) and
    where it writes (``out``; the sweep's set is ``out.name`` under ``out.parent``).

    How it runs: ``options``, the sweep's (:class:`tcclib.running.sweep.SweepOptions`: ``workers``
    datasets at once, default one per core; ``threads``, ``scheduler``, ``force``, ``data_dir``, ...);
    ``workers``, ``data_dir`` and ``progress`` given here set those fields of it."""

    methods: tuple[str, ...]
    reference: Path = REFERENCE
    compared: tuple[str, ...] = COMPARED
    datasets: tuple[str, ...] | None = None
    out: Path = OUT
    extra: dict = field(default_factory=dict)  # settings for the new methods: HOW_IT_COMPUTES, or the stored values
    importances: Path | None = IMPORTANCES  # where a correlation rule's importance matrices may come from
    options: sweeps.SweepOptions = sweeps.SweepOptions()
    workers: InitVar[int | None] = None
    data_dir: InitVar[str | None] = None
    progress: InitVar[bool | None] = None

    def __post_init__(self, workers, data_dir, progress):
        given = {k: v for k, v in dict(workers=workers, data_dir=data_dir, progress=progress).items() if v is not None}
        object.__setattr__(self, "options", dataclasses.replace(self.options, **given))


def new_methods(loaded) -> list[str]:
    """The methods the plugins ``loaded`` (their module names) registered, in order."""
    modules = set(loaded)
    return [e.name for e in registry.entries() if not e.is_baseline and e.origin in modules]


def plan(screen: Screen) -> list[tuple[str, Config]]:
    """``(dataset, settings)`` for every dataset the screen trains, the longest first, before any
    work: each dataset's settings are its stored run's, with the new methods and no baselines.  A
    :class:`ScreenError` (one line, naming the input and the fix) for a missing reference store or
    dataset, a new method that is unknown, a baseline or one of the compared, a compared name
    that nothing registers or the reference does not hold."""
    reference = paths.resolve(screen.reference)
    if not reference.is_dir():
        raise ScreenError(
            f"screen: no reference store at {reference}; it holds the built-ins' stored results "
            f"(tools/head_variants.py --datasets all --epochs 100 --out outputs/head_variants makes it)"
        )
    _check_methods(screen)
    finished = _finished(reference)
    names = list(screen.datasets) if screen.datasets else list(finished)
    names = param_files.dataset_names(names, "screen: datasets", list(finished)) if screen.datasets else names
    missing = [n for n in names if n not in finished]
    if missing:
        raise ScreenError(
            f"screen: {', '.join(missing)} not finished in {reference}; it has {', '.join(sorted(finished))}"
        )
    _check_compared(screen, reference, names)
    out = []
    for name in sorted(names, key=lambda n: -_seconds(finished[n])):  # the longest first: workers end together
        recorded = store.settings_of(_recorded_settings(finished[name] / "config.json"))
        _check_extra(screen, recorded, finished[name] / "config.json")
        cfg = Config.from_dict(
            {
                **recorded,
                **screen.extra,
                "methods": list(screen.methods),
                "baselines": [],
                "keep_embeddings": False,
                "progress": screen.options.progress,
            }
        )
        out.append((name, cfg))
    return out


def _check_extra(screen: Screen, recorded: dict, config: Path) -> None:
    """The settings given for the new methods (``screen.extra``) are where they compute
    (:data:`HOW_IT_COMPUTES`) or the stored ones: a screen trains each dataset as its reference
    did, so that the new method pairs with the stored results; a :class:`ScreenError` otherwise."""
    for setting, value in screen.extra.items():
        if setting in SET_BY_THE_SCREEN:
            raise ScreenError(f"screen: config: {setting}: {SET_BY_THE_SCREEN[setting]}; take it out of config:")
        if setting in HOW_IT_COMPUTES:
            continue
        try:
            stored = getattr(Config.from_dict(recorded), setting)
            given = getattr(Config.from_dict({**recorded, setting: value}), setting)
        except (ConfigError, TypeError) as e:
            raise ScreenError(f"screen: config: {e}") from None
        if given != stored:
            raise ScreenError(
                f"screen: config: {setting} {_shown(value)} is not the stored {_shown(stored)} of "
                f"{paths.relative_to_root(config)}: a screen trains each dataset with its stored settings, so "
                f"that the new method pairs with the stored results; take {setting} out of config: (a screen "
                f"may set only {', '.join(HOW_IT_COMPUTES)}; a quicker one: --only NAME ...)"
            )


def _shown(value) -> str:
    """A setting's value as a parameter file writes it (a list for a tuple)."""
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _recorded_settings(config: Path) -> dict:
    """The settings a reference dataset's ``config.json`` records (an object of settings); a
    :class:`ScreenError` naming the file and the fix for one that is damaged or holds anything else."""
    where = paths.relative_to_root(config)
    try:
        recorded = json.loads(config.read_text())
    except json.JSONDecodeError as e:
        raise ScreenError(f"screen: {where} is damaged ({e}): restore it (git checkout -- {where})") from None
    if not isinstance(recorded, dict):
        raise ScreenError(
            f"screen: {where} holds a JSON {type(recorded).__name__}, not a run's settings (an object of "
            f"setting: value): restore it (git checkout -- {where})"
        )
    return recorded


def _check_methods(screen: Screen) -> None:
    if not screen.methods:
        raise ScreenError(
            "screen: no new method to train; load a plugin that registers one (--plugin path/to/rule.py) "
            "or name methods with --methods"
        )
    for m in screen.methods:
        registry.get(m)  # an unknown name: the registry's message, with where it looked
        if registry.get(m).is_baseline:
            raise ScreenError(f"screen: {m!r} is a baseline, not a pretraining method; the screen trains methods")
        if m in screen.compared:
            raise ScreenError(
                f"screen: {m!r} is one of the compared methods (its results are the reference's); screen a new "
                f"method (--methods NAME, or a plugin's), or take {m!r} out of the screen's compare: list"
            )


def _finished(reference: Path) -> dict[str, Path]:
    """The reference's finished datasets (``_DONE.json``); a :class:`ScreenError` for one whose
    ``config.json`` or ``results.csv`` is missing or not a file."""
    finished = {d.name: d for d in reference.iterdir() if (d / "_DONE.json").is_file()}
    for needed, what in (("config.json", "its settings"), ("results.csv", "its results")):
        broken = sorted(n for n, d in finished.items() if not (d / needed).is_file())
        if broken:
            folder = "; a folder has its name there" if (finished[broken[0]] / needed).is_dir() else ""
            raise ScreenError(
                f"screen: the reference store {reference} has no {needed} in {', '.join(broken)} (a finished run "
                f"stores {what} there{folder}): restore it (git checkout -- {paths.relative_to_root(reference)}) or "
                f"leave {broken[0]} out (--only / datasets:)"
            )
    for name, folder in sorted(finished.items()):
        unlike = store.unlike_finished(folder)  # (edited since it finished)
        if unlike:
            _recorded_settings(folder / "config.json")  # (a damaged one is named as such, with its error)
            raise ScreenError(
                f"screen: the reference store {reference}: {name}: {store.missing_words(unlike, folder)}: restore it "
                f"(git checkout -- {paths.relative_to_root(folder)}), or leave {name} out (--only / datasets:)"
            )
    return finished


def _check_compared(screen: Screen, reference: Path, names: list[str]) -> None:
    """Every compared name registered and held by the reference for every screened dataset."""
    for c in screen.compared:
        try:
            registry.get(c)
        except registry.RegistryError as e:
            raise ScreenError(f"screen: compare: {e}") from None
    for name in names:
        held = set(pd.read_csv(reference / name / "results.csv", usecols=["method"])["method"])
        lacking = [c for c in screen.compared if c not in held]
        if lacking:
            raise ScreenError(
                f"screen: compare: the reference store has no results of {', '.join(lacking)} for {name} "
                f"(it holds {', '.join(sorted(held))}); take {lacking[0]!r} out of compare:, or choose "
                f"another reference"
            )


def check_reference_data(screen: Screen, todo: list[tuple[str, Config]], data_folder, loaded=None) -> None:
    """A :class:`ScreenError` (one line) where the reference's compared results are not what its
    stored settings make of the data read now: their content keys (members and baselines), computed
    now with the reference's settings and tcclib code, differ from its ``keys.json``. The line
    blames the data (an edited or other copy of a dataset's file) where its bytes differ from those
    the reference recorded, else the reference's ``config.json`` (edited since its run). The ranks
    would otherwise set the new method against results of other data or other settings.
    ``loaded``: ``{name: Dataset}`` already read from ``data_folder`` (the others are read here)."""
    reference = paths.resolve(screen.reference)
    own = own_code.identity_now()  # (once: every key below holds it)
    for name, _ in todo:
        stored = content_keys.load(reference / name)
        recorded = _recorded_settings(reference / name / "config.json")
        if stored is None or recorded.get(store.OWN_CODE) != own:
            continue  # (tcclib's training code edited since: the keys differ whatever the data)
        cfg = Config.from_dict({**store.settings_of(recorded), "progress": False})
        ds = (loaded or {}).get(name) or load_dataset(name, data_dir=data_folder)
        prep = prepare_config(ds, cfg)
        code = content_keys.code_identities(cfg)
        for sp in prep.splits:
            for method in (m for m in screen.compared if m in cfg.methods):
                tag = content_keys.tag(sp.seed, method)
                now = content_keys.member_key(sp, method, cfg, prep.classes, code.get(method, {}), own)
                if tag in stored.keys.members and stored.keys.members[tag] != now:
                    raise ScreenError(_not_reproduced(name, method, sp.seed, reference, recorded, data_folder))
            for baseline in (b for b in screen.compared if b in cfg.baselines and b not in code):
                tag = content_keys.tag(sp.seed, baseline)
                now = content_keys.baseline_key(sp, baseline, cfg, prep.classes, "", own)
                if tag in stored.keys.baselines and stored.keys.baselines[tag] != now:
                    raise ScreenError(_not_reproduced(name, baseline, sp.seed, reference, recorded, data_folder))


def _not_reproduced(name: str, method: str, seed: int, reference: Path, recorded: dict, data_folder) -> str:
    """The line of :func:`check_reference_data`: the data to blame where its bytes are not those
    the reference recorded (or it recorded none), else its ``config.json``."""
    where = f"({reference / name}: its keys differ, seed {seed})"
    file, reading = local_source(name, data_folder)
    then, now = recorded.get(store.DATA_FILE), store.data_record(file, reading)
    if isinstance(then, dict) and now is not None and then.get("sha256") == now["sha256"]:
        return (
            f"screen: {name}: the reference's config.json does not give the keys of its stored {method} "
            f"{where}, though the data file is the one it ran on: config.json was edited since its run; "
            "restore it (git checkout), or make the reference again"
        )
    if not isinstance(then, dict) or now is None:  # (no record of the data it ran on to tell them apart)
        return (
            f"screen: {name}: the reference's stored {method} is not what its config.json makes of the data "
            f"read now from {data_folder or 'OpenML'} {where}: the data file differs from the one it ran on, "
            "or config.json was edited since its run; restore both (git checkout), or make the reference again"
        )
    return (
        f"screen: {name}: the data read now from {data_folder or 'OpenML'} is not the data the "
        f"reference's {method} was trained on {where}; restore the dataset's file, or make the "
        "reference again on this data"
    )


def _seconds(folder: Path) -> float:
    timings = folder / "timings.json"
    return float(json.loads(timings.read_text()).get("total_s", 0.0)) if timings.is_file() else float("inf")


def param_set(screen: Screen, todo: list[tuple[str, Config]]) -> param_files.ParamSet:
    """The sweep's set of a screen: its datasets (the longest first) with their own settings, a
    unit that trains and stores each (``train_only``), no notebook; named after ``screen.out``."""
    out = paths.resolve(screen.out)
    folder = param_files.data_folder(screen.options.data_dir)[0]
    return param_files.ParamSet(
        name=out.name,
        datasets=[name for name, _ in todo],
        config=todo[0][1],
        description=f"the screen of {', '.join(screen.methods)} against {', '.join(screen.compared)}",
        data_dir=folder,
        data_folder=folder,
        per_dataset_notebooks=(),
        aggregate_notebooks=(),
        workers=screen.options.workers or threads.cores(),
        configs=dict(todo),
        train_only=True,
    )


def options(screen: Screen, reference: Path) -> sweeps.SweepOptions:
    """The sweep's options of a screen: stale datasets (an edited rule) always run again."""
    force = list(screen.options.force or ())
    return dataclasses.replace(
        screen.options,
        force=force if force == ["all"] else [sweeps.STALE, *force],
        only=None,  # (the screen's set holds only its datasets)
        aggregate=False,
        list_skipped=False,
        weights={d.name: _seconds(d) for d in reference.iterdir() if (d / "timings.json").is_file()},
        resume_hint="Run the screen again (the same command, or the cell) to resume",
    )


def run(screen: Screen, say=print) -> pd.DataFrame:
    """Train the new methods on every dataset (reusing what ``screen.out`` stores) on the sweep's
    executor; returns the combined results (new and compared, every dataset and seed).

    An interrupt ends the workers within seconds and raises
    :class:`~tcclib.running.folders.Interrupted` (its text: what was kept, how to resume)."""
    todo = plan(screen)
    out, reference = paths.resolve(screen.out), paths.resolve(screen.reference)
    ps, run_options = param_set(screen, todo), options(screen, reference)
    sweeps.cluster_options(ps, run_options)  # the options checked before any work (as the sweep does)
    sweeps.check_contracts(ps, sweeps.check_keyable(ps))  # (before its folder: the sweep's own check is then cached)
    folders.check_writable(out)  # as --check does (the sweep checks its room too; this writes first)
    check_reference_data(screen, todo, ps.data_folder)
    out.mkdir(parents=True, exist_ok=True)
    where = paths.relative_to_root(out)
    say(f"screen: {errors.counted(len(todo), 'dataset')}, {', '.join(screen.methods)}; results in {where}")
    if any(registry.METHODS[m].needs_importance for m in screen.methods) and screen.importances is not None:
        taken = sum(_seed_importances(out / name, paths.resolve(screen.importances) / name) for name, _ in todo)
        say(f"screen: importance matrices of {taken} dataset(s) taken from {screen.importances}")
    rep = sweeps.sweep(ps, out.parent, run_options, say=say)
    if rep["failed"]:
        raise _failed(rep["failed"], out)
    results = combined(screen, out, reference, ps.datasets)
    say(training_record(out, ps.datasets))
    return results


class ScreenFailed(SweepError):
    """Some of a screen's datasets failed (the others are kept): shown short, exit status 1."""


def _failed(failed: dict, out: Path) -> ScreenFailed:
    """The error of a screen some of whose datasets failed: one line naming each one's error (a
    rule's own line among them), where the tracebacks are, and how to go on; the tracebacks
    themselves are printed first when ``TCC_TRACEBACK`` (``--traceback``) asks for them."""
    if errors.full_tracebacks():
        for dataset in failed:
            record = folders.failed_record(out, dataset)
            if record.is_file():
                print(json.loads(record.read_text()).get("traceback", ""), file=sys.stderr)
    lines = "; ".join(f"{d}: {err}" for d, err in failed.items())
    records = ", ".join(paths.relative_to_root(folders.failed_record(out, d)) for d in failed)
    return ScreenFailed(
        f"screen: {errors.counted(len(failed), 'dataset')} failed: {lines[:600]}; the others are kept: fix the "
        f"cause and run the screen again (tracebacks: {records[:600]})"
    )


def training_record(out: Path, datasets: list[str]) -> str:
    """What training the stored members took (each dataset's ``timings.json``, written by the run
    that trained them): a re-run that trains nothing still says where its numbers come from."""
    timings = [
        json.loads((out / d / "timings.json").read_text()) for d in datasets if (out / d / "timings.json").is_file()
    ]
    members = sum(int(t.get("trained_members", 0)) for t in timings)
    reused = sum(int(t.get("reused_members", 0)) for t in timings)
    seconds = sum(float(t.get("total_s", 0.0)) for t in timings)
    earlier = f", and {reused} members their last run reused from an earlier one" if reused else ""
    return (
        f"training record: the stored results of {errors.counted(len(timings), 'dataset')} come from {members} "
        f"members trained in {seconds / 60:.1f} min of run_dataset time summed over the datasets{earlier} "
        f"(timings.json in each dataset's folder of {paths.relative_to_root(out)})"
    )


def _seed_importances(folder: Path, source: Path) -> bool:
    """Put the importance matrices (and correlation ranges) that ``source`` stores, with their keys,
    in the screen's ``folder`` where it has none of its own: :func:`run_dataset` then takes those
    whose key is the run's (the same split and XGBoost settings) instead of fitting them."""
    theirs, mine = content_keys.load(source), content_keys.load(folder)
    if theirs is None or not (source / content_keys.IMPORTANCE_FILE).is_file():
        return False
    have = mine.keys.importance if mine is not None else {}
    seeds = [seed for seed in theirs.keys.importance if seed not in have]
    matrices = {int(s): theirs.importance_of(int(s), theirs.keys.importance[s]) for s in seeds}
    ranges = {int(s): theirs.corr_range_of(int(s), theirs.keys.importance[s]) for s in seeds}
    kept = [s for s in seeds if matrices[int(s)] is not None and ranges[int(s)] is not None]
    if not kept:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    store.save_importances(
        folder,
        {int(s): matrices[int(s)] for s in kept},
        {int(s): ranges[int(s)] for s in kept},
        {s: theirs.keys.importance[s] for s in kept},
    )
    return True


def combined(screen: Screen, out: Path, reference: Path, datasets: list[str]) -> pd.DataFrame:
    """The new methods' stored results and the reference's compared ones, for ``datasets``."""
    parts = []
    for name in datasets:
        ours = pd.read_csv(out / name / "results.csv")
        theirs = pd.read_csv(reference / name / "results.csv")
        parts.append(ours[ours["method"].isin(screen.methods)])
        parts.append(theirs[theirs["method"].isin(screen.compared)])
    results = pd.concat(parts, ignore_index=True)
    store.write_csv(results, out / "results.csv")
    return results


def from_params(ps, options: sweeps.SweepOptions | None = None, methods=None, outputs=None) -> Screen:
    """The :class:`Screen` of a set with a ``screen:`` section, run with ``options`` (the file's
    scheduler, seeds per unit and data folder where they leave them out); the new methods:
    ``methods``, else the section's, else its plugins'; ``outputs``: the root its folder goes under."""
    section = ps.screen or {}
    modules = [plugins.load(p).module for p in ps.plugins]
    chosen = methods or section.get("methods") or new_methods(modules)
    out = Path(section.get("out", OUT / ps.name if ps.name != "screen" else OUT))
    if outputs:
        out = Path(outputs) / out.name
    options = options or sweeps.SweepOptions()
    from_file = {"scheduler": ps.scheduler, "seeds_per_unit": ps.seeds_per_unit, "data_dir": ps.data_folder}
    options = dataclasses.replace(options, **{k: v for k, v in from_file.items() if getattr(options, k) is None})
    return Screen(
        methods=tuple(chosen),
        reference=Path(section.get("reference", REFERENCE)),
        compared=tuple(section.get("compare", COMPARED)),
        datasets=tuple(options.only or ps.datasets),
        out=out,
        extra={k: getattr(ps.config, k) for k in ps.config_given},
        options=options,
    )


def check(screen: Screen, say=print) -> list[tuple[str, Config]]:
    """``--check``: the screen's plan, its options (cluster, threads), its output folders, and
    every dataset it will run loaded from the data folder it will use; a :class:`ScreenError` (or
    :class:`~tcclib.running.folders.SweepError`) in one line otherwise."""
    todo = plan(screen)
    ps = param_set(screen, todo)
    opts = options(screen, paths.resolve(screen.reference))
    stale, incomplete = sweeps.check_options(ps, opts, paths.resolve(screen.out).parent)
    for dataset, changed in stale.items():  # (a screen runs them again: its options force stale)
        say(f"screen: {sweeps.changed_line([dataset], changed)}")
    for dataset, what in incomplete.items():
        say(f"screen: {sweeps.incomplete_line(dataset, what)}")
    where = ps.data_folder or "OpenML (no data folder)"
    loaded = {}
    for name, _ in todo:
        try:
            loaded[name] = load_dataset(name, data_dir=ps.data_folder)
        except Exception as e:  # noqa: BLE001 - any reason a dataset does not load, in one line
            raise ScreenError(f"screen: dataset {name} does not load from {where}: {type(e).__name__}: {e}") from None
    check_reference_data(screen, todo, ps.data_folder, loaded)
    say(f"screen: {errors.counted(len(todo), 'dataset')} load from {where}, the data the reference was trained on")
    return todo


def render_notebook(out_dir, reference=REFERENCE) -> Path:
    """Notebook 09 executed on the screen stored in ``out_dir`` (its rule cell's plugin, its stored
    results reused), rendered as ``out_dir/09_your_rule.ipynb``: the committed reference render is
    ``render_notebook("outputs/screen")`` (``make screen-render``)."""
    out = paths.resolve(out_dir)
    target = out / "09_your_rule.ipynb"
    parameters = {"out_dir": paths.relative_to_root(out), "reference": str(reference)}
    notebooks.execute("09_your_rule", target, parameters, out)  # (into outputs/: its code may write there)
    return target
