"""Plugins: the code that registers rules, methods and baselines, loaded the same way everywhere.

A plugin is a Python file (``myrule.py``) or an importable module (``mypackage.rules``) whose
import registers entries (:func:`tcclib.method.registry.register_method`,
:func:`~tcclib.method.registry.register_baseline`).  The built-ins are one
(:mod:`tcclib.method.builtins`).  This module is the loader: the registry asks it to fill
itself before its first answer (:func:`ensure_loaded`: the built-ins, installed packages' entry
points, ``$TCC_PLUGINS``); callers load more with :func:`load`, :func:`load_many` and
:func:`unload`; and it moves plugins to the notebook kernels and Dask workers a run starts.  A
user's plugin reaches a process by any of:

* ``plugins: [path/to/rule.py, mypackage.rules]`` in a parameter file, or ``--plugin PATH`` on the
  command line (``python -m tcclib``): the sweep loads them before it checks the file's methods;
* the environment variable ``TCC_PLUGINS`` (paths or module names, separated by ``os.pathsep``),
  read when the registry is first asked anything: the sweep sets it for the notebook kernels it
  starts, so they load the same plugins (a Dask worker gets the files' text with its unit and
  does the same, with no shared filesystem);
* the entry-point group ``tcclib.plugins`` of an installed package (``[project.entry-points."tcclib.plugins"]
  myrules = "mypackage.rules"``), loaded with the environment's plugins;
* :func:`load` (``tcclib.load_plugins``) from Python or a notebook cell.

Loading a file again after it was edited runs it again: its entries replace those it registered
before (no ``replace=True`` needed).  A plugin that fails to import is a one-line
:class:`PluginError` naming the file, the line and the error, before any work; so is one that
changes torch's global state at import (default dtype, grad mode, ...: refused and set back).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import linecache
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from tcclib.method import identity as keyed
from tcclib.util.errors import register_short
from tcclib.util.paths import relative_to_root


class RegistryError(ValueError):
    """A registration has a bad name, a taken name, or a bad how/where/group/factory."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook instead of a traceback: its one line."""
        return [f"{type(self).__name__}: {self}"]


register_short(RegistryError)


class PluginError(RegistryError):
    """A plugin that cannot be found, fails to import or changes torch's global state (one line:
    the file, its line, the error)."""


BUILTINS = "tcclib.method.builtins"
"""The built-in rules, methods and baselines: the first plugin of every process."""
ENTRY_POINTS = "tcclib.plugins"
"""The entry-point group of installed packages' plugins."""
ENV = "TCC_PLUGINS"
"""Plugins every tcclib process loads: paths or module names separated by ``os.pathsep``."""
RULE_CELL = "notebook 09's rule cell"
"""The origin of the file notebook 09's rule cell writes (``%%writefile``) and loads: a name that
cell uses but another cell defines is not in that file, and its error says so."""


@dataclass(frozen=True)
class Plugin:
    """One loaded plugin: ``spec`` as given, the ``module`` name it runs under, the ``path`` of its
    file (None for a module found by name elsewhere), where it came from (``origin``), the digest
    of its text (``digest``: a file loaded again with the same digest is not run again) and the
    user's own modules its import brought in (``helpers``: ``(module, file, digest)``; an edited
    one is imported afresh with the plugin, so that what runs is what the files say now)."""

    spec: str
    module: str
    path: str | None
    origin: str
    digest: str = ""
    helpers: tuple[tuple[str, str, str], ...] = ()

    @property
    def name(self) -> str:
        """How messages name it: its file, else its module."""
        return self.path or self.module

    @property
    def identity(self) -> str:
        """How :func:`unload` names it: a file's path, a module's name (a module has a file too)."""
        return self.path if self.path and is_file_spec(self.spec) else self.module


_STATE = {"filled": False, "filling": False}
"""Whether :func:`ensure_loaded` has filled the registry, or is filling it now."""
_LOADED: dict[str, Plugin] = {}
"""Loaded plugins by their identity (a file's resolved path, a module's name), in load order."""


_loading: list[str] = []
"""The plugin whose code is running now (innermost last); empty for a call from elsewhere."""
_FORGET: list = []
"""The registry's ``remove_origin`` (:func:`forget_with`): what a plugin registered goes with it."""


