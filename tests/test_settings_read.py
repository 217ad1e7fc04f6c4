"""A user's rule, objective or baseline reads only the settings its results' keys hold.

A setting enters a member's content key when every member reads it (``key=MEMBER``), every
pretrained member (``PRETRAINED``), the split (``stage="data"``), a variant in force, or when the
member's rules or objective declare it in their ``settings`` (a baseline: ``register_baseline``'s
``settings``).  Before this, a user's code could read any field of ``cfg`` (``members.cfg``,
``batch.cfg``, ``stack.cfg``, a factory's ``cfg``): a run at another ``pseudo_every`` then reused
the results made at the first, with no word.  Now a declared setting is keyed by its value (an
objective's too, which only named its settings) and an undeclared read stops the run in one line
naming the reader, the setting, the line and the fix (:class:`tcclib.method.config.KeyedSettings`).
The objectives' edits at the end are the rules' matrix of ``test_keys_by_value.py`` for the
third part of a method.
"""

from __future__ import annotations

import pickle
import re
import sys
import types

import pytest
from places import Place
from sklearn.linear_model import LogisticRegression

from tcclib.artifacts import keys
from tcclib.method import check, plugins, registry, rules, training
from tcclib.method.baselines import run_baselines
from tcclib.method.config import SETTINGS, Config, member_keyed
from tcclib.method.inputs import prepare_config
from tcclib.method.settings import UnkeyedSettingError
from tcclib.running.train import run_dataset

TINY = dict(seeds=(0, 1), epochs=1, head_epochs=1, progress=False)

RULE = """
import torch

from tcclib.method import registry, rules


class Shift(rules.HowRule):
    name = "shift"
    needs = rules.NOTHING
    settings = {settings}

    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        step = 1 + int(members.cfg.pseudo_every)
        rows = (torch.arange(n_rows, device=u.device).view(1, n_rows, 1) + step) % n_rows
        return rows.expand(k, n_rows, n_features).contiguous()


registry.register_method("shift", Shift(), "uniform", replace=True, replace_rule=True)
"""

OBJECTIVE = """
from tcclib.method import objectives, registry


class Rebuild(objectives.Objective):
    name = "rebuild"
    settings = {settings}

    def heads(self, stack):
        return {{"decoder": [stack.hidden] * {depth} + [stack.width]}}

    def prepare(self, stack):
        return {prepare}

    def loss(self, batch):
        out = batch.head("decoder", batch.encode(batch.views))
        return objectives.row_squared_error(out, batch.anchors) * {factor}


registry.register_method("rebuild", "column", "uniform", objective=Rebuild(), replace=True, replace_rule=True)
"""

READS = "{0}.cfg.pseudo_every"
OBJECTIVE_READS = {  # where the objective reads pseudo_every: its loss, its heads, its prepare
    "loss": dict(depth="0", prepare="None", factor="(1 + batch.cfg.pseudo_every)"),
    "heads": dict(depth="(stack.cfg.pseudo_every % 2)", prepare="None", factor="1"),
    "prepare": dict(depth="0", prepare="stack.cfg.pseudo_every", factor="batch.state"),
}


def objective(where: str, settings: str = "()") -> str:
    return OBJECTIVE.format(settings=settings, **OBJECTIVE_READS[where])


@pytest.fixture(autouse=True)
def no_plugins_left():
    yield
    for plugin in plugins.loaded():
        plugins.unload(plugin.path or plugin.module)
    for name in ("shift", "rebuild", "made_here"):
        if name in registry.METHODS or name in registry.BASELINES:
            registry.unregister(name)


@pytest.fixture(scope="module")
def prep(bc):
    return prepare_config(bc, Config(methods=("random",), **TINY))


def load(tmp_path, name: str, source: str) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    plugins.load(str(path))


def moved(data, method: str, **changed) -> set[str]:
    """The methods whose member keys move when ``changed`` is set (against the defaults), each
    run's data prepared as its settings say (the split's settings move the split)."""
    methods = tuple(dict.fromkeys(("random", method)))
    found = []
    for cfg in (Config(methods=methods, **TINY), Config(methods=methods, **{**TINY, **changed})):
        found.append(keys.run_keys(prepare_config(data, cfg), cfg).members)
    before, after = found
    return {tag.split("/")[1] for tag in before if before[tag] != after[tag]}


# ------------------------------------------------------------------- what may be read is keyed

