"""The typed records of read lines: :func:`view` (any line, by its job and kind:
:data:`VIEWS`), :func:`views` (one kind's), and the jobs of a file, a config line and the
lines after it (:func:`elastic_jobs`: :class:`ElasticJob`; :func:`coded_jobs`:
:class:`CodedJobLines`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from mpi_coded.results.coded import CodedAbandoned, CodedConfig, CodedRun, CodedSummary
from mpi_coded.results.common import RunFailed
from mpi_coded.results.elastic import ElasticConfig, ElasticSetup, ElasticStep, ElasticSummary
from mpi_coded.results.names import CEC, CODED, CONFIG, RUN, STEP, SUMMARY, SchemaError
from mpi_coded.results.reading import job_of, kind_of, records
from mpi_coded.results.record import R, Record

VIEWS: dict[tuple[str | None, str], type[Record]] = {
    (c.JOB, c.KIND): c for c in (ElasticConfig, ElasticSetup, ElasticStep, ElasticSummary,
                                 CodedConfig, CodedRun, CodedAbandoned, CodedSummary,
                                 RunFailed)}
"""``(job, kind)`` -> view class."""


def view(rec: dict[str, Any]) -> Record:
    """The typed view of any line (:class:`SchemaError` for an unknown job and kind)."""
    kind = kind_of(rec)
    cls = VIEWS.get((job_of(rec), kind or "")) or VIEWS.get((None, kind or ""))
    if cls is None:
        raise SchemaError(f"no view for job={job_of(rec)!r} kind={kind!r}")
    return cls.from_record(rec)


def views(lines: Iterable[dict[str, Any]], cls: type[R]) -> list[R]:
    """The view ``cls`` of every line of its kind and job, in order."""
    return [cls.from_record(r) for r in records(lines, cls.KIND, cls.JOB)]


# ------------------------------------------------------------------------------------------
# jobs in a file


@dataclasses.dataclass
class ElasticJob:
    """One elastic job of a file: its config line and the step and summary lines after it."""

    config: ElasticConfig
    steps: list[ElasticStep] = dataclasses.field(default_factory=list)
    summary: ElasticSummary | None = None

    @property
    def items(self) -> list[ElasticStep]:
        return self.steps


@dataclasses.dataclass
class CodedJobLines:
    """One coded job of a file: its config line and the run and summary lines after it."""

    config: CodedConfig
    runs: list[CodedRun] = dataclasses.field(default_factory=list)
    summary: CodedSummary | None = None

    @property
    def items(self) -> list[CodedRun]:
        return self.runs


def _jobs(lines: Iterable[dict[str, Any]], job: str, item_kind: str, make: Any,
          config_cls: Any, item_cls: Any, summary_cls: Any) -> list[Any]:
    """Group ``job``'s lines: a config line starts a job (``make(config)``), then its
    ``item_kind`` lines (steps or runs) and its summary; lines before any config are left out."""
    jobs: list[Any] = []
    for r in records(lines, job=job):
        kind = kind_of(r)
        if kind == CONFIG:
            jobs.append(make(config_cls.from_record(r)))
        elif kind == item_kind and jobs:
            jobs[-1].items.append(item_cls.from_record(r))
        elif kind == SUMMARY and jobs:
            jobs[-1].summary = summary_cls.from_record(r)
    return jobs


def elastic_jobs(lines: Iterable[dict[str, Any]]) -> list[ElasticJob]:
    """The elastic jobs in ``lines``, in order (config, step lines, summary)."""
    return _jobs(lines, CEC, STEP, ElasticJob, ElasticConfig, ElasticStep, ElasticSummary)


def coded_jobs(lines: Iterable[dict[str, Any]]) -> list[CodedJobLines]:
    """The coded jobs in ``lines``, in order (config, run lines, summary)."""
    return _jobs(lines, CODED, RUN, CodedJobLines, CodedConfig, CodedRun, CodedSummary)