def forget_with(remove) -> None:
    """Call ``remove(module name)`` when a plugin's entries must go (it failed, was edited, unloaded)."""
    _FORGET.append(remove)


def _forget(module: str) -> None:
    for remove in _FORGET:
        remove(module)


@contextlib.contextmanager
def registering_as(origin: str):
    """Entries registered inside count as the plugin ``origin``'s (what a plugin's import does;
    the registry's ``remove_origin`` takes them out again)."""
    _loading.append(origin)
    try:
        yield
    finally:
        _loading.pop()


CELL = "__main__/cell:"
"""The start of a notebook cell's origin (:func:`current_origin`): the cell's id, else its code's digest."""
_CELL_RUNS: dict[str, int] = {}
"""Each cell origin's execution count when it last registered (``In [N]`` in messages)."""


def current_origin() -> str | None:
    """Where a registration now comes from: the plugin being loaded (its module name), else the
    module of the code that called the registry: ``__main__`` for a script or ``python -c``, and
    for a notebook cell (code run by IPython) the cell itself (:func:`cell_origin`)."""
    if _loading:
        return _loading[-1]
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("tcclib.method.registry", __name__)):
        frame = frame.f_back
    module = frame.f_globals.get("__name__") if frame is not None else None
    return (cell_origin() or module) if module == "__main__" else module


def cell_origin() -> str | None:
    """The notebook cell IPython runs now, as an origin (None outside one): ``__main__/cell:<id>``
    with the id the frontend gives the cell (JupyterLab, Notebook: the same cell keeps it when
    edited and run again), else ``__main__/cell:code-<digest of its text>`` (papermill, a
    terminal: the same text run again is the same cell, an edited one another)."""
    ipython = sys.modules.get("IPython")  # (loaded already wherever a cell runs: never imported here)
    shell = ipython.get_ipython() if ipython is not None else None
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)  # (set while a cell runs)
    info = getattr(running, "info", None)
    if info is None:
        return None
    cell_id = getattr(info, "cell_id", None)
    digest = hashlib.sha256(str(getattr(info, "raw_cell", "")).encode()).hexdigest()[:12]
    origin = f"{CELL}{cell_id}" if cell_id else f"{CELL}code-{digest}"
    _CELL_RUNS[origin] = int(getattr(running, "execution_count", 0) or 0) if getattr(info, "store_history", 0) else 0
    return origin


def cell_place(origin: str | None) -> str | None:
    """How a message names the cell ``origin`` (None for any other origin)."""
    if not (origin or "").startswith(CELL):
        return None
    run = _CELL_RUNS.get(origin)
    where = f"the notebook cell run as In [{run}]" if run else "a notebook cell"
    if origin.startswith(f"{CELL}code-"):
        return f"{where} (no cell id: an edited cell counts as another)"
    return where


def ensure_loaded() -> None:
    """Fill the registry, once per process, in this order:

    1. the built-in rules, methods and baselines (:mod:`tcclib.method.builtins`);
    2. the plugins of installed packages' entry points (group :data:`ENTRY_POINTS`), in the order
       :func:`importlib.metadata.entry_points` lists them;
    3. the plugins ``$TCC_PLUGINS`` names (:data:`ENV`), left to right.

    Plugins loaded later by a caller (a parameter file's ``plugins:``, ``--plugin``,
    :func:`load`, ``tcclib.load_plugins``) come after these.  Every query of the registry
    calls this first, so no answer comes from a half-filled registry.  A failure (a plugin
    missing or broken) is a :class:`PluginError` raised again each time the registry is asked,
    so that no run goes on without a plugin it was told to load."""
    if _STATE["filled"] or _STATE["filling"]:
        return
    _STATE["filling"] = True
    try:
        load(BUILTINS, "built-in")
        for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
            load(entry.value.split(":")[0], f"entry point {entry.name} of the package {entry.dist.name}")
        load_many(env_specs(), f"${ENV}")
        _STATE["filled"] = True
    finally:
        _STATE["filling"] = False


