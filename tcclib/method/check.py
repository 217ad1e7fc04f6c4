"""``check_rule``: a corruption rule's contract, checked in a real short pretraining.

In the spirit of scikit-learn's ``check_estimator``: :func:`check_rule` trains a rule for a few
epochs on a small table through the training core's own ``set_up`` and ``pretrain`` and reports
every breach of the contract in one list; ``docs/rules.md`` lists what it checks.  The built-in
rules and ``examples/*.py`` pass it; notebook 09 calls it before the screen.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split

from tcclib.data.sources import Dataset, DatasetError, from_frame, load_dataset
from tcclib.method import identity, objectives, plugins, registry, rules
from tcclib.method.config import Config, check_reads
from tcclib.method.correlation import importance_matrix
from tcclib.method.inputs import prepare_config
from tcclib.method.settings import UnkeyedSettingError
from tcclib.method.training import pretrain, set_up
from tcclib.util.errors import ConfigError

BREACHES = (rules.RuleContractError, UnkeyedSettingError)
"""What a user's rule or objective breaks the contract with: a value the contract does not allow,
a failure, or a setting read that its members' keys do not hold."""

SEEDS = (0, 1)
"""The table seeds of the check's stack: two members of the rule's method (then each alone)."""
TRIAL = dict(
    epochs=4,
    pseudo_every=2,
    head_epochs=5,
    hidden_dim=32,
    xgb_trees=5,
    xgb_depth=3,
    progress=False,
    device="cpu",
    compile="off",
)
"""The settings of a trial (beside its seeds and method): a few seconds of real training."""
ORIGIN = "tcclib.method.check"
"""The registry origin of the trial method the check registers (removed when it is done)."""


@dataclass
class RuleReport:
    """What :func:`check_rule` found: ``rule`` (how messages name it) and ``breaches``, one line
    each (empty: the rule keeps its contract)."""

    rule: str
    breaches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.breaches

    @property
    def kind(self) -> str:
        """``rule`` or ``objective``: whose contract was checked."""
        return "objective" if self.rule.startswith("objective") else "rule"

    def __str__(self) -> str:
        if self.ok:
            return f"{self.rule}: keeps the {self.kind} contract (docs/rules.md)"
        head = f"{self.rule}: {len(self.breaches)} contract breach{'es' if len(self.breaches) > 1 else ''}"
        return "\n".join([head + " (docs/rules.md)", *(f"  - {b}" for b in self.breaches)])

    def raise_if_breached(self) -> RuleReport:
        """Raise :class:`~tcclib.method.rules.RuleContractError` listing every breach; else ``self``."""
        if not self.ok:
            raise rules.RuleContractError(str(self))
        return self


def check_rule(rule, data: Dataset | None = None, raise_on_breach: bool = True) -> RuleReport:
    """Check a corruption rule's contract in a real short pretraining; every breach in one list.

    Parameters
    ----------
    rule : HowRule, WhereRule or Objective object or class, or str
        The rule (a class is made with no arguments), or the name of a registered rule or of a
        method (its rules that are not tcclib's own are checked, and its objective when it is a
        user's); an objective is checked by :func:`check_objective`.
    data : Dataset, DataFrame, (X, y) or str, optional
        The table to train on: a tcclib ``Dataset``, a frame whose **last column is the target**,
        an ``(X, y)`` pair or a dataset name (default: breast_cancer, its first 12 features).
    raise_on_breach : bool
        Raise :class:`~tcclib.method.rules.RuleContractError` listing every breach (default);
        False returns the report instead.

    Returns
    -------
    RuleReport
        ``.ok``, ``.breaches`` (one line each); ``str()`` is the list.
    """
    if isinstance(rule, objectives.Objective) or (isinstance(rule, type) and issubclass(rule, objectives.Objective)):
        return check_objective(rule, data, raise_on_breach)
    data = _table(data)
    learns = registry.METHODS[rule].learns if isinstance(rule, str) and rule in registry.METHODS else None
    if learns is not None and not objectives.is_own(learns):  # a method of a user's objective: it too
        found = [r for r in (registry.METHODS[rule].draw, registry.METHODS[rule].choice) if not rules.is_own(r)]
        reports = [_check_one(r, data) for r in found] + [check_objective(learns, data, raise_on_breach=False)]
    else:
        reports = [_check_one(r, data) for r in _rules_of(rule)]
    report = reports[0]
    for other in reports[1:]:
        report = RuleReport(f"{report.rule}, {other.rule}", report.breaches + other.breaches)
    return report.raise_if_breached() if raise_on_breach else report


