"""Page faults of the jobs' allocator settings against glibc's defaults (``tcclib.util.threads``).

    python bench/allocator_faults.py              # 5 fresh processes each way
    python bench/allocator_faults.py --runs 10

Each run is a fresh process that does what every pretraining batch does to memory: one hidden
layer of the 48-member stack (``bmm`` of ``[48, 512, 256]`` by ``[48, 256, 256]``, activations of
24 MiB made and freed), 3 warm-up steps, then the minor page faults of 20 steps
(``getrusage``).  ``job``: started with the variables the sweep gives its jobs
(:func:`tcclib.util.threads.allocator_env`, in the environment from the start); ``runtime``: the
same settings applied by :func:`~tcclib.util.threads.use_allocator` before torch loads, as the
benchmarks do; ``system``: ``TCC_ALLOCATOR=system`` (glibc's defaults).  The counts vary from run
to run with glibc's heap layout and dynamic ``mmap`` threshold and with what else the machine
does, so it prints the fewest, the median and the most of ``--runs`` runs; the test suite checks
only what does not vary (``tests/test_speed.py``: the settings reach a job, a 24 MiB block then
comes from the heap).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcclib.util import threads  # noqa: E402

STEPS = """
import resource, sys
if sys.argv[1] == "runtime":
    from tcclib.util.threads import use_allocator
    use_allocator()
import torch
x, w = torch.randn(48, 512, 256), torch.randn(48, 256, 256)  # a hidden layer of the 48-member stack
def step():  # activations of tens of MiB made and freed, as every batch does
    h = torch.bmm(x, w).relu_()
    g = torch.bmm(h, w) * 0.5
    return (g - h).sum()
for _ in range(3):
    step()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""

WAYS = ("job", "runtime", "system")


def faults(way: str) -> int:
    """The minor page faults of 20 steps in a fresh process set up ``way`` (one of :data:`WAYS`)."""
    clean = {k: v for k, v in os.environ.items() if k not in threads.ALLOCATOR_ENV and k != threads.ALLOCATOR_SWITCH}
    env = {**clean, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    if way == "job":
        env.update(threads.allocator_env(clean))
    elif way == "system":
        env[threads.ALLOCATOR_SWITCH] = "system"
    done = subprocess.run([sys.executable, "-c", STEPS, way], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per setting (default 5)")
    args = ap.parse_args(argv)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.libc_ver()[0]} "
          f"{platform.libc_ver()[1]}; minor page faults of 20 steps, {args.runs} runs each")  # fmt: skip
    for way in WAYS:
        counts = sorted(faults(way) for _ in range(args.runs))
        print(
            f"  {way:8s} fewest {counts[0]:>9,}  median {statistics.median(counts):>11,.0f}  most {counts[-1]:>9,}  "
            f"(runs: {', '.join(f'{c:,}' for c in counts)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
