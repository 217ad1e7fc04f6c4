"""Messages that name the input and the fix: a failed screen's tracebacks where they are, a damaged
``config.json`` of a reference store, and "1 dataset" (not "1 datasets") in the screen's record
and its verdict (issue 54)."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tcclib.paper import verdict
from tcclib.running import folders, screen

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "outputs" / "head_variants" / "100ep" / "frozen" / "kc2"


def test_a_failed_screen_names_each_failed_dataset_s_record_where_it_is(tmp_path):
    (tmp_path / folders.FAILED_DIR / "kc2").mkdir(parents=True)  # a failed re-run: moved aside
    (tmp_path / folders.FAILED_DIR / "kc2" / folders.FAILED).write_text("{}")
    (tmp_path / "pc1").mkdir()  # a first run that failed: in its own folder
    (tmp_path / "pc1" / folders.FAILED).write_text("{}")
    message = str(screen._failed({"kc2": "ValueError: x", "pc1": "KeyError: y"}, tmp_path))
    assert message.startswith("screen: 2 datasets failed: kc2: ValueError: x; pc1: KeyError: y;"), message
    assert message.endswith(f"(tracebacks: {tmp_path}/.failed/kc2/_FAILED.json, {tmp_path}/pc1/_FAILED.json)")
    assert str(screen._failed({"pc1": "KeyError: y"}, tmp_path)).startswith("screen: 1 dataset failed: ")


def test_a_damaged_config_json_in_the_reference_is_named_with_the_fix(tmp_path):
    shutil.copytree(STORED, tmp_path / "kc2")
    config = tmp_path / "kc2" / "config.json"
    config.write_text(config.read_text().replace(",", "", 1))
    job = screen.Screen(methods=("random",), reference=tmp_path, compared=("class", "no_pretrain"))
    with pytest.raises(screen.ScreenError) as error:
        screen.plan(job)
    assert str(error.value).startswith(f"screen: {config} is damaged (Expecting ',' delimiter: line "), error.value
    assert str(error.value).endswith(f"restore it (git checkout -- {config})")


@pytest.mark.parametrize("damage", ["a JSON list", "a folder"])
def test_a_reference_config_json_that_is_not_settings_is_named_with_the_fix(tmp_path, damage):
    """A list in ``config.json`` was a TypeError traceback; a folder of that name read as a dataset
    "not finished": each is one line naming the file and the fix."""
    shutil.copytree(STORED, tmp_path / "kc2")
    config = tmp_path / "kc2" / "config.json"
    if damage == "a JSON list":
        config.write_text(json.dumps([json.loads(config.read_text())]))
    else:
        config.unlink()
        config.mkdir()
    job = screen.Screen(methods=("random",), reference=tmp_path, compared=("class", "no_pretrain"))
    with pytest.raises(screen.ScreenError) as error:
        screen.plan(job)
    text = str(error.value)
    if damage == "a JSON list":
        assert text == (
            f"screen: {config} holds a JSON list, not a run's settings (an object of setting: value): "
            f"restore it (git checkout -- {config})"
        )
    else:
        assert text.startswith(f"screen: the reference store {tmp_path} has no config.json in kc2 (a finished run ")
        assert "a folder has its name there" in text and "not finished" not in text, text


def test_one_dataset_is_one_dataset_in_the_record_and_the_verdict(tmp_path):
    shutil.copytree(STORED, tmp_path / "kc2")
    timings = json.loads((tmp_path / "kc2" / "timings.json").read_text())
    record = screen.training_record(tmp_path, ["kc2"])
    assert record.startswith(f"training record: the stored results of 1 dataset come from {timings['trained_members']}")
    # a method added to a finished screen: its last run trained 8 members and reused the 24 stored
    timings.update(trained_members=8, reused_members=24)
    (tmp_path / "kc2" / "timings.json").write_text(json.dumps(timings))
    record = screen.training_record(tmp_path, ["kc2"])
    assert (
        "come from 8 members trained in " in record
        and ", and 24 members their last run reused from an earlier one (" in record
    )
    results = pd.read_csv(ROOT / "outputs" / "screen" / "results.csv")
    stored = pd.read_csv(STORED / "results.csv")
    one = pd.concat([results[results.dataset == "kc2"], stored[stored.method.isin(["class", "no_pretrain"])]])
    page = verdict.write(one, ["nearby"], ["class", "no_pretrain"], tmp_path).read_text()
    assert "1 datasets" not in page and "over 1 dataset;" in page and "1 dataset x 8 seeds" in page, page[:2000]
    assert "Friedman over 1 dataset x 3 methods" in page


def test_switching_draws_names_the_other_scheme_s_checkpoint_left_behind(bc_small, tmp_path, capsys):
    from tcclib import Config
    from tcclib.running.train import run_dataset

    cfg = Config(seeds=(11,), methods=("random",), epochs=1, head_epochs=1, progress=False, draws="generator")
    run_dataset(bc_small, cfg, cache_dir=tmp_path, keep_pretrained=True)  # its finished pretraining kept
    (kept,) = (tmp_path / "checkpoints").glob("*.pt")
    capsys.readouterr()
    run_dataset(bc_small, cfg.replace(draws="counter"), cache_dir=tmp_path)
    said = [line for line in capsys.readouterr().out.splitlines() if "draws=" in line]
    assert said == [
        f"bc12: the checkpoint of these members under draws=generator stays in {kept} "
        f"({kept.stat().st_size / 2**20:.1f} MB): it serves only a switch back; delete it if none will come"
    ], said
