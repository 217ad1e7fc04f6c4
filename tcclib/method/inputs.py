"""What a run needs before it trains: its prepared splits, a memory estimate and input checks.

:func:`prepare_config` prepares a dataset with a run's settings; :func:`check_training_inputs`
refuses, before any work, a run that would not fit in memory or whose settings cannot apply to
the dataset (too few features to corrupt, nothing unlabeled for pseudo-labels).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field

import numpy as np

from tcclib.data.preprocess import Prepared, prepare
from tcclib.data.sources import Dataset, DatasetError
from tcclib.method.config import METHODS, Config, ConfigError
from tcclib.util.environment import env_number


def prepare_config(ds: Dataset, cfg: Config, seeds=None) -> Prepared:
    """:func:`prepare` with a run's settings: its seeds (or ``seeds``), fractions and labeled split."""
    return prepare(
        ds,
        cfg.seeds if seeds is None else seeds,
        cfg.test_fraction,
        cfg.labeled_fraction,
        cfg.effective("labeled_split"),
    )


# --------------------------------------------------------------------------- before training

MEMORY_BUDGET_ENV = "TCC_MEMORY_BUDGET_GB"
MEMORY_BUDGET_GB = 8.0
"""Default budget (GiB) for the tensors one training run allocates; ``$TCC_MEMORY_BUDGET_GB``
overrides it (``inf``: no limit)."""


def memory_budget_gb() -> float:
    """The memory budget in GiB: ``$TCC_MEMORY_BUDGET_GB`` if set, else :data:`MEMORY_BUDGET_GB`."""
    found = env_number(MEMORY_BUDGET_ENV)
    if found is None:
        return MEMORY_BUDGET_GB
    text, value = found
    if not value > 0:
        raise ConfigError(f"${MEMORY_BUDGET_ENV}={text!r}: expected a number of GiB > 0 (or inf for no limit)")
    return value


@dataclass(frozen=True)
class MemoryEstimate:
    """What one training run of a prepared dataset allocates, estimated without allocating it.

    members: K = seeds x methods (all stacked for evaluation); pretrained: Kp = seeds x
    pretraining methods (0 without pretraining epochs); width: D, the one-hot width the seeds are
    padded to; column_widths: each feature's one-hot width (the widest over the seeds).
    """

    nbytes: int
    members: int
    pretrained: int
    n_train: int
    n_test: int
    n_features: int
    width: int
    hidden: int
    column_widths: dict = field(default_factory=dict)
    embedding: int | None = None  # (the widest member's embedding; None: ``hidden``)

    @property
    def gib(self) -> float:
        return self.nbytes / 2**30

    def without(self, columns) -> MemoryEstimate:
        """The estimate with ``columns`` left out (their one-hot width removed)."""
        drop = set(columns)
        widths = {c: w for c, w in self.column_widths.items() if c not in drop}
        d = max(self.width - sum(w for c, w in self.column_widths.items() if c in drop), 0)
        n_features = self.n_features - len(drop)
        nbytes = _tensor_bytes(
            self.members, self.pretrained, self.n_train, self.n_test, d, n_features, self.hidden, self.embedding
        )
        return dataclasses.replace(self, nbytes=nbytes, n_features=n_features, width=d, column_widths=widths)


def _tensor_bytes(K: int, Kp: int, N: int, Nt: int, D: int, M: int, H: int, E: int | None = None) -> int:
    """Peak bytes of :func:`tcclib.running.train.run_prepared`'s big tensors (float32 unless said).

    One-hot rows of D (+1 scatter column) floats: the anchors of all K members (``anchors_all``),
    and while pretraining the Kp members' anchor copy, their views and the anchor/view pairs (2N
    rows), with the previous epoch's views and pairs still held while the next are built: K N +
    6 Kp N rows at the peak (K N + 4 Kp N + K Nt while the test rows are encoded for evaluation).
    Raw-value work per pretrained member, row and feature (corrupted copies, uniform draws,
    int64 donor and scatter indices, masks): about 48 bytes.  The first encoder layer, D x H per
    member, with gradient and Adam's two moments for the pretrained ones; and the embeddings
    (K (N + Nt) x E, twice; ``E`` the widest member's embedding, ``H`` unless a deep stack's, every
    encoder layer's).  On CPU the measured peak (RSS) was 10-30 % above this sum
    (allocator slack, short-lived temporaries): it is an order of magnitude, not a bound.
    """
    onehot = 4 * (D + 1) * (max(K * N + 6 * Kp * N, K * N + 4 * Kp * N + K * Nt) if Kp else K * (N + Nt))
    raw = 48 * max(Kp, K) * N * M
    weights = 4 * D * H * (K + 4 * Kp)
    embeddings = 2 * 4 * (E or H) * K * (N + Nt)
    return int(onehot + raw + weights + embeddings)


