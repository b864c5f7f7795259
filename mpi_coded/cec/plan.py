"""One time step's plan: who computes which rows of its coded block.

:func:`make_plan` asks the policy called ``policy`` (:data:`~mpi_coded.cec.policy.POLICIES`:
the package's own, :mod:`mpi_coded.cec.policies`, and plugins') for its
:class:`~mpi_coded.cec.step_plan.StepPlan`, a plain value the MPI runtime only executes.

Stragglers: with ``S > 0`` every row set has ``L + S`` machines (the loads solve the same
problems with ``L + S`` in place of ``L``), so any ``L`` of its machines decode it and up
to ``S`` machines may be late.  The planner works in integers over one common denominator
and builds ``Fraction`` objects only for the answer; the order of the machines in the
filling algorithm is kept incrementally (:mod:`mpi_coded.cec.filling`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from mpi_coded.cec import policies as _builtin  # noqa: F401  (registers the package's own)
from mpi_coded.cec.policy import POLICIES, check_plan
from mpi_coded.cec.step_plan import StepPlan

__all__ = ["POLICIES", "StepPlan", "make_plan"]


def make_plan(
    policy: str,
    speeds: Mapping[int, Fraction],
    L: int,
    available: Sequence[int],
    rows: int | None = None,
    S: int = 0,
    prev: StepPlan | None = None,
) -> StepPlan:
    """Plan one step for the machines ``available`` (ids into ``speeds``) with the policy
    called ``policy``: :meth:`~mpi_coded.cec.policy.ElasticPolicy.plan`.

    ``S`` stragglers are tolerated: every row is computed by ``L + S`` machines.
    ``prev`` (the previous step's plan) is for policies that lay out against it.  A
    plugin's plan is checked against the rule of every plan
    (:func:`~mpi_coded.cec.policy.check_plan`).
    """
    plan = POLICIES.lookup(policy).plan(speeds, L, available, rows=rows, S=S, prev=prev)
    if POLICIES.origin(policy) != "mpi_coded":  # a plugin's plans are held to the rule
        check_plan(plan)
    return plan
