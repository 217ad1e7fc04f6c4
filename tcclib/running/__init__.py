"""Layer 4, running: training and storing one dataset (:func:`tcclib.running.train.run_dataset`),
parameter files, notebook parameters, the sweep over a parameter set, Dask scale-out, the
ablation grid and notebook 08's comparison on your own table.

Layering rule: modules here import only the layers below (:mod:`tcclib.util`,
:mod:`tcclib.data`, :mod:`tcclib.method`, :mod:`tcclib.artifacts`) and each other;
:mod:`tcclib.running.cli`, the command line, is a front door like :mod:`tcclib.__main__` (it defers
what trains to the path that trains; no module imports it back).
"""

from tcclib.util import lazy as _lazy


def __getattr__(name: str):  # tcclib.running.<module> after a bare ``import tcclib`` (PEP 562)
    return _lazy.submodule(__name__, __path__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_lazy.submodules(__path__)})
