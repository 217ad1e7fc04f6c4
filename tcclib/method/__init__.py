"""Layer 2, the method: the registry (the one place that knows a method), validated settings,
corruption rules, XGBoost feature correlations, the stacked model, NT-Xent, the training core,
the baselines and the scikit-learn estimator.

Layering rule: modules here import only :mod:`tcclib.util`, :mod:`tcclib.data` and each other.
"""

from tcclib.util import lazy as _lazy


def __getattr__(name: str):  # tcclib.method.<module> after a bare ``import tcclib`` (PEP 562)
    return _lazy.submodule(__name__, __path__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_lazy.submodules(__path__)})
