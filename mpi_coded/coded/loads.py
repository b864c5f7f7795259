"""Analytic communication loads in exact fractions (SPEC B.3).

Unified scheme (Li, Maddah-Ali, Avestimehr 2016), normalised by ``m N``:

* ``B_j = C(q-1, j) C(K-q, mu q - j) / ((q/K) C(K, mu q))`` -- the fraction of
  the ``m`` values per output that a reducer receives at multicast level ``j``;
* ``s_q`` = smallest ``s`` with ``sum_{j=s}^{mu q} B_j <= 1 - mu``, raised to
  at least 2 (level 1 "multicasts" are unicasts; when the raw value is 1 both
  finishing strategies cost ``B_1`` and strategy 1 is kept);
* ``L(q) = sum_{j=s_q}^{mu q} B_j / j
  + min(1 - mu - sum_{j>=s_q} B_j,  B_{s_q-1} / (s_q-1))``;
  strategy 1 (unicast the rest) wins ties, strategy 2 (multicast level
  ``s_q - 1`` too) is used only when strictly cheaper.

The baselines are the unified formula at their effective parameters
(:func:`mpi_coded.coded.params.effective_model`), which reproduces the literal
loads of SPEC B.3 (:func:`literal_load`): UC ``1 - 1/K``, CMR
``(1/(mu q))(1 - mu q/K)``, SC ``1 - 1/q``.  BDC has no closed form: its
unicast part depends on the assignment and on ``Q``
(:func:`mpi_coded.coded.shuffle.average_load`).

LT (:mod:`mpi_coded.coded.lt_scheme`): :func:`scheme_load` gives the unified
``L(q)`` at the same ``(K, q, mu)``.  It is a lower bound, not the load: the lt
shuffle sends the unified multicasts value for value and the unified unicasts
plus, per reducer, ``w = N/q`` values for every coded row beyond ``m - |R|``
that its LT decoder needs (the LT overhead), so the measured LT load is larger
by exactly these extra unicasts.  It depends on the code and on ``Q``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.coded.params import check_model, effective_model
from mpi_coded.errors import require


def b_level(K: int, q: int, mu: Fraction, j: int) -> Fraction:
    """``B_j`` of SPEC B.3 (0 outside ``0 <= j <= mu q``)."""
    p = int(mu * q)
    if j < 0 or j > p:
        return Fraction(0)
    return Fraction(math.comb(q - 1, j) * math.comb(K - q, p - j) * K, q * math.comb(K, p))


@dataclass(frozen=True)
class UnifiedLoad:
    """The unified-scheme load at ``(K, q, mu)`` and how it is made up (SPEC B.3)."""

    K: int
    q: int
    mu: Fraction
    s_q: int
    strategy: int
    B: tuple[Fraction, ...]  # B[j], j = 0 .. mu q
    multicast: Fraction  # sum of B_j / j over the multicast levels used
    unicast: Fraction  # 1 - mu - sum_{j >= s_q} B_j under strategy 1, else 0

    @property
    def load(self) -> Fraction:
        """``L(q)``."""
        return self.multicast + self.unicast

    @property
    def levels(self) -> tuple[int, ...]:
        """Multicast levels used, highest first (``mu q .. s_q``, plus ``s_q - 1``)."""
        p = int(self.mu * self.q)
        low = self.s_q - 1 if self.strategy == 2 else self.s_q
        return tuple(range(p, low - 1, -1))


def unified_load(K: int, q: int, mu: Any) -> UnifiedLoad:
    """``s_q``, the finishing strategy and ``L(q)`` of SPEC B.3, exactly."""
    mu_f = check_model("unified", K, q, mu)
    p = int(mu_f * q)
    bs = tuple(b_level(K, q, mu_f, j) for j in range(p + 1))

    def tail(s: int) -> Fraction:
        return sum(bs[s:], Fraction(0))

    s = p + 1
    while s - 1 >= 1 and tail(s - 1) <= 1 - mu_f:
        s -= 1
    s = max(s, 2)
    multicast = sum((bs[j] / j for j in range(s, p + 1)), Fraction(0))
    rest = 1 - mu_f - tail(s)
    level2 = bs[s - 1] / (s - 1) if s - 1 <= p else Fraction(0)
    if level2 < rest:
        return UnifiedLoad(K, q, mu_f, s, 2, bs, multicast + level2, Fraction(0))
    return UnifiedLoad(K, q, mu_f, s, 1, bs, multicast, rest)


def scheme_load(scheme: str, K: int, q: int, mu: Any) -> UnifiedLoad:
    """The load of ``scheme`` (uc, cmr, sc, unified): the unified formula at its
    effective parameters; ``K, q, mu`` are the reference parameters.

    For ``lt`` the unified formula at ``(K, q, mu)``: a lower bound, the measured
    load exceeds it by the extra unicasts of the LT overhead (module docstring).
    """
    mu_f = check_model(scheme, K, q, mu)
    require(scheme != "bdc", "scheme",
            "bdc has no closed-form load (it depends on P and Q); use shuffle.average_load",
            scheme)
    return unified_load(*effective_model(scheme, K, q, mu_f))


def literal_load(scheme: str, K: int, q: int, mu: Any) -> Fraction:
    """The literal loads of SPEC B.3: UC ``1 - 1/K``, CMR ``(1/(mu q))(1 - mu q/K)``,
    SC ``1 - 1/q``, unified ``L(q)``."""
    mu_f = check_model(scheme, K, q, mu)
    if scheme == "uc":
        return 1 - Fraction(1, K)
    if scheme == "cmr":
        mq = mu_f * q
        return (1 / mq) * (1 - mq / K)
    if scheme == "sc":
        return 1 - Fraction(1, q)
    return scheme_load(scheme, K, q, mu_f).load
