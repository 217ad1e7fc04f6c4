"""The Jupyter server's guard on the committed renders judges a path by where it leads (issue 57).

One JupyterLab, started as ``make lab`` starts it, serves a copy of the checkout that holds one set
of committed renders (``outputs/demo/breast_cancer``) and, under the ignored ``runs/``, symbolic links
into it: a render's file (``runs/render_link.ipynb``), a result (``runs/results_link.csv``) and the
set's folder (``runs/demo_link``).  Every contents and checkpoints operation Lab (or any client)
can send, spelled through ``..``, percent-encodings and those links, must answer 403 with one line
naming the path, where it leads and the fix, and leave the renders as committed.
"""

import json
import os
from pathlib import Path

import pytest
from test_lab import Lab, _copy_checkout, _git

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "outputs/demo/breast_cancer"
RENDER = f"{FOLDER}/03_pretraining.ipynb"
RESULTS = f"{FOLDER}/results.csv"
CHECKPOINT = "checkpoints/checkpoint"  # the id of the one checkpoint Jupyter's file checkpoints keep
TEXT = {"type": "file", "format": "text", "content": "a\n1\n"}
NOTEBOOK = {"type": "notebook", "content": {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}}

# (id, method, path as sent, body, the committed path it leads to): each must be refused with 403
REFUSED = [
    # save (Ctrl+S, autosave)
    ("save", "PUT", RENDER, NOTEBOOK, RENDER),
    ("save through ..", "PUT", f"notebooks/../{RENDER}", NOTEBOOK, RENDER),
    ("save through %2E%2E", "PUT", f"notebooks/%2E%2E/{RENDER}", NOTEBOOK, RENDER),
    ("save through ..%2F", "PUT", f"notebooks/..%2F{RENDER.replace('/', '%2F')}", NOTEBOOK, RENDER),
    ("save through a linked file", "PUT", "runs/render_link.ipynb", NOTEBOOK, RENDER),
    ("save through a linked folder", "PUT", "runs/demo_link/breast_cancer/03_pretraining.ipynb", NOTEBOOK, RENDER),
    ("save a result through a linked file", "PUT", "runs/results_link.csv", TEXT, RESULTS),
    # upload (a new file), in one piece and in chunks
    ("upload through ..", "PUT", f"runs/../{FOLDER}/uploaded.csv", TEXT, f"{FOLDER}/uploaded.csv"),
    ("upload through a linked folder", "PUT", "runs/demo_link/breast_cancer/up.csv", TEXT, f"{FOLDER}/up.csv"),
    ("upload a chunk", "PUT", "runs/demo_link/breast_cancer/chunk.csv", {**TEXT, "chunk": 1}, f"{FOLDER}/chunk.csv"),
    # new file, notebook or folder (File > New, the file browser's buttons)
    ("new file through ..", "POST", f"notebooks/../{FOLDER}", {"type": "file"}, FOLDER),
    ("new notebook through a linked folder", "POST", "runs/demo_link/breast_cancer", {"type": "notebook"}, FOLDER),
    ("new folder through a linked folder", "POST", "runs/demo_link/breast_cancer", {"type": "directory"}, FOLDER),
    ("new folder by name", "PUT", "runs/demo_link/new_folder", {"type": "directory"}, "outputs/demo/new_folder"),
    # copy into (a copy out of outputs/ is allowed: test_a_render_may_still_be_copied_out_and_read)
    ("copy into through ..", "POST", f"notebooks/../{FOLDER}", {"copy_from": "runs/mine.csv"}, FOLDER),
    ("copy into a linked folder", "POST", "runs/demo_link/breast_cancer", {"copy_from": "runs/mine.csv"}, FOLDER),
    ("copy a folder into a linked folder", "POST", "runs/demo_link", {"copy_from": "runs/mine_dir"}, "outputs/demo"),
    ("copy within, through a link", "POST", "runs/demo_link", {"copy_from": "runs/demo_link/index.md"}, "outputs/demo"),
    # rename, both ends
    ("move into through ..", "PATCH", "runs/mine.csv", {"path": f"runs/../{FOLDER}/x.csv"}, f"{FOLDER}/x.csv"),
    ("move into a linked folder", "PATCH", "runs/mine.csv", {"path": "runs/demo_link/x.csv"}, "outputs/demo/x.csv"),
    ("move out through ..", "PATCH", f"notebooks/../{RESULTS}", {"path": "runs/r.csv"}, RESULTS),
    (
        "move out through a linked folder",
        "PATCH",
        "runs/demo_link/breast_cancer/results.csv",
        {"path": "runs/r.csv"},
        RESULTS,
    ),
    ("move out through %2E%2E", "PATCH", f"notebooks/%2E%2E/{FOLDER}", {"path": "runs/set"}, FOLDER),
    # delete
    ("delete through ..", "DELETE", f"notebooks/../{RESULTS}", None, RESULTS),
    ("delete through %2E%2E", "DELETE", f"notebooks/%2E%2E/{RESULTS}", None, RESULTS),
    ("delete through a linked file", "DELETE", "runs/results_link.csv", None, RESULTS),
    ("delete through a linked folder", "DELETE", "runs/demo_link/breast_cancer/results.csv", None, RESULTS),
    ("delete a folder through ..", "DELETE", f"runs/../{FOLDER}", None, FOLDER),
    ("delete the root through ..", "DELETE", "notebooks/..", None, "a folder holding outputs/"),
    # checkpoints: create, restore (File > Revert Notebook to Checkpoint), delete
    ("checkpoint", "POST", f"{RENDER}/checkpoints", None, RENDER),
    ("checkpoint through ..", "POST", f"notebooks/../{RENDER}/checkpoints", None, RENDER),
    ("checkpoint through a linked file", "POST", "runs/render_link.ipynb/checkpoints", None, RENDER),
    ("revert to checkpoint", "POST", f"{RENDER}/{CHECKPOINT}", None, RENDER),
    ("revert to checkpoint through ..", "POST", f"notebooks/../{RENDER}/{CHECKPOINT}", None, RENDER),
    ("revert to checkpoint through a linked file", "POST", f"runs/render_link.ipynb/{CHECKPOINT}", None, RENDER),
    (
        "revert to checkpoint through a linked folder",
        "POST",
        f"runs/demo_link/breast_cancer/03_pretraining.ipynb/{CHECKPOINT}",
        None,
        RENDER,
    ),
    ("delete a checkpoint", "DELETE", f"{RENDER}/{CHECKPOINT}", None, RENDER),
    ("delete a checkpoint through %2E%2E", "DELETE", f"notebooks/%2E%2E/{RENDER}/{CHECKPOINT}", None, RENDER),
]


