"""tcclib: class-conditioned contrastive pretraining on tabular data (Cui et al., arXiv:2404.17489).

from tcclib import Config, run_dataset
run = run_dataset("breast_cancer", Config(epochs=100))
run.results.groupby("method")[["accuracy", "auroc"]].mean()
"""

__version__ = "0.2.0"

import os as _os  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

_CHECKOUT = _Path(__file__).resolve().parents[1]
if (_CHECKOUT / "pyproject.toml").is_file():  # a source checkout (not an installed wheel)
    # matplotlib's font cache and config go under the checkout's ignored .cache/, not ~/.cache
    # and ~/.config; kernels and sweep workers started from here inherit it
    _os.environ.setdefault("MPLCONFIGDIR", str(_CHECKOUT / ".cache" / "matplotlib"))

from tcclib.util.moved import install as _install_moved  # noqa: E402

_install_moved()  # tcclib.config, tcclib.sweep, ...: one line naming where each module moved

from tcclib.data import sources as _sources  # noqa: E402
from tcclib.data.sources import from_frame, list_datasets, load_dataset  # noqa: E402
from tcclib.method import registry as _registry  # noqa: E402
from tcclib.method import rules as _rules  # noqa: E402
from tcclib.method import training as _training  # noqa: E402
from tcclib.method.check import check_rule  # noqa: E402
from tcclib.method.config import METHODS, Config  # noqa: E402
from tcclib.method.estimator import TCCClassifier  # noqa: E402
from tcclib.method.plugins import load_many as load_plugins  # noqa: E402
from tcclib.running.train import RunResult, run_dataset  # noqa: E402
from tcclib.util import errors as _errors  # noqa: E402
from tcclib.util import threads as _threads  # noqa: E402

# tcclib's own errors say what to change in their message: in a notebook kernel (and on the
# command line, tcclib/__main__.py) they end with that line, their traceback saved to a file
# (tcclib.running.folders adds its SweepError when it is imported)
_errors.register_short(
    _errors.ConfigError,
    _sources.DatasetError,
    _sources.DataUnavailableError,
    _registry.RegistryError,
    _rules.RuleContractError,
    _threads.ThreadsError,
    _training.TrainingDiverged,
)

__all__ = [
    "Config",
    "METHODS",
    "RunResult",
    "TCCClassifier",
    "check_rule",
    "from_frame",
    "list_datasets",
    "load_dataset",
    "load_plugins",
    "run_dataset",
]
