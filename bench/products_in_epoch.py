"""How fast an epoch's matrix products run inside the epoch, against the same calls run alone.

    python bench/products_in_epoch.py --dataset credit-g --methods vime
    python bench/products_in_epoch.py --operand-sets         # clean products, cache warm or not

It builds the ensemble ``profile_epoch.py`` builds (every seed of ``--methods`` at the published
settings), runs one warm-up epoch, then ``--epochs`` epochs in which every batched product
(``bmm``, ``baddbmm``, ``mm``, ``addmm``) is timed where it runs and kept: its operands copied
with their strides, as the epoch passed them.  Then the kept calls run again, once in the epoch's
order and each alone (best of 5), and it prints the three rates, per call shape too.  The
operands are the epoch's own (values, shapes, strides), so a layout the epoch passes and a clean
benchmark would not is timed as it is.

``--operand-sets`` times one ``[8, 256, 256] x [8, 256, 256]`` product (the hidden layer's, batch
256) cycling through 1 to 16 sets of operands (6 MiB each with the output, up to 96 MiB: past the
caches), then on one set with a 8-64 MiB buffer written between calls: whether the products lose
their rate when their operands are not in the cache.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_epoch  # noqa: E402  (sets the sweep's allocator before torch is imported)
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from tcclib.method import training  # noqa: E402
from tcclib.method.config import Config  # noqa: E402
from tcclib.running import params as param_files  # noqa: E402

PRODUCTS = {
    torch.ops.aten.bmm.default,
    torch.ops.aten.baddbmm.default,
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
}


class ProductCalls(TorchDispatchMode):
    """Times every product where it runs and keeps a copy of its call; times the rest in total."""

    def __init__(self):
        super().__init__()
        self.calls: list[tuple] = []  # (operator, operands, keyword arguments, seconds in the epoch)
        self.other_seconds = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        start = time.perf_counter()
        out = func(*args, **kwargs)
        seconds = time.perf_counter() - start
        if func in PRODUCTS:
            kept = [_copy_with_strides(a) if isinstance(a, torch.Tensor) else a for a in args]
            self.calls.append((func, kept, dict(kwargs), seconds))
        else:
            self.other_seconds += seconds
        return out


def _copy_with_strides(tensor: torch.Tensor) -> torch.Tensor:
    copy = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device)
    return copy.copy_(tensor.detach())


def product_flop(func, args) -> int:
    """Multiply-adds x 2 of one kept product call."""
    a, b = (args[0], args[1]) if func in (torch.ops.aten.bmm.default, torch.ops.aten.mm.default) else args[1:3]
    if a.dim() == 3:
        return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    return 2 * a.shape[0] * a.shape[1] * b.shape[1]


def _seconds(func, args, kwargs) -> float:
    start = time.perf_counter()
    func(*args, **kwargs)
    return time.perf_counter() - start


def replay(dataset: str, methods: str, epochs: int, data_dir) -> None:
    cfg = Config(progress=False, methods=tuple(methods.split(",")))
    torch.set_float32_matmul_precision(training.float32_precision(cfg))
    pt, _ = profile_epoch.build(dataset, cfg, data_dir)
    pt.run_epoch()  # warm-up (and the refresh before epoch 0)
    calls, other = [], 0.0
    for epoch in range(epochs):
        with ProductCalls() as capture:
            pt.contrastive_epoch(epoch)
        calls += capture.calls
        other += capture.other_seconds
    in_order = [_seconds(func, args, kwargs) for func, args, kwargs, _ in calls]
    alone = [min(_seconds(func, args, kwargs) for _ in range(5)) for func, args, kwargs, _ in calls]
    in_epoch = [seconds for *_, seconds in calls]
    gflop = sum(product_flop(func, args) for func, args, *_ in calls) / 1e9

    def line(what, seconds):
        return f"{what:<34}{1000 * seconds / epochs:8.1f} ms an epoch, {gflop / seconds:5.0f} GFLOP/s"

    print(
        f"# {dataset}, methods {methods}: {pt.Kp} members, {len(calls) // epochs} products and "
        f"{gflop / epochs:.2f} GFLOP an epoch, {epochs} epochs; threads {torch.get_num_threads()}"
    )
    print(line("the products in the epoch", sum(in_epoch)))
    print(line("the same calls again, in order", sum(in_order)))
    print(line("each call alone, best of 5", sum(alone)))
    print(f"{'every other operator in the epoch':<34}{1000 * other / epochs:8.1f} ms an epoch (timed one by one)")
    groups = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0])
    for (func, args, _, seconds), again, best in zip(calls, in_order, alone):
        operands = tuple((tuple(t.shape), tuple(t.stride())) for t in args if isinstance(t, torch.Tensor))
        group = groups[(func.__name__.split(".")[0], operands)]
        group[0] += 1
        group[1] += seconds
        group[2] += again
        group[3] += best
        group[4] += product_flop(func, args)
    header = f"{'operator':<9}{'calls':>6}{'epoch ms':>10}{'again':>8}{'alone':>8}{'GFLOP/s':>9}{'alone':>7}"
    print(f"\n{header}  operands (shape, strides)")
    for (name, operands), (n, seconds, again, best, flop) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(
            f"{name:<9}{n:>6}{1000 * seconds:>10.2f}{1000 * again:>8.2f}{1000 * best:>8.2f}"
            f"{flop / seconds / 1e9:>9.0f}{flop / best / 1e9:>7.0f}  {operands}"
        )


def operand_sets(members: int = 8, rows: int = 256, width: int = 256, calls: int = 60, reps: int = 5) -> None:
    flop = 2 * members * rows * width * width

    def rate(sets: int, written: torch.Tensor | None = None) -> str:
        operands = [
            (torch.randn(members, rows, width), torch.randn(members, width, width), torch.empty(members, rows, width))
            for _ in range(sets)
        ]
        for i in range(5):
            torch.bmm(*operands[i % sets][:2], out=operands[i % sets][2])
        per_call = []
        for _ in range(reps):
            total = 0.0
            for i in range(calls):
                if written is not None:
                    written.add_(1.0)
                a, b, out = operands[i % sets]
                start = time.perf_counter()
                torch.bmm(a, b, out=out)
                total += time.perf_counter() - start
            per_call.append(total / calls)
        per_call.sort()
        return f"best {flop / per_call[0] / 1e9:5.0f} GFLOP/s, median {flop / per_call[len(per_call) // 2] / 1e9:5.0f}"

    print(f"# bmm [{members}, {rows}, {width}] x [{members}, {width}, {width}], threads {torch.get_num_threads()}")
    for sets in (1, 2, 4, 8, 16):
        print(f"{sets:2d} operand sets ({6 * sets:3d} MiB) in turn:            {rate(sets)}")
    for mib in (8, 32, 64):
        written = torch.zeros(mib * 2**20 // 4)
        print(f" 1 operand set, {mib:2d} MiB written between calls: {rate(1, written)}")
        print(f" 8 operand sets, {mib:2d} MiB written between calls: {rate(8, written)}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="credit-g")
    ap.add_argument("--methods", default="vime")
    ap.add_argument("--epochs", type=int, default=3, help="epochs captured after one warm-up epoch")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--operand-sets", action="store_true", help="time clean products with warm and cold operands")
    args = ap.parse_args(argv)
    if args.operand_sets:
        operand_sets()
        return
    if args.epochs < 1:
        ap.error(f"--epochs must be at least 1, got {args.epochs}")
    try:
        data_dir, _ = param_files.data_folder(args.data_dir, where="products_in_epoch")
    except param_files.ParamsError as e:
        ap.error(str(e))
    replay(args.dataset, args.methods, args.epochs, data_dir)


if __name__ == "__main__":
    main()
