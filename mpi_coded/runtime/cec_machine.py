"""A storage machine of the elastic job (MPI rank ``n`` = machine ``n``).

Setup: receive the coded block ``X~_n`` once, warm the field up, report READY
(with the host name).  Then obey the master: TASK (row ranges + ``w_t``) ->
compute ``X~_n[rows] w_t`` under the throttle and send RESULT and META (both
echo the step and the attempt); IDLE -> compute nothing and wait politely
(CPU and wall time of idle periods are measured); STOP -> send STATS.
"""

from __future__ import annotations

import functools
import socket
import time

import numpy as np
from mpi4py import MPI

from mpi_coded.cec.config import CECConfig
from mpi_coded.faults import Fault, slow_factor
from mpi_coded.fields import Field, get_field
from mpi_coded.runtime import protocol as P
from mpi_coded.runtime.faults import at_phase
from mpi_coded.runtime.guard import Phase
from mpi_coded.runtime.inbox import Inbox
from mpi_coded.runtime.throttle import throttled
from mpi_coded.runtime.wait import deadline_in, wait_all

MASTER = 0


def _rows_times(field: Field, block: np.ndarray, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``X~_n[idx] . w``: the real work of a step."""
    return field.matmul(block[idx], w)


def machine_main(cfg: CECConfig, comm: MPI.Comm, phase: Phase,
                 faults: tuple[Fault, ...] = ()) -> None:
    rank = comm.Get_rank()
    field = get_field(cfg.field)
    speed = float(cfg.speeds[rank - 1]) / slow_factor(faults, rank)
    phase.set("setup")
    at_phase(faults, comm, "setup", None)
    field.warm_up()
    inbox = Inbox(comm, MASTER)
    _, block = inbox.recv({P.Kind.BLOCK}, 0, deadline_in(cfg.timeout_s),
                          "the coded block from the master")
    assert block is not None
    if block.shape != (cfg.rows_per_block, cfg.cols):
        raise P.WireError(f"coded block has shape {block.shape}, expected "
                          f"{(cfg.rows_per_block, cfg.cols)}")
    host = np.frombuffer(socket.gethostname().encode()[:200], dtype=np.uint8)
    P.send(comm, MASTER, P.Kind.READY, 0, host, deadline=deadline_in(cfg.timeout_s))

    idle_wall = idle_cpu = 0.0
    idle_since: tuple[float, float] | None = None
    rows_done: dict[int, int] = {}
    idle_steps: list[int] = []
    while True:
        phase.set("wait")
        h, ranges = inbox.recv({P.Kind.TASK, P.Kind.IDLE, P.Kind.STOP}, None,
                               deadline_in(cfg.timeout_s), "the master's next order")
        if idle_since is not None:
            idle_wall += time.perf_counter() - idle_since[0]
            idle_cpu += time.process_time() - idle_since[1]
            idle_since = None
        if h.kind == P.Kind.STOP:
            phase.set("stop")
            steps = sorted(set(rows_done) | set(idle_steps))
            stats = np.array([idle_wall, idle_cpu, len(idle_steps)], dtype=np.float64)
            table = np.array([[t, rows_done.get(t, 0), 1 if t in idle_steps else 0]
                              for t in steps], dtype=np.int64).reshape(-1, 3)
            P.send(comm, MASTER, P.Kind.STATS, h.step, stats, deadline=deadline_in(cfg.timeout_s))
            P.send(comm, MASTER, P.Kind.STATS, h.step, table, deadline=deadline_in(cfg.timeout_s))
            return
        if h.kind == P.Kind.IDLE:
            idle_steps.append(h.step)
            idle_since = (time.perf_counter(), time.process_time())
            continue
        step, attempt = h.step, h.aux
        phase.set("step", step)
        at_phase(faults, comm, "step", step)
        if ranges is None or ranges.ndim != 2 or ranges.shape[1] != 2:
            raise P.WireError(f"TASK for step {step} has no (k, 2) row ranges")
        _, w = inbox.recv({P.Kind.VECTOR}, step, deadline_in(cfg.timeout_s), "w_t")
        if w is None or w.shape != (cfg.cols,):
            raise P.WireError(f"w_t for step {step} has the wrong shape")
        idx = np.concatenate([np.arange(a, b) for a, b in ranges]) if len(ranges) else \
            np.zeros(0, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= cfg.rows_per_block):
            raise P.WireError(f"row ranges out of bounds: {ranges.tolist()}")
        work = functools.partial(_rows_times, field, block, idx, w)
        result, th = throttled(work, int(idx.size), cfg.t_row, speed)
        rows_done[step] = rows_done.get(step, 0) + int(idx.size)
        meta = np.array([th.compute_s, th.sleep_s, th.target_s, idx.size], dtype=np.float64)
        reqs = P.isend(comm, MASTER, P.Kind.RESULT, step, np.asarray(result, dtype=field.dtype),
                       aux=attempt)
        reqs += P.isend(comm, MASTER, P.Kind.META, step, meta, aux=attempt)
        wait_all(reqs, deadline_in(cfg.timeout_s), f"the master to take step {step}'s result")