_KEPT_CONTRACT: set[tuple[str, str]] = set()
"""``(method, its user code's identity)`` checked in this process and found keeping the contract."""


def check_methods(methods, identities: dict | None = None, data=None) -> None:
    """Each of ``methods`` with a rule or objective of a user's keeps the contract, checked as
    :func:`check_rule` does (a short pretraining on a small table: about 0.1 s once torch has
    trained, once per method and code in a process), before a run's work: a breach raises
    :class:`~tcclib.method.rules.RuleContractError` (an objective's:
    :class:`~tcclib.method.objectives.ObjectiveContractError`) in one line, the method, its first
    breach and how many more, where it would otherwise stop the run at its first epoch or not at all.

    ``identities``: ``{method: its user code's identity}`` when the caller has computed them
    (:func:`tcclib.artifacts.keys.code_identities`); else computed here.  ``data``: the run's own
    table (what :func:`check_rule` takes, or a function that makes it, called only where a breach
    needs it): a breach on the small table is checked again on up to
    300 of its rows, and only one there too refuses the run (a rule written for the run's table,
    e.g. a prior over its 30 features, fails on breast_cancer's 12); where its classes are too small
    to split (a few labeled rows), on its rows with two alternating labels; where it cannot be
    checked at all (fewer rows than a split needs), the breach on the small table refuses it."""
    for method in methods:
        spec = registry.METHODS[method]
        if not spec.has_users_code:
            continue
        code = identities.get(method) if identities is not None else spec.user_codes()
        seen = (method, repr(code))
        if seen in _KEPT_CONTRACT:
            continue
        report = check_rule(method, raise_on_breach=False)
        if not report.ok and data is not None:
            try:
                rows = _rows_of(_table(data() if callable(data) else data))
                try:
                    report = check_rule(method, data=rows, raise_on_breach=False)
                except DatasetError:  # (its classes too small to split: its columns, with two labels)
                    report = check_rule(method, data=_relabelled(rows), raise_on_breach=False)
            except (DatasetError, ConfigError, ValueError):
                pass  # (the run's table cannot be checked at all: the breach on the small table stands)
            if report.ok:
                continue  # (kept on this table only: checked again for the next one)
        if not report.ok:
            more = len(report.breaches) - 1
            rest = f" (and {more} more: tcclib.check_rule({method!r}) lists them)" if more else ""
            first = report.breaches[0]
            named = first if first.startswith(report.rule) else f"{report.rule}: {first}"
            breach = objectives.ObjectiveContractError if first.startswith("objective") else rules.RuleContractError
            raise breach(f"method {method}: {named}{rest}")
        _KEPT_CONTRACT.add(seen)


def _relabelled(table: Dataset) -> Dataset:
    """``table``'s rows with the labels 0, 1, 0, 1, ...: its columns checked where its own classes
    are too small for the check's split."""
    labels = pd.Series(np.arange(len(table.X)) % 2, name=table.y.name)
    return from_frame(table.X.reset_index(drop=True), labels, name=table.name)


def _rows_of(table: Dataset, rows: int = 300) -> Dataset:
    """Up to ``rows`` rows of ``table``, drawn stratified by class (seeded): a check on the run's
    own columns in about the time of one on the small table."""
    if len(table.X) <= rows:
        return table
    try:
        X, _, y, _ = train_test_split(table.X, table.y, train_size=rows, stratify=table.y, random_state=0)
    except ValueError:  # (a class too small to stratify: the first rows)
        X, y = table.X.iloc[:rows], table.y.iloc[:rows]
    return from_frame(X.reset_index(drop=True), y.reset_index(drop=True), name=table.name)


def _rules_of(rule) -> list:
    """The rule objects to check for what the caller gave (a class is made with no arguments)."""
    if isinstance(rule, type) and issubclass(rule, (rules.HowRule, rules.WhereRule)):
        try:
            return [rule()]
        except Exception as e:
            raise rules.RuleContractError(
                f"check_rule: {rule.__name__}() cannot be made with no arguments ({type(e).__name__}: {e}); "
                f"pass an object, e.g. check_rule({rule.__name__}(...))"
            ) from None
    if isinstance(rule, str):
        for lookup in (registry.how_rule, registry.where_rule):
            try:
                return [lookup(rule)]
            except registry.RegistryError:
                pass
        if rule not in registry.METHODS:
            known = [*registry.HOWS, *registry.WHERES, *registry.method_names()]
            close = difflib.get_close_matches(rule, list(dict.fromkeys(known)), n=3)
            raise registry.RegistryError(
                f"check_rule: no rule or method is called {rule!r}"
                + (f" (did you mean {', '.join(close)}?)" if close else "")
                + f"; rules: {', '.join(dict.fromkeys([*registry.HOWS, *registry.WHERES]))}; methods: "
                f"{', '.join(registry.method_names())}{registry.plugin_hint()}"
            )
        spec = registry.METHODS[rule]
        found = [r for r in (spec.draw, spec.choice) if not rules.is_own(r)]
        return found or [spec.draw]
    return [rule]


