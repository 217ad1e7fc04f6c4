"""Run a sweep on a Dask cluster: ``python -m tcclib PARAMS --scheduler ADDRESS``.

``local`` starts a LocalCluster with one worker process per core, ``local:N`` one with N; any
other address (``tcp://host:8786``) is a running scheduler whose workers may be on other machines.
Reaching it is bounded (:class:`ClusterOptions`: ``connect_timeout`` covers the connection, Dask's
handshake and the first answer; :func:`probe` names what answered instead: HTTP, another
protocol, nothing), and so is the wait for its first worker (``worker_wait``, with progress).

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

import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tcclib.artifacts import store
from tcclib.data.sources import DATA_DIR_ENV, load_dataset
from tcclib.method import plugins
from tcclib.running import folders, notebooks
from tcclib.running import params as param_files
from tcclib.running.params import CONNECT_TIMEOUT, WORKER_WAIT
from tcclib.running.train import run_dataset
from tcclib.util import paths, threads
from tcclib.util.files import atomic_write

TOKEN = ".scale-token"
STORE_FILES = ("results.csv", "history.csv", "pseudo.csv", "corr_range.csv", "keys.json", "importance.npz")
STORE_FILES += ("embeddings.npz", "classes.json")
_TEXT = (".ipynb", ".json", ".md", ".csv", ".txt", ".html", ".tsv")


class ScaleError(RuntimeError):
    """The cluster cannot be used: dask missing, scheduler unreachable or not a scheduler, no workers."""


@dataclass(frozen=True)
class ClusterOptions:
    """Where and how the units run: ``address`` (``local``, ``local:N``, ``tcp://host:port``),
    ``seeds_per_unit`` (None: whole datasets), ``threads`` per unit (None: each host's cores
    shared), ``shared_fs`` (False: act as if no worker shared this filesystem), ``retries`` of a
    unit that raises, ``connect_timeout`` and ``worker_wait`` in seconds."""

    address: str
    seeds_per_unit: int | None = None
    threads: int | None = None
    shared_fs: bool | None = None
    retries: int = 1
    connect_timeout: float = CONNECT_TIMEOUT
    worker_wait: float = WORKER_WAIT

    @property
    def remote(self) -> bool:
        return not (self.address == "local" or self.address.startswith("local:"))

    @property
    def jobs(self) -> int:
        """Units that run at once on this machine (a running scheduler's: one, as far as this
        machine's disk goes)."""
        if not self.remote:
            return int(self.address[6:]) if self.address != "local" else threads.cores()
        return 1


# ---------------------------------------------------------------- the cluster


def _dask():
    try:
        import dask  # deferred: optional (the scale extra)
        from distributed import Client, LocalCluster  # deferred: optional (the scale extra)
    except ImportError:
        raise ScaleError(
            "--scheduler needs dask: pip install 'dask[distributed]' (or the package's "
            "'scale' extra), or run without --scheduler"
        ) from None
    return dask, Client, LocalCluster


class _SchedulerGone(logging.Filter):
    """Drops a worker's "Failed to communicate with scheduler during heartbeat" and its traceback."""

    def filter(self, record) -> bool:
        return "during heartbeat" not in record.getMessage()


def quiet_heartbeats() -> None:
    """In a LocalCluster's worker process: the scheduler lives in the sweep's process, so it is
    gone only when the sweep ends (an interrupt closes it while the workers still beat), and the
    sweep's own last line says so; each worker logged the lost heartbeat with a traceback."""
    logging.getLogger("distributed.worker").addFilter(_SchedulerGone())


def _quiet_heartbeats_plugin():
    from distributed.diagnostics.plugin import WorkerPlugin  # deferred: optional (the scale extra)

    class QuietHeartbeats(WorkerPlugin):
        name = "tcc-quiet-heartbeats"

        def setup(self, worker) -> None:
            quiet_heartbeats()

    return QuietHeartbeats()


# A LocalCluster's scheduler with the dashboard off still serves HTTP on 8787 unless told: on a free
# port, so a second cluster on this machine (a user's own dashboard) takes nothing and warns not.
QUIET_SCHEDULER = {"dashboard_address": ":0"}


def connect(options: ClusterOptions, say=print):
    """``(client, cluster, budget)``: a dask ``Client`` for ``options.address``; the LocalCluster
    it started and the thread budget of its workers (both None for a running scheduler).  A
    :class:`ScaleError` in one line when dask is missing, the address is malformed, the scheduler
    cannot be reached or does not answer as one within ``connect_timeout`` seconds, or has no
    worker after ``worker_wait`` seconds."""
    try:
        param_files.check_scheduler(options.address, "--scheduler")
    except param_files.ParamsError as e:
        raise ScaleError(str(e)) from None
    dask, Client, LocalCluster = _dask()
    if not options.remote:
        n = options.jobs
        b = threads.budget(n, options.threads)
        with dask.config.set({"distributed.scheduler.allowed-failures": 3}):
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                scheduler_kwargs=QUIET_SCHEDULER,
                env=threads.job_env(b),
                silence_logs=logging.ERROR,
            )
        client = Client(cluster)
        client.register_plugin(_quiet_heartbeats_plugin())  # (a restarted worker gets it too)
        return client, cluster, b
    client = remote_client(options.address, options.connect_timeout)
    try:
        wait_for_workers(client, options.address, options.worker_wait, say)
    except BaseException:
        client.close()
        raise
    return client, None, None


_MISTAKES = (
    "the scheduler's own port (8786 by default, `dask scheduler` prints it), not its dashboard's (8787); "
    "the right host; a firewall that lets the port through"
)


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.partition("://")[2].rstrip("/").rpartition(":")
    return host.strip("[]"), int(port)


def _receive(sock: socket.socket, n: int, deadline: float) -> bytes:
    """Up to ``n`` bytes before ``deadline`` (fewer: the peer closed, or time ran out)."""
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(data))
        except OSError:  # a timeout, or the peer reset the connection
            break
        if not chunk:
            break
        data += chunk
    return data


