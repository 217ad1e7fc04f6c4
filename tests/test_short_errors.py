"""tcclib's own errors stay short: in a notebook kernel (papermill, Lab) and on the command line
they end with the error's line, after a line naming the file that holds the full traceback;
``TCC_TRACEBACK=1`` (or ``--traceback``) shows the traceback instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from tcclib import Config, run_dataset
from tcclib.artifacts import store
from tcclib.method import plugins
from tcclib.running.cli import main
from tcclib.running.screen import ScreenFailed

ROOT = Path(__file__).resolve().parents[1]

BAD_RULE = textwrap.dedent(
    """
    from tcclib.method import registry, rules


    class Boom(rules.HowRule):
        name = "boom"

        def donors(self, members, state, u):
            raise KeyError("no such column")


    registry.register_method("boom", Boom(), "uniform")
    """
)
WIDE_FAILING_RULE = BAD_RULE.replace(
    '        raise KeyError("no such column")\n',
    '        if u.shape[-1] > 12: raise KeyError("no such column")  # (check_rule\'s table has 12)\n'
    "        return rules.column_donors(u)\n",
)
assert WIDE_FAILING_RULE != BAD_RULE
"""Fails on breast_cancer's 30 features, not on the 12 of the contract check a screen makes first."""


def _env(tmp_path: Path, **extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TCC_TRACEBACK_DIR=str(tmp_path / "tracebacks"), **extra)
    env.pop("TCC_TRACEBACK", None)
    env.update(extra)
    return env


