"""A rule is keyed by its value when its run's keys are computed (issue 57).

Every way of editing a rule that Python allows, in a plugin file, a notebook cell and ``python -c``
(code with no source): the rule's members get new keys (the edited rule retrains) and no other
method's keys move; or the run stops before any work with one line naming what it cannot key.  An
edit that changes nothing the rule does (a comment, spacing, a docstring) keeps the keys.  The keys
asserted here are those :func:`tcclib.running.train.run_dataset` computes (``keys.run_keys``); the
end-to-end tests below go through ``run_dataset`` and the estimator (the screen and the sweep:
``test_plugins.py``; ``python -c`` in a real fresh process: ``test_plugins.py`` too, here its code
is compiled as ``python -c`` compiles it, with no source).
"""

from __future__ import annotations

import importlib
import os
import py_compile
import sys
import textwrap
import time
import types
from pathlib import Path

import pandas as pd
import pytest
from places import Place

import tcclib
from tcclib.artifacts import keys, store
from tcclib.method import identity, objectives, plugins, registry, rules
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.running import sweep
from tcclib.running.folders import SweepError
from tcclib.running.train import run_dataset

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(seeds=(0, 1), epochs=1, head_epochs=1, progress=False)


def config() -> Config:
    """The run's settings (made once the rule is registered: a Config checks its method names)."""
    return Config(methods=("random", "share"), **TINY)


RULE = """
import torch

from tcclib.method import registry, rules
{prelude}


class Share(rules.HowRule):
    name = "share"
    needs = rules.NOTHING
{body}
    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        step = {step}
        rows = (torch.arange(n_rows, device=u.device).view(1, n_rows, 1) + step) % n_rows
        return rows.expand(k, n_rows, n_features).contiguous()


registry.register_method("share", {make}, "uniform", replace=True, replace_rule=True)
"""

INIT = "    def __init__(self, share=1):\n        self.share = share\n"
WRAPS = """import functools


def capped(f):
    @functools.wraps(f)
    def wrapper(self, n):
        return min(f(self, n), 5){extra}

    return wrapper"""
CAPPED = "    @capped\n    def step_of(self, n):\n        return 1\n\n"


def rule(prelude="", body="", step="1", make="Share()") -> str:
    return RULE.format(prelude=prelude, body=body, step=step, make=make)


def factory(step: int) -> str:
    return textwrap.dedent(
        f"""
        import torch

        from tcclib.method import registry, rules


        def make(step):
            class Made(rules.HowRule):
                name = "share"

                def donors(self, members, state, u):
                    k, n_rows, n_features = members.shape
                    rows = (torch.arange(n_rows, device=u.device).view(1, n_rows, 1) + step) % n_rows
                    return rows.expand(k, n_rows, n_features).contiguous()

            return Made


        registry.register_method("share", make({step})(), "uniform", replace=True, replace_rule=True)
        """
    )


# (source before, source after, what changed): each an edit that must retrain
EDITS = {
    "a constant read in the class body": (
        rule("SHARE = 1", "    share = SHARE\n", "self.share"),
        rule("SHARE = 2", "    share = SHARE\n", "self.share"),
        ["code"],
    ),
    "a constant as an __init__ default": (
        rule("SHARE = 1", "    def __init__(self, share=SHARE):\n        self.share = share\n", "self.share"),
        rule("SHARE = 2", "    def __init__(self, share=SHARE):\n        self.share = share\n", "self.share"),
        ["code", "arguments"],
    ),
    "a list constant": (rule("STEPS = [1, 2]", step="STEPS[0]"), rule("STEPS = [3, 2]", step="STEPS[0]"), ["code"]),
    "a dict constant": (
        rule("STEPS = {'a': 1}", step="STEPS['a']"),
        rule("STEPS = {'a': 4}", step="STEPS['a']"),
        ["code"],
    ),
    "an __init__ default": (
        rule(body=INIT, step="self.share"),
        rule(body=INIT.replace("=1", "=2"), step="self.share"),
        ["code", "arguments"],
    ),
    "a helper's default argument": (
        rule("def helper(n, by=1):\n    return by", step="helper(n_rows)"),
        rule("def helper(n, by=2):\n    return by", step="helper(n_rows)"),
        ["code"],
    ),
    "a list class attribute": (
        rule(body="    steps = [1]\n", step="self.steps[0]"),
        rule(body="    steps = [2]\n", step="self.steps[0]"),
        ["code"],
    ),
    "an argument kept under another name": (
        rule(body="    def __init__(self, width=1):\n        self._w = width\n", step="self._w", make="Share(width=1)"),
        rule(body="    def __init__(self, width=1):\n        self._w = width\n", step="self._w", make="Share(width=3)"),
        ["arguments"],
    ),
    "a torch.Generator argument": (
        rule(
            body="    def __init__(self, gen):\n        self.gen = gen\n",
            make="Share(torch.Generator().manual_seed(1))",
        ),
        rule(
            body="    def __init__(self, gen):\n        self.gen = gen\n",
            make="Share(torch.Generator().manual_seed(2))",
        ),
        ["arguments"],
    ),
    "a set argument": (
        rule(body="    def __init__(self, rows):\n        self.rows = rows\n", make="Share({1, 2})"),
        rule(body="    def __init__(self, rows):\n        self.rows = rows\n", make="Share({1, 3})"),
        ["arguments"],
    ),
    "a class made by a factory (its closure)": (factory(1), factory(2), ["code"]),
    "a decorator's wrapper (functools.wraps)": (
        rule(WRAPS.format(extra=""), body=CAPPED, step="self.step_of(n_rows)"),
        rule(WRAPS.format(extra=" + 1"), body=CAPPED, step="self.step_of(n_rows)"),
        ["code"],
    ),
    "a helper under functools.lru_cache": (
        rule(
            "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef helper(n):\n    return 1",
            step="helper(n_rows)",
        ),
        rule(
            "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef helper(n):\n    return 2",
            step="helper(n_rows)",
        ),
        ["code"],
    ),
    "a cached property": (
        rule(
            "import functools",
            body="    @functools.cached_property\n    def step_of(self):\n        return 1\n\n",
            step="self.step_of",
        ),
        rule(
            "import functools",
            body="    @functools.cached_property\n    def step_of(self):\n        return 2\n\n",
            step="self.step_of",
        ),
        ["code"],
    ),
}

# edits that change nothing the rule does: the keys stay
SAME = {
    "a comment": rule(body=INIT, step="self.share").replace("        step =", "        # the shift\n        step ="),
    "spacing and a blank line": rule(body=INIT, step="self.share").replace(
        "step = self.share", "step  =  self.share\n"
    ),
    "a docstring": rule(body=INIT, step="self.share").replace(
        "    def donors(self, members, state, u):\n",
        '    def donors(self, members, state, u):\n        """Shifted."""\n',
    ),
}


