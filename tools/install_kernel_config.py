"""Copy jupyter-config/ipython_kernel_config.py into this environment's IPython settings folder,
``{sys.prefix}/etc/ipython`` (what a wheel of tcclib installs as data-files; ``pip install -e``
leaves data-files out).  A file of that name that is not ours is left alone, with a line saying so.

    python tools/install_kernel_config.py
"""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "jupyter-config" / "ipython_kernel_config.py"
MARK = "ipykernel settings that tcclib installs"


def install(prefix: Path = Path(sys.prefix)) -> Path | None:
    """The installed file's path, or None where a file of another origin is there already."""
    target = prefix / "etc" / "ipython" / SOURCE.name
    if target.is_file() and MARK not in target.read_text(errors="replace"):
        print(f"{target} exists and is not tcclib's: left as it is (see {SOURCE.name})", file=sys.stderr)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(SOURCE.read_text())
    return target


if __name__ == "__main__":
    install()
