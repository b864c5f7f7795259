"""A storage server of the coded job (server ``s`` on MPI rank ``s + 1``).

Per repetition it obeys the master's phases (SPEC B.2):

1. encode: compute its stored coded rows ``C_s = Psi[rows_s] A`` (real work);
2. map: ``Y_s = C_s [x_1..x_N]`` in chunks under the throttle / straggler
   model; report MAP_DONE; a MAP_END received mid-map stops it at once;
3. shuffle (finishers only): execute its part of the plan every finisher
   derives from ``(Q, extra)``: coded multicasts (sums of padded segments of
   its own values) and unicasts out; cancel and store what comes in;
4. reduce (reducers only): decode its outputs and send them to the master.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.placement import rank_of
from mpi_coded.coded.replay import ServerData
from mpi_coded.coded.shuffle import Block, ShufflePlan, shuffle_plan
from mpi_coded.faults import Fault, slow_factor
from mpi_coded.runtime import protocol as P
from mpi_coded.runtime.coded_common import Setup, build_setup, decode_map_end
from mpi_coded.runtime.faults import at_phase
from mpi_coded.runtime.guard import Phase
from mpi_coded.runtime.inbox import Inbox
from mpi_coded.runtime.wait import Backoff, DeadlineExceeded, deadline_in, poll_until

MASTER = 0
ENCODE, MAP, SHUFFLE, REDUCE = range(4)


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

    def run(self, inbox: Inbox, deadline: float) -> tuple[P.Header, np.ndarray | None] | None:
        """Map chunk by chunk; return the master's MAP_END if it came first."""
        job, field = self.setup.job, self.setup.field
        rows = self.coded.shape[0]
        cuts = np.linspace(0, rows, job.chunks + 1).round().astype(int)
        t0 = time.perf_counter()
        for c in range(job.chunks):
            a, b = int(cuts[c]), int(cuts[c + 1])
            t = time.perf_counter()
            if b > a:
                self.out[a:b] = field.matmul(self.coded[a:b], self.setup.X)
            self.compute_s += time.perf_counter() - t
            self.rows_done = b
            got = self._sleep_until(t0 + self.target * (c + 1) / job.chunks, inbox, deadline)
            if got is not None:
                return got
        return None

    @staticmethod
    def _sleep_until(t_end: float, inbox: Inbox, deadline: float
                     ) -> tuple[P.Header, np.ndarray | None] | None:
        backoff = Backoff()
        while True:
            got = inbox.test({P.Kind.MAP_END}, None, deadline)
            if got is not None:
                return got
            left = t_end - time.perf_counter()
            if left <= 0:
                return None
            time.sleep(min(left, backoff.delay))
            backoff.delay = min(backoff.hi, backoff.delay * 2)


def _segment_sum(setup: Setup, data: ServerData, segments: Any, length: int,
                 skip: int = -1) -> np.ndarray:
    """Sum (XOR over GF) of the zero-padded segments, leaving out index ``skip``."""
    field = setup.field
    out = field.zeros(length)
    for j, seg in enumerate(segments):
        if j == skip:
            continue
        vec = data.gather(seg.blocks)
        out[: len(vec)] = field.add(out[: len(vec)], vec)
    return out


