"""The ``heterogeneous-tw`` policy: the loads of ``heterogeneous``, laid out against the
previous step's plan to cut the transition waste.

The waste of machine ``n`` (:mod:`mpi_coded.cec.waste`) is
``min(|S_n^t|, |S_n^{t-1}|) - |S_n^t & S_n^{t-1}|``, so for fixed loads the
waste is least when the total overlap ``sum_n |S_n^t & S_n^{t-1}|`` is largest.
The loads (hence the step time) are those of ``heterogeneous``: ``mu*`` of
Woolsey, Chen, Ji, "A new combinatorial coded design for heterogeneous
distributed computing" (or the integer row counts with ``rows``); only the
decomposition into row sets changes.

Method: walk the previous plan's row sets ("segments") in row order.  Segment
``j`` has length ``len_j`` and was computed by the machines ``P_j``; decide how
many of its rows ``y[n]`` each machine computes now, then lay the segment out
with the filling algorithm on ``y`` (machines with ``y[n] = len_j`` are in all
of its sets).  A machine in ``P_j`` overlaps by ``y[n]``, any other by 0.

``y`` must keep the rest feasible: with ``r`` the loads still to place and
``A'`` the rows left after the segment, the rest can be filled iff
``r[n] - y[n] <= A'`` (the filling condition), so ``y[n]`` lies in
``[max(0, r[n] - A'), min(len_j, r[n])]`` and ``sum y = (L + S) len_j``.
Within those bounds the budget goes, in this order:

1. to the members of ``P_j``, up to their bound (overlap); if the budget is
   short, first to those with the most load beyond their future preferred rows
   ``F[n]`` (the previous rows of ``n`` after this segment), who would otherwise
   have to spend it elsewhere;
2. to other machines, up to ``r[n] - F[n]``: load they cannot place on their own
   previous rows anyway, so it costs no overlap (largest first);
3. to other machines beyond that (least harm first: largest ``r - F``, then ``r``).

Every choice keeps each ``y`` within its bounds, so the plan is always valid,
and with the same available machines and loads it reproduces the previous plan
exactly (no waste).  It is a greedy, not an optimum: the exact optimum is a
min-cost flow (machines to segments), too slow for a planner run every step.

Fragmentation: segments split a little at every step, so left alone the number
of row sets would grow step after step.  Before the walk, adjacent segments
with the same available machines are merged (free), then, while there are more
than ``SEGMENTS_PER_MACHINE`` per available machine, the adjacent pair whose
merge loses the fewest previous rows (:func:`coarsen`; the merged segment keeps
the machines common to both).  Adjacent output sets with the same machines are
merged.  The plan then has at most about ``3 Nt`` row sets (``heterogeneous``:
at most ``Nt``): more, smaller decodes in exchange for the lower waste.  With
exact fractions (no ``rows``) the denominators compound from step to step
(a few bits per step); plans in integer rows do not have that cost.

Cost: a few vectorised passes over the machines per previous segment plus the
filling of each segment; about ``O(#segments * N + #sets * (L + S))``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from mpi_coded.cec.filling import RowSet, filling_int
from mpi_coded.errors import require

if TYPE_CHECKING:
    from mpi_coded.cec.step_plan import StepPlan


def tw_sets(prev: StepPlan, num: Mapping[int, int], denom: int, lp: int,
            rows: int | None, max_segments: int | None = None) -> list[RowSet]:
    """Row sets for loads ``num[n] / denom`` (``L + S = lp`` machines per row) after ``prev``.

    ``max_segments`` (default ``SEGMENTS_PER_MACHINE`` per available machine) bounds the
    previous plan's segments used, hence the number of row sets.
    """
    require(prev.rows == rows, "prev",
            f"the previous plan must use the same rows per block ({rows})", prev.rows)
    avail = sorted(num)
    if rows is None:
        d = math.lcm(denom, *(Fraction(rs.size).denominator for rs in prev.sets))
        total = d
        m = [num[n] * (d // denom) for n in avail]
        lens = [int(Fraction(rs.size) * d) for rs in prev.sets]
    else:
        d = 1
        total = rows
        m = [num[n] for n in avail]
        lens = [int(rs.size) for rs in prev.sets]
    require(sum(lens) == total, "prev", "the previous plan must cover the whole block",
            str(sum(lens)))
    here = frozenset(avail)
    parts = [(ln, frozenset(rs.machines) & here) for ln, rs in zip(lens, prev.sets) if ln > 0]
    avail_arr = np.array(avail, dtype=np.int64)
    segs = [(ln, np.searchsorted(avail_arr, np.sort(np.fromiter(p, np.int64, len(p)))))
            for ln, p in coarsen(parts, max_segments or SEGMENTS_PER_MACHINE * len(avail))]
    dtype: type | np.dtype = np.int64 if total * (lp + 2) < 2**62 else object
    r = np.array(m, dtype=dtype)
    cover = np.zeros(len(avail), dtype=dtype)  # F: previous rows of n not yet walked
    for ln, idx in segs:
        cover[idx] += ln
    left = total
    raw: list[tuple[int, tuple[int, ...]]] = []
    for ln, idx in segs:
        cover[idx] -= ln
        left -= ln
        lo = np.maximum(r - left, 0)
        hi = np.minimum(r, ln)
        y = lo.copy()
        budget = lp * ln - int(lo.sum())
        # 1. members of P_j: overlap
        gain = hi[idx] - lo[idx]
        if int(gain.sum()) <= budget:
            y[idx] = hi[idx]
            budget -= int(gain.sum())
        else:
            order = _order(idx, -(r[idx] - cover[idx]))
            budget = _give(y, idx[order], gain[order], budget)
        if budget > 0:
            other = np.ones(len(avail), dtype=bool)
            other[idx] = False
            # 2. others, with load they must place off their previous rows anyway
            free = np.minimum(np.maximum(r - cover - y, 0), hi - y)
            cand = np.flatnonzero(other & (free > 0))
            if len(cand):
                order = _order(cand, -free[cand], -r[cand])
                budget = _give(y, cand[order], free[cand][order], budget)
            if budget > 0:
                # 3. others beyond that
                cap = hi - y
                cand = np.flatnonzero(other & (cap > 0))
                order = _order(cand, -(r[cand] - cover[cand] - y[cand]), -r[cand])
                budget = _give(y, cand[order], cap[cand][order], budget)
        require(budget == 0, "loads", "no valid layout of the segment (internal)", budget)
        r -= y
        nz = np.flatnonzero(y)
        yv = y[nz]
        whole = yv == ln  # in every set of the segment
        full = avail_arr[nz[whole]].tolist()
        if whole.all():
            raw.append((ln, tuple(full)))
        else:  # the rest by the filling algorithm, within the segment
            part = dict(zip(avail_arr[nz[~whole]].tolist(), yv[~whole].tolist()))
            for a, sub in filling_int(part, lp - len(full), ln):
                raw.append((a, tuple(sorted(full + list(sub)))))
    require(not r.any(), "loads", "loads left after the last segment (internal)")
    merged: list[tuple[int, tuple[int, ...]]] = []
    for a, ms in raw:
        if merged and merged[-1][1] == ms:
            merged[-1] = (merged[-1][0] + a, ms)
        else:
            merged.append((a, ms))
    if rows is None:
        return [RowSet(Fraction(a, d), ms) for a, ms in merged]
    return [RowSet(a, ms) for a, ms in merged]


def _order(pos: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Indices sorting ``pos`` by ``keys`` (first key first), ties by ``pos``."""
    if len(pos) == 0:
        return np.zeros(0, dtype=np.int64)
    if all(k.dtype != object for k in keys):
        return np.lexsort((pos, *reversed(keys)))
    cols = [k.tolist() for k in keys]
    p = pos.tolist()
    return np.array(sorted(range(len(p)), key=lambda i: (*(c[i] for c in cols), p[i])),
                    dtype=np.int64)


