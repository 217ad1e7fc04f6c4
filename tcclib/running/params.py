"""Parameter sets (``params/*.yaml``): loaded and fully validated before anything runs.

A set names the datasets to run, the settings (:class:`tcclib.method.config.Config` fields, checked
for name, type and range) and the notebooks.  Example::

    name: smoke
    description: three small datasets, few epochs
    datasets: [breast_cancer, 11, diabetes]     # names or OpenML ids, or "all" (the paper's 30)
    config: {seeds: [614579, 336466], epochs: 5}
    keep_embeddings: [breast_cancer]
    scheduler: local:2        # optional: run on a Dask cluster (tcclib.running.scale); local, local:N, tcp://host:port
    seeds_per_unit: 1         # optional, with a scheduler: one unit of work per group of this many seeds

A ``datasets`` entry is any of (:func:`tcclib.data.sources.source`, :func:`~tcclib.data.sources.expand`):
a name or id of the paper's 30 or ``breast_cancer``; any other OpenML id (``3``) or name
(``openml:kr-vs-kp``); an OpenML suite or study, which expands to its datasets (``suite:99``,
``suite:OpenML-CC18``, ``{suite: 99}``); a local table with its target column
(``data/my.csv:label`` or ``{path: data/my.csv, target: label}``; CSV, TSV, Parquet, ARFF; a
relative path lies under the project root), named by its file name without the extension.
Offline, OpenML metadata comes from the data folder (``data_dir``, or ``$TCC_DATA_DIR``): its
``MANIFEST.tsv`` rows and ``suites/<id or alias>.json`` listings.

Everything a run will use is checked here, up front, so that a file that passes
``python -m tcclib FILE --check`` fails later for no settings reason: unknown or duplicated
keys (YAML's own rule, the last value wins, would hide the first), each value's type (a list
where a list belongs, text where text belongs), the settings (:class:`tcclib.method.config.Config`,
including that a ``cuda`` device is visible here, unless the set runs on a remote Dask
scheduler), that ``keep_embeddings`` and an explicit
``figure_dataset`` are datasets of the set, and that each notebook list names notebooks of its
kind.  Every mistake is a :class:`ParamsError` naming the file, the key and the fix.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from tcclib.data import sources as data_sources
from tcclib.data.sources import list_datasets, resolve
from tcclib.method import plugins as plugin_loader
from tcclib.method.config import Config, ConfigError
from tcclib.util import paths

PER_DATASET_NOTEBOOKS = ("01_data_prep", "02_correlation", "03_pretraining")
AGGREGATE_NOTEBOOKS = ("04_evaluation", "05_figures")
REPORT_NOTEBOOKS = ("06_report",)
ABLATION_NOTEBOOKS = ("07_ablation",)
ALL_NOTEBOOKS = PER_DATASET_NOTEBOOKS + AGGREGATE_NOTEBOOKS + REPORT_NOTEBOOKS + ABLATION_NOTEBOOKS
KEYS = (
    "name",
    "description",
    "datasets",
    "config",
    "data_dir",
    "keep_embeddings",
    "per_dataset_notebooks",
    "aggregate_notebooks",
    "workers",
    "figure_dataset",
    "scheduler",
    "seeds_per_unit",
    "plugins",
    "screen",
)


SHARED_DATA_DIR = data_sources.SHARED_DATA_DIR
"""The parameter files' ``data_dir`` (the OpenML-CC18 copies beside the checkout): a notebook
reads its datasets there when neither its ``data_dir`` nor ``$TCC_DATA_DIR`` names a folder
(and so does :func:`tcclib.data.sources.load_dataset`)."""


class ParamsError(ConfigError):
    """A parameter file is malformed."""


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A YAML mapping names the same key twice (YAML itself would keep the last value silently)."""

    def __init__(self, key, line: int, first_line: int):
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(
            problem=f"line {line}: key {key!r} is given twice (first on line {first_line}); keep one of them"
        )

    def __str__(self) -> str:
        return self.problem


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a duplicated mapping key, with its line numbers."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *anchor" may repeat keys
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise DuplicateKeyError(key, line, seen[key])
                    seen[key] = line
                except TypeError:  # an unhashable key: SafeLoader's own error says so
                    continue
        return super().construct_mapping(node, deep)


