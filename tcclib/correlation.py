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

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np

from . import threads
from .config import Config
from .preprocess import SeedSplit


IMPORTANCE_SWITCHES = ("xgb_categorical", "xgb_seed", "zero_importance")
"""The fidelity switches (:data:`tcclib.config.FIDELITY_SWITCHES`) an importance matrix depends on."""


def _xgb_params(cfg: Config, seed: int, n_threads: int | None = None, device: str | None = None) -> dict:
    """The published XGBoost settings (``max_bin``: XGBoost's default unless ``xgb_max_bin`` opts
    into fewer bins), with the fidelity switches in force; ``n_threads`` (default:
    this job's share of the cores, :func:`tcclib.threads.n_jobs`) and ``device`` only say where
    they run.  On the CPU the ``hist`` models, and so the importances, are the same bits whatever
    the thread count (``tests/test_speed.py`` checks it)."""
    params = dict(n_estimators=cfg.xgb_trees, max_depth=cfg.xgb_depth, learning_rate=cfg.xgb_eta,
                  subsample=cfg.xgb_subsample, colsample_bytree=cfg.xgb_colsample,
                  importance_type="gain", random_state=seed, n_jobs=n_threads or threads.n_jobs(),
                  tree_method="hist", max_bin=cfg.xgb_max_bin, verbosity=0)
    if cfg.effective("xgb_seed") == "xgboost_default":
        params.pop("random_state")  # the authors pass none: XGBoost's own seed (0) for every model
    if cfg.effective("xgb_categorical") == "native":
        params["enable_categorical"] = True
    if device is not None and device != "cpu":
        params["device"] = device
    return params


def xgb_device(cfg: Config) -> str:
    """Where the importance models run: ``"cuda"`` (XGBoost's GPU ``hist``) when the run is on a
    GPU, else ``"cpu"``.  GPU trees round differently, so their importances are close to, not the
    same bits as, the CPU's."""
    return "cuda" if str(cfg.device).startswith("cuda") else "cpu"


def default_jobs() -> int:
    """Concurrent importance fits by default: one per thread of this job's share of the cores
    (:func:`tcclib.threads.n_jobs`), each fit single-threaded."""
    return max(1, threads.n_jobs())


def _features(X: np.ndarray, cols: np.ndarray, split: SeedSplit, native: bool):
    """The predictors of one importance model: the columns ``cols`` of ``X`` as a float32 matrix
    (categorical features as their integer codes), or with ``native`` a DataFrame whose
    categorical features are pandas categoricals over their training levels (codes 0..L-1), for
    XGBoost's ``enable_categorical`` splits as in the authors' code."""
    if not native or not split.is_cat[cols].any():
        return X[:, cols]
    import pandas as pd

    data = {}
    for j in cols:
        if split.is_cat[j]:
            data[f"f{j}"] = pd.Categorical.from_codes(X[:, j].round().astype(np.int64),
                                                      categories=list(range(int(split.n_levels[j]))))
        else:
            data[f"f{j}"] = X[:, j]
    return pd.DataFrame(data)


def _fit_one(X: np.ndarray, i: int, others: np.ndarray, split: SeedSplit, params: dict, native: bool,
             keep_zero: bool) -> np.ndarray:
    """Row ``i`` of the importance matrix: gain importances of ``others`` predicting feature ``i``
    (a model with no gain: a uniform row, or zeros with ``keep_zero``)."""
    from xgboost import XGBClassifier, XGBRegressor

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


