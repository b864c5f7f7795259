"""Config keys declared once, as dataclass fields: the machinery both jobs share.

A dataclass field declared with :func:`key` is a TOML key of the same name.  Everything
else about the key is derived from that one declaration:

* the list of known keys (``unknown key; known keys: ...``);
* its default (the field's default; a field without one is required: the job names the
  rule, e.g. ``<key>: is required with <when>``);
* its type check and message, from the annotation: ``int`` (``must be an integer``),
  ``float`` (``must be a number``, finite), ``str`` (``must be a string``),
  :data:`Speeds` (``must be a list of numbers``), ``tuple[float, ...]`` (the same, as
  floats), :data:`Sets` (``must be a list of lists of machine ids``); or the field's own
  ``parse`` function;
* its value rule (``rule``: :func:`at_least`, :func:`above`, :func:`one_of`), checked by
  :func:`check_rules` (``<key>: must be >= 1``) and written into its docs row;
* its command-line flag (``flag``: ``--<key>`` with ``-`` for ``_``, or a name of its
  own), whose argparse type follows the annotation and whose help is the docs text
  (:func:`add_flags`, :func:`flag_keys`);
* whether the results' config line leaves it out while at its default
  (``omit_default``: keys added after the first results were written, so that the lines
  of older jobs, and ``--resume``, still compare equal);
* its row of the job's key table (docs/elastic.md, docs/coded.md: :func:`table_rows`).

Config *alternatives* (one of several dataclasses, such as the elastic job's availability
kinds) are fields whose ``alternatives`` name the classes; each class has a ``WHEN``
(``kind = "random"``) that its keys' messages name.  A key of an alternative that was not
chosen does what its ``unused`` says: ``"ignore"`` (accepted, no effect: one file can be
swept over the kinds), ``"check"`` (its value is still checked) or ``"refuse"`` (``<key>:
is only used with <when>``).

Pure and at the bottom layer (beside :mod:`mpi_coded.errors`): the elastic job
(:mod:`mpi_coded.cec.config`) and the coded job (:mod:`mpi_coded.coded.job`) both declare
their keys with it, and neither imports the other.
"""

from __future__ import annotations

import argparse
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


@dataclass(frozen=True)
class KeyRule:
    """A key's value rule: ``test`` the value; ``text`` its message (``must be <text>``);
    ``doc`` its words in the docs table.  ``choices`` (:func:`one_of`) may be a function,
    asked each time, for choices that grow at run time (registered schemes)."""

    test: Callable[[Any], bool]
    text: Callable[[], str]
    doc: Callable[[], str]


def at_least(low: float, unit: str = "") -> KeyRule:
    """``value >= low`` (``must be >= 1``, ``must be >= 0 seconds``; NaN fails)."""
    words = f">= {low:g}" + (f" {unit}" if unit else "")
    return KeyRule(lambda v: bool(v >= low), lambda: words,
                   lambda: f"`>= {low:g}`" + (f" {unit}" if unit else ""))


def above(low: float, unit: str = "") -> KeyRule:
    """``value > low`` (``must be > 0 seconds``; NaN fails)."""
    words = f"> {low:g}" + (f" {unit}" if unit else "")
    return KeyRule(lambda v: bool(v > low), lambda: words,
                   lambda: f"`> {low:g}`" + (f" {unit}" if unit else ""))


def one_of(choices: Iterable[str] | Callable[[], Iterable[str]]) -> KeyRule:
    """``value`` is one of ``choices`` (``must be one of a, b``); a function is asked
    for them at every check, flag and table, never once at import."""
    def now() -> tuple[str, ...]:
        return tuple(choices() if callable(choices) else choices)

    return KeyRule(lambda v: v in now(), lambda: f"one of {', '.join(now())}",
                   lambda: "one of " + ", ".join(f"`{c}`" for c in now()))


def key(default: Any = dataclasses.MISSING, *, doc: str, parse: Parser | None = None,
        expect: str | None = None, omit_default: bool = False, shown: str | None = None,
        alternatives: tuple[type, ...] = (), table: bool = False,
        unused: str = "ignore", rule: KeyRule | None = None,
        flag: bool | str = False) -> Any:
    """A dataclass field that is a config key.  ``doc``: its meaning and rules (the docs
    table, and the flag's help); ``parse``: its own check instead of the annotation's;
    ``expect``: the annotation's wording replaced (``must be <expect>``); ``shown``: the
    default as the docs table shows it; ``alternatives``: the classes a union-valued key
    chooses from, whose keys sit beside it (or, with ``table``, in the TOML table of its
    name); ``unused``: what the key does when its alternative is not the one chosen;
    ``rule``: its value rule (:func:`check_rules`); ``flag``: its command-line flag
    (``True``: ``--<key>`` with ``-`` for ``_``; a string: that flag; ``False``: none)."""
    assert unused in ("ignore", "check", "refuse"), unused
    meta = {"doc": doc, "parse": parse, "expect": expect, "omit_default": omit_default,
            "shown": shown, "alternatives": alternatives, "table": table, "unused": unused,
            "rule": rule, "flag": flag}
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
NUMBER = ValueType("a number", _is_number, lambda x, name: float(x))
"""A number, as a float, not checked finite (a key's rule decides: ``inf`` may mean no
limit, and NaN fails any :func:`at_least`)."""
FLOATS = ValueType("a list of numbers",
                   lambda x: isinstance(x, (list, tuple)) and all(_is_number(v) for v in x),
                   lambda x, name: tuple(float(v) for v in x))
