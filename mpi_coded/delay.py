"""The shifted-exponential delay model (seed 001; SPEC B.6).

A server's runtime for a task of complexity ``sigma`` has CDF
``F(t) = 1 - exp(-(t / sigma - 1))`` for ``t >= sigma``: a shift ``sigma`` plus
an exponential tail of mean ``sigma`` (both scale with ``sigma``).  The variant
``scale_tail=False`` scales only the shift (tail of mean 1).

The ``i``-th fastest of ``K`` i.i.d. such runtimes has mean
``sigma (1 + sum_{j=K-i+1}^{K} 1/j)`` and variance ``sigma^2 sum_{j=K-i+1}^{K} 1/j^2``
(order statistics of the exponential: Renyi's representation).
"""

from __future__ import annotations

import numpy as np

from mpi_coded.errors import require


def sample_runtime(sigma: float, rng: np.random.Generator, size: int | None = None,
                   scale_tail: bool = True) -> np.ndarray | float:
    """Draw runtimes ``sigma + tail`` with ``tail ~ Exp(sigma)`` (or ``Exp(1)``)."""
    require(sigma >= 0, "sigma", "must be >= 0", sigma)
    tail = rng.exponential(1.0, size=size)
    out = sigma + (sigma * tail if scale_tail else tail)
    return out if size is not None else float(out)


def order_stat_mean(K: int, i: int, sigma: float = 1.0) -> float:
    """Mean of the ``i``-th fastest of ``K`` runtimes (``i`` from 1)."""
    require(1 <= i <= K, "i", f"must be in 1..K={K}", i)
    return sigma * (1.0 + sum(1.0 / j for j in range(K - i + 1, K + 1)))


def order_stat_var(K: int, i: int, sigma: float = 1.0) -> float:
    """Variance of the ``i``-th fastest of ``K`` runtimes."""
    require(1 <= i <= K, "i", f"must be in 1..K={K}", i)
    return sigma**2 * sum(1.0 / j**2 for j in range(K - i + 1, K + 1))
