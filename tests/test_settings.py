"""One declaration per setting, and an explicit registry.

Every setting is declared once, on its :class:`tcclib.method.config.Config` field; validation, the
content keys, the store's lists, the estimator's parameters, the command line's help,
``docs/parameters.md`` and the notebooks' parameter cells follow from it.  The registry fills
itself in a stated order (:func:`tcclib.method.plugins.ensure_loaded`), not as a side effect of
an import, and a plugin that changes torch's global state at import is refused.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from tcclib.method import config, plugins, registry, settings
from tcclib.method.config import SETTINGS, Config, ConfigError
from tcclib.method.estimator import TCCClassifier
from tcclib.running import cli, reference

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params" / "smoke.yaml"


def _run(code_or_args, env_extra=None, cwd=None, root=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", **(env_extra or {})}
    env.pop("TCC_PLUGINS", None) if "TCC_PLUGINS" not in (env_extra or {}) else None
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd or root, capture_output=True, text=True, timeout=300
    )


# --------------------------------------------------------------------------- generated files


def test_the_generated_page_and_notebook_cells_are_current():
    stale = [str(p.relative_to(ROOT)) for p in reference.stale(ROOT)]
    assert stale == [], f"stale (run make notebooks): {stale}"


def test_every_notebook_parameter_cell_lists_every_setting_with_its_help():
    for name in reference.NOTEBOOKS:
        text = (ROOT / "notebooks" / f"{name}.py").read_text(encoding="utf-8")
        for s in SETTINGS.values():
            assert f"\n{s.name}: " in text and f"  # {s.help}\n" in text, (name, s.name)
    # the drift the issue found: the head comment without the README's recommended probe
    assert "head: str = 'frozen'  # " in text and "probe" in text.split("head: str = 'frozen'")[1].split("\n")[0]


def test_every_allowed_value_is_named_in_its_help_line():
    for s in SETTINGS.values():
        for value in settings.allowed(s):
            assert value == settings.AUTO or value in s.help, (s.name, value)


def test_the_page_names_every_setting_key_and_place():
    page = reference.page()
    for s in SETTINGS.values():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{s.name}` |"))
        assert s.key_text() in row and ", ".join(s.where) in row and s.help.replace("|", "\\|") in row


def test_the_estimator_takes_exactly_the_settings_declared_for_it():
    params = set(inspect.signature(TCCClassifier.__init__).parameters) & set(SETTINGS)
    assert params == set(config.names(where=settings.ESTIMATOR))
    for name in params:  # its defaults are the declared ones
        assert inspect.signature(TCCClassifier.__init__).parameters[name].default == SETTINGS[name].default


def test_the_command_line_help_lists_every_file_setting(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in config.names(where=settings.FILE):
        assert f"\n  {name}: " in out


def test_derived_lists_are_the_ones_the_stored_keys_were_made_with():
    from tcclib.artifacts import keys, store

    assert set(keys._ALL) == {
        "hidden_dim",
        "encoder_depth",
        "head_depth",
        "bias_init",
        "lr",
        "batch_size",
        "head_epochs",
        "device",
        "matmul_precision",
    }
    assert keys._PRETRAIN == ("epochs", "corruption_rate", "temperature")
    assert list(config.XGB_SETTINGS) == ["xgb_trees", "xgb_depth", "xgb_eta", "xgb_subsample", "xgb_colsample"]
    assert set(config.LATER_SETTINGS) == {
        "fidelity",
        *config.FIDELITY_SWITCHES,
        "xgb_max_bin",
        "compile",
        "draws",
        "head",
        "encoder_lr",
    }
    assert set(store._NOT_IN_KEY) == {"progress", "keep_embeddings", "baselines", "extra", "head", "encoder_lr"}
    assert set(store._NOT_COMPARED) == {"progress", "keep_embeddings"}


def test_validation_comes_from_the_declarations():
    with pytest.raises(ConfigError, match=r"^head_epochs: must be >= 1, got 0$"):
        Config(head_epochs=0)
    with pytest.raises(ConfigError, match=r"^xgb_eta: must be in \(0, 1\], got 1.5$"):
        Config(xgb_eta=1.5)
    with pytest.raises(ConfigError, match=r"^test_fraction: must be in \(0, 1\), got 1$"):
        Config(test_fraction=1)
    with pytest.raises(ConfigError, match=r"head: one of 'frozen', 'finetune', 'concat', 'probe' .*got 'prob' "):
        Config(head="prob")
    with pytest.raises(ConfigError, match=r"^progress: expected true or false, got str 'yes'$"):
        Config(progress="yes")


# --------------------------------------------------------------------------- a setting added in one line


_THROWAWAY = (
    '    widget: int = setting(3, at_least=1, unless=3, help="a throwaway setting (widgets per view)", '
    'key=VARIANT, stage="pretraining", where=_ALL)  # noqa: E501\n'
)


@pytest.fixture(scope="module")
def widget_tree(tmp_path_factory) -> Path:
    """A copy of the checkout's code, notebooks and page with one line added: a new setting."""
    root = tmp_path_factory.mktemp("widget")
    shutil.copytree(ROOT / "tcclib", root / "tcclib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("*.ipynb", ".ipynb*"))
    (root / "docs").mkdir()
    shutil.copy(ROOT / reference.PAGE, root / reference.PAGE)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    source = root / "tcclib" / "method" / "config.py"
    text = source.read_text(encoding="utf-8")
    anchor = "    encoder_init: str = setting("
    assert text.count(anchor) == 1
    source.write_text(text.replace(anchor, _THROWAWAY + anchor), encoding="utf-8")
    # what a contributor does next (tools/record_training_code.py --check --record: a setting at its
    # default computes the same numbers), else every key would hold the edited code's digest
    recorded = _run(_RECORD, root=root)
    assert recorded.returncode == 0, recorded.stderr
    return root


_RECORD = (
    "from tcclib.artifacts import keys, own_code; "
    "own_code.PACKAGE.joinpath('artifacts', 'recorded_code.py').write_text(own_code.record_text(keys.TRAIN_VERSION))"
)


_WIDGET_PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    from tcclib.artifacts import keys, store
    from tcclib.data.preprocess import SeedSplit
    from tcclib.method.config import Config, ConfigError, LATER_SETTINGS, cli_help
    from tcclib.running import nbparams, reference

    z = np.zeros((4, 3), np.float32)
    sp = SeedSplit(1, z, z, np.zeros(4, int), np.zeros(4, int), np.ones(4, bool), np.ones(3, bool),
                   np.zeros(3, bool), np.zeros(3, int), np.arange(4), np.arange(4))
    out = {}
    try:
        Config(widget=0)
    except ConfigError as e:
        out["refused"] = str(e)
    out["keys"] = {w: {m: keys.member_key(sp, m, Config(widget=w), ("a", "b")) for m in ("random", "no_pretrain")}
                   for w in (3, 5)}
    out["later"] = "widget" in LATER_SETTINGS
    out["page"] = [l for l in reference.page().splitlines() if "`widget`" in l]
    out["cell"] = [l for l in reference.notebook_block() if l.startswith("widget:")]
    out["stale"] = sorted(str(p.relative_to(reference.paths.project_root())) for p in reference.stale())
    out["notebook"] = nbparams.config_from({"widget": 7}).widget
    out["cli"] = [l for l in cli_help().splitlines() if "widget" in l]
    print(json.dumps(out))
    """
)


def test_a_setting_declared_in_one_line_is_validated_keyed_documented_and_a_parameter(widget_tree):
    out = _run(_WIDGET_PROBE, root=widget_tree)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["refused"] == "widget: must be >= 1, got 0"
    # keyed: a pretrained member's key moves off the default, not at it, nor a member without pretraining
    here = {m: _member_key(m) for m in ("random", "no_pretrain")}
    assert got["keys"]["3"] == here
    assert got["keys"]["5"]["random"] != here["random"] and got["keys"]["5"]["no_pretrain"] == here["no_pretrain"]
    assert got["later"] is True  # a stored config.json without it ran at its default
    assert len(got["page"]) == 1 and "a throwaway setting (widgets per view)" in got["page"][0]
    assert got["cell"] == ["widget: int = 3  # a throwaway setting (widgets per view)"]
    assert got["notebook"] == 7
    assert got["cli"] == ["  widget: integer >= 1; default 3"]
    # the committed page and cells no longer match: the drift test fails until make notebooks
    assert got["stale"] == [str(reference.PAGE), *(f"notebooks/{n}.py" for n in reference.NOTEBOOKS)]
    written = _run(["-m", "tcclib.running.reference"], root=widget_tree)
    assert (
        written.returncode == 0
        and _run(["-m", "tcclib.running.reference", "--check"], root=widget_tree).returncode == 0
    )
    assert "widget: int = 3  # a throwaway" in (widget_tree / "notebooks" / "03_pretraining.py").read_text()


def _member_key(method: str) -> str:
    from tcclib.artifacts import keys
    from tcclib.data.preprocess import SeedSplit

    z = np.zeros((4, 3), np.float32)
    sp = SeedSplit(
        1, z, z, np.zeros(4, int), np.zeros(4, int), np.ones(4, bool), np.ones(3, bool),
        np.zeros(3, bool), np.zeros(3, int), np.arange(4), np.arange(4),
    )  # fmt: skip
    return keys.member_key(sp, method, Config(), ("a", "b"))


# --------------------------------------------------------------------------- the registry


def test_importing_loads_nothing_and_the_first_question_loads_in_the_stated_order(tmp_path):
    dist = tmp_path / "site"
    (dist / "tcc_ep_demo-1.0.dist-info").mkdir(parents=True)
    (dist / "tcc_ep_demo-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tcc-ep-demo\nVersion: 1.0\n"
    )
    (dist / "tcc_ep_demo-1.0.dist-info" / "entry_points.txt").write_text("[tcclib.plugins]\nep = tcc_ep_rules\n")
    (dist / "tcc_ep_rules.py").write_text(
        "from tcclib.method.registry import register_method\nregister_method('ep_column', 'column')\n"
    )
    env_rule = tmp_path / "env_rule.py"
    env_rule.write_text("from tcclib.method.registry import register_method\nregister_method('env_column', 'column')\n")
    clash = tmp_path / "clash_rule.py"
    clash.write_text("from tcclib.method.registry import register_method\nregister_method('ep_column', 'pseudo')\n")
    code = textwrap.dedent(
        """
        import sys, tcclib, tcclib.method.config
        from tcclib.method import plugins, registry
        before = plugins._STATE["filled"]
        names = registry.method_names()
        order = [p.module for p in plugins.loaded(include_builtins=True)]
        try:  # a --plugin that registers the entry point's name: the package is named
            plugins.load(CLASH, "--plugin")
        except plugins.PluginError as e:
            print(str(e), file=sys.stderr)
        print(before, names.index("ep_column") < names.index("env_column"), order)
        """
    ).replace("CLASH", repr(str(clash)))
    out = _run(code, {"TCC_PLUGINS": str(env_rule), "PYTHONPATH": f"{ROOT}{os.pathsep}{dist}"})
    assert out.returncode == 0, out.stderr
    before, ep_first, order = out.stdout.strip().split(" ", 2)
    assert before == "False" and ep_first == "True"
    assert "method 'ep_column' is already registered by " in out.stderr and "of the package tcc-ep-demo)" in out.stderr
    assert order.startswith("['tcclib.method.builtins', 'tcc_ep_rules', 'tcc_plugin_env_rule_")


def test_no_module_writes_or_reads_another_modules_private_names():
    """``module._name`` of another tcclib module nowhere in tcclib (the registry's hooks were)."""
    found = []
    for path in sorted((ROOT / "tcclib").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tcclib"):
                modules |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                modules |= {a.asname or a.name for a in node.names if a.name.startswith("tcclib")}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    assert [f for f in found if "/method/" in f or "/artifacts/" in f] == []


# --------------------------------------------------------------------------- plugins: torch state, missing files


@pytest.mark.parametrize(
    "line, what",
    [
        ("torch.set_default_dtype(torch.float64)", "default dtype torch.float32 -> torch.float64"),
        ("torch.set_grad_enabled(False)", "grad mode True -> False"),
    ],
)
def test_a_plugin_that_changes_torchs_global_state_is_refused_and_the_state_set_back(tmp_path, line, what):
    rule = tmp_path / "dtype_rule.py"
    rule.write_text(
        f"import torch\nfrom tcclib.method.registry import register_method\n{line}\n"
        "register_method('global_column', 'column')\n"
    )
    with pytest.raises(plugins.PluginError) as caught:
        plugins.load(str(rule))
    message = str(caught.value)
    assert "\n" not in message and str(rule) in message and what in message and "refused and set back" in message
    assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()
    assert "global_column" not in registry.METHODS
    assert caught.value._render_traceback_() == [f"PluginError: {message}"]  # one line in a notebook too


def test_the_command_line_says_a_missing_plugin_in_one_line(tmp_path, monkeypatch, capsys, kept_environ):
    monkeypatch.delenv("TCC_PLUGINS", raising=False)
    assert cli.main([str(PARAMS), "--check", "--plugin", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.py: no such file" in err and "Traceback" not in err
    # $TCC_PLUGINS and entry points are read when a process first fills the registry: a fresh one
    env = _run(["-m", "tcclib", str(PARAMS), "--check"], {"TCC_PLUGINS": "no_such_module_xyz"})
    assert env.returncode == 2 and env.stderr.count("\n") == 1
    assert "no_such_module_xyz (from $TCC_PLUGINS): no module of that name" in env.stderr
    dist = tmp_path / "site" / "tcc_broken-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tcc-broken\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tcclib.plugins]\nbroken = no_such_module_abc\n")
    ep = _run(["-m", "tcclib", str(PARAMS), "--check"], {"PYTHONPATH": f"{ROOT}{os.pathsep}{dist.parent}"})
    assert ep.returncode == 2 and ep.stderr.count("\n") == 1 and "Traceback" not in ep.stderr
    assert "no_such_module_abc (from entry point broken of the package tcc-broken): no module of that" in ep.stderr
