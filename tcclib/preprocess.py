"""Per-seed preprocessing, as published, into raw numeric matrices ready for tensors.

For each seed: stratified train/test split (test fraction 0.2); a stratified labeled subset of
the training rows (fraction 0.3); columns that are all missing or constant on the training split
dropped; missing values filled with the training mode (categorical) or mean (numeric); numeric
columns z-scored with training statistics; the target label-encoded.

The result keeps *raw* values (z-scored numbers and integer category codes) so that corruption
can swap values column-wise; one-hot encoding happens later, in torch, after corruption
(:mod:`tcclib.encoding`).  Every seed keeps the dataset's full column list so that the seeds can
be stacked into one ensemble: a column dropped for a seed is marked inactive there.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from .datasets import Dataset, DatasetError


@dataclass
class SeedSplit:
    """One seed's preprocessed data (all arrays numpy).

    raw_train/raw_test: [N, M] float32, numeric columns z-scored, categorical columns as codes
    into ``levels[j]`` (the levels present in the training split; -1 for a test value unseen in
    training).  Inactive (dropped) columns hold 0.
    """

    seed: int
    raw_train: np.ndarray
    raw_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    labeled: np.ndarray  # bool [N_train]
    active: np.ndarray  # bool [M]
    is_cat: np.ndarray  # bool [M]
    n_levels: np.ndarray  # int [M]: levels present in training (0 for numeric / inactive)
    train_index: np.ndarray  # row positions in the original table
    test_index: np.ndarray

    @property
    def n_features(self) -> int:
        """Number of active (kept) features M."""
        return int(self.active.sum())

    @property
    def widths(self) -> np.ndarray:
        """One-hot width per column: 1 numeric or binary, L for L > 2 levels, 0 inactive."""
        w = np.where(self.is_cat & (self.n_levels > 2), self.n_levels, 1)
        return np.where(self.active, w, 0).astype(np.int64)


@dataclass
class Prepared:
    """A dataset preprocessed for several seeds."""

    name: str
    feature_names: list[str]
    is_cat: np.ndarray
    classes: list[str]
    splits: list[SeedSplit]

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def encode_target(y: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Label-encode the target (classes in declared order, unused levels dropped)."""
    if not isinstance(y.dtype, pd.CategoricalDtype):
        y = y.astype("category")
    y = y.cat.remove_unused_categories()
    return y.cat.codes.to_numpy().astype(np.int64), [str(c) for c in y.cat.categories]


def _split(y: np.ndarray, seed: int, test_fraction: float, labeled_fraction: float):
    idx = np.arange(len(y))
    counts = np.bincount(y)
    if counts.min() < 2:
        raise DatasetError(
            f"class {int(counts.argmin())} has {counts.min()} row(s): a stratified split needs "
            "at least 2 rows per class")
    tr, te = train_test_split(idx, test_size=test_fraction, stratify=y, random_state=seed)
    labeled = np.zeros(len(tr), dtype=bool)
    if labeled_fraction >= 1:
        labeled[:] = True
    else:
        pos = np.arange(len(tr))
        try:
            lab, _ = train_test_split(pos, train_size=labeled_fraction, stratify=y[tr], random_state=seed)
        except ValueError:
            warnings.warn("labeled subset too small to stratify; drawing it without stratification")
            lab, _ = train_test_split(pos, train_size=labeled_fraction, random_state=seed)
        labeled[lab] = True
    return tr, te, labeled


def prepare_seed(X: pd.DataFrame, y: np.ndarray, seed: int, test_fraction: float = 0.2,
                 labeled_fraction: float = 0.3) -> SeedSplit:
    """Preprocess one seed as published (see module docstring)."""
    tr, te, labeled = _split(y, seed, test_fraction, labeled_fraction)
    M = X.shape[1]
    raw_tr = np.zeros((len(tr), M), dtype=np.float32)
    raw_te = np.zeros((len(te), M), dtype=np.float32)
    active = np.zeros(M, dtype=bool)
    is_cat = np.zeros(M, dtype=bool)
    n_levels = np.zeros(M, dtype=np.int64)
    for j, col in enumerate(X.columns):
        s = X[col]
        s_tr, s_te = s.iloc[tr], s.iloc[te]
        if isinstance(s.dtype, pd.CategoricalDtype):
            is_cat[j] = True
            present = s_tr.dropna()
            if present.nunique() <= 1:
                continue  # all missing or constant on the training split: dropped
            mode = present.value_counts().idxmax()
            levels = sorted(present.unique(), key=list(s.cat.categories).index)
            lut = {lv: i for i, lv in enumerate(levels)}
            raw_tr[:, j] = s_tr.astype(object).where(s_tr.notna(), mode).map(lut).to_numpy(dtype=np.float32)
            te_codes = s_te.astype(object).where(s_te.notna(), mode).map(lut)
            raw_te[:, j] = te_codes.fillna(-1).to_numpy(dtype=np.float32)
            n_levels[j] = len(levels)
        else:
            v_tr = s_tr.to_numpy(dtype=np.float64)
            v_te = s_te.to_numpy(dtype=np.float64)
            finite = v_tr[~np.isnan(v_tr)]
            if finite.size == 0 or np.all(finite == finite[0]):
                continue
            mean = finite.mean()
            v_tr = np.where(np.isnan(v_tr), mean, v_tr)
            v_te = np.where(np.isnan(v_te), mean, v_te)
            std = v_tr.std()
            raw_tr[:, j] = (v_tr - mean) / std
            raw_te[:, j] = (v_te - mean) / std
        active[j] = True
    if not active.any():
        raise DatasetError(f"seed {seed}: every feature is constant or missing on the training split")
    return SeedSplit(seed, raw_tr, raw_te, y[tr], y[te], labeled, active, is_cat, n_levels, tr, te)


def prepare(ds: Dataset, seeds, test_fraction: float = 0.2, labeled_fraction: float = 0.3) -> Prepared:
    """Preprocess ``ds`` for every seed."""
    y, classes = encode_target(ds.y)
    is_cat = np.array([isinstance(t, pd.CategoricalDtype) for t in ds.X.dtypes])
    splits = [prepare_seed(ds.X, y, int(s), test_fraction, labeled_fraction) for s in seeds]
    return Prepared(ds.name, [str(c) for c in ds.X.columns], is_cat, classes, splits)
