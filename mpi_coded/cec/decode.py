"""Decoding one elastic step (A.2): each row set from the answers of ``L`` of its machines.

Row set ``M_f`` was computed by the machines ``P_f``; with ``G_P`` the
submatrix of the generator on ``L`` of them, ``Z = G_P^{-1} Y`` recovers the
rows ``M_f`` of ``X_1 w .. X_L w`` (docs/theory.md, A.2).  With ``S = 0`` each
machine's answer is its row ranges concatenated in plan order
(:func:`decode_step`); with ``S > 0`` each row set arrives on its own from the
first ``L`` machines to finish it (:func:`decode_parts`).

Buffers: a :class:`StepDecoder` owns the decoded ``(L, R)`` output and the
``(L, R)`` gathered answers, allocated once per job; answers are copied once
into the gather buffer (its columns are the set's rows) and decoded from
there.  Batching: the row sets decoded from the same ``L`` machines share one
``G_P^{-1}`` and are decoded with one product over all their columns, so the
decode cost follows the data, not the number of row sets.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.codes.mds import DecoderCache
from mpi_coded.fields import Field

Part = tuple[int, int, tuple[int, ...]]  # [start, stop) of a row set and the L machines used


class StepDecoder:
    """Decodes the steps of one job into buffers allocated once."""

    def __init__(self, decoder: DecoderCache, field: Field, L: int, R: int) -> None:
        self.decoder, self.field, self.L, self.R = decoder, field, L, R
        self.out = field.zeros((L, R))
        self.gather = field.zeros((L, R))
        self.used: list[tuple[int, ...]] = []  # the last decode's sets of L machines

    def condition(self) -> float:
        """The worst condition number of the ``G_P`` the last :meth:`decode` used (1.0
        over GF), computed apart from it: a step's decode time does not include it."""
        return max((self.decoder.condition([n - 1 for n in m]) for m in self.used),
                   default=1.0)

    def decode(self, parts: Sequence[Part], condition: bool = True) -> tuple[np.ndarray, float]:
        """Decode the gathered answers of ``parts`` into :attr:`out`; the worst condition
        number (:meth:`condition`; NaN when ``condition`` is False: ask it after).

        Rows outside every part are zeroed.  The caller has filled
        ``gather[j, a:b]`` with the answer of the ``j``-th machine of each part.
        """
        groups: dict[tuple[int, ...], list[tuple[int, int]]] = defaultdict(list)
        covered = np.zeros(self.R, dtype=bool)
        for a, b, machines in parts:
            if b > a:
                groups[tuple(machines)].append((a, b))
                covered[a:b] = True
        if not covered.all():
            self.out[:, ~covered] = 0
        self.used = list(groups)
        for machines, ranges in groups.items():
            rows = [n - 1 for n in machines]
            for _ in ranges:  # each set looks its G_P^{-1} up (cached); one product per group
                inv = self.decoder.inverse(rows)
            if len(ranges) == 1:
                (a, b), = ranges
                cols: slice | np.ndarray = slice(a, b)
            else:
                cols = np.concatenate([np.arange(a, b) for a, b in ranges])
            if self.field.exact:
                self.out[:, cols] = self.field.matmul(inv, self.gather[:, cols])
            elif isinstance(cols, slice):
                np.matmul(inv, self.gather[:, cols], out=self.out[:, cols])
            else:
                self.out[:, cols] = inv @ self.gather[:, cols]
        return self.out, self.condition() if condition else float("nan")


def decode_step(plan: StepPlan, results: Mapping[int, np.ndarray], dec: StepDecoder,
                condition: bool = True) -> tuple[np.ndarray, float]:
    """``(L, R)`` decoded rows of ``X_1 w .. X_L w`` (a view of ``dec.out``) and the worst
    condition number (NaN unless ``condition``: :meth:`StepDecoder.condition`), from each
    machine's ranges concatenated in plan order (``S = 0``)."""
    offset = {n: 0 for n in plan.available}
    parts: list[Part] = []
    for rs, (a, b) in zip(plan.sets, plan.set_ranges):
        a, b = int(a), int(b)
        if b == a:
            continue
        for j, n in enumerate(rs.machines):
            dec.gather[j, a:b] = results[n][offset[n]: offset[n] + b - a]
            offset[n] += b - a
        parts.append((a, b, tuple(rs.machines)))
    return dec.decode(parts, condition)


def decode_parts(plan: StepPlan, answers: Mapping[int, Mapping[int, np.ndarray]],
                 dec: StepDecoder, condition: bool = True
                 ) -> tuple[np.ndarray, float, list[list[int]]]:
    """Decode from per-set answers ``answers[f][n]`` (set index -> machine -> its rows).

    Each set uses the first ``L`` machines that answered it (the mapping's
    insertion order); returns the decoded rows, the worst condition number and
    the machines used per set.
    """
    parts: list[Part] = []
    used: list[list[int]] = []
    for f, (a, b) in enumerate(plan.set_ranges):
        a, b = int(a), int(b)
        if b == a:
            used.append([])
            continue
        got = list(answers.get(f, {}).items())[: plan.L]
        if len(got) < plan.L:
            raise ValueError(f"row set {f} has {len(got)} answers, needs L={plan.L}")
        machines = tuple(sorted(n for n, _ in got))
        by = dict(got)
        for j, n in enumerate(machines):
            dec.gather[j, a:b] = by[n]
        parts.append((a, b, machines))
        used.append(list(machines))
    yb, cond = dec.decode(parts, condition)
    return yb, cond, used
