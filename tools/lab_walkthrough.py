"""Walk through the notebooks in JupyterLab as a user does, in a real headless Chromium.

    pip install selenium          # not a project dependency: this tool's only extra
    python tools/lab_walkthrough.py               # 01 02 03 04 05 06 08
    python tools/lab_walkthrough.py 01 02 --timeout-min 10

Starts JupyterLab as ``make lab`` does (``jupyter lab`` from the checkout, which opens at notebooks/, with
``JUPYTER_CONFIG_PATH=jupyter-config``, ``TCC_DATA_DIR`` and ``MPLBACKEND`` as the Makefile sets
them), on a free port with a random token and ``--no-browser``, and drives Chromium
(``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` unless ``--chromium``/``--chromedriver``)
through selenium. For each notebook (by number prefix of ``notebooks/*.py``) it double-clicks the
``.py`` in the file browser and checks that it opens as a notebook, not in the text editor, runs
Run > Run All Cells, waits until the kernel is idle and no cell is queued, saves a full-page
screenshot, closes the tab (answering Lab's "save your work?" with Save) and reads the saved
notebook back: every code cell must have an execution count and no output may be an error; no
cell may show "Error displaying widget". Then it reopens the first notebook that ran and checks
that its outputs show without "Error displaying widget" (saved widget state). Then it opens every
notebook in ``notebooks/``, saves it (Ctrl+S) and closes it, checking that no "File Changed" dialog
appears, and that the file browser then lists one entry per notebook (the paired ``.ipynb`` files
that the saves wrote are left out: ``jupyter-config/jupyter_server_config.py``), and double-clicks a
plain ``.py`` (``examples/nearby_rule.py``): it must open in the text editor, with no dialog, no tab
marked unsaved and no kernel (``jupyter-config/labextensions/``). Finally it shuts
Lab down, prints ``git status --porcelain`` (which must be empty) and writes
``walkthrough.md`` (notebook, seconds, errors, screenshot) beside the screenshots in ``--out``
(default ``runs/lab_walkthrough/``, git-ignored). Exit status 1 on any error or a dirty tree.

Kernels import this checkout's ``tcclib`` (``PYTHONPATH``), and Lab's workspace (open tabs) is a
fresh one in ``--out`` so that earlier sessions' tabs do not get in the way; user settings apply.
Notebooks 03-06 and 08 train models: minutes each on a laptop CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "08")
MAKEFILE_LAB_ENV = "JUPYTER_CONFIG_PATH=$(abspath jupyter-config)"
WIDGET_ERROR = "Error displaying widget"
POLL_S = 2.0
# the notebook's scroller (Lab 4's windowed panel) to the top; then how many more pixels it needs to
# show down to its last cell's end (Lab's scroll-past-end space left out)
MISSING_HEIGHT_SCRIPT = """const s = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
if (!s) return 0; s.scrollTop = 0;
const cells = s.querySelectorAll('.jp-Cell'); if (!cells.length) return 0;
const end = cells[cells.length - 1].getBoundingClientRect().bottom - s.getBoundingClientRect().top;
return Math.ceil(end - s.clientHeight)"""
MAX_HEIGHT = 16000  # pixels: Chromium's largest screenshot is about this tall

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # reported in main(), with the fix
    webdriver = None


@dataclass
class Outcome:
    """What one notebook's walkthrough found."""

    name: str
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    screenshot: str = ""


