"""Shared fixtures."""

import hashlib
import os
from pathlib import Path

import pytest

from tcclib.data.sources import from_frame, load_dataset


@pytest.fixture(scope="module")
def bc():
    return load_dataset("breast_cancer")


@pytest.fixture(scope="module")
def bc_small(bc):
    """breast_cancer with 12 features: quick XGBoost importances for the correlation methods."""
    return from_frame(bc.X.iloc[:, :12], bc.y, name="bc12")


def _folder_digest(folder: Path) -> dict:
    """``{relative path: sha256}`` of every file under ``folder``: equal means byte for byte."""
    return {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file()
    }


@pytest.fixture
def folder_digest():
    """The file digests of a folder (:func:`_folder_digest`), to show a run left it untouched."""
    return _folder_digest


@pytest.fixture
def kept_environ():
    """The command line run in-process sets variables for the kernels and workers it starts
    (``TCC_PLUGINS``, ``TCC_TRACEBACK``, ``TCC_DATA_DIR``, ...): put the environment back after."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
