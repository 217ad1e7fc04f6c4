"""How a setting is declared: once, on its :class:`~tcclib.method.config.Config` field.

Each field of ``Config`` is ``name: type = setting(default, help=..., key=..., stage=..., ...)``:
its type (the annotation) or allowed values (``choices``), its range, its default, its help line,
the content keys it enters (``key``, one of :data:`KEYS`), the step that reads it (``stage``, one
of :data:`STAGES`) and where a user may set it (``where``, among :data:`WHERE`).  Everything that
lists settings is derived from these declarations: validation (:func:`check_value`), the key lists
of :mod:`tcclib.artifacts.keys`, the store's lists (:mod:`tcclib.artifacts.store`), the
command line's help, the reference page ``docs/parameters.md`` and the notebooks' parameter
cells (:func:`reference_page`, :func:`notebook_lines`, written by ``make notebooks``).

A setting added after the first stored runs must leave their keys as they are: declare it with
a key that is conditional (:data:`LATER_KEYS`: e.g. ``key=VARIANT, unless=<the value they ran
at>``); the store then reads a ``config.json`` without it as its default.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tcclib.util.errors import ConfigError, register_short


class UnkeyedSettingError(ConfigError):
    """A user's rule, objective or baseline factory read a setting its results' content key does
    not hold (:class:`tcclib.method.config.KeyedSettings`): one line naming it and the fix."""


register_short(UnkeyedSettingError)

# --------------------------------------------------------------------------- the vocabularies

MEMBER = "member"
PRETRAINED = "pretrained"
RULE = "rule"
SPLIT = "split"
IMPORTANCE = "importance"
OPT_IN_IMPORTANCE = "importance_opt_in"
VARIANT = "variant"
STEP = "step"
SWITCH = "switch"
NAMES = "names"
NONE = "none"

KEYS = {
    MEMBER: "every member's key",
    PRETRAINED: "the key of every member that pretrains",
    RULE: "the key of the members whose rules or objective read it (their `settings`)",
    SPLIT: "every key, through the seed's split",
    IMPORTANCE: "the importance matrices' key (so the correlation members') and the xgboost baseline's",
    OPT_IN_IMPORTANCE: "the importance matrices' key, only off its default",
    VARIANT: "the member key (a pretraining setting's: pretrained members' only), where the condition shown holds",
    STEP: "the key of a member that pretrains, as the step mode, only when it is not eager",
    SWITCH: "the keys of what reads the switch, only off `fidelity: ours`'s value",
    NAMES: "by name: a method's members, a baseline's results",
    NONE: "no key",
}
"""Which content keys (:mod:`tcclib.artifacts.keys`) a setting enters, by ``key``."""

_SHORT = {
    MEMBER: "every member",
    PRETRAINED: "pretrained members",
    RULE: "members whose rules or objective read it",
    SPLIT: "all, via the split",
    IMPORTANCE: "importances, xgboost baseline",
    OPT_IN_IMPORTANCE: "importances, off its default",
    STEP: "pretrained members, when not eager",
    SWITCH: "what reads it, off `ours`",
    NAMES: "by name",
    NONE: "none",
}

LATER_KEYS = (OPT_IN_IMPORTANCE, VARIANT, STEP, SWITCH)
"""Keys that a setting enters only off the value the first stored runs ran at: settings added
later are declared with one, so that those runs keep their keys."""

STAGES = {
    "run": "what runs",
    "data": "the split of each seed",
    "importance": "the XGBoost feature importances (and the xgboost baseline)",
    "pretraining": "contrastive pretraining",
    "classifier": "the classifier on the labeled rows, after pretraining",
    "compute": "how the computation runs",
    "baselines": "the baselines beside the members",
    "output": "what is kept and shown (no result depends on it)",
}
"""The step that reads a setting, by ``stage``: the reference page's sections, in this order."""

FILE = "file"
NOTEBOOK = "notebook"
ESTIMATOR = "estimator"
WHERE = {
    FILE: "a parameter file's `config:` (`python -m tcclib FILE`)",
    NOTEBOOK: "the per-dataset notebooks' parameters (`papermill -p NAME VALUE`)",
    ESTIMATOR: "`TCCClassifier(NAME=...)`",
}
"""Where a user may set a setting, by ``where``."""

AUTO = "auto"
_UNSET = object()


# --------------------------------------------------------------------------- one declaration


