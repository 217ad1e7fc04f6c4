"""Notebook 09 in JupyterLab as a user meets it, in a real headless Chromium (issue 48).

    pip install selenium          # not a project dependency: this tool's only extra
    python tools/lab_09_walkthrough.py                  # after 60 s of screen, Kernel > Interrupt
    python tools/lab_09_walkthrough.py --run-s 120 --out runs/lab_09
    python tools/lab_09_walkthrough.py --loop           # the edit -> Run All loop on kc2 (issue 54)

Run it in a clone you do not mind Lab writing to: Lab autosaves the edited notebook (and with it
its paired ``.py``).  It starts JupyterLab as ``make lab`` does (``tools/lab_walkthrough.py``), opens
``09_your_rule.py`` by double-click and does what a user does:

1. sets ``out_dir`` to a fresh folder under ``--out`` in the parameters cell (so the screen trains),
   Run > Run All Cells, waits ``--run-s`` seconds of screening and takes a screenshot of the
   screen cell (its progress bar);
2. Kernel > Interrupt Kernel: the seconds until the kernel is idle, the processes below the kernel
   before and a few seconds after, the cell's error output (its text and line count), a screenshot;
   (multiprocessing's resource tracker, the kernel's own helper for as long as it lives, is
   named but is not a worker);
3. Run All again at once: the screen cell's bar each time it changes in its first 25 s (it must
   start from the new run's state, not the interrupted run's share), then Kernel > Interrupt;
4. edits the rule cell as a user might get it wrong (the donor row's place no longer clamped to
   the table: out-of-range donors), Run All again, and records the message, its line count and a
   screenshot;
5. defines a constant in another cell (``WIDTH = 0.1`` in the cell after the parameters) and uses it
   in the rule cell: Run All must stop with one line saying that the rule's cell is a file of its
   own, and the fix.

With ``--loop`` it walks the researcher's loop instead, in one kernel (no restart): ``out_dir`` a
fresh folder and ``datasets`` one small dataset (``--dataset``, default kc2), then Run All four
times: as written; after an edit of the rule's code (the donor band in ``donors()`` halved); after
an edit of its arguments (``NearbyValue(width=0.1)`` -> ``0.2``); after a comment-only edit.  For
each run it records the seconds, every error output and unrun cell, which members trained (the
dataset's ``keys.json`` before and after, its ``timings.json``), the screen cell's own lines and a
screenshot of the overall bar while members train.  Expected: the first run and both edits train
exactly the rule's members (one per seed; the compared built-ins come from the reference and never
train), the comment edit trains nothing, the kernel stays the same, no error output, ``outputs/``
unchanged (``git status``); exit status 1 otherwise (``walkthrough_09_loop.md``).

The cell edits go through Lab's own model (``--LabApp.expose_app_in_browser``): what appears in
the cell is what a user would have typed.  Everything found goes to ``walkthrough_09.md`` beside
the screenshots; exit status 1 when the interrupt leaves a process, takes more than 30 s or prints
a traceback, the re-run's bar starts from the interrupted run's state, or the broken rule's or the
constant's message is not short and to the point.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import lab_walkthrough as lw  # noqa: E402
from processes import descendants  # noqa: E402

NAME = "09_your_rule.py"
SHORT = 6  # lines: the most an error output may take to count as short
RULE = "nearby"  # the method the notebook's rule cell registers
SHOT_S, SAMPLE_S = 45.0, 15.0  # the loop: the bar's screenshot at the latest, and its samples (seconds into a run)
RERUN_S, RERUN_MAX_S = 25.0, 300.0  # the re-run after the interrupt: its bar's seconds recorded, and the most waited


class Lab09(lw.Lab):
    """The walkthrough's Lab with the app exposed to the page (for the cell edits)."""

    def _command(self) -> list[str]:
        return super()._command() + ["--LabApp.expose_app_in_browser=True"]


