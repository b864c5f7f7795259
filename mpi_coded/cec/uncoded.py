"""The uncoded elastic baseline: ``X`` split by speed, rows moved when machines change.

``X`` (``q x r``) is stored uncoded.  Each step the available machines get
contiguous row ranges in machine-id order, their sizes the integer rows
minimising ``max_n rows[n] / s[n]`` (docs/theory.md A.5 with ``L = 1``: one
block, every row computed once).  Storage model: a machine holds exactly the
rows of its current range.  When the split changes, every row that changes
owner is sent to its new owner:

* from its previous owner if that machine is still available this step;
* from the master (``src = 0``) if its previous owner was preempted: a
  preempted machine is reclaimed by its owner, so its memory is gone (the
  coded scheme needs no such transfer, which is the point of the comparison);
* from the master at the first step (``prev = None``): everything.

A machine returning from preemption therefore holds nothing and receives all
its rows.  Times are in rows at speed 1, directly comparable with the coded
plan's integer time ``max_n k[n] / s[n]`` (rows of a coded block at speed 1).
Baseline of Yang, Pedarsani, Avestimehr, "Coded Elastic Computing".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import NamedTuple

from mpi_coded.cec.integer_rows import integer_rows
from mpi_coded.errors import require

MASTER = 0
Layout = dict[int, tuple[int, int]]


class Move(NamedTuple):
    """Rows ``[start, stop)`` of ``X`` sent from ``src`` (0 = master) to ``dst``."""

    src: int
    dst: int
    start: int
    stop: int


def uncoded_split(speeds: Mapping[int, Fraction], available: Iterable[int], rows: int) -> Layout:
    """Contiguous ``[start, stop)`` per available machine (id order), sized by speed.

    Sizes minimise ``max rows[n] / s[n]`` over integers summing to ``rows``;
    a machine may get an empty range.
    """
    avail = sorted(set(available))
    require(len(avail) >= 1, "available", "at least one machine must be available", avail)
    for n in avail:
        require(n in speeds, "available", f"machine {n} is not a known machine id", n)
    require(rows >= 1, "rows", "must be >= 1", rows)
    k = integer_rows({n: speeds[n] for n in avail}, 1, rows)
    layout: Layout = {}
    a = 0
    for n in avail:
        layout[n] = (a, a + k[n])
        a += k[n]
    return layout


def _owner_segments(layout: Layout) -> list[tuple[int, int, int]]:
    """``(start, stop, owner)`` of the non-empty ranges, by start."""
    return sorted((a, b, n) for n, (a, b) in layout.items() if b > a)


def moves(prev: Layout | None, cur: Layout) -> list[Move]:
    """The transfers that turn ``prev`` into ``cur`` (ordered by start, maximal ranges).

    ``cur``'s keys are this step's available machines; rows owned in ``prev``
    by a machine outside them come from the master.  ``prev`` and ``cur``
    must cover the same rows.
    """
    cur_segs = _owner_segments(cur)
    total = cur_segs[-1][1] if cur_segs else 0
    old = _owner_segments(prev) if prev is not None else [(0, total, MASTER)]
    require(bool(old) and old[-1][1] == total, "prev", "must cover the same rows as cur",
            old[-1][1] if old else 0)
    cuts = sorted({0, total} | {x for a, b, _ in old + cur_segs for x in (a, b)})
    out: list[Move] = []
    i = j = 0
    for a, b in zip(cuts, cuts[1:]):
        while old[i][1] <= a:
            i += 1
        while cur_segs[j][1] <= a:
            j += 1
        src, dst = old[i][2], cur_segs[j][2]
        if src == dst:
            continue
        if src not in cur:
            src = MASTER
        if out and out[-1].src == src and out[-1].dst == dst and out[-1].stop == a:
            out[-1] = out[-1]._replace(stop=b)
        else:
            out.append(Move(src, dst, a, b))
    return out


def bytes_moved(moves: Iterable[Move], cols: int, itemsize: int) -> int:
    """Bytes on the wire: every moved row is ``cols * itemsize`` bytes."""
    return sum(m.stop - m.start for m in moves) * cols * itemsize


def uncoded_time(layout: Layout, speeds: Mapping[int, Fraction]) -> Fraction:
    """``max_n rows[n] / s[n]`` in rows at speed 1 (machines with no rows ignored)."""
    busy = [(b - a, n) for n, (a, b) in layout.items() if b > a]
    return max((Fraction(r) / speeds[n] for r, n in busy), default=Fraction(0))
