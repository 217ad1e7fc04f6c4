"""Baselines a practitioner would try first, on exactly the same rows as the contrastive methods.

For each seed: the same preprocessing, the same one-hot encoding, the same labeled rows and the
same test split.  ``xgboost`` and ``logreg`` train on the labeled rows only; ``self_training``
(scikit-learn's ``SelfTrainingClassifier`` around a logistic regression) also sees the unlabeled
training rows, like the paper's pseudo-labelling.  Each baseline is one entry of the registry
(:mod:`tcclib.method.registry`: its factory, whether it is semi-supervised, the settings it reads).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tcclib.data.encoding import TensorTable
from tcclib.data.preprocess import Prepared
from tcclib.method import identity, registry, rules
from tcclib.method.config import BASELINES, Config
from tcclib.method.metrics import accuracy, auroc


def _model(name: str, seed: int, cfg: Config):
    """The unfitted classifier of a registered baseline (:func:`tcclib.method.registry.register_baseline`)."""
    if name not in BASELINES:
        raise ValueError(
            f"unknown baseline {name!r}; known: {', '.join(BASELINES)} "
            f"(a new one: tcclib.method.registry.register_baseline)"
        )
    entry = registry.get(name)
    return entry.factory(seed, cfg.seen_by_baseline(entry, entry.reader()))


def run_baselines(prep: Prepared, cfg: Config | None = None, methods=None, did=None) -> pd.DataFrame:
    """Results rows (same columns as :func:`tcclib.running.train.run_dataset`) for the baselines."""
    cfg = cfg or Config()
    methods = list(BASELINES) if methods is None else list(methods)
    for m in methods:
        if m not in BASELINES:
            raise ValueError(
                f"unknown baseline {m!r}; known: {', '.join(BASELINES)} "
                f"(a new one: tcclib.method.registry.register_baseline)"
            )
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
            if registry.get(m).semi_supervised:
                _fit(m, model, Xtr, np.where(lab, sp.y_train, -1), sp.seed)
                classes = model.classes_
            else:
                # fit on the labels present among the labeled rows, renumbered 0..c-1
                # (XGBoost needs that when a class has no labeled row)
                present, y = np.unique(sp.y_train[lab], return_inverse=True)
                _fit(m, model, Xtr[lab], y, sp.seed)
                classes = present[model.classes_]
            p = np.zeros((len(Xte), prep.n_classes))
            p[:, classes] = _unkeyed_files_refused(m, "predicted", sp.seed, model.predict_proba, Xte)
            rows.append(_row(prep, did, sp, m, p, lab))
    out = pd.DataFrame(rows)
    out["did"] = out["did"].astype("Int64")
    return out


def _fit(name: str, model, X, y, seed: int) -> None:
    """``model.fit(X, y)`` (:func:`_unkeyed_files_refused`)."""
    _unkeyed_files_refused(name, "fit", seed, model.fit, X, y)


def _unkeyed_files_refused(name: str, doing: str, seed: int, call, *args):
    """``call(*args)``, a step of baseline ``name``'s model (``doing``: ``"fit"``, ``"predicted"``); a
    user's model that opens a file of the user's as it does so is refused in one line (no key sees
    it; the files its factory opens when called are keyed).  A user's model runs with the global
    random generators (numpy's, Python's, torch's) set from the split's ``seed``: a model that draws
    from them (no ``random_state``) fits the same whatever the process seeded before (a plugin's
    top-level ``np.random.seed(SEED)``, which no key holds)."""
    if registry.get(name).from_tcclib:
        return call(*args)
    with identity.files_read() as opened, rules.seeded_global_generators(seed):
        out = call(*args)
    read = identity.data_files(opened)
    if read:
        raise identity.Unkeyable(
            f"the model of baseline {name!r} opened {', '.join(Path(p).name for p in read)} as it {doing}, which "
            f"no key sees (an edit of it would not fit it again): read it in the factory, whose files are keyed by "
            f"their bytes when it is called, or into a module constant"
        )
    return out


def _row(prep, did, sp, method, prob, lab):
    return dict(
        dataset=prep.name,
        did=did,
        seed=sp.seed,
        method=method,
        accuracy=accuracy(sp.y_test, prob),
        auroc=auroc(sp.y_test, prob),
        n_train=len(sp.y_train),
        n_labeled=int(lab.sum()),
        n_test=len(sp.y_test),
        n_features=sp.n_features,
    )
