"""tcclib's own training code is keyed by its value: an edit TRAIN_VERSION does not know retrains.

The recorded code is the code here (a contributor who edits training code records it, or bumps
TRAIN_VERSION); an edit of a built-in's file with TRAIN_VERSION as it was gives every key of a
run the code's digest, so nothing stored under the recorded code comes back, and the run names
the file; a comment or a docstring keeps the keys; a file edited after the process imported it
is refused in one line.  The edits here are real ones, on a copy of the package in a fresh
process; ``tools/record_training_code.py --check`` (a small run under two revisions, bit for
bit) is a contributor's command, run by hand.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import scripts

from tcclib.artifacts import keys, own_code, recorded_code, store
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config
from tcclib.running import sweep
from tcclib.running.folders import SweepError
from tcclib.running.train import run_dataset

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(seeds=(0, 1), epochs=1, head_epochs=1, hidden_dim=16, progress=False)


def test_the_recorded_training_code_is_the_code_here():
    changed = own_code.changed_files()
    assert not changed, (
        f"tcclib's training code differs from the code recorded for TRAIN_VERSION {recorded_code.TRAIN_VERSION}: "
        f"{', '.join(changed)}. If it computes the same numbers, `python tools/record_training_code.py --check "
        "--record` shows it and records it; if not, bump TRAIN_VERSION in tcclib/artifacts/keys.py and "
        "`python tools/record_training_code.py --record`"
    )
    assert recorded_code.TRAIN_VERSION == keys.TRAIN_VERSION, "TRAIN_VERSION was bumped: record the code (--record)"
    assert set(recorded_code.DIGESTS) == {path.relative_to(own_code.PACKAGE).as_posix() for path in own_code.files()}


def test_an_edited_training_code_retrains_every_member_and_says_so(bc, tmp_path, monkeypatch):
    cfg = Config(methods=("random", "vime"), baselines=("logreg",), **TINY)
    first = run_dataset(bc, cfg, store_dir=tmp_path)
    store.save_run(first, tmp_path)
    assert run_dataset(bc, cfg, store_dir=tmp_path).timings["trained_members"] == 0
    assert store.OWN_CODE not in json.loads((tmp_path / "config.json").read_text())

    monkeypatch.setitem(recorded_code.DIGESTS, "method/rules.py", "0" * 16)
    monkeypatch.setitem(recorded_code.BYTES, "method/rules.py", "0" * 16)
    own_code._digest.cache_clear()
    prep = prepare_config(bc, cfg)
    now = keys.run_keys(prep, cfg)
    for kind in ("members", "baselines", "importance"):
        assert not set(getattr(now, kind).values()) & set(getattr(first.keys, kind).values()), kind
    same, why = store.same_settings(tmp_path / "config.json", cfg)
    assert not same and why == "tcclib's training code changed (tcclib/method/rules.py edited)"
    said = sweep.skipped_line(tmp_path.parent, tmp_path.name, why)
    assert said.endswith("brings it up to date, training every member again (tcclib's training code is in every key)")
    again = run_dataset(bc, cfg, store_dir=tmp_path)
    assert again.timings["trained_members"] == 4
    assert again.code_notes[0].startswith("tcclib's own training code differs from the code recorded for TRAIN_VERSION")
    assert "tcclib/method/rules.py" in again.code_notes[0]
    assert store.settings_record(cfg)[store.OWN_CODE].startswith("code:")

    monkeypatch.undo()
    own_code._digest.cache_clear()
    assert keys.run_keys(prep, cfg).members == first.keys.members
    assert store.same_settings(tmp_path / "config.json", cfg) == (True, "")


PROBE = """
import json
import os
import sys
import time

import tcclib
from tcclib.artifacts import keys, own_code
from tcclib.data.sources import load_dataset
from tcclib.method.config import Config
from tcclib.method.inputs import prepare_config

cfg = Config(methods=("random", "class"), seeds=(0,), epochs=1, progress=False)
prep = prepare_config(load_dataset("breast_cancer"), cfg)
print("FROM", tcclib.__file__)
print("KEYS", json.dumps(sorted(keys.run_keys(prep, cfg).members.values())))
print("CHANGED", json.dumps(own_code.changed_files()))
if len(sys.argv) > 1:  # write a training file back as it was, then edit it, after the import
    path = own_code.PACKAGE / "method" / "rules.py"
    path.write_bytes(path.read_bytes())
    os.utime(path, (time.time() + 5, time.time() + 5))  # (a later time, whatever the clock's resolution)
    print("RESTORED", json.dumps(sorted(keys.run_keys(prep, cfg).members.values())))
    path.write_text(path.read_text() + "\\nEDITED_AFTER_IMPORT = 1\\n")
    try:
        keys.run_keys(prep, cfg)
    except Exception as error:
        print("REFUSED", type(error).__name__, str(error))
