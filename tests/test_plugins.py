"""Plugins reach every process, keys never go stale, and a broken rule is named (issue 40).

A rule written outside the repository as one file (a rule none of the docs show: each donor is the
row ``step`` places further in the column's order) is loaded the documented ways and trains in
``run_dataset``, ``TCCClassifier``, the sweep's notebook kernels, a Dask LocalCluster and notebook
09 under papermill, with no file of the package edited.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import tcclib
from tcclib.artifacts import keys, store
from tcclib.method import objectives, plugins, registry, rules
from tcclib.method.config import Config, ConfigError
from tcclib.method.inputs import prepare_config
from tcclib.running.folders import SweepError
from tcclib.running.train import run_dataset

ROOT = Path(__file__).resolve().parents[1]

SHIFT_RULE = '''
"""A rule no doc shows: the donor of each value is the row STEP places further in the table."""
import torch

from tcclib.method import registry, rules

STEP = {step}


def shifted(n_rows, shape, device):
    return (torch.arange(n_rows, device=device).view(1, n_rows, 1) + STEP) % n_rows


class Shift(rules.HowRule):
    needs = rules.NOTHING

    def __init__(self, name="shift"):
        self.name = name

    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        return shifted(n_rows, u.shape, u.device).expand(k, n_rows, n_features).contiguous()


registry.register_method("shift", Shift(), "uniform", label="shifted rows")
'''


def write_rule(folder: Path, step: int = 1, name: str = "shift_rule.py") -> Path:
    path = folder / name
    path.write_text(SHIFT_RULE.format(step=step))
    return path


@pytest.fixture(autouse=True)
def no_plugins_left():
    """Each test starts and ends with the built-ins alone (what a test loads is unloaded)."""
    yield
    for plugin in plugins.loaded(fill=False):
        plugins.unload(plugin.identity)


@pytest.fixture
def rule_file(tmp_path):
    return write_rule(tmp_path)


TINY = dict(seeds=(0, 1), epochs=2, head_epochs=2, progress=False)


def test_the_builtins_load_through_the_plugin_path():
    builtins = [p for p in plugins.loaded(include_builtins=True) if p.module == plugins.BUILTINS]
    assert builtins and builtins[0].origin == "built-in"
    assert registry.get("class").origin == plugins.BUILTINS
    assert registry.METHODS["class"].code() == {}  # the built-ins' keys hold no code


def test_a_plugin_file_trains_in_run_dataset_and_the_estimator(rule_file, bc):
    plugins.load(str(rule_file))
    run = run_dataset(bc, Config(methods=("random", "shift"), **TINY))
    assert set(run.results["method"]) == {"random", "shift"}
    X, y = bc.X.iloc[:120], bc.y.iloc[:120].to_numpy().copy()
    y[40:] = -1
    clf = tcclib.TCCClassifier(method="shift", epochs=2, head_epochs=2, random_state=0, verbose=False).fit(X, y)
    assert clf.predict(X).shape == (120,)
    stored = pickle.dumps(clf)
    plugins.unload(str(rule_file))  # a process where the plugin is not loaded: the refit names it
    with pytest.raises(
        ConfigError, match=r"it came from the plugin \S*shift_rule.py: load it first, tcclib.load_plugins"
    ):
        pickle.loads(stored).fit(X, y)


def test_the_estimator_refuses_to_fit_a_plugin_edited_since_it_was_loaded(rule_file, bc):
    """The loaded text is what would train: an edit not loaded again is refused in one line (as a
    module it imports is), and loading it again fits the edited rule."""
    plugins.load(str(rule_file))
    X, y = bc.X.iloc[:120], bc.y.iloc[:120].to_numpy()
    clf = tcclib.TCCClassifier(method="shift", epochs=1, head_epochs=1, random_state=0, verbose=False)
    rule_file.write_text(SHIFT_RULE.format(step=5))
    with pytest.raises(plugins.PluginError) as refused:
        clf.fit(X, y)
    assert str(refused.value) == (
        f"plugin {rule_file.resolve()} changed on disk since it was loaded, so fit would train the text it loaded: "
        f"load it again (tcclib.load_plugins({str(rule_file)!r})) before fit"
    )
    plugins.load(str(rule_file))
    assert clf.fit(X, y).predict(X).shape == (120,)
    assert sys.modules[plugins.loaded()[-1].module].STEP == 5


def test_an_unknown_method_names_the_plugins_and_how_to_add_one(rule_file):
    plugins.load(str(rule_file))
    with pytest.raises(ConfigError) as e:
        Config(methods=("shfit",))
    text = str(e.value)
    assert "did you mean shift" in text and "shift_rule.py" in text and "--plugin" in text and "\n" not in text


def test_a_plugin_that_fails_to_import_is_one_line_with_its_file_and_line(tmp_path):
    bad = tmp_path / "broken_rule.py"
    bad.write_text("import torch\n\nx = 1\ny = undefined_name + x\n")
    with pytest.raises(plugins.PluginError) as e:
        plugins.load(str(bad))
    assert str(e.value) == (
        f"plugin {bad}, line 4: NameError: name 'undefined_name' is not defined: the rule's file sees only what it "
        "defines or imports: define 'undefined_name' there, or import it"
    )
    bad.write_text("def f(:\n    pass\n")
    with pytest.raises(plugins.PluginError, match=r"broken_rule.py, line 1: SyntaxError"):
        plugins.load(str(bad))
    with pytest.raises(plugins.PluginError, match="no such file"):
        plugins.load(str(tmp_path / "missing.py"))
    with pytest.raises(plugins.PluginError, match="no module of that name"):
        plugins.load("no_such_plugin_module_here")
    bad.write_text("import broken_rule_helper\n")
    for text, where in (("def f(:\n    pass\n", "line 1"), ("x = 1\nraise ValueError('bad')\n", "line 2")):
        (tmp_path / "broken_rule_helper.py").write_text(text)
        with pytest.raises(plugins.PluginError) as e:  # the helper's own file and line, beside the import's
            plugins.load(str(bad))
        message = str(e.value)
        assert message.startswith(f"plugin {bad}, line 1: ")
        assert f"(in {tmp_path}/broken_rule_helper.py, {where})" in message


HELPED = """
from tcclib.method import registry
from shadow_helper import SHARE

