"""Errors shared by every layer, and how tcclib's own errors are shown: short.

tcclib's own errors (a bad setting, a rule that breaks its contract, a dataset that cannot be
had, ...) say in their message what went wrong and what to change; their traceback, dozens of
lines through tcclib, buries that line.  So, in a notebook kernel (Lab, papermill) and on the
command line (``python -m tcclib``), such an error ends with two lines: where its full
traceback was written (:func:`save_traceback`), then the error itself.  ``TCC_TRACEBACK=1`` (or
``--traceback`` on the command line) shows the whole traceback instead; in a notebook ``%tb``
shows it too.  The error classes are named by the package (``tcclib/__init__.py``), which
imports every layer; this module imports nothing from tcclib but :mod:`tcclib.util.paths`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from tcclib.util import paths

TRACEBACK_ENV = "TCC_TRACEBACK"
"""Set to 1 to see the full traceback of tcclib's own errors (notebook kernels, the command line)."""
LOG_DIR_ENV = "TCC_TRACEBACK_DIR"
"""Where the full tracebacks go (default: ``.cache/tracebacks`` of the checkout, else the temp folder)."""
KEEP = 50
"""The newest tracebacks kept in that folder."""


class ConfigError(ValueError):
    """A setting has a wrong name, type or value (shown short: its line says what to change)."""


SHORT: list[type] = []
"""tcclib's own error classes, shown short (:func:`register_short`)."""


def register_short(*classes: type) -> None:
    """Show errors of ``classes`` (and their subclasses) short: the error's line, the traceback saved."""
    for cls in classes:
        if cls not in SHORT:
            SHORT.append(cls)
    _install_in_ipython()


def full_tracebacks() -> bool:
    """Whether ``TCC_TRACEBACK`` asks for full tracebacks."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def error_text(error: BaseException) -> str:
    """``RuleContractError: how rule 'x' (x.py): ...``: the error's type and message."""
    message, name = str(error).strip(), type(error).__name__
    if message.lower().startswith(f"{name.lower()}:"):  # (e.g. an interrupt's own line)
        return message
    return f"{name}: {message}" if message else name


def log_folder() -> Path:
    """Where :func:`save_traceback` writes: ``$TCC_TRACEBACK_DIR``, else ``.cache/tracebacks`` of the
    checkout (ignored by git), else ``tcc-tracebacks`` in the temp folder (an installed package)."""
    env = os.environ.get(LOG_DIR_ENV)
    if env:
        return Path(env).expanduser()
    root = paths.project_root()
    if (root / "pyproject.toml").is_file() and (root / "tcclib").is_dir():
        return root / ".cache" / "tracebacks"
    return Path(tempfile.gettempdir()) / "tcc-tracebacks"


def save_traceback(error: BaseException) -> Path | None:
    """Write ``error``'s full traceback (its causes included) to a new file of :func:`log_folder`
    and return its path (None when nothing can be written there); the oldest beyond :data:`KEEP`
    go."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    folder = log_folder()
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{type(error).__name__}.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(text, encoding="utf-8")
        for old in sorted(folder.glob("*.txt"), key=lambda p: p.stat().st_mtime)[:-KEEP]:
            old.unlink(missing_ok=True)
    except OSError:
        return None
    return path


def short_lines(error: BaseException, switch: str = f"{TRACEBACK_ENV}=1") -> list[str]:
    """The two lines a short error ends with: where its traceback went, then the error."""
    path = save_traceback(error)
    where = f"the full traceback is in {path}" if path else "the full traceback could not be saved"
    return [f"({where}; {switch} shows it here)", error_text(error)]


# --------------------------------------------------------------------------- notebook kernels


def _install_in_ipython() -> None:
    """In an IPython shell (a notebook kernel), show :data:`SHORT` errors short (a custom
    exception handler, :meth:`IPython.core.interactiveshell.InteractiveShell.set_custom_exc`);
    a handler someone else set is left alone."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    current = getattr(shell, "custom_exceptions", ())
    if current and getattr(shell, "_tcc_short", None) != current:
        return  # another handler than ours
    shell.set_custom_exc(tuple(SHORT), _ipython_handler)
    shell._tcc_short = tuple(SHORT)


def _ipython_handler(shell, etype, value, tb, tb_offset=None):
    """Show a tcclib error as its two lines (its traceback saved, ``%tb`` shows it too), or in full
    when ``TCC_TRACEBACK`` says so.  IPython shows nothing of a handler's return, so it sends the
    error itself (an ``error`` output, which papermill and nbclient report)."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb
    if full_tracebacks():
        lines = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    else:
        lines = short_lines(value, f"%tb or {TRACEBACK_ENV}=1")
    shell._showtraceback(etype, value, lines)
    return None


register_short(ConfigError)  # (the others register where they are defined)


def counted(n: int, noun: str) -> str:
    """``1 dataset``, ``2 datasets``: a count and its noun, as a message says it."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def first_few(items, shown: int) -> str:
    """``a, b, c and 2 more``: the first ``shown`` of ``items``, as a message lists them."""
    items = list(items)
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")
