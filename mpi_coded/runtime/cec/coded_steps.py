"""The coded policies' products (``heterogeneous``, ``heterogeneous-tw``, ``cyclic``).

Setup: encode ``X~_n`` with the systematic MDS generator and send each machine
its block once (A.1; linreg: a block of ``X^T`` too).  Each product, in phases:

* **plan**: the step's plan (A.3-A.5, the transition-waste-aware layout, or the
  cyclic baseline; with ``S`` stragglers every row set on ``L + S`` machines);
* **order**: every planned machine its row sets and ``w``; the others IDLE;
* **collect**: until the step deadline (``deadline_factor * predicted +
  deadline_slack_s``); machines that miss it are sent CUT, treated as
  preempted for that step and the product is re-planned onto the others
  (``replanned``); they become suspects, left out of later plans until their
  late answer arrives (:mod:`mpi_coded.cec.suspects`).  With ``S > 0`` each
  row set is complete at its first ``L`` answers (a machine on probation's
  answers awaited too: its probe);
* **decode**: each row set from ``L`` answers with the cached ``G_P^{-1}`` (A.2);
* **verify**: ``y`` checked against ``X w`` (exactly, or Freivalds' sketch; ``verify_s``);
  when the check fails, a wrong answer is located and decoded around (A.10,
  :meth:`CodedSteps.around`: the spare answers awaited, the step asked again, the blocks
  checked), the machines still computing cut off only then (``cut_off``);
* **quarantine**: the machines named wrong are caught, their blocks checked and rebuilt
  when corrupt (:mod:`mpi_coded.runtime.cec.quarantine`); those on probation whose
  answers re-encode right are re-admitted;
* **record**: the step's record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.analysis.network import elastic_setup_traffic, elastic_step_traffic
from mpi_coded.cec import locate
from mpi_coded.cec.data import encode_blocks, encode_matrix
from mpi_coded.cec.decode import StepDecoder, decode_parts, decode_step
from mpi_coded.cec.estimate import step_time
from mpi_coded.cec.late import LateAnswers
from mpi_coded.cec.plan import PlanCache, StepPlan
from mpi_coded.cec.quarantine import READMITTED, StepQuarantine
from mpi_coded.cec.suspects import StepSuspects
from mpi_coded.cec.waste import transition_waste
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.results import ElasticStep, LinkBytes
from mpi_coded.runtime.cec.cluster import MachinePool, meta_spans, overrun, warn
from mpi_coded.runtime.cec.collect import Attempt, collect
from mpi_coded.runtime.cec.quarantine import catch, check_blocks, repair_from_peers
from mpi_coded.runtime.cec.steps import Clock, DataSent, Steps
from mpi_coded.runtime.cec.stores import CodedStore
from mpi_coded.runtime.cec.tasks import split_aux, task_tables
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import CannotGoOn
from mpi_coded.runtime.core.wait import DeadlineExceeded, wait_all


@dataclass
class Product:
    """One coded product of the job: its matrix (for verification) and decode buffers."""

    x: np.ndarray
    R: int
    dec: StepDecoder
    per_step: int = 1  # products per step (linreg: 2, on wire steps 2t - 1 and 2t)

    def first_vstep(self, t: int) -> int:
        return self.per_step * (t - 1) + 1


@dataclass
class Flight:
    """One product in flight: what its phases share."""

    t: int
    which: int
    prod: Product
    prev: StepPlan | None
    avail: list[int]
    S: int
    speeds: dict[int, Fraction]
    planned: StepPlan
    idle: list[int]
    start: float
    plan: StepPlan = field(init=False)
    plans: dict[int, StepPlan] = field(default_factory=dict)  # attempt -> its plan
    # re-planned attempts' answers (a machine missed the deadline): checked once verified
    earlier: list[tuple[StepPlan, locate.Answers, int]] = field(default_factory=list)
    attempt: int = 0
    late: list[int] = field(default_factory=list)
    dead: list[int] = field(default_factory=list)  # planned, and died (ulfm)
    reqs: list[MPI.Request] = field(default_factory=list)
    tasks: dict[int, np.ndarray] = field(default_factory=dict)
    deadline: float = 0.0
    att: Attempt = field(init=False)
    cut_off: list[int] = field(default_factory=list)
    collected: float = 0.0
    decoded: float = 0.0
    verify_s: float = 0.0  # the master's time checking decoded products
    wrong: list[locate.WrongAnswer] = field(default_factory=list)
    z: np.ndarray | None = None  # the decoded L x R rows (verified, or the last tried)
    probed: list[int] = field(default_factory=list)  # machines on probation that answered
    events: list[dict[str, Any]] = field(default_factory=list)  # quarantine events

    def __post_init__(self) -> None:
        self.plan = self.planned

    @property
    def vstep(self) -> int:
        """The product's step on the wire (linreg: ``2t - 1`` and ``2t``)."""
        return self.prod.first_vstep(self.t) + self.which


