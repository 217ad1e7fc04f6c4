"""The ``probe`` head against the tuned logistic regression on tables outside the paper's 30.

    python tools/probe_check.py                         # 6 tables, 5 seeds, 100 epochs, 10 % labeled
    python tools/probe_check.py --epochs 20 --seeds 0 1 --tables wine iris

The tables need no download: scikit-learn's bundled ``wine``, ``iris``, ``breast_cancer`` and
``digits``, and two synthetic tables of :func:`tcclib.running.own.synthetic_table` (numeric and
categorical columns, missing values; ``synthetic3``: 3 classes, 1500 rows; ``synthetic5``: 5
classes, 2000 rows, 20 features).  None is one of the paper's 30 (``breast_cancer`` is the demo's
table).  For each table, :func:`tcclib.running.train.run_dataset` runs ``class``, ``random`` and
``no_pretrain`` under the paper's frozen head and under ``probe`` (one pretraining serves both
heads: ``keep_pretrained``), with ``logreg`` and ``logreg_cv`` on the same labeled rows
(``labeled_fraction`` 0.1, the other settings published).  Stored per table and head under
``--out`` (a re-run reuses every stored member), then ``results.csv`` and ``report.md`` there:
the mean per table, and the probe against ``logreg_cv`` over the (table, seed) pairs.  The
committed run is ``outputs/probe_check/`` (``--out outputs/probe_check`` reuses it and trains
nothing; pretraining checkpoints go to ``--cache``, under ``runs/``); docs/estimator.md shows it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tcclib.artifacts import store  # noqa: E402
from tcclib.data.sources import from_frame  # noqa: E402
from tcclib.method.config import Config  # noqa: E402
from tcclib.paper import heads, stats, tables  # noqa: E402
from tcclib.running.own import synthetic_table  # noqa: E402
from tcclib.running.train import run_dataset  # noqa: E402

TABLES = ("wine", "iris", "breast_cancer", "digits", "synthetic3", "synthetic5")
SEEDS = (0, 1, 2, 3, 4)
METHODS = ("no_pretrain", "random", "class")
PROBES, TUNED = ("class+probe", "random+probe"), "logreg_cv"


def table(name: str):
    """The dataset ``name`` of :data:`TABLES` (:func:`tcclib.data.sources.from_frame`)."""
    if name.startswith("synthetic"):
        k = int(name[len("synthetic") :])
        X, y = synthetic_table(n_rows=1500 if k == 3 else 2000, n_features=12 if k == 3 else 20, n_classes=k, seed=k)
        return from_frame(X, y, name=name)
    from sklearn import datasets  # deferred: only the bundled tables need it

    bunch = getattr(datasets, f"load_{name}")()
    return from_frame(pd.DataFrame(bunch.data, columns=[str(c) for c in bunch.feature_names]), bunch.target, name=name)


def run(args) -> pd.DataFrame:
    """Every table x head, trained or reused; the gathered results (variants as in :mod:`tcclib.paper.heads`)."""
    out, cache = Path(args.out), Path(args.cache)
    for name in args.tables:
        ds = table(name)
        for head in ("frozen", "probe"):
            cfg = Config(
                seeds=tuple(args.seeds),
                methods=tuple(args.methods),
                baselines=("logreg", "logreg_cv") if head == "frozen" else (),
                epochs=args.epochs,
                labeled_fraction=args.labeled,
                head=head,
                progress=False,
            )
            t = time.perf_counter()
            folder = out / head / name
            res = run_dataset(ds, cfg, None, cache, store_dir=folder, keep_pretrained=True)
            store.save_run(res, folder)
            print(f"{name} {head}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
        for kept in (cache / "checkpoints").glob(f"{name}-*.pt"):
            kept.unlink()
    results = heads.gather(out)
    results.to_csv(out / "results.csv", index=False)
    return results


def pairs(results: pd.DataFrame, a: str, b: str, metric: str) -> str:
    """``a`` against ``b`` over the (table, seed) pairs: above / below, mean difference, Wilcoxon p."""
    wide = results.pivot_table(index=["dataset", "seed"], columns="method", values=metric)
    w = stats.wilcoxon(wide[a], wide[b])
    scale = 100 if metric == "accuracy" else 1
    diff = float(np.mean(wide[a] - wide[b])) * scale
    unit = "points" if metric == "accuracy" else "AUROC"
    return f"{w['better']} / {w['worse']} of {w['n']}, mean {diff:+.3g} {unit}, p {w['p']:.2g}"


def report(results: pd.DataFrame, args) -> str:
    """The markdown: the setting, the probe against ``logreg_cv`` (and the frozen head), the means per table."""
    lines = [
        f"# The probe outside the paper's 30: {results['dataset'].nunique()} tables x "
        f"{results['seed'].nunique()} seeds, {args.epochs} epochs, {args.labeled:.0%} labeled",
        "",
    ]
    measured = set(results["method"])
    for metric in ("accuracy", "auroc"):
        compared = [
            f"{probe} vs {against} {pairs(results, probe, against, metric)}"
            for probe in PROBES
            for against in (TUNED, "logreg", "no_pretrain+probe", heads.base_method(probe))
            if {probe, against} <= measured
        ]
        if {"class", TUNED} <= measured:
            compared.append(f"class (the paper's head) vs {TUNED} {pairs(results, 'class', TUNED, metric)}")
        lines.append(f"- **{metric}**, (table, seed) pairs above / below: " + "; ".join(compared) + ".")
    lines.append("")
    for metric in ("accuracy", "auroc"):
        lines += [f"## {metric}: mean over seeds per table", ""]
        lines += [tables.to_markdown(heads.mean_table(results, metric).round(3 if metric == "auroc" else 2)), ""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    ap.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--labeled", type=float, default=0.1, help="labeled share of the training rows")
    ap.add_argument("--out", default="runs/probe_check", help="where the runs are stored and reused")
    ap.add_argument(
        "--cache",
        default="runs/probe_check/cache",
        help="pretraining checkpoints, removed once a table's heads are done (not committed)",
    )
    args = ap.parse_args(argv)
    results = run(args)
    text = report(results, args)
    (Path(args.out) / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
