"""Run a sweep on a Dask cluster: ``python -m tcclib PARAMS --scheduler ADDRESS``.

``local`` starts a LocalCluster with one worker process per core, ``local:N`` one with N; any
other address (``tcp://host:8786``) is a running scheduler whose workers may be on other machines.

**Units of work.**  A dataset is one unit: its per-dataset notebooks, as the sweep runs them
without a cluster.  With ``seeds_per_unit: K`` (or ``--seeds-per-unit K``) a dataset with more
seeds than K is split: each group of K seeds is a unit that trains that group's members
(:func:`tcclib.running.train.run_dataset` on those seeds, stored as :func:`tcclib.artifacts.store.save_run` stores
them); once all groups are back, the client merges their stored results into one dataset store
and a last unit renders the dataset's notebooks from it, reusing every member (members are
independent, so they train exactly as in the whole ensemble: the results are those of the
dataset run whole).  The aggregate notebooks run on the client once every unit is done.

**No shared filesystem needed.**  A unit runs in a temporary folder on its worker, seeded with
the files of the dataset's folder (the stored results it may reuse), and returns every file it
wrote as bytes; the client writes them into ``<set>/<dataset>`` with the sweep's discipline
(the finished results kept in ``.previous/`` until the new ``_DONE.json`` is written, last).
Paths of the temporary folder in the rendered notebooks are replaced by the client's.  Whether
a worker shares the client's filesystem is tested per unit (it reads a token file the client
wrote in the set's folder): when it does, the unit's cache (importance matrices, pretraining
checkpoints) is the client's ``<outputs>/.cache``, and the data folder is the client's; when it
does not, the cache is a folder of the worker's host, and the data come from the worker's own
``$TCC_DATA_DIR`` or OpenML (the client warms its OpenML cache before fanning out; workers
sharing that cache then find the files there).

**A worker that dies loses nothing.**  The scheduler gives its unit to another worker (up to
``distributed.scheduler.allowed-failures`` times), which resumes pretraining from the last
checkpoint where it can see it (a shared filesystem, or the same host); a unit that raises is
retried ``retries`` times.  Finished units are written by the client at once and never redone.
A unit that fails for good is reported like a failed dataset (``_FAILED.json``, one line).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import secrets
import shutil
import socket
import socket as _s
import tempfile
import time
from pathlib import Path

from tcclib.artifacts import store
from tcclib.data.sources import DATA_DIR_ENV, load_dataset
from tcclib.running import folders, notebooks
from tcclib.running import params as param_files
from tcclib.running.train import run_dataset
from tcclib.util import paths, threads
from tcclib.util.files import atomic_write

TOKEN = ".scale-token"
MARKERS = ("_DONE.json", "_FAILED.json")
STORE_FILES = (
    "results.csv",
    "history.csv",
    "pseudo.csv",
    "corr_range.csv",
    "keys.json",
    "importance.npz",
    "embeddings.npz",
    "classes.json",
)
_TEXT = (".ipynb", ".json", ".md", ".csv", ".txt", ".html", ".tsv")


class ScaleError(RuntimeError):
    """The cluster cannot be used: dask missing, scheduler unreachable, no workers."""


# ---------------------------------------------------------------- the cluster


def connect(address: str, threads_opt: int | None = None, say=print):
    """``(client, cluster, budget)``: a dask ``Client`` for ``address``; the LocalCluster it
    started and the thread budget of its workers (both None for a running scheduler).  A
    :class:`ScaleError` when dask is missing or the scheduler cannot be reached."""
    param_files.check_scheduler(address, "--scheduler")
    try:
        import dask  # deferred: optional (the scale extra)
        from distributed import Client, LocalCluster  # deferred: optional (the scale extra)
    except ImportError:
        raise ScaleError(
            "--scheduler needs dask: pip install 'dask[distributed]' (or the package's "
            "'scale' extra), or run without --scheduler"
        ) from None
    if address == "local" or address.startswith("local:"):
        n = int(address[6:]) if address != "local" else threads.cores()
        b = threads.budget(n, threads_opt)
        with dask.config.set({"distributed.scheduler.allowed-failures": 3}):
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                env={**threads.env(b), **threads.allocator_env()},
                silence_logs=logging.ERROR,
            )
        return Client(cluster), cluster, b
    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise ScaleError(
            f"--scheduler {address}: cannot reach a Dask scheduler there ({type(e).__name__}: "
            f"{' '.join(str(e).split())[:200]}); start one (dask scheduler; dask worker "
            f"{address}) or use --scheduler local"
        ) from None
    if not client.scheduler_info().get("workers"):
        client.wait_for_workers(1, timeout=120)
    return client, None, None


def _worker_facts() -> dict:
    return {
        "host": _s.gethostname(),
        "cores": threads.cores(),
        "omp": os.environ.get("OMP_NUM_THREADS", ""),
        "pid": os.getpid(),
    }


def host_budgets(client, threads_opt: int | None = None) -> dict:
    """``{host: Budget}``: the threads of each unit on each worker host, its cores shared among
    the worker threads there (units at once); a worker's explicit ``OMP_NUM_THREADS`` is kept."""
    facts = client.run(_worker_facts)
    info = client.scheduler_info()["workers"]
    out = {}
    for f in facts.values():
        jobs = sum(info[a]["nthreads"] for a, g in facts.items() if g["host"] == f["host"] and a in info)
        try:
            out[f["host"]] = threads.budget(jobs, threads_opt, f["cores"], {"OMP_NUM_THREADS": f["omp"]})
        except threads.ThreadsError:  # a worker's OMP_NUM_THREADS that is no number: its share instead
            out[f["host"]] = threads.budget(jobs, threads_opt, f["cores"], {})
    return out


