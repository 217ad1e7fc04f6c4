"""A user's object keyed by its value: what a content key takes of a rule, a baseline factory or an objective.

A stored member is reused only when its key matches, so the key must hold everything the member's
training can depend on.  For tcclib's own code that is :data:`tcclib.artifacts.keys.TRAIN_VERSION`;
for a user's rule (or factory, or objective) it is :func:`identity`, computed when a run's keys are
computed (never cached from an earlier moment), in two parts:

* ``code``: the code of its classes and functions and of everything they reach, followed into the
  user's own modules and files (a notebook cell, ``python -c``, a plugin file and what it imports
  from the user's folders), not into installed packages or tcclib (named instead): each function's
  source as tokens (comments, blank lines, spacing and docstrings do not count; bytecode where
  there is no source), its defaults, its closure's values, the globals it reads by value (module
  constants of any type, other functions and classes, a user module's attributes it reads), a
  class's attributes by value.  A ``version`` attribute pins the code instead (the author's
  promise: bump it when the draws change).
* ``state``: the object's whole state (its ``__dict__`` and slots), by value.

Values are keyed by what they hold: numbers, text, containers (sets in a sorted order), arrays
and tensors by their bytes, random generators by their state, other objects by what pickling
reduces them to.  What has no value to key (an open file, a generator, a lock, a Python generator's
hidden state) is refused with :class:`Unkeyable`, one line naming the object, the attribute and the
fix, before any work: never keyed in part.  A function whose source file changed on disk since it
was imported (it would run the old code under the new text's key) is refused the same way.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copyreg
import dataclasses
import dis
import functools
import hashlib
import importlib.machinery
import importlib.util
import inspect
import io
import linecache
import os
import re
import site
import sys
import sysconfig
import textwrap
import threading
import time
import tokenize
import types
from pathlib import Path

from tcclib.util import as_imported
from tcclib.util.errors import register_short


class Unkeyable(ValueError):
    """An object's identity cannot be computed by value: one line naming what and the fix."""


register_short(Unkeyable)


def _is_single_dispatch(function) -> bool:
    """Whether ``function`` is ``functools.singledispatch``'s wrapper: keyed by its implementations
    (``registry``, type -> function) and what it wraps, not by its cache of dispatched types."""
    return function.__module__ != "functools" and all(
        hasattr(function, name) for name in ("registry", "dispatch", "register", "_clear_cache")
    )


def _pickles_its_own_way(cls: type) -> bool:
    """Whether a user's class ``cls`` (or a user's class it inherits from) defines how it pickles
    (``__reduce__``, ``__reduce_ex__``, ``__getstate__``): its pickle need not hold its class's code
    nor all of its attributes, so the key takes them besides."""
    return any(
        _written_by_the_user(c) and any(name in vars(c) for name in ("__reduce__", "__reduce_ex__", "__getstate__"))
        for c in cls.__mro__
    )


def _written_by_the_user(cls: type) -> bool:
    """Whether ``cls`` comes from a user's code (:func:`is_followed`): not a class of a module that
    has no file of its own (Cython's shared ``_cython_3_3_1``, the type of its compiled functions)."""
    module = cls.__dict__.get("__module__")
    if not isinstance(module, str) or not is_followed(module):
        return False
    loaded = sys.modules.get(module)
    return module == "__main__" or loaded is None or getattr(loaded, "__file__", None) is not None


def torch_defaults_refused() -> None:
    """Refuse torch's process-wide defaults that change what training computes and that no key
    holds: a default dtype other than float32 (``torch.set_default_dtype``), in one line with the fix."""
    import torch  # deferred: keys are computed where torch is loaded already

    dtype = torch.get_default_dtype()
    if dtype != torch.float32:
        raise Unkeyable(
            f"torch's default dtype is {dtype} in this process (torch.set_default_dtype): tcclib trains in "
            "torch.float32 and no key holds another; put it back with torch.set_default_dtype(torch.float32)"
        )


@dataclasses.dataclass(frozen=True)
class Identity:
    """``code``: ``"code:<hash>"`` or ``"version:<v>"``; ``state``: ``"state:<hash>"`` (None for a
    function or class, whose state is its code)."""

    code: str
    state: str | None = None
    reaches_registry: bool = False  # its code reads tcclib's registry (:data:`REGISTRY_MODULES`)

    @property
    def text(self) -> str:
        return " ".join(p for p in (self.code, self.state) if p)


_SKIPPED_CLASS_ATTRIBUTES = frozenset(
    "__module__ __qualname__ __doc__ __dict__ __weakref__ __firstlineno__ __static_attributes__ "
    "__annotations__ __annotate__ __orig_bases__ __parameters__ __slots__ "
    # caches Python adds to a class as it is used (copy's slot names, abc's registry)
    "__slotnames__ _abc_impl __abstractmethods__".split()
)
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
HASH_CHARS = 16


def is_tcclib(module: str | None) -> bool:
    return module == "tcclib" or (module or "").startswith("tcclib.")


REGISTRY_MODULES = frozenset({"tcclib.method.registry"})
"""The module through which code reaches every rule, objective and baseline registered: an
identity whose code imports or reads it, or calls a function of it
(``from tcclib.method.registry import objective``), says so (:attr:`Identity.reaches_registry`)."""

REGISTRY_NAMES = frozenset({"registry", "METHODS", "_OBJECTIVES", "_HOW_RULES", "_WHERE_RULES", "_ENTRIES"})
"""The names of the registry and its tables: ``registry`` (``registry.objective(...)``,
``tcclib.method.registry``, ``config.registry``), ``METHODS`` (``tcclib.METHODS``,
``config.METHODS``); code that reads one of them (:func:`_reaches_registry`), or ``sys.modules``,
says so too.  Reading ``tcclib`` or ``tcclib.method`` alone does not (a helper such as
``tcclib.method.rules.column_donors`` reaches no registered object)."""

_REACHED = threading.local()
"""``.sets``: the registry modules reached by each identity this thread is computing (innermost last)."""


def _reaching() -> list[set[str]]:
    if not hasattr(_REACHED, "sets"):
        _REACHED.sets = []
    return _REACHED.sets


def _reached(module: str | None) -> None:
    sets = _reaching()
    if sets and module in REGISTRY_MODULES:
        sets[-1].add(module)


def identity(obj, named: str) -> Identity | None:
    """The identity of a user's object (a rule or objective object, a factory function, a
    ``functools.partial``, a callable object); None for tcclib's own classes and functions (keyed
    by ``TRAIN_VERSION``).  ``named``: how a refusal names the object, e.g. ``rule 'nearby' (my_rule.py)``.
    Its :attr:`Identity.reaches_registry` says whether its code or state reads tcclib's registry."""
    _reaching().append(set())
    try:
        found = _identity(obj, named)
    finally:
        reached = _reaching().pop()
    return dataclasses.replace(found, reaches_registry=True) if found is not None and reached else found


def _identity(obj, named: str) -> Identity | None:
    if isinstance(obj, (types.FunctionType, type)):
        if not (user_function(obj) if isinstance(obj, types.FunctionType) else is_followed(obj.__module__)):
            return None
        return Identity(_code_part(obj, obj, named))
    if isinstance(obj, functools.partial):
        if is_tcclib(getattr(obj.func, "__module__", None)):
            return None
        return Identity(_code_part(obj.func, obj, named), _state_part(obj, named, "(the bound arguments)"))
    if isinstance(obj, types.MethodType):  # a bound method: its function, its class and its object's state
        owner = obj.__self__
        owner_class = owner if isinstance(owner, type) else type(owner)
        if not (is_followed(getattr(obj.__func__, "__module__", None)) or is_followed(owner_class.__module__)):
            return None
        code = _code_part((obj.__func__, owner_class), owner, named)
        return Identity(code, None if owner is owner_class else _state_part(owner, named))
    cls = type(obj)
    if not is_followed(cls.__module__):
        return None
    return Identity(_code_part(cls, obj, named), _state_part(obj, named))


def state_identity(obj, named: str, leave_out: frozenset = frozenset()) -> str:
    """``"state:<hash>"``: the whole state of any object (its ``__dict__`` and slots) by value, as a
    user's rule's ``state`` part is keyed, but the attributes named in ``leave_out`` (what cannot be
    keyed is :class:`Unkeyable`)."""
    return _state_part(obj, named, leave_out=leave_out)


def value_identity(value, named: str) -> str:
    """``"value:<hash>"``: any value by value, as a rule's state is keyed; a function of tcclib's
    own (elsewhere named, not followed) with its code, defaults and closure's contents, so that
    ``f.__defaults__`` set in this process is seen (what cannot be keyed is :class:`Unkeyable`)."""
    walker = _Walker(named, "its value")
    function = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    if isinstance(function, types.FunctionType) and not user_function(function):
        walker.put("function", function.__module__, function.__qualname__, _bytecode_text(function.__code__))
        walker.defaults_and_closure(function, named)
    else:
        walker.value(function, named)
    return f"value:{walker.digest()}"


def attribute_digests(obj) -> dict[str, str]:
    """Each attribute (and slot) of ``obj`` by value, one digest each (``"unkeyable"`` where it
    cannot be keyed): what :func:`tcclib.check_rule` compares before and after a rule trains, to
    name an attribute the rule set on itself."""
    state = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for slot in cls.__dict__.get("__slots__", ()):
            for name in (slot,) if isinstance(slot, str) else slot:
                if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                    state[name] = getattr(obj, name)
    out = {}
    for name, value in state.items():
        walker = _Walker("", "its state")
        try:
            walker.value(value, name)
            out[name] = walker.digest()
        except Unkeyable:
            out[name] = "unkeyable"
    return out


def _code_part(code_root, obj, named: str) -> str:
    version = getattr(obj, "version", None)
    if version is not None:
        return f"version:{version}"
    walker = _Walker(named, "its code")
    walker.value(code_root, _name_of(code_root))
    return f"code:{walker.digest()}"


def _state_part(obj, named: str, label: str = "", leave_out: frozenset = frozenset()) -> str:
    walker = _Walker(named, "its state")
    if isinstance(obj, functools.partial):
        walker.value((obj.args, obj.keywords), label)
    else:
        walker.instance_state(obj, "self", leave_out)
    return f"state:{walker.digest()}"


