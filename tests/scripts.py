"""The project's scripts (bench/, tools/) as modules, for the tests that call their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(relative: str):
    """The script ``relative`` to the repository (``tools/stack_bits.py``) as a module, named by its
    file's stem and put in ``sys.modules`` (a dataclass of its own looks its module up there)."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
