"""JupyterLab as a user meets it: opening, running and saving a notebook leaves the checkout clean.

A real JupyterLab server (the one ``make lab`` starts, with this repository's ``jupyter-config/``)
runs on a copy of the checkout that is its own git repository. The test talks to it through the
contents API, as Lab's document manager and autosave do: it opens a ``notebooks/*.py`` source as a
notebook (jupytext), executes it in a real kernel, saves it with its outputs, kernel
``language_info`` and widget state, opens the paired ``.ipynb`` and saves that too; then
``git status --porcelain`` must print nothing.
"""

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "tcc-test-lab"
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
    "version": sys.version.split()[0],
}


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _copy_checkout(dest: Path) -> None:
    """The checkout's files as a fresh clone of it would hold them (tracked and not ignored, the
    committed renders left out), committed in a repository of their own."""
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for rel in listed:
        if rel and not rel.startswith("outputs/") and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", "clone")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on 127.0.0.1 started as ``make lab`` starts it, and its REST API."""

    def __init__(self, repo: Path, scratch: Path):
        self.url = f"http://127.0.0.1:{_free_port()}"
        env = {
            **os.environ,
            "JUPYTER_CONFIG_PATH": str(repo / "jupyter-config"),  # what `make lab` sets
            "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
            "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
            "PYTHONPATH": str(repo),  # the kernels import the copy's tcclib
        }
        self.env = env
        port = self.url.rsplit(":", 1)[1]
        cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1"]  # root: the repository
        cmd += [f"--port={port}", f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"]
        cmd += ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        self.log = open(scratch / "lab.log", "w")
        self.proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.call("GET", "/api/status")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"JupyterLab did not start: {(scratch / 'lab.log').read_text()[-2000:]}")  # noqa: B904
                time.sleep(0.5)

    def call(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"token {TOKEN}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read().decode()[:2000]}") from None
        return json.loads(text) if text else None

    def open_notebook(self, name: str) -> dict:
        """What Lab's notebook factory loads: the file as a notebook (a .py through jupytext)."""
        model = self.call("GET", f"/api/contents/{name}?type=notebook&content=1")
        assert model["type"] == "notebook", model["type"]
        return model["content"]

    def save(self, name: str, content: dict) -> None:
        """Lab's save (and autosave): a checkpoint, then PUT of the whole notebook."""
        self.call("PUT", f"/api/contents/{name}", {"type": "notebook", "format": "json", "content": content})
        self.call("POST", f"/api/contents/{name}/checkpoints")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.log.close()


def _as_lab_after_connecting(content: dict) -> dict:
    """What Lab changes in a notebook once its kernel has connected, before anyone runs a cell."""
    content["metadata"]["language_info"] = LANGUAGE_INFO
    content["metadata"]["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    return content


def _run(content: dict, cwd: Path) -> dict:
    """Execute the notebook in a real kernel, cell by cell, keeping widget state (as Lab does
    with the repository's saveState setting)."""
    from nbclient import NotebookClient  # deferred: only this test executes notebooks in-process

    nb = nbformat.from_dict(content)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True)
    client.execute(cwd=str(cwd))
    return json.loads(json.dumps(nb))  # as Lab sends it: every text a single string


def test_opening_running_and_saving_notebooks_in_lab_leaves_git_status_clean(tmp_path, monkeypatch):
    repo = tmp_path / "clone"
    repo.mkdir()
    _copy_checkout(repo)
    sources = {p.name: p.read_bytes() for p in sorted((repo / "notebooks").glob("*.py"))}
    assert sources and not list((repo / "notebooks").glob("*.ipynb"))  # a fresh clone has the .py only
    assert "JUPYTER_CONFIG_PATH=$(abspath jupyter-config)" in (repo / "Makefile").read_text()  # as make lab runs
    lab = Lab(repo, tmp_path)
    try:
        docmanager = lab.call("GET", "/lab/api/settings/@jupyterlab/docmanager-extension:plugin")["schema"]
        viewers = docmanager["properties"]["defaultViewers"]["default"]
        assert viewers["python"] == "Jupytext Notebook", viewers  # a double-clicked .py opens as a notebook
        for name in sources:  # every notebook opened and saved (Ctrl+S, or the autosave tick)
            lab.save(f"notebooks/{name}", _as_lab_after_connecting(lab.open_notebook(f"notebooks/{name}")))
        listed = {e["name"] for e in lab.call("GET", "/api/contents/notebooks")["content"]}
        assert listed == set(sources), listed  # one entry per notebook: the paired .ipynb left out
        first = "notebooks/01_data_prep.py"  # one notebook run (seconds on breast_cancer) and saved with its outputs
        monkeypatch.setenv("PYTHONPATH", str(repo))  # the kernel imports the copy's tcclib
        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # its connection file
        ran = _run(_as_lab_after_connecting(lab.open_notebook(first)), repo / "notebooks")
        assert any(c.get("outputs") for c in ran["cells"])
        lab.save(first, ran)
        paired = "notebooks/01_data_prep.ipynb"  # the paired .ipynb, opened by its path and saved in turn
        reopened = lab.open_notebook(paired)
        assert any(c.get("outputs") for c in reopened["cells"]), "the outputs are kept in the paired .ipynb"
        lab.save(paired, reopened)
    finally:
        lab.close()
    assert {p.name: p.read_bytes() for p in (repo / "notebooks").glob("*.py")} == sources
    assert (repo / paired).exists() and len(list((repo / "notebooks").glob("*.ipynb"))) == len(sources)
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    assert status == "", f"browsing in JupyterLab changed the checkout:\n{status}"