def _give(y: np.ndarray, who: np.ndarray, gain: np.ndarray, budget: int) -> int:
    """Add ``gain`` to ``y[who]`` in order until ``budget`` runs out; the budget left."""
    if budget <= 0 or len(who) == 0:
        return budget
    cs = np.cumsum(gain)
    k = int(np.searchsorted(cs, budget, side="right"))  # the first k fit whole
    y[who[:k]] += gain[:k]
    used = int(cs[k - 1]) if k else 0
    if k < len(who) and budget > used:
        y[who[k]] += budget - used
        return 0
    return budget - used


SEGMENTS_PER_MACHINE = 2


def coarsen(parts: list[tuple[int, frozenset[int]]], cap: int
            ) -> list[tuple[int, frozenset[int]]]:
    """Merge adjacent segments until at most ``cap`` are left, losing the least overlap.

    A merged segment keeps the machines common to both halves; merging ``a`` and ``b``
    loses ``len_a |P_a - P_b| + len_b |P_b - P_a|`` of previous rows that could have been
    kept.  Adjacent segments with the same machines merge at no loss (always done).
    """
    n = len(parts)
    ln = [p[0] for p in parts]
    ps = [p[1] for p in parts]
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    ver = [0] * n
    alive = [True] * n

    def loss(i: int, j: int) -> int:
        common = len(ps[i] & ps[j])
        return ln[i] * (len(ps[i]) - common) + ln[j] * (len(ps[j]) - common)

    heap = [(loss(i, i + 1), i, 0, 0) for i in range(n - 1)]
    heapq.heapify(heap)
    count = n
    while heap:
        cost, i, vi, vj = heap[0]
        if cost > 0 and count <= cap:
            break
        heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j >= n or ver[i] != vi or ver[j] != vj:
            continue
        ln[i] += ln[j]
        ps[i] = ps[i] & ps[j]
        alive[j] = False
        nxt[i] = nxt[j]
        if nxt[j] < n:
            prv[nxt[j]] = i
        ver[i] += 1
        count -= 1
        if prv[i] >= 0:
            heapq.heappush(heap, (loss(prv[i], i), prv[i], ver[prv[i]], ver[i]))
        if nxt[i] < n:
            heapq.heappush(heap, (loss(i, nxt[i]), i, ver[i], ver[nxt[i]]))
    return [(ln[i], ps[i]) for i in range(n) if alive[i]]