@pytest.fixture(scope="module")
def prep(bc):
    return prepare_config(bc, Config(methods=("random",), **TINY))


@pytest.fixture(autouse=True)
def no_plugins_left():
    yield
    for plugin in plugins.loaded():
        plugins.unload(plugin.path or plugin.module)
    registry.remove_origin("__main__")
    if "share" in registry.METHODS:
        registry.unregister("share")


@pytest.fixture(params=["file", "cell", "python -c"])
def place(request, tmp_path, monkeypatch):
    if request.param != "file":
        monkeypatch.setitem(sys.modules, "__main__", type(sys)("__main__"))
    return Place(request.param, tmp_path)


def members(prep, method: str) -> dict:
    found = keys.run_keys(prep, config()).members
    return {tag: key for tag, key in found.items() if tag.endswith(f"/{method}")}


def identity_now() -> str:
    return registry.METHODS["share"].code(config())["share"]


@pytest.mark.parametrize("edit", list(EDITS))
def test_every_edit_retrains_the_rule_and_nothing_else(edit, place, prep):
    before, after, changed = EDITS[edit]
    place.run(before)
    first, others, known = members(prep, "share"), members(prep, "random"), identity_now()
    place.run(after)
    assert all(members(prep, "share")[tag] != key for tag, key in first.items())  # every member retrains
    assert members(prep, "random") == others  # and nothing else
    assert registry.changes(known, identity_now()) == changed


def test_an_attribute_set_after_registration_retrains(place, prep):
    place.run(rule(body=INIT, step="self.share"))
    first, known = members(prep, "share"), identity_now()
    registry.how_rule("share").share = 2
    assert all(members(prep, "share")[tag] != key for tag, key in first.items())
    assert registry.changes(known, identity_now()) == ["arguments"]


def test_an_edited_rule_never_resumes_its_earlier_versions_pretraining_checkpoint(tmp_path, prep):
    """An interrupted run leaves a checkpoint; its key holds the rule by value, so the run after an
    edit starts afresh instead of resuming what the earlier version trained.  The built-ins' key
    holds no code (their checkpoints keep their keys)."""
    builtin = Config(methods=("random",), **TINY)
    assert store.checkpoint_key(prep, builtin, None) == store.checkpoint_key(prep, builtin, None, {})
    place = Place("file", tmp_path)
    place.run(rule(body=INIT, step="self.share"))
    first = store.checkpoint_key(prep, config(), None)
    registry.how_rule("share").share = 2  # an attribute after registration
    second = store.checkpoint_key(prep, config(), None)
    place.run(rule(body=INIT, step="self.share + 1"))  # its code
    assert len({first, second, store.checkpoint_key(prep, config(), None)}) == 3


@pytest.mark.parametrize("edit", list(SAME))
def test_an_edit_that_changes_nothing_keeps_the_keys(edit, prep, tmp_path):
    place = Place("file", tmp_path)
    place.run(rule(body=INIT, step="self.share"))
    first = members(prep, "share")
    place.run(SAME[edit])
    assert members(prep, "share") == first


# --------------------------------------------------------------------------- a helper in a second file


def _helper_rule(folder: Path, step: int) -> Path:
    """A rule whose draws read a constant and a function of a second file of the user's."""
    (folder / "share_helpers.py").write_text(f"STEP = {step}\n\n\ndef step():\n    return STEP\n")
    path = folder / "share_rule.py"
    path.write_text(
        rule(
            "import share_helpers\nfrom share_helpers import step as helper_step",
            step="helper_step() + share_helpers.STEP",
        )
    )
    return path


