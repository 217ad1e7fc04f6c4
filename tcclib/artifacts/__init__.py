"""Layer 3, artifacts: content keys (what a stored result was computed from), the dataset
folder's file layout with its crash-safe writes, the importance cache and checkpoints.

Layering rule: modules here import only :mod:`tcclib.util`, :mod:`tcclib.data`,
:mod:`tcclib.method` and each other.
"""

from tcclib.util import lazy as _lazy


def __getattr__(name: str):  # tcclib.artifacts.<module> after a bare ``import tcclib`` (PEP 562)
    return _lazy.submodule(__name__, __path__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_lazy.submodules(__path__)})
