"""Your own table: every estimator method against the baselines on the same labeled rows.

:func:`compare` splits a :class:`~tcclib.data.sources.Dataset` as the benchmark does (one seed:
stratified train/test split, a labeled fraction of the training rows), fits
:class:`~tcclib.method.estimator.TCCClassifier` with each method on the training rows (unlabeled ones
marked -1) and the baselines on the same labeled rows, and scores all of them on the test rows.
:func:`synthetic_table` makes a mixed-type table with missing values and a class signal (notebook
08's default table, written to CSV by :func:`example_table`, and the estimator's scale benchmark).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tcclib.artifacts.store import write_csv
from tcclib.data.preprocess import encode_target, prepare
from tcclib.data.sources import Dataset
from tcclib.method.baselines import run_baselines
from tcclib.method.config import Config, split_variant
from tcclib.method.estimator import TCCClassifier
from tcclib.method.metrics import accuracy, auroc
from tcclib.running.notebooks import execute
from tcclib.util import paths


def synthetic_table(
    n_rows: int = 2000,
    n_features: int = 12,
    cat_fraction: float = 0.25,
    n_classes: int = 3,
    missing: float = 0.05,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.Series]:
    """A table ``(X, y)`` with numeric and categorical (text) columns, missing values and classes
    that depend on both kinds of column (plus noise): half of the numeric columns and half of the
    categorical ones carry signal, the others are noise or correlated copies.

    ``cat_fraction`` of the ``n_features`` columns are categorical with 3 to 12 levels
    (``"c3_7"``: column 3, level 7); ``missing``: the share of cells left empty."""
    if n_rows < 1 or n_features < 1 or not 0 <= cat_fraction <= 1 or n_classes < 2 or not 0 <= missing < 1:
        raise ValueError(
            "synthetic_table: n_rows >= 1, n_features >= 1, 0 <= cat_fraction <= 1, n_classes >= 2 and 0 <= missing < 1"
        )
    rng = np.random.default_rng(seed)
    n_cat = int(round(cat_fraction * n_features))
    n_num = n_features - n_cat
    score = rng.gumbel(size=(n_rows, n_classes)) * 1.5
    cols: dict = {}
    base = rng.normal(size=(n_rows, max(n_num, 1)))
    for j in range(n_num):
        if j % 4 == 3 and j > 0:  # a correlated copy of the previous column
            v = 0.8 * base[:, j - 1] + 0.6 * base[:, j]
        else:
            v = base[:, j]
        if j % 2 == 0:
            score += np.outer(v, rng.normal(size=n_classes))
        cols[f"x{j}"] = v.astype(np.float64)
    for j in range(n_cat):
        levels = int(rng.integers(3, 13))
        code = rng.integers(levels, size=n_rows)
        if j % 2 == 0:
            score += rng.normal(scale=1.2, size=(levels, n_classes))[code]
        cols[f"c{j}"] = np.array([f"c{j}_{k}" for k in range(levels)], dtype=object)[code]
    X = pd.DataFrame(cols)
    if missing > 0:
        holes = rng.random(X.shape) < missing
        for i, c in enumerate(X.columns):
            X.loc[holes[:, i], c] = np.nan if X[c].dtype.kind == "f" else None
    y = pd.Series(np.array([f"class_{k}" for k in range(n_classes)])[score.argmax(1)], name="target")
    return X, y


def example_table(path=None, **kw) -> Path:
    """Write :func:`synthetic_table` (``kw``) as a CSV with its class in column ``target`` and return
    the path (default: ``<project>/.cache/example_table.csv``; kept when it already exists)."""
    path = Path(path) if path is not None else paths.project_root() / ".cache" / "example_table.csv"
    if not path.exists():
        X, y = synthetic_table(**kw)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_csv(X.assign(target=y), path)
    return path


@dataclass
class Comparison:
    """What :func:`compare` gives: a results table (one row per method and baseline), the fitted
    estimators (method -> TCCClassifier), the split and the test rows' true classes."""

    results: pd.DataFrame
    models: dict = field(default_factory=dict)
    train_index: np.ndarray | None = None
    test_index: np.ndarray | None = None
    labeled: np.ndarray | None = None
    y_test: np.ndarray | None = None
    classes: list = field(default_factory=list)


