"""Sweeps the paper does not have: labeled fraction and corruption rate, one at a time.

For each value of one setting (the other at its base value) every seed x method of the dataset
is trained as usual; the result is one tidy table with the setting's value on every row.
"""

from __future__ import annotations

import pandas as pd

from .config import Config
from .datasets import Dataset, load_dataset
from .train import run_dataset

LABELED_FRACTIONS = (0.05, 0.1, 0.3, 0.5)
CORRUPTION_RATES = (0.2, 0.4, 0.6)
ABLATION_METHODS = ("random", "class", "oracle")


def run_grid(dataset, cfg: Config | None = None, labeled_fractions=LABELED_FRACTIONS,
             corruption_rates=CORRUPTION_RATES, methods=ABLATION_METHODS, data_dir=None,
             cache_dir=None, progress: bool = True) -> pd.DataFrame:
    """Results (dataset, seed, method, accuracy, auroc, ...) plus ``varied``,
    ``labeled_fraction`` and ``corruption_rate`` for every point of the two one-way sweeps."""
    cfg = (cfg or Config()).replace(methods=list(methods), baselines=[], keep_embeddings=False)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    points = [("labeled_fraction", v) for v in labeled_fractions] + [("corruption_rate", v) for v in corruption_rates]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(points), desc=f"{ds.name}: ablation")
    frames = []
    for name, value in points:
        c = cfg.replace(**{name: value, "progress": False})
        r = run_dataset(ds, c, cache_dir=cache_dir).results
        frames.append(r.assign(varied=name, labeled_fraction=c.labeled_fraction, corruption_rate=c.corruption_rate))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return pd.concat(frames, ignore_index=True)