# ---------------------------------------------------------------- on the worker


def _sees(token: tuple[str, str]) -> bool:
    try:
        return Path(token[0]).read_text() == token[1]
    except OSError:
        return False


def _collect(folder: Path, W: Path, client_root: str, only=None) -> dict:
    """Every file under ``folder`` as ``{relative path: bytes}`` (temporary dot-files left out),
    with the worker's output root ``W`` replaced by the client's in text files."""
    out = {}
    if not folder.is_dir():
        return out
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(folder).as_posix()
        if not f.is_file() or any(p.startswith(".") for p in rel.split("/")):
            continue
        if only is not None and rel not in only:
            continue
        data = f.read_bytes()
        if f.suffix in _TEXT:
            data = data.replace(str(W).encode(), client_root.encode())
        out[rel] = data
    return out


def _write_files(folder: Path, files: dict) -> None:
    for rel, data in sorted(files.items()):
        p = Path(rel)
        if p.is_absolute() or ".." in p.parts:
            raise ValueError(f"a unit returned the path {rel!r}, outside its dataset folder")
        atomic_write(folder / p, lambda t, d=data: Path(t).write_bytes(d))


def run_unit(u: dict) -> dict:
    """Run one unit (on a worker): ``u["seeds"]`` None renders the dataset's notebooks, a list
    trains those seeds' members.  Returns the files it wrote and what happened."""
    t = time.perf_counter()
    host = socket.gethostname()
    n = threads.apply(u["threads"].get(host) or threads.budget(1, u.get("threads_opt")).threads)
    shared = _sees(u["token"]) if u["shared"] is None else bool(u["shared"] and _sees(u["token"]))
    ps, dataset = u["ps"], u["dataset"]
    notebooks.share_tcclib_with_kernels()
    data_dir = u.get("data_dir")
    if data_dir and Path(data_dir).is_dir():
        os.environ[DATA_DIR_ENV] = data_dir
    else:
        os.environ.pop(DATA_DIR_ENV, None)  # the worker's own copy is not known: OpenML's cache
        data_dir = None
    with tempfile.TemporaryDirectory(prefix="tcc-unit-") as tmp:
        W = Path(tmp).resolve() / "out"
        ddir = W / ps.name / dataset
        ddir.mkdir(parents=True)
        _write_files(ddir, u["files"])
        cache = (
            Path(u["client_out"]) / ".cache"
            if shared
            else Path(tempfile.gettempdir()) / "tcc-worker-cache" / u["cache_key"]
        )
        cache.mkdir(parents=True, exist_ok=True)
        os.symlink(cache, W / ".cache", target_is_directory=True)
        res = {"host": host, "shared_fs": shared, "threads": n, "ok": True, "error": None, "timings": {}}
        if u["seeds"] is None:
            try:
                folders.run_dataset_notebooks(ps, dataset, W, u["reuse"])
            except Exception as e:  # noqa: BLE001 - a failed dataset: its render and _FAILED.json come back
                res.update(ok=False, error=folders.error_line(e)[:300])
            failed = W / ps.name / folders.FAILED_DIR / dataset
            src = failed if not res["ok"] and failed.is_dir() else ddir
            res["files"] = _collect(src, W, u["client_root"])
        else:
            os.environ[store.SWEEP_ENV] = "1"  # no _DONE.json: the dataset is not finished by a group
            cfg = ps.config_for(dataset)
            seeds = list(u["seeds"])
            gcfg = cfg.replace(
                seeds=seeds, progress=False, keep_embeddings=cfg.keep_embeddings and seeds[0] == cfg.seeds[0]
            )
            try:
                run = run_dataset(
                    dataset, gcfg, data_dir=data_dir, cache_dir=W / ".cache", store_dir=ddir, reuse=u["reuse"]
                )
                store.save_run(run, ddir)
                res["timings"] = dict(run.timings)
                res["files"] = _collect(ddir, W, u["client_root"], only=STORE_FILES)
            except Exception as e:  # noqa: BLE001 - reported as the dataset's failure
                res.update(ok=False, error=folders.error_line(e)[:300], files={})
    res["seconds"] = round(time.perf_counter() - t, 1)
    return res


