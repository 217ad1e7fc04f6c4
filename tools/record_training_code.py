"""Is tcclib's training code the code recorded for TRAIN_VERSION, and does an edit of it keep the numbers?

    python tools/record_training_code.py                  # which files differ from the recorded code
    python tools/record_training_code.py --check          # a small run under HEAD's code and this one, bit for bit
    python tools/record_training_code.py --check --record # ... and, when they are the same, record this code
    python tools/record_training_code.py --record         # after a TRAIN_VERSION bump: record the code as it is

A stored result is reused when its key matches; tcclib's own code enters a key as
``TRAIN_VERSION`` while the training code is the one recorded for it
(``tcclib/artifacts/recorded_code.py``), and as the digest of the code as it is when not
(``tcclib/artifacts/own_code.py``): an edit the record does not know retrains everything it
touches.  After editing that code, a contributor either shows that it computes the same numbers
(``--check``: every built-in method and baseline on two small tables, 2 seeds, 3 epochs with a
pseudo-label refresh, under the code of ``--against`` (a git worktree, default HEAD) and under
this checkout, in two processes on this machine; the stored results, histories and pseudo-label
accuracies compared byte for byte) and records it, or bumps ``TRAIN_VERSION`` in
``tcclib/artifacts/keys.py`` and records (the committed results then train again).  An edit that
changes one built-in objective's numbers alone raises that objective's ``revision`` instead
(:func:`tcclib.method.objectives.revision`): ``--check`` leaves its methods' rows out and compares
every other method's, and only its members train again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tcclib.artifacts import keys, own_code, recorded_code  # noqa: E402

COMPARED = ("results.csv", "history.csv", "pseudo.csv")
"""The stored files of the probe run compared byte for byte."""

PROBE = r"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tcclib.artifacts import store
from tcclib.data.sources import from_frame, load_dataset
from tcclib.method import registry
from tcclib.method.config import Config
from tcclib.running.train import run_dataset


def mixed():
    g = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame(
        {
            "a": g.normal(size=n),
            "b": g.normal(size=n),
            "colour": g.choice(["red", "green", "blue", "grey"], size=n),
            "flag": g.choice(["yes", "no"], size=n),
            "d": g.integers(0, 5, size=n).astype(float),
        }
    )
    X.loc[g.random(n) < 0.05, "b"] = np.nan
    y = ((X["a"] + (X["colour"] == "red")) > 0.3).astype(int) + (X["d"] > 3).astype(int)
    return from_frame(X, y, name="mixed")


out = Path(sys.argv[1])
BUILT_IN = "tcclib.method.builtins"
own = tuple(name for name in registry.METHODS if registry.get(name).origin == BUILT_IN)
baselines = tuple(name for name in registry.BASELINES if registry.get(name).origin == BUILT_IN)
cfg = Config(
    methods=own, baselines=baselines, seeds=(0, 1), epochs=3, head_epochs=3, hidden_dim=16, pseudo_every=2,
    progress=False,
)
for dataset in (mixed(), load_dataset("breast_cancer")):
    run = run_dataset(dataset, cfg)
    store.save_run(run, out / dataset.name)
objectives = {name: registry.get(name).spec.objective_codes() for name in own}
(out / "objectives.json").write_text(json.dumps(objectives, sort_keys=True))
print(len(own), "methods,", len(baselines), "baselines")
"""


def status() -> list[str]:
    """Which files of the training code differ from the recorded code (empty: none)."""
    return own_code.changed_files()


def probe(tree: Path, out: Path) -> None:
    """The probe run under the code of ``tree``, stored in ``out``."""
    env = {k: v for k, v in os.environ.items() if k != "TCC_PLUGINS"}  # (tcclib's own methods only)
    env |= {"PYTHONPATH": str(tree), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out)], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"record_training_code: the probe run under {tree} failed: {tail[0]}")


def revised(before: Path, after: Path) -> list[str]:
    """The built-in methods whose objective is keyed differently in ``after`` (a built-in
    objective's ``revision`` raised, :func:`tcclib.method.objectives.revision`): their members
    train again under their new keys, so their numbers may differ."""
    old, new = (json.loads((side / "objectives.json").read_text()) for side in (before, after))
    return sorted(name for name in old.keys() & new.keys() if old[name] != new[name])


