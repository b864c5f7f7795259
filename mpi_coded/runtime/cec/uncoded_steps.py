"""The uncoded elastic baseline's products (``policy = "uncoded"``, :mod:`mpi_coded.cec.uncoded`).

DataSent sends every machine available at the first step its rows of ``X``.  Each
product, in the same phases as the coded policies:

* **plan**: ``X``'s rows split by speed over the available machines, and the
  moves from the previous split;
* **order**: the rows that change owner really move (machine to machine, or
  from the master when their owner was preempted), timed (``move_s``) and
  counted (``bytes_moved``); then every machine its whole range and ``w``;
* **collect**: every machine's RESULT and META (no deadlines re-plan these steps);
* **decode**: ``y`` assembled from the ranges (nothing to decode);
* **record**: verified against the direct ``X w``, the step's record.

``workload = "linreg"``: a step's second product ``X^T z`` runs on the same split
(no moves): each machine computes ``X[a:b]^T z[a:b]`` on the rows it stores and
the master adds the parts up (``decode``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from mpi4py import MPI

from mpi_coded.analysis.network import uncoded_move_traffic, uncoded_step_traffic
from mpi_coded.cec.uncoded import Layout, Move, bytes_moved, moves, uncoded_split, uncoded_time
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.results import ElasticStep, LinkBytes
from mpi_coded.runtime.cec.cluster import MachinePool, meta_spans, payload
from mpi_coded.runtime.cec.steps import Clock, DataSent, Steps
from mpi_coded.runtime.cec.stores import UncodedStore
from mpi_coded.runtime.core import records
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.inbox import Msg
from mpi_coded.runtime.core.linkstats import Span
from mpi_coded.runtime.core.wait import wait_all


@dataclass
class Split:
    """One uncoded product in flight: the new split, its moves, what its phases share."""

    t: int
    which: int
    vstep: int
    env: list[int]
    speeds: dict[int, Fraction]
    layout: Layout
    moves: list[Move]
    idle: list[int]
    start: float = 0.0
    move_s: float = 0.0
    moved: Span = (None, None)  # the master's link counters over the moves
    reqs: list[MPI.Request] = field(default_factory=list)
    collected: float = 0.0
    decoded: float = 0.0


class UncodedSteps(Steps):
    """Products of the uncoded baseline, in phases (module docstring)."""

    store = UncodedStore

    def __init__(self, cl: MachinePool, x: np.ndarray) -> None:
        super().__init__(cl, x)
        self.layout: Layout | None = None  # the current owners of X's rows
        self.products = WORKLOADS.lookup(self.cfg.workload).products  # per step

    def setup(self, env: list[int]) -> DataSent:
        cfg, cl = self.cfg, self.cl
        cl.links.handshake(cfg.timeout_s)
        layout = uncoded_split(cl.plan_speeds(), env, cfg.rows)
        mv = moves(None, layout)
        self.move(0, layout, mv, [])
        self.layout = layout
        per_machine = max(b - a for a, b in layout.values()) * cfg.cols * self.field.dtype.itemsize
        return DataSent(bytes_moved(mv, cfg.cols, self.field.dtype.itemsize), per_machine,
                     f"uncoded rows of X split over {len(layout)} machines",
                     uncoded_move_traffic(layout, mv, cfg.cols, self.field.dtype.itemsize))

    def move(self, step: int, layout: Layout, mv: list[Move], idle: list[int]) -> float:
        """Order the moves of ``step``, send the master's rows, wait for every ack."""
        cl = self.cl
        t0 = time.perf_counter()
        reqs: list[MPI.Request] = []
        for n in sorted(layout):
            mine = [[m.src, m.dst, m.start, m.stop] for m in mv if n in (m.src, m.dst)]
            table = np.array([[-1, -1, *layout[n]], *mine], dtype=np.int64)
            reqs += cl.links.isend(n, P.Kind.MOVES, step, table)
        for n in idle:
            reqs += cl.links.isend(n, P.Kind.IDLE, step)
        for m in mv:
            if m.src == 0:
                reqs += cl.links.isend(m.dst, P.Kind.ROWS, step, self.x[m.start: m.stop],
                                aux=m.start)
        cl.links.collect(sorted(layout), [P.Kind.MOVES], step, hard=cl.hard(),
                         what=f"step {step} moves")
        wait_all(reqs, cl.hard(), f"step {step} moves to be delivered")
        return time.perf_counter() - t0

    # -- the phases -----------------------------------------------------------------------

    def product(self, t: int, which: int, w: np.ndarray, avail: list[int]
                ) -> tuple[ElasticStep, np.ndarray]:
        s = self.plan(t, which, avail)
        self.order(s, w)
        got = self.collect(s)
        y, metas = self.decode(s, got)
        return self.record(s, w, y, got, metas), y

    def plan(self, t: int, which: int, env: list[int]) -> Split:
        """``X w``: split by speed, moves from the previous split; ``X^T z``: the same split."""
        speeds = self.cl.plan_speeds()
        vstep = self.products * (t - 1) + 1 + which
        if which == 1 and self.layout is not None:
            return Split(t, which, vstep, env, speeds, self.layout, [], [])
        layout = uncoded_split(speeds, env, self.cfg.rows)
        return Split(t, which, vstep, env, speeds, layout, moves(self.layout, layout),
                     [n for n in self.cl.machines if n not in layout])

    def order(self, s: Split, w: np.ndarray) -> None:
        s.start = time.perf_counter()
        if s.which == 0:
            s.move_s = self.move(s.vstep, s.layout, s.moves, s.idle)
            s.moved = self.cl.link_mark()
        for n, (a, b) in s.layout.items():
            table = np.array([[a, b]], np.int64)
            s.reqs += self.cl.links.isend_together(n, (  # one bundle if they fit
                P.pack(P.Kind.TASK, s.vstep, table),
                P.pack(P.Kind.VECTOR, s.vstep, w if s.which == 0 else w[a:b])))

    def collect(self, s: Split) -> dict[int, list[Msg]]:
        got, _ = self.cl.links.collect(sorted(s.layout), [P.Kind.RESULT, P.Kind.META], s.vstep,
                                       aux=0, hard=self.cl.hard(), what=f"step {s.t} results")
        s.collected = time.perf_counter()
        return got

    def decode(self, s: Split, got: dict[int, list[Msg]]
               ) -> tuple[np.ndarray, dict[int, dict[str, float]]]:
        if s.which == 0:  # y assembled from the ranges
            y = self.field.zeros(self.cfg.rows)
            for n, (a, b) in s.layout.items():
                y[a:b] = payload(got[n][0])
        else:  # X^T z: the machines' parts added up
            y = sum((payload(got[n][0]) for n in sorted(s.layout)), self.field.zeros(self.cfg.cols))
        s.decoded = time.perf_counter()
        wait_all(s.reqs, self.cl.hard(), f"step {s.t} orders to be delivered")
        metas = {n: records.TASK_META.unpack(got[n][1][1], n) for n in s.layout}
        self.cl.observe(metas)
        self.layout = s.layout
        return y, metas

    def record(self, s: Split, w: np.ndarray, y: np.ndarray, got: dict[int, list[Msg]],
               metas: dict[int, dict[str, float]]) -> ElasticStep:
        cfg, layout = self.cfg, s.layout
        true = self.cl.true_speeds(s.t, s.env)
        predicted = float(uncoded_time(layout, s.speeds)) * cfg.t_row
        ranges = sorted(layout.items())
        return self.step_record(
            s.t, s.env, Clock(s.start, s.collected, s.decoded), metas,
            self.check(y, self.x if s.which == 0 else self.x.T, w), s.speeds,
            float(uncoded_time(uncoded_split(true, s.env, cfg.rows), true)) * cfg.t_row,
            float(uncoded_time(layout, true)) * cfg.t_row,
            available=sorted(layout),
            load={str(n): str(Fraction(b - a, cfg.rows)) for n, (a, b) in layout.items()},
            rows={str(n): b - a for n, (a, b) in layout.items()},
            sets=[{"fraction": str(Fraction(b - a, cfg.rows)), "machines": [n],
                   "rows": [a, b]} for n, (a, b) in ranges],
            predicted_s=predicted, predicted_planned_s=predicted,
            bytes_step=sum(int(payload(got[n][0]).nbytes) for n in layout) +
            (int(w.nbytes) * len(layout) if s.which == 0 else int(w.nbytes)),
            bytes_moved=bytes_moved(s.moves, cfg.cols, self.field.dtype.itemsize),
            move_s=s.move_s, moves=len(s.moves), waited_for=[[n] for n in sorted(layout)],
            link=self.link(s, metas))

    def link(self, s: Split, metas: dict[int, dict[str, float]]) -> LinkBytes | None:
        """``link_bytes`` of the moves (``X w`` only) and of the products (the master and
        every machine of the split) beside the network model's bytes of both (the
        ``X^T z`` product of linreg: not modelled, no ``plan_bytes``)."""
        cl, cols, item = self.cl, self.cfg.cols, self.field.dtype.itemsize
        before, after = meta_spans(metas, moved=s.which == 0)
        step = ("step", {0: cl.link_mark(), **after})
        if s.which == 1:
            return cl.link_record([step], {"step": None})
        return cl.link_record(
            [("moves", {0: s.moved, **before}), step],
            {"moves": uncoded_move_traffic(s.layout, s.moves, cols, item, s.idle),
             "step": uncoded_step_traffic(s.layout, cols, item)})
