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
import types
from pathlib import Path

from tcclib.artifacts import recorded_code
from tcclib.method import identity
from tcclib.util import as_imported, errors, started

PACKAGE = Path(__file__).resolve().parents[1]
FILES = ("data/*.py", "method/*.py", "artifacts/importances.py", "running/train.py", "running/checkpointing.py")
"""The files (under the package folder) whose code decides what a stored result holds."""
NOT_TRAINING = ("method/check.py", "method/estimator.py", "method/identity.py", "method/plugins.py")
"""Files under :data:`FILES` that compute nothing a stored result holds: a rule's contract check,
the estimator (it stores nothing), the keys' reading of a user's code, the plugins' loading."""


def files() -> list[Path]:
    """The training code's files, in a fixed order."""
    found = {path for pattern in FILES for path in PACKAGE.glob(pattern)}
    return sorted(path for path in found if _relative(path) not in NOT_TRAINING)


SET = "set in this process: "
"""How :func:`current` names a value of :func:`set_in_process`."""


def current(files_only: bool = False) -> dict[str, str]:
    """``{file: digest of its tokens}`` of the training code as it is on disk, and (unless
    ``files_only``) ``{"set in this process: tcclib.method.rules.VIEW": digest of its value}`` for
    each value :func:`set_in_process`; a file edited since this process imported it is refused
    (:class:`~tcclib.method.identity.Unkeyable`)."""
    out = {}
    for path in files():
        name = _relative(path)
        module = sys.modules.get(_module_name(name))
        stat = path.stat()
        if module is not None and stat.st_mtime >= started.IMPORTED_AT and _edited_since_import(module, path):
            raise identity.Unkeyable(
                f"tcclib's training code: tcclib/{name} changed on disk since this process imported it, so a "
                "key would describe code that does not run: restart the kernel (or the process; a sweep's or the "
                "screen's: run the same command again) before running again"
            )
        out[name] = _digest(str(path), stat.st_mtime_ns, stat.st_size, recorded_code.BYTES.get(name))
    if not files_only:
        out.update({SET + name: digest for name, digest in set_in_process().items()})
    return out


def _edited_since_import(module, path: Path) -> bool:
    """Whether ``module``'s file changed on disk since this process imported it, and holds other
    bytes now than then (a file written back as it was, an edit undone, holds the code that runs)."""
    if not identity.changed_on_disk(module):
        return False
    then = as_imported.SOURCE_DIGESTS.get(module.__name__)
    return then is None or then != as_imported.source_digest(str(path))


RUNTIME_STATE = {
    "tcclib.method": ("*",),  # (its submodules, set on the package as they are imported)
    "tcclib.data": ("*",),
    "tcclib.method.registry": (
        "_HOW_RULES",
        "_WHERE_RULES",
        "_OBJECTIVES",
        "_RULE_ORIGIN",
        "_AS_REGISTERED",
        "_OWN_AS_REGISTERED",
        "_BUILT_IN",
        "_OBJECTIVE_ORIGIN",
        "_OBJECTIVE_AS_REGISTERED",
        "_ENTRIES",
        "_REPLACED",
    ),  # (what is registered: keyed by the methods' rules and objectives themselves)
    "tcclib.method.correlation": ("_told",),  # (the notes already printed)
}
"""Names of the training code's modules that change while it runs and compute nothing a stored
result holds (``"*"``: a package's submodules; a ``__dunder__`` name other than a function is not
compared, :func:`tcclib.util.as_imported.names_of`)."""


def set_in_process() -> dict[str, str]:
    """``{"tcclib.method.rules.VIEW": digest of its value}``: each global of the training code's
    modules, and each attribute of a class they define, set, changed in place or removed in this
    process since its file made it (``rules.VIEW = 512``, ``objectives.NTXent.views = 2``, a
    function's ``__defaults__``); empty when none is.  A sweep's kernels import tcclib afresh and
    would not see it (:func:`tcclib.running.sweep.check_keyable` refuses it); a run in this process
    keys by it (:func:`current`).  A value that cannot be keyed is refused
    (:class:`~tcclib.method.identity.Unkeyable`)."""
    out = {}
    for path in files():
        module_name = _module_name(_relative(path))
        module, remembered = sys.modules.get(module_name), as_imported.AS_IMPORTED.get(module_name)
        if module is None or remembered is None:
            continue
        skipped = RUNTIME_STATE.get(module_name, ())
        now = as_imported.names_of(module)
        for name in sorted(set(now) | set(remembered)):
            if name in skipped:
                continue
            if "*" in skipped and isinstance(now.get(name), type(sys)):
                continue
            before = remembered.get(name)
            if before is None and name in now:
                before = _inherited(module, name)  # (a class attribute set to what it inherited)
            if before is not None and name in now and _same(before, now[name]):
                continue
            out[f"{module_name}.{name}"] = (
                "removed" if name not in now else identity.value_identity(now[name], f"{module_name}.{name}")
            )
    return out