registry.register_method("NAME", "column", "uniform")
"""


def test_a_plugin_never_runs_a_helper_of_its_name_from_another_plugins_folder(tmp_path):
    """A process holds one module of a name: a plugin whose helper beside it has the name of one an
    earlier plugin imported from another folder (the same text copied with an edited helper, or a
    plugin of its own) would run the other folder's helper; it is refused in one line naming both."""
    folders = {name: tmp_path / name for name in ("first", "copy", "other")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / "shadow_helper.py").write_text(f"SHARE = {len(name) / 10}\n")
        method = "helped_other" if name == "other" else "helped"
        (folder / "helped.py").write_text(HELPED.replace("NAME", method))
    try:
        plugins.load(str(folders["first"] / "helped.py"))
        for name, says in (("copy", "the same text as"), ("other", "imports shadow_helper, which this process")):
            with pytest.raises(plugins.PluginError) as e:
                plugins.load(str(folders[name] / "helped.py"))
            message = str(e.value)
            assert says in message and str(folders["first"] / "shadow_helper.py") in message
            assert str(folders[name] / "shadow_helper.py") in message
            assert "another name" in message or "rename one" in message
        assert "helped_other" not in registry.METHODS
        (folders["copy"] / "shadow_helper.py").write_text("SHARE = 0.5\n")  # the copy's helper as the first's
        (folders["first"] / "shadow_helper.py").write_text("SHARE = 0.5\n")
        plugins.load(str(folders["first"] / "helped.py"))  # (its edited helper: imported afresh)
        assert plugins.load(str(folders["copy"] / "helped.py")).path == str(folders["first"] / "helped.py")
    finally:
        sys.modules.pop("shadow_helper", None)
    installed = tmp_path / "installed"  # a file beside the plugin named like an installed module
    installed.mkdir()
    (installed / "yaml.py").write_text("SHARE = 0.1\n")
    (installed / "helped.py").write_text(HELPED.replace("shadow_helper", "yaml").replace("NAME", "helped_yaml"))
    with pytest.raises(plugins.PluginError, match=r"imports yaml, which this process takes from \S*site-packages"):
        plugins.load(str(installed / "helped.py"))


def test_editing_a_plugin_retrains_exactly_its_members(tmp_path, bc):
    path = write_rule(tmp_path, step=1)
    plugins.load(str(path))
    cfg = Config(methods=("random", "shift"), **TINY)
    first = run_dataset(bc, cfg)
    store.save_run(first, tmp_path / "store")
    again = run_dataset(bc, cfg, store_dir=tmp_path / "store")
    assert again.timings["trained_members"] == 0  # no edit: all reused
    assert store.same_settings(tmp_path / "store" / "config.json", cfg)[0]
    path.write_text(SHIFT_RULE.format(step=3))  # an edit of a constant the rule reads
    plugins.load(str(path))  # the edited file runs again and redefines its method
    same, why = store.same_settings(tmp_path / "store" / "config.json", cfg)
    assert not same and why == "code of shift changed"  # the sweep reports the dataset stale
    edited = run_dataset(bc, cfg, store_dir=tmp_path / "store")
    assert edited.timings["trained_members"] == 2 and edited.timings["reused_members"] == 2

    def rows(run, method):
        return run.results[run.results.method == method].drop(columns="fit_s", errors="ignore").reset_index(drop=True)

    pd.testing.assert_frame_equal(rows(first, "random"), rows(edited, "random"))  # reused as stored
    losses = [run.history[run.history.method == "shift"]["loss"].to_numpy() for run in (first, edited)]
    assert not np.array_equal(*losses)  # the edited rule really trained again


def test_code_identity_follows_the_source_and_a_version_pins_it(tmp_path):
    a = write_rule(tmp_path, step=1, name="a_rule.py")
    plugins.load(str(a))
    first = registry.METHODS["shift"].code()
    a.write_text(SHIFT_RULE.format(step=1) + "\n# a comment outside the rule's code\n")
    plugins.load(str(a))
    assert registry.METHODS["shift"].code() == first  # nothing the rule reads changed
    a.write_text(SHIFT_RULE.format(step=1).replace("% n_rows\n", "% max(n_rows, 1)\n"))
    plugins.load(str(a))
    assert registry.METHODS["shift"].code() != first  # a helper the rule calls changed
    versioned = SHIFT_RULE.format(step=2).replace(
        "    needs = rules.NOTHING", '    needs = rules.NOTHING\n    version = "7"'
    )
    a.write_text(versioned)
    plugins.load(str(a))
    pinned = registry.METHODS["shift"].code()["shift"]
    assert pinned.startswith("version:7 state:")  # the version stands for the code
    a.write_text(versioned.replace("% n_rows\n", "% max(n_rows, 1)\n"))  # the same draws: the version holds
    plugins.load(str(a))
    assert registry.METHODS["shift"].code()["shift"] == pinned
    a.write_text(versioned.replace("STEP = 2", "STEP = 3"))  # other draws, the version not bumped
    plugins.load(str(a))
    assert registry.changes(pinned, registry.METHODS["shift"].code()["shift"]) == ["draws"]  # retrains all the same


def test_comments_blank_lines_and_spacing_inside_the_rule_keep_its_key(tmp_path):
    a = write_rule(tmp_path, step=1, name="a_rule.py")
    plugins.load(str(a))
    first = registry.METHODS["shift"].code()
    edited = SHIFT_RULE.format(step=1).replace(
        "    def donors(self, members, state, u):\n",
        "    # the rows shifted by STEP\n\n    def donors(self, members, state, u):  # a comment\n",
    )
    a.write_text(edited.replace("% n_rows\n", "%  n_rows   # wraps around\n"))
    plugins.load(str(a))
    assert registry.METHODS["shift"].code() == first  # comments, a blank line, spacing: nothing the code does
    a.write_text(edited.replace("needs = rules.NOTHING", 'needs = rules.NOTHING\n    """Its docstring."""'))
    plugins.load(str(a))
    assert registry.METHODS["shift"].code() == first  # a docstring documents, it draws nothing
    a.write_text(edited.replace("% n_rows\n", "% n_rows + 0\n"))
    plugins.load(str(a))
    assert registry.METHODS["shift"].code() != first  # a change to the code (even one that draws the same)


