"""``python -m tcclib PARAMS [options]``: run a parameter set (:mod:`tcclib.running.sweep`)."""

from tcclib.running.sweep import main

if __name__ == "__main__":
    raise SystemExit(main())
