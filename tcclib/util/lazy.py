"""A package's modules as its attributes, imported when first asked for (PEP 562).

``import tcclib`` loads none of the layers; ``tcclib.method.registry.method_names()`` after it
imports ``tcclib.method``, then ``tcclib.method.registry``, at the first use of each name.  Every
package of tcclib answers so (its ``__getattr__`` calls :func:`submodule`).
"""

from __future__ import annotations

import importlib
import pkgutil


def submodules(path) -> list[str]:
    """The public modules and subpackages in a package's folders ``path`` (its ``__path__``)."""
    return sorted(m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_"))


def submodule(package: str, path, name: str):
    """Module ``package.name`` (a file or folder in ``path``), imported now; an
    ``AttributeError`` as Python words it for any other name."""
    if not name.startswith("_") and name in submodules(path):
        return importlib.import_module(f"{package}.{name}")
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