OTHER = {  # a valid value other than the default, for every setting a member's key may hold
    "epochs": 3,
    "batch_size": 128,
    "lr": 2e-3,
    "head_epochs": 7,
    "pseudo_every": 5,
    "corruption_rate": 0.5,
    "labeled_fraction": 0.5,
    "test_fraction": 0.3,
    "temperature": 0.5,
    "corr_temperature": 0.5,
    "corr_normalization": "minmax",
    "hidden_dim": 64,
    "encoder_depth": 3,
    "head_depth": 3,
    "head": "concat",
    "bias_init": 0.02,
    "device": "cuda",
    "matmul_precision": "bf16",
    "draws": "counter",
    "xgb_trees": 50,
    "xgb_depth": 5,
    "xgb_eta": 0.2,
    "xgb_subsample": 0.5,
    "xgb_colsample": 0.5,
    "xgb_max_bin": 64,
    "labeled_split": "random",
    "corr_rule": "authors",
    "xgb_categorical": "native",
    "xgb_seed": "xgboost_default",
    "zero_importance": "keep",
    "pseudo_schedule": "authors",
    "encoder_init": "per_method",
}


@pytest.mark.parametrize("method", ["random", "class", "class_most", "vime_class", "subtab"])
def test_every_setting_a_members_code_may_read_moves_its_key(method, bc):
    """What :func:`member_keyed` lets a rule or objective read is what ``member_key`` holds: each
    of those settings, set to another value, moves the method's member keys."""
    spec = registry.METHODS[method]
    readable = member_keyed(Config(**TINY), [spec])
    assert {"seeds", "methods", "keep_embeddings", "compile", "encoder_lr", "fidelity"}.isdisjoint(readable)
    assert ("xgb_trees" in readable) == spec.needs_importance
    assert ("pseudo_every" in readable) == spec.pseudo_labelled
    for name in sorted(readable):
        assert method in moved(bc, method, **{name: OTHER[name]}), name


def test_every_setting_has_another_value_here():
    """(The table above covers every setting a member's key can hold.)"""
    keyable = {n for n, s in SETTINGS.items() if s.key not in ("names", "none", "step")} - {"seeds", "fidelity"}
    assert keyable - {"encoder_lr"} <= set(OTHER)


# ------------------------------------------------------------------- undeclared: refused


@pytest.mark.parametrize("reader", ["how rule", "objective loss", "objective heads", "objective prepare"])
def test_a_setting_read_but_not_declared_stops_the_run_in_one_line(reader, tmp_path, bc):
    if reader == "how rule":
        load(tmp_path, "shift_rule", RULE.format(settings="()"))
        method, named, line = "shift", "how rule 'shift' (shift_rule.py)", 14
    else:
        where = reader.split()[1]
        load(tmp_path, "rebuild_objective", objective(where))
        method, named = "rebuild", "objective 'rebuild' (rebuild_objective.py)"
        line = {"loss": 17, "heads": 10, "prepare": 13}[where]
    cfg = Config(methods=(method,), **{**TINY, "seeds": (0,)})
    with pytest.raises(rules.RuleContractError) as found:  # (the contract check before any work)
        run_dataset(bc, cfg)
    call = " (call 1)" if reader == "objective loss" else ""  # (check_objective's count of loss() calls)
    assert str(found.value) == (
        f"method {method}: {named} read the setting pseudo_every at line {line}, which its results' content keys do "
        f"not hold, so a run at another pseudo_every would reuse them: declare it in its class's settings "
        f"(settings = ('pseudo_every',)), then a change of it retrains them{call}"
    )
    with pytest.raises(UnkeyedSettingError, match=f"^{re.escape(named)} read the setting pseudo_every at line {line},"):
        training.pretrain(training.set_up(prepare_config(bc, cfg), cfg, None, "core"), "core")  # (the read itself)
    report = check.check_rule(method, raise_on_breach=False)  # (what a sweep runs before any work)
    assert not report.ok and "read the setting pseudo_every" in report.breaches[0]


