"""Shared fixtures."""

import pytest

from tcclib.data.sources import from_frame, load_dataset


@pytest.fixture(scope="module")
def bc():
    return load_dataset("breast_cancer")


@pytest.fixture(scope="module")
def bc_small(bc):
    """breast_cancer with 12 features: quick XGBoost importances for the correlation methods."""
    return from_frame(bc.X.iloc[:, :12], bc.y, name="bc12")
