"""Validated experiment settings whose defaults are the paper's published values.

``Config()`` is the published setting (see ``shared/paper/README.md``): 500 contrastive
epochs, batch 256, Adam 1e-3, corruption rate 0.4, labeled fraction 0.3, 8 seeds, ...
``Config.from_dict`` rejects unknown names, and every field is checked for type and range, so a
typo in a parameter file fails before anything runs: lists must be lists (``seeds: 42`` is an
error naming the fix ``seeds: [42]``, not a late "'int' object is not iterable"), seeds must fit
every library that takes them (0 to 2**32 - 1), flags must be true/false, ``device`` must be
``cpu``, ``cuda`` or ``cuda:N``.  Whether that CUDA device exists on this machine is a separate
check, :meth:`Config.check_device`, made when a parameter file is loaded.

Fidelity: ``fidelity="ours"`` (the default) runs this project's reading of the paper, with the
fixes listed in :func:`tcclib.paper.report.deviations`; ``fidelity="authors"`` reproduces the authors'
published code wherever we deliberately differ.  It only sets the default of the switches in
:data:`FIDELITY_SWITCHES`; each switch can also be set on its own (its default ``"auto"`` means
"as ``fidelity`` says"), e.g. ``Config(fidelity="authors", labeled_split="stratified")`` is the
authors' mode with our stratified labeled subset.  :meth:`Config.effective` gives a switch's
value in force.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tcclib.method import plugins, registry
from tcclib.method.registry import BASELINES, METHODS, paper_methods
from tcclib.util.errors import ConfigError

PAPER_SEEDS = (614579, 336466, 974761, 450967, 743562, 843198, 502837, 328984)
MAX_SEED = 2**32 - 1
"""The largest seed: scikit-learn's and NumPy's ``random_state`` take 0 .. 2**32 - 1."""


# The methods and baselines are declared once, in tcclib.method.registry (the registry); these names are
# live views of it (a method registered later is in METHODS at once).

XGB_SETTINGS = registry.XGB_SETTINGS
"""The published XGBoost settings: Config field -> XGBoost parameter (declared once, in the registry)."""

PAPER_METHODS = paper_methods()
"""The paper's six methods (the default ``Config.methods``): ``class_most_published``, the
authors' flipped run, and the baselines are extra."""


FIDELITIES = ("ours", "authors")
"""``fidelity``: this project's reading of the paper (default) or the authors' published code."""

AUTO = "auto"
"""A fidelity switch's default: take the value of the ``fidelity`` in force."""

FIDELITY_SWITCHES: dict[str, dict[str, str]] = {
    "labeled_split": {"ours": "stratified", "authors": "random"},
    "corr_rule": {"ours": "direct", "authors": "authors"},
    "xgb_categorical": {"ours": "codes", "authors": "native"},
    "xgb_seed": {"ours": "split", "authors": "xgboost_default"},
    "zero_importance": {"ours": "uniform", "authors": "keep"},
    "pseudo_schedule": {"ours": "period", "authors": "authors"},
    "encoder_init": {"ours": "shared", "authors": "per_method"},
}
"""Each switch's value under ``fidelity: ours`` and ``fidelity: authors`` (see
:func:`tcclib.paper.report.deviations` for what each one changes):

- ``labeled_split``: ``stratified`` labeled subset of the training rows, or ``random`` (the authors'
  ``np.random.permutation(n)[:int(0.3 n)]`` after seeding NumPy with the seed; preprocess._split);
- ``corr_rule``: ``direct`` (Algorithm 4 as written: ``softmax(-s/T)`` for "least") or
  ``authors`` (their code: "least" rank-reverses each importance row and samples by ``softmax(+s/T)``;
  rules.sampler_inputs); with ``authors`` the flipped ``class_most_published`` uses exactly
  their least rule, as their in-place flip made their "most correlated" run do;
- ``xgb_categorical``: categorical features as integer ``codes`` or XGBoost's ``native``
  categorical splits (``enable_categorical=True``; correlation.importance_matrix);
- ``xgb_seed``: each importance model seeded with the ``split``'s seed, or ``xgboost_default``
  (the authors pass no ``random_state``: XGBoost's seed 0 for every model and split);
- ``zero_importance``: a model with no gain gets a ``uniform`` row 1/(M-1), or ``keep`` its
  all-zero row (the authors);
- ``pseudo_schedule``: refresh before epochs 0, p, 2p, ... (``period``) or the ``authors``'
  0, p-1, 2p-1, ... (0-based; :meth:`Config.refresh_epochs`);
- ``encoder_init``: all methods of a seed start from one ``shared`` encoder, or each method from
  its own (``per_method``, the authors; :meth:`Config.encoder_init_tag`).
"""


