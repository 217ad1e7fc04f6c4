"""The files generated from the settings' declarations: ``docs/parameters.md`` and the settings'
lines of the per-dataset notebooks' parameter cells.

``python -m tcclib.running.reference`` (``make notebooks`` runs it) writes them;
``python -m tcclib.running.reference --check`` exits 1 naming every stale file (a test runs the
check).  The declarations are :class:`tcclib.method.config.Config`'s fields
(:mod:`tcclib.method.settings`): edit those, never the generated lines.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tcclib.method import settings
from tcclib.method.config import SETTINGS, notebook_defaults
from tcclib.util import paths
from tcclib.util.files import atomic_write

PAGE = Path("docs/parameters.md")
NOTEBOOKS = ("01_data_prep", "02_correlation", "03_pretraining", "07_ablation")
"""The notebooks whose parameter cell carries every setting (``nbparams.per_dataset``)."""
MARK = "# Settings of tcclib.method.config.Config"
"""The line that starts a notebook's generated block; the block runs to the end of the cell."""


class ReferenceError(ValueError):
    """A notebook lacks the line its generated block starts at."""


def page() -> str:
    """``docs/parameters.md``'s text."""
    note = ", ".join(f"`{n}` ({v!r})" for n, v in notebook_defaults().items())
    return settings.reference_page(SETTINGS, note)


def notebook_block() -> list[str]:
    """The generated lines of a notebook's parameter cell: a header, then one line per setting."""
    differs = ", ".join(f"{n} {v!r}" for n, v in notebook_defaults().items())
    header = (
        f"{MARK} (generated from its declarations by `make notebooks`; docs/parameters.md): "
        f"the published values, except {differs}"
    )
    return [header, *settings.notebook_lines(SETTINGS)]


def with_block(source: str, name: str) -> str:
    """``source`` (a notebook's ``.py``) with its generated block replaced by :func:`notebook_block`."""
    lines = source.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(MARK))
    except StopIteration:
        raise ReferenceError(f"notebooks/{name}.py: no line starting {MARK!r} in its parameter cell") from None
    end = start + 1
    while end < len(lines) and lines[end].strip() and not lines[end].startswith("# %%"):
        end += 1
    return "\n".join([*lines[:start], *notebook_block(), *lines[end:]])


def targets(root: Path | None = None) -> dict[Path, str]:
    """``{file: its generated text}`` of every generated file under ``root`` (the checkout)."""
    root = paths.project_root() if root is None else Path(root)
    out = {root / PAGE: page()}
    for name in NOTEBOOKS:
        path = root / "notebooks" / f"{name}.py"
        out[path] = with_block(path.read_text(encoding="utf-8"), name)
    return out


def stale(root: Path | None = None) -> list[Path]:
    """The generated files whose text is not what the declarations give."""
    return [p for p, text in targets(root).items() if not p.is_file() or p.read_text(encoding="utf-8") != text]


def write(root: Path | None = None) -> list[Path]:
    """Write every stale generated file; returns those written."""
    todo = targets(root)
    written = stale(root)
    for path in written:
        atomic_write(path, lambda tmp, text=todo[path]: Path(tmp).write_text(text, encoding="utf-8"))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcclib.running.reference", description=__doc__)
    ap.add_argument("--check", action="store_true", help="only say which generated files are stale (exit 1 if any)")
    a = ap.parse_args(argv)
    try:
        if a.check:
            old = stale()
            for path in old:
                print(f"stale: {paths.relative_to_root(path)} (run: make notebooks)", file=sys.stderr)
            return 1 if old else 0
        for path in write():
            print(f"wrote {paths.relative_to_root(path)}")
    except (ReferenceError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
