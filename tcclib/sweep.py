"""Run a parameter set: the per-dataset notebooks for every dataset, then the aggregate ones.

    python -m tcclib.sweep params/demo.yaml
    python -m tcclib.sweep params/paper.yaml --workers 2 --data-dir ../shared/datasets/openml-cc18
    python -m tcclib.sweep params/smoke.yaml --force credit-g   # redo one dataset

Each dataset's notebooks are executed with papermill into ``outputs/<set>/<dataset>/``; a
``_DONE.json`` marker, written last and atomically, marks a finished dataset, which a later run
skips (unless ``--force``); it records the wall time of the last stretch and the pretraining time
over all stretches (``pretrain_s``; ``resumed_at_epoch`` when pretraining resumed from the
checkpoint an interrupted run left under ``outputs/.cache/checkpoints``).  A dataset that fails
gets a ``_FAILED.json`` with its error, the others go on, and the failures are listed at the end
(exit status 1).  Interrupting the sweep loses nothing already finished.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import params as P
from . import store
from .datasets import DATA_DIR_ENV

ROOT = Path(__file__).resolve().parents[1]


def share_tcclib_with_kernels() -> None:
    """Let the kernels papermill starts import this very tcclib, even from a source checkout that
    is not installed (or whose editable install points at another copy): the checkout's root
    goes first on ``PYTHONPATH``, which the kernels inherit. An installed package is left alone."""
    if not (ROOT / "pyproject.toml").exists():
        return
    rest = [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x and x != str(ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *rest])


def machine() -> str:
    """The CPU and torch build a dataset ran on (floats round differently between CPUs, so a
    result's provenance names them), e.g. ``AMD EPYC, 2 cores, torch 2.13.0+cpu (AVX2)``."""
    import platform

    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    dev = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return (f"{cpu}, {os.cpu_count()} cores{dev}, torch {torch.__version__} "
            f"({torch.backends.cpu.get_cpu_capability()})")


def notebook_dir() -> Path:
    return Path(os.environ.get("TCC_NOTEBOOKS", ROOT / "notebooks"))


def _nb_path(name: str) -> Path:
    hits = sorted(notebook_dir().glob(f"{name}*.ipynb"))
    if not hits:
        raise FileNotFoundError(f"notebook {name}*.ipynb not found in {notebook_dir()}")
    return hits[0]


def _execute(nb: str, out: Path, parameters: dict, cwd: Path) -> None:
    import papermill as pm

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.running.ipynb")
    try:
        pm.execute_notebook(str(_nb_path(nb)), str(tmp), parameters=parameters, cwd=str(cwd),
                            progress_bar=False, kernel_name="python3")
    finally:
        if tmp.exists():
            os.replace(tmp, out)  # keep the rendered notebook, failed or not


def run_dataset_notebooks(ps: P.ParamSet, dataset: str, out_root: Path) -> float:
    set_dir = out_root / ps.name
    ddir = set_dir / dataset
    t = time.perf_counter()
    for marker in ("_DONE.json", "_FAILED.json"):
        (ddir / marker).unlink(missing_ok=True)
    # a sweep renders the record afresh: 03_pretraining would otherwise compare its run with the
    # results of the earlier render it replaces (that check is for re-executions: nbval, users)
    (ddir / "results.csv").unlink(missing_ok=True)
    # paths relative to the notebook's own folder (papermill runs it there), so that a rendered
    # notebook re-executes anywhere (nbval, a clone elsewhere); the data folder comes from the
    # environment ($TCC_DATA_DIR), never from a path baked into the notebook
    ddir.mkdir(parents=True, exist_ok=True)
    params = dict(dataset=dataset, set_name=ps.name, output_dir=".", data_dir=None,
                  config=ps.config_for(dataset).to_dict(),
                  cache_dir=os.path.relpath(out_root / ".cache", ddir))
    try:
        for nb in ps.per_dataset_notebooks:
            _execute(nb, ddir / f"{nb}.ipynb", params, ddir)
    except BaseException as e:
        store.write_json({"dataset": dataset, "error": f"{type(e).__name__}: {str(e)[:2000]}",
                          "traceback": traceback.format_exc()[-8000:],
                          "at": _dt.datetime.now().isoformat(timespec="seconds")}, ddir / "_FAILED.json")
        raise
    secs = time.perf_counter() - t
    done = {"dataset": dataset, "seconds": round(secs, 1),
            "finished": _dt.datetime.now().isoformat(timespec="seconds"), "machine": machine()}
    tfile = ddir / "timings.json"
    if tfile.exists():  # pretraining time over all stretches, when resumed from a checkpoint
        tim = json.loads(tfile.read_text())
        done.update({k: tim[k] for k in ("pretrain_s", "resumed_at_epoch") if k in tim})
    store.write_json(done, ddir / "_DONE.json")
    return secs


def run_aggregate(ps: P.ParamSet, out_root: Path) -> None:
    set_dir = out_root / ps.name
    for nb in ps.aggregate_notebooks:
        _execute(nb, set_dir / f"{nb}.ipynb",
                 dict(set_name=ps.name, set_dir=".", figure_dataset=ps.figure_dataset),
                 set_dir)


def write_index(ps: P.ParamSet, out_root: Path) -> Path:
    """``outputs/<set>/index.md``: links to every rendered notebook, result and figure."""
    set_dir = out_root / ps.name
    st = store.status(set_dir)
    lines = [f"# Outputs of the `{ps.name}` parameter set", "", ps.description.strip(), "",
             f"Settings: `{ps.path}`" if ps.path else "", "", "## Aggregate", ""]
    for nb in ps.aggregate_notebooks:
        if (set_dir / f"{nb}.ipynb").exists():
            lines.append(f"- [{nb}]({nb}.ipynb)")
    for sub in ("results", "figures"):
        files = sorted((set_dir / sub).glob("*")) if (set_dir / sub).exists() else []
        if files:
            lines += ["", f"## {sub.capitalize()}", ""]
            lines += [f"- [{f.name}]({sub}/{f.name})" for f in files if f.suffix in (".csv", ".md", ".png", ".pdf")]
    lines += ["", "## Datasets", "", "| dataset | status | notebooks |", "| --- | --- | --- |"]
    for _, r in st.iterrows():
        # an incomplete dataset's notebooks are partial renders, rewritten when it resumes: no links
        nbs = " ".join(f"[{nb[:2]}]({r.dataset}/{nb}.ipynb)" for nb in ps.per_dataset_notebooks
                       if r.status != "incomplete" and (set_dir / r.dataset / f"{nb}.ipynb").exists())
        err = f" ({r.error[:120]})" if r.error else ""
        lines.append(f"| {r.dataset} | {r.status}{err} | {nbs} |")
    return store.write_text("\n".join(lines) + "\n", set_dir / "index.md")


def sweep(ps: P.ParamSet, out_root: Path, data_dir: str | None = None, workers: int | None = None,
          force: list[str] | None = None, progress: bool = True, aggregate: bool = True,
          only: list[str] | None = None) -> dict:
    """Run the set; returns ``{"done": [...], "skipped": [...], "failed": {dataset: error}}``.

    ``only``: run just these datasets of the set now (the others stay pending)."""
    out_root = Path(out_root)
    data_dir = data_dir or ps.data_dir or os.environ.get(DATA_DIR_ENV)
    if data_dir:
        data_dir = str(Path(data_dir).resolve())
        os.environ[DATA_DIR_ENV] = data_dir
    workers = workers or ps.workers
    share_tcclib_with_kernels()
    store.write_json(ps.datasets, out_root / ps.name / "datasets.json")
    force_all = force == ["all"]
    todo, skipped = [], []
    chosen = P.dataset_names(only, "--only") if only else None
    for d in ps.datasets:
        if chosen is not None and d not in chosen:
            continue
        done = (out_root / ps.name / d / "_DONE.json").exists()
        if done and not (force_all or (force and d in force)):
            skipped.append(d)
        else:
            todo.append(d)
    if workers > 1:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    failed, done = {}, []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(todo) + len(skipped), initial=len(skipped), desc=f"sweep {ps.name}", unit="dataset")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futs = {pool.submit(run_dataset_notebooks, ps, d, out_root): d for d in todo}
        for f in as_completed(futs):
            d = futs[f]
            try:
                secs = f.result()
                done.append(d)
                msg = f"{d}: done in {secs:.0f} s"
            except Exception as e:  # noqa: BLE001 - recorded in _FAILED.json, reported at the end
                failed[d] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
                msg = f"{d}: FAILED"
            if bar is not None:
                bar.update(1)
                bar.write(msg)
    if bar is not None:
        bar.close()
    if aggregate and (done or skipped):
        run_aggregate(ps, out_root)
    write_index(ps, out_root)
    return {"done": done, "skipped": skipped, "failed": failed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcclib.sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("params", help="parameter file, e.g. params/demo.yaml")
    ap.add_argument("--outputs", default=str(ROOT / "outputs"), help="output root (default: outputs/)")
    ap.add_argument("--data-dir", default=None, help=f"folder of <did>.arff files (default ${DATA_DIR_ENV})")
    ap.add_argument("--workers", type=int, default=None, help="datasets run in parallel")
    ap.add_argument("--force", nargs="*", default=None, help="re-run these datasets ('all' for every one)")
    ap.add_argument("--only", nargs="*", default=None, help="run only these datasets of the set now")
    ap.add_argument("--no-aggregate", action="store_true", help="skip the aggregate notebooks")
    ap.add_argument("--check", action="store_true", help="only validate the parameter file")
    a = ap.parse_args(argv)
    try:
        ps = P.load(a.params)
    except P.ParamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.check:
        print(f"{a.params}: OK ({len(ps.datasets)} datasets, {len(ps.config.seeds)} seeds, "
              f"{len(ps.config.methods)} methods, {ps.config.epochs} epochs)")
        return 0
    t = time.perf_counter()
    rep = sweep(ps, Path(a.outputs), a.data_dir, a.workers, a.force, aggregate=not a.no_aggregate,
                only=a.only)
    print(f"\n{ps.name}: {len(rep['done'])} run, {len(rep['skipped'])} already done, "
          f"{len(rep['failed'])} failed in {time.perf_counter() - t:.0f} s; outputs in "
          f"{Path(a.outputs) / ps.name}")
    for d, err in rep["failed"].items():
        print(f"  FAILED {d}: {err}  (see {Path(a.outputs) / ps.name / d / '_FAILED.json'})")
    return 1 if rep["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