def test_the_committed_screens_members_keep_their_keys(tmp_path):
    """outputs/screen was keyed when comments still counted: examples/nearby_rule.py keeps the
    identity it was stored under (registry.STORED_AS), and a comment added to it changes nothing."""
    stored = json.loads((ROOT / "outputs" / "screen" / "kc2" / "config.json").read_text())
    plugins.load(str(ROOT / "examples" / "nearby_rule.py"))
    assert registry.METHODS["nearby"].code() == stored[store.PLUGIN_CODE]["nearby"]
    cfg = Config.from_dict({**store.settings_of(stored), "progress": False})
    data = os.environ.get("TCC_DATA_DIR") or ROOT.parent / "shared" / "datasets" / "openml-cc18"
    prep = prepare_config(tcclib.load_dataset("kc2", data_dir=data, allow_download=False), cfg)
    committed = json.loads((ROOT / "outputs" / "screen" / "kc2" / "keys.json").read_text())["members"]
    assert keys.run_keys(prep, cfg).members == committed  # a re-render trains nothing
    copy = tmp_path / "nearby_rule.py"
    text = (ROOT / "examples" / "nearby_rule.py").read_text()
    copy.write_text(text.replace("        order, rank = state\n", "        order, rank = state  # from prepare()\n"))
    plugins.unload(str(ROOT / "examples" / "nearby_rule.py"))
    plugins.load(str(copy))
    assert registry.METHODS["nearby"].code() == stored[store.PLUGIN_CODE]["nearby"]


def test_a_baseline_factorys_code_enters_its_key(tmp_path, bc):
    path = tmp_path / "forest_plugin.py"
    text = textwrap.dedent(
        """
        from sklearn.ensemble import RandomForestClassifier
        from tcclib.method import registry

        def forest(seed, cfg):
            return RandomForestClassifier(n_estimators={n}, random_state=seed)

        registry.register_baseline("forest_p", forest)
        """
    )
    path.write_text(text.format(n=5))
    plugins.load(str(path))
    prep = prepare_config(bc, Config(seeds=(0,), progress=False))
    before = keys.baseline_key(prep.splits[0], "forest_p", Config(), prep.classes)
    logreg = keys.baseline_key(prep.splits[0], "logreg", Config(), prep.classes)
    path.write_text(text.format(n=7))
    plugins.load(str(path))
    assert keys.baseline_key(prep.splits[0], "forest_p", Config(), prep.classes) != before
    assert keys.baseline_key(prep.splits[0], "logreg", Config(), prep.classes) == logreg


# --------------------------------------------------------------------------- the rule's contract


class _Donors(rules.HowRule):
    needs = rules.NOTHING

    def __init__(self, name, make):
        self.name, self.make = name, make

    def donors(self, members, state, u):
        return self.make(members, u)


class _Mask(rules.WhereRule):
    def __init__(self, name, make):
        self.name, self.make = name, make

    def mask(self, members, state):
        return self.make(members)


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda m, u: u * 3,
            r"how rule 'bad_how' \(test_plugins.py\): donors\(\) must return int64 row positions "
            r".* got dtype torch.float32 \(use .long\(\)\)",
        ),
        (lambda m, u: u[:, :5].long(), r"donors\(\) must return int64 .* got shape \[2, 5, "),
        (
            lambda m, u: (u * 1000).long() + m.shape[1],
            r"donors\(\) must return int64 .* in 0\.\.\d+ \(each member's own training rows\); "
            r"got values from \d+ to \d+",
        ),
        (lambda m, u: torch.zeros(3, dtype=torch.long), r"donors\(\) must return int64 .* got shape \[3\]"),
        (
            lambda m, u: 1 / 0,
            r"how rule 'bad_how' \(test_plugins.py\): donors\(\) failed at line \d+: "
            r"ZeroDivisionError: division by zero",
        ),
    ],
)
def test_a_broken_how_rule_is_one_line_naming_it(bc, make, message):
    registry.register_method("bad_how", _Donors("bad_how", make), "uniform", replace=True, replace_rule=True)
    try:
        with pytest.raises(rules.RuleContractError, match=message) as e:
            run_dataset(bc, Config(methods=("bad_how",), **TINY))
        assert "\n" not in str(e.value)
    finally:
        registry.unregister("bad_how")


def test_a_broken_where_rule_is_one_line_naming_it(bc):
    make = lambda m: torch.rand(m.shape) < 0.5  # noqa: E731
    registry.register_method(
        "bad_where", "column", _Mask("bad_where", lambda m: make(m).float()), replace=True, replace_rule=True
    )
    try:
        with pytest.raises(
            rules.RuleContractError,
            match=r"where rule 'bad_where' .* mask\(\) must return a bool mask .* got dtype torch.float32",
        ):
            run_dataset(bc, Config(methods=("bad_where",), **TINY))
    finally:
        registry.unregister("bad_where")


def test_a_misspelt_setting_is_refused_before_any_work():
    rule = _Donors("spelt", lambda m, u: None)
    rule.settings = ("epoch",)
    registry.register_method("spelt", rule, "uniform")
    try:  # the registry sits below the declarations: the Config that names the method refuses it
        with pytest.raises(
            ConfigError,
            match=r"methods: 'spelt': its rules' or objective's settings names that are not Config fields: 'epoch' "
            r"\(did you mean 'epochs'\?\)",
        ):
            Config(methods=("spelt",))
    finally:
        registry.unregister("spelt")
    rule.settings = "epochs"
    with pytest.raises(registry.RegistryError, match="settings must be a tuple of Config field names"):
        registry.register_method("spelt", rule, "uniform")


def test_a_new_method_sorts_among_the_methods_with_a_colour_of_its_own(rule_file):
    plugins.load(str(rule_file))
    order = registry.order()
    assert order.index("shift") < min(order.index(b) for b in registry.baseline_names())
    colours = registry.colors()
    assert colours["shift"] not in {c for m, c in colours.items() if m != "shift"}
    names = [f"extra{i}" for i in range(25)]
    try:
        for n in names:
            registry.register_method(n, "column")
        used = [registry.colors()[n] for n in names]
        assert len(set(used)) == len(used) and "gray" not in used
    finally:
        for n in names:
            registry.unregister(n)


