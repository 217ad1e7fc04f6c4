"""Saving and gathering results on disk, atomically (a crash never leaves half a file).

Layout of one parameter set ``<root>/<set>/``::

    <dataset>/01_data_prep.ipynb ...      rendered per-dataset notebooks
    <dataset>/results.csv history.csv pseudo.csv corr_range.csv [embeddings.npz]
    <dataset>/_DONE.json | _FAILED.json   written last by the sweep
    results/  figures/  index.md          written by the aggregate notebooks and the sweep
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from .train import RunResult

RUN_FILES = ("results", "history", "pseudo", "corr_range")


def _atomic(path: Path, write) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_csv(df: pd.DataFrame, path) -> Path:
    return _atomic(path, lambda t: df.to_csv(t, index=False, float_format="%.6g"))


def write_json(obj, path) -> Path:
    return _atomic(path, lambda t: Path(t).write_text(json.dumps(obj, indent=2, default=str) + "\n"))


def write_text(text: str, path) -> Path:
    return _atomic(path, lambda t: Path(t).write_text(text))


def save_run(run: RunResult, out_dir) -> Path:
    """Write a dataset's results, histories, correlation ranges (and embeddings) to ``out_dir``."""
    out = Path(out_dir)
    write_csv(run.results, out / "results.csv")
    write_csv(run.history, out / "history.csv")
    write_csv(run.pseudo, out / "pseudo.csv")
    write_csv(pd.DataFrame(sorted(run.corr_range.items()), columns=["seed", "corr_range"]),
              out / "corr_range.csv")
    if run.embeddings:
        # float16 halves the file; plenty for PCA plots
        arrays = {f"{m}__{k}": (v.astype(np.float16) if v.dtype.kind == "f" else v)
                  for m, d in run.embeddings.items() for k, v in d.items()}
        _atomic(out / "embeddings.npz", lambda t: np.savez_compressed(open(t, "wb"), **arrays))
    write_json({k: round(v, 3) for k, v in run.timings.items()}, out / "timings.json")
    if run.classes:
        write_json(list(run.classes), out / "classes.json")
    if run.config is not None:
        write_json(run.config.to_dict(), out / "config.json")  # provenance: every setting used
    return out


def load_embeddings(path) -> dict:
    """Embeddings saved by :func:`save_run`: ``{method: {train, test, y_train, y_test}}``."""
    out: dict = {}
    with np.load(path) as z:
        for key in z.files:
            m, part = key.split("__")
            a = z[key]
            out.setdefault(m, {})[part] = a.astype(np.float32) if a.dtype == np.float16 else a
    return out


def gather(set_dir, what: str = "results") -> pd.DataFrame:
    """Concatenate ``<set_dir>/*/<what>.csv`` of every finished dataset (with a ``dataset`` column)."""
    frames = []
    for d in sorted(Path(set_dir).iterdir()):
        f = d / f"{what}.csv"
        if d.is_dir() and (d / "_DONE.json").exists() and f.exists():
            df = pd.read_csv(f)
            if "dataset" not in df.columns:
                df.insert(0, "dataset", d.name)
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def status(set_dir, expected=None) -> pd.DataFrame:
    """One row per dataset: done / failed (with the error) / incomplete (started, no marker) /
    pending (in ``expected`` but never started)."""
    rows = []
    root = Path(set_dir)
    if expected is None and (root / "datasets.json").exists():  # written by the sweep
        expected = json.loads((root / "datasets.json").read_text())
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name not in ("results", "figures")
                     and not p.name.startswith(".")) if root.exists() else []
    for name in expected or []:
        if not (root / name).is_dir():
            rows.append((name, "pending", ""))
    for d in folders:
        if (d / "_DONE.json").exists():
            rows.append((d.name, "done", ""))
        elif (d / "_FAILED.json").exists():
            rows.append((d.name, "failed", json.loads((d / "_FAILED.json").read_text()).get("error", "")))
        else:
            rows.append((d.name, "incomplete", ""))
    return pd.DataFrame(rows, columns=["dataset", "status", "error"]).sort_values("dataset", ignore_index=True)


# A re-executed notebook (nbval in ``make test``, or a user re-running it) compares its fresh
# results with the ones it saved before.  Same machine: identical.  Another CPU (AVX2 vs AVX-512
# kernels, another BLAS path) rounds floats differently, training drifts a little, and the means
# move by a few thousandths (0.003 seen between an AMD AVX2 and an Intel AVX-512 machine on the
# demo, 8 seeds x 100 epochs), so the check allows REPRO_TOL.
REPRO_TOL = 0.02
REPRO_METRICS = ("accuracy", "auroc")


def load_results(out_dir) -> pd.DataFrame | None:
    """``<out_dir>/results.csv`` as saved by :func:`save_run`, or None when there is none."""
    f = Path(out_dir) / "results.csv"
    return pd.read_csv(f) if f.exists() else None


def compare_means(stored: pd.DataFrame, results: pd.DataFrame, tol: float = REPRO_TOL,
                  metrics=REPRO_METRICS) -> pd.DataFrame:
    """Mean over seeds of every method and metric, stored vs. new.

    Columns ``method, metric, stored, new, diff, within`` (``|diff| <= tol``) and ``same_seeds``
    (the method ran the same seeds on both sides).  A method on one side only has NaN on the other;
    it, and a method whose seeds differ (its means are not comparable), is not ``within``."""
    metrics = list(metrics)
    seeds_a = stored.groupby("method")["seed"].apply(frozenset)
    seeds_b = results.groupby("method")["seed"].apply(frozenset)
    a = stored.groupby("method", sort=False)[metrics].mean()
    b = results.groupby("method", sort=False)[metrics].mean()
    rows = []
    for m in dict.fromkeys([*b.index, *a.index]):
        for k in metrics:
            s = float(a[k].get(m, np.nan))
            n = float(b[k].get(m, np.nan))
            d = n - s
            same = seeds_a.get(m) == seeds_b.get(m)
            rows.append(dict(method=m, metric=k, stored=s, new=n, diff=d, same_seeds=same,
                             within=bool(same and abs(d) <= tol)))  # NaN compares False
    return pd.DataFrame(rows, columns=["method", "metric", "stored", "new", "diff", "same_seeds", "within"])


def drift_line(cmp: pd.DataFrame | None, tol: float = REPRO_TOL) -> str:
    """One line naming the method means that moved more than ``tol`` ('none' when nothing did,
    or when there was nothing stored to compare with).  Meant for a checked notebook cell: its text
    is the same on every machine unless results really changed."""
    head = f"means (accuracy, AUROC) that moved more than {tol} from the stored results:"
    bad = cmp[~cmp.within] if cmp is not None else []
    if not len(bad):
        return f"{head} none"
    parts = [f"{r.method} {r.metric} {r.stored:.3f} -> {r.new:.3f}" if r.same_seeds
             else f"{r.method} (not run on the same seeds both times)" for r in bad.itertuples()]
    return f"{head} " + "; ".join(dict.fromkeys(parts))  # one entry per method without a match
