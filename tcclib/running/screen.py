"""The screen: from a new rule to a verdict over the paper's 30 datasets, training only the new rule.

    python -m tcclib params/screen.yaml --plugin examples/nearby_rule.py     # or: make screen PLUGIN=...

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

Datasets run smallest first (by the reference's recorded time), each saved as soon as it is done:
an interrupted screen resumes where it stopped.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import store
from tcclib.method import plugins, registry
from tcclib.method.config import Config
from tcclib.running import notebooks
from tcclib.running.train import run_dataset
from tcclib.util import paths, threads
from tcclib.util.errors import ConfigError

REFERENCE = Path("outputs") / "head_variants" / "100ep" / "frozen"
"""The stored built-ins the screen compares with (under the project root)."""
IMPORTANCES = Path("outputs") / "paper"
"""A committed store of the same datasets, splits and XGBoost settings whose importance matrices a
correlation rule's screen takes (reused only where an importance key matches; the rest computed)."""
COMPARED = ("class", "random", "no_pretrain", "logreg", "self_training", "xgboost")
"""What the new method is ranked among (those the reference store holds)."""
OUT = Path("runs") / "screen"


class ScreenError(ConfigError):
    """A screen that cannot start: no new method, an unknown one, no reference store."""


@dataclass(frozen=True)
class Screen:
    """What a screen runs: the new ``methods``, the ``reference`` store, what they are ``compared``
    with, the ``datasets`` (default: every finished one of the reference, smallest first) and
    where it writes (``out``)."""

    methods: tuple[str, ...]
    reference: Path = REFERENCE
    compared: tuple[str, ...] = COMPARED
    datasets: tuple[str, ...] | None = None
    out: Path = OUT
    progress: bool = True
    data_dir: str | None = None
    extra: dict = field(default_factory=dict)  # Config fields set for the new methods (e.g. device)
    workers: int | None = None  # datasets trained at once (default: one per core, each on one thread)
    importances: Path | None = IMPORTANCES  # where a correlation rule's importance matrices may come from


def new_methods(loaded) -> list[str]:
    """The methods the plugins ``loaded`` (their module names) registered, in order."""
    modules = set(loaded)
    return [e.name for e in registry.entries() if not e.is_baseline and e.origin in modules]


def plan(screen: Screen) -> list[tuple[str, Config]]:
    """``(dataset, settings)`` for every dataset the screen trains, before any work: each
    dataset's settings are its stored run's, with the new methods and no baselines."""
    reference = paths.resolve(screen.reference)
    if not reference.is_dir():
        raise ScreenError(
            f"screen: no reference store at {reference}; it holds the built-ins' stored results "
            f"(tools/head_variants.py --datasets all --epochs 100 --out outputs/head_variants makes it)"
        )
    if not screen.methods:
        raise ScreenError(
            "screen: no new method to train; load a plugin that registers one (--plugin path/to/rule.py) "
            "or name methods with --methods"
        )
    for m in screen.methods:
        registry.get(m)  # an unknown name: the registry's message, with where it looked
        if registry.get(m).is_baseline:
            raise ScreenError(f"screen: {m!r} is a baseline, not a pretraining method; the screen trains methods")
    finished = {
        d.name: d for d in reference.iterdir() if (d / "_DONE.json").is_file() and (d / "config.json").is_file()
    }
    names = list(screen.datasets) if screen.datasets else list(finished)
    missing = [n for n in names if n not in finished]
    if missing:
        raise ScreenError(
            f"screen: {', '.join(missing)} not finished in {reference}; it has {', '.join(sorted(finished))}"
        )
    out = []
    for name in sorted(names, key=lambda n: -_seconds(finished[n])):  # the longest first: workers end together
        recorded = json.loads((finished[name] / "config.json").read_text())
        recorded.pop(store.PLUGIN_CODE, None)
        cfg = Config.from_dict(
            {
                **recorded,
                **screen.extra,
                "methods": list(screen.methods),
                "baselines": [],
                "keep_embeddings": False,
                "progress": screen.progress,
            }
        )
        out.append((name, cfg))
    return out


def _seconds(folder: Path) -> float:
    timings = folder / "timings.json"
    return float(json.loads(timings.read_text()).get("total_s", 0.0)) if timings.is_file() else float("inf")


