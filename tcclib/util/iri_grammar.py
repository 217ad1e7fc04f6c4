"""jsonschema's IRI checks, loaded at their first use instead of at ``import jsonschema``.

Executing or reading a notebook imports nbformat, and nbformat imports jsonschema. Where the
optional ``rfc3987-syntax`` package is installed (JupyterLab's ``jupyter-events`` asks for it, through
``jsonschema[format-nongpl]``), jsonschema imports it at once to register its ``iri`` and
``iri-reference`` format checks, and that import builds a Lark grammar: 2.0 s of a 2.2 s ``import
jsonschema`` on a 2-core EPYC (``python -X importtime -c "import jsonschema"``), in every process that
runs a notebook. Notebook schemas check no IRI.

:func:`defer` puts a stand-in under that name: jsonschema registers the same checks, and the real
module loads, and builds its grammar, when one of them first runs or any other of its names is read.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

NAME = "rfc3987_syntax"


class _StandIn(types.ModuleType):
    """The stand-in: ``is_valid_syntax`` (what jsonschema takes from it) and any other public name
    read from the real module, imported at that first read. Its ``__path__`` is the real package's,
    so that ``from ... import`` finds its names without loading it."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real(), name)


def _real() -> types.ModuleType:
    """The real module, imported now if the stand-in still holds its name."""
    if isinstance(sys.modules.get(NAME), _StandIn):
        del sys.modules[NAME]
    return importlib.import_module(NAME)


def _is_valid_syntax(*args, **kwargs):
    return _real().is_valid_syntax(*args, **kwargs)


def defer() -> bool:
    """Put the stand-in in place unless the module is loaded already or not installed; returns
    whether it did. Call it before the first import of jsonschema (nbformat, papermill, jupytext)."""
    if NAME in sys.modules or "jsonschema" in sys.modules:
        return False
    spec = importlib.util.find_spec(NAME)
    if spec is None:
        return False
    stand_in = _StandIn(NAME, __doc__)
    stand_in.__path__ = list(spec.submodule_search_locations or [])
    stand_in.__spec__ = spec  # (importlib.util.find_spec(NAME) answers from it, and refuses None)
    stand_in.is_valid_syntax = _is_valid_syntax
    sys.modules[NAME] = stand_in
    return True
