"""The screen's front door (issue 48): it runs on the sweep's executor, takes the sweep's options
that make sense for it and refuses the others in one line, finds the data beside the checkout with
no variable set, checks every dataset with ``--check``, and stops within seconds on an interrupt
(no process left, finished datasets kept, the next run trains only what was missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from notebook_runs import papermill_09
from processes import alive, interrupt_when

from tcclib.__main__ import main
from tcclib.artifacts import store
from tcclib.method import plugins
from tcclib.method.config import Config
from tcclib.running.train import run_dataset

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets" / "openml-cc18"
NEARBY = ROOT / "examples" / "nearby_rule.py"
pytestmark = pytest.mark.usefixtures("kept_environ")  # main() in-process sets variables for its workers
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="needs ../shared/datasets/openml-cc18 beside the checkout"
)


def _clean_env(**extra) -> dict:
    """This environment without TCC_DATA_DIR or plugins, and with any web request failing at once
    (a proxy nobody listens on): offline, as a shell beside ../shared."""
    env = {k: v for k, v in os.environ.items() if k not in ("TCC_DATA_DIR", plugins.ENV)}
    env.update(
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        TCC_PROGRESS="lines",
        **extra,
    )
    return env


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A reference store of two finished datasets (no_pretrain and logreg, 2 seeds, 2 epochs); the
    screen trains breast_cancer with 2 epochs and balance-scale with 150 (its recorded settings)."""
    folder = tmp_path_factory.mktemp("reference")
    cfg = Config(methods=("no_pretrain",), baselines=("logreg",), seeds=(0, 1), epochs=2, head_epochs=2, progress=False)
    for name, epochs in (("breast_cancer", 2), ("balance-scale", 150)):
        store.save_run(run_dataset(name, cfg, data_dir=SHARED if SHARED.is_dir() else None), folder / name)
        recorded = json.loads((folder / name / "config.json").read_text())
        (folder / name / "config.json").write_text(json.dumps({**recorded, "epochs": epochs}))
        _as_finished(folder / name)
    return folder


def _as_finished(folder: Path) -> None:
    """The made-up reference's marker records its files as they are now (its config.json edited
    to claim other settings: a stand-in for a reference run at them)."""
    marker = json.loads((folder / "_DONE.json").read_text())
    (folder / "_DONE.json").write_text(json.dumps({**marker, "sha256": store.result_digests(folder)}))


def _screen_file(tmp_path: Path, reference: Path) -> Path:
    p = tmp_path / "screen.yaml"
    p.write_text(
        "name: screen\ndatasets: [breast_cancer, balance-scale]\n"
        f"screen:\n  reference: {reference}\n  compare: [no_pretrain, logreg]\n  out: {tmp_path / 'out' / 'screen'}\n"
    )
    return p


@pytest.mark.parametrize(
    "config, only, refusal",
    [
        ("{epochs: 2}", "breast_cancer", None),  # its stored setting
        ("{epochs: 2, device: cpu}", "breast_cancer", None),  # and where it computes
        ("{epochs: 2}", "balance-scale", "config: epochs 2 is not the stored 150 of "),
        ("{seeds: [0]}", "breast_cancer", "config: seeds [0] is not the stored [0, 1] of "),
        ("{methods: [random]}", "breast_cancer", "config: methods: the new methods are the screen's"),
    ],
)
def test_a_screen_files_config_is_the_stored_settings_or_refused_before_any_work(
    tmp_path, reference, capsys, config, only, refusal
):
    """A screen trains each dataset with its stored settings: a ``config:`` setting is the stored
    value, or where the members compute (``device``); any other is refused in one line at
    ``--check`` and at the run, never dropped in silence."""
    yaml = _screen_file(tmp_path, reference)
    yaml.write_text(yaml.read_text() + f"config: {config}\n")
    for check in (["--check"], []) if refusal else (["--check"],):
        code = main([str(yaml), "--plugin", str(NEARBY), "--only", only, *check])
        err = capsys.readouterr().err.strip()
        if refusal is None:
            assert code == 0, err
            continue
        assert code == 2 and len(err.splitlines()) == 1 and refusal in err and "take " in err, err
    assert not (tmp_path / "out").exists()  # nothing started


