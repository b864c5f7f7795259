"""Collecting one attempt of an elastic step: answers in, late answers recognised.

The master tests the posted header receives of *every* machine with one
``Testsome``: machines of the current attempt answer it; any other machine may
only be delivering a late answer to an earlier step or attempt (a machine
re-planned away, cut off, or a suspect), which is counted and dropped after
its payload is received (so the sender never blocks on it) and reported to
``on_late`` (a late META still tells the master the machine is alive and how
fast it was).

``S = 0``: the attempt is complete when every planned machine has sent RESULT
and META.  ``S > 0``: when every non-empty row set has answers (PART) from
``L`` of its machines; METAs that arrived are kept, the others come late.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from mpi_coded.cec.locate import split_results
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.runtime.cec.tasks import split_aux
from mpi_coded.runtime.core import records
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.peers import Peers

ANSWERS = {P.Kind.RESULT, P.Kind.META, P.Kind.PART}


def attempt_of(h: P.Header) -> int:
    return split_aux(h.aux)[0] if h.kind == P.Kind.PART else h.aux


@dataclass
class Attempt:
    """What one attempt of a step has collected."""

    plan: StepPlan
    step: int
    attempt: int
    per_set: bool
    need_all: bool = False  # S > 0: wait for every planned answer, not the first L per set
    await_from: frozenset[int] = frozenset()  # S > 0: machines whose every answer is awaited
    results: dict[int, np.ndarray] = field(default_factory=dict)  # S = 0
    parts: dict[int, dict[int, np.ndarray]] = field(default_factory=dict)  # S > 0: f -> n -> y
    metas: dict[int, dict[str, float]] = field(default_factory=dict)
    delivered: dict[int, int] = field(default_factory=dict)  # rows answered per machine

    def __post_init__(self) -> None:
        self.owed = {n: 0 for n in self.plan.available}  # non-empty sets per machine
        self.set_machines: dict[int, tuple[int, ...]] = {}
        self.set_size: dict[int, int] = {}
        for f, (rs, (a, b)) in enumerate(zip(self.plan.sets, self.plan.set_ranges)):
            if b > a:
                self.set_machines[f] = tuple(rs.machines)
                self.set_size[f] = int(b) - int(a)
                for n in rs.machines:
                    self.owed[n] += 1
        # what :meth:`complete` waits for, kept as answers come (not rescanned each poll):
        # S = 0 the machines without RESULT and META, S > 0 the sets short of L answers
        self.waiting: set[int] = set(self.set_machines) if self.per_set else \
            set(self.plan.available)

    def need(self, f: int) -> int:
        """Answers row set ``f`` waits for: ``L``, or all its machines' (:attr:`need_all`)."""
        return len(self.set_machines[f]) if self.need_all else self.plan.L

    def short(self, f: int) -> bool:
        """Row set ``f`` still waits: fewer than :meth:`need` answers, or one of
        :attr:`await_from` (a machine on probation: its answers are its probe) missing."""
        got = self.parts.get(f, {})
        return len(got) < self.need(f) or \
            any(n not in got for n in self.await_from if n in self.set_machines[f])

    def want_all(self) -> None:
        """From now on wait for every planned answer (the spare ones too): a check failed."""
        self.need_all = True
        if self.per_set:
            self.waiting = {f for f in self.set_machines if self.short(f)}

    def answers(self) -> dict[int, dict[int, np.ndarray]]:
        """Per-set answers (``S = 0``: each machine's result split by the plan)."""
        if self.per_set:
            return {f: dict(got) for f, got in self.parts.items()}
        return split_results(self.plan, self.results)

    def finished(self, n: int) -> bool:
        """``n`` has delivered everything it was asked for."""
        if self.per_set:
            return n in self.metas or \
                sum(1 for f in self.parts if n in self.parts[f]) == self.owed[n]
        return n in self.results and n in self.metas

    def complete(self) -> bool:
        return not self.waiting

    def missing(self) -> list[int]:
        """Machines the attempt still waits for."""
        if not self.per_set:
            return [n for n in self.plan.available if not self.finished(n)]
        out: set[int] = set()
        for f, ms in self.set_machines.items():
            if self.short(f):
                out |= {n for n in ms if n not in self.parts.get(f, {})}
        return sorted(out)

    def owing(self, lost: Collection[int]) -> list[int]:
        """The machines the attempt waits for (:meth:`missing`); with ``S > 0`` a dead
        machine only while one of its row sets can no longer reach ``L`` answers without
        it (otherwise the others finish the set, and the attempt goes on)."""
        missing = self.missing()
        if not self.per_set or not any(n in lost for n in missing):
            return missing
        for f, ms in self.set_machines.items():
            got = self.parts.get(f, {})
            alive = sum(1 for n in ms if n not in got and n not in lost)
            if len(got) < self.need(f) and len(got) + alive < self.need(f):
                return missing
        return [n for n in missing if n not in lost]

    def take(self, h: P.Header, payload: np.ndarray | None, name: Callable[[int], str]) -> None:
        n = h.source
        if n not in self.owed:
            raise P.WireError(f"{h.kind.name} (step {h.step}) from {name(n)}, which has no "
                              f"task in step {self.step} attempt {self.attempt}")
        if h.kind == P.Kind.META:
            self.metas[n] = records.TASK_META.unpack(payload, n)
            if not self.per_set and n in self.results:
                self.waiting.discard(n)
            return
        if payload is None:
            raise P.WireError(f"{h.kind.name} from {name(n)} has no payload")
        if h.kind == P.Kind.RESULT and not self.per_set:
            self.results[n] = payload
            self.delivered[n] = int(payload.shape[0])
            if n in self.metas:
                self.waiting.discard(n)
            return
        if h.kind == P.Kind.PART and self.per_set:
            f = split_aux(h.aux)[1]
            if n not in self.set_machines.get(f, ()) or payload.shape != (self.set_size[f],):
                raise P.WireError(f"PART for row set {f} from {name(n)} does not fit the plan")
            got = self.parts.setdefault(f, {})
            got[n] = payload
            if not self.short(f):
                self.waiting.discard(f)
            self.delivered[n] = self.delivered.get(n, 0) + self.set_size[f]
            return
        raise P.WireError(f"unexpected {h.kind.name} from {name(n)} in step {self.step}")