def _check_one(rule, data: Dataset | None) -> RuleReport:
    if not isinstance(rule, (rules.HowRule, rules.WhereRule)):
        return RuleReport(
            repr(rule), [f"expected a rules.HowRule or rules.WhereRule object (or class), got {type(rule).__name__}"]
        )
    report = RuleReport(f"{rules.rule_kind(rule)} rule {rules.rule_name(rule)}")
    report.breaches += _declarations(rule)
    if report.breaches or not getattr(rule, "pretrains", True):
        return report  # (a rule that never pretrains draws nothing)
    data = data if data is not None else _default_table()
    full, again = _Trial(rule, data, SEEDS), _Trial(rule, data, SEEDS)
    alone = [_Trial(rule, data, (seed,)) for seed in SEEDS]
    before = identity.attribute_digests(rule)
    for trial in (full, again, *alone):
        trial.run()
    report.breaches += full.breaches + _self_changes(before, identity.attribute_digests(rule))
    if full.breaches:
        return report  # (its outputs are stand-ins: comparing them says nothing)
    if not full.same_calls(again, None):
        report.breaches.append(
            "not deterministic: the same run twice drew differently; draw only from members.gens "
            "(e.g. torch.rand(..., generator=members.gens[j])), never from a global one (torch's, NumPy's np.random, "
            "Python's random)"
        )
        return report
    for position, trial in enumerate(alone):
        if not full.same_calls(trial, position, alone_position=0):
            report.breaches.append(
                f"member {position}'s draws depend on the other members of its stack: trained alone it drew "
                f"differently; draw member j's values from members.gens[j] and its own rows only"
            )
            break
    return report


def _self_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """A rule or objective that set attributes on itself while it trained: its key (its whole
    state) would differ from one run to the next, and a run's work would leak into the next."""
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    if not changed:
        return []
    names = ", ".join(f"self.{name}" for name in changed)
    return [
        f"it changed its own state while it trained ({names}): keep what a run computes in what "
        "prepare() returns (handed back as state), not on the object"
    ]


def _declarations(rule) -> list[str]:
    """Breaches of what the rule declares (checked before it runs)."""
    out = _name_declared(rule)
    if isinstance(rule, rules.HowRule) and rule.needs not in rules.NEEDS:
        out.append(f"needs must be one of {', '.join(map(repr, rules.NEEDS))}, got {rule.needs!r}")
    return out + _reads_and_params(rule, f"rule {rule.name!r}: its ", (rule.settings, rule.switches))


def _name_declared(declared) -> list[str]:
    """A rule's or objective's ``name``: a simple identifier (the registry's key)."""
    if not isinstance(declared.name, str) or not declared.name.isidentifier():
        return [f"name must be a simple identifier, got {declared.name!r}"]
    return []


def _reads_and_params(declared, label: str, reads: tuple) -> list[str]:
    """What a rule and an objective both declare for their keys: the ``Config`` fields they read
    (``reads``: settings, switches) and ``key_params()``, a dict."""
    out = []
    try:
        registry.check_rule_settings(declared)
        check_reads(label, reads)
    except (registry.RegistryError, ConfigError) as e:
        out.append(str(e))
    try:
        params = declared.key_params()
        if not isinstance(params, dict):
            out.append(f"key_params() must return a dict, got {type(params).__name__}")
    except Exception as e:
        out.append(f"key_params() failed: {type(e).__name__}: {e}")
    return out


def _table(data) -> Dataset | None:
    """What the caller gave as ``data``, as a :class:`~tcclib.data.sources.Dataset`."""
    if data is None or isinstance(data, Dataset):
        return data
    if isinstance(data, str):
        return load_dataset(data)
    if isinstance(data, pd.DataFrame):
        return _frame_table(data)
    if isinstance(data, tuple) and len(data) == 2:
        return from_frame(*data, name="data")
    raise ConfigError(
        f"check_rule: data must be a tcclib Dataset (tcclib.load_dataset, tcclib.from_frame), a DataFrame "
        f"whose last column is the target, an (X, y) pair or a dataset name; got {type(data).__name__}"
    )