@needs_shared
def test_the_screens_check_loads_its_datasets_offline_beside_shared_with_no_variable_set(monkeypatch, capsys):
    for name, value in _clean_env().items():
        monkeypatch.setenv(name, value)
    for name in ("TCC_DATA_DIR", plugins.ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(ROOT)
    assert main(["params/screen.yaml", "--plugin", str(NEARBY), "--only", "kc2", "--check"]) == 0
    out = capsys.readouterr().out
    assert f"screen: 1 dataset load from {SHARED.resolve()}, the data the reference was trained on" in out
    assert "OK (a screen of nearby on 1 dataset)" in out


@needs_shared
def test_a_screen_on_data_other_than_the_references_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """An edited copy of a dataset's file: the new method would train on it and be ranked against
    the reference's members, trained on the original; refused at --check and at the run, in one line."""
    copy = tmp_path / "data"
    copy.mkdir()
    lines = (SHARED / "1063.arff").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith(("@", "%")))
    row = lines[first].split(",")
    row[0] = str(float(row[0]) + 1.0)  # (one value of kc2's first row)
    lines[first] = ",".join(row)
    (copy / "1063.arff").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(ROOT)
    for check in (["--check"], []):
        args = ["params/screen.yaml", "--plugin", str(NEARBY), "--only", "kc2", "--data-dir", str(copy)]
        code = main([*args, "--outputs", str(tmp_path / "runs"), *check])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "kc2: the data read now from" in err and "is not the data the reference's class was trained on" in err
    assert not (tmp_path / "runs" / "screen").exists()  # nothing started


@pytest.mark.parametrize(
    "option, words",
    [
        (["--scheduler", ""], "--scheduler: scheduler must be local"),
        (["--workers", "0"], "--workers must be a positive"),
    ],
)
def test_the_screen_refuses_what_the_sweep_refuses_at_check_and_at_the_run(tmp_path, reference, capsys, option, words):
    """One validation: an empty --scheduler (an unset shell variable) or --workers 0 is refused by
    the sweep and the screen alike, at --check and at the run, in one line, before any work."""
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text("name: tiny\ndatasets: [breast_cancer]\nconfig: {epochs: 1, seeds: [0]}\n")
    commands = {
        "sweep": [str(sweep_file), "--outputs", str(tmp_path / "out")],
        "screen": [str(_screen_file(tmp_path, reference)), "--plugin", str(NEARBY)],
    }
    for what, argv in commands.items():
        for check in (["--check"], []):
            assert main([*argv, *option, *check]) == 2, (what, check)
            err = capsys.readouterr().err.strip()
            assert words in err and len(err.splitlines()) == 1, (what, check, err)
            if option[0] == "--scheduler":
                assert "an unset shell variable?" in err and "leave the option out" in err
    assert not (tmp_path / "out").exists()  # nothing started


@pytest.mark.parametrize(
    "flag, why",
    [("--retrain", "reuses the stored members"), ("--fresh-kernels", "worker processes"), ("--no-aggregate", "")],
)
def test_the_screen_refuses_an_option_it_cannot_honour_in_one_line(tmp_path, reference, capsys, flag, why):
    code = main([str(_screen_file(tmp_path, reference)), "--plugin", str(NEARBY), flag])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"error: screen: {flag} does not apply to a screen") and why in err


def test_the_screen_names_a_bad_input_before_any_work(tmp_path, reference, capsys):
    yaml = _screen_file(tmp_path, reference)
    assert main([str(yaml), "--plugin", str(NEARBY), "--methods", "no_pretrain"]) == 2
    assert "'no_pretrain' is one of the compared methods" in capsys.readouterr().err
    yaml.write_text(yaml.read_text().replace("[no_pretrain, logreg]", "[no_pretrain, logreg, clas]"))
    assert main([str(yaml), "--plugin", str(NEARBY)]) == 2
    err = capsys.readouterr().err
    assert "screen: compare:" in err and "'clas'" in err and "class" in err  # the registry's closest name
    yaml.write_text(yaml.read_text().replace("[no_pretrain, logreg, clas]", "[no_pretrain, random]"))
    assert main([str(yaml), "--plugin", str(NEARBY)]) == 2
    assert "the reference store has no results of random for" in capsys.readouterr().err
    assert main([str(_screen_file(tmp_path, reference)), "--plugin", str(NEARBY), "--only", "kc1"]) == 2
    assert "kc1" in capsys.readouterr().err
    broken = tmp_path / "broken"
    for name in ("breast_cancer", "balance-scale"):
        (broken / name).mkdir(parents=True)
        for f in ("_DONE.json", "config.json", "results.csv"):
            (broken / name / f).write_bytes((reference / name / f).read_bytes())
    (broken / "balance-scale" / "results.csv").unlink()
    assert main([str(_screen_file(tmp_path, broken)), "--plugin", str(NEARBY)]) == 2
    err = capsys.readouterr().err.strip()
    assert "has no results.csv in balance-scale" in err and len(err.splitlines()) == 1


