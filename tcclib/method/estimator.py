"""Class-conditioned contrastive pretraining on your own table, as a scikit-learn classifier.

    from tcclib import TCCClassifier
    clf = TCCClassifier(method="class", epochs=100, random_state=0)
    clf.fit(X, y)            # y: class labels; -1, NaN, None or pd.NA for unlabeled rows
    clf.predict(X_new); clf.predict_proba(X_new); clf.transform(X_new)   # embeddings

``fit`` runs the paper's recipe on the rows it is given: the preprocessing (impute, z-score,
category codes) is fitted on all of them, the encoder pretrains contrastively on all of them
(labeled and unlabeled), then the encoder is frozen and a classification head trains on the
labeled rows (``head="finetune"`` / ``"concat"`` / ``"probe"``: the opt-in variants; ``sample_weight`` and
``class_weight`` weigh the labeled rows in the heads' loss, never in pretraining).  The steps are
those of the benchmark runner (:mod:`tcclib.method.training`): a classifier with
``random_state=s`` trains exactly like the runner's member (seed ``s``, same method) on the same
rows.  Unlabeled rows are marked ``-1`` in ``y`` (scikit-learn's semi-supervised convention), or
NaN, None, ``pd.NA``; marker-like text (``'-1'``, ``'NA'``, ...) is refused (:func:`split_labels`).
:meth:`TCCClassifier.score` scores the labeled rows only, and :class:`SemiSupervisedKFold` and
:func:`labeled_scorer` make model selection work with every marker.

New rows at ``predict`` are preprocessed as in training: columns are matched by name (any order;
extra columns are ignored with a warning, a missing one is an error naming it), missing values
are imputed with the training statistics, and a category unseen in training encodes as all
zeros.  The fitted model pickles (``pickle``, ``joblib``) with its preprocessing; its tensors are
kept on the CPU, so a model fitted on a GPU loads anywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import sys
import time
import types
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.metrics import accuracy_score, get_scorer
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from tcclib.data.columns import expand_datetimes, float_columns_out_of_range
from tcclib.data.encoding import TensorTable
from tcclib.data.preprocess import ColumnError, FittedColumns, Prepared, SeedSplit
from tcclib.data.sources import FLOAT32_MAX, DatasetError, _standard_types
from tcclib.method import check, heads, identity, plugins, registry, training
from tcclib.method.config import MAX_SEED, METHODS, Config, ConfigError, defaults, names
from tcclib.method.correlation import importance_matrix
from tcclib.method.inputs import check_training_inputs
from tcclib.method.model import autocast
from tcclib.method.pretraining import TrainingDiverged
from tcclib.method.settings import ESTIMATOR
from tcclib.util import threads

UNLABELED = -1
"""The label of an unlabeled row in ``y`` (scikit-learn's semi-supervised convention)."""

PREDICT_CHUNK = 8192
"""Rows embedded per pass at predict/transform time (memory for one chunk's one-hot rows)."""


def estimator_methods() -> list[str]:
    """Methods the estimator offers: those that need no true label of an unlabeled row (every
    method whose how rule does not read every row's true label, as ``oracle``'s does)."""
    return [m for m, s in METHODS.items() if not s.needs_true_labels]


# settings the estimator takes as constructor parameters (declared ``where=ESTIMATOR`` on Config's
# fields; ``device`` is passed on its own), their published defaults from the declarations (no
# Config is made at import, so importing loads no plugin)
_SETTINGS = tuple(n for n in names(where=ESTIMATOR) if n != "device")
_D = types.SimpleNamespace(**defaults())


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
    head : {"frozen", "finetune", "concat", "probe"}, default "frozen"
        The classifier on the labeled rows (:data:`tcclib.method.config.HEADS`): ``"frozen"``
        (the paper: the encoder is frozen, a fresh head trains on its embeddings),
        ``"finetune"`` (opt-in: the encoder trains with the head on the labeled rows, at
        ``encoder_lr``), ``"concat"`` (opt-in: a head on the embedding concatenated with the
        row's preprocessed features) or ``"probe"`` (opt-in: a logistic regression on the
        embedding and the features, the design and ``C`` chosen by stratified cross-validation
        on the labeled rows only, folds seeded by ``random_state``: :mod:`tcclib.method.probe`).
        docs/estimator.md has a measured comparison.
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
        The member's seed: the same int gives the same model on the same kind of device (and the
        benchmark runner's member of that seed).  None draws one.  The random draws (weights,
        batch order, corruption) come from generators on the training device, so a fit on a GPU
        and one on the CPU with the same seed are different draws, not the same model up to
        float rounding (as in the benchmark runner).
    verbose : bool or "auto", default "auto"
        A progress bar over the pretraining epochs.  ``"auto"``: shown in a notebook, and
        elsewhere when the pretraining is estimated (:func:`expected_fit_seconds`) to take more than
        :data:`AUTO_PROGRESS_SECONDS`; small fits (tests) stay quiet.
    categorical_features : "from_dtype", None, or array-like of names, indices or bools
        As in ``HistGradientBoostingClassifier``: the columns to treat as categorical besides those
        whose dtype says so (category, text, bool columns always are): column names (DataFrame
        ``X``), integer indices, or a boolean mask over the columns.  ``"from_dtype"`` or ``None``:
        the dtypes alone decide.  Use it for integer-coded categories (occupation codes, zip codes).
    n_jobs : int or None, default None
        Threads for torch and XGBoost during ``fit`` (and prediction); the process's settings are
        restored afterwards.  ``-1``: every core (``-2``: all but one, as in joblib).  ``None``: as
        the process is set (``$TCC_THREADS`` / ``$OMP_NUM_THREADS``, else every core).

    Attributes
    ----------
    classes_, n_features_in_, feature_names_in_ (DataFrame input with text column names),
    column_labels_ (a DataFrame's column labels as text, whatever their type: how a frame's columns
    are matched at prediction; None for an array), seed_ (the seed used),
    columns_ (the fitted preprocessing), datetime_parts_ (``{column: parts}`` of the expanded
    datetime columns), categorical_features_ (the columns made categorical by
    ``categorical_features``), encoder_ and head_ (the networks), head_kind_ (the ``head``
    variant fitted), probe_choice_ (``head="probe"``: what its cross-validation chose,
    :class:`tcclib.method.probe.Choice`: ``block`` "embedding", "features" or "both", and ``C``;
    "features" means the head does not read the pretrained embedding; None for the other heads),
    computed_ (the ``device`` and ``matmul_precision`` fitted with: prediction keeps them),
    history_ (contrastive loss per epoch), pseudo_labels_
    (the last pseudo-labels of every row, pseudo-label methods), timings_.

    Notes
    -----
    Labels: ``y`` holds one class label per row; an unlabeled row is marked ``-1`` (a number;
    for integer labels scikit-learn's convention, and beside text labels in an object array or
    Series), NaN, None or ``pd.NA``.  Text that looks like a marker (``'-1'``, ``''``, ``'nan'``, ``'NA'``,
    ``'None'``, ``'?'``, ...: :data:`MARKER_TEXTS`) is refused with an error saying how to mark
    unlabeled rows, never silently made a class.  :meth:`score` leaves the unlabeled rows out;
    scikit-learn's default splitter takes ``-1`` with integer labels, :class:`SemiSupervisedKFold`
    every marker (``GridSearchCV(clf, grid, cv=SemiSupervisedKFold(3))``).

    Columns: numbers, category/text/bool columns and missing values as they come; a datetime
    column becomes ``<col>_year``, ``<col>_month``, ``<col>_day``, ``<col>_weekday`` (and ``<col>_hour``
    when a value has a time of day), a duration column its seconds
    (:func:`tcclib.data.columns.expand_datetimes`, with a one-line note).  Infinity and numbers
    beyond float32 (``|x| > 3.4e38``) are refused with the column named.  A numpy object array
    mixing text and numbers is read like the DataFrame of the same columns (``x0``, ``x1``, ...).
    """

    # long on purpose: scikit-learn estimators store each parameter as given, one line each
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
        verbose="auto",
        categorical_features="from_dtype",
        n_jobs: int | None = None,
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
        self.categorical_features = categorical_features
        self.n_jobs = n_jobs

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
                f" ({self.method} corrupts within every row's true class, which unlabeled rows do not have)"
                if isinstance(self.method, str) and self.method in METHODS and METHODS[self.method].needs_true_labels
                else ""
            )
            plugin = getattr(self, "plugin_", None)  # a fitted model's plugin file, not loaded here
            if plugin and self.method not in METHODS:
                why = f" (it came from the plugin {plugin}: load it first, tcclib.load_plugins({plugin!r}))"
            elif not why and isinstance(self.method, str):
                close = difflib.get_close_matches(self.method.lower(), estimator_methods(), n=1)
                why = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"method: {self.method!r} is not one of the estimator's methods{why}; "
                f"choose from {', '.join(estimator_methods())}"
            )
        if not isinstance(self.verbose, bool) and self.verbose != "auto":
            raise ConfigError(f"verbose: expected True, False or 'auto', got {self.verbose!r}")
        _thread_count(self.n_jobs)
        cw = self.class_weight
        if not (cw is None or isinstance(cw, dict) or (isinstance(cw, str) and cw == "balanced")):
            raise ConfigError(f"class_weight: 'balanced', a dict {{label: weight}} or None, got {self.class_weight!r}")
        return Config(
            seeds=(seed,),
            methods=(self.method,),
            device=self.device,
            progress=self.verbose is True,
            **{k: getattr(self, k) for k in _SETTINGS},
        )

    def _seed(self) -> int:
        if isinstance(self.random_state, (int, np.integer)) and not isinstance(self.random_state, bool):
            if not 0 <= int(self.random_state) <= MAX_SEED:
                raise ConfigError(f"random_state: {self.random_state} is outside 0 .. {MAX_SEED} (2**32 - 1)")
            return int(self.random_state)
        try:
            state = check_random_state(self.random_state)
        except ValueError:
            raise ConfigError(
                f"random_state: an int in 0 .. {MAX_SEED}, a numpy RandomState or None, got {self.random_state!r}"
            ) from None
        return int(state.randint(0, MAX_SEED))

    # ------------------------------------------------------------------ input
    def _frame(self, X, reset: bool) -> pd.DataFrame:
        """``X`` as a DataFrame in the training column order, datetime columns expanded, and (when
        fitting) categorical columns chosen and values checked (see the class docstring)."""
        if reset:
            self.column_labels_ = [str(c) for c in X.columns] if isinstance(X, pd.DataFrame) else None
        X = self._named_frame(X, reset) if isinstance(X, pd.DataFrame) else self._array_frame(X, reset)
        try:
            X, parts = expand_datetimes(X, None if reset else getattr(self, "datetime_parts_", {}))
        except ValueError as e:
            raise ColumnError(str(e)) from None
        if reset:
            self.datetime_parts_ = parts
            forced = self._categorical_columns(X.columns, parts)
            self.categorical_features_ = forced
            for c in forced:
                X[c] = X[c].astype("category")
            try:
                X = _standard_types(X, "X")
            except DatasetError as e:
                raise ColumnError(str(e)) from None
            _check_range(X)
        return X

    def _named_frame(self, X: pd.DataFrame, reset: bool) -> pd.DataFrame:
        fitted = None if reset else self._fitted_labels()
        if fitted is not None:
            names = [str(c) for c in X.columns]
            missing = [c for c in fitted if c not in names]
            if missing:
                raise ColumnError(
                    f"The feature names should match those that were passed during fit: column(s) "
                    f"{', '.join(map(repr, missing[:10]))}{' ...' if len(missing) > 10 else ''} "
                    f"missing from X ({len(missing)} of {len(fitted)}); give X every "
                    "column the model was fitted on (a column missing in some rows can hold NaN: "
                    "missing values are imputed)"
                )
            extra = [c for c in names if c not in set(fitted)]
            if extra:
                warnings.warn(
                    f"X has column(s) the model was not fitted on, ignored: {', '.join(map(repr, extra[:10]))}",
                    stacklevel=4,
                )
            X = X.iloc[:, [names.index(c) for c in fitted]]  # (its own labels: sklearn reads their type)
        validate_data(self, X, reset=reset, skip_check_array=True)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(
                f"Found array with {X.shape[0]} sample(s) and {X.shape[1]} feature(s) while a minimum of 1 is required."
            )
        return X.set_axis([str(c) for c in X.columns], axis=1).reset_index(drop=True)

    def _fitted_labels(self) -> list[str] | None:
        """The fitted frame's column labels as text (None: fitted on an array); a model pickled
        before ``column_labels_`` existed has ``feature_names_in_`` where sklearn set it."""
        if hasattr(self, "column_labels_"):
            return self.column_labels_
        return list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None

    def _array_frame(self, X, reset: bool) -> pd.DataFrame:
        """An array's columns as ``x0``, ``x1``, ...: numbers as float64; an object array holding
        text beside numbers column by column like the DataFrame of the same values."""
        try:
            arr = validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite="allow-nan")
        except ValueError:
            _refuse_infinity(X)
            if not _holds_text(X):
                raise
            arr = validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)
            return pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])]).infer_objects()
        if reset:
            with np.errstate(invalid="ignore"):
                big = np.flatnonzero((np.isfinite(arr) & (np.abs(arr) > FLOAT32_MAX)).any(0))
            if len(big):
                raise ValueError(
                    f"Input X has numbers too large for float32 (|x| > 3.4e38) in column(s) "
                    f"{', '.join(f'x{j}' for j in big[:10])} (0-based indices {', '.join(map(str, big[:10]))}); "
                    "training runs in float32: rescale them (divide by a power of ten, or take a log) or make them NaN"
                )
        return pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])

    def _categorical_columns(self, names, parts: dict) -> list[str]:
        """The columns ``categorical_features`` names (validated against ``names``, the columns after
        datetime expansion; a datetime column's name means its parts)."""
        cf = self.categorical_features
        if cf is None or (isinstance(cf, str) and cf == "from_dtype"):
            return []
        original = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None
        width = self.n_features_in_
        where = "categorical_features"
        if isinstance(cf, str) or np.ndim(cf) != 1:
            raise ConfigError(
                f"{where}: expected 'from_dtype', None, or a list of column names, indices or a boolean "
                f"mask over the {width} columns, got {cf!r}"
            )
        arr = np.asarray(cf)
        if len(arr) == 0:
            return []
        if arr.dtype.kind == "b":
            if len(arr) != width:
                raise ConfigError(f"{where}: a boolean mask needs one value per column of X ({width}), got {len(arr)}")
            picked = list(np.flatnonzero(arr))
        elif arr.dtype.kind in "iu":
            bad = [int(j) for j in arr if not 0 <= j < width]
            if bad:
                raise ConfigError(
                    f"{where}: column index(es) {bad[:10]} outside 0 .. {width - 1} (X has {width} columns)"
                )
            picked = [int(j) for j in arr]
        elif all(isinstance(v, str) for v in cf):
            if original is None:
                raise ConfigError(
                    f"{where}: column names need a DataFrame X with those columns; for an array give indices or a mask"
                )
            unknown = [c for c in cf if c not in original]
            if unknown:
                close = difflib.get_close_matches(unknown[0], original, n=2)
                hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
                raise ConfigError(f"{where}: no column(s) {', '.join(map(repr, unknown[:10]))} in X{hint}")
            picked = [original.index(c) for c in cf]
        else:
            raise ConfigError(f"{where}: give column names, integer indices or a boolean mask, got {cf!r}")
        labels = original if original is not None else [f"x{j}" for j in range(width)]
        out = []
        for j in dict.fromkeys(picked):
            c = labels[j]
            out.extend([f"{c}_{p}" for p in parts[c]] if c in parts else [c])
        return [c for c in out if c in set(names)]

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None, importance=None):
        """Pretrain on every row of ``X``, then fit the head on the labeled rows of ``y``.

        ``X``: DataFrame (numeric, categorical/text/bool, dates, missing values) or array; ``y``:
        one class label per row, ``-1``, NaN, None or ``pd.NA`` for an unlabeled row (see the
        class docstring).  ``sample_weight``: one non-negative weight per row (or a number for
        all), or None (every row alike): it weighs the labeled rows in the cross-entropy of the
        classification head and of the pseudo-label heads (``class`` methods), times
        ``class_weight``, scaled so that the labeled rows' weights average 1; it does nothing to
        pretraining (the contrastive loss is unsupervised and row-wise: every row, labeled or not,
        is an anchor once per epoch) nor to the unlabeled rows.  ``importance``: for the
        correlation methods, an ``[M, M]`` importance matrix computed before on the same rows with
        the same seed and XGBoost settings (``importance_`` of another fit) instead of computing it
        again.  Returns ``self``."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None (give -1 for unlabeled rows)"
            )
        identity.torch_defaults_refused()
        seed = self._seed()
        cfg = self.config(seed)
        if cfg.device.startswith("cuda"):
            cfg.check_device()
        self._warn_unread(cfg)
        Xf = self._frame(X, reset=True)
        labels, labeled, codes = self._label_codes(y, len(Xf))
        weights = self._row_weights(sample_weight, labels, codes, labeled)

        t0 = time.perf_counter()
        cols, split, prep = self._prepared(Xf, seed, codes, labeled, cfg)
        check_training_inputs(prep, cfg)
        labeled_rows = lambda: (Xf.loc[labeled].reset_index(drop=True), pd.Series(labels))  # noqa: E731
        _refuse_an_edited_plugin(self.method)
        check.check_methods([self.method], data=labeled_rows)  # a user's rule or objective breaking its contract
        cfg = cfg.replace(progress=self._progress(split, cfg))
        with _threads(self.n_jobs):
            model, tab, pt, importance = self._train(prep, split, cfg, importance, weights)
        self.columns_ = cols
        self.plugin_ = registry.origin_file(self.method)
        self.seed_ = seed
        self.importance_ = importance[0] if importance is not None else None
        self.table_ = _slim(tab)
        self.encoder_ = _to_cpu(model.enc)
        self.head_ = _to_cpu(model.head)
        self.head_kind_ = cfg.head
        self.probe_choice_ = getattr(model.head, "choices", [None])[0]
        self.computed_ = {"device": cfg.device, "matmul_precision": cfg.matmul_precision}
        self.history_ = pd.DataFrame([(e, lv) for (_, _, e, lv) in pt.history] if pt else [], columns=["epoch", "loss"])
        self.pseudo_labels_ = (
            self.classes_[pt.labels[0].cpu().numpy()]
            if pt is not None and METHODS[self.method].pseudo_labelled
            else None
        )
        self.timings_ = {"fit_s": time.perf_counter() - t0}
        return self

    def _label_codes(self, y, n_rows: int):
        """``(labels, labeled, codes)`` of ``y`` (:func:`split_labels`); sets ``classes_``."""
        labels, labeled = split_labels(y)
        if len(labeled) != n_rows:
            raise ValueError(f"X has {n_rows} rows but y has {len(labeled)} labels")
        if len(labels):
            check_classification_targets(labels)
        classes = np.unique(labels)
        if len(classes) < 2:
            raise ValueError(
                f"y has {len(classes)} class among its {int(labeled.sum())} labeled rows "
                f"(unlabeled rows: -1, NaN, None or pd.NA); classification needs labeled rows of at least 2 classes"
            )
        self.classes_ = classes
        codes = np.full(len(labeled), UNLABELED, dtype=np.int64)
        codes[labeled] = np.searchsorted(classes, labels)
        return labels, labeled, codes

    def _warn_unread(self, cfg: Config) -> None:
        """A warning for ``corruption_rate`` or ``temperature`` set away from its default where the
        method never reads it (a Bernoulli mask, an objective without a temperature): it trains as
        at the default, and a grid over the setting would fit the same model again and again."""
        spec, default = METHODS[self.method], defaults()
        why = {
            "corruption_rate": f"its where rule {spec.where!r} replaces each feature with a probability of its own"
            if spec.pretrain
            else "it does not pretrain",
            "temperature": f"its objective {spec.objective!r} has no temperature"
            if spec.pretrain
            else "it does not pretrain",
        }
        for setting, reason in why.items():
            if getattr(cfg, setting) != default[setting] and not spec.reads(setting):
                warnings.warn(
                    f"{setting}={getattr(cfg, setting)!r} is not read by method {self.method!r} ({reason}): it trains "
                    f"as at the default {default[setting]!r}",
                    stacklevel=3,
                )

    def _encoder_passes(self) -> int:
        """Encodings of each row per epoch under the method's objective (for the time estimate):
        NT-Xent's anchor and view, else one per view the objective draws."""
        learns = METHODS[self.method].learns
        return 2 if learns.name == registry.DEFAULT_OBJECTIVE else max(int(learns.views), 1)

    def _prepared(self, Xf: pd.DataFrame, seed: int, codes, labeled, cfg: Config):
        """``(columns, split, prepared)``: the fitted preprocessing and every row as one training
        split (no test rows), checked for what the method needs."""
        cols = FittedColumns.fit(Xf)
        if not cols.active.any():
            raise ValueError(
                f"every one of the {Xf.shape[1]} feature(s) of X is constant or missing; nothing to learn from"
            )
        raw = cols.transform(Xf)
        n = len(raw)
        split = SeedSplit(
            seed, raw, raw[:0], codes, codes[:0], labeled, cols.active, cols.is_cat, cols.n_levels,
            np.arange(n), np.arange(0),
        )  # fmt: skip
        prep = Prepared("X", cols.names, cols.is_cat, [str(c) for c in self.classes_], [split])
        if METHODS[self.method].reads("corruption_rate") and cfg.epochs > 0 and split.n_features < 2:
            raise ConfigError(
                f"X has {split.n_features} feature(s) that are not constant; corruption needs at "
                "least 2 features; add features, or use method='no_pretrain'"
            )
        return cols, split, prep

    def _progress(self, split: SeedSplit, cfg: Config) -> bool:
        """Whether to show the pretraining bar (``verbose``; ``"auto"``: see the class docstring)."""
        if self.verbose != "auto":
            return bool(self.verbose)
        if not METHODS[self.method].pretrain or cfg.epochs == 0:
            return False
        return (
            _in_notebook()
            or expected_fit_seconds(len(split.raw_train), int(split.widths.sum()), cfg, self._encoder_passes())
            > AUTO_PROGRESS_SECONDS
        )

    def _train(self, prep: Prepared, split: SeedSplit, cfg: Config, importance, weights):
        """Importances (correlation methods), pretraining and the classifier: ``(model, tab, pt, importance)``."""
        cols = prep.feature_names
        if not METHODS[self.method].needs_importance:
            importance = None
        elif importance is not None:
            importance = np.asarray(importance, dtype=np.float64)
            if importance.shape != (len(cols),) * 2 or not np.isfinite(importance).all():
                raise ValueError(
                    f"importance: expected a finite {len(cols)} x {len(cols)} matrix "
                    f"(one row and column per feature of X), got shape {importance.shape}"
                )
            importance = importance[None]
        else:
            importance = importance_matrix(split, cfg)[None]
        with training.matmul_precision(cfg):
            model, tab, pt = _fit_member(prep, cfg, importance, weights)
        return model, tab, pt, importance

    def _row_weights(self, sample_weight, labels: np.ndarray, codes: np.ndarray, labeled: np.ndarray):
        """Each row's weight in the heads' loss (:func:`tcclib.method.heads.row_weights`), or
        None when neither ``sample_weight`` nor ``class_weight`` is given."""
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, len(labeled))
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
            cw = compute_class_weight(cw, classes=self.classes_, y=labels)
        return heads.row_weights(codes, labeled, sample_weight, cw)

    # ------------------------------------------------------------------ predict
    def _fitted(self, setting: str):
        """How the model was fitted to compute (``computed_``), whatever ``set_params`` set since;
        the parameter itself for a model pickled before ``computed_`` existed."""
        return getattr(self, "computed_", {}).get(setting, getattr(self, setting))

    def _device(self) -> torch.device:
        device = self._fitted("device")
        dev = torch.device(device) if isinstance(device, str) else torch.device("cpu")
        if dev.type == "cuda" and not torch.cuda.is_available():
            return torch.device("cpu")  # a model fitted on a GPU, loaded on a CPU machine
        return dev

    def _raw(self, X) -> torch.Tensor:
        """Preprocessed rows ``[1, n, M]`` of ``X`` on the prediction device."""
        check_is_fitted(self, "encoder_")
        Xf = self._frame(X, reset=False)
        with np.errstate(over="ignore", invalid="ignore"):  # (non-finite values are named below)
            values = self.columns_.transform(Xf)
        finite = np.isfinite(values).all(0)
        if not finite.all():
            bad = [self.columns_.names[j] for j in np.flatnonzero(~finite)]
            raise ValueError(
                f"X has numbers in column(s) {', '.join(map(repr, bad[:10]))} that standardise to infinity "
                "in float32 (infinity, or far beyond the training values); replace them with NaN (imputed) "
                "or finite numbers"
            )
        raw = torch.as_tensor(values, device=self._device())[None]
        return raw

    def _embed(self, X) -> torch.Tensor:
        raw = self._raw(X)
        dev = raw.device
        tab = _on(self.table_, dev)
        enc = _on(self.encoder_, dev)
        with self._autocast(dev), _threads(getattr(self, "n_jobs", None)):
            emb = training.embed(enc, tab, raw, torch.zeros(1, dtype=torch.int64, device=dev), PREDICT_CHUNK)[0]
        return emb.float()

    def _autocast(self, dev):
        """bfloat16 autocast for a model fitted with ``matmul_precision="bf16"`` (else nothing)."""
        return autocast(self._fitted("matmul_precision"), dev)

    def transform(self, X) -> np.ndarray:
        """The encoder's embeddings ``[n, hidden_dim]`` of rows ``X`` (float32): the pretrained
        encoder's, or under ``head="finetune"`` the fine-tuned one's (``[n, encoder_depth x
        hidden_dim]``, every layer's, for an objective whose ``embedding`` is the deep stack)."""
        return self._embed(X).cpu().numpy()

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the embedding dimensions :meth:`transform` returns: ``tcc0``, ``tcc1``, ..."""
        check_is_fitted(self, "encoder_")
        return np.array([f"tcc{i}" for i in range(self.encoder_.output_widths()[0])], dtype=object)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[n, n_classes]`` in the order of ``classes_``."""
        raw = self._raw(X)
        dev = raw.device
        model = heads.Classifier(_on(self.encoder_, dev), _on(self.head_, dev), self.head_kind_)
        first = torch.zeros(1, dtype=torch.int64, device=dev)
        with torch.no_grad(), self._autocast(dev):
            logits = model.logits(_on(self.table_, dev), raw, first, PREDICT_CHUNK)
        prob = torch.softmax(logits[0], -1).double().cpu().numpy()
        return prob / prob.sum(1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "encoder_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on the *labeled* rows of ``X``: rows whose ``y`` marks them unlabeled (-1, NaN,
        None, ``pd.NA``; see the class docstring) are left out, so ``cross_val_score`` and
        ``GridSearchCV`` (whose default scoring this is) work on a semi-supervised ``y``; text
        labels work.  ``sample_weight``: weights of the rows (those of unlabeled rows are dropped
        with them).  A ``y`` with no labeled row is a ``ValueError``."""
        labels, labeled = split_labels(y)
        if not labeled.any():
            raise ValueError(
                f"score: y has no labeled row (all {len(labeled)} marked unlabeled); nothing to score against"
            )
        rows = np.flatnonzero(labeled)
        weights = None if sample_weight is None else np.asarray(sample_weight)[rows]
        return float(accuracy_score(labels, self.predict(_safe_indexing(X, rows)), sample_weight=weights))


# --------------------------------------------------------------------------- helpers


MARKER_TEXTS = ("-1", "", "nan", "na", "n/a", "nat", "<na>", "none", "null", "?", "missing", "unlabeled", "unlabelled")
"""Text labels that look like a marker of unlabeled rows (compared stripped, case-insensitively):
refused as classes by :func:`split_labels`, since they are almost always a marker read as text."""

_HOW_TO_MARK = "mark an unlabeled row with the number -1 (scikit-learn's convention), or with NaN, None or pd.NA"


def _label_array(y) -> np.ndarray:
    """``y`` as a 1-d numpy array, keeping each value's type (a list of text and -1 stays mixed)."""
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise ValueError(f"y: expected one column of class labels, got {y.shape[1]} columns (multi-output)")
        y = y.iloc[:, 0]
    if isinstance(y, (pd.Series, pd.Index)):
        plain = y.dtype.kind in "biuf" and not pd.api.types.is_extension_array_dtype(y.dtype)
        return y.to_numpy() if plain else y.to_numpy(dtype=object)
    if isinstance(y, (list, tuple)):
        arr = np.asarray(y, dtype=object)  # (numpy would turn ['a', -1] into the texts 'a' and '-1')
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim == 1 and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr):
            arr = arr.astype(np.int64)
        return column_or_1d(arr, warn=True)
    return column_or_1d(np.asarray(y), warn=True)