class CodedSteps(Steps):
    """Products of a coded policy, in phases (module docstring)."""

    store = CodedStore

    def __init__(self, cl: MachinePool, x: Any) -> None:
        super().__init__(cl, x)
        cfg, fld = self.cfg, self.field
        self.g = systematic_mds(fld, cfg.N, cfg.L)
        self.decoder = DecoderCache(fld, self.g)
        R = cfg.rows_per_block
        per_step = WORKLOADS.lookup(cfg.workload).products
        self.prods = [Product(x, R, StepDecoder(self.decoder, fld, cfg.L, R), per_step)]
        if per_step == 2:
            Rt = -(-cfg.cols // cfg.L)
            xt = np.ascontiguousarray(x.T) if isinstance(x, np.ndarray) else x.T
            self.prods.append(Product(xt, Rt,
                                      StepDecoder(self.decoder, fld, cfg.L, Rt), per_step))
        self.prev: list[StepPlan | None] = [None] * per_step
        self.plans = PlanCache()  # the step's plan and its oracle, each solved once
        self.sus = StepSuspects((), (), (), ())
        self.q = StepQuarantine((), (), ())
        self.env: list[int] = []
        self.late = LateAnswers(self.g, fld)  # late answers checked (mpi_coded.cec.late)
        cl.late_check = self.check_late
        self.flying = 0  # the wire step of the product in flight
        self.held: list[tuple[P.Header, np.ndarray]] = []  # its earlier attempts' late ones

    def setup(self, env: list[int]) -> DataSent:
        cfg, cl, fld = self.cfg, self.cl, self.field
        if cfg.store:  # the machines mapped their blocks from their own disks
            cl.links.handshake(cfg.timeout_s)
            return DataSent(0, 0, f"{len(cl.machines)} coded blocks of "
                            f"{cfg.rows_per_block}x{cfg.cols} {fld.name} from the store "
                            f"{cfg.store} (none sent)")
        coded = encode_blocks(cfg, fld, self.g, self.x)
        hard = cl.hard()
        reqs = []
        for n in cl.machines:
            reqs += cl.links.isend(n, P.Kind.BLOCK, 0, coded[n - 1])
        shapes = [coded[0].shape]
        if len(self.prods) == 2:  # and of X^T, for the gradient X^T z
            coded_t = encode_matrix(fld, self.g, cfg.L, self.x.T)
            for n in cl.machines:
                reqs += cl.links.isend(n, P.Kind.BLOCK, 1, coded_t[n - 1])
            shapes.append(coded_t[0].shape)
        cl.links.handshake(cfg.timeout_s)
        wait_all(reqs, hard, "machines to receive their coded blocks")
        return DataSent(int(coded.nbytes), int(coded[0].nbytes),
                     f"{cfg.N} coded blocks of {cfg.rows_per_block}x{cfg.cols} {fld.name}",
                     elastic_setup_traffic(cl.machines, shapes, fld.dtype.itemsize))

    def send_block(self, n: int) -> int:
        """A machine spawned to replace the lost machine ``n`` gets its coded block(s)
        (the same row of the MDS generator, encoded again); waits for its READY; the bytes
        sent."""
        cfg, cl, fld = self.cfg, self.cl, self.field
        blocks = [encode_matrix(fld, self.g[n - 1: n], cfg.L, self.x)[0]]
        if len(self.prods) == 2:
            blocks.append(encode_matrix(fld, self.g[n - 1: n], cfg.L, self.x.T)[0])
        reqs = []
        for i, b in enumerate(blocks):
            reqs += cl.links.isend(n, P.Kind.BLOCK, i, b)
        cl.links.handshake(cfg.timeout_s, who=[n])
        wait_all(reqs, cl.hard(), f"machine {n} to receive its coded block")
        return sum(int(b.nbytes) for b in blocks)

    def replay(self, envs: list[list[int]]) -> None:
        for env in envs:  # (heterogeneous-tw lays out against each previous plan)
            self.prev[0] = self.make(env, min(self.cfg.S, len(env) - self.cfg.L), self.prev[0])

    def begin(self, t: int, env: list[int]) -> list[int]:
        cfg = self.cfg
        self.q = self.cl.quarantine.for_step(t, env, cfg.L + cfg.S, cfg.L)
        self.env = env
        self.sus = self.cl.suspects.for_step(t, list(self.q.planned), cfg.L + cfg.S)
        if self.sus.forced:
            warn(f"step {t}: suspects {list(self.sus.forced)} planned anyway (fewer than "
                 f"L + S = {cfg.L + cfg.S} machines otherwise)")
        return list(self.sus.planned)

    def decoder_cache(self) -> dict[str, int]:
        return {"hits": self.decoder.hits, "misses": self.decoder.misses}

    def check_late(self, h: P.Header, arr: np.ndarray | None) -> None:
        """An answer that arrived after its step was over, re-encoded against the step's
        verified result when it is still kept (:mod:`mpi_coded.cec.late`); one of an
        earlier attempt of the product in flight is held until the product verifies."""
        if arr is None:
            return
        if h.step == self.flying:
            self.held.append((h, arr))
        elif h.kind == P.Kind.PART:
            attempt, f = split_aux(h.aux)
            self.late.part(h.step, attempt, h.source, f, arr)
        elif h.kind == P.Kind.RESULT:
            self.late.result(h.step, h.aux, h.source, arr)

    def late_wrong(self) -> list[locate.WrongAnswer]:
        return list(self.late.found)

    def kept(self, f: Flight) -> None:
        """Product ``f`` verified: kept for its late answers; the answers of its re-planned
        attempts and those held (an earlier attempt's, late) re-encoded against it."""
        assert f.z is not None
        self.late.keep(f.vstep, f.plans, f.z, f.t)
        for plan, answers, attempt in f.earlier:
            f.wrong += locate.wrong_answers(plan, answers, f.z, self.g, self.field, attempt,
                                            "unused")
        held, self.held, self.flying = self.held, [], 0
        for h, arr in held:
            self.check_late(h, arr)

    # -- what the plan knows --------------------------------------------------------------

    def make(self, avail: list[int], S: int, prev: StepPlan | None,
             R: int | None = None) -> StepPlan:
        return self.plans.plan(self.cfg.policy, self.cl.plan_speeds(), self.cfg.L, avail,
                               rows=R or self.cfg.rows_per_block, S=S, prev=prev)

    def predict(self, plan: StepPlan, R: int) -> float:
        """Seconds the plan should take, as far as the master knows the speeds."""
        if not self.cl.estimated:
            return self.cfg.predicted_s(plan.time, R)
        tau = self.cl.seconds_per_row()
        counts = plan.row_counts()
        return max((counts[n] * tau[n] for n in plan.available), default=0.0)

    # -- the phases -----------------------------------------------------------------------

    def product(self, t: int, which: int, w: np.ndarray, avail: list[int]
                ) -> tuple[ElasticStep, np.ndarray]:
        f = self.plan(t, which, avail)
        self.order(f, w)
        while missing := self.collect(f):
            self.replan(f, missing)
            self.order(f, w)
        y, cond, waited = self.decode(f)
        err = self.verify(f, y, w)
        if not self.field.verified(err):  # a wrong answer: located, decoded around (A.10)
            y, err, waited = self.around(f, w, y, err, waited)
        elif self.q.probes or f.att.per_set:
            self.probe(f, waited)
        if self.field.verified(err):  # its late answers are checked against it
            self.kept(f)
        self.finish(f)
        f.wrong += self.late.take()  # late answers of earlier steps found wrong meanwhile
        self.quarantine(f)
        rec = self.record(f, w, y, cond, waited, err)
        self.prev[which] = f.plan
        return rec, y

    def plan(self, t: int, which: int, avail: list[int]) -> Flight:
        cfg, prod = self.cfg, self.prods[which]
        self.flying, self.held = prod.first_vstep(t) + which, []
        S = min(cfg.S, len(avail) - cfg.L)
        speeds = self.cl.plan_speeds()
        planned = self.make(avail, S, self.prev[which], prod.R)
        idle = [n for n in self.cl.machines if n not in avail] if which == 0 else []
        return Flight(t, which, prod, self.prev[which], avail, S, speeds, planned, idle,
                      time.perf_counter())

    def order(self, f: Flight, w: np.ndarray) -> None:
        links = self.cl.links
        f.plans[f.attempt] = f.plan
        f.tasks = task_tables(f.plan, self.cfg.S > 0)
        vector = P.pack(P.Kind.VECTOR, f.vstep, w)  # the same w_t to each, packed once
        for n in f.plan.available:  # a machine's w_t with its TASK (it awaits it)
            task = P.pack(P.Kind.TASK, f.vstep, f.tasks[n], aux=f.attempt)
            f.reqs += links.isend_together(n, (task, vector))  # one bundle if they fit
        if f.attempt == 0:
            for n in f.idle:
                f.reqs += links.isend(n, P.Kind.IDLE, f.vstep)

    def collect(self, f: Flight, need_all: bool = False) -> list[int]:
        """Answers in until complete (``[]``) or the step deadline (who is missing);
        ``need_all``: every planned answer, the spare ones too."""
        cl = self.cl
        f.deadline = self.cfg.step_deadline(self.predict(f.plan, f.prod.R))
        probes = frozenset(self.q.probes) & set(f.plan.available)  # their answers awaited
        f.att = Attempt(f.plan, f.vstep, f.attempt, self.cfg.S > 0, need_all, probes)
        return collect(cl.links, cl.machines, f.att, soft=time.monotonic() + f.deadline,
                       hard=cl.hard(), on_late=cl.on_late)

    def replan(self, f: Flight, missing: list[int]) -> None:
        """Machines missed the deadline, or one died (``fault_tolerance = "ulfm"``): cut the
        unfinished, re-plan the product onto the others (without the late and the dead)."""
        cfg, links = self.cfg, self.cl.links
        unfinished = [n for n in f.plan.available if not f.att.finished(n)]
        f.reqs += links.send(unfinished, P.Kind.CUT, f.vstep, aux=f.attempt)
        dead = [n for n in missing if n in links.lost]  # died (ulfm): lost for good
        # a death ends the wait at once: the others still computing are not late
        late = [] if dead else missing
        f.late += late
        f.dead += dead
        f.earlier.append((f.plan, f.att.answers(), f.attempt))
        for n in late:
            self.cl.suspects.missed(n, f.t)
        f.avail = [n for n in f.avail if n not in late and n not in links.lost]
        if len(f.avail) < cfg.L:
            if dead:
                raise CannotGoOn(self.cl.too_few(f"step {f.t}"))
            raise DeadlineExceeded(
                f"step {f.t}: {links.name(late)} missed the step deadline "
                f"({f.deadline:.3f} s) and fewer than L={cfg.L} machines remain")
        if late:
            warn(f"step {f.t}: {links.name(late)} missed the deadline; re-planning onto "
                 f"{f.avail}")
        f.attempt += 1
        f.plan = self.make(f.avail, min(f.S, len(f.avail) - cfg.L), f.prev, f.prod.R)

    def decode(self, f: Flight) -> tuple[np.ndarray, float, list[list[int]]]:
        """``y`` from the first ``L`` answers of each row set (the machines still computing
        go on until the step is verified: :meth:`finish` cuts them off)."""
        att, plan = f.att, f.plan
        f.collected = time.perf_counter()
        if att.per_set:
            yb, _, waited = decode_parts(plan, att.parts, f.prod.dec, condition=False)
        else:
            yb, _ = decode_step(plan, att.results, f.prod.dec, condition=False)
            waited = [list(rs.machines) if rs.size else [] for rs in plan.sets]
        f.decoded = time.perf_counter()
        f.z = yb
        cond = f.prod.dec.condition()  # a diagnostic of the record, not part of decoding
        return yb.reshape(-1)[: f.prod.x.shape[0]], cond, waited

    def verify(self, f: Flight, y: np.ndarray, w: np.ndarray) -> float:
        """``y`` checked against ``X w`` (exactly, or Freivalds' sketch); the time it takes is
        the step's ``verify_s``."""
        t0 = time.perf_counter()
        err = self.check(y, f.prod.x, w)
        f.verify_s += time.perf_counter() - t0
        return float(err)

    def finish(self, f: Flight) -> None:
        """The step is over: the machines still computing are cut off, the orders are
        delivered, the speeds observed, the suspects accounted."""
        att = f.att
        f.cut_off = [n for n in f.plan.available if not att.finished(n)]
        if f.cut_off:
            f.reqs += self.cl.links.send(f.cut_off, P.Kind.CUT, f.vstep, aux=f.attempt)
        wait_all(f.reqs, self.cl.hard(), f"step {f.t} orders to be delivered")
        self.cl.observe(att.metas)
        if f.which == 0:  # once a step
            self.account(f)

    # -- wrong answers (A.10, :mod:`mpi_coded.cec.locate`) ----------------------------------

    def around(self, f: Flight, w: np.ndarray, y: np.ndarray, err: float,
               waited: list[list[int]]) -> tuple[np.ndarray, float, list[list[int]]]:
        """The check of ``y`` failed: wait for the spare answers, search for a decode that
        passes; failing that, ask the row sets again (one spare more) within the step.
        The wrong answers are named in :attr:`Flight.wrong`; ``y`` stays as it is (NOT
        VERIFIED) when too few correct answers exist."""
        tried = [self.spares(f)]
        found = self.search(f, w, tried[-1][1])
        if found is None and len(f.avail) > self.cfg.L:
            tried.append(self.reask(f, w, 1))
            found = self.search(f, w, tried[-1][1])
        if found is None and self.blocks_rebuilt(f, tried):  # a corrupt block: asked again
            tried.append(self.reask(f, w, 0))
            found = self.search(f, w, tried[-1][1], 0)
        if found is None:
            f.decoded = time.perf_counter()
            warn(f"step {f.t}: the decoded product failed its check and no decode from the "
                 f"answers passed: NOT VERIFIED (too few correct answers)")
            return y, err, waited
        z, y2, err2, skip, drop = found
        f.z = z
        how = "spare" if len(tried) == 1 else "re-asked"
        f.decoded = time.perf_counter()
        for plan, answers, attempt in tried:
            f.wrong += locate.wrong_answers(plan, answers, z, self.g, self.field, attempt,
                                            how)
        last = tried[-1][1]  # the machines each row set was decoded from (as decode_parts)
        used = [sorted([n for n in last.get(i, {}) if n not in skip and drop.get(i) != n]
                       [: self.cfg.L]) for i in range(len(f.plan.sets))]
        return y2, err2, used

    def probe(self, f: Flight, waited: list[list[int]]) -> None:
        """The step verified: the answers it did not decode from (the spare answers that
        arrived; a machine on probation's: its probe products) re-encoded against it; a
        wrong one is named like any other (``found``: ``unused`` or ``probe``)."""
        assert f.z is not None
        probes: locate.Answers = {}
        unused: locate.Answers = {}
        for i, got in f.att.answers().items():  # one pass over the step's answers
            for n, y in got.items():
                if n in self.q.probes:
                    probes.setdefault(i, {})[n] = y
                elif n not in waited[i]:
                    unused.setdefault(i, {})[n] = y
        for found, answers in (("probe", probes), ("unused", unused)):
            f.wrong += locate.wrong_answers(f.plan, answers, f.z, self.g, self.field,
                                            f.attempt, found)
        f.probed = sorted({n for got in probes.values() for n in got})

    def quarantine(self, f: Flight) -> None:
        """The machines named wrong are caught (their blocks checked, rebuilt when
        corrupt); the machines on probation whose probe was clean are re-admitted."""
        q = self.cl.quarantine
        named = sorted({a.machine for a in f.wrong})
        handled = {e["machine"] for e in f.events}  # caught already (a corrupt block)
        fresh = {a.machine for a in f.wrong  # a late answer of a time already caught: named
                 if a.step is None or not q.known(a.machine, a.step)}  # only, no strike
        if todo := [n for n in named if n not in handled and n in fresh]:
            f.events += catch(self.cl, self, todo, f.t, f.vstep)
        for n in f.probed:
            if n not in named and self.cl.quarantine.probed(n, True):
                f.events.append({"machine": n, "host": self.cl.links.host.get(n, "?"),
                                 "event": READMITTED})
                print(f"step {f.t}: machine {n} re-admitted (its probe products were "
                      "right)", flush=True)

    def rebuild_block(self, n: int, vstep: int, sound: list[int]) -> int:
        """Machine ``n``'s corrupt block rebuilt: in a job from a store from ``L`` of the
        ``sound`` machines (their blocks checked intact), else encoded again and sent; the
        bytes moved."""
        if not self.cfg.store:
            return self.send_block(n)
        cl = self.cl
        ok = [m for m in sound if m != n and m in cl.machines]
        if len(ok) < self.cfg.L:
            raise CannotGoOn(f"machine {n}'s block is corrupt and fewer than L = "
                             f"{self.cfg.L} machines with intact blocks can rebuild it")
        rank_of = {m: cl.links.link[m][1] for m in [n, *ok]}
        return repair_from_peers(cl, n, vstep, ok[: self.cfg.L], rank_of)

    def spares(self, f: Flight) -> tuple[StepPlan, locate.Answers, int]:
        """Wait (up to the step deadline) for the answers the attempt has not used yet."""
        att = f.att
        if att.per_set and not all(att.finished(n) for n in f.plan.available):
            att.want_all()
            collect(self.cl.links, self.cl.machines, att,
                    soft=time.monotonic() + f.deadline, hard=self.cl.hard(),
                    on_late=self.cl.on_late)
        return f.plan, att.answers(), f.attempt

    def blocks_rebuilt(self, f: Flight, tried: list[tuple[StepPlan, locate.Answers, int]]
                       ) -> bool:
        """No decode passed: every machine that answered checks its block; the corrupt ones
        are caught and rebuilt (True when there was one)."""
        who = sorted({n for _, answers, _ in tried for got in answers.values() for n in got})
        verdicts = check_blocks(self.cl, who, f.vstep)
        bad = [n for n, ok in verdicts.items() if not ok]
        if bad:
            f.events += catch(self.cl, self, bad, f.t, f.vstep, verdicts)
        return bool(bad)

    def reask(self, f: Flight, w: np.ndarray, extra: int
              ) -> tuple[StepPlan, locate.Answers, int]:
        """The product asked again of the available machines with ``extra`` spare answers
        more per row set (every answer awaited): a new attempt of the step."""
        cfg = self.cfg
        unfinished = [n for n in f.plan.available if not f.att.finished(n)]
        f.reqs += self.cl.links.send(unfinished, P.Kind.CUT, f.vstep, aux=f.attempt)
        f.attempt += 1
        f.plan = self.make(f.avail, min(f.plan.S + extra, len(f.avail) - cfg.L), f.prev,
                           f.prod.R)
        warn(f"step {f.t}: the decoded product failed its check; asking it again of "
             f"{list(f.plan.available)} with S = {f.plan.S}")
        self.order(f, w)
        self.collect(f, need_all=True)
        return f.plan, f.att.answers(), f.attempt

    def search(self, f: Flight, w: np.ndarray, answers: locate.Answers, fewest: int = 1
               ) -> tuple[np.ndarray, np.ndarray, float, frozenset[int], dict[int, int]
                          ] | None:
        """A decode of ``answers`` without up to ``S`` machines whose ``y`` passes the check:
        ``(Z, y, error, machines left out, answers dropped in one set)``."""
        out: list[tuple[np.ndarray, float]] = []
        rows = f.prod.x.shape[0]

        def accept(z: np.ndarray) -> bool:
            y = z.reshape(-1)[:rows]
            err = self.verify(f, y, w)
            out.append((y, err))
            return self.field.verified(err)

        found = locate.search(f.plan, answers, f.prod.dec, self.g, accept,
                              max(1, f.plan.S), fewest)
        if found is None:
            return None
        z, skip, drop = found
        return z, out[-1][0], out[-1][1], skip, drop

    def account(self, f: Flight) -> None:
        """Suspects: who was on time, who was cut off as the slowest too often."""
        sus = self.cl.suspects
        for n in f.plan.available:
            if n in f.cut_off:
                frac = f.att.delivered.get(n, 0) / max(1, f.plan.row_counts()[n])
                if sus.cut(n, f.t, frac):
                    warn(f"step {f.t}: machine {n} was cut off as the slowest more than "
                         f"{self.cfg.suspect_after} steps in a row; left out until it answers")
            else:
                sus.on_time(n)
                if n in self.sus.forced:
                    sus.heard(n)

    def record(self, f: Flight, w: np.ndarray, y: np.ndarray, cond: float,
               waited: list[list[int]], err: float) -> ElasticStep:
        cfg, att, plan, R = self.cfg, f.att, f.plan, f.prod.R
        waste = transition_waste(f.prev, plan)
        if over := overrun(att.metas):
            warn(f"step {f.t}: real compute exceeded the throttle target on machines {over}; "
                 "the speeds are not what the config says")
        true = self.cl.true_speeds(f.t, self.env)
        oracle = self.plans.plan(plan.policy, true, cfg.L, plan.available, rows=R, S=plan.S,
                                 prev=f.prev)
        return self.step_record(
            f.t, self.env, Clock(f.start, f.collected, f.decoded), att.metas, err, f.speeds,
            float(oracle.time) * R * cfg.t_row,
            float(step_time(dict(plan.load), true)) * R * cfg.t_row,
            available=list(plan.available), replanned=bool(f.late or f.dead), late=sorted(f.late),
            attempts=f.attempt + 1, load={str(n): str(v) for n, v in plan.load},
            rows={str(n): c for n, c in plan.row_counts().items()},
            sets=plan.to_dict()["sets"], predicted_s=self.predict(plan, R),
            predicted_planned_s=self.predict(f.planned, R), condition=cond,
            transition_waste=str(waste), transition_waste_rows=float(waste * R),
            bytes_step=self.traffic(f, w), S=plan.S, suspects=list(self.sus.left_out),
            suspects_forced=list(self.sus.forced), rejoined=list(self.sus.rejoined),
            waited_for=waited, cut_off=sorted(f.cut_off), link=self.link(f),
            verify_s=f.verify_s, wrong_answers=[a.to_dict() for a in f.wrong],
            quarantined=list(self.q.left_out), quarantine=f.events)

    def link(self, f: Flight) -> LinkBytes | None:
        """The product's ``link_bytes`` (the master and the machines that answered) beside
        the network model's bytes of its plan."""
        _, spans = meta_spans(f.att.metas, moved=False)
        plan = elastic_step_traffic(f.plan, f.prod.x.shape[1], self.field.dtype.itemsize,
                                    f.idle)
        return self.cl.link_record([("step", {0: self.cl.link_mark(), **spans})],
                                   {"step": plan})

    def traffic(self, f: Flight, w: np.ndarray) -> int:
        """Bytes of the product's orders and answers."""
        att = f.att
        return sum(int(r.nbytes) + int(w.nbytes) for r in f.tasks.values()) + \
            sum(int(r.nbytes) for r in att.results.values()) + \
            sum(int(y_.nbytes) for parts in att.parts.values() for y_ in parts.values())
