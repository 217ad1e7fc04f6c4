"""Where a pretraining epoch's seconds go, and how close its arithmetic runs to this CPU's speed.

    python bench/profile_epoch.py                        # breast_cancer, the paper set's 7 methods
    python bench/profile_epoch.py --dataset mfeat-fourier --epochs 3
    python bench/profile_epoch.py --precision medium     # bfloat16 inside float32 matmuls (opt-in)

It builds the same ensemble the run builds (``pretraining.Pretraining`` on every seed x pretrained
method at the published settings, the first seed's real importance matrix standing in for every
seed's, as ``bench_epoch.py`` does) and runs ``--epochs`` contrastive epochs after one warm-up
epoch, timing each part of the training core:

* views: data order, masks (uniform and correlation sampler), donor rows, corruption, one-hot;
* forward: the encoder and projection head (``StackedMLP.__call__``);
* loss: NT-Xent's forward (similarities, softmax);
* backward: autograd through the MLPs plus NT-Xent's hand-written backward;
* optimiser: the fused Adam step; rest: batching, gathers, bookkeeping;
* refresh: one pseudo-label refresh (100 head epochs), timed apart and amortised over
  ``pseudo_every`` epochs.

Then it counts the floating-point work of an epoch's matrix products (encoder and head, forward and
backward; the loss's three ``[2B, 2B]`` products; under another objective, ``--methods vime`` say,
its own products, :func:`step_products`, and its loss's elementwise work falls in "rest") and
compares the achieved rate with the best rate this CPU reaches on one clean ``baddbmm`` of the
ensemble's own hidden-layer shape: the practical ceiling of the exact float32 path.  From that it
prints the lowest time per seed-method epoch the arithmetic allows, next to the 15 ms target of
issue 20.  ``--ops`` adds torch.profiler's table of the top operators of one epoch.

``--launches`` prints the launch structure instead (issue 47), on any machine: torch operators
per pretraining epoch (every aten call at torch's dispatcher, which is what a GPU launches one
kernel or more for; "kernels" leaves out the views, which launch nothing) and host reads per epoch
(``.item()``/``int()``/``bool()`` on a tensor, ``.tolist()``, ``.numpy()``), for 1 and for 8 seeds
of the same methods, under each ``draws`` scheme, the refresh amortised over ``pseudo_every``:

    python bench/profile_epoch.py --launches                        # the paper set's 7 methods
    python bench/profile_epoch.py --launches --methods random,class,oracle,class_most
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcclib.util.threads import use_allocator  # noqa: E402

# the allocator settings the sweep gives its kernels (TCC_ALLOCATOR=system: none), before torch
ALLOCATOR = use_allocator()

import torch  # noqa: E402

from tcclib.data.encoding import TensorTable  # noqa: E402
from tcclib.data.preprocess import prepare  # noqa: E402
from tcclib.data.sources import Dataset, load_dataset  # noqa: E402
from tcclib.method import losses, model, objectives, pretraining, training  # noqa: E402
from tcclib.method.config import MATMUL_PRECISIONS, PAPER_METHODS, PAPER_SEEDS, Config  # noqa: E402
from tcclib.method.correlation import importance_matrix  # noqa: E402
from tcclib.method.model import StackedMLP  # noqa: E402
from tcclib.running import params as param_files  # noqa: E402

NARROW = 32  # products with a side under this many are timed in all four operand layouts
TARGET_MS = 15.0  # issue 20: breast_cancer, float32, per seed-method epoch


class Clock:
    """Wall seconds per part; nested parts are subtracted from their parent ("self" time)."""

    def __init__(self):
        self.total = defaultdict(float)
        self.stack: list[list] = []

    def wrap(self, part, fn):
        def timed(*a, **kw):
            self.stack.append([part, time.perf_counter(), 0.0])
            try:
                return fn(*a, **kw)
            finally:
                p, t0, inner = self.stack.pop()
                dt = time.perf_counter() - t0
                self.total[p] += dt - inner
                if self.stack:
                    self.stack[-1][2] += dt

        return timed


def build(dataset, cfg: Config, data_dir=None):
    """The run's ``pretraining.Pretraining`` for ``dataset`` (a name, an OpenML id or a Dataset) and its
    stacked table."""
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    prep = prepare(ds, cfg.seeds, cfg.test_fraction, cfg.labeled_fraction)
    sp = prep.splits[0]
    W0 = importance_matrix(sp, cfg)
    imp = np.stack([W0] * len(cfg.seeds))
    tab = TensorTable.from_prepared(prep, cfg.device)
    layout = training.member_layout(
        tab, [s.seed for s in prep.splits], [s.n_features for s in prep.splits], cfg.methods
    )
    gens = training.training_generators(layout, cfg.device)
    seed_all = layout.seed_index(cfg.device)
    anchors = tab.encode(tab.raw_train[seed_all], seed_all)
    return pretraining.Pretraining(tab, layout, cfg, imp, gens, anchors, prep.name), tab


def epoch_flops(pt: pretraining.Pretraining, tab: TensorTable, cfg: Config) -> float:
    """Floating-point operations of one pretraining epoch's matrix products (all members), under
    their objective (:func:`step_products`)."""
    return float(
        sum(
            2 * K * m * k * n
            for a, b in pt.batches
            for K, m, k, n in step_products(pt.objective, pt.Kp, b - a, tab.width, pt.M, cfg)
        )
    )


def _products(K: int, rows: int, dims: list[int], loss: bool, backward: bool = True) -> list[tuple]:
    """The batched matrix products ``(K, m, k, n)`` of one step on ``rows`` rows through a stacked
    MLP of layer widths ``dims`` (forward; with ``backward`` the input gradients of every layer
    but the first and every weight gradient), and with ``loss`` NT-Xent's three ``[rows, rows]``
    products (``S = u u^T``; ``P u`` and ``P^T u`` in its backward)."""
    out = []
    for a, b in zip(dims[:-1], dims[1:]):
        out.append((K, rows, a, b))  # forward
        if backward:
            out.append((K, a, rows, b))  # weight gradient
    if backward:
        out += [(K, rows, b, a) for a, b in zip(dims[1:-1], dims[2:])]  # input gradients (not the first layer's)
    if loss:
        H = dims[-1]
        out += [(K, rows, H, rows), (K, rows, rows, H), (K, rows, rows, H)]
    return out


def _operand(K: int, rows: int, cols: int, transposed: bool, device, dtype) -> torch.Tensor:
    """A random ``[K, rows, cols]`` operand, stored row by row or (``transposed``) as the transposed
    view of a ``[K, cols, rows]`` tensor, as autograd hands a product its transposed operands."""
    if transposed:
        return torch.randn(K, cols, rows, device=device).to(dtype).transpose(1, 2)
    return torch.randn(K, rows, cols, device=device).to(dtype)


class ProductTimer:
    """Times torch's ``bmm`` on products ``(K, m, k, n)``, each alone on random operands of its
    shape, allocated once per shape and kept (so repeated passes time the products, not the
    allocation).

    A narrow product (a side under ``NARROW``) is first timed in each of the four ways its operands
    can be laid out (either stored transposed) and from then on in the fastest: a pseudo-label
    head's 2-column output layer runs about 5x faster with its weights stored transposed.  The wide
    ones run at the same rate in all four (measured on the paper set's shapes): one layout."""

    def __init__(self, device="cpu", dtype=torch.float32):
        self.device, self.dtype = device, dtype
        self.sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
        self.operands: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def gib(self) -> float:
        """Memory the kept operands take."""
        return sum(t.untyped_storage().nbytes() for pair in self.operands.values() for t in pair) / 2**30

    def seconds(self, shape: tuple) -> float:
        """One timed ``bmm`` of ``shape`` in its chosen layout."""
        a, b = self._operands(shape)
        self.sync()
        t = time.perf_counter()
        torch.bmm(a, b)
        self.sync()
        return time.perf_counter() - t

    def _operands(self, shape: tuple) -> tuple[torch.Tensor, torch.Tensor]:
        if shape not in self.operands:
            K, m, k, n = shape
            layouts = [(False, False)]
            if min(m, k, n) < NARROW:
                layouts += [(False, True), (True, False), (True, True)]
            best = None
            for a_transposed, b_transposed in layouts:
                pair = (
                    _operand(K, m, k, a_transposed, self.device, self.dtype),
                    _operand(K, k, n, b_transposed, self.device, self.dtype),
                )
                self.operands[shape] = pair
                self.seconds(shape)  # (a first call: its buffers, the library's dispatch)
                took = min(self.seconds(shape) for _ in range(3)) if len(layouts) > 1 else 0.0
                if best is None or took < best[0]:
                    best = (took, pair)
            self.operands[shape] = best[1]
        return self.operands[shape]


@dataclass
class EpochProducts:
    """The matrix products of one pretraining epoch: ``contrastive`` (count, shape) pairs, every
    batch's; ``refresh`` (weight, shape) pairs, the pseudo-label refresh's products, each weighted
    by its steps per epoch amortised (``head_epochs / pseudo_every``); and their GFLOP."""

    contrastive: list[tuple[int, tuple]]
    refresh: list[tuple[float, tuple]]
    gflop: float

    def seconds(self, timer: ProductTimer, reps: int = 1) -> dict:
        """``{"contrastive": s, "refresh": s, "total": s}`` per epoch: each product timed alone,
        best of ``reps`` (1: one pass, the rate of the moment)."""
        out = {}
        for part in ("contrastive", "refresh"):
            out[part] = sum(w * min(timer.seconds(shape) for _ in range(reps)) for w, shape in getattr(self, part))
        out["total"] = out["contrastive"] + out["refresh"]
        return out


def epoch_products(
    members: int,
    n_rows: int,
    n_labeled: int,
    pseudo_members: int,
    width: int,
    n_classes: int,
    cfg: Config,
    objective=None,
    n_features: int | None = None,
) -> EpochProducts:
    """The products of an epoch for ``members`` pretrained members on ``n_rows`` rows (every batch of
    the pretraining epoch: :func:`step_products` of their ``objective``, NT-Xent by default) and of
    the amortised pseudo-label refresh (``head_epochs`` epochs of ``pseudo_members`` heads on
    ``n_labeled`` rows every ``pseudo_every`` epochs).  ``n_features``: the table's raw columns
    (VIME's mask head).  The refresh's heads read the embedding: every encoder layer's for an
    objective whose ``embedding`` is the deep stack."""
    deep = objective is not None and objectives.deep_stack(objective)
    embedding = cfg.hidden_dim * (cfg.encoder_depth if deep else 1)
    head = [embedding] + [cfg.hidden_dim] * (cfg.head_depth - 1) + [n_classes]
    sizes: dict[int, int] = {}
    for a, b in model.batches(n_rows, cfg.batch_size):
        sizes[b - a] = sizes.get(b - a, 0) + 1
    contrastive = [
        (count, shape)
        for b, count in sizes.items()
        for shape in step_products(objective, members, b, width, n_features or width, cfg)
    ]
    refresh = []
    if pseudo_members and n_labeled:
        per = cfg.head_epochs / cfg.pseudo_every
        for a, b in model.batches(n_labeled, cfg.batch_size):
            refresh += [(per, shape) for shape in _products(pseudo_members, b - a, head, loss=False)]
    gflop = sum(w * 2 * K * m * k * n for w, (K, m, k, n) in contrastive + refresh) / 1e9
    return EpochProducts(contrastive, refresh, gflop)


def step_products(objective, K: int, b: int, width: int, n_features: int, cfg: Config) -> list[tuple]:
    """The batched matrix products of one pretraining step of ``K`` members on ``b`` rows under
    ``objective`` (None: NT-Xent): the encoder on the rows it reads, the objective's heads (forward,
    weight and input gradients) and its loss's products.  The built-in objectives' classes only
    (whatever their name and switches: SubTab's LeakyReLU projection has the same two layers'
    products, VIME's sigmoid outputs no other product): another has no known ceiling (a
    :class:`ValueError`)."""
    H = cfg.hidden_dim
    encoder = [width] + [H] * cfg.encoder_depth
    name = "ntxent" if objective is None else _BUILT_IN_CLASSES.get(type(objective), objective.name)
    if name == "ntxent":  # anchors and views (2b rows) through encoder and projection, NT-Xent's products
        return _products(K, 2 * b, encoder + [H] * cfg.head_depth, True)
    if name == "vime":  # the view (b rows); the mask and feature estimators
        return _products(K, b, encoder, False) + _head(K, b, [H, n_features]) + _head(K, b, [H, width])
    if name == "dae":  # the view; the decoder
        return _products(K, b, encoder, False) + _head(K, b, [H, width])
    if name == "subtab":  # V subsets (V b rows); projection, decoder; NT-Xent of all pairs from one Gram
        rows = objective.n_subsets * b
        out = _products(K, rows, encoder, False) + _head(K, rows, [H, H, H]) + _head(K, rows, [H, width])
        return out + [(K, rows, H, rows), (K, rows, rows, H)]  # (losses.nt_xent_subsets: forward, backward)
    raise ValueError(f"objective {name!r}: its products are not known here (the built-in objectives' only)")


_BUILT_IN_CLASSES = {
    objectives.NTXent: "ntxent",
    objectives.VIME: "vime",
    objectives.DenoisingAutoencoder: "dae",
    objectives.SubTab: "subtab",
}
"""The product layouts :func:`step_products` knows, by the objective's exact class (a subclass may
compute anything)."""


def _head(K: int, rows: int, dims: list[int]) -> list[tuple]:
    """A head's products on the encoder's output: forward, weight gradients and every layer's
    input gradient (the first's too: it flows back into the encoder)."""
    out = []
    for a, b in zip(dims[:-1], dims[1:]):
        out += [(K, rows, a, b), (K, a, rows, b), (K, rows, b, a)]
    return out


def precision_dtype(cfg: Config) -> torch.dtype:
    """The dtype of the networks' products under ``cfg.matmul_precision``."""
    return torch.bfloat16 if cfg.matmul_precision == "bf16" else torch.float32


def ceiling_seconds(
    members: int,
    n_rows: int,
    n_labeled: int,
    pseudo_members: int,
    width: int,
    n_classes: int,
    cfg: Config,
    device="cpu",
    reps: int = 5,
) -> dict:
    """The epoch's arithmetic ceiling on this machine: its products (:func:`epoch_products`) at the
    best rate (of ``reps``) torch's batched matmul reaches here on each of their shapes
    (:class:`ProductTimer`).  Returns ``{"contrastive": s, "refresh": s, "total": s, "gflop": ...}``
    per epoch."""
    products = epoch_products(members, n_rows, n_labeled, pseudo_members, width, n_classes, cfg)
    out = products.seconds(ProductTimer(device, precision_dtype(cfg)), reps)
    return dict(out, gflop=products.gflop)


def ceiling_dtype(precision: str) -> str:
    return "bfloat16 operands" if precision == "bf16" else f"float32, precision {precision}"


def ceiling_gflops(pt: pretraining.Pretraining, cfg: Config, reps: int = 20) -> float:
    """Best GFLOP/s of one baddbmm of the ensemble's hidden-layer shape on this CPU, in the
    precision the run's products use."""
    H, B = cfg.hidden_dim, 2 * min(cfg.batch_size, pt.N)
    dt = torch.bfloat16 if cfg.matmul_precision == "bf16" else torch.float32
    x = torch.randn(pt.Kp, B, H).to(dt)
    w = torch.randn(pt.Kp, H, H).to(dt)
    b = torch.randn(pt.Kp, 1, H).to(dt)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        torch.baddbmm(b, x, w)
        best = min(best, time.perf_counter() - t)
    return 2 * pt.Kp * B * H * H / best / 1e9


class OperatorCount:
    """Counts torch's operator calls (at the dispatcher) and host reads while active."""

    READS = ("tolist", "numpy", "item")

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counter.ops += 1
                counter.kernels += not func.is_view
                counter.reads += func is torch.ops.aten._local_scalar_dense.default
                return func(*args, **(kwargs or {}))

        self.mode = Mode()
        self.ops = self.kernels = self.reads = 0
        self.originals = {}

    def _patch_reads(self):
        for name in ("tolist", "numpy"):  # (no dispatcher call on the CPU; a device-to-host copy on a GPU)
            original = getattr(torch.Tensor, name)
            self.originals[name] = original

            def counted(tensor, *a, _original=original, **kw):
                self.reads += 1
                return _original(tensor, *a, **kw)

            setattr(torch.Tensor, name, counted)

    def __enter__(self):
        self._patch_reads()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        for name, original in self.originals.items():
            setattr(torch.Tensor, name, original)


def launch_structure(dataset, methods, seeds, scheme, data_dir=None, **settings) -> dict:
    """Operators, kernel operators and host reads of one pretraining epoch of ``methods`` x
    ``seeds`` under draws ``scheme`` (a contrastive epoch after a warm-up one, plus one refresh
    over ``pseudo_every``), at the published settings but ``settings`` (Config's fields)."""
    cfg = Config(progress=False, methods=tuple(methods), seeds=tuple(seeds), draws=scheme, **settings)
    pt, _ = build(dataset, cfg, data_dir)
    pt.run_epoch()  # warm-up (and the refresh before epoch 0)
    with OperatorCount() as epoch:
        pt.contrastive_epoch(1)
    refresh = OperatorCount()
    if pt.pse:
        with refresh:
            pt.refresh_pseudo_labels(pt.epoch)
            pt.contrastive_epoch(2)  # (its read carries the refresh's checks)
        refresh.ops -= epoch.ops  # (the refresh alone, reads included)
        refresh.kernels -= epoch.kernels
        refresh.reads -= epoch.reads
    per = cfg.pseudo_every
    return dict(
        members=pt.Kp,
        ops=epoch.ops + refresh.ops / per,
        kernels=epoch.kernels + refresh.kernels / per,
        contrastive_ops=epoch.ops,
        refresh_ops=refresh.ops,
        reads=epoch.reads,
        refresh_reads=refresh.reads,
    )


def print_launches(args) -> None:
    methods = args.methods.split(",")
    losses.SYNC_FREE = True  # NT-Xent as on a GPU: no read of its underflow flag (the same values)
    print(
        f"# launch structure of a pretraining epoch: {args.dataset}, methods {','.join(methods)}, torch "
        f"{torch.__version__}; operators = aten calls at the dispatcher (kernels: views left out), the "
        f"refresh amortised over pseudo_every; host reads in the contrastive epoch (+ in a refresh epoch), "
        f"NT-Xent in its sync-free form as on a GPU"
    )
    print(
        f"{'draws':<10}{'seeds':>6}{'members':>8}{'ops/epoch':>11}{'kernels':>9}{'epoch ops':>10}"
        f"{'refresh ops':>12}{'reads':>6}{'+refresh':>9}"
    )
    rows = {}
    for scheme in ("generator", "counter"):
        for n in (1, 8):
            r = launch_structure(args.dataset, methods, PAPER_SEEDS[:n], scheme, args.data_dir)
            rows[scheme, n] = r
            print(
                f"{scheme:<10}{n:>6}{r['members']:>8}{r['ops']:>11.0f}{r['kernels']:>9.0f}{r['contrastive_ops']:>10}"
                f"{r['refresh_ops']:>12}{r['reads']:>6}{r['refresh_reads']:>9}"
            )
    for scheme in ("generator", "counter"):
        ratio = rows[scheme, 8]["ops"] / rows[scheme, 1]["ops"]
        print(f"{scheme}: 8 seeds / 1 seed = x{ratio:.2f} operators per epoch")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="breast_cancer")
    ap.add_argument("--epochs", type=int, default=5, help="epochs timed after one warm-up epoch")
    ap.add_argument(
        "--precision",
        default="highest",
        choices=MATMUL_PRECISIONS,
        help="highest: exact float32 (default); bf16: the networks' products in bfloat16",
    )
    ap.add_argument("--methods", default=",".join(PAPER_METHODS + ("class_most_published",)))
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--ops", action="store_true", help="also print torch.profiler's top operators")
    ap.add_argument(
        "--launches", action="store_true", help="print operators and host reads per epoch, 1 vs 8 seeds, per draws"
    )
    ap.add_argument("--draws", default="generator", choices=("generator", "counter"), help="the draws scheme timed")
    args = ap.parse_args(argv)
    try:  # (as the sweep finds it: --data-dir, $TCC_DATA_DIR, else ../shared beside the checkout)
        args.data_dir, _ = param_files.data_folder(args.data_dir, where="profile_epoch")
    except param_files.ParamsError as e:
        ap.error(str(e))
    if args.launches:
        print_launches(args)
        return
    if args.epochs < 1:
        ap.error(f"--epochs must be at least 1, got {args.epochs}")
    cfg = Config(
        progress=False, matmul_precision=args.precision, methods=tuple(args.methods.split(",")), draws=args.draws
    )
    torch.set_float32_matmul_precision(training.float32_precision(cfg))
    print(
        f"# profile of a contrastive epoch: {args.dataset}, torch {torch.__version__}, threads "
        f"{torch.get_num_threads()}, cores {os.cpu_count()}, {platform.machine()}, matmul precision "
        f"{args.precision}, allocator {'heap+THP' if ALLOCATOR else 'system'}, load {os.getloadavg()[0]:.1f}"
    )
    pt, tab = build(args.dataset, cfg, args.data_dir)
    pt.run_epoch()  # warm-up (and the refresh before epoch 0)

    clock = Clock()
    originals = {}

    def patch(obj, attr, part):
        originals[(obj, attr)] = getattr(obj, attr)
        setattr(obj, attr, clock.wrap(part, getattr(obj, attr)))

    patch(pretraining.Pretraining, "draw_views", "views")
    patch(StackedMLP, "__call__", "forward")
    patch(objectives, "nt_xent_pairs", "loss")  # (where NT-Xent and SubTab call it)
    patch(torch.Tensor, "backward", "backward")
    patch(pt.opt, "step", "optimiser")
    t = time.perf_counter()
    for e in range(args.epochs):
        pt.contrastive_epoch(e)
    wall = (time.perf_counter() - t) / args.epochs
    for (obj, attr), fn in originals.items():
        setattr(obj, attr, fn)

    t = time.perf_counter()
    if pt.pse:
        pt.refresh_pseudo_labels(pt.epoch)
    refresh = time.perf_counter() - t
    parts = {k: v / args.epochs for k, v in clock.total.items()}
    parts["rest"] = wall - sum(parts.values())
    parts["refresh / pseudo_every"] = refresh / cfg.pseudo_every
    per_epoch = wall + parts["refresh / pseudo_every"]
    print(
        f"{pt.Kp} pretrained members, {pt.N} training rows, width {tab.width}, {len(pt.batches)} "
        f"batches per epoch; {per_epoch:.3f} s per epoch with the amortised refresh "
        f"= {per_epoch / pt.Kp * 1000:.1f} ms per seed-method epoch"
    )
    print(f"{'part':<24}{'s/epoch':>9}{'share':>8}")
    for k in ["views", "forward", "loss", "backward", "optimiser", "rest", "refresh / pseudo_every"]:
        v = parts.get(k, 0.0)
        print(f"{k:<24}{v:>9.3f}{100 * v / per_epoch:>7.1f}%")

    flops = epoch_flops(pt, tab, cfg)
    refresh_flops = 0.0
    if pt.pse:  # the refresh's products (its 100 head epochs), counted by torch
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as fc:
            pt.refresh_pseudo_labels(pt.epoch)
        refresh_flops = fc.get_total_flops() / cfg.pseudo_every
    ceil = ceiling_gflops(pt, cfg)
    mm = parts.get("forward", 0) + parts.get("loss", 0) + parts.get("backward", 0)
    floor_ms = (flops + refresh_flops) / (ceil * 1e9) / pt.Kp * 1000
    print(
        f"\nmatrix products: {flops / 1e9:.1f} GFLOP per epoch, + {refresh_flops / 1e9:.1f} of the amortised "
        f"refresh; forward + loss + backward run at {flops / mm / 1e9:.0f} GFLOP/s, the whole epoch "
        f"at {(flops + refresh_flops) / per_epoch / 1e9:.0f} GFLOP/s"
    )
    print(
        f"ceiling: one clean baddbmm [{pt.Kp}, {2 * min(cfg.batch_size, pt.N)}, {cfg.hidden_dim}] x "
        f"[{cfg.hidden_dim}, {cfg.hidden_dim}] reaches {ceil:.0f} GFLOP/s here ({ceiling_dtype(args.precision)})"
    )
    print(
        f"lowest time the arithmetic allows at that rate: {floor_ms:.1f} ms per seed-method epoch "
        f"(products only, refresh included, nothing else), against {per_epoch / pt.Kp * 1000:.1f} measured"
        + (f" and the {TARGET_MS:.0f} ms target" if args.dataset == "breast_cancer" else "")
    )

    if args.ops:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            pt.contrastive_epoch(0)
        print("\n" + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