def _frame_table(frame: pd.DataFrame) -> Dataset:
    """A frame whose last column is the target, as a :class:`~tcclib.data.sources.Dataset`; an
    error that says which column it took for the target, and how to give another."""
    fix = "put the class column last, or pass data=(X, y)"
    if frame.shape[1] < 2:
        raise ConfigError(
            f"check_rule: data is a DataFrame of {frame.shape[1]} column{'s' if frame.shape[1] != 1 else ''}; it needs "
            f"the features and, last, the class column (the target): {fix}"
        )
    try:
        table = from_frame(frame.iloc[:, :-1], frame.iloc[:, -1], name="data")
        prepare_config(table, Config(seeds=SEEDS, **TRIAL))  # (its classes split as the trials split them)
    except DatasetError as e:
        raise DatasetError(
            f"check_rule: data's last column {frame.columns[-1]!r} is taken as the target ({fix}): {e}"
        ) from None
    return table


def _default_table() -> Dataset:
    """breast_cancer (scikit-learn's copy), its first 12 features: seconds to train."""
    bc = load_dataset("breast_cancer")
    return from_frame(bc.X.iloc[:, :12], bc.y, name="breast_cancer_12")


@contextlib.contextmanager
def _registered_for_the_trial(name: str, probe):
    """The trial method ``name`` (the probe as its how or where rule) in the registry while the
    trial trains (training finds its methods there), under :data:`ORIGIN`; taken out afterwards,
    whatever happened, also when its registration itself failed half-way (what it replaced is put
    back)."""
    try:
        with plugins.registering_as(ORIGIN):
            if isinstance(probe, rules.HowRule):
                registry.register_method(name, probe, "uniform", replace=True, replace_rule=True)
            else:
                registry.register_method(name, "pseudo", probe, replace=True, replace_rule=True)
        yield
    finally:
        registry.remove_origin(ORIGIN)


class _Trial:
    """One short pretraining of the rule (wrapped in a recording probe) on the table's ``seeds``."""

    def __init__(self, rule, data: Dataset, seeds):
        self.rule, self.data, self.seeds = rule, data, tuple(seeds)
        self.breaches: list[str] = []
        self.kinds: set[str] = set()  # the kinds of breach found (each is reported once)
        self.calls: list[dict[int, torch.Tensor]] = []  # per call: {table seed position: output}
        self.n_calls = 0  # donors() or mask() calls so far

    def run(self) -> None:
        name = f"_check_{self.rule.name}" if isinstance(self.rule.name, str) else "_check_rule"
        probe = (_HowProbe if isinstance(self.rule, rules.HowRule) else _WhereProbe)(self.rule, name, self)
        try:
            with _registered_for_the_trial(name, probe):
                cfg = Config(seeds=self.seeds, methods=(name,), **TRIAL)
                prep = prepare_config(self.data, cfg)
                importance = None
                if getattr(self.rule, "needs_importance", False):
                    importance = np.stack([importance_matrix(sp, cfg) for sp in prep.splits])
                pretrain(set_up(prep, cfg, importance, "check_rule"), "check_rule")
        except identity.Unkeyable as e:
            raise _as_the_users(e, probe, self.rule) from e

    def breach(self, text: str, kind: str | None = None) -> None:
        """Report ``text``, unless a breach of the same ``kind`` (default: the text) was."""
        kind = kind or text
        if kind not in self.kinds:
            self.kinds.add(kind)
            self.breaches.append(text)

    def record(self, members: rules.Members, out: torch.Tensor) -> None:
        positions = members.seed_index.tolist()
        self.calls.append({s: out[j].detach().cpu().clone() for j, s in enumerate(positions)})

    def same_calls(self, other: _Trial, position: int | None, alone_position: int | None = None) -> bool:
        """Whether ``other`` drew what this trial drew: every member (``position`` None), or this
        trial's member at table seed ``position`` against ``other``'s at ``alone_position``."""
        if len(self.calls) != len(other.calls):
            return False
        for mine, theirs in zip(self.calls, other.calls):
            if position is None:
                pairs = [(mine.get(s), theirs.get(s)) for s in mine.keys() | theirs.keys()]
            else:
                pairs = [(mine.get(position), theirs.get(alone_position))]
            if any(a is None or b is None or not torch.equal(a, b) for a, b in pairs):
                return False
        return True