def _set_cell(driver, contains: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the first cell whose source contains ``contains``."""
    script = """const nb = window.jupyterapp.shell.currentWidget.content;
    const cell = nb.widgets.find(c => c.model.sharedModel.getSource().includes(arguments[0]));
    if (!cell) return 'no cell';
    const source = cell.model.sharedModel.getSource();
    if (!source.includes(arguments[1])) return 'no text';
    cell.model.sharedModel.setSource(source.replace(arguments[1], arguments[2]));
    return 'ok'"""
    answer = driver.execute_script(script, contains, old, new)
    if answer != "ok":
        raise RuntimeError(f"could not edit the cell with {contains!r}: {answer}")


def _outputs(driver) -> list[dict]:
    """Each code cell's outputs as shown: its index, and the text of each output."""
    script = """const stderr = '[data-mime-type="application/vnd.jupyter.stderr"]';
    return [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')].map((cell, index) => ({
        index: index + 1,
        texts: [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent),
        errors: [...cell.querySelectorAll('.jp-OutputArea-output' + stderr)].map(o => o.textContent),
    })).filter(c => c.texts.length)"""
    return driver.execute_script(script)


def _last_error(driver) -> tuple[int, str]:
    """The last cell with an error output (stderr), and the text of its error outputs."""
    errors = [c for c in _outputs(driver) if c["errors"]]
    if not errors:
        return 0, ""
    cell = errors[-1]
    return cell["index"], "\n".join(t.strip() for t in cell["errors"] if t.strip())


def _scroll_to(driver, selector_text: str) -> None:
    """The cell whose text contains ``selector_text`` scrolled into view."""
    script = """const nb = window.jupyterapp.shell.currentWidget.content;
    const cell = nb.widgets.find(c => c.model.sharedModel.getSource().includes(arguments[0]));
    if (cell) nb.scrollToCell(cell, 'start');"""  # (Lab's windowed notebook: through its model)
    driver.execute_script(script, selector_text)


def _error_with(driver, text: str) -> tuple[int, str] | None:
    """The first code cell whose error output (from Lab's model: also for a cell out of view) holds
    ``text``, and that output's text."""
    script = """const nb = window.jupyterapp.shell.currentWidget.content;
    const code = nb.widgets.filter(c => c.model.type === 'code');
    for (let i = 0; i < code.length; i++) {
        for (const o of code[i].model.outputs.toJSON()) {
            const t = o.output_type === 'error' ? o.ename + ': ' + o.evalue
                : o.output_type === 'stream' && o.name === 'stderr' ? [].concat(o.text).join('') : '';
            if (t.includes(arguments[0])) return [i + 1, t];
        }
    }
    return null"""
    found = driver.execute_script(script, text)
    return (found[0], found[1].strip()) if found else None


def _viewport_shot(driver, selector_text: str, path: Path) -> str:
    """A screenshot of the window with the cell whose text contains ``selector_text`` in view."""
    _scroll_to(driver, selector_text)
    time.sleep(1)
    driver.save_screenshot(str(path))
    return path.name


def _kernel_pid(lab: Lab09) -> int | None:
    """The process of 09's kernel (its connection file names the kernel's id)."""
    found = lab.session(NAME)
    if not found:
        return None
    kernel_id = found["kernel"]["id"]
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if f"kernel-{kernel_id}".encode() in (d / "cmdline").read_bytes():
                    return int(d.name)
            except OSError:
                continue
    return None


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "(gone)"


def _named(processes: dict[int, str]) -> str:
    """``left: pid 12 (python ... resource_tracker ...)`` or ``none left``; multiprocessing's
    resource tracker is the kernel's own helper (it lives as long as the kernel), not a worker."""
    if not processes:
        return "none left"
    return "left: " + "; ".join(f"pid {p} ({c[:90]})" for p, c in processes.items())


def _wait_idle(driver, lab: Lab09, timeout_s: float) -> float:
    """Seconds until no cell is queued and the kernel is idle."""
    start = time.monotonic()
    while any(p.startswith("[*]") for p in lw._prompts(driver)) or lab.kernel_state(NAME) != "idle":
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"the kernel was still busy after {timeout_s:.0f} s")
        time.sleep(0.25)
    return time.monotonic() - start


def _run_all(driver) -> None:
    lw._click_text(driver, ".lm-MenuBar-itemLabel", "Run")
    lw._click_text(driver, ".lm-Menu-itemLabel", "Run All Cells")


