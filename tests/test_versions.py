"""The declared versions agree everywhere (issue 59): pyproject.toml's lower bounds are the versions
``make test-minimums`` installs (constraints/minimums.txt), environment.yml (Binder) asks for the
same, and the classifiers name only Pythons that requires-python admits."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
UNCHECKED = {"torch"}  # its lower bound (2.4) is a multi-GB CUDA build here: the runs use 2.13.0 (docs/tests.md)


def _requirements(lines) -> dict[str, Requirement]:
    found = [Requirement(line) for line in lines]
    return {r.name.lower().replace("_", "-"): r for r in found}


def _lower_bound(requirement: Requirement) -> str:
    (bound,) = [s.version for s in requirement.specifier if s.operator == ">="]
    return bound


def test_the_constraints_file_pins_every_lower_bound():
    declared = _requirements([*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["dev"]])
    lines = (ROOT / "constraints" / "minimums.txt").read_text().splitlines()
    pinned = _requirements(line for line in lines if line.strip() and not line.startswith("#"))
    for name, requirement in declared.items():
        if name in UNCHECKED:
            continue
        assert name in pinned, f"constraints/minimums.txt leaves out {name}"
        (pin,) = pinned[name].specifier
        assert pin.operator == "==" and Version(pin.version) == Version(_lower_bound(requirement)), (
            str(pinned[name]),
            str(requirement),
        )


def test_environment_yml_asks_for_what_pyproject_declares():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    (pip,) = [d["pip"] for d in environment["dependencies"] if isinstance(d, dict)]
    listed = _requirements(line for line in pip if not line.startswith("--"))
    for name, requirement in _requirements(PROJECT["dependencies"]).items():
        if name in UNCHECKED:
            continue
        assert name in listed, f"environment.yml leaves out {name}"
        assert listed[name].specifier == requirement.specifier, (str(listed[name]), str(requirement))


def test_the_classifiers_name_the_pythons_tested_from_the_lowest_that_requires_python_admits():
    named = [
        c.rsplit(" :: ", 1)[1] for c in PROJECT["classifiers"] if c.startswith("Programming Language :: Python :: 3.")
    ]
    lowest = min(named, key=lambda version: tuple(map(int, version.split("."))))
    assert PROJECT["requires-python"] == f">={lowest}", (PROJECT["requires-python"], named)
    assert all(f"{version}.0" in SpecifierSet(PROJECT["requires-python"]) for version in named)
