"""The one registry of methods and baselines: each is declared once, here.

A **method** is a pretraining recipe, a :class:`MethodSpec`: a *how* rule (which row gives each
replaced value) and a *where* rule (which features are replaced), both rule objects of
:mod:`tcclib.method.rules` registered here by name (:func:`register_rule`); a **baseline** is a
scikit-learn-style classifier trained on the same labeled rows and test split
(:mod:`tcclib.method.baselines`).  Each entry answers every question a consumer asks: its
label, group, set tables, order, colour and the paper's columns (:class:`Entry`); through its
spec's rules, what it needs and what enters its content key (:class:`MethodSpec`); for a
baseline, its factory and the settings it reads (:func:`register_baseline`).

``config.METHODS``, ``config.PAPER_METHODS``, ``config.BASELINES``, ``plots.METHOD_ORDER``,
``plots.LABELS``, ``cell_tests.SEPARATE``/``PAPER_COLUMNS``, ``stats.RANK_REPEATS`` and
``tables.HOW_METHODS``/``WHERE_METHODS``/``PAPER_NAMES`` are live views of this registry, kept
for older callers.  Adding a recombination of existing rules or a new classifier is one call::

    from tcclib.method.registry import register_method, register_baseline
    register_method("column_least", how="column", where="least", label="random + least-correlated")
    register_baseline("forest", lambda seed, cfg: RandomForestClassifier(random_state=seed))

A genuinely new corruption rule is a :class:`~tcclib.method.rules.HowRule` or
:class:`~tcclib.method.rules.WhereRule` subclass passed to :func:`register_method` (it is
registered with it); :class:`tcclib.method.pretraining.Pretraining` dispatches to it.  See
``examples/knn_rule.py``.
"""

from __future__ import annotations

import colorsys
import difflib
import importlib
import itertools
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcclib.method import identity, plugins
from tcclib.method.plugins import RegistryError, current_origin, ensure_loaded
from tcclib.util.paths import relative_to_root

if TYPE_CHECKING:  # (the layout check sees the edge; the modules load in _rules() and _objectives())
    from tcclib.method import objectives, rules


def _rules():
    """:mod:`tcclib.method.rules` (and torch), loaded with the first rule, not with the names."""
    return importlib.import_module("tcclib.method.rules")


def _objectives():
    """:mod:`tcclib.method.objectives` (and torch), loaded with the first objective."""
    return importlib.import_module("tcclib.method.objectives")


_HOW_RULES: dict[str, rules.HowRule] = {}
"""How values are drawn, by name (:func:`register_rule`): ``none`` (no pretraining), ``column``
(the whole column: SCARF), ``pseudo`` (the anchor's pseudo-class, refreshed during pretraining),
``oracle`` (the anchor's true class)."""
_WHERE_RULES: dict[str, rules.WhereRule] = {}
"""Which features are corrupted, by name: ``uniform``, or by correlation (Algorithm 4): ``most``,
``least``."""
_OBJECTIVES: dict[str, objectives.Objective] = {}
"""What the encoder learns from the views, by name (:func:`register_objective`): ``ntxent`` (the
paper's, every method's by default), ``vime``, ``dae``, ``subtab``."""
DEFAULT_OBJECTIVE = "ntxent"
"""A method's objective when it names none: its members' keys hold no objective part."""
RULES = ("direct", "authors")
"""The correlation sampler's rules (``Config.corr_rule``; a method may fix its own)."""
GROUPS = ("how", "where", "published", "baseline")
TABLE_KINDS = ("how", "where")

# Colour-blind-safe colours (tcclib.paper.style states the convention): Okabe & Ito's, black first
# and yellow left out (too pale on white), then three of Paul Tol's "muted"; in the built-ins' order
PALETTE = ("#000000", "#E69F00", "#009E73", "#0072B2", "#56B4E9", "#D55E00", "#CC79A7", "#999933", "#332288", "#44AA99")
# Tol's other "muted" colours, then Okabe & Ito's yellow: colours for entries registered later
_MORE = ("#117733", "#AA4499", "#661100", "#6699CC", "#DDCC77", "#888888", "#F0E442")
BASELINE_ORDER = 100.0
"""The baselines' places start here, so that a method registered later (placed after the last
method by default) sorts among the methods, before every baseline."""


# --------------------------------------------------------------------------- who registers
#
# The registry fills itself: every query below calls ensure_loaded() first, and the loader
# (tcclib.method.plugins) loads the built-ins and the environment's plugins once, in the order its
# ensure_loaded states; it tells the registry who registers (current_origin) and what to forget.


def _clash(kind: str, name: str, origin: str | None, users=None) -> str:
    """The refusal of a name that another place registered: both places, and the fix; empty
    when the place registering now is the same (an edited file, a cell or module run again).  A
    built-in's name takes a name of its own: for a rule or objective (``users``: the methods that
    use it), replacing it would change every method that uses the built-in, so it takes an explicit
    ``replace_rule``; a method or baseline (``users`` None) would stand beside tcclib's stored
    results of that name."""
    here, what = current_origin(), f"{kind} {name!r}"
    if origin == here or (_file_of(origin) and _file_of(origin) == _file_of(here)):
        return ""
    if origin == plugins.BUILTINS and users is None:
        return (
            f"register: {what} is one of tcclib's built-ins, and {_place(here)} registers another {kind} of that "
            f"name: give yours a name of its own (replace=True would replace tcclib's {name!r} in this process, "
            f"beside its stored results)"
        )
    if origin == plugins.BUILTINS:
        uses = f" (methods {', '.join(users)} use it)" if users else ""
        return (
            f"register: {what} is one of tcclib's built-ins{uses}, and {_place(here)} registers another object "
            f"of that name: give yours a name of its own (its name attribute), or pass replace_rule=True to "
            f"register_method (replace=True to register_rule or register_objective) to replace the built-in in "
            f"those methods too"
        )
    return (
        f"register: {what} is already registered by {_place(origin)}, and {_place(here)} registers it "
        f"again: choose another name, or pass replace=True to redefine it"
    )


