"""Sweeps the paper does not have: labeled fraction and corruption rate, one at a time.

For each value of one setting (the other at its base value) every seed x method of the dataset
is trained as usual; the result is one tidy table with the setting's value on every row.
"""

from __future__ import annotations

import json
from pathlib import Path

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
ABLATION_METHODS = ("random", "class", "oracle")


def _points(labeled_fractions, corruption_rates) -> list[tuple[str, float]]:
    """The grid's points: each value of one setting, the other at its base value."""
    return [("labeled_fraction", v) for v in labeled_fractions] + [("corruption_rate", v) for v in corruption_rates]


def grid_key(ds: Dataset, cfg: Config, labeled_fractions, corruption_rates, methods) -> str:
    """The content key of a grid: the keys of every member of every point (:mod:`tcclib.artifacts.keys`)."""
    cfg = cfg.replace(methods=list(methods), baselines=[], keep_embeddings=False)
    points = _points(labeled_fractions, corruption_rates)
    parts = []
    for name, value in points:
        c = cfg.replace(**{name: value})
        parts.append([name, value, content_keys.run_keys(prepare_config(ds, c), c).members])
    return content_keys.digest("ablation", parts)


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

    ``store_dir``: the grid is saved there (``results.csv`` with its key in ``keys.json``); with
    ``reuse`` a stored grid whose key matches (same data, settings and grid: the keys of every
    member of every point, :mod:`tcclib.artifacts.keys`) is returned without training."""
    cfg = (cfg or Config()).replace(methods=list(methods), baselines=[], keep_embeddings=False)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    points = _points(labeled_fractions, corruption_rates)
    key = None
    if store_dir is not None:
        key = grid_key(ds, cfg, labeled_fractions, corruption_rates, methods)
        kf, rf = Path(store_dir) / content_keys.KEYS_FILE, Path(store_dir) / "results.csv"
        if reuse and kf.exists() and rf.exists() and json.loads(kf.read_text()).get("grid") == key:
            return pd.read_csv(rf)
    bar = None
    if progress:
        bar = _bar(len(points), f"{ds.name}: ablation")
    frames = []
    for name, value in points:
        c = cfg.replace(**{name: value, "progress": False})
        r = run_dataset(ds, c, cache_dir=cache_dir).results
        frames.append(r.assign(varied=name, labeled_fraction=c.labeled_fraction, corruption_rate=c.corruption_rate))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    grid = pd.concat(frames, ignore_index=True)
    if store_dir is not None:
        write_csv(grid, Path(store_dir) / "results.csv")
        write_json({"version": 1, "grid": key}, Path(store_dir) / content_keys.KEYS_FILE)
    return grid
