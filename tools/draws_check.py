"""Counter draws against each member's generator over the paper's 30 datasets (issue 47).

    python tools/draws_check.py                      # class, 8 seeds, 100 epochs, every dataset
    python tools/draws_check.py --methods class random --datasets kc2 pc1
    python tools/draws_check.py --report-only        # the report again from what is stored

A new random scheme changes every member's draws, so its results cannot equal the committed ones
bit for bit; what it must show is accuracy indistinguishable from them.  This trains the chosen
methods again with ``draws: counter`` through the screen (:mod:`tcclib.running.screen`: each
dataset's stored settings of ``outputs/head_variants/100ep/frozen``, the same seeds and splits,
100 pretraining epochs), as ``<method>_counter`` (``tools/counter_draws_methods.py``), into
``runs/draws_check/``, and compares each with the stored generator-drawn method: per dataset the
mean accuracy and AUROC over the 8 seeds, their difference and Welch's t-test across seeds (how
far the difference is from seed noise); over the datasets the paired Wilcoxon test of the means.
The report goes to ``outputs/draws_check/report.md`` with the per-dataset table as ``results.csv``
and every member's accuracy and AUROC under both schemes as ``per_seed.csv``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcclib.method import plugins  # noqa: E402
from tcclib.running import screen  # noqa: E402

PLUGIN = Path(__file__).with_name("counter_draws_methods.py")
OUT = Path("runs") / "draws_check"
REPORT = Path("outputs") / "draws_check"
METRICS = ("accuracy", "auroc")


def compare(results: pd.DataFrame, method: str) -> pd.DataFrame:
    """Per dataset: ``method`` (generator draws, stored) against ``<method>_counter``."""
    rows = []
    for name, frame in results.groupby("dataset"):
        ours = frame[frame.method == f"{method}_counter"].sort_values("seed")
        theirs = frame[frame.method == method].sort_values("seed")
        if not len(ours) or not len(theirs):
            continue
        row = {"dataset": name, "method": method, "seeds": len(ours)}
        for metric in METRICS:
            a, b = ours[metric].to_numpy(float), theirs[metric].to_numpy(float)
            row[f"{metric}_generator"] = b.mean()
            row[f"{metric}_counter"] = a.mean()
            row[f"{metric}_difference"] = a.mean() - b.mean()
            row[f"{metric}_welch_p"] = stats.ttest_ind(a, b, equal_var=False).pvalue if np.ptp(np.r_[a, b]) else 1.0
        rows.append(row)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame, method: str) -> list[str]:
    """The report's lines for ``method``."""
    part = table[table.method == method]
    lines = [f"## `{method}`: counter draws against each member's generator ({len(part)} datasets)", ""]
    for metric in METRICS:
        d = part[f"{metric}_difference"].to_numpy()
        scale = 100 if metric == "accuracy" else 1
        unit = " points" if metric == "accuracy" else ""
        w = stats.wilcoxon(d) if np.any(d) and len(d) > 1 else None
        below = int((part[f"{metric}_welch_p"] < 0.05).sum())
        lines.append(
            f"- {metric}: mean difference {scale * d.mean():+.3f}{unit} (median {scale * np.median(d):+.3f}, "
            f"range {scale * d.min():+.3f} to {scale * d.max():+.3f}); counter higher on {int((d > 0).sum())}, lower "
            f"on {int((d < 0).sum())}, equal on {int((d == 0).sum())}; paired Wilcoxon over the datasets "
            + (f"p = {w.pvalue:.3g}" if w is not None else "not computable")
            + f"; Welch's test across the seeds p < 0.05 on {below} of {len(part)} datasets "
            f"(about {0.05 * len(part):.1f} expected by chance alone)"
        )
    lines.append("")
    return lines


def write_report(table: pd.DataFrame, methods, out: Path, every: list[str]) -> Path:
    """``report.md`` and ``results.csv`` in ``out``; ``every``: the reference's datasets (those not
    in ``table`` are named as not yet run)."""
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "results.csv", index=False, float_format="%.6g")
    lines = [
        "# Counter draws against each member's generator",
        "",
        "`python tools/draws_check.py` (issue 47): the screen's settings (each dataset's stored run in "
        "`outputs/head_variants/100ep/frozen`: 8 seeds, 100 pretraining epochs, the same splits), the methods "
        "trained again with `draws: counter` and compared with the stored ones, drawn from each member's "
        "generator. Per-dataset numbers: `results.csv` (means over the seeds, differences, Welch p).",
        "",
    ]
    done = sorted(set(table.dataset))
    left = [d for d in sorted(every) if d not in done]
    lines += [
        f"Datasets: {len(done)} of the reference's {len(every)}"
        + (f"; not yet run: {', '.join(left)} (the same command resumes)." if left else "."),
        "",
    ]
    for method in methods:
        lines += summary(table, method)
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", nargs="+", default=["class"], choices=["class", "random"])
    ap.add_argument("--datasets", nargs="*", default=None, help="default: every dataset of the reference store")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report", default=str(REPORT))
    ap.add_argument("--report-only", action="store_true", help="write the report from what --out stores")
    args = ap.parse_args(argv)
    plugins.load(str(PLUGIN), "draws_check")
    names = tuple(f"{m}_counter" for m in args.methods)
    check = screen.Screen(
        methods=names,
        compared=tuple(args.methods),
        datasets=tuple(args.datasets) if args.datasets else None,
        out=Path(args.out),
        progress=False,
        data_dir=args.data_dir,
        extra={"draws": "counter"},
        workers=args.workers,
    )
    if args.report_only:
        todo = [name for name, _ in screen.plan(check)]
        results = screen.combined(check, ROOT / args.out, ROOT / check.reference, todo)
    else:
        results = screen.run(check)
    table = pd.concat([compare(results, m) for m in args.methods], ignore_index=True)
    (ROOT / args.report).mkdir(parents=True, exist_ok=True)
    kept = results[results.method.isin([*args.methods, *names])].sort_values(["dataset", "method", "seed"])
    kept.to_csv(ROOT / args.report / "per_seed.csv", index=False)  # (both schemes' members, every seed)
    every = sorted(screen.plan(dataclasses.replace(check, datasets=None)), key=lambda item: item[0])
    print(write_report(table, args.methods, ROOT / args.report, [name for name, _ in every]).read_text())


if __name__ == "__main__":
    main()
