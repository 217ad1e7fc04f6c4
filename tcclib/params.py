"""Parameter sets (``params/*.yaml``): loaded and fully validated before anything runs.

A set names the datasets to run, the settings (:class:`tcclib.config.Config` fields, checked
for name, type and range) and the notebooks.  Example::

    name: smoke
    description: three small datasets, few epochs
    datasets: [breast_cancer, 11, diabetes]     # names or OpenML ids, or "all"
    config: {seeds: [614579, 336466], epochs: 5}
    keep_embeddings: [breast_cancer]
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .config import Config, ConfigError
from .datasets import list_datasets, resolve

PER_DATASET_NOTEBOOKS = ("01_data_prep", "02_correlation", "03_pretraining")
AGGREGATE_NOTEBOOKS = ("04_evaluation", "05_figures")
REPORT_NOTEBOOKS = ("06_report",)
ABLATION_NOTEBOOKS = ("07_ablation",)
KEYS = ("name", "description", "datasets", "config", "data_dir", "keep_embeddings",
        "per_dataset_notebooks", "aggregate_notebooks", "workers", "figure_dataset")


class ParamsError(ConfigError):
    """A parameter file is malformed."""


@dataclass
class ParamSet:
    name: str
    datasets: list[str]
    config: Config
    description: str = ""
    data_dir: str | None = None
    keep_embeddings: list[str] = field(default_factory=list)
    per_dataset_notebooks: tuple[str, ...] = PER_DATASET_NOTEBOOKS
    aggregate_notebooks: tuple[str, ...] = AGGREGATE_NOTEBOOKS
    workers: int = 1
    figure_dataset: str = "breast_cancer"
    path: Path | None = None

    def config_for(self, dataset: str) -> Config:
        """The settings of one dataset (embeddings kept only where asked)."""
        return self.config.replace(keep_embeddings=dataset in self.keep_embeddings)


def dataset_names(items, where: str) -> list[str]:
    out = []
    for it in items:
        try:
            out.append(resolve(it)[0])
        except ValueError as e:
            raise ParamsError(f"{where}: {e}") from None
    if len(set(out)) != len(out):
        raise ParamsError(f"{where}: a dataset is listed twice")
    return out


def parse(d: dict[str, Any], path: Path | None = None) -> ParamSet:
    where = str(path) if path else "params"
    if not isinstance(d, dict):
        raise ParamsError(f"{where}: expected a mapping at the top level")
    for k in d:
        if k not in KEYS:
            close = difflib.get_close_matches(str(k), KEYS, n=1)
            raise ParamsError(f"{where}: unknown key {k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if not isinstance(d.get("name"), str) or not d["name"].isidentifier():
        raise ParamsError(f"{where}: 'name' must be a simple identifier (letters, digits, _)")
    ds = d.get("datasets")
    if ds == "all":
        ds = [n for n in list_datasets().name if n != "breast_cancer"]
    if not isinstance(ds, list) or not ds:
        raise ParamsError(f"{where}: 'datasets' must be a non-empty list or 'all'")
    datasets = dataset_names(ds, f"{where}: datasets")
    try:
        cfg = Config.from_dict(d.get("config") or {})
    except (ConfigError, TypeError) as e:
        raise ParamsError(f"{where}: config: {e}") from None
    keep = dataset_names(d.get("keep_embeddings") or [], f"{where}: keep_embeddings")
    if d.get("data_dir") is not None and not isinstance(d.get("data_dir"), str):
        raise ParamsError(f"{where}: 'data_dir' must be a folder path (relative to the repository root)")
    if not isinstance(d.get("description", ""), str):
        raise ParamsError(f"{where}: 'description' must be text")
    workers = d.get("workers", 1)
    if not isinstance(workers, int) or workers < 1:
        raise ParamsError(f"{where}: 'workers' must be a positive integer")
    per = tuple(d.get("per_dataset_notebooks", PER_DATASET_NOTEBOOKS))
    agg = tuple(d.get("aggregate_notebooks", AGGREGATE_NOTEBOOKS))
    for nb in per + agg:
        if nb not in PER_DATASET_NOTEBOOKS + AGGREGATE_NOTEBOOKS + REPORT_NOTEBOOKS + ABLATION_NOTEBOOKS:
            raise ParamsError(f"{where}: unknown notebook {nb!r}")
    fig = d.get("figure_dataset", "breast_cancer")
    fig = dataset_names([fig], f"{where}: figure_dataset")[0]
    return ParamSet(name=d["name"], datasets=datasets, config=cfg, description=d.get("description", ""),
                    data_dir=d.get("data_dir"), keep_embeddings=keep, per_dataset_notebooks=per,
                    aggregate_notebooks=agg, workers=workers, figure_dataset=fig, path=path)


def load(path: str | Path) -> ParamSet:
    """Read and validate a parameter file; a clear :class:`ParamsError` on any mistake."""
    path = Path(path)
    if not path.exists():
        raise ParamsError(f"no parameter file {path}")
    try:
        d = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ParamsError(f"{path}: not valid YAML: {e}") from None
    return parse(d, path)