def interrupt_step(driver, lab: Lab09, out: Path, run_s: float, report: list[str]) -> list[str]:
    """Run All with a fresh ``out_dir``, wait, screenshot the bar, interrupt; the problems found."""
    problems = []
    screen_dir = out / "screen"
    _set_cell(driver, "out_dir: str", 'out_dir: str = "runs/screen"', f'out_dir: str = "{screen_dir}"')
    _run_all(driver)
    time.sleep(run_s)
    kernel = _kernel_pid(lab)
    workers = descendants(kernel) if kernel else set()
    shot = _viewport_shot(driver, "screen.run(job)", out / "09_running.png")
    shown = [t for c in _outputs(driver) for t in c["texts"] if "datasets" in t or "members" in t]
    report += [
        "## 1. The screen running, then Kernel > Interrupt",
        "",
        f"After {run_s:.0f} s of Run All Cells (defaults, `out_dir` = `{screen_dir.name}/screen`): "
        f"{len(workers)} processes below the kernel (pid {kernel}). Screenshot `{shot}`; the screen cell showed:",
        "",
        "```",
        *(shown[-1].strip().splitlines()[-6:] if shown else ["(nothing yet)"]),
        "```",
        "",
    ]
    lw._click_text(driver, ".lm-MenuBar-itemLabel", "Kernel")
    lw._click_text(driver, ".lm-Menu-itemLabel", "Interrupt Kernel")
    seconds = _wait_idle(driver, lab, 120)
    time.sleep(3)
    left = {p: _command_line(p) for p in sorted(workers & descendants(kernel))}
    index, text = _last_error(driver)
    shot = _viewport_shot(driver, "screen.run(job)", out / "09_interrupted.png")
    done = sorted(p.parent.name for p in screen_dir.rglob("_DONE.json"))
    report += [
        f"Kernel > Interrupt Kernel: the kernel idle after **{seconds:.1f} s**; processes below the kernel "
        f"3 s later: {len(left)} of the {len(workers)} ({_named(left)}). Datasets finished and kept: "
        f"{len(done)} ({', '.join(done) or 'none'}). Screenshot `{shot}`. Cell {index}'s error output "
        f"({len(text.splitlines())} lines):",
        "",
        "```",
        text,
        "```",
        "",
    ]
    workers_left = [p for p, command in left.items() if "resource_tracker" not in command]
    if workers_left:
        problems.append(f"interrupt left {len(workers_left)} processes: {_named(left)}")
    if seconds > 30:
        problems.append(f"interrupt took {seconds:.0f} s")
    if "Traceback" in text or len(text.splitlines()) > SHORT:
        problems.append(f"the interrupt's output is {len(text.splitlines())} lines")
    return problems


def rerun_step(driver, lab: Lab09, out: Path, report: list[str]) -> list[str]:
    """Run All again right after the interrupt: the re-run's bar must start from its own state, not
    the interrupted run's share (its killed workers' progress files); then interrupt it too."""
    problems = []
    _run_all(driver)
    start, samples, shown = time.monotonic(), [], None
    while time.monotonic() - start < RERUN_MAX_S and (shown is None or time.monotonic() - shown < RERUN_S):
        time.sleep(1.0)
        _scroll_to(driver, "screen.run(job)")  # (Lab draws only the cells in view)
        bar = _screen_cell(driver)[0]
        if "members trained" in bar and (not samples or samples[-1][1] != bar):
            samples.append((time.monotonic() - start, bar))
            shown = shown or time.monotonic()
    shot = _viewport_shot(driver, "screen.run(job)", out / "09_rerun.png")
    lw._click_text(driver, ".lm-MenuBar-itemLabel", "Kernel")
    lw._click_text(driver, ".lm-Menu-itemLabel", "Interrupt Kernel")
    _wait_idle(driver, lab, 120)
    report += [
        "## 2. Run All again after the interrupt",
        "",
        f"Run All Cells at once; the screen cell's bar each time it changed, for {RERUN_S:.0f} s from its first "
        f"state (seconds since Run All; screenshot `{shot}`), then Kernel > Interrupt:",
        "",
        "```",
        *(f"{t:4.0f} s: {bar}" for t, bar in samples),
        "```",
        "",
    ]
    first = samples[0][1] if samples else ""
    if not first:
        problems.append(f"the re-run showed no bar in {RERUN_MAX_S:.0f} s")
    elif "training (" in first and "training (0%)" not in first:
        problems.append(f"the re-run's bar started from another run's state: {first}")
    return problems


