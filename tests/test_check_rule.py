"""``tcclib.check_rule``: a rule's contract checked in a real short pretraining, every breach
in one list; the built-ins and ``examples/*.py`` pass it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import tcclib
from tcclib.data.sources import DatasetError
from tcclib.method import plugins, registry, rules
from tcclib.method.check import RuleReport
from tcclib.method.config import Config
from tcclib.running.train import run_dataset
from tcclib.util.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class ColumnLike(rules.HowRule):
    """A valid rule: donors from the whole column (SCARF), drawn from the draws it is given."""

    name = "col_like"

    def donors(self, members, state, u):
        n_rows = members.shape[1]
        return (u * n_rows).long().clamp_max(n_rows - 1)


class LabelsInPrepare(rules.HowRule):
    """Groups the rows by label in prepare(): the pseudo-labels are not current there."""

    name = "labels_in_prepare"
    needs = rules.PSEUDO_LABELS

    def prepare(self, members):
        return rules.class_index(members.labels, members.n_classes)

    def donors(self, members, state, u):
        order, start, count = state
        st = start.gather(1, members.labels).unsqueeze(-1)
        ct = count.gather(1, members.labels).unsqueeze(-1)
        pos = (u * ct).long().clamp_max(ct - 1) + st
        k, n, m = u.shape
        return order.gather(1, pos.reshape(k, n * m)).reshape(k, n, m)


class FloatDonors(ColumnLike):
    name = "float_donors"

    def donors(self, members, state, u):
        return super().donors(members, state, u).float()


class WrongShape(ColumnLike):
    name = "wrong_shape"

    def donors(self, members, state, u):
        return super().donors(members, state, u)[:, :, :1]


class OutOfRangeLater(ColumnLike):
    """In range at its first call, out of range from its third: every call is checked."""

    name = "out_of_range_later"

    def prepare(self, members):
        return {"calls": 0}  # (a run's counter lives in its state, not on the rule)

    def donors(self, members, state, u):
        state["calls"] += 1
        out = super().donors(members, state, u)
        return out + members.shape[1] if state["calls"] >= 3 else out


class CountsOnItself(ColumnLike):
    """Keeps a run's work on the rule object: its state (its key) changes as it trains."""

    name = "counts_on_itself"

    def __init__(self):
        self.calls = 0

    def donors(self, members, state, u):
        self.calls += 1
        self.last_rows = members.shape[1]
        return super().donors(members, state, u)


class Raises(ColumnLike):
    name = "raises"

    def donors(self, members, state, u):
        raise KeyError("no such column")


class GlobalGenerator(ColumnLike):
    """Draws from torch's global generator, not the members' own."""

    name = "global_generator"

    def donors(self, members, state, u):
        return super().donors(members, state, torch.rand(u.shape))


class FirstMembersGenerator(ColumnLike):
    """Draws every member's values from the first member's generator."""

    name = "first_members_generator"

    def donors(self, members, state, u):
        draws = torch.rand(u.shape, generator=members.gens[0])
        return super().donors(members, state, draws)


class WritesRows(ColumnLike):
    name = "writes_rows"

    def prepare(self, members):
        members.all_rows.mul_(1.0001)


class TwoBreaches(LabelsInPrepare):
    """Label-dependent prepare() and float donors: both in one list."""

    name = "two_breaches"

    def donors(self, members, state, u):
        return super().donors(members, state, u).double()


class BernoulliMask(rules.WhereRule):
    """Each feature replaced with probability p: not members.corrupted features per row."""

    name = "bernoulli_mask"

    def mask(self, members, state):
        k, n, m = members.shape
        u = torch.stack([torch.rand(n, m, generator=g) for g in members.gens])
        return (u < 0.4) & members.active.unsqueeze(1)


class FloatMask(rules.WhereRule):
    name = "float_mask"

    def mask(self, members, state):
        u = rules.member_uniforms(members.gens, members.shape[1:], members.device)
        return rules.uniform_mask(u, members.active, members.corrupted).float()


