"""The importance cache and the stored correlations of a dataset run.

:func:`importance_matrices` computes (:func:`tcclib.method.correlation.importance_matrix`) or
loads each seed's matrix from a checked cache file; :func:`dataset_correlations` takes what a
stored run already holds and computes only the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np

from tcclib.artifacts import keys as content_keys
from tcclib.data.preprocess import SeedSplit
from tcclib.method.config import XGB_SETTINGS, Config
from tcclib.method.correlation import IMPORTANCE_SWITCHES, correlation_range, importance_matrix
from tcclib.util.files import atomic_write
from tcclib.util.progress import bar as progress_bar

CACHE_FORMAT = 1
"""Version of the importance cache files (``<name>-seed<seed>-<key16>.npz``)."""


class CacheWarning(UserWarning):
    """A cache file was damaged or made for something else: it was discarded and redone."""


def _cache_digest(split: SeedSplit, cfg: Config) -> str:
    """The key of an importance matrix (:func:`tcclib.artifacts.keys.digest`): the training rows,
    the active columns, the XGBoost settings and the importance switches and approximations that
    depart from the defaults (the seed is in the file's name and checked on its own), and the code
    that computes it as :func:`tcclib.artifacts.keys.importance_key` has it."""
    return content_keys.digest(
        "importance-cache",
        split.raw_train,
        split.active,
        {name: getattr(cfg, name) for name in XGB_SETTINGS},
        cfg.importance_approximations() or None,
        cfg.departures(IMPORTANCE_SWITCHES) or None,
        *content_keys.own_part(),  # (tcclib's code when edited: an edit of the importances never reads the old cache)
        *content_keys.version_part("importance version", content_keys.IMPORTANCE_VERSION),
        *content_keys.xgboost_device_part(cfg),  # (GPU trees round otherwise: never the CPU's cache)
    )


def _cache_key(name: str, split: SeedSplit, cfg: Config) -> str:
    """The cache file's name: ``<name>-seed<seed>-<first 16 hex of the digest>.npz``."""
    return f"{name}-seed{split.seed}-{_cache_digest(split, cfg)[:16]}.npz"


def _cache_meta(name: str, split: SeedSplit, cfg: Config) -> dict:
    """What a cache file must have been made for: dataset, seed, full key, shape and dtype."""
    M = split.raw_train.shape[1]
    return dict(
        format=CACHE_FORMAT,
        dataset=str(name),
        seed=int(split.seed),
        key=_cache_digest(split, cfg),
        shape=[M, M],
        dtype="float64",
    )


def _array_sha256(W: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(W).tobytes()).hexdigest()


def save_cached_importance(path, W: np.ndarray, meta: dict) -> None:
    """Write ``W`` with ``meta`` and the sha256 of its bytes, atomically (a crash keeps the old
    file or none, never half of one)."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    info = json.dumps({**meta, "sha256": _array_sha256(W)}, sort_keys=True)

    def write(tmp):
        with open(tmp, "wb") as f:  # a file object: np.savez would append ".npz" to a name
            np.savez(f, W=W, meta=np.array(info))

    atomic_write(Path(path), write)


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
        return None, (
            f"holds a {W.dtype} array of shape {tuple(W.shape)}, expected {meta['dtype']} {tuple(meta['shape'])}"
        )
    if info.get("sha256") != _array_sha256(W):
        return None, "its contents changed since it was written (sha256 mismatch)"
    return W, None


def importance_matrices(
    name: str,
    splits: list[SeedSplit],
    cfg: Config | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    n_jobs: int | None = None,
) -> np.ndarray:
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
        bar = progress_bar(sum(int(s.active.sum()) for s in splits), f"{name}: XGBoost importances")
    for sp in splits:
        path = cache / _cache_key(name, sp, cfg) if cache else None
        meta = _cache_meta(name, sp, cfg) if cache else None
        W = None
        if path is not None and path.exists():
            W, problem = load_cached_importance(path, meta)
            if W is None:
                warnings.warn(
                    f"importance cache {path}: {problem}; discarded, computing it again", CacheWarning, stacklevel=2
                )
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


def stored_or_computed(prep, cfg: Config, splits, stored=None, cache_dir=None, progress: bool = False):
    """``({seed: W}, computed)``: the importance matrix of every split in ``splits``, taken from the
    stored run ``stored`` (:func:`tcclib.artifacts.keys.load`) where its key matches, else from the
    importance cache or computed (``computed``: those, ``{seed: W}``)."""
    found, todo = {}, []
    for sp in splits:
        W = stored.importance_of(sp.seed, content_keys.importance_key(sp, cfg, prep.classes)) if stored else None
        if W is None:
            todo.append(sp)
        else:
            found[sp.seed] = W
    computed = {}
    if todo:
        mats = importance_matrices(prep.name, todo, cfg, cache_dir=cache_dir, progress=progress)
        computed = {sp.seed: mats[i] for i, sp in enumerate(todo)}
    found.update(computed)
    return {sp.seed: found[sp.seed] for sp in splits}, computed


def dataset_correlations(prep, cfg: Config, store_dir=None, cache_dir=None, reuse: bool = True, progress: bool = True):
    """What ``02_correlation`` shows: ``(ranges, W0, computed)``.

    ranges: ``{seed: correlation value range}`` for every seed; W0: the first seed's importance
    matrix; computed: ``{seed: W}`` of the matrices computed now (not found stored).  With
    ``store_dir`` and ``reuse``, stored ranges and matrices whose key (same split, same XGBoost
    settings) matches are taken as they are, so a re-render fits no XGBoost model beyond the
    first seed's matrix when that one was never stored.  The caller saves with
    :func:`tcclib.artifacts.store.save_importances`."""
    stored = content_keys.load(store_dir) if (store_dir is not None and reuse) else None
    ranges = {}
    for sp in prep.splits:
        r = stored.corr_range_of(sp.seed, content_keys.importance_key(sp, cfg, prep.classes)) if stored else None
        if r is not None:
            ranges[sp.seed] = r
    first = prep.splits[0]
    needed = [sp for sp in prep.splits if sp.seed not in ranges or sp.seed == first.seed]
    W, computed = stored_or_computed(prep, cfg, needed, stored, cache_dir, progress)
    for sp in needed:
        ranges.setdefault(sp.seed, correlation_range(W[sp.seed], sp.active))
    return {sp.seed: ranges[sp.seed] for sp in prep.splits}, W[first.seed], computed
