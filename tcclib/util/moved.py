"""The module paths of tcclib before its layers (0.1): importing one fails with a one-line
message naming where it moved, instead of a bare "No module named ...".

``tcclib/__init__.py`` puts :class:`MovedModules` last on ``sys.meta_path``, so it answers only
for a name no file provides.  ``python -m tcclib.sweep`` gets the same line (through runpy's
"Error while finding module specification").  The table is :data:`MOVED`; README.md's "Moved in
this release" lists the same.
"""

from __future__ import annotations

import sys

MOVED = {
    "sweep": "tcclib.running.sweep (run a sweep as: python -m tcclib PARAMS)",
    "config": "tcclib.method.config (or: from tcclib import Config)",
    "train": "tcclib.running.train (or: from tcclib import run_dataset)",
    "datasets": "tcclib.data.sources (or: from tcclib import load_dataset, list_datasets)",
    "methods": "tcclib.method.registry",
    "core": "tcclib.method.training",
    "corruption": "tcclib.method.rules",
    "reuse": "tcclib.artifacts.keys",
    "store": "tcclib.artifacts.store",
    "correlation": "tcclib.method.correlation (the importance cache: tcclib.artifacts.importances)",
    "encoding": "tcclib.data.encoding",
    "preprocess": "tcclib.data.preprocess",
    "baselines": "tcclib.method.baselines",
    "estimator": "tcclib.method.estimator (or: from tcclib import TCCClassifier)",
    "losses": "tcclib.method.losses",
    "metrics": "tcclib.method.metrics",
    "model": "tcclib.method.model",
    "scale": "tcclib.running.scale",
    "params": "tcclib.running.params",
    "nbparams": "tcclib.running.nbparams",
    "ablation": "tcclib.running.ablation",
    "own": "tcclib.running.own",
    "tables": "tcclib.paper.tables",
    "stats": "tcclib.paper.stats",
    "report": "tcclib.paper.report",
    "plots": "tcclib.paper.plots",
    "kernel": "tcclib.util.kernel",
    "paths": "tcclib.util.paths",
    "progress": "tcclib.util.progress",
    "threads": "tcclib.util.threads",
}
"""Old module (under ``tcclib.``) -> where it is now."""


def message(name: str) -> str | None:
    """The one line for old module ``name`` (``tcclib.config``), None for any other name."""
    package, _, old = name.partition(".")
    if package != "tcclib" or old not in MOVED:
        return None
    return f"No module named {name!r}: moved in tcclib 0.2.0 to {MOVED[old]} (README.md: Moved in this release)"


class MovedModules:
    """A meta path finder that turns an import of an old path into :func:`message`'s line."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        line = message(name)
        if line is not None:
            raise ModuleNotFoundError(line)  # no name=: "from tcclib import sweep" would swallow it
        return None


def install() -> None:
    """Put :class:`MovedModules` last on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModules) or f is MovedModules for f in sys.meta_path):
        sys.meta_path.append(MovedModules())