def _name_of(obj) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__qualname__


# --------------------------------------------------------------------------- whose code is followed


@functools.cache
def _install_roots() -> tuple[str, ...]:
    """The folders of installed code: the standard library and every site-packages."""
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= set(site.getsitepackages()) | {site.getusersitepackages()}
    roots |= {os.path.join(p, "lib") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return tuple(sorted({os.path.realpath(r) + os.sep for r in roots if r}))


@functools.cache
def _installed_file(file: str) -> bool:
    return os.path.realpath(file).startswith(_install_roots())


def is_followed(module: str | None) -> bool:
    """Whether code of ``module`` is the user's own, keyed by value (a cell, ``python -c``, a
    script, a plugin file and the user's modules beside it), not installed code or tcclib's."""
    if not module or module == "__main__":
        return True
    if is_tcclib(module) or module in sys.builtin_module_names:
        return False
    loaded = sys.modules.get(module)
    if loaded is None:
        return True  # (no longer importable: by value, the side that retrains)
    file = getattr(loaded, "__file__", None)
    if not file:
        spec = getattr(loaded, "__spec__", None)
        return getattr(spec, "origin", None) not in ("built-in", "frozen")
    return not _installed_file(file)


def user_function(function) -> bool:
    """Whether ``function`` (a plain function) is the user's own code: its module says so, or the
    module its code runs in does (``functools.wraps(F.mse_loss)`` on a helper of the user's copies
    torch's ``__module__`` onto it; the globals it reads stay the user's)."""
    if is_followed(function.__module__):
        return True
    home = function.__globals__.get("__name__")
    return isinstance(home, str) and (home == "__main__" or home in sys.modules) and is_followed(home)


def _extension_digest(module) -> str:
    """The bytes' digest of a user's own compiled module (a ``.so`` or ``.pyd`` built beside the
    plugin: no source to key, so its file is its code), ``""`` for any other module or object."""
    file = getattr(module, "__file__", None)
    if not (
        isinstance(module, types.ModuleType) and file and file.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    ):
        return ""
    if not is_followed(module.__name__):
        return ""
    return hashlib.sha256(Path(file).read_bytes()).hexdigest()[:HASH_CHARS]


def _made_elsewhere(cls: type) -> bool:
    """Whether a class whose ``__module__`` names installed code was made by a user's call, not
    defined there: ``dataclasses.make_dataclass`` and ``types.new_class`` give it the module
    ``types`` (Python 3.11), where no name finds it; keyed by value as the user's."""
    return cls.__module__ in _MAKERS and not _found_by_name(cls)


_MAKERS = ("types", "dataclasses", "abc", "typing", "collections", "enum")
"""Modules whose functions make classes for the caller (the made class may name one of them)."""


def _found_by_name(cls: type) -> bool:
    found = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


# --------------------------------------------------------------------------- the walk


class _Walker:
    """Feeds a value's parts, in a fixed order, to one sha256 (``what``: whose, for refusals)."""

    def __init__(self, named: str, part: str):
        self.named, self.part = named, part
        self.checked: set[str] = set()  # the user's modules checked against their files
        self.hash = hashlib.sha256()
        self.seen: dict[int, int] = {}
        self.alive: list = []  # (so that no id is reused while walking)
        self.whole: set[str] = set()  # the user's modules walked whole (a package and its submodules)
        self.classes: list[type] = []  # the user's classes walked (their subclasses, where code reads them)
        self.reads_subclasses = False  # (code that picks among cls.__subclasses__(), naming none of them)

    def digest(self) -> str:
        self._subclasses()
        return self.hash.hexdigest()[:HASH_CHARS]

    def _subclasses(self) -> None:
        """Where the code reads ``__subclasses__``: every subclass of the user's of each user's
        class walked, and theirs (the code may pick any of them without naming it)."""
        done = 0
        while self.reads_subclasses and done < len(self.classes):
            cls, done = self.classes[done], done + 1
            for sub in sorted(type.__subclasses__(cls), key=lambda c: (c.__qualname__, c.__module__)):
                if _written_by_the_user(sub):
                    self.put("subclass", sub.__qualname__)
                    self.value(sub, f"{cls.__qualname__}.__subclasses__()")

    def put(self, *parts) -> None:
        for part in parts:
            self.hash.update(part if isinstance(part, bytes) else str(part).encode("utf-8", "surrogatepass"))
            self.hash.update(b"\x00")

    def refuse(self, path: str, obj, why: str, fix: str = "") -> Unkeyable:
        kind = type(obj).__qualname__
        if not kind.startswith(f"{type(obj).__module__}."):  # (torch's ScriptFunction names its module itself)
            kind = f"{type(obj).__module__}.{kind}".removeprefix("builtins.")
        fix = fix or "make it a plain value (numbers, text, arrays, containers of them), or " + (
            "create it in prepare() (what prepare returns lives for one run)"
            if self.part == "its state"
            else "make the change in tcclib's file"
            if self.part == "its value"
            else "set `version` on the rule (the version then stands for its code: bump it when its draws change)"
        )
        what = f"{path} {why}" if isinstance(obj, types.CodeType) else f"{path} is {kind} ({why})"
        return Unkeyable(f"{self.named}: {self.part} cannot be keyed by value: {what}; {fix}")

    def _first_visit(self, obj) -> bool:
        if id(obj) in self.seen:
            self.put("ref", self.seen[id(obj)])
            return False
        self.seen[id(obj)] = len(self.seen)
        self.alive.append(obj)
        return True

    # ------------------------------------------------------------------ values

    def value(self, obj, path: str) -> None:
        kind = type(obj)
        if kind in _PLAIN:
            self.put(kind.__name__, repr(obj))
            return
        if _is_environment(obj):  # (a default `get=os.getenv`, a closure or an attribute holding os.environ)
            raise self.refuse(
                path,
                obj,
                "it reads the environment as the code runs, which no key sees",
                _ENVIRONMENT_FIX,
            )
        if kind not in (tuple, frozenset) and not self._first_visit(obj):
            return  # (immutable containers are walked each time: equal values, equal keys)
        if kind in (list, tuple, dict) and _all_plain(obj):
            self.put(kind.__name__, repr(obj))  # (a container of plain values at once: its text)
        elif kind in (list, tuple):
            self.put(kind.__name__, len(obj))
            for i, item in enumerate(obj):
                self.value(item, f"{path}[{i}]")
        elif kind is dict or kind is types.MappingProxyType:
            self.put("dict", len(obj))
            for key, item in obj.items():
                self.value(key, f"{path} (a key)")
                self.value(item, f"{path}[{key!r}]")
        elif kind in (set, frozenset):
            self.put(kind.__name__, len(obj), *sorted(self._digest_of(item, f"{path} (an element)") for item in obj))
        elif isinstance(obj, type):
            self.klass(obj, path)
        elif kind is types.FunctionType:
            self.function(obj, path)
        elif kind is types.ModuleType:
            self.module(obj, None)
        elif kind is types.MethodType:
            self.put("method", obj.__func__.__name__)
            self.value(obj.__func__, path)
            self.value(obj.__self__, f"{path}.__self__")
        elif kind is types.BuiltinFunctionType or kind is types.BuiltinMethodType:
            self._builtin(obj, path)
        elif kind is types.CodeType:
            self.put("code", _bytecode_text(obj))
        elif kind in (staticmethod, classmethod):  # (PENALTIES = {"l1": _l1} in a class body)
            self._member(obj, path)
        elif isinstance(obj, io.IOBase) and obj.closed:  # (`with open(...) as f` at a module's top: nothing to read)
            self.put("closed", kind.__name__)
        elif not self._array(obj, path):
            self._reduced(obj, path)

    def _digest_of(self, obj, path: str) -> str:
        inner = _Walker(self.named, self.part)
        inner.value(obj, path)
        return inner.hash.hexdigest()

    def _builtin(self, obj, path: str) -> None:
        if _dynamic_builtin(obj):  # (EVALUATE = eval; a default f=exec)
            raise self.refuse(path, obj, f"it is {obj.__name__}(), which reads {_GLOBALS_BY_STRING}", _GLOBALS_FIX)
        owner = getattr(obj, "__self__", None)
        if owner is None or isinstance(owner, types.ModuleType):
            self.put("builtin", getattr(owner, "__name__", ""), obj.__qualname__)
            compiled = _extension_digest(owner)  # (a function of the user's own compiled module: its file)
            if compiled:
                self.put("compiled", compiled)
        else:  # a bound method of an object (e.g. a generator's random): its object by value
            self.put("bound", obj.__name__)
            self.value(owner, f"{path}.__self__")

    def _array(self, obj, path: str) -> bool:
        """Arrays, tensors and random generators by their values; False for anything else."""
        np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
        if np is not None:
            if isinstance(obj, np.ndarray):
                if obj.dtype.hasobject:
                    self.put("ndarray-object", obj.shape)
                    self.value(obj.tolist(), path)
                else:
                    self.put(
                        "ndarray", obj.dtype.str, obj.shape, hashlib.sha256(memoryview(_contiguous(np, obj))).digest()
                    )
                if obj.dtype.names is not None:  # (a structured dtype: its fields' names, types and offsets)
                    self.put("fields", repr(obj.dtype))
                if type(obj) is not np.ndarray:  # (np.matrix, a masked array, a user's subclass)
                    self._array_subclass(obj, path)
                return True
            if isinstance(obj, np.generic):
                self.put("npscalar", obj.dtype.str, obj.tobytes())
                if obj.dtype.names is not None:
                    self.put("fields", repr(obj.dtype))
                return True
            if isinstance(obj, (np.random.Generator, np.random.BitGenerator)):
                self.put(type(obj).__qualname__)
                self.value((obj.bit_generator if isinstance(obj, np.random.Generator) else obj).state, path)
                return True
            if obj is getattr(np.random.mtrand, "_rand", None):  # (numpy's global one, held by scipy.stats)
                self.put("global RandomState")  # (its state moves with every np.random draw: named, as seeded by
                return True  # the run; the probe's draws fix it)
            if isinstance(obj, np.random.RandomState):
                self.put("RandomState")
                self.value(obj.get_state(legacy=False), path)
                return True
        if torch is not None:
            if isinstance(obj, torch.Tensor):
                self._tensor(torch, obj, path)
                if _written_by_the_user(type(obj)):  # (a user's Tensor subclass: its code and attributes)
                    self._array_subclass(obj, path)
                return True
            if isinstance(obj, torch.Generator):
                self.put("torch.Generator", str(obj.device))
                self._tensor(torch, obj.get_state(), path)
                return True
            if isinstance(obj, (torch.device, torch.dtype)):
                self.put(type(obj).__qualname__, str(obj))
                return True
        return False

    def _array_subclass(self, obj, path: str) -> None:
        """What an array of a subclass holds besides its values: its class (a user's by its code),
        a masked array's mask and fill value, and the attributes set on it."""
        self.value(type(obj), f"{path} (its class)")
        masked = sys.modules.get("numpy.ma")
        if masked is not None and isinstance(obj, masked.MaskedArray):
            self.value(masked.getmaskarray(obj), f"{path} (its mask)")
            self.value(obj.fill_value, f"{path} (its fill value)")
        elif isinstance(obj, sys.modules["numpy"].memmap):  # (np.load(mmap_mode="r"): its values, keyed above)
            return
        elif getattr(obj, "__dict__", None):
            self.value(dict(obj.__dict__), f"{path} (its attributes)")

    def _tensor(self, torch, obj, path: str) -> None:
        try:
            if obj.layout != torch.strided:  # (a sparse tensor: its layout and its values as a dense one)
                self.put("layout", str(obj.layout))
                obj = obj.to_dense()
            obj = obj.resolve_conj().resolve_neg()  # (a conjugate or negative view: the values it reads as)
            flat = obj.detach().to("cpu").contiguous().reshape(-1)
            data = flat.view(torch.uint8) if flat.dtype != torch.bool else flat.to(torch.uint8)
            raw = data.numpy().tobytes()
        except (RuntimeError, TypeError) as e:
            raise self.refuse(path, obj, f"its values cannot be read: {_first_line(e)}") from None
        self.put("tensor", str(obj.dtype), tuple(obj.shape), hashlib.sha256(raw).digest())

    def _reduced(self, obj, path: str) -> None:
        """Any other object by what pickling reduces it to (its class and state); refused when
        it cannot be pickled (an open file, a lock, a generator)."""
        if type(obj).__name__ == "CustomOpDef" and type(obj).__module__.startswith("torch."):
            raise self.refuse(path, obj, "a custom operator, whose code no key follows", _CUSTOM_OP_FIX)
        if type(obj).__name__ == "ufunc" and str(getattr(obj, "__name__", "")).endswith(" (vectorized)"):
            why = "a ufunc made by np.frompyfunc, keyed by its name alone: numpy gives back no function to key"
            raise self.refuse(path, obj, why, "use np.vectorize(function), whose function is keyed by value")
        try:  # (as pickle does: a reducer registered with copyreg first, numpy's ufuncs and re's patterns)
            reducer = copyreg.dispatch_table.get(type(obj))
            reduced = reducer(obj) if reducer is not None else obj.__reduce_ex__(4)
        except Exception as e:  # (what pickling refuses has no value to key)
            raise self.refuse(path, obj, f"it has no value to key: {_first_line(e)}") from None
        users_reducer = reducer is not None and (
            _written_by_the_user(type(obj)) or (isinstance(reducer, types.FunctionType) and user_function(reducer))
        )  # (copyreg.pickle(Knob, reducer): the reducer decides what its pickle holds)
        if users_reducer or _pickles_its_own_way(type(obj)):  # (its pickle may leave out what it computes with)
            self.put("own pickling")
            self.value(type(obj), f"{path} (its class)")
            self.value(_attributes_and_slots(obj), f"{path} (its attributes)")
            if users_reducer:
                self.value(reducer, f"{path} (its copyreg reducer)")
        if isinstance(reduced, str):  # a module-level singleton, named
            self.put("global", type(obj).__module__, reduced)
            wrapped = getattr(obj, "__wrapped__", None)
            if wrapped is not None:  # (functools.lru_cache and cache: the function they call, by value)
                self.value(wrapped, f"{path} (the function it wraps)")
                _emptied(obj, wrapped)
            return
        constructor, arguments, state, items, entries = (*reduced, None, None, None)[:5]
        self.put("reduce")
        if _dynamic_builtin(constructor):  # (an installed object rebuilt by eval of its repr: pickling's, not its code)
            self.put("builtin", constructor.__name__)
        else:
            self.value(constructor, f"{path} (its constructor)")
        self.value(arguments, path)
        self._state(state, path)
        self.value(None if items is None else list(items), f"{path} (its items)")
        self.value(None if entries is None else list(entries), f"{path} (its entries)")

    def _state(self, state, path: str) -> None:
        if isinstance(state, dict):
            self.put("state", len(state))
            for key in sorted(state, key=str):
                self.value(key, f"{path} (an attribute name)")
                self.value(state[key], f"{path}.{key}")
        elif isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):  # (dict, slots)
            self._state(state[0] or {}, path)
            self._state(state[1], path)
        else:
            self.value(state, path)

    def instance_state(self, obj, path: str, leave_out: frozenset = frozenset()) -> None:
        """The whole state of an object whose class is keyed as code: its attributes and slots
        (but those named in ``leave_out``)."""
        self._state({k: v for k, v in _attributes_and_slots(obj).items() if k not in leave_out}, path)

    # ------------------------------------------------------------------ code

    def _check_file(self, module: str) -> None:
        """Refuse a user's module whose file changed on disk since this process imported it: its
        values in memory are not what the file says (a constant edited in a helper file)."""
        if module in self.checked:
            return
        self.checked.add(module)
        if _notebooks_namespace(sys.modules.get(module)):
            return  # (the notebook's namespace, its __file__ set by `%run -i script.py`: functions checked one by one)
        file = changed_on_disk(sys.modules.get(module))
        if file:
            raise stale_source(self.named, module, file)

    def klass(self, cls: type, path: str) -> None:
        if not is_followed(cls.__module__) and not _made_elsewhere(cls):
            self.put("global", cls.__module__, cls.__qualname__)
            return
        self._check_file(cls.__module__)
        self.classes.append(cls)
        self.put("class", cls.__qualname__, len(cls.__bases__))
        for base in cls.__bases__:
            self.value(base, f"{path} (a base class)")
        if type(cls) is not type:
            self.value(type(cls), f"{path} (its metaclass)")
        for name in sorted(vars(cls)):
            if name in _SKIPPED_CLASS_ATTRIBUTES:
                continue
            self.put(name)
            self._member(vars(cls)[name], f"{cls.__qualname__}.{name}")

    def _member(self, member, path: str) -> None:
        if isinstance(member, (staticmethod, classmethod)):
            self.put(type(member).__name__)
            self.value(member.__func__, path)
        elif isinstance(member, functools.cached_property):
            self.put("cached_property", member.attrname)
            self.value(member.func, path)
        elif isinstance(member, property):
            self.put("property")
            for part in (member.fget, member.fset, member.fdel):
                self.value(part, path)
        else:
            self.value(member, path)

    def defaults_and_closure(self, function: types.FunctionType, path: str) -> None:
        """A function's defaults and the contents of its closure's cells, by value."""
        self.value(function.__defaults__, f"{path} (its defaults)")
        self.value(function.__kwdefaults__, f"{path} (its keyword defaults)")
        for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell (a name not yet bound in the enclosing function)
                self.put("empty", name)
                continue
            self.put("free", name)
            self.value(contents, f"{path} (its closure's {name})")

    def function(self, function: types.FunctionType, path: str) -> None:
        if not user_function(function):
            self.put("global", function.__module__, function.__qualname__)
            _reached(function.__module__)
            return
        code = function.__code__
        if not own_code_file(code.co_filename):  # a wrapper an installed decorator made (torch.no_grad,
            # functools.wraps gives it the wrapped function's name and module): named, with what it holds
            self.put("wrapper", Path(code.co_filename).name, _qualified_name(function))
            attributes = {k: v for k, v in function.__dict__.items() if k not in _PROCESS_IDS}
            if _is_single_dispatch(function):  # (its implementations by type; its dispatch cache holds weakrefs)
                attributes = {"registry": dict(function.registry), "__wrapped__": attributes.get("__wrapped__")}
            else:
                self.defaults_and_closure(function, path)
            self.value(attributes, f"{path} (its attributes)")  # (__wrapped__ among them)
            return
        self._check_file(function.__globals__.get("__name__", function.__module__))
        self.put("function", function.__qualname__, _source_or_bytecode(function, self))
        self.defaults_and_closure(function, path)
        names = _global_names(code)
        self.reads_subclasses = self.reads_subclasses or "__subclasses__" in names
        namespace = function.__globals__
        read_from = _module_attributes(code, namespace)  # ({(module, attribute)}: os.environ, sys.modules)
        # (sys.modules read, not net.modules(): a table of modules found by strings, the registry among them)
        module_table = ("sys", "modules") in read_from or namespace.get("modules") is sys.modules
        imports = _imported_modules(code, function.__globals__.get("__package__"))
        if _reaches_registry(names, namespace, read_from, imports) or module_table:
            _reached("tcclib.method.registry")
        loaded = _loaded_globals(code)
        strings = {c for c in _constants(code) if isinstance(c, str)}  # (getattr(helper, "__globals__"))
        off_builtins = {a for m, a in read_from if m == "builtins"} | (  # (builtins.eval(t), getattr(builtins, "exec"))
            strings if _DYNAMIC_ATTRIBUTES.intersection(names) and namespace.get("builtins") is builtins else set()
        )
        dynamic = _DYNAMIC_GLOBALS.intersection({*loaded, *off_builtins})
        reads_globals = "/".join(f"{name}()" for name in sorted(dynamic))
        if not reads_globals and module_table and "__name__" in loaded:
            reads_globals = "sys.modules[__name__]"  # (its own module looked up by a string, as globals())
        verb = "calls"
        by_string = _DYNAMIC_ATTRIBUTES.intersection(names)  # (getattr(helpers, "f" + x): the whole module)
        finds_modules = _IMPORTS_BY_NAME.intersection(names) | ({"modules"} if module_table else set())
        frame_globals = _FRAME_GLOBALS.intersection({*names, *strings})
        if not reads_globals and frame_globals:  # (sys._getframe().f_globals["X"])
            verb, reads_globals = "reads", "/".join(f".{name}" for name in sorted(frame_globals))
        if reads_globals:
            raise self.refuse(path, code, f"{verb} {reads_globals}, which reads {_GLOBALS_BY_STRING}", _GLOBALS_FIX)
        imported = list(imports)
        if finds_modules:  # (__import__("os"), import_module("os"))
            imported += sorted(strings)
        values = [namespace[name] for name in names if name in namespace]
        reached = _modules_reached(values, names, imported)
        by_name = strings if by_string else set()  # (getattr(os, "environ"), vars(os)["getenv"])

        def read(modules) -> set[str]:  # (what the code reads off these modules: os.environ, not self.environ)
            lost = set(imported).intersection(modules) or any((ESCAPED, m) in read_from for m in modules)
            loose = names if lost else ()  # (__import__("os").environ, o = os; o.environ: by name)
            return {a for m, a in read_from if m in modules} | set(loose) | by_name

        environment = _environment_read(values, reached, read(_ENVIRONMENT_MODULES), read(("sys",)))
        if not environment and "input" in loaded and "input" not in namespace:
            environment = "input(), standard input"
        if environment:
            raise self.refuse(
                path, code, f"reads the environment ({environment}) as it runs, which no key sees", _ENVIRONMENT_FIX
            )
        program = _program_run(values, reached, read(("os", "posix", "nt")))
        if program:
            raise self.refuse(
                path,
                code,
                f"runs another program or native code ({program}) as it runs, whose output no key sees",
                "run it where the object is made and pass what it gives to the constructor (the object's state), or "
                "set `version` on the rule (bump it when what it gives changes)",
            )
        unseen = _unseen_reader(values, names)
        if unseen:
            raise self.refuse(
                path,
                code,
                f"reaches {unseen}, which reads files where no key sees (in native code or on another thread: no "
                "`open` event here)",
                "read the file with open(), np.load or pd.read_csv (their bytes are keyed), or where the object is "
                "made and pass the values to the constructor, or set `version` (bump it when the file changes)",
            )
        custom = sorted(_user_op_namespaces().intersection(names)) if "ops" in names else []
        if custom:  # (torch.ops.mine.boost(z): an operator defined with torch.library in the user's code)
            why = f"calls the custom operators of torch.ops.{custom[0]}, whose code no key follows"
            raise self.refuse(path, code, why, _CUSTOM_OP_FIX)
        kl_functions = _user_kl_functions() if "kl_divergence" in names else {}
        if kl_functions:  # (torch.distributions.kl_divergence: the user's @register_kl functions)
            self.value(kl_functions, f"{path} (the KL divergences registered)")
        if _DOCUMENTATION_READS.intersection(names):  # (docstrings, annotations or source text read as data)
            self.documentation(namespace, bool(_SOURCE_READS.intersection(names)), set())
        own_module = (module_table or "getmodule" in names) and (bool(by_string) or "__module__" in names)
        if own_module and function.__module__ in sys.modules:
            # (vars(sys.modules[type(self).__module__])["X"], getattr(inspect.getmodule(...), "X"))
            self.module(sys.modules[function.__module__], None)
        for module_name in imports:  # (an import inside the function: `from helpers import f`, `from .h import f`)
            self.module_named(module_name, None if by_string else names)
        for name in names:
            if name in namespace:
                value = namespace[name]
                self.put("global", name)
                if isinstance(value, types.ModuleType):
                    # (a module handed on, `read(knobs)`, `return knobs`, `self.m = knobs`: whole)
                    escapes = (ESCAPED, value.__name__) in read_from
                    self.module(value, None if by_string or escapes else names)
                else:
                    self.value(value, f"{_module_label(namespace)}{name}")
            elif hasattr(builtins, name):
                self.put("builtin", name)
                value = getattr(builtins, name)
                if _put_in_builtins(value):  # (builtins.SCALE = 2: a value of the user's)
                    self.value(value, f"builtins.{name}")
        if finds_modules:  # (sys.modules["knobs_" + kind]: refused; its own module: keyed)
            self.imported_by_name(code, path, refuse=not own_module)
        if function.__dict__:
            self.value(dict(function.__dict__), f"{path} (its attributes)")

    def documentation(self, namespace: dict, source: bool, done: set) -> None:
        """The docstrings and annotations of the user's classes and functions in ``namespace`` (and
        of the classes' functions, and of the user's modules it holds), which code that reads them
        as data (``__doc__``, ``typing.get_type_hints``) computes with: otherwise no key holds them;
        with ``source``, the text of their files as well, comments included (``inspect.getsource``,
        ``getcomments``)."""
        if id(namespace) in done:
            return
        done.add(id(namespace))
        for name in sorted(namespace):
            value = namespace[name]
            if isinstance(value, types.ModuleType) and is_followed(value.__name__):
                self.documentation(vars(value), source, done)
                continue
            if not isinstance(value, (type, types.FunctionType)) or not is_followed(getattr(value, "__module__", None)):
                continue
            file = getattr(getattr(value, "__code__", None), "co_filename", None) or getattr(
                sys.modules.get(value.__module__), "__file__", None
            )
            if source and file and file not in done:
                done.add(file)
                self.put("source text", hashlib.sha256("".join(linecache.getlines(file)).encode()).hexdigest())
            parts = [value]
            if isinstance(value, type):
                parts += [v for v in vars(value).values() if isinstance(v, types.FunctionType)]
            for part in parts:  # (a class's own annotations; a function's are no entry of its __dict__)
                notes = vars(part).get("__annotations__", {}) if isinstance(part, type) else part.__annotations__
                self.put("documented", name, repr(part.__doc__), repr(notes))

    def imported_by_name(self, code: types.CodeType, path: str, refuse: bool = True) -> None:
        """The user's modules a function imports or finds by a string (``importlib.import_module("h")``,
        ``sys.modules["h"]``), each whole (imported now if it is not yet); an import where no string in
        its code names a module (a computed name) is refused."""
        texts = sorted({c for c in _constants(code) if isinstance(c, str)})
        found = [name for name in _module_candidates(texts) if self.module_named(name, None)]
        if not found and refuse:
            raise self.refuse(
                path,
                code,
                "imports a module by a computed name, which a key cannot follow: import it by name at "
                "the top of the file",
            )

    def module_named(self, name: str, names) -> bool:
        """The module ``name`` (:meth:`module`, ``names`` as there), a user's imported now if it is not
        yet (by name where installed); False where there is none."""
        module = sys.modules.get(name)
        if isinstance(module, types.ModuleType):
            self.module(module, names)
            return True
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return False
        origin = getattr(spec, "origin", None)
        if not (origin and os.path.isfile(origin)):
            return False
        if not own_code_file(origin):
            self.put("module", name)
            _reached(name)
            return True
        try:  # (imported now, as the code will when it runs: keyed the same before and after)
            module = importlib.import_module(name)
        except Exception as e:
            raise self.refuse(name, spec, f"importing it failed: {_first_line(e)}") from None
        self.module(module, names)
        return True

    def module(self, module: types.ModuleType, names) -> None:
        """A module: by name when installed (or tcclib's); a user's by the values of the
        attributes read (``names``; every attribute of its own when reached from a state)."""
        self.put("module", module.__name__)
        _reached(module.__name__)
        if module is builtins:  # (getattr(builtins, "X"), vars(builtins): the values a user put there)
            for name in sorted(vars(builtins)) if names is None else names:
                if name in vars(builtins) and _put_in_builtins(vars(builtins)[name]):
                    self.put("builtin", name)
                    self.value(vars(builtins)[name], f"builtins.{name}")
            return
        if not is_followed(module.__name__):
            return
        whole = names is None
        if whole:
            if module.__name__ in self.whole:
                return
            self.whole.add(module.__name__)
        compiled = _extension_digest(module)
        if compiled:
            self.put("compiled", compiled)
        self._check_file(module.__name__)
        if names is None:
            names = sorted(n for n, v in vars(module).items() if not n.startswith("__") and not _shells_own(module, n))
        if "__getattr__" in vars(module):  # (PEP 562: any attribute read may come from it)
            names = sorted({*names, "__getattr__"})
        if type(module) is not types.ModuleType and _written_by_the_user(type(module)):
            # (sys.modules[__name__].__class__ = Lazy: its properties and methods serve attributes)
            self.value(type(module), f"{module.__name__} (its module class)")
        for name in names:
            if name in vars(module):
                self.put("attribute", name)
                value = vars(module)[name]
                if isinstance(value, types.ModuleType):  # (a submodule: whole where its package is)
                    self.module(value, None if whole else names if value is not module else ())
                else:
                    self.value(value, f"{_module_label(vars(module))}{name}")


