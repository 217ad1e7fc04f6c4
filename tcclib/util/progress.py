"""Progress bars: widgets in JupyterLab, text on a console.

In a notebook with ipywidgets the bars are widgets (``tqdm.auto``).  The sweep runs notebooks in
kernels whose output it streams to its own console; it sets ``TCC_PROGRESS=text`` for them, so
the bars are plain text on stderr (updated at most every :data:`TEXT_INTERVAL` seconds, which
also keeps the rendered notebooks small) and the console shows every epoch's progress.
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

    return tqdm(total=total, desc=desc, **kw)