def _notebook(tmp_path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    path = tmp_path / "cell.ipynb"
    nbformat.write(nb, path)
    return path


def _papermill(tmp_path: Path, nb: Path, **env) -> tuple[subprocess.CompletedProcess, list]:
    out = tmp_path / "out.ipynb"
    cmd = [sys.executable, "-m", "papermill", str(nb), str(out), "--cwd", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(tmp_path, **env), timeout=300)
    outputs = [o for c in json.loads(out.read_text())["cells"] for o in c.get("outputs", [])]
    return done, [o for o in outputs if o["output_type"] == "error"]


MISSING = "import tcclib, tempfile\ntcclib.load_dataset('kc2', data_dir=tempfile.mkdtemp(), allow_download=False)"


def test_a_missing_dataset_in_papermill_ends_with_its_line_and_names_the_saved_traceback(tmp_path):
    done, (error,) = _papermill(tmp_path, _notebook(tmp_path, MISSING))
    lines = [x for x in (done.stdout + done.stderr).splitlines() if x.strip()]
    assert done.returncode == 1
    assert lines[-1].startswith("DataUnavailableError: dataset kc2 (OpenML 1063): no file 1063.arff in"), lines[-3:]
    assert lines[-2].startswith(f"(the full traceback is in {tmp_path / 'tracebacks'}")
    assert "%tb or TCC_TRACEBACK=1 shows it here)" in lines[-2]
    assert error["ename"] == "DataUnavailableError" and len(error["traceback"]) == 2  # the cell's output: two lines
    (saved,) = (tmp_path / "tracebacks").glob("*-DataUnavailableError.txt")
    assert str(saved) in lines[-2]
    text = saved.read_text()
    assert text.startswith("Traceback (most recent call last):") and "sources.py" in text


def test_tcc_traceback_shows_the_whole_traceback_in_the_notebook(tmp_path):
    done, (error,) = _papermill(tmp_path, _notebook(tmp_path, MISSING), TCC_TRACEBACK="1")
    assert done.returncode == 1
    assert len(error["traceback"]) > 2 and "sources.py" in "".join(error["traceback"])
    assert not (tmp_path / "tracebacks").exists()


def test_a_rule_error_and_a_bad_setting_in_a_kernel_and_tb_after_it(tmp_path):
    """In a kernel as Lab runs it (nbclient, errors allowed, as cells run one by one): a broken
    rule caught by check_rule and a bad setting each end with their line; %tb shows the last one's
    traceback."""
    from nbclient import NotebookClient

    (tmp_path / "bad_rule.py").write_text(BAD_RULE)
    nb = nbformat.read(
        _notebook(
            tmp_path,
            "import tcclib\ntcclib.load_plugins('bad_rule.py')\ntcclib.check_rule('boom')",
            "tcclib.Config(epochs='five')",
            "%tb",
        ),
        as_version=4,
    )
    os.environ["TCC_TRACEBACK_DIR"] = str(tmp_path / "tracebacks")
    try:
        NotebookClient(nb, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        del os.environ["TCC_TRACEBACK_DIR"]
    rule_error, setting_error = (o for c in nb.cells[:2] for o in c.outputs if o.output_type == "error")
    assert rule_error.ename == "RuleContractError" and len(rule_error.traceback) == 2
    assert rule_error.traceback[-1].startswith("RuleContractError: how rule 'boom' (bad_rule.py): 1 contract breach")
    assert "donors() failed at line 9: KeyError: 'no such column'" in rule_error.traceback[-1]
    assert setting_error.ename == "ConfigError" and len(setting_error.traceback) == 2
    assert setting_error.traceback[-1].startswith("ConfigError: epochs")
    shown = "".join(o.get("text", "") + "".join(o.get("traceback", [])) for o in nb.cells[2].outputs)
    assert "ConfigError" in shown and "config.py" in shown  # %tb: the full traceback of the last error


@pytest.fixture(scope="module")
def tiny_reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    cfg = Config(methods=("no_pretrain", "random", "class"), baselines=("logreg",), seeds=(0,), epochs=1, head_epochs=1)
    store.save_run(run_dataset("breast_cancer", cfg.replace(progress=False)), folder / "breast_cancer")
    return folder


def test_the_command_line_ends_a_rules_error_with_its_line_and_exit_status_1(
    tmp_path, tiny_reference, monkeypatch, capsys, kept_environ
):
    (tmp_path / "bad_rule.py").write_text(BAD_RULE)
    params = tmp_path / "screen.yaml"
    params.write_text(
        f"name: tiny_screen\ndatasets: [breast_cancer]\nscreen:\n  reference: {tiny_reference}\n"
        f"  compare: [class, random, no_pretrain, logreg]\n  out: {tmp_path / 'out'}\n"
    )
    monkeypatch.setenv("TCC_TRACEBACK_DIR", str(tmp_path / "tracebacks"))
    monkeypatch.delenv("TCC_TRACEBACK", raising=False)
    monkeypatch.chdir(tmp_path)
    argv = [str(params), "--plugin", str(tmp_path / "bad_rule.py")]
    try:
        assert main(argv) == 2  # a rule failing on any table: its contract check, before any work
        err = capsys.readouterr().err.strip()
        contract = "how rule 'boom' (bad_rule.py): donors() failed at line 9: KeyError: 'no such column'"
        assert err == f"error: method boom: {contract}"
        assert not (tmp_path / "out").exists()
        (tmp_path / "bad_rule.py").write_text(WIDE_FAILING_RULE)  # one failing on the screen's table alone
        assert main(argv) == 1
        err = capsys.readouterr().err
        lines = [x for x in err.splitlines() if x.strip()]
        # the screen runs on the sweep's workers: the rule's own line comes back inside the screen's
        rule_line = "how rule 'boom' (bad_rule.py): donors() failed at line 9: KeyError: 'no such column'"
        assert lines[-1].startswith("error: ScreenFailed: screen: 1 dataset failed: breast_cancer: ")
        assert rule_line in lines[-1] and "_FAILED.json" in lines[-1]
        assert lines[-2].startswith("(the full traceback is in ") and lines[-2].endswith("shows it here)")
        (record,) = (tmp_path / "out").rglob("_FAILED.json")
        assert 'bad_rule.py", line 9, in donors' in json.loads(record.read_text())["traceback"]
        assert "Traceback" not in err
        with pytest.raises(ScreenFailed) as shown:  # --traceback: the error itself, the tracebacks printed
            main([*argv, "--traceback"])
        assert 'bad_rule.py", line 9, in donors' in capsys.readouterr().err
        assert f"{type(shown.value).__name__}: {shown.value}".startswith("ScreenFailed: screen: 1 dataset failed")
    finally:
        plugins.unload(str(tmp_path / "bad_rule.py"))
