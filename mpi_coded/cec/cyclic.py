"""Cyclic assignment of homogeneous CEC (Yang et al. 2019; SPEC A.6).

Available machines in id order ``a_0..a_{Nt-1}``; rows cut into ``Nt`` equal
pieces; piece ``f`` goes to ``{a_f, .., a_{f+L-1}}`` (mod ``Nt``).  Every
machine computes ``L / Nt`` of its block.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from mpi_coded.cec.filling import Number, RowSet
from mpi_coded.errors import require


def cyclic_sets(available: Sequence[int], L: int, rows: int | None = None) -> list[RowSet]:
    """Row sets of the cyclic policy; sizes are fractions, or row counts if ``rows``."""
    ids = sorted(available)
    nt = len(ids)
    require(nt >= L, "available", f"at least L={L} machines must be available", nt)
    sets: list[RowSet] = []
    for f in range(nt):
        machines = tuple(sorted(ids[(f + j) % nt] for j in range(L)))
        size: Number
        if rows is None:
            size = Fraction(1, nt)
        else:
            size = (f + 1) * rows // nt - f * rows // nt
        sets.append(RowSet(size, machines))
    return sets
