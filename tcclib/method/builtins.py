"""The built-in rules, methods and baselines: a plugin like a user's.

:func:`tcclib.method.plugins.ensure_loaded` loads this module first, by the same
:func:`~tcclib.method.plugins.load` that loads a user's file, so the path every plugin
takes runs in every process.  Each entry is
declared once, here; everything else asks the registry (:mod:`tcclib.method.registry`).

The built-ins' code is not part of their members' content keys (a user plugin's is): a change to
what they compute bumps :data:`tcclib.artifacts.keys.TRAIN_VERSION` instead, so the committed
results keep their keys.
"""

from __future__ import annotations

from tcclib.method import objectives, rules
from tcclib.method.config import XGB_SETTINGS, xgb_parameters
from tcclib.method.probe import TunedLogisticRegression
from tcclib.method.registry import BASELINE_ORDER, PALETTE
from tcclib.method.registry import register_baseline as baseline
from tcclib.method.registry import register_method as method
from tcclib.method.registry import register_objective as objective
from tcclib.method.registry import register_rule as rule
from tcclib.util import threads


def xgboost_classifier(seed, cfg):
    """XGBoost at the published settings (``Config.xgb_*``), seeded by the split."""
    from xgboost import XGBClassifier  # deferred: XGBoost loads only when a model is fitted

    return XGBClassifier(
        **xgb_parameters(cfg), random_state=seed, n_jobs=threads.n_jobs(), tree_method="hist", verbosity=0
    )


def logistic_regression(seed, cfg):
    """scikit-learn's logistic regression at its defaults (C = 1), untuned."""
    from sklearn.linear_model import LogisticRegression  # deferred: scikit-learn loads only when this runs

    return LogisticRegression(max_iter=2000)


def tuned_logistic_regression(seed, cfg):
    """Logistic regression with its strength chosen by stratified cross-validation on the
    labeled rows, folds seeded by the split (:class:`tcclib.method.probe.TunedLogisticRegression`:
    the ``probe`` head's procedure on the features alone)."""
    return TunedLogisticRegression(random_state=seed)


def self_training(seed, cfg):
    """Self-training around the logistic regression (threshold 0.9), on every training row."""
    from sklearn.linear_model import LogisticRegression  # deferred: scikit-learn loads only when this runs
    from sklearn.semi_supervised import SelfTrainingClassifier  # deferred: scikit-learn loads only when this runs

    return SelfTrainingClassifier(LogisticRegression(max_iter=2000), threshold=0.9)


# --------------------------------------------------------------------------- rules

for _rule in (
    rules.NoPretraining(),
    rules.SameLabel("column"),
    rules.SameLabel("pseudo", rules.PSEUDO_LABELS, settings=("pseudo_every",), switches=("pseudo_schedule",)),
    rules.SameLabel("oracle", rules.TRUE_LABELS),
    rules.Uniform(),
    rules.Correlated("most"),
    rules.Correlated("least"),
    rules.Bernoulli("bernoulli_30", 0.3),  # VIME's p_m, SubTab's masking ratio
    rules.Bernoulli("bernoulli_15", 0.15),  # the denoising autoencoder's swap noise
):
    rule(_rule)

# --------------------------------------------------------------------------- objectives (at their papers' defaults)

for _objective in (objectives.NTXent(), objectives.VIME(), objectives.DenoisingAutoencoder(), objectives.SubTab()):
    objective(_objective)

# --------------------------------------------------------------------------- methods (the paper's six first)

method(
    "no_pretrain",
    "none",
    label="no pretraining",
    order=1,
    color=PALETTE[0],
    paper=True,
    paper_columns={"how": "no_pretrain"},
)
method(
    "random", "column", label="random (SCARF)", order=2, color=PALETTE[1], paper=True, paper_columns={"how": "random"}
)
method(
    "class",
    "pseudo",
    label="class-conditioned (pseudo)",
    order=3,
    color=PALETTE[2],
    paper=True,
    tables=("how", "where"),
    paper_columns={"how": "class", "where": "random_features"},
)
method(
    "oracle",
    "oracle",
    label="oracle (true labels)",
    order=4,
    color=PALETTE[3],
    paper=True,
    paper_columns={"how": "oracle"},
)
method(
    "class_least",
    "pseudo",
    "least",
    label="class + least-correlated",
    order=5,
    color=PALETTE[4],
    paper=True,
    paper_columns={"where": "least_correlated"},
)
method(
    "class_most",
    "pseudo",
    "most",
    label="class + most-correlated",
    order=6,
    color=PALETTE[5],
    paper=True,
    paper_columns={"where": "most_correlated"},
)
# the authors' flipped run: scored against class_most's column, so on its own
method(
    "class_most_published",
    "pseudo",
    "most",
    flipped=True,
    label="class + 'most' (authors' flip)",
    group="published",
    order=7,
    color=PALETTE[6],
    paper_columns={"where": "most_correlated"},
    separate=True,
    about="the authors' flipped run",
)
# the authors' published "most correlated" run exactly: their flip and their sampling rule,
# whatever corr_rule says (class_most_published follows corr_rule); a fidelity re-run of it
method(
    "class_most_published_exact",
    "pseudo",
    "most",
    flipped=True,
    rule="authors",
    label="class + 'most' (authors' flip and rule)",
    group="published",
    order=7.5,
    color="#882255",
    paper_columns={"where": "most_correlated"},
    separate=True,
    repeats="class_most_published",
    about="the authors' flipped run with their sampling rule exactly",
)

# --------------------------------------------------------------------------- the tabular self-supervised family
# each at its paper's published corruption, with the whole column's values (as published) and
# with the anchor's pseudo-class's (the paper's class-conditioned draw, refreshed as `class`'s);
# their colours (Paul Tol's and ColorBrewer's) chosen to stay apart, under each colour blindness,
# from what shares their figures: the methods the family's screen compares and the pseudo-label
# plot's class-conditioned methods (tests/test_style.py)

for _order, (_name, _where, _objective, _label, _colors) in enumerate(
    (
        ("vime", "bernoulli_30", "vime", "VIME", ("#88CCEE", "#FEC44F")),
        ("dae", "bernoulli_15", "dae", "DAE (swap noise)", ("#117733", "#DDCC77")),
        ("subtab", "bernoulli_30", "subtab", "SubTab", ("#AA3377", "#AA4499")),
    )
):
    method(
        _name, "column", _where, objective=_objective, label=_label, group="how", order=8 + 2 * _order, color=_colors[0]
    )
    method(
        f"{_name}_class",
        "pseudo",
        _where,
        objective=_objective,
        label=f"{_label}, class-conditioned",
        group="how",
        order=9 + 2 * _order,
        color=_colors[1],
    )

# --------------------------------------------------------------------------- baselines (after every method)

baseline("xgboost", xgboost_classifier, settings=tuple(XGB_SETTINGS), order=BASELINE_ORDER, color=PALETTE[7])
baseline("logreg", logistic_regression, order=BASELINE_ORDER + 1, color=PALETTE[8])
baseline("logreg_cv", tuned_logistic_regression, order=BASELINE_ORDER + 1.5, color="#88CCEE")
baseline("self_training", self_training, semi_supervised=True, order=BASELINE_ORDER + 2, color=PALETTE[9])
