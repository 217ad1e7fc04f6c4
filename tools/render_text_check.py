"""How the committed renders read: text printed as text, long outputs, results said in words.

    python tools/render_text_check.py                 # every render under outputs/
    python tools/render_text_check.py runs/x --list   # another folder; name every offender

Counts, over the rendered notebooks (``*.ipynb``, Lab's ``.ipynb_checkpoints`` copies left out):

* renders whose stdout holds a Markdown table (a ``| --- |`` rule line) or ``**``: GitHub,
  nbviewer and Lab show those literally; a table or summary is displayed as Markdown or HTML;
* outputs over :data:`MAX_LINES` lines: a cell's stdout (its stream outputs joined), a Markdown
  output, or a text shown as plain text alone (an ``execute_result`` with no richer form);
* per-dataset ``03_pretraining`` renders without a sentence that sets the paper's number beside
  ours (a Markdown output in which "the paper" is followed by a number, as
  :func:`tcclib.paper.words.dataset_result` writes it);
* progress bars' passing states on stderr (a bar's line that the same bar's next line follows):
  a render keeps each bar's last state only (:func:`tcclib.util.progress.ended_bars_only`);
* renders whose parameters cell (the defaults) is longer than :data:`COLLAPSE_FROM` lines and not
  collapsed in JupyterLab (cell metadata ``jupyter.source_hidden``), and papermill's injected
  parameters cells longer than :data:`MAX_INJECTED` lines.

Exit status 1 when any count is not 0.  ``tests/test_render_text.py`` runs it on the committed
renders and on small notebooks that break each rule.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's tcclib, run from anywhere

from tcclib.util import progress  # noqa: E402

MAX_LINES = 60
MAX_INJECTED = 20
COLLAPSE_FROM = 20
MARKDOWN_RULE = re.compile(  # a table's rule line: | --- | --- | (or --- | ---, without the outer bars)
    r"^\s*(\|(\s*:?-{3,}:?\s*\|)+|:?-{3,}:?(\s*\|\s*:?-{3,}:?)+\s*\|?)\s*$", re.MULTILINE
)
PAPER_BESIDE_OURS = re.compile(r"\bthe paper\b[^.\n]*?\d+\.\d", re.IGNORECASE)
RICHER = ("text/markdown", "text/html", "image/png", "image/svg+xml", "application/vnd.jupyter.widget-view+json")


@dataclass
class Findings:
    """Each rule's offenders: ``(render, what)``, the render relative to the folder checked."""

    checked: int = 0
    markdown_on_stdout: list = field(default_factory=list)
    long_outputs: list = field(default_factory=list)
    no_result_sentence: list = field(default_factory=list)
    defaults_shown: list = field(default_factory=list)
    long_injected: list = field(default_factory=list)
    passing_bars: list = field(default_factory=list)

    RULES = (
        ("markdown_on_stdout", "renders printing a Markdown table or ** to stdout"),
        ("long_outputs", f"outputs (stdout, Markdown, plain text) over {MAX_LINES} lines"),
        ("no_result_sentence", "per-dataset 03 renders without a sentence with the paper's number beside ours"),
        ("defaults_shown", f"parameters cells over {COLLAPSE_FROM} lines not collapsed in Lab (jupyter.source_hidden)"),
        ("long_injected", f"injected parameters cells over {MAX_INJECTED} lines"),
        ("passing_bars", "cells whose stderr keeps a progress bar's passing states, not its last only"),
    )

    def failed(self) -> bool:
        return any(getattr(self, name) for name, _ in self.RULES)

    def lines(self, list_all: bool = False) -> list[str]:
        out = [f"{self.checked} rendered notebooks checked"]
        for name, text in self.RULES:
            found = getattr(self, name)
            renders = len({render for render, _ in found})
            count = f"{len(found)} in {renders} renders" if len(found) != renders else f"{len(found)}"
            out.append(f"{count:>14}  {text}")
            shown = found if list_all else found[:3]
            out += [f"{'':>16}{render}: {what}" for render, what in shown]
            if len(found) > len(shown):
                out.append(f"{'':>16}... {len(found) - len(shown)} more (--list names them)")
        return out


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _line_count(text: str) -> int:
    return len(text.rstrip("\n").splitlines())


def _streams(cell: dict, name: str) -> str:
    """A cell's stream ``name`` as a reader sees it: its stream outputs joined."""
    return "".join(
        _text(o.get("text"))
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == name
    )


def _shown_texts(cell: dict):
    """``(kind, text)`` of every Markdown output and every output shown as plain text alone."""
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        if "text/markdown" in data:
            yield "Markdown", _text(data["text/markdown"])
        elif "text/plain" in data and not any(k in data for k in RICHER):
            yield "plain text", _text(data["text/plain"])


def _tags(cell: dict) -> list:
    return cell.get("metadata", {}).get("tags", [])


def check_notebook(nb: dict, name: str, findings: Findings) -> None:
    """Add ``nb``'s offences (rendered notebook ``name``) to ``findings``."""
    findings.checked += 1
    printed_markdown = False
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        stdout = _streams(cell, "stdout")
        if "**" in stdout or MARKDOWN_RULE.search(stdout):
            printed_markdown = True
        if _line_count(stdout) > MAX_LINES:
            findings.long_outputs.append((name, f"cell {i}: stdout of {_line_count(stdout)} lines"))
        for kind, text in _shown_texts(cell):
            if _line_count(text) > MAX_LINES:
                findings.long_outputs.append((name, f"cell {i}: {kind} of {_line_count(text)} lines"))
        source = _text(cell.get("source"))
        if "parameters" in _tags(cell) and _line_count(source) > COLLAPSE_FROM:
            if not cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
                findings.defaults_shown.append((name, f"cell {i}: {_line_count(source)} lines shown"))
        if "injected-parameters" in _tags(cell) and _line_count(source) > MAX_INJECTED:
            findings.long_injected.append((name, f"cell {i}: {_line_count(source)} lines"))
        stderr = _streams(cell, "stderr")
        passing = _line_count(stderr) - _line_count(progress.last_states(stderr))
        if passing:
            findings.passing_bars.append((name, f"cell {i}: {passing} passing states of its bars"))
    if printed_markdown:
        findings.markdown_on_stdout.append((name, "Markdown on stdout"))
    if Path(name).name == "03_pretraining.ipynb" and not _states_result(nb):
        findings.no_result_sentence.append((name, "no sentence with the paper's number"))


def _states_result(nb: dict) -> bool:
    return any(
        kind == "Markdown" and PAPER_BESIDE_OURS.search(text)
        for cell in nb.get("cells", [])
        for kind, text in _shown_texts(cell)
    )


def renders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.relative_to(folder).parts)


def check(folder: Path) -> Findings:
    findings = Findings()
    for path in renders(folder):
        check_notebook(json.loads(path.read_text(encoding="utf-8")), str(path.relative_to(folder)), findings)
    return findings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "outputs"), help="the renders' folder (outputs/)")
    parser.add_argument("--list", action="store_true", help="name every offender, not the first three of each rule")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    if not folder.is_dir():
        parser.error(f"{folder} is not a folder of rendered notebooks")
    findings = check(folder)
    print("\n".join(findings.lines(args.list)))
    return 1 if findings.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