def estimate_memory(prep: Prepared, cfg: Config) -> MemoryEstimate:
    """Estimate the memory training ``prep`` with ``cfg`` allocates (see :func:`_tensor_bytes`).

    K = len(prep.splits) x len(cfg.methods) members, Kp = len(prep.splits) x the pretraining
    methods (0 when ``cfg.epochs`` is 0).  Nothing is allocated: the widths come from the
    preprocessed splits (:attr:`SeedSplit.widths`), the way :class:`tcclib.data.encoding.TensorTable`
    stacks them.  For the paper's datasets and defaults this is at most a few hundred MiB; a
    categorical column with thousands of levels is what makes it large.
    """
    S = len(prep.splits)
    K = S * len(cfg.methods)
    Kp = S * sum(METHODS[m].pretrain for m in cfg.methods) if cfg.epochs > 0 else 0
    widths = np.stack([sp.widths for sp in prep.splits])  # [S, M]
    D = int(widths.sum(1).max())
    N = int(prep.splits[0].raw_train.shape[0])
    Nt = int(max(sp.raw_test.shape[0] for sp in prep.splits))
    M = widths.shape[1]
    cols = {c: int(w) for c, w in zip(prep.feature_names, widths.max(0))}
    deep = any(METHODS[m].pretrain and METHODS[m].deep_stack for m in cfg.methods)
    embedding = cfg.hidden_dim * (cfg.encoder_depth if deep and Kp else 1)  # (the widest member's)
    nbytes = _tensor_bytes(K, Kp, N, Nt, D, M, cfg.hidden_dim, embedding)
    return MemoryEstimate(nbytes, K, Kp, N, Nt, M, D, cfg.hidden_dim, cols, embedding)


def check_memory(prep: Prepared, cfg: Config, budget_gb: float | None = None) -> MemoryEstimate:
    """Raise a :class:`DatasetError` when :func:`estimate_memory` exceeds the budget.

    ``budget_gb``: GiB; default :func:`memory_budget_gb` (``$TCC_MEMORY_BUDGET_GB``, else
    :data:`MEMORY_BUDGET_GB`).  The message gives the estimate, the widest categorical columns
    responsible (as many as it takes to fit the budget without them) and the ways out.
    """
    est = estimate_memory(prep, cfg)
    budget = memory_budget_gb() if budget_gb is None else float(budget_gb)
    if est.gib <= budget:
        return est
    wide = sorted((c for c, w in est.column_widths.items() if w > 1), key=lambda c: -est.column_widths[c])
    culprits: list[str] = []
    for c in wide:
        culprits.append(c)
        if est.without(culprits).gib <= budget or len(culprits) == 5:
            break
    fits = bool(culprits) and est.without(culprits).gib <= budget
    head = (
        f"{prep.name}: training would allocate about {est.gib:.1f} GiB ({est.members} members = "
        f"{len(prep.splits)} seeds x {len(cfg.methods)} methods, {est.pretrained} of them pretraining; "
        f"{est.n_train} training rows; one-hot width {est.width}), more than the memory budget of "
        f"{budget:g} GiB (${MEMORY_BUDGET_ENV})."
    )
    ways = (
        f"train fewer seeds or methods at once (Config(seeds=..., methods=...)), or, if the machine has "
        f"the memory, raise ${MEMORY_BUDGET_ENV}"
    )
    if fits:
        share = sum(est.column_widths[c] for c in culprits) / est.width
        what = ", ".join(f"{c!r} ({est.column_widths[c]} levels in training)" for c in culprits)
        raise DatasetError(
            f"{head} The one-hot encoding of categorical column(s) {what} makes {share:.0%} of the width; "
            f"without it about {est.without(culprits).gib:.2g} GiB. Group rare levels into one (e.g. "
            f"'other'), drop the column or encode it as numbers; or {ways}"
        )
    raise DatasetError(f"{head} No single wide column is to blame; {ways}")


def check_training_inputs(prep: Prepared, cfg: Config) -> MemoryEstimate:
    """Everything about ``prep`` and ``cfg`` that would fail or mislead during training, checked first.

    :func:`tcclib.running.train.run_dataset` calls it right after :func:`prepare`, before importances or
    training:

    * pretraining methods that corrupt a fixed count of features per row (not a Bernoulli mask):
      every seed must leave a feature intact (:meth:`Config.corrupted_count`; a
      :class:`ConfigError` naming the dataset and seed, and the columns dropped there as constant
      or missing);
    * the memory estimate must fit the budget (:func:`check_memory`);
    * ``labeled_fraction=1.0`` with a pseudo-label method warns: every training row is labeled,
      so pseudo-labels are the true labels (the method pretrains like ``oracle``) and
      ``pseudo_accuracy``, measured on unlabeled rows, is NaN.

    Returns the memory estimate.
    """
    if any(METHODS[m].reads("corruption_rate") for m in cfg.methods):  # (a Bernoulli mask's count varies)
        for sp in prep.splits:
            try:
                cfg.corrupted_count(sp.n_features)
            except ConfigError as e:
                dropped = [c for c, a in zip(prep.feature_names, sp.active) if not a]
                note = (
                    f" ({len(dropped)} of {len(sp.active)} columns are constant or missing on this "
                    f"seed's training split and dropped: {', '.join(dropped[:10])})"
                    if dropped
                    else ""
                )
                raise ConfigError(f"{prep.name}: seed {sp.seed}: {e}{note}") from None
    if cfg.labeled_fraction >= 1 and any(METHODS[m].pseudo_labelled for m in cfg.methods):
        warnings.warn(
            f"{prep.name}: labeled_fraction={cfg.labeled_fraction:g}: every training row is "
            "labeled, so the pseudo-label methods use the true labels (as 'oracle' does) and "
            "pseudo_accuracy (on unlabeled rows) is NaN",
            stacklevel=2,
        )
    return check_memory(prep, cfg)