@pytest.fixture
def helper_folder(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("share_helpers", None)


def test_a_helper_in_another_file_edited_retrains_through_the_plugin(helper_folder, prep):
    path = _helper_rule(helper_folder, 1)
    plugins.load(str(path))
    first, known = members(prep, "share"), identity_now()
    (helper_folder / "share_helpers.py").write_text("STEP = 2\n\n\ndef step():\n    return STEP\n")
    plugins.load(str(path))  # the plugin's file is the same; its helper is imported afresh
    assert sys.modules["share_helpers"].STEP == 2
    assert all(members(prep, "share")[tag] != key for tag, key in first.items())
    assert registry.changes(known, identity_now()) == ["code"]


def test_a_plugin_imports_the_modules_beside_it_without_pythonpath(tmp_path, prep, monkeypatch):
    """The plugin's folder is on the path as a script's is: its helpers import at its top and
    inside a method as it runs (a sweep's kernels load it the same way)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "share_helpers", raising=False)
    (tmp_path / "share_helpers.py").write_text(HELPERS.format(step=1))
    (tmp_path / "share_rule.py").write_text(rule(LOCAL, step="_local()"))  # (imported only inside _local)
    plugins.load(str(tmp_path / "share_rule.py"))
    first = members(prep, "share")  # (imported by the key, before its probe ran the rule: one key either way)
    assert str(tmp_path) in sys.path and "share_helpers" in sys.modules and members(prep, "share") == first
    sys.modules.pop("share_helpers", None)


def test_a_helper_edited_on_disk_but_not_reloaded_is_refused(helper_folder, prep):
    """In a kernel, a module imported once stays as it was imported: its edited file would be keyed
    while the old code runs, so the run stops in one line saying to reload."""
    plugins.load(str(_helper_rule(helper_folder, 1)))
    members(prep, "share")
    (helper_folder / "share_helpers.py").write_text("STEP = 1\n\n\ndef step():\n    return STEP + 1\n")
    with pytest.raises(identity.Unkeyable) as e:
        members(prep, "share")
    message = str(e.value)
    assert "\n" not in message and "share_helpers.py (module share_helpers) changed on disk since it was" in message
    assert "restart the kernel" in message and "importlib.reload(share_helpers)" in message
    importlib.reload(sys.modules["share_helpers"])  # (what it says: then keyed as the file is now) ...
    with pytest.raises(identity.Unkeyable, match="changed on disk"):
        members(prep, "share")  # (... but the rule's file still holds the old step(), imported by name)
    plugins.load(str(helper_folder / "share_rule.py"))  # (and what imports names from it run again)
    assert members(prep, "share")


def test_a_helper_written_back_with_the_bytes_it_was_imported_from_is_no_edit(helper_folder, prep, monkeypatch):
    """An edit undone (the file written again as it was, at a later modification time) leaves the
    code that runs as the file says: the keys stay; while the edit stands, the run is refused.
    With its bytecode written, whose header then no longer matches the file's time."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    plugins.load(str(_helper_rule(helper_folder, 1)))
    assert Path(importlib.util.cache_from_source(str(helper_folder / "share_helpers.py"))).is_file()
    first = members(prep, "share")
    helper = helper_folder / "share_helpers.py"
    original, later = helper.read_bytes(), time.time() + 5
    helper.write_text("STEP = 22\n\n\ndef step():\n    return STEP\n")
    os.utime(helper, (later, later))
    with pytest.raises(identity.Unkeyable, match="share_helpers.py .module share_helpers. changed on disk"):
        members(prep, "share")
    helper.write_bytes(original)
    os.utime(helper, (later + 5, later + 5))
    assert members(prep, "share") == first


def test_a_constant_of_a_helper_edited_on_disk_but_not_reloaded_is_refused(helper_folder, prep):
    plugins.load(str(_helper_rule(helper_folder, 1)))
    members(prep, "share")
    (helper_folder / "share_helpers.py").write_text("STEP = 22\n\n\ndef step():\n    return STEP\n")
    with pytest.raises(identity.Unkeyable, match="share_helpers.py .module share_helpers. changed on disk"):
        members(prep, "share")


# (the helper file before, after, and how the rule reaches it) each reached in a way a name lookup
# in the code does not show: the helper's edit must still retrain
LOCAL = "def _local():\n    from share_helpers import step\n\n    return step()"
REACHED = {
    "getattr with a computed name": ("getattr(share_helpers, 'st' + 'ep')()", "import share_helpers"),
    "an import inside the method": ("_local()", LOCAL),
    "sys.modules": ("sys.modules['share_helpers'].step()", "import sys\nimport share_helpers"),
    "operator.attrgetter": (
        "operator.attrgetter('st' + 'ep')(share_helpers)()",
        "import operator\nimport share_helpers",
    ),
    "a module's __getattr__": ("share_helpers.LAZY", "import share_helpers"),
    "a module imported by a string": ("importlib.import_module('share_helpers').step()", "import importlib"),
    "a decorator of another file": ("self.step_of(n_rows)", "from share_helpers import capped"),
    "a base class of another file": ("self.base_step()", "from share_helpers import Base"),
}
HELPERS = f"""import functools

STEP = {{step}}


def __getattr__(name):
    if name == "LAZY":
        return STEP
    raise AttributeError(name)


def step():
    return STEP


{WRAPS.format(extra=" + STEP")}


class Base:
    def base_step(self):
        return STEP
"""


@pytest.mark.parametrize("reached", list(REACHED))
def test_a_helper_reached_by_name_decorator_or_base_class_retrains(reached, helper_folder, prep):
    step, prelude = REACHED[reached]
    source = rule(prelude, body=CAPPED if "capped" in prelude else "", step=step)
    if reached == "a base class of another file":
        source = source.replace("class Share(rules.HowRule):", "class Share(Base, rules.HowRule):")
    (helper_folder / "share_helpers.py").write_text(HELPERS.format(step=1))
    path = helper_folder / "share_rule.py"
    path.write_text(source)
    plugins.load(str(path))  # (a decorator of another file is not refused as "changed on disk")
    first, known = members(prep, "share"), identity_now()
    (helper_folder / "share_helpers.py").write_text(HELPERS.format(step=2))
    if reached in ("a module imported by a string", "an import inside the method"):  # (imported as it drew: stale)
        with pytest.raises(identity.Unkeyable, match="share_helpers.py .module share_helpers. changed on disk"):
            members(prep, "share")
        importlib.reload(sys.modules["share_helpers"])  # (what the refusal says to do)
    plugins.load(str(path))
    assert all(members(prep, "share")[tag] != key for tag, key in first.items())
    assert registry.changes(known, identity_now()) == ["code"]


FILE_RULE = """
import json
from pathlib import Path

SETTINGS = Path(__file__).with_name("share_settings.json")
"""


def test_a_file_the_rule_reads_as_it_draws_is_keyed_by_its_bytes(tmp_path, prep):
    """A file read in prepare() or donors(), which neither code nor state shows: its bytes enter the
    draws part, so an edit retrains even where the probe's few rows draw the same."""
    settings = tmp_path / "share_settings.json"
    settings.write_text('{"width": 0.1}')
    place = Place("file", tmp_path)
    body = "    def prepare(self, members):\n        return json.loads(SETTINGS.read_text())\n\n"
    place.run(rule(FILE_RULE, body=body, step="1 if state['width'] < 1 else 1"))
    first, known = members(prep, "share"), identity_now()
    settings.write_text('{"width": 0.12}')  # (draws the same on the probe and in the run)
    assert all(members(prep, "share")[tag] != key for tag, key in first.items())
    assert registry.changes(known, identity_now()) == ["draws"]
    settings.write_text('{"width": 0.1}')
    assert members(prep, "share") == first


def test_files_read_records_what_the_code_reads_not_imports_or_writes(tmp_path, monkeypatch):
    """An import the probe triggers (a module's first use) would key its file in one process and not
    in the next: only files opened for reading by the code itself count."""
    (tmp_path / "lazily_imported.py").write_text("X = 1\n")
    (tmp_path / "table.csv").write_text("a\n1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazily_imported", raising=False)
    with identity.files_read() as opened:
        importlib.import_module("lazily_imported")
        pd.read_csv(tmp_path / "table.csv")
        (tmp_path / "written.txt").write_text("x")
    ours = {path for path in opened if path.startswith(os.path.realpath(tmp_path))}  # (pandas reads /sys too)
    assert ours == {os.path.realpath(tmp_path / "table.csv")}
    assert identity.files_digest(opened) and identity.files_digest(set()) == ""


OBJECTIVE = """
import json
from pathlib import Path

from tcclib.method import objectives, registry

SETTINGS = Path(__file__).with_name("objective_settings.json")


class Scaled(objectives.Objective):
    name = "scaled"

    def heads(self, stack):
        return {"decoder": [stack.width]}

    def prepare(self, stack):
        return json.loads(SETTINGS.read_text())["scale"]

    def loss(self, batch):
        out = batch.head("decoder", batch.encode(batch.views))
        return objectives.row_squared_error(out, batch.anchors) * batch.state


registry.register_method("scaled", "column", "uniform", objective=Scaled(), replace=True, replace_rule=True)
"""


HEADS_READ = """    def heads(self, stack):
        return {"decoder": [stack.width] * json.loads(SETTINGS.read_text())["layers"]}

    def prepare(self, stack):
        return 1.0
"""


@pytest.mark.parametrize("where", ["prepare", "heads"])
def test_a_file_an_objective_reads_in_prepare_or_heads_is_keyed_by_its_bytes(where, tmp_path, prep):
    """An objective has no draws to probe: what its heads() and prepare() open on a small stack is keyed."""
    (tmp_path / "objective_settings.json").write_text('{"scale": 1.0, "layers": 1}')
    source = OBJECTIVE
    if where == "heads":
        start, end = source.index("    def heads("), source.index("    def loss(")
        source = source[:start] + HEADS_READ + "\n" + source[end:]
    (tmp_path / "scaled_objective.py").write_text(source)
    plugins.load(str(tmp_path / "scaled_objective.py"))
    cfg = Config(methods=("random", "scaled"), **TINY)
    first = keys.run_keys(prep, cfg).members
    (tmp_path / "objective_settings.json").write_text('{"scale": 2.0, "layers": 2}')
    again = keys.run_keys(prep, cfg).members
    assert {tag.split("/")[1] for tag in first if first[tag] != again[tag]} == {"scaled"}
    (tmp_path / "objective_settings.json").write_text('{"scale": 1.0, "layers": 1}')
    assert keys.run_keys(prep, cfg).members == first
    registry.unregister("scaled")


def test_a_file_an_objectives_loss_opens_is_refused_at_its_first_step(tmp_path, bc):
    """No key sees a file ``loss()`` reads (an edit of it would reuse the members): the first step
    refuses it in one line naming the file and the fix; read in ``prepare()`` (the test above: keyed
    by its bytes) the same objective trains."""
    (tmp_path / "objective_settings.json").write_text('{"scale": 1.0}')
    read = 'json.loads(SETTINGS.read_text())["scale"]'
    in_loss = OBJECTIVE.replace(f"return {read}", "return None").replace("batch.state", read)
    (tmp_path / "scaled_objective.py").write_text(in_loss)
    plugins.load(str(tmp_path / "scaled_objective.py"))
    cfg = Config(methods=("scaled",), **TINY)
    with pytest.raises(objectives.ObjectiveContractError) as caught:
        run_dataset(bc, cfg)
    line = str(caught.value)
    assert line.startswith(
        "method scaled: objective 'scaled' (scaled_objective.py): loss() opened objective_settings.json as it trained"
    )
    assert "read it in prepare()" in line and "\n" not in line
    (tmp_path / "scaled_objective.py").write_text(OBJECTIVE)
    plugins.load(str(tmp_path / "scaled_objective.py"))
    assert run_dataset(bc, cfg).results is not None


def test_globals_eval_and_exec_are_refused_but_a_method_named_eval_is_not(tmp_path, prep):
    """globals()[name] could read any global: keying them all retrained at every change of any (a
    time stamp, an unseeded generator), so it is refused with the fix; ``model.eval()`` is no eval."""
    source = rule("def helper_one(n):\n    return 1", step="globals()['helper_' + 'one'](n_rows)")
    with pytest.raises(
        plugins.PluginError, match=r"Share.donors calls globals\(\), which reads its module's globals.*HELPERS"
    ):
        Place("file", tmp_path).run(source)
    own = rule(
        "import sys\n\n\ndef helper_one(n):\n    return 1", step="getattr(sys.modules[__name__], 'helper_one')(n_rows)"
    )
    with pytest.raises(plugins.PluginError, match=r"Share.donors calls sys.modules\[__name__\], which reads"):
        Place("file", tmp_path).run(own)
    frame = rule("import sys\n\nSTEP = 1", step="sys._getframe().f_globals['STEP']")
    with pytest.raises(plugins.PluginError, match=r"Share.donors reads .f_globals, which reads its module's globals"):
        Place("file", tmp_path).run(frame)
    Place("file", tmp_path).run(rule("import torch.nn", step="1 if torch.nn.Linear(1, 1).eval() else 1"))
    assert members(prep, "share")


@pytest.mark.parametrize(
    "prelude, step",
    [
        ("import os", "int(os.environ.get('SHARE_STEP', '1'))"),
        ("from os import getenv", "int(getenv('SHARE_STEP', '1'))"),
        ("", "int(__import__('os').environ.get('SHARE_STEP', '1'))"),
    ],
    ids=["os.environ", "from os import getenv", "imported in the method"],
)
def test_an_environment_variable_read_as_the_rule_runs_is_refused_with_the_fix(prelude, step, tmp_path, prep):
    """No key sees the environment: a rule that reads it as it draws is refused in one line, and
    the fix (the value read where the rule is made, or into a module constant) is keyed by value."""
    with pytest.raises(plugins.PluginError) as e:
        Place("file", tmp_path).run(rule(prelude, step=step))
    message = str(e.value)
    assert "\n" not in message and "share_rule.py" in message
    assert "Share.donors reads the environment (os." in message and "module constant" in message
    Place("file", tmp_path).run(rule("import os\nSTEP = int(os.environ.get('SHARE_STEP', '1'))", step="STEP"))
    before = members(prep, "share")
    Place("file", tmp_path).run(rule("import os\nSTEP = int(os.environ.get('SHARE_STEP', '2'))", step="STEP"))
    assert members(prep, "share") != before
    Place("file", tmp_path).run(rule("import os", step="len(os.path.join('a', 'b')) - 2"))  # (os itself is fine)


def test_an_objective_or_a_baseline_factory_that_reads_the_environment_is_refused(tmp_path):
    """The same refusal for the other code a key holds by value: an objective's loss, a factory."""
    objective = tmp_path / "env_objective.py"
    objective.write_text(
        "import os\n\nfrom tcclib.method import objectives, registry\n\n\n"
        "class Scaled(objectives.Objective):\n    name = 'env_scaled'\n\n"
        "    def heads(self, stack):\n        return {'projection': [stack.hidden]}\n\n"
        "    def loss(self, batch):\n        z = batch.head('projection', batch.encode(batch.pairs))\n"
        "        return float(os.getenv('SCALE', '1')) * z.square().mean((1, 2))\n\n\n"
        "registry.register_method('env_scaled', 'column', objective=Scaled())\n"
    )
    refused = r"objective 'env_scaled' \(env_objective.py\): .*Scaled.loss reads the environment"
    with pytest.raises(plugins.PluginError, match=refused):
        plugins.load(str(objective))
    factory = tmp_path / "env_baseline.py"
    factory.write_text(
        "import os\n\nfrom sklearn.linear_model import LogisticRegression\n\nfrom tcclib.method import registry\n\n"
        "registry.register_baseline('env_logreg', lambda seed, cfg: LogisticRegression(C=float(os.environ['C'])))\n"
    )
    with pytest.raises(plugins.PluginError, match=r"the factory of baseline 'env_logreg': .*reads the environment"):
        plugins.load(str(factory))
    assert "env_scaled" not in registry.METHODS and "env_logreg" not in registry.BASELINES


def test_a_module_imported_by_a_computed_name_is_refused(tmp_path):
    source = rule("import importlib\nNAME = 'share_'", step="importlib.import_module(NAME + 'helpers').step()")
    with pytest.raises(
        plugins.PluginError, match=r"Share.donors imports a module by a computed name.*import it by name"
    ):
        Place("file", tmp_path).run(source)


def test_an_installed_decorator_on_prepare_is_keyed_by_what_it_wraps(tmp_path, prep):
    """``@torch.no_grad()`` wraps with ``functools.wraps`` in torch's own file: registered without a
    refusal, and an edit of the method it wraps retrains."""
    place = Place("file", tmp_path)
    prepare = "    @torch.no_grad()\n    def prepare(self, members):\n        return {value}\n\n"
    place.run(rule(body=prepare.format(value=1)))
    first = members(prep, "share")
    place.run(rule(body=prepare.format(value=2)))
    assert all(members(prep, "share")[tag] != key for tag, key in first.items())


BOUND = """
from sklearn.linear_model import LogisticRegression


class Models:
    def __init__(self, c):
        self.c = c

    @classmethod
    def fixed(cls, seed, cfg):
        return LogisticRegression(C={c}, max_iter=50, random_state=seed)

    def chosen(self, seed, cfg):
        return LogisticRegression(C=self.c, max_iter=50, random_state=seed)
"""


def test_a_bound_method_factory_is_keyed_by_its_code_and_its_objects_state(tmp_path):
    """A baseline's factory may be a class's or an object's method: its code, its class and the
    object's state are keyed (it was keyed by nothing)."""
    namespaces = []
    for c in (1.0, 0.001):
        namespace = {"__name__": "__main__"}
        exec(compile(BOUND.format(c=c), "<string>", "exec"), namespace)
        namespaces.append(namespace)
    fixed = [identity.identity(ns["Models"].fixed, "baseline 'm'") for ns in namespaces]
    assert fixed[0] is not None and fixed[0] != fixed[1]
    chosen = [identity.identity(namespaces[0]["Models"](c).chosen, "baseline 'm'") for c in (1.0, 0.001)]
    assert chosen[0].code == chosen[1].code and chosen[0].state != chosen[1].state


def test_a_file_a_baseline_factory_reads_is_keyed_by_its_bytes(tmp_path, prep):
    settings = tmp_path / "baseline_settings.json"
    settings.write_text('{"C": 1.0}')
    plugin = tmp_path / "read_baseline.py"
    plugin.write_text(
        "import json\nfrom pathlib import Path\n\nfrom sklearn.linear_model import LogisticRegression\n"
        "from tcclib.method import registry\n\nHERE = Path(__file__).parent\n\n\n"
        "def logreg(seed, cfg):\n    c = json.loads((HERE / 'baseline_settings.json').read_text())['C']\n"
        "    return LogisticRegression(C=c, random_state=seed)\n\n\n"
        "registry.register_baseline('logreg_read', logreg, replace=True)\n"
    )
    plugins.load(str(plugin))
    cfg = Config(methods=("random",), baselines=("logreg_read",), **TINY)
    first = keys.run_keys(prep, cfg).baselines
    settings.write_text('{"C": 0.001}')
    assert all(keys.run_keys(prep, cfg).baselines[tag] != key for tag, key in first.items())
    settings.write_text('{"C": 1.0}')
    assert keys.run_keys(prep, cfg).baselines == first


def test_a_baseline_whose_model_opens_a_file_as_it_fits_is_refused_in_one_line(tmp_path):
    """No key sees what a model reads as it fits (the factory's files are keyed when it is called)."""
    (tmp_path / "baseline_settings.json").write_text('{"C": 1.0}')
    plugin = tmp_path / "fit_reads.py"
    plugin.write_text(
        "import json\nfrom pathlib import Path\n\nfrom sklearn.linear_model import LogisticRegression\n"
        "from tcclib.method import registry\n\nHERE = Path(__file__).parent\n\n\n"
        "class Reading(LogisticRegression):\n    def fit(self, X, y):\n"
        "        self.C = json.loads((HERE / 'baseline_settings.json').read_text())['C']\n"
        "        return super().fit(X, y)\n\n\n"
        "registry.register_baseline('logreg_fit_reads', lambda seed, cfg: Reading(random_state=seed))\n"
    )
    plugins.load(str(plugin))
    try:
        cfg = Config(methods=("no_pretrain",), baselines=("logreg_fit_reads",), **TINY)
        with pytest.raises(identity.Unkeyable) as caught:
            run_dataset(tcclib.load_dataset("breast_cancer"), cfg)
        line = str(caught.value)
        assert line.startswith("the model of baseline 'logreg_fit_reads' opened baseline_settings.json as it fit")
        assert "read it in the factory" in line and "\n" not in line
    finally:
        plugins.unload(str(plugin))


def test_a_stale_cached_bytecode_of_a_file_older_than_the_process_is_no_edit(tmp_path, monkeypatch):
    """Where bytecode is not written (``PYTHONDONTWRITEBYTECODE``), a cached file older than its
    source stays; a module imported from a source last written before this process started is the
    module as the file says, whatever that header says; a write after the start is an edit."""
    started = identity._process_started()
    if started is None:
        pytest.skip("no /proc: this process's start is not known here")
    helper = tmp_path / "stale_helper.py"
    helper.write_text("STEP = 1\n")
    py_compile.compile(str(helper), cfile=importlib.util.cache_from_source(str(helper)))
    helper.write_text("STEP = 22\n")  # edited since, and its bytecode not written again
    os.utime(helper, (started - 60, started - 60))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "stale_helper", raising=False)
    module = importlib.import_module("stale_helper")
    try:
        assert module.STEP == 22 and identity.changed_on_disk(module) is None
        helper.write_text("STEP = 3\n")  # written now: after the import
        assert identity.changed_on_disk(module) == str(helper)
    finally:
        sys.modules.pop("stale_helper", None)


