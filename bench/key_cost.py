"""What keying a user's rule by value costs a run (issue 57's target: under 50 ms per rule per run).

A run computes its user rules' identities once, when it computes its keys
(``tcclib.artifacts.keys.run_keys`` -> ``code_identities``): the code walk, the state walk and the
draws on the fixed probe.  This script times exactly that call for the repository's example rules
and for rules written as users write them (a helper in a second file, a large array in the
rule's state), in a fresh process each (the first call pays what later calls find cached), and
prints the median and the slowest of the repeats.

    python bench/key_cost.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HELPER_RULE = """
import torch
from tcclib.method import registry, rules
import key_cost_helpers as helpers

class Helped(rules.HowRule):
    name = "helped"
    def donors(self, members, state, u):
        k, n_rows, n_features = members.shape
        return helpers.shifted(n_rows, u.device).expand(k, n_rows, n_features).contiguous()

registry.register_method("helped", Helped(), "uniform")
"""

HELPERS = """
import torch
STEP = 3
TABLE = list(range(1000))

def shifted(n_rows, device):
    return (torch.arange(n_rows, device=device).view(1, n_rows, 1) + STEP + TABLE[0]) % n_rows
"""

ARRAY_RULE = """
import numpy as np
import torch
from tcclib.method import registry, rules

class Weighted(rules.HowRule):
    name = "weighted"
    def __init__(self, weights):
        self.weights = weights
    def donors(self, members, state, u):
        return (u * members.shape[1]).long()

registry.register_method("weighted", Weighted(np.random.default_rng(0).random(1_000_000)), "uniform")
"""

MEASURE = """
import json, sys, time
sys.path.insert(0, {folder!r})
from tcclib.method import plugins
from tcclib.method.config import Config
from tcclib.artifacts import keys
plugins.load({plugin!r})
cfg = Config(methods=({method!r},))
times = []
for _ in range({repeats}):
    t = time.perf_counter()
    keys.code_identities(cfg)
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def measure(plugin: Path, method: str, folder: Path, repeats: int) -> list[float]:
    code = MEASURE.format(folder=str(folder), plugin=str(plugin), method=method, repeats=repeats)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "key_cost_helpers.py").write_text(textwrap.dedent(HELPERS))
        (folder / "helped_rule.py").write_text(textwrap.dedent(HELPER_RULE))
        (folder / "weighted_rule.py").write_text(textwrap.dedent(ARRAY_RULE))
        cases = [
            ("examples/nearby_rule.py", ROOT / "examples" / "nearby_rule.py", "nearby"),
            ("examples/knn_rule.py", ROOT / "examples" / "knn_rule.py", "knn"),
            ("a helper module in a second file", folder / "helped_rule.py", "helped"),
            ("a 1,000,000-float array in its state", folder / "weighted_rule.py", "weighted"),
        ]
        print(f"the key of one rule as a run computes it (ms; {args.repeats} repeats, a fresh process each)")
        print(f"{'rule':<40} {'first':>8} {'median':>8} {'slowest':>8}")
        for label, plugin, method in cases:
            times = [t * 1000 for t in measure(plugin, method, folder, args.repeats)]
            print(f"{label:<40} {times[0]:>8.1f} {statistics.median(times):>8.1f} {max(times[1:]):>8.1f}")


if __name__ == "__main__":
    main()