def name_error_step(driver, lab: Lab09, out: Path, report: list[str]) -> list[str]:
    """A constant defined in another cell (the one after the parameters) used in the rule cell: Run
    All stops with one line saying that the rule's cell is a file of its own, and the fix."""
    problems = []
    _set_cell(driver, "rule_path = out", "rule_path = out", "WIDTH = 0.1\nrule_path = out")
    _set_cell(driver, "class NearbyValue", "NearbyValue(width=0.1)", "NearbyValue(width=WIDTH)")
    _run_all(driver)
    time.sleep(2)
    _wait_idle(driver, lab, 600)
    index, text = _error_with(driver, "NameError") or _last_error(driver)
    shot = _viewport_shot(driver, "check_rule", out / "09_name_error.png")
    report += [
        "## 4. A constant of another cell in the rule",
        "",
        "`WIDTH = 0.1` added to the cell after the parameters, and the rule cell's `NearbyValue(width=0.1)` "
        f"edited to `NearbyValue(width=WIDTH)`, Run All Cells. Screenshot `{shot}`. Cell {index}'s error output "
        f"({len(text.splitlines())} lines):",
        "",
        "```",
        text,
        "```",
        "",
    ]
    if "the rule's cell is a file of its own" not in text or "define 'WIDTH' in the rule's cell" not in text:
        problems.append("the NameError does not say that the rule's cell is a file of its own, and the fix")
    if "Traceback" in text or len(text.splitlines()) > SHORT:
        problems.append(f"the NameError's output is {len(text.splitlines())} lines")
    return problems


def broken_rule_step(driver, lab: Lab09, out: Path, report: list[str]) -> list[str]:
    """The rule's donor place unclamped (out-of-range rows), Run All; the problems found."""
    problems = []
    _set_cell(driver, "class NearbyValue", "place = (rank + offset).clamp(0, n_rows - 1)", "place = rank + offset")
    start = time.monotonic()
    _run_all(driver)
    time.sleep(2)
    _wait_idle(driver, lab, 600)
    seconds = time.monotonic() - start
    index, text = _last_error(driver)
    shot = _viewport_shot(driver, "check_rule", out / "09_broken_rule.png")
    report += [
        "## 3. A broken rule",
        "",
        "In the rule cell, `place = (rank + offset).clamp(0, n_rows - 1)` edited to `place = rank + offset` "
        f"(donor rows out of range at the table's ends), Run All Cells: stopped after {seconds:.1f} s. "
        f"Screenshot `{shot}`. Cell {index}'s error output ({len(text.splitlines())} lines):",
        "",
        "```",
        text,
        "```",
        "",
    ]
    if not text:
        problems.append("the broken rule gave no error")
    elif "Traceback" in text or len(text.splitlines()) > SHORT:
        problems.append(f"the broken rule's message is {len(text.splitlines())} lines")
    return problems


LOOP_EDITS = (
    # (what the user does, the text replaced in the rule cell, its replacement, members expected to train)
    ("Run All as written", "", "", "all"),
    (
        "the rule's code: `donors()` draws from half the band (`self.width * n_rows / 2` -> `/ 4`)",
        "round(self.width * n_rows / 2)",
        "round(self.width * n_rows / 4)",
        "all",
    ),
    (
        "its arguments: `NearbyValue(width=0.1)` -> `NearbyValue(width=0.2)`",
        "NearbyValue(width=0.1)",
        "NearbyValue(width=0.2)",
        "all",
    ),
    (
        "a comment only (in `donors()`)",
        "        order, rank = state\n",
        "        order, rank = state  # each place's row, each row's place\n",
        "none",
    ),
)
"""The loop's runs: after each edit, Run All; ``all``: every member of the rule trains, ``none``: none."""


def _screen_cell(driver) -> tuple[str, list[str]]:
    """The screen cell's overall bar as shown (its widget's text) and its printed lines (from Lab's
    model: also for a cell out of view)."""
    script = """const nb = window.jupyterapp.shell.currentWidget.content;
    const cell = nb.widgets.find(c => c.model.sharedModel.getSource().includes('screen.run(job)'));
    if (!cell) return ['', []];
    const bar = [...cell.node.querySelectorAll('.widget-hbox')].map(e => e.textContent.trim()).join(' | ');
    const lines = cell.model.outputs.toJSON().filter(o => o.output_type === 'stream')
        .flatMap(o => [].concat(o.text).join('').split('\\n'));
    return [bar, lines]"""
    bar, lines = driver.execute_script(script)
    bar = " ".join(bar.replace("\u2007", " ").split())  # (tqdm's widget spaces with figure spaces)
    return bar or "(no bar)", [line.strip() for line in lines if line.strip()]


