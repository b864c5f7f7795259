"""Systematic MDS generators and decoding with cached inverses.

An ``(n, k)`` generator ``G`` (``n x k``) is MDS when every ``k x k`` row
submatrix is invertible, so any ``k`` of the ``n`` coded rows ``G @ X`` give
back ``X`` (docs/theory.md (A.1): ``X~_n = sum_l G[n, l] X_l``; docs/theory.md (B.1):
``C = Psi A``).

We use ``G = [I_k; C]`` with ``C`` an ``(n - k) x k`` Cauchy matrix. Every
square submatrix of a Cauchy matrix is invertible, and that is exactly the
condition for ``[I; C]`` to be MDS; the identity on top keeps the
all-systematic case exact over the reals.

Over the reals every Cauchy matrix of more than a few rows is badly
conditioned (a ``60 x 40`` code loses all precision), so for real codes with
``n > REAL_CAUCHY_MAX_N`` the parity part is a fixed-seed Gaussian matrix
instead: every square submatrix of it is invertible with probability 1 and it
is far better conditioned (worst ``20 x 20`` submatrix of a ``(30, 20)`` code:
about ``1e5`` against ``1e8``).  Runs log the condition numbers they meet.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from mpi_coded.errors import require
from mpi_coded.fields import Field

REAL_CAUCHY_MAX_N = 16


def systematic_mds(field: Field, n: int, k: int) -> np.ndarray:
    """The ``n x k`` generator ``[I_k; Cauchy]`` over ``field`` (see the module docstring)."""
    require(k >= 1, "k", "an MDS code needs k >= 1", k)
    require(n >= k, "n", "an (n, k) MDS code needs n >= k", n)
    g = field.zeros((n, k))
    g[:k] = np.eye(k, dtype=field.dtype)
    if n > k:
        if not field.exact and n > REAL_CAUCHY_MAX_N:
            rng = np.random.default_rng([n, k, 0x6D6473])
            g[k:] = rng.standard_normal((n - k, k)) / np.sqrt(k)
        else:
            g[k:] = field.cauchy(n - k, k)
    return g


def condition_number(field: Field, sub: np.ndarray) -> float:
    """2-norm condition number over the reals; 1.0 over GF (decoding is exact)."""
    if field.exact:
        return 1.0
    return float(np.linalg.cond(sub))


def worst_condition(field: Field, g: np.ndarray, limit: int = 20000) -> float | None:
    """Worst condition number of the ``k x k`` row submatrices of ``g``.

    Enumerates all ``C(n, k)`` subsets; returns ``None`` if there are more than
    ``limit`` of them (use the per-step value of the sets actually used).
    """
    n, k = g.shape
    if math.comb(n, k) > limit:
        return None
    worst = 1.0
    for rows in itertools.combinations(range(n), k):
        worst = max(worst, condition_number(field, g[list(rows)]))
    return worst


class DecoderCache:
    """``G_P^{-1}`` for each set ``P`` of ``k`` coded rows, computed once.

    ``decode(P, Y)`` returns ``Z = G_P^{-1} Y`` where row ``j`` of ``Y`` is the
    answer of coded row ``P[j]`` (docs/theory.md (A.2)).
    """

    def __init__(self, field: Field, g: np.ndarray) -> None:
        self.field = field
        self.g = g
        self._inv: dict[tuple[int, ...], np.ndarray] = {}
        self._cond: dict[tuple[int, ...], float] = {}
        self.hits = 0
        self.misses = 0

    def __contains__(self, rows: Sequence[int]) -> bool:
        """Whether the inverse for ``rows`` is cached."""
        return tuple(int(r) for r in rows) in self._inv

    def inverse(self, rows: Sequence[int]) -> np.ndarray:
        key = tuple(int(r) for r in rows)
        inv = self._inv.get(key)
        if inv is None:
            self.misses += 1
            inv = self.field.inv(self.g[list(key)])
            self._inv[key] = inv
        else:
            self.hits += 1
        return inv

    def condition(self, rows: Sequence[int]) -> float:
        """The condition number of ``G_P`` (:func:`condition_number`), computed once, when
        first asked for (decoding does not need it)."""
        key = tuple(int(r) for r in rows)
        cond = self._cond.get(key)
        if cond is None:
            cond = self._cond[key] = condition_number(self.field, self.g[list(key)])
        return cond

    def decode(self, rows: Sequence[int], y: np.ndarray) -> np.ndarray:
        return self.field.matmul(self.inverse(rows), y)