class Lab:
    """A JupyterLab server started as ``make lab`` starts it, and its REST API."""

    def __init__(self, out: Path):
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(out / "lab.log", "w")  # closed in stop()
        self.proc = subprocess.Popen(self._command(), cwd=ROOT, env=_lab_env(out), stdout=self.log, stderr=self.log)
        self._wait_until_up(out / "lab.log")

    def _command(self) -> list[str]:
        cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1"]
        cmd += [f"--port={self.port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}"]
        return cmd + (["--allow-root"] if os.geteuid() == 0 else [])

    def _wait_until_up(self, log: Path) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    sys.exit(f"JupyterLab did not start; its log ({log}):\n{log.read_text()[-3000:]}")
                time.sleep(0.5)

    def api(self, method: str, path: str, body: dict | None = None):
        """One REST call with the token; the decoded JSON answer (None when empty)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read().decode()
        return json.loads(text) if text else None

    def session(self, name: str) -> dict | None:
        """The kernel session Lab opened for notebook ``name``, if any."""
        return next((s for s in self.api("GET", "/api/sessions") if s["path"] == f"notebooks/{name}"), None)

    def kernel_state(self, name: str) -> str:
        """``idle``, ``busy``, ``starting``... of the notebook's kernel (``none`` without one)."""
        found = self.session(name)
        return found["kernel"]["execution_state"] if found and found.get("kernel") else "none"

    def stop(self) -> None:
        """Shut the server down as its API allows, else terminate it."""
        try:
            self.api("POST", "/api/shutdown")
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _lab_env(out: Path) -> dict:
    """The Makefile's environment for ``make lab`` (LAB_ENV and its exports), this checkout's tcclib."""
    if MAKEFILE_LAB_ENV not in (ROOT / "Makefile").read_text():
        sys.exit(f"the Makefile's lab target no longer sets {MAKEFILE_LAB_ENV}: update {__file__} to match it")
    env = dict(os.environ)
    config = str(ROOT / "jupyter-config")
    env["JUPYTER_CONFIG_PATH"] = config + (
        os.pathsep + env["JUPYTER_CONFIG_PATH"] if env.get("JUPYTER_CONFIG_PATH") else ""
    )
    env.setdefault("TCC_DATA_DIR", str((ROOT.parent / "shared" / "datasets" / "openml-cc18").resolve()))
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(out / "workspaces")
    return env


def _browser(chromium: str, chromedriver: str):
    """Headless Chromium through chromedriver, 1400 px wide."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=chromedriver))


def _wait(driver, seconds: float, condition, what: str):
    """``condition(driver)`` once truthy, else a TimeoutException naming ``what``."""
    return WebDriverWait(driver, seconds, poll_frequency=0.25).until(condition, f"timed out waiting for {what}")


def _click_text(driver, selector: str, text: str) -> None:
    """Click the element matching ``selector`` whose visible text is ``text``."""
    pick = lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, selector) if e.text.strip() == text), None)
    _wait(driver, 30, pick, f"{text!r} ({selector})").click()


def _open_lab(driver, lab: Lab) -> None:
    driver.get(f"{lab.url}/?token={lab.token}")  # as make lab's browser: the start page, notebooks/
    _wait(driver, 120, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item"), "the file browser")


def _open_by_double_click(driver, name: str) -> None:
    """Double-click ``name`` in the file browser; fail unless it opens as a notebook."""
    item = f".jp-DirListing-item[title^='Name: {name}']"
    shown = lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, item) if e.is_displayed()), None)
    ActionChains(driver).double_click(_wait(driver, 60, shown, f"{name} in the file browser")).perform()
    kind = lambda d: (
        ("notebook" if d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell") else None)
        or ("editor" if d.find_elements(By.CSS_SELECTOR, ".jp-FileEditor") else None)
    )
    if _wait(driver, 60, kind, f"{name} to open") != "notebook":
        raise RuntimeError(f"{name} opened in the text editor, not as a notebook (is jupyter-config/ in use?)")


def _wait_for_kernel(lab: Lab, name: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while lab.kernel_state(name) != "idle":
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: the kernel was not idle within {timeout_s:.0f} s")
        time.sleep(POLL_S)


def _prompts(driver) -> list[str]:
    """The input prompts of the open notebook's code cells: '[3]:', '[*]:' or '[ ]:'."""
    cells = ".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt"
    script = f"return [...document.querySelectorAll('{cells}')].map(e => e.textContent.trim())"
    return driver.execute_script(script)


