"""The master (rank 0) of the elastic job.

Setup: build ``X`` (seeded, or from ``.npy``), encode ``X~_n`` with the
systematic MDS generator and send each machine its block once (A.1).  Each
step: plan (A.3-A.5, the transition-waste-aware layout, or the cyclic
baseline; with ``S`` stragglers every row set on ``L + S`` machines), send
every planned machine its row sets and ``w_t``, tell the others to idle,
collect, decode each row set from ``L`` answers with the cached ``G_P^{-1}``
(A.2), verify against the direct ``X w_t`` and append one JSON line
(sections of docs/theory.md).  Nothing is re-sent to a machine when the
available set changes.

Reliability and the cluster as it is:

* A step has a deadline (``deadline_factor * predicted + deadline_slack_s``):
  machines that miss it are sent CUT, treated as preempted for that step and
  the step is re-planned onto the others (``replanned``); they become
  *suspects* (:mod:`mpi_coded.cec.suspects`), left out of later plans until
  their late answer arrives.  Late answers are recognised by (step, attempt)
  and dropped (:mod:`mpi_coded.runtime.cec.collect`).
* With ``S > 0`` each row set is decoded from its first ``L`` answers; the
  machines still computing are sent CUT (``cut_off``); one cut off as the
  slowest too many steps in a row becomes a suspect.
* ``speeds = "auto"``: the plan uses :class:`~mpi_coded.cec.estimate.SpeedEstimator`
  estimates learnt from every machine's measured seconds per row (first step:
  equal speeds).  The true speeds (:mod:`mpi_coded.cec.scenario`) are used only
  to report the oracle plan's time.
* ``policy = "uncoded"``: the baseline of :mod:`mpi_coded.cec.uncoded`.  Setup
  sends every machine available at step 1 its rows of ``X``; each step the
  rows that change owner really move (machine to machine, or from the master
  when their owner was preempted), timed (``move_s``) and counted
  (``bytes_moved``); machines compute their whole range and the master
  assembles ``y`` (nothing to decode).  No deadlines re-plan these steps.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.data import encode_blocks, encode_matrix, make_data, step_vector
from mpi_coded.cec.decode import StepDecoder, decode_parts, decode_step
from mpi_coded.cec.estimate import SpeedEstimator, step_time
from mpi_coded.cec.plan import StepPlan, make_plan
from mpi_coded.cec.scenario import stragglers_at, true_speeds
from mpi_coded.cec.suspects import StepSuspects, Suspects
from mpi_coded.cec.uncoded import Layout, Move, bytes_moved, moves, uncoded_split, uncoded_time
from mpi_coded.cec.waste import transition_waste
from mpi_coded.cec.workloads import (
    REFERENCE_RTOL,
    linreg_eta,
    linreg_residual,
    linreg_step,
    linreg_targets,
    power_step,
    reference_linreg,
    reference_power,
    relative_error,
    start_vector,
)
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.faults import Fault
from mpi_coded.fields import get_field
from mpi_coded.results import ResultsWriter
from mpi_coded.runtime.cec.collect import Attempt, collect, drain
from mpi_coded.runtime.cec.tasks import task_tables
from mpi_coded.runtime.core import records
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import Phase
from mpi_coded.runtime.core.peers import Peers
from mpi_coded.runtime.core.run import run_record
from mpi_coded.runtime.core.wait import DeadlineExceeded, deadline_in, wait_all


class Table:
    """A readable table on rank 0's stdout while the job runs."""

    HEAD = (f"{'step':>4} {'available':<18} {'pred_s':>8} {'wall_s':>8} {'ratio':>6} "
            f"{'decode_ms':>9} {'max_err':>9} {'waste':>7} ok")

    def __init__(self) -> None:
        print(self.HEAD, flush=True)

    def row(self, rec: dict[str, Any]) -> None:
        avail = ",".join(str(a) for a in rec["available"])
        ratio = rec["wall_s"] / rec["predicted_s"] if rec["predicted_s"] > 0 else float("nan")
        note = f"  replanned without {rec['late']}" if rec["replanned"] else ""
        if rec["suspects"]:
            note += f"  suspects {rec['suspects']} left out"
        if rec["rejoined"]:
            note += f"  rejoined {rec['rejoined']}"
        if rec["cut_off"]:
            note += f"  cut off {rec['cut_off']}"
        print(f"{rec['step']:>4} {avail:<18} {rec['predicted_s']:>8.4f} {rec['wall_s']:>8.4f} "
              f"{ratio:>6.3f} {rec['decode_s'] * 1e3:>9.3f} {rec['max_error']:>9.2e} "
              f"{rec['transition_waste']:>7} {'yes' if rec['verified'] else 'NO'}{note}",
              flush=True)