_SHELL_NAMES = re.compile(r"_|_\d+|_i+|_i\d+|_ii+|_oh|_dh|_ih|In|Out|exit|quit|get_ipython")
"""The names IPython keeps in a notebook's namespace: its history (``_``, ``_5``, ``_i5``, ``In``,
``Out``), its ``exit``/``quit`` and ``get_ipython``; not the user's values."""


def _shells_own(module: types.ModuleType, name: str) -> bool:
    """Whether ``name`` of ``module`` is IPython's, in a notebook's namespace (``__main__`` under a
    kernel): left out where the user's module is keyed whole (``vars(sys.modules["__main__"])``),
    which would otherwise refuse IPython's objects and move with every cell's output."""
    return bool(_SHELL_NAMES.fullmatch(name)) and _notebooks_namespace(module)


def _notebooks_namespace(module) -> bool:
    """Whether ``module`` is the namespace of the notebook (IPython's user module) this process runs,
    or the module IPython runs a script in (``%run script.py``, which it keeps for the script and
    fills afresh at each ``%run``): its functions are checked against their files one by one."""
    shell = sys.modules.get("IPython")
    if shell is None or getattr(module, "__name__", None) != "__main__":
        return False
    ipython = shell.get_ipython()
    if ipython is None:
        return False
    runs = getattr(ipython, "_main_mod_cache", None)  # (%run script.py: a module per script, run afresh each time)
    return ipython.user_module is module or (isinstance(runs, dict) and any(m is module for m in runs.values()))