def _may_replace(origins: dict, name, replace: bool, replace_rule: bool) -> bool:
    """Whether ``register_method`` may replace the rule or objective called ``name``: with
    ``replace_rule``, or with ``replace`` where the one of that name is not a built-in (redefining
    a user's method redefines its rule; it never silently changes tcclib's own methods)."""
    return replace_rule or (replace and origins.get(name) != plugins.BUILTINS)


def _file_of(module: str | None) -> str | None:
    file = getattr(sys.modules.get(module or ""), "__file__", None)
    return str(Path(file).resolve()) if file else None


def origin_file(name: str) -> str | None:
    """The file of the plugin that registered the method or baseline ``name`` (None: tcclib's own)."""
    origin = get(name).origin or "__main__"
    return None if origin.startswith(("__main__", "tcclib.")) else _file_of(origin)  # (a cell: __main__/cell:)


def _place(module: str | None) -> str:
    """How a message names where a registration came from."""
    if module == "__main__":
        return "__main__ (a notebook cell or script)"
    if plugins.cell_place(module):
        return plugins.cell_place(module)
    came = {p.module: f" ({p.origin})" for p in plugins.loaded(include_builtins=True)}.get(module, "")
    file = _file_of(module)  # shown relative to the repository (the root Lab serves), where it is under it
    return (relative_to_root(file) if file else module or "a direct call") + came


plugin_hint = plugins.hint
"""The end of an unknown-name message (:func:`tcclib.method.plugins.hint`)."""


# --------------------------------------------------------------------------- identity by value


def code_identity(obj, named: str | None = None) -> str | None:
    """What identifies a user's rule object, baseline factory or objective in a content key, by
    value (:func:`tcclib.method.identity.identity`): ``"code:<hash> state:<hash>"`` (``version:<v>``
    in place of the code where the object sets a ``version``), computed each time it is asked (a
    run asks when it computes its keys), so every edit counts: its code and what it reaches in the
    user's own files (defaults, closures, module constants, helpers in other files), and its whole
    state (an attribute set after registration too).  None for tcclib's own code (keyed by
    :data:`tcclib.artifacts.keys.TRAIN_VERSION`, so the committed keys stay).  What cannot be keyed
    by value is refused (:class:`tcclib.method.identity.Unkeyable`, one line naming it and the fix).

    Code that reads the registry (``registry.objective("barlow").loss(batch)``,
    ``registry.get("mine").factory(seed, cfg)``) may call any rule, objective or baseline registered
    from the user's code: ``registered:<hash>`` adds them all by value (:func:`users_registered`)."""
    found = identity.identity(obj, named or named_as(obj))
    if found is None:
        return None
    return f"{found.text} registered:{users_registered()}" if found.reaches_registry else found.text


def users_registered() -> str:
    """A digest of everything registered now, by value: each rule, objective and baseline factory of
    a user's (:func:`tcclib.method.identity.identity`), each object of tcclib's classes by its state
    (``objectives.VIME(alpha=ALPHA, name="mine")`` registered from a plugin whose ``ALPHA`` changed),
    and each method or baseline entry registered from outside tcclib (its parts' names), so that an
    edit of any of them moves the key of code that reaches them through the registry.  tcclib's own
    code is keyed by ``TRAIN_VERSION``."""
    parts = []
    for kind, table in (("how", _HOW_RULES), ("where", _WHERE_RULES), ("objective", _OBJECTIVES)):
        for name, obj in sorted(table.items()):
            found = identity.identity(obj, named_as(obj))
            parts.append((kind, name, found.text if found is not None else _state_of(obj)))
    for name, entry in sorted(_ENTRIES.items()):
        if entry.from_tcclib:
            continue
        found = identity.identity(entry.factory, entry.reader()) if entry.is_baseline else None
        parts.append(("entry", name, repr(entry.spec), entry.settings, entry.semi_supervised, found and found.text))
    return identity.value_identity(parts, "the registered rules, objectives and baselines").removeprefix("value:")


def named_as(obj) -> str:
    """How a refusal names ``obj``: ``how rule 'nearby' (nearby_rule.py)``, ``objective 'barlow'
    (barlow_objective.py)``, ``function forest``."""
    rules = sys.modules.get("tcclib.method.rules")
    if rules is not None and isinstance(obj, (rules.HowRule, rules.WhereRule)):
        return f"{rules.rule_kind(obj)} rule {rules.rule_name(obj)}"
    objectives = sys.modules.get("tcclib.method.objectives")
    if objectives is not None and isinstance(obj, objectives.Objective):
        return f"objective {objectives.objective_name(obj)}"
    return f"{type(obj).__name__} {getattr(obj, '__qualname__', '')}".strip()


STORED_AS = {
    "code:48fa110b0a1c5656 state:53aa74dcb0f80040 draws:5f142a7a9cd57a7a": "source:92fec80e2ae2a421",
}
"""Identities under which committed results were stored by an earlier scheme, by the identity the
same code and arguments have now: ``examples/nearby_rule.py`` with its defaults (the screen's
members in ``outputs/screen``, keyed by its source with its comments), so those members keep their
keys.  Only that exact code and state map; any edit gives a new identity."""