def _run_all(driver, lab: Lab, name: str, timeout_s: float) -> None:
    """Run > Run All Cells, then wait until no cell is queued and the kernel is idle twice running."""
    _click_text(driver, ".lm-MenuBar-itemLabel", "Run")
    _click_text(driver, ".lm-Menu-itemLabel", "Run All Cells")
    deadline, idle = time.monotonic() + timeout_s, 0
    while idle < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: Run All Cells did not finish within {timeout_s / 60:.0f} min")
        time.sleep(POLL_S)
        busy = any(p.startswith("[*]") for p in _prompts(driver)) or lab.kernel_state(name) != "idle"
        idle = 0 if busy else idle + 1


def _widget_errors(driver) -> list[str]:
    """'Error displaying widget' messages in the open notebook, with the cell they are in."""
    script = """return [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')].flatMap((cell, index) =>
        cell.textContent.includes(arguments[0]) ? [`cell ${index + 1}: ${arguments[0]}`] : [])"""
    return driver.execute_script(script, WIDGET_ERROR)


def _screenshot(driver, path: Path) -> str:
    """The whole notebook in one picture: the window made as tall as its cells, scrolled to the top."""
    size = driver.get_window_size()
    height = size["height"]
    for _ in range(6):  # cells coming into view are measured, not estimated, once laid out
        missing = int(driver.execute_script(MISSING_HEIGHT_SCRIPT) or 0)
        if missing <= 0 or height >= MAX_HEIGHT:
            break
        height = min(height + missing + 40, MAX_HEIGHT)
        driver.set_window_size(size["width"], height)
        time.sleep(1)
    driver.execute_script(MISSING_HEIGHT_SCRIPT)  # back to the top
    driver.save_screenshot(str(path))
    driver.set_window_size(size["width"], size["height"])
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _close_tab(driver, lab: Lab, name: str) -> None:
    """Close the notebook's tab as a user does (Save when Lab asks), then end its kernel."""
    _click_text(driver, ".lm-MenuBar-itemLabel", "File")
    _click_text(driver, ".lm-Menu-itemLabel", "Close Tab")
    try:
        _click_text_soon(driver, ".jp-Dialog-footer button", "Save", 5)
    except TimeoutException:
        pass  # nothing unsaved: no question
    _wait(driver, 60, lambda d: not d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel"), f"{name}'s tab to close")
    found = lab.session(name)
    if found:
        lab.api("DELETE", f"/api/sessions/{found['id']}")


def _click_text_soon(driver, selector: str, text: str, seconds: float) -> None:
    pick = lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, selector) if e.text.strip() == text), None)
    _wait(driver, seconds, pick, f"{text!r}").click()


def _saved_errors(lab: Lab, name: str) -> list[str]:
    """Error outputs and unexecuted code cells in the notebook as saved (the .py with its paired outputs)."""
    cells = lab.api("GET", f"/api/contents/notebooks/{name}?type=notebook&content=1")["content"]["cells"]
    errors = []
    for index, cell in enumerate(cells, start=1):
        if cell["cell_type"] != "code":
            continue
        if cell.get("execution_count") is None:
            errors.append(f"cell {index}: not executed")
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append(f"cell {index}: {output.get('ename')}: {output.get('evalue')}")
    return errors


def walk_notebook(driver, lab: Lab, name: str, out: Path, timeout_s: float) -> Outcome:
    """Open, Run All, screenshot, close with Save, and check one notebook."""
    outcome, start = Outcome(name), time.monotonic()
    stem = Path(name).stem
    try:
        _open_by_double_click(driver, name)
        _wait_for_kernel(lab, name, 300)
        _run_all(driver, lab, name, timeout_s)
        outcome.seconds = time.monotonic() - start
        outcome.errors += _widget_errors(driver)
        outcome.screenshot = _screenshot(driver, out / f"{stem}.png")
        _close_tab(driver, lab, name)
        outcome.errors += _saved_errors(lab, name)
    except Exception as error:  # any failure is this notebook's outcome
        outcome.seconds = outcome.seconds or time.monotonic() - start
        outcome.errors.append(
            f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        )
        outcome.screenshot = _failure_screenshot(driver, out / f"{stem}_failed.png")
    return outcome


def _failure_screenshot(driver, path: Path) -> str:
    try:
        driver.save_screenshot(str(path))
        return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    except Exception:  # a dead browser leaves no picture
        return ""


