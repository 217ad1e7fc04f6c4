"""tcclib's own training code keyed by its value: what :data:`~tcclib.artifacts.keys.TRAIN_VERSION` cannot see.

A stored member's key holds ``TRAIN_VERSION`` for tcclib's own code, so the committed results
keep their keys through changes that compute the same numbers.  An edit that changes what
training computes (a built-in rule or objective, a default, a constant, a helper in another
module of tcclib) with ``TRAIN_VERSION`` left as it was would get the old results back with no
word.  So, when a run's keys are computed, the files that decide what a stored result holds
(:data:`FILES`) are read as their tokens (comments, spacing and docstrings do not count:
:func:`tcclib.method.identity.source_tokens`) and compared with the digests recorded for this
``TRAIN_VERSION`` (:mod:`tcclib.artifacts.recorded_code`, written by
``python tools/record_training_code.py``):

* the same: nothing enters a key (the committed keys stay);
* any other: every key of the run (members, baselines, importance matrices) holds the digest of
  the code as it is, so everything it stores trains again under that code, ``config.json``
  records it, and the run names the files that differ (:func:`changed_files`).

A file of them edited on disk since this process imported it is refused in one line
(:class:`~tcclib.method.identity.Unkeyable`): the key would describe code that does not run (a
file last written before ``import tcclib`` is the one the process read, whatever a stale cached
bytecode says).
Reloading one of tcclib's modules in a running kernel is not supported (its other modules keep
the old objects): restart the kernel.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path

from tcclib.artifacts import recorded_code
from tcclib.method import identity
from tcclib.util import started

PACKAGE = Path(__file__).resolve().parents[1]
FILES = ("data/*.py", "method/*.py", "running/train.py", "running/checkpointing.py")
"""The files (under the package folder) whose code decides what a stored result holds."""
NOT_TRAINING = ("method/check.py", "method/estimator.py", "method/identity.py", "method/plugins.py")
"""Files under :data:`FILES` that compute nothing a stored result holds: a rule's contract check,
the estimator (it stores nothing), the keys' reading of a user's code, the plugins' loading."""


def files() -> list[Path]:
    """The training code's files, in a fixed order."""
    found = {path for pattern in FILES for path in PACKAGE.glob(pattern)}
    return sorted(path for path in found if _relative(path) not in NOT_TRAINING)


def current() -> dict[str, str]:
    """``{file: digest of its tokens}`` of the training code as it is on disk; a file edited since
    this process imported it is refused (:class:`~tcclib.method.identity.Unkeyable`)."""
    out = {}
    for path in files():
        name = _relative(path)
        module = sys.modules.get("tcclib." + name.removesuffix(".py").replace("/", "."))
        stat = path.stat()
        if module is not None and stat.st_mtime >= started.IMPORTED_AT and identity.changed_on_disk(module):
            raise identity.Unkeyable(
                f"tcclib's training code: tcclib/{name} changed on disk since this process imported it, so a "
                "key would describe code that does not run: restart the kernel (or the process) before running again"
            )
        out[name] = _digest(str(path), stat.st_mtime_ns, stat.st_size, recorded_code.BYTES.get(name))
    return out


def changed_files(now: dict[str, str] | None = None) -> list[str]:
    """The training code's files (``tcclib/method/rules.py``) whose tokens are not those recorded
    for this ``TRAIN_VERSION``, added and removed files included; empty when all are (``now``:
    :func:`current`, read now when None)."""
    now, recorded = current() if now is None else now, recorded_code.DIGESTS
    return [f"tcclib/{name}" for name in sorted(set(now) | set(recorded)) if now.get(name) != recorded.get(name)]


def identity_now(now: dict[str, str] | None = None) -> str | None:
    """``"code:<digest>"`` of the training code when it is not the recorded one (what every key of
    a run then holds); None when it is (nothing enters a key).  ``now``: as :func:`changed_files`."""
    now = current() if now is None else now
    if now == recorded_code.DIGESTS:
        return None
    joined = "\n".join(f"{name} {digest}" for name, digest in now.items())
    return "code:" + hashlib.sha256(joined.encode()).hexdigest()[: identity.HASH_CHARS]


def describe(changed: list[str]) -> str:
    """What a run says of an edited training code: which files, and what follows."""
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (
        f"tcclib's own training code differs from the code recorded for TRAIN_VERSION {recorded_code.TRAIN_VERSION} "
        f"({shown}): every member, baseline and importance matrix of this run is keyed by the code as it is (nothing "
        "stored under the recorded code is reused)"
    )


@functools.lru_cache(maxsize=256)
def _digest(path: str, mtime_ns: int, size: int, recorded_bytes: str | None = None) -> str:
    """The digest of a file's tokens; a file whose bytes are the recorded ones has the recorded
    digest (no tokenizing: a fresh checkout answers in a few milliseconds)."""
    text = Path(path).read_bytes().replace(b"\r\n", b"\n")
    name = _relative(Path(path))
    if recorded_bytes is not None and _bytes_digest(text) == recorded_bytes:
        return recorded_code.DIGESTS[name]
    return hashlib.sha256(identity.source_tokens(text.decode("utf-8")).encode()).hexdigest()[: identity.HASH_CHARS]


def _bytes_digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()[: identity.HASH_CHARS]


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def record_text(version: int) -> str:
    """The text of :mod:`tcclib.artifacts.recorded_code` for the code as it is, recorded for ``version``."""
    digests = current()
    raw = {_relative(path): _bytes_digest(path.read_bytes().replace(b"\r\n", b"\n")) for path in files()}
    lines = [
        '"""Each file of tcclib\'s training code (:data:`tcclib.artifacts.own_code.FILES`) as the stored results',
        "of ``TRAIN_VERSION`` are computed by it: ``DIGESTS``, its tokens' digest (what is compared); ``BYTES``, its",
        "bytes' (a file whose bytes are these is not tokenized again).  Written by",
        '``python tools/record_training_code.py`` (never by hand), read by :mod:`tcclib.artifacts.own_code`."""',
        "",
        f"TRAIN_VERSION = {int(version)}",
        "DIGESTS = {",
        *(f'    "{name}": "{digest}",' for name, digest in digests.items()),
        "}",
        "BYTES = {",
        *(f'    "{name}": "{digest}",' for name, digest in raw.items()),
        "}",
        "",
    ]
    return "\n".join(lines)