@dataclass
class ParamSet:
    name: str
    datasets: list[str]
    config: Config
    description: str = ""
    data_dir: str | None = None
    keep_embeddings: list[str] = field(default_factory=list)
    per_dataset_notebooks: tuple[str, ...] = PER_DATASET_NOTEBOOKS
    aggregate_notebooks: tuple[str, ...] = AGGREGATE_NOTEBOOKS
    workers: int = 1
    figure_dataset: str = "breast_cancer"
    scheduler: str | None = None  # a Dask cluster to run on (tcclib.running.scale): local, local:N, tcp://host:port
    seeds_per_unit: int | None = None  # on a cluster: split each dataset into groups of this many seeds
    path: Path | None = None
    sources: dict = field(default_factory=dict)  # dataset name -> the text load_dataset reads it from
    plugins: list[str] = field(default_factory=list)  # loaded before the settings were checked
    screen: dict | None = None  # a screen (tcclib.running.screen) instead of a sweep: its options
    data_folder: str | None = None  # the data folder resolved at load (data_folder()); None: OpenML
    configs: dict = field(default_factory=dict)  # dataset -> its own Config, where it has one (a screen)
    config_given: tuple[str, ...] = ()  # the settings the file's config: names (a screen checks them)
    train_only: bool = False  # each dataset's unit trains and stores (run_dataset), rendering no notebook

    def spec(self, dataset: str) -> str:
        """What ``load_dataset`` (and a notebook's ``dataset`` parameter) reads ``dataset`` from."""
        return self.sources.get(dataset, dataset)

    def config_for(self, dataset: str) -> Config:
        """The settings of one dataset (its own where ``configs`` has them; embeddings kept only
        where asked)."""
        return self.configs.get(dataset, self.config).replace(keep_embeddings=dataset in self.keep_embeddings)


def dataset_names(items, where: str, known=None) -> list[str]:
    """Names of ``items`` (names or OpenML ids; ``known``: the set's own names, matched first,
    case-insensitively); a :class:`ParamsError` for an unknown one, a value that is not a name
    or id, or a dataset listed twice."""
    by_lower = {str(n).lower(): n for n in (known or [])}
    out = []
    for it in items:
        if isinstance(it, bool) or not isinstance(it, (str, int)):
            raise ParamsError(f"{where}: {it!r} is not a dataset name or OpenML id")
        if str(it).strip().lower() in by_lower:
            out.append(by_lower[str(it).strip().lower()])
            continue
        try:
            out.append(resolve(it)[0])
        except (ValueError, data_sources.DataUnavailableError) as e:
            raise ParamsError(f"{where}: {e}") from None
    if len(set(out)) != len(out):
        raise ParamsError(f"{where}: a dataset is listed twice")
    return out


def dataset_sources(items, where: str, data_dir=None) -> dict[str, data_sources.Source]:
    """``{name: Source}`` of a ``datasets`` list, suites expanded (see the module docstring); a
    :class:`ParamsError` naming every entry that does not resolve, and any dataset listed twice."""
    out, problems = {}, []
    for it in items:
        if isinstance(it, bool) or not isinstance(it, (str, int, dict)):
            problems.append(
                f"{it!r} is not a dataset name, OpenML id, suite, file PATH:TARGET or {{path: ..., target: ...}}"
            )
            continue
        try:
            srcs = data_sources.expand(it, data_dir)
        except (ValueError, data_sources.DataUnavailableError) as e:
            problems.append(str(e))
            continue
        for s in srcs:
            if s.name in out:
                if out[s.name] != s:
                    problems.append(
                        f"two datasets are named {s.name!r} ({out[s.name].spec} and {s.spec}); rename one file"
                    )
                else:
                    problems.append(f"{s.name} is listed twice" + (f" (also in {it})" if len(srcs) > 1 else ""))
                continue
            out[s.name] = s
    if problems:
        raise ParamsError(f"{where}: " + "; ".join(problems))
    return out


def _name_list(d: dict, key: str, where: str, example: str, default=None) -> list:
    """``d[key]`` as a list: absent gives ``default``; a single value or ``key:`` with nothing
    after it is an error naming the list form (never a string read letter by letter)."""
    if key not in d:
        return list(default or [])
    v = d[key]
    if not isinstance(v, list):
        fix = f"[{v}]" if isinstance(v, (str, int)) and not isinstance(v, bool) else example
        got = "nothing" if v is None else f"{type(v).__name__} {v!r}"
        raise ParamsError(
            f"{where}: '{key}' must be a list, got {got}; write e.g. {key}: {fix}"
            + (" ([] for none)" if v is None else "")
        )
    return v