def test_lab_opens_at_the_notebooks_and_reaches_the_committed_renders(tmp_path):
    """``make lab`` serves the repository with notebooks/ as its start page, so the committed renders
    under outputs/ open from the same Lab (served from notebooks/, they answered 404)."""
    lab = Lab(ROOT, tmp_path)
    try:
        req = urllib.request.Request(f"{lab.url}/?token={TOKEN}")
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(req, timeout=60)
        assert redirect.value.headers["Location"].split("?")[0].endswith("/lab/tree/notebooks")
        render = lab.open_notebook("outputs/demo/breast_cancer/03_pretraining.ipynb")
        assert any(c.get("outputs") for c in render["cells"])
        listed = {e["name"] for e in lab.call("GET", "/api/contents/notebooks")["content"]}
        assert not {n for n in listed if n.endswith(".ipynb")}, listed
    finally:
        lab.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def test_a_finished_progress_bar_leaves_its_last_state_as_text_not_a_widget(tmp_path, monkeypatch):
    """A notebook saved after its bars finished holds no widget view (which a reopened notebook
    would show as "Error displaying widget: model not found"), only each bar's last line."""
    from nbclient import NotebookClient  # deferred: only these tests execute notebooks in-process

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # the kernel's connection file
    monkeypatch.delenv("TCC_PROGRESS", raising=False)
    code = "from tcclib.util.progress import bar\nb = bar(4, 'epochs')\nfor _ in range(4):\n    b.update(1)\nb.close()"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(nb, timeout=300, kernel_name="python3").execute(cwd=str(tmp_path))
    outputs = nb.cells[0].outputs
    assert outputs and not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    text = "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in outputs)
    assert "epochs: 100%" in text and "4/4" in text, outputs


async def _execute_over_websocket(url: str, code: str, timeout: float = 120) -> str:
    """Run ``code`` in a Lab kernel through the server's websocket, as Lab's frontend does; its stdout."""
    from tornado.websocket import websocket_connect  # deferred: only this test speaks to a kernel's websocket

    connection = await websocket_connect(url)
    message_id = uuid.uuid4().hex
    header = {"msg_id": message_id, "msg_type": "execute_request", "username": "test", "session": message_id}
    header |= {"date": "", "version": "5.3"}
    content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}
    await connection.write_message(
        json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"})
    )
    printed = ""
    while True:
        message = json.loads(await asyncio.wait_for(connection.read_message(), timeout))
        if message["parent_header"].get("msg_id") != message_id:
            continue
        if message["msg_type"] == "stream":
            printed += message["content"]["text"]
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            connection.close()
            return printed


def test_lab_kernels_talk_over_encrypted_tcp(tmp_path):
    """``jupyter-config/`` asks Lab's kernel manager for CurveZMQ keys: a kernel started as Lab
    starts one runs code sent through the server's websocket, without ipykernel's warning about
    unencrypted TCP (which every kernel printed into the ``make lab`` terminal)."""
    lab = Lab(ROOT, tmp_path)
    try:
        kernel = lab.call("POST", "/api/kernels", {"name": "python3"})
        url = lab.url.replace("http", "ws", 1) + f"/api/kernels/{kernel['id']}/channels?token={TOKEN}"
        printed = asyncio.run(_execute_over_websocket(url, "print(6 * 7)"))
        lab.call("DELETE", f"/api/kernels/{kernel['id']}")
    finally:
        lab.close()
    assert printed == "42\n", printed
    log = (tmp_path / "lab.log").read_text()
    assert "Kernel is running over TCP without encryption" not in log, log[-2000:]


def test_a_plugin_rule_trains_in_a_lab_kernel(tmp_path):
    """A rule in one file outside the repository, loaded the documented way in a notebook cell of
    the Lab that ``make lab`` starts, trains there (issue 40)."""
    rule = tmp_path / "lab_rule.py"
    rule.write_text(
        "import torch\nfrom tcclib.method import registry, rules\n\n\n"
        "class Reversed(rules.HowRule):\n    needs = rules.NOTHING\n    name = 'reversed_rows'\n\n"
        "    def donors(self, members, state, u):\n        k, n, m = members.shape\n"
        "        return torch.arange(n - 1, -1, -1).view(1, n, 1).expand(k, n, m).contiguous()\n\n\n"
        "registry.register_method('reversed_rows', Reversed(), 'uniform')\n"
    )
    code = (
        f"import tcclib\ntcclib.load_plugins({str(rule)!r})\n"
        "from tcclib import Config, run_dataset\n"
        "run = run_dataset('breast_cancer', Config(methods=('random', 'reversed_rows'), seeds=(0,), epochs=2, "
        "head_epochs=2, progress=False))\nprint(sorted(set(run.results.method)))"
    )
    lab = Lab(ROOT, tmp_path)
    try:
        kernel = lab.call("POST", "/api/kernels", {"name": "python3"})
        url = lab.url.replace("http", "ws", 1) + f"/api/kernels/{kernel['id']}/channels?token={TOKEN}"
        printed = asyncio.run(_execute_over_websocket(url, code, timeout=600))
        lab.call("DELETE", f"/api/kernels/{kernel['id']}")
    finally:
        lab.close()
    assert printed.strip().splitlines()[-1] == "['random', 'reversed_rows']", printed