def _inherited(module, name: str) -> tuple | None:
    """What ``Class.attr`` (``name``, new on a class of ``module``) resolved to as the files made
    it: the first base class's own attribute, as remembered for a tcclib base (its
    :func:`~tcclib.util.as_imported.parts`) or as it is for another (``object``'s); None when no
    base has it, or for a global."""
    owner, _, attribute = name.rpartition(".")
    cls = getattr(module, owner, None) if owner else None
    if not isinstance(cls, type):
        return None
    for base in cls.__mro__[1:]:
        if attribute in vars(base):
            remembered = as_imported.AS_IMPORTED.get(base.__module__)
            if remembered is None:
                return (vars(base)[attribute],)
            return remembered.get(f"{base.__qualname__}.{attribute}")
    return None


def _same(before: tuple, value) -> bool:
    """Whether ``value`` is what its file made, ``before`` (its :func:`~tcclib.util.as_imported.parts`
    then): a function with the same code, defaults and closure; a list, dict, set or array with
    the same contents; anything else the same object or an equal value (set again)."""
    if isinstance(before[0], types.FunctionType):
        now = as_imported.parts(value)
        return len(now) == len(before) and all(a is b for a, b in zip(before, now))
    copied = len(before) == 2
    if value is before[0] and not copied:
        return True
    as_made = _copy_digest(before[1]) if copied else _value_digest(before[0])
    if as_made is None:  # (no value to key: the object alone)
        return value is before[0]
    return as_made == _value_digest(value)


def _value_digest(value) -> str | None:
    """``value`` by value (:func:`~tcclib.method.identity.value_identity`); None where it has none."""
    try:
        return identity.value_identity(value, "")
    except identity.Unkeyable:
        return None


_COPY_DIGESTS: dict[int, str | None] = {}
""":func:`_value_digest` of each container's copy as imported (the copies never change, and
:data:`~tcclib.util.as_imported.AS_IMPORTED` keeps them, so their ids stay theirs)."""


def _copy_digest(copy) -> str | None:
    if id(copy) not in _COPY_DIGESTS:
        _COPY_DIGESTS[id(copy)] = _value_digest(copy)
    return _COPY_DIGESTS[id(copy)]


def _module_name(name: str) -> str:
    """``tcclib.method.rules`` for ``method/rules.py`` (``tcclib.method`` for ``method/__init__.py``)."""
    return "tcclib." + name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def changed_files(now: dict[str, str] | None = None) -> list[str]:
    """The training code's files (``tcclib/method/rules.py``) whose tokens are not those recorded
    for this ``TRAIN_VERSION``, added and removed files included; empty when all are (``now``:
    :func:`current`, read now when None)."""
    now, recorded = current() if now is None else now, recorded_code.DIGESTS
    changed = [name for name in sorted(set(now) | set(recorded)) if now.get(name) != recorded.get(name)]
    return [f"tcclib/{name}" for name in changed if not name.startswith(SET)] + [
        f"{name.removeprefix(SET)} set in this process" for name in changed if name.startswith(SET)
    ]


def in_words(changed: list[str]) -> str:
    """``tcclib/method/rules.py edited, tcclib.method.rules.VIEW set in this process``: the first
    three of :func:`changed_files` and how many more."""
    said = [name if name.endswith(" set in this process") else f"{name} edited" for name in changed]
    return errors.first_few(said, 3)


def identity_now(now: dict[str, str] | None = None) -> str | None:
    """``"code:<digest>"`` of the training code when it is not the recorded one (what every key of
    a run then holds); None when it is (nothing enters a key).  ``now``: as :func:`changed_files`."""
    identity.torch_defaults_refused()  # (what the code computes under another default dtype no key holds)
    now = current() if now is None else now
    if now == recorded_code.DIGESTS:
        return None
    joined = "\n".join(f"{name} {digest}" for name, digest in now.items())
    return "code:" + hashlib.sha256(joined.encode()).hexdigest()[: identity.HASH_CHARS]


def describe(changed: list[str]) -> str:
    """What a run says of an edited training code: which files (and values set), and what follows."""
    shown = in_words(changed)
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
    digests = current(files_only=True)
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
