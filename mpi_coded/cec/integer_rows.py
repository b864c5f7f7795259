"""Integer row counts from the optimal load (SPEC A.5).

Find ``k[n]`` integers with ``sum k = L * R``, ``0 <= k[n] <= R`` (``R`` rows
per block) minimising ``max_n k[n] / s[n]``.  Greedy: start from
``floor(R * mu*[n])`` (never above an optimal allocation, because the
fractional optimum ``c*`` is a lower bound on the integer one) and add one row
at a time to the machine whose time after the addition, ``(k+1)/s``, is least
(ties to the lower id).  Each addition is a min-max exchange step, so the
result is optimal among integer allocations.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from mpi_coded.cec.optimal_load import optimal_load
from mpi_coded.errors import require


def integer_rows(speeds: Mapping[int, Fraction], L: int, rows: int) -> dict[int, int]:
    """Integer rows per machine for ``rows`` rows per coded block."""
    require(rows >= 1, "rows", "rows per block must be >= 1", rows)
    _, mu = optimal_load(speeds, L)
    k = {n: min(rows, int(mu[n] * rows)) for n in speeds}  # floor; mu <= 1
    missing = L * rows - sum(k.values())
    for _ in range(missing):
        cand = [n for n in k if k[n] < rows]
        best = min(cand, key=lambda n: (Fraction(k[n] + 1) / speeds[n], n))
        k[best] += 1
    return k


def integer_time(k: Mapping[int, int], speeds: Mapping[int, Fraction]) -> Fraction:
    """``max_n k[n] / s[n]`` in rows at speed 1."""
    return max(Fraction(k[n]) / speeds[n] for n in k)
