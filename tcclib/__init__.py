"""tcclib: class-conditioned contrastive pretraining on tabular data (Cui et al., arXiv:2404.17489).

from tcclib import Config, run_dataset
run = run_dataset("breast_cancer", Config(epochs=100))
run.results.groupby("method")[["accuracy", "auroc"]].mean()

A public name loads its module when first asked for (PEP 562), and so does a layer
(``tcclib.method.registry`` after ``import tcclib``): ``import tcclib`` loads no torch.
"""

__version__ = "0.2.0"

import importlib as _importlib  # noqa: E402
import os as _os  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

from tcclib.util import started as _started  # noqa: E402, F401  (first of tcclib: when it was imported)

_CHECKOUT = _Path(__file__).resolve().parents[1]
if (_CHECKOUT / "pyproject.toml").is_file():  # a source checkout (not an installed wheel)
    # matplotlib's font cache and config go under the checkout's ignored .cache/, not ~/.cache
    # and ~/.config; kernels and sweep workers started from here inherit it
    _os.environ.setdefault("MPLCONFIGDIR", str(_CHECKOUT / ".cache" / "matplotlib"))

from tcclib.util import as_imported as _as_imported  # noqa: E402
from tcclib.util import lazy as _lazy  # noqa: E402
from tcclib.util.moved import install as _install_moved  # noqa: E402

_install_moved()  # tcclib.config, tcclib.sweep, ...: one line naming where each module moved
_as_imported.install()  # each tcclib module's names as its file made them (tcclib.artifacts.own_code)

_PUBLIC = {
    "Config": "tcclib.method.config",
    "METHODS": "tcclib.method.config",
    "RunResult": "tcclib.running.train",
    "TCCClassifier": "tcclib.method.estimator",
    "check_objective": "tcclib.method.check",
    "check_rule": "tcclib.method.check",
    "from_frame": "tcclib.data.sources",
    "list_datasets": "tcclib.data.sources",
    "load_dataset": "tcclib.data.sources",
    "load_plugins": "tcclib.method.plugins:load_many",
    "run_dataset": "tcclib.running.train",
}
"""Each public name -> the module that defines it (``module:name`` where the name differs)."""

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        return _lazy.submodule(__name__, __path__, name)  # a layer: tcclib.method, tcclib.data, ...
    module, _, attribute = _PUBLIC[name].partition(":")
    value = getattr(_importlib.import_module(module), attribute or name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_lazy.submodules(__path__)})