# --------------------------------------------------------------------------- what cannot be keyed


UNKEYABLE = {
    "an open file": ("Share(open(__file__ if '__file__' in dir() else '/dev/null'))", "self.source", "TextIOWrapper"),
    "a Python generator": ("Share(x for x in range(3))", "self.source", "generator"),
    "a lock": ("Share(__import__('threading').Lock())", "self.source", "lock"),
}


@pytest.mark.parametrize("what", list(UNKEYABLE))
def test_what_cannot_be_keyed_is_refused_in_one_line_at_registration_and_at_the_run(what, tmp_path):
    make, path, kind = UNKEYABLE[what]
    source = rule(body="    def __init__(self, source=None):\n        self.source = source\n")
    with pytest.raises(plugins.PluginError) as e:
        Place("file", tmp_path).run(source.replace("Share()", make))
    message = str(e.value)
    assert "\n" not in message and "share_rule.py" in message
    assert f"its state cannot be keyed by value: {path} is " in message and kind in message
    assert "make it a plain value" in message and "prepare()" in message
    Place("file", tmp_path).run(source)  # keyable when registered, then given the object
    registry.how_rule("share").source = (x for x in [1])
    with pytest.raises(identity.Unkeyable, match="self.source is generator"):
        run_dataset(tcclib.load_dataset("breast_cancer"), config())


