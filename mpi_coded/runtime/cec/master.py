"""The master (rank 0) of the elastic job: the job's phases and the step loop.

Setup: build ``X`` (seeded, or from ``.npy``) and hand it to the policy's runtime phases
(:attr:`mpi_coded.cec.policy.ElasticPolicy.steps`), which send the machines their data
once (:class:`~mpi_coded.runtime.cec.coded_steps.CodedSteps`: the coded blocks;
:class:`~mpi_coded.runtime.cec.uncoded_steps.UncodedSteps`: the uncoded rows).  Then one
step loop for every policy: each step's products run through the policy's phases (plan,
order, collect, decode, record;
:mod:`mpi_coded.runtime.cec.steps`), the workload carries ``w`` from step to
step (:class:`~mpi_coded.cec.workloads.Iterate`: power and linreg update it
whatever the policy), and every step appends one
:class:`~mpi_coded.results.ElasticStep` line.  At the end: the workload's
check against numpy on the uncoded ``X``, STOP, the machines' statistics, and
the :class:`~mpi_coded.results.ElasticSummary` line.  Nothing is re-sent to a
machine when the available set changes (the uncoded baseline moves rows: that is
its cost).

Reliability and the cluster as it is: step deadlines, re-planning, suspects,
stragglers and estimated speeds (:mod:`mpi_coded.runtime.cec.coded_steps`,
:mod:`mpi_coded.runtime.cec.cluster`); late answers are recognised by (step,
attempt) and dropped (:mod:`mpi_coded.runtime.cec.collect`).
"""

from __future__ import annotations

import dataclasses
import os
import resource
import sys
import time
from fractions import Fraction
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.data import make_data, step_vector
from mpi_coded.cec.workloads import Iterate
from mpi_coded.errors import PluginError
from mpi_coded.faults import Fault
from mpi_coded.fields import Field
from mpi_coded.results import (
    ElasticConfig,
    ElasticSetup,
    ElasticStep,
    ElasticSummary,
    JoinedMachine,
    LastWord,
    ResultsWriter,
    jsonable,
)
from mpi_coded.runtime.cec.cluster import MachinePool, payload, warn
from mpi_coded.runtime.cec.collect import drain
from mpi_coded.runtime.cec.join import spawn_machine
from mpi_coded.runtime.cec.steps import Steps
from mpi_coded.runtime.cec.storage import StoreRun, open_store, store_line
from mpi_coded.runtime.core import linkstats, records
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import CannotGoOn, Phase
from mpi_coded.runtime.core.run import run_info
from mpi_coded.runtime.core.wait import DeadlineExceeded, wait_all
from mpi_coded.store import checkpoint
from mpi_coded.store.manifest import Manifest
from mpi_coded.store.sketch import Sketch, Sketched, Streamed
from mpi_coded.store.source import NpyRows


class Table:
    """A readable table on rank 0's stdout while the job runs."""

    HEAD = (f"{'step':>4} {'available':<18} {'pred_s':>8} {'wall_s':>8} {'ratio':>6} "
            f"{'decode_ms':>9} {'max_err':>9} {'waste':>7} ok")

    def __init__(self) -> None:
        print(self.HEAD, flush=True)

    def row(self, rec: ElasticStep) -> None:
        avail = ",".join(str(a) for a in rec.available)
        ratio = rec.wall_s / rec.predicted_s if rec.predicted_s > 0 else float("nan")
        note = f"  replanned without {rec.late}" if rec.replanned and rec.late else ""
        if rec.suspects:
            note += f"  suspects {rec.suspects} left out"
        if rec.rejoined:
            note += f"  rejoined {rec.rejoined}"
        if rec.cut_off:
            note += f"  cut off {rec.cut_off}"
        if rec.lost:
            note += f"  lost {[e['machine'] for e in rec.lost]} (died)"
        if rec.joined:
            note += f"  joined {[e['machine'] for e in rec.joined]} (new)"
        if rec.stand_ins:
            note += f"  stand-ins {rec.stand_ins}"
        if rec.wrong_answers:
            wrong = sorted({a["machine"] for a in rec.wrong_answers})
            how = ", ".join(sorted({a["found"] + (f" of step {a['step']}" if "step" in a
                                                             else "")
                                    for a in rec.wrong_answers}))
            note += f"  wrong answers of {wrong} ({how})"
        if rec.quarantined:
            note += f"  quarantined {rec.quarantined}"
        events = [f"{e['machine']} {e['event']}" for e in rec.quarantine
                  if e["event"] != "caught"]
        if events:
            note += f"  ({', '.join(events)})"
        print(f"{rec.step:>4} {avail:<18} {rec.predicted_s:>8.4f} {rec.wall_s:>8.4f} "
              f"{ratio:>6.3f} {rec.decode_s * 1e3:>9.3f} {rec.max_error:>9.2e} "
              f"{rec.transition_waste:>7} {'yes' if rec.verified else 'NO'}{note}",
              flush=True)