class GoodMask(rules.WhereRule):
    name = "good_mask"

    def mask(self, members, state):
        u = rules.member_uniforms(members.gens, members.shape[1:], members.device)
        return rules.uniform_mask(u, members.active, members.corrupted)


def _breaches(rule) -> list[str]:
    report = tcclib.check_rule(rule, raise_on_breach=False)
    assert isinstance(report, RuleReport)
    return report.breaches


def test_a_valid_rule_passes_and_the_registry_is_left_as_it_was():
    before = (registry.method_names(), dict(registry._HOW_RULES), dict(registry._WHERE_RULES))
    assert tcclib.check_rule(ColumnLike).ok  # a class is made with no arguments
    assert tcclib.check_rule(GoodMask()).ok
    assert (registry.method_names(), dict(registry._HOW_RULES), dict(registry._WHERE_RULES)) == before


@pytest.mark.parametrize("name", ["column", "pseudo", "oracle", "none", "uniform", "most", "least"])
def test_the_built_in_rules_pass(name):
    assert tcclib.check_rule(name).ok


@pytest.mark.parametrize("example", ["nearby_rule.py", "knn_rule.py"])
def test_the_examples_pass(example):
    plugin = plugins.load(str(EXAMPLES / example))
    try:
        method = {"nearby_rule.py": "nearby", "knn_rule.py": "knn"}[example]
        report = tcclib.check_rule(method)
        assert report.ok and "keeps the rule contract" in str(report)
    finally:
        plugins.unload(plugin.path)


def test_a_prepare_that_reads_the_pseudo_labels_is_caught():
    (line,) = _breaches(LabelsInPrepare())
    assert "prepare() read members.labels" in line and "donors()" in line


@pytest.mark.parametrize(
    "rule, expected",
    [
        (FloatDonors(), "got dtype torch.float32 (use .long())"),
        (WrongShape(), "got shape [2, 455, 1]"),
        (OutOfRangeLater(), "got values from 455 to 909 (call 3)"),
        (Raises(), "donors() failed at line"),
    ],
)
def test_bad_donors_are_caught_at_any_call(rule, expected):
    (line,) = _breaches(rule)
    assert expected in line and f"'{rule.name}' (test_check_rule.py)" in line


def test_a_rule_that_does_not_draw_from_the_members_generators_is_caught():
    (line,) = _breaches(GlobalGenerator())
    assert line.startswith("not deterministic")
    (line,) = _breaches(FirstMembersGenerator())
    assert "'s draws depend on the other members of its stack" in line


def test_a_rule_that_changes_its_own_state_while_it_trains_is_caught():
    rule = CountsOnItself()
    (line,) = _breaches(rule)
    assert line.startswith("it changed its own state while it trained (self.calls, self.last_rows)")
    assert "prepare() returns" in line


def test_a_rule_that_writes_into_the_rows_is_caught():
    (line,) = _breaches(WritesRows())
    assert "prepare() wrote into members.raw" in line


@pytest.mark.parametrize(
    "rule, expected",
    [
        (BernoulliMask(), "mask() must replace members.corrupted[m] features per row"),
        (FloatMask(), "got dtype torch.float32"),
    ],
)
def test_bad_masks_are_caught(rule, expected):
    (line,) = _breaches(rule)
    assert expected in line


def test_every_breach_in_one_list_raised_by_default():
    with pytest.raises(rules.RuleContractError) as caught:
        tcclib.check_rule(TwoBreaches())
    text = str(caught.value)
    assert text.startswith("how rule 'two_breaches' (test_check_rule.py): 2 contract breaches")
    assert "'two_breaches' (test_check_rule.py): prepare() read members.labels" in text
    assert "got dtype torch.float64" in text


