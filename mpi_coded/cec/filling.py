"""The filling algorithm (Woolsey, Chen, Ji, "A new combinatorial coded design for
heterogeneous distributed computing", Algorithm 1; docs/theory.md (A.4)).

A valid assignment for loads ``m`` exists iff ``sum m = L * A`` and
``0 <= m[n] <= A``.  Each iteration orders the machines with positive load
ascending by ``(remaining, id)``, takes ``s`` the first and ``B`` the last
``L - 1``; with more than ``L`` machines left, ``l`` is the ``L``-th from the
end and ``alpha = min(m[s], A - m[l])``, else ``alpha = m[s]``; it emits a row
set of size ``alpha`` for ``{s} u B``.  Works on exact ``Fraction`` loads
(``A = 1``) and on integer row counts (``A`` = rows per block) alike.

Implementation: the loads are put over a common denominator (plain integers)
and the order is kept incrementally instead of re-sorted.  Only ``s`` and
``B`` change in an iteration, all by ``alpha``; so ``B`` lives in a heap with
a shared offset (its members decrease together and keep their order), the
other machines in a sorted list of fixed values, and after each iteration a
few swaps between the two restore "``B`` = the top ``L - 1``".  ``s``, if
still alive, stays first (it was at most every other load, and a ``B`` member
tied with it has a larger id and decreased as much).  An iteration costs
``O(L + log N)`` (list moves in C) plus the swaps, besides its output.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from mpi_coded.errors import require

Number = int | Fraction


@dataclass(frozen=True)
class RowSet:
    """``size`` rows (a fraction of a block, or a row count) computed by ``machines``."""

    size: Number
    machines: tuple[int, ...]


def filling(loads: Mapping[int, Number], L: int, total: Number = 1) -> list[RowSet]:
    """Row sets for ``loads`` (machine id -> load); ``total`` is ``A`` at the start."""
    m = dict(loads)
    require(sum(m.values()) == L * total, "loads", f"must sum to L*A = {L * total}",
            str(sum(m.values())))
    for n, v in m.items():
        require(0 <= v <= total, "loads", f"load of machine {n} must be in [0, {total}]", str(v))
    exact_int = type(total) is int and all(type(v) is int for v in m.values())
    if exact_int:
        return [RowSet(a, ms) for a, ms in filling_int(m, L, int(total))]  # type: ignore[arg-type]
    fr = {n: Fraction(v) for n, v in m.items()}
    ft = Fraction(total)
    d = math.lcm(ft.denominator, *(f.denominator for f in fr.values()))
    mi = {n: f.numerator * (d // f.denominator) for n, f in fr.items()}
    sets = filling_int(mi, L, ft.numerator * (d // ft.denominator))
    return [RowSet(Fraction(a, d), ms) for a, ms in sets]


def filling_int(loads: Mapping[int, int], L: int, total: int) -> list[tuple[int, tuple[int, ...]]]:
    """The filling algorithm on integer loads (valid input assumed): ``[(alpha, machines)]``."""
    ids = sorted(n for n, v in loads.items() if v > 0)
    M = max(len(ids), 1)
    # a machine is the int  load * M + rank  (rank = position in `ids`): ordering these
    # ints is ordering by (load, id)
    mid = sorted(loads[n] * M + r for r, n in enumerate(ids))  # fixed loads, ascending
    high: list[int] = []  # B ascending, stored as (load + shift) * M + rank
    in_b = np.zeros(M, dtype=bool)
    id_arr = np.array(ids, dtype=np.int64 if ids and -2**62 < ids[0] and ids[-1] < 2**62
                      else object)
    shift = 0  # the sum of alpha so far: a B member's load is its stored load - shift
    a = total
    nb = L - 1
    sets: list[tuple[int, tuple[int, ...]]] = []
    for _ in range(len(loads) + 1):
        # restore "B = the top L - 1 of mid u B"; s = the first of mid
        sm = shift * M
        if len(high) < nb and mid:
            t = min(nb - len(high), len(mid))
            moved = mid[len(mid) - t:]
            del mid[len(mid) - t:]
            in_b[[k % M for k in moved]] = True
            high += [k + sm for k in moved]
            high.sort()  # two sorted runs: a merge
        c = _crossing(mid, high, sm)
        if c:
            out = [k - sm for k in high[:c]]
            inn = [k + sm for k in mid[len(mid) - c:]]
            in_b[[k % M for k in out]] = False
            in_b[[k % M for k in inn]] = True
            del mid[len(mid) - c:]
            del high[:c]
            if c <= 32:  # a few: insert them
                for k in out:
                    insort(mid, k)
                for k in inn:
                    insort(high, k)
            else:  # many: merge the sorted runs
                mid += out
                mid.sort()
                high += inn
                high.sort()
        if not mid:
            require(not high, "loads", "fewer than L machines with load left (internal)")
            return sets
        ms, s = divmod(mid.pop(0), M)
        alpha = min(ms, a - mid[-1] // M) if mid else ms
        if 16 * L < M:  # few members: sort them
            sets.append((alpha, tuple([ids[r] for r in sorted([k % M for k in high] + [s])])))
        else:  # many: read them off the membership mask, in id order
            in_b[s] = True
            sets.append((alpha, tuple(id_arr[np.flatnonzero(in_b)].tolist())))
            in_b[s] = False
        a -= alpha
        shift += alpha
        dead = bisect_left(high, (shift + 1) * M)  # B members at 0 leave
        if dead:
            in_b[[k % M for k in high[:dead]]] = False
            del high[:dead]
        if ms > alpha:  # s stays first: B members tied with it had larger ids
            mid.insert(0, (ms - alpha) * M + s)
    raise AssertionError("filling algorithm did not end within |N_t| iterations")


def _crossing(mid: list[int], high: list[int], sm: int) -> int:
    """The number of top machines of ``mid`` that belong in B, displacing its bottom ones."""
    lo, hi = 0, min(len(mid), len(high))
    while lo < hi:  # the largest c with mid[-c] > B[c - 1] (true keys)
        c = (lo + hi + 1) // 2
        if mid[len(mid) - c] > high[c - 1] - sm:
            lo = c
        else:
            hi = c - 1
    return lo
