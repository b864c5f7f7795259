"""The filling algorithm (seed 000, Algorithm 1; SPEC A.4).

A valid assignment for loads ``m`` exists iff ``sum m = L * A`` and
``0 <= m[n] <= A``.  Each iteration orders the machines with positive load
ascending by ``(remaining, id)``, takes ``s`` the first and ``B`` the last
``L - 1``; with more than ``L`` machines left, ``l`` is the ``L``-th from the
end and ``alpha = min(m[s], A - m[l])``, else ``alpha = m[s]``; it emits a row
set of size ``alpha`` for ``{s} u B``.  Works on exact ``Fraction`` loads
(``A = 1``) and on integer row counts (``A`` = rows per block) alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from mpi_coded.errors import require

Number = int | Fraction


@dataclass(frozen=True)
class RowSet:
    """``size`` rows (a fraction of a block, or a row count) computed by ``machines``."""

    size: Number
    machines: tuple[int, ...]


def filling(loads: Mapping[int, Number], L: int, total: Number = 1) -> list[RowSet]:
    """Row sets for ``loads`` (machine id -> load); ``total`` is ``A`` at the start."""
    m = {n: v for n, v in loads.items()}
    require(sum(m.values()) == L * total, "loads", f"must sum to L*A = {L * total}",
            str(sum(m.values())))
    for n, v in m.items():
        require(0 <= v <= total, "loads", f"load of machine {n} must be in [0, {total}]", str(v))
    a: Number = total
    sets: list[RowSet] = []
    for _ in range(len(m) + 1):
        alive = sorted((n for n in m if m[n] > 0), key=lambda n: (m[n], n))
        if not alive:
            return sets
        require(len(alive) >= L, "loads", "fewer than L machines with load left (internal)")
        s = alive[0]
        group = alive[len(alive) - (L - 1):] if L > 1 else []
        if len(alive) > L:
            l_mach = alive[len(alive) - L]
            alpha = min(m[s], a - m[l_mach])
        else:
            alpha = m[s]
        machines = tuple(sorted([s, *group]))
        sets.append(RowSet(alpha, machines))
        for n in machines:
            m[n] -= alpha
        a -= alpha
    raise AssertionError("filling algorithm did not end within |N_t| iterations")