def test_a_helper_reading_an_unkeyable_global_names_it_and_the_version_fix(tmp_path):
    source = rule(
        "import threading\nLOCK = threading.Lock()\n\n\ndef helper():\n    return LOCK", step="helper() and 1"
    )
    with pytest.raises(
        plugins.PluginError,
        match=r"its code cannot be keyed by value: share_rule.py's LOCK is _thread.lock .* set `version`",
    ):
        Place("file", tmp_path).run(source)


def test_a_version_pins_the_code_and_keys_what_else_the_rule_holds(tmp_path, prep):
    place = Place("file", tmp_path)
    source = rule("import threading\nLOCK = threading.Lock()", body='    version = "1"\n' + INIT, step="self.share")
    place.run(source)
    first = identity_now()
    assert first.startswith("version:1 state:")
    registry.how_rule("share").share = 2
    assert registry.changes(first, identity_now()) == ["arguments"]


# --------------------------------------------------------------------------- tcclib's own rules and objectives

# (the object, the attribute set after registration, its value, the methods whose members it reaches)
OWN_EDITS = {
    "what a how rule reads": (lambda: registry.how_rule("pseudo"), "needs", rules.TRUE_LABELS, {"class"}),
    "a where rule's parameter": (lambda: registry.where_rule("bernoulli_30"), "p", 0.5, {"vime"}),
    "NT-Xent's views": (lambda: registry.objective("ntxent"), "views", 2, {"random", "class"}),
    "VIME's weight": (lambda: registry.objective("vime"), "alpha", 3.0, {"vime"}),
    "a new attribute": (lambda: registry.objective("vime"), "extra", [1, 2], {"vime"}),
}


