"""Train every seed x method of one dataset as one batched ensemble, and evaluate it.

:func:`run_dataset` is the one call: load, preprocess per seed, (XGBoost importances if a
correlation method is asked for), contrastive pretraining of all members together (the steps of
:mod:`tcclib.method.training`, which :class:`tcclib.method.estimator.TCCClassifier` runs too), then
each member's classifier on the labeled rows (``Config.head``), scored on the test split.  It
returns a :class:`RunResult`: the results, the contrastive-loss histories, the pseudo-label
accuracy at each refresh and (optionally) embeddings for plots.

Pretraining is checkpointed (:func:`run_prepared`'s ``checkpoint_dir``; :func:`run_dataset`:
``<cache_dir>/checkpoints``) every ``checkpoint_every`` epochs once ``checkpoint_seconds`` have
passed (a minute, or ``$TCC_CHECKPOINT_SECONDS``; 48 members: ~185 MiB, ~0.6 s): the whole state,
written atomically with its sha256, from which a later call with the same dataset, settings and
importances resumes bit for bit; removed when the run finishes.  An unreadable, changed or foreign
checkpoint is reported (a warning naming the file and the problem) and pretraining starts over.

Training watches itself: a non-finite contrastive loss, pseudo-label prediction, encoder weight or
test probability stops the run with :class:`TrainingDiverged`, naming the dataset, seed, method
and epoch; the checks only read values the loop computes anyway.  Members are independent (own
generator, labels and Adam state): a member trains exactly as it would alone, and all methods of
a seed (``no_pretrain`` included) start from the same encoder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts import own_code, store
from tcclib.artifacts.importances import stored_or_computed
from tcclib.data.preprocess import Prepared
from tcclib.data.sources import Dataset, changed_since_loaded, load_dataset
from tcclib.method import check, training
from tcclib.method.baselines import run_baselines
from tcclib.method.config import METHODS, Config
from tcclib.method.correlation import correlation_range
from tcclib.method.inputs import check_training_inputs, prepare_config
from tcclib.method.metrics import accuracy, auroc
from tcclib.method.model import autocast
from tcclib.method.pretraining import Pretraining, check_finite
from tcclib.method.pretraining import TrainingDiverged as TrainingDiverged  # what a diverging run raises
from tcclib.method.training import embed, matmul_precision
from tcclib.running.checkpointing import CHECKPOINT_EVERY, checkpoint_interval
from tcclib.util import errors
from tcclib.util.progress import TrainingFile


@dataclass
class RunResult:
    """Everything one dataset run produces."""

    results: pd.DataFrame  # dataset, did, seed, method, accuracy, auroc, ...
    history: pd.DataFrame  # seed, method, epoch, loss (contrastive, per epoch)
    pseudo: pd.DataFrame  # seed, method, epoch, pseudo_accuracy (unlabeled rows; NaN if none: labeled_fraction=1)
    corr_range: dict = field(default_factory=dict)  # seed -> feature correlation value range
    importance: np.ndarray | None = None  # [S, M, M]
    embeddings: dict = field(default_factory=dict)  # method -> {train, test, y_train, y_test}
    timings: dict = field(default_factory=dict)
    config: Config | None = None
    classes: list = field(default_factory=list)  # class names, in label order
    keys: object = None  # tcclib.artifacts.keys.RunKeys of every artefact (run_dataset)
    importances: dict = field(default_factory=dict)  # seed -> [M, M] importance matrix, where known
    trained: bool = True  # False when run_dataset reused every member from stored results
    new_embeddings: bool = True  # False when every embedding came from stored results
    code_notes: list = field(default_factory=list)  # an edited tcclib; per user rule: what it matched or what changed
    data_file: str | None = None  # the file the dataset was read from (Dataset.source), None for none
    data_reading: dict | None = None  # how it was read (Dataset.reading), None for a frame or breast_cancer
    rows_digest: str | None = None  # its rows as run_dataset made them (store.rows_digest): save_run stores no others
    data_changed: str | None = None  # how its data differs from load_dataset's (sources.changed_since_loaded)


def run_prepared(
    prep: Prepared,
    cfg: Config | None = None,
    importance: np.ndarray | None = None,
    did: int | None = None,
    checkpoint_dir=None,
    checkpoint_every: int = CHECKPOINT_EVERY,
    on_epoch: Callable[[int], None] | None = None,
    keep_pretrained: bool = False,
    checkpoint_seconds: float = 0.0,
) -> RunResult:
    """Run all seeds x methods of a preprocessed dataset (see module docstring).

    checkpoint_dir: folder for the pretraining checkpoint (None: no checkpoint); a matching one
    found there is resumed.  checkpoint_every: epochs between checkpoints; checkpoint_seconds:
    and at least this many seconds of pretraining since the last one written (or since pretraining
    started or resumed), so that a fast run does not spend its time writing.  on_epoch: called with
    the number of finished pretraining epochs after each one (and after its checkpoint).
    keep_pretrained: also checkpoint the finished pretraining and keep it, so that a run of the
    same members with another head variant (``Config.head``, ``encoder_lr``: not in the
    checkpoint key) resumes at the last epoch and fits only its heads; without it the checkpoint
    is removed when the run finishes.
    """
    cfg = cfg or Config()
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    if not checkpoint_seconds >= 0:
        raise ValueError(f"checkpoint_seconds must be a number of seconds >= 0, got {checkpoint_seconds}")
    if keep_pretrained and checkpoint_dir is None:
        raise ValueError("keep_pretrained needs a checkpoint_dir to keep the pretraining in")
    ckpt = None
    if checkpoint_dir is not None:
        code = content_keys.code_identities(cfg)  # (a user's rules by value, once for the keys below)
        key = store.checkpoint_key(prep, cfg, importance, code)
        ckpt = (store.checkpoint_path(checkpoint_dir, prep.name, key), key)
        _say_other_draws(prep, cfg, importance, checkpoint_dir, ckpt[0], code)
    with matmul_precision(cfg):
        every = (checkpoint_every, checkpoint_seconds)
        return _run(prep, cfg, importance, did, ckpt, every, on_epoch, keep_pretrained)


def _say_other_draws(prep: Prepared, cfg: Config, importance, checkpoint_dir, own: Path, code: dict) -> None:
    """One line for each checkpoint of these members under another ``draws`` (a switch of the
    setting leaves it behind, megabytes that serve only a switch back)."""
    for draws in ("auto", "generator", "counter"):
        key = store.checkpoint_key(prep, cfg.replace(draws=draws), importance, code)
        other = store.checkpoint_path(checkpoint_dir, prep.name, key)
        if other != own and other.is_file():
            print(
                f"{prep.name}: the checkpoint of these members under draws={draws} stays in {other} "
                f"({other.stat().st_size / 2**20:.1f} MB): it serves only a switch back; delete it if none will come"
            )


def _resume(pt: Pretraining, ckpt: tuple[Path, str] | None) -> float:
    """Load a matching checkpoint into ``pt``; the seconds the run had spent before it (0: none)."""
    if ckpt is None:
        return 0.0
    state = store.load_checkpoint(ckpt[0], ckpt[1], pt.expect())
    if state is None:
        return 0.0
    pt.load_state_dict(state)
    if pt.epoch == pt.cfg.epochs:
        print(f"{pt.name}: pretraining of these members already finished, taken from {ckpt[0]}")
    else:
        print(f"{pt.name}: resuming pretraining at epoch {pt.epoch} of {pt.cfg.epochs} from {ckpt[0]}")
    return state["seconds"]


def _pretrain(
    members: training.Members,
    ckpt: tuple[Path, str] | None,
    every: tuple[int, float],
    on_epoch: Callable[[int], None] | None,
    timings: dict,
    keep: bool = False,
) -> None:
    """:func:`tcclib.method.training.pretrain`, resuming from and writing checkpoints (``every``:
    epochs between them, and seconds at least; the last epoch's too with ``keep``)."""
    pt = members.pretraining
    if pt is None:
        return
    spent = _resume(pt, ckpt)
    start, epochs = pt.epoch, pt.cfg.epochs
    t1 = time.perf_counter()
    last = [t1]  # when the last checkpoint was written (or pretraining began)

    def after_epoch(pt: Pretraining) -> None:
        now = time.perf_counter()
        due = pt.epoch % every[0] == 0 and pt.epoch < epochs and now - last[0] >= every[1]
        if ckpt is not None and (due or (keep and pt.epoch == epochs)):
            seconds = spent + now - t1
            store.save_checkpoint(ckpt[0], dict(key=ckpt[1], seconds=seconds, **pt.state_dict()))
            last[0] = time.perf_counter()
        if on_epoch is not None:
            on_epoch(pt.epoch)

    training.pretrain(members, f"{pt.name}: pretraining {errors.counted(pt.Kp, 'member')}", after_epoch)
    timings["pretrain_s"] = spent + time.perf_counter() - t1
    if start:
        timings["resumed_at_epoch"] = start
    timings["pretrain_s_per_epoch"] = timings["pretrain_s"] / epochs


def _run(
    prep: Prepared,
    cfg: Config,
    importance: np.ndarray | None,
    did: int | None,
    ckpt: tuple[Path, str] | None = None,
    every: tuple[int, float] = (CHECKPOINT_EVERY, 0.0),
    on_epoch: Callable[[int], None] | None = None,
    keep_pretrained: bool = False,
) -> RunResult:
    t0 = time.perf_counter()
    members = training.set_up(prep, cfg, importance, prep.name)
    layout, tab, seed_all = members.layout, members.tab, members.seed_idx
    N = tab.raw_train.shape[1]
    timings: dict = {}
    _pretrain(members, ckpt, every, on_epoch, timings, keep_pretrained)
    pt = members.pretraining
    history, pseudo_rows = (pt.history, pt.pseudo) if pt is not None else ([], [])

    # ---------------------------------------------------------------- evaluation
    t2 = time.perf_counter()
    model = training.fit_member_heads(members, cfg)
    prob = _test_probabilities(prep, cfg, members, model)
    y_te = tab.y_test[seed_all].cpu().numpy()
    timings["evaluate_s"] = time.perf_counter() - t2
    lab = tab.labeled[seed_all]
    rows = [
        dict(
            dataset=prep.name,
            did=did,
            seed=s,
            method=m,
            accuracy=accuracy(y_te[j], prob[j]),
            auroc=auroc(y_te[j], prob[j]),
            n_train=N,
            n_labeled=int(lab[j].sum()),
            n_test=int(y_te.shape[1]),
            n_features=layout.n_features[j],
        )
        for j, (s, m) in enumerate(layout.named())
    ]
    embeddings = _first_seed_embeddings(cfg, members, model, y_te) if cfg.keep_embeddings else {}
    timings["total_s"] = time.perf_counter() - t0
    if ckpt is not None and not keep_pretrained:
        ckpt[0].unlink(missing_ok=True)  # finished: nothing left to resume
    res = pd.DataFrame(rows)
    res["did"] = res["did"].astype("Int64")
    return RunResult(
        results=res,
        history=_per_epoch(history, "loss"),
        pseudo=_per_epoch(pseudo_rows, "pseudo_accuracy"),
        importance=importance,
        embeddings=embeddings,
        timings=timings,
        config=cfg,
        classes=list(prep.classes),
    )


def _test_probabilities(prep: Prepared, cfg: Config, members, model) -> np.ndarray:
    """Every member's class probabilities of its test rows ``[K, Nt, C]`` (a
    :class:`TrainingDiverged` naming the first member whose are not finite)."""
    tab, seed_all, layout = members.tab, members.seed_idx, members.layout
    with torch.no_grad(), autocast(cfg, members.anchors.device):
        prob = torch.softmax(model.logits(tab, tab.raw_test[seed_all], seed_all), -1).cpu().numpy()
    what = f"the classification head's test probabilities are not finite after {cfg.head_epochs} head epochs"
    check_finite(np.isfinite(prob).reshape(layout.K, -1).all(1).tolist(), layout.named(), prep.name, None, what, cfg.lr)
    return prob


def _first_seed_embeddings(cfg: Config, members, model, y_te: np.ndarray) -> dict:
    """The first seed's train and test embeddings per method (the encoder the classifier uses:
    fine-tuned under ``head: finetune``)."""
    tab, seed_all = members.tab, members.seed_idx
    with torch.no_grad(), autocast(cfg, members.anchors.device):
        emb_tr = model.enc(members.anchors).float()
        emb_te = embed(model.enc, tab, tab.raw_test[seed_all], seed_all).float()
    y_tr = tab.y_train[seed_all]
    widths = model.enc.output_widths()  # (each member's own: a deep stack's is wider)
    return {
        m: dict(
            train=emb_tr[j, :, : widths[j]].cpu().numpy(),
            test=emb_te[j, :, : widths[j]].cpu().numpy(),
            y_train=y_tr[j].cpu().numpy(),
            y_test=y_te[j],
        )
        for j, (si, m) in enumerate(members.layout.members)
        if si == 0
    }


def _subset(prep: Prepared, seeds) -> Prepared:
    return Prepared(
        prep.name, prep.feature_names, prep.is_cat, prep.classes, [sp for sp in prep.splits if sp.seed in set(seeds)]
    )


def run_dataset(
    dataset: str | int | Dataset,
    cfg: Config | None = None,
    data_dir=None,
    cache_dir=None,
    store_dir=None,
    reuse: bool = True,
    keep_pretrained: bool = False,
    checkpoint_seconds: float | None = None,
) -> RunResult:
    """Load ``dataset`` (name, OpenML id or a :class:`Dataset`), run every seed x method, evaluate.

    ``data_dir``: folder of ``<did>.arff`` files (default: ``$TCC_DATA_DIR``); ``cache_dir``:
    where XGBoost importance matrices are cached and pretraining is checkpointed (in
    ``checkpoints/``), so that an interrupted run resumes where it stopped.

    ``store_dir``: a folder where :func:`tcclib.artifacts.store.save_run` saved an earlier run.  With
    ``reuse`` (the default) every member (seed x method), baseline, importance matrix and
    embedding stored there whose content key matches (:mod:`tcclib.artifacts.keys`: same data, same
    settings that determine it) is taken as it is, and only the rest trains: re-rendering a
    finished dataset trains nothing, adding a method trains that method only.
    ``run.timings["trained_members"]`` / ``["reused_members"]`` say what happened.

    ``keep_pretrained`` (needs ``cache_dir``): keep the finished pretraining in the checkpoints
    folder, so that running the same members with another head variant (``Config.head``)
    pretrains nothing (:func:`run_prepared`).

    ``checkpoint_seconds``: the least seconds between two checkpoints (:func:`checkpoint_interval`;
    None: ``$TCC_CHECKPOINT_SECONDS``, else a minute).
    """
    cfg = cfg or Config()
    checkpoint_seconds = checkpoint_interval(checkpoint_seconds)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    data_changed = changed_since_loaded(ds)  # (a notebook cell's; the keys follow it, config.json records it)
    prep = prepare_config(ds, cfg)  # (the labeled subset as labeled_split says)
    check_training_inputs(prep, cfg)  # clear errors (features to corrupt, memory) before any work
    keys = content_keys.run_keys(prep, cfg)
    stored = content_keys.load(store_dir) if (store_dir is not None and reuse) else None

    # ------------------------------------------------------------------ what is stored, what trains
    hit, emb = reuse_plan(prep, cfg, keys, stored)
    need_seeds = [sp.seed for sp in prep.splits if any(not hit[sp.seed, m] for m in cfg.methods)]
    need_methods = [m for m in cfg.methods if any(not hit[s, m] for s in need_seeds)]
    check.check_methods(need_methods, keys.code, ds)  # (a user's rule or objective breaking its contract)

    n_trained = sum(not h for h in hit.values())
    report = TrainingFile(store_dir if need_seeds else None, n_trained, cfg.epochs)  # the overall bar reads it
    try:
        # -------------------------------------------------------------- importances and ranges
        t = time.perf_counter()
        imp, ranges = _importances(prep, cfg, keys, stored, need_seeds, need_methods, cache_dir)
        timings: dict = {"importance_s": time.perf_counter() - t}

        # -------------------------------------------------------------- train the members not stored
        new = None
        if need_seeds:
            run_kw = dict(keep_pretrained=keep_pretrained, checkpoint_seconds=checkpoint_seconds, on_epoch=report.epoch)
            new = _train_missing(prep, cfg, ds.did, imp, emb, need_seeds, need_methods, cache_dir, run_kw)
            timings.update(new.timings)

        # -------------------------------------------------------------- stitch stored and new, baselines
        res, hist, pse = _stitch(prep, cfg, hit, new, stored)
        if cfg.baselines:
            t = time.perf_counter()
            res = pd.concat([res, _baselines(prep, cfg, ds.did, keys, stored)], ignore_index=True)
            timings["baselines_s"] = time.perf_counter() - t
    finally:
        report.close()
    res["did"] = res["did"].astype("Int64")
    timings.update(trained_members=n_trained, reused_members=len(hit) - n_trained)
    embeddings = {}
    if cfg.keep_embeddings:
        fresh = new.embeddings if new is not None else {}
        embeddings = {m: emb[m] if m in emb else fresh[m] for m in cfg.methods if m in emb or m in fresh}
    stacked = np.stack([imp[sp.seed] for sp in prep.splits]) if len(imp) == len(prep.splits) else None
    run = RunResult(
        results=res,
        history=hist,
        pseudo=pse,
        corr_range=ranges,
        importance=stacked,
        embeddings=embeddings,
        timings=timings,
        config=cfg,
        classes=list(prep.classes),
        keys=keys,
        importances=imp,
        trained=n_trained > 0,
        new_embeddings=bool(embeddings) and any(m not in emb for m in embeddings),
        code_notes=_code_notes(cfg, keys, hit, store_dir if reuse else None) + _data_note(data_changed),
        data_file=None if ds.source in _NO_FILE else ds.source,
        data_reading=ds.reading,
        data_changed=data_changed,
    )
    run.rows_digest = store.rows_digest(run)
    return run


def _data_note(changed: str | None) -> list[str]:
    """Notebook 03's line on data changed after it was loaded (none when it was not)."""
    if changed is None:
        return []
    return [
        f"the data was changed after load_dataset read it ({changed}): the members are keyed by the data as "
        "run, and a sweep calls this dataset stale against its parameter file"
    ]


_NO_FILE = ("", "openml", "sklearn", "frame")
"""``Dataset.source`` values that name no file (a download, scikit-learn's breast_cancer, a frame)."""


def _code_notes(cfg: Config, keys, hit: dict, store_dir) -> list[str]:
    """When tcclib's own training code is not the recorded code, the files that differ (first);
    for each method with a user's rule: ``nearby: 8 of 8 members reused; nearby matched as ...``,
    or what changed since the run stored in ``store_dir`` (``code of nearby changed``) and how many
    of its members trained again."""
    config = Path(store_dir) / "config.json" if store_dir is not None else None
    stored = store.stored_code(config) if config is not None else {}
    notes = [own_code.describe(keys.edited)] if keys.edited else []
    for method, identity in keys.code.items():
        if method not in cfg.methods:
            continue
        mine = [h for (_, m), h in hit.items() if m == method]
        if all(mine):
            notes.append(f"{method}: {len(mine)} of {len(mine)} members reused{store.keyed_as({method: identity})}")
            continue
        changed = store.code_changes({method: stored[method]}, {method: identity}) if method in stored else []
        why = "; ".join(changed) if changed else "not stored before"
        notes.append(f"{method}: {why}: {mine.count(False)} of {len(mine)} members trained")
    return notes


def reuse_plan(prep: Prepared, cfg: Config, keys, stored) -> tuple[dict, dict]:
    """``(hit, embeddings)``: ``hit[seed, method]`` is True when that member is stored with a
    matching key (``stored``: :func:`tcclib.artifacts.keys.load`, None: nothing stored); the
    stored embeddings whose key matches (a missing one makes its first-seed member train again).
    What :func:`run_dataset` reuses, and what a tool asks before it runs (``tools/probe_check.py``)."""
    hit = {
        (sp.seed, m): bool(stored and stored.has_member(sp.seed, m, keys.members[content_keys.tag(sp.seed, m)]))
        for sp in prep.splits
        for m in cfg.methods
    }
    emb = stored.embeddings(keys.embeddings) if (stored is not None and cfg.keep_embeddings) else {}
    if cfg.keep_embeddings:  # an embedding not stored needs its first-seed encoder trained
        hit.update({(prep.splits[0].seed, m): False for m in cfg.methods if m not in emb})
    return hit, emb


def _importances(prep: Prepared, cfg: Config, keys, stored, need_seeds, need_methods, cache_dir):
    """``(importances {seed: W}, correlation ranges {seed: r})``: for the correlation members
    that train, and for the ranges not stored (nothing when no method needs importances)."""
    imp, ranges = {}, {}
    if not any(METHODS[m].needs_importance for m in cfg.methods):
        return imp, ranges
    for sp in prep.splits:
        r = stored.corr_range_of(sp.seed, keys.importance[str(sp.seed)]) if stored else None
        if r is not None:
            ranges[sp.seed] = r
    want = {sp.seed for sp in prep.splits if sp.seed not in ranges}
    if any(METHODS[m].needs_importance for m in need_methods):
        want |= set(need_seeds)
    splits = [sp for sp in prep.splits if sp.seed in want]  # stored where the key matches, else cached or computed
    imp = stored_or_computed(prep, cfg, splits, stored, cache_dir, cfg.progress)[0]
    for sp in prep.splits:
        if sp.seed not in ranges:
            ranges[sp.seed] = correlation_range(imp[sp.seed], sp.active)
    return imp, ranges


def _train_missing(
    prep: Prepared, cfg: Config, did, imp, emb, need_seeds, need_methods, cache_dir, run_options
) -> RunResult:
    """Train the seeds x methods that are not stored, as one ensemble (checkpointed under
    ``<cache_dir>/checkpoints``; ``run_options``: :func:`run_prepared`'s)."""
    sub_cfg = cfg.replace(
        seeds=need_seeds,
        methods=need_methods,
        baselines=[],
        keep_embeddings=cfg.keep_embeddings
        and need_seeds[0] == prep.splits[0].seed
        and any(m not in emb for m in need_methods),
    )
    sub_imp = np.stack([imp[s] for s in need_seeds]) if any(METHODS[m].needs_importance for m in need_methods) else None
    ckpt_dir = Path(cache_dir) / "checkpoints" if cache_dir is not None else None
    return run_prepared(_subset(prep, need_seeds), sub_cfg, sub_imp, did, ckpt_dir, **run_options)


def _pick(order: dict, hit: dict, frame_new, frame_stored, by_epoch: bool):
    """Every member's rows in the ensemble's ``order``: stored where it matched, else new."""
    parts = []
    for (s, m), i in order.items():
        src = frame_stored if hit[s, m] else frame_new
        if src is None or not len(src):
            continue
        parts.append(src[(src.seed == s) & (src.method == m)].assign(_order=i))
    if not parts:
        return None
    df = pd.concat(parts, ignore_index=True)
    df = df.sort_values(["epoch", "_order"] if by_epoch else ["_order"], kind="stable")
    return df.drop(columns="_order").reset_index(drop=True)


def _stitch(prep: Prepared, cfg: Config, hit: dict, new, stored):
    """``(results, history, pseudo)`` of every member in the ensemble's order."""
    order = {(sp.seed, m): i for i, (sp, m) in enumerate((sp, m) for sp in prep.splits for m in cfg.methods)}
    frames = [
        _pick(order, hit, getattr(new, name) if new else None, getattr(stored, name) if stored else None, by_epoch)
        for name, by_epoch in (("results", False), ("history", True), ("pseudo", True))
    ]
    res, hist, pse = frames
    return res, _per_epoch(hist, "loss"), _per_epoch(pse, "pseudo_accuracy")


def _per_epoch(rows, value: str) -> pd.DataFrame:
    """A per-epoch table (rows or a frame; None: empty) with columns seed, method, epoch and ``value``, typed."""
    frame = pd.DataFrame(rows if rows is not None else [], columns=["seed", "method", "epoch", value])
    return frame.astype({"seed": "int64", "method": str, "epoch": "int64", value: "float64"})


def _baselines(prep: Prepared, cfg: Config, did, keys, stored) -> pd.DataFrame:
    """Every baseline's rows, seed by seed in order: stored where the key matches, else run."""
    rows = []
    for b in cfg.baselines:
        miss = [
            sp.seed
            for sp in prep.splits
            if not (stored and stored.has_baseline(sp.seed, b, keys.baselines[content_keys.tag(sp.seed, b)]))
        ]
        if miss:
            rows.append(run_baselines(_subset(prep, miss), cfg, [b], did))
        if stored is not None and len(miss) < len(prep.splits):
            st = stored.results
            rows.append(st[(st.method == b) & ~st.seed.isin(miss)])
    base = pd.concat(rows, ignore_index=True)
    seed_pos = {sp.seed: i for i, sp in enumerate(prep.splits)}
    base = base.assign(_s=base.seed.map(seed_pos), _b=base.method.map(list(cfg.baselines).index))
    return base.sort_values(["_s", "_b"], kind="stable").drop(columns=["_s", "_b"])
