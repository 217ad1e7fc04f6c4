"""Which fidelity switch moves a method towards the paper on one dataset?

    python tools/switch_effects.py eucalyptus no_pretrain
    python tools/switch_effects.py eucalyptus class class_least --data-dir ../shared/datasets/openml-cc18
    python tools/switch_effects.py dresses-sales class --stores outputs/paper outputs/authors

Runs the methods at the published settings (8 seeds) with our defaults, with each fidelity
switch that reaches them set alone to the authors' value, and with all of them (``fidelity:
authors``), and prints each run's mean next to the paper's (:func:`tcclib.running.switches.switch_runs`
trains, :func:`tcclib.paper.report.switch_effects` compares; accuracy in %).  Nothing is stored:
the runs train what they need (``no_pretrain`` takes a
minute; a pretrained method the time of its pretraining, once per switch that reaches it);
``--stores`` names set folders whose stored runs are reused where a member's key matches (ours
from the paper set, the authors' mode from its set), so that only the single switches train.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tcclib.method.config import Config  # noqa: E402
from tcclib.paper import tables  # noqa: E402
from tcclib.paper.report import switch_effects  # noqa: E402
from tcclib.running.switches import switch_runs  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("methods", nargs="+")
    ap.add_argument("--data-dir", default=None, help="folder of <did>.arff (default $TCC_DATA_DIR)")
    ap.add_argument(
        "--stores",
        nargs="*",
        default=(),
        help="set folders whose stored runs are reused where they match, e.g. outputs/paper outputs/authors",
    )
    args = ap.parse_args(argv)
    runs = switch_runs(
        args.dataset,
        args.methods,
        Config(progress=False),
        data_dir=args.data_dir,
        stores=args.stores,
        say=lambda line: print(line, file=sys.stderr),
    )
    out = switch_effects(runs, args.methods)
    print(f"# {args.dataset}: {', '.join(args.methods)}, published settings, each switch alone vs the paper\n")
    print(tables.to_markdown(out.round({"paper_mean": 3, "mean": 3, "gap": 3}), index=False))


if __name__ == "__main__":
    main()
