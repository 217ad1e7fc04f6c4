"""Progress bars: widgets in JupyterLab, text on a console.

In a notebook with ipywidgets the bars are widgets (``tqdm.auto``); on a terminal, tqdm's bar
redrawn in place (``\r`` frames).  Where stderr is neither (a file, a pipe: a batch job, CI) a
bar writes whole lines, one at most every :data:`LINE_INTERVAL` seconds and its last state when
it closes (:class:`LineBar`), never ``\r`` frames.  The sweep runs notebooks in kernels whose
output it streams to its own stderr; it sets ``TCC_PROGRESS`` for them: ``text`` when that is a
terminal (frames at most every :data:`TEXT_INTERVAL` seconds), else ``lines``.

:class:`Overall` is the one bar of a run of several datasets at once (the sweep, the screen):
datasets done, members trained and in training (:class:`TrainingFile`), elapsed time and an
estimate; in a log, each dataset's line ends with that state instead of a bar.

A widget bar, once closed, replaces itself in the notebook with its last state as a line of
text (:class:`_closing_widget_bar`): a saved and reopened notebook shows how the bar ended,
never "Error displaying widget: model not found" for a widget whose state was not saved.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

PROGRESS_ENV = "TCC_PROGRESS"
TEXT_INTERVAL = 5.0
LINE_INTERVAL = 30.0
TICK_SECONDS = 5.0
BAR_LINE = re.compile(r"^(?P<desc>.+?): +\d+%\|")
"""A text bar's line: ``desc: 40%|...``, its description before the percentage."""
PROGRESS_FILE = "_PROGRESS.json"
"""A dataset's training progress, in its folder while it trains: ``{"members", "epochs", "done"}``."""


def bar(total: int, desc: str, enabled: bool = True, **kw):
    """A tqdm bar (None when not ``enabled``): a widget in Jupyter, frames on a terminal, lines
    elsewhere; ``TCC_PROGRESS=text`` or ``lines`` chooses."""
    if not enabled:
        return None
    shown = mode()
    if shown == "widget":
        return _closing_widget_bar()(total=total, desc=desc, **kw)
    if shown == "lines":
        return line_bar()(total=total, desc=desc, file=sys.stderr, **kw)
    if os.environ.get(PROGRESS_ENV) == "text":  # (the sweep's kernels, streamed to its terminal)
        kw = {"mininterval": TEXT_INTERVAL, "dynamic_ncols": False, "ncols": 100, **kw}
    return tqdm_std()(total=total, desc=desc, file=sys.stderr, **kw)


def tqdm_std():
    """tqdm's plain text bar class."""
    from tqdm.std import tqdm  # deferred: only text bars need it

    return tqdm


