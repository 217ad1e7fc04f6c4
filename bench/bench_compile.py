"""Does ``torch.compile`` pay for the contrastive step on this machine?  (``Config.compile``)

    python bench/bench_compile.py                                  # breast_cancer, 1 seed x 2 methods
    python bench/bench_compile.py --seeds 8 --methods random,class,class_most

Builds the run's ``pretraining.Pretraining`` twice on the same data, one with the eager step
(``compile: off``) and one with ``compile: torch_compile``, times the compilation (the compiled
one's first epoch), then alternates contrastive epochs of the two (``--epochs`` each) so that
both see the same machine load, and prints the median seconds per epoch of each, their ratio and
how far the compiled losses are from the eager ones (close, not the same bits).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tcclib.method.config import Config  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from profile_epoch import build  # noqa: E402


def epoch_seconds(pt, epoch: int) -> tuple[float, list[float]]:
    t = time.perf_counter()
    loss = pt.contrastive_epoch(epoch)
    return time.perf_counter() - t, loss


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="breast_cancer")
    ap.add_argument("--seeds", type=int, default=1, help="how many of the paper's seeds")
    ap.add_argument("--methods", default="random,class")
    ap.add_argument("--epochs", type=int, default=5, help="timed epochs of each, alternating")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    base = Config(progress=False, device=args.device, methods=tuple(args.methods.split(",")))
    base = base.replace(seeds=list(base.seeds[: args.seeds]))
    print(
        f"# torch.compile vs eager: {args.dataset}, {args.seeds} seed(s) x {args.methods}, torch "
        f"{torch.__version__}, threads {torch.get_num_threads()}, cores {os.cpu_count()}, "
        f"{platform.machine()}, device {args.device}, load {os.getloadavg()[0]:.1f}"
    )
    eager, _ = build(args.dataset, base.replace(compile="off"))
    compiled, _ = build(args.dataset, base.replace(compile="torch_compile"))
    t = time.perf_counter()
    compiled.contrastive_epoch(0)
    first = time.perf_counter() - t
    eager.contrastive_epoch(0)
    times: dict = {"eager": [], "compiled": []}
    gaps = []
    for e in range(1, args.epochs + 1):
        te, le = epoch_seconds(eager, e)
        tc, lc = epoch_seconds(compiled, e)
        times["eager"].append(te)
        times["compiled"].append(tc)
        gaps.append(max(abs(a - b) for a, b in zip(le, lc)))
    me, mc = statistics.median(times["eager"]), statistics.median(times["compiled"])
    print(f"compiled step's first epoch (compilation included): {first:.1f} s")
    print(
        f"median s per contrastive epoch over {args.epochs}: eager {me:.3f}, compiled {mc:.3f} "
        f"-> compiled/eager {mc / me:.2f} ({pt_members(eager)} members); largest loss gap {max(gaps):.2e}; "
        f"load now {os.getloadavg()[0]:.1f}"
    )


def pt_members(pt) -> int:
    return pt.Kp


if __name__ == "__main__":
    main()