def env_specs(environ=None) -> list[str]:
    """The plugins ``TCC_PLUGINS`` names."""
    value = (os.environ if environ is None else environ).get(ENV, "")
    return [s.strip() for s in value.split(os.pathsep) if s.strip()]


def hint() -> str:
    """The end of an unknown-name message: the plugins looked in and how to add one."""
    names = ", ".join(Path(p.name).name for p in _LOADED.values() if p.module != BUILTINS)
    return (
        f" (looked in the built-ins{', ' + names if names else ''}; a method of your own: load its file with "
        f"'plugins: [path/to/rule.py]' in the parameter file, --plugin path/to/rule.py, ${ENV}, or "
        f"tcclib.load_plugins('path/to/rule.py'))"
    )


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a file (ends in ``.py`` or has a path separator) rather than a module."""
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def load(spec, origin: str = "python", base: Path | None = None) -> Plugin:
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


def load_many(specs, origin: str = "python", base: Path | None = None) -> list[Plugin]:
    """:func:`load` each of ``specs`` (a string or a list of them), in order."""
    if isinstance(specs, (str, Path)):
        specs = [specs]
    return [load(s, origin, base) for s in specs]


def _load_file(spec: str, origin: str, base: Path | None) -> Plugin:
    path = Path(spec).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = path.resolve()
    if not path.is_file():
        where = " is a folder, not a .py file" if path.is_dir() else ": no such file"
        if path.parent.exists() and not path.is_dir():
            where += f" (looked in {path.parent})"
        fix = "give the path of a .py file or a module name"
        if origin == f"${ENV}":
            fix = f"${ENV}={os.environ.get(ENV, '')!r}: set it to .py files or module names separated by {os.pathsep!r}"
        raise PluginError(f"plugin {spec}{where}; {fix}")
    try:
        text = path.read_bytes()
    except OSError as e:
        raise PluginError(f"plugin {spec}: cannot be read ({e.strerror})") from None
    digest = hashlib.sha256(text).hexdigest()[:16]
    known = _LOADED.get(str(path))
    if known is not None and known.digest == digest and not _edited_helpers(known):
        return known
    twin = next(
        (
            p
            for p in _LOADED.values()
            if p.digest == digest and Path(p.path or "").name == path.name and not _edited_helpers(p)
        ),
        None,
    )
    if twin is not None:  # the same file's copy (a worker gets it shipped and from $TCC_PLUGINS)
        _refuse_other_helpers(twin, path)
        return twin
    module_name = known.module if known else _module_name(path)
    if known is not None:  # edited: what it registered before goes, what it registers now comes
        _forget(module_name)
        for helper, _, _ in known.helpers:  # imported afresh by the plugin's import below
            _drop_cached_bytecode(sys.modules.pop(helper, None))
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    module.__cached__ = None  # (run from the text below, never from a cached bytecode file)
    sys.modules[module_name] = module
    # the text read above is what runs, and what the rule's key reads (linecache: never re-read from disk)
    source = text.decode("utf-8", "surrogateescape")
    linecache.cache[str(path)] = (len(source), None, source.splitlines(keepends=True), str(path))
    if str(path.parent) not in sys.path:  # (its own modules beside it import, now and as it runs: as a script's)
        sys.path.append(str(path.parent))
    before = set(sys.modules)
    try:
        _run(
            lambda: exec(compile(text, str(path), "exec", dont_inherit=True), module.__dict__),
            module_name,
            str(path),
            spec,
            origin,
        )
    except PluginError as e:  # (an import that found another file of the name: that is the cause to name)
        shadowed = _shadowed_helper(text, path)
        if shadowed:
            raise PluginError(shadowed) from e
        raise
    shadowed = _shadowed_helper(text, path)
    if shadowed:
        _undo(module_name)
        raise PluginError(shadowed)
    plugin = Plugin(spec, module_name, str(path), origin, digest, _helpers(set(sys.modules) - before))
    _LOADED[str(path)] = plugin
    return plugin


def _beside(module: str, folder: Path) -> Path | None:
    """The file of module ``module`` in ``folder`` (``a/b.py`` or ``a/b/__init__.py``), None if none."""
    base = folder.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_modules(text: bytes) -> dict[str, str]:
    """The modules a plugin's text imports (``import helpers``, ``from helpers import f``, at
    module level or in a function), among those imported now, with the file each came from."""
    try:
        tree = ast.parse(text)
    except SyntaxError:  # (the plugin ran: its text parses; an encoding oddity leaves nothing to check)
        return {}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    out = {}
    for name in sorted(names):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            out[name] = file
    return out


def _shadowed_helper(text: bytes, path: Path) -> str:
    """The refusal of a plugin whose import took a module from elsewhere where one of that name
    lies beside it: another plugin's helper imported before from another folder, or an installed
    module (the plugin's folder comes last on ``sys.path``); a process holds one module of a name,
    so the file beside it would not be what runs.  The plugin's helpers beside it are read for
    their own imports too (a helper's ``import common``).  Empty if none."""
    todo, seen = [(text, path)], {os.path.realpath(path)}
    while todo:
        source_text, source = todo.pop()
        for name, file in _imported_modules(source_text).items():
            own = _beside(name, path.parent)
            if own is None:
                continue
            if os.path.realpath(own) != os.path.realpath(file):
                by = "" if source == path else f" (through its helper {relative_to_root(str(source))})"
                return (
                    f"plugin {relative_to_root(str(path))}: imports {name}{by}, which this process takes from "
                    f"{relative_to_root(file)}, not from {relative_to_root(str(own))} beside it (a process holds one "
                    f"module of a name: imported before, or installed): give one of the two files another name, "
                    f"or load the plugins in separate runs"
                )
            if os.path.realpath(own) not in seen:
                seen.add(os.path.realpath(own))
                todo.append((own.read_bytes(), own))
    return ""


def _refuse_other_helpers(twin: Plugin, path: Path) -> None:
    """A copy of a loaded plugin's text (``path``) is that plugin only where its helpers beside it
    are the same files' text (or absent, as for a copy shipped to a worker); otherwise one line."""
    for name, file, digest in twin.helpers:
        own = _beside(name, path.parent)
        if own is not None and os.path.realpath(own) != os.path.realpath(file) and _file_digest(str(own)) != digest:
            raise PluginError(
                f"plugin {relative_to_root(str(path))}: the same text as {relative_to_root(twin.path or '')}, loaded "
                f"already, but its helper {relative_to_root(str(own))} differs from {relative_to_root(file)} that "
                f"runs (a process holds one module of a name): rename one of the two plugins and its helper, or "
                f"load them in separate runs"
            )


def _helpers(names) -> tuple[tuple[str, str, str], ...]:
    """The user's own modules among ``names`` (not installed, not tcclib's), with their files' digests."""
    out = []
    for name in sorted(names):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file and keyed.is_followed(name) and os.path.isfile(file):
            out.append((name, file, _file_digest(file)))
    return tuple(out)


def _drop_cached_bytecode(module) -> None:
    """Remove a user module's cached bytecode, so that importing it again reads its file: Python
    takes the cache as current when the file's modification second and size are unchanged (an
    edit within a second that keeps the size would otherwise be missed)."""
    cached = getattr(module, "__cached__", None)
    if cached:
        with contextlib.suppress(OSError):
            os.remove(cached)


def _edited_helpers(plugin: Plugin) -> bool:
    return any(not os.path.isfile(file) or _file_digest(file) != digest for _, file, digest in plugin.helpers)


def _file_digest(file: str) -> str:
    return hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16]


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
        _run(lambda: importlib.import_module(spec), spec, found.origin, spec, origin)
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
        ("flush denormal", _flushes_denormals, torch.set_flush_denormal),
        *(
            (f"torch.backends.{owner}.{name}", *_attribute(module, name))
            for owner, module in (
                ("mkldnn", torch.backends.mkldnn),
                ("cudnn", torch.backends.cudnn),
                ("cuda.matmul", torch.backends.cuda.matmul),
            )
            for name in _BACKEND_FLAGS[owner]
        ),
    )
    return [(what, get(), put) for what, get, put in settings]


