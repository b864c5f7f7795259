"""Optimal load of the relaxed convex problem (SPEC A.3).

``mu*[n] = min(1, c* s[n])`` where ``c*`` solves ``sum_n min(1, c s[n]) = L``.
Closed form: sort speeds ascending ``s_(1) <= .. <= s_(Nt)``; take the largest
``k`` with ``s_(k) (L - Nt + k) <= sum_{i<=k} s_(i)``; then
``c* = (L - Nt + k) / sum_{i<=k} s_(i)``; the ``k`` slowest get ``c* s``, the
rest 1.  ``c*`` is the optimal step time (a whole block at speed 1 = 1).
Everything is exact (``Fraction``).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from mpi_coded.errors import require


def optimal_load(speeds: Mapping[int, Fraction], L: int) -> tuple[Fraction, dict[int, Fraction]]:
    """Return ``(c*, mu*)`` for the machines in ``speeds`` (id -> speed)."""
    nt = len(speeds)
    require(L >= 1, "L", "must be >= 1", L)
    require(nt >= L, "available", f"at least L={L} machines must be available", nt)
    for n, s in speeds.items():
        require(s > 0, "speeds", f"speed of machine {n} must be > 0", str(s))
    order = sorted(speeds, key=lambda n: (speeds[n], n))
    s_sorted = [Fraction(speeds[n]) for n in order]
    prefix = [Fraction(0)]
    for s in s_sorted:
        prefix.append(prefix[-1] + s)
    k_best = 0
    for k in range(nt, 0, -1):
        if L - nt + k > 0 and s_sorted[k - 1] * (L - nt + k) <= prefix[k]:
            k_best = k
            break
    require(k_best > 0, "speeds", "no feasible load (internal)", None)
    c = Fraction(L - nt + k_best) / prefix[k_best]
    mu = {n: (c * speeds[n] if i < k_best else Fraction(1)) for i, n in enumerate(order)}
    return c, mu
