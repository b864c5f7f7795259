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

import mpi_coded.cec.policies  # noqa: F401  (registers the package's own)
from mpi_coded.cec.policy import POLICIES, check_plan
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.errors import ConfigError, PluginError

__all__ = ["POLICIES", "PlanCache", "StepPlan", "make_plan"]


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
    chosen = POLICIES.lookup(policy)
    origin = POLICIES.origin(policy)
    if origin == "mpi_coded":
        return chosen.plan(speeds, L, available, rows=rows, S=S, prev=prev)
    try:  # a plugin's plans are held to the rule; its failure names the plugin
        return check_plan(chosen.plan(speeds, L, available, rows=rows, S=S, prev=prev))
    except ConfigError as exc:
        why = exc.rule if exc.field == "policy" else str(exc)
        raise PluginError(origin, "policy", policy, why.removeprefix(f"{policy}: ")) from None
    except Exception as exc:  # its own failure, whatever it is
        raise PluginError(origin, "policy", policy, f"{type(exc).__name__}: {exc}") from exc


PLAN_CACHE_SIZE = 512
"""Plans a :class:`PlanCache` keeps (it starts over when full)."""


class PlanCache:
    """:func:`make_plan` with a memory, for the master's steps.

    The package's own policies plan as pure functions of ``(policy, speeds, L, available,
    rows, S)`` and, for those that lay out against it
    (:attr:`~mpi_coded.cec.policy.ElasticPolicy.uses_prev`), ``prev``, so a step whose
    inputs were planned before (the same machines available at the same speeds: every step
    of a steady job, and the sets a spot market
    repeats) takes that plan instead of solving it again.  A plugin's policy is asked every
    time: it may draw at random.  ``hits`` and ``misses`` count the lookups.
    """

    def __init__(self, size: int = PLAN_CACHE_SIZE) -> None:
        self.size = size
        self.plans: dict[tuple[object, ...], StepPlan] = {}
        self.hits = self.misses = 0

    def plan(self, policy: str, speeds: Mapping[int, Fraction], L: int,
             available: Sequence[int], rows: int | None = None, S: int = 0,
             prev: StepPlan | None = None) -> StepPlan:
        if POLICIES.origin(policy) != "mpi_coded":
            return make_plan(policy, speeds, L, available, rows=rows, S=S, prev=prev)
        after = _Same(prev if POLICIES.lookup(policy).uses_prev else None)
        key = (policy, tuple((n, *_exact(v)) for n, v in speeds.items()), L,
               tuple(available), rows, S, after)
        found = self.plans.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        plan = make_plan(policy, speeds, L, available, rows=rows, S=S, prev=prev)
        if len(self.plans) >= self.size:
            self.plans.clear()
        self.plans[key] = plan
        return plan


class _Same:
    """A previous plan in a cache key, compared by identity (a plan from the cache is the
    same object each time; hashing a plan's fractions took longer than planning)."""

    __slots__ = ("plan",)

    def __init__(self, plan: StepPlan | None) -> None:
        self.plan = plan

    def __hash__(self) -> int:
        return id(self.plan)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.plan is self.plan


def _exact(v: object) -> tuple[object, ...]:
    """A speed in a cache key: a fraction as its two integers (hashing a ``Fraction`` is
    slow), anything else as itself."""
    return (v.numerator, v.denominator) if isinstance(v, Fraction) else (v,)
