"""A storage server of the coded job (server ``s`` on MPI rank ``s + 1``).

Per repetition it obeys the master's phases (docs/theory.md, B.2):

1. encode: compute its stored coded rows ``C_s = Psi[rows_s] A`` (real work);
2. map: ``Y_s = C_s [x_1..x_N]`` in chunks under the throttle / straggler
   model; report MAP_DONE; a MAP_END received mid-map stops it at once;
3. shuffle (finishers only): execute its part of the plan every finisher
   derives from ``(Q, extra, unicast_rows)``: coded multicasts (sums of padded segments of
   its own values) and unicasts out; cancel and store what comes in;
4. reduce (reducers only): decode its outputs and send them to the master, unless the
   master abandons the repetition (ABANDON: a finisher died in the shuffle,
   ``fault_tolerance = "ulfm"``).
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from mpi_coded.coded import exchange
from mpi_coded.coded.job import (
    BCAST_SETUP_GROUPS,
    CodedJob,
    bcast_groups_any_q,
    map_chunk_cuts,
    multicast_levels,
)
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.phases import ENCODE, MAP, REDUCE, SHUFFLE
from mpi_coded.coded.replay import ServerData
from mpi_coded.coded.shuffle import ShufflePlan, shuffle_plan
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.faults import Answer, Fault, slow_factor
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
from mpi_coded.runtime.coded.transfer import SHUFFLE_MARGIN_S, GroupComms, ShuffleTransfer
from mpi_coded.runtime.core import linkstats
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.faults import answer_rng, at_phase
from mpi_coded.runtime.core.guard import Phase
from mpi_coded.runtime.core.inbox import Inbox, Msg
from mpi_coded.runtime.core.memory import prefault
from mpi_coded.runtime.core.peers import MasterLink, world_hosts
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
        """Map chunk by chunk from the first row not done (a resumed map: the rows left);
        return the master's MAP_END (or STOP) if it came first."""
        job, field = self.setup.job, self.setup.field
        rows = self.coded.shape[0]
        cuts = map_chunk_cuts(rows, job.chunks)
        t0 = time.perf_counter()
        c0 = int(np.searchsorted(cuts, self.rows_done))  # resumed: from the rows not done
        for c in range(min(c0, job.chunks), job.chunks):
            a, b = int(cuts[c]), int(cuts[c + 1])
            t = time.perf_counter()
            if b > a:
                self.out[a:b] = field.matmul(self.coded[a:b], self.setup.X)
            self.compute_s += time.perf_counter() - t
            self.rows_done = b
            got: list[Msg] = []

            def stop_order(got: list[Msg] = got) -> bool:
                msg = inbox.test({P.Kind.MAP_END, P.Kind.STOP}, None, deadline)
                if msg is not None:
                    got.append(msg)
                return bool(got)

            if sleep_until(t0 + self.target * (c + 1 - c0) / job.chunks, stop_order):
                return got[0]
        return None