def test_a_baseline_factory_reading_an_undeclared_setting_is_refused(prep):
    def made_here(seed, cfg):
        return LogisticRegression(max_iter=cfg.head_epochs, random_state=seed)

    registry.register_baseline("made_here", made_here)
    cfg = Config(methods=("random",), baselines=("made_here",), **TINY)
    with pytest.raises(
        UnkeyedSettingError,
        match=r"^baseline 'made_here' \(its factory .*made_here\) read the setting "
        r"head_epochs at line \d+ of test_settings_read.py, .* declare it in register_baseline's "
        r"settings \(settings=\['head_epochs'\]\)",
    ):
        run_baselines(prep, cfg, methods=["made_here"])
    registry.register_baseline("made_here", made_here, settings=["head_epochs"], replace=True)
    assert len(run_baselines(prep, cfg, methods=["made_here"])) == 2
    before = keys.run_keys(prep, cfg).baselines
    assert (
        keys.run_keys(
            prep, Config(methods=("random",), baselines=("made_here",), **{**TINY, "head_epochs": 9})
        ).baselines
        != before
    )


# ------------------------------------------------------------------- declared: keyed by value


@pytest.mark.parametrize("reader", ["how rule", "objective loss", "objective heads", "objective prepare"])
def test_a_declared_setting_is_keyed_by_its_value_and_trains(reader, tmp_path, prep, bc):
    if reader == "how rule":
        load(tmp_path, "shift_rule", RULE.format(settings="('pseudo_every',)"))
        method = "shift"
    else:
        load(tmp_path, "rebuild_objective", objective(reader.split()[1], "('pseudo_every',)"))
        method = "rebuild"
    assert moved(bc, method, pseudo_every=5) == {method}
    run = run_dataset(bc, Config(methods=(method,), **{**TINY, "seeds": (0,)}))
    assert run.timings["trained_members"] == 1


# ------------------------------------------------------------------- the view itself


def test_the_view_reads_values_in_force_runs_configs_methods_on_itself_and_is_read_only():
    cfg = Config(**TINY)
    seen = cfg.seen_by_members([registry.METHODS["random"]], "how rule 'x' (x.py)")
    assert seen.labeled_split == "stratified" and seen.draws == "generator"  # (values in force, not "auto")
    assert seen.corrupted_count(10) == 4 and seen.lr == cfg.lr
    with pytest.raises(
        UnkeyedSettingError, match=r"read the setting pseudo_every at line \d+ of test_settings_read.py"
    ):
        seen.refresh_epochs()  # (Config's own method reads pseudo_every through the view)
    assert not hasattr(seen, "no_such_setting")
    with pytest.raises(Exception, match="read-only"):
        seen.lr = 1.0
    assert pickle.loads(pickle.dumps(seen)).lr == cfg.lr
    declared = cfg.seen_by_members([registry.METHODS["class_most"]], "r")
    assert declared.corr_temperature == cfg.corr_temperature and declared.xgb_trees == cfg.xgb_trees


# ------------------------------------------------------------------- an objective's edits

OBJ = """
import functools

import torch

from tcclib.method import objectives, registry
{prelude}


class Rebuild(objectives.Objective):
    name = "rebuild"
{body}
    def heads(self, stack):
        return {{"decoder": {heads}}}

    def loss(self, batch):
        out = batch.head("decoder", batch.encode(batch.views))
        return objectives.row_squared_error(out, batch.anchors) * ({factor})


registry.register_method("rebuild", "column", "uniform", objective={make}, replace=True, replace_rule=True)
"""


def obj(prelude="", body="", factor="1", make="Rebuild()", heads="[stack.width]") -> str:
    return OBJ.format(prelude=prelude, body=body, factor=factor, make=make, heads=heads)


INIT = "    def __init__(self, weight=1):\n        self.weight = weight\n"
OBJECTIVE_EDITS = {
    "a constant read in the class body": (
        obj("WEIGHT = 1", "    weight = WEIGHT\n", "self.weight"),
        obj("WEIGHT = 2", "    weight = WEIGHT\n", "self.weight"),
    ),
    "an __init__ default": (
        obj(body=INIT, factor="self.weight"),
        obj(body=INIT.replace("=1", "=2"), factor="self.weight"),
    ),
    "an argument under another name, no key_params": (
        obj(body="    def __init__(self, w=1):\n        self._w = w\n", factor="self._w", make="Rebuild(w=1)"),
        obj(body="    def __init__(self, w=1):\n        self._w = w\n", factor="self._w", make="Rebuild(w=3)"),
    ),
    "a helper's default argument": (
        obj("def helper(by=1):\n    return by", factor="helper()"),
        obj("def helper(by=2):\n    return by", factor="helper()"),
    ),
    "a tensor constant": (
        obj("WEIGHT = torch.tensor([1.0])", factor="WEIGHT"),
        obj("WEIGHT = torch.tensor([2.0])", factor="WEIGHT"),
    ),
    "a functools.partial": (
        obj("def times(a, b):\n    return a * b\n\n\nWEIGHT = functools.partial(times, 1)", factor="WEIGHT(1)"),
        obj("def times(a, b):\n    return a * b\n\n\nWEIGHT = functools.partial(times, 2)", factor="WEIGHT(1)"),
    ),
    "the heads' widths through a constant": (
        obj("DEPTH = 1", heads="[stack.hidden] * DEPTH + [stack.width]"),
        obj("DEPTH = 2", heads="[stack.hidden] * DEPTH + [stack.width]"),
    ),
    "the embedding": (obj(body="    embedding = 'last'\n"), obj(body="    embedding = 'deep_stack'\n")),
}


