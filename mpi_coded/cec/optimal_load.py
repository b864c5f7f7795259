"""Optimal load of the relaxed convex problem (docs/theory.md (A.3)).

``mu*[n] = min(1, c* s[n])`` where ``c*`` solves ``sum_n min(1, c s[n]) = L``.
Closed form: sort speeds ascending ``s_(1) <= .. <= s_(Nt)``; take the largest
``k`` with ``s_(k) (L - Nt + k) <= sum_{i<=k} s_(i)``; then
``c* = (L - Nt + k) / sum_{i<=k} s_(i)``; the ``k`` slowest get ``c* s``, the
rest 1.  ``c*`` is the optimal step time (a whole block at speed 1 = 1).
Everything is exact: the speeds are put over their common denominator ``D``
(``s = s_int / D``), so the loads are integers over one denominator ``P``
(:class:`IntLoad`) and ``Fraction`` objects are only built for the answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate

from mpi_coded.errors import require


@dataclass(frozen=True)
class IntLoad:
    """The optimal load in integers: ``s[n] = speed[n] / scale``, ``mu[n] = num[n] / denom``.

    ``order`` lists the machines ascending by ``(speed, id)``; ``sum(num) = L * denom``.
    """

    scale: int
    speed: dict[int, int]
    order: list[int]
    k: int  # the k slowest machines get c* s; the rest get 1
    lead: int  # L - Nt + k: mu[n] = lead * speed[n] / denom for the k slowest
    denom: int
    num: dict[int, int]

    @property
    def c(self) -> Fraction:
        """``c* = (L - Nt + k) / (denom / scale)``, the optimal step time."""
        return Fraction(self.lead * self.scale, self.denom)


def int_speeds(speeds: Mapping[int, Fraction]) -> tuple[int, dict[int, int]]:
    """``(D, s_int)`` with ``speeds[n] == s_int[n] / D`` and ``D`` the least common denominator."""
    fr = {n: (s if type(s) is Fraction else Fraction(s)) for n, s in speeds.items()}
    d = math.lcm(*[f.denominator for f in fr.values()]) if fr else 1
    return d, {n: f.numerator * (d // f.denominator) for n, f in fr.items()}


def int_load(speeds: Mapping[int, Fraction], L: int) -> IntLoad:
    """:func:`optimal_load` in integers (same checks, same errors)."""
    nt = len(speeds)
    require(L >= 1, "L", "must be >= 1", L)
    require(nt >= L, "available", f"at least L={L} machines must be available", nt)
    d, si = int_speeds(speeds)
    if min(si.values()) <= 0:
        n = next(n for n, v in si.items() if v <= 0)
        require(False, "speeds", f"speed of machine {n} must be > 0", str(speeds[n]))
    order = sorted(si, key=lambda n: (si[n], n))
    s_sorted = [si[n] for n in order]
    prefix = [0, *accumulate(s_sorted)]
    k_best = 0
    for k in range(nt, 0, -1):
        if L - nt + k > 0 and s_sorted[k - 1] * (L - nt + k) <= prefix[k]:
            k_best = k
            break
    require(k_best > 0, "speeds", "no feasible load (internal)", None)
    p = prefix[k_best]
    lead = L - nt + k_best
    num = {n: (lead * s_sorted[i] if i < k_best else p) for i, n in enumerate(order)}
    return IntLoad(scale=d, speed=si, order=order, k=k_best, lead=lead, denom=p, num=num)


def optimal_load(speeds: Mapping[int, Fraction], L: int) -> tuple[Fraction, dict[int, Fraction]]:
    """Return ``(c*, mu*)`` for the machines in ``speeds`` (id -> speed).

    ``mu*`` lists the machines ascending by ``(speed, id)``.
    """
    ld = int_load(speeds, L)
    one = Fraction(1)
    mu = {n: (Fraction(ld.num[n], ld.denom) if i < ld.k else one)
          for i, n in enumerate(ld.order)}
    return ld.c, mu