def _as_the_users(error: identity.Unkeyable, probe, users) -> identity.Unkeyable:
    """A refusal met in a trial, naming the user's rule or objective where it named the probe
    that wraps it (``how rule '_check_nearby' (check.py)``)."""
    return identity.Unkeyable(str(error).replace(registry.named_as(probe), registry.named_as(users)))


_FAILED = object()
"""What a prepare gave when it failed (with other labels: its state is then not the same)."""


class _Probe:
    """Shared by the how and where probes: call the user's rule, check and record what it gives,
    and hand training a valid stand-in when it breaks the contract (so the check goes on)."""

    def _setup(self, rule, name: str, trial: _Trial) -> None:
        self.rule, self.name, self.trial = rule, name, trial
        self.settings, self.switches = tuple(rule.settings), tuple(rule.switches)
        self.failed = False  # the rule's prepare failed: its draws are not asked for
        self._rows = self._rows_copy = None

    def key_params(self) -> dict:
        return {}

    @property
    def checked(self):
        """The user's rule this probe calls (it reads the settings as that rule does)."""
        return self.rule

    def _call(self, what: str, action):
        """The rule's ``what`` (errors named, its rows untouched); None after a failure."""
        try:
            return self._guarded(what, action)
        except BREACHES as e:
            self.trial.breach(str(e), f"{what} failed")
            return None

    def _guarded(self, what: str, action):
        """The rule's ``what``, its own error raised as a :class:`~tcclib.method.rules.RuleContractError`
        naming it; rows it wrote into are a breach, and put back."""
        try:
            return rules.call_rule(self.rule, what, action)
        finally:
            if self._rows is not None and not torch.equal(self._rows, self._rows_copy):
                self.trial.breach(f"{what}() wrote into members.raw (the training rows): work on a copy", "rows")
                self._rows.copy_(self._rows_copy)

    def _as_registered(self, members: rules.Members) -> rules.Members:
        """``members`` as the rule sees them in a method of its own: the specs name the rule, not the probe."""
        part = "how" if isinstance(self.rule, rules.HowRule) else "where"
        specs = [dataclasses.replace(spec, **{part: self.rule.name}) for spec in members.specs]
        return dataclasses.replace(members, specs=specs)

    def _watch_rows(self, members: rules.Members) -> None:
        """Keep a copy of the training rows, to tell a rule that writes into them."""
        self._rows, self._rows_copy = members.all_rows, members.all_rows.clone()

    def _prepared(self, call, members: rules.Members):
        """The rule's prepare of ``members``: its state, or :data:`_FAILED` when it failed (a
        breach; its draws are not asked for then, they would fail too).  Reading labels that are
        not known yet raises :class:`~tcclib.method.rules.LabelsNotKnown`."""
        try:
            return self._guarded("prepare", lambda: call(members))
        except rules.LabelsNotKnown:
            raise
        except BREACHES as e:
            self.trial.breach(str(e), "prepare failed")
            self.failed = True
            return _FAILED

    def _prepare(self, members: rules.Members, call, labels_current: bool):
        """The rule's prepare; when the labels are not current then, prepare again with other
        labels (and the generators as they were) and compare: a difference is a breach."""
        self._watch_rows(members)
        gens = [_clone(g) for g in members.gens]
        if not labels_current and isinstance(members.labels, rules.UnknownLabels):
            members = dataclasses.replace(members, labels=rules.UnknownLabels(self.rule))  # (named: the user's rule)
            try:  # training hands such a prepare rules.UnknownLabels: reading them is the breach
                state = self._prepared(call, members)
                return None if state is _FAILED else state
            except rules.LabelsNotKnown as e:
                self.trial.breach(str(e), "labels in prepare")
                members = _with_labels(members, gens)  # (labels to go on with: the rest is checked too)
                labels_current = True
        state = self._prepared(call, members)
        if state is _FAILED:
            return None
        if not labels_current:
            other = _with_labels(members, gens)
            try:
                moved = call(other)
            except BREACHES as e:
                self.trial.breach(str(e), "labels in prepare")
                return state
            except Exception:
                moved = _FAILED
            if moved is _FAILED or not _same_state(state, moved):
                self.trial.breach(
                    f"prepare() depends on members.labels, which are not current when it runs (pseudo-labels "
                    f"are refreshed after prepare); read the labels in {self._draw_name}() instead",
                    "labels in prepare",
                )
        return state