def reopen_check(driver, lab: Lab, name: str, out: Path) -> Outcome:
    """Reopen a notebook that ran: outputs show, and no 'Error displaying widget'."""
    outcome, start = Outcome(f"{name} (reopened)"), time.monotonic()
    try:
        _open_by_double_click(driver, name)
        _wait_for_kernel(lab, name, 300)
        time.sleep(5)  # widget views render once the kernel connected
        if not driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-OutputArea-output"):
            outcome.errors.append("no outputs shown after reopening")
        outcome.errors += _widget_errors(driver)
        outcome.screenshot = _screenshot(driver, out / f"{Path(name).stem}_reopened.png")
        _close_tab(driver, lab, name)
    except Exception as error:  # any failure is the check's outcome
        outcome.errors.append(f"{type(error).__name__}: {error}")
        outcome.screenshot = _failure_screenshot(driver, out / f"{Path(name).stem}_reopened_failed.png")
    outcome.seconds = time.monotonic() - start
    return outcome


def open_and_save_every_notebook(driver, lab: Lab) -> Outcome:
    """Open each notebook in notebooks/, save it with Ctrl+S and close it: no "File Changed" dialog
    may appear; then the file browser must list one entry per notebook (no paired ``.ipynb``)."""
    sources = sorted(p.name for p in (ROOT / "notebooks").glob("*.py"))
    outcome, start = Outcome("every notebook opened, saved and closed; the file browser"), time.monotonic()
    try:
        for name in sources:
            _open_by_double_click(driver, name)
            ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
            time.sleep(3)  # the save's round trip; a conflict would show its dialog by then
            outcome.errors += [f"{name}: {text}" for text in _dialogs(driver) if "File Changed" in text]
            _close_tab(driver, lab, name)
        time.sleep(12)  # the file browser polls its folder every 10 s
        listed = [e.text.strip() for e in driver.find_elements(By.CSS_SELECTOR, ".jp-DirListing-itemText")]
        if sorted(listed) != sources:
            outcome.errors.append(f"the file browser lists {listed}, not one entry per notebook {sources}")
    except Exception as error:  # any failure is the check's outcome
        outcome.errors.append(f"{type(error).__name__}: {error}")
    outcome.seconds = time.monotonic() - start
    return outcome


def plain_python_opens_in_the_editor(driver, lab: Lab, name: str = "examples/nearby_rule.py") -> Outcome:
    """Double-click a plain ``.py`` (no jupytext header: a rule file) in the file browser: it must open
    in the text editor, with no dialog and no tab marked unsaved (jupyter-config/labextensions/)."""
    outcome, start = Outcome(f"{name} double-clicked"), time.monotonic()
    folder, _, file = name.rpartition("/")
    try:
        driver.get(f"{lab.url}/lab/tree/{folder}?token={lab.token}")
        item = f".jp-DirListing-item[title^='Name: {file}']"
        shown = lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, item) if e.is_displayed()), None)
        ActionChains(driver).double_click(_wait(driver, 120, shown, f"{file} in the file browser")).perform()
        opened = lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-FileEditor, .jp-NotebookPanel") or _dialogs(d)
        _wait(driver, 60, opened, f"{file} to open")
        time.sleep(2)  # a failed load shows its dialog by then
        if not driver.find_elements(By.CSS_SELECTOR, ".jp-FileEditor"):
            outcome.errors.append(f"{file} did not open in the text editor")
        outcome.errors += [f"dialog: {' '.join(text.split())}" for text in _dialogs(driver)]
        tabs = driver.find_elements(By.CSS_SELECTOR, ".lm-DockPanel-tabBar .lm-TabBar-tab")
        outcome.errors += [f"tab {t.text!r} marked unsaved" for t in tabs if "jp-mod-dirty" in t.get_attribute("class")]
        if any(s["path"] == name for s in lab.api("GET", "/api/sessions")):
            outcome.errors.append(f"a kernel was started for {name}")
    except Exception as error:  # any failure is the check's outcome
        outcome.errors.append(f"{type(error).__name__}: {error}")
    outcome.seconds = time.monotonic() - start
    return outcome


