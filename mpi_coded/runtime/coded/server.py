"""A storage server of the coded job (server ``s`` on MPI rank ``s + 1``).

Per repetition it obeys the master's phases (docs/theory.md, B.2):

1. encode: compute its stored coded rows ``C_s = Psi[rows_s] A`` (real work);
2. map: ``Y_s = C_s [x_1..x_N]`` in chunks under the throttle / straggler
   model; report MAP_DONE; a MAP_END received mid-map stops it at once;
3. shuffle (finishers only): execute its part of the plan every finisher
   derives from ``(Q, extra)``: coded multicasts (sums of padded segments of
   its own values) and unicasts out; cancel and store what comes in;
4. reduce (reducers only): decode its outputs and send them to the master.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.coded import exchange
from mpi_coded.coded.job import map_chunk_cuts
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.phases import ENCODE, MAP, REDUCE, SHUFFLE
from mpi_coded.coded.replay import ServerData
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.faults import Fault, slow_factor
from mpi_coded.runtime.coded.setup import (
    ENCODE_STATS,
    MAP_STATS,
    REDUCE_STATS,
    SHUFFLE_STATS,
    Setup,
    build_setup,
    decode_map_end,
    mask,
    peak_rss_mb,
    working_bytes,
)
from mpi_coded.runtime.coded.transfer import GroupComms, ShuffleTransfer
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.faults import at_phase
from mpi_coded.runtime.core.guard import Phase
from mpi_coded.runtime.core.inbox import Inbox, Msg
from mpi_coded.runtime.core.memory import prefault
from mpi_coded.runtime.core.peers import MasterLink
from mpi_coded.runtime.core.wait import deadline_in, sleep_until


class MapRun:
    """The chunked, throttled map of one repetition."""

    def __init__(self, setup: Setup, server: int, coded: np.ndarray, rep: int,
                 slow: float = 1.0) -> None:
        self.setup = setup
        self.coded = coded
        self.target = setup.job.map_target(server, coded.shape[0], rep) * slow
        self.out = setup.field.zeros((coded.shape[0], setup.job.params.N))
        self.compute_s = 0.0
        self.rows_done = 0

    def run(self, inbox: Inbox, deadline: float) -> Msg | None:
        """Map chunk by chunk; return the master's MAP_END if it came first."""
        job, field = self.setup.job, self.setup.field
        rows = self.coded.shape[0]
        cuts = map_chunk_cuts(rows, job.chunks)
        t0 = time.perf_counter()
        for c in range(job.chunks):
            a, b = int(cuts[c]), int(cuts[c + 1])
            t = time.perf_counter()
            if b > a:
                self.out[a:b] = field.matmul(self.coded[a:b], self.setup.X)
            self.compute_s += time.perf_counter() - t
            self.rows_done = b
            got: list[Msg] = []

            def stop_order(got: list[Msg] = got) -> bool:
                msg = inbox.test({P.Kind.MAP_END}, None, deadline)
                if msg is not None:
                    got.append(msg)
                return bool(got)

            if sleep_until(t0 + self.target * (c + 1) / job.chunks, stop_order):
                return got[0]
        return None