def _module_label(namespace: dict) -> str:
    """How a refusal names a module's global: ``my_rule.py's ``, ``the cell's ``."""
    file = namespace.get("__file__")
    if file:
        return f"{Path(file).name}'s "
    return (
        "the notebook cell's (or script's) "
        if namespace.get("__name__") == "__main__"
        else f"{namespace.get('__name__')}."
    )


def _all_plain(container) -> bool:
    items = container.items() if isinstance(container, dict) else ((item,) for item in container)
    return all(type(part) in _PLAIN for pair in items for part in pair)


def _contiguous(np, array):
    return np.ascontiguousarray(array).view(np.uint8) if array.size else b""


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _attributes_and_slots(obj) -> dict:
    """An object's attributes (its ``__dict__``) and the values of its slots."""
    state = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for slot in cls.__dict__.get("__slots__", ()) if isinstance(cls, type) else ():
            for name in (slot,) if isinstance(slot, str) else slot:
                if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                    state[name] = getattr(obj, name)
    return state


def _put_in_builtins(value) -> bool:
    """Whether a value found in ``builtins`` is one a user put there (``builtins.SCALE = 2``: data, an
    array, or a function, class or object of the user's code), keyed by value; Python's own
    (functions, classes, constants) and what an installed package puts there (IPython's
    ``get_ipython``, site's ``help``) are named."""
    if isinstance(value, (types.BuiltinFunctionType, type(NotImplemented), type(Ellipsis), bool)):
        return False
    if isinstance(value, (*_PLAIN, list, tuple, dict, set, frozenset)) or type(value).__module__ in ("numpy", "torch"):
        return True
    return is_followed(value.__module__ if isinstance(value, (types.FunctionType, type)) else type(value).__module__)


