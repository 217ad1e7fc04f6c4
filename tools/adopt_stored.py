"""Give results stored before content keys existed their ``keys.json`` (one-off migration).

    python tools/adopt_stored.py params/paper.yaml outputs/paper [--data-dir DIR] [--take-unrecorded]

For every finished dataset of the set's folder that has no ``keys.json`` yet, the settings it
recorded (``config.json``) must equal what the parameter file gives it now, and the data file it
recorded (``data_file``: name and sha256) the file it is read from now; then the keys of the data
and those settings are computed (:mod:`tcclib.artifacts.keys`) and written beside the results, so
that a re-render reuses them instead of training.  Nothing else is changed: no number is touched.

What a folder does not record cannot be compared, so it is not adopted unless
``--take-unrecorded`` takes the parameter file's word for it: the settings of a ``07_ablation``
folder (it records none; the set's settings and :data:`GRID` are then assumed), and the data file
of a run from before ``data_file`` was recorded.  A folder with a ``keys.json`` is left alone:
its keys were computed by the run that made it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tcclib.artifacts import keys as content_keys
from tcclib.artifacts.store import DATA_FILE, same_settings, write_json
from tcclib.data.preprocess import prepare
from tcclib.data.sources import DATA_DIR_ENV, load_dataset, source_file
from tcclib.running import params as param_files
from tcclib.util import paths

GRID = {  # the grid those results were made with (07's default then; no_pretrain joined it later)
    "labeled_fractions": [0.05, 0.1, 0.3, 0.5],
    "corruption_rates": [0.2, 0.4, 0.6],
    "ablation_methods": ["random", "class", "oracle"],
}


def adopt_dataset(ps: param_files.ParamSet, ddir: Path, data_dir=None, take_unrecorded: bool = False) -> str:
    """Adopt the finished folder ``ddir`` of ``ps``'s set (``data_dir``: where its data is read
    from now); returns what was done, one line."""
    if (ddir / content_keys.KEYS_FILE).exists():
        return f"left alone: it has its {content_keys.KEYS_FILE} (keyed by the run that made it)"
    cfg = ps.config_for(ddir.name)
    ds = load_dataset(ps.spec(ddir.name))
    if "07_ablation" in ps.per_dataset_notebooks:
        if not take_unrecorded:
            return (
                "NOT adopted: a 07_ablation folder records no settings to compare with the parameter file's "
                "(--take-unrecorded assumes they are the set's and GRID's)"
            )
        from tcclib.running.ablation import grid_key

        key = grid_key(ds, cfg, GRID["labeled_fractions"], GRID["corruption_rates"], GRID["ablation_methods"])
        write_json({"version": 1, "grid": key}, ddir / content_keys.KEYS_FILE)
        return "grid adopted (its settings assumed: --take-unrecorded)"
    data_file = source_file(ps.spec(ddir.name), data_dir)
    same, why = same_settings(ddir / "config.json", cfg, data_file)
    if not same:
        return f"NOT adopted: recorded settings differ ({why})"
    recorded = json.loads((ddir / "config.json").read_text())
    if not isinstance(recorded.get(DATA_FILE), dict) and data_file is not None and not take_unrecorded:
        return (
            f"NOT adopted: its config.json records no data file to compare with {Path(data_file).name} "
            "(--take-unrecorded assumes it is the same)"
        )
    cfg = cfg.replace(keep_embeddings=bool(recorded.get("keep_embeddings", cfg.keep_embeddings)))
    prep = prepare(ds, cfg.seeds, cfg.test_fraction, cfg.labeled_fraction)
    keys = content_keys.run_keys(prep, cfg)
    results = content_keys._csv(ddir / "results.csv", ["seed", "method"])
    for tag in [*keys.members, *keys.baselines]:
        seed, name = tag.split("/")
        if not ((results.seed == int(seed)) & (results.method == name)).any():
            return f"NOT adopted: no stored row for {tag}"
    ranges = content_keys._csv(ddir / "corr_range.csv", ["seed", "corr_range"])
    have = set(ranges.seed) if len(ranges) else set()
    keys.importance = {s: k for s, k in keys.importance.items() if int(s) in have}
    if (ddir / "embeddings.npz").exists():
        from tcclib.artifacts.store import load_embeddings

        stored = load_embeddings(ddir / "embeddings.npz")
        keys.embeddings = {m: k for m, k in keys.embeddings.items() if m in stored}
    else:
        keys.embeddings = {}
    write_json(keys.to_json(), ddir / content_keys.KEYS_FILE)
    return (
        f"adopted: {len(keys.members)} members, {len(keys.baselines)} baselines, "
        f"{len(keys.importance)} correlation ranges, embeddings of {len(keys.embeddings)} methods"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("params")
    ap.add_argument("set_dir")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument(
        "--take-unrecorded",
        action="store_true",
        help="adopt also what a folder does not record (an ablation folder's settings, an old run's data file)",
    )
    a = ap.parse_args(argv)
    ps = param_files.load(a.params)
    data_dir = a.data_dir or os.environ.get(DATA_DIR_ENV) or ps.data_dir
    if data_dir:
        os.environ[DATA_DIR_ENV] = str(paths.resolve(data_dir))
    set_dir = paths.resolve(a.set_dir)
    for d in ps.datasets:
        ddir = set_dir / d
        if (ddir / "_DONE.json").exists():
            print(f"{d}: {adopt_dataset(ps, ddir, data_dir, a.take_unrecorded)}", flush=True)
        else:
            print(f"{d}: not finished, skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
