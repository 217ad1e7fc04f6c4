"""Feature correlations from XGBoost importances (the paper's "where to corrupt" signal).

For every active feature i, an XGBoost model (classifier for a categorical feature, regressor
for a numeric one; 100 trees, depth 10, eta 0.1, subsample 0.7, colsample 0.8 as published)
predicts it from the other features of the training split.  Its normalised gain importances form
row i of the importance matrix ``W`` (``W[i, j]``: how much feature j helps predict feature i;
zero diagonal, inactive features zero).  The paper's "feature correlation value range" is the
mean over features of ``max_j W[i, j] - min_j W[i, j]`` (j over the other active features).

:func:`importance_matrices` caches each seed's matrix in ``cache_dir`` as an ``.npz`` holding the
matrix, what it was made for and the sha256 of its bytes, written atomically and checked on every
load: a damaged, edited or foreign file is reported, discarded and computed again.
"""

from __future__ import annotations

import functools
import json
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tcclib.data.preprocess import SeedSplit
from tcclib.method.config import Config, xgb_parameters
from tcclib.util import threads

IMPORTANCE_SWITCHES = ("xgb_categorical", "xgb_seed", "zero_importance")
"""The fidelity switches (:data:`tcclib.method.config.FIDELITY_SWITCHES`) an importance matrix depends on."""


def _xgb_params(cfg: Config, seed: int, n_threads: int | None = None, device: str | None = None) -> dict:
    """The published XGBoost settings (``max_bin``: XGBoost's default unless ``xgb_max_bin`` opts
    into fewer bins), with the fidelity switches in force; ``n_threads`` (default:
    this job's share of the cores, :func:`tcclib.util.threads.n_jobs`) and ``device`` only say where
    they run.  On the CPU the ``hist`` models, and so the importances, are the same bits whatever
    the thread count (``tests/test_speed.py`` checks it)."""
    params = dict(
        **xgb_parameters(cfg),
        importance_type="gain",
        random_state=seed,
        n_jobs=n_threads or threads.n_jobs(),
        tree_method="hist",
        max_bin=cfg.xgb_max_bin,
        verbosity=0,
    )
    if cfg.effective("xgb_seed") == "xgboost_default":
        params.pop("random_state")  # the authors pass none: XGBoost's own seed (0) for every model
    if cfg.effective("xgb_categorical") == "native":
        params["enable_categorical"] = True
    if device is not None and device != "cpu":
        params["device"] = device
    return params


def xgb_device(cfg: Config) -> str:
    """Where the importance models are asked to run: ``"cuda"`` (XGBoost's GPU ``hist``) when the
    run is on a GPU, else ``"cpu"``.  GPU trees round differently, so their importances are close
    to, not the same bits as, the CPU's.  Where XGBoost cannot use a GPU they run on the cores
    (:func:`usable_device`)."""
    return "cuda" if str(cfg.device).startswith("cuda") else "cpu"


def usable_device(device: str) -> str:
    """``device``, or ``"cpu"`` when it is a GPU that XGBoost cannot use here (a CPU-only XGBoost
    build, or no GPU it can see): then the fits run on the cores, as concurrent single-threaded
    fits, and one line says so (once per process), instead of an error or a warning per model."""
    if device == "cpu":
        return device
    problem = _cuda_problem(device)
    if problem is None:
        return device
    if problem not in _told:
        _told.add(problem)
        print(f"importances: XGBoost on the CPU cores instead of {device}: {problem}")
    return "cpu"


_told: set = set()


@functools.cache
def _cuda_problem(device: str) -> str | None:
    """Why XGBoost cannot fit on ``device`` here (None: it can).  One tiny fit finds out: a
    CPU-only build raises, and a CUDA build that sees no GPU moves the fit to the CPU itself
    (with warnings, here caught) and says so in the booster's configuration."""
    import xgboost  # deferred: XGBoost loads only when a model is fitted

    if not xgboost.build_info().get("USE_CUDA", False):
        return f"this XGBoost {xgboost.__version__} is a CPU-only build (install a CUDA build for GPU fits)"
    data = xgboost.DMatrix(np.arange(8, dtype=np.float32).reshape(4, 2), label=np.arange(4, dtype=np.float32))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            booster = xgboost.train({"device": device, "tree_method": "hist", "verbosity": 0}, data, 1)
        except xgboost.core.XGBoostError as e:
            return f"XGBoost cannot fit on {device}: {str(e).strip().splitlines()[0][:160]}"
    got = json.loads(booster.save_config())["learner"]["generic_param"]["device"]
    if not got.startswith("cuda"):
        return f"XGBoost {xgboost.__version__} sees no GPU for {device} (it would fall back to the CPU itself)"
    return None


def default_jobs() -> int:
    """Concurrent importance fits by default: one per thread of this job's share of the cores
    (:func:`tcclib.util.threads.n_jobs`), each fit single-threaded."""
    return max(1, threads.n_jobs())


