"""Renders that stay put: Binder gets the Jupyter server settings ``make lab`` uses, a committed
render opens read-only in Lab, ``make notebooks`` under an open Lab changes nothing Lab compares,
and no committed output holds a folder of the machine that rendered it.

The Lab tests start a real JupyterLab server (``tests/test_lab.py``'s ``Lab``, as ``make lab``
starts it) and talk to it through the contents API as Lab's document manager does.  The Binder
test runs ``postBuild`` unchanged in a fresh virtual environment and a fresh home folder, then
starts Lab as Binder does, with no ``JUPYTER_CONFIG_PATH``.
"""

import json
import os
import re
import site
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from test_lab import TOKEN, Lab, _as_lab_after_connecting, _copy_checkout, _free_port, _git

ROOT = Path(__file__).resolve().parents[1]
RENDER = "outputs/demo/breast_cancer/03_pretraining.ipynb"
# a folder of a machine: one of the usual roots at the start of a path (not inside a URL or a
# relative path), a Windows drive, or this checkout and this interpreter wherever they are
MACHINE_PATH = re.compile(
    r"(?<![\w.:/~-])/(work|tmp|root|home|Users|srv|opt|mnt|var|usr|private|scratch|data|nfs)/|\b[A-Za-z]:\\\\"
)
TEXT = {".ipynb", ".json", ".csv", ".md", ".tex", ".py", ".yaml", ".txt", ".html", ".svg"}


def _tracked_outputs() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "outputs"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / p for p in listed.stdout.split("\0") if p]


def machine_paths(text: str) -> list[str]:
    """The absolute paths of a machine in ``text`` (each with a little context)."""
    found = [text[max(0, m.start() - 20) : m.end() + 40] for m in MACHINE_PATH.finditer(text)]
    for own in {str(ROOT), sys.prefix, str(Path.home())} - {"/"}:
        found += [own] * text.count(own)
    return found


def test_the_scan_finds_the_paths_a_render_used_to_hold():
    assert machine_paths('"output_path": "/work/main/outputs/smoke/x.ipynb"')
    assert machine_paths('"python": "/root/.pyenv/versions/3.11.7/bin/python"')
    assert machine_paths(r'"C:\\Users\\me\\tcc\\outputs"')
    assert not machine_paths('"output_path": "outputs/smoke/x.ipynb", "url": "https://example.org/tmp/x"')


def test_no_committed_output_holds_a_folder_of_the_rendering_machine():
    files = [f for f in _tracked_outputs() if f.suffix in TEXT and f.is_file()]
    assert len(files) > 1000  # the committed renders, results and reports
    bad = {str(f.relative_to(ROOT)): hits[:2] for f in files if (hits := machine_paths(f.read_text(errors="replace")))}
    assert not bad, f"{len(bad)} committed outputs hold a path of the rendering machine: {list(bad.items())[:5]}"


def test_a_render_records_papermill_s_output_path_relative_to_the_root(tmp_path, monkeypatch):
    """papermill records the absolute path it wrote; the renderer rewrites that one string."""
    import papermill as pm

    from tcclib.running.notebooks import _relative_output_path
    from tcclib.util.kernel import interpreter

    monkeypatch.setenv("TCC_ROOT", str(tmp_path))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    rendered = tmp_path / "outputs" / "set" / ".01_x.ipynb.running.ipynb"
    rendered.parent.mkdir(parents=True)
    pm.execute_notebook(nb, str(rendered), progress_bar=False, kernel_name="python3")
    before = json.loads(rendered.read_text())
    assert before["metadata"]["papermill"]["output_path"] == str(rendered)  # papermill's own record
    _relative_output_path(rendered)
    after = json.loads(rendered.read_text())
    assert after["metadata"]["papermill"].pop("output_path") == "outputs/set/.01_x.ipynb.running.ipynb"
    before["metadata"]["papermill"].pop("output_path")
    assert after == before  # nothing else changed
    assert not machine_paths(json.dumps(interpreter()))  # _DONE.json's interpreter: its name only


