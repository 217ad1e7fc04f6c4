"""A thread budget: jobs that share the cores get a share each, never all of them each.

torch and XGBoost each start one thread per core by default.  Two such jobs on the same cores
oversubscribe them: a benchmark ran 7.5x slower while one other 2-thread torch job shared its two
cores.  So every job the sweep runs (``--workers N`` datasets at once, the units of a Dask worker
host) is sized to its share, ``cores // jobs`` and at least 1, from this one place:

* :func:`budget` computes it (:func:`plan`: with the device, which the sweep prints: on a GPU the
  ``--workers N`` datasets train side by side on the one device, each with its share of the host's
  cores for its importance fits); an explicit ``threads`` (``--threads``) wins, then an
  ``OMP_NUM_THREADS`` set by the user, else the share of the cores this process may use;
* :func:`env` gives the variables the kernels the sweep starts inherit (``OMP_NUM_THREADS``,
  ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, and :data:`THREADS_ENV`, which tcclib reads);
* :func:`n_jobs` is XGBoost's ``n_jobs`` (importance matrices, the XGBoost baseline), and
  :func:`apply` sets torch's threads in a process that is already running (a Dask worker).

The same jobs also get :func:`allocator_env`: torch frees and reallocates tensors of tens of MiB
every batch, and with glibc's defaults many come from fresh ``mmap`` pages each time, every page
faulted in and zeroed by the kernel (6-7 % of a breast_cancer benchmark's CPU time was system
time, about 1.3 M page faults).  Keeping freed memory in the heap and using huge pages for large tensors cut its page
faults 9x and the epoch by about 5 % (``bench/results/2026-11-25-epyc-avx2``); it changes
where memory comes from, never a result.  ``TCC_ALLOCATOR=system`` leaves the allocators alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass

from tcclib.util.errors import counted, register_short

THREADS_ENV = "TCC_THREADS"
"""Threads one job may use; set by the sweep for its kernels and Dask units."""
_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", THREADS_ENV)


class ThreadsError(ValueError):
    """A thread count that is not a positive integer."""


register_short(ThreadsError)


def cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's or Slurm's share)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _positive(value, where: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ThreadsError(
            f"{where} must be a positive integer (threads per job), got {value!r}; "
            f"unset it to size each job to its share of the cores"
        )
    return n


@dataclass(frozen=True)
class Budget:
    jobs: int  # jobs sharing the cores
    threads: int  # threads each job may use
    cores: int  # cores they share
    source: str  # "share of the cores", "--threads", "OMP_NUM_THREADS"

    def line(self, what: str = "worker") -> str:
        """e.g. ``2 workers x 1 thread (2 cores)``."""
        why = "" if self.source == "share of the cores" else f", from {self.source}"
        return f"{counted(self.jobs, what)} x {counted(self.threads, 'thread')} ({counted(self.cores, 'core')}{why})"


def budget(jobs: int = 1, threads: int | None = None, n_cores: int | None = None, environ=None) -> Budget:
    """Threads for each of ``jobs`` jobs sharing ``n_cores`` (default: :func:`cores`).

    ``threads`` (``--threads``) wins; else an ``OMP_NUM_THREADS`` the user set; else
    ``max(1, cores // jobs)``.  A :class:`ThreadsError` for a value that is not a positive integer."""
    environ = os.environ if environ is None else environ
    n_cores = n_cores or cores()
    jobs = max(1, int(jobs))
    if threads is not None:
        return Budget(jobs, _positive(threads, "--threads"), n_cores, "--threads")
    if environ.get("OMP_NUM_THREADS"):
        return Budget(jobs, _positive(environ["OMP_NUM_THREADS"], "$OMP_NUM_THREADS"), n_cores, "OMP_NUM_THREADS")
    return Budget(jobs, max(1, n_cores // jobs), n_cores, "share of the cores")


@dataclass(frozen=True)
class Plan:
    """What the sweep chose for its jobs: their thread :class:`Budget` and where they train."""

    budget: Budget
    device: str  # the runs' device: "cpu", "cuda" or "cuda:N"

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    def line(self, what: str = "worker") -> str:
        """The line the sweep prints, e.g. ``threads: 2 workers x 8 threads (16 cores); GPU: 2
        datasets side by side on cuda, ...``."""
        out = f"threads: {self.budget.line(what)}"
        if not self.on_gpu:
            return out
        n = self.budget.jobs
        side = f"{n} datasets side by side on {self.device}" if n > 1 else f"1 dataset at a time on {self.device}"
        return (
            f"{out}; GPU: {side} (each job's {counted(self.budget.threads, 'host thread')} for its data, "
            f"importance fits and baselines)"
        )


def plan(jobs: int, device: str = "cpu", threads: int | None = None, n_cores: int | None = None, environ=None) -> Plan:
    """The sweep's choice for ``jobs`` datasets at once (``--workers``) on ``device``.

    On the CPU every job trains on its share of the cores (:func:`budget`).  On a GPU the ``jobs``
    datasets train side by side on the one device (their kernels interleave: a small dataset's
    epoch leaves the GPU mostly idle), and each keeps its share of the host's cores, ``cores //
    jobs``, for what runs there: loading and preparing its data, its XGBoost importance fits (on
    the CPU where XGBoost has no GPU) and its baselines."""
    return Plan(budget(jobs, threads, n_cores, environ), str(device))


def env(b: Budget | int) -> dict:
    """The environment variables that hold a job (and the libraries it loads) to its threads."""
    n = str(b.threads if isinstance(b, Budget) else int(b))
    return {k: n for k in _VARS}


ALLOCATOR_ENV = {
    "THP_MEM_ALLOC_ENABLE": "1",  # torch: transparent huge pages for its large CPU tensors
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),  # glibc: blocks up to 32 MiB from the heap, not a fresh mmap
    "MALLOC_TRIM_THRESHOLD_": str((1 << 31) - 1),  # ... and freed memory kept (to 2 GiB; mallopt takes an int)
    "MALLOC_TOP_PAD_": str(256 << 20),  # ... grown 256 MiB at a time
}
"""What the jobs' allocators are set to (see the module's text); a variable the user set wins."""
ALLOCATOR_SWITCH = "TCC_ALLOCATOR"
"""``system``: leave the allocators as they are (no :data:`ALLOCATOR_ENV`)."""
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_TOP_PAD_": -2, "MALLOC_MMAP_THRESHOLD_": -3}  # M_* of malloc.h


def allocator_env(environ=None) -> dict:
    """The allocator variables a job gets: :data:`ALLOCATOR_ENV` less those already set in
    ``environ`` (default: this process's), none with ``TCC_ALLOCATOR=system``."""
    environ = os.environ if environ is None else environ
    if environ.get(ALLOCATOR_SWITCH, "").strip().lower() == "system":
        return {}
    return {k: v for k, v in ALLOCATOR_ENV.items() if k not in environ}


def job_env(b: Budget | int) -> dict:
    """The environment a job the sweep starts (a kernel, a worker process, a Dask worker) gets on
    top of its parent's: its threads (:func:`env`) and the allocator settings (:func:`allocator_env`)."""
    return {**env(b), **allocator_env()}


def use_allocator() -> dict:
    """Apply :func:`allocator_env` to this running process, as a job started with it would have
    it: glibc's settings through ``mallopt`` (it read the environment when the process started),
    torch's huge pages through the environment (read at torch's first large allocation: call this
    before importing torch).  Returns what it set; nothing where glibc is not the C library."""
    want = allocator_env()
    os.environ.update(want)  # (children inherit it too)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return {k: v for k, v in want.items() if k not in _MALLOPT}
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return {k: v for k, v in want.items() if k not in _MALLOPT or mallopt(_MALLOPT[k], int(v)) == 1}


def per_job() -> int:
    """Threads this job may use: ``$TCC_THREADS`` (set by the sweep), else ``$OMP_NUM_THREADS``,
    else every core (a job alone on the machine)."""
    for k in (THREADS_ENV, "OMP_NUM_THREADS"):
        v = os.environ.get(k)
        if v:
            try:
                return max(1, int(v))
            except ValueError:
                pass
    return cores()


def n_jobs() -> int:
    """XGBoost's ``n_jobs``: this job's threads."""
    return per_job()


def apply(n: int | None = None) -> int:
    """Hold this running process to ``n`` threads (default :func:`per_job`): the environment its
    children inherit, and torch's intra-op threads.  Returns ``n``."""
    n = per_job() if n is None else int(n)
    os.environ.update(env(n))
    import torch  # deferred: torch takes seconds to import

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
