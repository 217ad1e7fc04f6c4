"""Run All on a committed render writes nothing under ``outputs/`` (issue 57): a render's injected
parameters name its own folder there, and its code (``nbparams.run_folder``, through ``per_dataset``
and ``aggregate``) writes to the same place under ``runs/`` instead and says so; only a re-render
(the renderer sets ``TCC_RENDER`` for a notebook it renders into ``outputs/``) writes there.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import jupytext
import nbformat
import pytest

from tcclib.running import nbparams, notebooks
from tcclib.running.nbparams import RENDER_ENV, ParameterError

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "outputs/demo/breast_cancer"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("TCC_ROOT", str(tmp_path))
    monkeypatch.delenv(RENDER_ENV, raising=False)
    return tmp_path


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_a_render_s_folders_under_outputs_become_the_same_places_under_runs(root, capsys):
    namespace = {"dataset": "breast_cancer", "set_name": "demo", "output_dir": FOLDER, "cache_dir": "outputs/.cache"}
    run = nbparams.per_dataset(namespace, load=False)
    assert run.out == root / "runs" / "demo" / "breast_cancer" and run.out.is_dir()
    assert run.cache_dir == root / "runs" / ".cache"
    said = capsys.readouterr().out.splitlines()
    assert said == [
        f'output_dir = "{FOLDER}" is under outputs/, the committed renders (a re-render alone writes there): '
        "this run writes to runs/demo/breast_cancer instead",
        'cache_dir = "outputs/.cache" is under outputs/, the committed renders (a re-render alone writes there): '
        "this run writes to runs/.cache instead",
    ]
    spelled = nbparams.run_folder(f"notebooks/../{FOLDER}", "output_dir")  # however it is spelled
    assert spelled == root / "runs" / "demo" / "breast_cancer"
    with pytest.raises(ParameterError, match=r"no finished dataset in .*runs/demo: run the per-dataset notebooks"):
        nbparams.aggregate({"set_name": "demo", "set_dir": "outputs/demo"})
    assert not (root / "outputs").exists()


def test_the_renderer_writes_under_outputs_and_a_link_from_runs_into_outputs_is_refused(root, monkeypatch):
    monkeypatch.setenv(RENDER_ENV, "1")
    assert nbparams.run_folder(FOLDER, "output_dir") == root / FOLDER
    monkeypatch.delenv(RENDER_ENV)
    (root / FOLDER).mkdir(parents=True)
    (root / "runs").mkdir()
    (root / "runs" / "demo").symlink_to(root / "outputs" / "demo")  # runs/demo leads into outputs/demo
    linked = r"runs/demo/breast_cancer\" leads into outputs/.* and so does runs/demo/breast_cancer.* remove it"
    with pytest.raises(ParameterError, match=linked):
        nbparams.per_dataset({"dataset": "breast_cancer", "set_name": "demo"}, load=False)
    assert list((root / FOLDER).iterdir()) == []
    (root / "runs" / "demo").unlink()  # the advice, followed
    run = nbparams.per_dataset({"dataset": "breast_cancer", "set_name": "demo"}, load=False)
    assert run.out == root / "runs" / "demo" / "breast_cancer" and run.out.is_dir() and not run.out.is_symlink()


def test_notebook_09_s_render_writes_its_rule_and_screen_under_runs(root, capsys):
    """The committed render of 09 holds ``out_dir = "outputs/screen"``: its cell after the
    parameters sends the rule file and the screen to ``runs/screen``, where the source's default
    writes (the advice it gave before, to set out_dir in the parameters cell, was undone by the
    injected cell below that one)."""
    notebook = jupytext.read(ROOT / "notebooks" / "09_your_rule.py")
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    parameters = next(i for i, cell in enumerate(code) if "parameters" in cell.metadata.get("tags", []))
    namespace = {}
    exec(code[parameters].source, namespace)
    exec('out_dir = "outputs/screen"', namespace)  # the render's injected parameters
    exec(code[parameters + 1].source, namespace)
    assert namespace["rule_path"] == root / "runs" / "screen" / "my_rule.py"
    assert "this run writes to runs/screen instead" in capsys.readouterr().out
    assert not (root / "outputs").exists()


NOTEBOOK = """\
# %%
import os
print("RENDER", os.environ.get("TCC_RENDER"))
"""


def test_the_renderer_s_kernel_may_write_under_outputs_and_only_for_a_render_there(root, monkeypatch):
    """:func:`notebooks.execute` sets ``TCC_RENDER`` in the kernel of a notebook it renders into
    ``outputs/``, and not in one it renders elsewhere, also when one kernel serves both in turn."""
    (root / "nb").mkdir()
    (root / "nb" / "93_env.py").write_text(NOTEBOOK)
    monkeypatch.setenv("TCC_NOTEBOOKS", str(root / "nb"))
    monkeypatch.setenv(RENDER_ENV, "1")  # a leftover in the environment decides nothing
    (root / "outputs").mkdir()
    (root / "runs").mkdir()

    def printed(path: Path) -> str:
        cells = json.loads(path.read_text())["cells"]
        return "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c["outputs"])

    with notebooks.KernelSession() as kernel:
        for target in ("runs/a.ipynb", "outputs/b.ipynb", "runs/c.ipynb"):
            notebooks.execute("93_env", root / target, {}, root, kernel=kernel)
    notebooks.execute("93_env", root / "outputs" / "d.ipynb", {}, root)  # a fresh kernel
    notebooks.execute("93_env", root / "runs" / "e.ipynb", {}, root)
    shown = {t: printed(root / t).strip() for t in ("runs/a.ipynb", "outputs/b.ipynb", "runs/c.ipynb")}
    shown |= {t: printed(root / t).strip() for t in ("outputs/d.ipynb", "runs/e.ipynb")}
    assert shown == {
        "runs/a.ipynb": "RENDER None",
        "outputs/b.ipynb": "RENDER 1",
        "runs/c.ipynb": "RENDER None",
        "outputs/d.ipynb": "RENDER 1",
        "runs/e.ipynb": "RENDER None",
    }


def test_run_all_on_a_committed_render_as_lab_runs_it_leaves_git_status_clean(tmp_path, monkeypatch):
    """The committed render ``outputs/demo/breast_cancer/03_pretraining.ipynb`` executed as Lab's Run
    All executes it: its cells as committed, in a kernel working in the render's folder, in a copy
    of the checkout that holds the set (its own git repository) and, as after ``make demo``, the
    same results under ``runs/demo`` (so that nothing trains).  Before, its code rewrote the render's
    stored results, figures and records in place (in Lab, 9 tracked files changed); now it writes no
    file under ``outputs/`` (about 30 s: the kernel, then the render's own cells on stored results)."""
    from nbclient import NotebookClient  # deferred: only this test executes a notebook in-process

    from tcclib.util.kernel import kernel_manager

    repo = tmp_path / "clone"
    tracked = [p for p in _git(ROOT, "ls-files", "-z", FOLDER).split("\0") if p]
    for rel in tracked:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, repo / rel)
    (repo / ".gitignore").write_text("runs/\n.cache/\n.ipynb_checkpoints/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", "the set")
    shutil.copytree(repo / FOLDER, repo / "runs" / "demo" / "breast_cancer", ignore=shutil.ignore_patterns("*.ipynb"))
    monkeypatch.setenv("TCC_ROOT", str(repo))
    monkeypatch.delenv(RENDER_ENV, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("TCC_PROGRESS", "lines")
    render = nbformat.read(repo / FOLDER / "03_pretraining.ipynb", as_version=4)
    written = {f: f.stat().st_mtime_ns for f in (repo / "outputs").rglob("*") if f.is_file()}
    client = NotebookClient(render, km=kernel_manager(), timeout=600, allow_errors=False)
    client.execute(cwd=str(repo / FOLDER))
    rewritten = [str(f.relative_to(repo)) for f, t in written.items() if f.stat().st_mtime_ns != t]
    assert not rewritten, f"Run All on the committed render wrote {rewritten} (same bytes or not)"
    printed = "".join(o.get("text", "") for c in render.cells if c.cell_type == "code" for o in c.get("outputs", []))
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    assert status == "", f"Run All on the committed render changed the checkout:\n{status}"
    assert f'output_dir = "{FOLDER}" is under outputs/' in printed and "runs/demo/breast_cancer instead" in printed
    rows = (repo / "runs" / "demo" / "breast_cancer" / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 48, len(rows)  # 8 seeds x 6 methods, in runs/ (reused: nothing trained)
