"""Progress bars where stderr is a file or a pipe (a batch job, CI): whole lines at an interval and
the bar's last state, never tqdm's ``\\r`` frames (which filled a log with thousands of characters
a fit)."""

from __future__ import annotations

import os
import subprocess
import sys

from tcclib.util import progress

FIT = """
import numpy as np
from sklearn.datasets import load_wine
from tcclib import TCCClassifier
X, y = load_wine(return_X_y=True)
TCCClassifier("random", epochs=10, head_epochs=5, hidden_dim=16, encoder_depth=2, verbose=True,
              random_state=0).fit(X, y)
"""

BAR = """
import time
from tcclib.util.progress import bar
b = bar(40, "epochs", mininterval=0.1)
for _ in range(40):
    time.sleep(0.02)
    b.update(1)
b.close()
"""


def _stderr_to_file(code: str, tmp_path, **env) -> str:
    log = tmp_path / "job.log"
    environment = {k: v for k, v in os.environ.items() if k != progress.PROGRESS_ENV} | env
    with open(log, "w") as f:
        subprocess.run([sys.executable, "-c", code], stderr=f, stdout=f, check=True, env=environment, timeout=300)
    return log.read_bytes().decode()  # read_text would turn each "\r" into a newline


def test_a_fit_logged_to_a_file_writes_lines_not_frames(tmp_path):
    text = _stderr_to_file(FIT, tmp_path)
    assert "\r" not in text
    bars = [line for line in text.splitlines() if "pretraining" in line]
    assert bars and "10/10" in bars[-1], text  # the bar's last state, as one line


def test_lines_come_at_the_interval_and_end_with_the_last_state(tmp_path):
    text = _stderr_to_file(BAR, tmp_path)
    lines = text.splitlines()
    assert "\r" not in text and lines[-1].startswith("epochs: 100%") and "40/40" in lines[-1]
    assert 3 <= len(lines) <= 12, lines  # about 0.8 s of work, a line at most every 0.1 s


def test_tcc_progress_text_keeps_the_frames_the_sweep_streams_to_a_terminal(tmp_path):
    text = _stderr_to_file(BAR, tmp_path, TCC_PROGRESS="text")
    assert "\r" in text


def test_a_render_keeps_each_bar_s_last_state_only():
    import nbformat

    def stderr(text):
        return nbformat.v4.new_output("stream", name="stderr", text=text)

    passing = ["fit(a): pretraining:  20%|#  | 2/10", "fit(a): pretraining:  60%|## | 6/10"]
    ended = "fit(a): pretraining: 100%|###| 10/10"
    cell = nbformat.v4.new_code_cell("fit()")
    cell.outputs = [
        *(stderr(line + "\n") for line in passing),
        stderr(ended),
        stderr("\n"),
        nbformat.v4.new_output("stream", name="stdout", text="done\n"),
        stderr("a warning of the user's\n"),
    ]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert progress.ended_bars_only(nb)
    assert [(o.name, o.text) for o in cell.outputs] == [
        ("stderr", ended + "\n"),
        ("stdout", "done\n"),
        ("stderr", "a warning of the user's\n"),
    ]
    assert not progress.ended_bars_only(nb)  # nothing left to leave out
    two_bars = "fit(a): pretraining: 100%|###| 10/10\nfit(b): pretraining: 100%|###| 10/10\n"
    assert progress.last_states(two_bars) == two_bars
