"""The one registry of methods and baselines: each is declared once, here.

A **method** is a pretraining recipe, a :class:`MethodSpec`: a *how* rule (which row gives each
replaced value) and a *where* rule (which features are replaced), both rule objects of
:mod:`tcclib.method.rules` registered here by name (:func:`register_rule`); a **baseline** is a
scikit-learn-style classifier trained on the same labeled rows and test split
(:mod:`tcclib.method.baselines`).  Each entry answers every question a consumer asks:

* ``label``: the name in figure legends and panel titles (:mod:`tcclib.paper.plots`);
* ``group``: ``"how"`` (how to corrupt: the paper's Tables 2-3), ``"where"`` (where to
  corrupt: Tables 4-5), ``"published"`` (the authors' flipped runs) or ``"baseline"``;
* ``tables``: the set tables it appears in (``"how"``, ``"where"``; :func:`table_methods`);
  by default the how-table for ``how`` and ``baseline`` entries, the where-table otherwise
  (``class``, the where-table's uniform-choice column, is in both);
* ``order``: its place in figures and tables; ``color``: its colour in figures;
* ``paper_columns``: the paper's column it is compared with per table kind
  (:func:`compared_columns`, :func:`column_owners`, :func:`paper_table_methods`); ``separate``:
  scored against a column another method owns (:func:`separate_methods`); ``repeats``: a
  fidelity re-run of another method, left out of rank tests (:func:`rank_repeats`);
* through its spec's rules: whether it pretrains, is pseudo-labelled, needs every row's true
  label or the importance matrices, and what enters its content key (:meth:`MethodSpec.key_parts`);
* for a baseline, ``factory(seed, cfg)`` returning an unfitted classifier, ``semi_supervised``
  (fit on every training row, unlabeled ones marked -1) and ``settings`` (the
  :class:`~tcclib.method.config.Config` fields the factory reads: part of the stored-result key).

``config.METHODS``, ``config.PAPER_METHODS``, ``config.BASELINES``, ``plots.METHOD_ORDER``,
``plots.LABELS``, ``cell_tests.SEPARATE``/``PAPER_COLUMNS``, ``stats.RANK_REPEATS`` and
``tables.HOW_METHODS``/``WHERE_METHODS``/``PAPER_NAMES`` are live views of this registry, kept
for older callers.  Adding a recombination of existing rules or a new classifier is one call::

    from tcclib.method.registry import register_method, register_baseline
    register_method("column_least", how="column", where="least", label="random + least-correlated")
    register_baseline("forest", lambda seed, cfg: RandomForestClassifier(random_state=seed))

A genuinely new corruption rule is a :class:`~tcclib.method.rules.HowRule` or
:class:`~tcclib.method.rules.WhereRule` subclass passed to :func:`register_method` (it is
registered with it); :class:`tcclib.method.training.Pretraining` dispatches to it.  See
``examples/knn_rule.py``.
"""

from __future__ import annotations

import colorsys
import contextlib
import difflib
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import io
import itertools
import math
import os
import sys
import textwrap
import tokenize
import traceback
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcclib.util.errors import register_short

if TYPE_CHECKING:  # (the layout check sees the edge; the module loads in _rules())
    from tcclib.method import rules


def _rules():
    """:mod:`tcclib.method.rules` (and torch), loaded with the first rule, not with the names."""
    return importlib.import_module("tcclib.method.rules")


_HOW_RULES: dict[str, rules.HowRule] = {}
"""How values are drawn, by name (:func:`register_rule`): ``none`` (no pretraining), ``column``
(the whole column: SCARF), ``pseudo`` (the anchor's pseudo-class, refreshed during pretraining),
``oracle`` (the anchor's true class)."""
_WHERE_RULES: dict[str, rules.WhereRule] = {}
"""Which features are corrupted, by name: ``uniform``, or by correlation (Algorithm 4): ``most``,
``least``."""
RULES = ("direct", "authors")
"""The correlation sampler's rules (``Config.corr_rule``; a method may fix its own)."""
GROUPS = ("how", "where", "published", "baseline")
TABLE_KINDS = ("how", "where")

# matplotlib's tab10, in the order the figures have always used
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
# tab20's lighter shades, then tab20b's and tab20c's darker ones: colours for entries registered later
_MORE = (
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
) + ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")
BASELINE_ORDER = 100.0
"""The baselines' places start here, so that a method registered later (placed after the last
method by default) sorts among the methods, before every baseline."""


class RegistryError(ValueError):
    """A registration has a bad name, a taken name, or a bad how/where/group/factory."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook instead of a traceback: its one line."""
        return [f"{type(self).__name__}: {self}"]


register_short(RegistryError)


class PluginError(RegistryError):
    """A plugin that cannot be found, fails to import or changes torch's global state (one line:
    the file, its line, the error)."""


# --------------------------------------------------------------------------- loading: the stated order
#
# The registry fills itself: every query below calls ensure_loaded() first, which loads the
# built-ins and the environment's plugins once, in the order its docstring states.  A plugin is
# the code that registers entries: a .py file or a module (tcclib.method.plugins has the ways a
# plugin reaches a process and moves between processes).

BUILTINS = "tcclib.method.builtins"
"""The built-in rules, methods and baselines: the first plugin of every process."""
ENTRY_POINTS = "tcclib.plugins"
"""The entry-point group of installed packages' plugins."""
ENV = "TCC_PLUGINS"
"""Plugins every tcclib process loads: paths or module names separated by ``os.pathsep``."""


