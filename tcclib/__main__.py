"""``python -m tcclib PARAMS [options]``: run a parameter set (:mod:`tcclib.running.sweep`), or, for
a set with a ``screen:`` section (``params/screen.yaml``), screen new methods against the stored
built-ins (:mod:`tcclib.running.screen`) and write the verdict (:mod:`tcclib.paper.verdict`).

tcclib's own errors (:data:`tcclib.util.errors.SHORT`) end the command short: a bad setting or
plugin with its one line and exit status 2; a rule that breaks its contract, a dataset that
cannot be had and the like with two lines, where the full traceback was written and the error
itself, and exit status 1; ``--traceback`` or ``TCC_TRACEBACK=1`` shows the traceback instead."""

import os
import sys

from tcclib.method import registry
from tcclib.paper import verdict
from tcclib.running import params as param_files
from tcclib.running import screen
from tcclib.running.sweep import main as sweep_main
from tcclib.running.sweep import parser
from tcclib.util import errors

TRACEBACK = "--traceback"
"""The switch that shows a tcclib error's full traceback instead of its two lines."""


def main(argv=None) -> int:
    """:func:`run`, with tcclib's own errors short (their traceback saved, or shown with
    ``--traceback`` / ``TCC_TRACEBACK=1``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if TRACEBACK in argv:
        os.environ[errors.TRACEBACK_ENV] = "1"  # (what a failed dataset's report reads too)
    full = errors.full_tracebacks()
    argv = [a for a in argv if a != TRACEBACK]
    if "-h" in argv or "--help" in argv:
        with_switch().parse_args(argv)  # (prints the help, this switch included, and exits)
    try:
        return run(argv)
    except tuple(errors.SHORT) as e:
        _close_bars()
        if full:
            raise
        if isinstance(e, (errors.ConfigError, registry.RegistryError)):  # a bad input: its line names it
            print(f"error: {errors.error_text(e)}", file=sys.stderr)
            return 2
        note, line = errors.short_lines(e, f"{TRACEBACK} or {errors.TRACEBACK_ENV}=1")
        print(note, file=sys.stderr)
        print(f"error: {line}", file=sys.stderr)
        return 1


def _close_bars() -> None:
    """Close the progress bars the error left open (else tqdm redraws them after its lines)."""
    tqdm = sys.modules.get("tqdm")
    for open_bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ())):
        open_bar.close()


def with_switch():
    """The sweep's parser with :data:`TRACEBACK` (for ``--help``)."""
    p = parser()
    p.add_argument(TRACEBACK, action="store_true", help="show a tcclib error's full traceback (or TCC_TRACEBACK=1)")
    return p


def run(argv) -> int:
    """The sweep, or the screen when the parameter file asks for one."""
    args = parser().parse_args(argv)
    try:
        ps = param_files.load(args.params, args.data_dir, args.plugin)
    except param_files.ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if ps.screen is None:
        return sweep_main(argv)
    code, job, results = screen.command(args, ps)
    if results is None:
        return code
    page = verdict.write(results, list(job.methods), list(job.compared), job.out)
    for line in verdict.sentences(results, list(job.methods), list(job.compared)):
        print(line)
    print(f"verdict: {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