_STORED_FROM = {stored: now for now, stored in STORED_AS.items()}
""":data:`STORED_AS` the other way: the identity a mapped one stands for."""


def rule_code(rule, spec: MethodSpec, cfg=None) -> str | None:
    """The identity of a user's rule as its members' keys hold it: its code and state by value
    (:func:`code_identity`) and what it draws on a fixed probe
    (:func:`tcclib.method.rules.draws_fingerprint`; a rule of an installed package's, its state and
    what it draws, its code being no file of the user's); for tcclib's own rules :func:`own_state` (None
    while its attributes are as registered); for an object of tcclib's classes that a user registered
    (``SameLabel("column", TRUE_LABELS)`` in a built-in's place, or under a name of its own), its
    whole state (:func:`_state_of`), whose arguments no ``key_params`` may hold."""
    found = code_identity(rule)
    if found is None:
        if _tcclibs_own(rule) or identity.is_tcclib(type(rule).__module__):
            return own_state(rule) if _tcclibs_own(rule) else _state_of(rule)
        found = _state_of(rule)  # (a class of an installed package's: its code named, what it draws probed)
    seen = None if cfg is None else cfg.seen_by_members([spec], named_as(rule))  # (what the rule may read)
    text = f"{found} draws:{_rules().draws_fingerprint(rule, spec, seen)}"
    return STORED_AS.get(text, text)


def changes(old: str | None, new: str | None) -> list[str]:
    """What differs between two identities of one rule (:func:`rule_code`): ``"code"``,
    ``"arguments"`` (its state), ``"draws"`` (only what it draws on the probe, its code and state
    reading the same: something the key cannot read, e.g. a file it opens), or ``"scheme"`` (the
    stored one predates keying by value); empty when they are the same."""
    if old == new:
        return []
    old, new = (_STORED_FROM.get(text, text) for text in (old, new))  # (a mapped identity: compared by its parts)
    if not old or not new:  # (tcclib's own rule with an attribute set after registration: a state alone)
        return ["arguments"] if (old or new).startswith("state:") and " " not in (old or new) else ["code"]
    kinds = {
        "code": "code",
        "version": "code",
        "revision": "code",
        "registered": "code",  # (what it reaches through the registry)
        "value": "code",  # (a baseline factory that is an installed library's callable: all of it)
        "fit": "arguments",  # (a baseline's semi_supervised)
        "state": "arguments",
        "draws": "draws",
    }
    parts = []
    for text in (old, new):
        pairs = [part.split(":", 1) for part in text.split(" ")]
        if any(len(pair) != 2 or pair[0] not in kinds for pair in pairs):
            return ["scheme"]
        parts.append({kinds[k]: v for k, v in pairs})
    differ = [kind for kind in ("code", "arguments", "draws") if parts[0].get(kind) != parts[1].get(kind)]
    return [kind for kind in differ if kind != "draws"] or differ


def register_rule(rule, replace: bool = False):
    """Make a corruption rule (a :class:`~tcclib.method.rules.HowRule` or
    :class:`~tcclib.method.rules.WhereRule`) known by its ``name``, so that methods can name it;
    returns the rule.  Registering the same object again does nothing."""
    rules = _rules()
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
    try:
        hash(rule)  # (a run groups its members by their rule objects)
    except TypeError:
        raise RegistryError(
            f"register_rule {rule.name!r}: a {type(rule).__name__} object cannot be hashed (a @dataclass that compares "
            "its fields has no hash): declare the class @dataclass(eq=False), or frozen=True"
        ) from None
    check_rule_settings(rule)
    ensure_loaded()
    clash = (
        ""
        if replace or table.get(rule.name, rule) is rule
        else _clash(
            f"{rules.rule_kind(rule)} rule",
            rule.name,
            _RULE_ORIGIN[rule.name],
            [m for m, spec in METHODS.items() if rule.name in (spec.how, spec.where)],
        )
    )
    if clash:
        raise RegistryError(clash)
    if rule.name in table and _RULE_ORIGIN[rule.name] != current_origin():
        _REPLACED.setdefault(("rule", rule.name), (table, table[rule.name], _RULE_ORIGIN[rule.name]))
    registered = code_identity(rule)  # (what cannot be keyed is refused here already, at the line that registers it)
    if registered is None:
        _remember_own_state(rule)
        if current_origin() == plugins.BUILTINS:
            _BUILT_IN[id(rule)] = rule
    table[rule.name] = rule
    _RULE_ORIGIN[rule.name] = current_origin()
    _AS_REGISTERED[rule.name] = (id(rule), registered)
    return rule


_RULE_ORIGIN: dict[str, str | None] = {}
"""The plugin that registered each rule name (None: registered by a direct call)."""
_AS_REGISTERED: dict[str, tuple[int, str | None]] = {}
"""Each rule name's object (its id) and identity (:func:`code_identity`) when it was registered."""


def _tcclibs_own(rule) -> bool:
    """Whether ``rule`` is an object tcclib's built-ins registered (not one of tcclib's classes
    registered by a user, nor an object put into the table by hand)."""
    return _BUILT_IN.get(id(rule)) is rule


_BUILT_IN: dict[int, object] = {}
"""The rules and objectives tcclib's built-ins registered, by id (the object kept, so the id stays its own)."""