@needs_shared
def test_only_runs_only_those_datasets_and_a_second_run_trains_nothing(tmp_path, reference, capsys, monkeypatch):
    monkeypatch.delenv("TCC_DATA_DIR", raising=False)
    monkeypatch.setenv("TCC_PROGRESS", "lines")
    args = [str(_screen_file(tmp_path, reference)), "--plugin", str(NEARBY), "--only", "breast_cancer"]
    assert main([*args, "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "screen: 1 dataset, nearby" in out and "breast_cancer: done in" in out and "2 members trained" in out
    folder = tmp_path / "out" / "screen"
    assert (folder / "breast_cancer" / "_DONE.json").is_file() and not (folder / "balance-scale").exists()
    results = pd.read_csv(folder / "results.csv")
    assert set(results.dataset) == {"breast_cancer"} and set(results.method) == {"nearby", "no_pretrain", "logreg"}
    assert (folder / "verdict.md").is_file()
    assert main(args) == 0  # unchanged: the dataset is done, nothing trains
    out = capsys.readouterr().out
    assert "1 of 1 dataset already done" in out and "members trained" not in out.split("training record")[0]


@needs_shared
def test_an_interrupt_ends_a_two_worker_screen_and_the_next_run_trains_only_what_was_missing(tmp_path, reference):
    """Ctrl-C in a terminal (SIGINT to the process group) while balance-scale trains and
    breast_cancer is done: the command ends within seconds with one line, no worker is left, and
    the next run skips breast_cancer and resumes balance-scale from its checkpoint."""
    cmd = [sys.executable, "-m", "tcclib", str(_screen_file(tmp_path, reference)), "--plugin", str(NEARBY)]
    env = _clean_env(TCC_CHECKPOINT_SECONDS="1")
    first = tmp_path / "first.log"
    checkpoints = tmp_path / "out" / ".cache" / "checkpoints"
    seen = interrupt_when(
        [*cmd, "--workers", "2"], first,
        # breast_cancer done, balance-scale pretraining on past its first checkpoint (however busy the machine)
        lambda: "breast_cancer: done" in first.read_text() and any(checkpoints.glob("balance-scale-*")), 400,
        cwd=ROOT, env=env,
    )  # fmt: skip
    assert len(seen.workers) >= 2, "the screen runs its datasets in worker processes"
    assert seen.code == 130, seen.text[-3000:]  # before its work was done (seconds: bench/stop_times.py)
    assert "Traceback" not in seen.text
    assert seen.last_line.startswith("interrupted: 1 of the 2 datasets this run had to do finished and are kept")
    assert "Run the screen again" in seen.last_line
    time.sleep(2)
    assert [p for p in seen.workers if alive(p)] == []
    folder = tmp_path / "out" / "screen"
    assert (folder / "breast_cancer" / "_DONE.json").is_file()
    assert not (folder / "balance-scale" / "_DONE.json").exists()
    assert list(checkpoints.glob("*")), "the interrupted pretraining's checkpoint"
    kept = (folder / "breast_cancer" / "timings.json").read_bytes()
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "1 of 2 datasets already done" in again.stdout
    assert "balance-scale: done in" in again.stdout and "breast_cancer: done" not in again.stdout
    assert (folder / "breast_cancer" / "timings.json").read_bytes() == kept  # not trained again
    assert json.loads((folder / "balance-scale" / "timings.json").read_text()).get("resumed_at_epoch", 0) > 0


def test_a_verdict_over_too_few_datasets_says_no_test_can_reach_significance():
    from tcclib.paper import verdict

    results = pd.read_csv(ROOT / "outputs" / "screen" / "results.csv")
    compared = ["class", "random", "no_pretrain", "logreg", "self_training", "xgboost"]
    assert not any("no paired Wilcoxon test can reach" in s for s in verdict.sentences(results, ["nearby"], compared))
    two = results[results.dataset.isin(sorted(results.dataset.unique())[:2])]
    lines = verdict.sentences(two, ["nearby"], compared)
    assert "not distinguishable" in lines[0]
    assert lines[-1].startswith("With 2 datasets no paired Wilcoxon test can reach p < 0.05")
    assert "the smallest possible p is 0.5" in lines[-1] and "at least 6 datasets" in lines[-1]


@needs_shared
def test_notebook_09_runs_offline_beside_shared_with_no_variable_set(tmp_path, reference):
    """papermill on 09 with a plugin, one OpenML dataset (balance-scale, read from ../shared: no
    TCC_DATA_DIR, no network), one worker: the verdict, and the example rule written nowhere."""
    small = tmp_path / "reference" / "balance-scale"
    small.mkdir(parents=True)
    for f in (reference / "balance-scale").iterdir():
        if f.is_file():
            (small / f.name).write_bytes(f.read_bytes())
    recorded = json.loads((small / "config.json").read_text())
    (small / "config.json").write_text(json.dumps({**recorded, "epochs": 2}))
    _as_finished(small)
    done = papermill_09(
        tmp_path,
        _clean_env(),
        plugin="examples/nearby_rule.py",
        reference=str(tmp_path / "reference"),
        compare="[no_pretrain, logreg]",
        out_dir=str(tmp_path / "screen"),
        workers="1",
        progress="False",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = json.loads((tmp_path / "09_out.ipynb").read_text())
    text = "".join(
        "".join(o.get("text", "")) + json.dumps(o.get("data", {}))
        for c in rendered["cells"]
        for o in c.get("outputs", [])
    )
    assert "balance-scale: done in" in text and "nearby ranks" in text
    assert "With 1 dataset no paired Wilcoxon test can reach" in text
    assert (tmp_path / "screen" / "verdict.md").is_file()
    assert not (tmp_path / "screen" / "my_rule.py").exists()


@needs_shared
@pytest.mark.parametrize("edit", [{"head_epochs": 50}, {"xgb_trees": 50}], ids=["a method's setting", "a baseline's"])
def test_a_reference_whose_config_json_was_edited_is_refused_naming_it_not_the_data(
    edit, tmp_path, monkeypatch, capsys
):
    """The reference's stored keys are checked against its config.json on the data read now, the
    baselines' too (xgboost reads xgb_trees); the line blames config.json, the data being the
    bytes the reference recorded."""
    reference = tmp_path / "reference"
    shutil.copytree(ROOT / "outputs" / "head_variants" / "100ep" / "frozen" / "kc2", reference / "kc2")
    recorded = json.loads((reference / "kc2" / "config.json").read_text())
    (reference / "kc2" / "config.json").write_text(json.dumps({**recorded, **edit}, indent=1))
    params = tmp_path / "screen.yaml"
    params.write_text(
        (ROOT / "params" / "screen.yaml").read_text().replace("outputs/head_variants/100ep/frozen", str(reference))
    )
    monkeypatch.chdir(ROOT)
    code = main([str(params), "--plugin", str(NEARBY), "--only", "kc2", "--data-dir", str(SHARED), "--check"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "kc2: config.json changed since its run finished" in err and "data read now" not in err
    # a reference whose _DONE.json records no digests (made before them): its keys tell
    marker = reference / "kc2" / "_DONE.json"
    marker.write_text(json.dumps({k: v for k, v in json.loads(marker.read_text()).items() if k != "sha256"}))
    code = main([str(params), "--plugin", str(NEARBY), "--only", "kc2", "--data-dir", str(SHARED), "--check"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "kc2: the reference's config.json does not give the keys of its stored" in err
    assert "config.json was edited since its run; restore it" in err and "data read now" not in err