def _notebooks(d: dict, key: str, where: str, default: tuple, allowed: tuple, kind: str) -> tuple:
    nbs = _name_list(d, key, where, f"[{', '.join(default) or allowed[0]}]", default)
    for nb in nbs:
        if not isinstance(nb, str) or nb not in allowed:
            others = [n for n in ALL_NOTEBOOKS if n not in allowed]
            other = "aggregate_notebooks" if key == "per_dataset_notebooks" else "per_dataset_notebooks"
            hint = (
                f" ({nb} belongs in {other})"
                if nb in others
                else "".join(f" (did you mean {c!r}?)" for c in difflib.get_close_matches(str(nb), allowed, n=1))
            )
            raise ParamsError(
                f"{where}: {key}: unknown notebook {nb!r}{hint}; the {kind} notebooks are {', '.join(allowed)}"
            )
    if len(set(nbs)) != len(nbs):
        raise ParamsError(f"{where}: {key}: a notebook is listed twice")
    return tuple(nbs)


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
"""The address schemes of Dask's communication layers (``distributed.comm.registry``)."""


CONNECT_TIMEOUT = 30.0
"""Seconds to reach a running scheduler: connection, Dask's handshake and its first answer."""
WORKER_WAIT = 120.0
"""Seconds to wait for a running scheduler's first worker."""


def check_scheduler(value, where: str) -> str:
    """A Dask scheduler address: ``local``, ``local:N`` (a LocalCluster of N worker processes) or
    ``<scheme>://host:port`` (a running scheduler; the scheme one of :data:`SCHEMES`); a
    :class:`ParamsError` naming the mistake otherwise (an empty text, e.g. an unset shell
    variable, is one: it never means "run here")."""
    usage = (
        "scheduler must be local, local:N (N worker processes, N >= 1) or the address of a "
        "running Dask scheduler such as tcp://host:8786"
    )
    if not isinstance(value, str) or not value.strip():
        got = "an empty text (an unset shell variable?)" if isinstance(value, str) else repr(value)
        raise ParamsError(f"{where}: {usage}, got {got}; leave the option out to run here")
    if value == "local" or value.startswith("local:"):
        if value == "local" or (value[6:].isdigit() and int(value[6:]) >= 1):
            return value
        raise ParamsError(f"{where}: {usage}, got {value!r}")
    scheme, sep, rest = value.partition("://")
    if not sep:
        raise ParamsError(f"{where}: {usage}, got {value!r} (no scheme: tcp://{value}?)")
    if scheme not in SCHEMES:
        raise ParamsError(
            f"{where}: unknown address scheme {scheme!r} in {value!r}; Dask's are {', '.join(SCHEMES)} "
            f"(tcp://host:8786 for a scheduler started with `dask scheduler`)"
        )
    if scheme != "inproc":
        host, colon, port = rest.rstrip("/").rpartition(":")
        if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ParamsError(
                f"{where}: {value!r} needs a host and a port number (1-65535), e.g. {scheme}://host:8786 "
                f"(8786 is the scheduler's default port; 8787 is its dashboard, not the scheduler)"
            )
    return value