@dataclass(frozen=True)
class Plugin:
    """One loaded plugin: ``spec`` as given, the ``module`` name it runs under, the ``path`` of its
    file (None for a module found by name elsewhere), where it came from (``origin``) and the
    digest of its text (``digest``: a file loaded again with the same digest is not run again)."""

    spec: str
    module: str
    path: str | None
    origin: str
    digest: str = ""

    @property
    def name(self) -> str:
        """How messages name it: its file, else its module."""
        return self.path or self.module


_LOADED: dict[str, Plugin] = {}
"""Loaded plugins by their identity (a file's resolved path, a module's name), in load order."""
_loading: list[str] = []
"""The plugin whose code is running now (innermost last); empty for a call from elsewhere."""
_STATE = {"filled": False, "filling": False}
"""Whether :func:`ensure_loaded` has filled the registry, or is filling it now."""


def ensure_loaded() -> None:
    """Fill the registry, once per process, in this order:

    1. the built-in rules, methods and baselines (:mod:`tcclib.method.builtins`);
    2. the plugins of installed packages' entry points (group :data:`ENTRY_POINTS`), in the order
       :func:`importlib.metadata.entry_points` lists them;
    3. the plugins ``$TCC_PLUGINS`` names (:data:`ENV`), left to right.

    Plugins loaded later by a caller (a parameter file's ``plugins:``, ``--plugin``,
    :func:`load_plugin`, ``tcclib.load_plugins``) come after these.  Every query of the registry
    calls this first, so no answer comes from a half-filled registry.  A failure (a plugin
    missing or broken) is a :class:`PluginError` raised again each time the registry is asked,
    so that no run goes on without a plugin it was told to load."""
    if _STATE["filled"] or _STATE["filling"]:
        return
    _STATE["filling"] = True
    try:
        load_plugin(BUILTINS, "built-in")
        for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
            load_plugin(entry.value.split(":")[0], f"entry point {entry.name}")
        load_plugins(env_specs(), f"${ENV}")
        _STATE["filled"] = True
    finally:
        _STATE["filling"] = False


def env_specs(environ=None) -> list[str]:
    """The plugins ``TCC_PLUGINS`` names."""
    value = (os.environ if environ is None else environ).get(ENV, "")
    return [s.strip() for s in value.split(os.pathsep) if s.strip()]


@contextlib.contextmanager
def registering_as(origin: str):
    """Entries registered inside count as the plugin ``origin``'s (what a plugin's import does;
    :func:`remove_origin` takes them out again)."""
    _loading.append(origin)
    try:
        yield
    finally:
        _loading.pop()


def current_origin() -> str | None:
    """The plugin registering now (its module name), or None."""
    return _loading[-1] if _loading else None


def plugin_hint() -> str:
    """The end of an unknown-name message: the plugins looked in and how to add one."""
    names = ", ".join(Path(p.name).name for p in _LOADED.values() if p.module != BUILTINS)
    return (
        f" (looked in the built-ins{', ' + names if names else ''}; a method of your own: load its file with "
        f"'plugins: [path/to/rule.py]' in the parameter file, --plugin path/to/rule.py, ${ENV}, or "
        f"tcclib.load_plugins('path/to/rule.py'))"
    )


