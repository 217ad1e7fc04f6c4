"""Train every seed x method of one dataset as one batched ensemble, and evaluate it.

:func:`run_dataset` is the one call: load, preprocess per seed, (XGBoost importances if a
correlation method is asked for), contrastive pretraining of all members together, then a frozen
encoder + fresh classification head per member, trained on the labeled rows and scored on the
test split.  It returns a :class:`RunResult` with a tidy results table, the contrastive-loss
histories, the pseudo-label accuracy at each refresh and (optionally) embeddings for plots.

Pretraining can be checkpointed (``checkpoint_dir``): every ``checkpoint_every`` epochs the
whole training state (weights, Adam moments, every member's generator, pseudo-labels, histories)
is written atomically, and a later call with the same dataset, settings and importances resumes
from it, giving bit-for-bit the results of an uninterrupted run.  The checkpoint is removed once
the run finishes.  :func:`run_dataset` checkpoints under ``<cache_dir>/checkpoints``.  A
checkpoint carries the sha256 of its contents; one that is unreadable, changed, made for another
run or shaped for another run is reported (a warning naming the file and the problem) and
pretraining starts over, never resuming from it and never failing on it.

Training watches itself: a non-finite contrastive loss (checked on each epoch's loss vector), a
non-finite pseudo-label prediction, encoder weight (once, after pretraining) or test probability
stops the run with :class:`TrainingDiverged`, naming the dataset, seed, method and epoch, instead
of a late scikit-learn "Input contains NaN".  The checks only read values the loop computes
anyway, so healthy runs are bit-for-bit what they were.

Members are independent: each has its own generator (data order, corruption draws, head
initialisation), labels and Adam state, so a member trains exactly as it would alone.  The
encoder's initial weights depend on the seed only, so all methods of a seed (``no_pretrain``
included) start from the same encoder.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from . import corruption as C
from .config import METHODS, Config
from .datasets import Dataset, load_dataset
from .encoding import TensorTable
from .losses import nt_xent_pairs
from .metrics import accuracy, auroc
from .model import StackedMLP, adam
from .preprocess import Prepared, check_training_inputs, prepare


def member_seed(seed: int, tag: str) -> int:
    """A stable 63-bit generator seed for (seed, tag)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{tag}".encode()).digest()[:8], "little") >> 1


