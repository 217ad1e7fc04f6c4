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
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "TCC_ROOT"
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]


def project_root() -> Path:
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    if (_PACKAGE_PARENT / "pyproject.toml").exists() and (_PACKAGE_PARENT / "tcclib").is_dir():
        return _PACKAGE_PARENT
    return Path.cwd().resolve()


def resolve(path, root: Path | None = None) -> Path:
    """``path`` itself when absolute (``~`` expanded), else ``path`` under the project root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (root or project_root()) / p


def runs_root() -> Path:
    """Default output root of the sweep and of interactive notebook runs: ``<root>/runs``."""
    return project_root() / "runs"


def reference_root() -> Path:
    """The committed reference outputs: ``<root>/outputs``."""
    return project_root() / "outputs"


def relative_to_root(path) -> str:
    """``path`` as a string relative to the project root when it lies under it (so a rendered
    notebook that records it re-executes in another checkout), else absolute."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(project_root()))
    except ValueError:
        return str(p)
