"""Validated experiment settings whose defaults are the paper's published values.

Each setting is declared once, on its field of :class:`Config` (one line: ``name: type =
setting(default, help=..., key=..., stage=..., ...)``, :mod:`tcclib.method.settings`); validation,
the content-key lists, the store's lists, the estimator's parameters, ``python -m tcclib --help``,
``docs/parameters.md`` and the notebooks' parameter cells come from these lines.

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
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tcclib.method import registry, settings
from tcclib.method.registry import BASELINES, METHODS
from tcclib.method.settings import (
    AUTO,
    ESTIMATOR,
    FILE,
    IMPORTANCE,
    MEMBER,
    NAMES,
    NONE,
    NOTEBOOK,
    OPT_IN_IMPORTANCE,
    PRETRAINED,
    RULE,
    SPLIT,
    STEP,
    SWITCH,
    VARIANT,
    UnkeyedSettingError,
    setting,
)
from tcclib.util.errors import ConfigError

PAPER_SEEDS = (614579, 336466, 974761, 450967, 743562, 843198, 502837, 328984)
MAX_SEED = 2**32 - 1
"""The largest seed: scikit-learn's and NumPy's ``random_state`` take 0 .. 2**32 - 1."""

# The methods and baselines are declared once, in tcclib.method.registry (the registry); these names are
# live views of it (a method registered later is in METHODS at once).

PAPER_METHODS = registry.LiveNames(registry.paper_methods)
"""The paper's six methods (the default ``Config.methods``; a live view of the registry):
``class_most_published``, the authors' flipped run, and the baselines are extra."""

_ALL = (FILE, NOTEBOOK, ESTIMATOR)
"""Where a setting that the estimator also takes may be set."""


def _refuse_unknown(cls, names_given) -> None:
    """A :class:`ConfigError` naming every name in ``names_given`` that is no setting of ``cls``,
    each with the closest setting's name."""
    names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
    unknown = [k for k in names_given if k not in names]
    if unknown:
        msgs = []
        for k in unknown:
            close = difflib.get_close_matches(str(k), names, n=1)
            msgs.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(f"unknown setting(s): {', '.join(msgs)}")


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ConfigError(msg)


def variant_name(method: str, head: str) -> str:
    """A method (or baseline) under ``head`` as the tables and notebook 08 name it: ``method+head``,
    or the method itself under the paper's ``frozen`` head."""
    return method if head == "frozen" else f"{method}+{head}"


def split_variant(name: str) -> tuple[str, str]:
    """The method and head of a :func:`variant_name` (``"random+probe"`` -> ``("random", "probe")``;
    a plain name's head is ``frozen``)."""
    method, plus, head = name.partition("+")
    return method, (head if plus else "frozen")