def _generator(seed: int, tag: str, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(member_seed(seed, tag))
    return g


class TrainingDiverged(RuntimeError):
    """Training produced a non-finite loss, weight or prediction: the run stops here, naming the
    dataset, seed, method and pretraining epoch, instead of scoring NaNs later.

    Attributes ``dataset``, ``seed``, ``method``, ``epoch`` (pretraining epochs done when it was
    seen; None for the evaluation head) and ``what`` (the quantity that is not finite)."""

    def __init__(self, dataset: str, seed: int, method: str, epoch: int | None, what: str,
                 others: int = 0, lr: float | None = None):
        self.dataset, self.seed, self.method, self.epoch, self.what = dataset, seed, method, epoch, what
        more = f" (and {others} other member{'s' if others > 1 else ''})" if others else ""
        hint = f"; lower lr (now {lr:g})" if lr is not None else ""
        super().__init__(f"training diverged: dataset {dataset}, seed {seed}, method {method}{more}: "
                         f"{what}{hint}")


def _first_bad(finite, members: list[tuple[int, str]]) -> tuple[int, str, int] | None:
    """``(seed, method, how many others)`` of the first member whose ``finite`` flag is False."""
    bad = [j for j, ok in enumerate(finite) if not ok]
    if not bad:
        return None
    return members[bad[0]][0], members[bad[0]][1], len(bad) - 1


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
    keys: object = None  # tcclib.reuse.RunKeys of every artefact (run_dataset)
    importances: dict = field(default_factory=dict)  # seed -> [M, M] importance matrix, where known
    trained: bool = True  # False when run_dataset reused every member from stored results
    new_embeddings: bool = True  # False when every embedding came from stored results


def _batches(n: int, size: int):
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def _take(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``idx`` ([K, b]) of ``x`` ([K, N, d]) -> [K, b, d]."""
    return x.gather(1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


def fit_heads(emb: torch.Tensor, y: torch.Tensor, gens: list[torch.Generator], cfg: Config,
              n_classes: int) -> StackedMLP:
    """Train fresh classification heads (2 layers) on frozen embeddings ``[K, NL, H]``."""
    K, NL, H = emb.shape
    head = StackedMLP(K, [H] + [cfg.hidden_dim] * (cfg.head_depth - 1) + [n_classes], gens,
                      bias_init=cfg.bias_init, device=emb.device)
    opt = adam(head.parameters(), cfg.lr)
    batches = _batches(NL, cfg.batch_size)
    for _ in range(cfg.head_epochs):
        perm = torch.stack([torch.randperm(NL, generator=g, device=emb.device) for g in gens])
        for a, b in batches:
            idx = perm[:, a:b]
            logits = head(_take(emb, idx))
            yb = y.gather(1, idx)
            loss = F.cross_entropy(logits.reshape(-1, n_classes), yb.reshape(-1), reduction="none")
            loss = loss.view(K, -1).mean(1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return head


def _bar(total: int, desc: str, enabled: bool):
    from .progress import bar

    return bar(total, desc, enabled, leave=True)


# settings that do not change what a run computes (left out of the checkpoint key)
_NOT_IN_KEY = ("progress", "keep_embeddings", "baselines", "extra")


def checkpoint_key(prep: Prepared, cfg: Config, importance: np.ndarray | None) -> str:
    """A digest of everything pretraining depends on: data, splits, settings, importances."""
    h = hashlib.sha256()
    settings = {k: v for k, v in cfg.to_dict().items() if k not in _NOT_IN_KEY}
    h.update(json.dumps([prep.name, settings], sort_keys=True, default=str).encode())
    for sp in prep.splits:
        for a in (sp.raw_train, sp.y_train, sp.labeled, sp.active, sp.is_cat, sp.n_levels, sp.raw_test,
                  sp.y_test):
            h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    if importance is not None:
        h.update(np.ascontiguousarray(importance, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


def checkpoint_path(checkpoint_dir, name: str, key: str) -> Path:
    """Where :func:`run_prepared` keeps the pretraining checkpoint of run ``key`` of ``name``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))
    return Path(checkpoint_dir) / f"{safe}-{key}.pt"


def run_prepared(prep: Prepared, cfg: Config | None = None, importance: np.ndarray | None = None,
                 did: int | None = None, checkpoint_dir=None, checkpoint_every: int = 10,
                 on_epoch: Callable[[int], None] | None = None) -> RunResult:
    """Run all seeds x methods of a preprocessed dataset (see module docstring).

    checkpoint_dir: folder for the pretraining checkpoint (None: no checkpoint); a matching one
    found there is resumed.  checkpoint_every: epochs between checkpoints.  on_epoch: called with
    the number of finished pretraining epochs after each one (and after its checkpoint).
    """
    cfg = cfg or Config()
    if checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    ckpt = None
    if checkpoint_dir is not None:
        key = checkpoint_key(prep, cfg, importance)
        ckpt = (checkpoint_path(checkpoint_dir, prep.name, key), key)
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    try:
        return _run(prep, cfg, importance, did, ckpt, checkpoint_every, on_epoch)
    finally:
        torch.set_float32_matmul_precision(previous)


def _state_digest(obj, h=None) -> str:
    """sha256 of a checkpoint's contents: every tensor's dtype, shape and bytes, every other
    value's ``repr``, dictionaries in key order (the ``"sha256"`` entry itself left out)."""
    top = h is None
    h = hashlib.sha256() if top else h
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())
    elif isinstance(obj, dict):
        h.update(b"{")
        for k in sorted(obj, key=repr):
            if not (top and k == "sha256"):
                h.update(repr(k).encode() + b":")
                _state_digest(obj[k], h)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for v in obj:
            _state_digest(v, h)
        h.update(b"]")
    else:
        h.update(repr(obj).encode() + b";")
    return h.hexdigest() if top else ""