def test_declarations_and_other_inputs_are_named():
    class BadNeeds(ColumnLike):
        name = "bad needs"
        needs = "everything"
        settings = ("epoch",)

    breaches = _breaches(BadNeeds())
    assert any("simple identifier" in b for b in breaches)
    assert any("needs must be one of" in b for b in breaches)
    assert any("did you mean 'epochs'" in b for b in breaches)
    assert _breaches(object()) == ["expected a rules.HowRule or rules.WhereRule object (or class), got object"]
    with pytest.raises(rules.RuleContractError, match=r"OutOfRangeLater\(\) cannot be made|pass an object"):

        class NeedsArgs(ColumnLike):
            def __init__(self, width):
                self.width = width

        tcclib.check_rule(NeedsArgs)


def test_data_as_a_frame_or_a_pair_and_an_unknown_name_are_taken_or_named(bc):
    frame = bc.X.iloc[:150, :6].assign(target=bc.y.iloc[:150].to_numpy())  # its last column is the target
    assert tcclib.check_rule(ColumnLike(), data=frame).ok
    with pytest.raises(ConfigError, match=r"^check_rule: data must be .*last column.*got list$"):
        tcclib.check_rule(ColumnLike(), data=[1, 2])
    with pytest.raises(registry.RegistryError) as e:
        tcclib.check_rule("colum")
    text = str(e.value)
    assert "'colum' (did you mean column" in text and "rules: none, column" in text and "methods: " in text
    assert "\n" not in text


class PrepareFails(ColumnLike):
    """A prepare that fails (of a rule that needs nothing, or the pseudo-labels): its draws then
    are never asked for."""

    name = "prepare_fails"
    draws = 0

    def prepare(self, members):
        raise ValueError("no table like this")

    def donors(self, members, state, u):
        PrepareFails.draws += 1
        return super().donors(members, state, u)


class PseudoPrepareFails(PrepareFails):
    name = "pseudo_prepare_fails"
    needs = rules.PSEUDO_LABELS


@pytest.mark.parametrize("rule", [PrepareFails(), PseudoPrepareFails()], ids=["nothing", "pseudo-labels"])
def test_a_prepare_that_fails_is_one_breach_and_its_draws_are_not_asked_for(rule):
    """Decided by the error's type (the pseudo-label rule's failure escaped as a bare ValueError)."""
    PrepareFails.draws = 0
    (line,) = _breaches(rule)
    assert f"'{rule.name}' (test_check_rule.py): prepare() failed at line " in line
    assert line.endswith("ValueError: no table like this") and PrepareFails.draws == 0


class Interrupted(ColumnLike):
    name = "interrupted"

    def donors(self, members, state, u):
        raise KeyboardInterrupt


def test_the_trial_method_leaves_nothing_in_the_registry_even_when_the_check_is_interrupted():
    before = (registry.method_names(), dict(registry._HOW_RULES), dict(registry._WHERE_RULES))
    with pytest.raises(KeyboardInterrupt):
        tcclib.check_rule(Interrupted())
    assert (registry.method_names(), dict(registry._HOW_RULES), dict(registry._WHERE_RULES)) == before
    assert not [e.name for e in registry.entries() if e.origin == "tcclib.method.check"]


def test_a_frame_whose_last_column_is_not_the_class_says_which_column_it_took(bc):
    frame = bc.X.iloc[:150, :6].copy()
    frame.insert(0, "target", bc.y.iloc[:150].to_numpy())  # the class first: the last column is a feature
    with pytest.raises(DatasetError) as e:
        tcclib.check_rule(ColumnLike(), data=frame)
    assert str(e.value).startswith(
        "check_rule: data's last column 'mean compactness' is taken as the target (put the class column last, "
        "or pass data=(X, y)): data: the target looks continuous"
    )
    with pytest.raises(ConfigError) as e:
        tcclib.check_rule(ColumnLike(), data=frame[["target"]])
    assert str(e.value) == (
        "check_rule: data is a DataFrame of 1 column; it needs the features and, last, the class column (the "
        "target): put the class column last, or pass data=(X, y)"
    )


