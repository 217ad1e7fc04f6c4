"""papermill as the docs show it, and ``make notebooks``: a misspelled or ill-typed parameter
ends with its one line (no kernel traceback in between), and ``make notebooks`` prints no
"Notebook is not trusted"."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "parameter, line",
    [
        (["epoch", "2"], "ParameterError: unknown notebook parameter(s): 'epoch' (did you mean 'epochs'?)."),
        (["epochs", "five"], "ParameterError: notebook parameters: epochs: expected an integer, got str 'five'"),
    ],
)
def test_plain_papermill_ends_with_the_one_line(tmp_path, parameter, line):
    nb = tmp_path / "01_data_prep.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / "01_data_prep.py"), nb)
    cmd = [sys.executable, "-m", "papermill", str(nb), str(tmp_path / "out.ipynb"), "-p", *parameter]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = [x for x in (out.stdout + out.stderr).splitlines() if x.strip()]
    assert out.returncode == 1 and lines[-1].startswith(line), lines[-3:]
    assert "nbparams.py" not in out.stderr  # the kernel's traceback is left out: the line says it all


def test_make_notebooks_is_quiet_about_outputs_this_machine_has_not_signed(tmp_path):
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "Makefile", tmp_path)
    shutil.copy(ROOT / "notebooks" / "01_data_prep.py", tmp_path / "notebooks")
    # a paired notebook with outputs, as Lab leaves it, but not signed by this machine's notary
    shutil.copy(ROOT / "outputs" / "demo" / "breast_cancer" / "01_data_prep.ipynb", tmp_path / "notebooks")
    out = subprocess.run(
        ["make", "-s", "notebooks", f"PY={sys.executable}"], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0 and (out.stdout + out.stderr).strip() == "", out.stdout + out.stderr
    assert jupytext.read(tmp_path / "notebooks" / "01_data_prep.ipynb").cells[-1].get("outputs") is not None
