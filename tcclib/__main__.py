"""``python -m tcclib PARAMS [options]``: the command line, :func:`tcclib.running.cli.main`."""

from tcclib.running.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