def collect(links: Peers, machines: Sequence[int], att: Attempt, *, soft: float, hard: float,
            on_late: Callable[[P.Header, np.ndarray | None], None]) -> list[int]:
    """Collect ``att`` until complete (returns ``[]``) or ``soft`` (returns who is missing)."""
    key = (att.step, att.attempt)

    def handle(msg: tuple[P.Header, np.ndarray | None]) -> None:
        h, payload = msg
        _check_answer(links, h)
        if (h.step, attempt_of(h)) < key:
            links.drop()
            on_late(h, payload)
        elif (h.step, attempt_of(h)) != key:
            raise P.WireError(f"{h.kind.name} for step {h.step} from {links.name([h.source])} "
                              f"during step {att.step}")
        else:
            att.take(h, payload, lambda n: links.name([n]))

    links.pump(lambda: machines, handle, att.complete, hard=hard, soft=soft,
               what=f"step {att.step} results", owed=lambda: att.owing(links.lost))
    return [] if att.complete() else att.missing()


def drain(links: Peers, machines: Sequence[int], before: tuple[int, int],
          on_late: Callable[[P.Header, np.ndarray | None], None], hard: float) -> None:
    """Take the late answers that have already arrived (never waits)."""
    while msgs := links.arrived(machines, hard):
        for h, payload in msgs:
            _check_answer(links, h)
            if (h.step, attempt_of(h)) >= before:
                raise P.WireError(f"{h.kind.name} for step {h.step} from "
                                  f"{links.name([h.source])} arrived between steps")
            links.drop()
            on_late(h, payload)


def _check_answer(links: Peers, h: P.Header) -> None:
    if h.kind not in ANSWERS:
        raise P.WireError(f"unexpected {h.kind.name} from {links.name([h.source])} "
                          f"(expected {', '.join(sorted(k.name for k in ANSWERS))})")