def _plant(repo: Path) -> None:
    """The links under runs/ and the files the cases use (all of it ignored by git)."""
    runs = repo / "runs"
    (runs / "render_link.ipynb").symlink_to(Path("..") / RENDER)
    (runs / "results_link.csv").symlink_to(Path("..") / RESULTS)
    (runs / "demo_link").symlink_to(Path("..") / "outputs" / "demo")
    (runs / "mine.csv").write_text("a\n1\n")
    (runs / "mine_dir").mkdir()
    (runs / "mine_dir" / "f.csv").write_text("a\n1\n")
    old = json.loads((repo / RENDER).read_text())
    old["cells"] = old["cells"][:1]  # an older version of the render, kept as a checkpoint
    for checkpoint in (
        repo / FOLDER / ".ipynb_checkpoints" / "03_pretraining",
        runs / ".ipynb_checkpoints" / "render_link",
    ):
        checkpoint.parent.mkdir(exist_ok=True)
        checkpoint.with_name(f"{checkpoint.name}-checkpoint.ipynb").write_text(json.dumps(old))


@pytest.fixture(scope="module")
def lab_with_links(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("guard")
    repo = scratch / "clone"
    repo.mkdir()
    _copy_checkout(repo)
    tracked = _git(ROOT, "ls-files", "-z", "outputs/demo").split("\0")
    for rel in (r for r in tracked if r and (r.startswith(FOLDER + "/") or r.count("/") == 2)):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes((ROOT / rel).read_bytes())
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", "renders")
    _plant(repo)
    lab = Lab(repo, scratch)
    yield repo, lab
    lab.close()


def _answer(lab: Lab, method: str, path: str, body) -> tuple[int, str]:
    """The status of the server's answer, and its message."""
    try:
        lab.call(method, f"/api/contents/{path}", body)
        return 200, ""
    except AssertionError as failed:  # Lab.call's: "METHOD PATH: STATUS BODY"
        status, _, text = str(failed).split(": ", 1)[1].partition(" ")
        return int(status), json.loads(text).get("message", "") if text.startswith("{") else text


@pytest.mark.parametrize("method, path, body, leads_to", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_change_that_reaches_the_committed_renders_is_refused_however_the_path_is_spelled(
    lab_with_links, method, path, body, leads_to
):
    repo, lab = lab_with_links
    before = (repo / RENDER).read_bytes()
    status, message = _answer(lab, method, path, body)
    assert status == 403, (status, message)
    typed = path.replace("%2E", ".").replace("%2F", "/")
    typed = typed.split("/checkpoints")[0] if "/checkpoints" in typed else typed
    assert message.startswith("cannot "), message
    assert f" {typed.strip('/')}" in message or f" {(body or {}).get('path', typed)}" in message, message
    assert leads_to in message, message  # where the path leads, when it is not the path as typed
    assert message.endswith("copy the notebook to runs/ (File > Save Notebook As...) to edit it"), message
    assert "\n" not in message
    assert (repo / RENDER).read_bytes() == before
    status = _git(repo, "status", "--porcelain", "--untracked-files=all", "--", "outputs")
    assert status == "", f"{method} {path} changed the committed renders:\n{status}"
    assert os.path.islink(repo / "runs" / "demo_link") and os.path.islink(repo / "runs" / "results_link.csv")


def test_a_render_may_still_be_copied_out_and_read(lab_with_links):
    """What stays allowed: reading a render (directly or through a link, shown read-only), copying
    it out to runs/ (Lab's Copy, then Paste in runs/), and saving in runs/."""
    repo, lab = lab_with_links
    assert lab.call("GET", "/api/contents/runs/render_link.ipynb?content=0")["writable"] is False
    listed = lab.call("GET", "/api/contents/runs")["content"]
    writable = {e["name"]: e["writable"] for e in listed}
    assert writable["render_link.ipynb"] is False and writable["demo_link"] is False and writable["mine.csv"]
    copied = lab.call("POST", "/api/contents/runs", {"copy_from": RENDER})
    assert copied["path"] == "runs/03_pretraining.ipynb" and copied["writable"] is True
    through = lab.call("POST", "/api/contents/runs", {"copy_from": "runs/demo_link/breast_cancer/results.csv"})
    assert (repo / through["path"]).read_bytes() == (repo / RESULTS).read_bytes()
    lab.call("PUT", "/api/contents/runs/mine.ipynb", NOTEBOOK)
    lab.call("POST", "/api/contents/runs/mine.ipynb/checkpoints")
    lab.call("POST", f"/api/contents/runs/mine.ipynb/{CHECKPOINT}")  # a checkpoint of one's own: restored
    for made in (copied["path"], through["path"], "runs/mine.ipynb", "runs/.ipynb_checkpoints/mine-checkpoint.ipynb"):
        (repo / made).unlink()  # (not through the server, which sends a deleted file to the user's trash)
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_paired_file_that_jupytext_would_write_under_outputs_is_refused(lab_with_links):
    """A notebook in runs/ whose jupytext pairing puts its text file under outputs/ (a prefix of its
    formats): saving it is refused with the same 403, and nothing is written under outputs/."""
    repo, lab = lab_with_links
    paired = json.loads(json.dumps(NOTEBOOK))
    paired["content"]["metadata"]["jupytext"] = {"formats": "ipynb,../outputs/demo//py:percent"}
    status, message = _answer(lab, "PUT", "runs/paired.ipynb", paired)
    assert status == 403 and message.startswith("cannot save "), (status, message)
    assert "outputs/demo/paired.py" in message, message
    assert not (repo / "outputs" / "demo" / "paired.py").exists()
    (repo / "runs" / "paired.ipynb").unlink(missing_ok=True)
