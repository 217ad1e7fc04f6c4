"""The notebooks' parameters: flat, papermill-native, checked in the notebook's first cell.

Every per-dataset notebook has a ``parameters`` cell with one line per setting, e.g.
``epochs: int = 100  # contrastive epochs (paper: 500)``, so ``papermill --help-notebook``
lists them and ``papermill ... -p epochs 5`` works.  papermill only *warns* about a name the
notebook does not have; :func:`per_dataset` and :func:`aggregate` (called in the cell right
after the parameters) read what papermill injected and stop with an error naming the closest
valid parameter.  Relative paths resolve against the project root (:mod:`tcclib.util.paths`).

The defaults are the published settings except ``epochs`` (100 instead of 500, see
:data:`NOTEBOOK_DEFAULTS`): a notebook opened in JupyterLab and run as it is takes minutes.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcclib.artifacts import store
from tcclib.data.sources import DATA_DIR_ENV, load_dataset, source, spec_folder
from tcclib.method.config import Config, ConfigError, notebook_defaults
from tcclib.running.params import SHARED_DATA_DIR
from tcclib.util import paths

REUSE_ENV = "TCC_REUSE"
RENDER_ENV = "TCC_RENDER"  # set while the committed renders are rendered: the one writer of outputs/
PER_DATASET_PATHS = ("dataset", "set_name", "output_dir", "data_dir", "cache_dir", "reuse")
SWEEP_PARAMS = ("write_marker",)
"""Parameters the sweep passes to a notebook that declares them: ``write_marker`` False, for the
sweep writes ``_DONE.json`` itself, after all of a dataset's notebooks (notebook 03 hands it to
:func:`tcclib.artifacts.store.save_run`)."""
AGGREGATE_PARAMS = ("set_name", "set_dir", "figure_dataset")
ABLATION_PARAMS = ("labeled_fractions", "corruption_rates", "ablation_methods")
NOTEBOOK_DEFAULTS = notebook_defaults()
"""Where a notebook's default differs from :class:`Config`'s published one (interactive runs;
declared on the setting's field, ``notebook=``)."""


class ParameterError(ConfigError):
    """A notebook parameter is unknown or has a wrong value."""


def config_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Config) if f.name != "extra"]


def per_dataset_names(ablation: bool = False) -> list[str]:
    return [*PER_DATASET_PATHS, *SWEEP_PARAMS, *config_names(), *(ABLATION_PARAMS if ablation else ())]


def injected_names(namespace: dict) -> list[str]:
    """Names papermill assigned in its injected ``# Parameters`` cell (the latest one), from the
    kernel's input history; empty when the notebook was not run by papermill."""
    for src in reversed(list(namespace.get("In", []) or [])):
        if src.startswith("# Parameters\n") or src == "# Parameters":
            try:
                tree = ast.parse(src)
            except SyntaxError:
                return []
            return [
                t.id
                for node in tree.body
                if isinstance(node, ast.Assign)
                for t in node.targets
                if isinstance(t, ast.Name)
            ]
    return []


def check_injected(namespace: dict, allowed) -> None:
    """Raise :class:`ParameterError` for an injected name that is not a parameter."""
    allowed = list(allowed)
    bad = [n for n in injected_names(namespace) if n not in allowed]
    if bad:
        msgs = []
        for n in bad:
            close = difflib.get_close_matches(n, allowed, n=1, cutoff=0.6)
            msgs.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ParameterError(
            f"unknown notebook parameter(s): {', '.join(msgs)}. Valid parameters: "
            f"{', '.join(allowed)} (`papermill --help-notebook NOTEBOOK` lists them)"
        )


def _coerce(name: str, value):
    """papermill's ``-p`` passes a list as its text: read it as YAML."""
    listed = name in ("seeds", "methods", "baselines", *ABLATION_PARAMS) and isinstance(value, str)
    return as_list(value) if listed else value  # (anything else: Config names what it expects)


def as_list(value) -> list:
    """A list parameter as papermill's ``-p NAME VALUE`` may pass it: text read as YAML
    (``-p methods "[random, class]"``, or one name)."""
    if isinstance(value, str):
        import yaml  # deferred: PyYAML loads only when a YAML text is read

        v = yaml.safe_load(value)
        return v if isinstance(v, list) else [v]
    return list(value)


def run_folder(value, name: str) -> Path:
    """The folder parameter ``name`` resolved, for a run to write in.  Under ``outputs/`` (the
    committed renders: a render's injected parameters name its own folder) it is the same place
    under ``runs/`` instead, said in one line, unless their renderer runs the notebook
    (:data:`RENDER_ENV`): Run All on a committed render leaves ``outputs/`` as committed."""
    folder = paths.resolve(value)
    if os.environ.get(RENDER_ENV) or not _under_renders(folder):
        return folder
    instead = paths.runs_root() / folder.resolve().relative_to(paths.reference_root().resolve())
    given, shown = _as_given(value), _as_given(instead)
    if _under_renders(instead):
        raise ParameterError(
            f'{name} = "{given}" leads into outputs/, the committed renders (read-only), and so does {shown}, '
            "where this run would write instead: a symbolic link on the way leads there; remove it"
        )
    print(
        f'{name} = "{given}" is under outputs/, the committed renders (a re-render alone writes there): this run '
        f"writes to {shown} instead"
    )
    return instead


