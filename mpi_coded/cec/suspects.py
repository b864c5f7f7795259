"""Suspect machines: left out of the plans until they have answered again.

A machine that misses a step's deadline is planned into the next step again
only to make that step wait out its deadline too.  So the master keeps a set
of *suspects*, treated as unavailable (sent IDLE) when it plans (docs/theory.md
A.3-A.5 run on the others):

* a machine that missed a step deadline becomes a suspect at once;
* with stragglers tolerated (``S > 0``) a machine cut off as the slowest more
  than ``after`` steps in a row becomes a suspect too.  "As the slowest" means
  cut off with less than :data:`SLOW_FRACTION` of its rows delivered: with
  optimal loads every machine should finish at the same time, so a machine
  that merely lost the race for the last row set (most of its rows delivered)
  is not held against it;
* a suspect is planned again once it has answered (its late result or its
  report after a cut arrived) and has sat out at least one step;
* if leaving the suspects out would leave fewer than ``need`` machines (``L + S``)
  of a step's available ones, the suspects that answered first, then the lowest
  ids, are planned in anyway (``forced``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mpi_coded.errors import require

SLOW_FRACTION = 0.5


@dataclass(frozen=True)
class StepSuspects:
    """What the suspects mean for one step's plan."""

    planned: tuple[int, ...]  # available machines the step is planned on
    left_out: tuple[int, ...]  # available suspects not planned
    forced: tuple[int, ...]  # suspects planned anyway (too few machines otherwise)
    rejoined: tuple[int, ...]  # former suspects planned again from this step


class Suspects:
    """Suspect bookkeeping of the master, one call per event."""

    def __init__(self, after: int) -> None:
        require(after >= 1, "suspect_after", "must be >= 1", after)
        self.after = after
        self.since: dict[int, int] = {}  # suspect -> step it became one
        self.answered: set[int] = set()  # suspects whose answer has arrived
        self.streak: dict[int, int] = {}  # consecutive steps cut off as the slowest

    @property
    def current(self) -> tuple[int, ...]:
        return tuple(sorted(self.since))

    def missed(self, n: int, step: int) -> None:
        """``n`` missed the deadline of ``step``."""
        self.since.setdefault(n, step)
        self.answered.discard(n)

    def cut(self, n: int, step: int, delivered: float = 0.0) -> bool:
        """``n`` was cut off at ``step`` with the fraction ``delivered`` of its rows answered;
        True if it has now become a suspect."""
        if delivered >= SLOW_FRACTION:
            self.streak[n] = 0
            return False
        self.streak[n] = self.streak.get(n, 0) + 1
        if self.streak[n] > self.after and n not in self.since:
            self.since[n] = step
            self.answered.discard(n)
            self.streak[n] = 0
            return True
        return False

    def on_time(self, n: int) -> None:
        """``n`` finished a step without being cut off: its streak ends."""
        self.streak[n] = 0

    def heard(self, n: int) -> None:
        """A (late) answer of ``n`` arrived: it is alive."""
        if n in self.since:
            self.answered.add(n)

    def for_step(self, step: int, available: Sequence[int], need: int) -> StepSuspects:
        """Who of ``available`` the plan of ``step`` uses."""
        rejoined = sorted(n for n in self.answered if self.since[n] < step - 1)
        for n in rejoined:
            del self.since[n]
            self.answered.discard(n)
        avail = sorted(available)
        left_out = [n for n in avail if n in self.since]
        planned = [n for n in avail if n not in self.since]
        forced: list[int] = []
        if len(planned) < need:
            order = sorted(left_out, key=lambda n: (n not in self.answered, n))
            forced = sorted(order[: need - len(planned)])
            left_out = [n for n in left_out if n not in forced]
            planned = sorted(planned + forced)
        return StepSuspects(tuple(planned), tuple(left_out), tuple(forced),
                            tuple(n for n in rejoined if n in avail))
