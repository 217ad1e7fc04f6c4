"""Where a user's rule or objective is written, as the keys tests write it (``test_keys_by_value.py``,
``test_settings_read.py``)."""

from __future__ import annotations

import linecache
import sys
from pathlib import Path

from tcclib.method import plugins


class Place:
    """Where code is written: a plugin file (``file_name`` in ``folder``), a notebook cell
    (``__main__``, its text in linecache under a cell name, as IPython does) or ``python -c``
    (``__main__``, no source)."""

    def __init__(self, kind: str, folder: Path, file_name: str = "share_rule.py"):
        self.kind, self.folder, self.file_name, self.runs = kind, folder, file_name, 0

    def run(self, source: str) -> None:
        self.runs += 1
        if self.kind == "file":
            path = self.folder / self.file_name
            path.write_text(source)
            plugins.load(str(path))
            return
        filename = f"/tmp/ipykernel_0/{self.runs}.py" if self.kind == "cell" else "<string>"
        if self.kind == "cell":
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), sys.modules["__main__"].__dict__)
