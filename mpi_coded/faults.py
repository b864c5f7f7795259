"""Fault injection specs (``--fault``), parsed and checked without MPI.

Forms (repeatable on ``mpi-coded run``)::

    kill:RANK:PHASE[@STEP]            the rank dies (SIGKILL) when it enters PHASE
    stall:RANK:PHASE[@STEP]:SECONDS   the rank sleeps SECONDS when it enters PHASE
    slow:RANK:FACTOR                  the rank's throttled work takes FACTOR times longer
    garble:RANK:PHASE[@STEP]          the rank sends the master a malformed message
    drift:RANK:STEP:FACTOR            elastic job: from step STEP on, the rank's throttle
                                      speed is multiplied by FACTOR (> 0; < 1 slows it)

Phases are named as in the results: ``setup``, ``step`` (elastic job; and ``idle``: the
machine is told to idle, ``answer``: its product is computed, before it is sent),
``encode``, ``map``, ``shuffle``, ``reduce`` (coded job).  ``@STEP`` picks the
step (elastic) or repetition (coded) at which a fault fires; without it the
fault fires the first time the rank enters the phase.  Rank 0 is the master,
which takes no faults.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mpi_coded.coded.phases import PHASES as CODED_PHASES
from mpi_coded.errors import ConfigError, require

KINDS = ("kill", "stall", "slow", "garble", "drift")
PHASES = {"cec": ("setup", "step", "idle", "answer"), "coded": ("setup", *CODED_PHASES)}


@dataclass(frozen=True)
class Fault:
    kind: str
    rank: int
    phase: str = ""
    step: int | None = None
    seconds: float = 0.0
    factor: float = 1.0

    def fires(self, rank: int, phase: str, step: int | None) -> bool:
        return (self.rank == rank and self.phase == phase and
                (self.step is None or self.step == step))


def _num(text: str, what: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError("--fault", f"{what} must be a number in '{spec}'", text) from None


def parse_fault(spec: str, job: str, world_size: int) -> Fault:
    """One ``--fault`` value for ``job`` (``cec`` or ``coded``) on ``world_size`` ranks."""
    parts = spec.split(":")
    kind = parts[0]
    require(kind in KINDS, "--fault", f"kind must be one of {', '.join(KINDS)}", spec)
    shapes = {"kill": 3, "stall": 4, "slow": 3, "garble": 3, "drift": 4}
    usage = {"kill": "kill:RANK:PHASE[@STEP]", "stall": "stall:RANK:PHASE[@STEP]:SECONDS",
             "slow": "slow:RANK:FACTOR", "garble": "garble:RANK:PHASE[@STEP]",
             "drift": "drift:RANK:STEP:FACTOR"}
    require(len(parts) == shapes[kind], "--fault", f"must look like {usage[kind]}", spec)
    try:
        rank = int(parts[1])
    except ValueError:
        raise ConfigError("--fault", "RANK must be an integer", spec) from None
    require(1 <= rank < world_size, "--fault",
            f"RANK must be a worker rank 1..{world_size - 1} (rank 0 is the master)", spec)
    if kind == "drift":
        require(job == "cec", "--fault", "drift is a fault of the cec job", spec)
        try:
            at_step = int(parts[2])
        except ValueError:
            raise ConfigError("--fault", "STEP must be an integer", spec) from None
        require(at_step >= 1, "--fault", "drift STEP must be >= 1", spec)
        factor = _num(parts[3], "FACTOR", spec)
        require(factor > 0, "--fault", "drift FACTOR must be > 0", spec)
        return Fault(kind, rank, "step", at_step, factor=factor)
    if kind == "slow":
        factor = _num(parts[2], "FACTOR", spec)
        require(factor >= 1, "--fault", "slow FACTOR must be >= 1", spec)
        return Fault(kind, rank, factor=factor)
    phase, _, at = parts[2].partition("@")
    require(phase in PHASES[job], "--fault",
            f"PHASE must be one of {', '.join(PHASES[job])} for the {job} job", spec)
    step = None
    if at:
        try:
            step = int(at)
        except ValueError:
            raise ConfigError("--fault", "@STEP must be an integer", spec) from None
    seconds = 0.0
    if kind == "stall":
        seconds = _num(parts[3], "SECONDS", spec)
        require(seconds >= 0, "--fault", "stall SECONDS must be >= 0", spec)
    return Fault(kind, rank, phase, step, seconds)


def parse_faults(specs: Sequence[str] | None, job: str, world_size: int) -> tuple[Fault, ...]:
    return tuple(parse_fault(s, job, world_size) for s in (specs or ()))


def slow_factor(faults: Sequence[Fault], rank: int) -> float:
    f = 1.0
    for x in faults:
        if x.kind == "slow" and x.rank == rank:
            f *= x.factor
    return f


def check_steps(faults: Sequence[Fault], steps: int) -> None:
    """ConfigError unless every drift fires at a step of a job of ``steps`` steps."""
    for f in faults:
        if f.kind == "drift":
            assert f.step is not None
            require(f.step <= steps, "--fault",
                    f"drift step must be a step of the job (1..{steps})",
                    f"drift:{f.rank}:{f.step}:{f.factor:g}")


def drift_factor(faults: Sequence[Fault], rank: int, step: int) -> float:
    """Product of the drift factors of ``rank`` that have fired by ``step``."""
    f = 1.0
    for x in faults:
        if x.kind == "drift" and x.rank == rank and x.step is not None and x.step <= step:
            f *= x.factor
    return f
