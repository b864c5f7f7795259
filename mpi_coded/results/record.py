"""The record machinery: :class:`Record` (one line of a results file, a frozen dataclass
whose fields are the schema's declared names), :class:`Part` (fields several kinds share,
written flat), and the field helpers :func:`optional`, :func:`part`, :func:`nested`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, TypeVar

from mpi_coded.results.names import JOB_KEY, KIND_KEY, SCHEMA_VERSION, SchemaError
from mpi_coded.results.reading import job_of, kind_of

R = TypeVar("R", bound="Record")


def empty_list() -> Any:
    """A field defaulting to an empty list."""
    return dataclasses.field(default_factory=list)


def empty_dict() -> Any:
    """A field defaulting to an empty dict."""
    return dataclasses.field(default_factory=dict)


def optional() -> Any:
    """A field left out of the line while it is None (absent when read: None again)."""
    return dataclasses.field(default=None, metadata={"omit_none": True})


def part(cls: type[Part], required: bool = False) -> Any:
    """A field holding a :class:`Part`: its fields are written flat into the line, at this
    field's place; an optional part (default) is None when the line lacks it."""
    if required:
        return dataclasses.field(metadata={"part": cls})
    return dataclasses.field(default=None, metadata={"part": cls})


def nested(cls: type[Part]) -> Any:
    """An optional field holding a :class:`Part` written as a nested object (left out while
    None)."""
    return dataclasses.field(default=None, metadata={"nested": cls, "omit_none": True})


def _declared(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.name != "raw"]


def _is_required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class _Fields:
    """Writing and reading a flat group of declared fields (a record or a part)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The keys of the line these fields are written as (parts flattened)."""
        out: list[str] = []
        for f in _declared(cls):
            sub = f.metadata.get("part")
            out += sub.names() if sub is not None else [f.name]
        return tuple(out)

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """The keys every such line must have (those of a required part included)."""
        out: list[str] = []
        for f in _declared(cls):
            sub = f.metadata.get("part")
            if _is_required(f):
                out += sub.required() if sub is not None else [f.name]
        return tuple(out)

    def fields_dict(self) -> dict[str, Any]:
        """The declared fields as the line's keys, in declaration order."""
        out: dict[str, Any] = {}
        for f in _declared(type(self)):
            value = getattr(self, f.name)
            if f.metadata.get("part") is not None:
                if value is not None:
                    out.update(value.fields_dict())
            elif f.metadata.get("nested") is not None and value is not None:
                out[f.name] = value.fields_dict()
            elif value is not None or not f.metadata.get("omit_none"):
                out[f.name] = value
        return out

    @classmethod
    def _kwargs(cls, rec: dict[str, Any]) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        for f in _declared(cls):
            sub = f.metadata.get("part")
            if sub is not None:
                kw[f.name] = sub.take(rec)
            elif f.metadata.get("nested") is not None and isinstance(rec.get(f.name), dict):
                kw[f.name] = f.metadata["nested"](**f.metadata["nested"]._kwargs(rec[f.name]))
            elif f.name in rec:
                kw[f.name] = rec[f.name]
        return kw


@dataclasses.dataclass(frozen=True, kw_only=True)
class Part(_Fields):
    """A group of fields several kinds of line share (host and versions, ...), declared once
    and written flat into each line that has it (:func:`part`)."""

    @classmethod
    def take(cls: type[P], rec: dict[str, Any]) -> P | None:
        """The part in ``rec``; None when ``rec`` lacks one of its required keys (or, for a
        part with none required, all of its keys)."""
        names = cls.names()
        needed = cls.required()
        if any(k not in rec for k in needed) or not any(k in rec for k in names):
            return None
        return cls(**cls._kwargs(rec))


P = TypeVar("P", bound=Part)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record(_Fields):
    """One line of a results file: a frozen dataclass whose fields are the schema's declared
    names (the one place they are spelled).  The runtime builds it, :class:`ResultsWriter`
    writes :meth:`to_dict` (``kind`` and ``job`` first), :meth:`from_record` reads it back
    into the same class, field for field.

    Reading is tolerant: a line may carry keys the class does not declare (newer
    runtimes add some); they stay in :attr:`raw`.  A line lacking a required key is a
    :class:`SchemaError`.  Fields made with :func:`optional` are left out while None, and a
    :func:`part` is written flat (its keys at its place)."""

    KIND: ClassVar[str] = ""
    JOB: ClassVar[str | None] = None

    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    """The whole line as read, extra fields included (empty for a record the runtime built)."""
    schema: str = SCHEMA_VERSION
    """The results schema the line follows (:data:`~mpi_coded.results.names.SCHEMA_VERSION`;
    a line of an older runtime, which has none, reads as this version)."""

    def to_dict(self) -> dict[str, Any]:
        """The line: ``kind``, ``job`` (if the kind has one), then the declared fields."""
        head: dict[str, Any] = {KIND_KEY: self.KIND}
        if self.JOB is not None:
            head[JOB_KEY] = self.JOB
        return {**head, **self.fields_dict()}

    @classmethod
    def from_record(cls: type[R], rec: dict[str, Any]) -> R:
        """The record of ``rec``; :class:`SchemaError` if it is of another kind or job or
        lacks a required field.  Fields it does not declare stay in :attr:`raw`."""
        if not isinstance(rec, dict):
            raise SchemaError(f"a results line must be a JSON object, not {type(rec).__name__}")
        what = f"{cls.JOB or 'a'} '{cls.KIND}' line"
        if kind_of(rec) != cls.KIND or (cls.JOB is not None and job_of(rec) != cls.JOB):
            raise SchemaError(f"not a {what}: kind={rec.get(KIND_KEY)!r} job={job_of(rec)!r}")
        missing = [k for k in cls.required() if k not in rec]
        if missing:
            raise SchemaError(f"a {what} lacks {', '.join(missing)}: {json.dumps(rec)[:120]}")
        return cls(**cls._kwargs(rec), raw=rec)

    def get(self, key: str, default: Any = None) -> Any:
        """Any field of the line, declared or not (a record the runtime built: declared)."""
        if self.raw:
            return self.raw.get(key, default)
        return self.fields_dict().get(key, default)


View = Record
"""The older name of :class:`Record` (the reading side only, before the runtime built them)."""