@pytest.fixture(scope="module")
def clone_and_lab(tmp_path_factory):
    """One JupyterLab, started as ``make lab`` starts it, on a copy of the checkout that is its own git
    repository and holds one set of committed renders (``outputs/demo/breast_cancer``)."""
    scratch = tmp_path_factory.mktemp("lab")
    repo = scratch / "clone"
    repo.mkdir()
    _copy_checkout(repo)
    for render in _tracked_outputs():
        if render.parent == ROOT / Path(RENDER).parent:
            (repo / render.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            (repo / render.relative_to(ROOT)).write_bytes(render.read_bytes())
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", "renders")
    lab = Lab(repo, scratch)
    yield repo, lab
    lab.close()


def _refused(lab, method: str, path: str, body=None) -> str:
    """The message of the server's answer to a request it must refuse with 403."""
    with pytest.raises(AssertionError) as answer:
        lab.call(method, path, body)
    assert f"{method} {path.split('?')[0]}: 403 " in str(answer.value), str(answer.value)
    return json.loads(str(answer.value).split(": 403 ", 1)[1])["message"]


def test_a_committed_render_opens_read_only_in_lab_and_a_save_over_it_is_refused(clone_and_lab):
    repo, lab = clone_and_lab
    model = lab.call("GET", f"/api/contents/{RENDER}?type=notebook&content=1")
    assert model["writable"] is False  # Lab: a read-only mark, Ctrl+S says "Save as", no autosave
    listing = lab.call("GET", "/api/contents/outputs/demo/breast_cancer")["content"]
    assert listing and not [e["name"] for e in listing if e["writable"]]
    assert lab.call("GET", "/api/contents/notebooks/01_data_prep.py?content=0")["writable"] is True
    message = _refused(lab, "PUT", f"/api/contents/{RENDER}", {"type": "notebook", "content": model["content"]})
    assert message.startswith(f"cannot save {RENDER}: outputs/ holds the committed renders"), message
    assert "copy the notebook to runs/ (File > Save Notebook As...)" in message  # what Run All then Save gets
    lab.call("PUT", "/api/contents/runs/copy_of_03.ipynb", {"type": "notebook", "content": model["content"]})
    assert (repo / "runs" / "copy_of_03.ipynb").is_file()


def test_a_committed_render_cannot_be_deleted_moved_or_added_to_through_lab(clone_and_lab):
    """Lab's file browser (delete, rename, upload, new file, copy) through the server's REST API: each
    is refused with 403 and a message naming the file and the fix, and the renders stay as committed."""
    repo, lab = clone_and_lab
    folder = str(Path(RENDER).parent)
    results = f"{folder}/results.csv"
    assert _refused(lab, "DELETE", f"/api/contents/{RENDER}").startswith(f"cannot delete {RENDER}: ")
    assert _refused(lab, "DELETE", f"/api/contents/{folder}").startswith(f"cannot delete {folder}: ")
    moved = _refused(lab, "PATCH", f"/api/contents/{RENDER}", {"path": "runs/03_pretraining.ipynb"})
    assert moved.startswith(f"cannot move {RENDER} to runs/03_pretraining.ipynb: outputs/ holds"), moved
    _refused(lab, "PATCH", f"/api/contents/{RENDER}", {"path": f"{folder}/renamed.ipynb"})
    _refused(lab, "PATCH", "/api/contents/outputs", {"path": "elsewhere"})
    lab.call("PUT", "/api/contents/runs/mine.csv", {"type": "file", "format": "text", "content": "a\n1\n"})
    _refused(lab, "PATCH", "/api/contents/runs/mine.csv", {"path": results})  # over a committed file
    upload = {"type": "file", "format": "text", "content": "a\n1\n"}
    assert "runs/" in _refused(lab, "PUT", f"/api/contents/{folder}/uploaded.csv", upload)
    _refused(lab, "POST", f"/api/contents/{folder}", {"type": "file"})  # File > New in that folder
    _refused(lab, "POST", f"/api/contents/{folder}", {"type": "notebook"})
    _refused(lab, "POST", f"/api/contents/{folder}", {"copy_from": "runs/mine.csv"})
    assert lab.call("GET", f"/api/contents/{RENDER}?content=0")["type"] == "notebook"
    status = _git(repo, "status", "--porcelain", "--untracked-files=all", "--", "outputs")
    assert status == "", f"the committed renders changed through Lab:\n{status}"


def test_only_a_notebook_source_is_served_as_a_notebook(clone_and_lab):
    """A notebooks/*.py source (jupytext's header) is a notebook; a plain rule file is a file, and
    asked for as a notebook (Lab's double-click on a .py) it says how to open it instead."""
    _, lab = clone_and_lab
    assert lab.call("GET", "/api/contents/notebooks/09_your_rule.py?content=0")["type"] == "notebook"
    assert lab.call("GET", "/api/contents/examples/nearby_rule.py?content=0")["type"] == "file"
    listed = {e["name"]: e["type"] for e in lab.call("GET", "/api/contents/examples")["content"]}
    assert listed["nearby_rule.py"] == "file", listed
    with pytest.raises(AssertionError, match="400.*nearby_rule.py is a Python file.*Open With > Editor"):
        lab.call("GET", "/api/contents/examples/nearby_rule.py?type=notebook&content=1")
    text = lab.call("GET", "/api/contents/examples/nearby_rule.py?type=file&format=text&content=1")["content"]
    assert text.startswith('"""A corruption rule in one file')
    assert "tcc-lab:plain-python-in-editor" in lab_plugin(lab.url)  # Lab's double-click: the editor


def lab_plugin(url: str) -> str:
    """The script of this repository's Lab plugin (jupyter-config/labextensions/tcc-lab), as the Lab
    page at ``url`` lists and serves it to the browser (which then opens a plain .py in the editor)."""
    with urllib.request.urlopen(f"{url}/lab?token={TOKEN}", timeout=120) as page:
        html = page.read().decode()
    data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
    config = json.loads(data.group(1))
    listed = {e["name"]: e for e in config["federated_extensions"]}
    assert "tcc-lab" in listed, sorted(listed)
    with urllib.request.urlopen(f"{url}/lab/extensions/tcc-lab/{listed['tcc-lab']['load']}", timeout=120) as script:
        return script.read().decode()


def test_make_notebooks_while_lab_holds_a_notebook_changes_nothing_lab_compares(clone_and_lab):
    """Lab raises "File Changed" on save when the file's hash (jupytext: the .py's and the paired
    .ipynb's) differs from the one it loaded or last saved.  After ``make notebooks`` (which
    ``make lab`` runs first) it is the same; after an edit of the .py outside Lab it is not."""
    repo, lab = clone_and_lab

    def make_notebooks():
        subprocess.run(["make", "-s", "notebooks", f"PY={sys.executable}"], cwd=repo, check=True, capture_output=True)

    assert re.search(r"^lab: install notebooks$", (repo / "Makefile").read_text(), re.M)
    make_notebooks()  # as `make lab` does before it starts Lab
    name = "notebooks/01_data_prep.py"
    try:

        def on_disk():
            model = lab.call("GET", f"/api/contents/{name}?content=0&hash=1")
            assert model["hash"], "no hash: Lab would compare modification times instead"
            return model["hash"]

        opened = on_disk()
        time.sleep(1.1)  # past Lab's 0.5 s margin on modification times
        make_notebooks()
        assert on_disk() == opened
        lab.save(name, _as_lab_after_connecting(lab.open_notebook(name)))  # Ctrl+S in Lab
        saved = on_disk()
        make_notebooks()
        assert on_disk() == saved
        source = repo / name
        source.write_text(source.read_text() + "\n# %%\nprint('edited outside Lab')\n")
        make_notebooks()
        assert on_disk() != saved  # a real change on disk: then Lab asks (docs/notebooks.md)
    finally:
        _git(repo, "checkout", "--", name)


class _Binder:
    """JupyterLab started in ``env`` as Binder starts it: its own interpreter, the user's home,
    no ``JUPYTER_CONFIG_PATH``."""

    def __init__(self, env: dict, python: Path, repo: Path, scratch: Path):
        self.url = f"http://127.0.0.1:{_free_port()}"
        cmd = [
            str(python),
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={self.url.rsplit(':', 1)[1]}",
        ]
        cmd += [f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"]
        cmd += ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        self.log = scratch / "binder_lab.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.call("/api/status")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"Lab did not start: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.5)

    def call(self, path: str):
        req = urllib.request.Request(self.url + path, headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read().decode())

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.mark.slow
def test_binder_s_post_build_gives_lab_the_settings_of_make_lab(tmp_path):
    """postBuild, unchanged, in a fresh virtual environment (the packages of environment.yml:
    this interpreter's, by a .pth file, with the Jupyter data and settings they install) and a
    fresh home: then Lab lists one entry per notebook, opens a .py as a notebook, serves the
    committed renders read-only and starts at notebooks/."""
    repo, home, env_dir = tmp_path / "repo", tmp_path / "home", tmp_path / "env"
    for d in (repo, home):
        d.mkdir()
    _copy_checkout(repo)
    (repo / RENDER).parent.mkdir(parents=True)
    (repo / RENDER).write_bytes((ROOT / RENDER).read_bytes())  # one committed render (the copy leaves them out)
    # the setuptools that venv bundles stays (65 on Python 3.10 and 3.11, without `wheel`): postBuild
    # builds as pip does by default, in an isolated environment with the backend pyproject.toml names
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, capture_output=True)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True,
                             capture_output=True, check=True).stdout.strip()  # fmt: skip
    Path(purelib, "environment_yml.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    for part in ("etc/jupyter", "share/jupyter"):  # what the packages install beside their code
        (env_dir / part).parent.mkdir(parents=True, exist_ok=True)
        (env_dir / part).symlink_to(Path(sys.prefix) / part)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON", "TCC_", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(home),
        PATH=f"{env_dir / 'bin'}:{Path(sys.executable).parent}:{env['PATH']}",
        VIRTUAL_ENV=str(env_dir),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    run = subprocess.run(["bash", "postBuild"], cwd=repo, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    where = subprocess.run([py, "-c", "import tcclib; print(tcclib.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert where.startswith(str(repo)), where  # postBuild installed the repository's tcclib
    sources = {p.name for p in (repo / "notebooks").glob("*.py")}
    assert {p.stem for p in (repo / "notebooks").glob("*.ipynb")} == {Path(s).stem for s in sources}
    lab = _Binder(env, py, repo, tmp_path)
    try:
        listed = {e["name"] for e in lab.call("/api/contents/notebooks")["content"]}
        assert listed == sources, listed  # one entry per notebook: the paired .ipynb left out
        opened = lab.call("/api/contents/notebooks/01_data_prep.py?content=0&hash=1")
        assert opened["type"] == "notebook" and opened["hash"]  # jupytext, with the hash Lab compares
        assert lab.call(f"/api/contents/{RENDER}?content=0")["writable"] is False
        assert "tcc-lab:plain-python-in-editor" in lab_plugin(lab.url)
        settings = lab.call("/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
        assert settings["schema"]["properties"]["defaultViewers"]["default"]["python"] == "Jupytext Notebook"
        req = urllib.request.Request(f"{lab.url}/?token={TOKEN}")
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(req, timeout=60)
        assert redirect.value.headers["Location"].split("?")[0].endswith("/lab/tree/notebooks")
    finally:
        lab.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def test_post_build_copies_every_setting_make_lab_points_at():
    """What ``make lab`` adds through JUPYTER_CONFIG_PATH is what postBuild copies to ~/.jupyter."""
    text = (ROOT / "postBuild").read_text()
    for f in sorted((ROOT / "jupyter-config").rglob("*")):
        rel = f.relative_to(ROOT / "jupyter-config")
        if f.is_file() and f.name != "ipython_kernel_config.py" and "__pycache__" not in rel.parts:
            copied = [f"jupyter-config/{rel}"] + [f"cp -r jupyter-config/{p} " for p in rel.parents if p.parts]
            assert any(c in text for c in copied), f"postBuild leaves out jupyter-config/{rel}"


def test_a_summary_shows_a_file_under_the_root_relative_to_it(tmp_path, monkeypatch):
    import pandas as pd

    from tcclib.data.sources import load_dataset, summary

    monkeypatch.setenv("TCC_ROOT", str(tmp_path))
    (tmp_path / "data").mkdir()
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0] * 5, "y": ["p", "q"] * 10}).to_csv(tmp_path / "data" / "t.csv", index=False)
    shown = summary(load_dataset(f"{tmp_path / 'data' / 't.csv'}:y"))["source"]
    assert shown == "data/t.csv", shown
    elsewhere = tmp_path.parent / f"{tmp_path.name}_outside.csv"
    (tmp_path / "data" / "t.csv").replace(elsewhere)
    assert summary(load_dataset(f"{elsewhere}:y"))["source"] == str(elsewhere)  # outside the root: as given


def test_the_binder_badge_opens_a_tracked_notebook_source():
    """Binder's ``labpath`` (README's badge and every notebook's) names a ``notebooks/*.py`` source
    (opened as a notebook), not its hidden paired ``.ipynb``, which beside the open ``.py`` made
    Lab's Ctrl+S answer "File Changed"."""
    from urllib.parse import parse_qs, urlparse

    tracked = set(
        subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    )
    readme = (ROOT / "README.md").read_text()
    badges = re.findall(r"\(https://mybinder\.org/v2/gh/[^)\s]+\)", readme)
    assert badges, "no Binder badge in README.md"
    for source in sorted((ROOT / "notebooks").glob("*.py")):  # every notebook's own badge too
        own = re.findall(r"\(https://mybinder\.org/v2/gh/[^)\s]+\)", source.read_text())
        assert own, f"no Binder badge in {source.name}"
        badges += own
    for badge in badges:
        labpath = parse_qs(urlparse(badge.strip("()")).query)["labpath"][0]
        assert re.fullmatch(r"notebooks/[^/]+\.py", labpath) and labpath in tracked, badge
