"""A storage machine of the elastic job (MPI rank ``n`` = machine ``n``).

Setup: receive the coded block ``X~_n`` once, warm the field up, report READY
(with the host name).  Then obey the master:

* TASK (the row sets, :mod:`mpi_coded.runtime.cec.tasks`) and
  ``w_t``: compute ``X~_n[a:b] w_t`` for each range *in place* (a view of the
  block, one product per range into a preallocated output) under the throttle
  (a row at true speed ``s`` takes ``t_row / s`` seconds,
  :mod:`mpi_coded.cec.scenario`).  With ``S = 0`` adjacent ranges are merged
  and one RESULT carries them all; with ``S > 0`` each row set is computed and
  sent (PART) as soon as it is done.  Between sets and during the throttle's
  sleep the machine checks its inbox: a CUT for this step and attempt stops it.
  Then META (a ``TASK_META`` record) reports what was done.
* IDLE: compute nothing and wait politely, dormant (a sleep cap of 5 ms, or the node's
  idle cap when longer: :data:`mpi_coded.runtime.core.wait.DORMANT_SLEEP`; idle CPU and
  wall time measured).
* CUT for a step already finished: ignored.  STOP: send STATS.

What the machine stores, and how it changes, is its policy's
(:mod:`mpi_coded.runtime.cec.stores`): the coded block(s) received once, or the uncoded
baseline's rows of ``X`` moved as the split changes.  A workload of two products a step
(``linreg``, :mod:`mpi_coded.cec.workloads`) runs as wire steps ``2t - 1`` (``X w``) and
``2t`` (``X^T z``).
"""

from __future__ import annotations

import os
import time
from collections import deque

import numpy as np
from mpi4py import MPI

from mpi_coded.cec.compute import range_product
from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.scenario import true_speed
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.faults import Answer, Fault
from mpi_coded.fields import get_field
from mpi_coded.runtime.cec.storage import StoreRun, open_store
from mpi_coded.runtime.cec.stores import DiskStore, MachineStore
from mpi_coded.runtime.cec.tasks import merged_ranges, part_aux
from mpi_coded.runtime.core import linkstats, records
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.faults import answer_rng, at_phase
from mpi_coded.runtime.core.guard import CannotGoOn, Phase
from mpi_coded.runtime.core.inbox import Inbox, Msg
from mpi_coded.runtime.core.peers import MasterLink
from mpi_coded.runtime.core.wait import (
    FIRST_ORDER_WINDOW,
    POLICY,
    DeadlineExceeded,
    OrderClock,
    deadline_in,
    sleep_until,
    wait_all,
)

PROFILE_ENV = "MPI_CODED_PROFILE_MACHINES"
"""A directory: each machine runs under :mod:`cProfile` and writes ``machine_<n>.prof`` there."""

ORDERS = {P.Kind.TASK, P.Kind.IDLE, P.Kind.STOP, P.Kind.CUT, P.Kind.MOVES, P.Kind.CHECK,
          P.Kind.REPAIR}


