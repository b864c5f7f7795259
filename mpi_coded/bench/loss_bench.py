"""What a machine's death costs the elastic job, and a server's the coded job
(``fault_tolerance = "ulfm"``): the joins of ``scripts/bench_ulfm.py``, pure (the coded
job's: :func:`coded_kill_run`, :func:`coded_report`, at the end).

One *kill run* is an elastic job in which one machine is killed (``--fault kill:...``);
its kill time is what the dying rank printed (``killed by fault injection ... at unix T``)
and its results file says when the master knew (:attr:`ElasticSummary.lost`,
``detected_unix``).  Per run (:func:`kill_run`):

* ``detection_ms``: from the kill to the master knowing (both clocks the same machine's);
* ``deadline_s``: the deadline of the step the death happened in, which without MPI's
  failure report the master would have waited out before re-planning
  (``deadline_factor * predicted + slack``, docs/elastic.md);
* ``step_extra_s``: that step's wall time over its (re-planned) plan's prediction, the
  death's cost to the step (detection, the cut, the orders again, the work redone), and
  ``model_extra_s`` the model's price of it (docs/theory.md (A.9),
  :mod:`mpi_coded.analysis.events`): ``a + d`` with ``a = 0`` for a machine killed as it
  starts computing, the planned attempt's time for one killed after computing, before
  answering, and 0 for one killed idle;
* ``verified``: every step verified and the run ended by itself (``hang``: it did not
  within its timeout);
* with ``replace_lost = "spawn"``: the join's seconds to spawn the new process
  (``join_spawn_s``) and to send it its coded block and take its READY (``join_block_s``,
  ``join_block_bytes``), and the model's price of the join, ``s`` (one host: the block
  crosses no link).

:func:`report` adds them up: hangs (must be 0), the detection latency's median and
maximum, the median cost per phase killed in.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mpi_coded.analysis.events import EventPrices
from mpi_coded.results import ABANDONED, CONFIG, RUN, STEP, SUMMARY, kind_of

INTO_ATTEMPT = {"answer": 1.0}
"""How far into the step's first attempt a kill in each fault phase comes, as a fraction
of the planned attempt (``a`` of docs/theory.md (A.9)); 0 for the others."""

KILLED = re.compile(r"rank (\d+) \(([^)]*)\) killed by fault injection in phase (\w+)"
                    r"(?: (\d+))? at unix ([0-9.]+)")


def kill_times(stderr: str) -> dict[int, float]:
    """Rank -> the Unix time it was killed at, from the dying ranks' own lines."""
    return {int(m.group(1)): float(m.group(5)) for m in KILLED.finditer(stderr)}


@dataclass(frozen=True)
class KillRun:
    """One kill run, joined (module docstring)."""

    fault: str
    phase: str
    machine: int
    returncode: int | None
    hang: bool
    verified: bool
    lost_step: int | None = None
    detection_ms: float | None = None
    deadline_s: float | None = None
    step_wall_s: float | None = None
    step_predicted_s: float | None = None
    step_extra_s: float | None = None
    wall_s: float | None = None
    join_spawn_s: float | None = None
    join_block_s: float | None = None
    join_block_bytes: int | None = None
    model_extra_s: float | None = None
    model_join_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def kill_run(fault: str, machine: int, returncode: int | None, stderr: str,
             lines: Sequence[dict[str, Any]], wall_s: float | None = None,
             prices: EventPrices | None = None) -> KillRun:
    """Join one run's stderr and results (module docstring); ``returncode`` None: it hung
    (killed at its timeout)."""
    prices = prices or EventPrices()
    phase = fault.split(":")[2].split("@")[0]
    hang = returncode is None
    summaries = [r for r in lines if kind_of(r) == SUMMARY]
    steps = {int(r["step"]): r for r in lines if kind_of(r) == STEP}
    config = next((r for r in lines if kind_of(r) == CONFIG), {})
    verified = (not hang and returncode == 0 and bool(summaries) and
                bool(summaries[-1].get("all_verified")))
    lost = [e for e in (summaries[-1].get("lost") or [] if summaries else [])
            if e.get("machine") == machine]
    killed = kill_times(stderr).get(machine)
    if not lost:
        return KillRun(fault, phase, machine, returncode, hang, False, wall_s=wall_s)
    e = lost[0]
    step = int(e["step"])
    joined = [j for j in (summaries[-1].get("joined") or []) if j.get("machine") == machine]
    join = joined[0] if joined else {}
    detection = None if killed is None or e.get("detected_unix") is None else \
        1e3 * (float(e["detected_unix"]) - killed)
    rec = steps.get(step)
    deadline = wall = predicted = extra = model = None
    if rec is not None:
        wall, predicted = float(rec["wall_s"]), float(rec["predicted_s"])
        planned = float(rec.get("predicted_planned_s") or predicted)
        extra = wall - predicted
        deadline = float(config.get("deadline_factor", 2.0)) * planned + \
            float(config.get("deadline_slack_s", 2.0))
        model = prices.death_s(phase != "idle", INTO_ATTEMPT.get(phase, 0.0) * planned)
    return KillRun(fault, phase, machine, returncode, hang, verified, step, detection,
                   deadline, wall, predicted, extra, wall_s, join.get("spawn_s"),
                   join.get("block_s"), join.get("block_bytes"), model,
                   prices.join_s(0.0) if join else None)


