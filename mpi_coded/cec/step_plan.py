"""One time step's plan as a value: who computes which rows of its coded block.

A :class:`StepPlan` is a plain value: print it, compare it, serialise it with
:meth:`StepPlan.to_dict` (the ``mpi-coded plan cec --json`` format).  The MPI
runtime only executes it.  An elastic policy (:mod:`mpi_coded.cec.policy`) makes one.

Row sets are laid out in order over the rows of a coded block: set ``f``
covers rows ``[sum_{g<f} size_g, sum_{g<=f} size_g)``.  With ``S > 0`` every row set
has ``L + S`` machines, so any ``L`` of them decode it.  The plan's ``time`` is
``max_n load[n] / s[n]`` (docs/theory.md (A.2)): the time at which all ``L + S`` copies
of every row are done.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.cec.filling import Number, RowSet
from mpi_coded.errors import require


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
