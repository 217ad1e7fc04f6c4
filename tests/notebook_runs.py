"""Notebook 09 under papermill, as a user runs it, for the tests that check its screen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def papermill_09(tmp_path: Path, env: dict, **parameters: str) -> subprocess.CompletedProcess:
    """notebooks/09_your_rule.py made a notebook (jupytext), then run by papermill with
    ``parameters`` (``-p NAME VALUE``) into ``tmp_path/09_out.ipynb``, working in ``tmp_path``."""
    nb = tmp_path / "09.ipynb"
    convert = [sys.executable, "-m", "jupytext", "--to", "ipynb", "-o", str(nb), "notebooks/09_your_rule.py"]
    subprocess.run(convert, cwd=ROOT, check=True, capture_output=True)
    run = [sys.executable, "-m", "papermill", str(nb), str(tmp_path / "09_out.ipynb"), "--cwd", str(tmp_path)]
    for name, value in parameters.items():
        run += ["-p", name, value]
    return subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