def _redefinable(origin: str | None) -> bool:
    """Whether the plugin registering now may redefine an entry first made by ``origin``: a
    plugin file loaded again (edited) replaces what it registered before."""
    return origin is not None and origin == current_origin()


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a file (ends in ``.py`` or has a path separator) rather than a module."""
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def load_plugin(spec, origin: str = "python", base: Path | None = None) -> Plugin:
    """Load one plugin: a ``.py`` file (a relative path against ``base``, default the working
    directory) or a module name.  A file already loaded with the same text, or a module already
    loaded, is not run again; an edited file runs again and redefines its entries."""
    if isinstance(spec, Path):
        spec = str(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError(f"plugin: expected a path to a .py file or a module name, got {spec!r}")
    spec = spec.strip()
    if spec != BUILTINS:
        ensure_loaded()  # the built-ins first, whoever loads a plugin
    if is_file_spec(spec):
        return _load_file(spec, origin, base)
    return _load_module(spec, origin)


def load_plugins(specs, origin: str = "python", base: Path | None = None) -> list[Plugin]:
    """:func:`load_plugin` each of ``specs`` (a string or a list of them), in order."""
    if isinstance(specs, (str, Path)):
        specs = [specs]
    return [load_plugin(s, origin, base) for s in specs]


def _load_file(spec: str, origin: str, base: Path | None) -> Plugin:
    path = Path(spec).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = path.resolve()
    if not path.is_file():
        where = f" (looked in {path.parent})" if path.parent.exists() else ""
        raise PluginError(f"plugin {spec}: no such file{where}; give the path of a .py file or a module name")
    try:
        text = path.read_bytes()
    except OSError as e:
        raise PluginError(f"plugin {spec}: cannot be read ({e.strerror})") from None
    digest = hashlib.sha256(text).hexdigest()[:16]
    known = _LOADED.get(str(path))
    if known is not None and known.digest == digest:
        return known
    twin = next((p for p in _LOADED.values() if p.digest == digest and Path(p.path or "").name == path.name), None)
    if twin is not None:  # the same file's copy (a worker gets it shipped and from $TCC_PLUGINS)
        return twin
    module_name = known.module if known else _module_name(path)
    if known is not None:  # edited: what it registered before goes, what it registers now comes
        remove_origin(module_name)
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    _run(lambda: module_spec.loader.exec_module(module), module_name, str(path), spec)
    plugin = Plugin(spec, module_name, str(path), origin, digest)
    _LOADED[str(path)] = plugin
    return plugin


def _load_module(spec: str, origin: str) -> Plugin:
    known = _LOADED.get(spec)
    if known is not None:
        return known
    if spec not in sys.modules:
        try:
            found = importlib.util.find_spec(spec)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise PluginError(
                f"plugin {spec}{_from(origin)}: no module of that name here (not a .py file either); install "
                f"the package that provides it, or give the path of a .py file"
            )
        _run(lambda: importlib.import_module(spec), spec, found.origin, spec)
    module = sys.modules[spec]
    plugin = Plugin(spec, spec, getattr(module, "__file__", None), origin)
    _LOADED[spec] = plugin
    return plugin


def _from(origin: str) -> str:
    """`` (from $TCC_PLUGINS)``: where a plugin the user did not name here came from."""
    return f" (from {origin})" if origin.startswith(("entry point", "$")) else ""


def _module_name(path: Path) -> str:
    """The module name a plugin file runs under: ``tcc_plugin_<stem>_<hash of its path>``."""
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"tcc_plugin_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def _torch_state() -> list:
    """torch's process-wide settings that change what training computes, ``(what, value, set)``: a
    plugin's import must leave them as it found them."""
    import torch  # deferred: torch takes seconds to import, and naming a method never needs it

    settings = (
        ("default dtype", torch.get_default_dtype, torch.set_default_dtype),
        ("grad mode", torch.is_grad_enabled, torch.set_grad_enabled),
        ("anomaly detection", torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        ("deterministic algorithms", torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
        ("float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        ("default device", torch.get_default_device, torch.set_default_device),
    )
    return [(what, get(), put) for what, get, put in settings]


def _restore_torch(before: list) -> list[str]:
    """Set back every torch setting that differs from ``before``; ``what was -> is`` of each."""
    changed = []
    for (what, old, put), (_, new, _) in zip(before, _torch_state(), strict=True):
        if new != old:
            changed.append(f"{what} {old} -> {new}")
            put(old)
    return changed


def _run(action, module_name: str, path: str | None, spec: str) -> None:
    """Run a plugin's import with this module told who registers; any error becomes one line
    naming the file and the line where it happened.  A plugin that changes torch's global state
    at import (:data:`_TORCH_STATE`) is refused, and the state set back."""
    _loading.append(module_name)
    before = _torch_state()
    try:
        action()
    except PluginError:
        _restore_torch(before)
        _undo(module_name)
        raise
    except BaseException as e:  # a plugin's own error of any kind: one line, before any work
        _restore_torch(before)
        _undo(module_name)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise PluginError(_failure_line(e, path, spec)) from e
    finally:
        _loading.pop()
    changed = _restore_torch(before)
    if changed:
        _undo(module_name)
        raise PluginError(
            f"plugin {path or spec}: changed torch's global state at import ({'; '.join(changed)}); "
            "refused and set back: set such state inside the rule's methods (e.g. a dtype= argument, "
            "a torch.no_grad() block), not at module level"
        )


def _undo(module_name: str) -> None:
    """Forget a plugin that failed: its module and whatever it registered before failing."""
    sys.modules.pop(module_name, None)
    remove_origin(module_name)
    for identity in [i for i, p in _LOADED.items() if p.module == module_name]:
        del _LOADED[identity]


def _failure_line(error: BaseException, path: str | None, spec: str) -> str:
    """``plugin myrule.py, line 12: NameError: name 'x' is not defined``."""
    line = None
    if isinstance(error, SyntaxError) and error.filename and path and Path(error.filename) == Path(path):
        line = error.lineno
    elif path:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == Path(path)]
        line = frames[-1].lineno if frames else None
    message = str(error).splitlines()[0] if str(error) else ""
    if isinstance(error, SyntaxError):
        message = error.msg
    where = f"{path or spec}" + (f", line {line}" if line else "")
    return f"plugin {where}: {type(error).__name__}: {message}".rstrip(": ")


def unload_plugin(spec) -> None:
    """Forget a loaded plugin (a file's path or a module's name) and remove every entry it
    registered (a notebook or a test trying variants); the built-ins cannot be unloaded."""
    identity = str(Path(spec).expanduser().resolve()) if is_file_spec(str(spec)) else str(spec)
    plugin = _LOADED.get(identity)
    if plugin is None or plugin.module == BUILTINS:
        raise PluginError(
            f"unload: {spec} is not a loaded plugin; loaded: {', '.join(p.name for p in loaded()) or 'none'}"
        )
    remove_origin(plugin.module)
    del _LOADED[identity]
    sys.modules.pop(plugin.module, None)


def loaded(include_builtins: bool = False) -> list[Plugin]:
    """The plugins loaded in this process, in load order (the built-ins left out unless asked)."""
    ensure_loaded()
    return [p for p in _LOADED.values() if include_builtins or p.module != BUILTINS]


# --------------------------------------------------------------------------- code identity

_SIMPLE = (int, float, str, bool, bytes, type(None))


def code_identity(obj) -> str | None:
    """What identifies the code of a user's rule object or baseline factory in a content key.

    None for tcclib's own code (its rules and baselines are keyed by
    :data:`tcclib.artifacts.keys.TRAIN_VERSION`, so the committed keys stay).  Otherwise:
    ``"version:<v>"`` when the rule (or factory) sets a ``version`` attribute, which pins it (an
    edit that changes no result keeps the stored members; bump it when one does); else
    ``"source:<hash>"``, a sha256 of the source of its own classes (for a rule: every class of its
    type's MRO that is not tcclib's) or of the factory, with the source of every function, class
    and plain constant of the same module that they read by name, followed to any depth.  So
    editing ``donors()``, ``mask()``, a helper they call or a factory changes the identity of what
    it affects, and nothing else's; comments, blank lines and the spacing within a line do not
    count (:func:`_code_text`).  Code without a source file (a notebook cell) is read from its
    compiled form instead."""
    version = getattr(obj, "version", None)
    if version is not None:
        return f"version:{version}"
    parts: list[str] = []
    if isinstance(obj, functools.partial):  # a factory with arguments bound: the function and its arguments
        parts.append(repr((obj.args, sorted(obj.keywords.items()))))
        obj = obj.func
    if isinstance(obj, (types.FunctionType, type)):
        roots = [] if _is_tcclib(obj) else [obj]
    else:  # a rule object, or a callable instance: its classes
        roots = [c for c in type(obj).__mro__ if c is not object and not _is_tcclib(c)]
    if not roots:
        return None
    seen: set[int] = set()
    for root in roots:
        _collect_source(root, parts, seen)
    identity = "source:" + hashlib.sha256("\n\x00".join(parts).encode()).hexdigest()[:16]
    return STORED_AS.get(identity, identity)


STORED_AS = {"source:35d55d6dbcb910a2": "source:92fec80e2ae2a421"}
"""Code identities under which committed results were stored before comments stopped counting:
``examples/nearby_rule.py`` (the screen's members in ``outputs/screen``) was keyed by its source
with its comments; its identity without them maps to that one, so those members keep their keys."""


def _code_text(source: str) -> str:
    """``source`` as its tokens, without comments, blank lines or the spacing within a line: what
    a formatting change or a comment leaves as it is (docstrings count: they are code)."""
    skip = (tokenize.COMMENT, tokenize.NL)
    try:
        tokens = tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline)
        return "\x01".join(f"{t.type}:{t.string}" for t in tokens if t.type not in skip)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source


def _is_tcclib(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "tcclib" or module.startswith("tcclib.")


def _collect_source(obj, parts: list[str], seen: set[int]) -> None:
    """Append the source of ``obj`` (a class or function) and of what it reads by name from its
    own module (functions, classes, plain constants), each once."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    try:
        parts.append(_code_text(inspect.getsource(obj)))
    except (OSError, TypeError):
        parts.append(_compiled_text(obj))
    module = getattr(obj, "__module__", None)
    for code, namespace in _code_objects(obj):
        for name in code.co_names:
            value = namespace.get(name)
            if isinstance(value, (types.FunctionType, type)):
                if getattr(value, "__module__", None) == module and not _is_tcclib(value):
                    _collect_source(value, parts, seen)
            elif isinstance(value, _SIMPLE) or (
                isinstance(value, tuple) and all(isinstance(v, _SIMPLE) for v in value)
            ):
                parts.append(f"{name} = {value!r}")


def _functions(obj) -> list:
    """The functions of a class's own namespace (methods, static and class methods, properties),
    or ``[obj]`` for a function."""
    if isinstance(obj, types.FunctionType):
        return [obj]
    out = []
    for value in vars(obj).values() if isinstance(obj, type) else ():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            out += [f for f in (value.fget, value.fset) if f is not None]
        elif isinstance(value, types.FunctionType):
            out.append(value)
    return out


def _code_objects(obj):
    """``(code object, its globals)`` of every function of ``obj``, nested code included."""
    for function in _functions(obj):
        stack = [function.__code__]
        while stack:
            code = stack.pop()
            yield code, function.__globals__
            stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]


def _compiled_text(obj) -> str:
    """A stable text of ``obj``'s compiled functions (bytecode, constants, names), for code with
    no source file."""
    out = [getattr(obj, "__qualname__", repr(obj))]
    for code, _ in _code_objects(obj):
        consts = [c.co_name if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
        out.append(f"{code.co_name}:{code.co_code.hex()}:{consts}:{code.co_names}:{code.co_varnames}")
    return "\n".join(out)


def register_rule(rule, replace: bool = False):
    """Make a corruption rule (a :class:`~tcclib.method.rules.HowRule` or
    :class:`~tcclib.method.rules.WhereRule`) known by its ``name``, so that methods can name it;
    returns the rule.  Registering the same object again does nothing."""
    rules = _rules()
    if isinstance(rule, rules.HowRule):
        table = _HOW_RULES
    elif isinstance(rule, rules.WhereRule):
        table = _WHERE_RULES
    else:
        raise RegistryError(
            f"register_rule: expected a rules.HowRule or rules.WhereRule object, got {type(rule).__name__}"
        )
    if not isinstance(rule.name, str) or not rule.name.isidentifier():
        raise RegistryError(f"register_rule: a rule's name must be a simple identifier, got {rule.name!r}")
    if isinstance(rule, rules.HowRule) and rule.needs not in rules.NEEDS:
        raise RegistryError(f"register_rule {rule.name!r}: needs must be one of {', '.join(rules.NEEDS)}")
    check_rule_settings(rule)
    if table.get(rule.name, rule) is not rule and not replace and not _redefinable(_RULE_ORIGIN.get(rule.name)):
        raise RegistryError(
            f"register_rule: a different rule is already called {rule.name!r}; "
            f"choose another name, or pass replace=True"
        )
    table[rule.name] = rule
    _RULE_ORIGIN[rule.name] = current_origin()
    _RULE_CODE[rule] = code_identity(rule)
    return rule


_RULE_ORIGIN: dict[str, str | None] = {}
"""The plugin that registered each rule name (None: registered by a direct call)."""
_RULE_CODE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Each registered rule object's code identity (:func:`code_identity`), read when registered."""


def rule_code(rule) -> str | None:
    """The code identity of a registered rule object: None for tcclib's own rule classes."""
    if rule not in _RULE_CODE:
        _RULE_CODE[rule] = code_identity(rule)
    return _RULE_CODE[rule]


def check_rule_settings(rule) -> None:
    """A rule's ``settings`` and ``switches`` must be tuples of names, checked when it is
    registered; that they are :class:`~tcclib.method.config.Config` fields is checked by every
    ``Config`` that names one of its methods (the declarations live above this module)."""
    for attribute in ("settings", "switches"):
        names = getattr(rule, attribute, ())
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise RegistryError(
                f"rule {rule.name!r}: {attribute} must be a tuple of Config field names, "
                f"e.g. {attribute} = ('epochs',); got {names!r}"
            )


def how_rule(name: str) -> rules.HowRule:
    """The how rule called ``name``."""
    ensure_loaded()
    if name not in _HOW_RULES:
        raise RegistryError(f"unknown how rule {name!r}; known: {', '.join(_HOW_RULES)}{plugin_hint()}")
    return _HOW_RULES[name]


def where_rule(name: str) -> rules.WhereRule:
    """The where rule called ``name``."""
    ensure_loaded()
    if name not in _WHERE_RULES:
        raise RegistryError(f"unknown where rule {name!r}; known: {', '.join(_WHERE_RULES)}{plugin_hint()}")
    return _WHERE_RULES[name]


@dataclass(frozen=True)
class MethodSpec:
    """How and where one method corrupts: the names of its two rules, and two variations.

    how: a how rule's name (:func:`how_rule`): "none" (no pretraining), "column" (SCARF: whole
    column), "pseudo" (the anchor's pseudo-class, refreshed during pretraining), "oracle" (the
    anchor's true class), or one registered later.
    where: a where rule's name (:func:`where_rule`): "uniform", "most" or "least"
    (correlation-based, Algorithm 4).
    flipped: the authors' published behaviour for "most": their code flipped the shared
    importance matrix in place, so the run labelled "most correlated" sampled by the
    least-correlated ranking.  ``flipped=True`` reproduces that.
    rule: the correlation sampler's rule for this method whatever ``Config.corr_rule`` says
    (``"direct"``: ours, ``"authors"``: their rank reversal for "least",
    :func:`tcclib.method.rules.sampler_inputs`); None (the default): ``Config.corr_rule``'s.
    """

    how: str
    where: str = "uniform"
    flipped: bool = False
    rule: str | None = None

    def effective_rule(self, cfg) -> str:
        """The sampler rule this method's members use under ``cfg``."""
        return self.rule or cfg.effective("corr_rule")

    @property
    def draw(self) -> rules.HowRule:
        """The how rule object: what it needs, how it draws donors, its key settings."""
        return how_rule(self.how)

    @property
    def choice(self) -> rules.WhereRule:
        """The where rule object the members really sample by (the ``ranking``'s)."""
        return where_rule(self.ranking)

    @property
    def pretrain(self) -> bool:
        return self.draw.pretrains

    @property
    def pseudo_labelled(self) -> bool:
        """Whether its members corrupt within pseudo-classes (refreshed during pretraining)."""
        return self.draw.needs == _rules().PSEUDO_LABELS

    @property
    def needs_true_labels(self) -> bool:
        """Whether it reads every training row's true label (the estimator cannot offer it)."""
        return self.draw.needs == _rules().TRUE_LABELS

    @property
    def needs_importance(self) -> bool:
        """Whether it reads the XGBoost importance matrices (a correlation method)."""
        return self.choice.needs_importance

    @property
    def ranking(self) -> str:
        """The ranking the sampler really uses ("most"/"least"/"uniform")."""
        if self.flipped and self.where == "most":
            return "least"
        return self.where

    def key_parts(self) -> tuple[list[str], list[str], dict]:
        """What its members' content key holds besides the settings every member has: the
        :class:`~tcclib.method.config.Config` fields its rules read, the fidelity switches they
        read, and the rules' own parameters (:meth:`~tcclib.method.rules.HowRule.key_params`)."""
        how, where = self.draw, self.choice
        settings = list(how.settings) + list(where.settings)
        switches = list(how.switches) + list(where.switches)
        own = {
            name: params
            for name, params in ((self.how, how.key_params()), (self.ranking, where.key_params()))
            if params
        }
        return settings, switches, own

    def code(self) -> dict[str, str]:
        """The code identity of its rules that are not tcclib's own (:func:`code_identity`), by
        rule name: it enters its members' content key, so an edited plugin rule retrains them."""
        out = {}
        for name, rule in ((self.how, self.draw), (self.ranking, self.choice)):
            identity = rule_code(rule)
            if identity:
                out[name] = identity
        return out


@dataclass(frozen=True)
class Entry:
    """One registered method (``spec`` set) or baseline (``factory`` set).

    ``paper_columns``: ``(table kind, the paper's column)`` pairs: the published column it is
    compared with in the how- and where-tables; ``separate``: it is scored against a column that
    another method (the paper's) owns, so it is reported on its own and never in the distinct
    counts; ``repeats``: the method it re-runs for fidelity (left out of rank tests beside it);
    ``about``: a few words on what it is, for the report (the label when empty)."""

    name: str
    label: str
    group: str
    order: float
    color: str
    tables: tuple[str, ...] = ()
    spec: MethodSpec | None = None
    paper: bool = False  # one of the paper's six methods (the default ``Config.methods``)
    factory: Callable[[int, Any], Any] | None = field(default=None, compare=False)
    semi_supervised: bool = False
    settings: tuple[str, ...] = ()
    paper_columns: tuple[tuple[str, str], ...] = ()
    separate: bool = False
    repeats: str | None = None
    about: str = ""
    origin: str | None = None  # the plugin that registered it (None: a direct call)
    code: str | None = None  # a user baseline factory's code identity (part of its content key)

    @property
    def is_baseline(self) -> bool:
        return self.factory is not None

    def paper_column(self, kind: str) -> str | None:
        """The paper's column it is compared with in the ``kind`` table (None: none)."""
        return dict(self.paper_columns).get(kind)


_ENTRIES: dict[str, Entry] = {}


def _check_name(name, replace: bool) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise RegistryError(f"register: name must be a simple identifier (letters, digits, _), got {name!r}")
    if name in _ENTRIES and not replace and not _redefinable(_ENTRIES[name].origin):
        raise RegistryError(
            f"register: {name!r} is already registered ({_ENTRIES[name].group}); "
            f"choose another name, or pass replace=True to redefine it"
        )


def _placed(name, group, order, color, tables, default_tables) -> dict:
    if group not in GROUPS:
        raise RegistryError(f"register {name!r}: group must be one of {', '.join(GROUPS)}, got {group!r}")
    tables = tuple(default_tables if tables is None else tables)
    bad = [t for t in tables if t not in TABLE_KINDS]
    if bad:
        raise RegistryError(f"register {name!r}: tables must be among {', '.join(TABLE_KINDS)}, got {bad[0]!r}")
    old = _ENTRIES.get(name)
    if order is None:
        order = old.order if old else _next_order(group == "baseline")
    if color is None:
        color = old.color if old else _unused_color({e.color for n, e in _ENTRIES.items() if n != name})
    return dict(group=group, order=float(order), color=color, tables=tables, origin=current_origin())


def _next_order(baseline: bool) -> float:
    """A new entry's default place: after the last method (before every baseline), or, for a
    baseline, after the last baseline."""
    if baseline:
        return max((e.order for e in _ENTRIES.values()), default=BASELINE_ORDER - 1) + 1
    top = max((e.order for e in _ENTRIES.values() if not e.is_baseline), default=0)
    following = math.floor(top) + 1
    return following if following < BASELINE_ORDER else (top + BASELINE_ORDER) / 2


def _unused_color(used: set[str]) -> str:
    """The first colour of the palette no entry uses; past the palette, a new hue each time
    (golden-angle steps), never an existing entry's colour."""
    for c in TAB10 + _MORE:
        if c not in used:
            return c
    for i in itertools.count(len(used)):
        r, g, b = colorsys.hsv_to_rgb((i * 0.618034) % 1.0, 0.65, 0.8)
        c = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        if c not in used:
            return c
    raise AssertionError("unreachable")


def register_method(
    name: str,
    how,
    where="uniform",
    *,
    flipped: bool = False,
    rule: str | None = None,
    label: str | None = None,
    group: str | None = None,
    order: float | None = None,
    color: str | None = None,
    tables=None,
    paper: bool = False,
    paper_columns=None,
    separate: bool = False,
    repeats: str | None = None,
    about: str = "",
    replace: bool = False,
    replace_rule: bool = False,
) -> Entry:
    """Declare a pretraining method: a ``how`` rule and a ``where`` rule, each a registered
    rule's name (:func:`register_rule`) or a rule object (registered here).  It is then valid in
    ``Config.methods``, trained by :func:`tcclib.running.train.run_dataset` and the estimator, and
    shown in the figures, the set tables (``group`` "how" -> the how-table, else the where-table;
    or ``tables=``) and the report.

    ``flipped`` and ``rule`` are :class:`MethodSpec`'s (``rule``: a correlation method's own
    sampler rule, whatever ``Config.corr_rule`` says).  ``paper_columns``: ``{table kind: the
    paper's column}`` it is compared with; ``separate``, ``repeats`` and ``about``: :class:`Entry`'s.
    Defaults: ``label`` the name, ``group`` "how" for ``where="uniform"`` else "where",
    ``order`` after every entry so far, ``color`` the first unused one.  ``replace``: redefine a
    registered method; ``replace_rule``: a rule object given here replaces a different one of
    its name (a script run again)."""
    _check_name(name, replace)
    how = _rule_name(name, how, "how", _HOW_RULES, replace_rule)
    where = _rule_name(name, where, "where", _WHERE_RULES, replace_rule)
    if not how_rule(how).pretrains and where != "uniform":
        raise RegistryError(
            f"register_method {name!r}: how={how!r} corrupts nothing, so where must be 'uniform', got {where!r}"
        )
    if rule is not None and (rule not in RULES or not where_rule(where).needs_importance):
        raise RegistryError(
            f"register_method {name!r}: rule must be None or one of {', '.join(RULES)} and "
            f"goes with a correlation method (where 'most' or 'least'), got rule {rule!r} "
            f"with where {where!r}"
        )
    columns = _paper_columns(name, paper_columns)
    group = group or ("how" if where == "uniform" else "where")
    e = Entry(
        name=name,
        label=label or name,
        spec=MethodSpec(how, where, bool(flipped), rule),
        paper=paper,
        paper_columns=columns,
        separate=bool(separate),
        repeats=repeats,
        about=about or label or name,
        **_placed(name, group, order, color, tables, ("how",) if group == "how" else ("where",)),
    )
    _ENTRIES[name] = e
    return e


def _rule_name(name: str, rule, what: str, table: dict, replace: bool) -> str:
    """The name of ``rule`` (a registered rule's name, or a rule object, registered now)."""
    rules = _rules()
    if isinstance(rule, (rules.HowRule, rules.WhereRule)):
        kind = rules.HowRule if what == "how" else rules.WhereRule
        if not isinstance(rule, kind):
            raise RegistryError(f"register_method {name!r}: {what} must be a {kind.__name__}, got {rule!r}")
        return register_rule(rule, replace).name
    if rule not in table:
        raise RegistryError(
            f"register_method {name!r}: {what} must be one of {', '.join(table)}, got {rule!r} "
            f"(a new rule: a {'HowRule' if what == 'how' else 'WhereRule'} object of tcclib/method/rules.py, "
            f"see examples/knn_rule.py)"
        )
    return rule


def _paper_columns(name: str, columns) -> tuple[tuple[str, str], ...]:
    columns = dict(columns or {})
    bad = [kind for kind in columns if kind not in TABLE_KINDS]
    if bad:
        raise RegistryError(f"register_method {name!r}: paper_columns kinds must be among {', '.join(TABLE_KINDS)}")
    return tuple(columns.items())


def register_baseline(
    name: str,
    factory: Callable[[int, Any], Any],
    *,
    semi_supervised: bool = False,
    settings=(),
    label: str | None = None,
    order: float | None = None,
    color: str | None = None,
    tables=None,
    replace: bool = False,
) -> Entry:
    """Declare a baseline: ``factory(seed, cfg)`` returns an unfitted classifier with ``fit``,
    ``predict_proba`` and ``classes_`` (scikit-learn's interface).  It is fitted on the labeled
    rows (renumbered 0..c-1), or, with ``semi_supervised``, on every training row with the
    unlabeled ones marked -1.  ``settings``: the :class:`~tcclib.method.config.Config` fields the
    factory reads (a change to them retrains it).  It is then valid in ``Config.baselines``."""
    _check_name(name, replace)
    return _add_baseline(name, factory, semi_supervised, settings, label, order, color, tables)


def _add_baseline(name, factory, semi_supervised, settings, label, order, color, tables) -> Entry:
    if not callable(factory):
        raise RegistryError(
            f"register_baseline {name!r}: factory must be a callable (seed, cfg) -> "
            f"classifier, got {type(factory).__name__}"
        )
    if isinstance(settings, str):
        raise RegistryError(
            f"register_baseline {name!r}: settings must be a list of Config fields, e.g. settings=[{settings!r}]"
        )
    if not all(isinstance(s, str) for s in settings):
        raise RegistryError(f"register_baseline {name!r}: settings must be Config field names, got {list(settings)}")
    e = Entry(
        name=name,
        label=label or name,
        factory=factory,
        semi_supervised=bool(semi_supervised),
        settings=tuple(settings),
        code=code_identity(factory),
        **_placed(name, "baseline", order, color, tables, ("how",)),
    )
    _ENTRIES[name] = e
    return e


def unregister(name: str) -> None:
    """Remove an entry (for tests and notebooks that registered a trial method)."""
    if name not in _ENTRIES:
        raise RegistryError(f"unregister: {name!r} is not registered; registered: {', '.join(_ENTRIES)}")
    del _ENTRIES[name]


def remove_origin(origin: str) -> None:
    """Remove every entry and rule the plugin ``origin`` registered (:func:`tcclib.method.plugins.unload`)."""
    for name in [n for n, e in _ENTRIES.items() if e.origin == origin]:
        del _ENTRIES[name]
    for name in [n for n, o in _RULE_ORIGIN.items() if o == origin]:
        _HOW_RULES.pop(name, None)
        _WHERE_RULES.pop(name, None)
        del _RULE_ORIGIN[name]


# --------------------------------------------------------------------------- queries


def entries(group: str | None = None) -> list[Entry]:
    """All entries (or one group's) in their order."""
    ensure_loaded()
    return sorted((e for e in _ENTRIES.values() if group is None or e.group == group), key=lambda e: e.order)


def get(name: str) -> Entry:
    ensure_loaded()
    if name not in _ENTRIES:
        close = difflib.get_close_matches(str(name), list(_ENTRIES), n=2)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise RegistryError(
            f"unknown method or baseline {name!r}{hint}; registered: {', '.join(order())}{plugin_hint()}"
        )
    return _ENTRIES[name]


def method_names() -> list[str]:
    """The pretraining methods (not baselines), in order."""
    return [e.name for e in entries() if not e.is_baseline]


def baseline_names() -> list[str]:
    return [e.name for e in entries("baseline")]


def paper_methods() -> tuple[str, ...]:
    """The paper's six methods (``Config``'s default ``methods``)."""
    return tuple(e.name for e in entries() if e.paper)


def order() -> list[str]:
    """Every method and baseline, in the figures' and tables' order."""
    return [e.name for e in entries()]


def sort(names) -> list[str]:
    """``names`` in registry order; unregistered names after them, as given."""
    names = list(dict.fromkeys(names))
    pos = {n: i for i, n in enumerate(order())}
    return sorted((n for n in names if n in pos), key=pos.get) + [n for n in names if n not in pos]


def label(name: str) -> str:
    ensure_loaded()
    e = _ENTRIES.get(name)
    return e.label if e else str(name)


def labels() -> dict[str, str]:
    return {e.name: e.label for e in entries()}


def colors() -> dict[str, str]:
    return {e.name: e.color for e in entries()}


def table_methods(kind: str, present=None) -> list[str]:
    """The methods and baselines of a set table (``"how"`` or ``"where"``), in order; only
    those in ``present`` when given."""
    if kind not in TABLE_KINDS:
        raise RegistryError(f"table kind must be one of {', '.join(TABLE_KINDS)}, got {kind!r}")
    out = [e.name for e in entries() if kind in e.tables]
    return out if present is None else [m for m in out if m in set(present)]


def with_group(*groups: str, present=None) -> list[str]:
    """Names of the given groups, in order; only those in ``present`` when given."""
    out = [e.name for e in entries() if e.group in groups]
    return out if present is None else [m for m in out if m in set(present)]


def compared_columns(kind: str) -> dict[str, str]:
    """``{method: the paper's column}`` of every method compared with the paper in the ``kind``
    table (``"how"``: Tables 2-3, ``"where"``: Tables 4-5), in order, the separate ones included."""
    return {e.name: e.paper_column(kind) for e in entries() if e.paper_column(kind)}


def paper_table_methods(kind: str) -> list[str]:
    """The methods that own a column of the paper's ``kind`` table (the separate ones left out), in order."""
    return [e.name for e in entries() if e.paper_column(kind) and not e.separate]


def column_owners(kind: str | None = None) -> dict[str, str]:
    """``{the paper's column: our method}`` of the ``kind`` table (both kinds by default): the
    method that owns the column, never a separate one."""
    kinds = TABLE_KINDS if kind is None else (kind,)
    return {e.paper_column(k): e.name for k in kinds for e in entries() if e.paper_column(k) and not e.separate}


def separate_methods() -> tuple[str, ...]:
    """The methods scored against a column another method owns (reported on their own)."""
    return tuple(e.name for e in entries() if e.separate)


def rank_repeats() -> dict[str, str]:
    """``{method: the method it re-runs}`` (fidelity re-runs, left out of rank tests beside it)."""
    return {e.name: e.repeats for e in entries() if e.repeats}


def pseudo_labelled(names) -> list[str]:
    """Those of ``names`` that are pseudo-labelled methods."""
    ensure_loaded()
    return [m for m in names if m in _ENTRIES and not _ENTRIES[m].is_baseline and _ENTRIES[m].spec.pseudo_labelled]


# --------------------------------------------------------------------------- live views


class _MethodsView(Mapping):
    """``config.METHODS``: name -> :class:`MethodSpec` of every registered method, live."""

    def __getitem__(self, name):
        ensure_loaded()
        e = _ENTRIES.get(name)
        if e is None or e.is_baseline:
            raise KeyError(name)
        return e.spec

    def __iter__(self):
        return iter(method_names())

    def __len__(self):
        return len(method_names())

    def __repr__(self):
        return f"METHODS({dict(self)!r})"


class _NamesView(Sequence):
    """A live tuple-like list of registry names (``config.BASELINES``, ``plots.METHOD_ORDER``)."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, i):
        return self._fn()[i]

    def __len__(self):
        return len(self._fn())

    def __contains__(self, x):
        return x in self._fn()

    def __iter__(self):
        return iter(self._fn())

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (list, tuple, Sequence)) else NotImplemented

    def __add__(self, other):
        return (*self, *other)

    def __radd__(self, other):
        return (*other, *self)

    def __repr__(self):
        return repr(tuple(self._fn()))


LiveNames = _NamesView


class LiveMapping(Mapping):
    """A live read-only mapping computed by ``fn()`` from the registry at each use (module
    constants such as ``cell_tests.PAPER_COLUMNS`` that follow registrations made later)."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, key):
        return self._fn()[key]

    def __iter__(self):
        return iter(self._fn())

    def __len__(self):
        return len(self._fn())

    def __repr__(self):
        return repr(self._fn())


class _LabelsView(Mapping):
    """``plots.LABELS``: name -> label of the methods (baselines are shown by name), live."""

    def __getitem__(self, name):
        ensure_loaded()
        e = _ENTRIES.get(name)
        if e is None:
            raise KeyError(name)
        return e.label

    def __iter__(self):
        return iter(order())

    def __len__(self):
        return len(_ENTRIES)


METHODS = _MethodsView()
BASELINES = _NamesView(baseline_names)
ORDER = _NamesView(order)
LABELS = _LabelsView()
HOWS = _NamesView(lambda: (ensure_loaded(), tuple(_HOW_RULES))[1])
"""The how rules' names (a live view)."""
WHERES = _NamesView(lambda: (ensure_loaded(), tuple(_WHERE_RULES))[1])
"""The where rules' names (a live view)."""
