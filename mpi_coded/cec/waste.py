"""Transition waste between consecutive assignments (Dau et al. 2020; SPEC A.6).

For a machine available in both steps, ``new_n`` is the measure of rows it
computes now but did not compute in the previous step.  Its load change
forces it to take over at least ``max(0, load_t - load_{t-1})`` new rows; the
rest is waste.  The step's transition waste is

    W_t = sum_{n in N_{t-1} & N_t} ( |S_n^t \\ S_n^{t-1}| - max(0, |S_n^t| - |S_n^{t-1}|) )

in the plans' unit (fraction of a block, or rows).  It equals the rows abandoned
beyond what the load change forces.  Machines that join or leave contribute
only unavoidable movement.  The first step has no waste.
"""

from __future__ import annotations

from fractions import Fraction

from mpi_coded.cec.filling import Number
from mpi_coded.cec.plan import StepPlan
from mpi_coded.errors import require


def _overlap(a: list[tuple[Number, Number]], b: list[tuple[Number, Number]]) -> Fraction:
    total = Fraction(0)
    for a0, a1 in a:
        for b0, b1 in b:
            lo, hi = max(a0, b0), min(a1, b1)
            if hi > lo:
                total += Fraction(hi) - Fraction(lo)
    return total


def _measure(a: list[tuple[Number, Number]]) -> Fraction:
    return sum((Fraction(y) - Fraction(x) for x, y in a), Fraction(0))


def transition_waste(prev: StepPlan | None, cur: StepPlan) -> Fraction:
    """``W_t`` above, in fractions of a block."""
    if prev is None:
        return Fraction(0)
    require(prev.rows == cur.rows, "rows", "consecutive plans must use the same rows per block")
    scale = Fraction(1, cur.rows or 1)
    waste = Fraction(0)
    for n in set(prev.available) & set(cur.available):
        a, b = cur.machine_ranges(n), prev.machine_ranges(n)
        ma, mb = _measure(a), _measure(b)
        new = ma - _overlap(a, b)
        waste += new - max(Fraction(0), ma - mb)
    return waste * scale
