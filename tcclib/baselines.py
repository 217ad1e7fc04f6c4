"""Baselines a practitioner would try first, on exactly the same rows as the contrastive methods.

For each seed: the same preprocessing, the same one-hot encoding, the same labeled rows and the
same test split.  ``xgboost`` and ``logreg`` train on the labeled rows only; ``self_training``
(scikit-learn's ``SelfTrainingClassifier`` around a logistic regression) also sees the unlabeled
training rows, like the paper's pseudo-labelling.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from . import threads
from .config import BASELINES, Config
from .encoding import TensorTable
from .metrics import accuracy, auroc
from .preprocess import Prepared



def _model(name: str, seed: int, cfg: Config):
    from sklearn.linear_model import LogisticRegression
    from sklearn.semi_supervised import SelfTrainingClassifier
    from xgboost import XGBClassifier

    if name == "xgboost":
        return XGBClassifier(n_estimators=cfg.xgb_trees, max_depth=cfg.xgb_depth, learning_rate=cfg.xgb_eta,
                             subsample=cfg.xgb_subsample, colsample_bytree=cfg.xgb_colsample,
                             random_state=seed, n_jobs=threads.n_jobs(), tree_method="hist", verbosity=0)
    if name == "logreg":
        return LogisticRegression(max_iter=2000)
    if name == "self_training":
        return SelfTrainingClassifier(LogisticRegression(max_iter=2000), threshold=0.9)
    raise ValueError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")


def run_baselines(prep: Prepared, cfg: Config | None = None, methods=BASELINES, did=None) -> pd.DataFrame:
    """Results rows (same columns as :func:`tcclib.train.run_dataset`) for the baselines."""
    cfg = cfg or Config()
    tab = TensorTable.from_prepared(prep)
    rows = []
    for si, sp in enumerate(prep.splits):
        idx = torch.tensor([si])
        d = int(tab.widths[si])
        Xtr = tab.encode(tab.raw_train[idx], idx)[0, :, :d].numpy()
        Xte = tab.encode(tab.raw_test[idx], idx)[0, :, :d].numpy()
        lab = sp.labeled
        for m in methods:
            model = _model(m, sp.seed, cfg)
            if m == "self_training":
                model.fit(Xtr, np.where(lab, sp.y_train, -1))
                classes = model.classes_
            else:
                # fit on the labels present among the labeled rows, renumbered 0..c-1
                # (XGBoost needs that when a class has no labeled row)
                present, y = np.unique(sp.y_train[lab], return_inverse=True)
                model.fit(Xtr[lab], y)
                classes = present[model.classes_]
            p = np.zeros((len(Xte), prep.n_classes))
            p[:, classes] = model.predict_proba(Xte)
            rows.append(_row(prep, did, sp, m, p, lab))
    out = pd.DataFrame(rows)
    out["did"] = out["did"].astype("Int64")
    return out


def _row(prep, did, sp, method, prob, lab):
    return dict(dataset=prep.name, did=did, seed=sp.seed, method=method,
                accuracy=accuracy(sp.y_test, prob), auroc=auroc(sp.y_test, prob),
                n_train=len(sp.y_train), n_labeled=int(lab.sum()), n_test=len(sp.y_test),
                n_features=sp.n_features)