def importance_matrix(split: SeedSplit, cfg: Config | None = None, progress=None,
                      n_jobs: int | None = None, device: str | None = None, only=None) -> np.ndarray:
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
    ``"cuda"`` (default :func:`xgb_device` of ``cfg``).  only: fit just the models of these
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
    device = device or xgb_device(cfg)
    jobs = 1 if device != "cpu" else max(1, min(n_jobs or default_jobs(), len(todo) or 1))
    params = _xgb_params(cfg, split.seed, max(1, threads.n_jobs() // jobs), device)

    def one(item):
        i, others = item
        return _fit_one(X, i, others, split, params, native, keep_zero)

    if jobs == 1:
        rows = map(one, todo)
    else:
        from concurrent.futures import ThreadPoolExecutor

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


CACHE_FORMAT = 1
"""Version of the importance cache files (``<name>-seed<seed>-<key16>.npz``)."""


class CacheWarning(UserWarning):
    """A cache file was damaged or made for something else: it was discarded and redone."""


def _cache_digest(split: SeedSplit, cfg: Config) -> str:
    """sha256 of what an importance matrix depends on: the training rows, the active columns, the
    XGBoost settings and the importance switches that depart from ours (the seed is in the file's
    name and checked on its own)."""
    h = hashlib.sha256()
    h.update(split.raw_train.tobytes())
    h.update(split.active.tobytes())
    h.update(json.dumps([cfg.xgb_trees, cfg.xgb_depth, cfg.xgb_eta, cfg.xgb_subsample,
                         cfg.xgb_colsample]).encode())
    approx = cfg.importance_approximations()
    if approx:  # the opt-in approximation; the default adds nothing
        h.update(json.dumps(approx).encode())
    fid = cfg.departures(IMPORTANCE_SWITCHES)
    if fid:  # only departures from our defaults: the default keys stay what they were
        h.update(json.dumps(fid, sort_keys=True).encode())
    return h.hexdigest()


def _cache_key(name: str, split: SeedSplit, cfg: Config) -> str:
    """The cache file's name: ``<name>-seed<seed>-<first 16 hex of the digest>.npz``."""
    return f"{name}-seed{split.seed}-{_cache_digest(split, cfg)[:16]}.npz"


def _cache_meta(name: str, split: SeedSplit, cfg: Config) -> dict:
    """What a cache file must have been made for: dataset, seed, full key, shape and dtype."""
    M = split.raw_train.shape[1]
    return dict(format=CACHE_FORMAT, dataset=str(name), seed=int(split.seed),
                key=_cache_digest(split, cfg), shape=[M, M], dtype="float64")


def _array_sha256(W: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(W).tobytes()).hexdigest()


def save_cached_importance(path, W: np.ndarray, meta: dict) -> None:
    """Write ``W`` with ``meta`` and the sha256 of its bytes, atomically (a crash keeps the old
    file or none, never half of one)."""
    from .store import _atomic  # (store imports train, which imports this module lazily)

    W = np.ascontiguousarray(W, dtype=np.float64)
    info = json.dumps({**meta, "sha256": _array_sha256(W)}, sort_keys=True)

    def write(tmp):
        with open(tmp, "wb") as f:  # a file object: np.savez would append ".npz" to a name
            np.savez(f, W=W, meta=np.array(info))

    _atomic(Path(path), write)


def load_cached_importance(path, meta: dict) -> tuple[np.ndarray | None, str | None]:
    """``(W, None)`` when the cache file ``path`` holds a matrix made for ``meta`` whose bytes
    still match their checksum; else ``(None, what is wrong)``."""
    try:
        with open(path, "rb") as f:
            z = np.load(f, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                return None, f"not an importance cache file (a bare {type(z).__name__})"
            with z:
                if "W" not in z.files or "meta" not in z.files:
                    return None, f"not an importance cache file (holds {', '.join(z.files) or 'nothing'})"
                W, info = z["W"], json.loads(str(z["meta"][()]))
    except Exception as e:  # truncated, not a zip, bad JSON, ...
        return None, f"unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
    if not isinstance(info, dict):
        return None, "its description is not a mapping"
    for k in ("format", "dataset", "seed", "key"):
        if info.get(k) != meta[k]:
            return None, f"made for another run ({k} {info.get(k)!r}, expected {meta[k]!r})"
    if list(W.shape) != meta["shape"] or W.dtype != np.dtype(meta["dtype"]):
        return None, (f"holds a {W.dtype} array of shape {tuple(W.shape)}, expected "
                      f"{meta['dtype']} {tuple(meta['shape'])}")
    if info.get("sha256") != _array_sha256(W):
        return None, "its contents changed since it was written (sha256 mismatch)"
    return W, None


def importance_matrices(name: str, splits: list[SeedSplit], cfg: Config | None = None,
                        cache_dir: str | os.PathLike | None = None, progress: bool = False,
                        n_jobs: int | None = None) -> np.ndarray:
    """Importance matrices ``[S, M, M]`` for every seed, cached in ``cache_dir``.

    Each cache file (``.npz``) holds the matrix and what it was made for (dataset, seed, the
    sha256 key of the training rows and XGBoost settings, shape, dtype) with the sha256 of the
    matrix's bytes, and is written atomically.  On load all of it is checked: a damaged, edited
    or foreign file is reported (a :class:`CacheWarning` naming the file and what is wrong),
    removed and computed again, never used and never a lasting failure.  n_jobs: concurrent fits
    (see :func:`importance_matrix`; the matrices do not depend on it)."""
    cfg = cfg or Config()
    cache = Path(cache_dir) if cache_dir else None
    out = []
    bar = None
    if progress:
        from .progress import bar as _bar
        bar = _bar(sum(int(s.active.sum()) for s in splits), f"{name}: XGBoost importances")
    for sp in splits:
        path = cache / _cache_key(name, sp, cfg) if cache else None
        meta = _cache_meta(name, sp, cfg) if cache else None
        W = None
        if path is not None and path.exists():
            W, problem = load_cached_importance(path, meta)
            if W is None:
                warnings.warn(f"importance cache {path}: {problem}; discarded, computing it again",
                              CacheWarning, stacklevel=2)
                path.unlink(missing_ok=True)
            elif bar is not None:
                bar.update(int(sp.active.sum()))
        if W is None:
            W = importance_matrix(sp, cfg, progress=bar, n_jobs=n_jobs)
            if path is not None:
                save_cached_importance(path, W, meta)
        out.append(W)
    if bar is not None:
        bar.close()
    return np.stack(out)


def dataset_correlations(prep, cfg: Config, store_dir=None, cache_dir=None, reuse: bool = True,
                         progress: bool = True):
    """What ``02_correlation`` shows: ``(ranges, W0, computed)``.

    ranges: ``{seed: correlation value range}`` for every seed; W0: the first seed's importance
    matrix; computed: ``{seed: W}`` of the matrices computed now (not found stored).  With
    ``store_dir`` and ``reuse``, stored ranges and matrices whose key (same split, same XGBoost
    settings) matches are taken as they are, so a re-render fits no XGBoost model beyond the
    first seed's matrix when that one was never stored.  The caller saves with
    :func:`tcclib.store.save_importances`."""
    from . import reuse as R

    stored = R.load(store_dir) if (store_dir is not None and reuse) else None
    keys = {str(sp.seed): R.importance_key(sp, cfg, prep.classes) for sp in prep.splits}
    ranges, W = {}, {}
    for sp in prep.splits:
        if stored is not None:
            r = stored.corr_range_of(sp.seed, keys[str(sp.seed)])
            if r is not None:
                ranges[sp.seed] = r
            w = stored.importance_of(sp.seed, keys[str(sp.seed)])
            if w is not None:
                W[sp.seed] = w
    first = prep.splits[0]
    todo = [sp for sp in prep.splits
            if sp.seed not in W and (sp.seed not in ranges or sp.seed == first.seed)]
    computed = {}
    if todo:
        mats = importance_matrices(prep.name, todo, cfg, cache_dir=cache_dir, progress=progress)
        computed = {sp.seed: mats[i] for i, sp in enumerate(todo)}
        W.update(computed)
    for sp in prep.splits:
        if sp.seed not in ranges:
            ranges[sp.seed] = correlation_range(W[sp.seed], sp.active)
    return ranges, W[first.seed], computed
