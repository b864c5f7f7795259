"""Machines caught answering wrong: quarantined, their block checked, probed, re-admitted or
lost for the job (docs/theory.md, A.10).

* A machine named in a step's ``wrong_answers`` is **caught**: it is left out of the
  plans of the next :attr:`Quarantine.out_steps` steps (sent IDLE, as a suspect is) and
  its block is checked against its checksum.  With ``out_steps = 0`` it sits out no
  step: it is planned on probation from the next step on (its block checked first).
* A **corrupt block** (the checksum differs) is rebuilt (the store's repair from ``L``
  peers, or sent again by a master that holds ``X``); the wrong answers are its fault,
  not the machine's, so it earns no strike.
* A **good block** earns a strike: the machine computed wrong with the right data (a
  mercurial core).  Its second strike (``mercurial_strikes``) loses it for the job.
* After sitting out, the machine is planned again **on probation**: its answers of that
  step (its *probe products*) are re-encoded against the verified result; clean, it is
  **re-admitted**; wrong, it is caught again.
* If leaving the quarantined machines out leaves fewer than ``need`` (``L + S``) of a
  step's available machines, those caught longest ago are planned anyway, on probation;
  lost machines only when fewer than ``L`` would be left (the job goes on: such a step
  is checked as any other and NOT VERIFIED if they answer wrong).

Pure bookkeeping: the runtime tells it what happened and asks whom to plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mpi_coded.errors import require

CAUGHT, BLOCK_GOOD, BLOCK_REPAIRED, READMITTED, LOST = (
    "caught", "block-good", "block-repaired", "readmitted", "lost")
"""The events of a quarantine (the step record's ``quarantine`` list)."""
STRIKES = 2
"""Times caught with a good block before a machine is lost for the job (the default of
``mercurial_strikes``)."""


@dataclass(frozen=True)
class StepQuarantine:
    """What the quarantine means for one step's plan."""

    planned: tuple[int, ...]  # available machines the step may be planned on
    left_out: tuple[int, ...]  # quarantined or lost machines not planned
    probes: tuple[int, ...]  # machines on probation: this step's answers are their probe


@dataclass
class Quarantine:
    """The master's record of machines caught answering wrong (module docstring)."""

    out_steps: int = 2
    strikes_lost: int = STRIKES
    since: dict[int, int] = field(default_factory=dict)  # quarantined -> step caught
    probation: set[int] = field(default_factory=set)
    strikes: dict[int, int] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)
    last_caught: dict[int, int] = field(default_factory=dict)  # machine -> step caught last

    def __post_init__(self) -> None:
        require(self.out_steps >= 0, "quarantine_steps", "must be >= 0", self.out_steps)
        require(self.strikes_lost >= 1, "mercurial_strikes", "must be >= 1", self.strikes_lost)

    def caught(self, n: int, step: int) -> None:
        """``n`` answered wrong at ``step``: out of the next plans, its probation over."""
        self.last_caught[n] = step
        self.since[n] = step
        self.probation.discard(n)

    def known(self, n: int, step: int) -> bool:
        """Whether a wrong answer ``n`` gave at ``step`` (a late one, found since) is
        already accounted: ``n`` was caught at ``step`` or after (or is lost), so it earns
        no second catch, strike or block check for the same time."""
        return n in self.lost or self.last_caught.get(n, 0) >= step

    def block_checked(self, n: int, good: bool) -> str:
        """The verdict on ``n``'s block after it was caught: the event (``block-good``,
        ``block-repaired`` or ``lost``, the second strike with a good block)."""
        if not good:
            return BLOCK_REPAIRED
        self.strikes[n] = self.strikes.get(n, 0) + 1
        if self.strikes[n] >= self.strikes_lost:
            self.lose(n)
            return LOST
        return BLOCK_GOOD

    def lose(self, n: int) -> None:
        self.lost.add(n)
        self.since.pop(n, None)
        self.probation.discard(n)

    def probed(self, n: int, clean: bool) -> str | None:
        """``n``'s probe products were re-encoded: ``readmitted`` when clean (None when
        ``n`` is not on probation, or not clean: the caller catches it)."""
        if n in self.probation and clean:
            self.probation.discard(n)
            return READMITTED
        return None

    def for_step(self, step: int, available: Sequence[int], need: int,
                 least: int = 1) -> StepQuarantine:
        """Who of ``available`` step ``step`` may plan; machines whose time out is over go
        on probation.  Fewer than ``need`` otherwise: quarantined machines planned too
        (on probation); fewer than ``least`` (``L``) even then: lost ones too (the step
        is then checked as any other, and NOT VERIFIED if they answer wrong)."""
        for n in [n for n, s in self.since.items() if step - s > self.out_steps]:
            del self.since[n]
            self.probation.add(n)
        out = [n for n in available if n in self.since or n in self.lost]
        planned = [n for n in available if n not in out]
        short = [n for n in sorted(self.since, key=lambda n: (self.since[n], n))
                 if n in available][: max(0, need - len(planned))]
        for n in short:  # too few machines otherwise: planned, on probation
            del self.since[n]
            self.probation.add(n)
        planned = sorted(planned + short)
        out = [n for n in out if n not in short]
        if len(planned) < least:
            extra = [n for n in out if n in self.lost][: least - len(planned)]
            planned = sorted(planned + extra)
            out = [n for n in out if n not in extra]
        return StepQuarantine(tuple(planned), tuple(out),
                              tuple(n for n in planned if n in self.probation))

    @property
    def current(self) -> tuple[int, ...]:
        return tuple(sorted(self.since))