def parse(d: dict[str, Any], path: Path | None = None, data_dir=None, extra_plugins=()) -> ParamSet:
    """Validate a parameter set read from YAML (see the module docstring for what is checked).

    ``data_dir`` (else ``$TCC_DATA_DIR``, else the file's ``data_dir``): where OpenML datasets
    and suites outside the paper's 30 are looked up offline.  The file's ``plugins`` and
    ``extra_plugins`` (the command line's ``--plugin``) are loaded first, so that the settings
    may name their methods and baselines."""
    bundled = path is not None and paths.is_bundled(path)
    where = (f"params/{path.name} (built in)" if bundled else str(path)) if path else "params"
    _check_top_level(d, where)
    loaded = _plugins(d, where, path, extra_plugins)
    if bundled and d.get("data_dir") == SHARED_DATA_DIR:  # the folder beside a checkout: none here
        d = {k: v for k, v in d.items() if k != "data_dir"}
    file_data_dir, folder, sources = _datasets(d, where, data_dir)
    datasets = list(sources)
    cfg = _config(d, where)
    keep = _keep_embeddings(d, where, datasets)
    description, workers, scheduler, spu = _run_settings(d, where)
    per = _notebooks(
        d,
        "per_dataset_notebooks",
        where,
        PER_DATASET_NOTEBOOKS,
        PER_DATASET_NOTEBOOKS + ABLATION_NOTEBOOKS,
        "per-dataset",
    )
    agg = _notebooks(
        d, "aggregate_notebooks", where, AGGREGATE_NOTEBOOKS, AGGREGATE_NOTEBOOKS + REPORT_NOTEBOOKS, "aggregate"
    )
    fig = dataset_names([d.get("figure_dataset", "breast_cancer")], f"{where}: figure_dataset", datasets)[0]
    if "figure_dataset" in d and fig not in datasets:
        raise ParamsError(
            f"{where}: figure_dataset: {fig} is not in 'datasets' (its figures would be "
            f"missing); choose one of {', '.join(datasets)}"
        )
    return ParamSet(
        name=d["name"],
        datasets=datasets,
        config=cfg,
        description=description,
        data_dir=file_data_dir,
        data_folder=folder,
        keep_embeddings=keep,
        per_dataset_notebooks=per,
        aggregate_notebooks=agg,
        workers=workers,
        figure_dataset=fig,
        scheduler=scheduler,
        seeds_per_unit=spu,
        path=path,
        sources={n: s.spec for n, s in sources.items()},
        plugins=loaded,
        screen=_screen(d, where),
        config_given=tuple(d.get("config") or {}),
    )


def _plugins(d: dict, where: str, path: Path | None, extra) -> list[str]:
    """Load the file's ``plugins`` (paths of .py files, beside the file or under the repository
    root, or module names) and then ``extra`` (relative to the working directory); returns what
    each resolved to (a file's absolute path, a module's name)."""
    specs = _name_list(d, "plugins", where, "[path/to/rule.py]")
    out = []
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise ParamsError(f"{where}: plugins: {spec!r} is not a path to a .py file or a module name")
        base = None
        if plugin_loader.is_file_spec(spec) and not Path(spec).expanduser().is_absolute():
            places = list(dict.fromkeys([*([path.parent] if path is not None else []), paths.project_root()]))
            base = next((p for p in places if (p / spec).exists()), None)
            if base is None:
                raise ParamsError(f"{where}: plugins: {_missing_plugin(spec, places)}")
        out.append(_load_plugin(spec, where, base))
    for spec in extra:
        out.append(_load_plugin(spec, "--plugin", None))
    return list(dict.fromkeys(out))


def _missing_plugin(spec: str, places: list[Path]) -> str:
    """``rule.py: no such file, looked at A or B`` (beside the file, the repository root), with the closest name."""
    looked = " or ".join(str(p / spec) for p in places)
    names = sorted({f.name for p in places if (p / spec).parent.is_dir() for f in (p / spec).parent.glob("*.py")})
    close = difflib.get_close_matches(Path(spec).name, names, n=1)
    hint = f" (did you mean {str(Path(spec).with_name(close[0]))!r}?)" if close else ""
    return (
        f"{spec}: no such file, looked at {looked}{hint}; give the path of a .py file (beside this file, or from "
        f"the repository root) or a module name"
    )


def _load_plugin(spec: str, where: str, base) -> str:
    try:
        plugin = plugin_loader.load(spec, where, base)
    except plugin_loader.PluginError as e:
        raise ParamsError(f"{where}: {e}") from None
    return plugin.path if plugin_loader.is_file_spec(spec) else plugin.module


SCREEN_KEYS = ("reference", "compare", "methods", "out")
"""A ``screen:`` section's keys (:mod:`tcclib.running.screen`)."""


def _screen(d: dict, where: str) -> dict | None:
    """The ``screen:`` section: the set is a screen of new methods against stored results."""
    if "screen" not in d:
        return None
    section = d["screen"] or {}
    if not isinstance(section, dict):
        raise ParamsError(
            f"{where}: 'screen' must be a mapping, e.g. screen: {{reference: outputs/head_variants/100ep/frozen}}"
        )
    for k in section:
        if k not in SCREEN_KEYS:
            close = difflib.get_close_matches(str(k), SCREEN_KEYS, n=1)
            raise ParamsError(
                f"{where}: screen: unknown key {k!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
            )
    for k in ("compare", "methods"):
        if k in section:
            _name_list(section, k, f"{where}: screen", "[class, random]")
    return dict(section)


