"""The one registry of methods and baselines: each is declared once, here.

A **method** is a pretraining recipe, a :class:`MethodSpec`: a *how* rule (which row gives each
replaced value) and a *where* rule (which features are replaced), both rule objects of
:mod:`tcclib.method.rules` registered here by name (:func:`register_rule`); a **baseline** is a
scikit-learn-style classifier trained on the same labeled rows and test split
(:mod:`tcclib.method.baselines`).  Each entry answers every question a consumer asks:

* ``label``: the name in figure legends and panel titles (:mod:`tcclib.paper.plots`);
* ``group``: ``"how"`` (how to corrupt: the paper's Tables 2-3), ``"where"`` (where to
  corrupt: Tables 4-5), ``"published"`` (the authors' flipped runs) or ``"baseline"``;
* ``tables``: the set tables it appears in (``"how"``, ``"where"``; :func:`table_methods`);
  by default the how-table for ``how`` and ``baseline`` entries, the where-table otherwise
  (``class``, the where-table's uniform-choice column, is in both);
* ``order``: its place in figures and tables; ``color``: its colour in figures;
* ``paper_columns``: the paper's column it is compared with per table kind
  (:func:`compared_columns`, :func:`column_owners`, :func:`paper_table_methods`); ``separate``:
  scored against a column another method owns (:func:`separate_methods`); ``repeats``: a
  fidelity re-run of another method, left out of rank tests (:func:`rank_repeats`);
* through its spec's rules: whether it pretrains, is pseudo-labelled, needs every row's true
  label or the importance matrices, and what enters its content key (:meth:`MethodSpec.key_parts`);
* for a baseline, ``factory(seed, cfg)`` returning an unfitted classifier, ``semi_supervised``
  (fit on every training row, unlabeled ones marked -1) and ``settings`` (the
  :class:`~tcclib.method.config.Config` fields the factory reads: part of the stored-result key).

``config.METHODS``, ``config.PAPER_METHODS``, ``config.BASELINES``, ``plots.METHOD_ORDER``,
``plots.LABELS``, ``cell_tests.SEPARATE``/``PAPER_COLUMNS``, ``stats.RANK_REPEATS`` and
``tables.HOW_METHODS``/``WHERE_METHODS``/``PAPER_NAMES`` are live views of this registry, kept
for older callers.  Adding a recombination of existing rules or a new classifier is one call::

    from tcclib.method.registry import register_method, register_baseline
    register_method("column_least", how="column", where="least", label="random + least-correlated")
    register_baseline("forest", lambda seed, cfg: RandomForestClassifier(random_state=seed))

A genuinely new corruption rule is a :class:`~tcclib.method.rules.HowRule` or
:class:`~tcclib.method.rules.WhereRule` subclass passed to :func:`register_method` (it is
registered with it); :class:`tcclib.method.training.Pretraining` dispatches to it.  See
``examples/knn_rule.py``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tcclib.method import rules
from tcclib.method.probe import TunedLogisticRegression
from tcclib.util import threads

_HOW_RULES: dict[str, rules.HowRule] = {}
"""How values are drawn, by name (:func:`register_rule`): ``none`` (no pretraining), ``column``
(the whole column: SCARF), ``pseudo`` (the anchor's pseudo-class, refreshed during pretraining),
``oracle`` (the anchor's true class)."""
_WHERE_RULES: dict[str, rules.WhereRule] = {}
"""Which features are corrupted, by name: ``uniform``, or by correlation (Algorithm 4): ``most``,
``least``."""
RULES = ("direct", "authors")
"""The correlation sampler's rules (``Config.corr_rule``; a method may fix its own)."""
GROUPS = ("how", "where", "published", "baseline")
TABLE_KINDS = ("how", "where")

# matplotlib's tab10, in the order the figures have always used
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
# tab20's lighter shades: colours for entries registered later
_MORE = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")


_SETTING_NAMES: set[str] = set()
"""The :class:`~tcclib.method.config.Config` field names, told by that module when it is
imported (this module is imported first, so it cannot ask), to check a baseline's settings."""


def know_settings(names) -> None:
    """Record the setting names a baseline may read (called by :mod:`tcclib.method.config`)."""
    _SETTING_NAMES.update(names)


class RegistryError(ValueError):
    """A registration has a bad name, a taken name, or a bad how/where/group/factory."""


def register_rule(rule, replace: bool = False):
    """Make a corruption rule (a :class:`~tcclib.method.rules.HowRule` or
    :class:`~tcclib.method.rules.WhereRule`) known by its ``name``, so that methods can name it;
    returns the rule.  Registering the same object again does nothing."""
    if isinstance(rule, rules.HowRule):
        table = _HOW_RULES
    elif isinstance(rule, rules.WhereRule):
        table = _WHERE_RULES
    else:
        raise RegistryError(
            f"register_rule: expected a rules.HowRule or rules.WhereRule object, got {type(rule).__name__}"
        )
    if not isinstance(rule.name, str) or not rule.name.isidentifier():
        raise RegistryError(f"register_rule: a rule's name must be a simple identifier, got {rule.name!r}")
    if isinstance(rule, rules.HowRule) and rule.needs not in rules.NEEDS:
        raise RegistryError(f"register_rule {rule.name!r}: needs must be one of {', '.join(rules.NEEDS)}")
    if table.get(rule.name, rule) is not rule and not replace:
        raise RegistryError(
            f"register_rule: a different rule is already called {rule.name!r}; "
            f"choose another name, or pass replace=True"
        )
    table[rule.name] = rule
    return rule


def how_rule(name: str) -> rules.HowRule:
    """The how rule called ``name``."""
    if name not in _HOW_RULES:
        raise RegistryError(f"unknown how rule {name!r}; known: {', '.join(_HOW_RULES)}")
    return _HOW_RULES[name]


def where_rule(name: str) -> rules.WhereRule:
    """The where rule called ``name``."""
    if name not in _WHERE_RULES:
        raise RegistryError(f"unknown where rule {name!r}; known: {', '.join(_WHERE_RULES)}")
    return _WHERE_RULES[name]


@dataclass(frozen=True)
class MethodSpec:
    """How and where one method corrupts: the names of its two rules, and two variations.

    how: a how rule's name (:func:`how_rule`): "none" (no pretraining), "column" (SCARF: whole
    column), "pseudo" (the anchor's pseudo-class, refreshed during pretraining), "oracle" (the
    anchor's true class), or one registered later.
    where: a where rule's name (:func:`where_rule`): "uniform", "most" or "least"
    (correlation-based, Algorithm 4).
    flipped: the authors' published behaviour for "most": their code flipped the shared
    importance matrix in place, so the run labelled "most correlated" sampled by the
    least-correlated ranking.  ``flipped=True`` reproduces that.
    rule: the correlation sampler's rule for this method whatever ``Config.corr_rule`` says
    (``"direct"``: ours, ``"authors"``: their rank reversal for "least",
    :func:`tcclib.method.rules.sampler_inputs`); None (the default): ``Config.corr_rule``'s.
    """

    how: str
    where: str = "uniform"
    flipped: bool = False
    rule: str | None = None

    def effective_rule(self, cfg) -> str:
        """The sampler rule this method's members use under ``cfg``."""
        return self.rule or cfg.effective("corr_rule")

    @property
    def draw(self) -> rules.HowRule:
        """The how rule object: what it needs, how it draws donors, its key settings."""
        return how_rule(self.how)

    @property
    def choice(self) -> rules.WhereRule:
        """The where rule object the members really sample by (the ``ranking``'s)."""
        return where_rule(self.ranking)

    @property
    def pretrain(self) -> bool:
        return self.draw.pretrains

    @property
    def pseudo_labelled(self) -> bool:
        """Whether its members corrupt within pseudo-classes (refreshed during pretraining)."""
        return self.draw.needs == rules.PSEUDO_LABELS

    @property
    def needs_true_labels(self) -> bool:
        """Whether it reads every training row's true label (the estimator cannot offer it)."""
        return self.draw.needs == rules.TRUE_LABELS

    @property
    def needs_importance(self) -> bool:
        """Whether it reads the XGBoost importance matrices (a correlation method)."""
        return self.choice.needs_importance

    @property
    def ranking(self) -> str:
        """The ranking the sampler really uses ("most"/"least"/"uniform")."""
        if self.flipped and self.where == "most":
            return "least"
        return self.where

    def key_parts(self) -> tuple[list[str], list[str], dict]:
        """What its members' content key holds besides the settings every member has: the
        :class:`~tcclib.method.config.Config` fields its rules read, the fidelity switches they
        read, and the rules' own parameters (:meth:`~tcclib.method.rules.HowRule.key_params`)."""
        how, where = self.draw, self.choice
        settings = list(how.settings) + list(where.settings)
        switches = list(how.switches) + list(where.switches)
        own = {
            name: params
            for name, params in ((self.how, how.key_params()), (self.ranking, where.key_params()))
            if params
        }
        return settings, switches, own


@dataclass(frozen=True)
class Entry:
    """One registered method (``spec`` set) or baseline (``factory`` set).

    ``paper_columns``: ``(table kind, the paper's column)`` pairs: the published column it is
    compared with in the how- and where-tables; ``separate``: it is scored against a column that
    another method (the paper's) owns, so it is reported on its own and never in the distinct
    counts; ``repeats``: the method it re-runs for fidelity (left out of rank tests beside it);
    ``about``: a few words on what it is, for the report (the label when empty)."""

    name: str
    label: str
    group: str
    order: float
    color: str
    tables: tuple[str, ...] = ()
    spec: MethodSpec | None = None
    paper: bool = False  # one of the paper's six methods (the default ``Config.methods``)
    factory: Callable[[int, Any], Any] | None = field(default=None, compare=False)
    semi_supervised: bool = False
    settings: tuple[str, ...] = ()
    paper_columns: tuple[tuple[str, str], ...] = ()
    separate: bool = False
    repeats: str | None = None
    about: str = ""

    @property
    def is_baseline(self) -> bool:
        return self.factory is not None

    def paper_column(self, kind: str) -> str | None:
        """The paper's column it is compared with in the ``kind`` table (None: none)."""
        return dict(self.paper_columns).get(kind)


_ENTRIES: dict[str, Entry] = {}


def _check_name(name, replace: bool) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise RegistryError(f"register: name must be a simple identifier (letters, digits, _), got {name!r}")
    if name in _ENTRIES and not replace:
        raise RegistryError(
            f"register: {name!r} is already registered ({_ENTRIES[name].group}); "
            f"choose another name, or pass replace=True to redefine it"
        )


def _placed(name, group, order, color, tables, default_tables) -> dict:
    if group not in GROUPS:
        raise RegistryError(f"register {name!r}: group must be one of {', '.join(GROUPS)}, got {group!r}")
    tables = tuple(default_tables if tables is None else tables)
    bad = [t for t in tables if t not in TABLE_KINDS]
    if bad:
        raise RegistryError(f"register {name!r}: tables must be among {', '.join(TABLE_KINDS)}, got {bad[0]!r}")
    if order is None:
        old = _ENTRIES.get(name)
        order = old.order if old else max((e.order for e in _ENTRIES.values()), default=0) + 1
    if color is None:
        old = _ENTRIES.get(name)
        used = {e.color for e in _ENTRIES.values()}
        color = old.color if old else next((c for c in _TAB10 + _MORE if c not in used), "gray")
    return dict(group=group, order=float(order), color=color, tables=tables)


def register_method(
    name: str,
    how,
    where="uniform",
    *,
    flipped: bool = False,
    rule: str | None = None,
    label: str | None = None,
    group: str | None = None,
    order: float | None = None,
    color: str | None = None,
    tables=None,
    paper: bool = False,
    paper_columns=None,
    separate: bool = False,
    repeats: str | None = None,
    about: str = "",
    replace: bool = False,
    replace_rule: bool = False,
) -> Entry:
    """Declare a pretraining method: a ``how`` rule and a ``where`` rule, each a registered
    rule's name (:func:`register_rule`) or a rule object (registered here).  It is then valid in
    ``Config.methods``, trained by :func:`tcclib.running.train.run_dataset` and the estimator, and
    shown in the figures, the set tables (``group`` "how" -> the how-table, else the where-table;
    or ``tables=``) and the report.

    ``flipped`` and ``rule`` are :class:`MethodSpec`'s (``rule``: a correlation method's own
    sampler rule, whatever ``Config.corr_rule`` says).  ``paper_columns``: ``{table kind: the
    paper's column}`` it is compared with; ``separate``, ``repeats`` and ``about``: :class:`Entry`'s.
    Defaults: ``label`` the name, ``group`` "how" for ``where="uniform"`` else "where",
    ``order`` after every entry so far, ``color`` the first unused one.  ``replace``: redefine a
    registered method; ``replace_rule``: a rule object given here replaces a different one of
    its name (a script run again)."""
    _check_name(name, replace)
    how = _rule_name(name, how, "how", _HOW_RULES, replace_rule)
    where = _rule_name(name, where, "where", _WHERE_RULES, replace_rule)
    if not how_rule(how).pretrains and where != "uniform":
        raise RegistryError(
            f"register_method {name!r}: how={how!r} corrupts nothing, so where must be 'uniform', got {where!r}"
        )
    if rule is not None and (rule not in RULES or not where_rule(where).needs_importance):
        raise RegistryError(
            f"register_method {name!r}: rule must be None or one of {', '.join(RULES)} and "
            f"goes with a correlation method (where 'most' or 'least'), got rule {rule!r} "
            f"with where {where!r}"
        )
    columns = _paper_columns(name, paper_columns)
    group = group or ("how" if where == "uniform" else "where")
    e = Entry(
        name=name,
        label=label or name,
        spec=MethodSpec(how, where, bool(flipped), rule),
        paper=paper,
        paper_columns=columns,
        separate=bool(separate),
        repeats=repeats,
        about=about or label or name,
        **_placed(name, group, order, color, tables, ("how",) if group == "how" else ("where",)),
    )
    _ENTRIES[name] = e
    return e


def _rule_name(name: str, rule, what: str, table: dict, replace: bool) -> str:
    """The name of ``rule`` (a registered rule's name, or a rule object, registered now)."""
    if isinstance(rule, (rules.HowRule, rules.WhereRule)):
        kind = rules.HowRule if what == "how" else rules.WhereRule
        if not isinstance(rule, kind):
            raise RegistryError(f"register_method {name!r}: {what} must be a {kind.__name__}, got {rule!r}")
        return register_rule(rule, replace).name
    if rule not in table:
        raise RegistryError(
            f"register_method {name!r}: {what} must be one of {', '.join(table)}, got {rule!r} "
            f"(a new rule: a {'HowRule' if what == 'how' else 'WhereRule'} object of tcclib/method/rules.py, "
            f"see examples/knn_rule.py)"
        )
    return rule


def _paper_columns(name: str, columns) -> tuple[tuple[str, str], ...]:
    columns = dict(columns or {})
    bad = [kind for kind in columns if kind not in TABLE_KINDS]
    if bad:
        raise RegistryError(f"register_method {name!r}: paper_columns kinds must be among {', '.join(TABLE_KINDS)}")
    return tuple(columns.items())


def register_baseline(
    name: str,
    factory: Callable[[int, Any], Any],
    *,
    semi_supervised: bool = False,
    settings=(),
    label: str | None = None,
    order: float | None = None,
    color: str | None = None,
    tables=None,
    replace: bool = False,
) -> Entry:
    """Declare a baseline: ``factory(seed, cfg)`` returns an unfitted classifier with ``fit``,
    ``predict_proba`` and ``classes_`` (scikit-learn's interface).  It is fitted on the labeled
    rows (renumbered 0..c-1), or, with ``semi_supervised``, on every training row with the
    unlabeled ones marked -1.  ``settings``: the :class:`~tcclib.method.config.Config` fields the
    factory reads (a change to them retrains it).  It is then valid in ``Config.baselines``."""
    _check_name(name, replace)
    return _add_baseline(name, factory, semi_supervised, settings, label, order, color, tables, check=True)


def _add_baseline(name, factory, semi_supervised, settings, label, order, color, tables, check) -> Entry:
    if not callable(factory):
        raise RegistryError(
            f"register_baseline {name!r}: factory must be a callable (seed, cfg) -> "
            f"classifier, got {type(factory).__name__}"
        )
    if isinstance(settings, str):
        raise RegistryError(
            f"register_baseline {name!r}: settings must be a list of Config fields, e.g. settings=[{settings!r}]"
        )
    bad = []
    if check and _SETTING_NAMES:  # the built-ins are registered before Config exists
        bad = [s for s in settings if s not in _SETTING_NAMES]
    if bad:
        raise RegistryError(f"register_baseline {name!r}: settings {bad} are not Config fields")
    e = Entry(
        name=name,
        label=label or name,
        factory=factory,
        semi_supervised=bool(semi_supervised),
        settings=tuple(settings),
        **_placed(name, "baseline", order, color, tables, ("how",)),
    )
    _ENTRIES[name] = e
    return e


def unregister(name: str) -> None:
    """Remove an entry (for tests and notebooks that registered a trial method)."""
    if name not in _ENTRIES:
        raise RegistryError(f"unregister: {name!r} is not registered; registered: {', '.join(_ENTRIES)}")
    del _ENTRIES[name]


# --------------------------------------------------------------------------- queries


def entries(group: str | None = None) -> list[Entry]:
    """All entries (or one group's) in their order."""
    return sorted((e for e in _ENTRIES.values() if group is None or e.group == group), key=lambda e: e.order)


def get(name: str) -> Entry:
    if name not in _ENTRIES:
        close = difflib.get_close_matches(str(name), list(_ENTRIES), n=2)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise RegistryError(f"unknown method or baseline {name!r}{hint}; registered: {', '.join(order())}")
    return _ENTRIES[name]


def method_names() -> list[str]:
    """The pretraining methods (not baselines), in order."""
    return [e.name for e in entries() if not e.is_baseline]


def baseline_names() -> list[str]:
    return [e.name for e in entries("baseline")]


def paper_methods() -> tuple[str, ...]:
    """The paper's six methods (``Config``'s default ``methods``)."""
    return tuple(e.name for e in entries() if e.paper)


def order() -> list[str]:
    """Every method and baseline, in the figures' and tables' order."""
    return [e.name for e in entries()]


def sort(names) -> list[str]:
    """``names`` in registry order; unregistered names after them, as given."""
    names = list(dict.fromkeys(names))
    pos = {n: i for i, n in enumerate(order())}
    return sorted((n for n in names if n in pos), key=pos.get) + [n for n in names if n not in pos]


def label(name: str) -> str:
    e = _ENTRIES.get(name)
    return e.label if e else str(name)


def labels() -> dict[str, str]:
    return {e.name: e.label for e in entries()}


def colors() -> dict[str, str]:
    return {e.name: e.color for e in entries()}


def table_methods(kind: str, present=None) -> list[str]:
    """The methods and baselines of a set table (``"how"`` or ``"where"``), in order; only
    those in ``present`` when given."""
    if kind not in TABLE_KINDS:
        raise RegistryError(f"table kind must be one of {', '.join(TABLE_KINDS)}, got {kind!r}")
    out = [e.name for e in entries() if kind in e.tables]
    return out if present is None else [m for m in out if m in set(present)]


def with_group(*groups: str, present=None) -> list[str]:
    """Names of the given groups, in order; only those in ``present`` when given."""
    out = [e.name for e in entries() if e.group in groups]
    return out if present is None else [m for m in out if m in set(present)]


def compared_columns(kind: str) -> dict[str, str]:
    """``{method: the paper's column}`` of every method compared with the paper in the ``kind``
    table (``"how"``: Tables 2-3, ``"where"``: Tables 4-5), in order, the separate ones included."""
    return {e.name: e.paper_column(kind) for e in entries() if e.paper_column(kind)}


def paper_table_methods(kind: str) -> list[str]:
    """The methods that own a column of the paper's ``kind`` table (the separate ones left out), in order."""
    return [e.name for e in entries() if e.paper_column(kind) and not e.separate]


def column_owners(kind: str | None = None) -> dict[str, str]:
    """``{the paper's column: our method}`` of the ``kind`` table (both kinds by default): the
    method that owns the column, never a separate one."""
    kinds = TABLE_KINDS if kind is None else (kind,)
    return {e.paper_column(k): e.name for k in kinds for e in entries() if e.paper_column(k) and not e.separate}


def separate_methods() -> tuple[str, ...]:
    """The methods scored against a column another method owns (reported on their own)."""
    return tuple(e.name for e in entries() if e.separate)


def rank_repeats() -> dict[str, str]:
    """``{method: the method it re-runs}`` (fidelity re-runs, left out of rank tests beside it)."""
    return {e.name: e.repeats for e in entries() if e.repeats}


def pseudo_labelled(names) -> list[str]:
    """Those of ``names`` that are pseudo-labelled methods."""
    return [m for m in names if m in _ENTRIES and not _ENTRIES[m].is_baseline and _ENTRIES[m].spec.pseudo_labelled]


# --------------------------------------------------------------------------- live views


class _MethodsView(Mapping):
    """``config.METHODS``: name -> :class:`MethodSpec` of every registered method, live."""

    def __getitem__(self, name):
        e = _ENTRIES.get(name)
        if e is None or e.is_baseline:
            raise KeyError(name)
        return e.spec

    def __iter__(self):
        return iter(method_names())

    def __len__(self):
        return len(method_names())

    def __repr__(self):
        return f"METHODS({dict(self)!r})"


class _NamesView(Sequence):
    """A live tuple-like list of registry names (``config.BASELINES``, ``plots.METHOD_ORDER``)."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, i):
        return self._fn()[i]

    def __len__(self):
        return len(self._fn())

    def __contains__(self, x):
        return x in self._fn()

    def __iter__(self):
        return iter(self._fn())

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (list, tuple, Sequence)) else NotImplemented

    def __repr__(self):
        return repr(tuple(self._fn()))


LiveNames = _NamesView


class LiveMapping(Mapping):
    """A live read-only mapping computed by ``fn()`` from the registry at each use (module
    constants such as ``cell_tests.PAPER_COLUMNS`` that follow registrations made later)."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, key):
        return self._fn()[key]

    def __iter__(self):
        return iter(self._fn())

    def __len__(self):
        return len(self._fn())

    def __repr__(self):
        return repr(self._fn())


class _LabelsView(Mapping):
    """``plots.LABELS``: name -> label of the methods (baselines are shown by name), live."""

    def __getitem__(self, name):
        e = _ENTRIES.get(name)
        if e is None:
            raise KeyError(name)
        return e.label

    def __iter__(self):
        return iter(order())

    def __len__(self):
        return len(_ENTRIES)


METHODS = _MethodsView()
BASELINES = _NamesView(baseline_names)
ORDER = _NamesView(order)
LABELS = _LabelsView()
HOWS = _NamesView(lambda: tuple(_HOW_RULES))
"""The how rules' names (a live view)."""
WHERES = _NamesView(lambda: tuple(_WHERE_RULES))
"""The where rules' names (a live view)."""


# --------------------------------------------------------------------------- the built-in entries


XGB_SETTINGS = {
    "xgb_trees": "n_estimators",
    "xgb_depth": "max_depth",
    "xgb_eta": "learning_rate",
    "xgb_subsample": "subsample",
    "xgb_colsample": "colsample_bytree",
}
"""The published XGBoost settings, once: :class:`~tcclib.method.config.Config` field -> XGBoost's
parameter.  The xgboost baseline and the importance models (:mod:`tcclib.method.correlation`) read
them; they enter the baseline's and the importance's content keys (:mod:`tcclib.artifacts.keys`,
:mod:`tcclib.artifacts.importances`) in this order.  (Here, not in ``config``: the registry is
imported first and the xgboost baseline's settings are these.)"""


def xgb_parameters(cfg) -> dict:
    """XGBoost's parameters for the :data:`XGB_SETTINGS` of ``cfg``."""
    return {parameter: getattr(cfg, field) for field, parameter in XGB_SETTINGS.items()}


def _xgboost(seed, cfg):
    from xgboost import XGBClassifier  # deferred: XGBoost loads only when a model is fitted

    return XGBClassifier(
        **xgb_parameters(cfg),
        random_state=seed,
        n_jobs=threads.n_jobs(),
        tree_method="hist",
        verbosity=0,
    )


def _logreg(seed, cfg):
    from sklearn.linear_model import LogisticRegression  # deferred: scikit-learn loads only when this runs

    return LogisticRegression(max_iter=2000)


def _logreg_cv(seed, cfg):
    """Logistic regression with its strength chosen by stratified cross-validation on the
    labeled rows, folds seeded by the split (:class:`tcclib.method.probe.TunedLogisticRegression`:
    the ``probe`` head's procedure on the features alone)."""
    return TunedLogisticRegression(random_state=seed)


def _self_training(seed, cfg):
    from sklearn.linear_model import LogisticRegression  # deferred: scikit-learn loads only when this runs
    from sklearn.semi_supervised import SelfTrainingClassifier  # deferred: scikit-learn loads only when this runs

    return SelfTrainingClassifier(LogisticRegression(max_iter=2000), threshold=0.9)


# long on purpose: a declaration list, one entry per built-in rule, method and baseline
def _builtins() -> None:
    for rule in (
        rules.NoPretraining(),
        rules.SameLabel("column"),
        rules.SameLabel("pseudo", rules.PSEUDO_LABELS, settings=("pseudo_every",), switches=("pseudo_schedule",)),
        rules.SameLabel("oracle", rules.TRUE_LABELS),
        rules.Uniform(),
        rules.Correlated("most"),
        rules.Correlated("least"),
    ):
        register_rule(rule)
    m = register_method
    m(
        "no_pretrain",
        "none",
        label="no pretraining",
        order=1,
        color=_TAB10[0],
        paper=True,
        paper_columns={"how": "no_pretrain"},
    )
    m("random", "column", label="random (SCARF)", order=2, color=_TAB10[1], paper=True, paper_columns={"how": "random"})
    m(
        "class",
        "pseudo",
        label="class-conditioned (pseudo)",
        order=3,
        color=_TAB10[2],
        paper=True,
        tables=("how", "where"),
        paper_columns={"how": "class", "where": "random_features"},
    )
    m(
        "oracle",
        "oracle",
        label="oracle (true labels)",
        order=4,
        color=_TAB10[3],
        paper=True,
        paper_columns={"how": "oracle"},
    )
    m(
        "class_least",
        "pseudo",
        "least",
        label="class + least-correlated",
        order=5,
        color=_TAB10[4],
        paper=True,
        paper_columns={"where": "least_correlated"},
    )
    m(
        "class_most",
        "pseudo",
        "most",
        label="class + most-correlated",
        order=6,
        color=_TAB10[5],
        paper=True,
        paper_columns={"where": "most_correlated"},
    )
    # the authors' flipped run: scored against class_most's column, so on its own
    m(
        "class_most_published",
        "pseudo",
        "most",
        flipped=True,
        label="class + 'most' (authors' flip)",
        group="published",
        order=7,
        color=_TAB10[6],
        paper_columns={"where": "most_correlated"},
        separate=True,
        about="the authors' flipped run",
    )
    # the authors' published "most correlated" run exactly: their flip and their sampling rule,
    # whatever corr_rule says (class_most_published follows corr_rule); a fidelity re-run of it
    m(
        "class_most_published_exact",
        "pseudo",
        "most",
        flipped=True,
        rule="authors",
        label="class + 'most' (authors' flip and rule)",
        group="published",
        order=7.5,
        color=_MORE[6],
        paper_columns={"where": "most_correlated"},
        separate=True,
        repeats="class_most_published",
        about="the authors' flipped run with their sampling rule exactly",
    )
    _add_baseline("xgboost", _xgboost, False, tuple(XGB_SETTINGS), None, 8, _TAB10[7], None, check=False)
    _add_baseline("logreg", _logreg, False, (), None, 9, _TAB10[8], None, check=False)
    _add_baseline("logreg_cv", _logreg_cv, False, (), None, 9.5, "#6b6ecf", None, check=False)
    _add_baseline("self_training", _self_training, True, (), None, 10, _TAB10[9], None, check=False)


_builtins()
