"""Layer 1, data: dataset sources (the paper's OpenML-CC18 list, any OpenML id, your own
files and frames), ARFF/CSV reading and its checks, column types (dates: :mod:`tcclib.data.columns`),
per-seed preprocessing, tensor encoding.

Layering rule: modules here import only :mod:`tcclib.util` and each other.
"""

from tcclib.util import lazy as _lazy


def __getattr__(name: str):  # tcclib.data.<module> after a bare ``import tcclib`` (PEP 562)
    return _lazy.submodule(__name__, __path__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_lazy.submodules(__path__)})
