"""Cyclic assignment of homogeneous CEC (Yang et al. 2019; docs/theory.md (A.6)).

Available machines in id order ``a_0..a_{Nt-1}``; rows cut into ``Nt`` equal
pieces; piece ``f`` goes to ``{a_f, .., a_{f+L-1}}`` (mod ``Nt``).  Every
machine computes ``L / Nt`` of its block.  With ``S`` stragglers tolerated a
piece goes to ``L + S`` consecutive machines.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from mpi_coded.cec.filling import Number, RowSet
from mpi_coded.errors import require


def cyclic_sets(available: Sequence[int], L: int, rows: int | None = None) -> list[RowSet]:
    """Row sets of the cyclic policy; sizes are fractions, or row counts if ``rows``.

    ``L`` is the number of machines per piece (``L + S`` with stragglers).
    """
    ids = tuple(sorted(available))
    nt = len(ids)
    require(nt >= L, "available", f"at least L={L} machines must be available", nt)
    sets: list[RowSet] = []
    piece = Fraction(1, nt)
    for f in range(nt):
        wrap = f + L - nt
        machines = ids[:wrap] + ids[f:] if wrap > 0 else ids[f:f + L]  # ascending ids
        size: Number
        if rows is None:
            size = piece
        else:
            size = (f + 1) * rows // nt - f * rows // nt
        sets.append(RowSet(size, machines))
    return sets


def cyclic_loads(available: Sequence[int], L: int, rows: int | None = None) -> dict[int, int]:
    """Load of each machine in the cyclic sets, in ``1 / Nt`` (fractions) or rows (``rows``)."""
    ids = sorted(available)
    nt = len(ids)
    if rows is None:
        return {n: L for n in ids}

    def cum(f: int) -> int:  # rows of pieces 0..f-1
        return f * rows // nt

    out = {}
    for i, n in enumerate(ids):
        first = i - L + 1  # machine a_i computes pieces first..i (mod Nt)
        if first >= 0:
            out[n] = cum(i + 1) - cum(first)
        else:
            out[n] = cum(i + 1) + rows - cum(nt + first)
    return out