def _typed(vals: np.ndarray, nan_marked: bool) -> np.ndarray:
    """The labeled rows' labels with one type: int, float, bool or text (a ValueError for a mix)."""
    if vals.dtype.kind == "f" and nan_marked and len(vals) and np.all(vals == np.round(vals)):
        return vals.astype(np.int64)  # integer labels that NaN markers turned into floats
    if vals.dtype.kind != "O" or not len(vals):
        return vals
    kind = pd.api.types.infer_dtype(vals, skipna=False)
    if kind == "integer":
        return vals.astype(np.int64)
    if kind in ("floating", "mixed-integer-float"):
        return _typed(vals.astype(np.float64), nan_marked)
    if kind == "boolean":
        return vals.astype(bool)
    if kind == "string":
        return vals
    if kind in ("mixed", "mixed-integer"):
        sample = ", ".join(repr(v) for v in pd.unique(vals)[:6])
        raise ValueError(
            f"y mixes class labels of different types ({sample}, ...): give every class label the same "
            f"type (all text or all numbers); {_HOW_TO_MARK}"
        )
    return vals


def split_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, labeled)``: the class labels of the labeled rows of ``y`` and the boolean mask
    of those rows.

    Unlabeled rows: ``-1`` (a number: int, float or a number in an object array beside text
    labels), NaN, None and ``pd.NA``.  Text that looks like such a marker (:data:`MARKER_TEXTS`:
    ``'-1'``, ``''``, ``'nan'``, ``'NA'``, ``'None'``, ``'?'``, ...) is refused with a
    ``ValueError`` (it would otherwise become a class of its own); so is infinity, and a mix of
    text and number labels.  Integer labels made floats by NaN markers come back as integers."""
    arr = _label_array(y)
    if arr.dtype.kind == "f" and np.isinf(arr).any():
        raise ValueError("Input y contains infinity or a value too large for dtype('float64').")
    missing = pd.isna(arr) if arr.dtype.kind in "fOM" else np.zeros(len(arr), dtype=bool)
    if arr.dtype.kind in "iuf":
        minus_one = arr == UNLABELED
    elif arr.dtype.kind == "O":
        minus_one = np.array(
            [
                isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) and v == UNLABELED
                for v in arr
            ],
            dtype=bool,
        )
    else:
        minus_one = np.zeros(len(arr), dtype=bool)
    labeled = ~(np.asarray(missing, dtype=bool) | minus_one)
    vals = _typed(arr[labeled], bool(np.asarray(missing).any()))
    if vals.dtype.kind in "OUS" and len(vals):
        texts = pd.Series(vals).map(lambda v: str(v).strip().lower() if isinstance(v, (str, bytes)) else None)
        marks = texts.isin(MARKER_TEXTS)
        if marks.any():
            found = pd.Series(vals[marks.to_numpy()]).value_counts()
            shown = ", ".join(f"{v!r} ({k} rows)" for v, k in found.items())
            raise ValueError(
                f"y holds the text label(s) {shown}, which look like a marker of unlabeled rows written as "
                "text (as read from a CSV file, or as numpy makes -1 in a list of text labels); it is not "
                f"taken as a class. M{_HOW_TO_MARK[1:]} (e.g. y = pd.Series(y).replace('-1', None)); "
                "if it really is a class, rename it"
            )
    return vals, labeled


class SemiSupervisedKFold(StratifiedKFold):
    """Stratified K folds for a semi-supervised ``y``: the classes of the labeled rows, and the
    unlabeled rows as one more stratum, are spread evenly over the folds.

    scikit-learn's default splitter for a classifier (``StratifiedKFold``) takes integer labels
    with ``-1``, but fails on NaN, None or ``pd.NA`` markers and on text labels beside ``-1``;
    this one takes every marker :func:`split_labels` does: ``GridSearchCV(clf, grid,
    cv=SemiSupervisedKFold(3))``.  Parameters as ``StratifiedKFold``."""

    def split(self, X, y, groups=None):
        vals, labeled = split_labels(y)
        strata = np.full(len(labeled), -1, dtype=np.int64)
        strata[labeled] = np.unique(vals, return_inverse=True)[1]
        return super().split(np.zeros((len(strata), 1)), strata, groups)


def labeled_scorer(scoring="accuracy"):
    """A scorer for model selection that scores the labeled rows only (rows marked as
    :func:`split_labels` says are left out): ``GridSearchCV(clf, grid, scoring=labeled_scorer("balanced_accuracy"))``.
    ``scoring``: a scikit-learn scoring name or scorer.  (The estimator's own :meth:`~TCCClassifier.score`,
    the default of ``GridSearchCV`` and ``cross_val_score``, already leaves them out.)"""
    inner = get_scorer(scoring)

    def score(estimator, X, y, **kw):
        vals, labeled = split_labels(y)
        if not labeled.any():
            raise ValueError("y has no labeled row to score against; " + _HOW_TO_MARK.replace("mark", "only mark"))
        rows = np.flatnonzero(labeled)
        kw = {k: (_safe_indexing(v, rows) if k == "sample_weight" and v is not None else v) for k, v in kw.items()}
        return inner(estimator, _safe_indexing(X, rows), vals, **kw)

    return score


AUTO_PROGRESS_SECONDS = 5.0
"""``verbose="auto"`` shows the progress bar when the pretraining is expected to take longer."""
CPU_FLOPS = 2e10
"""The multiply-adds per second :func:`expected_fit_seconds` assumes (a few CPU cores; a GPU is faster)."""


def expected_fit_seconds(n_rows: int, width: int, cfg: Config, passes: int = 2) -> float:
    """A rough estimate of the pretraining time: per epoch, ``passes`` encodings of every row
    (NT-Xent's anchor and view: 2; VIME's and the autoencoder's view: 1; SubTab's 4 subsets: 4),
    forward and backward (about 3x the forward's multiply-adds), at :data:`CPU_FLOPS`."""
    layer = width * cfg.hidden_dim + max(cfg.encoder_depth - 1, 0) * cfg.hidden_dim**2
    return cfg.epochs * n_rows * passes * 3 * layer / CPU_FLOPS


def _in_notebook() -> bool:
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def _thread_count(n_jobs) -> int | None:
    """Threads for ``n_jobs`` (None: leave the process as it is); a ConfigError for a bad value."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ConfigError(f"n_jobs: expected None or a non-zero whole number (-1: every core), got {n_jobs!r}")
    n = int(n_jobs)
    return max(1, n if n > 0 else threads.cores() + 1 + n)


@contextlib.contextmanager
def _threads(n_jobs):
    """Hold torch and XGBoost (through ``$TCC_THREADS``) to ``n_jobs`` threads; restore both after."""
    n = _thread_count(n_jobs)
    if n is None:
        yield
        return
    saved_env = {k: os.environ.get(k) for k in threads.env(n)}
    saved_torch = torch.get_num_threads()
    threads.apply(n)
    try:
        yield
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        torch.set_num_threads(saved_torch)


def _holds_text(X) -> bool:
    """An array-like with text (or other non-number objects) among its values."""
    try:
        arr = np.asarray(X, dtype=object)
    except Exception:  # noqa: BLE001 - ragged or odd input: let scikit-learn's own error stand
        return False
    return arr.ndim == 2 and any(isinstance(v, (str, bytes)) for v in arr.ravel())


def _refuse_infinity(X) -> None:
    """Infinity in an array of numbers: a ValueError naming its columns as ``x0``, ``x1``, ..."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (complex values: scikit-learn's own message names them)
            arr = np.asarray(X, dtype=np.float64)
    except Exception:  # noqa: BLE001 - text or ragged values: another check names them
        return
    if arr.ndim == 2 and np.isinf(arr).any():
        inf = [f"x{j}" for j in np.flatnonzero(np.isinf(arr).any(0))]
        raise ValueError(
            f"Input X contains infinity in column(s) {', '.join(inf[:10])} (0-based indices "
            f"{', '.join(c[1:] for c in inf[:10])}); replace it with NaN (imputed) or finite numbers"
        )


def _check_range(X: pd.DataFrame) -> None:
    """Infinity and numbers beyond float32 are a ValueError naming the columns."""
    bad = float_columns_out_of_range(X, FLOAT32_MAX)
    inf = [c for c, (n_inf, _, _) in bad.items() if n_inf]
    if inf:
        raise ValueError(
            f"Input X contains infinity in column(s) {', '.join(map(repr, inf[:10]))}; "
            "replace it with NaN (imputed) or finite numbers"
        )
    if bad:
        largest = max(v[2] for v in bad.values())
        raise ValueError(
            f"Input X has numbers too large for float32 (|x| > 3.4e38) in column(s) "
            f"{', '.join(map(repr, list(bad)[:10]))} (the largest {largest:.3g}): training runs in float32, where "
            "they become inf; rescale them (divide by a power of ten, or take a log) or make them NaN"
        )


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


def _refuse_an_edited_plugin(method: str) -> None:
    """The plugin file that registered ``method``, edited since it was loaded, would train the text
    it loaded while the file says otherwise (a module it imports is refused alike, by its key)."""
    edited = plugins.edited_since_loaded(registry.origin_file(method))
    if edited is not None:
        raise plugins.PluginError(
            f"plugin {edited.path} changed on disk since it was loaded, so fit would train the text it loaded: "
            f"load it again (tcclib.load_plugins({edited.spec!r})) before fit"
        )


def _fit_member(prep: Prepared, cfg: Config, importance, weights: np.ndarray | None = None):
    """One member through the core's sequence (:func:`tcclib.method.training.set_up`,
    :func:`~tcclib.method.training.pretrain`, :func:`~tcclib.method.training.fit_member_heads`),
    the one the benchmark runner runs: encoders, pretraining, then the classifier on the labeled
    rows (``weights``: every row's weight in the heads' loss, None: unweighted)."""
    dev = torch.device(cfg.device)
    w = None if weights is None else torch.as_tensor(weights, dtype=torch.float32, device=dev)[None]
    members = training.set_up(prep, cfg, importance, "X", weights=w)
    training.pretrain(members, f"TCCClassifier({cfg.methods[0]}): pretraining")
    model = training.fit_member_heads(members, cfg, w)
    with torch.no_grad():
        if not all(torch.isfinite(p).all() for p in model.head.parameters() + model.enc.parameters()):
            raise TrainingDiverged(
                "X",
                prep.splits[0].seed,
                cfg.methods[0],
                None,
                "a classification head or encoder weight is not finite",
                lr=cfg.lr,
            )
    return model, members.tab, members.pretraining


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
    if mlp.views is not None:
        mlp.views = mlp.views_on(mlp.device)
    if mlp.deep is not None:
        mlp.deep = mlp.deep.cpu()
    if mlp.input_maps is not None:
        mlp.input_maps = mlp.input_maps_on(mlp.device)
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
    if obj.views is not None:
        out.views = obj.views_on(dev)
    if obj.deep is not None:
        out.deep = obj.deep.to(dev)
    if obj.input_maps is not None:
        out.input_maps = obj.input_maps_on(dev)
    return out


__all__ = [
    "MARKER_TEXTS",
    "UNLABELED",
    "SemiSupervisedKFold",
    "TCCClassifier",
    "estimator_methods",
    "expected_fit_seconds",
    "labeled_scorer",
    "split_labels",
]
