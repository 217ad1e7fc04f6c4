"""Progress bars: widgets in JupyterLab, text on a console.

In a notebook with ipywidgets the bars are widgets (``tqdm.auto``); on a terminal, tqdm's bar
redrawn in place (``\r`` frames).  Where stderr is neither (a file, a pipe: a batch job, CI) a
bar writes whole lines, one at most every :data:`LINE_INTERVAL` seconds and its last state when
it closes (:class:`LineBar`), never ``\r`` frames.  The sweep runs notebooks in kernels whose
output it streams to its own stderr; it sets ``TCC_PROGRESS`` for them: ``text`` when that is a
terminal (frames at most every :data:`TEXT_INTERVAL` seconds), else ``lines``.

A widget bar, once closed, replaces itself in the notebook with its last state as a line of
text (:class:`_closing_widget_bar`): a saved and reopened notebook shows how the bar ended,
never "Error displaying widget: model not found" for a widget whose state was not saved.
"""

from __future__ import annotations

import os
import sys

PROGRESS_ENV = "TCC_PROGRESS"
TEXT_INTERVAL = 5.0
LINE_INTERVAL = 30.0


def bar(total: int, desc: str, enabled: bool = True, **kw):
    """A tqdm bar (None when not ``enabled``): a widget in Jupyter, frames on a terminal, lines
    elsewhere; ``TCC_PROGRESS=text`` or ``lines`` chooses."""
    if not enabled:
        return None
    from tqdm.auto import tqdm  # deferred: chosen at call time (widgets in Jupyter, text elsewhere)
    from tqdm.notebook import tqdm as notebook_tqdm  # deferred: as above

    mode = os.environ.get(PROGRESS_ENV)
    if mode == "text":
        kw = {"mininterval": TEXT_INTERVAL, **kw}
        return tqdm_std()(total=total, desc=desc, file=sys.stderr, dynamic_ncols=False, ncols=100, **kw)
    if mode != "lines" and issubclass(tqdm, notebook_tqdm):
        return _closing_widget_bar()(total=total, desc=desc, **kw)
    if mode != "lines" and _is_terminal(sys.stderr):
        return tqdm(total=total, desc=desc, **kw)
    return line_bar()(total=total, desc=desc, file=sys.stderr, **kw)


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