def probe(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Check within ``timeout`` seconds that a Dask scheduler answers at ``address`` (a
    ``tcp://`` one; other schemes are left to dask): it greets a new connection at once with the
    length of its handshake.  A :class:`ScaleError` naming what answered instead: nothing (a
    host that accepts and never replies), HTTP (the dashboard's port, a web service), other bytes,
    a refused connection, a name that does not resolve."""
    if not address.startswith("tcp://"):
        return
    host, port = _host_port(address)
    where = f"--scheduler {address}"
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror as e:
        raise ScaleError(
            f"{where}: the host name {host!r} does not resolve ({e.strerror}): a typo in the host?"
        ) from None
    except ConnectionRefusedError:
        raise ScaleError(
            f"{where}: nothing listens on port {port} of {host} (connection refused): start the scheduler "
            f"(dask scheduler --port {port}), or check {_MISTAKES}"
        ) from None
    except TimeoutError:
        raise ScaleError(
            f"{where}: no answer to the connection within {timeout:g} s: check the host, and {_MISTAKES}"
        ) from None
    except OSError as e:
        raise ScaleError(
            f"{where}: cannot connect ({type(e).__name__}: {e.strerror or e}); check {_MISTAKES}"
        ) from None
    with sock:
        greeting = _receive(sock, 8, deadline - min(2.0, timeout / 4))
        if len(greeting) == 8 and 0 < struct.unpack("<Q", greeting)[0] < 2**24:
            return  # the length of a Dask handshake
        _not_dask(sock, where, greeting, timeout, deadline)


def _not_dask(sock: socket.socket, where: str, greeting: bytes, timeout: float, deadline: float):
    """Name what answered at a scheduler's address instead of Dask (raises :class:`ScaleError`)."""
    if not greeting:  # HTTP servers wait for a request: ask one
        try:
            sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
        except OSError:
            pass
        greeting = _receive(sock, 64, deadline)
        if not greeting:
            raise ScaleError(
                f"{where}: the port accepts connections but nothing answered within {timeout:g} s "
                f"(a Dask scheduler greets at once): not a Dask scheduler, or a proxy or firewall in "
                f"between; check {_MISTAKES}"
            )
    else:  # a banner of its own: a little more of it, to name it
        greeting += _receive(sock, 24, min(deadline, time.monotonic() + 0.5))
    if greeting.startswith(b"HTTP/"):
        raise ScaleError(
            f"{where}: this port answers HTTP, not Dask's protocol: a web server, such as the scheduler's "
            f"dashboard (8787); give the scheduler's own address, tcp://host:8786 by default"
        )
    raise ScaleError(
        f"{where}: this port answers something other than Dask's protocol ({greeting[:24]!r}); check {_MISTAKES}"
    )


def _within(seconds: float, make, what: str):
    """``make()`` run in a daemon thread, given at most ``seconds``; a :class:`ScaleError` when it
    takes longer (the thread is left to end on its own) or raises."""
    box: dict = {}

    def run():
        try:
            box["value"] = make()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    worker = threading.Thread(target=run, daemon=True, name="tcc-connect")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ScaleError(f"{what}: no answer within {seconds:g} s; check {_MISTAKES}")
    if "error" in box:
        e = box["error"]
        raise ScaleError(f"{what}: cannot use it ({type(e).__name__}: {' '.join(str(e).split())[:200]})") from None
    return box["value"]


def remote_client(address: str, timeout: float = CONNECT_TIMEOUT):
    """A dask ``Client`` of the running scheduler at ``address``, within ``timeout`` seconds in
    all (:func:`probe` first, then dask's own connection and handshake)."""
    _, Client, _ = _dask()
    deadline = time.monotonic() + timeout
    probe(address, timeout)
    left = max(1.0, deadline - time.monotonic())
    return _within(left, lambda: Client(address, timeout=left), f"--scheduler {address}")


def wait_for_workers(client, address: str, seconds: float = WORKER_WAIT, say=print, every: float | None = None) -> int:
    """Wait up to ``seconds`` for the scheduler's first worker, saying so every ``every`` seconds
    (default: a quarter of the wait, at most 10 s); the number of workers, or a :class:`ScaleError`
    naming the fix."""
    every = every if every is not None else min(10.0, max(0.5, seconds / 4))
    t0 = time.monotonic()
    while True:
        left = seconds - (time.monotonic() - t0)
        try:
            client.wait_for_workers(1, timeout=max(0.1, min(every, left)))
            return len(client.scheduler_info().get("workers", {}))
        except TimeoutError:
            pass
        except Exception as e:  # noqa: BLE001 - the scheduler went away while we waited
            raise ScaleError(
                f"--scheduler {address}: lost the scheduler while waiting for a worker "
                f"({type(e).__name__}: {' '.join(str(e).split())[:200]})"
            ) from None
        waited = time.monotonic() - t0
        if waited >= seconds:
            raise ScaleError(
                f"--scheduler {address}: the scheduler has no worker after {seconds:g} s: start one "
                f"(dask worker {address}) on each machine that should run units, or wait longer "
                f"(--worker-wait SECONDS)"
            )
        say(f"cluster {address}: waiting for a worker ({waited:.0f} of {seconds:g} s)")


def _worker_facts() -> dict:
    return {
        "host": socket.gethostname(),
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


UNIT_PREFIX = "tcc-unit-"


def _remove_orphaned_unit_folders() -> None:
    """Remove the temporary folders of units whose worker process is gone (killed by an interrupt
    or a cancelled job, so its ``TemporaryDirectory`` was never cleaned up); a unit's folder is
    named after its process id, and this host's processes are the ones it can see."""
    for folder in Path(tempfile.gettempdir()).glob(f"{UNIT_PREFIX}*-*"):
        pid = folder.name[len(UNIT_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not folders.pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def run_unit(u: dict) -> dict:
    """Run one unit (on a worker): ``u["seeds"]`` None renders the dataset's notebooks (trains and
    stores it, for a ``train_only`` set: :func:`tcclib.running.folders.run_unit`), a list trains
    those seeds' members.  Returns the files it wrote and what happened."""
    t = time.perf_counter()
    host = socket.gethostname()
    n = threads.apply(u["threads"].get(host) or threads.budget(1, u.get("threads_opt")).threads)
    shared = _sees(u["token"]) if u["shared"] is None else bool(u["shared"] and _sees(u["token"]))
    ps, dataset = u["ps"], u["dataset"]
    notebooks.share_tcclib_with_kernels()
    plugins.on_worker(u.get("plugins"), Path(tempfile.gettempdir()) / "tcc-plugins")
    data_dir = u.get("data_dir")
    if data_dir and Path(data_dir).is_dir():
        os.environ[DATA_DIR_ENV] = data_dir
    else:
        os.environ.pop(DATA_DIR_ENV, None)  # the worker's own copy is not known: OpenML's cache
        data_dir = None
    _remove_orphaned_unit_folders()
    with tempfile.TemporaryDirectory(prefix=f"{UNIT_PREFIX}{os.getpid()}-") as tmp:
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
                folders.run_unit(dataclasses.replace(ps, data_folder=data_dir), dataset, W, u["reuse"])
            except Exception as e:  # noqa: BLE001 - a failed dataset: its render and _FAILED.json come back
                res.update(ok=False, error=folders.error_line(e)[:300])
            failed = W / ps.name / folders.FAILED_DIR / dataset
            src = failed if not res["ok"] and failed.is_dir() else ddir
            res["files"] = _collect(src, W, u["client_root"])
        else:
            cfg = ps.config_for(dataset)
            seeds = list(u["seeds"])
            gcfg = cfg.replace(
                seeds=seeds, progress=False, keep_embeddings=cfg.keep_embeddings and seeds[0] == cfg.seeds[0]
            )
            try:
                run = run_dataset(
                    dataset, gcfg, data_dir=data_dir, cache_dir=W / ".cache", store_dir=ddir, reuse=u["reuse"]
                )
                store.save_run(run, ddir, write_marker=False)  # a group of seeds does not finish the dataset
                res["timings"] = dict(run.timings)
                res["files"] = _collect(ddir, W, u["client_root"], only=STORE_FILES)
            except Exception as e:  # noqa: BLE001 - reported as the dataset's failure
                res.update(ok=False, error=folders.error_line(e)[:300], files={})
    res["seconds"] = round(time.perf_counter() - t, 1)
    return res


# ---------------------------------------------------------------- on the client


def seed_groups(ps: param_files.ParamSet, dataset: str, per_unit: int | None) -> list[list[int]] | None:
    """The seed groups of ``dataset`` (None: it runs whole).  Only a dataset that trains (notebook
    ``03_pretraining`` and no ablation grid, or a ``train_only`` set) and whose seeds outnumber
    ``per_unit`` is split."""
    seeds = list(ps.config_for(dataset).seeds)
    if (
        not per_unit
        or len(seeds) <= per_unit
        or not (ps.train_only or "03_pretraining" in ps.per_dataset_notebooks)
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
        trained = _add_timings(timings, tim) or trained
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


def _add_timings(timings: dict, tim: dict) -> bool:
    """Add a seed group's ``timings.json`` to the dataset's sums; whether the group trained."""
    if not tim.get("trained_members"):
        timings["reused_members"] = timings.get("reused_members", 0) + tim.get("reused_members", 0)
        return False
    for name, v in tim.items():
        if name == "resumed_at_epoch":
            timings[name] = max(timings.get(name, 0), v)
        elif isinstance(v, (int, float)):
            timings[name] = timings.get(name, 0) + v
    return True


def install(set_dir: Path, dataset: str, res: dict) -> str | None:
    """Write a dataset unit's files into ``<set>/<dataset>`` through the sweep's transaction
    (:class:`tcclib.running.folders.DatasetFolder`): a finished dataset is kept in ``.previous/``
    until the new ``_DONE.json`` (written last) is in; a failed re-run leaves the finished results
    as they were and puts its render in ``.failed/<dataset>``.  Returns that re-run's note (None
    otherwise)."""
    files = dict(res.get("files") or {})
    folder = folders.DatasetFolder(set_dir, dataset).begin()
    _write_files(folder.path, {k: v for k, v in files.items() if k not in folders.MARKERS})
    if res["ok"]:
        done = json.loads(files[folders.DONE])
        done["worker"] = {"host": res["host"], "shared_fs": res["shared_fs"], "threads": res["threads"]}
        if res.get("seed_units"):  # where and how long each group of seeds trained
            done["seed_units"] = res["seed_units"]
        folder.finish(done)
        return None
    if folders.FAILED in files:
        record = json.loads(files[folders.FAILED])
    else:
        record = folders.failure(dataset, res["error"], res.get("traceback", ""))
    return folder.fail(record)


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
    options: ClusterOptions,
    say=print,
    on_dataset=None,
    connection=None,
) -> tuple[list, dict]:
    """Run the datasets ``todo`` of ``ps`` as units on the cluster of ``options``; returns
    ``(done, failed)`` as the sweep reports them.  ``on_dataset(dataset, line)`` is called as each
    dataset finishes or fails, with its line (a progress bar says it; without one, ``say``).
    ``connection``: what :func:`connect` returned, when the caller connected (and closes) it; else
    this connects and closes.  An interrupt cancels every unit's future (a LocalCluster's worker
    processes end when the connection closes) and is raised again."""
    from distributed import as_completed  # deferred: optional (the scale extra)

    own = connection is None
    client, cluster, local = connect(options, say) if own else connection
    set_dir = out_root / ps.name
    tok = set_dir / TOKEN
    try:
        warm_data(todo, say)
        budgets = _budgets(client, options, local, say)
        store.write_text(secrets.token_hex(16), tok)
        base = _unit_base(ps, out_root, tok, budgets, options)
        units = _Units(client, as_completed(), ps, set_dir, base, options.retries)
        try:
            for d in todo:
                units.start(d, reuse, options.seeds_per_unit)
            for f in units.queue:
                line, finished = units.collect(f)
                if line is None:
                    continue
                line = f"{line}  [{units.progress()}]"
                if finished is not None and on_dataset is not None:
                    on_dataset(finished, line)
                else:
                    say(line)
        except KeyboardInterrupt:
            client.cancel(list(units.futures), force=True)
            if cluster is not None:
                end_local_workers(cluster)
            raise
        return units.done, units.failed
    finally:
        tok.unlink(missing_ok=True)
        if own:
            disconnect((client, cluster, local))


def end_local_workers(cluster) -> None:
    """End a LocalCluster's worker processes at once, after an interrupt (their kernels exit with
    them, as a kernel does when its parent goes).  Closing the cluster asks each worker to stop and
    waits up to 4 s for its running task, which a unit's training never ends, so the units trained on
    for about 5 s after Ctrl-C; their last checkpoints are on disk either way, and the next run
    resumes from them.  Each nanny is told first not to start its worker again.  From then on this
    process's dask logs speak only at ERROR: its scheduler logs each killed worker's closed
    connection at INFO with a traceback, and the sweep's own last line says what happened."""
    logging.getLogger("distributed").setLevel(logging.ERROR)
    for nanny in list(cluster.workers.values()):
        nanny.close_gracefully(reason="tcc-interrupt")
        pid = nanny.pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def disconnect(connection) -> None:
    """Close what :func:`connect` opened."""
    client, cluster, _ = connection
    client.close()
    if cluster is not None:
        cluster.close()


def _budgets(client, options: ClusterOptions, local, say) -> dict:
    """The thread budget of each worker host, printed; a LocalCluster's workers have the one they
    were started with."""
    budgets = host_budgets(client, options.threads)
    if local is not None:
        budgets = {h: local for h in budgets}
    for host, b in budgets.items():
        say(f"cluster {options.address}: {host}: {b.line('worker')}")
    return budgets


def _unit_base(ps, out_root: Path, tok: Path, budgets: dict, options: ClusterOptions) -> dict:
    """What every unit of the sweep is told (:func:`run_unit`), besides its dataset and seeds."""
    return dict(
        ps=ps,
        token=(str(tok), tok.read_text()),
        shared=options.shared_fs,
        client_out=str(out_root),
        client_root=paths.relative_to_root(out_root),
        cache_key=hashlib.sha256(f"{socket.gethostname()}:{out_root}".encode()).hexdigest()[:16],
        data_dir=os.environ.get(DATA_DIR_ENV),
        threads={h: b.threads for h, b in budgets.items()},
        threads_opt=options.threads,
        plugins=plugins.for_workers(),  # the user's plugin files travel with every unit
    )


def _lost(e: Exception) -> dict:
    """The result of a unit that never came back: a worker lost too often, or it raised every try."""
    return {
        "ok": False,
        "error": folders.short_line(e),
        "files": {},
        "host": "?",
        "shared_fs": None,
        "threads": None,
        "seconds": 0,
    }


class _Units:
    """The units of one sweep on the cluster: submitted, collected as they come back, each
    dataset's seed groups merged into one last unit that renders its notebooks."""

    def __init__(self, client, queue, ps, set_dir: Path, base: dict, retries: int):
        self.client, self.queue, self.ps, self.set_dir = client, queue, ps, set_dir
        self.base, self.retries = base, retries
        self.run_id = secrets.token_hex(4)
        self.futures: dict = {}  # future -> (dataset, seeds)
        self.groups: dict = {}  # dataset -> its seed groups: how many, those back, where they ran
        self.done: list[str] = []
        self.failed: dict[str, str] = {}
        self.back = 0

    def submit(self, dataset: str, seeds, files: dict, reuse: bool, tag: str = "notebooks") -> None:
        u = dict(self.base, dataset=dataset, seeds=seeds, files=files, reuse=reuse)
        key = f"tcc-{self.ps.name}-{dataset}-{tag}-{self.run_id}"
        f = self.client.submit(run_unit, u, key=key, retries=self.retries, pure=False)
        self.futures[f] = (dataset, seeds)
        self.queue.add(f)

    def start(self, dataset: str, reuse: bool, per_unit: int | None) -> None:
        """Submit ``dataset`` whole, or one unit per group of its seeds."""
        files = _dataset_files(self.set_dir / dataset) if reuse else {}
        groups = seed_groups(self.ps, dataset, per_unit)
        if groups is None:
            self.submit(dataset, None, files, reuse)
            return
        self.groups[dataset] = {"n": len(groups), "back": [], "units": [], "files": files}
        store_in = {k: v for k, v in files.items() if k in STORE_FILES}
        for i, g in enumerate(groups):
            self.submit(dataset, g, store_in, reuse, tag=f"seeds{i}")

    def collect(self, f) -> tuple[str | None, str | None]:
        """Take a unit that came back: ``(line, dataset)``, the line to print (None: its dataset
        failed already) and the dataset it finished or failed (None: a group of seeds is back)."""
        dataset, seeds = self.futures[f]
        try:
            res = f.result()
        except Exception as e:  # noqa: BLE001 - reported as the dataset's failure
            res = _lost(e)
        self.back += 1
        if dataset in self.failed:
            return None, None
        if seeds is not None and res["ok"]:
            return self._group_back(dataset, seeds, res), None
        line = self._fail(dataset, seeds, res) if not res["ok"] else self._finish(dataset, res)
        return line, dataset

    def _group_back(self, dataset: str, seeds, res: dict) -> str:
        g = self.groups[dataset]
        g["back"].append((seeds, res["files"], res["timings"]))
        g["units"].append({"seeds": seeds, "host": res["host"], "seconds": res["seconds"]})
        if len(g["back"]) == g["n"]:
            merged, trained = merge_groups(self.ps, dataset, g["back"])
            files = {k: v for k, v in g["files"].items() if not (trained and k in folders.MARKERS)}
            files.update(merged)
            self.submit(dataset, None, files, True)  # renders from the merged store, trains nothing
        return f"{dataset} seeds {seeds}: trained in {res['seconds']:.0f} s on {res['host']}"

    def _fail(self, dataset: str, seeds, res: dict) -> str:
        err = res["error"] if seeds is None else f"seeds {seeds}: {res['error']}"
        note = install(self.set_dir, dataset, {**res, "error": err})
        self.failed[dataset] = f"{err} {note}" if note else err
        for other, (d2, _) in self.futures.items():
            if d2 == dataset and not other.done():
                other.cancel()
        return f"{dataset}: FAILED: {self.failed[dataset]}"

    def _finish(self, dataset: str, res: dict) -> str:
        if dataset in self.groups:
            res["seed_units"] = sorted(self.groups[dataset]["units"], key=lambda x: x["seeds"])
        install(self.set_dir, dataset, res)
        self.done.append(dataset)
        shared = "" if res["shared_fs"] else " (files sent back: no shared filesystem)"
        return f"{dataset}: done in {res['seconds']:.0f} s on {res['host']}{shared}"

    def progress(self) -> str:
        running = sum(1 for ks in self.client.processing().values() for k in ks if str(k).endswith(self.run_id))
        return f"units: {self.back}/{len(self.futures)} done, {running} running, {len(self.failed)} failed"
