"""Class-conditioned contrastive pretraining on your own table, as a scikit-learn classifier.

    from tcclib import TCCClassifier
    clf = TCCClassifier(method="class", epochs=100, random_state=0)
    clf.fit(X, y)            # y: class labels, -1 for unlabeled rows
    clf.predict(X_new); clf.predict_proba(X_new); clf.transform(X_new)   # embeddings

``fit`` runs the paper's recipe on the rows it is given: the preprocessing (impute, z-score,
category codes) is fitted on all of them, the encoder pretrains contrastively on all of them
(labeled and unlabeled), then the encoder is frozen and a classification head trains on the
labeled rows (``head="finetune"`` / ``"concat"``: the opt-in variants; ``sample_weight`` and
``class_weight`` weigh the labeled rows in the heads' loss, never in pretraining).  The steps
are those of the benchmark runner (:mod:`tcclib.method.training`): a classifier with
``random_state=s`` trains exactly like the runner's member (seed ``s``, same method) on the
same rows.  Unlabeled rows are marked ``-1`` in ``y``, scikit-learn's semi-supervised convention.

New rows at ``predict`` are preprocessed as in training: columns are matched by name (any order;
extra columns are ignored with a warning, a missing one is an error naming it), missing values
are imputed with the training statistics, and a category unseen in training encodes as all
zeros.  The fitted model pickles (``pickle``, ``joblib``) with its preprocessing; its tensors are
kept on the CPU, so a model fitted on a GPU loads anywhere.
"""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data

from tcclib.data.encoding import TensorTable
from tcclib.data.preprocess import ColumnError, FittedColumns, Prepared, SeedSplit
from tcclib.data.sources import DatasetError, _standard_types
from tcclib.method import training
from tcclib.method.config import MAX_SEED, METHODS, Config, ConfigError
from tcclib.method.correlation import importance_matrix
from tcclib.method.inputs import check_training_inputs
from tcclib.util.progress import bar

UNLABELED = -1
"""The label of an unlabeled row in ``y`` (scikit-learn's semi-supervised convention)."""

PREDICT_CHUNK = 8192
"""Rows embedded per pass at predict/transform time (memory for one chunk's one-hot rows)."""


def estimator_methods() -> list[str]:
    """Methods the estimator offers: those that need no true label of an unlabeled row (every
    method but ``oracle``, which corrupts within the true class of every row)."""
    return [m for m, s in METHODS.items() if s.how != "oracle"]


# settings the estimator takes as constructor parameters (published defaults, from Config)
_SETTINGS = (
    "epochs",
    "batch_size",
    "lr",
    "head_epochs",
    "pseudo_every",
    "corruption_rate",
    "temperature",
    "corr_temperature",
    "corr_normalization",
    "hidden_dim",
    "encoder_depth",
    "head_depth",
    "head",
    "encoder_lr",
    "bias_init",
    "matmul_precision",
    "xgb_trees",
    "xgb_depth",
    "xgb_eta",
    "xgb_subsample",
    "xgb_colsample",
    "xgb_max_bin",
)
_D = Config()