_SETTING_NAMES = frozenset(f.name for f in fields(Config))
"""The settings (:class:`~tcclib.method.config.Config`'s fields), which a parameter file gives under ``config:``."""


def _check_top_level(d, where: str) -> None:
    if not isinstance(d, dict):
        raise ParamsError(f"{where}: expected a mapping at the top level")
    for k in d:
        if k not in KEYS:
            if k in _SETTING_NAMES:  # (a setting written at the top level)
                raise ParamsError(
                    f"{where}: unknown key {k!r}: it is a setting, given under 'config:' ('config: {{{k}: {d[k]!r}}}')"
                )
            close = difflib.get_close_matches(str(k), KEYS, n=1)
            raise ParamsError(f"{where}: unknown key {k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if not isinstance(d.get("name"), str) or not d["name"].isidentifier():
        raise ParamsError(f"{where}: 'name' must be a simple identifier (letters, digits, _)")


def data_folder(explicit=None, file_value=None, where: str = "params") -> tuple[str | None, str]:
    """The data folder of a run and where it came from, resolved one way everywhere (the sweep,
    the screen, notebook 09): ``explicit`` (``--data-dir``, a notebook's ``data_dir``), else
    ``$TCC_DATA_DIR``, else the parameter file's ``data_dir`` (``file_value``), else
    :data:`SHARED_DATA_DIR` where that folder exists, else None (OpenML online).  A folder that is
    named but does not exist is a :class:`ParamsError` naming who named it and the fix."""
    env = os.environ.get(data_sources.DATA_DIR_ENV)
    for value, origin in (
        (explicit, "--data-dir"),
        (env, f"${data_sources.DATA_DIR_ENV}"),
        (file_value, f"{where}: data_dir"),
    ):
        if value:
            folder = paths.resolve(value)
            if not folder.is_dir():
                raise ParamsError(
                    f"{origin}: the folder {folder} does not exist (or is not a folder); point it at "
                    f"the folder holding the <did>.arff copies, or leave it out to download from OpenML"
                )
            return str(folder.resolve()), origin
    beside = paths.resolve(SHARED_DATA_DIR)
    if beside.is_dir():
        return str(beside.resolve()), f"{SHARED_DATA_DIR} (beside the checkout)"
    return None, "none: OpenML online"


def _datasets(d: dict, where: str, explicit_data_dir) -> tuple[str | None, str | None, dict]:
    """The file's ``data_dir``, the data folder (:func:`data_folder`) and the set's
    ``{name: Source}``.  A ``data_dir`` of the file that
    does not exist (when neither ``explicit_data_dir`` nor ``$TCC_DATA_DIR`` overrides it) is an
    error here, not a note followed by a failure in the middle of the run."""
    ds = d.get("datasets")
    if ds == "all":
        ds = [n for n in list_datasets().name if n != "breast_cancer"]
    if not isinstance(ds, list) or not ds:
        fix = f"; write it as a list, e.g. datasets: [{ds}]" if isinstance(ds, (str, int)) and ds != "" else ""
        raise ParamsError(f"{where}: 'datasets' must be a non-empty list or 'all'{fix}")
    data_dir = d.get("data_dir")
    if data_dir is not None and (not isinstance(data_dir, str) or not data_dir.strip()):
        raise ParamsError(
            f"{where}: 'data_dir' must be a folder path (relative to the repository root), "
            f"got {type(data_dir).__name__} {data_dir!r}; leave the key out for none"
        )
    folder = data_folder(explicit_data_dir, data_dir, where)[0]
    return data_dir, folder, dataset_sources(ds, f"{where}: datasets", folder)


def _config(d: dict, where: str) -> Config:
    if d.get("config") is not None and not isinstance(d["config"], dict):
        raise ParamsError(
            f"{where}: 'config' must be a mapping of settings, e.g. "
            f"config: {{epochs: 5, seeds: [1, 2]}}, got {type(d['config']).__name__} {d['config']!r}"
        )
    remote = isinstance(d.get("scheduler"), str) and "://" in d["scheduler"]
    try:
        cfg = Config.from_dict(d.get("config") or {})
        if not remote:  # on a running cluster's workers the device is theirs, not this machine's
            cfg.check_device()
    except (ConfigError, TypeError) as e:
        raise ParamsError(f"{where}: config: {e}") from None
    return cfg


def _keep_embeddings(d: dict, where: str, datasets: list[str]) -> list[str]:
    if d.get("keep_embeddings", []) is None:  # "keep_embeddings:" with nothing: none, as the default
        d = {**d, "keep_embeddings": []}
    keep = dataset_names(
        _name_list(d, "keep_embeddings", where, "[breast_cancer]"), f"{where}: keep_embeddings", datasets
    )
    stray = [n for n in keep if n not in datasets]
    if stray:
        raise ParamsError(
            f"{where}: keep_embeddings: {', '.join(stray)} not in 'datasets' (no embeddings "
            f"would be kept for it); add it to 'datasets' or remove it here"
        )
    return keep


def _run_settings(d: dict, where: str) -> tuple:
    """``(description, workers, scheduler, seeds_per_unit)``, each checked."""
    description = d.get("description", "")
    if not isinstance(description, str):
        got = "nothing" if description is None else f"{type(description).__name__} {description!r}"
        raise ParamsError(
            f"{where}: 'description' must be text, got {got}; write a sentence (quote it if "
            f"it looks like a number) or leave the key out"
        )
    workers = d.get("workers", 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ParamsError(
            f"{where}: 'workers' must be a positive integer (datasets run at once), "
            f"got {type(workers).__name__} {workers!r}"
        )
    scheduler = d.get("scheduler")
    if scheduler is not None:
        check_scheduler(scheduler, where)
    spu = d.get("seeds_per_unit")
    if spu is not None and (isinstance(spu, bool) or not isinstance(spu, int) or spu < 1):
        raise ParamsError(
            f"{where}: 'seeds_per_unit' must be a positive integer (seeds per unit of work on "
            f"a cluster), got {type(spu).__name__} {spu!r}; leave it out to run each dataset whole"
        )
    return description, workers, scheduler, spu


def builtin_sets() -> list[str]:
    """The names of the built-in parameter sets: ``params/*.yaml`` of the checkout, or the copies an
    installed package carries (:func:`tcclib.util.paths.source_root`)."""
    return sorted(p.stem for p in (paths.source_root() / "params").glob("*.yaml"))


def find(spec) -> Path:
    """The parameter file ``spec`` names: that file where it exists, else the built-in set of that
    name (``demo``: ``params/demo.yaml`` of the checkout or of the installed package); a missing
    file is left to :func:`load` to refuse."""
    path = Path(spec)
    if not path.exists() and str(spec) in builtin_sets():
        return paths.source_root() / "params" / f"{spec}.yaml"
    return path


_NOT_TEXT = "not a parameter file: a binary file, where a YAML text file belongs"
_NEEDS = "a parameter file needs at least `datasets: [NAME, ...]`; params/demo.yaml is an example"


def load(path: str | Path, data_dir=None, plugins=()) -> ParamSet:
    """Read and validate a parameter file; a clear :class:`ParamsError` on any mistake.

    The YAML is read with a loader that refuses a key given twice in one mapping."""
    path = Path(path)
    if not path.exists():
        sets = builtin_sets()
        hint = f"; the built-in sets run by name: {', '.join(sets)} (python -m tcclib {sets[0]})" if sets else ""
        raise ParamsError(f"no parameter file {path}{hint}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ParamsError(f"{path}: {_NOT_TEXT} (byte {e.start} is not UTF-8)") from None
    except OSError as e:
        raise ParamsError(f"{path}: cannot be read ({type(e).__name__}: {e})") from None
    if "\x00" in text:
        raise ParamsError(f"{path}: {_NOT_TEXT} (it holds NUL bytes)")
    if not text.strip() or all(line.lstrip().startswith("#") for line in text.splitlines() if line.strip()):
        raise ParamsError(f"{path}: holds no settings (empty, or only comments); {_NEEDS}")
    try:
        d = yaml.load(text, Loader=_StrictLoader)
    except DuplicateKeyError as e:
        raise ParamsError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise ParamsError(f"{path}: not valid YAML: {e}") from None
    return parse(d, path, data_dir, plugins)