def server_main(job: Any, comm: MPI.Comm, phase: Phase, faults: tuple[Fault, ...] = ()) -> None:
    rank = comm.Get_rank()
    server = rank - 1
    timeout = job.timeout_s
    phase.set("setup")
    at_phase(faults, comm, "setup", None)
    setup = build_setup(job)
    setup.field.warm_up()
    setup.code.warm_up()
    pl = setup.placement
    rows = pl.stored_rows(server)
    prefault(working_bytes(job, setup.field, len(rows)))
    master = MasterLink(comm)
    master.ready(timeout)
    slow = slow_factor(faults, rank)
    groups = GroupComms(comm) if job.multicast == "bcast" else None  # bcast: group comms

    def expect_phase(which: int, rep: int, what: str) -> None:
        h, _ = master.recv({P.Kind.PHASE}, rep, timeout, what)
        if h.aux != which:
            raise P.WireError(f"expected {what}, got phase {h.aux}")

    for rep in range(job.reps):
        phase.set("encode", rep)
        h, _ = master.recv({P.Kind.PHASE, P.Kind.STOP}, None, timeout, "the master's next phase")
        if h.kind == P.Kind.STOP:
            break
        if h.aux != ENCODE or h.step != rep:
            raise P.WireError(f"expected encode of repetition {rep}, got phase {h.aux}")
        at_phase(faults, comm, "encode", rep)
        t = time.perf_counter()
        coded = setup.code.encode(setup.A, rows)
        master.send(P.Kind.DONE, rep,
                    ENCODE_STATS.pack(encode_s=time.perf_counter() - t,
                                      encoder=mask(setup.code.encoders),
                                      peak_rss_mb=peak_rss_mb()),
                    aux=ENCODE, timeout=timeout)

        phase.set("map", rep)
        expect_phase(MAP, rep, "the map order")
        at_phase(faults, comm, "map", rep)
        mr = MapRun(setup, server, coded, rep, slow)
        t = time.perf_counter()
        end = mr.run(master.inbox, deadline_in(timeout))
        map_wall = time.perf_counter() - t
        stopped = end is not None
        stats = MAP_STATS.pack(compute_s=mr.compute_s, wall_s=map_wall,
                               target_s=mr.target, rows_done=mr.rows_done,
                               rows=len(rows), stopped=float(stopped), peak_rss_mb=peak_rss_mb())
        master.send(P.Kind.MAP_DONE, rep, stats, aux=int(stopped), timeout=timeout)
        if end is None:
            end = master.recv({P.Kind.MAP_END}, rep, timeout, "the master's map-end decision")
        h, payload = end
        if h.step != rep or payload is None:
            raise P.WireError(f"MAP_END for repetition {h.step}, expected {rep}")
        Q, extra = decode_map_end(payload)
        if groups is not None:  # every server, so a group's members free it together
            groups.keep_within(Q)
        if server not in Q + extra:
            continue  # not needed: stopped (or finished too late); wait for the next phase

        phase.set("shuffle", rep)
        at_phase(faults, comm, "shuffle", rep)
        t = time.perf_counter()
        plan = shuffle_plan(pl, MapEnd(Q, extra))
        plan_s = time.perf_counter() - t
        data = ServerData.from_map_output(server, pl, mr.out, setup.field, job.params.N)
        t = time.perf_counter()
        transfer = ShuffleTransfer(comm, plan, data, server, rep, groups)
        transfer.post()
        transfer.send()
        transfer.finish(deadline_in(timeout))
        master.send(P.Kind.DONE, rep, SHUFFLE_STATS.pack(
            shuffle_s=time.perf_counter() - t, multicast_values=transfer.multicast_values,
            unicast_values=transfer.unicast_values, bytes_sent=transfer.bytes_sent,
            plan_s=plan_s, peak_rss_mb=peak_rss_mb()), aux=SHUFFLE, timeout=timeout)
        if server not in Q:
            continue  # an extra server sends but does not reduce

        phase.set("reduce", rep)
        expect_phase(REDUCE, rep, "the reduce order")
        at_phase(faults, comm, "reduce", rep)
        red = next(r for r in plan.reducers if r.server == server)
        t = time.perf_counter()
        try:
            y = exchange.reduce_outputs(red, data, setup.code)
        except (NotDecodable, ConfigError) as exc:  # a plan or protocol bug: never a guess
            raise NotDecodable(f"reducer server {server} (rank {rank}) cannot decode outputs "
                               f"{red.out_start}..{red.out_stop - 1}: {exc}") from None
        dec_s = time.perf_counter() - t
        master.send(P.Kind.OUTPUT, rep, np.ascontiguousarray(y), aux=red.out_start,
                    timeout=timeout)
        del y
        master.send(P.Kind.DONE, rep, REDUCE_STATS.pack(
            decode_s=dec_s, decoder=mask(setup.code.decoders), peak_rss_mb=peak_rss_mb()),
            aux=REDUCE, timeout=timeout)
    else:
        phase.set("stop")
        master.recv({P.Kind.STOP}, None, timeout, "the master's stop")
    if groups is not None:
        groups.free()
    master.send(P.Kind.BYE, job.reps, timeout=timeout)