_BACKEND_FLAGS = {
    "mkldnn": ("enabled",),
    "cudnn": ("enabled", "benchmark", "deterministic", "allow_tf32"),
    "cuda.matmul": ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"),
}
"""torch's backend switches a plugin's import must leave as it found them (each may change what
training computes, and no key holds them)."""


def _attribute(owner, name: str) -> tuple:
    """``(get, set)`` of the attribute ``name`` of ``owner``."""
    return (lambda: getattr(owner, name), lambda value: setattr(owner, name, value))


def _flushes_denormals() -> bool:
    """Whether the CPU flushes denormal floats to zero (``torch.set_flush_denormal``, which has no
    getter): a denormal times one comes back zero."""
    import torch  # deferred: as in _torch_state

    return (torch.tensor([1e-39]) * 1.0).item() == 0.0


def _restore_torch(before: list) -> list[str]:
    """Set back every torch setting that differs from ``before``; ``what was -> is`` of each."""
    changed = []
    for (what, old, put), (_, new, _) in zip(before, _torch_state(), strict=True):
        if new != old:
            changed.append(f"{what} {old} -> {new}")
            put(old)
    return changed


def _run(action, module_name: str, path: str | None, spec: str, origin: str = "python") -> None:
    """Run a plugin's import with this module told who registers; any error becomes one line
    naming the file and the line where it happened.  A plugin that changes torch's global state
    at import (:data:`_TORCH_STATE`) is refused, and the state set back."""
    before = _torch_state()
    try:
        with registering_as(module_name):
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
        raise PluginError(_failure_line(e, path, spec) + undefined_name_fix(e, path, origin)) from e
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
    _forget(module_name)
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
    where = (relative_to_root(path) if path else spec) + (f", line {line}" if line else "")
    return f"plugin {where}: {type(error).__name__}: {message}".rstrip(": ") + _raised_in_helper(error, path)


