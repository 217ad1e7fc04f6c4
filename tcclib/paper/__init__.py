"""Layer 5, the paper: the published numbers (``published/``), tables, statistics, figures and
the reproduction report.

Layering rule: modules here may import every layer below; nothing in ``tcclib`` imports them
(the notebooks and tools do).
"""

from tcclib.util import lazy as _lazy


def __getattr__(name: str):  # tcclib.paper.<module> after a bare ``import tcclib`` (PEP 562)
    return _lazy.submodule(__name__, __path__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_lazy.submodules(__path__)})