def _save_checkpoint(path: Path, state: dict) -> None:
    """Write the pretraining state with the sha256 of its contents, atomically."""
    from .store import _atomic  # (store imports this module)

    state = {**state, "sha256": _state_digest(state)}
    _atomic(path, lambda tmp: torch.save(state, tmp))  # a crash while saving keeps the last one


def _checkpoint_problem(state, key: str, expect: dict | None) -> str | None:
    """What is wrong with a loaded checkpoint for run ``key`` (None: nothing).

    ``expect`` (from :func:`_run`): the shapes of the parameters, the generators' state sizes,
    the pseudo-label shape, the number of epochs and of members, and the number of classes."""
    if not isinstance(state, dict):
        return f"not a checkpoint (a {type(state).__name__})"
    if state.get("key") != key:
        return f"made for another run (key {state.get('key')!r}, expected {key!r})"
    if "sha256" in state and state["sha256"] != _state_digest(state):
        return "its contents changed since it was written (sha256 mismatch)"
    if expect is None:
        return None
    try:
        shapes = [tuple(p.shape) for p in state["params"]]
        if shapes != expect["params"]:
            return f"parameter shapes {shapes} do not match this run's {expect['params']}"
        opt = state["opt"]
        if len(opt["param_groups"]) != 1 or len(opt["param_groups"][0]["params"]) != len(shapes):
            return "its optimiser state does not match this run's parameters"
        for i, st in opt["state"].items():
            for name in ("exp_avg", "exp_avg_sq"):
                if tuple(st[name].shape) != expect["params"][i]:
                    return f"optimiser state {name} of parameter {i} has shape {tuple(st[name].shape)}"
        gens = [int(g.numel()) for g in state["gens"]]
        if gens != expect["gens"]:
            return f"{len(gens)} generator states, expected {len(expect['gens'])} of their size"
        lab = state["labels"]
        if tuple(lab.shape) != expect["labels"] or lab.dtype != torch.int64:
            return f"pseudo-labels of shape {tuple(lab.shape)} ({lab.dtype}), expected {expect['labels']} int64"
        if lab.numel() and (int(lab.min()) < 0 or int(lab.max()) >= expect["classes"]):
            return f"pseudo-labels outside 0..{expect['classes'] - 1}"
        epoch = state["epoch"]
        if not isinstance(epoch, int) or not 1 <= epoch < expect["epochs"]:
            return f"epoch {epoch!r} outside 1..{expect['epochs'] - 1}"
        if len(state["history"]) != epoch * expect["members"]:
            return f"{len(state['history'])} loss history rows, expected {epoch * expect['members']}"
        if not isinstance(state["pseudo"], list) or not isinstance(state["seconds"], (int, float)):
            return "its pseudo-label history or timing is malformed"
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, RuntimeError) as e:
        return f"malformed ({type(e).__name__}: {e})"
    return None


def _load_checkpoint(path: Path | None, key: str, expect: dict | None = None) -> dict | None:
    """The checkpoint at ``path`` when it belongs to run ``key`` and is intact, else None.

    An unreadable file, one whose key, checksum or shapes (``expect``) do not match, is
    reported (a :class:`tcclib.correlation.CacheWarning` naming the file and the problem) and
    pretraining starts over; it is overwritten by the next checkpoint."""
    from .correlation import CacheWarning

    if path is None or not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # a damaged file: start over rather than fail
        problem = f"unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
    else:
        problem = _checkpoint_problem(state, key, expect)
    if problem is None:
        return state
    warnings.warn(f"checkpoint {path}: {problem}; discarded, starting pretraining over",
                  CacheWarning, stacklevel=2)
    return None


