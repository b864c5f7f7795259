"""Servers of the coded job caught answering wrong: quarantined across repetitions, on
probation, re-admitted or lost for the job (docs/coded.md "A server that answers wrong").

The elastic job's :mod:`mpi_coded.cec.quarantine` is the model; the coded job cannot
import it (the layers keep the two jobs apart) and differs in two points, so this is a
small sibling:

* **No block to check.**  A coded server keeps no coded block across repetitions: every
  repetition encodes its coded rows anew from ``A`` (which every rank builds from the
  seed at setup; nothing is sent), so the next encode is the only repair there is.  Each
  time a server is caught therefore earns a strike (its data was fresh: the wrong
  answer is its computation's, a mercurial core).
* **Enough is the scheme's map-end rule**, not a count: a server is left out only when
  the servers left can end the map without it (``enough``, the master's
  :func:`~mpi_coded.coded.mapend.map_phase_done`); uc and cmr wait for every server, so
  there a caught server stays in, on probation, and each repetition is checked as always.

The cycle:

* A server named in a repetition's ``wrong_answers`` is **caught** at that repetition:
  it is left out of the next :attr:`ServerQuarantine.out_reps` repetitions (a non-finisher
  from the start: the map end is taken on the other servers, its outputs never used;
  0: none, it is on probation from the next repetition on).
* Then it is **on probation**: the first verified repetition whose map end used it and
  named nothing of it **re-admits** it; named again, it is caught again.
* Its :attr:`ServerQuarantine.strikes_lost`-th catch **loses** it for the job (left out of
  every later repetition) when the servers left can run without it; when they cannot,
  it is kept (event ``needed``), on probation, and every repetition is checked as ever.
* When leaving the quarantined (and lost) servers out leaves too few to end the map,
  those caught longest ago are put back, on probation (lost ones last).

Pure bookkeeping: the master tells it what happened and asks whom to leave out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mpi_coded.errors import require

CAUGHT, READMITTED, LOST, NEEDED = "caught", "readmitted", "lost", "needed"
"""The events of a quarantine (a run line's ``quarantine`` list): caught (out of the next
repetitions), re-admitted after probation, lost for the job, or caught for the last
strike but needed by the scheme (kept, checked every repetition)."""
EVENTS = (CAUGHT, READMITTED, LOST, NEEDED)
STRIKES = 2
"""Catches before a server is lost for the job (the default of ``mercurial_strikes``)."""
OUT_REPS = 2
"""Repetitions a caught server sits out (the default of ``quarantine_reps``)."""


@dataclass(frozen=True)
class RepQuarantine:
    """What the quarantine means for one repetition."""

    left_out: tuple[int, ...]
    """Servers the map end leaves out (quarantined or lost)."""
    probation: tuple[int, ...]
    """Servers in the map end on probation (their time out over, or put back because
    the scheme cannot end the map without them)."""


@dataclass
class ServerQuarantine:
    """The master's record of servers caught answering wrong (module docstring)."""

    out_reps: int = OUT_REPS
    strikes_lost: int = STRIKES
    since: dict[int, int] = field(default_factory=dict)  # quarantined -> rep caught
    probation: set[int] = field(default_factory=set)
    strikes: dict[int, int] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        require(self.out_reps >= 0, "quarantine_reps", "must be >= 0", self.out_reps)
        require(self.strikes_lost >= 1, "mercurial_strikes", "must be >= 1",
                self.strikes_lost)

    def caught(self, s: int, rep: int, can_lose: bool) -> str:
        """``s`` was named wrong in repetition ``rep``: a strike; the event (``caught``,
        ``lost`` at the last strike when ``can_lose``: the servers left can end the map
        without it; ``needed`` when they cannot: it stays in, on probation)."""
        self.strikes[s] = self.strikes.get(s, 0) + 1
        if self.strikes[s] >= self.strikes_lost:
            self.since.pop(s, None)
            if can_lose:
                self.lost.add(s)
                self.probation.discard(s)
                return LOST
            self.probation.add(s)
            return NEEDED
        self.since[s] = rep
        self.probation.discard(s)
        return CAUGHT

    def clean(self, s: int) -> str | None:
        """``s`` was used by a verified repetition and named nothing: ``readmitted`` when it
        was on probation (and is not past its strikes), else None."""
        if s in self.probation and self.strikes.get(s, 0) < self.strikes_lost:
            self.probation.discard(s)
            return READMITTED
        return None

    def for_rep(self, rep: int, available: Sequence[int],
                enough: Callable[[list[int]], bool]) -> RepQuarantine:
        """Whom of ``available`` repetition ``rep`` leaves out; servers whose time out is
        over go on probation.  When ``enough`` (the servers kept can end the map) fails,
        the quarantined servers caught longest ago are put back, then lost ones, on
        probation, until it holds (or none is left out)."""
        for s in [s for s, r in self.since.items() if rep - r > self.out_reps]:
            del self.since[s]
            self.probation.add(s)
        out = sorted((s for s in available if s in self.since),
                     key=lambda s: (self.since[s], s))
        out += sorted(s for s in available if s in self.lost)
        while out and not enough([s for s in available if s not in out]):
            s = out.pop(0)  # needed: in, on probation (a lost one stays lost)
            self.since.pop(s, None)
            self.probation.add(s)
        return RepQuarantine(tuple(sorted(out)),
                             tuple(s for s in available
                                   if s in self.probation and s not in out))

    @property
    def current(self) -> tuple[int, ...]:
        """The servers quarantined now (not lost)."""
        return tuple(sorted(self.since))