@dataclass(frozen=True)
class Setting:
    """One setting's declaration (see the module docstring); ``name`` and ``type`` are its field's."""

    default: Any
    help: str
    key: str
    stage: str
    where: tuple[str, ...] = (FILE, NOTEBOOK)
    choices: tuple[str, ...] = ()
    at_least: float | None = None
    above: float | None = None
    at_most: float | None = None
    below: float | None = None
    hint: str = ""
    unless: Any = None
    when: tuple[str, Any] | None = None
    resolve: Callable[[Any], Any] | None = None
    fidelity: Mapping[str, str] | None = None
    xgb: str | None = None
    notebook: Any = _UNSET
    factory: Callable[[], Any] | None = None
    shown: str = ""
    name: str = ""
    type: str = ""

    @property
    def value_kind(self) -> str:
        """``int``, ``number``, ``flag``, ``choice``, ``text`` or ``list``, from the type and choices."""
        if self.choices:
            return "choice"
        t = self.type.replace(" ", "")
        if t.startswith("tuple") or t.startswith("list"):
            return "list"
        return {"int": "int", "float": "number", "bool": "flag"}.get(t, "text")

    def default_value(self) -> Any:
        return self.factory() if self.factory is not None else self.default

    @property
    def notebook_differs(self) -> bool:
        """Whether the notebooks' default is not this one (``notebook=`` given)."""
        return self.notebook is not _UNSET

    def notebook_value(self) -> Any:
        return self.default_value() if self.notebook is _UNSET else self.notebook

    @property
    def later(self) -> bool:
        """Added after the first stored runs: keyed only off their value (:data:`LATER_KEYS`)."""
        return self.key in LATER_KEYS

    def range_text(self) -> str:
        """``>= 1``, ``in (0, 1]``, ... ; empty without bounds."""
        low = high = ""
        if self.at_least is not None or self.above is not None:
            low = f"[{self.at_least:g}" if self.at_least is not None else f"({self.above:g}"
        if self.at_most is not None or self.below is not None:
            high = f"{self.at_most:g}]" if self.at_most is not None else f"{self.below:g})"
        if low and high:
            return f"in {low}, {high}"
        if low:
            return (">= " if low[0] == "[" else "> ") + low[1:]
        if high:
            return ("<= " if high[-1] == "]" else "< ") + high[:-1]
        return ""

    def key_text(self) -> str:
        """The content keys it enters, in words (the reference page's column)."""
        members = "pretrained members" if self.stage == "pretraining" else "members"
        if self.key == VARIANT and self.when is not None:
            return f"{members}, when {self.when[0]} is `{self.when[1]}`"
        if self.key == VARIANT:
            return f"{members}, when not `{self.unless}`"
        return _SHORT[self.key]


def setting(default=_UNSET, *, help: str, key: str, stage: str, factory=None, **kw) -> Any:  # noqa: A002
    """A :class:`Config` field declared once: its default (or ``factory``), help line, key, stage
    and the rest of :class:`Setting`."""
    if key not in KEYS:
        raise ValueError(f"setting: key must be one of {', '.join(KEYS)}, got {key!r}")
    if stage not in STAGES:
        raise ValueError(f"setting: stage must be one of {', '.join(STAGES)}, got {stage!r}")
    bad = [w for w in kw.get("where", ()) if w not in WHERE]
    if bad:
        raise ValueError(f"setting: where must be among {', '.join(WHERE)}, got {bad}")
    decl = Setting(None if factory else default, help, key, stage, factory=factory, **kw)
    meta = {"setting": decl}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def declarations(cls) -> dict[str, Setting]:
    """``{name: Setting}`` of every declared field of ``cls``, in field order, named and typed."""
    out = {}
    for f in dataclasses.fields(cls):
        decl = f.metadata.get("setting")
        if decl is not None:
            out[f.name] = dataclasses.replace(decl, name=f.name, type=str(f.type))
    return out


# --------------------------------------------------------------------------- validation


def _number_hint(v) -> str:
    """YAML 1.1 (PyYAML) reads ``1e-3`` (no dot) as text: say how to write it as a number."""
    if isinstance(v, str):
        try:
            float(v)
        except ValueError:
            return ""
        if "e" in v.lower() and "inf" not in v.lower():
            return " (text, not a number: YAML reads an exponent without a dot as text; write e.g. 1.0e-3)"
        return f" (text, not a number: write it without quotes, {v.strip()})"
    return ""


def _in_range(s: Setting, v) -> bool:
    return (
        (s.at_least is None or v >= s.at_least)
        and (s.above is None or v > s.above)
        and (s.at_most is None or v <= s.at_most)
        and (s.below is None or v < s.below)
    )


def allowed(s: Setting) -> tuple[str, ...]:
    """A choice setting's allowed values (a fidelity switch: ``auto`` and its two values)."""
    if s.fidelity is not None:
        return (AUTO, *dict.fromkeys(s.fidelity.values()))
    return s.choices


