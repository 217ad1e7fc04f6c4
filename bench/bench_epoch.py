"""Benchmark: seconds per contrastive epoch of the whole ensemble, and the projected full run.

    python bench/bench_epoch.py                    # breast_cancer + the largest dataset, CPU
    python bench/bench_epoch.py --device cuda      # same on a GPU
    python bench/bench_epoch.py --all              # time every dataset instead of projecting

For one dataset it builds the paper's ensemble (8 seeds x the 6 methods: 40 pretrained members
and 8 no-pretrain ones), runs ``--epochs`` pretraining epochs (default 10: one pseudo-label
refresh with its 100 head epochs, i.e. the published refresh cost amortised exactly) and
prints seconds per epoch for the ensemble and milliseconds per epoch per seed-method.

The projection of the full benchmark (30 datasets x 500 epochs) fits time per epoch as a
linear function of training rows x encoded width on the two measured datasets (``--all``
measures all 30 instead) and adds the final evaluation.  XGBoost importances are computed once
per dataset and seed and cached; their time is reported apart (``--xgb``).
The authors' code takes 3.2 s per contrastive epoch per method on breast_cancer on the
reference 2-core CPU (about 46 days for the full benchmark).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tcclib.config import Config  # noqa: E402
from tcclib.correlation import importance_matrix  # noqa: E402
from tcclib.datasets import list_datasets, load_dataset  # noqa: E402
from tcclib.encoding import TensorTable  # noqa: E402
from tcclib.preprocess import prepare  # noqa: E402
from tcclib.train import run_prepared  # noqa: E402

AUTHORS_S_PER_EPOCH_METHOD = 3.2
PAPER_EPOCHS = 500


def measure(name, cfg: Config, data_dir=None):
    ds = load_dataset(name, data_dir=data_dir)
    prep = prepare(ds, cfg.seeds, cfg.test_fraction, cfg.labeled_fraction)
    M = ds.X.shape[1]
    # timing only: a random importance matrix stands in for XGBoost (same sampler cost)
    rs = np.random.RandomState(0)
    imp = rs.rand(len(cfg.seeds), M, M)
    for W in imp:
        np.fill_diagonal(W, 0)
    imp /= imp.sum(2, keepdims=True)
    out = run_prepared(prep, cfg, imp)
    tab = TensorTable.from_prepared(prep)
    # XGBoost: time the importance models of a few features of one seed
    sp = prep.splits[0]
    few = sp.active.copy()
    few[np.flatnonzero(few)[min(6, int(few.sum())):]] = False
    t = time.perf_counter()
    importance_matrix(dataclasses.replace(sp, active=few), cfg)
    xgb_per_model = (time.perf_counter() - t) / int(few.sum())
    n_pre = sum(1 for m in cfg.methods if m != "no_pretrain") * len(cfg.seeds)
    return dict(name=ds.name, n_train=tab.raw_train.shape[1], width=tab.width, features=M,
                s_per_epoch=out.timings["pretrain_s_per_epoch"], eval_s=out.timings["evaluate_s"],
                members=n_pre, xgb_s=xgb_per_model * M * len(cfg.seeds))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data-dir", default=None, help="folder of <did>.arff (default $TCC_DATA_DIR)")
    ap.add_argument("--all", action="store_true", help="measure all 30 datasets")
    ap.add_argument("--largest", default="mfeat-fourier", help="the large dataset to measure")
    ap.add_argument("--precision", default="highest", choices=["highest", "high", "medium"],
                    help="float32 matmul precision (medium: bfloat16 inside matmuls, AMX/TF32 speed)")
    ap.add_argument("--methods", default="no_pretrain,random,class,oracle,class_least,class_most")
    args = ap.parse_args(argv)
    cfg = Config(epochs=args.epochs, device=args.device, progress=False, matmul_precision=args.precision,
                 methods=tuple(args.methods.split(",")))
    print(f"# tcclib benchmark  torch {torch.__version__}  device {args.device}  "
          f"threads {torch.get_num_threads()}  matmul precision {args.precision}  {platform.processor() or platform.machine()}")
    if args.device.startswith("cuda"):
        print(f"# GPU: {torch.cuda.get_device_name()}")
    names = ["breast_cancer", args.largest]
    if args.all:
        names = list(list_datasets().query("name != 'breast_cancer'").name)
    rows = []
    for n in names:
        t = time.perf_counter()
        r = measure(n, cfg, args.data_dir)
        rows.append(r)
        per = r["s_per_epoch"] / r["members"] * 1000
        print(f"{r['name']:<34} train rows {r['n_train']:>5}  width {r['width']:>4}  "
              f"{r['s_per_epoch']:.3f} s/epoch for {r['members']} members  = {per:.1f} ms per seed-method epoch"
              f"; XGBoost importances {r['xgb_s']:.0f} s   (wall {time.perf_counter() - t:.0f} s)")
    bc = rows[0] if rows[0]["name"] == "breast_cancer" else None
    if bc is not None:
        per = bc["s_per_epoch"] / bc["members"]
        print(f"\nbreast_cancer: {per * 1000:.1f} ms per seed-method epoch; authors' code "
              f"{AUTHORS_S_PER_EPOCH_METHOD * 1000:.0f} ms -> speed-up x{AUTHORS_S_PER_EPOCH_METHOD / per:.0f}")
    # projection over the 30 datasets
    reg = list_datasets().query("name != 'breast_cancer'")
    measured = {r["name"]: r for r in rows}
    xgb_total = 0.0
    if args.all:
        total = sum(r["s_per_epoch"] * PAPER_EPOCHS + r["eval_s"] for r in rows)
        xgb_total = sum(r["xgb_s"] for r in rows)
    else:
        x = np.array([r["n_train"] * r["width"] for r in rows], float)
        y = np.array([r["s_per_epoch"] for r in rows])
        slope = (y[1] - y[0]) / (x[1] - x[0]) if x[1] != x[0] else 0.0
        icpt = y[0] - slope * x[0]
        # XGBoost seconds per model, linear in training rows
        xr = np.array([r["n_train"] for r in rows], float)
        yr = np.array([r["xgb_s"] / (r["features"] * len(cfg.seeds)) for r in rows])
        xs = (yr[1] - yr[0]) / (xr[1] - xr[0]) if xr[1] != xr[0] else 0.0
        total = 0.0
        for name in reg.name:
            if name in measured:
                r = measured[name]
                total += r["s_per_epoch"] * PAPER_EPOCHS + r["eval_s"]
                xgb_total += r["xgb_s"]
                continue
            ds = load_dataset(name, data_dir=args.data_dir)
            prep = prepare(ds, cfg.seeds[:1])
            tab = TensorTable.from_prepared(prep)
            xx = tab.raw_train.shape[1] * tab.width
            total += max(icpt + slope * xx, y.min() * 0.5) * PAPER_EPOCHS + np.mean([r["eval_s"] for r in rows])
            per_model = max(yr[0] + xs * (tab.raw_train.shape[1] - xr[0]), yr.min() * 0.5)
            xgb_total += per_model * ds.X.shape[1] * len(cfg.seeds)
    print(f"projected full benchmark (30 datasets x {len(cfg.seeds)} seeds x {len(cfg.methods)} methods x "
          f"{PAPER_EPOCHS} epochs): training {total / 3600:.2f} h + XGBoost importances "
          f"{xgb_total / 3600:.2f} h = {(total + xgb_total) / 3600:.2f} h on this machine "
          f"({'measured' if args.all else 'linear projection in rows x width'})")


if __name__ == "__main__":
    main()