"""


def _probe(package_root: Path, *args: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=package_root,
        env={"PYTHONPATH": str(package_root), "HOME": str(package_root), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.split(" ", 1)[0].isupper())


def test_real_edits_of_a_builtin_rule_on_a_copy_of_the_package(tmp_path):
    shutil.copytree(ROOT / "tcclib", tmp_path / "tcclib", ignore=shutil.ignore_patterns("__pycache__"))
    rules = tmp_path / "tcclib" / "method" / "rules.py"
    text = rules.read_text()
    line = "    return torch.where(mask, donor_vals, raw)\n"
    assert line in text
    rules.write_text(
        text.replace(line, "    # the donor's value where the mask says so\n" + line).replace(
            '"""The view: anchor values', '"""The corrupted view: anchor values'
        )
    )
    as_recorded = _probe(tmp_path, "edit-after-import")
    assert as_recorded["FROM"] == str(tmp_path / "tcclib" / "__init__.py")
    assert as_recorded["CHANGED"] == "[]"  # a comment and a docstring change no key
    assert as_recorded["RESTORED"] == as_recorded["KEYS"]  # written back with its bytes: the code that runs
    assert as_recorded["REFUSED"].startswith(
        "Unkeyable tcclib's training code: tcclib/method/rules.py changed on disk since this process imported it"
    )
    assert "restart the kernel" in as_recorded["REFUSED"] and "\n" not in as_recorded["REFUSED"]

    rules.write_text(text.replace(line, "    return torch.where(mask, donor_vals, raw).neg().neg()\n"))
    edited = _probe(tmp_path)
    assert json.loads(edited["CHANGED"]) == ["tcclib/method/rules.py"]
    assert not set(json.loads(edited["KEYS"])) & set(json.loads(as_recorded["KEYS"]))  # every member trains again

    rules.write_text(text)
    assert _probe(tmp_path)["KEYS"] == as_recorded["KEYS"]


def test_the_tool_says_the_code_is_the_recorded_one(capsys):
    tool = scripts.load("tools/record_training_code.py")
    assert tool.main([]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"the training code is the code recorded for TRAIN_VERSION {keys.TRAIN_VERSION}")


def test_the_tools_check_leaves_out_only_the_methods_of_a_revised_objective(tmp_path):
    """--check compares every method's rows but those whose built-in objective's revision was
    raised (their members train again under new keys); any other difference is reported."""
    tool = scripts.load("tools/record_training_code.py")
    header = "dataset,did,seed,method,accuracy\n"
    for side, subtab in (("before", "0.5"), ("after", "0.6")):
        folder = tmp_path / side / "mixed"
        folder.mkdir(parents=True)
        (folder / "results.csv").write_text(header + f"mixed,,0,random,0.7\nmixed,,0,subtab,{subtab}\n")
    (tmp_path / "before" / "objectives.json").write_text('{"random": {}, "subtab": {}}')
    (tmp_path / "after" / "objectives.json").write_text('{"random": {}, "subtab": {"objective:subtab": "revision:2"}}')
    before, after = tmp_path / "before", tmp_path / "after"
    assert tool.revised(before, after) == ["subtab"]
    assert tool.differences(before, after) == ["mixed/results.csv"]  # (everything compared)
    assert tool.differences(before, after, {"subtab"}) == []
    (after / "mixed" / "results.csv").write_text(header + "mixed,,0,random,0.8\nmixed,,0,subtab,0.6\n")
    assert tool.differences(before, after, {"subtab"}) == ["mixed/results.csv"]  # another method's rows moved


# --------------------------------------------------------------------------- set in this process


def _set(owner, name, value):
    """Set ``owner.name`` (``name`` an int: an item in place); returns what puts it back."""
    if isinstance(name, int):
        before = owner[name]
        owner[name] = value
        return lambda: owner.__setitem__(name, before)
    had = name in vars(owner) or name.startswith("__")  # (a function's __defaults__ is not in its __dict__)
    before = getattr(owner, name) if had else None
    setattr(owner, name, value)
    return lambda: setattr(owner, name, before) if had else delattr(owner, name)


SET_HERE = {  # (what the run names, what sets it): values of tcclib's training code set after the import
    "a module's constant": ("tcclib.method.rules.VIEW", lambda m: _set(m.rules, "VIEW", 512)),
    "a class attribute": ("tcclib.method.objectives.NTXent.views", lambda m: _set(m.objectives.NTXent, "views", 2)),
    "a base class's attribute": (
        "tcclib.method.objectives.Objective.views",
        lambda m: _set(m.objectives.Objective, "views", 2),
    ),
    "a function's default": (
        "tcclib.method.rules.correlation_mask",
        lambda m: _set(m.rules.correlation_mask, "__defaults__", (0.5, "sum", None)),
    ),
    "an array's item, in place": ("tcclib.method.probe.STRENGTHS", lambda m: _set(m.probe.STRENGTHS, 0, 5.0)),
    "a function replaced": ("tcclib.method.losses.nt_xent_pairs", lambda m: _set(m.losses, "nt_xent_pairs", _halved)),
}


def _halved(z, temperature=1.0):
    """NT-Xent at half its value: a replacement (here keyed, never trained)."""
    from tcclib.method import losses

    return 0.5 * losses.nt_xent_pairs_reference(z, temperature)


@pytest.mark.parametrize("edit", list(SET_HERE))
def test_a_value_of_the_training_code_set_in_this_process_moves_every_key_and_a_sweep_refuses_it(edit, bc):
    """A value set after ``import tcclib`` (what its file does not say) keys every member by it,
    is named, and stops a sweep (whose kernels import tcclib afresh) in one line; put back, the
    keys return."""
    from tcclib.method import losses, objectives, probe, rules

    named, make = SET_HERE[edit]
    cfg = Config(methods=("random", "class"), **TINY)
    prep = prepare_config(bc, cfg)
    before = keys.run_keys(prep, cfg)
    assert own_code.set_in_process() == {} and before.own is None
    undo = make(types.SimpleNamespace(rules=rules, objectives=objectives, probe=probe, losses=losses))
    try:
        now = keys.run_keys(prep, cfg)
        assert now.edited == [f"{named} set in this process"]
        for kind in ("members", "importance"):
            assert not set(getattr(now, kind).values()) & set(getattr(before, kind).values()), kind
        with pytest.raises(
            SweepError,
            match=rf"^{re.escape(named)}: set in this process after tcclib imported it \(by a cell, a script or a "
            r"plugin\), but a sweep runs tcclib as its files say",
        ):
            sweep.check_keyable(types.SimpleNamespace(config=cfg))
    finally:
        undo()
    assert own_code.set_in_process() == {}
    assert keys.run_keys(prep, cfg).members == before.members
    assert sweep.check_keyable(types.SimpleNamespace(config=cfg)) == {}


def test_a_constant_set_again_to_its_value_or_an_attribute_restored_onto_the_instance_keeps_the_keys(bc):
    """What behaves as the file says keys as it: a constant or an array set to an equal value, a built-in's
    attribute set on the instance to its class's own value (what pytest < 9.2's monkeypatch.undo
    leaves behind), and a class attribute set on a subclass to the value it inherits."""
    from tcclib.method import objectives, probe, registry, rules

    cfg = Config(methods=("random", "class"), **TINY)
    prep = prepare_config(bc, cfg)
    before = keys.run_keys(prep, cfg).members
    ntxent = registry.objective("ntxent")
    undo = [
        _set(rules, "VIEW", int(str(rules.VIEW))),
        _set(probe, "STRENGTHS", probe.STRENGTHS.copy()),
        _set(ntxent, "views", type(ntxent).views),
        _set(objectives.DenoisingAutoencoder, "views", objectives.Objective.views),  # (inherited until now)
    ]
    try:
        assert "views" in vars(ntxent) and own_code.set_in_process() == {}
        assert keys.run_keys(prep, cfg).members == before
        assert sweep.check_keyable(types.SimpleNamespace(config=cfg)) == {}
    finally:
        for step in undo:
            step()


def test_a_run_names_the_value_set_in_this_process_and_trains_again(bc, tmp_path):
    from tcclib.method import rules

    cfg = Config(methods=("random",), **TINY)
    store.save_run(run_dataset(bc, cfg, store_dir=tmp_path), tmp_path)
    undo = _set(rules, "VIEW", 512)
    try:
        same, why = store.same_settings(tmp_path / "config.json", cfg)
        assert not same and why == "tcclib's training code changed (tcclib.method.rules.VIEW set in this process)"
        again = run_dataset(bc, cfg, store_dir=tmp_path)
        assert again.timings["trained_members"] == 2
        assert "(tcclib.method.rules.VIEW set in this process)" in again.code_notes[0]
    finally:
        undo()
    assert run_dataset(bc, cfg, store_dir=tmp_path).timings["trained_members"] == 0