@pytest.mark.parametrize("edit", list(OWN_EDITS))
def test_an_attribute_set_on_a_builtin_after_registration_retrains_its_members_and_a_sweep_refuses_it(
    edit, bc, monkeypatch
):
    """tcclib's own rules and objectives are keyed by name, parameters and TRAIN_VERSION; one whose
    state is not what it was registered with is keyed by its state, so its members (only) train
    again in this process, and a sweep, whose kernels load the built-ins afresh, stops in one line."""
    get, attribute, value, reached = OWN_EDITS[edit]
    cfg = Config(methods=("random", "class", "vime"), **TINY)
    built_in = prepare_config(bc, cfg)
    before = keys.run_keys(built_in, cfg).members
    monkeypatch.setattr(get(), attribute, value, raising=False)
    after = keys.run_keys(built_in, cfg)
    assert {tag.split("/")[1] for tag in before if before[tag] != after.members[tag]} == reached
    assert all(store.code_changes({}, {m: after.code[m]}) for m in reached)
    with pytest.raises(SweepError, match=r"changed in this process after it was registered .* register one of your"):
        sweep.check_keyable(types.SimpleNamespace(config=cfg))
    monkeypatch.undo()
    assert keys.run_keys(built_in, cfg).members == before
    assert sweep.check_keyable(types.SimpleNamespace(config=cfg)) == {}


# --------------------------------------------------------------------------- end to end


def test_run_dataset_retrains_only_the_edited_rule_and_says_what_changed(tmp_path, bc, prep):
    place = Place("file", tmp_path)
    place.run(rule(body=INIT, step="self.share"))
    first = run_dataset(bc, config())
    store.save_run(first, tmp_path / "store")
    again = run_dataset(bc, config(), store_dir=tmp_path / "store")
    assert again.timings["trained_members"] == 0
    [note] = again.code_notes  # what it reused, and the identity it matched
    assert note.startswith("share: 2 of 2 members reused; share matched as code ") and ", draws " in note
    registry.how_rule("share").share = 2  # after registration, in the same process
    same, why = store.same_settings(tmp_path / "store" / "config.json", config())
    assert not same and why == "arguments of share changed"
    edited = run_dataset(bc, config(), store_dir=tmp_path / "store")
    assert edited.timings["trained_members"] == 2 and edited.timings["reused_members"] == 2
    assert edited.code_notes == ["share: arguments of share changed: 2 of 2 members trained"]
    assert "share: arguments of share changed" in store.time_record(edited, tmp_path / "store")
    kept = [
        run.results[run.results.method == "random"].drop(columns="fit_s", errors="ignore") for run in (first, edited)
    ]
    pd.testing.assert_frame_equal(*(k.reset_index(drop=True) for k in kept))


def test_the_estimator_trains_the_rule_as_it_is_now(tmp_path, bc):
    place = Place("file", tmp_path)
    place.run(rule(body=INIT, step="self.share"))
    X, y = bc.X.iloc[:80], bc.y.iloc[:80]
    registry.how_rule("share").share = 0  # every donor is the anchor itself: views equal their anchors
    clf = tcclib.TCCClassifier(method="share", epochs=1, head_epochs=1, random_state=0, verbose=False).fit(X, y)
    assert clf.predict(X).shape == (80,)


# --------------------------------------------------------------------------- what a key held only in part

TCCLIBS_CLASS = """
from tcclib.method import objectives, registry, rules

{made}
registry.register_method("share", {how}, "uniform", objective={objective}, replace=True, replace_rule=True)
"""

IN_COLUMNS_PLACE = """from tcclib.method import registry, rules

registry.register_rule(rules.SameLabel("column"{needs}), replace=True)
"""
VIME_MORE = """made = objectives.VIME(name="vime_more")
made.needs_changed = {changed}
registry.register_objective(made)"""

# (plugin before, plugin after, the method whose members must retrain): an object of tcclib's classes
# made by a user, whose edit no key_params holds
TCCLIBS_CLASSES = {
    "a rule's needs (a name of its own)": (
        TCCLIBS_CLASS.format(made="", how='rules.SameLabel("mine")', objective='"ntxent"'),
        TCCLIBS_CLASS.format(made="", how='rules.SameLabel("mine", rules.TRUE_LABELS)', objective='"ntxent"'),
        "share",
    ),
    "a rule in a built-in's place": (
        IN_COLUMNS_PLACE.format(needs="") + TCCLIBS_CLASS.format(made="", how='"column"', objective='"ntxent"'),
        IN_COLUMNS_PLACE.format(needs=", rules.TRUE_LABELS")
        + TCCLIBS_CLASS.format(made="", how='"column"', objective='"ntxent"'),
        "random",
    ),
    "an objective's attribute set before registering it": (
        TCCLIBS_CLASS.format(made=VIME_MORE.format(changed=False), how='"column"', objective='"vime_more"'),
        TCCLIBS_CLASS.format(made=VIME_MORE.format(changed=True), how='"column"', objective='"vime_more"'),
        "share",
    ),
}


