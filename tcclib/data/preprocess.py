"""Per-seed preprocessing, as published, into raw numeric matrices ready for tensors.

For each seed: stratified train/test split (test fraction 0.2); a stratified labeled subset of
the training rows (fraction 0.3; ``labeled_split="random"``: drawn as the authors' code does,
without stratification, see :func:`_split`); columns that are all missing or constant on the training split
dropped; missing values filled with the training mode (categorical) or mean (numeric); numeric
columns z-scored with training statistics; the target label-encoded.

The result keeps *raw* values (z-scored numbers and integer category codes) so that corruption
can swap values column-wise; one-hot encoding happens later, in torch, after corruption
(:mod:`tcclib.data.encoding`).  Every seed keeps the dataset's full column list so that the seeds can
be stacked into one ensemble: a column dropped for a seed is marked inactive there.

Checks before any work (each a :class:`~tcclib.data.sources.DatasetError` or
:class:`~tcclib.method.config.ConfigError` naming the dataset and what to change):
:func:`prepare` refuses classes with fewer rows than the split needs
(:func:`min_rows_per_class`); :func:`tcclib.method.inputs.check_training_inputs`, which
:func:`tcclib.running.train.run_dataset` calls right after :func:`prepare`, refuses seeds with too few
features to corrupt and runs whose estimated tensors (:func:`tcclib.method.inputs.estimate_memory`) exceed the memory
budget (:data:`tcclib.method.inputs.MEMORY_BUDGET_GB`, ``$TCC_MEMORY_BUDGET_GB``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from tcclib.data.sources import Dataset, DatasetError
from tcclib.util.errors import ConfigError


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


def min_rows_per_class(test_fraction: float = 0.2, labeled_fraction: float = 0.3) -> int:
    """Rows every class needs for the stratified split: one in the test split, one labeled.

    A stratified split gives a class with ``n`` rows about ``n * test_fraction`` test rows and
    ``n * (1 - test_fraction) * labeled_fraction`` labeled ones; each must be at least one, and
    scikit-learn needs two rows per class to stratify at all::

        max(2, ceil(1 / test_fraction), ceil(1 / ((1 - test_fraction) * labeled_fraction)))

    5 for the published 80/20 split with 30 % labeled.
    """
    if not (0 < test_fraction < 1 and 0 < labeled_fraction <= 1):
        raise ConfigError(
            f"test_fraction must be in (0, 1) and labeled_fraction in (0, 1], got "
            f"{test_fraction} and {labeled_fraction}"
        )
    eps = 1e-9
    return max(2, math.ceil(1 / test_fraction - eps), math.ceil(1 / ((1 - test_fraction) * labeled_fraction) - eps))


def _split_words(test_fraction: float, labeled_fraction: float) -> str:
    return (
        f"the stratified {100 * (1 - test_fraction):g}/{100 * test_fraction:g} train/test split with "
        f"{100 * labeled_fraction:g} % of the training rows labeled"
    )


CONTINUOUS_MIN_CLASSES = 20
"""A numeric target with at least this many distinct values, most of them too rare to split, or
any of them fractional, looks continuous (a regression target) rather than a few classes."""


def _looks_continuous(classes, n_small: int) -> bool:
    values = pd.to_numeric(pd.Series([str(c) for c in classes]), errors="coerce")
    if len(values) < CONTINUOUS_MIN_CLASSES or values.isna().any():
        return False
    return bool((values % 1 != 0).any()) or n_small > len(values) / 2


def check_class_sizes(
    y: np.ndarray, classes, test_fraction: float = 0.2, labeled_fraction: float = 0.3, name: str = "dataset"
) -> None:
    """Raise a :class:`DatasetError` naming the classes with fewer rows than :func:`min_rows_per_class`.

    ``y``: label codes into ``classes`` (the class names).
    """
    counts = np.bincount(np.asarray(y), minlength=len(classes))
    need = min_rows_per_class(test_fraction, labeled_fraction)
    small = [i for i in np.argsort(counts, kind="stable") if counts[i] < need]
    if not small:
        return
    if _looks_continuous(classes, len(small)):
        raise DatasetError(
            f"{name}: the target looks continuous ({len(classes)} distinct numbers in {counts.sum()} rows, "
            f"{len(small)} of them too rare to split, e.g. {', '.join(map(str, list(classes)[:3]))}): a regression "
            "target? tcclib classifies: give the table's class column as the target, or bin the numbers into "
            "a few classes first (e.g. pandas.qcut(y, 4))"
        )
    first, rest = small[0], small[1:]
    others = (
        (
            " ("
            + ", ".join(f"class {classes[i]!r} {counts[i]}" for i in rest[:10])
            + (", ..." if len(rest) > 10 else "")
            + ")"
        )
        if rest
        else ""
    )
    raise DatasetError(
        f"{name}: class {classes[first]!r} has {counts[first]} row(s){others}; "
        f"{_split_words(test_fraction, labeled_fraction)} needs at least {need} rows per class "
        f"(one in the test split: 1/{test_fraction:g} = {1 / test_fraction:.3g} rows; one labeled: "
        f"1/({1 - test_fraction:g} x {labeled_fraction:g}) = "
        f"{1 / ((1 - test_fraction) * labeled_fraction):.3g} rows). "
        "Add rows of these classes, merge them into others or drop them, or change "
        "test_fraction / labeled_fraction"
    )


LABELED_SPLITS = ("stratified", "random")


def authors_labeled_rows(n_train: int, seed: int, labeled_fraction: float) -> np.ndarray:
    """The authors' labeled subset (main.py): ``fix_seed(seed)`` seeds NumPy's global generator,
    and its first draw is ``np.random.permutation(len(train_data))[:int(len(train_data) *
    FRACTION_LABELED)]``, not stratified.  The same draw from a generator of our own (the global
    one is left alone).  Positions into the training rows, in the order drawn."""
    return np.random.RandomState(seed).permutation(n_train)[: int(n_train * labeled_fraction)]


def _split(
    y: np.ndarray,
    seed: int,
    test_fraction: float,
    labeled_fraction: float,
    classes=None,
    name: str = "dataset",
    labeled_split: str = "stratified",
):
    """Stratified train/test split and labeled subset of the training rows.

    ``labeled_split="stratified"`` (the default): a stratified labeled subset; when it cannot be
    stratified (fewer labeled or unlabeled rows than classes) it is drawn without stratification,
    with a warning.  ``"random"``: the authors' unstratified draw (:func:`authors_labeled_rows`;
    the same count, ``floor(fraction x n)``).

    Classes too small for it are a :class:`DatasetError` (:func:`check_class_sizes`); so is a
    split that still leaves a class without a test or a labeled row (with ``random`` a small class
    can draw no labeled row: the error then says so and names ``labeled_split: stratified``).
    """
    if labeled_split not in LABELED_SPLITS:
        raise ConfigError(f"labeled_split: 'stratified' or 'random', got {labeled_split!r}")
    classes = list(classes) if classes is not None else [str(c) for c in range(int(y.max()) + 1)]
    check_class_sizes(y, classes, test_fraction, labeled_fraction, name)
    idx = np.arange(len(y))
    try:
        tr, te = train_test_split(idx, test_size=test_fraction, stratify=y, random_state=seed)
    except ValueError as e:  # not expected after check_class_sizes; never scikit-learn's words alone
        raise DatasetError(f"{name}: seed {seed}: {_split_words(test_fraction, labeled_fraction)} failed: {e}") from e
    labeled = np.zeros(len(tr), dtype=bool)
    if labeled_fraction >= 1:
        labeled[:] = True
    elif labeled_split == "random":
        labeled[authors_labeled_rows(len(tr), seed, labeled_fraction)] = True
    else:
        pos = np.arange(len(tr))
        try:
            lab, _ = train_test_split(pos, train_size=labeled_fraction, stratify=y[tr], random_state=seed)
        except ValueError as e:
            warnings.warn(
                f"{name}: seed {seed}: the labeled subset ({labeled_fraction:g} of {len(tr)} training "
                f"rows) cannot be stratified over {len(classes)} classes ({e}); drawing it without "
                "stratification",
                stacklevel=3,
            )
            lab, _ = train_test_split(pos, train_size=labeled_fraction, random_state=seed)
        labeled[lab] = True
    n_test = np.bincount(y[te], minlength=len(classes))
    n_lab = np.bincount(y[tr][labeled], minlength=len(classes))
    for what, n in (("test", n_test), ("labeled", n_lab)):
        if (n == 0).any():
            missing = [classes[i] for i in np.flatnonzero(n == 0)]
            raise DatasetError(
                f"{name}: seed {seed}: {_split_words(test_fraction, labeled_fraction)} left no {what} row "
                f"of class(es) {', '.join(map(repr, missing[:10]))}; give these classes more rows, or "
                "change test_fraction / labeled_fraction"
                + (
                    "; the labeled subset was drawn without stratification (labeled_split: random, the "
                    "authors' draw): labeled_split: stratified gives every class labeled rows"
                    if what == "labeled" and labeled_split == "random"
                    else ""
                )
            )
    return tr, te, labeled


class ColumnError(DatasetError):
    """New rows do not fit the columns a preprocessing was fitted on."""


@dataclass
class FittedColumns:
    """Per-column preprocessing fitted on training rows and applied to any rows later.

    For each column of the training table: categorical columns keep the levels present in the
    training rows (in declared order) and fill missing values with the training mode; numeric
    columns fill missing values with the training mean and are z-scored with the training mean
    and standard deviation.  A column that is all missing or constant in training is inactive
    (all zeros).  :meth:`transform` gives the raw ``[n, M]`` float32 matrix corruption works on:
    z-scores, and category codes (``-1`` for a level unseen in training, which one-hot encodes
    as all zeros).  :func:`prepare_seed` and :class:`tcclib.method.estimator.TCCClassifier` both use it.
    """

    names: list[str]
    is_cat: np.ndarray  # bool [M]
    active: np.ndarray  # bool [M]
    levels: list  # categorical: the training levels (list); numeric / inactive: None
    fill: list  # the training mode (categorical) or mean (numeric); None if inactive
    std: np.ndarray  # float64 [M]: numeric columns' training standard deviation (after filling)

    @property
    def n_levels(self) -> np.ndarray:
        return np.array([len(lv) if lv is not None else 0 for lv in self.levels], dtype=np.int64)

    @classmethod
    def fit(cls, X: pd.DataFrame) -> FittedColumns:
        """Fit on training rows ``X`` (categorical columns of category dtype, the others numeric)."""
        M = X.shape[1]
        is_cat = np.zeros(M, dtype=bool)
        active = np.zeros(M, dtype=bool)
        levels: list = [None] * M
        fill: list = [None] * M
        std = np.ones(M, dtype=np.float64)
        for j, col in enumerate(X.columns):
            s = X[col]
            if isinstance(s.dtype, pd.CategoricalDtype):
                is_cat[j] = True
                present = s.dropna()
                if present.nunique() <= 1:
                    continue  # all missing or constant on the training rows: dropped
                declared = {c: i for i, c in enumerate(s.cat.categories)}  # (a dict: linear in the levels)
                levels[j] = sorted(present.unique(), key=declared.__getitem__)
                fill[j] = present.value_counts().idxmax()
            else:
                v = s.to_numpy(dtype=np.float64)
                finite = v[~np.isnan(v)]
                if finite.size == 0 or np.all(finite == finite[0]):
                    continue
                mean = finite.mean()
                fill[j] = mean
                std[j] = spread(np.where(np.isnan(v), mean, v))
            active[j] = True
        return cls([str(c) for c in X.columns], is_cat, active, levels, fill, std)

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """The raw ``[n, M]`` float32 matrix of rows ``X`` (columns in the fitted order)."""
        raw = np.zeros((len(X), len(self.names)), dtype=np.float32)
        for j, col in enumerate(X.columns):
            if not self.active[j]:
                continue
            s = X[col]
            if self.is_cat[j]:
                lut = {lv: i for i, lv in enumerate(self.levels[j])}
                codes = s.astype(object).where(s.notna(), self.fill[j]).map(lut)
                _check_levels_met(col, s, codes, self.levels[j])
                raw[:, j] = codes.fillna(-1).to_numpy(dtype=np.float32)
            else:
                try:
                    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
                except (TypeError, ValueError) as e:
                    raise ColumnError(
                        f"column {col!r} was numeric in training but holds values that are not "
                        f"numbers here ({' '.join(str(e).split())[:120]}); convert it with "
                        "pd.to_numeric(..., errors='coerce') (missing values are imputed)"
                    ) from None
                mean = self.fill[j]
                raw[:, j] = (np.where(np.isnan(v), mean, v) - mean) / self.std[j]
        return raw


def _check_levels_met(col, values: pd.Series, codes: pd.Series, levels) -> None:
    """A :class:`ColumnError` when no value of categorical column ``col`` is a level training saw
    and they are values of another kind (numbers for text levels, or text for numbers): the column
    given as its integer codes, say, where every row would be an unseen level (one-hot zeros).
    A level training did not see among seen ones, or of the same kind, stays an unseen level."""
    given = values[values.notna()]
    if given.empty or codes[values.notna()].notna().any():
        return
    kinds = {_value_kind(v) for v in levels}
    if kinds and not kinds & {_value_kind(v) for v in given.head(100)}:
        shown = ", ".join(repr(v) for v in list(levels)[:4]) + (", ..." if len(levels) > 4 else "")
        raise ColumnError(
            f"column {col!r} was categorical in training with levels {shown}, but none of its values "
            f"here is one of them (e.g. {given.iloc[0]!r}: {type(given.iloc[0]).__name__}, not a level's kind); "
            "pass the column as it was in training (its labels, not integer codes: "
            "pd.Categorical.from_codes(codes, categories) gives them back)"
        )


def _value_kind(value) -> str:
    """``number`` or ``text`` (or the type's name): how a categorical column's values compare."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "number"
    if isinstance(value, (str, bytes)):
        return "text"
    return type(value).__name__


def spread(x: np.ndarray) -> np.ndarray:
    """The standard deviation of ``x`` along its first axis: numpy's, to the bit, except where the
    squares under- or overflow (values near 1e-200 or 1e200: 0 or inf), where it is taken on ``x``
    divided by its largest magnitude (so such a feature keeps its spread instead of being dropped)."""
    with np.errstate(over="ignore", under="ignore"):
        sd = x.std(0)
    odd = ~((sd > 1e-100) & (sd < 1e100))
    if np.any(odd):
        top = np.abs(x).max(0)
        sd = np.where(odd, (x / np.where(top > 0, top, 1.0)).std(0) * top, sd)
    return sd


def prepare_seed(
    X: pd.DataFrame,
    y: np.ndarray,
    seed: int,
    test_fraction: float = 0.2,
    labeled_fraction: float = 0.3,
    classes=None,
    name: str = "dataset",
    labeled_split: str = "stratified",
) -> SeedSplit:
    """Preprocess one seed as published (see module docstring): :class:`FittedColumns` fitted on
    the seed's training rows, applied to its training and test rows.

    ``classes`` (names of the label codes ``y``) and ``name`` only make error messages clearer;
    ``labeled_split``: see :func:`_split`.
    """
    tr, te, labeled = _split(y, seed, test_fraction, labeled_fraction, classes, name, labeled_split)
    cols = FittedColumns.fit(X.iloc[tr])
    if not cols.active.any():
        raise DatasetError(f"{name}: seed {seed}: every feature is constant or missing on the training split")
    raw_tr = cols.transform(X.iloc[tr])
    raw_te = cols.transform(X.iloc[te])
    finite = np.isfinite(raw_tr).all(0) & np.isfinite(raw_te).all(0)
    if not finite.all():  # validate_dataset refuses inf and |x| > float32 max; this is the last guard
        raise DatasetError(
            f"{name}: seed {seed}: z-scoring gave non-finite values in column(s) "
            f"{', '.join(str(c) for c in X.columns[~finite][:10])}; rescale them"
        )
    return SeedSplit(seed, raw_tr, raw_te, y[tr], y[te], labeled, cols.active, cols.is_cat, cols.n_levels, tr, te)


def prepare(
    ds: Dataset, seeds, test_fraction: float = 0.2, labeled_fraction: float = 0.3, labeled_split: str = "stratified"
) -> Prepared:
    """Preprocess ``ds`` for every seed.

    Before any seed: every class needs :func:`min_rows_per_class` rows (5 for the published
    fractions), else a :class:`DatasetError` names the small classes and the minimum.
    ``labeled_split``: ``"stratified"`` or the authors' ``"random"`` labeled subset (:func:`_split`;
    a run's value is ``cfg.effective("labeled_split")``, see :func:`tcclib.method.inputs.prepare_config`).
    """
    y, classes = encode_target(ds.y)
    check_class_sizes(y, classes, test_fraction, labeled_fraction, ds.name)
    is_cat = np.array([isinstance(t, pd.CategoricalDtype) for t in ds.X.dtypes])
    splits = [
        prepare_seed(ds.X, y, int(s), test_fraction, labeled_fraction, classes, ds.name, labeled_split) for s in seeds
    ]
    return Prepared(ds.name, [str(c) for c in ds.X.columns], is_cat, classes, splits)
