"""Each tcclib module's names as its file made them: what :mod:`tcclib.artifacts.own_code` tells a
value set in this process after the import by (``tcclib.method.rules.VIEW = 512``,
``objectives.NTXent.views = 2``).

:func:`install` (run by ``import tcclib``) puts a finder first on :data:`sys.meta_path` that
lets the usual finders find each ``tcclib.*`` module and, once its file has run, keeps its
global names and the attributes of the classes it defines (:data:`AS_IMPORTED`), and the digest
of its file's bytes (:data:`SOURCE_DIGESTS`).  The loader and spec a module ends with are the usual
ones.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import types

AS_IMPORTED: dict[str, dict[str, tuple]] = {}
"""``{module name: {name: parts}}`` as its file left them: each global ``name`` and each attribute
``Class.name`` of a class the module defines, as :func:`parts` (the objects themselves are kept,
so that no id is reused)."""

SOURCE_DIGESTS: dict[str, str] = {}
"""``{module name: sha256 of its file's bytes}`` read once its file has run: a file written again
since with the same bytes (an edit undone) still holds the code that runs (:func:`source_digest`)."""

_MUTABLE = (list, dict, set, bytearray)


def parts(value) -> tuple:
    """What of ``value`` an assignment in this process could change, to compare by identity: a
    function with its code, defaults and closure's contents (``f.__defaults__ = ...``); a list,
    dict, set or array with a copy of its contents as they are (an item set in place); else the
    value itself."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, types.FunctionType):
        cells = []
        for cell in value.__closure__ or ():
            try:
                cells.append(cell.cell_contents)
            except ValueError:  # (a name not yet bound)
                cells.append(None)
        return (value, value.__code__, value.__defaults__, value.__kwdefaults__, *cells)
    if type(value) in _MUTABLE or type(value).__name__ == "ndarray":
        try:
            return (value, copy.deepcopy(value))
        except Exception:  # (contents that cannot be copied: compared by identity alone)
            return (value,)
    return (value,)


def names_of(module: types.ModuleType) -> dict[str, object]:
    """``{name: value}``: the module's globals and (as ``Class.name``) the attributes of the
    classes it defines; of the ``__dunder__`` names, only functions (``__init__``: what Python
    keeps there else, ``__doc__``, ``__dataclass_fields__``, ``__slotnames__``, is not set by a user)."""
    names = {}
    for name, value in vars(module).items():
        if _kept(name, value):
            names[name] = value
        if isinstance(value, type) and value.__module__ == module.__name__ and value.__qualname__ == name:
            names.update({f"{name}.{key}": item for key, item in vars(value).items() if _kept(key, item)})
    return names


def _kept(name: str, value) -> bool:
    return not (name.startswith("__") and name.endswith("__")) or isinstance(
        value, (types.FunctionType, staticmethod, classmethod)
    )


def remember(module: types.ModuleType) -> None:
    """Keep ``module``'s names (:func:`names_of`) as they are now, and its file's digest."""
    AS_IMPORTED[module.__name__] = {name: parts(value) for name, value in names_of(module).items()}
    digest = source_digest(getattr(module, "__file__", None))
    if digest is not None:
        SOURCE_DIGESTS[module.__name__] = digest


def source_digest(file: str | None) -> str | None:
    """The sha256 of the bytes of ``file`` (None: no file, or unreadable)."""
    if not file:
        return None
    try:
        with open(file, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


class _Remembering:
    """The usual loader of a tcclib module, which remembers the module once its file has run."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):  # (get_code, get_source, is_package...: runpy, linecache, pkgutil)
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.loader  # (the module sees its usual loader)
        self.loader.exec_module(module)
        remember(module)


class _Finder:
    """Finds ``tcclib.*`` modules with the finders after it, their loaders wrapped in :class:`_Remembering`."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if not fullname.startswith("tcclib."):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is cls or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Remembering(spec.loader)
                return spec
        return None


def install() -> None:
    """Remember every ``tcclib.*`` module imported from now on (once per process)."""
    if _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)