# ---------------------------------------------------------------- on the client


def seed_groups(ps: param_files.ParamSet, dataset: str, per_unit: int | None) -> list[list[int]] | None:
    """The seed groups of ``dataset`` (None: it runs whole).  Only a dataset whose notebooks train
    (``03_pretraining``, no ablation grid) and whose seeds outnumber ``per_unit`` is split."""
    seeds = list(ps.config_for(dataset).seeds)
    if (
        not per_unit
        or len(seeds) <= per_unit
        or "03_pretraining" not in ps.per_dataset_notebooks
        or "07_ablation" in ps.per_dataset_notebooks
    ):
        return None
    return [seeds[i : i + per_unit] for i in range(0, len(seeds), per_unit)]


def merge_groups(
    ps: param_files.ParamSet, dataset: str, groups: list[tuple[list[int], dict, dict]]
) -> tuple[dict, bool]:
    """One dataset store from the stores of its seed groups ``[(seeds, files, timings)]``: the
    rows, keys, importance matrices and ranges of each group's own seeds; the embeddings of the
    group with the first seed; ``timings.json`` summed over the groups that trained.  Returns
    ``(files, trained)``."""
    import numpy as np  # deferred: numpy loads only when this runs
    import pandas as pd  # deferred: pandas loads only when this runs

    cfg = ps.config_for(dataset)
    order = {s: i for i, s in enumerate(cfg.seeds)}
    frames = {n: [] for n in ("results.csv", "history.csv", "pseudo.csv", "corr_range.csv")}
    keys = {"version": 1, "members": {}, "baselines": {}, "importance": {}, "embeddings": {}}
    arrays, out = {}, {}
    timings: dict = {}
    trained = False
    for seeds, files, tim in sorted(groups, key=lambda g: order[g[0][0]]):
        mine = {int(s) for s in seeds}
        for name in frames:
            if name in files:
                df = pd.read_csv(io.BytesIO(files[name]))
                frames[name].append(df[df.seed.isin(mine)] if "seed" in df.columns else df)
        k = json.loads(files.get("keys.json", b"{}") or b"{}")
        for part in ("members", "baselines"):
            keys[part].update({t: v for t, v in k.get(part, {}).items() if int(t.split("/")[0]) in mine})
        keys["importance"].update({s: v for s, v in k.get("importance", {}).items() if int(s) in mine})
        if cfg.seeds[0] in mine:
            keys["embeddings"] = k.get("embeddings", {})
            if "embeddings.npz" in files:
                out["embeddings.npz"] = files["embeddings.npz"]
        if "importance.npz" in files:
            with np.load(io.BytesIO(files["importance.npz"])) as z:
                arrays.update({n: z[n] for n in z.files if int(n.removeprefix("seed_")) in mine})
        for n in ("classes.json",):
            if n in files:
                out[n] = files[n]
        if tim.get("trained_members"):
            trained = True
            for name, v in tim.items():
                if name == "resumed_at_epoch":
                    timings[name] = max(timings.get(name, 0), v)
                elif isinstance(v, (int, float)):
                    timings[name] = timings.get(name, 0) + v
        else:
            timings["reused_members"] = timings.get("reused_members", 0) + tim.get("reused_members", 0)
    for name, parts in frames.items():
        if parts:
            df = pd.concat(parts, ignore_index=True)
            out[name] = df.to_csv(index=False, float_format="%.6g").encode()
    out["keys.json"] = (json.dumps(keys, indent=2) + "\n").encode()
    if arrays:
        buf = io.BytesIO()
        np.savez_compressed(buf, **dict(sorted(arrays.items(), key=lambda kv: order[int(kv[0][5:])])))
        out["importance.npz"] = buf.getvalue()
    if trained:
        if "epochs" in timings:
            timings.pop("epochs")
        if timings.get("pretrain_s") and cfg.epochs:
            timings["pretrain_s_per_epoch"] = timings["pretrain_s"] / cfg.epochs
        out["timings.json"] = (json.dumps({k: round(v, 3) for k, v in timings.items()}, indent=2) + "\n").encode()
    return out, trained