def _run(prep: Prepared, cfg: Config, importance: np.ndarray | None, did: int | None,
         ckpt: tuple[Path, str] | None = None, checkpoint_every: int = 10,
         on_epoch: Callable[[int], None] | None = None) -> RunResult:
    dev = torch.device(cfg.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' but torch sees no CUDA device; use device='cpu'")
    t0 = time.perf_counter()
    tab = TensorTable.from_prepared(prep, dev)
    S, N, M = tab.raw_train.shape
    Cn = tab.n_classes
    H = cfg.hidden_dim
    specs = [METHODS[m] for m in cfg.methods]
    members = [(si, m) for si in range(S) for m in cfg.methods]
    seeds = [prep.splits[si].seed for si, _ in members]
    m_feats = [prep.splits[si].n_features for si, _ in members]
    pre = [i for i, (_, m) in enumerate(members) if METHODS[m].pretrain]
    needs_corr = any(s.where != "uniform" for s in specs)
    if needs_corr and importance is None:
        raise ValueError("correlation methods need the importance matrices (see run_dataset)")
    timings = {}

    # ---------------------------------------------------------------- encoders
    in_w = [int(tab.widths[si]) for si, _ in members]
    enc_dims = [tab.width] + [H] * cfg.encoder_depth
    init_gens = [_generator(s, "init", dev) for s in seeds]
    enc_all = StackedMLP(len(members), enc_dims, init_gens, in_w, cfg.bias_init, dev)
    train_gens = [_generator(s, m, dev) for s, (_, m) in zip(seeds, members)]
    seed_all = torch.tensor([si for si, _ in members], device=dev)
    anchors_all = tab.encode(tab.raw_train[seed_all], seed_all)

    history, pseudo_rows = [], []
    if pre and cfg.epochs > 0:
        # encoder and projection head of the pretrained members (own stacks: only they train)
        Kp = len(pre)
        pidx = torch.tensor(pre, device=dev)
        ig = [_generator(seeds[i], "init", dev) for i in pre]  # same start as enc_all's members
        enc = StackedMLP(Kp, enc_dims, ig, [in_w[i] for i in pre], cfg.bias_init, dev)
        proj = StackedMLP(Kp, [H] * (cfg.head_depth + 1), ig, bias_init=cfg.bias_init, device=dev)
        opt = adam(enc.parameters() + proj.parameters(), cfg.lr)
        gens = [train_gens[i] for i in pre]
        seed_idx = torch.tensor([members[i][0] for i in pre], device=dev)
        pspecs = [METHODS[members[i][1]] for i in pre]
        pmem = [(seeds[i], members[i][1]) for i in pre]  # (seed, method) of each pretrained member
        raw = tab.raw_train[seed_idx]  # [Kp, N, M]
        anchors = anchors_all[pidx]
        active = tab.active[seed_idx]
        k = torch.tensor([cfg.corrupted_count(m_feats[i]) for i in pre], device=dev)
        y_true = tab.y_train[seed_idx]
        labeled = tab.labeled[seed_idx]
        labels = torch.zeros(Kp, N, dtype=torch.int64, device=dev)
        orc = [j for j, s in enumerate(pspecs) if s.how == "oracle"]
        if orc:
            labels[orc] = y_true[orc]
        pse = [j for j, s in enumerate(pspecs) if s.how == "pseudo"]
        cor = [j for j, s in enumerate(pspecs) if s.ranking != "uniform"]
        uni = [j for j, s in enumerate(pspecs) if s.ranking == "uniform"]
        if cor:
            W = torch.as_tensor(importance, dtype=torch.float32, device=dev)[seed_idx[cor]]
            sign = torch.tensor([1.0 if pspecs[j].ranking == "most" else -1.0 for j in cor], device=dev)
        lab_rows = torch.stack([labeled[j].nonzero().squeeze(1) for j in range(Kp)])  # [Kp, NL]
        batches = _batches(N, cfg.batch_size)
        start, spent = 0, 0.0
        ckpt_file, key = ckpt if ckpt is not None else (None, "")
        expect = dict(params=[tuple(p.shape) for p in enc.parameters() + proj.parameters()],
                      gens=[int(g.get_state().numel()) for g in gens], labels=(Kp, N),
                      classes=Cn, epochs=cfg.epochs, members=Kp)
        state = _load_checkpoint(ckpt_file, key, expect)
        if state is not None:
            opt.load_state_dict(state["opt"])
            with torch.no_grad():
                for p, v in zip(enc.parameters() + proj.parameters(), state["params"]):
                    p.copy_(v.to(dev))
            for g, gs in zip(gens, state["gens"]):
                g.set_state(gs)
            labels = state["labels"].to(dev)
            history, pseudo_rows = list(state["history"]), list(state["pseudo"])
            start, spent = state["epoch"], state["seconds"]
            print(f"{prep.name}: resuming pretraining at epoch {start} of {cfg.epochs} from {ckpt_file}")
        bar = _bar(cfg.epochs, f"{prep.name}: pretraining {Kp} members", cfg.progress)
        if bar is not None and start:
            bar.update(start)
        t1 = time.perf_counter()
        for epoch in range(start, cfg.epochs):
            if pse and epoch % cfg.pseudo_every == 0:
                pidx_t = torch.tensor(pse, device=dev)
                with torch.no_grad():
                    emb = enc(anchors[pidx_t], pidx_t)
                head = fit_heads(_take(emb, lab_rows[pidx_t]), y_true[pidx_t].gather(1, lab_rows[pidx_t]),
                                 [gens[j] for j in pse], cfg, Cn)
                with torch.no_grad():
                    logits = head(emb)
                    pred = logits.argmax(-1)
                bad = _first_bad(torch.isfinite(logits).flatten(1).all(1).tolist(), [pmem[j] for j in pse])
                if bad is not None:
                    raise TrainingDiverged(prep.name, bad[0], bad[1], epoch,
                                           f"the pseudo-label head's predictions are not finite at the "
                                           f"refresh before pretraining epoch {epoch + 1} of {cfg.epochs}",
                                           bad[2], cfg.lr)
                new = torch.where(labeled[pidx_t], y_true[pidx_t], pred)
                labels[pidx_t] = new
                unl = ~labeled[pidx_t]
                acc = ((new == y_true[pidx_t]) & unl).sum(1).float() / unl.sum(1)  # NaN: no unlabeled row
                for j, a in zip(pse, acc.tolist()):
                    pseudo_rows.append((seeds[pre[j]], members[pre[j]][1], epoch, a))
            # per-member randomness for this epoch (each from its own generator)
            perm = torch.stack([torch.randperm(N, generator=g, device=dev) for g in gens])
            donor_u = torch.stack([torch.rand(N, M, generator=g, device=dev) for g in gens])
            mask = torch.zeros(Kp, N, M, dtype=torch.bool, device=dev)
            if uni:
                su = torch.stack([torch.rand(N, M, generator=gens[j], device=dev) for j in uni])
                mask[uni] = C.uniform_mask(su, active[uni], k[uni])
            if cor:
                kc = k[cor].tolist()
                half = torch.full((N, M), 0.5, device=dev)

                def draw(t, _kc=kc):
                    return torch.stack([torch.rand(N, M, generator=gens[j], device=dev) if t < kj else half
                                        for j, kj in zip(cor, _kc)])
                mask[cor] = C.correlation_mask(W, active[cor], k[cor], sign, draw, cfg.corr_temperature,
                                               cfg.corr_normalization)
            donors = C.draw_donors(labels, Cn, donor_u)
            views = tab.encode(C.corrupt(raw, mask, donors), seed_idx)
            pairs = torch.cat([anchors, views], dim=1)  # [Kp, 2N, D]: anchor i, view N + i
            tot = torch.zeros(Kp, device=dev)
            for a, b in batches:
                idx = perm[:, a:b]
                x = _take(pairs, torch.cat([idx, idx + N], dim=1))
                z = proj(enc(x))
                loss = nt_xent_pairs(z, cfg.temperature)
                opt.zero_grad(set_to_none=True)
                loss.sum().backward()
                opt.step()
                tot += loss.detach() * (b - a)
            ep_loss = (tot / N).tolist()
            bad = _first_bad([math.isfinite(v) for v in ep_loss], pmem)
            if bad is not None:
                raise TrainingDiverged(prep.name, bad[0], bad[1], epoch + 1,
                                       f"the contrastive loss is {ep_loss[pmem.index(bad[:2])]} at pretraining "
                                       f"epoch {epoch + 1} of {cfg.epochs}", bad[2], cfg.lr)
            for j, lv in enumerate(ep_loss):
                history.append((seeds[pre[j]], members[pre[j]][1], epoch + 1, lv))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{np.mean(ep_loss):.4f}", refresh=False)
            if ckpt_file is not None and (epoch + 1) % checkpoint_every == 0 and epoch + 1 < cfg.epochs:
                _save_checkpoint(ckpt_file, dict(
                    key=key, epoch=epoch + 1, seconds=spent + time.perf_counter() - t1,
                    params=[p.detach().cpu() for p in enc.parameters() + proj.parameters()],
                    opt=opt.state_dict(), gens=[g.get_state() for g in gens],
                    labels=labels.cpu(), history=history, pseudo=pseudo_rows))
            if on_epoch is not None:
                on_epoch(epoch + 1)
        if bar is not None:
            bar.close()
        timings["pretrain_s"] = spent + time.perf_counter() - t1
        if start:
            timings["resumed_at_epoch"] = start
        timings["pretrain_s_per_epoch"] = timings["pretrain_s"] / cfg.epochs
        # the last step may have made a weight non-finite after the last loss was computed
        finite = torch.stack([torch.isfinite(p).flatten(1).all(1) for p in enc.parameters()]).all(0)
        bad = _first_bad(finite.tolist(), pmem)
        if bad is not None:
            raise TrainingDiverged(prep.name, bad[0], bad[1], cfg.epochs,
                                   f"an encoder weight is not finite after pretraining epoch {cfg.epochs}",
                                   bad[2], cfg.lr)
        # copy the trained encoders into the full stack
        with torch.no_grad():
            for Wa, Wp in zip(enc_all.parameters(), enc.parameters()):
                Wa[pidx] = Wp

    # ---------------------------------------------------------------- evaluation
    t2 = time.perf_counter()
    with torch.no_grad():
        emb_tr = enc_all(anchors_all)
        emb_te = enc_all(tab.encode(tab.raw_test[seed_all], seed_all))
    lab = tab.labeled[seed_all]
    lab_rows = torch.stack([lab[j].nonzero().squeeze(1) for j in range(len(members))])
    y_tr = tab.y_train[seed_all]
    head = fit_heads(_take(emb_tr, lab_rows), y_tr.gather(1, lab_rows), train_gens, cfg, Cn)
    with torch.no_grad():
        prob = torch.softmax(head(emb_te), -1).cpu().numpy()
    bad = _first_bad(np.isfinite(prob).reshape(len(members), -1).all(1).tolist(),
                     [(seeds[j], m) for j, (_, m) in enumerate(members)])
    if bad is not None:
        raise TrainingDiverged(prep.name, bad[0], bad[1], None,
                               f"the classification head's test probabilities are not finite after "
                               f"{cfg.head_epochs} head epochs", bad[2], cfg.lr)
    y_te = tab.y_test[seed_all].cpu().numpy()
    timings["evaluate_s"] = time.perf_counter() - t2
    rows = []
    for j, (si, m) in enumerate(members):
        rows.append(dict(dataset=prep.name, did=did, seed=seeds[j], method=m,
                         accuracy=accuracy(y_te[j], prob[j]), auroc=auroc(y_te[j], prob[j]),
                         n_train=N, n_labeled=int(lab[j].sum()), n_test=int(y_te.shape[1]),
                         n_features=m_feats[j]))
    embeddings = {}
    if cfg.keep_embeddings:
        for j, (si, m) in enumerate(members):
            if si == 0:
                embeddings[m] = dict(train=emb_tr[j].cpu().numpy(), test=emb_te[j].cpu().numpy(),
                                     y_train=y_tr[j].cpu().numpy(), y_test=y_te[j])
    timings["total_s"] = time.perf_counter() - t0
    if ckpt is not None:
        ckpt[0].unlink(missing_ok=True)  # finished: nothing left to resume
    res = pd.DataFrame(rows)
    res["did"] = res["did"].astype("Int64")
    return RunResult(
        results=res,
        history=pd.DataFrame(history, columns=["seed", "method", "epoch", "loss"]).astype(
            {"seed": "int64", "method": str, "epoch": "int64", "loss": "float64"}),
        pseudo=pd.DataFrame(pseudo_rows, columns=["seed", "method", "epoch", "pseudo_accuracy"]).astype(
            {"seed": "int64", "method": str, "epoch": "int64", "pseudo_accuracy": "float64"}),
        importance=importance, embeddings=embeddings, timings=timings, config=cfg, classes=list(prep.classes))


def _stored_importances(prep: Prepared, cfg: Config, seeds, stored, cache_dir, progress: bool) -> dict:
    """Importance matrices ``{seed: W}`` of ``seeds``: stored ones whose key matches, the rest
    from the importance cache or computed."""
    from . import reuse
    from .correlation import importance_matrices

    out, todo = {}, []
    for sp in prep.splits:
        if sp.seed not in seeds:
            continue
        W = stored.importance_of(sp.seed, reuse.importance_key(sp, cfg, prep.classes)) if stored else None
        if W is not None:
            out[sp.seed] = W
        else:
            todo.append(sp)
    if todo:
        W = importance_matrices(prep.name, todo, cfg, cache_dir=cache_dir, progress=progress)
        out.update({sp.seed: W[i] for i, sp in enumerate(todo)})
    return out


def _subset(prep: Prepared, seeds) -> Prepared:
    return Prepared(prep.name, prep.feature_names, prep.is_cat, prep.classes,
                    [sp for sp in prep.splits if sp.seed in set(seeds)])


def run_dataset(dataset: str | int | Dataset, cfg: Config | None = None, data_dir=None,
                cache_dir=None, store_dir=None, reuse: bool = True) -> RunResult:
    """Load ``dataset`` (name, OpenML id or a :class:`Dataset`), run every seed x method, evaluate.

    ``data_dir``: folder of ``<did>.arff`` files (default: ``$TCC_DATA_DIR``); ``cache_dir``:
    where XGBoost importance matrices are cached and pretraining is checkpointed (in
    ``checkpoints/``), so that an interrupted run resumes where it stopped.

    ``store_dir``: a folder where :func:`tcclib.store.save_run` saved an earlier run.  With
    ``reuse`` (the default) every member (seed x method), baseline, importance matrix and
    embedding stored there whose content key matches (:mod:`tcclib.reuse`: same data, same
    settings that determine it) is taken as it is, and only the rest trains: re-rendering a
    finished dataset trains nothing, adding a method trains that method only.
    ``run.timings["trained_members"]`` / ``["reused_members"]`` say what happened.
    """
    from . import reuse as R
    from .correlation import correlation_range

    cfg = cfg or Config()
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    prep = prepare(ds, cfg.seeds, cfg.test_fraction, cfg.labeled_fraction)
    check_training_inputs(prep, cfg)  # clear errors (features to corrupt, memory) before any work
    keys = R.run_keys(prep, cfg)
    stored = R.load(store_dir) if (store_dir is not None and reuse) else None
    hit = {(sp.seed, m): bool(stored and stored.has_member(sp.seed, m, keys.members[R.tag(sp.seed, m)]))
           for sp in prep.splits for m in cfg.methods}
    emb = stored.embeddings(keys.embeddings) if (stored is not None and cfg.keep_embeddings) else {}
    if cfg.keep_embeddings:  # an embedding not stored needs its first-seed encoder trained
        hit.update({(prep.splits[0].seed, m): False for m in cfg.methods if m not in emb})
    need_seeds = [sp.seed for sp in prep.splits if any(not hit[sp.seed, m] for m in cfg.methods)]
    need_methods = [m for m in cfg.methods if any(not hit[s, m] for s in need_seeds)]

    # importances: for the correlation members that train, and for correlation ranges not stored
    timings: dict = {}
    ranges: dict = {}
    imp: dict = {}
    t = time.perf_counter()
    if any(METHODS[m].where != "uniform" for m in cfg.methods):
        for sp in prep.splits:
            r = stored.corr_range_of(sp.seed, keys.importance[str(sp.seed)]) if stored else None
            if r is not None:
                ranges[sp.seed] = r
        want = {sp.seed for sp in prep.splits if sp.seed not in ranges}
        if any(METHODS[m].where != "uniform" for m in need_methods):
            want |= set(need_seeds)
        imp = _stored_importances(prep, cfg, want, stored, cache_dir, cfg.progress)
        for sp in prep.splits:
            if sp.seed not in ranges:
                ranges[sp.seed] = correlation_range(imp[sp.seed], sp.active)
    timings["importance_s"] = time.perf_counter() - t

    new = None
    if need_seeds:
        sub_cfg = cfg.replace(seeds=need_seeds, methods=need_methods, baselines=[],
                              keep_embeddings=cfg.keep_embeddings and need_seeds[0] == prep.splits[0].seed
                              and any(m not in emb for m in need_methods))
        sub_imp = (np.stack([imp[s] for s in need_seeds])
                   if any(METHODS[m].where != "uniform" for m in need_methods) else None)
        ckpt_dir = Path(cache_dir) / "checkpoints" if cache_dir is not None else None
        new = run_prepared(_subset(prep, need_seeds), sub_cfg, sub_imp, did=ds.did, checkpoint_dir=ckpt_dir)
        timings.update(new.timings)

    # assemble every member in the ensemble's order: stored where it matched, else new
    order = {(sp.seed, m): i for i, (sp, m) in enumerate((sp, m) for sp in prep.splits for m in cfg.methods)}

    def pick(frame_new, frame_stored, by_epoch: bool):
        parts = []
        for (s, m), i in order.items():
            src = frame_stored if hit[s, m] else frame_new
            if src is None or not len(src):
                continue
            part = src[(src.seed == s) & (src.method == m)]
            parts.append(part.assign(_order=i))
        if not parts:
            return None
        df = pd.concat(parts, ignore_index=True)
        df = df.sort_values(["epoch", "_order"] if by_epoch else ["_order"], kind="stable")
        return df.drop(columns="_order").reset_index(drop=True)

    res = pick(new.results if new else None, stored.results if stored else None, False)
    hist = pick(new.history if new else None, stored.history if stored else None, True)
    pse = pick(new.pseudo if new else None, stored.pseudo if stored else None, True)
    if cfg.baselines:
        from .baselines import run_baselines

        t = time.perf_counter()
        rows = []
        for b in cfg.baselines:
            miss = [sp.seed for sp in prep.splits
                    if not (stored and stored.has_baseline(sp.seed, b, keys.baselines[R.tag(sp.seed, b)]))]
            if miss:
                rows.append(run_baselines(_subset(prep, miss), cfg, [b], ds.did))
            if stored is not None and len(miss) < len(prep.splits):
                st = stored.results
                rows.append(st[(st.method == b) & ~st.seed.isin(miss)])
        base = pd.concat(rows, ignore_index=True)
        seed_pos = {sp.seed: i for i, sp in enumerate(prep.splits)}
        base = base.assign(_s=base.seed.map(seed_pos), _b=base.method.map(list(cfg.baselines).index))
        base = base.sort_values(["_s", "_b"], kind="stable").drop(columns=["_s", "_b"])
        res = pd.concat([res, base], ignore_index=True)
        timings["baselines_s"] = time.perf_counter() - t
    res["did"] = res["did"].astype("Int64")
    cols = ["seed", "method", "epoch"]
    hist = hist if hist is not None else pd.DataFrame(columns=[*cols, "loss"])
    pse = pse if pse is not None else pd.DataFrame(columns=[*cols, "pseudo_accuracy"])
    hist = hist.astype({"seed": "int64", "method": str, "epoch": "int64", "loss": "float64"})
    pse = pse.astype({"seed": "int64", "method": str, "epoch": "int64", "pseudo_accuracy": "float64"})
    n_trained = sum(not h for h in hit.values())
    timings.update(trained_members=n_trained, reused_members=len(hit) - n_trained)
    embeddings = {}
    if cfg.keep_embeddings:
        fresh = new.embeddings if new is not None else {}
        embeddings = {m: emb[m] if m in emb else fresh[m] for m in cfg.methods if m in emb or m in fresh}
    stacked = np.stack([imp[sp.seed] for sp in prep.splits]) if len(imp) == len(prep.splits) else None
    return RunResult(results=res, history=hist, pseudo=pse, corr_range=ranges, importance=stacked,
                     embeddings=embeddings, timings=timings, config=cfg, classes=list(prep.classes),
                     keys=keys, importances=imp, trained=n_trained > 0,
                     new_embeddings=bool(embeddings) and any(m not in emb for m in embeddings))
