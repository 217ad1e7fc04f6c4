"""Does pretraining help, and does the head matter?  The paper's frozen encoder against the
opt-in ``finetune``, ``concat`` and ``probe`` heads, ``no_pretrain`` and the baselines, on a few datasets.

    python tools/head_variants.py                                  # 4 small datasets, 30 epochs
    python tools/head_variants.py --datasets diabetes ilpd --epochs 50 --out runs/head_variants
    python tools/head_variants.py --datasets all --epochs 100          # the paper's 30, smallest first

For each head (``Config.head``) and dataset, :func:`tcclib.running.train.run_dataset` trains
every seed x method (default the paper's 8 seeds; ``no_pretrain``, ``random`` and ``class``)
and stores the run under ``OUT/<epochs>ep/<head>/<dataset>``; the baselines (``logreg``, ``logreg_cv``,
``self_training``, ``xgboost``) run with the frozen head (they do not depend on it).  A second
call reuses every stored member whose content key matches, so it trains nothing (and a new head,
dataset or epoch count trains only that).  The heads of a dataset share one pretraining: the
first head's run keeps its finished pretraining (``run_dataset(keep_pretrained=True)``; the head
settings are not in the checkpoint key), the others start from it and fit only their heads (the
same bits as pretraining again), and the checkpoint is removed once the dataset's heads are done
(``--keep-pretrained`` keeps it, for a head added later).

After each dataset it writes ``OUT/<epochs>ep/results.csv`` (every dataset stored there so far x
seed x variant: a variant is ``method+head``, the frozen head keeping the method's name;
:func:`tcclib.paper.heads.gather`), its figures under ``figures/`` (the critical-difference
diagrams and each variant's paired difference from ``logreg``) and ``report.md``
(:mod:`tcclib.paper.heads`: average ranks, Friedman + Nemenyi over the datasets, paired
Wilcoxon tests over the datasets' means against ``logreg`` and against ``no_pretrain`` under the
same head, the means per dataset).  The
committed comparison is ``--out outputs/head_variants`` (the stores are small: a second session
resumes from them); the paper report and notebook 08 show it.  Importances and pretraining
checkpoints go to ``--cache`` (under ``runs/``, not committed).
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
from tcclib.paper import heads, tables  # noqa: E402
from tcclib.running.train import run_dataset  # noqa: E402

DATASETS = ("diabetes", "credit-g", "blood-transfusion-service-center", "ilpd")
METHODS = ("no_pretrain", "random", "class")
BASELINES = ("logreg", "logreg_cv", "self_training", "xgboost")


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


def run_all(args) -> None:
    """Every dataset x head, trained or reused from ``OUT`` (the heads of a dataset sharing one
    pretraining); after each dataset, ``results.csv`` and ``report.md`` over every dataset stored
    so far (so that an interrupted run loses nothing and a later one adds to it)."""
    base = Path(args.out) / f"{args.epochs}ep"
    cache = Path(args.cache)
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
        if not args.keep_pretrained:
            for kept in (cache / "checkpoints").glob(f"{name}-*.pt"):
                kept.unlink()
        write_tables(base, args)


def write_tables(base: Path, args) -> str:
    """``results.csv``, ``report.md`` and the figures (``figures/``: :func:`tcclib.paper.heads.write_figures`)
    in ``base`` over every dataset stored there; the report's text."""
    results = heads.gather(base)
    results.to_csv(base / heads.RESULTS, index=False)
    heads.write_figures(base, results)
    text = report(results, args)
    (base / "report.md").write_text(text)
    return text


def report(results: pd.DataFrame, args) -> str:
    """The markdown of :func:`tcclib.paper.heads.section` for this run, with its per-dataset tables."""
    done = heads.complete(results)["dataset"].nunique()
    stored = results["dataset"].nunique()
    partial = f" with every variant (of {stored} stored)" if done < stored else ""
    out = [f"# Head variants: {done} datasets{partial}", ""]
    out += heads.section_lines(results, Path(args.out).name, title="## Summary")
    out += ["## Figures", ""]
    for stem, caption in heads.FIGURES.items():
        out += [f"![{caption}](figures/{stem}.png)", "", f"*{caption}* ([PDF](figures/{stem}.pdf))", ""]
    for metric in ("accuracy", "auroc"):
        out += [f"## {metric}: mean over seeds per dataset", ""]
        out += [tables.to_markdown(heads.mean_table(results, metric).T, decimals=tables.DIGITS[metric]), ""]
    return "\n".join(out)


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
    ap.add_argument(
        "--cache",
        default="runs/head_variants/cache",
        help="importance cache and pretraining checkpoints (not committed; default runs/head_variants/cache)",
    )
    ap.add_argument("--keep-pretrained", action="store_true", help="keep each dataset's finished pretraining")
    args = ap.parse_args(argv)
    if args.datasets == ["all"]:
        args.datasets = paper_datasets_smallest_first()
    if "frozen" not in args.heads and args.baselines:
        ap.error("the baselines run with the frozen head: add frozen to --heads, or give --baselines without names")
    run_all(args)
    print(write_tables(Path(args.out) / f"{args.epochs}ep", args))


if __name__ == "__main__":
    main()
