"""Shared fixtures, and each pytest-xdist worker's share of the cores."""

import hashlib
import os
from pathlib import Path


def _own_cores() -> None:
    """Under ``pytest -n N`` (``make test``), pin this worker, and the processes it starts, to its
    share of the cores before torch is imported, so that N workers' torch and XGBoost threads never
    oversubscribe the machine (each would otherwise start a thread per core)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not (worker and count and hasattr(os, "sched_setaffinity")):
        return
    cores, index, n = sorted(os.sched_getaffinity(0)), int(worker.removeprefix("gw")), int(count)
    if n > 1 and len(cores) >= n:
        os.sched_setaffinity(0, cores[index % n :: n])


_own_cores()

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


@pytest.fixture(autouse=True)
def _plugins_as_found():
    """Unload the plugins a test loaded and left loaded, so that the next test in this worker sees
    the built-in registry whatever ran before it (``pytest -n`` gives each worker other files)."""
    from tcclib.method import plugins

    before = {p.path or p.module for p in plugins.loaded()}
    yield
    for plugin in plugins.loaded():
        if (plugin.path or plugin.module) not in before:
            plugins.unload(plugin.path or plugin.module)