def install(set_dir: Path, dataset: str, res: dict) -> None:
    """Write a dataset unit's files into ``<set>/<dataset>`` as the sweep does: a finished dataset
    is kept in ``.previous/`` until the new ``_DONE.json`` (written last) is in; a failed re-run
    leaves the finished results as they were and puts its render in ``.failed/<dataset>``."""

    files = dict(res.get("files") or {})
    ddir = set_dir / dataset
    folders.recover(set_dir, dataset)
    finished = (ddir / "_DONE.json").exists()
    body = {k: v for k, v in files.items() if k not in MARKERS}
    if res["ok"]:
        done = json.loads(files["_DONE.json"])
        done["worker"] = {"host": res["host"], "shared_fs": res["shared_fs"], "threads": res["threads"]}
        if res.get("seed_units"):  # where and how long each group of seeds trained
            done["seed_units"] = res["seed_units"]
        prev = folders.keep_previous(set_dir, dataset) if finished else None
        for m in MARKERS:
            (ddir / m).unlink(missing_ok=True)
        _write_files(ddir, body)
        store.write_json(done, ddir / "_DONE.json")  # the new results count from here on
        if prev is not None:
            shutil.rmtree(prev, ignore_errors=True)
        shutil.rmtree(set_dir / folders.FAILED_DIR / dataset, ignore_errors=True)
        return
    fail = (
        json.loads(files["_FAILED.json"])
        if "_FAILED.json" in files
        else {
            "dataset": dataset,
            "error": res["error"],
            "traceback": res.get("traceback", ""),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
    )
    if finished:  # a failed re-run: the finished results stay as they are
        target = set_dir / folders.FAILED_DIR / dataset
        shutil.rmtree(target, ignore_errors=True)
    else:
        target = ddir
        (ddir / "_DONE.json").unlink(missing_ok=True)
    _write_files(target, body)
    store.write_json(fail, target / "_FAILED.json")


def _dataset_files(ddir: Path) -> dict:
    """The files of a dataset's folder a unit starts from (its stored results, for reuse)."""
    if not ddir.is_dir():
        return {}
    return {
        f.relative_to(ddir).as_posix(): f.read_bytes()
        for f in sorted(ddir.rglob("*"))
        if f.is_file() and not any(p.startswith(".") for p in f.relative_to(ddir).parts)
    }


def warm_data(datasets, say=print) -> None:
    """Load every dataset once here, so that OpenML's cache (not safe for concurrent downloads)
    holds it before the workers start; a dataset that fails to load fails in its unit."""
    for d in datasets:
        try:
            load_dataset(d)
        except Exception as e:  # noqa: BLE001 - its unit reports it
            say(f"{d}: not loadable here ({type(e).__name__}); its unit will report it")


def run_units(
    ps: param_files.ParamSet,
    out_root: Path,
    todo: list[str],
    reuse: bool,
    scheduler: str,
    seeds_per_unit: int | None = None,
    threads_opt: int | None = None,
    shared_fs: bool | None = None,
    retries: int = 1,
    say=print,
    on_dataset=None,
) -> tuple[list, dict]:
    """Run the datasets ``todo`` of ``ps`` as units on the cluster at ``scheduler``; returns
    ``(done, failed)`` as the sweep reports them.  ``on_dataset(dataset)`` is called as each
    dataset finishes or fails (a progress bar).  ``shared_fs=False`` treats every worker as if it had no shared
    filesystem."""
    from distributed import as_completed  # deferred: optional (the scale extra)

    set_dir = out_root / ps.name
    client, cluster, local = connect(scheduler, threads_opt, say)
    tok = set_dir / TOKEN
    try:
        warm_data(todo, say)
        budgets = host_budgets(client, threads_opt)
        if local is not None:  # this machine's workers: the budget they were started with
            budgets = {h: local for h in budgets}
        for host, b in budgets.items():
            say(f"cluster {scheduler}: {host}: {b.line('worker')}")
        store.write_text(secrets.token_hex(16), tok)
        base = dict(
            ps=ps,
            reuse=reuse,
            token=(str(tok), tok.read_text()),
            shared=shared_fs,
            client_out=str(out_root),
            client_root=paths.relative_to_root(out_root),
            cache_key=hashlib.sha256(f"{socket.gethostname()}:{out_root}".encode()).hexdigest()[:16],
            data_dir=os.environ.get(DATA_DIR_ENV),
            threads={h: b.threads for h, b in budgets.items()},
            threads_opt=threads_opt,
        )
        futs, groups, failed, done = {}, {}, {}, []
        ac = as_completed()
        run_id = secrets.token_hex(4)

        def submit(dataset, seeds, files, reuse_=reuse, tag="notebooks"):
            u = dict(base, dataset=dataset, seeds=seeds, files=files, reuse=reuse_)
            f = client.submit(run_unit, u, key=f"tcc-{ps.name}-{dataset}-{tag}-{run_id}", retries=retries, pure=False)
            futs[f] = (dataset, seeds)
            ac.add(f)

        for d in todo:
            files = _dataset_files(set_dir / d) if reuse else {}
            gs = seed_groups(ps, d, seeds_per_unit)
            if gs is None:
                submit(d, None, files)
            else:
                groups[d] = {"n": len(gs), "back": [], "units": [], "files": files}
                store_in = {k: v for k, v in files.items() if k in STORE_FILES}
                for i, g in enumerate(gs):
                    submit(d, g, store_in, tag=f"seeds{i}")
        total = len(futs)
        n_done = 0
        for f in ac:
            dataset, seeds = futs[f]
            try:
                res = f.result()
            except Exception as e:  # noqa: BLE001 - a worker lost too often, or the unit raised every try
                res = {
                    "ok": False,
                    "error": folders.error_line(e)[:300],
                    "files": {},
                    "host": "?",
                    "shared_fs": None,
                    "threads": None,
                    "seconds": 0,
                }
            n_done += 1
            if dataset in failed:
                continue
            what = dataset if seeds is None else f"{dataset} seeds {seeds}"
            if seeds is not None and res["ok"]:
                g = groups[dataset]
                g["back"].append((seeds, res["files"], res["timings"]))
                g["units"].append({"seeds": seeds, "host": res["host"], "seconds": res["seconds"]})
                line = f"{what}: trained in {res['seconds']:.0f} s on {res['host']}"
                if len(g["back"]) == g["n"]:
                    merged, trained = merge_groups(ps, dataset, g["back"])
                    files = {k: v for k, v in g["files"].items() if not (trained and k in MARKERS)}
                    files.update(merged)
                    submit(dataset, None, files, reuse_=True)  # renders from the merged store, trains nothing
                    total += 1
            elif not res["ok"]:
                err = res["error"] if seeds is None else f"seeds {seeds}: {res['error']}"
                failed[dataset] = err
                install(set_dir, dataset, {**res, "error": err})
                for other, (d2, _) in futs.items():
                    if d2 == dataset and not other.done():
                        other.cancel()
                line = f"{dataset}: FAILED: {err}"
                if on_dataset is not None:
                    on_dataset(dataset)
            else:
                if dataset in groups:
                    res["seed_units"] = sorted(groups[dataset]["units"], key=lambda x: x["seeds"])
                install(set_dir, dataset, res)
                done.append(dataset)
                line = f"{dataset}: done in {res['seconds']:.0f} s on {res['host']}" + (
                    "" if res["shared_fs"] else " (files sent back: no shared filesystem)"
                )
                if on_dataset is not None:
                    on_dataset(dataset)
            running = sum(1 for ks in client.processing().values() for k in ks if str(k).endswith(run_id))
            say(f"{line}  [units: {n_done}/{total} done, {running} running, {len(failed)} failed]")
        return done, failed
    finally:
        tok.unlink(missing_ok=True)
        client.close()
        if cluster is not None:
            cluster.close()
