"""Does pretraining help, and does the head matter?  The paper's frozen encoder against the
opt-in ``finetune`` and ``concat`` heads, ``no_pretrain`` and the baselines, on a few datasets.

    python tools/head_variants.py                                  # 4 small datasets, 30 epochs
    python tools/head_variants.py --datasets diabetes ilpd --epochs 50 --out runs/head_variants
    python tools/head_variants.py --datasets all --epochs 100          # the paper's 30, smallest first

For each head (``Config.head``) and dataset, :func:`tcclib.running.train.run_dataset` trains
every seed x method (default the paper's 8 seeds; ``no_pretrain``, ``random`` and ``class``)
and stores the run under ``OUT/<epochs>ep/<head>/<dataset>``; the baselines (``logreg``,
``self_training``, ``xgboost``) run with the frozen head (they do not depend on it).  A second
call reuses every stored member whose content key matches, so it trains nothing (and a new head,
dataset or epoch count trains only that).  The heads of a dataset share one pretraining: the
first head's run keeps its finished pretraining (``run_dataset(keep_pretrained=True)``; the head
settings are not in the checkpoint key), the others start from it and fit only their heads (the
same bits as pretraining again), and the checkpoint is removed once the dataset's heads are done
(``--keep-pretrained`` keeps it, for a head added later).  Prints, for accuracy and AUROC: the mean over seeds per
dataset and variant (a variant is ``method+head``; the frozen head keeps the method's name), the
average rank, :func:`tcclib.paper.stats.rank_test` (Friedman + Nemenyi over the datasets), and a
paired Wilcoxon test over every (dataset, seed) of each variant against ``logreg`` and against
``no_pretrain`` with the same head.  Tables go to ``OUT/<epochs>ep/*.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tcclib.artifacts import store  # noqa: E402
from tcclib.data.sources import list_datasets  # noqa: E402
from tcclib.method.config import HEADS, PAPER_SEEDS, Config  # noqa: E402
from tcclib.paper import stats, tables  # noqa: E402
from tcclib.running.train import run_dataset  # noqa: E402

DATASETS = ("diabetes", "credit-g", "blood-transfusion-service-center", "ilpd")
METHODS = ("no_pretrain", "random", "class")
BASELINES = ("logreg", "self_training", "xgboost")


def variant(method: str, head: str) -> str:
    """The name of a method under a head in the tables: the method itself for the paper's head."""
    return method if head == "frozen" else f"{method}+{head}"


PAPER_STORE = Path(__file__).resolve().parents[1] / "outputs" / "paper"


def paper_datasets_smallest_first() -> list[str]:
    """The paper's 30 datasets, by the committed paper run's pretraining seconds (fastest first)."""
    names = [n for n in list_datasets()["name"] if n != "breast_cancer"]

    def seconds(name: str) -> float:
        timings = PAPER_STORE / name / "timings.json"
        return json.loads(timings.read_text()).get("pretrain_s", math.inf) if timings.is_file() else math.inf

    return sorted(names, key=seconds)


def head_config(args, head: str) -> Config:
    return Config(
        seeds=tuple(args.seeds),
        methods=tuple(args.methods),
        baselines=tuple(args.baselines) if head == "frozen" else (),
        epochs=args.epochs,
        head=head,
        encoder_lr=args.encoder_lr,
        progress=False,
    )


def run_all(args) -> pd.DataFrame:
    """Every dataset x head, trained or reused from ``OUT`` (the heads of a dataset sharing one
    pretraining); the results with ``method`` renamed."""
    base = Path(args.out) / f"{args.epochs}ep"
    cache = Path(args.out) / "cache"
    parts = []
    for i, name in enumerate(args.datasets, 1):
        for head in args.heads:
            folder = base / head / name
            t = time.perf_counter()
            run = run_dataset(
                name, head_config(args, head), args.data_dir, cache, store_dir=folder, keep_pretrained=True
            )
            store.save_run(run, folder)
            print(
                f"[{i}/{len(args.datasets)}] {head:8s} {name}: trained {run.timings.get('trained_members', 0)} "
                f"member(s), reused {run.timings.get('reused_members', 0)}, {time.perf_counter() - t:.0f} s",
                file=sys.stderr,
            )
            res = run.results.copy()
            res["method"] = [m if m in args.baselines else variant(m, head) for m in res["method"]]
            parts.append(res)
        if not args.keep_pretrained:
            for kept in (cache / "checkpoints").glob(f"{name}-*.pt"):
                kept.unlink()
    return pd.concat(parts, ignore_index=True)