_PROCESS_IDS = frozenset({"_torchdynamo_wrapper_id", "_isolate_recompiles_id"})
"""Attributes of a wrapper that an installed decorator made (``torch.compile``) that number it in this
process only: left out of its key (what it wraps and its options are keyed)."""
_CUSTOM_OP_FIX = "call a plain function instead (a torch.autograd.Function for a backward of your own)"
_DYNAMIC_ATTRIBUTES = frozenset(
    "getattr hasattr vars dir __dict__ __getattribute__ attrgetter methodcaller getmembers getattr_static".split()
)
"""Names whose use reads a module's attributes by a string: a user module the code reaches is keyed whole."""
_DYNAMIC_GLOBALS = frozenset({"globals", "eval", "exec"})
"""Builtins that read the function's own module's globals by a string: refused wherever the code
reaches them (loaded as globals, read off ``builtins``, or held as a value: ``EVALUATE = eval``)."""
_GLOBALS_BY_STRING = (
    "its module's globals by names a key cannot follow (keying them all would retrain at every change of any of them)"
)
_GLOBALS_FIX = "look helpers up in a dict of your own (HELPERS = {'one': one}) instead"
_FRAME_GLOBALS = frozenset({"f_globals", "__globals__"})
"""Attributes that read a module's globals through a frame or a function (``sys._getframe().f_globals``,
``helper.__globals__``): refused as :data:`_DYNAMIC_GLOBALS` are."""
_ENVIRONMENT_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "expandvars"})
"""``os``'s (and ``os.path``'s) names that read the environment: a function that reads it as it
runs is refused."""
_ENVIRONMENT_MODULES = ("os", "posix", "nt", "os.path", "posixpath", "ntpath")
"""The modules whose :data:`_ENVIRONMENT_NAMES` read the environment (``os`` and its C module)."""
_ARGUMENT_NAMES = frozenset({"argv", "orig_argv", "stdin"})
"""``sys``'s names that read the process's command line or standard input, which no key sees (as the
environment)."""
_PROGRAM_MODULES = ("subprocess", "ctypes")
"""Modules that run another program or native code: what it does no key sees."""
_PROGRAM_NAMES = frozenset(
    "system popen fork forkpty posix_spawn posix_spawnp spawnl spawnle spawnlp spawnlpe spawnv spawnve spawnvp "
    "spawnvpe execl execle execlp execlpe execv execve execvp execvpe startfile".split()
)
"""``os``'s names that run another program."""
_SOURCE_READS = frozenset({"getsource", "getsourcelines", "getcomments", "render_doc", "findsource"})
"""Names whose use reads source text (comments included) as data: the files of the user's code reached are keyed."""
_DOCUMENTATION_READS = frozenset({"__doc__", "__annotations__", "get_type_hints", "getdoc", "get_annotations"}) | (
    _SOURCE_READS
)
"""Names whose use reads docstrings or annotations as data: those of the function's module (and the
user's modules it holds) are keyed."""
_IMPORTS_BY_NAME = frozenset({"import_module", "__import__", "resolve_name", "locate"})
"""Names whose use imports a module by a string: the user's modules its strings name are keyed (as
those ``sys.modules`` finds: ``module_table`` in :meth:`_Walker.function`)."""


def _environment_read(values, reached: set[str], names, sys_names=()) -> str:
    """How a function whose global values are ``values`` (:func:`_modules_reached`: ``reached``;
    ``names``: what it reads off ``os``, ``posix`` or ``os.path``, ``sys_names`` off ``sys``, by
    name or, where it looks attributes up by a string, as a string) reads the environment:
    ``os.environ`` (``getattr(os, "environ")``, ``vars(os)["getenv"]``, ``os.path.expandvars``;
    or ``from os import environ``), or the command line or standard input (``sys.argv``,
    ``sys.stdin``, ``from sys import argv``), empty when it does not."""
    if reached.intersection(_ENVIRONMENT_MODULES):
        found = sorted(_ENVIRONMENT_NAMES.intersection(names))
        if found:
            return f"os.{found[0]}"
    if "sys" in reached:
        found = sorted(_ARGUMENT_NAMES.intersection(sys_names))
        if found:
            return f"sys.{found[0]}"
    for value in values:
        if _is_environment(value):
            return f"os.{getattr(value, '__name__', 'environ')}"
        if value is sys.argv or value is getattr(sys, "orig_argv", None):
            return "sys.argv"
    return ""


def _program_run(values, reached: set[str], names) -> str:  # (names: what it reads off os)
    """How a function (as :func:`_environment_read` sees it) runs another program or native code
    (``subprocess``, ``os.popen``, ``os.system``, ``ctypes``), empty when it does not."""
    for module_name in _PROGRAM_MODULES:
        if module_name in reached or any(getattr(value, "__module__", None) == module_name for value in values):
            return module_name
    if reached.intersection(("os", "posix", "nt")):
        found = sorted(_PROGRAM_NAMES.intersection(names))
        if found:
            return f"os.{found[0]}"
    return ""


_UNSEEN_MODULES = ("sqlite3", "pyarrow", "h5py", "tables", "polars", "duckdb", "threading", "concurrent", "_thread")
"""Modules that open files in native code or on another thread (no ``open`` audit event on the
thread that keys the code): what they read no key sees."""
_UNSEEN_NAMES = frozenset(
    "pread preadv read_parquet read_feather read_orc read_hdf from_file read_spss read_stata".split()
)
"""Names of readers that open or read files where no ``open`` event shows: ``os.pread`` on a descriptor
opened at import, pandas' pyarrow- and HDF5-backed readers, ``torch.from_file``."""


def _unseen_reader(values, names) -> str:
    """How a function reads a file where no ``open`` audit event shows (:data:`_UNSEEN_MODULES`,
    :data:`_UNSEEN_NAMES`), empty when it does not: a module among the values it reads or imports
    (``tables``, PyTables, as a value only: the name is an attribute's too), or one of its functions or
    classes (an object of theirs, a lock say, reads nothing)."""
    for value in values:
        if isinstance(value, types.ModuleType):
            root = value.__name__.split(".")[0]
        elif callable(value) and isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
            root = str(getattr(value, "__module__", None) or "").split(".")[0]
        else:
            continue
        if root in _UNSEEN_MODULES:
            return root
    imported = sorted(  # (import sqlite3 / pyarrow.parquet inside the function: the module's name)
        name.split(".")[0] for name in names if name.split(".")[0] in _UNSEEN_MODULES and name != "tables"
    )
    if imported:
        return imported[0]
    found = sorted(_UNSEEN_NAMES.intersection(names))
    return found[0] if found else ""


def _module_attributes(code: types.CodeType, namespace: dict) -> set[tuple[str, str]]:
    """``(module, attribute)`` for each attribute ``code`` (and the code nested in it) reads off a
    module: ``os.environ`` is ``("os", "environ")``, ``os.path.expandvars`` adds ``("posixpath",
    "expandvars")``, ``sys.modules`` ``("sys", "modules")``; ``net.modules()`` is none.  A name is a
    module where ``namespace`` (its globals) holds one, or, for a local or free name, where a module
    of that name is imported (``import os`` inside the function).  A module the analysis loses
    track of is marked ``(ESCAPED, module)``: one loaded and not read from at once (``o = os``,
    ``helper(os)``), or one whose name is read off another object (``self.os.environ``); what such
    code reads off it is judged by its names, as before this analysis."""
    found = set()
    receiver = None  # (each code object ends with a return: no module is carried from one to the next)
    for op, argument in _instructions(code):
        name = str(argument)
        attribute = op in ("LOAD_ATTR", "LOAD_METHOD")
        if receiver is not None and not attribute:
            found.add((ESCAPED, receiver.__name__))
        if op in ("LOAD_GLOBAL", "LOAD_NAME"):
            value = namespace[name] if name in namespace else getattr(builtins, name, None)
        elif op in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE"):
            value = sys.modules.get(name)
        elif attribute and receiver is not None:
            found.add((receiver.__name__, name))
            value = getattr(receiver, name, None)
        elif attribute and isinstance(sys.modules.get(name), types.ModuleType):  # (self.os: a module held)
            found.add((ESCAPED, name))
            value = None
        else:
            value = None
        receiver = value if isinstance(value, types.ModuleType) else None
    return found


