"""Sweeps the paper does not have: labeled fraction and corruption rate, one at a time.

For each value of one setting (the other at its base value) every seed x method of the dataset
is trained as usual; the result is one tidy table with the setting's value on every row.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts.store import write_csv, write_json
from tcclib.data.sources import Dataset, load_dataset
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.running.train import run_dataset
from tcclib.util.progress import bar as _bar

LABELED_FRACTIONS = (0.05, 0.1, 0.3, 0.5)
CORRUPTION_RATES = (0.2, 0.4, 0.6)
ABLATION_METHODS = ("no_pretrain", "random", "class", "oracle")


def _points(labeled_fractions, corruption_rates) -> list[tuple[str, float]]:
    """The grid's points: each value of one setting, the other at its base value."""
    return [("labeled_fraction", v) for v in labeled_fractions] + [("corruption_rate", v) for v in corruption_rates]


def _grid_config(cfg: Config, methods) -> Config:
    return cfg.replace(methods=list(methods), baselines=[], keep_embeddings=False)


def _point_members(ds: Dataset, cfg: Config, points) -> list[dict]:
    """Each point's member keys (``"<seed>/<method>" -> key``: :func:`tcclib.artifacts.keys.run_keys`)."""
    configs = [cfg.replace(**{name: value}) for name, value in points]
    return [content_keys.run_keys(prepare_config(ds, c), c).members for c in configs]


def _digest(points, members) -> str:
    return content_keys.digest("ablation", [[name, value, m] for (name, value), m in zip(points, members)])


def grid_key(ds: Dataset, cfg: Config, labeled_fractions, corruption_rates, methods) -> str:
    """The content key of a grid: the keys of every member of every point (:mod:`tcclib.artifacts.keys`)."""
    cfg = _grid_config(cfg, methods)
    points = _points(labeled_fractions, corruption_rates)
    return _digest(points, _point_members(ds, cfg, points))


def _stored(store_dir: Path, ds: Dataset, cfg: Config):
    """A stored grid: its key, its member keys per point (``(varied, value) -> members``) and its
    results; None where there is none.

    A grid stored before its keys were kept per point (``keys.json`` version 1: the grid's key
    alone) gives its members when that key is the one its own points and methods make now."""
    kf, rf = store_dir / content_keys.KEYS_FILE, store_dir / "results.csv"
    if not (kf.exists() and rf.exists()):
        return None
    keys, results = json.loads(kf.read_text()), pd.read_csv(rf)
    if "points" in keys:
        return keys["grid"], {(p["varied"], float(p["value"])): p["members"] for p in keys["points"]}, results
    points = list(dict.fromkeys((name, float(results.loc[i, name])) for i, name in results["varied"].items()))
    members = _point_members(ds, _grid_config(cfg, results["method"].unique()), points)
    if _digest(points, members) != keys.get("grid"):
        return None
    return keys["grid"], dict(zip(points, members)), results


def _run_point(ds: Dataset, c: Config, varied: str, want: dict, have: dict, rows: pd.DataFrame, cache_dir):
    """One point's results (``varied`` set in ``c``): the stored ``rows`` of the members whose
    key in ``have`` is the one they need now (``want``), the other members trained; and how many
    trained."""
    pairs = [(seed, method) for seed in c.seeds for method in c.methods]
    stored = set(zip(rows["seed"], rows["method"]))
    missing = [(s, m) for s, m in pairs if have.get(content_keys.tag(s, m)) != want[content_keys.tag(s, m)]
               or (s, m) not in stored]  # fmt: skip
    keep = set(pairs) - set(missing)
    frames = [rows[[(s, m) in keep for s, m in zip(rows["seed"], rows["method"])]]]
    if missing:
        seeds = [s for s in c.seeds if any(p[0] == s for p in missing)]
        methods = [m for m in c.methods if any(p[1] == m for p in missing)]
        new = run_dataset(ds, c.replace(seeds=seeds, methods=methods), cache_dir=cache_dir).results
        new = new.assign(varied=varied, labeled_fraction=c.labeled_fraction, corruption_rate=c.corruption_rate)
        frames.append(new[[(s, m) in missing for s, m in zip(new["seed"], new["method"])]])
    frame = pd.concat([f for f in frames if len(f)], ignore_index=True)
    order = {p: i for i, p in enumerate(pairs)}  # the order a run of every member gives
    place = [order[p] for p in zip(frame["seed"], frame["method"])]
    return frame.iloc[np.argsort(place, kind="stable")].reset_index(drop=True), len(missing)


def run_grid(
    dataset,
    cfg: Config | None = None,
    labeled_fractions=LABELED_FRACTIONS,
    corruption_rates=CORRUPTION_RATES,
    methods=ABLATION_METHODS,
    data_dir=None,
    cache_dir=None,
    progress: bool = True,
    store_dir=None,
    reuse: bool = True,
) -> pd.DataFrame:
    """Results (dataset, seed, method, accuracy, auroc, ...) plus ``varied``,
    ``labeled_fraction`` and ``corruption_rate`` for every point of the two one-way sweeps.

    ``store_dir``: the grid is saved there (``results.csv``; ``keys.json``: the key of every member
    of every point, :mod:`tcclib.artifacts.keys`, and the grid's key made of them). With ``reuse``
    every stored member whose key matches (same data and settings) is taken as it is and only the
    rest trains: a re-render trains nothing, a method added trains that method only.
    ``grid.attrs["trained_members"]`` says how many trained."""
    cfg = _grid_config(cfg or Config(), methods)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    points = _points(labeled_fractions, corruption_rates)
    members = _point_members(ds, cfg, points)
    key = _digest(points, members)
    stored = _stored(Path(store_dir), ds, cfg) if (store_dir is not None and reuse) else None
    if stored is not None and stored[0] == key:
        stored[2].attrs["trained_members"] = 0
        return stored[2]
    bar = _bar(len(points), f"{ds.name}: ablation") if progress else None
    start, frames, trained = time.perf_counter(), [], 0
    for (name, value), want in zip(points, members):
        c = cfg.replace(**{name: value, "progress": False})
        have, rows = {}, pd.DataFrame({"seed": [], "method": []})
        if stored is not None:
            have = stored[1].get((name, float(value)), {})
            rows = stored[2][(stored[2]["varied"] == name) & np.isclose(stored[2][name], value)]
        frame, n = _run_point(ds, c, name, want, have, rows, cache_dir)
        frames.append(frame)
        trained += n
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    grid = pd.concat(frames, ignore_index=True)
    if store_dir is not None:
        keys = [{"varied": name, "value": value, "members": m} for (name, value), m in zip(points, members)]
        write_csv(grid, Path(store_dir) / "results.csv")
        write_json({"version": 2, "grid": key, "points": keys}, Path(store_dir) / content_keys.KEYS_FILE)
        if trained:  # (what the sweep counts: rewritten only by a run that trained, as run_dataset's)
            seconds = round(time.perf_counter() - start, 3)
            timings = {"trained_members": trained, "reused_members": len(grid) - trained, "seconds": seconds}
            write_json(timings, Path(store_dir) / "timings.json")
    grid.attrs["trained_members"] = trained
    return grid
