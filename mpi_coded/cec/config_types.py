"""The elastic job's config alternatives, as types.

Speeds are one of :class:`Fixed` (``speeds = [...]``: the planner knows them) or
:class:`Estimated` (``speeds = "auto"``: it estimates them); availability is one of
:class:`Schedule`, :class:`Random` or :class:`Trace` (``[availability] kind``).  Each
declares its keys once (:func:`~mpi_coded.cec.config_fields.key`), checks its own rules,
and writes itself into the results' config line (``record``) in the flat layout older
results have (``speeds``/``speeds_auto``; ``availability_kind``, ``schedule``, ``p``,
``steps``, ``trace_path``), so their lines, and ``--resume``, still compare equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mpi_coded.cec.estimate import (
    DEFAULT_ALPHA,
    DEFAULT_ESTIMATOR,
    DEFAULT_WINDOW,
    SpeedEstimator,
    validate_alpha,
    validate_estimator,
    validate_window,
)
from mpi_coded.config_keys import Sets, Speeds, key, record_of
from mpi_coded.errors import ConfigError, require

SEED_SPEEDS: Speeds = tuple(Fraction(s) for s in ("1", "1", "1.5", "1.5", "2", "2"))
SEED_SCHEDULE: Sets = (
    (1, 2, 3, 4, 5, 6),
    (1, 2, 3, 5, 6),
    (1, 2, 3, 5),
    (2, 3, 5),
)


def _fractions(values: Sequence[Any]) -> Speeds:
    return tuple(Fraction(str(s)) for s in values)


def check_speeds(speeds: Speeds, name: str, n: int) -> None:
    require(len(speeds) == n, name, f"must list one speed per machine (N={n})", len(speeds))
    for i, s in enumerate(speeds):
        require(s > 0, name, f"speed of machine {i + 1} must be > 0", str(s))


# --- speeds ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fixed:
    """``speeds = [1, 1.5, ...]``: every machine's speed, known to the planner."""

    WHEN: ClassVar[str] = "speeds = [...]"
    auto: ClassVar[bool] = False

    speeds: Speeds = key(SEED_SPEEDS, expect='a list of numbers or "auto"',
                         doc="rows per unit time, one per machine, `> 0` (exact decimals)")

    @property
    def true(self) -> Speeds:
        """The speeds the throttles run at."""
        return self.speeds

    def check(self, n: int) -> None:
        check_speeds(self.speeds, "speeds", n)

    def make_estimator(self, machines: Sequence[int]) -> SpeedEstimator:
        """An estimator with the defaults, never fed: the plans use the known speeds."""
        return SpeedEstimator(machines)

    def record(self) -> dict[str, Any]:
        return {"speeds": [str(s) for s in self.speeds]}

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Fixed:
        return cls(_fractions(rec["speeds"]))


@dataclass(frozen=True)
class Estimated:
    """``speeds = "auto"``: the master plans with speeds estimated from every machine's
    measured seconds per row (:mod:`mpi_coded.cec.estimate`); the throttles run at
    ``true_speeds``, which the planner never sees."""

    WHEN: ClassVar[str] = 'speeds = "auto"'
    auto: ClassVar[bool] = True

    true_speeds: Speeds = key((), shown="1 each", unused="refuse",
                              doc="the throttles' real speeds, one per machine, `> 0`; hidden "
                                  "from the planner, used only to report the oracle plan")
    estimator: str = key(DEFAULT_ESTIMATOR, parse=validate_estimator, omit_default=True,
                         unused="check",
                         doc="`ewma` or windowed `median`")
    estimator_alpha: float = key(DEFAULT_ALPHA, parse=validate_alpha, omit_default=True,
                                 unused="check",
                                 doc="ewma: weight of the newest sample, in `(0, 1]`")
    estimator_window: int = key(DEFAULT_WINDOW, parse=validate_window, omit_default=True,
                                unused="check",
                                doc="median: samples kept, `>= 1`")

    @property
    def true(self) -> Speeds:
        return self.true_speeds

    def check(self, n: int) -> None:
        check_speeds(self.true_speeds, "true_speeds", n)
        validate_estimator(self.estimator)
        validate_alpha(self.estimator_alpha)
        validate_window(self.estimator_window)

    def make_estimator(self, machines: Sequence[int]) -> SpeedEstimator:
        return SpeedEstimator(machines, self.estimator, self.estimator_alpha,
                              self.estimator_window)

    def record(self) -> dict[str, Any]:
        rest = {k: v for k, v in record_of(self).items() if k != "true_speeds"}
        return {"speeds": [str(s) for s in self.true_speeds], "speeds_auto": True, **rest}

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Estimated:
        kw = {k: rec[k] for k in ("estimator", "estimator_alpha", "estimator_window")
              if rec.get(k) is not None}
        return cls(_fractions(rec["speeds"]), **kw)


SPEEDS: tuple[type[Fixed], type[Estimated]] = (Fixed, Estimated)


# --- availability ------------------------------------------------------------------------

def check_sets(sets: Sets, name: str, n: int, L: int) -> None:
    """Every step's available set: at least one step, distinct known ids, at least ``L``."""
    require(len(sets) >= 1, name, "needs at least one step", 0)
    for t, avail in enumerate(sets):
        where = f"{name} step {t + 1}"
        require(len(set(avail)) == len(avail), where, "machine ids must be distinct",
                list(avail))
        for a in avail:
            require(1 <= a <= n, where, f"unknown machine id (ids are 1..{n})", a)
        require(len(avail) >= L, where, f"at least L={L} machines must be available",
                len(avail))


