"""A feature at 1e-300, 1e-200 or 1e200 keeps its spread: the squares of its standard deviation
under- or overflow, which dropped it from ``logreg_cv`` (accuracy 0.63 against 0.87 unscaled) and
made the preprocessed column NaN (the probe head then "diverged", saying "lower lr")."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from tcclib.data.preprocess import FittedColumns, spread
from tcclib.method.probe import TunedLogisticRegression

X, Y = make_classification(300, 5, n_informative=3, random_state=0)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e200])
def test_logreg_cv_on_a_feature_at_an_extreme_scale_predicts_as_unscaled(scale):
    unscaled = TunedLogisticRegression().fit(X[:200], Y[:200])
    scaled = X.copy()
    scaled[:, 0] *= scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (numpy's overflow warnings were the only word)
        model = TunedLogisticRegression().fit(scaled[:200], Y[:200])
        probabilities = model.predict_proba(scaled[200:])
    np.testing.assert_allclose(probabilities, unscaled.predict_proba(X[200:]), atol=1e-9)
    assert model.choice_ == unscaled.choice_


@pytest.mark.parametrize("scale", [1e-300, 1e200])
def test_a_feature_at_an_extreme_scale_is_standardised_as_unscaled(scale):
    frame = pd.DataFrame(X, columns=list("abcde"))
    scaled = frame.assign(a=frame.a * scale)
    expected = FittedColumns.fit(frame).transform(frame)
    np.testing.assert_allclose(FittedColumns.fit(scaled).transform(scaled), expected, atol=1e-5)


def test_the_spread_is_numpy_s_own_at_ordinary_scales():
    assert np.array_equal(spread(X), X.std(0))  # the committed results' standardisation, to the bit
    assert spread(np.full((4, 1), 1e-300))[0] == 0.0  # a constant column stays constant