def _member_keys(folder: Path) -> dict:
    """``"<seed>/<method>" -> key`` of the members the dataset's ``keys.json`` records."""
    keys = folder / "keys.json"
    return json.loads(keys.read_text()).get("members", {}) if keys.is_file() else {}


def _unrun(driver) -> list[int]:
    """The code cells Run All left without an execution count (an error stopped it before them)."""
    return [i for i, p in enumerate(lw._prompts(driver), start=1) if p in ("[ ]:", "[*]:", "")]


def _run_and_watch(driver, lab: Lab09, folder: Path, shot: Path, timeout_s: float):
    """Run All; the seconds until the kernel is idle and no cell queued, the bar's text when the
    screenshot of the screen cell was taken (once members train, else after ``SHOT_S`` of the run,
    else at the end) and the bar every ``SAMPLE_S`` (with whether the worker's progress file,
    ``folder/_PROGRESS.json``, was there, and the kernel's state as Lab's server has it)."""
    start = time.monotonic()
    _run_all(driver)
    taken, idle, started, samples, sampled = "", 0, False, [], -SAMPLE_S
    while idle < 2:
        now = time.monotonic() - start
        if now > timeout_s:
            raise TimeoutError(f"Run All did not finish within {timeout_s:.0f} s")
        time.sleep(0.5)
        state = lab.kernel_state(NAME)
        busy = any(p.startswith("[*]") for p in lw._prompts(driver)) or state != "idle"
        started = started or busy or now > 10
        idle = 0 if busy or not started else idle + 1
        bar, _ = _screen_cell(driver)
        running = "members trained" in bar and busy
        if running and now - sampled >= SAMPLE_S:
            sampled = now
            progress_file = ", _PROGRESS.json there" if (folder / "_PROGRESS.json").is_file() else ""
            samples.append(f"{now:3.0f} s: {bar} (Lab's kernel state: {state}{progress_file})")
        if not taken and running and ("training (" in bar or now > SHOT_S):
            _viewport_shot(driver, "screen.run(job)", shot)
            taken = f"{bar} (at {now:.0f} s)"
    seconds = time.monotonic() - start - 1.0  # (the two idle polls)
    if not taken:
        _viewport_shot(driver, "screen.run(job)", shot)
        taken = f"{_screen_cell(driver)[0]} (at the end)"
    return seconds, taken, samples


def loop_step(driver, lab: Lab09, folder: Path, step: int, edit: tuple, kernel: int | None, report: list[str]):
    """One edit and its Run All, ``folder`` the dataset's in ``out_dir``; the problems found."""
    what, old, new, expected = edit
    problems = []
    if old:
        _set_cell(driver, "class NearbyValue", old, new)
    before = _member_keys(folder)
    timings = folder / "timings.json"
    stamp = timings.stat().st_mtime if timings.is_file() else None
    seconds, bar, samples = _run_and_watch(driver, lab, folder, folder.parent.parent / f"09_loop_{step}.png", 900)
    after = _member_keys(folder)
    trained = sorted(t for t, k in after.items() if before.get(t) != k)
    rewritten = timings.is_file() and timings.stat().st_mtime != stamp
    record = json.loads(timings.read_text()) if rewritten else {}
    index, errors = _last_error(driver)
    unrun = _unrun(driver)
    lines = _screen_cell(driver)[1]
    now = _kernel_pid(lab)
    methods = sorted({t.split("/", 1)[1] for t in after})
    report += [
        f"## Run {step}: {what}",
        "",
        f"- Run All: **{seconds:.1f} s**; kernel pid {now} ({'the same' if now == kernel else 'ANOTHER'} kernel)",
        f"- members trained (keys.json changed): **{len(trained)}** of {len(after)} "
        f"({', '.join(trained) or 'none'}); methods stored: {', '.join(methods) or 'none'}",
        "- timings.json: "
        + (
            f"rewritten: {record.get('trained_members')} trained, {record.get('reused_members')} reused, "
            f"{record.get('total_s')} s of run_dataset"
            if rewritten
            else "not rewritten (the dataset was not run)"
        ),
        f"- error output: {f'cell {index}: ' + repr(errors) if errors else 'none'}; cells not run: "
        f"{', '.join(map(str, unrun)) or 'none'}",
        f"- the overall bar (screenshot `09_loop_{step}.png`): `{bar}`; every {SAMPLE_S:.0f} s of the screen cell:",
        "",
        "```",
        *(samples or ["(no bar while the cell ran)"]),
        "```",
        "",
        "- the screen cell's lines:",
        "",
        "```",
        *lines,
        "```",
        "",
    ]
    if errors:
        problems.append(f"run {step}: error output in cell {index}: {errors.splitlines()[-1][:200]}")
    if unrun:
        problems.append(f"run {step}: cells not run: {unrun}")
    if now != kernel:
        problems.append(f"run {step}: the kernel changed ({kernel} -> {now})")
    baselines = json.loads((folder / "keys.json").read_text()).get("baselines") if after else None
    if baselines:
        problems.append(f"run {step}: {folder.name}/keys.json stores baselines: {sorted(baselines)}")
    if methods != [RULE]:
        problems.append(f"run {step}: methods stored in {folder.name}/keys.json: {methods}, not only {RULE!r}")
    if expected == "all" and (not after or trained != sorted(after)):
        problems.append(f"run {step}: {len(trained)} of {len(after)} members trained, expected all of the rule's")
    if expected == "all" and rewritten and record.get("trained_members") != len(after):
        problems.append(f"run {step}: timings.json says {record.get('trained_members')} trained, not {len(after)}")
    if expected == "none" and (trained or (rewritten and record.get("trained_members"))):
        problems.append(f"run {step}: {len(trained)} members trained after a comment-only edit, expected none")
    return problems