class _HowProbe(_Probe, rules.HowRule):
    _draw_name = "donors"

    def __init__(self, rule, name: str, trial: _Trial):
        self._setup(rule, name, trial)
        self.needs = rule.needs

    def prepare(self, members: rules.Members):
        return self._prepare(self._as_registered(members), self.rule.prepare, self.needs != rules.PSEUDO_LABELS)

    def donors(self, members: rules.Members, state, u: torch.Tensor) -> torch.Tensor:
        members = self._as_registered(members)
        k, N, M = members.shape
        self.trial.n_calls += 1
        out = None if self.failed else self._call("donors", lambda: self.rule.donors(members, state, u.clone()))
        if out is not None and _donor_breach(self.trial, self.rule, out, (k, N, M), self.trial.n_calls):
            out = None
        if out is None:
            return rules.draw_donors(members.labels, members.n_classes, u)
        self.trial.record(members, out)
        return out


class _WhereProbe(_Probe, rules.WhereRule):
    _draw_name = "mask"

    def __init__(self, rule, name: str, trial: _Trial):
        self._setup(rule, name, trial)
        self.needs_importance = rule.needs_importance

    def prepare(self, members: rules.Members, importance):
        return self._prepare(self._as_registered(members), lambda m: self.rule.prepare(m, importance), False)

    def mask(self, members: rules.Members, state) -> torch.Tensor:
        members = self._as_registered(members)
        self.trial.n_calls += 1
        out = None if self.failed else self._call("mask", lambda: self.rule.mask(members, state))
        if out is not None and _mask_breach(self.trial, self.rule, out, members, self.trial.n_calls):
            out = None
        if out is None:
            _, N, M = members.shape
            u = rules.member_uniforms(members.gens, (N, M), members.device)
            return rules.uniform_mask(u, members.active, members.corrupted)
        self.trial.record(members, out)
        return out


def _donor_breach(trial: _Trial, rule, out, shape, call: int) -> bool:
    """Record the donors' breach of call ``call`` (True: there was one)."""
    try:
        rules.check_donors(rule, out, shape)
    except rules.RuleContractError as e:
        trial.breach(f"{e} (call {call})", "donors")
        return True
    return False


def _mask_breach(trial: _Trial, rule, out, members: rules.Members, call: int) -> bool:
    """Record the mask's breach of call ``call``: its type and shape, then the count of replaced
    features per row (``members.corrupted[m]``, all of them active)."""
    try:
        rules.check_mask(rule, out, members.shape)
    except rules.RuleContractError as e:
        trial.breach(f"{e} (call {call})", "mask")
        return True
    inactive = out & ~members.active.unsqueeze(1)
    if bool(inactive.any()):
        trial.breach(f"mask() replaces inactive features (members.active is False there) (call {call})", "inactive")
        return True
    if not getattr(rule, "fixed_count", True):  # (a count that varies by row, as a Bernoulli mask's)
        return False
    counts = out.sum(-1)
    want = members.corrupted.view(-1, 1).to(counts.dtype)
    if not bool((counts == want).all()):
        m, row = (counts != want).nonzero()[0].tolist()
        trial.breach(
            f"mask() must replace members.corrupted[m] features per row: member {m}, row {row} has "
            f"{int(counts[m, row])} where members.corrupted[{m}] = {int(want[m, 0])} (call {call})",
            "count",
        )
        return True
    return False


def _with_labels(members: rules.Members, gens) -> rules.Members:
    """``members`` with other labels (a fixed draw over the classes) and the given generators."""
    g = torch.Generator().manual_seed(12345)
    n_classes = max(int(members.n_classes), 2)
    k, n_rows, _ = members.shape  # (members.labels may be rules.UnknownLabels here)
    labels = torch.randint(0, n_classes, (k, n_rows), generator=g).to(members.device)
    return dataclasses.replace(members, labels=labels, n_classes=n_classes, gens=gens)


def _clone(g: torch.Generator) -> torch.Generator:
    copy = torch.Generator(device=g.device)
    copy.set_state(g.get_state())
    return copy


