"""Test metrics: accuracy and AUROC (binary: positive-class probability; multi-class: one-vs-rest)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score


def accuracy(y: np.ndarray, prob: np.ndarray) -> float:
    """Fraction of rows whose most probable class is the true one."""
    return float(np.mean(np.asarray(prob).argmax(-1) == np.asarray(y)))


def auroc(y: np.ndarray, prob: np.ndarray) -> float:
    """AUROC: binary uses the positive class's probability; multi-class is the macro one-vs-rest
    average over the classes present in ``y`` (a class absent from the test split has no AUROC)."""
    y = np.asarray(y)
    prob = np.asarray(prob, dtype=np.float64)
    n_classes = prob.shape[1]
    if n_classes == 2:
        if len(np.unique(y)) < 2:
            return float("nan")
        return float(roc_auc_score(y, prob[:, 1]))
    present = np.unique(y)
    if len(present) == n_classes:
        prob = prob / prob.sum(1, keepdims=True)
        return float(roc_auc_score(y, prob, multi_class="ovr", labels=np.arange(n_classes)))
    scores = [roc_auc_score(y == c, prob[:, c]) for c in present]
    return float(np.mean(scores)) if len(present) > 1 else float("nan")
