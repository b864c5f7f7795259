"""The package's elastic policies, one object each, registered in
:data:`mpi_coded.cec.policy.POLICIES` when this module is imported.

- ``heterogeneous`` (:class:`Heterogeneous`): the optimal load (docs/theory.md (A.3)), in
  integer rows (A.5) when planned in rows, then the filling algorithm (A.4);
- ``heterogeneous-tw`` (:class:`TransitionAware`): the same loads (so the same step time),
  with row sets laid out against the previous step's plan to cut the transition waste
  (A.6, :mod:`mpi_coded.cec.tw_policy`);
- ``cyclic`` (:class:`Cyclic`): the homogeneous CEC baseline (A.6), equal loads whatever
  the speeds;
- ``uncoded`` (:class:`Uncoded`): the uncoded elastic baseline (:mod:`mpi_coded.cec.uncoded`):
  no coded blocks, ``X``'s rows split by speed and moved between machines; no row sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from mpi_coded.cec.cyclic import cyclic_loads, cyclic_sets
from mpi_coded.cec.filling import RowSet, filling_int
from mpi_coded.cec.integer_rows import rows_from_load
from mpi_coded.cec.optimal_load import int_load
from mpi_coded.cec.policy import POLICIES, UNCODED_STEPS, Assignment, ElasticPolicy
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.cec.tw_policy import tw_sets
from mpi_coded.errors import ConfigError, require
from mpi_coded.registry import HookRegistrar


def filled_sets(num: Mapping[int, int], lp: int, denom: int, rows: int | None
                ) -> list[RowSet]:
    """The filling algorithm's row sets (A.4) for loads ``num[n] / denom``: row counts when
    planned in ``rows``, else fractions of a block."""
    raw = filling_int(num, lp, denom)
    if rows is not None:
        return [RowSet(a, ms) for a, ms in raw]
    return [RowSet(Fraction(a, denom), ms) for a, ms in raw]


@dataclass(frozen=True, eq=False)
class Heterogeneous(ElasticPolicy):
    """The optimal load (A.3; A.5 in rows) and the filling algorithm (A.4)."""

    uses_prev: ClassVar[bool] = False

    def loads(self, speeds: Mapping[int, Fraction], lp: int, rows: int | None
              ) -> tuple[Mapping[int, int], int]:
        """``(num, denom)``: the optimal load ``num[n] / denom`` of a block (A.3, A.5)."""
        ld = int_load(speeds, lp)
        if rows is None:
            return ld.num, ld.denom
        return rows_from_load(ld, speeds, lp, rows), rows

    def assign(self, speeds: Mapping[int, Fraction], lp: int, available: tuple[int, ...],
               rows: int | None, prev: StepPlan | None) -> Assignment:
        num, denom = self.loads(speeds, lp, rows)
        return Assignment(num, denom, filled_sets(num, lp, denom, rows))


@dataclass(frozen=True, eq=False)
class TransitionAware(Heterogeneous):
    """The loads of ``heterogeneous``, row sets laid out against the previous plan (A.6)."""

    uses_prev: ClassVar[bool] = True

    def assign(self, speeds: Mapping[int, Fraction], lp: int, available: tuple[int, ...],
               rows: int | None, prev: StepPlan | None) -> Assignment:
        num, denom = self.loads(speeds, lp, rows)
        if prev is None:
            return Assignment(num, denom, filled_sets(num, lp, denom, rows))
        return Assignment(num, denom, tw_sets(prev, num, denom, lp, rows))


@dataclass(frozen=True, eq=False)
class Cyclic(ElasticPolicy):
    """The homogeneous baseline (A.6): ``L + S`` cyclic shifts, equal loads."""

    uses_prev: ClassVar[bool] = False

    def assign(self, speeds: Mapping[int, Fraction], lp: int, available: tuple[int, ...],
               rows: int | None, prev: StepPlan | None) -> Assignment:
        return Assignment(cyclic_loads(available, lp, rows), rows or len(available),
                          cyclic_sets(available, lp, rows))


@dataclass(frozen=True, eq=False)
class Uncoded(ElasticPolicy):
    """The uncoded elastic baseline: rows of ``X`` split by speed and moved; no row sets."""

    def assign(self, speeds: Mapping[int, Fraction], lp: int, available: tuple[int, ...],
               rows: int | None, prev: StepPlan | None) -> Assignment:
        raise ConfigError("policy", f"{self.name} splits X's rows by speed and moves them "
                          "(mpi_coded.cec.uncoded); it plans no row sets of coded blocks",
                          self.name)

    def check_config(self, cfg: Any) -> None:
        require(cfg.S == 0, "S", f'must be 0 with policy = "{self.name}" (rows are not '
                "replicated)", cfg.S)
        require(cfg.fault_tolerance == "none", "fault_tolerance",
                f'must be "none" with policy = "{self.name}": a machine that dies takes the '
                "only copy of its rows with it (the coded policies survive it)",
                cfg.fault_tolerance)


HETEROGENEOUS = Heterogeneous("heterogeneous", "optimal load, filling algorithm")
CYCLIC = Cyclic("cyclic", "homogeneous baseline")
TRANSITION_AWARE = TransitionAware(
    "heterogeneous-tw", "same loads, row sets chosen to cut transition waste")
UNCODED = Uncoded("uncoded", "the uncoded elastic baseline: data re-split and moved",
                  steps=UNCODED_STEPS, plans_row_sets=False)


def mpi_coded_register(registry: HookRegistrar) -> None:
    """The package's own policies, through the hook a plugin uses."""
    for policy in (HETEROGENEOUS, CYCLIC, TRANSITION_AWARE, UNCODED):
        registry.policy(policy)


mpi_coded_register(HookRegistrar("mpi_coded", {"policy": POLICIES}))