def _same_state(a, b) -> bool:
    """Whether two prepared states are equal (tensors and arrays by value; other objects by their
    attributes; what cannot be compared counts as equal)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and torch.equal(a.cpu(), b.cpu())
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(itertools.starmap(_same_state, zip(a, b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and hasattr(b, "__dict__") and type(a) is type(b):
        return _same_state(vars(a), vars(b))
    try:
        return bool(a == b)
    except Exception:
        return True


# --------------------------------------------------------------------------- objectives


def check_objective(objective, data: Dataset | None = None, raise_on_breach: bool = True) -> RuleReport:
    """Check an objective's contract (``docs/rules.md``) in a real short pretraining, as
    :func:`check_rule` checks a rule's (``check_rule`` hands an objective here): its declarations
    (name, ``views``, ``settings``, ``key_params()``, ``heads()``), then every call of ``loss()``
    (a float ``[k]`` tensor with a gradient, finite), that it is deterministic and that each
    member's loss depends on that member alone (trained alone, it gives the same losses).

    ``objective``: an :class:`~tcclib.method.objectives.Objective` object (a class is made with
    no arguments) or the name of a registered objective or of a method (its objective);
    ``data``: as :func:`check_rule`'s.  Returns a :class:`RuleReport`; raises
    :class:`~tcclib.method.rules.RuleContractError` listing every breach unless
    ``raise_on_breach`` is False."""
    objective = _objective_of(objective)
    report = RuleReport(f"objective {objectives.objective_name(objective)}")
    report.breaches += _objective_declarations(objective)
    if not report.breaches:
        data = _table(data) if data is not None else _default_table()
        full, again = _ObjectiveTrial(objective, data, SEEDS), _ObjectiveTrial(objective, data, SEEDS)
        alone = [_ObjectiveTrial(objective, data, (seed,)) for seed in SEEDS]
        before = identity.attribute_digests(objective)
        for trial in (full, again, *alone):
            trial.run()
        report.breaches += full.breaches + _self_changes(before, identity.attribute_digests(objective))
        if not full.breaches:
            if not full.same_losses(again, exact=True):
                report.breaches.append(
                    "not deterministic: the same run twice gave other losses; draw nothing at random in "
                    "prepare(), heads() or loss() (the views are drawn by the method's rules; a fixed value "
                    "of yours goes into the object's state)"
                )
            else:
                for position, trial in enumerate(alone):
                    if not full.same_losses(trial, position):
                        report.breaches.append(
                            f"member {position}'s loss depends on the other members of its stack: trained alone it "
                            f"gave other losses; compute each member's loss from its own rows (reduce over rows "
                            f"and columns, never over the first dimension)"
                        )
                        break
    return report.raise_if_breached() if raise_on_breach else report


def _objective_of(objective):
    """The objective object to check for what the caller gave."""
    if isinstance(objective, type) and issubclass(objective, objectives.Objective):
        try:
            return objective()
        except Exception as e:
            raise rules.RuleContractError(
                f"check_objective: {objective.__name__}() cannot be made with no arguments "
                f"({type(e).__name__}: {e}); pass an object, e.g. check_objective({objective.__name__}(...))"
            ) from None
    if isinstance(objective, str):
        if objective in registry.OBJECTIVES:
            return registry.objective(objective)
        if objective in registry.METHODS:
            return registry.METHODS[objective].learns
        known = list(dict.fromkeys([*registry.OBJECTIVES, *registry.method_names()]))  # (a method may share its name)
        close = difflib.get_close_matches(objective, known, n=3)
        raise registry.RegistryError(
            f"check_objective: no objective or method is called {objective!r}"
            + (f" (did you mean {', '.join(close)}?)" if close else "")
            + f"; objectives: {', '.join(registry.OBJECTIVES)}{registry.plugin_hint()}"
        )
    if not isinstance(objective, objectives.Objective):
        raise rules.RuleContractError(
            f"check_objective: expected a tcclib.method.objectives.Objective object (or class), got "
            f"{type(objective).__name__}"
        )
    return objective


def _objective_declarations(objective) -> list[str]:
    """Breaches of what the objective declares (checked before it runs)."""
    out = _name_declared(objective)
    if not (isinstance(objective.views, int) and objective.views >= 1):
        out.append(f"views must be an integer >= 1, got {objective.views!r}")
    embedding = getattr(objective, "embedding", "last")
    if embedding not in objectives.EMBEDDINGS:
        out.append(f"embedding must be one of {', '.join(map(repr, objectives.EMBEDDINGS))}, got {embedding!r}")
    return out + _reads_and_params(objective, f"objective {objective.name!r}: its ", (objective.settings, ()))


class _ObjectiveProbe(objectives.Objective):
    """The user's objective as training calls it, each loss checked and recorded (a stand-in
    loss where it breaks the contract, so that the check goes on)."""

    def __init__(self, objective, name: str, trial: _ObjectiveTrial):
        self.objective, self.name, self.trial = objective, name, trial
        self.views, self.needs_changed = objective.views, objective.needs_changed
        self.settings = tuple(objective.settings)
        embedding = getattr(objective, "embedding", "last")  # (a bad one is a declaration's breach)
        self.embedding = embedding if embedding in objectives.EMBEDDINGS else "last"

    @property
    def checked(self):
        """The user's objective this probe calls (it reads the settings as that objective does)."""
        return self.objective

    def heads(self, stack):
        try:
            heads = objectives.call(self.objective, "heads", lambda: self.objective.heads(stack))
            objectives.check_heads(self.objective, heads)
            return heads
        except BREACHES as e:
            self.trial.breach(str(e), "heads")
            return {"stand_in": [stack.hidden]}

    def prepare(self, stack):
        try:
            return objectives.call(self.objective, "prepare", lambda: self.objective.prepare(stack))
        except BREACHES as e:
            self.trial.breach(str(e), "prepare")
            return None

    def embedding_views(self, stack, state):
        return self._checked_hook("embedding_views", objectives.check_embedding_views, stack, state)

    def encoder_inputs(self, stack, state):
        return self._checked_hook("encoder_inputs", objectives.check_encoder_inputs, stack, state)

    def _checked_hook(self, hook: str, check, stack, state):
        """The objective's ``hook(stack, state)`` checked by ``check``; a breach recorded and None
        instead (the default's answer), so that the check goes on."""
        try:
            found = objectives.call(self.objective, hook, lambda: getattr(self.objective, hook)(stack, state))
            check(self.objective, found, stack)
            return found
        except BREACHES as e:
            self.trial.breach(str(e), hook)
            return None

    def loss(self, batch: objectives.Batch) -> torch.Tensor:
        self.trial.n_calls += 1
        try:
            if "heads" in self.trial.kinds or "prepare" in self.trial.kinds:
                raise _StandIn
            loss = objectives.user_loss(self.objective, batch, first=self.trial.n_calls == 1)
            if not bool(torch.isfinite(loss.detach()).all()):
                raise rules.RuleContractError(
                    f"objective {objectives.objective_name(self.objective)}: loss() returned a loss that is not "
                    f"finite ({loss.detach().tolist()})"
                )
        except BREACHES as e:
            self.trial.breach(f"{e} (call {self.trial.n_calls})", "loss")
            loss = None
        except _StandIn:
            loss = None
        if loss is None:  # a stand-in with a gradient: the check goes on
            return batch.encode(batch.views).float().mean((1, 2)) * 0.0
        positions = batch._pt.seed_idx.tolist()
        self.trial.calls.append({s: float(loss[j].detach()) for j, s in enumerate(positions)})
        return loss


