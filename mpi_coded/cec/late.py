"""Answers that arrive after their step: re-encoded against the step's verified result
(docs/theory.md, A.10, "Late answers").

With ``S >= 1`` a step is over as soon as its decoded ``y`` verifies; the machines still
computing are cut off, and a spare answer already on its way arrives after the step, when
the master used to drop it unread.  A wrong one among them harmed nothing, but its machine
is a liar the master has not seen.  The master keeps the verified ``Z`` (the ``L x R``
rows of ``X_1 w .. X_L w``) and the plan of each attempt of the last few products; a late
answer ``Y_n`` of row set ``M_f`` is then checked as an unused spare answer is,

    Y_n  ==  G[n] Z[:, M_f]

(exact over GF(2^l); over float64 within the field's tolerance), and a wrong one is named
``late`` with its own step in the record of the step during which it arrived, and the
machine caught as any other.  An answer of a product no longer kept (or never verified)
is dropped unread, as before.

Pure: plain integers and arrays, no MPI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from mpi_coded.cec.locate import WrongAnswer, split_results, wrong_answers
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.fields import Field

KEEP = 4
"""Verified products (wire steps, each with all its attempts) kept for their late answers:
two steps of linreg's two products (a late answer arrives within the next step)."""


@dataclass(frozen=True)
class Verified:
    """One attempt of a verified product: its plan, the verified ``Z``, the job's step."""

    plan: StepPlan
    z: np.ndarray
    step: int


@dataclass
class LateAnswers:
    """The verified products a late answer is checked against, and the wrong ones found."""

    g: np.ndarray
    fld: Field
    keep_last: int = KEEP
    kept: dict[tuple[int, int], Verified] = field(default_factory=dict)
    found: list[WrongAnswer] = field(default_factory=list)
    checked: int = 0  # late answers re-encoded

    def keep(self, vstep: int, plans: Mapping[int, StepPlan], z: np.ndarray, step: int
             ) -> None:
        """Product ``vstep`` verified as ``z``: each attempt's plan kept (the oldest
        products forgotten past :attr:`keep_last`)."""
        for attempt, plan in plans.items():
            self.kept[(vstep, attempt)] = Verified(plan, z, step)
        while len({v for v, _ in self.kept}) > self.keep_last:
            oldest = next(iter(self.kept))[0]
            for key in [k for k in self.kept if k[0] == oldest]:
                del self.kept[key]

    def part(self, vstep: int, attempt: int, n: int, f: int, y: np.ndarray) -> None:
        """A late answer of machine ``n`` for row set ``f`` (``S > 0``)."""
        v = self.kept.get((vstep, attempt))
        if v is None or not 0 <= f < len(v.plan.sets) or n not in v.plan.sets[f].machines:
            return
        self._check(v, {f: {n: y}}, attempt)

    def result(self, vstep: int, attempt: int, n: int, y: np.ndarray) -> None:
        """A late whole answer of machine ``n`` (``S = 0``: its row sets in plan order)."""
        v = self.kept.get((vstep, attempt))
        if v is None or n not in v.plan.available:
            return
        want = int(v.plan.row_counts()[n])
        if y.shape != (want,):
            self.found += [WrongAnswer(n, -1, (0, 0), attempt, "late", v.step)]
            return
        self._check(v, split_results(v.plan, {n: y}), attempt)

    def _check(self, v: Verified, answers: dict[int, dict[int, np.ndarray]], attempt: int
               ) -> None:
        self.checked += sum(len(got) for got in answers.values())
        self.found += wrong_answers(v.plan, answers, v.z, self.g, self.fld, attempt,
                                    "late", v.step)

    def take(self) -> list[WrongAnswer]:
        """The wrong late answers found since the last call."""
        out, self.found = self.found, []
        return out
