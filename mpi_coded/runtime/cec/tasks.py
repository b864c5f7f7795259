"""What travels in a step's orders: task tables and the ``aux`` word of a row-set answer.

A TASK's payload lists the row sets a machine computes, in plan order
(docs/theory.md A.4: set ``f`` covers rows ``[sum_{g<f} size_g, sum_{g<=f}
size_g)`` of every coded block): an int64 ``(k, 3)`` table ``[set index,
start, stop]`` when each set is answered on its own (``S > 0``), else the
``(k, 2)`` ranges ``[start, stop]`` (one answer for all).
A PART (one row set's answer, when ``S > 0``) carries the attempt and the set
index packed in its header's ``aux`` word.
"""

from __future__ import annotations

import numpy as np

from mpi_coded.cec.step_plan import StepPlan

SET_BITS = 24
SET_MASK = (1 << SET_BITS) - 1


def part_aux(attempt: int, index: int) -> int:
    return (attempt << SET_BITS) | index


def split_aux(aux: int) -> tuple[int, int]:
    """``(attempt, set index)`` of a PART's ``aux``."""
    return aux >> SET_BITS, aux & SET_MASK


def task_tables(plan: StepPlan, per_set: bool = True) -> dict[int, np.ndarray]:
    """Every available machine's table of non-empty row sets (``(k, 3)``, or the
    ``(k, 2)`` ranges unless ``per_set``)."""
    rows: dict[int, list[tuple[int, int, int]]] = {n: [] for n in plan.available}
    for f, (rs, (a, b)) in enumerate(zip(plan.sets, plan.set_ranges)):
        if b > a:
            for n in rs.machines:
                rows[n].append((f, int(a), int(b)))
    cols = slice(0, 3) if per_set else slice(1, 3)
    return {n: np.array(v, dtype=np.int64).reshape(-1, 3)[:, cols] for n, v in rows.items()}


def merged_ranges(table: np.ndarray | list[list[int]]) -> list[tuple[int, int]]:
    """The table's row ranges (its last two columns; an array, or its rows as lists) with
    adjacent ones merged (one product per merged range)."""
    rows = table.tolist() if isinstance(table, np.ndarray) else table
    out: list[tuple[int, int]] = []
    for *_, a, b in rows:
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
