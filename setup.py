"""The wheel's package data from outside the package folder (pyproject.toml holds everything else).

A wheel carries, under ``tcclib/bundle/``, what ``python -m tcclib demo`` needs outside a checkout:
the built-in parameter sets (``params/*.yaml``), the notebook sources the sweep executes
(``notebooks/*.py``) and the built-in sets' reference numbers (``results.csv`` and ``config.json``
of each dataset of ``outputs/<set>/``, for the comparison the sweep ends with).  They are copied
at build time, so the checkout keeps one copy of each; an editable install reads them in place
(``tcclib.util.paths.source_root``).  MANIFEST.in puts the same files into an sdist.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REFERENCE_FILES = ("results.csv", "config.json")


def bundled_files(root: Path = HERE) -> list[Path]:
    """The files the wheel carries under ``tcclib/bundle/``, relative to ``root``."""
    params = sorted((root / "params").glob("*.yaml"))
    found = [*params, *sorted((root / "notebooks").glob("*.py"))]
    for set_file in params:
        for folder in sorted((root / "outputs" / set_file.stem).glob("*/")):
            if all((folder / name).is_file() for name in REFERENCE_FILES):  # a dataset's, not the set's results/
                found += [folder / name for name in REFERENCE_FILES]
    return [f.relative_to(root) for f in found]


class BuildWithBundle(build_py):
    """setuptools' build_py, then the bundle copied into the build (not for an editable install)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "tcclib" / "bundle"
        shutil.rmtree(target, ignore_errors=True)  # (an earlier build's copies, some perhaps gone since)
        for rel in bundled_files():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HERE / rel, target / rel)


setup(cmdclass={"build_py": BuildWithBundle})
