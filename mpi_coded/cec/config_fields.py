"""Config keys declared once, as dataclass fields.

A dataclass field declared with :func:`key` is a TOML key of the same name.  Everything
else about the key is derived from that one declaration:

* the list of known keys (``unknown key; known keys: ...``);
* its default (the field's default; a field without one is required:
  ``<key>: is required with <when>``);
* its type check and message, from the annotation: ``int`` (``must be an integer``),
  ``float`` (``must be a number``, finite), ``str`` (``must be a string``),
  :data:`Speeds` (``must be a list of numbers``), :data:`Sets` (``must be a list of lists
  of machine ids``); or the field's own ``parse`` function;
* whether the results' config line leaves it out while at its default
  (``omit_default``: keys added after the first results were written, so that the lines
  of older jobs, and ``--resume``, still compare equal);
* its row of the key table in docs/elastic.md.

Config *alternatives* (one of several dataclasses, such as the availability kinds) are
fields whose ``alternatives`` name the classes; each class has a ``WHEN`` (``kind =
"random"``) that its keys' messages name.  A key of an alternative that was not chosen
does what its ``unused`` says: ``"ignore"`` (accepted, no effect: one file can be swept
over the kinds), ``"check"`` (its value is still checked) or ``"refuse"`` (``<key>: is only
used with <when>``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.errors import ConfigError, require

Speeds = tuple[Fraction, ...]
"""A list of speeds (rows per unit time), machine 1 first."""
Sets = tuple[tuple[int, ...], ...]
"""A list of sets of machine ids, one per step."""
Parser = Callable[[Any, str], Any]


def key(default: Any = dataclasses.MISSING, *, doc: str, parse: Parser | None = None,
        expect: str | None = None, omit_default: bool = False, shown: str | None = None,
        alternatives: tuple[type, ...] = (), table: bool = False,
        unused: str = "ignore") -> Any:
    """A dataclass field that is a config key.  ``doc``: its meaning and rules (the docs
    table); ``parse``: its own check instead of the annotation's; ``expect``: the
    annotation's wording replaced (``must be <expect>``); ``shown``: the default as the
    docs table shows it; ``alternatives``: the classes a union-valued key chooses from,
    whose keys sit beside it (or, with ``table``, in the TOML table of its name);
    ``unused``: what the key does when its alternative is not the one chosen."""
    assert unused in ("ignore", "check", "refuse"), unused
    meta = {"doc": doc, "parse": parse, "expect": expect, "omit_default": omit_default,
            "shown": shown, "alternatives": alternatives, "table": table, "unused": unused}
    return dataclasses.field(default=default, metadata=meta)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _finite(x: Any, name: str) -> float:
    require(math.isfinite(float(x)), name, "must be finite", x)
    return float(x)


def as_fraction(x: Any, name: str) -> Fraction:
    """An exact number from a TOML number or string (``1.5`` is ``3/2``)."""
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ConfigError(name, "must be a number", x)
    try:
        return Fraction(str(x)) if not isinstance(x, int) else Fraction(x)
    except (ValueError, ZeroDivisionError):
        raise ConfigError(name, "must be a number", x) from None


@dataclass(frozen=True)
class ValueType:
    """What a key's value must be: the words of its message, the test, the conversion."""

    expect: str
    ok: Callable[[Any], bool]
    convert: Callable[[Any, str], Any]

    def parse(self, x: Any, name: str, expect: str | None = None) -> Any:
        require(self.ok(x), name, f"must be {expect or self.expect}", x)
        return self.convert(x, name)


INT = ValueType("an integer", _is_int, lambda x, name: int(x))
FLOAT = ValueType("a number", _is_number, _finite)
STR = ValueType("a string", lambda x: isinstance(x, str), lambda x, name: x)
NUMBERS = ValueType("a list of numbers", lambda x: isinstance(x, list),
                    lambda x, name: tuple(as_fraction(s, name) for s in x))
SETS = ValueType("a list of lists of machine ids",
                 lambda x: isinstance(x, list) and all(isinstance(s, list) for s in x),
                 lambda x, name: tuple(tuple(INT.parse(v, name) for v in s) for s in x))
VALUE_TYPES: dict[Any, ValueType] = {int: INT, float: FLOAT, str: STR, Speeds: NUMBERS,
                                     Sets: SETS}
"""The value type of each annotation a plain key may have."""


