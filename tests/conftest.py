"""Shared fixtures, and each pytest-xdist worker's share of the cores."""

import hashlib
import os
import sys
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
    elif n > len(cores) > 1:  # more workers than cores: one core each, shared in turn
        os.sched_setaffinity(0, [cores[index % len(cores)]])


_own_cores()
os.environ.pop("TCC_PLUGINS", None)  # a developer's own plugins stay out of the tests (those that need it set it)

import pytest

from tcclib.data.sources import from_frame, load_dataset
from tcclib.util import iri_grammar

# before the test modules import nbformat: jsonschema's IRI grammar (2 s a process) loads at its
# first use; no test checks an IRI (make test-lib leaves nbval's plugin, which imports nbformat
# before this file, out: -p no:nbval)
iri_grammar.defer()

_WRITES_BYTECODE = not sys.dont_write_bytecode


def pytest_collection(session):
    """Collecting writes the bytecode of what it imports (above all pytest's rewritten test modules:
    collecting took 10.1 s in one process, 6.3 s once written), also where
    ``PYTHONDONTWRITEBYTECODE`` is set; the tests themselves run as set (they edit files and import
    them again, in this process and in others)."""
    sys.dont_write_bytecode = False


def pytest_collection_finish(session):
    sys.dont_write_bytecode = not _WRITES_BYTECODE


# The test files that take longest in the suite, longest first (seconds in pytest on two workers on
# the 2-core EPYC, 2026-12-02: docs/tests.md). pytest-xdist hands a worker the next file whenever it
# has fewer than two waiting, in the order collected (make test-lib turns off its own reordering by
# the number of tests, --no-loadscope-reorder, which put the 90 s Slurm test last): longest first,
# the workers end within about one short file of each other. A file left out goes after these.
LONGEST_FIRST = (
    "test_rerun_safety.py",  # 180 s
    "test_scale.py",  # 174 s
    "test_slurm.py",  # 90 s (skipped where Slurm is not installed)
    "test_plugins.py",  # 75 s
    "test_screen_front_door.py",  # 64 s
    "test_sweep.py",  # 60 s
    "test_speed.py",  # 59 s
    "test_newcomer.py",  # 58 s
    "test_renders_stay_put.py",  # 55 s
    "test_objectives.py",  # 48 s
    "test_wheel.py",  # 38 s
    "test_lab.py",  # 32 s
    "test_heads.py",  # 31 s
)


def pytest_collection_modifyitems(session, config, items):
    """The files of :data:`LONGEST_FIRST` first, in its order; each file's tests keep theirs."""
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))


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


def loaded_plugins() -> set[str]:
    """The plugins loaded so far in this process (a file's path, a module's name), read without
    filling the registry: what the registry holds at a test's start is what the tests before left."""
    from tcclib.method import plugins

    return {p.identity for p in plugins.loaded(include_builtins=True, fill=False)}


@pytest.fixture(autouse=True)
def _plugins_as_found():
    """Unload the plugins a test loaded and left loaded, so that the next test in this worker sees
    the registry whatever ran before it (``pytest -n`` gives each worker other files); the
    built-ins stay.  Nothing here fills the registry: a test sees it as the tests before left it."""
    from tcclib.method import plugins

    before = loaded_plugins()
    yield
    for plugin in plugins.loaded(fill=False):
        if plugin.identity not in before:
            plugins.unload(plugin.identity)
