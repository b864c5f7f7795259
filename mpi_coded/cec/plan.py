"""One time step's plan: who computes which rows of its coded block.

A :class:`StepPlan` is a plain value: print it, compare it, serialise it with
:meth:`StepPlan.to_dict` (the ``mpi-coded plan cec --json`` format).  The MPI
runtime only executes it.

Policies
- ``heterogeneous``: optimal load (docs/theory.md (A.3)) then the filling
  algorithm (A.4); with ``rows`` the loads are integer row counts (A.5) and
  A.4 runs on them.
- ``cyclic``: the homogeneous CEC baseline (A.6).
- ``heterogeneous-tw``: the loads of ``heterogeneous`` (so the same step time),
  with row sets laid out against the previous step's plan to cut the
  transition waste (:mod:`mpi_coded.cec.tw_policy`).

Row sets are laid out in order over the rows of a coded block: set ``f``
covers rows ``[sum_{g<f} size_g, sum_{g<=f} size_g)``.

Stragglers: with ``S > 0`` every row set has ``L + S`` machines (the loads
solve the same problems with ``L + S`` in place of ``L``), so any ``L`` of its
machines decode it and up to ``S`` machines may be late.  The plan's ``time``
is still ``max_n load[n] / s[n]``: the time at which all ``L + S`` copies of
every row are done (an upper bound on the time to have ``L`` of each).

The planner works in integers over one common denominator and builds
``Fraction`` objects only for the answer; the order of the machines in the
filling algorithm is kept incrementally (:mod:`mpi_coded.cec.filling`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.cec.cyclic import cyclic_loads, cyclic_sets
from mpi_coded.cec.filling import Number, RowSet, filling_int
from mpi_coded.cec.integer_rows import rows_from_load
from mpi_coded.cec.optimal_load import int_load, int_speeds
from mpi_coded.cec.tw_policy import tw_sets
from mpi_coded.errors import require

POLICIES = ("heterogeneous", "cyclic", "heterogeneous-tw")


@dataclass(frozen=True)
class StepPlan:
    """The assignment of one step (fractions of a block, or row counts)."""

    policy: str
    L: int
    available: tuple[int, ...]
    speeds: tuple[tuple[int, Fraction], ...]
    load: tuple[tuple[int, Fraction], ...]  # fraction of a block per machine
    time: Fraction  # max_n load[n] / s[n], in blocks at speed 1 (all L + S copies done)
    sets: tuple[RowSet, ...]
    rows: int | None = None  # rows per block, when planned in integer rows
    S: int = 0  # stragglers tolerated: every set has L + S machines

    @property
    def set_ranges(self) -> list[tuple[Number, Number]]:
        """``[start, stop)`` of each row set (fractions, or row indices)."""
        out: list[tuple[Number, Number]] = []
        start: Number = 0
        for rs in self.sets:
            out.append((start, start + rs.size))
            start = start + rs.size
        return out

    def machine_ranges(self, n: int) -> list[tuple[Number, Number]]:
        """The row ranges machine ``n`` computes, in set order."""
        return [r for rs, r in zip(self.sets, self.set_ranges) if n in rs.machines and
                r[1] > r[0]]

    def ranges_by_machine(self) -> dict[int, list[tuple[Number, Number]]]:
        """:meth:`machine_ranges` of every available machine, in one pass."""
        out: dict[int, list[tuple[Number, Number]]] = {n: [] for n in self.available}
        for rs, r in zip(self.sets, self.set_ranges):
            if r[1] > r[0]:
                for n in rs.machines:
                    out[n].append(r)
        return out

    def row_counts(self) -> dict[int, int]:
        """Rows per machine (integer plans only)."""
        require(self.rows is not None, "rows", "row counts need a plan in integer rows")
        counts = {n: 0 for n in self.available}
        for rs in self.sets:
            for n in rs.machines:
                counts[n] += int(rs.size)
        return counts

    def to_dict(self) -> dict[str, Any]:
        sets = []
        for rs, (a, b) in zip(self.sets, self.set_ranges):
            frac = Fraction(rs.size) / (self.rows or 1)
            entry: dict[str, Any] = {"fraction": str(frac), "machines": list(rs.machines)}
            if self.rows is not None:
                entry["rows"] = [int(a), int(b)]
            sets.append(entry)
        out: dict[str, Any] = {"policy": self.policy, "L": self.L}
        if self.S:
            out["S"] = self.S
        out.update({
            "available": list(self.available),
            "load": {str(n): str(v) for n, v in self.load},
            "time": str(self.time),
            "sets": sets,
        })
        return out

    def __str__(self) -> str:
        s = f", S={self.S}" if self.S else ""
        lines = [f"{self.policy} plan, L={self.L}{s}, available={list(self.available)}, "
                 f"time={self.time}"]
        lines.append("  load: " + ", ".join(f"{n}:{v}" for n, v in self.load))
        for d in self.to_dict()["sets"]:
            extra = f" rows {d['rows'][0]}..{d['rows'][1]}" if "rows" in d else ""
            lines.append(f"  {d['fraction']:>8} -> {d['machines']}{extra}")
        return "\n".join(lines)


def make_plan(
    policy: str,
    speeds: Mapping[int, Fraction],
    L: int,
    available: Sequence[int],
    rows: int | None = None,
    S: int = 0,
    prev: StepPlan | None = None,
) -> StepPlan:
    """Plan one step for the machines ``available`` (ids into ``speeds``).

    ``S`` stragglers are tolerated: every row is computed by ``L + S`` machines.
    ``prev`` (the previous step's plan) is used by ``heterogeneous-tw`` only.
    """
    require(policy in POLICIES, "policy", f"must be one of {', '.join(POLICIES)}", policy)
    require(L >= 1, "L", "must be >= 1", L)
    require(L <= len(speeds), "L", f"must be <= the number of machines N={len(speeds)}", L)
    avail = tuple(sorted(set(int(a) for a in available)))
    require(len(avail) == len(available), "available", "machine ids must be distinct",
            list(available))
    for a in (a for a in avail if a not in speeds):  # the first unknown id, if any
        require(False, "available", f"unknown machine id {a} (ids are 1..{len(speeds)})", a)
    require(len(avail) >= L, "available", f"at least L={L} machines must be available",
            len(avail))
    if rows is not None:
        require(rows >= 1, "rows", "rows per block must be >= 1", rows)
    require(S >= 0, "S", "stragglers tolerated must be >= 0", S)
    require(L + S <= len(avail), "S",
            f"L + S must be <= the number of available machines ({len(avail)}) with L={L}", S)
    sp = {n: (v if type(v) is Fraction else Fraction(v)) for n in avail for v in [speeds[n]]}
    lp = L + S
    sets: list[RowSet]
    num: Mapping[int, int]  # load[n] = num[n] / denom
    if policy == "cyclic":
        sets = cyclic_sets(avail, lp, rows)
        num = cyclic_loads(avail, lp, rows)
        denom = rows or len(avail)
        scale, si = int_speeds(sp)
    else:
        ld = int_load(sp, lp)
        scale, si = ld.scale, ld.speed
        if rows is None:
            num, denom = ld.num, ld.denom
        else:
            num, denom = rows_from_load(ld, sp, lp, rows), rows
        if policy == "heterogeneous-tw" and prev is not None:
            sets = tw_sets(prev, num, denom, lp, rows)
        else:
            raw = filling_int(num, lp, denom)
            sets = [RowSet(a, ms) for a, ms in raw] if rows is not None else \
                [RowSet(Fraction(a, denom), ms) for a, ms in raw]
    # time = max_n (num[n] / denom) / (si[n] / scale), compared exactly in integers
    best_num, best_s = 0, 1
    for n in avail:
        x, y = num[n], si[n]
        if x * best_s > best_num * y:
            best_num, best_s = x, y
    return StepPlan(
        policy=policy,
        L=L,
        available=avail,
        speeds=tuple(sp.items()),
        load=tuple((n, Fraction(num[n], denom)) for n in avail),
        time=Fraction(best_num * scale, denom * best_s),
        sets=tuple(sets),
        rows=rows,
        S=S,
    )

