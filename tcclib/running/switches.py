"""Which fidelity switch reaches a method on one dataset: the runs, one per switch.

:func:`switch_runs` trains (or takes from stored runs) the methods with our settings, with each
fidelity switch that reaches them set alone to the authors' value, and with all of them
(``fidelity: authors``); :func:`tcclib.paper.report.switch_effects` compares each run with the
paper (it only reads).  ``tools/switch_effects.py`` does both.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tcclib.artifacts.keys import load, run_keys
from tcclib.data.sources import Dataset, load_dataset
from tcclib.method.config import FIDELITY_SWITCHES, Config
from tcclib.method.inputs import prepare_config
from tcclib.running.train import reuse_plan, run_dataset


def switch_configs(ds: Dataset, cfg: Config) -> dict[str, Config]:
    """``{switch: settings}``: ours ("none"), each switch alone at the authors' value when it
    changes some member's content key (:mod:`tcclib.artifacts.keys`: what a member depends on; the
    others cannot change these methods' results), and all of them ("all")."""
    base = run_keys(prepare_config(ds, cfg), cfg).members
    runs = {"none": cfg}
    for name, values in FIDELITY_SWITCHES.items():
        c = cfg.replace(**{name: values["authors"]})
        if run_keys(prepare_config(ds, c), c).members != base:
            runs[name] = c
    runs["all"] = cfg.replace(fidelity="authors")
    return runs


def switch_runs(dataset, methods, cfg=None, data_dir=None, stores=(), say=None) -> dict[str, pd.DataFrame]:
    """``{switch: results}`` of :func:`switch_configs`'s runs of ``methods`` on ``dataset``.

    ``cfg``: the other settings (default: the published ones).  ``stores``: set folders (e.g.
    ``outputs/paper``, ``outputs/authors``) whose stored runs of the dataset are reused where a
    member's key matches, so that ours and the authors' mode need not train again; ``say``: a
    function told, per run, how many members it reused."""
    cfg = (cfg or Config()).replace(methods=list(methods), baselines=[], fidelity="ours")
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, data_dir=data_dir)
    stored = [st for f in stores if (st := load(Path(f) / ds.name)) is not None]

    def best_store(c):  # the stored run with the most members of ``c`` to reuse (None: train them all)
        prep = prepare_config(ds, c)
        keys = run_keys(prep, c)
        hits = [sum(reuse_plan(prep, c, keys, st)[0].values()) for st in stored]  # what run_dataset reuses
        return (stored[hits.index(max(hits))].folder, max(hits)) if hits and max(hits) else (None, 0)

    out = {}
    for switch, c in switch_configs(ds, cfg).items():
        folder, n = best_store(c)
        if say is not None:
            say(
                f"{switch}: {n} of {len(c.seeds) * len(c.methods)} members reused"
                + (f" from {folder}" if folder is not None else "")
            )
        out[switch] = run_dataset(ds, c, store_dir=folder).results
    return out
