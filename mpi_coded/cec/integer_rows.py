"""Integer row counts from the optimal load (docs/theory.md (A.5)).

Find ``k[n]`` integers with ``sum k = L * R``, ``0 <= k[n] <= R`` (``R`` rows
per block) minimising ``max_n k[n] / s[n]``.  Greedy: start from
``floor(R * mu*[n])`` (never above an optimal allocation, because the
fractional optimum ``c*`` is a lower bound on the integer one) and add one row
at a time to the machine whose time after the addition, ``(k+1)/s``, is least
(ties to the lower id).  Each addition is a min-max exchange step, so the
result is optimal among integer allocations.

The greedy is computed in one selection instead of one row at a time: the
candidate rows of machine ``n`` have times ``j / s[n]`` increasing in ``j``,
so the greedy takes exactly the ``missing`` smallest candidates in the order
``(j / s[n], n)``.  They are found with floating point (``numpy``), and the
one cluster of times that floating point cannot separate (relative gaps below
``1e-12``, which covers every exact tie) is ordered with ``Fraction``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from mpi_coded.cec.optimal_load import IntLoad, int_load
from mpi_coded.errors import require

_GAP = 1e-12  # relative gap that floating point times are sure to order correctly


def integer_rows(speeds: Mapping[int, Fraction], L: int, rows: int) -> dict[int, int]:
    """Integer rows per machine for ``rows`` rows per coded block."""
    require(rows >= 1, "rows", "rows per block must be >= 1", rows)
    return rows_from_load(int_load(speeds, L), speeds, L, rows)


def rows_from_load(ld: IntLoad, speeds: Mapping[int, Fraction], L: int, rows: int
                   ) -> dict[int, int]:
    """:func:`integer_rows` from the optimal load ``ld`` of ``speeds``."""
    k = {n: min(rows, ld.num[n] * rows // ld.denom) for n in speeds}  # floor; mu <= 1
    missing = L * rows - sum(k.values())
    if missing == 0:
        return k
    cand = [n for n in k if k[n] < rows]
    try:
        sf = [ld.speed[n] / ld.scale for n in cand]  # int / int: correctly rounded
    except OverflowError:
        sf = [0.0]
    if missing <= len(cand) and rows < 2**50 and all(0.0 < s < float("inf") for s in sf):
        picked = _pick_float(cand, sf, k, ld.speed, rows, missing)
    else:
        picked = _pick_exact(cand, k, speeds, rows, missing)
    for n, c in picked.items():
        k[n] += c
    return k


def _pick_float(cand: list[int], sf: list[float], k: Mapping[int, int], si: Mapping[int, int],
                rows: int, missing: int) -> dict[int, int]:
    """How many of the ``missing`` smallest candidates ``(j / s[n], n)`` each machine gets."""
    s = np.array(sf, dtype=np.float64)
    k0 = np.array([k[n] for n in cand], dtype=np.int64)
    # at least `missing` first candidates lie below `bound`, so every chosen row does too
    first = (k0 + 1) / s
    bound = float(np.partition(first, missing - 1)[missing - 1]) * (1 + 1e-9)
    top = np.minimum(np.floor(bound * s).astype(np.int64) + 1, rows)
    cnt = np.maximum(top - k0, 0)
    which = np.repeat(np.arange(len(cand)), cnt)
    start = np.cumsum(cnt) - cnt
    j = k0[which] + 1 + (np.arange(len(which)) - start[which])
    t = j / s[which]
    order = np.argsort(t, kind="stable")
    ts = t[order]
    breaks = np.flatnonzero(ts[1:] > ts[:-1] * (1 + _GAP)) + 1  # first index of each cluster
    at = int(np.searchsorted(breaks, missing - 1, side="right"))
    lo = int(breaks[at - 1]) if at > 0 else 0
    hi = int(breaks[at]) if at < len(breaks) else len(ts)
    counts = np.bincount(which[order[:lo]], minlength=len(cand))
    out = {cand[i]: int(counts[i]) for i in np.flatnonzero(counts)}
    cluster = sorted((Fraction(int(j[i]), si[cand[which[i]]]), cand[which[i]])
                     for i in order[lo:hi])
    for _, n in cluster[: missing - lo]:
        out[n] = out.get(n, 0) + 1
    return out


def _pick_exact(cand: list[int], k: Mapping[int, int], speeds: Mapping[int, Fraction],
                rows: int, missing: int) -> dict[int, int]:
    """The one-row-at-a-time greedy with a heap (for values floating point cannot hold)."""
    heap = [(Fraction(k[n] + 1) / Fraction(speeds[n]), n) for n in cand]
    heapq.heapify(heap)
    out: dict[int, int] = {}
    for _ in range(missing):
        _, n = heapq.heappop(heap)
        c = out.get(n, 0) + 1
        out[n] = c
        if k[n] + c < rows:
            heapq.heappush(heap, (Fraction(k[n] + c + 1) / Fraction(speeds[n]), n))
    return out


def integer_time(k: Mapping[int, int], speeds: Mapping[int, Fraction]) -> Fraction:
    """``max_n k[n] / s[n]`` in rows at speed 1."""
    return max(Fraction(k[n]) / speeds[n] for n in k)