ESCAPED = "<escaped>"
""":func:`_module_attributes`'s mark of a module whose reads it cannot follow."""


def _reaches_registry(names, namespace: dict, read_from: set, imports=()) -> bool:
    """Whether code whose global and attribute ``names`` are these reads tcclib's registry: a global
    whose value is the registry or one of its tables (``registry``, ``METHODS``), one of their
    names read off a module of tcclib's (``tcclib.METHODS``, ``config.METHODS``) or imported from
    tcclib inside the function (``imports``); a constant of the user's named ``METHODS`` is none."""
    wanted = REGISTRY_NAMES.intersection(names)
    if not wanted:
        return False
    registry_module = sys.modules.get("tcclib.method.registry")
    found = [registry_module, *(getattr(registry_module, n, None) for n in REGISTRY_NAMES)]
    tables = {id(table) for table in found if table is not None}
    if any(name in namespace and id(namespace[name]) in tables for name in wanted):
        return True
    if any(is_tcclib(module) for module in imports):
        return True
    return any(is_tcclib(module) and attribute in wanted for module, attribute in read_from)


def _modules_reached(values, names, imported) -> set[str]:
    """The names of the modules of :data:`_ENVIRONMENT_MODULES` and :data:`_PROGRAM_MODULES` (and ``sys``) a
    function reaches: one of its global ``values``, one held by a module among them under one of
    its ``names`` (``helpers.os``), or one it imports itself (``imported``)."""
    watched = (*_ENVIRONMENT_MODULES, *_PROGRAM_MODULES, "sys")
    wanted = {name: sys.modules[name] for name in watched if name in sys.modules}
    held = [getattr(value, name, None) for value in values if isinstance(value, types.ModuleType) for name in names]
    found = {name for name, module in wanted.items() if any(value is module for value in [*values, *held])}
    return found | set(imported).intersection(watched)


_ENVIRONMENT_FIX = (
    "read the variable where the object is made and pass its value to the constructor (the object's state), or read "
    "it into a module constant: both are keyed by value"
)


def _emptied(cached, wrapped) -> None:
    """Empty a cache of the user's (``functools.lru_cache``, ``functools.cache``) as its function
    is keyed: its values came from the code and values of when they were computed, which the key
    cannot see, so from now on it returns what the function's code and what it reads give now."""
    if isinstance(cached, _CACHE_TYPES) and is_followed(getattr(wrapped, "__module__", None)):
        cached.cache_clear()


_CACHE_TYPES = (type(functools.lru_cache(maxsize=None)(len)),)
"""``functools``' cache wrappers (an ``lru_cache``'s and a ``cache``'s type)."""


def _is_environment(obj) -> bool:
    """Whether ``obj`` is the environment (``os.environ``, ``os.environb``, ``posix.environ``) or
    a function that reads it (``os.getenv``, ``os.getenvb``, ``os.path.expandvars``)."""
    return any(obj is found for found in _environment_objects())


@functools.cache
def _environment_objects() -> tuple:
    """The objects :func:`_is_environment` knows, those this platform has."""
    modules = [sys.modules[name] for name in _ENVIRONMENT_MODULES if name in sys.modules]
    missing = object()
    found = (getattr(module, name, missing) for module in modules for name in sorted(_ENVIRONMENT_NAMES))
    return tuple({id(obj): obj for obj in found if obj is not missing}.values())


ENVIRONMENT_FILE = re.compile(r"/proc/(self|thread-self|\d+)(/task/\d+)?/environ")
"""A process's environment as a file: opening it reads the environment."""


@functools.lru_cache(maxsize=4096)
def _instructions(code: types.CodeType) -> tuple[tuple[str, object], ...]:
    """``(opname, argval)`` of every instruction of ``code`` and of the code nested in it."""
    return tuple((i.opname, i.argval) for current in _nested(code) for i in dis.get_instructions(current))


def _loaded_globals(code: types.CodeType) -> set[str]:
    """The names ``code`` loads as globals or builtins (not as attributes: ``model.eval()`` is not ``eval``)."""
    return {str(arg) for op, arg in _instructions(code) if op in ("LOAD_GLOBAL", "LOAD_NAME")}


def _imported_modules(code: types.CodeType, package: str | None = None) -> list[str]:
    """The modules ``code`` imports itself (``import h`` or ``from h import f`` inside a function);
    a relative import (``from .h import f``, ``from . import h``) resolved against ``package``
    (the function's module's ``__package__``), ``from . import h`` as the module ``<package>.h``."""
    found = set()
    for current in _nested(code):
        constants: list = [None, None]  # (the level and the names that IMPORT_NAME takes, loaded just before it)
        for instruction in dis.get_instructions(current):
            if instruction.opname == "LOAD_CONST":
                constants = [constants[1], instruction.argval]
            elif instruction.opname == "IMPORT_NAME":
                found.update(_import_targets(str(instruction.argval or ""), *constants, package))
    return sorted(found)


def _import_targets(name: str, level, names, package: str | None) -> list[str]:
    if not isinstance(level, int) or level == 0:  # (from helperpkg import knobs: a submodule of the user's too)
        entries = [e for e in names or () if isinstance(e, str) and e != "*"] if name and _users_module(name) else []
        return [name, *(f"{name}.{entry}" for entry in entries)] if name else []
    try:
        base = importlib.util.resolve_name("." * level + name, package) if package else None
    except (ImportError, ValueError):
        base = None
    if base is None:  # (no package to resolve against: the function cannot run that import either)
        return []
    return [base, *(f"{base}.{entry}" for entry in (names or ()) if isinstance(entry, str) and entry != "*")]


def _users_module(name: str) -> bool:
    """Whether the module ``name`` is the user's (imported or not: where its file lies)."""
    if name in sys.modules:
        return is_followed(name)
    try:
        origin = getattr(importlib.util.find_spec(name), "origin", None)
    except (ImportError, ValueError):
        return False
    return bool(origin) and os.path.isfile(origin) and own_code_file(origin)


def _constants(code: types.CodeType):
    """Every constant of ``code`` and of the code nested in it (but the nested code objects)."""
    return [c for current in _nested(code) for c in current.co_consts if not isinstance(c, types.CodeType)]


