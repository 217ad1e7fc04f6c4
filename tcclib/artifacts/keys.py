"""Content keys: reuse stored results whose data and settings match, retrain only what changed.

Every stored artefact of a dataset run is keyed by a digest of exactly what determines it:

* a **member** (one seed x method): that seed's preprocessed split (training and test rows,
  labels, labeled subset, active columns, levels, class names), the settings the member's
  training reads (the encoder and head sizes, optimiser, head epochs for every method; epochs,
  corruption rate and temperature for a pretrained one; the refresh interval for a
  pseudo-labelled one; the correlation sampler's settings and the importance key for a
  correlation one; which settings these are is declared on :class:`Config`'s fields,
  ``key=...``), the method's rule, the opt-in variants in force (the head variant when it is
  not the paper's frozen encoder: ``head``, and ``encoder_lr`` for ``finetune``),
  :data:`TRAIN_VERSION` and, for a
  user's rule, its identity by value (:func:`tcclib.method.registry.rule_code`: its code and what
  it reads in the user's files, its state and what it draws on a fixed probe, computed when the
  run's keys are; tcclib's own rules are covered by :data:`TRAIN_VERSION`); and the method's
  objective when it is not the default NT-Xent (its name, parameters, the settings it reads and,
  for a user's, its identity by value beside the rules'; nothing for NT-Xent, so the keys made
  before objectives stay); and, when tcclib's own training code is not the code recorded for
  :data:`TRAIN_VERSION` (an edit of a built-in rule, a default, a helper), its digest
  (:mod:`tcclib.artifacts.own_code`; every key below too);
* a **baseline** (one seed x baseline): the split, the settings it reads (XGBoost's) and, for a
  user's baseline, its factory's code;
* an **importance matrix** (one seed): the split and the XGBoost settings;
* the **embeddings** of a method (first seed only): the key of the member they come from.

``keys.json`` beside the results records the key of every stored row; :func:`load` reads
a dataset's stored files back, and :func:`tcclib.running.train.run_dataset` takes what matches and
trains the rest (members are independent, so a subset trains exactly as in the whole ensemble).
Bump :data:`TRAIN_VERSION` when a change to the code changes what training computes, and record
the code (``python tools/record_training_code.py``) after any change to it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tcclib.artifacts import own_code
from tcclib.data.preprocess import Prepared, SeedSplit
from tcclib.method import identity
from tcclib.method.config import METHODS, XGB_SETTINGS, Config, names
from tcclib.method.correlation import IMPORTANCE_SWITCHES, usable_device, xgb_device
from tcclib.method.registry import get
from tcclib.method.settings import MEMBER, PRETRAINED

TRAIN_VERSION = 1
IMPORTANCE_VERSION = 1
KEYS_FILE = "keys.json"
IMPORTANCE_FILE = "importance.npz"
NOW = "now"
"""A key function's ``tcclib_code`` when it reads tcclib's own training code itself (:func:`run_keys` reads
it once and passes :func:`tcclib.artifacts.own_code.identity_now`'s answer to every key)."""

_ALL = names(key=MEMBER)
"""The settings every member's key holds (declared ``key=MEMBER`` on :class:`Config`'s fields)."""
_PRETRAIN = names(key=PRETRAINED)
"""The settings a pretrained member's key adds (declared ``key=PRETRAINED``)."""


def digest(*parts) -> str:
    """The one content-key scheme: sha256 over the parts in order (arrays by dtype, shape and bytes;
    anything else as sorted JSON), its first 20 hex digits.  Every stored artefact's key (members,
    baselines, importances, the importance cache, checkpoints, ablation grids) is one."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(str((p.dtype.str, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(json.dumps(p, sort_keys=True, default=_json_value).encode())
        h.update(b"|")
    return h.hexdigest()[:20]


def _json_value(value):
    """What :func:`digest` writes for a value JSON has no form for: a set, an array or a tensor by
    its value (:func:`tcclib.method.identity.value_identity`: a set's elements in a fixed order, not
    the process's hash order; an array's bytes, not its rounded, elided text; a function or an
    object whose text is its address), anything else as its text."""
    torch = sys.modules.get("torch")
    if isinstance(value, (set, frozenset, np.ndarray)) or (torch is not None and isinstance(value, torch.Tensor)):
        return {"value": identity.value_identity(value, "a key part")}
    text = str(value)
    if " at 0x" in text:  # (a function or an object named by its address: another in every process)
        return {"value": identity.value_identity(value, "a key part")}
    return text


def split_digest(sp: SeedSplit, classes) -> str:
    return digest(
        int(sp.seed),
        list(map(str, classes)),
        sp.raw_train,
        sp.raw_test,
        sp.y_train,
        sp.y_test,
        sp.labeled,
        sp.active,
        sp.is_cat,
        sp.n_levels,
    )


def _fidelity(cfg: Config, names) -> tuple:
    """The key part for the fidelity switches ``names`` that depart from ours: none (so the
    key is what it was before the switches existed) when all are at our defaults."""
    fid = cfg.departures(names)
    return (fid,) if fid else ()


def _approximations(cfg: Config) -> tuple:
    """The key part for the opt-in importance approximation (:meth:`Config.importance_approximations`):
    none at the default, so the published runs' keys stay what they were."""
    approx = cfg.importance_approximations()
    return (approx,) if approx else ()


def _variants(cfg: Config, spec) -> tuple:
    """The key parts for the opt-in variants in force (:meth:`Config.variants`, declared
    ``key=VARIANT``): ``(name, value)`` of each one pretraining reads (a pretrained member's
    only), then one ``{name: value}`` of the classifier's (the head variant: ``head``, and
    ``encoder_lr`` for ``finetune``).  None at the defaults, so the published runs' keys stay
    what they were."""
    variants = cfg.variants(spec.pretrain)
    head = cfg.head_variant()
    return (*((n, v) for n, v in variants.items() if n not in head), *((head,) if head else ()))


def importance_key(sp: SeedSplit, cfg: Config, classes=(), tcclib_code=NOW) -> str:
    return digest(
        "importance",
        IMPORTANCE_VERSION,
        split_digest(sp, classes),
        {k: getattr(cfg, k) for k in XGB_SETTINGS},
        *_fidelity(cfg, IMPORTANCE_SWITCHES),
        *_approximations(cfg),
        *own_part(tcclib_code),
        *xgboost_device_part(cfg),
    )


def xgboost_device_part(cfg: Config) -> tuple:
    """The key part for where the importance models fit: none on the CPU (every key made before
    stays), ``("xgboost device", "cuda")`` where XGBoost fits on a GPU, whose trees round otherwise."""
    device = usable_device(xgb_device(cfg))
    return (("xgboost device", device),) if device != "cpu" else ()


def member_key(sp: SeedSplit, method: str, cfg: Config, classes=(), code: dict | None = None, tcclib_code=NOW) -> str:
    """The content key of one member: its split, the settings every member reads, those its
    rules read (:meth:`~tcclib.method.registry.MethodSpec.key_parts`; a correlation method's
    importance key too), its rules' own parameters when they have any and, for a user's rule, its
    identity by value (``code``: :meth:`~tcclib.method.registry.MethodSpec.code`, computed now
    when not given)."""
    spec = METHODS[method]
    settings, switches, own = spec.key_parts()
    names = list(_ALL) + (list(_PRETRAIN) if spec.pretrain else []) + settings
    extra = importance_key(sp, cfg, classes) if spec.needs_importance else None
    # a method with its own sampler rule is keyed as if corr_rule said so
    fcfg = cfg.replace(corr_rule=spec.rule) if spec.rule is not None and spec.needs_importance else cfg
    return digest(
        "member",
        TRAIN_VERSION,
        split_digest(sp, classes),
        method,
        [spec.how, spec.where, spec.flipped],
        {k: getattr(cfg, k) for k in names},
        extra,
        *_fidelity(fcfg, ["encoder_init", *switches]),
        *((own,) if own else ()),
        *_step(cfg, spec),
        *_variants(cfg, spec),
        *_code(spec.user_codes(cfg) if code is None else code),
        *_objective(spec),
        *(_in_force(cfg, settings) if spec.has_users_code else ()),
        *own_part(tcclib_code),
    )


def _in_force(cfg: Config, names) -> tuple:
    """``("in force", {name: value})`` for the settings of ``names`` whose value in force
    (:meth:`~tcclib.method.config.Config.effective`: an ``"auto"`` resolved) is not the value
    given, which is what a user's code reads; empty when none (the keys before it stay)."""
    resolved = {k: cfg.effective(k) for k in names if cfg.effective(k) != getattr(cfg, k)}
    return ("in force", resolved) if resolved else ()


def _objective(spec) -> tuple:
    """The key part for the method's objective (:meth:`~tcclib.method.registry.MethodSpec.objective_key`):
    none for the default NT-Xent, so every key made before objectives existed stays what it was."""
    part = spec.objective_key(with_code=False)  # (a user's objective's code: in _code, computed once)
    return (("objective", part),) if part else ()


def version_part(label: str, version: int) -> tuple:
    """The key part for a version of tcclib's code past 1 (``label``: ``"train version"``,
    ``"importance version"``) where a key did not always hold it (a pretraining checkpoint, the
    importance cache): none at 1, so what was written before keeps its name; a version's recorded
    code reads as unedited, so it is its version that tells it apart."""
    return () if version == 1 else ((label, version),)


def own_part(tcclib_code=NOW) -> tuple:
    """The key part for tcclib's own training code (:mod:`tcclib.artifacts.own_code`): none while it
    is the code recorded for :data:`TRAIN_VERSION` (the committed keys stay), else its digest
    (``tcclib_code``: that identity, read now when :data:`NOW`)."""
    found = own_code.identity_now() if tcclib_code == NOW else tcclib_code
    return (("tcclib code", found),) if found else ()


def _code(identities) -> tuple:
    """The key part for a user's code (:func:`tcclib.method.registry.code_identity`): none
    for tcclib's own rules and baselines, so their keys stay what they were."""
    return (("code", identities),) if identities else ()


def code_identities(cfg: Config) -> dict[str, dict | str]:
    """``{method or baseline: its identity}`` for those of ``cfg`` whose code is a user's (empty
    for the built-ins), computed now, by value (:func:`tcclib.method.registry.code_identity`):
    saved with a run's settings, so that a finished dataset whose rule changed since is reported
    stale, and what changed named (:func:`tcclib.method.registry.changes`)."""
    out: dict = {}
    for m in cfg.methods:
        code = METHODS[m].user_codes(cfg)
        if code:
            out[m] = code
    for b in cfg.baselines:
        code = get(b).code(cfg)
        if code:
            out[b] = code
    return out


def _step(cfg: Config, spec) -> tuple:
    """The key part for a pretrained member's captured or compiled step (``Config.step_mode``):
    none when it runs eagerly (the CPU's default), so those keys stay what they were."""
    mode = spec.step_mode(cfg)
    return (("step", mode),) if spec.pretrain and mode != "eager" else ()


def baseline_key(sp: SeedSplit, name: str, cfg: Config, classes=(), code: str | None = None, tcclib_code=NOW) -> str:
    entry = get(name)
    settings = {k: getattr(cfg, k) for k in entry.settings}
    code = entry.code(cfg, seeds=(sp.seed,)) if code is None else code
    own = own_part(tcclib_code)
    in_force = () if entry.from_tcclib else _in_force(cfg, entry.settings)
    return digest("baseline", TRAIN_VERSION, split_digest(sp, classes), name, settings, *_code(code), *in_force, *own)


@dataclass
class RunKeys:
    """The keys of one run (``keys.json``): ``"<seed>/<method>" -> key`` and so on."""

    members: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    importance: dict = field(default_factory=dict)  # "<seed>" -> key
    embeddings: dict = field(default_factory=dict)  # method -> key of the first seed's member
    code: dict = field(default_factory=dict)  # method or baseline -> its user code's identity (not in keys.json)
    own: str | None = None  # tcclib's training code's identity when it is not the recorded code (not in keys.json)
    edited: list = field(default_factory=list)  # then its files unlike their record (not in keys.json)

    def to_json(self) -> dict:
        return {
            "version": 1,
            "members": self.members,
            "baselines": self.baselines,
            "importance": self.importance,
            "embeddings": self.embeddings,
        }

    @classmethod
    def from_json(cls, d: dict) -> RunKeys:
        emb = d.get("embeddings")
        return cls(
            dict(d.get("members", {})),
            dict(d.get("baselines", {})),
            dict(d.get("importance", {})),
            dict(emb) if isinstance(emb, dict) else {},
        )


def tag(seed, name) -> str:
    return f"{int(seed)}/{name}"


def run_keys(prep: Prepared, cfg: Config) -> RunKeys:
    """The keys of every artefact a run of ``cfg`` on ``prep`` produces; a user's rules and
    baselines, and tcclib's own training code, are keyed by value once, now (``code``, ``own``:
    what the run's ``config.json`` records)."""
    now = own_code.current()
    k = RunKeys(code=code_identities(cfg), own=own_code.identity_now(now), edited=own_code.changed_files(now))
    for sp in prep.splits:
        for m in cfg.methods:
            k.members[tag(sp.seed, m)] = member_key(sp, m, cfg, prep.classes, k.code.get(m, {}), k.own)
        for b in cfg.baselines:
            code = get(b).code(cfg, seeds=(sp.seed,)) if b in k.code else ""  # (the files its seed's model reads)
            k.baselines[tag(sp.seed, b)] = baseline_key(sp, b, cfg, prep.classes, code, k.own)
        k.importance[str(sp.seed)] = importance_key(sp, cfg, prep.classes, k.own)
    if cfg.keep_embeddings and prep.splits:
        s0 = prep.splits[0].seed
        k.embeddings = {m: k.members[tag(s0, m)] for m in cfg.methods}
    return k


@dataclass
class Stored:
    """A dataset's stored results, as written by :func:`tcclib.artifacts.store.save_run`."""

    keys: RunKeys
    results: pd.DataFrame
    history: pd.DataFrame
    pseudo: pd.DataFrame
    corr_range: pd.DataFrame
    folder: Path

    def has_member(self, seed, method, key) -> bool:
        return self.keys.members.get(tag(seed, method)) == key and bool(
            ((self.results.seed == seed) & (self.results.method == method)).any()
        )

    def has_baseline(self, seed, name, key) -> bool:
        return self.keys.baselines.get(tag(seed, name)) == key and bool(
            ((self.results.seed == seed) & (self.results.method == name)).any()
        )

    def corr_range_of(self, seed, key) -> float | None:
        if self.keys.importance.get(str(seed)) != key or not len(self.corr_range):
            return None
        hit = self.corr_range.loc[self.corr_range.seed == seed, "corr_range"]
        return float(hit.iloc[0]) if len(hit) else None

    def importance_of(self, seed, key) -> np.ndarray | None:
        f = self.folder / IMPORTANCE_FILE
        if self.keys.importance.get(str(seed)) != key or not f.exists():
            return None
        with np.load(f) as z:
            name = f"seed_{int(seed)}"
            return z[name].astype(np.float64) if name in z.files else None

    def embeddings(self, keys: dict) -> dict:
        """The stored embeddings ``{method: {...}}`` of the methods whose key matches ``keys``."""
        f = self.folder / "embeddings.npz"
        ok = [m for m, k in keys.items() if self.keys.embeddings.get(m) == k]
        if not ok or not f.exists():
            return {}
        stored = load_embeddings(f)
        return {m: stored[m] for m in ok if m in stored}


def _csv(path: Path, columns) -> pd.DataFrame:
    """A stored table; an empty frame where the file is gone or empty (cut short: nothing of it reused)."""
    try:
        return pd.read_csv(path) if path.exists() else pd.DataFrame(columns=columns)
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=columns)