def order(args) -> list[str]:
    return [variant(m, h) for h in args.heads for m in args.methods] + [b for b in args.baselines]


def mean_table(results: pd.DataFrame, metric: str, names: list[str]) -> pd.DataFrame:
    """Mean over seeds per dataset (rows) and variant (columns), the average rank last."""
    wide = stats.dataset_means(results, metric, names)
    ranks = wide.rank(axis=1, ascending=False, method="average").mean()
    return pd.concat([wide, ranks.to_frame("average rank").T])


def paired(results: pd.DataFrame, metric: str, a: str, b: str) -> dict:
    """Wilcoxon over every (dataset, seed) that both ``a`` and ``b`` have."""
    col = "accuracy" if metric == "accuracy" else "auroc"
    wide = results.pivot_table(index=["dataset", "seed"], columns="method", values=col)
    return stats.wilcoxon(wide[a], wide[b])


def report(results: pd.DataFrame, args) -> str:
    names = [n for n in order(args) if n in set(results["method"])]
    lines = [
        f"# Head variants: {len(args.datasets)} datasets ({', '.join(args.datasets)}), {len(args.seeds)} seeds, "
        f"{args.epochs} pretraining epochs, encoder_lr {args.encoder_lr:g} (finetune); other settings published",
        "",
    ]
    for metric in ("accuracy", "auroc"):
        table = mean_table(results, metric, names)
        lines += [f"## {metric} (mean over seeds{'; %' if metric == 'accuracy' else ''})", ""]
        lines += [tables.to_markdown(table.T.round(3 if metric == "auroc" else 2)), ""]
        rt = stats.rank_test(results, metric, names)
        groups = "; ".join(", ".join(g) for g in rt.get("groups", [])) or "none"
        pairs = ", ".join(f"{a} > {b}" for a, b, _ in rt.get("pairs", [])) or "none"
        lines += [
            f"Friedman over {rt['n']} datasets x {rt['k']} variants: chi2 {rt['chi2']:.2f}, p {rt['p']:.3g}; "
            f"Nemenyi CD {rt.get('cd', float('nan')):.2f} (alpha {rt['alpha']}); significant pairs: {pairs}; "
            f"groups within the CD: {groups}.",
            "",
            "Paired Wilcoxon over (dataset, seed), each variant against logreg and against no_pretrain "
            "with its head (better/worse: pairs above/below; median difference of the metric):",
            "",
        ]
        rows = []
        for n in names:
            if n == "logreg":
                continue
            head = n.split("+")[1] if "+" in n else "frozen"
            for ref in ("logreg", variant("no_pretrain", head)):
                if ref == n or ref not in names:
                    continue
                w = paired(results, metric, n, ref)
                rows.append(
                    dict(
                        variant=n,
                        against=ref,
                        pairs=w["n"],
                        better=w["better"],
                        worse=w["worse"],
                        median_diff=round(w["median_diff"] * (100 if metric == "accuracy" else 1), 3),
                        p=float(f"{w['p']:.2g}"),
                    )
                )
        lines += [tables.to_markdown(pd.DataFrame(rows), index=False), ""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), help="names, or all (the paper's 30)")
    ap.add_argument("--epochs", type=int, default=30, help="pretraining epochs (published: 500)")
    ap.add_argument("--seeds", nargs="+", type=int, default=list(PAPER_SEEDS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--heads", nargs="+", default=list(HEADS), choices=HEADS)
    ap.add_argument("--baselines", nargs="*", default=list(BASELINES))
    ap.add_argument("--encoder-lr", type=float, default=Config().encoder_lr, help="the encoder's lr under finetune")
    ap.add_argument("--data-dir", default=None, help="folder of <did>.arff (default $TCC_DATA_DIR)")
    ap.add_argument("--out", default="runs/head_variants", help="where the runs are stored and reused")
    ap.add_argument("--keep-pretrained", action="store_true", help="keep each dataset's finished pretraining")
    args = ap.parse_args(argv)
    if args.datasets == ["all"]:
        args.datasets = paper_datasets_smallest_first()
    if "frozen" not in args.heads and args.baselines:
        ap.error("the baselines run with the frozen head: add frozen to --heads, or give --baselines without names")
    results = run_all(args)
    text = report(results, args)
    out = Path(args.out) / f"{args.epochs}ep"
    results.to_csv(out / "results.csv", index=False)
    (out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