@dataclasses.dataclass
class Totals:
    """What the summary says of the steps done, summed as each is done: the summary (and
    the provisional one handed to the watcher after every step) costs the same at step 10
    and at step 10 000."""

    steps: int = 0
    verified: bool = True
    replanned: list[int] = dataclasses.field(default_factory=list)
    wall_s: float = 0.0
    predicted_s: float = 0.0
    overhead_s: float = 0.0
    oracle_s: float = 0.0
    true_s: float = 0.0
    max_ratio: float | None = None  # wall over predicted, steps with no late machine
    worst_condition: float = 1.0
    waste: Fraction = Fraction(0)  # transition waste
    wrong: int = 0  # wrong answers found
    master_s: float = 0.0  # the master's time outside the steps' wall_s
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # quarantine

    def add(self, r: ElasticStep) -> None:
        self.steps += 1
        self.wrong += len(r.wrong_answers) + (len(r.transpose.wrong_answers)
                                              if r.transpose else 0)
        self.events += [{"step": r.step, **e} for e in r.quarantine]
        self.verified = self.verified and r.verified
        if r.replanned:
            self.replanned.append(r.step)
        self.wall_s += r.wall_s
        self.master_s += r.master_s
        self.predicted_s += r.predicted_s
        self.overhead_s += r.wall_s - r.predicted_s
        self.oracle_s += r.oracle_time_s
        self.true_s += r.true_time_s
        if r.predicted_s > 0 and not r.late:
            ratio = r.wall_s / r.predicted_s
            self.max_ratio = ratio if self.max_ratio is None else max(self.max_ratio, ratio)
        self.worst_condition = max(self.worst_condition, r.condition)
        self.waste += Fraction(r.transition_waste)


@dataclasses.dataclass
class JobClock:
    """Every second of the master's run, counted: a step line's ``master_s`` is its time
    outside ``wall_s`` since the previous step's end (the check when it passed, the
    machines cut off, the record, the line written, the state saved, the table printed);
    the summary's ``job_s`` adds ``before_steps_s`` (the store's opening, config, X,
    setup), every step's
    ``wall_s + master_s`` and ``after_steps_s`` (the end check, STOP, statistics)."""

    start: float = dataclasses.field(default_factory=time.perf_counter)
    steps_from: float = 0.0
    mark: float = 0.0

    def counted(self, rec: ElasticStep) -> ElasticStep:
        """``rec`` with its ``master_s``; the next step's time starts now."""
        now = time.perf_counter()
        master_s = max(0.0, now - self.mark - rec.wall_s)
        self.mark = now
        return dataclasses.replace(rec, master_s=master_s)

    def parts(self) -> dict[str, Any]:
        """The summary's ``job_s``, ``before_steps_s`` and ``after_steps_s`` (so far)."""
        now = time.perf_counter()
        before = (self.steps_from or now) - self.start
        return {"job_s": now - self.start, "before_steps_s": before,
                "after_steps_s": now - self.mark if self.mark else 0.0}


class Unverified(Exception):
    """A product of an iterative workload's step was NOT VERIFIED: the step ends there and
    its ``y`` never reaches the iterate."""


