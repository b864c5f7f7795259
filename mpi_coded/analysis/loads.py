"""Closed-form communication loads in exact fractions (docs/theory.md (B.3)).

A formula module: it depends on nothing but :mod:`mpi_coded.errors`, so the
schemes (:mod:`mpi_coded.coded.schemes`) and the shuffle plan use it.

Reference parameters: ``K`` servers, the map phase waits for ``q``, each server
stores a fraction ``mu`` (``mu q`` an integer); :func:`check_reference` holds
their rules.  Unified scheme (Li, Maddah-Ali, Avestimehr 2016), normalised by
``m N``:

* ``B_j = C(q-1, j) C(K-q, mu q - j) / ((q/K) C(K, mu q))`` -- the fraction of
  the ``m`` values per output that a reducer receives at multicast level ``j``;
* ``s_q`` = smallest ``s`` with ``sum_{j=s}^{mu q} B_j <= 1 - mu``, raised to
  at least 2 (level 1 "multicasts" are unicasts; when the raw value is 1 both
  finishing strategies cost ``B_1`` and strategy 1 is kept);
* ``L(q) = sum_{j=s_q}^{mu q} B_j / j
  + min(1 - mu - sum_{j>=s_q} B_j,  B_{s_q-1} / (s_q-1))``;
  strategy 1 (unicast the rest) wins ties, strategy 2 (multicast level
  ``s_q - 1`` too) is used only when strictly cheaper.

Every scheme's load is this formula at the scheme's effective parameters
(:meth:`~mpi_coded.coded.schemes.base.Scheme.load`), which reproduces the
literal loads of docs/theory.md (B.3): UC ``1 - 1/K``, CMR
``(1/(mu q))(1 - mu q/K)``, SC ``1 - 1/q``.  BDC has no closed form (its unicast
part depends on the assignment and on ``Q``: :mod:`mpi_coded.analysis.bdc_load`).
LT's analytic load is :func:`lt_load`: the formula with reducers needing
``(1 + eps) m`` values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.errors import ConfigError, require

MAX_K = 1024
"""Largest number of servers accepted."""


def parse_fraction(field: str, value: Any) -> Fraction:
    """``value`` (``Fraction``, ``int``, or a string like ``"1/2"``/``"0.5"``) as a Fraction."""
    if isinstance(value, bool):
        raise ConfigError(field, "must be a fraction like 1/2", value)
    if isinstance(value, (Fraction, int)):
        return Fraction(value)
    if isinstance(value, float):
        value = repr(value)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise ConfigError(field, "must be a fraction like 1/2", value)


def is_int(x: Any) -> bool:
    """An ``int`` (numpy integers too), not a ``bool``."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def check_reference(K: Any, q: Any, mu: Any) -> Fraction:
    """Check the reference parameters ``K, q, mu`` (docs/theory.md (B.1)); return ``mu``.

    Rules: ``1 <= K <= MAX_K``; ``1 <= q <= K``; ``mu q`` an integer with
    ``1 <= mu q <= q``.  ``MAX_K`` keeps the exact combinatorics (``C(K, mu q)``
    batches) within what a run or a formula can evaluate.
    """
    require(is_int(K) and K >= 1, "K", "must be an integer >= 1", K)
    require(K <= MAX_K, "K", f"must be <= {MAX_K} servers", K)
    require(is_int(q) and q >= 1, "q", "must be an integer >= 1", q)
    require(q <= K, "q", f"must satisfy q <= K = {K}", q)
    mu_f = parse_fraction("mu", mu)
    mu_q = mu_f * q
    require(mu_q.denominator == 1, "mu", f"mu * q must be an integer (q = {q})", str(mu_f))
    require(1 <= mu_q <= q, "mu", f"mu * q must be in [1, q] (q = {q})", str(mu_f))
    return mu_f


def b_level(K: int, q: int, mu: Fraction, j: int) -> Fraction:
    """``B_j`` of docs/theory.md (B.3) (0 outside ``0 <= j <= mu q``)."""
    p = int(mu * q)
    if j < 0 or j > p:
        return Fraction(0)
    return Fraction(math.comb(q - 1, j) * math.comb(K - q, p - j) * K, q * math.comb(K, p))


@dataclass(frozen=True)
class UnifiedLoad:
    """The unified-scheme load at ``(K, q, mu)`` and how it is made up (docs/theory.md (B.3))."""

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
        return strategy_levels(self.mu_q, self.s_q, self.strategy)

    @property
    def mu_q(self) -> int:
        return int(self.mu * self.q)


def strategy_levels(mu_q: int, s_q: int, strategy: int) -> tuple[int, ...]:
    """Multicast levels of a finishing strategy, highest first: ``mu q .. s_q`` (strategy 1)
    or ``mu q .. s_q - 1`` (strategy 2), never below level 1."""
    low = s_q - 1 if strategy == 2 else s_q
    return tuple(range(mu_q, max(low, 1) - 1, -1))


def unified_load(K: int, q: int, mu: Any) -> UnifiedLoad:
    """``s_q``, the finishing strategy and ``L(q)`` of docs/theory.md (B.3), exactly."""
    mu_f = check_reference(K, q, mu)
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


def lt_load(K: int, q: int, mu: Any, eps: float) -> float:
    """Load of the LT scheme: docs/theory.md (B.3) with reducers needing ``(1 + eps) m`` values.

    ``s_q`` is the smallest ``s >= 2`` with ``sum_{j>=s} B_j <= 1 + eps - mu``;
    strategy 1 unicasts ``1 + eps - mu - sum_{j>=s_q} B_j``; strategy 2 (level
    ``s_q - 1`` multicast too) counts only if it delivers the ``(1 + eps) m``
    values; the cheaper is taken.  ``eps = 0`` is the unified load.
    """
    mu_f = parse_fraction("mu", mu)
    p = int(mu_f * q)
    B = [float(b_level(K, q, mu_f, j)) for j in range(p + 1)]
    need = 1.0 + eps - float(mu_f)

    def tail(s: int) -> float:
        return sum(B[s:])

    s = p + 1
    while s - 1 >= 1 and tail(s - 1) <= need + 1e-12:
        s -= 1
    s = max(s, 2)
    multicast = sum(B[j] / j for j in range(s, p + 1))
    one = multicast + max(need - tail(s), 0.0)
    if s - 1 <= p and tail(s - 1) >= need - 1e-12:
        return min(one, multicast + B[s - 1] / (s - 1))
    return one