def _refuse_unknown(cls, settings) -> None:
    """A :class:`ConfigError` naming every name in ``settings`` that is no setting of ``cls``, each
    with the closest setting's name."""
    names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
    unknown = [k for k in settings if k not in names]
    if unknown:
        msgs = []
        for k in unknown:
            close = difflib.get_close_matches(str(k), names, n=1)
            msgs.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(f"unknown setting(s): {', '.join(msgs)}")


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ConfigError(msg)


def _number_hint(v) -> str:
    """YAML 1.1 (PyYAML) reads ``1e-3`` (no dot) as text: say how to write it as a number."""
    if isinstance(v, str):
        try:
            float(v)
        except ValueError:
            return ""
        return " (text, not a number: YAML reads an exponent without a dot as text; write e.g. 1.0e-3)"
    return ""


XGB_MAX_BIN = 256
"""``Config.xgb_max_bin``'s default: XGBoost's own ``max_bin`` for ``hist`` trees, which the
published settings (and the authors' code) leave at it.  Fewer bins make the importance models
faster (an opt-in approximation, README's deviations table); the default keeps every key."""

MATMUL_PRECISIONS = ("highest", "high", "medium", "bf16")
"""``Config.matmul_precision``: the first three are torch's float32 matmul precisions
(:func:`torch.set_float32_matmul_precision`); ``bf16`` runs the encoders' and heads' matrix
products under bfloat16 autocast (:func:`tcclib.method.training.autocast`), opt-in."""

COMPILE_MODES = ("auto", "off", "cuda_graph", "torch_compile")
"""``Config.compile``: how the contrastive step (gather, forward, NT-Xent, backward, Adam) runs.
``auto`` (the default): captured as a CUDA graph on a GPU, eager on the CPU; ``off``: eager
everywhere; ``cuda_graph``: captured on a GPU, eager (the fallback) on the CPU;
``torch_compile``: through :func:`torch.compile` (opt-in; on the CPU it does not pay,
``docs/performance.md``).  See :meth:`Config.step_mode`."""

DRAWS = ("auto", "generator", "counter")
"""``Config.draws``: where pretraining's random numbers (data order, masks, donors, the pseudo-label
heads' row orders) come from (:mod:`tcclib.method.draws`).  ``generator``: each member's own
``torch.Generator``, one call per member (every committed result); ``counter``: counter draws, a
hash of (member, epoch, stream, position), every member's in one set of operations, the same bits
on the CPU and a GPU, capturable with the whole epoch; ``auto`` (the default): ``counter`` on a
GPU, ``generator`` on the CPU.  See :meth:`Config.draw_scheme`."""

HEADS = ("frozen", "finetune", "concat", "probe")
"""``Config.head``: how the classifier on the labeled rows uses the encoder
(:func:`tcclib.method.training.fit_classifier`).  ``frozen`` (the paper, the default): the
encoder is frozen and a fresh head trains on its embeddings; ``finetune`` (opt-in): the encoder
trains together with the head on the labeled rows, at its own learning rate ``encoder_lr``;
``concat`` (opt-in): the encoder is frozen and the head reads its embedding concatenated with
the row's preprocessed features (the encoder's one-hot/z-scored input); ``probe`` (opt-in): the
encoder is frozen and a logistic regression reads the embedding and the features, its design and
strength chosen by cross-validation on the labeled rows (:mod:`tcclib.method.probe`)."""


def variant_name(method: str, head: str) -> str:
    """A method (or baseline) under ``head`` as the tables and notebook 08 name it: ``method+head``,
    or the method itself under the paper's ``frozen`` head."""
    return method if head == "frozen" else f"{method}+{head}"


def split_variant(name: str) -> tuple[str, str]:
    """The method and head of a :func:`variant_name` (``"random+probe"`` -> ``("random", "probe")``;
    a plain name's head is ``frozen``)."""
    method, plus, head = name.partition("+")
    return method, (head if plus else "frozen")


HEAD_ONLY_SETTINGS = ("head", "encoder_lr")
"""Settings read only after pretraining, by the classifier on the labeled rows: the pretrained
encoders do not depend on them, so a kept pretraining checkpoint serves every head variant."""

ENCODER_LR = 1e-4
"""``Config.encoder_lr``'s default: the encoder's learning rate under ``head: finetune``, a tenth
of the head's ``lr`` (pretrained weights move less than a fresh head's)."""


