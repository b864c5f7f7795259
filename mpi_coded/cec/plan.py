"""One time step's plan: who computes which rows of its coded block.

A :class:`StepPlan` is a plain value: print it, compare it, serialise it with
:meth:`StepPlan.to_dict` (the ``mpi-coded plan cec --json`` format).  The MPI
runtime only executes it.

Policies
- ``heterogeneous``: optimal load (SPEC A.3) then the filling algorithm (A.4);
  with ``rows`` the loads are integer row counts (A.5) and A.4 runs on them.
- ``cyclic``: the homogeneous CEC baseline (A.6).

Row sets are laid out in order over the rows of a coded block: set ``f``
covers rows ``[sum_{g<f} size_g, sum_{g<=f} size_g)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.cec.cyclic import cyclic_sets
from mpi_coded.cec.filling import Number, RowSet, filling
from mpi_coded.cec.integer_rows import integer_rows
from mpi_coded.cec.optimal_load import optimal_load
from mpi_coded.errors import require

POLICIES = ("heterogeneous", "cyclic")


@dataclass(frozen=True)
class StepPlan:
    """The assignment of one step (fractions of a block, or row counts)."""

    policy: str
    L: int
    available: tuple[int, ...]
    speeds: tuple[tuple[int, Fraction], ...]
    load: tuple[tuple[int, Fraction], ...]  # fraction of a block per machine
    time: Fraction  # max_n load[n] / s[n], in blocks at speed 1
    sets: tuple[RowSet, ...]
    rows: int | None = None  # rows per block, when planned in integer rows

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
        return {
            "policy": self.policy,
            "L": self.L,
            "available": list(self.available),
            "load": {str(n): str(v) for n, v in self.load},
            "time": str(self.time),
            "sets": sets,
        }

    def __str__(self) -> str:
        lines = [f"{self.policy} plan, L={self.L}, available={list(self.available)}, "
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
) -> StepPlan:
    """Plan one step for the machines ``available`` (ids into ``speeds``)."""
    require(policy in POLICIES, "policy", f"must be one of {', '.join(POLICIES)}", policy)
    require(L >= 1, "L", "must be >= 1", L)
    require(L <= len(speeds), "L", f"must be <= the number of machines N={len(speeds)}", L)
    avail = tuple(sorted(set(int(a) for a in available)))
    require(len(avail) == len(available), "available", "machine ids must be distinct",
            list(available))
    for a in avail:
        require(a in speeds, "available", f"unknown machine id {a} (ids are 1..{len(speeds)})",
                a)
    require(len(avail) >= L, "available", f"at least L={L} machines must be available",
            len(avail))
    if rows is not None:
        require(rows >= 1, "rows", "rows per block must be >= 1", rows)
    sp = {n: Fraction(speeds[n]) for n in avail}
    sets: list[RowSet]
    if policy == "heterogeneous":
        if rows is None:
            _, mu = optimal_load(sp, L)
            sets = filling(mu, L, Fraction(1))
        else:
            k = integer_rows(sp, L, rows)
            sets = filling(k, L, rows)
    else:
        sets = cyclic_sets(avail, L, rows)
    denom = rows or 1
    load = {n: Fraction(0) for n in avail}
    for rs in sets:
        for n in rs.machines:
            load[n] += Fraction(rs.size) / denom
    time = max(load[n] / sp[n] for n in avail)
    return StepPlan(
        policy=policy,
        L=L,
        available=avail,
        speeds=tuple(sorted(sp.items())),
        load=tuple(sorted(load.items())),
        time=time,
        sets=tuple(sets),
        rows=rows,
    )
