"""Transition waste between consecutive assignments (Dau et al. 2020; docs/theory.md (A.6)).

For a machine available in both steps, ``new_n`` is the measure of rows it
computes now but did not compute in the previous step.  Its load change
forces it to take over at least ``max(0, load_t - load_{t-1})`` new rows; the
rest is waste.  The step's transition waste is

    W_t = sum_{n in N_{t-1} & N_t} ( |S_n^t \\ S_n^{t-1}| - max(0, |S_n^t| - |S_n^{t-1}|) )

in the plans' unit (fraction of a block, or rows).  It equals the rows abandoned
beyond what the load change forces.  Machines that join or leave contribute
only unavoidable movement.  The first step has no waste.

Each term is ``min(|S_n^t|, |S_n^{t-1}|) - |S_n^t & S_n^{t-1}|``; the overlaps
are summed over the pieces cut by the row sets of both plans (a sweep over
their boundaries, in integers over a common denominator).
"""

from __future__ import annotations

import math
from fractions import Fraction

from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.errors import require


def _int_sizes(plan: StepPlan, d: int) -> list[int]:
    return [int(Fraction(rs.size) * d) for rs in plan.sets]


def transition_waste(prev: StepPlan | None, cur: StepPlan) -> Fraction:
    """``W_t`` above, in fractions of a block."""
    if prev is None:
        return Fraction(0)
    require(prev.rows == cur.rows, "rows", "consecutive plans must use the same rows per block")
    d = math.lcm(*(Fraction(rs.size).denominator for p in (prev, cur) for rs in p.sets))
    both = set(prev.available) & set(cur.available)
    measure: list[dict[int, int]] = []
    for p in (prev, cur):
        m = dict.fromkeys(both, 0)
        for rs, size in zip(p.sets, _int_sizes(p, d)):
            if size > 0:
                for n in rs.machines:
                    if n in m:
                        m[n] += size
        measure.append(m)
    waste = sum(min(measure[0][n], measure[1][n]) for n in both)
    # sweep: pieces where one set of each plan is active
    a_sets = [(s, rs.machines) for rs, s in zip(prev.sets, _int_sizes(prev, d)) if s > 0]
    b_sets = [(s, rs.machines) for rs, s in zip(cur.sets, _int_sizes(cur, d)) if s > 0]
    i = j = 0
    a_left = a_sets[0][0] if a_sets else 0
    b_left = b_sets[0][0] if b_sets else 0
    a_mach: set[int] = set(a_sets[0][1]) if a_sets else set()
    while i < len(a_sets) and j < len(b_sets):
        step = min(a_left, b_left)
        waste -= step * len(a_mach.intersection(b_sets[j][1]))
        a_left -= step
        b_left -= step
        if a_left == 0:
            i += 1
            if i < len(a_sets):
                a_left = a_sets[i][0]
                a_mach = set(a_sets[i][1])
        if b_left == 0:
            j += 1
            if j < len(b_sets):
                b_left = b_sets[j][0]
    return Fraction(waste, d * (cur.rows or 1))