MEMBER_FILES = ("history.csv", "pseudo.csv")
"""What a stored member is besides its rows of ``results.csv``: its losses and pseudo-label
records (:func:`tcclib.artifacts.store.save_run` writes both, header-only where a run has none)."""


FINISHED = "_DONE.json"
"""A finished dataset's marker: with ``sha256``, the digest of each result file it finished."""


def file_digest(path) -> str:
    """The first 16 hex digits of the sha256 of the file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def changed_since_finished(folder) -> list[str]:
    """The result files of a finished ``folder`` whose bytes are not those its ``_DONE.json``
    recorded when the run finished (edited by hand, cut short, another run's copy), and those it
    recorded that are gone; [] where the marker records no digests (a run from before them)."""
    folder = Path(folder)
    try:
        recorded = json.loads((folder / FINISHED).read_text()).get("sha256")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(recorded, dict):
        return []
    return [
        name
        for name, digest in sorted(recorded.items())
        if not (folder / name).is_file() or file_digest(folder / name) != digest
    ]


def load(folder) -> Stored | None:
    """The stored run in ``folder`` (None when it has no ``keys.json``, or when a result file of
    a finished run is not what its ``_DONE.json`` recorded: nothing of it is reused); where one of
    :data:`MEMBER_FILES` is gone, no member matches (each trains again; the baselines, whose
    results are their rows, still do)."""
    folder = Path(folder)
    kf = folder / KEYS_FILE
    if not kf.exists() or changed_since_finished(folder):
        return None
    keys = RunKeys.from_json(json.loads(kf.read_text()))
    if not all((folder / name).exists() for name in MEMBER_FILES):  # (one deleted since: they train again)
        keys.members = {}
    return Stored(
        keys,
        _csv(folder / "results.csv", ["seed", "method"]),
        _csv(folder / "history.csv", ["seed", "method", "epoch", "loss"]),
        _csv(folder / "pseudo.csv", ["seed", "method", "epoch", "pseudo_accuracy"]),
        _csv(folder / "corr_range.csv", ["seed", "corr_range"]),
        folder,
    )


def load_embeddings(path) -> dict:
    """Embeddings saved by :func:`save_run`: ``{method: {train, test, y_train, y_test}}``."""
    out: dict = {}
    with np.load(path) as z:
        for key in z.files:
            m, part = key.split("__")
            a = z[key]
            out.setdefault(m, {})[part] = a.astype(np.float32) if a.dtype == np.float16 else a
    return out