@dataclass(frozen=True)
class Config:
    """All settings of one dataset run.  Defaults are the published values."""

    seeds: tuple[int, ...] = PAPER_SEEDS
    methods: tuple[str, ...] = PAPER_METHODS
    baselines: tuple[str, ...] = ()
    epochs: int = 500
    batch_size: int = 256
    lr: float = 1e-3
    head_epochs: int = 100
    pseudo_every: int = 10
    corruption_rate: float = 0.4
    labeled_fraction: float = 0.3
    test_fraction: float = 0.2
    temperature: float = 1.0
    corr_temperature: float = 0.25
    corr_normalization: str = "sum"
    hidden_dim: int = 256
    encoder_depth: int = 4
    head_depth: int = 2
    head: str = "frozen"
    encoder_lr: float = ENCODER_LR
    bias_init: float = 0.01
    device: str = "cpu"
    matmul_precision: str = "highest"
    compile: str = "auto"
    draws: str = "auto"
    xgb_trees: int = 100
    xgb_depth: int = 10
    xgb_eta: float = 0.1
    xgb_subsample: float = 0.7
    xgb_colsample: float = 0.8
    xgb_max_bin: int = XGB_MAX_BIN
    keep_embeddings: bool = False
    progress: bool = True
    fidelity: str = "ours"
    labeled_split: str = AUTO
    corr_rule: str = AUTO
    xgb_categorical: str = AUTO
    xgb_seed: str = AUTO
    zero_importance: str = AUTO
    pseudo_schedule: str = AUTO
    encoder_init: str = AUTO
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __new__(cls, *args: Any, **kw: Any) -> Config:
        # before the generated __init__: a misspelled keyword gets from_dict's one-line suggestion
        _refuse_unknown(cls, [k for k in kw if k != "extra"])
        return super().__new__(cls)

    def __post_init__(self) -> None:
        # normalise lists from YAML into tuples; a single value where a list belongs is an error
        # (tuple("random") would silently become the methods 'r', 'a', 'n', ...)
        for name, example in (
            ("seeds", "[614579, 336466]"),
            ("methods", "[random, class]"),
            ("baselines", "[xgboost]"),
        ):
            v = getattr(self, name)
            if not isinstance(v, (list, tuple, range)):
                single = isinstance(v, (str, int)) and not isinstance(v, bool)
                raise ConfigError(
                    f"{name}: expected a list, got {type(v).__name__} {v!r}; write it as "
                    f"a list, e.g. {name}: {f'[{v}]' if single else example}"
                )
            object.__setattr__(self, name, tuple(v))
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Check every field's type and range; a :class:`ConfigError` naming the field."""
        self._validate_members()
        self._validate_integers()
        self._validate_numbers()
        self._validate_choices()
        self._validate_fidelity()

    def _validate_members(self) -> None:
        """Seeds, methods and baselines: known, distinct, in range."""
        _check(len(self.seeds) > 0, "seeds: give at least one seed")
        for s in self.seeds:
            _check(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0, f"seeds: {s!r} is not a non-negative integer"
            )
            _check(
                s <= MAX_SEED,
                f"seeds: {s} is too large: a seed must be an integer from 0 to "
                f"{MAX_SEED} (2**32 - 1), the range scikit-learn and NumPy accept",
            )
        _check(len(set(self.seeds)) == len(self.seeds), "seeds: duplicates")
        _check(len(self.methods) > 0, "methods: give at least one method")
        for m in self.methods:
            if not isinstance(m, str) or m not in METHODS:
                close = difflib.get_close_matches(str(m), METHODS, n=2)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise ConfigError(f"methods: unknown method {m!r}{hint}; known: {', '.join(METHODS)}{plugins.hint()}")
        _check(len(set(self.methods)) == len(self.methods), "methods: duplicates")
        for b in self.baselines:
            if not isinstance(b, str) or b not in BASELINES:
                close = difflib.get_close_matches(str(b), list(BASELINES), n=2)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise ConfigError(
                    f"baselines: unknown baseline {b!r}{hint}; known: {', '.join(BASELINES)}{plugins.hint()}"
                )
        _check(len(set(self.baselines)) == len(self.baselines), "baselines: duplicates")

    def _validate_integers(self) -> None:
        """The whole-number settings: integers, in range."""
        for name in (
            "epochs",
            "head_epochs",
            "batch_size",
            "pseudo_every",
            "hidden_dim",
            "encoder_depth",
            "head_depth",
            "xgb_trees",
            "xgb_depth",
            "xgb_max_bin",
        ):
            v = getattr(self, name)
            _check(
                isinstance(v, int) and not isinstance(v, bool),
                f"{name}: expected an integer, got {type(v).__name__} {v!r}",
            )
        _check(self.epochs >= 0, f"epochs: must be >= 0, got {self.epochs}")
        _check(self.head_epochs >= 1, f"head_epochs: must be >= 1, got {self.head_epochs}")
        for name in ("batch_size", "pseudo_every", "hidden_dim", "xgb_trees", "xgb_depth"):
            _check(getattr(self, name) >= 1, f"{name}: must be >= 1, got {getattr(self, name)}")
        _check(self.encoder_depth >= 1 and self.head_depth >= 1, "encoder_depth/head_depth: must be >= 1")
        _check(
            self.xgb_max_bin >= 2,
            f"xgb_max_bin: must be >= 2 (XGBoost's histogram bins per feature; "
            f"{XGB_MAX_BIN}, the default, is XGBoost's own), got {self.xgb_max_bin}",
        )

    def _validate_numbers(self) -> None:
        """The real-valued settings: finite numbers, in range."""
        for name in (
            "lr",
            "corruption_rate",
            "labeled_fraction",
            "test_fraction",
            "temperature",
            "corr_temperature",
            "bias_init",
            "encoder_lr",
            "xgb_eta",
            "xgb_subsample",
            "xgb_colsample",
        ):
            v = getattr(self, name)
            _check(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
                f"{name}: expected a finite number, got {v!r}" + _number_hint(v),
            )
        _check(self.lr > 0, f"lr: must be > 0, got {self.lr}")
        self._validate_head()
        _check(self.temperature > 0 and self.corr_temperature > 0, "temperatures must be > 0")
        for name in ("corruption_rate", "labeled_fraction", "xgb_eta", "xgb_subsample", "xgb_colsample"):
            v = getattr(self, name)
            _check(0 < v <= 1, f"{name}: must be in (0, 1], got {v}")
        _check(0 < self.test_fraction < 1, f"test_fraction: must be in (0, 1), got {self.test_fraction}")

    def _validate_choices(self) -> None:
        """The settings that take one of a few values, the flags and the device."""
        _check(
            self.corr_normalization in ("minmax", "sum"),
            f"corr_normalization: 'minmax' or 'sum', got {self.corr_normalization!r}",
        )
        _check(
            self.matmul_precision in MATMUL_PRECISIONS,
            f"matmul_precision: 'highest' (exact float32, the default), 'high' or 'medium' "
            f"(bfloat16/TF32 inside float32 matmuls where torch's kernels offer it: AMX CPUs, GPUs), "
            f"or 'bf16' (the networks' products in bfloat16 with float32 weights, optimiser and "
            f"loss: about 2x on CPUs with AVX512_BF16 or AMX and on GPUs), got {self.matmul_precision!r}",
        )
        _check(
            self.compile in COMPILE_MODES,
            f"compile: 'auto' (a CUDA graph on a GPU, eager on the CPU; the default), 'off' (eager), "
            f"'cuda_graph' or 'torch_compile', got {self.compile!r}",
        )
        _check(
            self.draws in DRAWS,
            f"draws: 'auto' (counter draws on a GPU, each member's generator on the CPU; the default), "
            f"'generator' (each member's torch generator: the committed results) or 'counter' (counter-based "
            f"draws, every member's at once), got {self.draws!r}",
        )
        for name in ("keep_embeddings", "progress"):
            v = getattr(self, name)
            _check(isinstance(v, bool), f"{name}: expected true or false, got {type(v).__name__} {v!r}")
        _check(
            isinstance(self.device, str) and re.fullmatch(r"cpu|cuda(:\d+)?", self.device) is not None,
            f"device: 'cpu', 'cuda' or 'cuda:N' (N: the GPU's index), got {self.device!r}",
        )

    def _validate_head(self) -> None:
        _check(self.encoder_lr > 0, f"encoder_lr: must be > 0, got {self.encoder_lr}")
        if not isinstance(self.head, str) or self.head not in HEADS:
            close = difflib.get_close_matches(str(self.head), HEADS, n=1)
            raise ConfigError(
                f"head: 'frozen' (the paper: a head on the frozen encoder's embedding, the default), "
                f"'finetune' (the encoder trains with the head on the labeled rows, at encoder_lr), "
                f"'concat' (a head on the embedding and the preprocessed features) or 'probe' (a logistic "
                f"regression on both, tuned by cross-validation on the labeled rows), got {self.head!r}"
                + (f" (did you mean {close[0]!r}?)" if close else "")
            )

    def _validate_fidelity(self) -> None:
        if not isinstance(self.fidelity, str) or self.fidelity not in FIDELITIES:
            close = difflib.get_close_matches(str(self.fidelity), FIDELITIES, n=1)
            raise ConfigError(
                f"fidelity: 'ours' (this project's reading of the paper, the default) or "
                f"'authors' (the authors' published code), got {self.fidelity!r}"
                + (f" (did you mean {close[0]!r}?)" if close else "")
            )
        for name, values in FIDELITY_SWITCHES.items():
            v = getattr(self, name)
            allowed = [AUTO, *values.values()]
            if not isinstance(v, str) or v not in allowed:
                close = difflib.get_close_matches(str(v), allowed, n=1)
                raise ConfigError(
                    f"{name}: one of {', '.join(repr(a) for a in allowed)} ('auto': as fidelity says; "
                    f"{values['ours']!r} under fidelity 'ours', {values['authors']!r} under 'authors'), "
                    f"got {v!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                )
        if self.effective("corr_rule") == "authors" and self.corr_normalization != "sum":
            origin = ", set by fidelity: authors" if self.corr_rule == AUTO else ""
            raise ConfigError(
                f"corr_rule 'authors' (the authors' Algorithm 4 code{origin}) "
                f"divides the min-importances by their sum; corr_normalization={self.corr_normalization!r} "
                "contradicts it: use corr_normalization: sum, or corr_rule: direct"
            )

    # ------------------------------------------------------------------ fidelity
    def effective(self, name: str) -> str:
        """The value in force of the fidelity switch ``name`` (``"auto"`` resolved by ``fidelity``)."""
        if name not in FIDELITY_SWITCHES:
            raise KeyError(f"{name!r} is not a fidelity switch; known: {', '.join(FIDELITY_SWITCHES)}")
        v = getattr(self, name)
        return FIDELITY_SWITCHES[name][self.fidelity] if v == AUTO else v

    def fidelity_settings(self) -> dict[str, str]:
        """Every fidelity switch's value in force."""
        return {n: self.effective(n) for n in FIDELITY_SWITCHES}

    def departures(self, names=None) -> dict[str, str]:
        """The switches (of ``names``, default all) whose value in force is not this project's
        default, i.e. what differs from ``fidelity: ours``; empty for the defaults.  Content keys
        add only these, so the keys of default runs stay what they were."""
        names = FIDELITY_SWITCHES if names is None else names
        return {n: self.effective(n) for n in names if self.effective(n) != FIDELITY_SWITCHES[n]["ours"]}

    def importance_approximations(self) -> dict[str, int]:
        """The opt-in importance approximations in force (``xgb_max_bin`` off XGBoost's default
        256): what importance content keys add, and nothing at the defaults, so that the published
        runs' keys stay what they were."""
        return {"xgb_max_bin": self.xgb_max_bin} if self.xgb_max_bin != XGB_MAX_BIN else {}

    def head_variant(self) -> dict[str, Any]:
        """The opt-in head variant in force (``head`` off ``frozen``, with ``encoder_lr`` for
        ``finetune``): what member content keys add, and nothing at the default, so that the
        published runs' keys stay what they were."""
        if self.head == "frozen":
            return {}
        return {"head": self.head, "encoder_lr": self.encoder_lr} if self.head == "finetune" else {"head": self.head}

    def refresh_epochs(self, epochs: int | None = None) -> tuple[int, ...]:
        """0-based pretraining epochs at whose start the pseudo-labels are (re)computed.

        ``pseudo_schedule: period`` (ours): 0, p, 2p, ... below ``epochs`` (p = ``pseudo_every``;
        50 label sets of 10 epochs each for the published 500 epochs).  ``authors``: the labels
        made before pretraining (0), then the authors' refresh at the start of the 1-based epochs
        i = p, 2p, ... <= epochs (``training.train_contrastive_loss``: ``i % p == 0``), i.e. before
        the 0-based epochs p-1, 2p-1, ...: 0, 9, 19, ..., 499 for the published settings, 51 label
        sets, the first used for 9 epochs, the last for one.  No pretraining epochs, no refresh.
        """
        epochs = self.epochs if epochs is None else int(epochs)
        if epochs <= 0:
            return ()
        p = self.pseudo_every
        if self.effective("pseudo_schedule") == "period":
            return tuple(range(0, epochs, p))
        return tuple(sorted({0, *range(p - 1, epochs, p)}))

    def encoder_init_tag(self, method: str) -> str:
        """The tag of the generator that initialises ``method``'s encoder (and projection head)
        for a seed (``train.member_seed(seed, tag)``): ``"init"`` for every method under
        ``encoder_init: shared`` (ours: all methods of a seed start from the same weights),
        ``"init:<method>"`` under ``per_method`` (the authors build one network per method, each
        drawn in turn from the seeded global generator: different starting weights per method)."""
        _check(method in METHODS, f"unknown method {method!r}; known: {', '.join(METHODS)}")
        return "init" if self.effective("encoder_init") == "shared" else f"init:{method}"

    def step_mode(self) -> str:
        """How the contrastive step runs here: ``"eager"``, ``"cuda_graph"`` (``compile`` auto or
        cuda_graph on a CUDA device) or ``"torch_compile"``.  A CUDA graph asked for on the CPU
        falls back to eager, with the same results bit for bit."""
        cuda = self.device.startswith("cuda")
        if self.compile in ("auto", "cuda_graph"):
            return "cuda_graph" if cuda else "eager"
        return "eager" if self.compile == "off" else "torch_compile"

    def draw_scheme(self) -> str:
        """Where the views' random numbers come from here: ``"generator"`` or ``"counter"``
        (``draws: auto``: counter on a CUDA device, generator on the CPU)."""
        if self.draws == "auto":
            return "counter" if self.device.startswith("cuda") else "generator"
        return self.draws

    def check_device(self) -> None:
        """A :class:`ConfigError` when ``device`` names a CUDA device this machine does not have.

        Separate from :meth:`validate` (a setting can be valid for another machine); the
        parameter files call it when they are loaded, so ``python -m tcclib FILE --check``
        says so before anything runs."""
        if not self.device.startswith("cuda"):
            return
        import torch  # deferred: torch takes seconds to import

        index = int(self.device.split(":")[1]) if ":" in self.device else 0
        if not torch.cuda.is_available():
            raise ConfigError(
                f"device: {self.device!r} but no CUDA device is visible here "
                f"(torch {torch.__version__}); use device: cpu, or run on a machine with a GPU"
            )
        n = torch.cuda.device_count()
        if index >= n:
            raise ConfigError(
                f"device: {self.device!r} but only {n} CUDA device(s) are visible (cuda:0 .. cuda:{n - 1})"
            )

    def corrupted_count(self, n_features: int) -> int:
        """ceil(p * M) features corrupted per row; an error if none is left intact.

        With fewer than 2 features no rate can help (ceil(p * 1) = 1 = M for every p > 0): the
        error says corruption needs 2 features.  With M >= 2 the error names the largest rate
        that leaves a feature intact, (M - 1) / M.
        """
        if n_features < 2:
            raise ConfigError(
                f"corruption needs at least 2 features, got {n_features}: with one feature every "
                f"corruption_rate replaces it (ceil(p x 1) = 1), so none is left intact and no rate can "
                "help; add features, or train without pretraining (methods=['no_pretrain'])"
            )
        k = math.ceil(self.corruption_rate * n_features - 1e-9)
        if k >= n_features:
            raise ConfigError(
                f"corruption_rate={self.corruption_rate} corrupts {k} of {n_features} features: "
                f"no feature is left intact; lower the rate to at most {n_features - 1}/{n_features} "
                f"(e.g. {math.floor((n_features - 1) / n_features * 1000) / 1000:g})"
            )
        return max(k, 1)

    # ------------------------------------------------------------------ build
    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Config:
        """Settings from a mapping (a parameter file's ``config:``); None means the defaults."""
        if d is not None and not isinstance(d, Mapping):
            raise ConfigError(
                f"expected a mapping of settings, e.g. {{epochs: 5, seeds: [1, 2]}}, got {type(d).__name__} {d!r}"
            )
        d = dict(d or {})
        _refuse_unknown(cls, d)
        return cls(**d)

    def replace(self, **kw: Any) -> Config:
        return Config.from_dict({**self.to_dict(), **kw})

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out["seeds"] = list(self.seeds)
        out["methods"] = list(self.methods)
        out["baselines"] = list(self.baselines)
        return out


registry.know_settings(f.name for f in dataclasses.fields(Config))
plugins.enable()  # from here on, the registry's first answer loads $TCC_PLUGINS and entry points
