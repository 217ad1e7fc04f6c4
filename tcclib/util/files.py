"""Crash-safe writes: a file is replaced whole or not at all, never left half written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path, write) -> Path:
    """Call ``write(temporary path)`` beside ``path``, then move the result onto ``path``.

    A crash (or an error raised by ``write``) keeps the previous file, or none, and removes the
    temporary one; an ``OSError`` (a full disk) names ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        if e.filename is None or e.filename == tmp:  # name the file meant (a full disk, say), not the temporary one
            e.filename = str(path)
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