class TCCClassifier(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Contrastive pretraining of an MLP encoder on all rows, then a head on the labeled ones.

    Parameters
    ----------
    method : str, default "class"
        How and where to corrupt (:data:`tcclib.method.config.METHODS`): ``"random"`` (SCARF: values
        from the whole column), ``"class"`` (from rows of the anchor's pseudo-class, refreshed
        every ``pseudo_every`` epochs), ``"class_least"`` / ``"class_most"`` (pseudo-class, with
        the features chosen by XGBoost correlations), ``"class_most_published"`` (the authors'
        flipped run) or ``"no_pretrain"`` (the encoder stays at its initial weights).
    epochs, batch_size, lr, head_epochs, pseudo_every, corruption_rate, temperature,
    corr_temperature, corr_normalization, hidden_dim, encoder_depth, head_depth, bias_init,
    matmul_precision, xgb_* :
        The paper's settings, with the published defaults (:class:`tcclib.method.config.Config`);
        ``matmul_precision="bf16"`` (opt-in) runs the networks' products in bfloat16, in fit
        and in prediction (about 1.3-1.7x faster on CPUs with AVX512_BF16 or AMX);
        ``xgb_max_bin`` below its default 256 (opt-in) makes the importance models faster.
    head : {"frozen", "finetune", "concat"}, default "frozen"
        The classifier on the labeled rows (:data:`tcclib.method.config.HEADS`): ``"frozen"``
        (the paper: the encoder is frozen, a fresh head trains on its embeddings),
        ``"finetune"`` (opt-in: the encoder trains with the head on the labeled rows, at
        ``encoder_lr``) or ``"concat"`` (opt-in: a head on the embedding concatenated with the
        row's preprocessed features).  docs/estimator.md has a measured comparison.
    encoder_lr : float, default 1e-4
        The encoder's learning rate under ``head="finetune"`` (the head keeps ``lr``); unused
        otherwise.
    class_weight : "balanced", dict or None, default None
        Weights of the classes in the head's cross-entropy (and the pseudo-label heads'):
        ``"balanced"`` weighs class c by ``n_labeled / (n_classes x n_c)`` over the labeled
        rows (scikit-learn's rule), a dict ``{label: weight}`` gives them (absent classes: 1),
        None weighs every class alike (the paper).  Multiplies ``sample_weight`` in ``fit``.
    device : str, default "cpu"
        "cpu", "cuda" or "cuda:N" for training (and prediction, where that device exists).
    random_state : int, RandomState or None
        The member's seed: the same int gives the same model (and the benchmark runner's member
        of that seed).  None draws one.
    verbose : bool
        A progress bar over the pretraining epochs.

    Attributes
    ----------
    classes_, n_features_in_, feature_names_in_ (DataFrame input), seed_ (the seed used),
    columns_ (the fitted preprocessing), encoder_ and head_ (the networks), head_kind_ (the
    ``head`` variant fitted), history_ (contrastive loss per epoch), pseudo_labels_
    (the last pseudo-labels of every row, pseudo-label methods), timings_.
    """

    def __init__(
        self,
        method: str = "class",
        *,
        epochs: int = _D.epochs,
        batch_size: int = _D.batch_size,
        lr: float = _D.lr,
        head_epochs: int = _D.head_epochs,
        pseudo_every: int = _D.pseudo_every,
        corruption_rate: float = _D.corruption_rate,
        temperature: float = _D.temperature,
        corr_temperature: float = _D.corr_temperature,
        corr_normalization: str = _D.corr_normalization,
        hidden_dim: int = _D.hidden_dim,
        encoder_depth: int = _D.encoder_depth,
        head_depth: int = _D.head_depth,
        head: str = _D.head,
        encoder_lr: float = _D.encoder_lr,
        class_weight=None,
        bias_init: float = _D.bias_init,
        matmul_precision: str = _D.matmul_precision,
        xgb_trees: int = _D.xgb_trees,
        xgb_depth: int = _D.xgb_depth,
        xgb_eta: float = _D.xgb_eta,
        xgb_subsample: float = _D.xgb_subsample,
        xgb_colsample: float = _D.xgb_colsample,
        xgb_max_bin: int = _D.xgb_max_bin,
        device: str = "cpu",
        random_state=None,
        verbose: bool = False,
    ):
        self.method = method
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.head_epochs = head_epochs
        self.pseudo_every = pseudo_every
        self.corruption_rate = corruption_rate
        self.temperature = temperature
        self.corr_temperature = corr_temperature
        self.corr_normalization = corr_normalization
        self.hidden_dim = hidden_dim
        self.encoder_depth = encoder_depth
        self.head_depth = head_depth
        self.head = head
        self.encoder_lr = encoder_lr
        self.class_weight = class_weight
        self.bias_init = bias_init
        self.matmul_precision = matmul_precision
        self.xgb_trees = xgb_trees
        self.xgb_depth = xgb_depth
        self.xgb_eta = xgb_eta
        self.xgb_subsample = xgb_subsample
        self.xgb_colsample = xgb_colsample
        self.xgb_max_bin = xgb_max_bin
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = self.random_state is None
        if tags.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = ["float32"]  # embeddings are float32
        return tags

    # ------------------------------------------------------------------ settings
    def config(self, seed: int = 0) -> Config:
        """The :class:`~tcclib.method.config.Config` of this estimator's one member (seed ``seed``).

        Bad values are a :class:`~tcclib.method.config.ConfigError` (a ``ValueError``) naming the
        parameter, raised by ``fit`` before any work."""
        if not isinstance(self.method, str) or self.method not in estimator_methods():
            why = (
                " (oracle corrupts within every row's true class, which unlabeled rows do not have)"
                if self.method == "oracle"
                else ""
            )
            raise ConfigError(
                f"method: {self.method!r} is not one of the estimator's methods{why}; "
                f"choose from {', '.join(estimator_methods())}"
            )
        if not isinstance(self.verbose, bool):
            raise ConfigError(f"verbose: expected True or False, got {self.verbose!r}")
        cw = self.class_weight
        if not (cw is None or isinstance(cw, dict) or (isinstance(cw, str) and cw == "balanced")):
            raise ConfigError(f"class_weight: 'balanced', a dict {{label: weight}} or None, got {self.class_weight!r}")
        return Config(
            seeds=(seed,),
            methods=(self.method,),
            device=self.device,
            progress=self.verbose,
            **{k: getattr(self, k) for k in _SETTINGS},
        )

    def _seed(self) -> int:
        if isinstance(self.random_state, (int, np.integer)) and not isinstance(self.random_state, bool):
            if not 0 <= int(self.random_state) <= MAX_SEED:
                raise ConfigError(f"random_state: {self.random_state} is outside 0 .. {MAX_SEED} (2**32 - 1)")
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(0, MAX_SEED))

    # ------------------------------------------------------------------ input
    def _frame(self, X, reset: bool) -> pd.DataFrame:
        """``X`` as a DataFrame in the training column order (see the module docstring)."""
        if isinstance(X, pd.DataFrame):
            if not reset and hasattr(self, "feature_names_in_"):
                names = [str(c) for c in X.columns]
                missing = [c for c in self.feature_names_in_ if c not in names]
                if missing:
                    raise ColumnError(
                        f"The feature names should match those that were passed during fit: column(s) "
                        f"{', '.join(map(repr, missing[:10]))}{' ...' if len(missing) > 10 else ''} "
                        f"missing from X ({len(missing)} of {len(self.feature_names_in_)}); give X every "
                        "column the model was fitted on (a column missing in some rows can hold NaN: "
                        "missing values are imputed)"
                    )
                extra = [c for c in names if c not in set(self.feature_names_in_)]
                if extra:
                    warnings.warn(
                        f"X has column(s) the model was not fitted on, ignored: {', '.join(map(repr, extra[:10]))}",
                        stacklevel=3,
                    )
                X = X.set_axis(names, axis=1)[list(self.feature_names_in_)]
            validate_data(self, X, reset=reset, skip_check_array=True)
            if X.shape[0] == 0 or X.shape[1] == 0:
                raise ValueError(
                    f"Found array with {X.shape[0]} sample(s) and {X.shape[1]} feature(s) while a "
                    "minimum of 1 is required."
                )
            X = X.set_axis([str(c) for c in X.columns], axis=1).reset_index(drop=True)
            if reset:
                try:
                    X = _standard_types(X, "X")
                except DatasetError as e:
                    raise ColumnError(str(e)) from None
                bad = [
                    c
                    for c in X.columns
                    if not isinstance(X[c].dtype, pd.CategoricalDtype)
                    and np.isinf(X[c].to_numpy(dtype=np.float64)).any()
                ]
                if bad:
                    raise ValueError(
                        f"Input X contains infinity in column(s) {', '.join(map(repr, bad[:10]))}; "
                        "replace it with NaN (imputed) or finite numbers"
                    )
            return X
        arr = validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite="allow-nan")
        if reset and arr.shape[1] > 0 and np.isfinite(arr).any() and np.abs(arr[np.isfinite(arr)]).max() > 3.4e38:
            raise ValueError("Input X has numbers too large for float32 (|x| > 3.4e38); rescale them")
        return pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None, importance=None):
        """Pretrain on every row of ``X``, then fit the head on the rows whose ``y`` is not -1.

        ``X``: DataFrame (numeric, categorical/text/bool, missing values) or array; ``y``: one
        class label per row, ``-1`` for an unlabeled row.  ``sample_weight``: one non-negative
        weight per row (or a number for all), or None (every row alike): it weighs the labeled
        rows in the cross-entropy of the classification head and of the pseudo-label heads
        (``class`` methods), times ``class_weight``, scaled so that the labeled rows' weights
        average 1; it does nothing to pretraining (the contrastive loss is unsupervised and
        row-wise: every row, labeled or not, is an anchor once per epoch) nor to the unlabeled
        rows.  ``importance``: for the correlation methods, an ``[M, M]`` importance matrix
        computed before on the same rows with the same seed and XGBoost settings
        (``importance_`` of another fit) instead of computing it again.  Returns ``self``."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None (give -1 for unlabeled rows)"
            )
        seed = self._seed()
        cfg = self.config(seed)
        if cfg.device.startswith("cuda"):
            cfg.check_device()
        Xf = self._frame(X, reset=True)
        y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=True, input_name="y")
        y = column_or_1d(y, warn=True)
        if len(y) != len(Xf):
            raise ValueError(f"X has {len(Xf)} rows but y has {len(y)} labels")
        labeled = ~_is_unlabeled(y)
        check_classification_targets(y[labeled] if labeled.any() else y)
        classes = np.unique(y[labeled])
        if len(classes) < 2:
            raise ValueError(
                f"y has {len(classes)} class among its {int(labeled.sum())} labeled rows "
                f"(unlabeled rows: -1); classification needs labeled rows of at least 2 classes"
            )
        self.classes_ = classes
        codes = np.full(len(y), UNLABELED, dtype=np.int64)
        codes[labeled] = np.searchsorted(classes, y[labeled])
        weights = self._row_weights(sample_weight, y, codes, labeled)

        t0 = time.perf_counter()
        cols = FittedColumns.fit(Xf)
        if not cols.active.any():
            raise ValueError(
                f"every one of the {Xf.shape[1]} feature(s) of X is constant or missing; nothing to learn from"
            )
        raw = cols.transform(Xf)
        n = len(raw)
        split = SeedSplit(
            seed,
            raw,
            raw[:0],
            codes,
            codes[:0],
            labeled,
            cols.active,
            cols.is_cat,
            cols.n_levels,
            np.arange(n),
            np.arange(0),
        )
        prep = Prepared("X", cols.names, cols.is_cat, [str(c) for c in classes], [split])
        if METHODS[self.method].pretrain and cfg.epochs > 0 and split.n_features < 2:
            raise ConfigError(
                f"X has {split.n_features} feature(s) that are not constant; corruption needs at "
                "least 2 features; add features, or use method='no_pretrain'"
            )
        check_training_inputs(prep, cfg)
        if METHODS[self.method].where == "uniform":
            importance = None
        elif importance is not None:
            importance = np.asarray(importance, dtype=np.float64)
            if importance.shape != (len(cols.names),) * 2 or not np.isfinite(importance).all():
                raise ValueError(
                    f"importance: expected a finite {len(cols.names)} x {len(cols.names)} matrix "
                    f"(one row and column per feature of X), got shape {importance.shape}"
                )
            importance = importance[None]
        else:
            importance = importance_matrix(split, cfg)[None]
        with training.matmul_precision(cfg):
            model, tab, pt = _fit_member(prep, cfg, importance, weights)
        self.columns_ = cols
        self.seed_ = seed
        self.importance_ = importance[0] if importance is not None else None
        self.table_ = _slim(tab)
        self.encoder_ = _to_cpu(model.enc)
        self.head_ = _to_cpu(model.head)
        self.head_kind_ = cfg.head
        self.history_ = pd.DataFrame([(e, lv) for (_, _, e, lv) in pt.history] if pt else [], columns=["epoch", "loss"])
        self.pseudo_labels_ = (
            classes[pt.labels[0].cpu().numpy()] if pt is not None and METHODS[self.method].how == "pseudo" else None
        )
        self.timings_ = {"fit_s": time.perf_counter() - t0}
        return self

    def _row_weights(self, sample_weight, y: np.ndarray, codes: np.ndarray, labeled: np.ndarray):
        """Each row's weight in the heads' loss (:func:`tcclib.method.training.row_weights`), or
        None when neither ``sample_weight`` nor ``class_weight`` is given."""
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, len(y))
        cw = self.class_weight
        if isinstance(cw, dict):
            known = set(self.classes_.tolist())
            unknown = [k for k in cw if k not in known]
            if unknown:
                raise ValueError(
                    f"class_weight: {', '.join(map(repr, unknown[:10]))} not among the classes of the labeled "
                    f"rows ({', '.join(map(repr, self.classes_.tolist()[:10]))}); give weights by class label"
                )
            given = [cw.get(c, 1.0) for c in self.classes_.tolist()]
            cw = _check_sample_weight(given, len(given), "class_weight")
        elif cw is not None:
            cw = compute_class_weight(cw, classes=self.classes_, y=y[labeled])
        return training.row_weights(codes, labeled, sample_weight, cw)

    # ------------------------------------------------------------------ predict
    def _device(self) -> torch.device:
        dev = torch.device(self.device) if isinstance(self.device, str) else torch.device("cpu")
        if dev.type == "cuda" and not torch.cuda.is_available():
            return torch.device("cpu")  # a model fitted on a GPU, loaded on a CPU machine
        return dev

    def _raw(self, X) -> torch.Tensor:
        """Preprocessed rows ``[1, n, M]`` of ``X`` on the prediction device."""
        check_is_fitted(self, "encoder_")
        Xf = self._frame(X, reset=False)
        return torch.as_tensor(self.columns_.transform(Xf), device=self._device())[None]

    def _embed(self, X) -> torch.Tensor:
        raw = self._raw(X)
        dev = raw.device
        tab = _on(self.table_, dev)
        enc = _on(self.encoder_, dev)
        with self._autocast(dev):
            emb = training.embed(enc, tab, raw, torch.zeros(1, dtype=torch.int64, device=dev), PREDICT_CHUNK)[0]
        return emb.float()

    def _autocast(self, dev):
        """bfloat16 autocast for a model fitted with ``matmul_precision="bf16"`` (else nothing)."""
        return training.autocast(self.matmul_precision, dev)

    def transform(self, X) -> np.ndarray:
        """The encoder's embeddings ``[n, hidden_dim]`` of rows ``X`` (float32): the pretrained
        encoder's, or under ``head="finetune"`` the fine-tuned one's."""
        return self._embed(X).cpu().numpy()

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the embedding dimensions :meth:`transform` returns: ``tcc0``, ``tcc1``, ..."""
        check_is_fitted(self, "encoder_")
        return np.array([f"tcc{i}" for i in range(self.encoder_.dims[-1])], dtype=object)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[n, n_classes]`` in the order of ``classes_``."""
        raw = self._raw(X)
        dev = raw.device
        model = training.Classifier(_on(self.encoder_, dev), _on(self.head_, dev), self.head_kind_)
        first = torch.zeros(1, dtype=torch.int64, device=dev)
        with torch.no_grad(), self._autocast(dev):
            logits = model.logits(_on(self.table_, dev), raw, first, PREDICT_CHUNK)
        prob = torch.softmax(logits[0], -1).double().cpu().numpy()
        return prob / prob.sum(1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "encoder_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


# --------------------------------------------------------------------------- helpers


def _check_sample_weight(weights, n: int, name: str = "sample_weight") -> np.ndarray:
    """``weights`` as ``n`` finite non-negative floats (a number: the same for all)."""
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers, got {type(weights).__name__}") from None
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,):
        raise ValueError(f"{name}.shape == {w.shape}, expected {(n,)}: one weight per row of X")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"{name}: weights must be finite and non-negative (0 leaves a row out of the head's loss)")
    return w


