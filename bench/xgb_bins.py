"""What the opt-in ``xgb_max_bin`` approximation costs and saves: importance models with fewer
histogram bins against the published ones (XGBoost's default 256 bins), on real datasets.

    python bench/xgb_bins.py                                  # diabetes, credit-g, mfeat-fourier
    python bench/xgb_bins.py --datasets MiceProtein --models 12 --bins 64 32

For each dataset it fits, on the first seed's split and at full width (each model predicts one
feature from all the others, the published 100 trees, depth 10, ``hist``), the first ``--models``
importance models (features active in the first two seeds' splits) at the published settings and
at each ``--bins``, as the run fits them (concurrent single-threaded fits, one per core of this
job's share), and prints wall seconds per model and, against the published rows:

* ``TV``: the total-variation distance between the importance rows (each row sums to 1), mean over
  the models;
* ``spearman``: the rank correlation of the rows;
* ``same top``: the share of models whose most important feature is the same.

As a yardstick the same three numbers compare the published rows of the first seed with those of
the second seed's split (another draw of the 80 % training rows): an approximation whose rows move
less than that changes the sampler less than the choice of the split already does.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from tcclib.data.preprocess import prepare  # noqa: E402
from tcclib.data.sources import load_dataset  # noqa: E402
from tcclib.method.config import XGB_MAX_BIN, Config  # noqa: E402
from tcclib.method.correlation import default_jobs, importance_matrix  # noqa: E402


def rows(sp, cfg: Config, only) -> tuple[float, np.ndarray]:
    """Wall seconds per model and the importance rows of the features ``only``."""
    t = time.perf_counter()
    W = importance_matrix(sp, cfg, only=only)
    return (time.perf_counter() - t) / len(only), W[only]


def compare(W: np.ndarray, R: np.ndarray, only) -> dict:
    tv = 0.5 * np.abs(W - R).sum(1)
    rho = [spearmanr(np.delete(w, i), np.delete(r, i)).statistic for w, r, i in zip(W, R, only)]
    return dict(tv=float(tv.mean()), spearman=float(np.mean(rho)), same_top=float(np.mean(W.argmax(1) == R.argmax(1))))


def fmt(c: dict) -> str:
    return f"TV {c['tv']:.3f}  spearman {c['spearman']:.3f}  same top {c['same_top']:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["diabetes", "credit-g", "mfeat-fourier"])
    ap.add_argument("--models", type=int, default=8, help="importance models per dataset (first active features)")
    ap.add_argument("--bins", type=int, nargs="+", default=[64, 32])
    ap.add_argument("--data-dir", default=None, help="folder of <did>.arff (default $TCC_DATA_DIR)")
    args = ap.parse_args(argv)
    cfg = Config(progress=False)
    print(
        f"# importance models: published settings vs xgb_max_bin {args.bins} (default {XGB_MAX_BIN}); "
        f"{default_jobs()} concurrent single-threaded fits, {os.cpu_count()} cores"
    )
    for name in args.datasets:
        ds = load_dataset(name, data_dir=args.data_dir)
        a, b = prepare(ds, cfg.seeds[:2], cfg.test_fraction, cfg.labeled_fraction).splits
        only = np.flatnonzero(a.active & b.active)[: args.models]
        t0, R = rows(a, cfg, only)
        _, S = rows(b, cfg, only)
        print(
            f"{ds.name}: {a.raw_train.shape[0]} training rows, {int(a.active.sum())} features, "
            f"{len(only)} models; published {t0:.3f} s per model; another seed's split: {fmt(compare(S, R, only))}"
        )
        for bins in args.bins:
            t, W = rows(a, cfg.replace(xgb_max_bin=bins), only)
            print(
                f"  xgb_max_bin {bins:>3}: {t:.3f} s per model ({t0 / t:.1f}x)  {fmt(compare(W, R, only))}", flush=True
            )


if __name__ == "__main__":
    main()
