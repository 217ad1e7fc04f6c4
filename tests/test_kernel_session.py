"""One kernel for several notebooks (issue 32, item 5): each notebook still runs as in a fresh kernel."""

import json
import os
import signal
import threading
import time

import pytest

from tcclib.running import notebooks

# A notebook that reports its kernel, working directory and whether an earlier notebook's name
# survived, and triggers the same warning from the same line of a module each time.
SOURCE = """\
# %%
import os
import warner

leftover_seen = "leftover" in globals()
leftover = 1

# %%
import json

print("REPORT " + json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "leftover_seen": leftover_seen}))
warner.warn()
"""

WARNER = """\
import warnings


def warn():
    warnings.warn("tcc-session-test", UserWarning)
"""


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """Two copies of :data:`SOURCE` as notebooks 91 and 92, and two working folders with the module
    that warns."""
    src = tmp_path / "nb"
    src.mkdir()
    for name in ("91_first", "92_second"):
        (src / f"{name}.py").write_text(SOURCE)
    monkeypatch.setenv("TCC_NOTEBOOKS", str(src))
    folders = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "warner.py").write_text(WARNER)
        folders.append(folder)
    return folders


def _report(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    text = "".join("".join(o.get("text", "")) for o in code[-1]["outputs"])
    report = json.loads(text.split("REPORT ", 1)[1].splitlines()[0])
    report["counts"] = [c["execution_count"] for c in code]
    report["warned"] = "tcc-session-test" in text
    return report


def test_a_session_runs_each_notebook_as_in_a_fresh_kernel(sources, tmp_path):
    a, b = sources
    heartbeats = {t for t in threading.enumerate() if type(t).__name__ == "HBChannel"}  # other tests'
    with notebooks.KernelSession() as kernel:
        notebooks.execute("91_first", a / "91.ipynb", {}, a, kernel=kernel)
        notebooks.execute("92_second", b / "92.ipynb", {}, b, kernel=kernel)
        assert kernel.km.is_alive()
    assert kernel.km is None  # closed with the session
    first, second = _report(a / "91.ipynb"), _report(b / "92.ipynb")
    assert first["pid"] == second["pid"]  # one kernel served both
    assert second["cwd"] == str(b.resolve())  # in the second notebook's folder
    assert not first["leftover_seen"] and not second["leftover_seen"]  # the namespace was cleared
    assert first["counts"] == second["counts"] == [1, 2]  # counted from 1 again
    assert first["warned"] and second["warned"]  # the same warning is shown again
    # papermill's clients were stopped: no heartbeat thread outlives its notebook
    assert not [t for t in threading.enumerate() if type(t).__name__ == "HBChannel" and t not in heartbeats]


def test_fresh_sessions_start_a_kernel_per_notebook_and_a_dead_kernel_is_replaced(sources):
    a, b = sources
    with notebooks.KernelSession(fresh=True) as kernel:
        notebooks.execute("91_first", a / "91.ipynb", {}, a, kernel=kernel)
        notebooks.execute("92_second", b / "92.ipynb", {}, b, kernel=kernel)
    assert _report(a / "91.ipynb")["pid"] != _report(b / "92.ipynb")["pid"]

    with notebooks.KernelSession() as kernel:
        notebooks.execute("91_first", a / "91.ipynb", {}, a, kernel=kernel)
        dead = _report(a / "91.ipynb")["pid"]
        os.kill(dead, signal.SIGKILL)
        for _ in range(100):
            if not kernel.km.is_alive():
                break
            time.sleep(0.05)
        notebooks.execute("92_second", b / "92.ipynb", {}, b, kernel=kernel)
    second = _report(b / "92.ipynb")
    assert second["pid"] != dead and second["counts"] == [1, 2]
