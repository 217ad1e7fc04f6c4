"""Layer 0, utilities: where files go, progress bars, the thread budget, notebook kernels.

Layering rule: modules here import nothing from ``tcclib``.
"""

from tcclib.util import lazy as _lazy


def __getattr__(name: str):  # tcclib.util.<module> after a bare ``import tcclib`` (PEP 562)
    return _lazy.submodule(__name__, __path__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_lazy.submodules(__path__)})