def test_a_prepare_that_reads_the_labels_raises_a_type_of_its_own():
    with pytest.raises(rules.LabelsNotKnown, match="prepare\\(\\) read members.labels"):
        rules.UnknownLabels(LabelsInPrepare()).shape  # noqa: B018


def test_a_run_and_a_fit_check_a_users_method_before_any_work(tmp_path, bc):
    """``run_dataset`` and ``TCCClassifier.fit`` check a method with a user's rule as the sweep
    does, before any work: a rule drawing from torch's global generator (it trains, but never the
    same twice) is refused in one line before its where rule's importances are computed."""
    registry.register_method("global_most", GlobalGenerator(), "most")
    try:
        cfg = Config(methods=("global_most",), seeds=(0,), epochs=1, head_epochs=1, progress=False)
        refusal = r"^method global_most: how rule 'global_generator' \(test_check_rule\.py\): not deterministic: .*gens"
        with pytest.raises(rules.RuleContractError, match=refusal) as caught:
            run_dataset(bc, cfg, cache_dir=tmp_path / "cache")
        assert "\n" not in str(caught.value)
        assert not list(tmp_path.rglob("*.*")), "work was done before the check"
        with pytest.raises(rules.RuleContractError, match=refusal):
            tcclib.TCCClassifier("global_most", epochs=1, head_epochs=1).fit(bc.X.iloc[:80], bc.y.iloc[:80])
    finally:
        registry.unregister("global_most")


def test_a_fit_on_a_few_labeled_rows_still_refuses_a_breach(bc):
    """Where the labeled rows' classes are too small for the check's split (40 labeled, 4 of one
    class), the breach is checked again on those rows with two alternating labels: a rule drawing
    from torch's global generator is refused, not trained on the process's random state."""
    registry.register_method("global_column", GlobalGenerator(), "uniform")
    try:
        y = bc.y.astype(object).to_numpy().copy()
        y[40:] = None  # (unlabeled)
        assert 0 < min(np.unique(y[:40], return_counts=True)[1]) < 5  # (too few of one class for the check's split)
        refusal = r"^method global_column: how rule 'global_generator' \(test_check_rule\.py\): not deterministic"
        with pytest.raises(rules.RuleContractError, match=refusal):
            tcclib.TCCClassifier("global_column", epochs=1, head_epochs=1).fit(bc.X, y)
    finally:
        registry.unregister("global_column")


def test_a_refusal_in_the_trial_names_the_users_rule_not_the_probe(tmp_path, bc):
    """A module the rule imports inside ``donors``, edited after the first check imported it: the
    second check is refused by the rule's key, naming the rule and its file (the trial wraps the
    rule in a probe of tcclib's own, ``_check_<name>`` in check.py, which the line once named)."""
    helper = tmp_path / "lazily_imported_pick.py"
    helper.write_text("def pick(n_rows, u):\n    return (u * n_rows).long().clamp_max(n_rows - 1)\n")
    (tmp_path / "lazy_rule.py").write_text(
        "from tcclib.method import registry, rules\n\n\n"
        "class Lazy(rules.HowRule):\n    needs = rules.NOTHING\n\n"
        "    def __init__(self, name='lazy'):\n        self.name = name\n\n"
        "    def donors(self, members, state, u):\n        from lazily_imported_pick import pick\n\n"
        "        return pick(members.shape[1], u)\n\n\n"
        "registry.register_method('lazy', Lazy(), 'uniform', label='lazy')\n"
    )
    plugins.load(str(tmp_path / "lazy_rule.py"))
    assert tcclib.check_rule("lazy", bc).ok
    helper.write_text(helper.read_text().replace("n_rows - 1", "n_rows - 2"))
    with pytest.raises(tcclib.method.identity.Unkeyable) as refused:
        tcclib.check_rule("lazy", bc)
    said = str(refused.value)
    assert said.startswith("how rule 'lazy' (lazy_rule.py): lazily_imported_pick.py (module lazily_imported_pick)")
    assert "_check_" not in said and "check.py" not in said