def changed_since_registered(rule) -> list[str]:
    """What of a rule (or objective) changed in this process since it was registered
    (``["arguments"]``: an attribute set afterwards; ``["code"]``: a constant of its module set
    afterwards): what another process, which loads the rule's file afresh (a sweep's kernels and
    workers), would not see.  Empty for a rule as registered."""
    if own_state(rule) is not None:
        return ["arguments"]
    table = _OBJECTIVE_AS_REGISTERED if isinstance(rule, _objectives().Objective) else _AS_REGISTERED
    known = table.get(rule.name)
    if known is None or known[0] != id(rule) or known[1] is None:
        return []
    return changes(known[1], code_identity(rule))


_OWN_AS_REGISTERED: dict[int, tuple[object, str]] = {}
"""tcclib's own registered rules and objectives (by id; the object kept, so the id stays its own)
and their state by value when registered."""


def _remember_own_state(obj) -> None:
    _OWN_AS_REGISTERED[id(obj)] = (obj, _state_of(obj))


def _state_of(obj) -> str:
    """An own rule's or objective's state by value; an attribute set on it to its class's own
    value (the very object: what a restored class attribute leaves) behaves as its class's and is
    left out."""
    inherited = frozenset(k for k, v in vars(obj).items() if getattr(type(obj), k, _ABSENT) is v)
    return identity.state_identity(obj, named_as(obj), leave_out=inherited)


_ABSENT = object()


def own_state(obj) -> str | None:
    """For one of tcclib's own rules or objectives (no identity of its own: its members' keys hold
    its name, its ``key_params`` and ``TRAIN_VERSION``): ``"state:<hash>"``, its whole state by
    value, when an attribute was set, changed or removed since it was registered (a run keys it,
    so such an edit retrains; a sweep refuses it, :func:`changed_since_registered`); None while it
    is as registered, so the committed keys stay."""
    known = _OWN_AS_REGISTERED.get(id(obj))
    if known is None or known[0] is not obj:
        return None
    now = _state_of(obj)
    return None if now == known[1] else now


def changed_builtins() -> dict[str, str]:
    """``{"tcclib <class> <name>": "state:<hash>"}``: each of tcclib's own rules and objectives
    registered now whose state changed since it was registered (:func:`own_state`); empty while
    none did, so no key moves."""
    found = {}
    for obj in [*_HOW_RULES.values(), *_WHERE_RULES.values(), *_OBJECTIVES.values()]:
        state = own_state(obj)
        if state:
            found[f"tcclib {type(obj).__name__} {obj.name}"] = state
    return found


def register_objective(objective, replace: bool = False):
    """Make an objective (a :class:`~tcclib.method.objectives.Objective` object) known by its
    ``name``, so that methods can name it (``register_method(..., objective=name)``); returns it.
    Registering the same object again does nothing; another object of a registered name is
    refused unless it comes from the same place (a plugin loaded again) or ``replace``."""
    objectives = _objectives()
    if not isinstance(objective, objectives.Objective):
        raise RegistryError(
            f"register_objective: expected a tcclib.method.objectives.Objective object, got {type(objective).__name__}"
        )
    if not isinstance(objective.name, str) or not objective.name.isidentifier():
        raise RegistryError(
            f"register_objective: an objective's name must be a simple identifier, got {objective.name!r}"
        )
    if not (isinstance(objective.views, int) and objective.views >= 1):
        raise RegistryError(
            f"register_objective {objective.name!r}: views must be an integer >= 1, got {objective.views!r}"
        )
    if getattr(objective, "embedding", "last") not in objectives.EMBEDDINGS:
        raise RegistryError(
            f"register_objective {objective.name!r}: embedding must be one of "
            f"{', '.join(map(repr, objectives.EMBEDDINGS))}, got {objective.embedding!r}"
        )
    check_rule_settings(objective)
    ensure_loaded()
    table = _OBJECTIVES
    old = table.get(objective.name, objective)
    clash = (
        ""
        if replace or old is objective
        else _clash(
            "objective",
            objective.name,
            _OBJECTIVE_ORIGIN[objective.name],
            [m for m, spec in METHODS.items() if spec.objective == objective.name],
        )
    )
    if clash:
        raise RegistryError(clash)
    if objective.name in table and _OBJECTIVE_ORIGIN[objective.name] != current_origin():
        _REPLACED.setdefault(
            ("objective", objective.name), (table, table[objective.name], _OBJECTIVE_ORIGIN[objective.name])
        )
    registered = code_identity(objective)  # (what cannot be keyed is refused here already)
    if registered is None:
        _remember_own_state(objective)
        if current_origin() == plugins.BUILTINS:
            _BUILT_IN[id(objective)] = objective
    table[objective.name] = objective
    _OBJECTIVE_ORIGIN[objective.name] = current_origin()
    _OBJECTIVE_AS_REGISTERED[objective.name] = (id(objective), registered)
    return objective


_OBJECTIVE_ORIGIN: dict[str, str | None] = {}
"""The plugin that registered each objective name."""
_OBJECTIVE_AS_REGISTERED: dict[str, tuple[int, str | None]] = {}
"""Each objective name's object (its id) and identity (:func:`code_identity`) when it was registered."""


def objective(name: str) -> objectives.Objective:
    """The objective called ``name``."""
    ensure_loaded()
    if name not in _OBJECTIVES:
        raise RegistryError(f"unknown objective {name!r}; known: {', '.join(_OBJECTIVES)}{plugin_hint()}")
    return _OBJECTIVES[name]