VALUE_TYPES: dict[Any, ValueType] = {int: INT, float: FLOAT, str: STR, Speeds: NUMBERS,
                                     Sets: SETS, tuple[float, ...]: FLOATS}
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


def parse_flat(classes: Iterable[type], table: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``classes`` found in ``table`` (a flat table: no alternatives), checked
    and converted in the table's order; ``None`` values (flags not given) left out, other
    names ignored (the caller refuses unknown ones first)."""
    fields = {f.name: (cls, f) for cls in classes for f in keys(cls)}
    return {k: _parse(*fields[k], v, k) for k, v in table.items()
            if k in fields and v is not None}


def require_keys(cls: type, values: Mapping[str, Any], rule: str) -> None:
    """ConfigError ``<key>: <rule>`` for the first required key of ``cls`` not in
    ``values``."""
    for f in keys(cls):
        require(not is_required(f) or f.name in values, f.name, rule)


def check_rules(obj: Any) -> None:
    """Each key of the dataclass ``obj`` that declares a rule obeys it (``<key>: must be
    <rule> (got <value>)``), in declaration order."""
    for f in keys(type(obj)):
        r: KeyRule | None = f.metadata["rule"]
        if r is not None:
            v = getattr(obj, f.name)
            require(r.test(v), f.name, f"must be {r.text()}", v)


def flag_of(f: dataclasses.Field[Any]) -> str:
    """The key's command-line flag, or "" if it has none."""
    flag = f.metadata.get("flag", False)
    if flag is True:
        return "--" + f.name.replace("_", "-")
    return flag or ""


def flag_keys(*classes: type) -> tuple[str, ...]:
    """The keys of ``classes`` that have a flag (the parsed arguments' names)."""
    return tuple(f.name for cls in classes for f in keys(cls) if flag_of(f))


def _help(f: dataclasses.Field[Any]) -> str:
    r: KeyRule | None = f.metadata["rule"]
    text = f.metadata["doc"] + (f"; {r.doc()}" if r is not None else "")
    return text.replace("`", "").replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser, *classes: type) -> None:
    """One option per key of ``classes`` with a flag: ``dest`` the key, default ``None``
    (not given), ``type`` from the annotation (``int``, ``float``; else the string), help
    from the docs text and rule, as they are now (choices that grow are read here)."""
    for cls in classes:
        hints = _hints(cls)
        for f in keys(cls):
            if flag_of(f):
                typed = {"type": hints[f.name]} if hints[f.name] in (int, float) else {}
                parser.add_argument(flag_of(f), dest=f.name, default=None, help=_help(f),
                                    **typed)


def _shown(f: dataclasses.Field[Any]) -> str:
    if f.metadata["shown"] is not None:
        return str(f.metadata["shown"])
    if is_required(f):
        return "required"
    v = f.default
    if isinstance(v, str):
        return f'`"{v}"`'
    return f"`{v:g}`" if isinstance(v, float) else f"`{v}`"


def table_rows(cls: type, prefix: str = "", choice: str = "", skip: str = "",
               flags: bool = False) -> list[str]:
    """The docs table's rows of ``cls``'s keys (``| key | default | meaning |``; with
    ``flags``, ``| key | flag | default | meaning |``), each union-valued key followed by
    its alternatives' keys; a key's rule ends its meaning."""
    rows = []
    for f in keys(cls):
        if f.name == skip:
            continue
        doc = f"with `{choice}`: {f.metadata['doc']}" if choice else f.metadata["doc"]
        r: KeyRule | None = f.metadata.get("rule")
        doc += f"; {r.doc()}" if r is not None else ""
        name = f"[{f.name}]" if f.metadata["table"] else f"{prefix}{f.name}"
        flag = (f" `{flag_of(f)}` |" if flag_of(f) else " |") if flags else ""
        rows.append(f"| `{name}` |{flag} {_shown(f)} | {doc} |")
        sub = f"{f.name}." if f.metadata["table"] else prefix
        for alt in f.metadata["alternatives"]:
            rows += table_rows(alt, sub, when(alt), skip=f.name, flags=flags)
    return rows