def _is_unlabeled(y: np.ndarray) -> np.ndarray:
    if y.dtype.kind in "iuf":
        return y == UNLABELED
    return np.array(
        [isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v == UNLABELED for v in y], dtype=bool
    )


def _fit_member(prep: Prepared, cfg: Config, importance, weights: np.ndarray | None = None):
    """One member through the core's steps: encoders, pretraining, then the classifier on the
    labeled rows (``weights``: every row's weight in the heads' loss, None: unweighted)."""
    dev = torch.device(cfg.device)
    tab = TensorTable.from_prepared(prep, dev)
    sp = prep.splits[0]
    layout = training.member_layout(tab, [sp.seed], [sp.n_features], cfg.methods, pretraining=cfg.epochs > 0)
    enc = training.init_encoders(layout, tab, cfg, dev)
    gens = training.training_generators(layout, dev)
    seed_idx = layout.seed_index(dev)
    anchors = tab.encode(tab.raw_train[seed_idx], seed_idx)
    w = None if weights is None else torch.as_tensor(weights, dtype=torch.float32, device=dev)[None]
    pt = None
    if layout.pre:
        pt = training.Pretraining(tab, layout, cfg, importance, gens, anchors, "X", weights=w)
        bar = core_bar(cfg)
        while pt.epoch < cfg.epochs:
            loss = pt.run_epoch()
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss[0]:.4f}", refresh=False)
        if bar is not None:
            bar.close()
        pt.check_weights()
        pt.copy_into(enc)
        del pt.anchors, pt.raw  # (the pretraining copies of the rows)
    rows = training.labeled_rows(tab.labeled[seed_idx])
    model = training.fit_classifier(
        enc,
        anchors,
        rows,
        tab.y_train[seed_idx].gather(1, rows),
        gens,
        cfg,
        tab.n_classes,
        layout.in_widths,
        None if w is None else w.gather(1, rows),
    )
    with torch.no_grad():
        if not all(torch.isfinite(p).all() for p in model.head.parameters() + model.enc.parameters()):
            raise training.TrainingDiverged(
                "X", sp.seed, cfg.methods[0], None, "a classification head or encoder weight is not finite", lr=cfg.lr
            )
    return model, tab, pt