# --------------------------------------------------------------------------- other processes


def _env(**extra) -> dict:
    env = {**os.environ, "TCC_DATA_DIR": str(ROOT.parent / "shared" / "datasets" / "openml-cc18"), **extra}
    env.pop(plugins.ENV, None)
    env.update(extra)
    return env


def test_tcc_plugins_and_an_entry_point_load_in_a_fresh_process(tmp_path):
    rule = write_rule(tmp_path, name="env_rule.py")
    code = "from tcclib import Config; print(Config(methods=['shift']).methods)"
    out = subprocess.run([sys.executable, "-c", code], env=_env(TCC_PLUGINS=str(rule)), capture_output=True, text=True)
    assert out.returncode == 0 and "shift" in out.stdout, out.stderr
    # an installed package's entry point: a distribution's metadata on the path
    package = tmp_path / "site"
    (package / "shiftpkg").mkdir(parents=True)
    (package / "shiftpkg" / "__init__.py").write_text(SHIFT_RULE.format(step=2))
    info = package / "shiftpkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shiftpkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tcclib.plugins]\nshift = shiftpkg\n")
    env = _env(PYTHONPATH=os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "shift" in out.stdout, out.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no')\n")
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(TCC_PLUGINS=str(broken)), capture_output=True, text=True
    )
    assert out.returncode != 0 and f"plugin {broken}, line 1: RuntimeError: no" in out.stderr