@pytest.mark.parametrize("edit", list(TCCLIBS_CLASSES))
def test_an_object_of_tcclibs_classes_made_by_a_user_is_keyed_by_its_whole_state(edit, tmp_path, prep):
    """tcclib's own rules and objectives are keyed by name and ``key_params`` (their other
    attributes are fixed by its files and TRAIN_VERSION); one a user made is keyed by what it holds
    beyond them, so editing its arguments in the plugin retrains its members."""
    before, after, retrains = TCCLIBS_CLASSES[edit]
    place = Place("file", tmp_path)
    place.run(before)
    first = members(prep, retrains)
    place.run(after)
    assert all(members(prep, retrains)[tag] != key for tag, key in first.items())


def test_the_family_authors_objectives_keep_their_keys_made_by_their_arguments_alone():
    """An object of tcclib's objective classes made by its arguments alone (the committed
    ``examples/family_authors.py`` set) adds nothing to its key beyond its ``key_params``."""
    made = objectives.VIME(reconstruction="sigmoid", inputs="min_max", name="vime_authors")
    assert registry.objective_code(made) is None
    made.views = 2
    assert registry.objective_code(made).startswith("state:")


def test_a_users_method_redefined_under_its_name_never_resumes_the_earlier_ones_checkpoint(tmp_path, prep):
    place = Place("file", tmp_path)
    place.run(TCCLIBS_CLASS.format(made="", how='"column"', objective='"ntxent"'))
    first = store.checkpoint_key(prep, config(), None)
    place.run(TCCLIBS_CLASS.format(made="", how='"oracle"', objective='"ntxent"'))
    assert store.checkpoint_key(prep, config(), None) != first


HIDES = {
    "__getstate__": "    def __getstate__(self):\n        return {}\n",
    "__reduce__": "    def __reduce__(self):\n        return (Hidden, (1,))\n",
    "__reduce__ to a name": "    def __reduce__(self):\n        return 'BOX'\n",
}


HIDDEN_OBJECTIVE = """
from tcclib.method import objectives, registry


class Hidden:
    def __init__(self, v):
        self.v = v

{hides}
    def weight(self):
        return {step}


BOX = Hidden({value})


class Weighted(objectives.Objective):
    name = "weighted"

    def __init__(self, box):
        self.box = box

    def heads(self, stack):
        return {{"decoder": [stack.width]}}

    def loss(self, batch):
        out = batch.head("decoder", batch.encode(batch.views))
        return objectives.row_squared_error(out, batch.anchors) * self.box.weight() * self.box.v


registry.register_method("weighted", "column", "uniform", objective=Weighted(BOX), replace=True, replace_rule=True)
"""


@pytest.mark.parametrize("how", list(HIDES))
@pytest.mark.parametrize("edited", ["an attribute", "its class's code"])
def test_an_object_that_pickles_its_own_way_is_keyed_by_its_class_and_attributes(how, edited, tmp_path, prep):
    """A user's object that an objective holds and whose pickle leaves out what it computes with
    (``__getstate__``, ``__reduce__``, a module-level object pickled by its name): an edit of its
    attribute or of its class's code retrains (an objective has no draws to probe, so only its key
    can see it)."""
    place = Place("file", tmp_path, "weighted_objective.py")
    place.run(HIDDEN_OBJECTIVE.format(hides=HIDES[how], step=1, value=1))
    cfg = Config(methods=("random", "weighted"), **TINY)
    first = keys.run_keys(prep, cfg).members
    edit = dict(step=1, value=2) if edited == "an attribute" else dict(step=2, value=1)
    place.run(HIDDEN_OBJECTIVE.format(hides=HIDES[how], **edit))
    again = keys.run_keys(prep, cfg).members
    assert {tag.split("/")[1] for tag in first if first[tag] != again[tag]} == {"weighted"}
    registry.unregister("weighted")


def test_a_default_dtype_other_than_float32_is_refused_before_any_work(bc, prep):
    """torch's process-wide default dtype changes what training computes and no key holds it: a
    run's keys and the estimator's fit refuse it in one line with the fix."""
    import torch

    torch.set_default_dtype(torch.float64)
    try:
        with pytest.raises(identity.Unkeyable, match=r"default dtype is torch.float64 .* torch.set_default_dtype"):
            keys.run_keys(prep, Config(methods=("random",), **TINY))
        with pytest.raises(identity.Unkeyable, match=r"default dtype"):
            tcclib.TCCClassifier(method="random", epochs=1, head_epochs=1, verbose=False).fit(bc.X, bc.y)
    finally:
        torch.set_default_dtype(torch.float32)
    assert keys.run_keys(prep, Config(methods=("random",), **TINY)).members


# --------------------------------------------------------------------------- a seventh audit's routes

BASELINE = """
import functools

import numpy as np
from sklearn.linear_model import LogisticRegression

from tcclib.method import registry

{prelude}


{decorator}def make(seed, cfg):
    return LogisticRegression(C={c}, max_iter=200)


registry.register_baseline("mine", make, semi_supervised={semi}, settings={settings}, replace=True)
"""

# (plugin before, plugin after, Config changes after): a baseline whose model changes and whose key must move
BASELINE_EDITS = {
    "semi_supervised": (dict(semi=False), dict(semi=True), {}),
    "a factory under functools.lru_cache": (
        dict(decorator="@functools.lru_cache\n", prelude="C = 1.0", c="C"),
        dict(decorator="@functools.lru_cache\n", prelude="C = 0.01", c="C"),
        {},
    ),
    "a structured array's field names": (
        dict(prelude="W = np.array([(1.0, 3.0)], dtype=[('c', 'f8'), ('w', 'f8')])", c="float(W['c'][0])"),
        dict(prelude="W = np.array([(1.0, 3.0)], dtype=[('w', 'f8'), ('c', 'f8')])", c="float(W['c'][0])"),
        {},
    ),
    "a masked array's mask": (
        dict(prelude="W = np.ma.array([1.0, 2.0], mask=[0, 0])", c="float(W.sum())"),
        dict(prelude="W = np.ma.array([1.0, 2.0], mask=[0, 1])", c="float(W.sum())"),
        {},
    ),
    "np.matrix for an array": (
        dict(prelude="W = np.array([[1.0, 1.0]])", c="float((W * W.T).sum())"),
        dict(prelude="W = np.asmatrix([[1.0, 1.0]])", c="float((W * W.T).sum())"),
        {},
    ),
    "a setting's 'auto' in force": (
        dict(settings='["corr_rule"]', c="1.0 if cfg.corr_rule == 'direct' else 0.01"),
        dict(settings='["corr_rule"]', c="1.0 if cfg.corr_rule == 'direct' else 0.01"),
        dict(fidelity="authors", labeled_split="stratified"),
    ),
}