class CodedServer:
    """Server ``s`` (rank ``s + 1``) of one coded job: setup, then per repetition the phases
    the master orders (encode, map; shuffle for a finisher; reduce for a reducer), then stop."""

    def __init__(self, job: CodedJob, comm: MPI.Comm, phase: Phase,
                 faults: tuple[Fault, ...] = ()) -> None:
        self.job, self.comm, self.phase, self.faults = job, comm, phase, faults
        self.rank = comm.Get_rank()
        self.server = self.rank - 1
        self.timeout = job.timeout_s
        # a server left out of the shuffle or the reduce waits for the master's next order
        # while the master waits, each with its deadline, for the shuffle (and its
        # margin), the outputs, the reduce and the late map reports
        self.sat_out = 4 * self.timeout + SHUFFLE_MARGIN_S
        self.mapped: tuple[int, MapRun] | None = None
        """The last repetition's map (its coded rows with it), for a resumed map
        (:meth:`next_order`); dropped at the next encode order."""
        self.kept: tuple[int, np.ndarray, ShuffleTransfer] | None = None
        """The last shuffle's map output and transfer (what it received), for an AUDIT;
        dropped at the next encode order."""

    def run(self) -> None:
        """The whole job, until the master's STOP; BYE.  The master may run a repetition
        again (its outputs were wrong): its next order is then the encode of the same
        repetition, or its map, resumed (:meth:`next_order`)."""
        self.start()
        wait = self.timeout  # for the master's next order
        last = -1
        while True:
            order = self.next_order(last, wait)
            if order is None:
                break  # the master's STOP
            last, resumed = order
            coded = resumed.coded if resumed is not None else self.encode(last)
            mapped = self.map(last, coded, resumed)
            if mapped is None:
                break  # the master stopped (too few servers left to end the map)
            mr, end = mapped
            self.mapped = (last, mr)
            wait = self.sat_out
            if self.server not in end.finishers:
                continue  # not needed: stopped (or finished too late); wait for the next phase
            plan, data = self.shuffle(last, mr, end)
            if self.server not in end.Q:
                continue  # an extra server sends but does not reduce
            if self.reduce(last, plan, data):
                wait = self.timeout
        self.stop()

    def next_order(self, last: int, wait: float) -> tuple[int, MapRun | None] | None:
        """The master's next order, waited for ``wait`` seconds: the encode of repetition
        ``last + 1`` (or ``last`` again: it is run again), as ``(rep, None)``; the map of
        ``last`` resumed (its outputs were wrong, and the servers left decode without the
        wrong one: every server completes its map), as ``(last, its MapRun)``; None: STOP.
        An AUDIT of ``last`` in between is answered (:meth:`audited`)."""
        self.phase.set("encode", last + 1)
        while True:
            h, _ = self.master.recv({P.Kind.PHASE, P.Kind.STOP, P.Kind.AUDIT}, None, wait,
                                    "the master's next phase")
            if h.kind == P.Kind.STOP:
                self.phase.set("stop")
                return None
            if h.kind == P.Kind.AUDIT:
                self.audited(h.step)
                continue
            self.kept = None  # no AUDIT of an earlier repetition comes after this order
            if h.aux == MAP and h.step == last and self.mapped is not None \
                    and self.mapped[0] == last:
                return last, self.mapped[1]
            self.mapped = None
            if h.aux != ENCODE or h.step not in (last, last + 1) or h.step >= self.job.reps:
                raise P.WireError(f"expected encode of repetition {last + 1} (or {last} "
                                  f"again), got phase {h.aux} of repetition {h.step}")
            return h.step, None

    def audited(self, rep: int) -> None:
        """The master found repetition ``rep``'s outputs wrong: send it this finisher's map
        output (AUDITED aux 0) and the shuffle payloads it received (aux 1), as it kept
        them (mpi_coded.coded.locate)."""
        kept = self.kept if self.kept is not None and self.kept[0] == rep else None
        out = None if kept is None else np.ascontiguousarray(kept[1])
        got = None if kept is None else kept[2].received_values()
        self._report(P.Kind.AUDITED, rep, out, 0)
        self._report(P.Kind.AUDITED, rep, got if got is not None and got.size else None, 1)

    def _enter(self, name: str, rep: int | None, order: tuple[int, str] | None = None) -> None:
        """Enter phase ``name`` (for error messages): wait for the master's ``order``
        (phase index, what it is) if given, then apply the faults injected there."""
        self.phase.set(name, rep)
        if order is not None:
            assert rep is not None
            h, _ = self.master.recv({P.Kind.PHASE}, rep, self.timeout, order[1])
            if h.aux != order[0]:
                raise P.WireError(f"expected {order[1]}, got phase {h.aux}")
        at_phase(self.faults, self.comm, name, rep)

    def _lie(self, phase: str, rep: int, values: np.ndarray,
             rows: np.ndarray | None = None) -> None:
        """The faults of this server that change an answer (``corrupt:RANK:map`` /
        ``shuffle``, ``lie:RANK``) fire on ``values`` (1-D, a view: the map output, or
        every payload about to be sent), in place; ``rows``: the coded rows ``values``
        was mapped from (a liar maps them again with its wrong input vectors); nothing is
        built on a healthy server's path."""
        if not any(f.rank == self.rank for f in self.faults):
            return
        field, x = self.setup.field, self.setup.X
        product = None
        if rows is not None:
            coded: np.ndarray = rows  # (a name of its own: older mypy narrows no closure)

            def product(v: np.ndarray) -> np.ndarray:  # the same rows, other vectors
                return field.matmul(coded, v.reshape(x.shape)).reshape(-1)
        at_phase(self.faults, self.comm, phase, rep, Answer(
            values, field.order, answer_rng(self.rank), None if rows is None else
            x.reshape(-1), product), answers_only=True)

    def _lie_sending(self, rep: int, transfer: ShuffleTransfer) -> None:
        """``corrupt:RANK:shuffle``: one value of the payloads about to be sent changed,
        never a multicast's padding (:meth:`ShuffleTransfer.carried`)."""
        if any(f.rank == self.rank for f in self.faults):
            flat, used = transfer.outgoing(), transfer.carried()
            values = flat[used]
            self._lie("shuffle", rep, values)
            flat[used] = values

    def _report(self, kind: P.Kind, rep: int, arr: np.ndarray | None, aux: int) -> None:
        self.master.send(kind, rep, arr, aux=aux, timeout=self.timeout)

    def start(self) -> None:
        """Setup: the same placement, code and data as the master; READY."""
        job = self.job
        self._enter("setup", None)
        self.setup = setup = build_setup(job)
        setup.field.warm_up(job.params.largest_product)
        setup.code.warm_up()
        self.rows = setup.placement.stored_rows(self.server)
        prefault(working_bytes(job, setup.field, len(self.rows)))
        self.master = MasterLink(self.comm)
        self.hosts = world_hosts(self.comm, self.timeout)  # with the master's: names peers
        # bcast: the group communicators; every group of every Q at setup when they are few
        self.groups = GroupComms(self.comm) if job.multicast == "bcast" else None
        if self.groups is not None and bcast_groups_any_q(job.params) <= BCAST_SETUP_GROUPS:
            self.groups.create_all(job.params.K, multicast_levels(job.params), self.server)
        self.master.ready(self.timeout)
        self.slow = slow_factor(self.faults, self.rank)

    def encode(self, rep: int) -> np.ndarray:
        """This server's coded rows ``C_s = Psi[rows_s] A`` (the order came:
        :meth:`next_order`)."""
        self.phase.set("encode", rep)
        at_phase(self.faults, self.comm, "encode", rep)
        link0 = linkstats.read()
        code = self.setup.code
        t = time.perf_counter()
        coded = code.encode(self.setup.A, self.rows)
        self._report(P.Kind.DONE, rep, ENCODE_STATS.pack(
            encode_s=time.perf_counter() - t, encoder=mask(code.encoders),
            peak_rss_mb=peak_rss_mb(), **linkstats.span_values(link0, linkstats.read())),
            ENCODE)
        return coded

    def map(self, rep: int, coded: np.ndarray, resumed: MapRun | None = None
            ) -> tuple[MapRun, MapEnd] | None:
        """Map under the throttle until done or told to stop (``resumed``: the rows it
        had not done); the master's map end (None: the master said STOP instead, too few
        servers left to end the map)."""
        if resumed is None:
            self._enter("map", rep, (MAP, "the map order"))
        else:  # the order came (next_order); its faults at the entry fired the first time
            self.phase.set("map", rep)
        link0 = linkstats.read()
        mr = resumed or MapRun(self.setup, self.server, coded, rep, self.slow)
        done0 = mr.rows_done
        t = time.perf_counter()
        end = mr.run(self.master.inbox, deadline_in(self.timeout))
        if end is not None and end[0].kind == P.Kind.STOP:
            return None
        stopped = end is not None
        self._lie("map", rep, mr.out[done0:mr.rows_done].reshape(-1),
                  coded[done0:mr.rows_done])
        self._report(P.Kind.MAP_DONE, rep, MAP_STATS.pack(
            compute_s=mr.compute_s, wall_s=time.perf_counter() - t, target_s=mr.target,
            rows_done=mr.rows_done, rows=len(self.rows), stopped=float(stopped),
            peak_rss_mb=peak_rss_mb(), **linkstats.span_values(link0, linkstats.read())),
            int(stopped))
        if end is None:
            end = self.master.recv({P.Kind.MAP_END, P.Kind.STOP}, rep, self.timeout,
                                   "the master's map-end decision")
        h, payload = end
        if h.kind == P.Kind.STOP:
            return None
        if h.step != rep or payload is None:
            raise P.WireError(f"MAP_END for repetition {h.step}, expected {rep}")
        got = decode_map_end(payload)
        if self.groups is not None:  # every server, so a group's members free it together
            self.groups.keep_within(got.Q)
        return mr, got

    def shuffle(self, rep: int, mr: MapRun, end: MapEnd) -> tuple[ShufflePlan, ServerData]:
        """This finisher's part of the plan every finisher derives from ``(Q, extra)``."""
        self._enter("shuffle", rep)
        link0 = linkstats.read()
        pl = self.setup.placement
        t = time.perf_counter()
        plan = shuffle_plan(pl, end)
        plan_s = time.perf_counter() - t
        data = ServerData.from_map_output(self.server, pl, mr.out, self.setup.field,
                                          self.job.params.N)
        made = (0, 0.0) if self.groups is None else (self.groups.created,
                                                     self.groups.create_s)
        t = time.perf_counter()
        transfer = ShuffleTransfer(self.comm, plan, data, self.server, rep, self.groups,
                                   hosts=self.hosts)
        transfer.post()
        self._lie_sending(rep, transfer)
        transfer.send()
        transfer.finish(deadline_in(self.timeout))
        shuffle_s = time.perf_counter() - t
        self.kept = (rep, mr.out, transfer)
        if self.groups is not None:
            made = (self.groups.created - made[0], self.groups.create_s - made[1])
        self._report(P.Kind.DONE, rep, SHUFFLE_STATS.pack(
            shuffle_s=shuffle_s, multicast_values=transfer.multicast_values,
            unicast_values=transfer.unicast_values, bytes_sent=transfer.bytes_sent,
            plan_s=plan_s, groups_created=made[0], groups_s=made[1],
            messages_missing=len(transfer.missing), peak_rss_mb=peak_rss_mb(),
            **linkstats.span_values(link0, linkstats.read())), SHUFFLE)
        return plan, data

    def reduce(self, rep: int, plan: ShufflePlan, data: ServerData) -> bool:
        """Decode this reducer's outputs and send them to the master; False when the
        master abandoned the repetition instead (a finisher died in the shuffle)."""
        self.phase.set("reduce", rep)
        h, _ = self.master.recv({P.Kind.PHASE, P.Kind.ABANDON}, rep, self.timeout,
                                "the reduce order")
        if h.kind == P.Kind.ABANDON:
            return False
        if h.aux != REDUCE:
            raise P.WireError(f"expected the reduce order, got phase {h.aux}")
        at_phase(self.faults, self.comm, "reduce", rep)
        link0 = linkstats.read()
        red = next(r for r in plan.reducers if r.server == self.server)
        t = time.perf_counter()
        try:
            y = exchange.reduce_outputs(red, data, self.setup.code)
        except (NotDecodable, ConfigError) as exc:  # a plan or protocol bug: never a guess
            raise NotDecodable(f"reducer server {self.server} (rank {self.rank}) cannot decode "
                               f"outputs {red.out_start}..{red.out_stop - 1}: {exc}") from None
        dec_s = time.perf_counter() - t
        self._report(P.Kind.OUTPUT, rep, np.ascontiguousarray(y), red.out_start)
        del y
        self._report(P.Kind.DONE, rep, REDUCE_STATS.pack(
            decode_s=dec_s, decoder=mask(self.setup.code.decoders),
            peak_rss_mb=peak_rss_mb(), **linkstats.span_values(link0, linkstats.read_sent())),
            REDUCE)
        return True

    def stop(self) -> None:
        if self.groups is not None:
            self.groups.free()
        self.master.send(P.Kind.BYE, self.job.reps, timeout=self.timeout)


def server_main(job: CodedJob, comm: MPI.Comm, phase: Phase,
                faults: tuple[Fault, ...] = ()) -> None:
    CodedServer(job, comm, phase, faults).run()
