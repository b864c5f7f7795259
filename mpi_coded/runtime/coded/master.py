"""The master (rank 0) of the coded matrix-vector job (docs/theory.md, B.2).

Per repetition, every phase is started by the master's order and timed by
the master until the last server reports: encode (all ``K``), map (until the
map-end rule holds on the real finishing order; then MAP_END tells everyone
``Q`` and the extra servers, and the others stop at their next chunk),
shuffle (until every finisher has sent and received its part of the plan),
reduce (until every reducer's decoded outputs are in).  The master then
verifies every ``y_i`` against the direct ``A x_i`` and appends one JSON line.

:class:`CodedMaster` has one method per phase (:meth:`~CodedMaster.encode`,
:meth:`~CodedMaster.map`, :meth:`~CodedMaster.shuffle`, :meth:`~CodedMaster.reduce`,
:meth:`~CodedMaster.record`); what one repetition measures travels between them in a
:class:`~mpi_coded.runtime.coded.lines.Repetition`.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterable

from mpi4py import MPI

from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.locate import WrongOutput, locate
from mpi_coded.coded.mapend import map_end, map_phase_done
from mpi_coded.coded.phases import ENCODE, MAP, REDUCE, SHUFFLE
from mpi_coded.coded.placement import rank_of
from mpi_coded.coded.quarantine import LOST, NEEDED, ServerQuarantine
from mpi_coded.coded.shuffle import ShufflePlan, settled_end, shuffle_plan
from mpi_coded.results import LastWord, ResultsWriter, jsonable
from mpi_coded.runtime.coded import lines
from mpi_coded.runtime.coded.lines import Repetition
from mpi_coded.runtime.coded.setup import (
    ENCODE_STATS,
    MAP_STATS,
    REDUCE_STATS,
    SHUFFLE_STATS,
    Verifier,
    build_setup,
    encode_map_end,
    padding_warning,
    working_bytes,
)
from mpi_coded.runtime.coded.transfer import SHUFFLE_MARGIN_S
from mpi_coded.runtime.core import records, ulfm
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import Phase, Terminated, TooFewLeft
from mpi_coded.runtime.core.inbox import Msg
from mpi_coded.runtime.core.memory import prefault
from mpi_coded.runtime.core.peers import Peers, world_hosts
from mpi_coded.runtime.core.run import run_info
from mpi_coded.runtime.core.wait import DeadlineExceeded, deadline_in, wait_all

MAX_ATTEMPTS = 3
"""Attempts of a repetition whose decoded outputs are wrong: the first and two re-runs
(docs/coded.md "A server that answers wrong"); the last one's line is written verified
or not."""


def progress(rep: int, phase: str, seconds: float, what: str) -> None:
    """One progress line per phase on rank 0 (long jobs take minutes)."""
    print(f"  rep {rep} {phase:<7} {seconds:9.3f} s  {what}".rstrip(), flush=True)


def stats_of(msg: Msg, record: records.StatsLayout) -> dict[str, float]:
    """The statistics a server's message carries, by field name."""
    return record.unpack(msg[1], msg[0].source)