class _StandIn(Exception):
    """(an earlier breach: train on with the stand-in loss)"""


class _ObjectiveTrial(_Trial):
    """One short pretraining of a method learning the objective (wrapped in a recording probe)."""

    def __init__(self, objective, data: Dataset, seeds):
        super().__init__(objective, data, seeds)
        self.calls: list[dict[int, float]] = []

    def run(self) -> None:
        name = f"_check_{self.rule.name}" if isinstance(self.rule.name, str) else "_check_objective"
        probe = _ObjectiveProbe(self.rule, name, self)
        with plugins.registering_as(ORIGIN):
            registry.register_method(name, "column", "uniform", objective=probe, replace=True, replace_rule=True)
        try:
            cfg = Config(
                seeds=self.seeds,
                methods=(name,),
                epochs=3,
                head_epochs=5,
                hidden_dim=32,
                progress=False,
                device="cpu",
                compile="off",
            )
            prep = prepare_config(self.data, cfg)
            pretrain(set_up(prep, cfg, None, "check_objective"), "check_objective")
        except BREACHES as e:
            self.breach(str(e))
        except identity.Unkeyable as e:
            raise _as_the_users(e, probe, self.rule) from e
        finally:
            registry.remove_origin(ORIGIN)

    def same_losses(self, other: _ObjectiveTrial, position: int | None = None, exact: bool = False) -> bool:
        """Whether ``other`` gave this trial's losses: every member's (``position`` None), or this
        trial's member at table seed ``position`` against ``other``'s only member (within float
        rounding unless ``exact``)."""
        if len(self.calls) != len(other.calls):
            return False
        for mine, theirs in zip(self.calls, other.calls):
            pairs = [(mine[s], theirs[s]) for s in mine] if position is None else [(mine[position], theirs[0])]
            tolerance = 0.0 if exact else 1e-4
            if any(abs(a - b) > tolerance * max(1.0, abs(a)) for a, b in pairs):
                return False
        return True
