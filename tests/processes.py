"""Processes seen from /proc, for the tests (and tools) that check an interrupt leaves none."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (state first, then the parent)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False


def descendants(pid: int) -> set[int]:
    """The live processes below ``pid``."""
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = _stat(int(d.name))
            except (OSError, IndexError):
                continue
            if stat[0] != "Z":
                parents[int(d.name)] = int(stat[1])
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        kids = [c for c, p in parents.items() if p == parent]
        found.update(kids)
        todo += kids
    return found


@dataclass
class Interrupted:
    """What :func:`interrupt_when` saw: the exit status, the seconds from SIGINT to the end, the
    processes below the command at the moment of the interrupt, and its output."""

    code: int
    stopped_s: float
    workers: set[int]
    text: str

    @property
    def last_line(self) -> str:
        return [line for line in self.text.splitlines() if line.strip()][-1]


def _default_sigint() -> None:
    """In the child, before its program starts: SIGINT's default action (not an inherited SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_when(cmd: list[str], log: Path, ready, wait_s: float, settle_s: float = 0.0, **popen) -> Interrupted:
    """Run ``cmd`` in a session of its own (output to ``log``) until ``ready()`` (within ``wait_s``
    seconds, failing with the output's end if it ends or times out first), wait ``settle_s``, then
    send SIGINT to its process group as Ctrl-C in a terminal does; killed if still running after 60 s.
    The command starts with SIGINT's default action, as from a terminal: a suite started in the
    background (``make test &``, nohup, a CI runner) has SIGINT ignored, which a child inherits, and
    Python then never turns it into KeyboardInterrupt."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_default_sigint,
            **popen,
        )
    try:
        deadline = time.monotonic() + wait_s
        while not ready():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        time.sleep(settle_s)
        workers = descendants(proc.pid)
        start = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
        return Interrupted(code, time.monotonic() - start, workers, log.read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