def loop_steps(driver, lab: Lab09, out: Path, dataset: str, report: list[str]) -> list[str]:
    """The edit -> Run All loop in one kernel; the problems found."""
    screen_dir = out / "screen"
    if screen_dir.exists():
        shutil.rmtree(screen_dir)  # a fresh out_dir: the first run trains
    _set_cell(driver, "out_dir: str", 'out_dir: str = "runs/screen"', f'out_dir: str = "{screen_dir}"')
    _set_cell(driver, "datasets: list", "datasets: list = []", f'datasets: list = ["{dataset}"]')
    kernel = _kernel_pid(lab)
    report += [
        f"Notebook 09 opened by double-click; parameters: `out_dir` = a fresh `{screen_dir.name}/`, "
        f'`datasets = ["{dataset}"]`; kernel pid {kernel}. Each run: Run > Run All Cells until the kernel is idle.',
        "",
    ]
    problems = []
    for step, edit in enumerate(LOOP_EDITS, start=1):
        found = loop_step(driver, lab, screen_dir / dataset, step, edit, kernel, report)
        print(f"run {step}: {edit[0]}: {'; '.join(found) or 'as expected'}", flush=True)
        problems += found
    changed = [line for line in lw.git_status().splitlines() if line[3:].startswith("outputs/")]
    report += [f"`git status --porcelain outputs/` after the four runs: {'; '.join(changed) or 'clean'}", ""]
    if changed:
        problems.append(f"the loop changed the committed outputs/: {'; '.join(changed)}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=lw.ROOT / "runs" / "lab_09")
    parser.add_argument("--run-s", type=float, default=60.0, help="seconds of screening before the interrupt")
    parser.add_argument("--loop", action="store_true", help="the edit -> Run All loop instead of the interrupt")
    parser.add_argument("--dataset", default="kc2", help="the loop's one dataset (default: %(default)s)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args(argv)
    if lw.webdriver is None:
        sys.exit("selenium is missing: pip install selenium")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    title = "the edit -> Run All loop" if args.loop else "interrupt and a broken rule"
    report = [f"# Notebook 09 in JupyterLab (headless Chromium): {title}", ""]
    lab = Lab09(out)
    driver = lw._browser(args.chromium, args.chromedriver)
    problems = []
    try:
        lw._open_lab(driver, lab)
        lw._open_by_double_click(driver, NAME)
        lw._wait_for_kernel(lab, NAME, 300)
        if args.loop:
            problems += loop_steps(driver, lab, out, args.dataset, report)
        else:
            problems += interrupt_step(driver, lab, out, args.run_s, report)
            problems += rerun_step(driver, lab, out, report)
            problems += broken_rule_step(driver, lab, out, report)
            problems += name_error_step(driver, lab, out, report)
    finally:
        driver.quit()
        lab.stop()
    report += ["## Verdict", "", *(f"- {p}" for p in problems or ["no problem found"]), ""]
    (out / ("walkthrough_09_loop.md" if args.loop else "walkthrough_09.md")).write_text("\n".join(report))
    print("\n".join(report))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