def run(screen: Screen, say=print) -> pd.DataFrame:
    """Train the new methods on every dataset (reusing what ``screen.out`` stores); returns the
    combined results (new and compared, every dataset and seed).

    The datasets train ``screen.workers`` at a time in worker processes (default: one per core,
    each on its share of the cores), the longest first; with one worker they train here, in turn."""
    todo = plan(screen)
    out = paths.resolve(screen.out)
    out.mkdir(parents=True, exist_ok=True)
    reference = paths.resolve(screen.reference)
    workers = max(1, min(screen.workers or threads.cores(), len(todo)))
    budget = threads.budget(workers)
    say(f"screen: {len(todo)} datasets, {', '.join(screen.methods)}; {budget.line()}")
    t0 = time.perf_counter()
    trained = 0
    if any(registry.METHODS[m].needs_importance for m in screen.methods) and screen.importances is not None:
        taken = sum(_seed_importances(out / name, paths.resolve(screen.importances) / name) for name, _ in todo)
        say(f"screen: importance matrices of {taken} dataset(s) taken from {screen.importances}")
    jobs = [
        (name, cfg.replace(progress=cfg.progress and workers == 1), screen.data_dir, str(out)) for name, cfg in todo
    ]
    for i, (name, timings, seconds) in enumerate(_train_all(jobs, workers, budget.threads), 1):
        trained += int(timings.get("trained_members", 0))
        say(
            f"[{i}/{len(todo)}] {name}: trained {int(timings.get('trained_members', 0))}, reused "
            f"{int(timings.get('reused_members', 0))} members in {seconds:.0f} s"
        )
    results = combined(screen, out, reference, [name for name, _ in todo])
    say(f"screen: {len(todo)} datasets, {trained} members trained now, in {time.perf_counter() - t0:.0f} s")
    say(training_record(out, [name for name, _ in todo]))
    return results


def training_record(out: Path, datasets: list[str]) -> str:
    """What training the stored members took (each dataset's ``timings.json``, written by the run
    that trained them): a re-run that trains nothing still says where its numbers come from."""
    timings = [
        json.loads((out / d / "timings.json").read_text()) for d in datasets if (out / d / "timings.json").is_file()
    ]
    members = sum(int(t.get("trained_members", 0)) for t in timings)
    seconds = sum(float(t.get("total_s", 0.0)) for t in timings)
    return (
        f"training record: the stored results of {len(timings)} datasets come from {members} members trained in "
        f"{seconds / 60:.1f} min of run_dataset time summed over the datasets (timings.json in each dataset's "
        f"folder of {paths.relative_to_root(out)})"
    )


def _train_all(jobs: list, workers: int, n_threads: int):
    """``(dataset, timings, seconds)`` of each job as it finishes: here in turn (one worker), or in
    ``workers`` processes of ``n_threads`` threads each, which load this process's plugins."""
    if workers == 1:
        for job in jobs:
            yield train_one(*job)
        return
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch state forked
    specs = plugins.user_specs()
    with ProcessPoolExecutor(workers, context, initializer=_start_worker, initargs=(n_threads, specs)) as pool:
        futures = [pool.submit(train_one, *job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


def _start_worker(n_threads: int, specs: list[str]) -> None:
    threads.apply(n_threads)
    plugins.load_many(specs, "screen worker")


def train_one(name: str, cfg: Config, data_dir, out: str) -> tuple[str, dict, float]:
    """Train (or reuse) the new methods of one dataset and store them in ``out/<name>``."""
    t = time.perf_counter()
    folder = Path(out) / name
    result = run_dataset(name, cfg, data_dir=data_dir, cache_dir=Path(out) / ".cache", store_dir=folder, reuse=True)
    store.save_run(result, folder)  # saved at once: an interrupted screen resumes here
    return name, dict(result.timings), time.perf_counter() - t


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


def from_params(ps, methods=None, progress: bool = True) -> Screen:
    """The :class:`Screen` of a parameter set with a ``screen:`` section (``params/screen.yaml``);
    the new methods: ``methods``, else the section's, else those its plugins registered."""
    section = ps.screen or {}
    modules = [plugins.load(p).module for p in ps.plugins]
    chosen = methods or section.get("methods") or new_methods(modules)
    return Screen(
        methods=tuple(chosen),
        reference=Path(section.get("reference", REFERENCE)),
        compared=tuple(section.get("compare", COMPARED)),
        datasets=tuple(ps.datasets),
        out=Path(section.get("out", OUT / ps.name if ps.name != "screen" else OUT)),
        progress=progress,
        data_dir=ps.data_dir,
    )


def render_notebook(out_dir, reference=REFERENCE) -> Path:
    """Notebook 09 executed on the screen stored in ``out_dir`` (its rule cell's plugin, its stored
    results reused), rendered as ``out_dir/09_your_rule.ipynb``: the committed reference render is
    ``render_notebook("outputs/screen")`` (``make screen-render``)."""
    out = paths.resolve(out_dir)
    target = out / "09_your_rule.ipynb"
    parameters = {"out_dir": paths.relative_to_root(out), "reference": str(reference)}
    notebooks.execute("09_your_rule", target, parameters, out)
    return target