def _stale(h: P.Header, key: tuple[int, int]) -> bool:
    """An answer of an earlier (step, attempt): a machine re-planned away or cut off."""
    return h.kind in (P.Kind.RESULT, P.Kind.META, P.Kind.PART) and h.step < key[0]


def _payload(msg: tuple[P.Header, np.ndarray | None]) -> np.ndarray:
    h, arr = msg
    if arr is None:
        raise P.WireError(f"{h.kind.name} from rank {h.source} has no payload")
    return arr


TRANSPOSE_KEYS = ("available", "late", "load", "rows", "sets", "predicted_s", "wall_s",
                  "collect_s", "decode_s", "max_error", "verified", "condition",
                  "transition_waste", "waited_for", "cut_off", "oracle_time_s", "true_time_s")


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
class Work:
    """The workload's state between steps (docs: :mod:`mpi_coded.cec.workloads`)."""

    kind: str
    w: np.ndarray
    w0: np.ndarray
    b: np.ndarray
    eta: float = 0.0
    prev_t: StepPlan | None = None  # linreg: the previous plan of the X^T product


class Master:
    def __init__(self, cfg: CECConfig, comm: MPI.Comm, faults: tuple[Fault, ...]) -> None:
        self.cfg, self.comm, self.faults = cfg, comm, faults
        self.field = get_field(cfg.field)
        self.machines = list(range(1, cfg.N + 1))
        self.links = Peers(comm, self.machines)
        self.suspects = Suspects(cfg.suspect_after)
        self.estimator = SpeedEstimator(self.machines, cfg.estimator, cfg.estimator_alpha,
                                        cfg.estimator_window)
        self.observed = 0
        self.layout: Layout | None = None  # the uncoded baseline's current owners

    # -- what the plan knows --------------------------------------------------------------

    def plan_speeds(self) -> dict[int, Fraction]:
        if self.cfg.speeds_auto:
            return self.estimator.speeds()
        return self.cfg.speed_map

    def predict(self, plan: StepPlan, R: int | None = None) -> float:
        """Seconds the plan should take, as far as the master knows the speeds."""
        if not self.cfg.speeds_auto:
            return float(plan.time) * (R or self.cfg.rows_per_block) * self.cfg.t_row
        tau = self.estimator.seconds_per_row() if self.observed else \
            {n: self.cfg.t_row for n in self.machines}
        counts = plan.row_counts()
        return max((counts[n] * tau[n] for n in plan.available), default=0.0)

    def plan(self, avail: list[int], S: int, prev: StepPlan | None,
             R: int | None = None) -> StepPlan:
        return make_plan(self.cfg.policy, self.plan_speeds(), self.cfg.L, avail,
                         rows=R or self.cfg.rows_per_block, S=S, prev=prev)

    # -- late answers ---------------------------------------------------------------------

    def on_late(self, h: P.Header, payload: np.ndarray | None) -> None:
        self.suspects.heard(h.source)
        if h.kind == P.Kind.META:
            self.observe(h.source, records.TASK_META.unpack(payload, h.source))

    def observe(self, n: int, meta: dict[str, float]) -> None:
        if self.cfg.speeds_auto and meta["rows"] > 0 and \
                self.estimator.observe(n, int(meta["rows"]), meta["busy_s"]):
            self.observed += 1

    # -- one coded product --------------------------------------------------------------

    def product(self, t: int, vstep: int, env: list[int], avail: list[int],
                sus: StepSuspects, w: np.ndarray, prod: Product, prev: StepPlan | None
                ) -> tuple[dict[str, Any], np.ndarray, StepPlan]:
        """One coded product ``prod.x @ w`` in step ``t`` (on the wire as step ``vstep``):
        plan, send, collect (re-planning late machines away), decode, verify."""
        cfg, field, comm, links = self.cfg, self.field, self.comm, self.links
        R = prod.R
        true = true_speeds(cfg, self.faults, t, env)
        S_t = min(cfg.S, len(avail) - cfg.L)
        speeds_used = self.plan_speeds()
        planned = self.plan(avail, S_t, prev, R)
        preempted = [n for n in self.machines if n not in env]
        idle = [n for n in self.machines if n not in avail] if vstep == prod.first_vstep(t) \
            else []
        late: list[int] = []
        attempt = 0
        att_per_set = cfg.S > 0
        t0 = time.perf_counter()
        plan = planned
        while True:
            if attempt:
                plan = self.plan(avail, min(S_t, len(avail) - cfg.L), prev, R)
            tasks = task_tables(plan, att_per_set)
            reqs = []
            for n in plan.available:
                reqs += P.isend(comm, n, P.Kind.TASK, vstep, tasks[n], aux=attempt)
                reqs += P.isend(comm, n, P.Kind.VECTOR, vstep, w)
            if attempt == 0:
                for n in idle:
                    reqs += P.isend(comm, n, P.Kind.IDLE, vstep)
            predicted_now = self.predict(plan, R)
            att = Attempt(plan, vstep, attempt, att_per_set)
            missing = collect(links, self.machines, att,
                              soft=time.monotonic() + cfg.step_deadline(predicted_now),
                              hard=deadline_in(cfg.timeout_s), on_late=self.on_late)
            if not missing:
                break
            unfinished = [n for n in plan.available if not att.finished(n)]
            reqs += links.send(unfinished, P.Kind.CUT, vstep, aux=attempt)
            late += missing
            for n in missing:
                self.suspects.missed(n, t)
            avail = [n for n in avail if n not in missing]
            if len(avail) < cfg.L:
                raise DeadlineExceeded(
                    f"step {t}: {links.name(missing)} missed the step deadline "
                    f"({cfg.step_deadline(predicted_now):.3f} s) and fewer than L={cfg.L} "
                    "machines remain")
            print(f"warning: step {t}: {links.name(missing)} missed the deadline; "
                  f"re-planning onto {avail}", file=sys.stderr, flush=True)
            attempt += 1
        t1 = time.perf_counter()
        cut_off = [n for n in plan.available if not att.finished(n)]
        if cut_off:
            reqs += links.send(cut_off, P.Kind.CUT, vstep, aux=attempt)
        if att.per_set:
            yb, cond, waited = decode_parts(plan, att.parts, prod.dec)
        else:
            yb, cond = decode_step(plan, att.results, prod.dec)
            waited = [list(rs.machines) if rs.size else [] for rs in plan.sets]
        y = yb.reshape(-1)[: prod.x.shape[0]]
        t2 = time.perf_counter()
        wall = t2 - t0
        wait_all(reqs, deadline_in(cfg.timeout_s), f"step {t} orders to be delivered")
        m = att.metas
        for n, meta in m.items():
            self.observe(n, meta)
        for n in plan.available if vstep == prod.first_vstep(t) else ():  # once a step
            if n in cut_off:
                frac = att.delivered.get(n, 0) / max(1, plan.row_counts()[n])
                if self.suspects.cut(n, t, frac):
                    print(f"warning: step {t}: machine {n} was cut off as the slowest "
                          f"more than {cfg.suspect_after} steps in a row; left out until "
                          "it answers", file=sys.stderr, flush=True)
            else:
                self.suspects.on_time(n)
                if n in sus.forced:
                    self.suspects.heard(n)
        err = field.max_error(y, field.matmul(prod.x, w))
        ok = field.verified(err)
        predicted = self.predict(plan, R)
        waste = transition_waste(prev, plan)
        overrun = [n for n in m if m[n]["compute_s"] > m[n]["target_s"] > 0]
        if overrun:
            print(f"warning: step {t}: real compute exceeded the throttle target on "
                  f"machines {overrun}; the speeds are not what the config says",
                  file=sys.stderr)
        bytes_step = sum(int(r.nbytes) + int(w.nbytes) for r in tasks.values()) + \
            sum(int(r.nbytes) for r in att.results.values()) + \
            sum(int(y_.nbytes) for f in att.parts.values() for y_ in f.values())
        oracle = make_plan(plan.policy, true, cfg.L, plan.available, rows=R, S=plan.S,
                           prev=prev)
        oracle_s = float(oracle.time) * R * cfg.t_row
        true_s = float(step_time(dict(plan.load), true)) * R * cfg.t_row
        rec = {
            "kind": "step", "job": "cec", "step": t, "policy": cfg.policy,
            "field": field.name,
            "available": list(plan.available), "preempted": preempted,
            "replanned": bool(late), "late": sorted(late), "attempts": attempt + 1,
            "load": {str(n): str(v) for n, v in plan.load},
            "rows": {str(n): c for n, c in plan.row_counts().items()},
            "sets": plan.to_dict()["sets"],
            "predicted_s": predicted,
            "predicted_planned_s": self.predict(planned, R),
            "wall_s": wall, "collect_s": t1 - t0, "decode_s": t2 - t1,
            "compute_s": {str(n): m[n]["compute_s"] for n in sorted(m)},
            "sleep_s": {str(n): m[n]["sleep_s"] for n in sorted(m)},
            "throttle_overrun": overrun,
            "max_error": err, "verified": ok, "condition": cond,
            "transition_waste": str(waste), "transition_waste_rows": float(waste * R),
            "bytes_step": bytes_step, "bytes_moved": 0, "move_s": 0.0, "moves": 0,
            "S": plan.S, "suspects": list(sus.left_out), "suspects_forced": list(sus.forced),
            "rejoined": list(sus.rejoined), "waited_for": waited,
            "cut_off": sorted(cut_off), "stragglers": list(stragglers_at(cfg, t, env)),
            "speed_estimates": {str(n): float(v) for n, v in speeds_used.items()}
            if cfg.speeds_auto else None,
            "oracle_time_s": oracle_s, "true_time_s": true_s,
            "true_over_oracle": true_s / oracle_s if oracle_s > 0 else None,
            "workload": cfg.workload, "eigenvalue": None, "residual": None,
        }
        return rec, y, plan

    # -- the uncoded baseline ---------------------------------------------------------------

    def move(self, step: int, layout: Layout, mv: list[Move], idle: list[int],
             x: np.ndarray) -> float:
        """Order the moves of ``step``, send the master's rows, wait for every ack."""
        comm, links, cfg = self.comm, self.links, self.cfg
        t0 = time.perf_counter()
        reqs: list[MPI.Request] = []
        for n in sorted(layout):
            mine = [[m.src, m.dst, m.start, m.stop] for m in mv if n in (m.src, m.dst)]
            table = np.array([[-1, -1, *layout[n]], *mine], dtype=np.int64)
            reqs += P.isend(comm, n, P.Kind.MOVES, step, table)
        for n in idle:
            reqs += P.isend(comm, n, P.Kind.IDLE, step)
        for m in mv:
            if m.src == 0:
                reqs += P.isend(comm, m.dst, P.Kind.ROWS, step, x[m.start: m.stop], aux=m.start)
        links.collect(sorted(layout), [P.Kind.MOVES], step, hard=deadline_in(cfg.timeout_s),
                      what=f"step {step} moves")
        wait_all(reqs, deadline_in(cfg.timeout_s), f"step {step} moves to be delivered")
        return time.perf_counter() - t0

    def uncoded_step(self, t: int, env: list[int], w: np.ndarray, x: np.ndarray,
                     want: np.ndarray) -> dict[str, Any]:
        cfg, field, links, comm = self.cfg, self.field, self.links, self.comm
        speeds = self.plan_speeds()
        layout = uncoded_split(speeds, env, cfg.rows)
        mv = moves(self.layout, layout)
        idle = [n for n in self.machines if n not in layout]
        t0 = time.perf_counter()
        move_s = self.move(t, layout, mv, idle, x)
        reqs: list[MPI.Request] = []
        for n, (a, b) in layout.items():
            reqs += P.isend(comm, n, P.Kind.TASK, t, np.array([[a, b]], dtype=np.int64))
            reqs += P.isend(comm, n, P.Kind.VECTOR, t, w)
        got, _ = links.collect(sorted(layout), [P.Kind.RESULT, P.Kind.META], t, aux=0,
                               hard=deadline_in(cfg.timeout_s), what=f"step {t} results")
        t1 = time.perf_counter()
        y = field.zeros(cfg.rows)
        for n, (a, b) in layout.items():
            y[a:b] = _payload(got[n][0])
        t2 = time.perf_counter()
        wait_all(reqs, deadline_in(cfg.timeout_s), f"step {t} orders to be delivered")
        m = {n: records.TASK_META.unpack(got[n][1][1], n) for n in layout}
        for n, meta in m.items():
            self.observe(n, meta)
        self.layout = layout
        err = field.max_error(y, want)
        true = true_speeds(cfg, self.faults, t, env)
        oracle_s = float(uncoded_time(uncoded_split(true, env, cfg.rows), true)) * cfg.t_row
        true_s = float(uncoded_time(layout, true)) * cfg.t_row
        predicted = float(uncoded_time(layout, speeds)) * cfg.t_row
        return {
            "kind": "step", "job": "cec", "step": t, "policy": cfg.policy, "field": field.name,
            "available": sorted(layout), "preempted": idle, "replanned": False, "late": [],
            "attempts": 1,
            "load": {str(n): str(Fraction(b - a, cfg.rows)) for n, (a, b) in layout.items()},
            "rows": {str(n): b - a for n, (a, b) in layout.items()},
            "sets": [{"fraction": str(Fraction(b - a, cfg.rows)), "machines": [n],
                      "rows": [a, b]} for n, (a, b) in sorted(layout.items())],
            "predicted_s": predicted, "predicted_planned_s": predicted,
            "wall_s": t2 - t0, "collect_s": t1 - t0, "decode_s": t2 - t1,
            "compute_s": {str(n): m[n]["compute_s"] for n in sorted(m)},
            "sleep_s": {str(n): m[n]["sleep_s"] for n in sorted(m)},
            "throttle_overrun": [n for n in m if m[n]["compute_s"] > m[n]["target_s"] > 0],
            "max_error": err, "verified": field.verified(err), "condition": 1.0,
            "transition_waste": "0", "transition_waste_rows": 0.0,
            "bytes_step": sum(int(r.nbytes) for r in (_payload(got[n][0]) for n in layout)) +
            int(w.nbytes) * len(layout),
            "bytes_moved": bytes_moved(mv, cfg.cols, field.dtype.itemsize), "move_s": move_s,
            "moves": len(mv),
            "S": 0, "suspects": [], "suspects_forced": [], "rejoined": [], "waited_for":
            [[n] for n in sorted(layout)], "cut_off": [],
            "stragglers": list(stragglers_at(cfg, t, env)),
            "speed_estimates": {str(n): float(v) for n, v in speeds.items()}
            if cfg.speeds_auto else None,
            "oracle_time_s": oracle_s, "true_time_s": true_s,
            "true_over_oracle": true_s / oracle_s if oracle_s > 0 else None,
        }

    # -- the job --------------------------------------------------------------------------

    def run(self, phase: Phase, out: str | None, first: int) -> int:
        cfg, field, machines, links = self.cfg, self.field, self.machines, self.links
        R, N, comm = cfg.rows_per_block, cfg.N, self.comm
        schedule = cfg.availability()
        writer = ResultsWriter(out)
        writer.write({"kind": "config", "job": "cec", **cfg.to_dict(), **run_record(comm),
                      "first_step": first})

        phase.set("setup")
        field.warm_up()
        x = make_data(cfg, field)
        g = systematic_mds(field, N, cfg.L)
        decoder = DecoderCache(field, g)
        dec = StepDecoder(decoder, field, cfg.L, R)
        uncoded = cfg.policy == "uncoded"
        t0 = time.perf_counter()
        if uncoded:
            links.handshake(cfg.timeout_s)
            env0 = list(schedule[first - 1]) if first <= len(schedule) else machines
            layout0 = uncoded_split(self.plan_speeds(), env0, cfg.rows)
            mv0 = moves(None, layout0)
            self.move(0, layout0, mv0, [], x)
            self.layout = layout0
            setup_bytes = bytes_moved(mv0, cfg.cols, field.dtype.itemsize)
            per_machine = max(b - a for a, b in layout0.values()) * cfg.cols * \
                field.dtype.itemsize
            what = f"uncoded rows of X split over {len(layout0)} machines"
        else:
            coded = encode_blocks(cfg, field, g, x)
            hard = deadline_in(cfg.timeout_s)
            reqs = []
            for n in machines:
                reqs += P.isend(comm, n, P.Kind.BLOCK, 0, coded[n - 1])
            if cfg.workload == "linreg":  # and of X^T, for the gradient X^T z
                coded_t = encode_matrix(field, g, cfg.L, x.T)
                for n in machines:
                    reqs += P.isend(comm, n, P.Kind.BLOCK, 1, coded_t[n - 1])
            links.handshake(cfg.timeout_s)
            wait_all(reqs, hard, "machines to receive their coded blocks")
            setup_bytes = int(coded.nbytes)
            per_machine = int(coded[0].nbytes)
            what = f"{N} coded blocks of {R}x{cfg.cols} {field.name}"
        setup_s = time.perf_counter() - t0
        writer.write({"kind": "setup", "job": "cec", "setup_s": setup_s,
                      "setup_bytes": setup_bytes, "bytes_per_machine": per_machine,
                      "hosts": {str(n): links.host[n] for n in machines}})
        print(f"setup: {what}, {setup_bytes} bytes in {setup_s:.3f} s (sent once)", flush=True)
        if first > 1:
            print(f"resuming at step {first} of {len(schedule)}", flush=True)

        table = Table()
        prev: StepPlan | None = None
        for past in range(1, min(first, len(schedule) + 1)):  # resume: replay the plans
            env = list(schedule[past - 1])  # (heterogeneous-tw lays out against each previous)
            prev = self.plan(env, min(cfg.S, len(env) - cfg.L), prev)
        all_ok = True
        ratios: list[float] = []
        overheads: list[float] = []
        worst_cond = 1.0
        per_step = 2 if cfg.workload == "linreg" else 1
        prods = [Product(x, R, dec, per_step)]
        if cfg.workload == "linreg":
            Rt = -(-cfg.cols // cfg.L)
            prods.append(Product(np.ascontiguousarray(x.T), Rt,
                                 StepDecoder(decoder, field, cfg.L, Rt), per_step))
        w0 = start_vector(cfg.cols, cfg.seed) if cfg.workload != "independent" else \
            np.zeros(0)
        work = Work(cfg.workload, w0, w0,
                    linreg_targets(cfg.rows, cfg.seed) if cfg.workload == "linreg" else w0,
                    linreg_eta(x) if cfg.workload == "linreg" else 0.0)
        for t in range(first, len(schedule) + 1):
            phase.set("step", t)
            drain(links, machines, (prods[0].first_vstep(t), 0), self.on_late,
                  deadline_in(cfg.timeout_s))
            env = list(schedule[t - 1])
            if uncoded:
                w = step_vector(cfg, field, t)
                rec = self.uncoded_step(t, env, w, x, field.matmul(x, w))
                all_ok = all_ok and rec["verified"]
                writer.write(rec)
                table.row(rec)
                continue
            sus = self.suspects.for_step(t, env, cfg.L + cfg.S)
            if sus.forced:
                print(f"warning: step {t}: suspects {list(sus.forced)} planned anyway "
                      f"(fewer than L + S = {cfg.L + cfg.S} machines otherwise)",
                      file=sys.stderr, flush=True)
            if work.kind == "linreg":
                rec, y, plan = self.product(t, 2 * t - 1, env, list(sus.planned), sus,
                                            work.w, prods[0], prev)
                z, residual = linreg_residual(y, work.b)
                avail_t = [n for n in plan.available if n not in rec["late"]]
                rec_t, g_, prev_t = self.product(t, 2 * t, env, avail_t, sus, z, prods[1],
                                                 work.prev_t)
                work.prev_t = prev_t
                work.w = linreg_step(work.w, g_, work.eta)
                rec["residual"] = residual
                rec["transpose"] = {k: rec_t[k] for k in TRANSPOSE_KEYS}
                for k in ("wall_s", "collect_s", "decode_s", "predicted_s", "oracle_time_s",
                          "true_time_s", "bytes_step"):
                    rec[k] += rec_t[k]
                rec["verified"] = rec["verified"] and rec_t["verified"]
                rec["max_error"] = max(rec["max_error"], rec_t["max_error"])
                rec["true_over_oracle"] = rec["true_time_s"] / rec["oracle_time_s"] \
                    if rec["oracle_time_s"] > 0 else None
            else:
                w = work.w if work.kind == "power" else step_vector(cfg, field, t)
                rec, y, plan = self.product(t, t, env, list(sus.planned), sus, w, prods[0], prev)
                if work.kind == "power":
                    work.w, rec["eigenvalue"] = power_step(w, y)
            all_ok = all_ok and rec["verified"]
            worst_cond = max(worst_cond, rec["condition"])
            writer.write(rec)
            table.row(rec)
            if rec["predicted_s"] > 0 and not rec["late"]:
                ratios.append(rec["wall_s"] / rec["predicted_s"])
            overheads.append(rec["wall_s"] - rec["predicted_s"])
            prev = plan

        check = None
        if work.kind != "independent":  # the same iteration on the uncoded X, numpy
            steps_run = len(schedule)
            ref = reference_power(x, work.w0, steps_run)[0] if work.kind == "power" else \
                reference_linreg(x, work.b, work.w0, work.eta, steps_run)[0]
            rel = relative_error(work.w, ref)
            check = {"workload": work.kind, "relative_error": rel, "rtol": REFERENCE_RTOL,
                     "ok": rel <= REFERENCE_RTOL}
            print(f"{work.kind}: final w vs numpy on the uncoded X: relative error {rel:.2e}"
                  f" ({'ok' if check['ok'] else 'FAILED'}, tolerance {REFERENCE_RTOL:g})",
                  flush=True)
            all_ok = all_ok and bool(check["ok"])

        phase.set("stop")
        last = len(schedule) * per_step
        reqs = links.send(machines, P.Kind.STOP, last)
        hard = deadline_in(cfg.timeout_s)
        try:
            stats, _ = links.collect(machines, [P.Kind.STATS, P.Kind.STATS], last, hard=hard,
                                     what="machine statistics",
                                     stale=lambda _r, h: _stale(h, (last + 1, 0)))
        except DeadlineExceeded as exc:
            raise DeadlineExceeded(f"{exc} (they did not stop within {cfg.timeout_s} s)") \
                from None
        wait_all(reqs, hard, "STOP to be delivered")
        idle_stats = {}
        rows_by_step = {}
        for n in machines:
            s = records.IDLE_STATS.unpack(stats[n][0][1], n)
            tb = _payload(stats[n][1])
            idle_stats[str(n)] = {"wall_s": s["wall_s"], "cpu_s": s["cpu_s"],
                                  "idle_steps": int(s["idle_steps"]),
                                  "cpu_fraction": s["cpu_s"] / s["wall_s"] if s["wall_s"] > 0
                                  else 0.0}
            rows_by_step[str(n)] = {str(int(r[0])): {"rows": int(r[1]), "idle": bool(r[2])}
                                    for r in tb}
        steps = [r for r in writer.lines if r.get("kind") == "step"]
        summary = {
            "kind": "summary", "job": "cec", "steps": len(steps), "first_step": first,
            "policy": cfg.policy, "field": field.name, "all_verified": all_ok,
            "replanned_steps": [r["step"] for r in steps if r["replanned"]],
            "late_answers_dropped": links.dropped,
            "total_wall_s": sum(r["wall_s"] for r in steps),
            "total_predicted_s": sum(r["predicted_s"] for r in steps),
            "max_wall_over_predicted": max(ratios) if ratios else None,
            "overhead_ms_per_step": 1e3 * float(np.mean(overheads)) if overheads else None,
            "worst_condition": worst_cond, "decoder_cache": {"hits": decoder.hits,
                                                             "misses": decoder.misses},
            "setup_s": setup_s, "setup_bytes": setup_bytes, "idle": idle_stats,
            "machine_steps": rows_by_step,
            "total_transition_waste": str(sum((Fraction(r["transition_waste"]) for r in steps),
                                              Fraction(0))),
            "total_oracle_time_s": sum(r["oracle_time_s"] for r in steps),
            "total_true_time_s": sum(r["true_time_s"] for r in steps),
            "workload_check": check,
        }
        writer.write(summary)
        writer.close()
        print(f"done: {len(steps)} steps, all verified: {all_ok}, "
              f"wall {summary['total_wall_s']:.4f} s vs predicted "
              f"{summary['total_predicted_s']:.4f} s", flush=True)
        if not all_ok:
            print("mpi-coded: error: decoded results did not match X w_t" if check is None or
                  check["ok"] else f"mpi-coded: error: the {work.kind} result differs from "
                  "numpy on the uncoded X", file=sys.stderr)
            return 1
        return 0


def master_main(cfg: CECConfig, comm: MPI.Comm, phase: Phase, out: str | None,
                first: int = 1, faults: tuple[Fault, ...] = ()) -> int:
    return Master(cfg, comm, faults).run(phase, out, first)
