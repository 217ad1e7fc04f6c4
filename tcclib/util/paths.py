"""Where things go: the project root, the committed reference outputs and the user's runs.

* :func:`project_root`: ``$TCC_ROOT`` when set; else the source checkout holding this package
  (the folder with ``pyproject.toml`` above ``tcclib/``); else the working directory (an
  installed package, e.g. on Colab).
* Relative paths given to the sweep or to a notebook parameter resolve against that root, never
  against the working directory (:func:`resolve`), so a notebook started from ``notebooks/``
  writes where one started from the root does.
* ``outputs/`` holds the committed reference renders and results (:func:`reference_root`);
  the sweep and the notebooks write a user's runs to ``runs/`` (:func:`runs_root`, ignored by
  git) unless told otherwise, so a run never overwrites or skips because of the references.
* The built-in parameter sets (``params/``), the notebook sources (``notebooks/``) and the
  reference numbers of the built-in sets are read from the checkout, or, in an installed package,
  from the copies its wheel carries under ``tcclib/bundle/`` (:func:`source_root`; ``setup.py``
  copies them there at build time), so ``python -m tcclib demo`` runs anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "TCC_ROOT"
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]
BUNDLE = Path(__file__).resolve().parents[1] / "bundle"
"""An installed package's copies of ``params/``, ``notebooks/`` and the built-in sets' reference
numbers (``outputs/<set>/<dataset>/results.csv`` and ``config.json``); absent in a checkout."""


def in_checkout() -> bool:
    """Whether this tcclib is a source checkout's (an editable install included), not a wheel's."""
    return (_PACKAGE_PARENT / "pyproject.toml").exists() and (_PACKAGE_PARENT / "tcclib").is_dir()


def project_root() -> Path:
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    if in_checkout():
        return _PACKAGE_PARENT
    return Path.cwd().resolve()


def source_root() -> Path:
    """Where ``params/`` and ``notebooks/`` are read: the checkout, else :data:`BUNDLE`."""
    return _PACKAGE_PARENT if in_checkout() else BUNDLE


def is_bundled(path) -> bool:
    """Whether ``path`` is one of an installed package's own copies (under :data:`BUNDLE`)."""
    return Path(path).resolve().is_relative_to(BUNDLE.resolve())


def resolve(path, root: Path | None = None) -> Path:
    """``path`` itself when absolute (``~`` expanded), else ``path`` under the project root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (root or project_root()) / p


def runs_root() -> Path:
    """Default output root of the sweep and of interactive notebook runs: ``<root>/runs``."""
    return project_root() / "runs"


def reference_root() -> Path:
    """The committed reference outputs: ``<root>/outputs``; for an installed package whose root has
    no ``outputs/``, the built-in sets' reference numbers its wheel carries (:data:`BUNDLE`)."""
    here = project_root() / "outputs"
    return here if in_checkout() or here.is_dir() else BUNDLE / "outputs"


def relative_to_root(path) -> str:
    """``path`` as a string relative to the project root when it lies under it (so a rendered
    notebook that records it re-executes in another checkout), else absolute."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(project_root()))
    except ValueError:
        return str(p)


def reference_name(path) -> str:
    """A reference folder as a message names it: relative to the project root, or, for an
    installed package's own copy, ``outputs/<set>/<dataset> (shipped with tcclib)``."""
    if is_bundled(path):
        return f"{Path(path).resolve().relative_to(BUNDLE.resolve())} (shipped with tcclib)"
    return relative_to_root(path)
