"""``python -m tcclib PARAMS [options]``: run a parameter set (:mod:`tcclib.running.sweep`), or, for
a set with a ``screen:`` section (``params/screen.yaml``), screen new methods against the stored
built-ins (:mod:`tcclib.running.screen`) and write the verdict (:mod:`tcclib.paper.verdict`)."""

import sys

from tcclib.paper import verdict
from tcclib.running import params as param_files
from tcclib.running import screen
from tcclib.running.sweep import main as sweep_main
from tcclib.running.sweep import parser


def main(argv=None) -> int:
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