def _rows(path: Path, leave_out: set[str]) -> list[bytes] | None:
    """The lines of a stored CSV as bytes, less those of the methods ``leave_out`` (None: no file)."""
    if not path.exists():
        return None
    lines = path.read_bytes().split(b"\n")
    header = lines[0].split(b",")
    if not leave_out or b"method" not in header:
        return lines
    column, left_out = header.index(b"method"), {name.encode() for name in leave_out}

    def method(line: bytes) -> bytes | None:
        fields = line.split(b",")
        return fields[column] if column < len(fields) else None  # (None: the empty last line)

    return [lines[0]] + [line for line in lines[1:] if method(line) not in left_out]


def differences(before: Path, after: Path, leave_out: set[str] = frozenset()) -> list[str]:
    """The probe's stored files that are not the same bytes in ``before`` and ``after``, the rows
    of the methods ``leave_out`` left out."""
    out = []
    for folder in sorted(p.name for p in before.iterdir() if p.is_dir()):
        for name in COMPARED:
            if _rows(before / folder / name, leave_out) != _rows(after / folder / name, leave_out):
                out.append(f"{folder}/{name}")
    return out


def check(against: str) -> tuple[list[str], list[str]]:
    """The probe run under ``against``'s code (a git worktree) and under this checkout: the files
    that differ (empty: the same bits), every method's rows compared but those whose objective's
    revision was raised (:func:`revised`, the second list)."""
    with tempfile.TemporaryDirectory(prefix="tcc-record-") as tmp:
        tmp = Path(tmp)
        worktree = tmp / "against"
        made = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), against],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode:
            raise SystemExit(f"record_training_code: no worktree of {against!r}: {made.stderr.strip()}")
        try:
            probe(worktree, tmp / "before")
            probe(ROOT, tmp / "after")
            retrained = revised(tmp / "before", tmp / "after")
            return differences(tmp / "before", tmp / "after", set(retrained)), retrained
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)


def record() -> None:
    path = ROOT / "tcclib" / "artifacts" / "recorded_code.py"
    path.write_text(own_code.record_text(keys.TRAIN_VERSION))
    print(f"recorded the training code for TRAIN_VERSION {keys.TRAIN_VERSION} in {path.relative_to(ROOT)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="a small run under --against's code and this one")
    parser.add_argument("--against", default="HEAD", help="the git revision --check compares with (default HEAD)")
    parser.add_argument("--record", action="store_true", help="record the code as it is (see the module's text)")
    args = parser.parse_args(argv)
    changed = status()
    bumped = recorded_code.TRAIN_VERSION != keys.TRAIN_VERSION
    if not changed and not bumped:
        count = len(own_code.files())
        print(f"the training code is the code recorded for TRAIN_VERSION {keys.TRAIN_VERSION} ({count} files)")
    elif changed:
        print(f"differs from the code recorded for TRAIN_VERSION {recorded_code.TRAIN_VERSION}: {', '.join(changed)}")
    same = None
    if args.check:
        found, retrained = check(args.against)
        same = not found
        if retrained:
            print(f"a raised objective revision: {', '.join(retrained)} train again under new keys (not compared)")
        print(
            f"the same bits as under {args.against}: every built-in method and baseline on two small tables"
            + (" but those" if retrained else "")
            if same
            else f"NOT the same bits as under {args.against}: {', '.join(found)}: bump TRAIN_VERSION in "
            "tcclib/artifacts/keys.py, then --record"
        )
    if args.record:
        if changed and not bumped and not same:
            print(
                "not recorded: show the numbers are the same first (--check --record), or bump TRAIN_VERSION in "
                "tcclib/artifacts/keys.py (the committed results then train again)"
            )
            return 1
        record()
    elif changed or bumped:
        print("then: --check --record when the numbers are the same; else bump TRAIN_VERSION and --record")
    return 0 if (same is not False) else 1


if __name__ == "__main__":
    raise SystemExit(main())