def _features(X: np.ndarray, cols: np.ndarray, split: SeedSplit, native: bool):
    """The predictors of one importance model: the columns ``cols`` of ``X`` as a float32 matrix
    (categorical features as their integer codes), or with ``native`` a DataFrame whose
    categorical features are pandas categoricals over their training levels (codes 0..L-1), for
    XGBoost's ``enable_categorical`` splits as in the authors' code."""
    if not native or not split.is_cat[cols].any():
        return X[:, cols]
    import pandas as pd  # deferred: pandas loads only when this runs

    data = {}
    for j in cols:
        if split.is_cat[j]:
            data[f"f{j}"] = pd.Categorical.from_codes(
                X[:, j].round().astype(np.int64), categories=list(range(int(split.n_levels[j])))
            )
        else:
            data[f"f{j}"] = X[:, j]
    return pd.DataFrame(data)


def _fit_one(
    X: np.ndarray, i: int, others: np.ndarray, split: SeedSplit, params: dict, native: bool, keep_zero: bool
) -> np.ndarray:
    """Row ``i`` of the importance matrix: gain importances of ``others`` predicting feature ``i``
    (a model with no gain: a uniform row, or zeros with ``keep_zero``)."""
    from xgboost import XGBClassifier, XGBRegressor  # deferred: XGBoost loads only when a model is fitted

    target = X[:, i]
    features = _features(X, others, split, native)
    if split.is_cat[i]:
        model = XGBClassifier(**params)
        model.fit(features, target.round().astype(np.int64))
    else:
        model = XGBRegressor(**params)
        model.fit(features, target)
    imp = np.nan_to_num(np.asarray(model.feature_importances_, dtype=np.float64))
    total = imp.sum()
    if total > 0:
        return imp / total
    return np.zeros(others.size) if keep_zero else np.full(others.size, 1.0 / others.size)


def importance_matrix(
    split: SeedSplit,
    cfg: Config | None = None,
    progress=None,
    n_jobs: int | None = None,
    device: str | None = None,
    only=None,
) -> np.ndarray:
    """The ``[M, M]`` importance matrix of one seed's training split (rows sum to 1).

    The fidelity switches in force (:data:`IMPORTANCE_SWITCHES`) choose how: categorical
    predictors as codes or ``native`` categoricals; each model seeded with the split's seed or
    XGBoost's default; a model with no gain (all importances 0) as a ``uniform`` row 1/(M-1) or,
    with ``zero_importance: keep`` (the authors), an all-zero row (then not summing to 1).

    n_jobs: how many of the M independent XGBoost fits run at once, each on
    ``max(1, threads // n_jobs)`` threads of this job's share (default :func:`default_jobs`: one
    single-threaded fit per thread; ``n_jobs=1``: one fit at a time on all of them, the old way).
    The fits release the GIL, so they run in threads (no fork: XGBoost's and torch's OpenMP
    runtimes hang in forked children).  Same matrix, bit for bit, whatever ``n_jobs``: a fit's
    trees do not depend on its thread count and each row is one fit's.  device: ``"cpu"`` or
    ``"cuda"`` (default :func:`xgb_device` of ``cfg``; a GPU XGBoost cannot use here falls back to
    the cores with a one-line notice, :func:`usable_device`).  only: fit just the models of these
    active features, each still on all the other active features (the benchmark times a sample
    of them); their rows are as in the whole matrix, the other rows stay zero."""
    cfg = cfg or Config()
    X = split.raw_train.astype(np.float32)
    M = X.shape[1]
    act = np.flatnonzero(split.active)
    W = np.zeros((M, M), dtype=np.float64)
    native = cfg.effective("xgb_categorical") == "native"
    keep_zero = cfg.effective("zero_importance") == "keep"
    todo = [(int(i), act[act != i]) for i in act if act.size > 1]
    if only is not None:
        keep = {int(i) for i in only}
        todo = [t for t in todo if t[0] in keep]
    device = usable_device(device or xgb_device(cfg))
    jobs = 1 if device != "cpu" else max(1, min(n_jobs or default_jobs(), len(todo) or 1))
    params = _xgb_params(cfg, split.seed, max(1, threads.n_jobs() // jobs), device)

    def one(item):
        i, others = item
        return _fit_one(X, i, others, split, params, native, keep_zero)

    if jobs == 1:
        rows = map(one, todo)
    else:
        ex = ThreadPoolExecutor(jobs, thread_name_prefix="tcc-xgb")
        rows = ex.map(one, todo)
    try:
        for (i, others), row in zip(todo, rows):
            W[i, others] = row
            if progress is not None:
                progress.update(1)
    finally:
        if jobs > 1:
            ex.shutdown(wait=True, cancel_futures=True)
    return W


def correlation_range(W: np.ndarray, active: np.ndarray | None = None) -> float:
    """Mean over features of the range of the importances predicting it (the paper's table)."""
    M = W.shape[0]
    act = np.flatnonzero(np.ones(M, bool) if active is None else active)
    ranges = []
    for i in act:
        others = act[act != i]
        if others.size:
            ranges.append(W[i, others].max() - W[i, others].min())
    return float(np.mean(ranges)) if ranges else 0.0