def run_shuffle(comm: MPI.Comm, setup: Setup, plan: ShufflePlan, data: ServerData,
                server: int, rep: int, deadline: float) -> dict[str, Any]:
    """Send this server's multicasts and unicasts, receive and decode its own.

    Both ends derive the same plan, so every receive is posted up front with
    its known size (header and payload), in each sender's posting order: no
    message waits for a handshake.  Headers are still checked (kind,
    repetition, plan index, shape).
    """
    field = setup.field
    mc_send, uc_send = plan.sends(server)
    mc_recv, uc_recv = plan.receives(server)

    # Receives first: (sender, kind, index, size), in the sender's posting order.
    expected: list[tuple[int, P.Kind, int, int]] = []
    for i in mc_recv:
        mc = plan.multicasts[i]
        expected.append((mc.sender, P.Kind.MULTICAST, i, mc.length))
    for i in uc_recv:
        u = plan.unicasts[i]
        expected.append((u.sender, P.Kind.UNICAST, i, u.size))
    expected.sort(key=lambda e: (e[0], e[1] != P.Kind.MULTICAST, e[2]))
    posted = []
    for sender, kind, i, size in expected:
        hbuf = np.zeros(P.HEADER_WORDS, dtype=np.int64)
        pbuf = field.zeros(size)
        src = rank_of(sender)
        posted.append((sender, kind, i, hbuf, pbuf,
                       comm.Irecv(hbuf, source=src, tag=P.TAG_HEADER),
                       comm.Irecv(pbuf, source=src, tag=P.TAG_PAYLOAD)))

    reqs: list[MPI.Request] = []
    keep: list[np.ndarray] = []  # payloads must live until their sends complete
    sent_bytes = mc_values = uc_values = 0
    for i in mc_send:
        mc = plan.multicasts[i]
        payload = _segment_sum(setup, data, mc.segments, mc.length)
        keep.append(payload)
        mc_values += mc.length  # a multicast counts once (shared medium)
        for k in mc.receivers:
            reqs += P.isend(comm, rank_of(k), P.Kind.MULTICAST, rep, payload, aux=i)
            sent_bytes += int(payload.nbytes)
    for i in uc_send:
        u = plan.unicasts[i]
        vec = data.gather(u.blocks)
        keep.append(vec)
        uc_values += u.size
        reqs += P.isend(comm, rank_of(u.receiver), P.Kind.UNICAST, rep, vec, aux=i)
        sent_bytes += int(vec.nbytes)

    def take(sender: int, kind: P.Kind, i: int, hbuf: np.ndarray, vec: np.ndarray) -> None:
        h = P.parse_header(hbuf, rank_of(sender), {kind}, rep)
        if h.aux != i or h.shape != vec.shape:
            raise P.WireError(f"{kind.name} {h.aux} of shape {h.shape} from server {sender}, "
                              f"expected {i} of shape {vec.shape}")
        if kind == P.Kind.MULTICAST:
            mc = plan.multicasts[i]
            mine = mc.receivers.index(server)
            got = field.sub(vec, _segment_sum(setup, data, mc.segments, mc.length, skip=mine))
            own = mc.segments[mine]
            data.scatter(own.blocks, got[: own.size])
        else:
            data.scatter(plan.unicasts[i].blocks, vec)

    pending = list(posted)

    def progress() -> bool:
        still = []
        for item in pending:
            sender, kind, i, hbuf, pbuf, hreq, preq = item
            if hreq.Test() and preq.Test():
                take(sender, kind, i, hbuf, pbuf)
            else:
                still.append(item)
        pending[:] = still
        if not pending:
            reqs[:] = [r for r in reqs if not r.Test()]
            return not reqs
        return False

    try:
        poll_until(progress, deadline, "shuffle messages")
    except DeadlineExceeded:
        for item in pending:
            item[5].Cancel()
            item[6].Cancel()
        who = ", ".join(f"server {s} = rank {rank_of(s)}" for s in sorted({x[0] for x in pending}))
        raise DeadlineExceeded(f"timed out waiting for shuffle messages from {who}" if who else
                               "timed out waiting for this server's sends to complete") from None
    del keep
    return {"sent_values": mc_values + uc_values, "multicast_values": mc_values,
            "unicast_values": uc_values, "bytes_sent": sent_bytes}