def _stale(h: P.Header, key: tuple[int, int]) -> bool:
    """An answer of an earlier (step, attempt): a machine re-planned away or cut off."""
    return h.kind in (P.Kind.RESULT, P.Kind.META, P.Kind.PART) and h.step < key[0]


PROFILE_ENV = "MPI_CODED_PROFILE_MASTER"
"""A path: rank 0 runs the whole job under :mod:`cProfile` and writes its statistics there."""


class Master:
    """The elastic job on rank 0, one method per phase of the job."""

    def __init__(self, cfg: CECConfig, comm: MPI.Comm, faults: tuple[Fault, ...],
                 steps: type[Steps], store: StoreRun | None = None) -> None:
        self.cfg, self.comm, self.steps, self.store = cfg, comm, steps, store
        self.cl = MachinePool(cfg, comm, faults, store.layout.rank_of if store else None)
        for n in store.layout.lost if store else ():
            self.cl.absent(n)
        self.schedule = cfg.available_sets()
        self.done = Totals()  # the steps done, summed as they are done
        self.clock = JobClock()  # every second of the run (master_main: from the store open)
        self.repeated = 0  # steps NOT VERIFIED whose y never reached the iterate

    def run(self, phase: Phase, out: str | None, first: int) -> int:
        self.out = out
        self.job = checkpoint.job_digest(jsonable(self.cfg.to_dict()))  # names saved states
        writer = ResultsWriter(out)
        writer.write(ElasticConfig.of(self.cfg.to_dict(), run_info(self.comm), first))
        last = LastWord(out) if out else None  # rank 0 killed: its watcher ends the file
        phase.set("setup")
        x, steps, setup = self.setup(first)
        writer.write(setup)
        table = Table()

        def provisional() -> None:  # the summary should rank 0 end here without its own
            if last is not None:
                last.provisional(jsonable(self.summary(
                    steps, setup, first, None, {}, {}, ended="").to_dict()))

        provisional()
        self.clock.steps_from = self.clock.mark = time.perf_counter()
        try:
            for t in range(first, len(self.schedule) + 1):
                phase.set("step", t)
                rec = self.clock.counted(self.step(steps, t))
                writer.write(rec)
                if out and self.work.stateful:  # the state after the step, durably
                    checkpoint.save(out, self.work.state(t, self.job))
                table.row(rec)
                self.done.add(rec)
                provisional()
        except (CannotGoOn, PluginError) as exc:  # too few machines left, the launcher
            # ended the job, or a plugin failed: the summary says why, unverified
            why = str(exc) if isinstance(exc, PluginError) else self.cl.ended(exc)
            writer.write(self.summary(steps, setup, first, None, {}, {}, ended=why))
            writer.close()
            if last is not None:
                last.done()
            if isinstance(exc, PluginError):
                raise
            raise CannotGoOn(why) from None
        # STOP before the end check, the master's alone: with verify = "exact" it passes
        # over X once per step (27 s at X of 2 GiB), and the machines waiting for STOP
        # meanwhile timed out (timeout_s), ending a job that had run to its end (issue 45)
        phase.set("stop")
        stopped = self.stop()
        # the iterate took every verified step: the reference takes as many
        applied = len(self.schedule) - self.repeated
        check = self.work.check(x, applied) if getattr(x, "exact", True) else None
        summary = self.summary(steps, setup, first, check, *stopped)
        writer.write(summary)
        writer.close()
        if last is not None:
            last.done()
        self.cl.links.disconnect(self.cfg.timeout_s)  # machines spawned later may finalize
        return self.verdict(summary, check)

    def setup(self, first: int) -> tuple[Any, Steps, ElasticSetup]:
        """``X`` (from a store: the master's view of it, :func:`matrix_of`), the policy,
        its data sent to the machines (timed), the iterate (resumed: from its state)."""
        cfg, cl = self.cfg, self.cl
        cl.field.warm_up(cfg.largest_products[0])
        x = make_data(cfg, cl.field) if self.store is None else \
            matrix_of(cfg, cl.field, self.store.identity)
        steps = self.steps(cl, x)
        self.work = Iterate.start(cfg.workload, x, cfg.rows, cfg.cols, cfg.seed)
        if first > 1 and self.work.stateful and self.out:
            self.work.restore(resumed_state(cfg, self.out, first))
        t0 = time.perf_counter()
        cl.link_mark()
        env0 = list(self.schedule[first - 1]) if first <= len(self.schedule) else cl.machines
        sent = steps.setup(env0)
        rec = ElasticSetup(setup_s=time.perf_counter() - t0, setup_bytes=sent.nbytes,
                           bytes_per_machine=sent.per_machine,
                           hosts={str(n): cl.links.host[n] for n in cl.machines},
                           link=cl.link_record([("setup", {0: cl.link_mark()})],
                                               {"setup": sent.traffic}),
                           store=self.store.record() if self.store else None,
                           store_open_s=self.store.open_s if self.store else None,
                           store_parts=self.store.parts if self.store else None,
                           master_peak_rss_mb=peak_rss_mb())
        print(f"setup: {sent.what}, {sent.nbytes} bytes in {rec.setup_s:.3f} s (sent once)",
              flush=True)
        if self.store is not None:
            print(f"setup: {store_line(self.store.open_s, self.store.parts)}", flush=True)
        if first > 1:
            print(f"resuming at step {first} of {len(self.schedule)}", flush=True)
        steps.replay([list(a) for a in self.schedule[: first - 1]])
        return x, steps, rec

    def first_vstep(self, t: int) -> int:
        """Step ``t``'s first step on the wire (linreg: two per step)."""
        return self.work.products * (t - 1) + 1

    def step(self, steps: Steps, t: int) -> ElasticStep:
        """Step ``t``: the workload's products through the policy's phases, one record."""
        cl = self.cl
        cl.at = ("step", t)
        drain(cl.links, cl.machines, (self.first_vstep(t), 0), cl.on_late, cl.hard())
        self.replace_lost(steps, t)
        env = cl.stand_in(t, list(self.schedule[t - 1]))  # the lost ones stood in for
        avail = steps.begin(t, env)
        recs: list[ElasticStep] = []

        def product(which: int, v: np.ndarray) -> np.ndarray:
            on = avail if which == 0 else [n for n in recs[0].available
                                           if n not in recs[0].late and n in cl.machines]
            if len(on) < self.cfg.L:  # machines died between the step's two products
                raise CannotGoOn(cl.too_few(f"step {t}"))
            rec, y = steps.product(t, which, v, on)
            recs.append(rec)
            if not rec.verified and self.work.stateful:  # never carried forward
                raise Unverified
            return y

        try:
            eigenvalue, residual = self.work.step(
                lambda: step_vector(self.cfg, cl.field, t), product)
        except Unverified:
            eigenvalue = residual = None
            self.repeated += 1
            warn(f"step {t}: NOT VERIFIED: the {self.work.kind} iterate is kept as it was "
                 "(the next step repeats this one)")
        rec = recs[0] if len(recs) == 1 else recs[0].with_transpose(recs[1], residual or 0.0)
        return dataclasses.replace(rec, eigenvalue=eigenvalue) if eigenvalue is not None \
            else rec

    def replace_lost(self, steps: Steps, t: int) -> None:
        """A new process for each lost machine, before step ``t`` (:mod:`mpi_coded.runtime.
        cec.join`): spawned, told which machine it is, sent that machine's coded block."""
        cl, cfg = self.cl, self.cfg
        due = cl.unreplaced() if cfg.replace_lost == "spawn" else \
            [n for s, n in cfg.joins if s == t]
        for n in due:
            if n not in cl.unreplaced():
                warn(f"step {t}: machine {n} is to join (joins) but is not lost; left as it is")
                continue
            try:
                new = spawn_machine(self.cfg.timeout_s, cl.lost_host(n))
            except MPI.Exception as exc:  # the launcher could not start it: still lost
                warn(f"step {t}: spawning a new machine {n} failed ({exc}); it stays lost")
                continue
            cl.links.join(n, new.inter)
            t0 = time.perf_counter()
            before = linkstats.read()
            deadline = cl.hard()
            wait_all(cl.links.isend(n, P.Kind.JOIN, 0, aux=n), deadline, f"JOIN to machine {n}")
            nbytes = steps.send_block(n)
            block_s = time.perf_counter() - t0
            if n in cl.links.lost:  # the new process died in its join
                warn(f"step {t}: the new machine {n} died before it was ready; it stays lost")
                continue
            after = linkstats.read_sent()
            host = cl.links.host[n]
            sent = after.minus(before) if after and before else None
            cl.rejoin(n, JoinedMachine(
                machine=n, host=host, step=t, spawn_s=new.spawn_s, block_bytes=nbytes,
                block_s=block_s,
                master_link_sent_bytes=sent[0] if sent and cl.links_measured() else None
            ).to_dict())
            print(f"step {t}: a new machine {n} ({host}) joined: spawned in "
                  f"{new.spawn_s:.3f} s, its coded block ({nbytes} bytes) in {block_s:.3f} s",
                  flush=True)

    def stop(self) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, dict[str, Any]]]]:
        """STOP to every machine; their idle statistics and rows per step."""
        cfg, links, machines = self.cfg, self.cl.links, self.cl.machines
        last = len(self.schedule) * self.work.products
        self.cl.at = ("stop", len(self.schedule))
        reqs = links.send(machines, P.Kind.STOP, last)
        hard = self.cl.hard()
        try:
            stats, _ = links.collect(machines, [P.Kind.STATS, P.Kind.STATS], last, hard=hard,
                                     what="machine statistics",
                                     stale=lambda _r, h: _stale(h, (last + 1, 0)),
                                     on_stale=self.cl.on_stale)
        except DeadlineExceeded as exc:
            raise DeadlineExceeded(f"{exc} (they did not stop within {cfg.timeout_s} s)") \
                from None
        wait_all(reqs, hard, "STOP to be delivered")
        idle, rows_by_step = {}, {}
        for n in [m for m in machines if m in stats]:  # ulfm: not the ones lost in stop
            s = records.IDLE_STATS.unpack(stats[n][0][1], n)
            idle[str(n)] = {"wall_s": s["wall_s"], "cpu_s": s["cpu_s"],
                            "idle_steps": int(s["idle_steps"]),
                            "cpu_fraction": s["cpu_s"] / s["wall_s"] if s["wall_s"] > 0 else 0.0}
            rows_by_step[str(n)] = {str(int(r[0])): {"rows": int(r[1]), "idle": bool(r[2])}
                                    for r in payload(stats[n][1])}
        return idle, rows_by_step

    def summary(self, steps: Steps, setup: ElasticSetup, first: int,
                check: dict[str, Any] | None, idle: dict[str, dict[str, float]],
                machine_steps: dict[str, dict[str, dict[str, Any]]],
                ended: str | None = None) -> ElasticSummary:
        done = self.done
        after = [a.to_dict() for a in steps.late_wrong()]  # read at STOP (A.10)
        for a in after:
            warn(f"machine {a['machine']} answered row set {a['set']} of step {a['step']} "
                 f"wrong, late (after the step was verified): named at the job's end")
        return ElasticSummary(
            steps=done.steps, first_step=first, policy=self.cfg.policy,
            field=self.cl.field.name,
            all_verified=ended is None and done.verified and (check is None or check["ok"]),
            ended_early=ended, replanned_steps=list(done.replanned),
            late_answers_dropped=self.cl.links.dropped,
            total_wall_s=done.wall_s, total_predicted_s=done.predicted_s,
            max_wall_over_predicted=done.max_ratio,
            overhead_ms_per_step=1e3 * done.overhead_s / done.steps if done.steps else None,
            worst_condition=done.worst_condition,
            decoder_cache=steps.decoder_cache(), setup_s=setup.setup_s,
            setup_bytes=setup.setup_bytes, idle=idle, machine_steps=machine_steps,
            total_transition_waste=str(done.waste),
            total_oracle_time_s=done.oracle_s, total_true_time_s=done.true_s,
            workload_check=check,
            lost=list(self.cl.lost), joined=list(self.cl.joined),
            wrong_answers=done.wrong + len(after), quarantine=list(done.events),
            wrong_answers_after_steps=after,
            machines_left=list(self.cl.machines) if self.cl.lost else None,
            steps_repeated=self.repeated, master_s=done.master_s, **self.clock.parts())

    def verdict(self, summary: ElasticSummary, check: dict[str, Any] | None) -> int:
        """Print the end of the job; its exit status."""
        kind = self.work.kind
        if check is not None:
            print(f"{kind}: final w vs numpy on the uncoded X: relative error "
                  f"{check['relative_error']:.2e} ({'ok' if check['ok'] else 'FAILED'}, "
                  f"tolerance {check['rtol']:g})", flush=True)
        lost = ""
        if summary.lost:
            lost = ", lost " + ", ".join(f"machine {e['machine']} ({e['phase']} {e['step']})"
                                         for e in summary.lost)
        print(f"done: {summary.steps} steps, all verified: {summary.all_verified}, "
              f"wall {summary.total_wall_s:.4f} s vs predicted "
              f"{summary.total_predicted_s:.4f} s{lost}", flush=True)
        if summary.all_verified:
            return 0
        print("mpi-coded: error: decoded results did not match X w_t" if check is None or
              check["ok"] else f"mpi-coded: error: the {kind} result differs from numpy on "
              "the uncoded X", file=sys.stderr)
        return 1