def _median(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


def report(runs: Sequence[KillRun]) -> dict[str, Any]:
    """The bench's numbers: runs, hangs, unverified runs, detection latency (ms: median,
    max), the deadlines not waited out (median s), and per phase killed in the median cost
    to its step (s) and latency (ms)."""
    lat = [r.detection_ms for r in runs if r.detection_ms is not None]
    phases = sorted({r.phase for r in runs})
    return {
        "runs": len(runs),
        "hangs": sum(r.hang for r in runs),
        "unverified": sum(not r.verified for r in runs),
        "detection_ms_median": _median(lat),
        "detection_ms_max": max(lat) if lat else None,
        "deadline_s_median": _median(r.deadline_s for r in runs),
        "joins": sum(r.join_spawn_s is not None for r in runs),
        "join_spawn_s_median": _median(r.join_spawn_s for r in runs),
        "join_block_s_median": _median(r.join_block_s for r in runs),
        "model_join_s": _median(r.model_join_s for r in runs),
        "by_phase": {p: {"runs": sum(r.phase == p for r in runs),
                         "detection_ms_median": _median(r.detection_ms for r in runs
                                                        if r.phase == p),
                         "step_extra_s_median": _median(r.step_extra_s for r in runs
                                                        if r.phase == p),
                         "model_extra_s_median": _median(r.model_extra_s for r in runs
                                                         if r.phase == p)}
                     for p in phases},
    }


# ------------------------------------------------------------------------------------------
# the coded job: a server killed in the map, the shuffle or the reduce


@dataclass(frozen=True)
class CodedKillRun:
    """One coded job with one server killed (``--fault kill:RANK:PHASE@REP``), joined:
    ``detection_ms`` from the kill to the master knowing (the run or abandoned line's
    ``lost_at``); ``abandoned``: its repetition ended without outputs (a finisher killed in
    the shuffle or the reduce; a server killed in the map is a straggler and the repetition
    verifies); ``rep_total_s`` that repetition's seconds (thrown away when abandoned) beside
    ``others_total_s``, the median of the repetitions no death touched; ``verified``: the run
    ended by itself, exit status 0, every ``run`` line and the summary verified."""

    fault: str
    phase: str
    server: int
    returncode: int | None
    hang: bool
    verified: bool
    rep: int | None = None
    abandoned: bool | None = None
    detection_ms: float | None = None
    rep_total_s: float | None = None
    others_total_s: float | None = None
    wall_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def coded_kill_run(fault: str, returncode: int | None, stderr: str,
                   lines: Sequence[dict[str, Any]], wall_s: float | None = None
                   ) -> CodedKillRun:
    """Join one coded kill run's stderr and results; ``returncode`` None: it hung."""
    rank = int(fault.split(":")[1])
    server, phase = rank - 1, fault.split(":")[2].split("@")[0]
    hang = returncode is None
    reps = [r for r in lines if kind_of(r) in (RUN, ABANDONED)]
    summaries = [r for r in lines if kind_of(r) == SUMMARY]
    verified = (not hang and returncode == 0 and bool(summaries) and
                bool(summaries[-1].get("all_verified")) and
                all(r.get("verified") for r in reps if kind_of(r) == RUN))
    hit = [r for r in reps if server in (r.get("lost") or [])]
    if not hit:
        return CodedKillRun(fault, phase, server, returncode, hang, False, wall_s=wall_s)
    rec = hit[0]
    killed = kill_times(stderr).get(rank)
    known = (rec.get("lost_at") or {}).get(str(server))
    others = [float(r["total_s"]) for r in reps if r is not rec and kind_of(r) == RUN]
    return CodedKillRun(
        fault, phase, server, returncode, hang, verified, int(rec["rep"]),
        kind_of(rec) == ABANDONED,
        None if killed is None or known is None else 1e3 * (float(known) - killed),
        float(rec["total_s"]), _median(others), wall_s)


def coded_report(runs: Sequence[CodedKillRun]) -> dict[str, Any]:
    """The coded bench's numbers: runs, hangs, unverified runs, detection latency (ms:
    median, max), and per phase killed in the repetitions abandoned, the median latency
    and the median seconds of the repetition hit beside the others'."""
    lat = [r.detection_ms for r in runs if r.detection_ms is not None]
    phases = sorted({r.phase for r in runs})
    return {
        "job": "coded",
        "runs": len(runs),
        "hangs": sum(r.hang for r in runs),
        "unverified": sum(not r.verified for r in runs),
        "detection_ms_median": _median(lat),
        "detection_ms_max": max(lat) if lat else None,
        "by_phase": {p: {"runs": sum(r.phase == p for r in runs),
                         "abandoned": sum(bool(r.abandoned) for r in runs if r.phase == p),
                         "detection_ms_median": _median(r.detection_ms for r in runs
                                                        if r.phase == p),
                         "rep_total_s_median": _median(r.rep_total_s for r in runs
                                                       if r.phase == p),
                         "others_total_s_median": _median(r.others_total_s for r in runs
                                                          if r.phase == p)}
                     for p in phases},
    }
