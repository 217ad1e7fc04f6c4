"""Progress bars: widgets in JupyterLab, text on a console.

In a notebook with ipywidgets the bars are widgets (``tqdm.auto``).  The sweep runs notebooks in
kernels whose output it streams to its own console; it sets ``TCC_PROGRESS=text`` for them, so
the bars are plain text on stderr (updated at most every :data:`TEXT_INTERVAL` seconds, which
also keeps the rendered notebooks small) and the console shows every epoch's progress.

A widget bar, once closed, replaces itself in the notebook with its last state as a line of
text (:class:`_closing_widget_bar`): a saved and reopened notebook shows how the bar ended,
never "Error displaying widget: model not found" for a widget whose state was not saved.
"""

from __future__ import annotations

import os
import sys

PROGRESS_ENV = "TCC_PROGRESS"
TEXT_INTERVAL = 5.0


def bar(total: int, desc: str, enabled: bool = True, **kw):
    """A tqdm bar (None when not ``enabled``)."""
    if not enabled:
        return None
    if os.environ.get(PROGRESS_ENV) == "text":
        from tqdm.std import tqdm  # deferred: chosen at call time (widgets in Jupyter, text elsewhere)

        return tqdm(
            total=total, desc=desc, file=sys.stderr, mininterval=TEXT_INTERVAL, dynamic_ncols=False, ncols=100, **kw
        )
    from tqdm.auto import tqdm  # deferred: chosen at call time (widgets in Jupyter, text elsewhere)
    from tqdm.notebook import tqdm as notebook_tqdm  # deferred: as above

    if issubclass(tqdm, notebook_tqdm):
        return _closing_widget_bar()(total=total, desc=desc, **kw)
    return tqdm(total=total, desc=desc, **kw)


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
