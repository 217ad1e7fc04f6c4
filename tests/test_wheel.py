"""The main job anywhere (issue 59): the wheel, built as pip builds it and installed into a folder of
its own, run from a folder outside any checkout, carries the built-in parameter sets, the notebook
sources the sweep executes and the built-in sets' reference numbers (``setup.py``'s bundle).

The wheel's build (about 10 s: an isolated build, as pip does by default) is what is under test, so
it is built once for the module; its dependencies are this environment's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "datasets" / "openml-cc18"


def _copy_sources(dest: Path) -> None:
    """The checkout's files as a clone holds them (tracked, and new ones not ignored), the committed
    renders left out but for the reference numbers the wheel carries: pip builds in the source
    folder (its build/), which must not be this checkout's, where another build may run."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in listed:
        keep = not rel.startswith("outputs/") or rel.endswith(("/results.csv", "/config.json"))
        if rel and keep and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory):
    """``(wheel, site)``: the wheel pip builds from this checkout, and a folder it is installed into."""
    source, dist, site = (tmp_path_factory.mktemp(name) for name in ("source", "dist", "site"))
    _copy_sources(source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", dist, source], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("tcclib-*.whl")
    done = subprocess.run([*pip, "install", "--no-deps", "-q", "--target", site, wheel], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return wheel, site


def _outside(site: Path, cwd: Path, *args, data_dir: Path | None = None, timeout: float = 120):
    """``python *args`` in ``cwd`` (outside any checkout) with the installed wheel's tcclib first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TCC_", "PYTHONPATH", "MPLCONFIGDIR"))}
    env.update(PYTHONPATH=str(site), MPLBACKEND="Agg", **({"TCC_DATA_DIR": str(data_dir)} if data_dir else {}))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_carries_the_sets_notebooks_references_and_kernel_settings(wheel_site):
    wheel, _ = wheel_site
    names = set(zipfile.ZipFile(wheel).namelist())
    for source in [*ROOT.glob("params/*.yaml"), *ROOT.glob("notebooks/*.py")]:
        assert f"tcclib/bundle/{source.relative_to(ROOT)}" in names, source
    for name in ("results.csv", "config.json"):
        assert f"tcclib/bundle/outputs/demo/breast_cancer/{name}" in names
    assert not any(n.startswith("tcclib/bundle/outputs/demo/results/") for n in names)  # a set's tables: not needed
    assert not any(n.endswith((".ipynb", ".npz", ".png")) for n in names)  # no renders, arrays or figures
    assert "tcclib-0.2.0.data/data/etc/ipython/ipython_kernel_config.py" in names


def test_outside_a_checkout_the_built_in_sets_run_by_name(wheel_site, tmp_path):
    _, site = wheel_site
    where = _outside(site, tmp_path, "-c", "import tcclib; print(tcclib.__file__)")
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr  # the wheel's, not the checkout's
    helped = _outside(site, tmp_path, "-m", "tcclib", "--help")
    sets = "ablation, authors, demo, family, paper, screen, smoke"
    assert helped.returncode == 0 and sets in " ".join(helped.stdout.split())
    checked = _outside(site, tmp_path, "-m", "tcclib", "demo", "--check")
    assert checked.returncode == 0, checked.stderr  # --check finds the notebook sources the sweep executes
    assert checked.stdout.strip() == "demo: OK (1 dataset, 8 seeds, 6 methods, 100 epochs, device cpu)"
    if DATA.is_dir():  # the smoke set's data_dir (the folder beside a checkout) gives way to $TCC_DATA_DIR
        smoke = _outside(site, tmp_path, "-m", "tcclib", "smoke", "--check", data_dir=DATA)
        assert smoke.returncode == 0 and smoke.stdout.startswith("smoke: OK (3 datasets"), smoke.stderr
    missing = _outside(site, tmp_path, "-m", "tcclib", "params/demo.yaml")
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "error: no parameter file params/demo.yaml; the built-in sets run by name: "
        "ablation, authors, demo, family, paper, screen, smoke (python -m tcclib ablation)"
    )
    assert not (tmp_path / "runs").exists()  # nothing written by a check


def test_outside_a_checkout_a_users_set_runs_the_packaged_notebooks_into_runs(wheel_site, tmp_path):
    """A small set of the user's: 01 and 03 from the package, results in ./runs, and the closing
    line says plainly that there is no reference to compare with."""
    _, site = wheel_site
    (tmp_path / "tiny.yaml").write_text(
        "name: tiny\ndatasets: [breast_cancer]\nper_dataset_notebooks: [01_data_prep, 03_pretraining]\n"
        "aggregate_notebooks: []\n"
        "config: {seeds: [614579], methods: [random], epochs: 1, head_epochs: 1, progress: false}\n"
    )
    run = _outside(site, tmp_path, "-m", "tcclib", "tiny.yaml", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    folder = tmp_path / "runs" / "tiny" / "breast_cancer"
    rendered = json.loads((folder / "03_pretraining.ipynb").read_text())
    assert rendered["metadata"]["tcc"]["source"] == "notebooks/03_pretraining.py"
    assert (folder / "results.csv").is_file()
    assert "breast_cancer: no committed reference to compare with (tcclib carries those of its built-in sets only)" in (
        run.stdout
    )


def test_outside_a_checkout_the_demo_is_compared_with_the_reference_the_wheel_carries(wheel_site, tmp_path):
    _, site = wheel_site
    code = (
        "import shutil, sys; from tcclib.artifacts import store; from tcclib.util import paths; "
        "ref = paths.reference_root() / 'demo' / 'breast_cancer'; "
        "shutil.copytree(ref, 'runs/demo/breast_cancer'); "
        "print(store.reference_line('runs/demo/breast_cancer', ref))"
    )
    line = _outside(site, tmp_path, "-c", code)
    assert line.stdout.startswith(
        "AGREES with the committed reference outputs/demo/breast_cancer (shipped with tcclib): "
    ), line.stdout + line.stderr[-2000:]