def _record(kind: str, **kw: Any) -> dict[str, Any]:
    """The config line's availability keys: those another kind has at their old values."""
    base = {"availability_kind": kind, "schedule": [list(a) for a in SEED_SCHEDULE],
            "p": Random.p, "steps": Random.steps, "trace_path": ""}
    return {**base, **kw}


@dataclass(frozen=True)
class Schedule:
    """``kind = "schedule"``: the available machines of every step, listed."""

    KIND: ClassVar[str] = "schedule"
    WHEN: ClassVar[str] = 'kind = "schedule"'

    schedule: Sets = key(doc="`[[ids], ...]`: the machines available in each step")

    def sets(self, n: int, L: int, seed: int) -> list[tuple[int, ...]]:
        return [tuple(sorted(a)) for a in self.schedule]

    def check(self, n: int, L: int) -> None:
        check_sets(self.schedule, "availability.schedule", n, L)

    def record(self) -> dict[str, Any]:
        return _record(self.KIND, schedule=[list(a) for a in self.schedule])

    @classmethod
    def build(cls, kw: dict[str, Any]) -> Schedule:
        return cls(**kw)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Schedule:
        return cls(tuple(tuple(a) for a in rec["schedule"]))


@dataclass(frozen=True)
class Random:
    """``kind = "random"``: each machine preempted with probability ``p`` in each step,
    seeded (:func:`random_availability`)."""

    KIND: ClassVar[str] = "random"
    WHEN: ClassVar[str] = 'kind = "random"'

    p: float = key(0.0, doc="preemption probability of a machine in a step, in `[0, 1)`")
    steps: int = key(4, doc="number of steps, `>= 1`")

    def sets(self, n: int, L: int, seed: int) -> list[tuple[int, ...]]:
        return random_availability(n, L, self.p, self.steps, seed)

    def check(self, n: int, L: int) -> None:
        require(0 <= self.p < 1, "availability.p", "must be in [0, 1)", self.p)
        require(self.steps >= 1, "availability.steps", "must be >= 1", self.steps)

    def record(self) -> dict[str, Any]:
        return _record(self.KIND, p=self.p, steps=self.steps)

    @classmethod
    def build(cls, kw: dict[str, Any]) -> Random:
        return cls(**kw)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Random:
        return cls(float(rec["p"]), int(rec["steps"]))


@dataclass(frozen=True)
class Trace:
    """``kind = "trace"``: the available machines of every step, read from a file."""

    KIND: ClassVar[str] = "trace"
    WHEN: ClassVar[str] = 'kind = "trace"'

    path: str = key(doc="a trace file: one step per line, machine ids by commas or spaces "
                        "(`#` starts a comment)")
    schedule: Sets = dc_field(default=())
    """The steps read from ``path`` (when the config was loaded)."""

    def sets(self, n: int, L: int, seed: int) -> list[tuple[int, ...]]:
        return [tuple(sorted(a)) for a in self.schedule]

    def check(self, n: int, L: int) -> None:
        check_sets(self.schedule, f"availability.path ({self.path})", n, L)

    def record(self) -> dict[str, Any]:
        return _record(self.KIND, schedule=[list(a) for a in self.schedule],
                       trace_path=self.path)

    @classmethod
    def build(cls, kw: dict[str, Any]) -> Trace:
        path = kw["path"]
        require(path != "", "availability.path", "must name a trace file", path)
        return cls(path, read_trace(path))

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> Trace:
        return cls(str(rec.get("trace_path") or ""), tuple(tuple(a) for a in rec["schedule"]))


Availability = Schedule | Random | Trace
AVAILABILITIES: tuple[type[Schedule], type[Random], type[Trace]] = (Schedule, Random, Trace)
AVAILABILITY_KINDS = tuple(c.KIND for c in AVAILABILITIES)


def random_availability(n: int, L: int, p: float, steps: int, seed: int) -> list[tuple[int, ...]]:
    """Each machine preempted with probability ``p`` per step; at least ``L`` kept.

    When fewer than ``L`` survive, preempted machines are brought back, chosen
    uniformly at random, until ``L`` are available.
    """
    rng = np.random.default_rng([seed, 0xCEC])
    out = []
    for _ in range(steps):
        keep = rng.random(n) >= p
        avail = [i + 1 for i in range(n) if keep[i]]
        if len(avail) < L:
            back = [i + 1 for i in range(n) if not keep[i]]
            extra = rng.choice(back, size=L - len(avail), replace=False)
            avail += [int(x) for x in extra]
        out.append(tuple(sorted(avail)))
    return out


def read_trace(path: str) -> Sets:
    """A trace file: one step per line, machine ids separated by commas or spaces."""
    p = Path(path)
    require(p.is_file(), "availability.path", "must be an existing trace file", path)
    steps = []
    for i, line in enumerate(p.read_text().splitlines()):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            steps.append(tuple(int(x) for x in line.replace(",", " ").split()))
        except ValueError:
            raise ConfigError(f"availability.path line {i + 1}",
                              "must be machine ids separated by commas", line) from None
    return tuple(steps)
