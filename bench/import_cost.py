"""CPU seconds (user + sys) of the commands that train nothing, each the median of 3 fresh
processes: ``import tcclib``, ``python -m tcclib --help`` and a misspelled setting's one-line
error (a parameter file with ``epoch: 5``, ``--check``); and papermill (nbformat, jsonschema) as
a process that runs a notebook loads it, with jsonschema's IRI grammar deferred
(:mod:`tcclib.util.iri_grammar`), beside a plain ``import papermill`` that builds it.

    python bench/import_cost.py                 # this checkout
    python bench/import_cost.py --root ../main  # another checkout (e.g. before a change)

Targets (issue 53): 1.0 s, 1.5 s and 1.5 s.  The figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BAD = "name: bad\ndatasets: [breast_cancer]\nconfig:\n  epoch: 5\n"
DEFERRED = "from tcclib.util import iri_grammar; iri_grammar.defer(); import papermill"


def cpu_seconds(argv: list[str], env: dict, cwd: Path) -> float:
    """The CPU seconds (user + sys) one run of ``argv`` took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=str(ROOT), help="the checkout to measure (default: this one)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    env = {**os.environ, "PYTHONPATH": str(root)}
    with tempfile.TemporaryDirectory() as folder:
        bad = Path(folder) / "bad.yaml"
        bad.write_text(BAD)
        commands = {
            "import tcclib": [sys.executable, "-c", "import tcclib"],
            "python -m tcclib --help": [sys.executable, "-m", "tcclib", "--help"],
            "a misspelled setting (--check)": [sys.executable, "-m", "tcclib", str(bad), "--check"],
            "papermill, as a sweep loads it": [sys.executable, "-c", DEFERRED],
            "papermill, plain import": [sys.executable, "-c", "import papermill"],
        }
        print(f"{root} ({args.repeat} runs each, the median)")
        for name, command in commands.items():
            runs = [cpu_seconds(command, env, root) for _ in range(args.repeat)]
            print(f"  {name:34s} {statistics.median(runs):5.2f} s CPU  (runs: {', '.join(f'{r:.2f}' for r in runs)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