def test_an_entry_point_then_tcc_plugins_fill_the_registry_at_its_first_question_in_process(tmp_path, monkeypatch):
    """In this process, the registry as a fresh process finds it (not filled; the built-ins are
    loaded once per process): the tests' own look at the loaded plugins fills nothing, and the
    first question loads the installed package's entry point, then ``$TCC_PLUGINS``, before it
    answers (the environment plugin reads the entry point's method at import)."""
    from conftest import loaded_plugins

    site = tmp_path / "site"
    info = site / "ep_inproc-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-inproc\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tcclib.plugins]\nep = ep_inproc_rules\n")
    (site / "ep_inproc_rules.py").write_text(
        "from tcclib.method.registry import register_method\nregister_method('ep_inproc', 'column')\n"
    )
    env_rule = tmp_path / "env_inproc.py"
    env_rule.write_text(
        "from tcclib.method import registry\n"
        "registry.register_method('env_inproc', registry.METHODS['ep_inproc'].how)  # the entry point's, first\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv(plugins.ENV, str(env_rule))
    monkeypatch.setitem(plugins._STATE, "filled", False)
    before = loaded_plugins()
    assert plugins._STATE["filled"] is False and "ep_inproc_rules" not in before
    names = registry.method_names()  # the first question
    assert names.index("ep_inproc") < names.index("env_inproc")
    order = [(p.module, p.origin) for p in plugins.loaded()]
    assert order[-2:] == [
        ("ep_inproc_rules", "entry point ep of the package ep-inproc"),
        (order[-1][0], "$TCC_PLUGINS"),
    ]


def _tiny_set(tmp_path: Path, rule: Path) -> Path:
    lines = [
        "name: tiny_plugin",
        "datasets: [breast_cancer]",
        f"plugins: [{rule}]",
        "config: {seeds: [0], epochs: 2, head_epochs: 2, methods: [random, shift], baselines: []}",
        "per_dataset_notebooks: [03_pretraining]",
        "aggregate_notebooks: []",
    ]
    path = tmp_path / "tiny.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_sweep_runs_a_plugin_in_its_kernels_and_its_edit_on_dask(tmp_path):
    """The set's plugin trains in the sweep's kernels; edited, the sweep names it, and ``--force
    stale`` on a LocalCluster retrains it alone on the worker, from the edited file (one run of
    each kind: a plugin's first run on a worker is the same path as its retraining there)."""
    pytest.importorskip("distributed")
    rule = write_rule(tmp_path)
    params = _tiny_set(tmp_path, rule)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "tcclib", str(params), "--outputs", str(out)]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    ddir = out / "tiny_plugin" / "breast_cancer"
    results = pd.read_csv(ddir / "results.csv")
    assert set(results["method"]) == {"random", "shift"}
    recorded = json.loads((ddir / "config.json").read_text())
    assert set(recorded[store.PLUGIN_CODE]) == {"shift"}
    # the edited rule: the sweep says the dataset is stale; --force stale retrains the rule only
    rule.write_text(SHIFT_RULE.format(step=4))
    again = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert again.returncode == 0 and "code of shift changed" in again.stdout, again.stdout + again.stderr
    forced = subprocess.run(
        cmd + ["--force", "stale", "--scheduler", "local:1"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert forced.returncode == 0, forced.stdout[-2000:] + forced.stderr[-3000:]
    assert "cluster local:1" in forced.stdout + forced.stderr
    timings = json.loads((ddir / "timings.json").read_text())
    assert timings["trained_members"] == 1 and timings["reused_members"] == 1
    edited = pd.read_csv(ddir / "results.csv")
    assert edited.loc[edited.method == "random"].equals(results.loc[results.method == "random"])
    assert json.loads((ddir / "config.json").read_text())[store.PLUGIN_CODE] != recorded[store.PLUGIN_CODE]
    assert json.loads((ddir / "_DONE.json").read_text())["worker"]["shared_fs"] is True


def test_a_plugin_travels_to_a_worker_without_the_file(tmp_path, rule_file):
    """A Dask unit carries the plugin's text: a worker that cannot read the file loads it."""
    plugins.load(str(rule_file))
    payload = plugins.for_workers()
    assert [name for name, _ in payload["files"]] == ["shift_rule.py"]
    code = textwrap.dedent(
        f"""
        import pickle, sys, pathlib
        from tcclib.method import plugins, registry
        payload = pickle.loads(pathlib.Path({str(tmp_path / "payload.pkl")!r}).read_bytes())
        plugins.on_worker(payload, pathlib.Path({str(tmp_path / "worker")!r}))
        print(registry.METHODS["shift"].code())
        """
    )
    (tmp_path / "payload.pkl").write_bytes(__import__("pickle").dumps(payload))
    rule_file.rename(tmp_path / "gone.py")  # the worker has no copy of the original file
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(registry.METHODS["shift"].code())  # the same code identity, so the same keys


def test_a_worker_that_finds_the_plugin_edited_after_the_run_sent_it_says_so(tmp_path, rule_file):
    """A worker on the same filesystem loads the user's file through ``$TCC_PLUGINS`` and the text
    the run sent; the file edited between the two registers the method twice: one line saying the
    file changed after the run started, not the advice to rename or replace (nothing trains)."""
    plugins.load(str(rule_file))
    payload = plugins.for_workers()  # what the run sent: the text as it was
    rule_file.write_text(SHIFT_RULE.format(step=4))  # the edit lands before the worker's first load
    plugins.load(str(rule_file))  # (the worker's $TCC_PLUGINS: the file as it is now)
    with pytest.raises(plugins.PluginError) as refused:
        plugins.on_worker(payload, tmp_path / "worker")
    said = str(refused.value)
    assert said.startswith(f"plugin shift_rule.py: {rule_file.resolve()} changed after the run started")
    assert said.endswith("run the same command again") and "replace=True" not in said and "\n" not in said


# --------------------------------------------------------------------------- the screen and notebook 09


@pytest.fixture(scope="module")
def tiny_reference(tmp_path_factory, bc):
    """A reference store of two finished datasets (the built-ins and a baseline, tiny settings)."""
    folder = tmp_path_factory.mktemp("reference")
    cfg = Config(methods=("no_pretrain", "random", "class"), baselines=("logreg",), **TINY)
    for name in ("breast_cancer", "balance-scale"):
        run = run_dataset(bc if name == "breast_cancer" else name, cfg)
        store.save_run(run, folder / name)
    return folder


def test_the_screen_trains_only_the_new_method_and_reuses_the_rest(tmp_path, tiny_reference, rule_file):
    from tcclib.paper import verdict
    from tcclib.running import screen

    loaded = plugins.load(str(rule_file))
    job = screen.Screen(
        methods=tuple(screen.new_methods([loaded.module])),
        reference=tiny_reference,
        compared=("class", "random", "no_pretrain", "logreg"),
        out=tmp_path / "screen",
        progress=False,
    )
    assert job.methods == ("shift",)
    lines = []
    results = screen.run(job, say=lines.append)
    assert sorted(results["method"].unique()) == ["class", "logreg", "no_pretrain", "random", "shift"]
    done = [line for line in lines if ": done in " in line]
    assert len(done) == 2 and all("2 members trained" in line for line in done)
    reference_results = pd.read_csv(tiny_reference / "breast_cancer" / "results.csv")
    ours = results[(results.dataset == "breast_cancer") & (results.method == "class")].reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, reference_results[reference_results.method == "class"].reset_index(drop=True))
    lines.clear()
    screen.run(job, say=lines.append)
    assert not [line for line in lines if ": done in " in line]  # unchanged: nothing runs, nothing trains
    assert "2 of 2 datasets already done" in "\n".join(lines)
    assert "(reused; shift matched as code " in "\n".join(lines)  # the identity it matched, short
    registry.how_rule("shift").name = "shift"  # (the same value: nothing changed)
    registry.how_rule("shift").extra = 1  # an attribute set here: the workers, loading the file, would not see it
    with pytest.raises(SweepError, match=r"how rule 'shift' \(shift_rule.py\): its arguments changed in this process"):
        screen.run(job, say=lines.append)
    rule_file.write_text(SHIFT_RULE.format(step=2))  # edited in its file: the screen trains it again
    plugins.load(str(rule_file))
    lines.clear()
    screen.run(job, say=lines.append)
    [changed] = [line for line in lines if ": code of shift changed since stored: they run again" in line]
    assert sorted(changed.split(":")[0].split(", ")) == ["balance-scale", "breast_cancer"]  # (the longest first)
    assert sum("2 members trained" in line for line in lines) == 2, lines
    page = verdict.write(results, ["shift"], list(job.compared), tmp_path / "screen")
    text = page.read_text()
    assert "shift ranks" in text and "Friedman" in text and "(figures/cd_accuracy.png)" in text
    assert (tmp_path / "screen" / "figures" / "cd_auroc.png").is_file()


def test_the_screen_refuses_what_it_cannot_run(tmp_path, tiny_reference):
    from tcclib.running import screen

    with pytest.raises(screen.ScreenError, match="no new method"):
        screen.plan(screen.Screen(methods=(), reference=tiny_reference))
    with pytest.raises(screen.ScreenError, match="no reference store"):
        screen.plan(screen.Screen(methods=("random",), reference=tmp_path / "nothing"))
    with pytest.raises(registry.RegistryError, match="unknown method or baseline 'nearbyy'"):
        screen.plan(screen.Screen(methods=("nearbyy",), reference=tiny_reference))


def test_notebook_09_runs_a_plugin_under_papermill(tmp_path, tiny_reference, rule_file):
    nb = tmp_path / "09.ipynb"
    convert = [
        sys.executable,
        "-m",
        "jupytext",
        "--to",
        "ipynb",
        "-o",
        str(nb),
        str(ROOT / "notebooks" / "09_your_rule.py"),
    ]
    subprocess.run(convert, check=True, capture_output=True)
    run = [sys.executable, "-m", "papermill", str(nb), str(tmp_path / "09_out.ipynb"), "--cwd", str(tmp_path)]
    for name, value in dict(plugin=rule_file, reference=tiny_reference, out_dir=tmp_path / "screen").items():
        run += ["-p", name, str(value)]
    run += ["-p", "compare", "[class, random, no_pretrain, logreg]", "-p", "progress", "False"]
    done = subprocess.run(run, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = json.loads((tmp_path / "09_out.ipynb").read_text())
    text = "".join(
        "".join(o.get("text", "")) + json.dumps(o.get("data", {}))
        for c in rendered["cells"]
        for o in c.get("outputs", [])
    )
    assert "shift ranks" in text and "2 members trained" in text
    assert (tmp_path / "screen" / "verdict.md").is_file()
    assert not (tmp_path / "screen" / "my_rule.py").exists()  # a plugin given: the example is not written there


def test_notebook_09s_rule_is_the_example_file():
    """The rule cell of notebook 09 is examples/nearby_rule.py, so its committed verdict is that file's."""
    source = (ROOT / "notebooks" / "09_your_rule.py").read_text()
    cell = source.split("# %%writefile {rule_file}\n", 1)[1].split("\n# %% [markdown]", 1)[0]
    assert cell.strip() == (ROOT / "examples" / "nearby_rule.py").read_text().strip()


def _factory(seed, cfg, trees=3):
    return None


def test_a_bound_factorys_identity_is_its_function_and_arguments():
    import functools

    five, six = (registry.code_identity(functools.partial(_factory, trees=n)) for n in (5, 6))
    assert five != six and five == registry.code_identity(functools.partial(_factory, trees=5))
    script = (
        "import functools, sys; sys.path.insert(0, {tests!r}); import test_plugins as t; "
        "from tcclib.method import registry; print(registry.code_identity(functools.partial(t._factory, trees=5)))"
    ).format(tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True, text=True)
    assert out.stdout.strip() == five, out.stderr  # the same in another process: no address in it


def test_a_correlation_rules_screen_takes_the_committed_importances(tmp_path):
    """The screen's settings are the paper set's splits and XGBoost settings: the committed
    importance matrices of outputs/paper have the keys its run asks for, so none is fitted again."""
    from tcclib.artifacts.keys import load
    from tcclib.data.sources import load_dataset
    from tcclib.running import screen

    rule = tmp_path / "least_rule.py"
    rule.write_text(
        'from tcclib.method import registry\nregistry.register_method("column_least_p", "column", "least")\n'
    )
    plugins.load(str(rule))
    job = screen.Screen(methods=("column_least_p",), datasets=("kc2",), out=tmp_path / "screen")
    [(name, cfg)] = screen.plan(job)
    assert screen._seed_importances(tmp_path / "screen" / name, ROOT / "outputs" / "paper" / name)
    prep = prepare_config(load_dataset(name), cfg)
    wanted = keys.run_keys(prep, cfg).importance
    stored = load(tmp_path / "screen" / name)
    assert all(stored.importance_of(sp.seed, wanted[str(sp.seed)]) is not None for sp in prep.splits)
    assert not screen._seed_importances(tmp_path / "screen" / name, ROOT / "outputs" / "paper" / name)  # once


def test_an_edited_plugin_drops_what_it_no_longer_registers_and_a_failed_one_leaves_nothing(tmp_path):
    path = tmp_path / "two_rules.py"
    path.write_text(
        "from tcclib.method import registry\n"
        "registry.register_method('first_p', 'column')\nregistry.register_method('second_p', 'pseudo')\n"
    )
    plugins.load(str(path))
    assert {"first_p", "second_p"} <= set(registry.METHODS)
    path.write_text("from tcclib.method import registry\nregistry.register_method('first_p', 'column')\n")
    plugins.load(str(path))
    assert "first_p" in registry.METHODS and "second_p" not in registry.METHODS
    path.write_text("from tcclib.method import registry\nregistry.register_method('third_p', 'column')\n1 / 0\n")
    with pytest.raises(plugins.PluginError, match=r"two_rules.py, line 3: ZeroDivisionError"):
        plugins.load(str(path))
    assert not {"first_p", "third_p"} & set(registry.METHODS)  # nothing half-registered is left
    assert str(path) not in [p.path for p in plugins.loaded()]


CELL = """
import torch

from tcclib.method import registry, rules


class Stride(rules.HowRule):
    name = "stride"
    needs = rules.NOTHING

    def __init__(self, step=1):
        self.step = step

    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        rows = (torch.arange(n_rows, device=u.device).view(1, n_rows, 1) + self.step) % n_rows
        return rows.expand(k, n_rows, n_features).contiguous()


registry.register_method("stride", Stride(step=STEP), "uniform")
"""


def run_cell(source: str, number: int) -> dict:
    """Run ``source`` as IPython runs a notebook cell: in ``__main__`` (a module with no file), its
    code compiled under a cell name that only linecache knows."""
    import linecache

    filename = f"/tmp/ipykernel_0/{number}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = sys.modules["__main__"].__dict__
    exec(compile(source, filename, "exec"), namespace)
    return namespace


@pytest.fixture
def kernel_main(monkeypatch):
    """A notebook kernel's ``__main__``: no ``__file__``; what its cells register goes afterwards."""
    monkeypatch.setitem(sys.modules, "__main__", type(sys)("__main__"))
    yield
    registry.remove_origin("__main__")


def test_a_rule_written_in_a_cell_is_checked_registered_trained_and_keyed(kernel_main, bc):
    cell = run_cell(CELL.replace("STEP", "1"), 1)
    assert tcclib.check_rule(cell["Stride"]()).ok  # (no source file: no OSError)
    first = registry.METHODS["stride"].code()
    X, y = bc.X.iloc[:120], bc.y.iloc[:120].to_numpy().copy()
    y[40:] = -1
    clf = tcclib.TCCClassifier(method="stride", epochs=1, head_epochs=1, random_state=0, verbose=False).fit(X, y)
    assert clf.predict(X).shape == (120,)
    run_cell(CELL.replace("STEP", "1").replace("    def donors", "    # a comment\n\n    def donors"), 2)
    assert registry.METHODS["stride"].code() == first  # the cell run again: replaced quietly, same key
    run_cell(CELL.replace("STEP", "2"), 3)
    assert registry.METHODS["stride"].code() != first  # an argument changed
    run_cell(CELL.replace("STEP", "1").replace("+ self.step) %", "- self.step) %"), 4)
    assert registry.METHODS["stride"].code() != first  # the code changed


def test_a_rules_arguments_enter_its_key_and_its_defaults_keep_the_committed_one():
    plugin = plugins.load(str(ROOT / "examples" / "nearby_rule.py"))
    near = sys.modules[plugin.module].NearbyValue
    spec = registry.METHODS["nearby"]
    committed = registry.rule_code(near(), spec)
    assert registry.rule_code(near(width=0.1), spec) == committed == spec.code()["nearby"] == "source:92fec80e2ae2a421"
    wider = registry.rule_code(near(width=0.2), spec)
    assert registry.changes(registry.code_identity(near()), registry.code_identity(near(width=0.2))) == ["arguments"]
    assert wider.split(" ")[0] == registry.code_identity(near()).split(" ")[0]  # the same code


def test_a_clash_between_two_places_names_both_and_an_unloaded_replacement_puts_back_the_builtin(kernel_main, tmp_path):
    run_cell(CELL.replace("STEP", "1"), 1)
    with pytest.raises(plugins.PluginError) as e:
        plugins.load(str(_stride_file(tmp_path)))  # the same name from a plugin file
    assert "already registered by __main__ (a notebook cell or script), and " in str(e.value)
    assert "stride_rule.py" in str(e.value) and "replace=True" in str(e.value)
    random_file = tmp_path / "random_rule.py"
    random_file.write_text(
        "from tcclib.method import registry\nregistry.register_method('random', 'pseudo', replace=True)\n"
    )
    plugins.load(str(random_file))
    assert registry.METHODS["random"].how == "pseudo"
    plugins.unload(str(random_file))
    assert registry.METHODS["random"].how == "column" and registry.get("random").origin == plugins.BUILTINS


BUILTIN_NAMED = """
from tcclib.method import objectives, registry, rules


class Flipped(rules.SameLabel):
    def donors(self, members, state, u):
        return super().donors(members, state, u.flip(-1).contiguous())


class Doubled(objectives.VIME):
    def loss(self, batch):
        return 2 * super().loss(batch)


registry.register_method("mine", HOW, "bernoulli_30", objective=OBJECTIVE, replace=True EXTRA)
"""


@pytest.mark.parametrize(
    "how, objective, named",
    [
        ('Flipped("column")', '"vime"', "how rule 'column' is one of tcclib's built-ins (methods random, vime, dae"),
        ('"column"', "Doubled()", "objective 'vime' is one of tcclib's built-ins (methods vime, vime_class use it)"),
    ],
    ids=["a how rule", "an objective"],
)
def test_a_users_object_with_a_builtins_name_never_changes_the_builtin_methods_unasked(how, objective, named, tmp_path):
    """A subclass of a built-in keeps its name (``VIME``'s is ``vime``): registering it with the
    user's method, even with ``replace=True`` (which redefines the user's own), is refused in one
    line naming the built-in methods it would change and the fix; its own name, or an explicit
    ``replace_rule=True``, is what it takes."""
    path = tmp_path / "builtin_named.py"
    source = BUILTIN_NAMED.replace("HOW", how).replace("OBJECTIVE", objective)
    path.write_text(source.replace(" EXTRA", ""))
    with pytest.raises(plugins.PluginError) as e:
        plugins.load(str(path))
    message = str(e.value)
    assert named in message and "give yours a name of its own" in message and "replace_rule=True" in message
    assert "mine" not in registry.METHODS and type(registry.how_rule("column")) is rules.SameLabel
    assert type(registry.objective("vime")) is objectives.VIME
    own = source.replace('("column")', '("column_flipped")').replace("Doubled()", 'Doubled(name="vime_doubled")')
    path.write_text(own.replace(" EXTRA", ""))
    plugins.load(str(path))
    assert registry.METHODS["vime"].objective == "vime" and registry.METHODS["random"].how == "column"
    path.write_text(source.replace(" EXTRA", ", replace_rule=True"))
    try:
        plugins.load(str(path))  # asked: the built-in is replaced for every method that uses it
        replaced = registry.how_rule("column") if "Flipped" in how else registry.objective("vime")
        assert type(replaced).__name__ in ("Flipped", "Doubled")
    finally:
        plugins.unload(str(path))
    assert type(registry.how_rule("column")) is rules.SameLabel and type(registry.objective("vime")) is objectives.VIME
    assert list(registry.HOWS)[:2] == ["none", "column"]  # (put back in its place)


@pytest.mark.parametrize("name, kind", [("random", "method"), ("logreg", "baseline")])
def test_a_builtin_methods_name_is_refused_as_a_method_with_a_name_of_its_own_as_the_fix(name, kind, tmp_path):
    """A plugin registering a method (or baseline) under a built-in's name is told so, as a method
    (not by its table group), with a name of its own as the fix; the built-in stays."""
    path = tmp_path / "takes_a_builtin_name.py"
    register = (
        f'registry.register_baseline("{name}", lambda seed, cfg: None)'
        if kind == "baseline"
        else f'registry.register_method("{name}", "column", "uniform")'
    )
    path.write_text(f"from tcclib.method import registry\n\n{register}\n")
    builtin = registry.get(name)
    with pytest.raises(plugins.PluginError) as e:
        plugins.load(str(path))
    message = str(e.value)
    assert f"{kind} {name!r} is one of tcclib's built-ins" in message and "a name of its own" in message
    assert "(how)" not in message and "(baseline)" not in message
    assert registry.get(name) is builtin


@pytest.fixture
def shell(monkeypatch):
    """An IPython shell in this process that runs cells as a kernel does (history in memory); what
    its cells registered and the shell itself go afterwards, and ``__main__`` is put back."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config as ShellSettings

    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])  # (IPython puts its namespace there)
    settings = ShellSettings()
    settings.HistoryManager.hist_file = ":memory:"
    yield InteractiveShell.instance(config=settings)
    for origin in list(plugins._CELL_RUNS):
        registry.remove_origin(origin)
    InteractiveShell.clear_instance()


def _cell(shell, source: str, cell_id: str | None = None):
    """Run ``source`` as a kernel runs a cell (``cell_id``: the id the frontend sends, as JupyterLab
    does; None: none, as papermill); the error it raised, or None."""
    return shell.run_cell(source, store_history=True, cell_id=cell_id).error_in_exec


def test_two_cells_registering_one_name_clash_and_a_cell_run_again_edited_replaces_quietly(shell, capsys):
    """Every cell's origin was ``__main__``, so a second cell replaced the first one's method
    quietly: a cell is now a place of its own, known by its id (or, with none, by its text)."""
    assert _cell(shell, CELL.replace("STEP", "1"), "cell-a") is None
    assert _cell(shell, CELL.replace("STEP", "2") + "# edited\n", "cell-a") is None  # the same cell: replaced
    assert registry.METHODS["stride"].draw.step == 2
    error = _cell(shell, CELL.replace("STEP", "3"), "cell-b")  # another cell: refused, both named
    assert isinstance(error, registry.RegistryError)
    assert str(error) == (
        "register: method 'stride' is already registered by the notebook cell run as In [2], and the notebook "
        "cell run as In [3] registers it again: choose another name, or pass replace=True to redefine it"
    )
    assert registry.METHODS["stride"].draw.step == 2
    assert _cell(shell, CELL.replace("STEP", "3").replace('"uniform")', '"uniform", replace=True)'), "c") is None
    assert registry.METHODS["stride"].draw.step == 3 and registry.origin_file("stride") is None
    for origin in list(plugins._CELL_RUNS):  # (the cells' method and rule go)
        registry.remove_origin(origin)
    assert _cell(shell, CELL.replace("STEP", "1")) is None  # no cell id (papermill): known by its text
    assert _cell(shell, CELL.replace("STEP", "1")) is None  # the same text run again: replaced
    error = _cell(shell, CELL.replace("STEP", "4"))
    assert "run as In [6] (no cell id: an edited cell counts as another), and the notebook cell run as In [7]" in str(
        error
    )
    capsys.readouterr()


def _stride_file(folder: Path) -> Path:
    path = folder / "stride_rule.py"
    path.write_text(CELL.replace("STEP", "3"))
    return path


def test_tcc_plugins_naming_a_folder_names_the_variable_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TCC_PLUGINS", str(tmp_path))
    with pytest.raises(plugins.PluginError) as e:
        plugins.load(str(tmp_path), "$TCC_PLUGINS")
    assert str(e.value) == (
        f"plugin {tmp_path} is a folder, not a .py file; $TCC_PLUGINS={str(tmp_path)!r}: set it to .py files "
        f"or module names separated by {os.pathsep!r}"
    )


def test_a_rule_module_imported_and_a_class_from_python_c_in_a_fresh_process():
    """Nothing asked the registry before ``import nearby_rule`` registers; a class with no source
    file (``python -c``) is named, registered and keyed by its compiled code and arguments."""
    code = textwrap.dedent(
        """
        import nearby_rule
        from tcclib.method import registry, rules
        class Mine(rules.HowRule):
            name = "mine"
            def __init__(self, k=1):
                self.k = k
            def donors(self, members, state, u):
                return (u * members.shape[1]).long()
        registry.register_method("mine", Mine(k=2))
        identity = registry.METHODS["mine"].code()["mine"]
        other = registry.rule_code(Mine(k=1), registry.METHODS["mine"])
        changed = registry.changes(identity, other)
        print(rules.rule_name(Mine()), identity.split(":")[0], *changed, "nearby" in registry.METHODS)
        K = 3  # a constant read as a default, then edited: the class's code is keyed by value
        class Mine(rules.HowRule):
            name = "mine"
            def __init__(self, k=K):
                self.k = k
            def donors(self, members, state, u):
                return (u * members.shape[1]).long()
        registry.register_method("mine", Mine(), replace=True, replace_rule=True)
        first = registry.METHODS["mine"].code()["mine"]
        K = 4
        class Mine(Mine):
            def __init__(self, k=K):
                self.k = k
        registry.register_method("mine", Mine(), replace=True, replace_rule=True)
        print(*registry.changes(first, registry.METHODS["mine"].code()["mine"]))
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'examples'}"}
    env.pop("TCC_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["'mine' code arguments True", "code arguments"]


OWN_MODULE_CELL = """
import sys
from tcclib.method import objectives, registry

class ReadsItsModule(objectives.Objective):
    name = "reads_its_module"
    def heads(self, stack):
        return {}
    def loss(self, batch):
        z = batch.encode(batch.pairs)
        return z.pow(2).mean((1, 2)) * vars(sys.modules[type(self).__module__])["GAIN"]

registry.register_method("reads_its_module", "column", "uniform", objective=ReadsItsModule(), replace=True)
"""


def test_a_cell_that_reads_its_own_module_by_a_string_is_keyed_without_ipythons_names(shell):
    """The notebook's namespace keyed whole held IPython's exit/quit/get_ipython (refused) and its
    history (_, _i, In, Out: another key after every cell); the user's values alone are keyed."""
    assert _cell(shell, "GAIN = 1.0", "gain") is None
    assert _cell(shell, OWN_MODULE_CELL, "objective") is None
    cfg = Config(methods=("reads_its_module",), **TINY)
    first = keys.code_identities(cfg)["reads_its_module"]
    assert _cell(shell, "1 + 1", "unrelated") is None  # (a cell with an output: history moves)
    assert keys.code_identities(cfg)["reads_its_module"] == first
    assert _cell(shell, "GAIN = 2.0", "gain") is None
    assert keys.code_identities(cfg)["reads_its_module"] != first


def test_a_script_run_into_the_notebook_and_edited_keys_its_values_and_refuses_nothing(shell, tmp_path, monkeypatch):
    """``%run -i script.py`` leaves ``__file__`` in the notebook's namespace: once the script was
    edited every cell's code was refused as if the notebook were a module changed on disk."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "settings_script.py"
    script.write_text("GAIN = 1.0\n")
    assert _cell(shell, "%run -i settings_script.py", "run") is None
    reads_gain = OWN_MODULE_CELL.replace('vars(sys.modules[type(self).__module__])["GAIN"]', "GAIN")
    assert _cell(shell, reads_gain, "objective") is None
    cfg = Config(methods=("reads_its_module",), **TINY)
    first = keys.code_identities(cfg)["reads_its_module"]
    script.write_text("GAIN = 2.0\n# edited\n")
    os.utime(script, (time.time() + 5, time.time() + 5))  # (a later write than the first, whatever the clock)
    assert _cell(shell, "%run -i settings_script.py", "run") is None
    assert keys.code_identities(cfg)["reads_its_module"] != first