class Machine:
    def __init__(self, cfg: CECConfig, comm: MPI.Comm, faults: tuple[Fault, ...],
                 store: type[MachineStore], machine: int | None = None) -> None:
        self.cfg, self.comm, self.faults = cfg, comm, faults
        # the machine id: its rank, or (spawned later) the lost machine's it replaces
        self.rank = comm.Get_rank() if machine is None else machine
        self.field = get_field(cfg.field)
        self.master = MasterLink(comm)
        self.schedule = cfg.available_sets()
        self.pending: deque[Msg] = deque()
        self.out = self.field.zeros(cfg.rows_per_block)
        self.block = self.field.zeros((0, cfg.cols))  # coded block, or uncoded rows of X
        self.peers: dict[int, Inbox] = {}
        self.per_step = WORKLOADS.lookup(cfg.workload).products
        self._speed: tuple[int, float] = (-1, 1.0)  # (step, speed) cache of speed()
        # no straggler draws and no fault of its own: one speed for the whole job
        self.own_faults = any(f.rank == comm.Get_rank() for f in faults)
        self._fixed = float(cfg.speed_map[self.rank]) if cfg.stragglers == 0 and \
            not self.own_faults else None
        self.idle_clock = IdleClock()
        self.orders = OrderClock()  # when the next step's order is due
        self.idle_steps: list[int] = []  # steps this machine idled
        self.rows_done: dict[int, int] = {}  # rows computed per step
        # link counters (runtime/core/linkstats.py) at the end of the last activity (setup,
        # a task, an IDLE)
        self.link_mark: linkstats.Counters | None = None
        self.stored: StoreRun | None = None  # a job from a store: this rank's part of it
        self.store = store(self)  # the policy's data on this machine

    def real_step(self, vstep: int) -> int:
        """The job's step of a wire step (linreg: two wire steps per step)."""
        return (vstep + self.per_step - 1) // self.per_step

    def speed(self, step: int) -> float:
        """This machine's throttle speed at ``step`` (computed once per step)."""
        if self._fixed is not None:
            return self._fixed
        if self._speed[0] != step:
            avail = self.schedule[step - 1] if step <= len(self.schedule) else ()
            self._speed = (step, float(true_speed(self.cfg, self.faults, step, avail,
                                                  self.rank)))
        return self._speed[1]

    def next_order(self, kinds: set[P.Kind] = ORDERS, step: int | None = None,
                   what: str = "the master's next order", active: bool = False) -> Msg:
        if self.pending:
            msg = self.pending.popleft()
            h = msg[0]
            if h.kind not in kinds or (step is not None and h.step != step):
                raise P.WireError(f"unexpected {h.kind.name} (step {h.step}) from the master "
                                  f"while waiting for {what}")
            self.orders.arrived(h.step)
            return msg
        # preempted (after IDLE, until the next order): sleeps up to the dormant cap; the
        # next step's order is due about one period after this step's (OrderClock)
        dormant = self.idle_clock.since is not None
        backoff = None if active else self.orders.backoff(
            POLICY.dormant_sleep if dormant else POLICY.idle_sleep)
        try:
            msg = self.master.recv(kinds, step, self.cfg.timeout_s, what, dormant=dormant,
                                   active=active, backoff=backoff)
        except DeadlineExceeded as exc:  # one line, the key to raise: no traceback
            raise CannotGoOn(f"{exc}: the master sent nothing for timeout_s = "
                             f"{self.cfg.timeout_s:g} s (busy between steps, e.g. verify = "
                             "\"exact\" streaming a large X, or gone); raise timeout_s "
                             "(the config key, or --timeout) if its work takes longer") from None
        if msg[0].kind in ORDERS:
            self.orders.arrived(msg[0].step)
        return msg

    def cut(self, step: int, attempt: int) -> bool:
        """Whether a CUT for (step, attempt) has arrived (never blocks; keeps other orders)."""
        while True:
            msg = self.master.inbox.test(ORDERS | {P.Kind.VECTOR}, None,
                                         deadline_in(self.cfg.timeout_s))
            if msg is None:
                return False
            h = msg[0]
            if h.kind == P.Kind.CUT:
                if (h.step, h.aux) == (step, attempt):
                    return True
                continue  # a CUT for an attempt already over
            self.pending.append(msg)

    def product(self, a: int, b: int, off: int, w: np.ndarray) -> None:
        """``out[off:off + b - a] = X~_n[a:b] w``, the block's rows as a view, no copy."""
        range_product(self.field, self.block, a, b, w, self.out[off:], self.store.base)

    def task(self, step: int, attempt: int, table: list[list[int]], w: np.ndarray) -> int:
        """Compute, throttle and answer one TASK (``table``: its rows, :mod:`mpi_coded.
        runtime.cec.tasks`); returns the rows computed."""
        cfg = self.cfg
        per_set = cfg.S > 0
        pieces = [(f, a, b) for f, a, b in table] if per_set else \
            [(-1, a, b) for a, b in merged_ranges(table)]
        planned = sum(b - a for _, a, b in pieces)
        per_row = cfg.t_row / self.speed(self.real_step(step))
        reqs: list[MPI.Request] = []
        result: tuple[np.ndarray, np.ndarray | None] | None = None
        compute_s = sleep_s = busy_s = 0.0
        done = off = 0
        cut = False
        transposed = self.store.transposed(step)
        multiply = self.store.product_t if transposed else self.product
        self.store.begin(step)
        t0 = time.perf_counter()
        for f, a, b in pieces:
            if per_set and self.cut(step, attempt):
                cut = True
                break
            c0 = time.perf_counter()
            multiply(a, b, off, w)
            c1 = time.perf_counter()
            compute_s += c1 - c0
            if per_set:
                interrupted = sleep_until(t0 + (done + b - a) * per_row,
                                          lambda: self.cut(step, attempt))
                sleep_s += time.perf_counter() - c1
                if interrupted:
                    cut = True
                    break
                self.answered(step, self.out[off: off + b - a], [(a, b)], w, transposed)
                reqs += self.master.isend(P.Kind.PART, step, self.out[off: off + b - a],
                                          aux=part_aux(attempt, f))
            done += b - a
            off += b - a
            busy_s = time.perf_counter() - t0
        if not per_set:
            c1 = time.perf_counter()
            end = t0 + planned * per_row  # past already (t_row = 0): the answer is ready
            cut = time.perf_counter() < end and sleep_until(end, lambda: self.cut(step, attempt))
            sleep_s = time.perf_counter() - c1
            busy_s = time.perf_counter() - t0
            if not cut:
                values = self.answered(step, self.store.answer(step, done),
                                       [(a, b) for _, a, b in pieces], w, transposed)
                result = P.pack(P.Kind.RESULT, step, values, aux=attempt)
            else:  # stopped inside the throttle: no sample of this machine's speed
                busy_s = 0.0
        meta = records.TASK_META.pack(compute_s=compute_s, sleep_s=sleep_s,
                                      target_s=planned * per_row, rows=done, busy_s=busy_s,
                                      rows_planned=planned, cut=float(cut),
                                      speed=self.speed(self.real_step(step)),
                                      **self.link_values(step))
        answer = [P.pack(P.Kind.META, step, meta, aux=attempt)]  # RESULT and META: one
        reqs += self.master.isend_together(answer if result is None else [result, *answer])
        wait_all(reqs, deadline_in(cfg.timeout_s), f"the master to take step {step}'s result")
        return done

    def answered(self, step: int, values: np.ndarray, ranges: list[tuple[int, int]],
                 w: np.ndarray, transposed: bool) -> np.ndarray:
        """The ``answer`` phase: this rank's faults fire, a lying one changing ``values`` in
        place; returns ``values``."""
        at_phase(self.faults, self.comm, "answer", self.real_step(step),
                 self.answer_of(values, ranges, w, transposed))
        return values

    def answer_of(self, values: np.ndarray, ranges: list[tuple[int, int]], w: np.ndarray,
                  transposed: bool) -> Answer | None:
        """The :class:`~mpi_coded.faults.Answer` a lying fault of this rank may change (None
        without a fault of its own: nothing is built on a healthy machine's path)."""
        if not self.own_faults:
            return None
        product = None
        if not transposed:
            def product(v: np.ndarray) -> np.ndarray:  # the same rows times another vector
                out = self.field.zeros(sum(b - a for a, b in ranges))
                off = 0
                for a, b in ranges:
                    range_product(self.field, self.block, a, b, v, out[off:], self.store.base)
                    off += b - a
                return out
        return Answer(values, self.field.order, answer_rng(self.rank), w, product)

    def link_values(self, step: int) -> dict[str, float]:
        """A task's link fields: the counters since the last activity ended, when this wire
        step's moves were done (-1: none), now; now is the next activity's start."""
        now = linkstats.read()
        moved = self.store.moved(step)
        out = {**linkstats.span_values(self.link_mark, now),
               **linkstats.values(records.MOVED, moved)}
        self.link_mark = now
        return out

    def run(self, phase: Phase) -> None:
        phase.set("setup")
        at_phase(self.faults, self.comm, "setup", None)
        self.field.warm_up(self.cfg.largest_products[1])
        self.setup()
        self.link_mark = linkstats.read()
        self.master.ready(self.cfg.timeout_s)
        self.orders.expect_soon(FIRST_ORDER_WINDOW)  # step 1's order follows everyone's READY
        while True:
            phase.set("wait")
            h, payload = self.next_order()
            if h.kind == P.Kind.CUT:
                continue  # the step it stops is already answered
            self.idle_clock.stop()
            if h.kind == P.Kind.STOP:
                phase.set("stop")
                self.stop(h.step)
                return
            if h.kind == P.Kind.MOVES:
                phase.set("moves", h.step)
                self.store.moves(h.step, payload)
            elif h.kind == P.Kind.IDLE:
                self.idle(h.step)
            elif h.kind in (P.Kind.CHECK, P.Kind.REPAIR):
                phase.set("quarantine", self.real_step(h.step))
                self.quarantined(h, payload)
            else:
                self.take_task(phase, h, payload)

    def setup(self) -> None:
        """Receive what the policy sends once (:meth:`MachineStore.setup`)."""
        self.store.setup()

    def quarantined(self, h: P.Header, payload: np.ndarray | None) -> None:
        """CHECK: this machine answered wrong: its block read whole against its checksum
        (CHECKED ``[1]`` intact, ``[0]`` corrupt: then received again from a master that
        holds ``X``, with READY); REPAIR: a peer's block rebuilt from this one's, or this
        one's from peers' (:mod:`mpi_coded.runtime.cec.quarantine`)."""
        timeout = self.cfg.timeout_s
        if h.kind == P.Kind.CHECK:
            ok = self.store.intact()
            self.master.send(P.Kind.CHECKED, h.step, np.array([int(ok)], dtype=np.int64),
                             timeout=timeout)
            if not ok and not self.cfg.store:
                self.store.setup()
                self.master.ready(timeout)
            return
        if payload is None or payload.ndim != 1 or payload.size < 3:
            raise P.WireError(f"REPAIR for step {h.step} has no [role, machine, rank] table")
        role, n, rank = (int(v) for v in payload[:3])
        if role == 0:
            self.store.send_block(rank)
            return
        pairs = payload[3:].reshape(-1, 2).tolist()
        stats = self.store.rebuild(n, rank, [(int(m), int(r)) for m, r in pairs])
        self.master.send(P.Kind.REPAIRED, h.step, stats, timeout=timeout)

    def idle(self, step: int) -> None:
        """IDLE: compute nothing this step, wait politely (timed); the store may drop its
        data (the uncoded baseline's rows are reclaimed)."""
        at_phase(self.faults, self.comm, "idle", self.real_step(step))
        self.store.idle()
        self.idle_steps.append(self.real_step(step))
        self.link_mark = linkstats.read()
        self.idle_clock.start()

    def stop(self, step: int) -> None:
        """STOP: report the idle statistics and the rows computed per step."""
        steps = sorted(set(self.rows_done) | set(self.idle_steps))
        stats = records.IDLE_STATS.pack(wall_s=self.idle_clock.wall, cpu_s=self.idle_clock.cpu,
                                        idle_steps=len(self.idle_steps))
        table = np.array([[t, self.rows_done.get(t, 0), 1 if t in self.idle_steps else 0]
                          for t in steps], dtype=np.int64).reshape(-1, 3)
        self.master.send(P.Kind.STATS, step, stats, timeout=self.cfg.timeout_s)
        self.master.send(P.Kind.STATS, step, table, timeout=self.cfg.timeout_s)

    def take_task(self, phase: Phase, h: P.Header, payload: np.ndarray | None) -> None:
        """A TASK: check its table, take ``w_t``, compute and answer."""
        cfg = self.cfg
        step, attempt = h.step, h.aux
        real = self.real_step(step)
        phase.set("step", real)
        at_phase(self.faults, self.comm, "step", real)
        self.store.select(step)
        cols = 3 if cfg.S > 0 else 2
        if payload is None or payload.ndim != 2 or payload.shape[1] != cols:
            raise P.WireError(f"TASK for step {step} has no (k, {cols}) row-set table")
        table = payload.tolist()  # small: plain ints are quicker to check than numpy's
        base, top = self.store.base, self.store.base + self.block.shape[0]
        if any(r[-2] < base or r[-1] > top or r[-1] < r[-2] for r in table):
            raise P.WireError(f"row ranges out of bounds: {table}")
        _, w = self.next_order({P.Kind.VECTOR}, step, "w_t", active=True)  # sent with TASK
        want = (sum(r[-1] - r[-2] for r in table),) \
            if self.store.transposed(step) else (self.block.shape[1],)
        if w is None or w.shape != want:
            raise P.WireError(f"w_t for step {step} has the wrong shape")
        self.rows_done[real] = self.rows_done.get(real, 0) + self.task(step, attempt, table, w)


class IdleClock:
    """Wall and CPU seconds spent idle (between an IDLE and the next order)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self.since: tuple[float, float] | None = None

    def start(self) -> None:
        self.since = (time.perf_counter(), time.process_time())

    def stop(self) -> None:
        if self.since is not None:
            self.wall += time.perf_counter() - self.since[0]
            self.cpu += time.process_time() - self.since[1]
            self.since = None


def machine_main(cfg: CECConfig, comm: MPI.Comm, phase: Phase, store: type[MachineStore],
                 faults: tuple[Fault, ...] = (), machine: int | None = None) -> None:
    stored = None
    if cfg.store:  # which machine this rank is, its block checked or repaired
        phase.set("setup")
        stored = open_store(cfg, comm)
        machine, store = stored.machine, DiskStore
    m = Machine(cfg, comm, faults, store, machine)
    m.stored = stored
    where = os.environ.get(PROFILE_ENV)
    if not where:
        m.run(phase)
        return
    import cProfile  # deferred: only with MPI_CODED_PROFILE_MACHINES (bench_scale --profile)

    prof = cProfile.Profile()
    try:
        prof.runcall(m.run, phase)
    finally:
        prof.dump_stats(os.path.join(where, f"machine_{m.rank}.prof"))