@dataclass(frozen=True)
class Config:
    """All settings of one dataset run.  Defaults are the published values.

    Each field is declared once, here (:func:`tcclib.method.settings.setting`): adding a setting
    is one line below and its use; ``docs/parameters.md`` and the notebooks' parameter cells are
    generated from these lines (``make notebooks``)."""

    # fmt: off
    seeds: tuple[int, ...] = setting(PAPER_SEEDS, help="the paper's 8 seeds: one split, labeled subset and initialisation each", key=SPLIT, stage="run")  # noqa: E501
    methods: tuple[str, ...] = setting(factory=registry.paper_methods, shown="the paper's six methods", help="pretraining methods: the paper's six; all: tcclib.method.registry.method_names()", key=NAMES, stage="run")  # noqa: E501
    baselines: tuple[str, ...] = setting((), help="also run baselines (same labeled rows and test split): tcclib.method.registry.baseline_names()", key=NAMES, stage="baselines")  # noqa: E501
    epochs: int = setting(500, at_least=0, notebook=100, help="contrastive epochs (paper: 500; the notebooks' 100 keeps an interactive run to minutes)", key=PRETRAINED, stage="pretraining", where=_ALL)  # noqa: E501
    batch_size: int = setting(256, at_least=1, help="rows per step (paper: 256)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    lr: float = setting(1e-3, above=0, help="Adam learning rate (paper: 1e-3)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    head_epochs: int = setting(100, at_least=1, help="epochs of the classification head on the labeled rows (paper: 100)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    pseudo_every: int = setting(10, at_least=1, help="pseudo-labels refreshed every N epochs, from epoch 0 (paper: 10)", key=RULE, stage="pretraining", where=_ALL)  # noqa: E501
    corruption_rate: float = setting(0.4, above=0, at_most=1, help="share p of the features corrupted per row, ceil(p*M) (paper: 0.4)", key=PRETRAINED, stage="pretraining", where=_ALL)  # noqa: E501
    labeled_fraction: float = setting(0.3, above=0, at_most=1, help="share of the training rows that keep their label (paper: 0.3)", key=SPLIT, stage="data")  # noqa: E501
    test_fraction: float = setting(0.2, above=0, below=1, help="share of the rows held out for testing, stratified (paper: 0.2)", key=SPLIT, stage="data")  # noqa: E501
    temperature: float = setting(1.0, above=0, help="NT-Xent temperature (paper: 1.0)", key=PRETRAINED, stage="pretraining", where=_ALL)  # noqa: E501
    corr_temperature: float = setting(0.25, above=0, help="softmax temperature of the correlation sampler (paper: 0.25)", key=RULE, stage="pretraining", where=_ALL)  # noqa: E501
    corr_normalization: str = setting("sum", choices=("minmax", "sum"), help="sum or minmax: how candidates' min-importances are normalised", key=RULE, stage="pretraining", where=_ALL)  # noqa: E501
    hidden_dim: int = setting(256, at_least=1, help="width of every encoder and head layer (paper: 256)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    encoder_depth: int = setting(4, at_least=1, help="linear layers of the encoder (paper: 4)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    head_depth: int = setting(2, at_least=1, help="linear layers of the projection and classification heads (paper: 2)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    head: str = setting("frozen", choices=("frozen", "finetune", "concat", "probe"), unless="frozen", help="the classifier on the labeled rows: frozen (the paper), finetune, concat or probe (opt-in; docs/estimator.md)", key=VARIANT, stage="classifier", where=_ALL)  # noqa: E501
    encoder_lr: float = setting(1e-4, above=0, when=("head", "finetune"), help="the encoder's learning rate under head: finetune", key=VARIANT, stage="classifier", where=_ALL)  # noqa: E501
    bias_init: float = setting(0.01, help="initial value of every bias (paper: 0.01)", key=MEMBER, stage="pretraining", where=_ALL)  # noqa: E501
    device: str = setting("cpu", help="cpu or cuda[:N]", key=MEMBER, stage="compute", where=_ALL)  # noqa: E501
    matmul_precision: str = setting("highest", choices=("highest", "high", "medium", "bf16"), help="highest (exact float32), high or medium (torch's bf16/TF32 inside matmuls), or bf16 (opt-in)", key=MEMBER, stage="compute", where=_ALL)  # noqa: E501
    compile: str = setting("auto", choices=("auto", "off", "cuda_graph", "torch_compile"), help="auto (the step as a CUDA graph on a GPU, eager on the CPU), off, cuda_graph or torch_compile", key=STEP, stage="compute")  # noqa: E501
    draws: str = setting("auto", choices=("auto", "generator", "counter"), unless="generator", resolve=lambda c: "counter" if c.device.startswith("cuda") else "generator", help="where pretraining's random numbers come from: auto (counter on a GPU, generator on the CPU), generator (each member's torch generator: every committed result) or counter (counter draws, every member's at once; tcclib/method/draws.py)", key=VARIANT, stage="pretraining")  # noqa: E501
    xgb_trees: int = setting(100, at_least=1, xgb="n_estimators", help="XGBoost trees per importance model (paper: 100)", key=IMPORTANCE, stage="importance", where=_ALL)  # noqa: E501
    xgb_depth: int = setting(10, at_least=1, xgb="max_depth", help="XGBoost tree depth (paper: 10)", key=IMPORTANCE, stage="importance", where=_ALL)  # noqa: E501
    xgb_eta: float = setting(0.1, above=0, at_most=1, xgb="learning_rate", help="XGBoost learning rate (paper: 0.1)", key=IMPORTANCE, stage="importance", where=_ALL)  # noqa: E501
    xgb_subsample: float = setting(0.7, above=0, at_most=1, xgb="subsample", help="XGBoost row subsample (paper: 0.7)", key=IMPORTANCE, stage="importance", where=_ALL)  # noqa: E501
    xgb_colsample: float = setting(0.8, above=0, at_most=1, xgb="colsample_bytree", help="XGBoost column subsample per tree (paper: 0.8)", key=IMPORTANCE, stage="importance", where=_ALL)  # noqa: E501
    xgb_max_bin: int = setting(256, at_least=2, hint="XGBoost's histogram bins per feature; 256, the default, is XGBoost's own", help="XGBoost histogram bins of the importance models (256: XGBoost's default, as published; fewer: faster, opt-in)", key=OPT_IN_IMPORTANCE, stage="importance", where=_ALL)  # noqa: E501
    keep_embeddings: bool = setting(False, notebook=True, help="save the first seed's embeddings for the PCA figure", key=NONE, stage="output")  # noqa: E501
    progress: bool = setting(True, help="progress bars", key=NONE, stage="output")
    fidelity: str = setting("ours", choices=("ours", "authors"), help="ours, or authors: the authors' published code where we differ (sets the switches below)", key=SWITCH, stage="run")  # noqa: E501
    labeled_split: str = setting(AUTO, fidelity={"ours": "stratified", "authors": "random"}, help="auto (as fidelity), stratified (ours) or random (authors): the labeled subset", key=SWITCH, stage="data")  # noqa: E501
    corr_rule: str = setting(AUTO, fidelity={"ours": "direct", "authors": "authors"}, help="auto, direct (ours: Algorithm 4 as written) or authors (their rank reversal for least)", key=SWITCH, stage="pretraining")  # noqa: E501
    xgb_categorical: str = setting(AUTO, fidelity={"ours": "codes", "authors": "native"}, help="auto, codes (ours) or native (authors: enable_categorical) for importances", key=SWITCH, stage="importance")  # noqa: E501
    xgb_seed: str = setting(AUTO, fidelity={"ours": "split", "authors": "xgboost_default"}, help="auto, split (ours: the split's seed) or xgboost_default (authors: seed 0)", key=SWITCH, stage="importance")  # noqa: E501
    zero_importance: str = setting(AUTO, fidelity={"ours": "uniform", "authors": "keep"}, help="auto, uniform (ours) or keep (authors): a model with no gain", key=SWITCH, stage="importance")  # noqa: E501
    pseudo_schedule: str = setting(AUTO, fidelity={"ours": "period", "authors": "authors"}, help="auto, period (ours: epochs 0, 10, ...) or authors (0, 9, 19, ...)", key=SWITCH, stage="pretraining")  # noqa: E501
    encoder_init: str = setting(AUTO, fidelity={"ours": "shared", "authors": "per_method"}, help="auto, shared (ours: one encoder per seed) or per_method (authors)", key=SWITCH, stage="pretraining")  # noqa: E501
    # fmt: on
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
        for s in SETTINGS.values():  # (temperature=1 is 1.0: keyed alike, so its results are reused)
            v = getattr(self, s.name)
            if s.value_kind == "number" and isinstance(v, int) and not isinstance(v, bool):
                object.__setattr__(self, s.name, float(v))

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Check every field against its declaration (type, range, allowed values), then what
        ties fields together; a :class:`ConfigError` naming the field."""
        self._validate_members()
        for s in SETTINGS.values():
            if s.value_kind != "list":
                settings.check_value(s, getattr(self, s.name))
        _check(
            isinstance(self.device, str) and settings.DEVICE.fullmatch(self.device) is not None,
            f"device: 'cpu', 'cuda' or 'cuda:N' (N: the GPU's index), got {self.device!r}",
        )
        self._validate_fidelity()

    def _validate_members(self) -> None:
        """Seeds, methods and baselines: known, distinct, in range; the settings their rules and
        factories read are fields."""
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
                raise ConfigError(
                    f"methods: unknown method {m!r}{hint}; known: {', '.join(METHODS)}{registry.plugin_hint()}"
                )
            check_reads(f"methods: {m!r}: its rules' or objective's ", METHODS[m].key_parts()[:2])
        _check(len(set(self.methods)) == len(self.methods), "methods: duplicates")
        for b in self.baselines:
            if not isinstance(b, str) or b not in BASELINES:
                close = difflib.get_close_matches(str(b), list(BASELINES), n=2)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise ConfigError(
                    f"baselines: unknown baseline {b!r}{hint}; known: {', '.join(BASELINES)}{registry.plugin_hint()}"
                )
            check_reads(f"baselines: {b!r}: its factory's ", (registry.get(b).settings, ()))
        _check(len(set(self.baselines)) == len(self.baselines), "baselines: duplicates")

    def _validate_fidelity(self) -> None:
        if self.effective("corr_rule") == "authors" and self.corr_normalization != "sum":
            origin = ", set by fidelity: authors" if self.corr_rule == AUTO else ""
            raise ConfigError(
                f"corr_rule 'authors' (the authors' Algorithm 4 code{origin}) "
                f"divides the min-importances by their sum; corr_normalization={self.corr_normalization!r} "
                "contradicts it: use corr_normalization: sum, or corr_rule: direct"
            )

    # ------------------------------------------------------------------ values in force
    def effective(self, name: str) -> Any:
        """The value in force of setting ``name``: a fidelity switch's ``"auto"`` resolved by
        ``fidelity``, another ``"auto"`` by its declaration's ``resolve``; else the value itself."""
        if name not in SETTINGS:
            raise KeyError(f"{name!r} is not a setting; known: {', '.join(SETTINGS)}")
        v, decl = getattr(self, name), SETTINGS[name]
        if v == AUTO and decl.fidelity is not None:
            return decl.fidelity[self.fidelity]
        if v == AUTO and decl.resolve is not None:
            return decl.resolve(self)
        return v

    def fidelity_settings(self) -> dict[str, str]:
        """Every fidelity switch's value in force."""
        return {n: self.effective(n) for n in FIDELITY_SWITCHES}

    def departures(self, names=None) -> dict[str, str]:
        """The switches (of ``names``, default all) whose value in force is not this project's
        default, i.e. what differs from ``fidelity: ours``; empty for the defaults.  Content keys
        add only these, so the keys of default runs stay what they were."""
        names = FIDELITY_SWITCHES if names is None else names
        return {n: self.effective(n) for n in names if self.effective(n) != FIDELITY_SWITCHES[n]["ours"]}

    def importance_approximations(self) -> dict[str, Any]:
        """The opt-in importance approximations in force (declared ``key=OPT_IN_IMPORTANCE``, e.g.
        ``xgb_max_bin`` off XGBoost's default 256): what importance content keys add, and nothing
        at the defaults, so that the published runs' keys stay what they were."""
        return {
            n: getattr(self, n)
            for n, s in SETTINGS.items()
            if s.key == OPT_IN_IMPORTANCE and getattr(self, n) != s.default_value()
        }

    def keyed(self, name: str) -> bool:
        """Whether the ``key=VARIANT`` setting ``name`` enters the member key: its declaration's
        ``when`` (another setting's value in force) holds, or its value in force is not ``unless``."""
        s = SETTINGS[name]
        if s.when is not None:
            return self.effective(s.when[0]) == s.when[1]
        return self.effective(name) != s.unless

    def variants(self, pretrains: bool = True) -> dict[str, Any]:
        """The opt-in variants in force (declared ``key=VARIANT``): what member content keys add
        (a pretraining variant only to the members that pretrain), each at its value in force,
        and nothing at the defaults, so that the published runs' keys stay what they were."""
        return {
            n: self.effective(n)
            for n, s in SETTINGS.items()
            if s.key == VARIANT and (pretrains or s.stage != "pretraining") and self.keyed(n)
        }

    def head_variant(self) -> dict[str, Any]:
        """The opt-in head variant in force (``head`` off ``frozen``, with ``encoder_lr`` for
        ``finetune``): the classifier's part of :meth:`variants`."""
        return {n: v for n, v in self.variants().items() if SETTINGS[n].stage == "classifier"}

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
        return self.effective("draws")

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

    def corrupted_count(self, n_features: int, checked: bool = True) -> int:
        """ceil(p * M) features corrupted per row; an error if none is left intact.

        With fewer than 2 features no rate can help (ceil(p * 1) = 1 = M for every p > 0): the
        error says corruption needs 2 features.  With M >= 2 the error names the largest rate
        that leaves a feature intact, (M - 1) / M.  ``checked`` False (for a where rule whose
        count varies by row and never reads this one): the count, at most M, and no error.
        """
        if not checked:
            return min(max(math.ceil(self.corruption_rate * n_features - 1e-9), 1), max(n_features, 1))
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

    def seen_by_members(self, specs, reader: str) -> KeyedSettings:
        """These settings as a user's rule or objective of the methods ``specs`` (their
        :class:`~tcclib.method.registry.MethodSpec`) reads them: :class:`KeyedSettings` over what
        every one of their members' content keys holds (:func:`member_keyed`); ``reader`` names
        it in the error (``how rule 'mine' (mine.py)``)."""
        return KeyedSettings(self, member_keyed(self, specs), reader, "its class's settings (settings = ({!r},))")

    def seen_by_baseline(self, entry, reader: str) -> KeyedSettings:
        """These settings as a user's baseline factory (``entry``: its registry entry) reads them:
        :class:`KeyedSettings` over its declared settings and the split's (what its key holds)."""
        return KeyedSettings(self, baseline_keyed(entry), reader, "register_baseline's settings (settings=[{!r}])")

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out["seeds"] = list(self.seeds)
        out["methods"] = list(self.methods)
        out["baselines"] = list(self.baselines)
        return out


SETTINGS = settings.declarations(Config)
"""Every setting's declaration, by name, in field order (:class:`tcclib.method.settings.Setting`)."""


def names(key: str | None = None, stage: str | None = None, where: str | None = None) -> tuple[str, ...]:
    """The settings declared with ``key``, ``stage`` and ``where`` (each None: any), in field order."""
    return tuple(
        n
        for n, s in SETTINGS.items()
        if (key is None or s.key == key) and (stage is None or s.stage == stage) and (where is None or where in s.where)
    )


FIDELITY_SWITCHES: dict[str, dict[str, str]] = {n: dict(s.fidelity) for n, s in SETTINGS.items() if s.fidelity}
"""Each switch's value under ``fidelity: ours`` and ``fidelity: authors`` (declared on its field;
see :func:`tcclib.paper.report.deviations` for what each one changes):

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

XGB_SETTINGS = {n: s.xgb for n, s in SETTINGS.items() if s.xgb}
"""The published XGBoost settings: Config field -> XGBoost parameter (declared on the fields).
The xgboost baseline and the importance models (:mod:`tcclib.method.correlation`) read them;
they enter the baseline's and the importance's content keys in this order."""


def xgb_parameters(cfg) -> dict:
    """XGBoost's parameters for the :data:`XGB_SETTINGS` of ``cfg``."""
    return {parameter: getattr(cfg, name) for name, parameter in XGB_SETTINGS.items()}


XGB_MAX_BIN = SETTINGS["xgb_max_bin"].default
"""``Config.xgb_max_bin``'s default: XGBoost's own ``max_bin`` for ``hist`` trees, which the
published settings (and the authors' code) leave at it.  Fewer bins make the importance models
faster (an opt-in approximation, README's deviations table); the default keeps every key."""

MATMUL_PRECISIONS = SETTINGS["matmul_precision"].choices
"""``Config.matmul_precision``: the first three are torch's float32 matmul precisions
(:func:`torch.set_float32_matmul_precision`); ``bf16`` runs the encoders' and heads' matrix
products under bfloat16 autocast (:func:`tcclib.method.model.autocast`), opt-in."""

COMPILE_MODES = SETTINGS["compile"].choices
"""``Config.compile``: how the contrastive step (gather, forward, NT-Xent, backward, Adam) runs.
``auto`` (the default): captured as a CUDA graph on a GPU, eager on the CPU; ``off``: eager
everywhere; ``cuda_graph``: captured on a GPU, eager (the fallback) on the CPU;
``torch_compile``: through :func:`torch.compile` (opt-in; on the CPU it does not pay,
``docs/performance.md``).  See :meth:`Config.step_mode`."""

DRAWS = SETTINGS["draws"].choices
"""``Config.draws``: where pretraining's random numbers (data order, masks, donors, the pseudo-label
heads' row orders) come from (:mod:`tcclib.method.draws`).  ``generator``: each member's own
``torch.Generator``, one call per member (every committed result); ``counter``: counter draws
(splitmix64 of member, epoch, stream and position), every member's in one set of operations, the
same bits on the CPU and a GPU, capturable with the whole epoch; ``auto`` (the default):
``counter`` on a GPU, ``generator`` on the CPU.  See :meth:`Config.draw_scheme`."""

HEADS = SETTINGS["head"].choices
"""``Config.head``: how the classifier on the labeled rows uses the encoder
(:func:`tcclib.method.heads.fit_classifier`).  ``frozen`` (the paper, the default): the
encoder is frozen and a fresh head trains on its embeddings; ``finetune`` (opt-in): the encoder
trains together with the head on the labeled rows, at its own learning rate ``encoder_lr``;
``concat`` (opt-in): the encoder is frozen and the head reads its embedding concatenated with
the row's preprocessed features (the encoder's one-hot/z-scored input); ``probe`` (opt-in): the
encoder is frozen and a logistic regression reads the embedding and the features, its design and
strength chosen by cross-validation on the labeled rows (:mod:`tcclib.method.probe`)."""

LATER_SETTINGS = tuple(n for n, s in SETTINGS.items() if s.later)
"""Settings added after the first stored runs (keyed only off the value those ran at): a
stored ``config.json`` without one ran at its default."""


def defaults() -> dict[str, Any]:
    """Every setting's default, from the declarations (no registry needed: ``methods`` is left
    to :class:`Config`, whose default is the registry's paper methods)."""
    return {n: s.default for n, s in SETTINGS.items() if s.factory is None}


def notebook_defaults() -> dict[str, Any]:
    """The settings whose notebook default is not :class:`Config`'s (interactive runs)."""
    return {n: s.notebook for n, s in SETTINGS.items() if s.notebook_differs}


def cli_help() -> str:
    """The command line's help on the settings a parameter file's ``config:`` takes (``python -m
    tcclib --help``), from the declarations."""
    return settings.cli_lines(SETTINGS)


def check_reads(what_reads: str, reads) -> None:
    """The settings and switches a method's rules (or a baseline's factory) read, ``reads`` =
    ``(settings, switches)``, must be declared settings and switches (checked here: the registry
    sits below the declarations); a :class:`ConfigError` starting with ``what_reads`` otherwise."""
    for what, names, known in (("settings", reads[0], SETTINGS), ("switches", reads[1], FIDELITY_SWITCHES)):
        bad = [n for n in names if n not in known]
        if bad:
            close = {n: difflib.get_close_matches(n, list(known), n=1) for n in bad}
            hint = "; ".join(f"{n!r}" + (f" (did you mean {c[0]!r}?)" if c else "") for n, c in close.items())
            raise ConfigError(f"{what_reads}{what} names that are not Config fields: {hint}")


# --------------------------------------------------------------------------- what user code may read


def member_keyed(cfg: Config, specs) -> frozenset[str]:
    """The settings that the content key of every pretrained member of ``specs`` holds by its
    value in force (:func:`tcclib.artifacts.keys.member_key`): every member's and every
    pretrained member's, the split's (``stage="data"``), those its rules and objective declare
    (:meth:`~tcclib.method.registry.MethodSpec.key_parts`) and ``encoder_init``, the variants
    whose condition holds under ``cfg`` (off their default they enter the key) and, for a method
    that reads the correlations, the importance models' settings and switches."""
    always = {n for n, s in SETTINGS.items() if s.key in (MEMBER, PRETRAINED) or s.stage == "data"}
    always |= {"encoder_init"}
    always |= {n for n, s in SETTINGS.items() if s.key == VARIANT and (s.when is None or cfg.keyed(n))}
    found = None
    for spec in specs:
        declared, switches, _ = spec.key_parts()
        held = always | set(declared) | set(switches)
        if spec.needs_importance:
            held |= set(names(stage="importance"))
        found = held if found is None else found & held
    return frozenset(always if found is None else found)


def baseline_keyed(entry) -> frozenset[str]:
    """The settings a user baseline's content key holds (:func:`tcclib.artifacts.keys.baseline_key`):
    those it declares, and the split's (``stage="data"``)."""
    return frozenset(set(entry.settings) | set(names(stage="data")))


class KeyedSettings:
    """A run's :class:`Config` as a user's rule, objective or baseline factory reads it: each
    setting of ``names`` (what its results' content keys hold) at its value in force
    (:meth:`Config.effective`: a switch's ``auto`` resolved); reading any other field raises
    :class:`~tcclib.method.settings.UnkeyedSettingError` in one line naming ``reader``, the
    setting, the line that read it and the fix (``declare``: where to name it), since a run at
    another value would otherwise reuse its results.  Config's methods run on the view, so what
    they read is checked too (``corrupted_count`` reads ``corruption_rate``, every pretrained
    member's).  Read-only.  It holds the keyed settings' values alone, not the Config, so that no
    route (``vars()``, ``__dict__``, pickling) reaches a setting the keys do not hold."""

    __slots__ = ("_values", "_names", "_reader", "_declare")

    def __init__(self, config: Config | None, names, reader: str, declare: str, values: dict | None = None):
        names = frozenset(names)
        if values is None:
            values = {n: config.effective(n) if n in SETTINGS else getattr(config, n) for n in names & _FIELDS}
        for slot, value in zip(self.__slots__, (types.MappingProxyType(dict(values)), names, reader, declare)):
            object.__setattr__(self, slot, value)

    def __getattr__(self, name: str):
        if name in _FIELDS:
            if name not in self._names:
                raise UnkeyedSettingError(self._refusal(name))
            return self._values[name]
        if name == "__dict__":  # (vars(cfg): every setting at once)
            raise UnkeyedSettingError(
                f"{self._reader} read every setting at once (vars() or __dict__){_caller_line(self._reader)}, which "
                f"its results' content keys do not all hold, so a run at another value of one of them would reuse "
                f"them: read each setting by its name, declaring those it needs in {self._declare.format('name')}"
            )
        found = getattr(Config, name)  # (an unknown name: Config's AttributeError)
        if isinstance(found, property):
            return found.fget(self)
        if isinstance(found, types.FunctionType):
            return found.__get__(self)  # (its reads go through this view)
        if name.startswith("_"):  # (Config's own machinery: not a setting)
            raise AttributeError(f"a run's settings have no attribute {name!r}: read a setting by its name")
        return found  # (a constant of Config's class)

    def _refusal(self, name: str) -> str:
        return (
            f"{self._reader} read the setting {name}{_caller_line(self._reader)}, which its results' content keys "
            f"do not hold, so a run at another {name} would reuse them: declare it in {self._declare.format(name)}, "
            f"then a change of it retrains them"
        )

    def __setattr__(self, name: str, value) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: a run's settings are read-only")

    def __reduce__(self):
        return (KeyedSettings, (None, self._names, self._reader, self._declare, dict(self._values)))

    def __repr__(self) -> str:
        return f"KeyedSettings({self._reader}: {', '.join(sorted(self._names))})"


_FIELDS = frozenset(f.name for f in dataclasses.fields(Config))


def _caller_line(reader: str) -> str:
    """`` at line N`` (`` of mine.py`` where ``reader`` names another file): the innermost frame
    outside this file, the user's code that read the setting."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return ""
    file = frame.f_code.co_filename.rsplit("/", 1)[-1]
    return f" at line {frame.f_lineno}" + ("" if f"({file})" in reader else f" of {file}")