def _raised_in_helper(error: BaseException, path: str | None) -> str:
    """`` (in helpers.py, line 7)``: where in another file of the user's (a module the plugin
    imports) the error arose; empty when it arose in the plugin itself or in installed code."""
    if isinstance(error, SyntaxError):
        file, line = error.filename, error.lineno
    else:
        own = [f for f in traceback.extract_tb(error.__traceback__) if keyed.own_code_file(f.filename)]
        file, line = (own[-1].filename, own[-1].lineno) if own else (None, None)
    if not file or file.startswith("<") or (path and Path(file) == Path(path)):
        return ""
    return f" (in {relative_to_root(file)}" + (f", line {line})" if line else ")")


def undefined_name_fix(error: BaseException, path: str | None, origin: str | None = None) -> str:
    """What a :class:`NameError` raised in the plugin file ``path`` adds to its line: the file sees
    only what it defines or imports (notebook 09's rule cell, :data:`RULE_CELL`: not what the
    notebook's other cells define), and the fix; empty for any other error, and for a file that is
    not a loaded plugin (a rule defined in a cell sees the kernel's names).  ``origin``: where the
    file was loaded from (default: as :func:`load` recorded it)."""
    if not isinstance(error, NameError) or not path:
        return ""
    if origin is None:
        known = _LOADED.get(str(Path(path).resolve())) if Path(path).is_file() else None
        if known is None:
            return ""
        origin = known.origin
    name = repr(error.name) if getattr(error, "name", None) else "it"
    if origin == RULE_CELL:
        return (
            f": the rule's cell is a file of its own ({relative_to_root(path)}), without what the notebook's other "
            f"cells define: define {name} in the rule's cell, or import it there"
        )
    return f": the rule's file sees only what it defines or imports: define {name} there, or import it"


def unload(spec) -> None:
    """Forget a loaded plugin (a file's path or a module's name) and remove every entry it
    registered (a notebook or a test trying variants); the built-ins cannot be unloaded."""
    identity = str(Path(spec).expanduser().resolve()) if is_file_spec(str(spec)) else str(spec)
    plugin = _LOADED.get(identity)
    if plugin is None or plugin.module == BUILTINS:
        raise PluginError(
            f"unload: {spec} is not a loaded plugin; loaded: {', '.join(p.name for p in loaded()) or 'none'}"
        )
    _forget(plugin.module)
    del _LOADED[identity]
    sys.modules.pop(plugin.module, None)