def check_value(s: Setting, v) -> None:
    """A :class:`ConfigError` naming the setting when ``v`` is not of its type or range."""
    kind, hint = s.value_kind, f" ({s.hint})" if s.hint else ""
    if kind == "int":
        if not isinstance(v, int) or isinstance(v, bool):
            raise ConfigError(f"{s.name}: expected an integer, got {type(v).__name__} {v!r}")
    elif kind == "number":
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ConfigError(f"{s.name}: expected a finite number, got {v!r}" + _number_hint(v))
    elif kind == "flag":
        if not isinstance(v, bool):
            raise ConfigError(f"{s.name}: expected true or false, got {type(v).__name__} {v!r}")
    elif kind == "choice" or s.fidelity is not None:
        values = allowed(s)
        if not isinstance(v, str) or v not in values:
            close = difflib.get_close_matches(str(v), values, n=1)
            raise ConfigError(
                f"{s.name}: one of {', '.join(repr(a) for a in values)} ({s.help}), got {v!r}"
                + (f" (did you mean {close[0]!r}?)" if close else "")
            )
    if kind in ("int", "number") and not _in_range(s, v):
        raise ConfigError(f"{s.name}: must be {s.range_text()}{hint}, got {v}")


DEVICE = re.compile(r"cpu|cuda(:(0|[1-9]\d*))?")  # (cuda:00 would key apart from cuda:0)


# --------------------------------------------------------------------------- texts derived from the declarations


def _default_text(s: Setting) -> str:
    """A setting's default as the page and the help show it (a ``factory``'s: its ``shown`` text,
    so that neither needs what the factory reads)."""
    if s.factory is not None:
        return s.shown or "computed"
    return _value_text(s.default)


def _value_text(value) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return f"`{value!r}`" if not isinstance(value, str) else f"`{value}`"


def _values_text(s: Setting) -> str:
    if s.value_kind == "choice" or s.fidelity is not None:
        return ", ".join(f"`{a}`" for a in allowed(s))
    words = {"int": "integer", "number": "number", "flag": "true / false", "list": "list", "text": "text"}
    rng = s.range_text()
    return words[s.value_kind] + (f" {rng}" if rng else "")


def reference_page(decls: Mapping[str, Setting], notebook_defaults_note: str = "") -> str:
    """``docs/parameters.md``: every setting, by stage, with its values, default, key and where
    it may be set (generated: ``python -m tcclib.running.reference``)."""
    out = [
        "# Parameters: every setting, from its declaration",
        "",
        "<!-- generated by `python -m tcclib.running.reference` (or `make notebooks`) from the",
        "     declarations in tcclib/method/config.py: edit those, not this page -->",
        "",
        "Each setting of `tcclib.method.config.Config` is declared once, on its field; this page, the",
        "validation, the content keys, the command line's help and the notebooks' parameter cells are",
        "derived from it. Set them under `config:` in a parameter file, as notebook parameters",
        "(`papermill NOTEBOOK OUT -p NAME VALUE`) or, where marked, on `TCCClassifier`.",
        "",
        "Defaults are the paper's published values"
        + (f"; the notebooks differ in {notebook_defaults_note}." if notebook_defaults_note else "."),
        "",
        "Where: " + "; ".join(f"**{w}**: {text}" for w, text in WHERE.items()) + ".",
        "",
    ]
    for stage, title in STAGES.items():
        rows = [s for s in decls.values() if s.stage == stage]
        if not rows:
            continue
        out += [f"## {stage}: {title}", "", "| setting | values | default | enters the key of | where | what it does |"]
        out += ["| --- | --- | --- | --- | --- | --- |"]
        for s in rows:
            cells = [
                f"`{s.name}`",
                _values_text(s),
                _default_text(s),
                s.key_text(),
                ", ".join(s.where),
                s.help.replace("|", "\\|"),
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out += [
        "## Content keys",
        "",
        "What the column *enters the key of* means (`tcclib.artifacts.keys`; `key=` on the declaration):",
        "",
        *(f"- `{k}`: {text}" for k, text in KEYS.items()),
        "",
        "A setting keyed only off a value (`" + "`, `".join(LATER_KEYS) + "`) leaves the stored runs' keys as",
        "they are; a stored `config.json` without it is read as its default.",
        "",
    ]
    return "\n".join(out)


def notebook_lines(decls: Mapping[str, Setting]) -> list[str]:
    """The settings' lines of a per-dataset notebook's parameter cell (``name: type = value  # help``)."""
    lines = []
    for s in decls.values():
        if NOTEBOOK not in s.where:
            continue
        value = s.notebook_value()
        if isinstance(value, tuple):
            value = list(value)
        kind = "list" if s.value_kind == "list" else {"choice": "str", "text": "str"}.get(s.value_kind, s.type)
        lines.append(f"{s.name}: {kind} = {value!r}  # {s.help}")
    return lines


def cli_lines(decls: Mapping[str, Setting]) -> str:
    """The command line's help on settings: each name a parameter file's ``config:`` takes, with
    its values and default."""
    rows = [
        f"  {s.name}: {_values_text(s).replace('`', '')}; default {_default_text(s).replace('`', '')}"
        for s in decls.values()
        if FILE in s.where
    ]
    return "settings of a parameter file's config: (docs/parameters.md says what each does):\n" + "\n".join(rows)