def _dialogs(driver) -> list[str]:
    """The text of every dialog Lab shows now."""
    return [d.text for d in driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog") if d.is_displayed()]


def notebook_names(prefixes: list[str]) -> list[str]:
    """``notebooks/<prefix>_*.py`` names for each prefix; exits naming one that matches none or several."""
    names = []
    for prefix in prefixes:
        found = sorted(p.name for p in (ROOT / "notebooks").glob(f"{prefix}_*.py"))
        if len(found) != 1:
            known = " ".join(sorted(p.name.split("_")[0] for p in (ROOT / "notebooks").glob("*_*.py")))
            sys.exit(f"notebook {prefix!r}: {len(found)} matches in notebooks/; give one of: {known}")
        names.append(found[0])
    return names


def clear_screenshots(out: Path, names: list[str]) -> None:
    """Remove the screenshots an earlier walkthrough left for these notebooks."""
    for name in names:
        for old in out.glob(f"{Path(name).stem}*.png"):
            old.unlink()


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def write_log(path: Path, outcomes: list[Outcome], status: str) -> None:
    """The walkthrough as markdown: one row per notebook, then git status."""
    rows = ["| notebook | seconds | errors | screenshot |", "|---|---:|---|---|"]
    for o in outcomes:
        errors = "<br>".join(e.replace("|", "\\|") for e in o.errors) or "none"
        rows.append(f"| {o.name} | {o.seconds:.0f} | {errors} | {o.screenshot} |")
    clean = "clean" if not status else f"NOT clean:\n\n```\n{status}```"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    path.write_text(f"# JupyterLab walkthrough ({stamp})\n\n" + "\n".join(rows) + f"\n\ngit status: {clean}\n")


def _arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "notebooks", nargs="*", default=list(DEFAULT_NOTEBOOKS), help="number prefixes (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "lab_walkthrough", help="screenshots and log")
    parser.add_argument("--timeout-min", type=float, default=40, help="per notebook's Run All (default: %(default)s)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    return parser.parse_args(argv)


def _check_tools(args) -> None:
    if webdriver is None:
        sys.exit("selenium is missing: `pip install selenium` (this tool's only extra; not a project dependency)")
    for option, path in (("--chromium", args.chromium), ("--chromedriver", args.chromedriver)):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path} is not an executable: install Chromium and chromedriver, or name them with {option}")


def main(argv=None) -> int:
    args = _arguments(argv)
    _check_tools(args)
    names = notebook_names(args.notebooks)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    clear_screenshots(args.out, names)
    lab = Lab(args.out)
    outcomes = []
    try:
        driver = _browser(args.chromium, args.chromedriver)
        try:
            _open_lab(driver, lab)
            for name in names:
                outcomes.append(walk_notebook(driver, lab, name, args.out, args.timeout_min * 60))
                print(f"{name}: {outcomes[-1].seconds:.0f} s, errors: {outcomes[-1].errors or 'none'}", flush=True)
            ran = next((o.name for o in outcomes if not o.errors), None)
            if ran:
                outcomes.append(reopen_check(driver, lab, ran, args.out))
                print(f"{outcomes[-1].name}: errors: {outcomes[-1].errors or 'none'}", flush=True)
            outcomes.append(open_and_save_every_notebook(driver, lab))
            print(f"{outcomes[-1].name}: errors: {outcomes[-1].errors or 'none'}", flush=True)
            outcomes.append(plain_python_opens_in_the_editor(driver, lab))
            print(f"{outcomes[-1].name}: errors: {outcomes[-1].errors or 'none'}", flush=True)
        finally:
            driver.quit()
    finally:
        lab.stop()
    status = git_status()
    print(f"git status --porcelain:\n{status}" if status else "git status --porcelain: (clean)")
    write_log(args.out / "walkthrough.md", outcomes, status)
    print(f"log: {args.out / 'walkthrough.md'}")
    return 1 if status or any(o.errors for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