def _is_terminal(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def line_bar():
    """:class:`LineBar`, tqdm's text bar writing whole lines (for logs, not terminals)."""

    class LineBar(tqdm_std()):
        """A line at most every :data:`LINE_INTERVAL` seconds once some progress is made, and the
        bar's last state when it closes (``leave=False``: nothing); no ``\r``."""

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("mininterval", LINE_INTERVAL)
            kwargs.setdefault("maxinterval", kwargs["mininterval"])  # tqdm's monitor: no earlier line
            super().__init__(*args, dynamic_ncols=False, ncols=100, **kwargs)

        def display(self, msg=None, pos=None):
            if msg is not None:  # tqdm clearing a bar (leave=False): nothing to clear in a log
                return False
            closing = self.disable  # close() disables the bar, then displays it, then ends the line
            if self.n > 0 or closing:
                self.fp.write(self.__str__().rstrip() + ("" if closing else "\n"))
                self.fp.flush()
            return True

    return LineBar


def last_states(text: str) -> str:
    """``text`` (what log bars wrote: :class:`LineBar`) without a bar's line that the same bar's next
    line follows: the states a bar passed through say nothing once it has ended; other lines kept."""
    lines = text.splitlines()
    descs = [found["desc"] if (found := BAR_LINE.match(line)) else None for line in lines] + [None]
    kept = [line for i, line in enumerate(lines) if descs[i] is None or descs[i] != descs[i + 1]]
    return "\n".join(kept) + ("\n" if kept and text.endswith("\n") else "")


def ended_bars_only(nb) -> bool:
    """Notebook ``nb`` (nbformat's) with each code cell's stderr as :func:`last_states` leaves it,
    one stream output where stderr outputs followed one another; whether anything changed."""
    changed = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs, run = [], []
        for output in [*cell.get("outputs", []), None]:
            if output is not None and output.output_type == "stream" and output.name == "stderr":
                run.append(output)
                continue
            if run:
                text = "".join(o.text for o in run)
                kept = last_states(text)
                if kept != text or len(run) > 1:
                    changed = True
                if kept:
                    run[0].text = kept
                    outputs.append(run[0])
                run = []
            if output is not None:
                outputs.append(output)
        cell.outputs = outputs
    return changed


def _closing_widget_bar():
    from IPython.display import display  # deferred: only inside a Jupyter kernel
    from tqdm.notebook import tqdm as notebook_tqdm  # deferred: as above

    class ClosingWidgetBar(notebook_tqdm):
        """tqdm's widget bar, shown through a display handle; :meth:`close` puts its last state
        as text in place of the widget (nothing with ``leave=False``) and closes the widget."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, display=False, **kwargs)
            self._handle = None if self.disable else display(self.container, display_id=True)
            self.displayed = self._handle is not None

        def close(self):
            if self.disable:
                return
            super().close()
            if self._handle is not None:
                text = self.format_meter(**{**self.format_dict, "ncols": None}) if self.leave else ""
                self._handle.update({"text/plain": text}, raw=True)
                self.container.close()

    return ClosingWidgetBar


def mode() -> str:
    """How a bar shows here: ``widget`` (Jupyter), ``text`` (a terminal, or ``TCC_PROGRESS=text``)
    or ``lines`` (a log: ``TCC_PROGRESS=lines``, or stderr that is no terminal)."""
    from tqdm.auto import tqdm  # deferred: chosen at call time (widgets in Jupyter, text elsewhere)
    from tqdm.notebook import tqdm as notebook_tqdm  # deferred: as above

    chosen = os.environ.get(PROGRESS_ENV)
    if chosen in ("text", "lines"):
        return chosen
    if issubclass(tqdm, notebook_tqdm):
        return "widget"
    return "text" if _is_terminal(sys.stderr) else "lines"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class TrainingFile:
    """A worker's side of the overall bar: ``<folder>/``:data:`PROGRESS_FILE` (``members`` in
    training, ``epochs`` planned and ``done``), rewritten whole after each epoch and removed by
    :meth:`close`.  Best effort: no folder (None, or one that cannot be written) shows nothing."""

    def __init__(self, folder, members: int, epochs: int):
        self.path = None if folder is None else Path(folder) / PROGRESS_FILE
        self.state = {"members": int(members), "epochs": int(epochs), "done": 0}
        self.epoch(0)

    def epoch(self, done: int) -> None:
        """``done`` pretraining epochs finished (an ``on_epoch`` callback)."""
        self.state["done"] = int(done)
        if self.path is not None:
            with contextlib.suppress(OSError):  # (written whole, then moved: never half a file)
                part = self.path.with_name(PROGRESS_FILE + ".part")
                part.write_text(json.dumps(self.state))
                os.replace(part, self.path)

    def close(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)


class Overall:
    """The one bar of a run of several datasets at once (the sweep, the screen): datasets done,
    members trained and in training, elapsed time and an estimate of the time left.

    A widget in JupyterLab, a bar redrawn in place on a terminal (``say`` lines printed above it)
    every :data:`TICK_SECONDS` by a thread of its own; in a log (not a terminal) no bar: each
    dataset's line ends with the same state in brackets.  ``weights``: each dataset's expected
    share of the work, for the estimate (default: the same).  ``folder``: the set's folder (its
    datasets' :data:`PROGRESS_FILE`).  ``enabled=False``: lines only, no bar, no state in them."""

    def __init__(
        self, todo, skipped: int = 0, desc: str = "datasets", enabled: bool = True, weights=None, say=print, folder=None
    ):
        self.t0 = time.monotonic()
        self.todo = list(todo)
        self.total, self.skipped = len(self.todo) + skipped, skipped
        self.weights = {d: float((weights or {}).get(d) or 1.0) for d in self.todo}
        self.folder = None if folder is None else Path(folder)
        self.finished: list[str] = []
        self.members = 0
        self.enabled = enabled
        self.bar = None
        self._say = say
        self._closed = threading.Event()
        if enabled and mode() != "lines" and self.todo:
            fmt = "{desc}: {n_fmt}/{total_fmt} |{bar}| {postfix}"
            self.bar = bar(self.total, desc, initial=skipped, bar_format=fmt, leave=True)
            self.bar.set_postfix_str(self.state(), refresh=True)
            threading.Thread(target=self._ticking, daemon=True, name="tcc-progress").start()

    def _ticking(self) -> None:
        while not self._closed.wait(TICK_SECONDS):
            self.tick()

    def in_training(self) -> tuple[int, float]:
        """Members training now and the share of their pretraining epochs done (their datasets'
        :data:`PROGRESS_FILE`)."""
        members = done = planned = 0
        for d in [] if self.folder is None else [d for d in self.todo if d not in self.finished]:
            with contextlib.suppress(OSError, ValueError):  # (not training, or not yet)
                state = json.loads((self.folder / d / PROGRESS_FILE).read_text())
                members, done = members + state["members"], done + state["members"] * state["done"]
                planned += state["members"] * state["epochs"]
        return members, done / planned if planned else 0.0

    def state(self) -> str:
        """``24 members trained, 8 training (40%), 5 min 10 s elapsed, about 40 min left`` (40%: the
        share of their pretraining epochs done)."""
        elapsed = time.monotonic() - self.t0
        parts = [f"{self.members} member{'' if self.members == 1 else 's'} trained"]
        training, share = self.in_training()
        if training:
            parts.append(f"{training} training ({share:.0%})")
        parts.append(f"{_duration(elapsed)} elapsed")
        done_w = sum(self.weights[d] for d in self.finished)
        left_w = sum(w for d, w in self.weights.items() if d not in self.finished)
        if self.finished and left_w > 0:
            parts.append(f"about {_duration(elapsed / done_w * left_w)} left")
        elif not self.finished and self.todo:
            parts.append("estimate after a dataset")
        return ", ".join(parts)

    def say(self, line: str) -> None:
        """A line above the bar (a log: the line alone)."""
        if self.bar is not None:
            self.bar.write(line)
        else:
            self._say(line)

    def done(self, dataset: str, line: str, trained: int = 0) -> None:
        """``dataset`` finished (or failed): its ``line`` said, the bar moved on."""
        self.finished.append(dataset)
        self.members += int(trained)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(self.state(), refresh=True)
            self.bar.write(line)
        elif self.enabled:
            self._say(f"{line}  [{self.skipped + len(self.finished)}/{self.total} datasets; {self.state()}]")
        else:
            self._say(line)

    def tick(self) -> None:
        """Redraw the bar (members in training, elapsed time, estimate)."""
        shown = self.bar
        if shown is not None:
            shown.set_postfix_str(self.state(), refresh=True)

    def close(self) -> None:
        self._closed.set()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
