"""Logistic regression tuned on the labeled rows: the ``probe`` head and the ``logreg_cv`` baseline.

One procedure serves both.  Each candidate design (a named block of features, or the blocks
side by side) is standardised on the rows it is fitted on; the inverse regularisation strength
``C`` is chosen from :data:`STRENGTHS` by stratified K-fold cross-validation on the labeled rows
(K = min(:data:`FOLDS`, the smallest class's count), folds shuffled from the seed), by the mean
held-out log-likelihood; ties go to the stronger penalty (smaller ``C``) and to the earlier
candidate.  Then the winner is refitted on every labeled row.

* ``head: probe`` (:func:`tcclib.method.heads.fit_classifier`): the frozen encoder's embedding
  and the row's preprocessed features; the candidates are the embedding alone, the features
  alone and both (the embedding block scaled so that its total variance equals the features'
  block: one penalty then weighs the two blocks alike, whatever their widths).  Its fitted
  model is folded into one linear layer (:func:`linear_layer`).
* ``logreg_cv`` (:class:`TunedLogisticRegression`): the features alone, the same grid and folds.

Every fit runs with BLAS held to one thread (:data:`BLAS_THREADS`): lbfgs on a few hundred rows
makes many small products, which a multi-threaded BLAS slows about tenfold (a 10-class,
480-row, 262-column member: 17 s on one thread, about 3 minutes on two), and whose thread split
moved the lbfgs path and so the held-out scores (by up to 0.02) with the machine's core count.

The unlabeled rows never enter: only the labeled rows are passed in.  When the smallest class
has fewer than 2 labeled rows no fold can hold every class: ``C`` is then :data:`FALLBACK_C`
(scikit-learn's default) on the design with every block, and nothing is cross-validated.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from tcclib.data.preprocess import spread

STRENGTHS = np.logspace(-4, 4, 10)
"""The grid of ``C`` (scikit-learn's ``LogisticRegressionCV`` default: 10 values, 1e-4 to 1e4)."""
FOLDS = 5
"""At most this many folds (fewer when the smallest class has fewer labeled rows)."""
FALLBACK_C = 1.0
"""``C`` when no cross-validation is possible (a class with a single labeled row)."""
MAX_ITER = 2000
"""lbfgs iterations per fit (as the untuned ``logreg`` baseline)."""
BLAS_THREADS = 1
"""BLAS threads during the probe's fits (see the module's text)."""


@dataclass(frozen=True)
class Choice:
    """What the cross-validation chose: the design (``block``: a block's name, or ``"both"``),
    ``C``, its mean held-out log-likelihood per row (NaN: not cross-validated) and the folds."""

    block: str
    C: float
    score: float
    folds: int


@dataclass(frozen=True)
class Linear:
    """A fitted logistic regression on raw inputs: ``logits = x @ weight + bias`` over ``classes``
    (the labels seen; a binary model's first class has logit 0)."""

    weight: np.ndarray
    bias: np.ndarray
    classes: np.ndarray


def folds(y: np.ndarray, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified folds of the labeled rows ``y`` (K = min(:data:`FOLDS`, smallest class));
    empty when the smallest class has fewer than 2 rows or there is one class."""
    counts = np.unique(y, return_counts=True)[1]
    k = min(FOLDS, int(counts.min()))
    if k < 2 or len(counts) < 2:
        return []
    splitter = StratifiedKFold(k, shuffle=True, random_state=seed % 2**32)
    return list(splitter.split(np.zeros(len(y)), y))


def design(blocks: dict[str, np.ndarray], block: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The affine map ``(scale, shift)`` per column of the concatenated blocks that standardises
    candidate ``block`` on ``rows`` (``x * scale + shift``; constant columns and the other
    blocks' columns get 0).  ``"both"``: every block, each scaled to the last block's total
    variance (its count of non-constant columns), so that one penalty weighs the blocks alike."""
    parts = [X[rows] for X in blocks.values()]
    sds = [spread(part) for part in parts]
    ref = max(int((sds[-1] > 0).sum()), 1)
    scales, shifts = [], []
    for name, part, sd in zip(blocks, parts, sds):
        live = sd > 0
        scale = np.where(live, 1.0 / np.where(live, sd, 1.0), 0.0)
        if block == "both":
            scale = scale * np.sqrt(ref / max(int(live.sum()), 1))
        elif block != name:
            scale = np.zeros_like(scale)
        scales.append(scale)
        shifts.append(-part.mean(0) * scale)
    return np.concatenate(scales), np.concatenate(shifts)


def _designed(blocks: dict[str, np.ndarray], block: str, rows: np.ndarray) -> np.ndarray:
    """Every row's design of candidate ``block`` standardised on ``rows`` (the used columns only)."""
    scale, shift = design(blocks, block, rows)
    keep = scale != 0
    return np.concatenate(list(blocks.values()), 1)[:, keep] * scale[keep] + shift[keep]


def _model(C: float, seed: int) -> LogisticRegression:
    return LogisticRegression(C=C, max_iter=MAX_ITER, warm_start=True, random_state=seed % 2**32)


def _one_blas_thread():
    """BLAS held to :data:`BLAS_THREADS` threads, for a whole path of fits (entering costs a few
    milliseconds: threadpoolctl looks up the loaded libraries each time)."""
    return threadpool_limits(BLAS_THREADS, user_api="blas")


def _fit(model: LogisticRegression, X: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> LogisticRegression:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a weak penalty on separable rows
        return model.fit(X, y, sample_weight=w)


def _held_out(model: LogisticRegression, X: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
    """Mean (weighted) log-likelihood of rows ``X`` with labels ``y``."""
    prob = model.predict_proba(X)
    col = np.searchsorted(model.classes_, y)
    ll = np.log(np.clip(prob[np.arange(len(y)), col], 1e-15, None))
    return float(np.average(ll, weights=w if w is not None and w.sum() > 0 else None))


def path_scores(blocks: dict[str, np.ndarray], block: str, y: np.ndarray, splits, seed: int, w) -> np.ndarray:
    """Held-out log-likelihood ``[folds, len(STRENGTHS)]`` of candidate ``block``, standardised
    on each fold's training rows; each fold's path warm-started from the previous (smaller) ``C``."""
    out = np.empty((len(splits), len(STRENGTHS)))
    with _one_blas_thread():
        for f, (tr, te) in enumerate(splits):
            X = _designed(blocks, block, tr)
            model = _model(STRENGTHS[0], seed)
            for j, C in enumerate(STRENGTHS):
                model.set_params(C=C)
                _fit(model, X[tr], y[tr], None if w is None else w[tr])
                out[f, j] = _held_out(model, X[te], y[te], None if w is None else w[te])
    return out


def choose(blocks: dict[str, np.ndarray], y: np.ndarray, seed: int, w: np.ndarray | None = None, candidates=None):
    """The :class:`Choice` among ``candidates`` (default: each block alone, then ``"both"`` when
    there are several) and :data:`STRENGTHS`, by cross-validation on the rows of ``blocks``
    (all labeled: ``y`` their labels, ``w`` their weights or None)."""
    if candidates is None:
        candidates = [*blocks, "both"] if len(blocks) > 1 else list(blocks)
    splits = folds(y, seed)
    if not splits:
        return Choice("both" if len(blocks) > 1 else next(iter(blocks)), FALLBACK_C, float("nan"), 0)
    best = None
    for cand in candidates:
        mean = path_scores(blocks, cand, y, splits, seed, w).mean(0)
        j = int(np.argmax(mean))  # first maximum: the smallest C
        if best is None or mean[j] > best.score:
            best = Choice(cand, float(STRENGTHS[j]), float(mean[j]), len(splits))
    return best


def fit_linear(blocks: dict[str, np.ndarray], y: np.ndarray, choice: Choice, seed: int, w=None) -> Linear:
    """The chosen design refitted on every row of ``blocks``, as one affine map of the raw
    concatenated blocks (the standardisation folded in).  One class: a constant model."""
    every = np.arange(len(y))
    scale, shift = design(blocks, choice.block, every)
    X = np.concatenate(list(blocks.values()), 1)
    classes = np.unique(y)
    if len(classes) < 2:
        return Linear(np.zeros((X.shape[1], 1)), np.zeros(1), classes)
    with _one_blas_thread():
        model = _fit(_model(choice.C, seed), X * scale + shift, y, w)
    coef, icpt = model.coef_.T, model.intercept_
    if len(classes) == 2:  # one logit: class 1 against class 0 (logit 0)
        coef, icpt = np.concatenate([np.zeros_like(coef), coef], 1), np.concatenate([[0.0], icpt])
    return Linear(coef * scale[:, None], icpt + shift @ coef, classes)


def linear_layer(fits: list[Linear], widths: list[int], n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Stacked weights ``[K, F, n_classes]`` and biases ``[K, 1, n_classes]`` of the members'
    :class:`Linear` fits (member k reads its first ``widths[k]`` inputs; a class it never saw
    gets a logit of :data:`ABSENT_LOGIT`)."""
    F = max(widths)
    W = np.zeros((len(fits), F, n_classes))
    b = np.full((len(fits), 1, n_classes), ABSENT_LOGIT)
    for k, (fit, width) in enumerate(zip(fits, widths)):
        W[k, :width][:, fit.classes] = fit.weight
        b[k, 0, fit.classes] = fit.bias
    return W, b


ABSENT_LOGIT = -1e4
"""The logit of a class without a labeled row (its probability is 0 in float32)."""


class TunedLogisticRegression(ClassifierMixin, BaseEstimator):
    """Logistic regression with ``C`` chosen by stratified cross-validation on the training rows
    (:func:`choose`, one block: the features): the ``logreg_cv`` baseline.

    Parameters
    ----------
    random_state : int, default 0
        Seeds the folds' shuffle.

    Attributes
    ----------
    classes_ : ndarray
        The labels seen in ``fit``.
    choice_ : Choice
        The chosen ``C`` and its cross-validated score (``folds`` 0: :data:`FALLBACK_C`).
    exponents_ : ndarray
        Each column is read times ``2 ** -exponents_[j]`` (:func:`column_exponents`), so that a
        column of any finite scale (1e-320 or 1e307) is fitted as the same column near 1 would be.
    """

    def __init__(self, random_state: int = 0):
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Choose ``C`` on ``X, y`` by cross-validation, then refit on every row."""
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        w = _row_weights(sample_weight, len(y))
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) > 1:  # (one class: a constant model, whatever the columns)
            _check_varies(np.asarray(X, dtype=np.float64))
        X = np.asarray(X, dtype=np.float64)
        self.exponents_ = column_exponents(X)
        blocks = {"features": np.ldexp(X, -self.exponents_)}
        self.choice_ = choose(blocks, codes, self.random_state, w)
        self.linear_ = fit_linear(blocks, codes, self.choice_, self.random_state, w)
        return self

    def decision_function(self, X) -> np.ndarray:
        """Logits ``[n, n_classes]`` of rows ``X``."""
        check_is_fitted(self, "linear_")
        X = validate_data(self, X, reset=False)
        W, b = linear_layer([self.linear_], [X.shape[1]], len(self.classes_))
        return np.ldexp(np.asarray(X, dtype=np.float64), -self.exponents_) @ W[0] + b[0]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[n, n_classes]`` in the order of ``classes_``."""
        z = self.decision_function(X)
        z = np.exp(z - z.max(1, keepdims=True))
        return z / z.sum(1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


def column_exponents(X: np.ndarray) -> np.ndarray:
    """Per column, the power of two ``e`` with the column's largest magnitude in ``[2**(e-1), 2**e)``
    (0 for a column of zeros): ``X * 2**-e`` lies within [-1, 1].  Multiplying by a power of two
    rounds nothing (subnormal values scale up exactly), and every product and sum of the fit then
    scales with it, so a column near 1 fits to the bit as before, and one at 1e-320 or 1e307 as the
    same column near 1 (its standardisation, ``1 / spread``, and the weights folded onto the raw
    column would otherwise overflow: NaN probabilities, or scikit-learn's "Input X contains NaN")."""
    top = np.abs(X).max(0, initial=0.0)
    return np.frexp(top)[1].astype(np.int64)


def _row_weights(sample_weight, n_rows: int) -> np.ndarray | None:
    """``sample_weight`` as float64, one finite non-negative weight per row (None: unweighted)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim != 1 or len(w) != n_rows:
        raise ValueError(
            f"sample_weight: one weight per row of X is needed ({n_rows} rows), got shape {w.shape}; "
            f"pass a 1-d array of length {n_rows}"
        )
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight: every weight must be finite and >= 0; pass non-negative numbers")
    return w


def _check_varies(X: np.ndarray) -> None:
    """At least one column of ``X`` must vary: the fit standardises the columns and leaves the
    constant ones out (with none left there is nothing to fit)."""
    if X.shape[0] and not (spread(X) > 0).any():
        raise ValueError(
            f"X: every one of its {X.shape[1]} column(s) is constant over the {X.shape[0]} rows, so logreg_cv "
            f"has no feature to fit; give it at least one column whose value varies"
        )


__all__ = [
    "FALLBACK_C",
    "FOLDS",
    "STRENGTHS",
    "Choice",
    "Linear",
    "TunedLogisticRegression",
    "choose",
    "fit_linear",
    "folds",
    "linear_layer",
]