def loaded(include_builtins: bool = False, fill: bool = True) -> list[Plugin]:
    """The plugins loaded in this process, in load order (the built-ins left out unless asked);
    ``fill=False``: those loaded so far, without filling the registry first (:func:`ensure_loaded`)."""
    if fill:
        ensure_loaded()
    return [p for p in _LOADED.values() if include_builtins or p.module != BUILTINS]


def edited_since_loaded(file: str | None) -> Plugin | None:
    """The loaded plugin of ``file`` when the file now holds other text than it loaded (what
    runs is the text it loaded), None when it does not, is not loaded, or cannot be read."""
    plugin = _LOADED.get(str(file)) if file else None
    if plugin is None:
        return None
    try:
        return plugin if _file_digest(file) != plugin.digest else None
    except OSError:
        return None


# --------------------------------------------------------------------------- plugins between processes


def user_specs() -> list[str]:
    """What another process needs to load the same user plugins: each file's absolute path, each
    module's name (the value :func:`export` puts in ``TCC_PLUGINS``)."""
    return [p.path if p.path and is_file_spec(p.spec) else p.module for p in loaded()]


def export(environ=None) -> str | None:
    """Set ``TCC_PLUGINS`` in ``environ`` (default: this process's) to this process's user
    plugins, so the kernels and workers it starts load them; returns the value (None: none)."""
    environ = os.environ if environ is None else environ
    specs = user_specs()
    if specs:
        environ[ENV] = os.pathsep.join(specs)
        return environ[ENV]
    environ.pop(ENV, None)
    return None


def shipped() -> list[tuple[str, str]]:
    """``(file name, text)`` of every user plugin loaded from a file: what a Dask unit carries to
    a worker that does not share this filesystem (a module plugin must be installed there)."""
    out = []
    for p in loaded():
        if p.path and is_file_spec(p.spec):
            out.append((Path(p.path).name, Path(p.path).read_text(encoding="utf-8")))
    return out


def for_workers() -> dict:
    """What a Dask unit carries so that its worker loads this process's user plugins: the files'
    text (``files``) and the module plugins' names (``modules``, to be installed there)."""
    modules = [p.module for p in loaded() if not (p.path and is_file_spec(p.spec))]
    return {"files": shipped(), "modules": modules}


def on_worker(payload: dict | None, folder: Path, environ=None) -> None:
    """On a worker: load what :func:`for_workers` sent (files written under ``folder``), and tell
    the kernels the worker starts (``TCC_PLUGINS``)."""
    if not payload:
        return
    install_shipped(payload.get("files", ()), folder, environ)
    load_many(payload.get("modules", ()), "shipped")
    _add_to_env(list(payload.get("modules", ())), environ)


def install_shipped(files, folder: Path, environ=None) -> list[Plugin]:
    """On a worker: write shipped plugin files (``(name, text)``) under ``folder`` (a sub-folder per
    text, so that two versions never overwrite each other), load them, and add them to
    ``TCC_PLUGINS`` in ``environ`` for the kernels the worker starts."""
    out = []
    for name, text in files:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        target = Path(folder) / digest / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
        try:
            out.append(load(str(target), "shipped"))
        except PluginError as e:
            edited = _other_text_of(name, digest, target)
            if edited is None or "already registered" not in str(e):
                raise
            raise PluginError(
                f"plugin {name}: {edited.path} changed after the run started: the run sent this worker its text "
                f"as it was then, and the worker also loaded it as it is now ({edited.origin}); run the same "
                "command again"
            ) from e
    _add_to_env([p.path for p in out], environ)
    return out


def _other_text_of(name: str, digest: str, target: Path) -> Plugin | None:
    """A loaded plugin file of the shipped file's ``name`` with another text (the user's file,
    edited after the client sent it), None if none."""
    return next(
        (
            p
            for p in _LOADED.values()
            if p.path and Path(p.path).name == name and p.digest != digest and Path(p.path) != target.resolve()
        ),
        None,
    )


def _add_to_env(specs: list, environ=None) -> None:
    """Add ``specs`` to ``TCC_PLUGINS`` in ``environ`` (default: this process's), for the kernels it starts."""
    environ = os.environ if environ is None else environ
    if specs:
        environ[ENV] = os.pathsep.join(dict.fromkeys([*env_specs(environ), *specs]))