def _factory_reads(factory, seeds, settings, named: str = "a baseline's factory") -> str:
    """A digest of the user's files a baseline factory opens when called at each of the run's
    ``seeds`` (``factory(seed, settings)``; :func:`tcclib.method.identity.files_read`): a file
    opened for one seed only (``weights_seed{seed}.json``) is keyed too; ``""`` when it opens none.
    A call that fails is keyed by what it read before failing (the run names the failure)."""
    return identity.files_read_by(*[lambda seed=seed: factory(seed, settings) for seed in seeds], named=named)


def objective_code(objective, cfg=None) -> str | None:
    """The code identity of an objective object (:func:`code_identity`, the one place that keys a
    user's code); for tcclib's own objectives (keyed by name, parameters and
    :data:`tcclib.artifacts.keys.TRAIN_VERSION`) its ``"revision:<r>"`` from 2 on
    (:func:`tcclib.method.objectives.revision`) and :func:`own_state` (None while it is as
    registered and at revision 1).  Computed when asked (a run's keys)."""
    found = code_identity(objective)
    if found is None:
        revision = _objectives().revision(objective)
        state = own_state(objective) if _tcclibs_own(objective) else _beyond_parameters(objective)
        parts = [f"revision:{revision}" if revision != 1 else None, state]
        return " ".join(part for part in parts if part) or None
    if cfg is None:
        return found
    read = _objectives().files_setup_reads(objective, cfg)  # (a file heads() or prepare() opens: its bytes)
    return f"{found} draws:files-{read}" if read else found


def _beyond_parameters(objective) -> str | None:
    """For an object of tcclib's objective classes that a user registered (``VIME(name="mine")``
    with ``views`` set on it): ``"state:<hash>"`` of its attributes that neither its name nor its
    ``key_params`` hold and whose values a default object of its class does not have; None when it
    has none, so the keys of the ones made by their arguments alone (``examples/family_authors.py``)
    stay."""
    try:
        default = vars(type(objective)())
    except TypeError:  # (a class that needs arguments: every attribute is its own)
        default = {}
    held = {"name", *objective.key_params()}
    named = named_as(objective)
    beyond = {
        attribute: value
        for attribute, value in vars(objective).items()
        if attribute not in held
        and (
            attribute not in default
            or identity.value_identity(value, named) != identity.value_identity(default[attribute], named)
        )
    }
    return identity.value_identity(beyond, named).replace("value:", "state:", 1) if beyond else None


def check_rule_settings(rule) -> None:
    """A rule's ``settings`` and ``switches`` must be tuples of names, checked when it is
    registered; that they are :class:`~tcclib.method.config.Config` fields is checked by every
    ``Config`` that names one of its methods (the declarations live above this module)."""
    for attribute in ("settings", "switches"):
        names = getattr(rule, attribute, ())
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise RegistryError(
                f"rule {rule.name!r}: {attribute} must be a tuple of Config field names, "
                f"e.g. {attribute} = ('epochs',); got {names!r}"
            )


def how_rule(name: str) -> rules.HowRule:
    """The how rule called ``name``."""
    ensure_loaded()
    if name not in _HOW_RULES:
        raise RegistryError(f"unknown how rule {name!r}; known: {', '.join(_HOW_RULES)}{plugin_hint()}")
    return _HOW_RULES[name]


def where_rule(name: str) -> rules.WhereRule:
    """The where rule called ``name``."""
    ensure_loaded()
    if name not in _WHERE_RULES:
        raise RegistryError(f"unknown where rule {name!r}; known: {', '.join(_WHERE_RULES)}{plugin_hint()}")
    return _WHERE_RULES[name]