def compare(
    ds: Dataset,
    methods=("no_pretrain", "random", "class", "class_least", "class_most"),
    baselines=("xgboost", "logreg", "self_training"),
    seed: int = 0,
    test_fraction: float = 0.2,
    labeled_fraction: float = 0.3,
    verbose: bool = False,
    **settings,
) -> Comparison:
    """Fit each method and baseline on ``ds`` with one seed's split; see the module docstring.

    A method may name its head after a ``+`` (``"random+probe"``: ``TCCClassifier("random",
    head="probe")``, as the head-variant comparison names its variants); without one it takes the
    ``head`` of ``settings`` (default: the paper's frozen head).  ``settings``: any
    :class:`~tcclib.method.estimator.TCCClassifier` setting (``epochs=50``, ...), used by every method
    (the XGBoost settings also by the XGBoost baseline)."""
    cfg = Config(
        seeds=(seed,),
        test_fraction=test_fraction,
        labeled_fraction=labeled_fraction,
        **{k: v for k, v in settings.items() if k.startswith("xgb_")},
    )
    for m in methods:  # every setting and method checked before any work
        _estimator(m, seed, settings).config(seed)
    prep = prepare(ds, cfg.seeds, test_fraction, labeled_fraction)
    sp = prep.splits[0]
    codes, classes = encode_target(ds.y)
    names = np.asarray(classes, dtype=object)[codes]  # fitted with the class names: the models predict them
    y_fit = np.where(sp.labeled, names[sp.train_index], -1).astype(object)
    column = {c: i for i, c in enumerate(classes)}
    X_tr, X_te = ds.X.iloc[sp.train_index], ds.X.iloc[sp.test_index]
    y_te = codes[sp.test_index]
    rows, models = [], {}
    importance = None  # the correlation methods share one importance matrix (same rows and seed)
    for m in methods:
        t = time.perf_counter()
        clf = _estimator(m, seed, {**settings, "verbose": verbose}).fit(X_tr, y_fit, importance=importance)
        if clf.importance_ is not None:
            importance = clf.importance_
        fit_s = time.perf_counter() - t
        prob = np.zeros((len(X_te), len(classes)))
        prob[:, [column[c] for c in clf.classes_]] = clf.predict_proba(X_te)
        models[m] = clf
        rows.append(
            dict(
                dataset=ds.name,
                seed=seed,
                method=m,
                accuracy=accuracy(y_te, prob),
                auroc=auroc(y_te, prob),
                n_train=len(sp.train_index),
                n_labeled=int(sp.labeled.sum()),
                n_test=len(y_te),
                fit_s=fit_s,
            )
        )
    for b in baselines:
        t = time.perf_counter()
        base = run_baselines(prep, cfg, [b], ds.did)
        base["fit_s"] = time.perf_counter() - t
        rows.extend(base.drop(columns=["did", "n_features"]).to_dict("records"))
    return Comparison(pd.DataFrame(rows), models, sp.train_index, sp.test_index, sp.labeled, y_te, classes)


def _estimator(method: str, seed: int, settings: dict) -> TCCClassifier:
    """The estimator of ``method`` (``"random+probe"``: the method and its head) with ``settings``."""
    name, head = split_variant(method)
    return TCCClassifier(name, random_state=seed, **{**settings, **({"head": head} if "+" in method else {})})


NOTEBOOK = "08_your_table"


def render(out, **parameters) -> Path:
    """Execute notebook 08 with ``parameters`` (``path``, ``target``, ``epochs``, ...) into the
    notebook file ``out``, in this interpreter's kernel (as the sweep runs notebooks)."""
    out = Path(out)
    execute(NOTEBOOK, out, parameters, paths.project_root())
    return out


def main(argv=None) -> int:
    """``python -m tcclib.running.own [--path FILE --target COLUMN] [--out NOTEBOOK] [-p NAME VALUE ...]``"""
    import yaml  # deferred: PyYAML loads only when a YAML text is read

    ap = argparse.ArgumentParser(
        prog="python -m tcclib.running.own",
        description="Render notebook 08 (your own "
        "table): every TCCClassifier method against the baselines on one split.",
    )
    ap.add_argument("--path", default="", help="CSV/TSV/Parquet/ARFF table (default: the example table)")
    ap.add_argument("--target", default="target", help="its class column (default: target)")
    ap.add_argument("--out", default="runs/own/08_your_table.ipynb", help="the rendered notebook")
    ap.add_argument(
        "-p",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="another notebook parameter (YAML value), e.g. -p epochs 20",
    )
    a = ap.parse_args(argv)
    params = {"path": a.path, "target": a.target, **{k: yaml.safe_load(v) for k, v in a.p}}
    out = render(paths.resolve(a.out), **params)
    print(f"rendered {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
