"""Reading results files, the one reader: a file's lines (:func:`read_results`, a torn last
line skipped; :func:`scan_results`, every line with its number and parse error, for
checkers), and a line's ``kind`` and ``job`` (:func:`kind_of`, :func:`job_of`,
:func:`records`).  The typed records of the lines: :mod:`mpi_coded.results.jobs`."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mpi_coded.results.names import DEFAULT_JOB, JOB_KEY, KIND_KEY, SchemaError, check_schema


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of a results file as read: its 1-based ``number`` and either the parsed
    ``record`` or the ``error`` that kept it from parsing (``torn``: the last line, cut
    short, with no final newline: a write the job did not finish)."""

    number: int
    record: Any = None
    error: str | None = None
    torn: bool = False
    text: str = ""
    """The line as written (kept only for a line that did not parse)."""


def scan_text(text: str) -> list[Line]:
    """Every non-blank line of ``text``, parsed or with its error (:class:`Line`)."""
    out: list[Line] = []
    rows = text.split("\n")
    ends_cut = not text.endswith("\n")
    for i, row in enumerate(rows, 1):
        if not row.strip():
            continue
        try:
            out.append(Line(i, json.loads(row)))
        except json.JSONDecodeError as exc:
            out.append(Line(i, error=f"{exc.msg} (column {exc.colno})",
                            torn=ends_cut and i == len(rows), text=row))
    return out


def scan_results(path: str | os.PathLike[str]) -> list[Line]:
    """:func:`scan_text` of the file at ``path`` (OSError if it cannot be read)."""
    return scan_text(Path(path).read_text(encoding="utf-8"))


def parse_results(text: str, source: str = "results") -> list[dict[str, Any]]:
    """The JSON objects of ``text``, one per non-blank line; a torn last line is skipped.

    Any other line that is not a JSON object, or one written with a newer major schema
    version (:func:`~mpi_coded.results.names.check_schema`), raises :class:`SchemaError`
    naming ``source`` and the line number.
    """
    out: list[dict[str, Any]] = []
    for line in scan_text(text):
        if line.torn:
            continue
        if line.error is not None:
            raise SchemaError(f"{source}: line {line.number}: not JSON ({line.error})")
        if not isinstance(line.record, dict):
            raise SchemaError(f"{source}: line {line.number}: not a JSON object")
        check_schema(line.record, f"{source}: line {line.number}")
        out.append(line.record)
    return out


def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every line of the results file at ``path`` (:func:`parse_results`).

    Raises FileNotFoundError / OSError when it cannot be read, :class:`SchemaError`
    on a line (other than a torn last one) that is not a JSON object.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return parse_results(text, str(path))


def kind_of(rec: dict[str, Any]) -> str | None:
    """The line's ``kind`` (None if it has none)."""
    kind = rec.get(KIND_KEY)
    return kind if isinstance(kind, str) else None


def job_of(rec: dict[str, Any]) -> str | None:
    """The line's ``job``; without one, the job its kind implies (:data:`DEFAULT_JOB`)."""
    job = rec.get(JOB_KEY)
    if isinstance(job, str):
        return job
    kind = kind_of(rec)
    return DEFAULT_JOB.get(kind) if kind is not None else None


def records(lines: Iterable[dict[str, Any]], kind: str | None = None,
            job: str | None = None) -> list[dict[str, Any]]:
    """The lines of ``kind`` (all kinds if None) of ``job`` (all jobs if None), in order."""
    return [r for r in lines if (kind is None or kind_of(r) == kind)
            and (job is None or job_of(r) == job)]
