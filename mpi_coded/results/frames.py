"""Data frames: :func:`frame`, one kind of line of several results files as a pandas
``DataFrame`` (a row per typed record, :func:`frame_rows`; docs/report.md).  pandas is the
``report`` extra: imported by :func:`frame`, not with this module."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from mpi_coded.results.jobs import VIEWS, view
from mpi_coded.results.names import STEP, SchemaError
from mpi_coded.results.reading import job_of, kind_of, scan_results
from mpi_coded.results.record import Record

KINDS = {c.__name__: c for c in VIEWS.values()}
"""Record class names (``"ElasticStep"``, ``"CodedRun"``, ...) -> class, for :func:`frame`."""


def frame_rows(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
               kind: str | type[Record], job: str | None = None) -> list[dict[str, Any]]:
    """The rows :func:`frame` makes: per line of ``kind`` (and ``job``), its typed record's
    fields (:meth:`Record.to_dict`: ``kind``, ``job``, the declared fields, parts flat),
    then the keys the line has that its class does not declare (a sweep's annotation, a
    newer runtime's fields), then ``file`` and ``line`` (its 1-based number)."""
    cls = kind if isinstance(kind, type) else KINDS.get(kind)
    name = cls.KIND if cls is not None else str(kind)
    if cls is not None and job is None:
        job = cls.JOB
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for path in paths:
        for ln in scan_results(path):
            if ln.torn:
                continue
            if ln.error is not None or not isinstance(ln.record, dict):
                raise SchemaError(f"{path}: line {ln.number}: not a JSON object")
            rec = ln.record
            if kind_of(rec) != name or (job is not None and job_of(rec) != job):
                continue
            try:
                typed = view(rec)
            except SchemaError as exc:
                raise SchemaError(f"{path}: line {ln.number}: {exc}") from None
            row = typed.to_dict()
            row.update({k: v for k, v in rec.items() if k not in row})
            row.update(file=str(path), line=ln.number)
            rows.append(row)
    return rows


def frame(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
          kind: str | type[Record] = STEP, job: str | None = None) -> Any:
    """A pandas ``DataFrame`` of one kind of line of the results files ``paths``: one row
    per line, one column per field (:func:`frame_rows`; nested values, e.g. ``load`` or
    ``server_map``, stay Python objects).  ``kind`` is a line's kind (``"step"``,
    ``"run"``, ``"config"``, ``"summary"``, ``"setup"``, ``"run_failed"``), a record class
    or its name (``"CodedRun"``); ``job`` (``"cec"``, ``"coded"``) keeps one job's lines
    (the kinds ``config`` and ``summary`` are both jobs').  pandas is the ``report`` extra;
    it is imported here, not with this module.

    >>> steps = frame("results/cec.jsonl", "step")          # doctest: +SKIP
    >>> steps[["step", "predicted_s", "wall_s", "verified"]]  # doctest: +SKIP
    """
    try:
        import pandas as pd  # deferred: pandas, only for frames
    except ImportError:
        raise ImportError("frame() needs pandas (pip install pandas, or the 'report' "
                          "extra)") from None
    return pd.DataFrame(frame_rows(paths, kind, job))