def server_main(job: Any, comm: MPI.Comm, phase: Phase, faults: tuple[Fault, ...] = ()) -> None:
    rank = comm.Get_rank()
    server = rank - 1
    phase.set("setup")
    at_phase(faults, comm, "setup", None)
    setup = build_setup(job)
    setup.field.warm_up()
    pl = setup.placement
    rows = pl.stored_rows(server)
    deadline = deadline_in(job.timeout_s)
    inbox = Inbox(comm, MASTER)
    host = np.frombuffer(socket.gethostname().encode()[:200], dtype=np.uint8)
    P.send(comm, MASTER, P.Kind.READY, 0, host, deadline=deadline)
    slow = slow_factor(faults, rank)
    for rep in range(job.reps):
        phase.set("encode", rep)
        h, _ = inbox.recv({P.Kind.PHASE, P.Kind.STOP}, None, deadline_in(job.timeout_s),
                          "the master's next phase")
        if h.kind == P.Kind.STOP:
            break
        if h.aux != ENCODE or h.step != rep:
            raise P.WireError(f"expected encode of repetition {rep}, got phase {h.aux}")
        at_phase(faults, comm, "encode", rep)
        t = time.perf_counter()
        coded = setup.code.encode(setup.A, rows)
        enc_s = time.perf_counter() - t
        P.send(comm, MASTER, P.Kind.DONE, rep, np.array([enc_s]), aux=ENCODE,
               deadline=deadline_in(job.timeout_s))

        phase.set("map", rep)
        h, _ = inbox.recv({P.Kind.PHASE}, rep, deadline_in(job.timeout_s), "the map order")
        if h.aux != MAP:
            raise P.WireError(f"expected the map phase, got phase {h.aux}")
        at_phase(faults, comm, "map", rep)
        mr = MapRun(setup, server, coded, rep, slow)
        t = time.perf_counter()
        end = mr.run(inbox, deadline_in(job.timeout_s))
        map_wall = time.perf_counter() - t
        stopped = end is not None
        stats = np.array([mr.compute_s, map_wall, mr.target, mr.rows_done, len(rows),
                          float(stopped)])
        P.send(comm, MASTER, P.Kind.MAP_DONE, rep, stats, aux=int(stopped),
               deadline=deadline_in(job.timeout_s))
        if end is None:
            end = inbox.recv({P.Kind.MAP_END}, rep, deadline_in(job.timeout_s),
                             "the master's map-end decision")
        h, payload = end
        if h.step != rep:
            raise P.WireError(f"MAP_END for repetition {h.step}, expected {rep}")
        assert payload is not None
        Q, extra = decode_map_end(payload)
        if server not in Q + extra:
            continue  # not needed: stopped (or finished too late); wait for the next phase

        phase.set("shuffle", rep)
        at_phase(faults, comm, "shuffle", rep)
        t = time.perf_counter()
        plan = shuffle_plan(pl, MapEnd(Q, extra))
        plan_s = time.perf_counter() - t
        Y = {b: mr.out[i * pl.rows_per_batch:(i + 1) * pl.rows_per_batch]
             for i, b in enumerate(pl.server_batches[server])}
        data = ServerData(server, pl, Y, setup.field, job.params.N)
        t = time.perf_counter()
        sh = run_shuffle(comm, setup, plan, data, server, rep, deadline_in(job.timeout_s))
        sh_s = time.perf_counter() - t
        P.send(comm, MASTER, P.Kind.DONE, rep,
               np.array([sh_s, sh["multicast_values"], sh["unicast_values"], sh["bytes_sent"],
                         plan_s], dtype=np.float64), aux=SHUFFLE,
               deadline=deadline_in(job.timeout_s))
        if server not in Q:
            continue  # an extra server sends but does not reduce

        phase.set("reduce", rep)
        h, _ = inbox.recv({P.Kind.PHASE}, rep, deadline_in(job.timeout_s), "the reduce order")
        if h.aux != REDUCE:
            raise P.WireError(f"expected the reduce phase, got phase {h.aux}")
        at_phase(faults, comm, "reduce", rep)
        red = next(r for r in plan.reducers if r.server == server)
        slot_of = {}
        for b, brows in enumerate(pl.batch_rows):
            for i, r in enumerate(brows):
                slot_of[r] = (b, i)
        blocks = [Block(slot_of[r][0], slot_of[r][1], slot_of[r][1] + 1, red.out_start,
                        red.out_stop) for r in red.decode_rows]
        t = time.perf_counter()
        vals = data.gather(blocks, own_only=False).reshape(len(blocks), red.out_stop -
                                                            red.out_start)
        y = setup.code.decode(red.decode_rows, vals)
        dec_s = time.perf_counter() - t
        P.send(comm, MASTER, P.Kind.OUTPUT, rep, np.ascontiguousarray(y), aux=red.out_start,
               deadline=deadline_in(job.timeout_s))
        P.send(comm, MASTER, P.Kind.DONE, rep, np.array([dec_s]), aux=REDUCE,
               deadline=deadline_in(job.timeout_s))
    else:
        phase.set("stop")
        inbox.recv({P.Kind.STOP}, None, deadline_in(job.timeout_s), "the master's stop")
    P.send(comm, MASTER, P.Kind.BYE, job.reps, deadline=deadline_in(job.timeout_s))