def _as_given(path) -> str:
    """``path`` relative to the project root where it is under it (links not followed), else as it is."""
    p = Path(path)
    return (
        str(p.relative_to(paths.project_root()))
        if p.is_absolute() and p.is_relative_to(paths.project_root())
        else str(p)
    )


def _under_renders(folder: Path) -> bool:
    return folder.resolve().is_relative_to(paths.reference_root().resolve())


def config_from(namespace: dict) -> Config:
    d = {n: _coerce(n, namespace[n]) for n in config_names() if n in namespace}
    try:
        return Config.from_dict(d)
    except (ConfigError, TypeError) as e:
        raise ParameterError(f"notebook parameters: {e}") from None


def reuse_enabled(value: bool) -> bool:
    """The ``reuse`` parameter, unless ``$TCC_REUSE=0`` turns reuse off (the tests' drift check)."""
    env = os.environ.get(REUSE_ENV)
    if env is not None and env.strip().lower() in ("0", "false", "no", "off"):
        return False
    return bool(value)


@dataclass
class DatasetRun:
    """What a per-dataset notebook works with, resolved from its parameters."""

    cfg: Config
    ds: Any  # tcclib.data.sources.Dataset
    out: Path
    cache_dir: Path
    data_dir: str | None
    reuse: bool
    grid: dict | None = None  # 07_ablation's grid parameters
    write_marker: bool = True  # save_run marks the dataset finished (the sweep passes False)


def folder_name(dataset) -> str:
    """The folder a dataset's results go to: breast_cancer's and the paper's 30's own name however
    they are given (``11``, ``Balance-Scale``: one folder, whose stored results the next run
    reuses, and one row per seed and method in the aggregate), else a file's name without its
    extension (``PATH:TARGET`` or its mapping) or the text given (:func:`spec_folder`)."""
    try:
        found = source(dataset, download=False)
    except (ValueError, OSError):
        return spec_folder(dataset)
    return found.name if found.kind in ("paper", "sklearn") else spec_folder(dataset)


def per_dataset(namespace: dict, ablation: bool = False, load: bool = True) -> DatasetRun:
    """Check the parameters of a per-dataset notebook, resolve its paths, load the dataset."""
    check_injected(namespace, per_dataset_names(ablation))
    cfg = config_from(namespace)
    dataset, set_name = namespace.get("dataset", "breast_cancer"), namespace.get("set_name", "lab")
    folder = folder_name(dataset)
    out = run_folder(namespace.get("output_dir") or paths.runs_root() / str(set_name) / folder, "output_dir")
    cache = run_folder(namespace.get("cache_dir") or out.parent.parent / ".cache", "cache_dir")
    data_dir = notebook_data_dir(namespace.get("data_dir"))
    out.mkdir(parents=True, exist_ok=True)
    grid = None
    if ablation:
        grid = {n: _coerce(n, namespace[n]) for n in ABLATION_PARAMS if n in namespace}
    ds = None
    if load:
        ds = load_dataset(dataset, data_dir=data_dir)
    reuse = reuse_enabled(namespace.get("reuse", True))
    return DatasetRun(cfg, ds, out, cache, data_dir, reuse, grid, bool(namespace.get("write_marker", True)))


def notebook_data_dir(explicit) -> str | None:
    """A notebook's data folder: its ``data_dir`` parameter, else ``$TCC_DATA_DIR`` (None here:
    the loader reads it), else :data:`SHARED_DATA_DIR` where that folder exists (as the sweep's
    parameter files say), else None (OpenML online)."""
    if explicit:
        return str(paths.resolve(explicit))
    if os.environ.get(DATA_DIR_ENV):
        return None
    beside = paths.resolve(SHARED_DATA_DIR)
    return str(beside) if beside.is_dir() else None


def aggregate(namespace: dict, need_results: bool = True):
    """Check an aggregate notebook's parameters; ``(set_dir, results)``.

    ``set_dir`` "" means ``runs/<set_name>``.  With no finished dataset there, a clear error says
    what to run first (rather than an empty table failing later)."""
    check_injected(namespace, AGGREGATE_PARAMS)
    set_name = str(namespace.get("set_name", "demo"))
    set_dir = run_folder(namespace.get("set_dir") or paths.runs_root() / set_name, "set_dir")
    results = store.gather(set_dir, "results")
    if need_results and not len(results):
        ref = paths.reference_root() / set_name
        hint = (
            f" The committed reference's tables and figures are in {paths.relative_to_root(ref)} (its rendered "
            "notebooks show them)."
            if (ref / "index.md").exists()
            else ""
        )
        built_in = (paths.source_root() / "params" / f"{set_name}.yaml").is_file()  # (by name: also outside a checkout)
        command = f"python -m tcclib {set_name}" if built_in else f"python -m tcclib params/{set_name}.yaml"
        raise ParameterError(
            f"no finished dataset in {set_dir}: run the per-dataset notebooks first "
            f"(`{command}`, or notebooks 01-03 with "
            f'set_name = "{set_name}").{hint}'
        )
    return set_dir, results