@pytest.mark.parametrize("edit", list(BASELINE_EDITS))
@pytest.mark.filterwarnings("ignore:the matrix subclass is not the recommended way")
def test_a_baseline_edit_its_key_did_not_hold_retrains_it(edit, tmp_path, prep):
    """Each edit changes the model the baseline fits; each kept its stored rows before."""
    defaults = dict(prelude="", decorator="", c="1.0", semi=False, settings="()")
    before, after, settings = BASELINE_EDITS[edit]
    place = Place("file", tmp_path, "mine_baseline.py")
    place.run(BASELINE.format(**defaults | before))
    first = keys.run_keys(prep, Config(methods=("random",), baselines=("mine",), labeled_split="stratified", **TINY))
    place.run(BASELINE.format(**defaults | after))
    cfg = Config(methods=("random",), baselines=("mine",), **{"labeled_split": "stratified", **TINY, **settings})
    again = keys.run_keys(prep, cfg)
    assert all(again.baselines[tag] != key for tag, key in first.baselines.items())
    registry.unregister("mine")


def test_a_relative_import_inside_a_function_is_followed(tmp_path, prep, monkeypatch):
    """``from .helpers import STEP`` and ``from . import helpers`` in a user's package: an edit of
    the helper retrains."""
    package = tmp_path / "upkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for form, read in (("from .helpers import STEP", "STEP"), ("from . import helpers", "helpers.STEP")):
        (package / "helpers.py").write_text("STEP = 1.0\n")
        (package / "mine.py").write_text(
            "from sklearn.linear_model import LogisticRegression\n\n\n"
            f"def make(seed, cfg):\n    {form}\n\n    return LogisticRegression(C={read})\n"
        )
        for name in ("upkg.mine", "upkg.helpers"):
            sys.modules.pop(name, None)
        mine = importlib.import_module("upkg.mine")
        registry.register_baseline("mine", mine.make, replace=True)
        cfg = Config(methods=("random",), baselines=("mine",), **TINY)
        first = keys.run_keys(prep, cfg).baselines
        (package / "helpers.py").write_text("STEP = 2.0\n")
        importlib.reload(importlib.import_module("upkg.helpers"))
        assert all(keys.run_keys(prep, cfg).baselines[tag] != key for tag, key in first.items()), form
        registry.unregister("mine")


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_a_single_dispatch_helper_once_called_and_a_sparse_tensor_are_keyed_not_refused():
    import functools

    import torch

    @functools.singledispatch
    def pick(x):
        return 1

    @pick.register(int)
    def _(x):
        return 2

    before = identity.value_identity(pick, "pick")
    assert pick(1) == 2 and identity.value_identity(pick, "pick") == before  # (its dispatch cache left out)
    dense = torch.eye(3)
    assert identity.value_identity(dense.to_sparse(), "t") != identity.value_identity(dense, "t")
    assert identity.value_identity(dense.to_sparse_csr(), "t") != identity.value_identity(dense.to_sparse(), "t")
    z = torch.tensor([1 + 2j])
    assert identity.value_identity(z.conj(), "t") != identity.value_identity(z, "t")


AUTORELOAD_SESSION = r"""
import os, sys, time
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell

folder = Path(sys.argv[1])
sys.path.insert(0, str(folder))
helper = folder / "share_helpers.py"
shell = InteractiveShell.instance()


def run(cell):
    result = shell.run_cell(cell)
    return "refused: " + str(result.error_in_exec) if result.error_in_exec else "ok"


def write(text):
    later = os.stat(helper).st_mtime + 2  # (a later modification time, as an editor's save gives)
    helper.write_text(text)
    os.utime(helper, (later, later))


KEYS = '''
from tcclib.artifacts import keys
from tcclib.data.sources import load_dataset
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
cfg = Config(methods=("random", "share"), seeds=(0,), epochs=1, head_epochs=1, progress=False)
found = keys.run_keys(prepare_config(load_dataset("breast_cancer"), cfg), cfg).members["0/share"]
'''
RULE = '''
import torch
from tcclib.method import registry, rules
from share_helpers import step

class Share(rules.HowRule):
    name = "share"
    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        rows = (torch.arange(n_rows).view(1, n_rows, 1) + step()) % n_rows
        return rows.expand(k, n_rows, n_features).contiguous()

registry.register_method("share", Share(), "uniform", replace=True)
'''
LOAD = "%load_ext autoreload\n%autoreload " + sys.argv[2].replace("late ", "")
late = sys.argv[2].startswith("late")  # (the helper imported and edited before the extension loaded)
print(run("1" if late else LOAD), run(RULE), run(KEYS), shell.user_ns.get("found"))
for edit in sys.argv[3:]:
    write(edit.replace("|", "\n"))
    if late:  # (it notes the file's time, as if it had reloaded it)
        run(LOAD)
        late = False
    print(run("found = None"), run(KEYS), shell.user_ns.get("found"))
"""


def _session(folder: Path, mode: str, *edits: str) -> list[str]:
    """Lines an IPython session prints (in a process of its own: the shell is process-wide): the
    helper's first text keyed, then each edit saved and the keys computed again."""
    import subprocess

    script = folder / "session.py"
    script.write_text(AUTORELOAD_SESSION)
    done = subprocess.run(
        [sys.executable, str(script), str(folder), mode, *edits], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if line.startswith("ok ")]


def test_a_helper_autoreloaded_in_ipython_is_keyed_as_its_file_is_now(tmp_path):
    """``%autoreload 2`` puts an edited helper's code in place (the same module, spec and
    functions): the run keys the file as it is now, the key a fresh process gives that file; a
    reload that failed (a syntax error), ``%autoreload 0`` and a helper the extension first saw
    after its edit (imported before it loaded: it notes the file as if reloaded) leave the old code,
    so the run stops."""
    one, two = "def step():|    return 1|", "def step():|    return 2|"
    (tmp_path / "share_helpers.py").write_text(one.replace("|", "\n"))
    lines = _session(tmp_path, "2", two, "def step(:|")
    assert len(lines) == 3 and lines[0] == "ok ok ok " + lines[0].split()[-1]
    first, edited = lines[0].split()[-1], lines[1].split()[-1]
    assert lines[1].startswith("ok ok ") and edited not in (first, "None")
    assert "refused: " in lines[2] and "share_helpers.py (module share_helpers) changed on disk" in lines[2]
    (tmp_path / "share_helpers.py").write_text(two.replace("|", "\n"))
    assert _session(tmp_path, "2")[0].split()[-1] == edited  # (a fresh process, the edited file)
    for mode in ("0", "late 2"):  # (autoreload off; on, but it first sees the helper after the edit)
        (tmp_path / "share_helpers.py").write_text(one.replace("|", "\n"))
        lines = _session(tmp_path, mode, two)
        assert "refused: " in lines[1] and "changed on disk" in lines[1], (mode, lines)
