"""An elastic policy as an object: :class:`ElasticPolicy`, and :data:`POLICIES`, the
registry of the policies known by name.

A policy owns its rules, and nothing outside its own module asks its name:

* **its plan** (:meth:`ElasticPolicy.plan`): who computes which rows of its coded block at
  one step.  The template method checks the input (one message shape: the argument and
  the rule), asks the policy's :meth:`~ElasticPolicy.assign` for the integer loads and the
  row sets, and computes the plan's time ``max_n load[n] / s[n]`` exactly
  (docs/theory.md (A.2));
* **its runtime phases** (:attr:`ElasticPolicy.steps`): the ``module:Class`` of the
  runtime's products for it, or that class itself (a plugin file given by path is no
  importable module: it passes its class) (the coded policies share
  :class:`~mpi_coded.runtime.cec.coded_steps.CodedSteps`, the uncoded baseline has
  :class:`~mpi_coded.runtime.cec.uncoded_steps.UncodedSteps`; a plugin may bring its
  own).  The pure package only names it: the runtime imports it;
* **its config rules** (:meth:`ElasticPolicy.check_config`), run with the job's other
  checks on every rank before any MPI traffic.

The rule every plan obeys (:func:`check_plan`, docs/theory.md (A.4)): every row of the
block is in one row set of ``L + S`` distinct available machines, the sets' sizes add up
to the block, a machine's load is the size of its sets, and the time is the slowest
machine's.  A plugin's policy is held to it on a worked example when it is registered
(:mod:`mpi_coded.plugins`), and every plan a plugin's policy makes is checked against it
when the job plans it (:func:`mpi_coded.cec.plan.make_plan`); the built-in policies' plans
are held to it by the unit tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from mpi_coded.cec.filling import RowSet
from mpi_coded.cec.optimal_load import int_speeds
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.errors import ConfigError, require
from mpi_coded.registry import Registry

CODED_STEPS = "mpi_coded.runtime.cec.coded_steps:CodedSteps"
"""The runtime phases of a coded policy: MDS-coded blocks sent once, row sets each step."""
UNCODED_STEPS = "mpi_coded.runtime.cec.uncoded_steps:UncodedSteps"
"""The runtime phases of the uncoded baseline: rows of ``X`` split by speed and moved."""


@dataclass(frozen=True)
class Assignment:
    """A policy's answer for one step: ``load[n] = num[n] / denom`` of a block per machine
    (``denom`` = the rows per block when planned in rows) and the row sets."""

    num: Mapping[int, int]
    denom: int
    sets: Sequence[RowSet]


@dataclass(frozen=True, eq=False)
class ElasticPolicy:
    """An elastic policy (module docstring); subclasses implement :meth:`assign`."""

    name: str
    """Name in configs (``policy = "..."``), on the command line and in results."""
    summary: str
    """One line for help texts and docs."""
    steps: str | type = CODED_STEPS
    """``module:Class`` of the runtime's products for this policy (imported by the
    runtime only), or that class (a subclass of
    :class:`mpi_coded.runtime.cec.steps.Steps`)."""
    plans_row_sets: bool = True
    """It plans row sets of coded blocks (``mpi-coded plan cec`` prints them)."""
    uses_prev: ClassVar[bool] = True
    """Its plan depends on ``prev``, the previous step's (the master's cache of the package's
    own policies' plans, :class:`mpi_coded.cec.plan.PlanCache`, then keys on it)."""

    def __repr__(self) -> str:
        return f"<policy {self.name}>"

    def assign(self, speeds: Mapping[int, Fraction], lp: int, available: tuple[int, ...],
               rows: int | None, prev: StepPlan | None) -> Assignment:
        """The loads and row sets for ``available`` (sorted ids) at ``speeds``, every row
        on ``lp = L + S`` machines; ``rows``: plan in integer rows of a block of that many;
        ``prev``: the previous step's plan (None at the first)."""
        raise NotImplementedError

    def check_config(self, cfg: Any) -> None:
        """This policy's own config rules (ConfigError naming the key and the rule); ``cfg``:
        the job's :class:`~mpi_coded.cec.config.CECConfig` (typed ``Any``: the config sits
        above the policies it names, and this module imports nothing of it)."""

    def plan(self, speeds: Mapping[int, Fraction], L: int, available: Sequence[int],
             rows: int | None = None, S: int = 0, prev: StepPlan | None = None) -> StepPlan:
        """Plan one step for the machines ``available`` (ids into ``speeds``); ``S``
        stragglers tolerated: every row is computed by ``L + S`` machines."""
        avail = check_step(speeds, L, available, rows, S)
        sp = {n: (v if type(v) is Fraction else Fraction(v)) for n in avail
              for v in [speeds[n]]}
        a = self.assign(sp, L + S, avail, rows, prev)
        scale, si = int_speeds(sp)
        # time = max_n (num[n] / denom) / (si[n] / scale), compared exactly in integers
        best_num, best_s = 0, 1
        for n in avail:
            x, y = a.num[n], si[n]
            if x * best_s > best_num * y:
                best_num, best_s = x, y
        return StepPlan(policy=self.name, L=L, available=avail, speeds=tuple(sp.items()),
                        load=tuple((n, Fraction(a.num[n], a.denom)) for n in avail),
                        time=Fraction(best_num * scale, a.denom * best_s),
                        sets=tuple(a.sets), rows=rows, S=S)