@dataclass(frozen=True)
class MethodSpec:
    """How and where one method corrupts: ``how`` and ``where``, its two rules' names
    (:func:`how_rule`, :func:`where_rule`); ``flipped``: the authors' published "most", whose code
    flipped the shared importance matrix in place so that it sampled by the least-correlated
    ranking; ``rule``: its own correlation sampler rule (``"direct"``, ``"authors"``;
    :func:`tcclib.method.rules.sampler_inputs`), None for ``Config.corr_rule``'s."""

    how: str
    where: str = "uniform"
    flipped: bool = False
    rule: str | None = None
    objective: str = DEFAULT_OBJECTIVE

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
    def learns(self) -> objectives.Objective:
        """The objective object: what the encoder learns from the views (its heads and loss)."""
        return objective(self.objective)

    @property
    def deep_stack(self) -> bool:
        """Whether its members' embedding is every encoder layer (its objective's ``embedding``,
        :func:`tcclib.method.objectives.deep_stack`)."""
        return _objectives().deep_stack(self.learns)

    @property
    def pretrain(self) -> bool:
        return self.draw.pretrains

    def reads(self, setting: str) -> bool:
        """Whether its pretraining reads ``setting`` of :class:`~tcclib.method.config.Config` where
        a method may not: ``corruption_rate`` (a where rule with a fixed count per row, not a
        Bernoulli mask) and ``temperature`` (an objective that declares it, as NT-Xent)."""
        if setting == "corruption_rate":
            return self.pretrain and getattr(self.choice, "fixed_count", True)
        if setting == "temperature":
            return self.pretrain and setting in self.learns.settings
        raise ValueError(f"reads: corruption_rate or temperature, got {setting!r}")

    def step_mode(self, cfg) -> str:
        """How its pretraining step runs under ``cfg`` (``Config.step_mode``), eagerly for a
        user's objective (its loss may read the device back, which a captured step cannot hold)."""
        mode = cfg.step_mode()
        return mode if self.objective == DEFAULT_OBJECTIVE or _objectives().is_own(self.learns) else "eager"

    def objective_key(self, with_code: bool = True) -> dict | None:
        """What is recorded of the objective: None for the default (:data:`DEFAULT_OBJECTIVE`, so
        every key before objectives stays); else its name, its own parameters (``key_params``),
        the settings it reads and, for a user's (``with_code``), its identity
        (:func:`objective_code`; a member's key takes it through :meth:`objective_codes`, computed
        once per run with the rules')."""
        if self.objective == DEFAULT_OBJECTIVE or not self.pretrain:
            return None
        learns = self.learns
        out = {"name": self.objective, "params": learns.key_params(), "settings": list(learns.settings)}
        code = objective_code(learns) if with_code else None
        if code:
            out["code"] = code
        return out

    @property
    def pseudo_labelled(self) -> bool:
        """Whether its members corrupt within pseudo-classes (refreshed during pretraining)."""
        return self.draw.needs == _rules().PSEUDO_LABELS

    @property
    def needs_true_labels(self) -> bool:
        """Whether it reads every training row's true label (the estimator cannot offer it)."""
        return self.draw.needs == _rules().TRUE_LABELS

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
        :class:`~tcclib.method.config.Config` fields its rules and its objective read (declared in
        their ``settings``), the fidelity switches its rules read, and the rules' own parameters
        (:meth:`~tcclib.method.rules.HowRule.key_params`)."""
        how, where = self.draw, self.choice
        settings = list(how.settings) + list(where.settings) + (list(self.learns.settings) if self.pretrain else [])
        switches = list(how.switches) + list(where.switches)
        own = {
            name: params
            for name, params in ((self.how, how.key_params()), (self.ranking, where.key_params()))
            if params
        }
        return settings, switches, own

    def code(self, cfg=None) -> dict[str, str]:
        """The identity of its rules that are not tcclib's own (:func:`rule_code`), by rule name,
        computed now: it enters its members' content key, so an edited rule retrains them.
        ``cfg``: the run's settings (what a rule reads of them while drawing on the probe).  A
        user's objective's identity is :meth:`objective_codes`."""
        out = {}
        for name, rule in ((self.how, self.draw), (self.ranking, self.choice)):
            found = rule_code(rule, self, cfg)
            if found:
                out[name] = found
        return out

    def user_codes(self, cfg=None) -> dict[str, str]:
        """What its members' keys hold of a user's code (:meth:`code` and :meth:`objective_codes`:
        for tcclib's own rules and objectives, their state when it changed since registration)
        and, for a method with a rule or objective of a user's, every one of tcclib's own changed
        since it was registered (:func:`changed_builtins`): a user's code may call them
        (``registry.objective("vime").loss(batch)``)."""
        found = self.code(cfg) | self.objective_codes(cfg)
        return found | changed_builtins() if self.has_users_code else found

    @property
    def has_users_code(self) -> bool:
        """Whether a rule of it, or the objective it pretrains with, is a user's (not tcclib's own)."""
        parts = (self.draw, self.choice, self.learns) if self.pretrain else (self.draw, self.choice)
        return not all(_rules().is_own(part) for part in parts)

    def objective_codes(self, cfg=None) -> dict[str, str]:
        """``{objective name: identity}`` of a user's objective, or of tcclib's own one whose
        attributes changed since it was registered (:func:`objective_code`; else empty)."""
        if not self.pretrain:
            return {}
        seen = None if cfg is None else cfg.seen_by_members([self], named_as(self.learns))
        code = objective_code(self.learns, seen)
        return {f"objective:{self.objective}": code} if code else {}


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
    origin: str | None = None  # the plugin that registered it (None: a direct call)

    @property
    def is_baseline(self) -> bool:
        return self.factory is not None

    @property
    def from_tcclib(self) -> bool:
        """Whether tcclib registered it (a built-in), not a user's plugin, cell or script."""
        return (self.origin or "").startswith("tcclib.")

    def code(self, cfg=None, seeds=None) -> str | None:
        """A user baseline factory's identity, computed now (:func:`code_identity`; part of its
        members' content key) with, given the run's settings ``cfg``, the bytes of the user's files
        it opens when called at ``seeds`` (default: the run's; a seed's key holds its own seed's
        files); None for tcclib's own factories.  A user's factory that is an installed library's
        callable wrapping the user's code (``functools.lru_cache`` on it, ``np.vectorize``) is keyed
        by its value (what it wraps included); ``semi_supervised`` (how it is fitted) is keyed
        when set."""
        if not self.is_baseline:
            return None
        named = f"the factory of baseline {self.name!r}"
        found = code_identity(self.factory, named)
        if not self.from_tcclib:
            found = found or identity.value_identity(self.factory, named)
            if self.semi_supervised:  # (fitted on every training row, the unlabeled ones as -1)
                found += " fit:semi-supervised"
        if found is None or cfg is None:
            return found
        seeds = cfg.seeds if seeds is None else seeds
        read = _factory_reads(self.factory, seeds, cfg.seen_by_baseline(self, self.reader()), self.reader())
        return f"{found} draws:files-{read}" if read else found

    def reader(self) -> str:
        """How an error names a user baseline's factory: ``baseline 'mine' (its factory make_model)``."""
        return f"baseline {self.name!r} (its factory {getattr(self.factory, '__qualname__', self.factory)!s})"

    def paper_column(self, kind: str) -> str | None:
        """The paper's column it is compared with in the ``kind`` table (None: none)."""
        return dict(self.paper_columns).get(kind)


_ENTRIES: dict[str, Entry] = {}


def _check_name(name, replace: bool) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise RegistryError(f"register: name must be a simple identifier (letters, digits, _), got {name!r}")
    ensure_loaded()
    old = _ENTRIES.get(name)
    clash = "" if replace or old is None else _clash("baseline" if old.is_baseline else "method", name, old.origin)
    if clash:
        raise RegistryError(clash)