def keys(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls`` that are config keys, in declaration order."""
    return [f for f in dataclasses.fields(cls) if "doc" in f.metadata]


def key_names(cls: type) -> tuple[str, ...]:
    """The keys of ``cls``, with the keys its union-valued keys' alternatives put beside
    them (not those of a table's alternatives: see :func:`table_keys`)."""
    out: list[str] = []
    for f in keys(cls):
        out.append(f.name)
        if not f.metadata["table"]:
            for alt in f.metadata["alternatives"]:
                out += [k for k in key_names(alt) if k not in out]
    return tuple(out)


def table_keys(alternatives: Iterable[type], selector: str) -> tuple[str, ...]:
    """The keys of a table whose ``selector`` key chooses one of ``alternatives``."""
    out = [selector]
    for alt in alternatives:
        out += [k for k in key_names(alt) if k not in out]
    return tuple(out)


def when(alt: type) -> str:
    """The choice that selects an alternative (``kind = "random"``), its ``WHEN``."""
    return str(vars(alt)["WHEN"])


def is_required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _parse(cls: type, f: dataclasses.Field[Any], value: Any, name: str) -> Any:
    parse = f.metadata["parse"]
    if parse is not None:
        return parse(value, name)
    return VALUE_TYPES[_hints(cls)[f.name]].parse(value, name, f.metadata["expect"])


def parse_keys(cls: type, table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The plain keys of ``cls`` found in ``table``, checked and converted (keyword
    arguments of ``cls``); union-valued keys are left to their callers."""
    kw: dict[str, Any] = {}
    for f in keys(cls):
        name = prefix + f.name
        if f.metadata["alternatives"]:
            continue
        if f.name in table:
            kw[f.name] = _parse(cls, f, table[f.name], name)
        elif is_required(f):
            raise ConfigError(name, f"is required with {when(cls)}")
    return kw


def refuse_unknown(table: Mapping[str, Any], known: Iterable[str], prefix: str = "") -> None:
    known = tuple(known)
    for k in table:
        require(k in known, f"config key '{prefix}{k}'",
                f"unknown key; known keys: {', '.join(known)}")


def check_unused(table: Mapping[str, Any], chosen: type, alternatives: Iterable[type],
                 prefix: str = "", selector: str = "") -> None:
    """The keys in ``table`` of the alternatives other than ``chosen``: each is ignored,
    checked or refused, as its ``unused`` says."""
    mine = set(key_names(chosen)) | {selector}
    for alt in alternatives:
        for f in keys(alt):
            if f.name not in table or f.name in mine or f.metadata["unused"] == "ignore":
                continue
            if f.metadata["unused"] == "refuse":
                raise ConfigError(prefix + f.name, f"is only used with {when(alt)}",
                                  table[f.name])
            _parse(alt, f, table[f.name], prefix + f.name)


def record_of(obj: Any) -> dict[str, Any]:
    """``obj``'s fields as the results' config line writes them: a union-valued field as its
    alternative's ``record()``, ``omit_default`` ones only when not at their default."""
    d: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if f.metadata.get("alternatives"):
            d.update(v.record())
        elif not (f.metadata.get("omit_default") and v == f.default):
            d[f.name] = v
    return d


def _shown(f: dataclasses.Field[Any]) -> str:
    if f.metadata["shown"] is not None:
        return str(f.metadata["shown"])
    if is_required(f):
        return "required"
    v = f.default
    if isinstance(v, str):
        return f'`"{v}"`'
    return f"`{v:g}`" if isinstance(v, float) else f"`{v}`"


def table_rows(cls: type, prefix: str = "", choice: str = "", skip: str = "") -> list[str]:
    """The docs table's rows of ``cls``'s keys (``| key | default | meaning |``), each
    union-valued key followed by its alternatives' keys."""
    rows = []
    for f in keys(cls):
        if f.name == skip:
            continue
        doc = f"with `{choice}`: {f.metadata['doc']}" if choice else f.metadata["doc"]
        name = f"[{f.name}]" if f.metadata["table"] else f"{prefix}{f.name}"
        rows.append(f"| `{name}` | {_shown(f)} | {doc} |")
        sub = f"{f.name}." if f.metadata["table"] else prefix
        for alt in f.metadata["alternatives"]:
            rows += table_rows(alt, sub, when(alt), skip=f.name)
    return rows