def check_step(speeds: Mapping[int, Fraction], L: int, available: Sequence[int],
               rows: int | None, S: int) -> tuple[int, ...]:
    """The checks every plan's input passes; the available ids, sorted."""
    require(L >= 1, "L", "must be >= 1", L)
    require(L <= len(speeds), "L", f"must be <= the number of machines N={len(speeds)}", L)
    avail = tuple(sorted(set(int(a) for a in available)))
    require(len(avail) == len(available), "available", "machine ids must be distinct",
            list(available))
    for a in (a for a in avail if a not in speeds):  # the first unknown id, if any
        require(False, "available", f"unknown machine id {a} (ids are 1..{len(speeds)})", a)
    require(len(avail) >= L, "available", f"at least L={L} machines must be available",
            len(avail))
    if rows is not None:
        require(rows >= 1, "rows", "rows per block must be >= 1", rows)
    require(S >= 0, "S", "stragglers tolerated must be >= 0", S)
    require(L + S <= len(avail), "S",
            f"L + S must be <= the number of available machines ({len(avail)}) with L={L}", S)
    return avail


def plan_violation(plan: StepPlan) -> str | None:
    """The rule ``plan`` breaks (module docstring), or None."""
    lp, total = plan.L + plan.S, plan.rows if plan.rows is not None else 1
    avail = set(plan.available)
    covered = Fraction(0)
    load: dict[int, Fraction] = {n: Fraction(0) for n in plan.available}
    for (a, b), rs in zip(plan.set_ranges, plan.sets):
        size = Fraction(rs.size)
        if size < 0:
            return f"row set {a}..{b} has a negative size"
        if size == 0:
            continue
        if len(set(rs.machines)) != lp or not set(rs.machines) <= avail:
            return (f"a plan must cover every row L + S = {lp} times by distinct available "
                    f"machines (rows {a}..{b} on {list(rs.machines)})")
        covered += size
        for n in rs.machines:
            load[n] += size
    if covered != total:
        return f"the row sets must cover the whole block ({total}), not {covered}"
    want = {n: v * total for n, v in plan.load}
    if set(want) != avail or any(want[n] != load[n] for n in avail):
        return "a machine's load must be the size of its row sets"
    sp = dict(plan.speeds)
    time = max((Fraction(v) / sp[n] for n, v in plan.load), default=Fraction(0))
    if plan.time != time:
        return f"the plan's time must be max load / speed = {time}, not {plan.time}"
    return None


def check_plan(plan: StepPlan, where: str = "policy") -> StepPlan:
    """``plan`` if it obeys the rule of every plan; else ConfigError naming ``where``."""
    why = plan_violation(plan)
    if why is not None:
        raise ConfigError(where, f"{plan.policy}: {why}")
    return plan


POLICIES: Registry[ElasticPolicy] = Registry("policy")
"""The elastic policies known by name (the package's own from :mod:`mpi_coded.cec.policies`,
and plugins')."""