def _placed(name, group, order, color, tables, default_tables) -> dict:
    if group not in GROUPS:
        raise RegistryError(f"register {name!r}: group must be one of {', '.join(GROUPS)}, got {group!r}")
    tables = tuple(default_tables if tables is None else tables)
    bad = [t for t in tables if t not in TABLE_KINDS]
    if bad:
        raise RegistryError(f"register {name!r}: tables must be among {', '.join(TABLE_KINDS)}, got {bad[0]!r}")
    old = _ENTRIES.get(name)
    if order is None:
        order = old.order if old else _next_order(group == "baseline")
    if color is None:
        color = old.color if old else _unused_color({e.color for n, e in _ENTRIES.items() if n != name})
    return dict(group=group, order=float(order), color=color, tables=tables, origin=current_origin())


def _next_order(baseline: bool) -> float:
    """A new entry's default place: after the last method (before every baseline), or, for a
    baseline, after the last baseline."""
    if baseline:
        return max((e.order for e in _ENTRIES.values()), default=BASELINE_ORDER - 1) + 1
    top = max((e.order for e in _ENTRIES.values() if not e.is_baseline), default=0)
    following = math.floor(top) + 1
    return following if following < BASELINE_ORDER else (top + BASELINE_ORDER) / 2


def _unused_color(used: set[str]) -> str:
    """The first colour of the palette no entry uses; past the palette, a new hue each time
    (golden-angle steps), never an existing entry's colour."""
    for c in PALETTE + _MORE:
        if c not in used:
            return c
    for i in itertools.count(len(used)):
        r, g, b = colorsys.hsv_to_rgb((i * 0.618034) % 1.0, 0.65, 0.8)
        c = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        if c not in used:
            return c
    raise AssertionError("unreachable")


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
    objective=DEFAULT_OBJECTIVE,
    replace: bool = False,
    replace_rule: bool = False,
) -> Entry:
    """Declare a pretraining method: a ``how`` rule and a ``where`` rule, each a registered
    rule's name (:func:`register_rule`) or a rule object (registered here), and its
    ``objective``, what the encoder learns from the views (a registered objective's name,
    :func:`register_objective`, or an objective object, registered here; default NT-Xent).  It is then valid in
    ``Config.methods``, trained by :func:`tcclib.running.train.run_dataset` and the estimator, and
    shown in the figures, the set tables (``group`` "how" -> the how-table, else the where-table;
    or ``tables=``) and the report.

    ``flipped`` and ``rule`` are :class:`MethodSpec`'s (``rule``: a correlation method's own
    sampler rule, whatever ``Config.corr_rule`` says).  ``paper_columns``: ``{table kind: the
    paper's column}`` it is compared with; ``separate``, ``repeats`` and ``about``: :class:`Entry`'s.
    Defaults: ``label`` the name, ``group`` "how" for ``where="uniform"`` else "where",
    ``order`` after every entry so far, ``color`` the first unused one.  ``replace``: redefine a
    registered method (a rule or objective object given with it replaces the user's one of its name
    too: what the clash's message advises); ``replace_rule``: a rule or objective object given here
    replaces a different one of its name (a script run again), a built-in's too, which changes every
    method that uses it (without it, a built-in's name is refused)."""
    _check_name(name, replace)
    how = _rule_name(name, how, "how", _HOW_RULES, replace, replace_rule)  # (redefined: its rule too)
    where = _rule_name(name, where, "where", _WHERE_RULES, replace, replace_rule)
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
    learns = _objective_name(name, objective, replace, replace_rule)
    return _add(
        Entry(
            name=name,
            label=label or name,
            spec=MethodSpec(how, where, bool(flipped), rule, learns),
            paper=paper,
            paper_columns=columns,
            separate=bool(separate),
            repeats=repeats,
            about=about or label or name,
            **_placed(name, group, order, color, tables, ("how",) if group == "how" else ("where",)),
        )
    )


def _rule_name(name: str, rule, what: str, table: dict, replace: bool, replace_rule: bool) -> str:
    """The name of ``rule`` (a registered rule's name, or a rule object, registered now)."""
    rules = _rules()
    if isinstance(rule, (rules.HowRule, rules.WhereRule)):
        kind = rules.HowRule if what == "how" else rules.WhereRule
        if not isinstance(rule, kind):
            raise RegistryError(f"register_method {name!r}: {what} must be a {kind.__name__}, got {rule!r}")
        return register_rule(rule, _may_replace(_RULE_ORIGIN, rule.name, replace, replace_rule)).name
    if rule not in table:
        raise RegistryError(
            f"register_method {name!r}: {what} must be one of {', '.join(table)}, got {rule!r} "
            f"(a new rule: a {'HowRule' if what == 'how' else 'WhereRule'} object of tcclib/method/rules.py, "
            f"see examples/knn_rule.py)"
        )
    return rule


