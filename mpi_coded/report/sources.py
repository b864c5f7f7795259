"""Reading the results files of a report: every line checked, grouped into jobs and sweeps.

A report refuses a file that is not a results file: the first line that is not a JSON
object, or not a line of a known job and kind (:func:`mpi_coded.results.view`), ends it
with one :class:`ReportError` naming the file and the line.  A torn last line (a job
killed mid-write) is skipped and counted.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from mpi_coded import results
from mpi_coded.results import CodedJobLines, ElasticJob, ElasticSetup, RunFailed, SweepRun


class ReportError(Exception):
    """A one-line error for the user (exit status 2)."""


@dataclasses.dataclass
class Source:
    """One results file as a report reads it."""

    path: Path
    lines: list[dict[str, Any]]
    numbers: list[int]
    """The 1-based line number of each of :attr:`lines`."""
    torn: int = 0
    """Torn last lines skipped (0 or 1)."""
    elastic: list[ElasticJob] = dataclasses.field(default_factory=list)
    setups: list[ElasticSetup | None] = dataclasses.field(default_factory=list)
    """The setup line of each elastic job (None: it has none)."""
    coded: list[CodedJobLines] = dataclasses.field(default_factory=list)
    sweeps: dict[str, list[SweepRun]] = dataclasses.field(default_factory=dict)
    failed: list[RunFailed] = dataclasses.field(default_factory=list)
    """``run_failed`` lines outside a sweep."""
    orphans: int = 0
    """Step, run or summary lines before any config line (not shown in a job)."""

    @property
    def name(self) -> str:
        return str(self.path)

    def describe(self) -> str:
        runs = sum(len(v) for v in self.sweeps.values())
        parts = [f"{len(self.lines)} lines", f"{len(self.elastic)} elastic job(s)",
                 f"{len(self.coded)} coded job(s)"]
        if runs:
            parts.append(f"{runs} sweep run(s)")
        if self.torn:
            parts.append("a torn last line skipped")
        return ", ".join(parts)


def _checked(path: Path) -> tuple[list[dict[str, Any]], list[int], int]:
    if not path.is_file():
        raise ReportError(f"{path}: no such results file")
    try:
        scanned = results.scan_results(path)
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not a results file (not UTF-8 text: {exc.reason})") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it ({exc.strerror})") from None
    lines: list[dict[str, Any]] = []
    numbers: list[int] = []
    torn = 0
    for ln in scanned:
        if ln.torn:
            torn += 1
            continue
        where = f"{path}: line {ln.number}"
        if ln.error is not None:
            raise ReportError(f"{where}: not a results file: not JSON ({ln.error})")
        if not isinstance(ln.record, dict):
            raise ReportError(f"{where}: not a results file: not a JSON object")
        try:
            results.view(ln.record)
        except results.SchemaError as exc:
            raise ReportError(f"{where}: not a results line: {exc}") from None
        lines.append(ln.record)
        numbers.append(ln.number)
    if not lines:
        raise ReportError(f"{path}: not a results file: no results lines")
    return lines, numbers, torn


def read_source(path: str | os.PathLike[str]) -> Source:
    """The file at ``path``, every line checked (:class:`ReportError` otherwise)."""
    p = Path(path)
    lines, numbers, torn = _checked(p)
    src = Source(p, lines, numbers, torn)
    plain = [r for r in lines if "sweep_id" not in r]
    swept = [r for r in lines if "sweep_id" in r]
    try:
        src.elastic = results.elastic_jobs(plain)
        src.coded = results.coded_jobs(plain)
        for run in results.sweep_runs(swept):
            src.sweeps.setdefault(run.sweep_id, []).append(run)
    except (results.SchemaError, KeyError, TypeError) as exc:
        raise ReportError(f"{p}: not a results file: {exc}") from None
    src.failed = results.views(plain, RunFailed)
    for rec in results.records(plain, job=results.CEC):
        if results.kind_of(rec) == results.CONFIG:
            src.setups.append(None)
        elif results.kind_of(rec) == results.SETUP and src.setups:
            src.setups[-1] = ElasticSetup.from_record(rec)
    grouped = sum(1 + len(j.steps) + int(j.summary is not None) for j in src.elastic)
    grouped += sum(1 + len(j.runs) + int(j.summary is not None) for j in src.coded)
    others = len(results.records(plain, results.SETUP)) + len(src.failed)
    src.orphans = max(0, len(plain) - grouped - others)
    return src
