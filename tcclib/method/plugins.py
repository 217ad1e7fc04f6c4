"""Plugins: the code that registers rules, methods and baselines, loaded the same way everywhere.

A plugin is a Python file (``myrule.py``) or an importable module (``mypackage.rules``) whose
import registers entries (:func:`tcclib.method.registry.register_method`,
:func:`~tcclib.method.registry.register_baseline`).  The built-ins are one
(:mod:`tcclib.method.builtins`).  The registry loads them itself, in the order
:func:`tcclib.method.registry.ensure_loaded` states (the built-ins, installed packages' entry
points, ``$TCC_PLUGINS``), before its first answer; this module holds the names a caller loads
plugins by (:func:`load`, :func:`load_many`, :func:`unload`: the registry's) and how plugins move
to the notebook kernels and Dask workers a run starts.  A user's plugin reaches a process by any of:

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

import hashlib
import os
from pathlib import Path

from tcclib.method import registry
from tcclib.method.registry import (
    BUILTINS,
    ENTRY_POINTS,
    ENV,
    Plugin,
    PluginError,
    ensure_loaded,
    env_specs,
    is_file_spec,
    loaded,
)

__all__ = [
    "BUILTINS",
    "ENTRY_POINTS",
    "ENV",
    "Plugin",
    "PluginError",
    "ensure_loaded",
    "env_specs",
    "export",
    "for_workers",
    "hint",
    "install_shipped",
    "is_file_spec",
    "load",
    "load_many",
    "loaded",
    "on_worker",
    "shipped",
    "unload",
    "user_specs",
]

load = registry.load_plugin
"""Load one plugin (:func:`tcclib.method.registry.load_plugin`)."""
load_many = registry.load_plugins
"""Load several plugins in order (:func:`tcclib.method.registry.load_plugins`)."""
unload = registry.unload_plugin
"""Forget a plugin and what it registered (:func:`tcclib.method.registry.unload_plugin`)."""
hint = registry.plugin_hint
"""The end of an unknown-name message (:func:`tcclib.method.registry.plugin_hint`)."""


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
    environ = os.environ if environ is None else environ
    current = [s for s in environ.get(ENV, "").split(os.pathsep) if s]
    if payload.get("modules"):
        environ[ENV] = os.pathsep.join(dict.fromkeys(current + list(payload["modules"])))


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
        out.append(load(str(target), "shipped"))
    environ = os.environ if environ is None else environ
    mine = [p.path for p in out]
    current = [s for s in environ.get(ENV, "").split(os.pathsep) if s]
    environ[ENV] = os.pathsep.join(dict.fromkeys(current + mine))
    return out