class CodedMaster:
    """Rank 0 of one coded job: setup, then per repetition encode, map, shuffle, reduce and
    record, then stop."""

    def __init__(self, job: CodedJob, comm: MPI.Comm, phase: Phase, out: str | None) -> None:
        self.job, self.comm, self.phase, self.out = job, comm, phase, out
        self.p = job.params
        self.servers = list(range(self.p.K))
        self.late_map = {s: -1 for s in self.servers}  # repetition whose MAP_DONE is to come
        self.all_ok = True
        self.totals: list[float] = []  # every repetition's total_s
        self.lost: list[int] = []  # servers found dead, in order
        self.abandoned: list[int] = []  # repetitions a finisher's death ended
        self.wrong = 0  # wrong map outputs and payloads named
        self.reruns = 0  # attempts run again (their outputs were wrong)
        self.quarantine = ServerQuarantine(job.quarantine_reps, job.mercurial_strikes)
        self.events: dict[str, int] = {}  # quarantine events over the job, by kind
        self.lost_wrong: list[int] = []  # servers lost for answering wrong, in order

    # ---------------------------------------------------------------- talking to servers

    def _stale(self, r: int, h: P.Header) -> bool:
        """A MAP_DONE the previous repetition left behind (a server that answered late)."""
        if h.kind == P.Kind.MAP_DONE and h.step == self.late_map[r - 1]:
            self.late_map[r - 1] = -1
            return True
        return False

    def collect(self, who: list[int], kind: P.Kind, rep: int, what: str,
                aux: int | None = None, margin: float = 0.0) -> dict[int, Msg]:
        """Every server of ``who``'s next ``kind`` message (the job's timeout, plus
        ``margin``, is hard)."""
        got, _ = self.peers.collect(
            [rank_of(s) for s in who], [kind], rep, aux=aux,
            hard=deadline_in(self.job.timeout_s + margin),
            what=f"{what} (timeout {self.job.timeout_s} s)", stale=self._stale)
        return {r - 1: msgs[0] for r, msgs in got.items()}

    def soft_collect(self, who: list[int], kind: P.Kind, rep: int,
                     seconds: float) -> dict[int, Msg]:
        """What ``who`` send within ``seconds``; the silent ones are left out."""
        t_end = deadline_in(seconds)
        got, _ = self.peers.collect([rank_of(s) for s in who], [kind], rep, soft=t_end,
                                    hard=t_end + 1.0, what=kind.name, stale=self._stale)
        return {r - 1: msgs[0] for r, msgs in got.items() if msgs}

    def order(self, who: list[int], kind: P.Kind, rep: int, aux: int) -> None:
        self.peers.order([rank_of(s) for s in who], kind, rep, aux, self.job.timeout_s)

    def alive(self) -> list[int]:
        """The servers not found dead (``fault_tolerance = "ulfm"``: a dead server is lost
        for good, its stored rows with it)."""
        return [s for s in self.servers if rank_of(s) not in self.peers.lost]

    def dead(self, who: list[int]) -> list[int]:
        return [s for s in who if rank_of(s) in self.peers.lost]

    def abandon(self, r: Repetition, phase: str, dead: list[int]) -> None:
        """Servers ``dead`` died in ``phase`` and the repetition cannot get its outputs:
        it ends here, and the job goes on with the next one (:meth:`record`)."""
        who = self.peers.name(rank_of(s) for s in dead) if dead else "a sender"
        r.abandoned = (phase, f"{who} died in the {phase}")

    # ---------------------------------------------------------------- the job

    def run(self) -> int:
        """The whole job; the exit status (1: a decoded output did not match, too few
        servers were left, or every repetition was abandoned)."""
        self.start()
        rep = 0
        try:
            for rep in range(self.job.reps):
                status = self.repetition(rep)
                if status is not None:
                    return status
        except Terminated as exc:  # the launcher ends the job (Open MPI: a host lost)
            if ulfm.enabled():
                self.peers.detect()
            gone = self.peers.name(rank_of(s) for s in self.dead(self.servers))
            why = f"rep {rep}: {exc}" + (f"; servers found dead: {gone}" if gone else "")
            self.end_early(why)
            raise Terminated(why) from None
        return self.stop()

    def repetition(self, rep: int) -> int | None:
        """Repetition ``rep``, run again (up to :data:`MAX_ATTEMPTS` in all) while its
        outputs are wrong; an exit status when the job ends here (too few servers)."""
        r = self.quarantined(Repetition(rep))
        while True:
            try:
                self.encode(r)
                self.map(r)
            except TooFewLeft as exc:  # the results say so, then the job ends
                self.end_early(str(exc))
                # the servers left stop by themselves and this rank ends with status
                # 1: no MPI_Abort, which after deaths once made mpiexec's status 0
                self.order(self.alive(), P.Kind.STOP, rep, 0)
                self.soft_collect(self.alive(), P.Kind.BYE, self.job.reps,
                                  self.job.timeout_s)
                print(f"mpi-coded: error: rank 0 ({socket.gethostname()}) in phase "
                      f"{self.phase}: {exc}", file=sys.stderr, flush=True)
                return 1
            self.shuffle(r)
            if r.abandoned is None:
                self.reduce(r)
            if self.record(r):
                return None
            r = self.again(r)

    def again(self, r: Repetition) -> Repetition:
        """The next attempt of ``r``'s repetition: without the servers named wrong so far
        when the servers left can end the map (a wrong server is then a non-finisher, as a
        straggler is), decoded from the spare servers: no encode, every server's map
        resumed where it stopped (the finishers' outputs, checked right, are kept); else
        run again whole with every server (a mercurial one may be right this time)."""
        named = sorted({w.server for w in r.wrong})
        rest = [s for s in self.alive() if s not in named and s not in r.quarantined]
        without = named if named and map_phase_done(self.setup.placement, rest) else []
        self.reruns += 1
        return Repetition(r.rep, attempt=r.attempt + 1, without=without, wrong=list(r.wrong),
                          rerun_s=r.rerun_s + time.perf_counter() - r.t[0],
                          resumed=bool(without), quarantined=r.quarantined,
                          probation=r.probation)

    def quarantined(self, r: Repetition) -> Repetition:
        """``r`` with the servers its map end leaves out from the start (caught answering
        wrong in the last ``quarantine_reps`` repetitions, or lost for it) where the
        servers left can end the map; the others on probation
        (:class:`~mpi_coded.coded.quarantine.ServerQuarantine`)."""
        q = self.quarantine.for_rep(r.rep, self.alive(),
                                    lambda rest: map_phase_done(self.setup.placement, rest))
        r.quarantined, r.probation = list(q.left_out), list(q.probation)
        return r

    def judge(self, r: Repetition, ok: bool) -> None:
        """The quarantine's events of ``r``'s last attempt: every server named wrong in
        the repetition is caught (lost at its ``mercurial_strikes``-th catch where the
        servers left can end the map without it, else ``needed``); a finisher on
        probation in a verified repetition, named nothing, is re-admitted."""
        named = sorted({w.server for w in r.wrong})
        for s in named:
            rest = [x for x in self.alive() if x != s and x not in self.quarantine.lost]
            event = self.quarantine.caught(
                s, r.rep, map_phase_done(self.setup.placement, rest))
            self.event(r, s, event)
            if event == LOST or (event == NEEDED and self.quarantine.strikes[s]
                                 == self.quarantine.strikes_lost):  # one warning each
                self.lost_wrong += [s] if event == LOST else []
                print(f"mpi-coded: warning: rep {r.rep}: {self.peers.name([rank_of(s)])} "
                      f"named wrong in {self.quarantine.strikes[s]} repetitions "
                      "(mercurial_strikes): " + (
                          "lost for the job, the job goes on without it" if event == LOST
                          else "the servers left cannot end the map without it: it stays"
                               " in, every repetition checked"), file=sys.stderr, flush=True)
        for s in r.end.finishers if ok else ():
            back = None if s in named else self.quarantine.clean(s)
            if back is not None:
                self.event(r, s, back)

    def event(self, r: Repetition, s: int, event: str) -> None:
        """Record quarantine event ``event`` of server ``s`` in ``r``'s line and the job's
        counts."""
        rank = rank_of(s)
        r.events.append({"server": s, "rank": rank, "host": self.peers.host.get(rank, ""),
                         "event": event})
        self.events[event] = self.events.get(event, 0) + 1

    def end_early(self, why: str) -> None:
        """The summary of a job that ends before its last repetition, saying ``why``."""
        self.writer.write(lines.summary_line(
            self.job.reps, False, self.totals, self.lost + self.dead_since(), self.abandoned,
            ended_early=why, wrong=self.wrong, reruns=self.reruns, events=self.events,
            lost_wrong=self.lost_wrong))
        self.writer.close()
        if self.last is not None:
            self.last.done()

    def provisional(self, after: str) -> None:
        """The summary the watcher writes if rank 0 ends here without its own."""
        if self.last is not None:
            lost = self.lost + (self.dead_since() if hasattr(self, "peers") else [])
            self.last.provisional(jsonable(lines.summary_line(
                self.job.reps, self.all_ok, self.totals, lost, self.abandoned,
                wrong=self.wrong, reruns=self.reruns, events=self.events,
                lost_wrong=self.lost_wrong).to_dict()), after)

    def dead_since(self) -> list[int]:
        """The servers found dead since the last repetition's record."""
        return [s for s in self.dead(self.servers) if s not in self.lost]

    def start(self) -> None:
        """Setup: the same placement, code and data as every server, the config line, the
        verifier, READY from every server, the banner."""
        job, p = self.job, self.p
        self.phase.set("setup")
        self.setup = build_setup(job)
        self.setup.field.warm_up(p.largest_product)
        self.setup.code.warm_up()  # the map-end rule may decide with the code (LT)
        prefault(working_bytes(job, self.setup.field, p.m, copies=3))  # reducers' outputs
        warning = padding_warning(p, self.setup.placement)
        if warning:
            print(f"mpi-coded: warning: {warning}", file=sys.stderr, flush=True)
        self.writer = ResultsWriter(self.out)
        self.writer.write(lines.config_line(job, run_info(self.comm)))
        self.last = LastWord(self.out) if self.out else None  # rank 0 killed: it ends the file
        self.provisional("before its first repetition")
        t_verify = time.perf_counter()
        self.verifier = Verifier(self.setup)  # the direct product (or its projections)
        t_verify = time.perf_counter() - t_verify
        self.peers = Peers(self.comm, [rank_of(s) for s in self.servers],
                           label=lambda r: f"server {r - 1} = rank {r}")
        world_hosts(self.comm, job.timeout_s)  # the servers learn each other's hosts
        self.peers.handshake(job.timeout_s)
        code = self.setup.code
        print(f"coded job: scheme={p.scheme} K={p.K} q={p.q} mu={p.mu} m={p.m} n={p.n} "
              f"N={p.N} T={p.T} field={self.setup.field.name} straggler={job.straggler}",
              flush=True)
        print(f"  setup: code {type(getattr(code, 'sub', code)).__name__} "
              f"(n={code.layout.n}, k={code.layout.k}, partitions={code.layout.T}), "
              f"verification {self.verifier.method} ({t_verify:.2f} s)", flush=True)
        print(f"{'rep':>3} {'Q':<20} {'extra':<8} {'encode_s':>9} {'map_s':>8} "
              f"{'shuffle_s':>9} {'reduce_s':>9} {'load':>8} {'ok':>3}", flush=True)

    def encode(self, r: Repetition) -> None:
        """Every server encodes its stored coded rows (not in a resumed attempt: they hold
        them, :meth:`again`)."""
        self.phase.set("encode", r.rep)
        r.mark()
        if r.resumed:
            r.mark()
            progress(r.rep, "encode", 0.0, "none: the map is resumed without "
                     + ",".join(map(str, r.without)))
            return
        alive = self.alive()
        self.order(alive, P.Kind.PHASE, r.rep, ENCODE)
        enc = self.collect(alive, P.Kind.DONE, r.rep, "encode", aux=ENCODE)
        seconds = r.mark()
        r.encode = {s: stats_of(enc[s], ENCODE_STATS) for s in alive if s in enc}
        progress(r.rep, "encode", seconds, f"encoder {lines.algorithms(r.encode, 'encoder')}")

    def map(self, r: Repetition) -> None:
        """Map until the map-end rule holds on the real finishing order; tell everyone."""
        self.phase.set("map", r.rep)
        self.order(self.alive(), P.Kind.PHASE, r.rep, MAP)

        def finished(done: Iterable[int]) -> list[int]:  # a server dead since is no finisher,
            return [x - 1 for x in done  # nor one named wrong in an earlier attempt or
                    if x not in self.peers.lost  # repetition (quarantined)
                    and x - 1 not in r.without and x - 1 not in r.quarantined]

        try:
            got, _ = self.peers.collect(
                [rank_of(s) for s in self.alive()], [P.Kind.MAP_DONE], r.rep,
                hard=deadline_in(self.job.timeout_s), what="map", stale=self._stale,
                until=lambda done: map_phase_done(self.setup.placement, finished(done)))
        except DeadlineExceeded as exc:
            raise DeadlineExceeded(f"{exc}: too few servers finished their map within "
                                   f"{self.job.timeout_s} s") from None
        r.map = {x - 1: stats_of(msgs[0], MAP_STATS) for x, msgs in got.items()}
        r.finished = finished(got)
        if not map_phase_done(self.setup.placement, r.finished):  # the dead left too few
            raise TooFewLeft(
                f"rep {r.rep}: {self.peers.name(rank_of(s) for s in self.dead(self.servers))}"
                f" died; the {len(r.finished)} servers left cannot end the map")
        end = map_end(self.setup.placement, r.finished)
        seconds = r.mark()
        progress(r.rep, "map", seconds, f"Q={','.join(map(str, end.Q))}"
                 + (f" extra={','.join(map(str, end.extra))}" if end.extra else "")
                 + (f" quarantined={','.join(map(str, r.quarantined))}"
                    if r.quarantined else ""))
        # lt: the unicast counts' search, once, in the shuffle's time (MapEnd.unicast_rows)
        r.end = end = settled_end(self.setup.placement, end)
        reqs = self.peers.send([rank_of(s) for s in self.servers], P.Kind.MAP_END, r.rep,
                               encode_map_end(end))
        wait_all(reqs, deadline_in(self.job.timeout_s), "MAP_END to be delivered")

    def shuffle(self, r: Repetition) -> None:
        """Wait for every finisher to have sent and received its part of the plan.

        A finisher that cannot be reached stops the others' shuffles too, and only they
        know whom they miss: the master waits :data:`SHUFFLE_MARGIN_S` beyond their
        deadline, so that their error (naming the silent servers and hosts) ends the job.
        Under ``fault_tolerance = "ulfm"`` a finisher that dies is not waited for: the
        finishers left end their shuffle without its messages, and when a reducer is dead
        or misses one the repetition is abandoned (the reducers left are told, ABANDON)."""
        self.phase.set("shuffle", r.rep)
        finishers = list(r.end.finishers)
        sh = self.collect(finishers, P.Kind.DONE, r.rep, "shuffle", aux=SHUFFLE,
                          margin=SHUFFLE_MARGIN_S)
        seconds = r.mark()
        r.shuffle = {s: stats_of(sh[s], SHUFFLE_STATS) for s in finishers if s in sh}
        short = [s for s in r.end.Q
                 if s not in r.shuffle or r.shuffle[s]["messages_missing"] > 0]
        if short:
            if ulfm.enabled():
                self.peers.detect()
            self.abandon(r, "shuffle", self.dead(finishers))
            self.order([s for s in r.end.Q if s in r.shuffle], P.Kind.ABANDON, r.rep, 0)
            assert r.abandoned is not None
            progress(r.rep, "shuffle", seconds, f"abandoned: {r.abandoned[1]}")
            return
        progress(r.rep, "shuffle", seconds, "")

    def reduce(self, r: Repetition) -> None:
        """Every reducer decodes its outputs and sends them (a reducer that dies before its
        outputs are in abandons the repetition, ``fault_tolerance = "ulfm"``)."""
        self.phase.set("reduce", r.rep)
        reducers = list(r.end.Q)
        self.order(reducers, P.Kind.PHASE, r.rep, REDUCE)
        r.outputs = self.collect(reducers, P.Kind.OUTPUT, r.rep, "decoded outputs")
        seconds = r.mark()
        red = self.collect(reducers, P.Kind.DONE, r.rep, "reduce", aux=REDUCE)
        r.reduce = {s: stats_of(red[s], REDUCE_STATS) for s in reducers if s in red}
        without = [s for s in reducers if s not in r.outputs]
        if without:
            self.abandon(r, "reduce", without)
            assert r.abandoned is not None
            progress(r.rep, "reduce", seconds, f"abandoned: {r.abandoned[1]}")
            return
        progress(r.rep, "reduce", seconds, f"decoder {lines.algorithms(r.reduce, 'decoder')}")

    def late_maps(self, r: Repetition) -> None:
        """Servers told to stop report their map at their next chunk; a stalled one is not
        waited for beyond a grace period (its report is dropped when it comes)."""
        late = [s for s in self.alive() if s not in r.map]
        grace = min(self.job.timeout_s, 1.0 + 2 * r.seconds(1))
        for s, msg in self.soft_collect(late, P.Kind.MAP_DONE, r.rep, grace).items():
            r.map[s] = stats_of(msg, MAP_STATS)
        r.unresponsive = [s for s in late if s not in r.map]
        for s in r.unresponsive:
            self.late_map[s] = r.rep

    def verify(self, r: Repetition) -> tuple[bool, float]:
        """Assemble ``Y`` from the reducers' outputs and check it against ``A X``."""
        y = self.setup.field.zeros((self.p.m, self.p.N))
        for h, val in r.outputs.values():
            assert val is not None
            y[:, h.aux:h.aux + val.shape[1]] = val
        t_check = time.perf_counter()
        err = self.verifier.max_error(y)
        ok = self.setup.field.verified(err)
        progress(r.rep, "verify", time.perf_counter() - t_check,
                 f"{self.verifier.method}: {'ok' if ok else 'WRONG'}")
        return ok, err

    def record(self, r: Repetition) -> bool:
        """The late map reports, verification, the repetition's line and table row; False
        (and no line) when its outputs are wrong and it is to run again (:meth:`wrong_outputs`)."""
        self.late_maps(r)
        plan = shuffle_plan(self.setup.placement, r.end) if r.abandoned is None else None
        ok, err = self.verify(r) if plan is not None else (False, 0.0)
        if plan is not None and not ok and self.wrong_outputs(r, plan):
            return False
        self.judge(r, ok)
        r.lost = self.dead_since()
        r.lost_at = {s: self.peers.lost[rank_of(s)] for s in r.lost}
        self.lost += r.lost
        for s in r.lost:
            print(f"mpi-coded: warning: rep {r.rep}: {self.peers.name([rank_of(s)])} died: "
                  "lost, the job goes on without it", file=sys.stderr, flush=True)
        hosts = {"0": socket.gethostname(), **{str(k): v for k, v in self.peers.host.items()}}
        if plan is None:
            assert r.abandoned is not None
            phase, why = r.abandoned
            self.abandoned.append(r.rep)
            print(f"mpi-coded: warning: rep {r.rep}: {why}: the repetition ends without its "
                  "outputs; the job goes on with the next", file=sys.stderr, flush=True)
            self.writer.write(lines.abandoned_line(self.job, self.setup.field.name, r, hosts))
            self.provisional(f"after repetition {r.rep}")
            print(f"{r.rep:>3} {','.join(map(str, r.end.Q)):<20} "
                  f"{','.join(map(str, r.end.extra)):<8} abandoned in the {phase}", flush=True)
            return True
        line = lines.repetition_line(self.job, self.setup.field.name, r, plan,
                                     self.verifier.method, ok, err, hosts)
        if line.load_check is not None:
            print(f"mpi-coded: error: rep {r.rep}: {line.load_check}: NOT VERIFIED",
                  file=sys.stderr, flush=True)
        ok = line.verified
        self.all_ok = self.all_ok and ok
        self.writer.write(line)
        self.totals.append(line.total_s)
        self.provisional(f"after repetition {r.rep}")
        print(f"{r.rep:>3} {','.join(map(str, r.end.Q)):<20} "
              f"{','.join(map(str, r.end.extra)):<8} "
              f"{line.encode_s:>9.4f} {line.map_s:>8.4f} {line.shuffle_s:>9.4f} "
              f"{line.reduce_s:>9.4f} {line.load_measured:>8.4f} "
              f"{'yes' if ok else 'NO':>3}", flush=True)
        return True

    def wrong_outputs(self, r: Repetition, plan: ShufflePlan) -> bool:
        """``r``'s decoded outputs are wrong: name the servers whose map output or shuffle
        payload made them (:meth:`audit`), added to ``r.wrong``; whether the repetition
        runs again (fewer than :data:`MAX_ATTEMPTS` attempts so far)."""
        t = time.perf_counter()
        found = self.audit(r, plan)
        r.wrong += found
        self.wrong += len(found)
        again = r.attempt + 1 < MAX_ATTEMPTS
        named = "; ".join(f"{self.peers.name([rank_of(w.server)])}: {w}" for w in found)
        progress(r.rep, "locate", time.perf_counter() - t, named or "nothing found")
        print(f"mpi-coded: warning: rep {r.rep} (attempt {r.attempt + 1}): decoded outputs "
              f"wrong: {named or 'no wrong map output or payload found (unlocated)'}; "
              + ("the repetition runs again" if again else
                 f"NOT VERIFIED after {MAX_ATTEMPTS} attempts, the job goes on"),
              file=sys.stderr, flush=True)
        return again

    def audit(self, r: Repetition, plan: ShufflePlan) -> list[WrongOutput]:
        """Every finisher's map output and the payloads it received (AUDIT, AUDITED),
        checked against what the master recomputes (:func:`mpi_coded.coded.locate.locate`)."""
        fin = [s for s in r.end.finishers if rank_of(s) not in self.peers.lost]
        self.order(fin, P.Kind.AUDIT, r.rep, 0)
        got, _ = self.peers.collect(
            [rank_of(s) for s in fin], [P.Kind.AUDITED, P.Kind.AUDITED], r.rep,
            hard=deadline_in(self.job.timeout_s), stale=self._stale,
            what=f"the finishers' map outputs and payloads (timeout {self.job.timeout_s} s)")
        maps, received = {}, {}
        field = self.setup.field
        for x, ((h0, out), (h1, recv)) in got.items():
            if (h0.aux, h1.aux) != (0, 1):
                raise P.WireError(f"AUDITED from rank {x}: aux {h0.aux}, {h1.aux}, "
                                  "expected 0, 1")
            if out is not None:
                maps[x - 1] = out
            received[x - 1] = recv if recv is not None else field.zeros(0)
        s = self.setup
        return locate(plan, s.placement, s.code, field, s.A, s.X, maps,
                      {k: v for k, v in received.items() if k in r.end.Q}, r.attempt)

    def stop(self) -> int:
        """STOP to every server, the summary line, BYE from every server."""
        job = self.job
        self.phase.set("stop")
        alive = self.alive()
        self.order(alive, P.Kind.STOP, job.reps, 0)
        ended = job.reps - len(self.abandoned)
        all_ok = self.all_ok and ended > 0
        self.writer.write(lines.summary_line(job.reps, all_ok, self.totals, self.lost,
                                             self.abandoned, wrong=self.wrong,
                                             reruns=self.reruns, events=self.events,
                                             lost_wrong=self.lost_wrong))
        self.writer.close()
        if self.last is not None:
            self.last.done()
        bye = self.soft_collect(alive, P.Kind.BYE, job.reps, job.timeout_s)
        if len(bye) < len(self.alive()):
            missing = (rank_of(s) for s in self.alive() if s not in bye)
            raise DeadlineExceeded(f"{self.peers.name(missing)} did not stop within "
                                   f"{job.timeout_s} s (results are complete)")
        if not self.all_ok:
            print("mpi-coded: error: not every repetition verified (decoded outputs against "
                  "A x_i, and the load against the scheme's own)", file=sys.stderr)
            return 1
        if not ended:
            print(f"mpi-coded: error: every one of the {job.reps} repetitions was abandoned "
                  "(a finisher died in each): no output was decoded", file=sys.stderr)
            return 1
        return 0


def master_main(job: CodedJob, comm: MPI.Comm, phase: Phase, out: str | None) -> int:
    return CodedMaster(job, comm, phase, out).run()