@pytest.mark.parametrize("place", ["file", "cell", "python -c"])
@pytest.mark.parametrize("edit", list(OBJECTIVE_EDITS))
def test_every_edit_of_a_users_objective_retrains_it_and_nothing_else(edit, place, tmp_path, prep, monkeypatch):
    if place != "file":
        monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    before, after = OBJECTIVE_EDITS[edit]
    written = Place(place, tmp_path, "rebuild_objective.py")
    try:
        written.run(before)
        cfg = Config(methods=("random", "rebuild"), **TINY)
        first = keys.run_keys(prep, cfg).members
        written.run(after)
        second = keys.run_keys(prep, cfg).members
    finally:
        registry.remove_origin("__main__")
    assert {tag.split("/")[1] for tag in first if first[tag] != second[tag]} == {"rebuild"}
    assert all(first[tag] != second[tag] for tag in first if tag.endswith("/rebuild"))


DELEGATES = """
from tcclib.method import objectives, registry


class Delegates(objectives.Objective):
    name = "rebuild"
    needs_changed = True

    def heads(self, stack):
        return registry.objective("vime").heads(stack)

    def loss(self, batch):
        return registry.objective("vime").loss(batch)


registry.register_method("rebuild", "column", "uniform", objective=Delegates(), replace=True, replace_rule=True)
"""


def test_a_users_objective_calling_a_builtin_changed_after_registration_retrains(tmp_path, prep):
    """The built-in's own members' keys move with its state (``registry.own_state``); a user's
    code can reach it through the registry, so its members' keys move too, and nothing else's."""
    load(tmp_path, "rebuild_objective", DELEGATES)
    cfg = Config(methods=("random", "vime", "rebuild"), **TINY)
    vime = registry.objective("vime")
    before, alpha = keys.run_keys(prep, cfg).members, vime.alpha
    vime.alpha = 7.0
    try:
        after = keys.run_keys(prep, cfg).members
    finally:
        vime.alpha = alpha
    assert {tag.split("/")[1] for tag in before if before[tag] != after[tag]} == {"vime", "rebuild"}
    assert keys.run_keys(prep, cfg).members == before


def test_a_contract_check_leaves_no_builtin_changed(tmp_path):
    """``check_rule`` registers tcclib's probes of a user's rule for its trial and removes them;
    their state, changed by the trial, is no built-in changed since registration (it moved the
    keys of every user method in the process, and a screen then redid its datasets)."""
    load(tmp_path, "shift_rule", RULE.format(settings="('pseudo_every',)"))
    assert check.check_rule("shift", raise_on_breach=False).ok
    assert registry.changed_builtins() == {}


def test_a_builtin_changed_after_registration_moves_no_other_builtin_methods_keys(prep):
    """Only a method with code of a user's takes every changed built-in into its key: `class`
    keeps its keys when `vime` changes, and `random` (its how rule changed too) is keyed by its
    own rule alone, the same with `vime` changed or not."""
    cfg = Config(methods=("random", "class", "vime"), **TINY)
    vime, column = registry.objective("vime"), registry.how_rule("column")
    before, alpha = keys.run_keys(prep, cfg).members, vime.alpha
    column.extra = 1
    try:
        column_alone = keys.run_keys(prep, cfg).members
        vime.alpha = 7.0
        both = keys.run_keys(prep, cfg).members
    finally:
        vime.alpha = alpha
        del column.extra
    assert {tag.split("/")[1] for tag in before if before[tag] != both[tag]} == {"random", "vime"}
    assert {tag: key for tag, key in both.items() if "/random" in tag} == {
        tag: key for tag, key in column_alone.items() if "/random" in tag
    }