def _module_name(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _dynamic_builtin(obj) -> bool:
    """Whether ``obj`` is one of :data:`_DYNAMIC_GLOBALS` (``eval`` held under another name)."""
    return any(obj is getattr(builtins, name) for name in _DYNAMIC_GLOBALS)


def _user_op_namespaces() -> set[str]:
    """The ``torch.ops`` namespaces of the custom operators defined in the user's code
    (``torch.library.custom_op("mine::boost")``)."""
    custom_ops = sys.modules.get("torch._library.custom_ops")
    definitions = getattr(custom_ops, "OPDEFS", {})
    return {
        name.split("::")[0] for name, definition in definitions.items() if _users(getattr(definition, "_init_fn", None))
    }


def _user_kl_functions() -> dict:
    """The KL divergences the user's code registered (``torch.distributions.kl.register_kl``), by the
    pair of distribution classes each is for."""
    registry = getattr(sys.modules.get("torch.distributions.kl"), "_KL_REGISTRY", {})
    mine = {
        f"{p.__module__}.{p.__qualname__} {q.__module__}.{q.__qualname__}": function
        for (p, q), function in registry.items()
        if _users(function)
    }
    return dict(sorted(mine.items()))


def _users(function) -> bool:
    """Whether ``function`` is one of the user's code (a plain function defined there)."""
    return isinstance(function, types.FunctionType) and user_function(function)


def _module_candidates(texts) -> list[str]:
    """The module names strings may name, as ``import_module("h")`` or, with the object after them,
    ``pkgutil.resolve_name("h:f")`` and ``pydoc.locate("h.f")``: each string's part before a colon
    and every dotted prefix of it, longest first."""
    found = []
    for text in texts:
        parts = text.split(":", 1)[0].split(".")
        found += [".".join(parts[:n]) for n in range(len(parts), 0, -1) if _module_name(".".join(parts[:n]))]
    return list(dict.fromkeys(found))


def own_code_file(file: str) -> bool:
    """Whether code compiled from ``file`` is the user's (not installed code, not tcclib's)."""
    if file.startswith("<") or not os.path.isabs(file):
        return True  # (a cell, python -c, exec of a string)
    return not (_installed_file(file) or _is_tcclib_file(file))


@functools.cache
def _is_tcclib_file(file: str) -> bool:
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
    return os.path.realpath(file).startswith(package)


def _qualified_name(function: types.FunctionType) -> str:
    """The name its code was compiled under (``functools.wraps`` copies another onto the function)."""
    return getattr(function.__code__, "co_qualname", None) or function.__qualname__


def _global_names(code: types.CodeType) -> list[str]:
    """The names ``code`` (and the code nested in it) reads as globals or attributes, sorted."""
    return sorted({name for current in _nested(code) for name in current.co_names})


def _nested(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object nested in it (its functions, lambdas, comprehensions)."""
    out, stack = [], [code]
    while stack:
        current = stack.pop()
        out.append(current)
        stack += [c for c in current.co_consts if isinstance(c, types.CodeType)]
    return out


# --------------------------------------------------------------------------- a function's code as text


def _source_or_bytecode(function: types.FunctionType, walker: _Walker) -> str:
    """The function's source as tokens (comments, spacing, docstrings left out), checked to be the
    code that runs; its bytecode where it has no source (``python -c``, generated code)."""
    source = _source_of(function)
    if source is None:
        return "bytecode:" + _bytecode_text(function.__code__)
    if not _runs_as_written(function):
        if _made_otherwise(function):  # (its file as imported: code made from another's, co_consts replaced)
            return "bytecode:" + _bytecode_text(function.__code__)
        raise stale_source(walker.named, function.__module__, function.__code__.co_filename)
    if not _held_text_makes(function):  # (types.FunctionType(f.__code__.replace(co_consts=...)): its own code)
        return "bytecode:" + _bytecode_text(function.__code__)
    rest = _lambda_rest(function.__code__) if function.__code__.co_name == "<lambda>" else ""
    return "source:" + source_tokens(source) + (f" lambda:{rest}" if rest else "")


def _lambda_rest(code: types.CodeType) -> str:
    """A lambda whose expression goes on past its first line (``(lambda z: a\n + b)``, black's
    layout): its whole text as tokens, which :mod:`inspect` leaves out (it reads the first line
    only); empty for a lambda on one line (its key stays what it was). Where the text does not
    parse (a cell with IPython's syntax), its bytecode."""
    lines = linecache.getlines(code.co_filename)
    text = "".join(lines)
    try:
        tree = _parsed(text)
    except (SyntaxError, ValueError):
        return _bytecode_text(code) if lines else ""
    parts = [
        ast.get_source_segment(text, node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno and node.end_lineno > node.lineno
    ]
    return " ".join(source_tokens(part) for part in parts)


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> ast.Module:
    """A file's or cell's text parsed, once for all its lambdas (:func:`_lambda_rest`); not changed by them."""
    return ast.parse(text)


_SOURCES: dict[types.CodeType, tuple[list, str]] = {}
"""A function's code -> (its file's lines as linecache held them, its source): inspect's reading
of a block is slow (it tokenizes), and a run asks for the same functions again."""


def _source_of(function: types.FunctionType) -> str | None:
    """The function's source as :mod:`inspect` reads it (a file's current text, a cell's); None
    where there is none."""
    file = function.__code__.co_filename
    linecache.checkcache(file)
    lines = linecache.cache.get(file, (None, None, None))[2]
    known = _SOURCES.get(function.__code__)
    if known is not None and lines is not None and known[0] is lines:
        return known[1]
    try:
        block, _ = inspect.getsourcelines(function.__code__ if "__wrapped__" in function.__dict__ else function)
    except (OSError, TypeError, IndexError):
        return None
    source = textwrap.dedent("".join(block))
    lines = linecache.cache.get(file, (None, None, None))[2]
    if lines is not None:
        _SOURCES[function.__code__] = (lines, source)
    return source


def stale_source(named: str, module: str, file: str) -> Unkeyable:
    return Unkeyable(
        f"{named}: {Path(file).name} (module {module}) changed on disk since it was imported in this process, "
        f"so the key would describe code that does not run: restart the kernel (or the process; a sweep's or "
        f"the screen's: run the same command again), or "
        f"reload the module (importlib.reload({module.rsplit('.', 1)[-1]})) and run again what imports names "
        f"from it (the plugin, the cell) before running again"
    )


def changed_on_disk(module) -> str | None:
    """The file of ``module`` when it changed on disk since this process imported it (by its cached
    bytecode's header, else since a key first read it); None when it did not or cannot be told.
    A file last written before this process started is the one it imported, whatever the cached
    bytecode says (a stale one stays where bytecode is not written: ``PYTHONDONTWRITEBYTECODE``).
    A file written again with the bytes it had when a key first read it, while the header then said
    it was as imported (an edit undone, a ``git checkout``), is the code that runs: None."""
    since_import = _changed_since_import(module)
    since_first, first_as_imported = _changed_since_first_keyed(module, since_import is None)
    file = getattr(module, "__file__", None)
    if file and _written_before_this_process(file):
        return None
    if since_import and first_as_imported and since_first is None:
        return None  # (its bytes are those it was imported from: only its modification time moved)
    changed = since_import or since_first
    if changed and _autoreloaded(module, changed):  # (each function keyed is still checked to run as written)
        _FIRST_KEYED[changed] = ((module, getattr(module, "__spec__", None)), as_imported.source_digest(changed), False)
        return None
    return changed


def _written_before_this_process(file: str) -> bool:
    started = _process_started()
    try:
        return started is not None and os.stat(file).st_mtime < started - 0.05  # (the start known to 10 ms)
    except OSError:
        return False


@functools.cache
def _process_started() -> float | None:
    """When this process started (seconds since the epoch), from ``/proc``; None where unknown."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        up = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - up + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


_FIRST_KEYED: dict[str, tuple[tuple[object, object], str, bool]] = {}
"""A user module's file -> ``((the module object, its spec), digest of the file, whether its cached
bytecode's header then said it was as imported)`` when a key first read it. The objects themselves,
not their ids: a reload that frees the old spec may give the new one the old one's id."""


def _changed_since_first_keyed(module, header_matches: bool) -> tuple[str | None, bool]:
    """``(file, first_as_imported)``: the file of ``module`` when it changed on disk since a key
    first read this module object (where no cached bytecode tells when it was imported), else None;
    and whether the header said then that the file was as imported (``header_matches``, recorded at
    that first read)."""
    file = getattr(module, "__file__", None)
    if not file or getattr(module, "__cached__", "") is None:  # (a plugin: run from the text it was read as)
        return None, False
    digest = as_imported.source_digest(file)
    if digest is None:
        return None, False
    imported = (module, getattr(module, "__spec__", None))  # (importlib.reload gives it a new spec)
    seen = _FIRST_KEYED.setdefault(file, (imported, digest, header_matches))
    if seen[0][0] is not module or seen[0][1] is not imported[1]:  # imported again: it holds this file
        _FIRST_KEYED[file] = (imported, digest, header_matches)
        return None, header_matches
    return (file if seen[1] != digest else None), seen[2]


def _autoreloaded(module, file: str) -> bool:
    """Whether IPython's ``%autoreload`` holds ``module`` as its file is now: it reloads a module
    in place (the same module, spec and functions, their code replaced) and notes the file's
    modification time it reloaded (or first saw) it at, and where a reload failed. A module it first
    saw after an edit (imported before the extension loaded) is noted as if reloaded: its functions'
    code, checked against the file as each is keyed (:func:`_runs_as_written`), tells that apart."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    magics = getattr(getattr(shell, "magics_manager", None), "registry", {}).get("AutoreloadMagics")
    reloader = getattr(magics, "_reloader", None)
    if reloader is None or not getattr(reloader, "enabled", False):
        return False
    try:
        now = os.stat(file).st_mtime
        noted = reloader.modules_mtimes.get(module.__name__)
        return noted == now and reloader.failed.get(file) != now
    except (OSError, AttributeError, TypeError):
        return False


def _changed_since_import(module) -> str | None:
    """The file of ``module`` when it changed on disk since its import (the cached bytecode's header
    records the source's modification time and size as imported); None when it did not, or where
    that cannot be told (no cached bytecode, a hash-based one)."""
    file, cached = getattr(module, "__file__", None), getattr(module, "__cached__", None)
    if not file or not cached:
        return None
    try:
        with open(cached, "rb") as f:
            header = f.read(16)
        now = os.stat(file)
    except OSError:
        return None
    if len(header) < 16 or int.from_bytes(header[4:8], "little") != 0:
        return None
    imported = (int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little"))
    return file if imported != (int(now.st_mtime) & 0xFFFFFFFF, now.st_size & 0xFFFFFFFF) else None


@functools.lru_cache(maxsize=1024)
def source_tokens(source: str) -> str:
    """``source`` as its tokens, without comments, blank lines, the spacing within a line or
    docstrings: what a formatting change, a comment or documentation leaves as it is."""
    docstrings = _docstring_starts(source)
    out: list[str] = []
    skip_newline = False
    try:
        for token in _merged_tokens(source):
            if token.type in (tokenize.COMMENT, tokenize.NL):
                continue
            if token.type == tokenize.STRING and token.start in docstrings:
                skip_newline = True
                continue
            if skip_newline and token.type == tokenize.NEWLINE:
                skip_newline = False
                continue
            skip_newline = False
            out.append(f"{tokenize.tok_name[token.type]}:{token.string}")
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    return "\x01".join(out)


def _merged_tokens(source: str):
    """The tokens of ``source``, an f-string as one STRING token (Python 3.12 splits it)."""
    start_type = getattr(tokenize, "FSTRING_START", None)
    end_type = getattr(tokenize, "FSTRING_END", None)
    lines = source.splitlines(keepends=True)
    depth, first = 0, None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if start_type is not None and token.type == start_type:
            depth += 1
            first = first or token
            continue
        if depth:
            if token.type == end_type:
                depth -= 1
                if not depth:
                    text = _text_between(lines, first.start, token.end)
                    yield tokenize.TokenInfo(tokenize.STRING, text, first.start, token.end, first.line)
                    first = None
            continue
        yield token


def _text_between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    (row0, col0), (row1, col1) = start, end
    if row0 == row1:
        return lines[row0 - 1][col0:col1]
    return lines[row0 - 1][col0:] + "".join(lines[row0 : row1 - 1]) + lines[row1 - 1][:col1]


def _docstring_starts(source: str) -> set[tuple[int, int]]:
    """Where each docstring of ``source`` starts (line, column), as tokenize counts them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                starts.add((first.lineno, first.col_offset))
    return starts


def _constant_text(constant) -> str:
    """A constant as text, the same in every process: a set literal's frozenset in sorted order (its
    repr follows the process's string hash seed)."""
    if isinstance(constant, frozenset):
        return "frozenset(" + ", ".join(sorted(_constant_text(c) for c in constant)) + ")"
    if isinstance(constant, tuple):  # (repr's text where it holds no set)
        return "(" + ", ".join(_constant_text(c) for c in constant) + ("," if len(constant) == 1 else "") + ")"
    return repr(constant)


def _bytecode_text(code: types.CodeType) -> str:
    """A stable text of compiled code (no addresses, no line numbers): what a Python version
    compiles, so it is that version's (code without a source: ``python -c``, generated code)."""
    consts = [
        f"<{_bytecode_text(c)}>" if isinstance(c, types.CodeType) else f"{type(c).__name__}:{_constant_text(c)}"
        for c in code.co_consts
    ]
    return ":".join(
        [
            code.co_name,
            code.co_code.hex(),
            repr(consts),
            repr(code.co_names),
            repr(code.co_varnames),
            repr(code.co_freevars),
            repr(code.co_cellvars),
            # (the arguments' layout: `def f(z, s)` and `def f(z, *s)` may compile to the same body)
            repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags)),
        ]
    )


# --------------------------------------------------------------------------- source on disk = code that runs


def _runs_as_written(function: types.FunctionType) -> bool:
    """Whether the file that :mod:`inspect` reads for ``function`` (as it is on disk now) compiles
    to the code that runs: the whole file is compiled (as the import did: the compiler's choices
    depend on the module around a function) and the function found in it by its qualified name.
    A cell's source (IPython keeps the text it ran), a plugin's (:mod:`tcclib.method.plugins` keeps
    the text it ran) or ``<string>`` is held in memory and cannot change under its code."""
    file = function.__code__.co_filename
    held = linecache.cache.get(file)
    if not os.path.isfile(file) or (held is not None and held[1] is None):
        return True  # (a text held in memory as it ran: a cell's, a plugin's)
    linecache.checkcache(file)
    text = "".join(linecache.getlines(file, function.__globals__))
    compiled = _compiled(file, text)
    if compiled is None:
        return False
    path = [part for part in _qualified_name(function).split(".") if part != "<locals>"]
    return any(_same_code(found, function.__code__) for found in _codes_named(compiled, path))


def _made_otherwise(function: types.FunctionType) -> bool:
    """Whether ``function``'s code differs from its file's although that file is the one its module
    was imported from (written before this process started, or its cached bytecode's header says it
    is as imported): code made otherwise (``types.FunctionType(f.__code__.replace(co_consts=...))``
    in a helper module), keyed by its bytecode, not refused as an edit since the import."""
    module = sys.modules.get(function.__globals__.get("__name__") or function.__module__)
    file = getattr(module, "__file__", None)
    if not file or os.path.realpath(file) != os.path.realpath(function.__code__.co_filename):
        return False
    if _written_before_this_process(file):
        return True
    return (
        bool(getattr(module, "__cached__", None))
        and _changed_since_import(module) is None
        and os.path.isfile(module.__cached__)
    )


def _held_text_makes(function: types.FunctionType) -> bool:
    """Whether the text held in memory for ``function``'s file (a cell's, a plugin's), if any,
    compiles to the code that runs: code made otherwise (a code object's constants replaced, code
    generated under the file's name) is not what its text says."""
    file = function.__code__.co_filename
    held = linecache.cache.get(file)
    if held is None or held[1] is not None or len(held) < 3:
        return True
    compiled = _compiled(file, "".join(held[2]))
    if compiled is None:
        return False
    path = [part for part in _qualified_name(function).split(".") if part != "<locals>"]
    return any(_same_code(found, function.__code__) for found in _codes_named(compiled, path))


@functools.lru_cache(maxsize=64)
def _compiled(file: str, text: str) -> types.CodeType | None:
    try:
        return compile(text, file, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def _codes_named(code: types.CodeType, qualified: list[str]) -> list[types.CodeType]:
    """The code objects in ``code``'s constants at the qualified name ``qualified`` (several
    where a line holds several lambdas)."""
    inner = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == qualified[0]]
    if len(qualified) == 1:
        return inner
    return [found for c in inner for found in _codes_named(c, qualified[1:])]


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_freevars,
        b.co_cellvars,
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            if not (isinstance(x, float) and x != x and y != y):  # (nan equals nan here)
                return False
    return True


# --------------------------------------------------------------------------- files a user's code reads

_READ_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
"""The audit events of reading a file or listing a folder."""
LISTED = "listed:"
"""A folder listed by the code, as :func:`files_read` records it (``listed:/path/to/folder``)."""
_READING: dict[int, set[str]] = {}
"""The thread (its ident) recording under :func:`files_read` -> the files opened for reading there."""
_HOOKED: list[bool] = []


def _on_audit(event: str, arguments) -> None:
    if event not in _READ_EVENTS or not _READING:
        return
    opened = _READING.get(threading.get_ident())
    if opened is None:
        return
    if _importing():
        return  # (a module's file read, or its folder listed, by an import: its code is keyed as code, where reached)
    if event != "open":  # (os.listdir, os.scandir: Path.iterdir, glob, os.walk)
        folder = arguments[0] if arguments else None
        if folder is None or isinstance(folder, (str, bytes, os.PathLike)):
            opened.add(LISTED + os.path.realpath(os.fsdecode(folder if folder is not None else ".")))
        return
    path, mode, flags = (*arguments, None, None)[:3]
    if isinstance(mode, str):  # ("a+" reads as it appends; "w+" reads what it wrote)
        writes = "w" in mode or "x" in mode or ("a" in mode and "+" not in mode)
    else:
        writes = bool(flags and flags & os.O_WRONLY)
    if isinstance(path, (str, bytes, os.PathLike)) and not writes:
        opened.add(os.path.realpath(os.fsdecode(path)))


def _importing() -> bool:
    """Whether an import is running on this thread's stack (it opens the modules' files and lists
    their folders), or a search of the installed packages' metadata (``importlib.metadata``'s entry
    points, which a library looks up on its first use: it lists every folder on ``sys.path``); not
    the loaders called by the user's code (``pkgutil.get_data``, ``spec.loader.exec_module``), whose
    files are data or code run as data."""
    frame = sys._getframe(2)
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith("<frozen importlib") and frame.f_code.co_name in _IMPORT_STEPS:
            return True
        if any(part in file for part in _METADATA_SEARCH):
            return True
        frame = frame.f_back
    return False


_METADATA_SEARCH = (
    f"{os.sep}importlib{os.sep}metadata{os.sep}",
    f"{os.sep}importlib_metadata{os.sep}",
    f"{os.sep}pkg_resources{os.sep}",
)
"""Where the installed packages' metadata is searched (the standard library's and its backports)."""


_IMPORT_STEPS = frozenset({"_find_and_load", "_find_and_load_unlocked", "_load", "_gcd_import"})
"""The import system's functions an ``import`` (or ``importlib.import_module``) runs through."""


@contextlib.contextmanager
def files_read():
    """The files this thread opens for reading inside the block (Python's ``open`` audit event:
    ``open()``, ``pathlib``, ``os.open`` and what is built on them), as a set filled as it runs."""
    if not _HOOKED:
        sys.addaudithook(_on_audit)  # (once a process; a hook cannot be removed: it returns at once when idle)
        _HOOKED.append(True)
    thread = threading.get_ident()
    outer = _READING.get(thread)
    opened: set[str] = set()
    _READING[thread] = opened
    try:
        yield opened
    finally:
        if outer is None:
            del _READING[thread]
        else:
            outer |= opened
            _READING[thread] = outer


def files_read_by(*actions, named: str = "user code") -> str:
    """:func:`files_digest` of the files the ``actions()`` open (:func:`files_read`), ``""`` when
    they open none of the user's; a failure of one is left to the run to name (the digest keys what
    it read before failing) and the next one runs.  ``named``: whose code, for a refusal."""
    with files_read() as opened:
        for action in actions:
            try:
                action()
            except Exception:  # (the run itself says what failed)
                pass
    return files_digest(opened, named)


def users_files(paths) -> list[str]:
    """The files of ``paths`` that are the user's (installed code, tcclib's files and the system's
    left out), sorted: regular files (a file under ``/dev/shm`` is one; ``/dev/null`` is not)."""
    return sorted(
        path
        for path in paths
        if not path.startswith(("/proc/", "/sys/")) and os.path.isfile(path) and own_code_file(path)
    )


SOURCE_SUFFIXES = (".py", ".pyc", ".pyw")
"""Python source: keyed as code, never as a file read (a warning reads its line from its file)."""


def data_files(paths) -> list[str]:
    """The user's files of ``paths`` (:func:`users_files`) but the source of the modules imported
    (a warning reads its line from its file): what code read as data, a ``.py`` run by
    ``runpy.run_path`` or read by a loader it called among them."""
    found = users_files(paths)
    imported = _imported_files() if any(path.endswith(SOURCE_SUFFIXES) for path in found) else set()
    return [path for path in found if not (path.endswith(SOURCE_SUFFIXES) and path in imported)] + users_folders(paths)


def users_folders(paths) -> list[str]:
    """The user's folders that ``paths`` (:func:`files_read`) say were listed, sorted."""
    folders = (path.removeprefix(LISTED) for path in paths if path.startswith(LISTED))
    return sorted(
        f
        for f in folders
        if not f.startswith(("/proc/", "/sys/"))
        and (not f.startswith("/dev") or f.startswith("/dev/shm/"))
        and os.path.isdir(f)
        and own_code_file(f)
    )


def _incidental(name: str) -> bool:
    """A folder entry no code of the user's means to read: hidden ones (``.ipynb_checkpoints``, an
    editor's swap file), ``__pycache__``, an editor's backup (``rule.py~``)."""
    return name.startswith(".") or name == "__pycache__" or name.endswith("~")


def _imported_files() -> set[str]:
    files = set()
    for module in list(sys.modules.values()):
        for name in ("__file__", "__cached__"):
            file = getattr(module, name, None)
            if isinstance(file, str):
                files.add(os.path.realpath(file))
    return files


def files_digest(paths, named: str = "user code") -> str:
    """``""`` when none of ``paths`` is a file of the user's (:func:`users_files`), else a digest of
    their bytes, in no order of their names (one that cannot be read: that it cannot).  A process's
    environment among them (``/proc/self/environ``) is refused (:class:`Unkeyable`, naming
    ``named``): its bytes are not what the code reads from them."""
    environment = sorted(path for path in paths if ENVIRONMENT_FILE.fullmatch(path))
    if environment:
        raise Unkeyable(
            f"{named}: it opened {environment[0]}, which reads the environment as the code runs, which no key sees; "
            f"{_ENVIRONMENT_FIX}"
        )
    parts = []
    for path in users_files(paths):
        try:
            content = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError as e:
            content = f"unreadable-{type(e).__name__}"
        parts.append(content)  # (the bytes alone: the same files elsewhere key the same)
    for folder in users_folders(paths):  # (a folder listed: the names in it, not where it is)
        try:
            names = "\n".join(sorted(name for name in os.listdir(folder) if not _incidental(name)))
        except OSError as e:
            names = f"unreadable-{type(e).__name__}"
        parts.append("listed:" + hashlib.sha256(names.encode()).hexdigest())
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:HASH_CHARS] if parts else ""
