"""Copy jupyter-config/ipython_kernel_config.py into this environment's IPython settings folder,
``{sys.prefix}/etc/ipython`` (what a wheel of tcclib installs as data-files; ``pip install -e``
leaves data-files out).  A file of that name that is not ours is left alone, with a line saying so.
Where the file cannot be written (a read-only environment, a folder in its place) the command
ends with one line saying what and how to fix it, exit status 1.

    python tools/install_kernel_config.py [PREFIX]      # PREFIX: another environment's (default sys.prefix)
"""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "jupyter-config" / "ipython_kernel_config.py"
MARK = "ipykernel settings that tcclib installs"


class InstallError(OSError):
    """The settings file cannot be written: one line naming the path and the fix."""


def install(prefix: Path = Path(sys.prefix)) -> Path | None:
    """The installed file's path, or None where a file of another origin is there already;
    :class:`InstallError` where it cannot be written."""
    target = Path(prefix) / "etc" / "ipython" / SOURCE.name
    if target.is_dir():
        raise InstallError(
            f"cannot install {SOURCE.name}: {target} is a folder; remove or rename it, then run this again"
        )
    try:
        if target.is_file() and MARK not in target.read_text(errors="replace"):
            print(f"{target} exists and is not tcclib's: left as it is (see {SOURCE.name})", file=sys.stderr)
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(SOURCE.read_text())
    except OSError as e:
        what = e.strerror or type(e).__name__
        where = e.filename or target
        raise InstallError(
            f"cannot install {SOURCE.name} into {target.parent}: {what} ({where}); run this with an environment "
            f"you can write to (a virtualenv of your own), or copy {SOURCE} there by hand (optional: it only "
            f"quiets ipykernel's warning about unencrypted TCP under plain papermill)"
        ) from None
    return target


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        install(Path(argv[0]) if argv else Path(sys.prefix))
    except InstallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