def _objective_name(name: str, learns, replace: bool, replace_rule: bool) -> str:
    """The name of the objective ``learns`` (a registered objective's name, or an objective object,
    registered now)."""
    if isinstance(learns, _objectives().Objective):
        return register_objective(learns, _may_replace(_OBJECTIVE_ORIGIN, learns.name, replace, replace_rule)).name
    ensure_loaded()
    if learns not in _OBJECTIVES:
        raise RegistryError(
            f"register_method {name!r}: objective must be one of {', '.join(_OBJECTIVES)} or an Objective "
            f"object, got {learns!r} (a new objective: a subclass of tcclib.method.objectives.Objective, "
            f"see examples/barlow_objective.py)"
        )
    return learns


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
    if not callable(factory):
        raise RegistryError(
            f"register_baseline {name!r}: factory must be a callable (seed, cfg) -> "
            f"classifier, got {type(factory).__name__}"
        )
    code_identity(factory, f"the factory of baseline {name!r}")  # (refused here already when it cannot be keyed)
    if isinstance(settings, str):
        raise RegistryError(
            f"register_baseline {name!r}: settings must be a list of Config fields, e.g. settings=[{settings!r}]"
        )
    if not all(isinstance(s, str) for s in settings):
        raise RegistryError(f"register_baseline {name!r}: settings must be Config field names, got {list(settings)}")
    return _add(
        Entry(
            name=name,
            label=label or name,
            factory=factory,
            semi_supervised=bool(semi_supervised),
            settings=tuple(settings),
            **_placed(name, "baseline", order, color, tables, ("how",)),
        )
    )


def _add(e: Entry) -> Entry:
    old = _ENTRIES.get(e.name)
    if old is not None and old.origin != e.origin:
        _REPLACED.setdefault(("entry", e.name), (_ENTRIES, old, old.origin))
    _ENTRIES[e.name] = e
    return e


_REPLACED: dict[tuple[str, str], tuple] = {}
"""What a registration from another place replaced (``replace=True``), by ``(kind, name)``:
``(table, old value, old origin)``, put back when that place is removed (an unloaded plugin that
replaced ``random`` leaves the built-in ``random``)."""


def unregister(name: str) -> None:
    """Remove an entry (for tests and notebooks that registered a trial method)."""
    if name not in _ENTRIES:
        raise RegistryError(f"unregister: {name!r} is not registered; registered: {', '.join(_ENTRIES)}")
    del _ENTRIES[name]


def remove_origin(origin: str) -> None:
    """Remove every entry and rule the plugin ``origin`` registered (:func:`tcclib.method.plugins.unload`),
    and put back what they had replaced (in its place: the rules' listings keep their order)."""
    for (kind, name), (table, value, first) in _REPLACED.items():
        if first != origin and name in table and _origin_of(kind, name) == origin:
            table[name] = value
            _set_origin(kind, name, first)
    for name in [n for n, e in _ENTRIES.items() if e.origin == origin]:
        del _ENTRIES[name]
    for name in [n for n, o in _RULE_ORIGIN.items() if o == origin]:
        _HOW_RULES.pop(name, None)
        _WHERE_RULES.pop(name, None)
        del _RULE_ORIGIN[name]
    for name in [n for n, o in _OBJECTIVE_ORIGIN.items() if o == origin]:
        _OBJECTIVES.pop(name, None)
        del _OBJECTIVE_ORIGIN[name]
    for (kind, name), (table, value, first) in list(_REPLACED.items()):
        if first != origin and name not in table:
            table[name] = value
            _set_origin(kind, name, first)
        if first == origin or table.get(name) is value:
            del _REPLACED[(kind, name)]


def _origin_of(kind: str, name: str) -> str | None:
    """Who registered the rule, objective or entry ``name`` now."""
    if kind == "entry":
        return _ENTRIES[name].origin
    return (_RULE_ORIGIN if kind == "rule" else _OBJECTIVE_ORIGIN).get(name)


def _set_origin(kind: str, name: str, origin: str | None) -> None:
    if kind == "rule":
        _RULE_ORIGIN[name] = origin
    elif kind == "objective":
        _OBJECTIVE_ORIGIN[name] = origin


# --------------------------------------------------------------------------- queries


def entries(group: str | None = None) -> list[Entry]:
    """All entries (or one group's) in their order."""
    ensure_loaded()
    return sorted((e for e in _ENTRIES.values() if group is None or e.group == group), key=lambda e: e.order)


def get(name: str) -> Entry:
    ensure_loaded()
    if name not in _ENTRIES:
        close = difflib.get_close_matches(str(name), list(_ENTRIES), n=2)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise RegistryError(
            f"unknown method or baseline {name!r}{hint}; registered: {', '.join(order())}{plugin_hint()}"
        )
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
    ensure_loaded()
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
    ensure_loaded()
    return [m for m in names if m in _ENTRIES and not _ENTRIES[m].is_baseline and _ENTRIES[m].spec.pseudo_labelled]


# --------------------------------------------------------------------------- live views


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

    def __add__(self, other):
        return (*self, *other)

    def __radd__(self, other):
        return (*other, *self)

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


class _MethodsView(LiveMapping):
    """``config.METHODS``: name -> :class:`MethodSpec` of every registered method, live."""

    def __repr__(self):
        return f"METHODS({dict(self)!r})"


METHODS = _MethodsView(lambda: {e.name: e.spec for e in entries() if not e.is_baseline})
BASELINES = _NamesView(baseline_names)
ORDER = _NamesView(order)
LABELS = LiveMapping(lambda: {e.name: e.label for e in entries()})
"""``plots.LABELS``: name -> label of every method and baseline, in order (a live view)."""
HOWS = _NamesView(lambda: (ensure_loaded(), tuple(_HOW_RULES))[1])
"""The how rules' names (a live view)."""
WHERES = _NamesView(lambda: (ensure_loaded(), tuple(_WHERE_RULES))[1])
"""The where rules' names (a live view)."""
OBJECTIVES = _NamesView(lambda: (ensure_loaded(), tuple(_OBJECTIVES))[1])
"""The objectives' names (a live view)."""

plugins.forget_with(remove_origin)
