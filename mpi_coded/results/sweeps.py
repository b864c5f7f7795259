"""Sweeps' lines: the annotation ``scripts/sweep.py`` adds to every line of a run
(:func:`sweep_note`, keys :data:`~mpi_coded.results.names.SWEEP_KEYS`), the line of a run
that failed (:func:`run_failed`), the runs of a combined file (:func:`sweep_runs`:
:class:`SweepRun`), and whether a finished job verified (:func:`verdict`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from mpi_coded.results.common import RunFailed
from mpi_coded.results.names import ALL_VERIFIED, RUN_FAILED, STEP, SUMMARY, SWEEP_KEYS, VERIFIED
from mpi_coded.results.reading import kind_of, records


def sweep_note(sweep_id: str, run: int, rep: int, params: dict[str, Any], host: str,
               versions: dict[str, Any], via: str, **extra: Any) -> dict[str, Any]:
    """The annotation a sweep adds to every line of a run (:data:`SWEEP_KEYS`)."""
    note = dict(zip(SWEEP_KEYS, (sweep_id, run, rep, params, host, versions, via)))
    return {**note, **extra}


def run_failed(reason: str, returncode: int | None, output_tail: str) -> dict[str, Any]:
    """The line a sweep writes for a run that failed (a :class:`RunFailed`)."""
    return RunFailed(reason=reason, returncode=returncode, output_tail=output_tail).to_dict()


@dataclasses.dataclass
class SweepRun:
    """One run of a sweep's combined file: its annotation and lines."""

    sweep_id: str
    run: int
    rep: int
    params: dict[str, Any]
    lines: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(records(self.lines, RUN_FAILED))

    @property
    def summary(self) -> dict[str, Any] | None:
        found = [r for r in self.lines if kind_of(r) == SUMMARY]
        return found[-1] if found else None

    @property
    def steps(self) -> list[dict[str, Any]]:
        return records(self.lines, STEP)


def sweep_runs(lines: Iterable[dict[str, Any]], sweep_id: str | None = None) -> list[SweepRun]:
    """The runs of a sweep's combined file (lines without the annotation are left out),
    in order of first appearance; only ``sweep_id``'s when given."""
    runs: dict[tuple[str, int], SweepRun] = {}
    for r in lines:
        if "sweep_id" not in r or (sweep_id and r["sweep_id"] != sweep_id):
            continue
        key = (r["sweep_id"], r["run"])
        if key not in runs:
            runs[key] = SweepRun(r["sweep_id"], r["run"], r["rep"], r["params"])
        runs[key].lines.append(r)
    return list(runs.values())


def verdict(lines: Sequence[dict[str, Any]]) -> str | None:
    """Why the lines of one finished job do not show a verified job, or None when every
    line with :data:`VERIFIED` says true and it has a summary whose :data:`ALL_VERIFIED`
    is true."""
    summaries = records(lines, SUMMARY)
    if not summaries:
        return "no summary line"
    if not all(r.get(VERIFIED) is True for r in lines if VERIFIED in r):
        return "a step did not verify"
    if not all(s.get(ALL_VERIFIED) is True for s in summaries):
        return "summary: all_verified is false"
    return None