def peak_rss_mb() -> float:
    """This process's peak resident set so far, MiB (``ru_maxrss``: KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def matrix_of(cfg: CECConfig, field: Field, ident: Manifest) -> Streamed | Sketched:
    """The master's ``X`` from a store: ``data`` streamed in chunks (its hash checked
    against the store's: CannotGoOn if it is another data set), or the store's sketch."""
    if cfg.exact_check:
        src = NpyRows(cfg.data, field.dtype)
        t0 = time.perf_counter()
        if src.data_hash() != ident.dataset.get("hash"):
            raise CannotGoOn(f"data {cfg.data}: its hash differs from the store's data set "
                             f"({ident.dataset.get('source')}): another data set")
        print(f"setup: X streamed from {cfg.data} (hash checked in "
              f"{time.perf_counter() - t0:.3f} s); every product checked exactly", flush=True)
        return Streamed(src, field, norm2=ident.norm2)
    print("setup: no X at the master; every product checked against the store's sketch "
          "(Freivalds)", flush=True)
    return Sketched(Sketch(field, ident.sketch, ident.rows, ident.cols),
                    (ident.rows, ident.cols), ident.norm2)


def resumed_state(cfg: CECConfig, out: str, first: int) -> checkpoint.SavedState:
    """The state saved after step ``first - 1`` (CannotGoOn when there is none)."""
    st = checkpoint.load(out, checkpoint.job_digest(jsonable(cfg.to_dict())))
    if st is None or st.step != first - 1:
        raise CannotGoOn(f"--resume: {checkpoint.state_path(out)} holds "
                         f"{'no state' if st is None else f'the state after step {st.step}'}"
                         f", not the state after step {first - 1}")
    print(f"resuming: the state after step {st.step} from {checkpoint.state_path(out)}",
          flush=True)
    return st


def master_main(cfg: CECConfig, comm: MPI.Comm, phase: Phase, out: str | None,
                steps: type[Steps], first: int = 1, faults: tuple[Fault, ...] = ()) -> int:
    phase.set("setup")
    started = time.perf_counter()  # the store's opening is the job's time too
    store = open_store(cfg, comm) if cfg.store else None
    master = Master(cfg, comm, faults, steps, store)
    master.clock = JobClock(started)
    where = os.environ.get(PROFILE_ENV)
    if not where:
        return master.run(phase, out, first)
    import cProfile  # deferred: only with MPI_CODED_PROFILE_MASTER (bench_scale --profile)

    prof = cProfile.Profile()
    try:
        return prof.runcall(master.run, phase, out, first)
    finally:
        prof.dump_stats(where)