def core_bar(cfg: Config):
    return bar(cfg.epochs, f"TCCClassifier({cfg.methods[0]}): pretraining", cfg.progress, leave=True)


def _slim(tab: TensorTable) -> TensorTable:
    """The table's encoding layout only (no rows), on the CPU: what encoding new rows needs."""
    cpu = {
        f.name: (getattr(tab, f.name).cpu() if isinstance(getattr(tab, f.name), torch.Tensor) else getattr(tab, f.name))
        for f in dataclasses.fields(tab)
    }
    for name in ("raw_train", "raw_test"):
        cpu[name] = cpu[name][:, :0]
    for name in ("y_train", "y_test", "labeled"):
        cpu[name] = cpu[name][:, :0]
    return TensorTable(**cpu)


def _to_cpu(mlp):
    mlp.weights = [w.detach().cpu() for w in mlp.weights]
    mlp.biases = [b.detach().cpu() for b in mlp.biases]
    mlp.device = torch.device("cpu")
    return mlp


def _on(obj, dev: torch.device):
    """``obj`` (a TensorTable or StackedMLP kept on the CPU) with its tensors on ``dev``."""
    if dev.type == "cpu":
        return obj
    out = dataclasses.replace(obj) if dataclasses.is_dataclass(obj) else obj.__class__.__new__(obj.__class__)
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            setattr(out, f.name, v.to(dev) if isinstance(v, torch.Tensor) else v)
        return out
    out.__dict__.update(obj.__dict__)
    out.weights = [w.to(dev) for w in obj.weights]
    out.biases = [b.to(dev) for b in obj.biases]
    out.device = dev
    return out


__all__ = ["TCCClassifier", "UNLABELED", "estimator_methods"]
