"""The master (rank 0) of the elastic job.

Setup: build ``X`` (seeded, or from ``.npy``), pad it to ``L`` blocks, encode
``X~_n = sum_l G[n, l] X_l`` with the systematic MDS generator and send each
machine its block once (SPEC A.1).  Each step: plan (SPEC A.3-A.5 or the
cyclic baseline), send every available machine its row ranges and ``w_t``,
tell preempted machines to idle, collect, decode each row set with the cached
``G_P^{-1}`` (SPEC A.2), verify against the direct ``X w_t`` and append one
JSON line.  Nothing is re-sent to a machine when the available set changes.

A step has a deadline (``deadline_factor * predicted + deadline_slack_s``):
machines that miss it are treated as preempted for that step and the step is
re-planned onto the others (if at least ``L`` remain), reported as
``replanned``; their late answers are recognised by (step, attempt) and dropped.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.plan import StepPlan, make_plan
from mpi_coded.cec.waste import transition_waste
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.fields import Field, get_field
from mpi_coded.results import ResultsWriter, run_context
from mpi_coded.runtime import protocol as P
from mpi_coded.runtime.guard import Phase
from mpi_coded.runtime.inbox import Inbox
from mpi_coded.runtime.wait import (
    ACTIVE_MAX_SLEEP,
    Backoff,
    DeadlineExceeded,
    deadline_in,
    wait_all,
)

REAL_TOLERANCE = 1e-8
Msg = tuple[P.Header, np.ndarray | None]


def make_data(cfg: CECConfig, field: Field) -> np.ndarray:
    """``X`` (``q x r``): from ``cfg.data`` or generated from ``cfg.seed``."""
    if cfg.data:
        x = np.load(cfg.data, allow_pickle=False)
        if field.exact and (x.min() < 0 or x.max() >= field.order):
            raise ValueError(f"data: entries of X must be in [0, {field.order}) for {field.name}")
        return np.ascontiguousarray(x, dtype=field.dtype)
    return field.random((cfg.rows, cfg.cols), np.random.default_rng([cfg.seed, 1]))


def step_vector(cfg: CECConfig, field: Field, t: int) -> np.ndarray:
    """``w_t``, a pure function of (seed, t) so that a resumed job sees the same vectors."""
    return field.random(cfg.cols, np.random.default_rng([cfg.seed, 2, t]))


def encode_blocks(cfg: CECConfig, field: Field, g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``(N, R, r)`` coded blocks of the zero-padded ``X``."""
    R = cfg.rows_per_block
    padded = field.zeros((cfg.L * R, cfg.cols))
    padded[: cfg.rows] = x
    coded = field.matmul(g, padded.reshape(cfg.L, R * cfg.cols))
    return coded.reshape(cfg.N, R, cfg.cols)


def decode_step(plan: StepPlan, results: dict[int, np.ndarray], decoder: DecoderCache,
                field: Field, R: int) -> tuple[np.ndarray, float]:
    """``(L, R)`` decoded rows of ``X_1 w .. X_L w`` and the worst condition number."""
    yb = field.zeros((plan.L, R))
    offset = {n: 0 for n in plan.available}
    worst = 1.0
    for rs, (a, b) in zip(plan.sets, plan.set_ranges):
        size = int(b) - int(a)
        if size == 0:
            continue
        ys = []
        for n in rs.machines:
            ys.append(results[n][offset[n]: offset[n] + size])
            offset[n] += size
        rows = [n - 1 for n in rs.machines]
        yb[:, int(a): int(b)] = decoder.decode(rows, np.stack(ys))
        worst = max(worst, decoder.condition(rows))
    return yb, worst


class Links:
    """The master's view of its machines: one inbox each, stale answers dropped.

    RESULT and META carry (step, attempt); anything older than the current
    (step, attempt) is a late answer of a machine that was re-planned away.
    """

    def __init__(self, comm: MPI.Comm, n: int) -> None:
        self.inbox = {m: Inbox(comm, m) for m in range(1, n + 1)}
        self.host = {m: "?" for m in range(1, n + 1)}
        self.dropped = 0

    def name(self, ms: Any) -> str:
        return ", ".join(f"rank {m} ({self.host[m]})" for m in sorted(ms))

    def poll(self, m: int, kinds: set[P.Kind], step: int, attempt: int, deadline: float
             ) -> Msg | None:
        while True:
            got = self.inbox[m].test({*kinds, P.Kind.RESULT, P.Kind.META}, None, deadline)
            if got is None:
                return None
            h = got[0]
            if h.kind in (P.Kind.RESULT, P.Kind.META) and (h.step, h.aux) < (step, attempt):
                self.dropped += 1
                continue
            if h.kind not in kinds or h.step != step or (
                    h.kind in (P.Kind.RESULT, P.Kind.META) and h.aux != attempt):
                raise P.WireError(f"unexpected {h.kind.name} (step {h.step}, attempt {h.aux}) "
                                  f"from {self.name([m])}")
            return got

    def collect(self, who: list[int], kinds: list[P.Kind], step: int, attempt: int,
                soft: float, hard: float, what: str) -> tuple[dict[int, list[Msg]], list[int]]:
        """Each machine's messages of ``kinds`` (in order) until ``soft``; who is missing."""
        got: dict[int, list[Msg]] = {m: [] for m in who}
        backoff = Backoff(hi=ACTIVE_MAX_SLEEP)
        while True:
            progress = False
            for m in who:
                while len(got[m]) < len(kinds):
                    r = self.poll(m, {kinds[len(got[m])]}, step, attempt, hard)
                    if r is None:
                        break
                    got[m].append(r)
                    progress = True
            missing = [m for m in who if len(got[m]) < len(kinds)]
            if not missing:
                return got, []
            now = time.monotonic()
            if now > soft:
                return got, missing
            if now > hard:
                raise DeadlineExceeded(f"timed out waiting for {what} from {self.name(missing)}")
            if progress:
                backoff.reset()
            backoff.sleep()


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
        print(f"{rec['step']:>4} {avail:<18} {rec['predicted_s']:>8.4f} {rec['wall_s']:>8.4f} "
              f"{ratio:>6.3f} {rec['decode_s'] * 1e3:>9.3f} {rec['max_error']:>9.2e} "
              f"{rec['transition_waste']:>7} {'yes' if rec['verified'] else 'NO'}{note}",
              flush=True)


def master_main(cfg: CECConfig, comm: MPI.Comm, phase: Phase, out: str | None,
                first: int = 1) -> int:
    field = get_field(cfg.field)
    R, N = cfg.rows_per_block, cfg.N
    machines = list(range(1, N + 1))
    schedule = cfg.availability()
    writer = ResultsWriter(out)
    ctx = run_context()
    ctx.update(mpi=MPI.Get_library_version().splitlines()[0].strip(),
               world_size=comm.Get_size())
    writer.write({"kind": "config", "job": "cec", **cfg.to_dict(), **ctx,
                  "first_step": first})
    links = Links(comm, N)

    phase.set("setup")
    field.warm_up()
    x = make_data(cfg, field)
    g = systematic_mds(field, N, cfg.L)
    decoder = DecoderCache(field, g)
    coded = encode_blocks(cfg, field, g, x)
    t0 = time.perf_counter()
    hard = deadline_in(cfg.timeout_s)
    reqs = []
    for n in machines:
        reqs += P.isend(comm, n, P.Kind.BLOCK, 0, coded[n - 1])
    ready, missing = links.collect(machines, [P.Kind.READY], 0, 0, hard, hard, "READY")
    if missing:
        raise DeadlineExceeded(f"timed out waiting for READY from {links.name(missing)}")
    for n in machines:
        payload = ready[n][0][1]
        links.host[n] = bytes(payload).decode(errors="replace") if payload is not None else "?"
    wait_all(reqs, hard, "machines to receive their coded blocks")
    setup_s = time.perf_counter() - t0
    setup_bytes = int(coded.nbytes)
    writer.write({"kind": "setup", "job": "cec", "setup_s": setup_s, "setup_bytes": setup_bytes,
                  "bytes_per_machine": int(coded[0].nbytes),
                  "hosts": {str(n): links.host[n] for n in machines}})
    print(f"setup: {N} coded blocks of {R}x{cfg.cols} {field.name}, {setup_bytes} bytes "
          f"in {setup_s:.3f} s (sent once)", flush=True)
    if first > 1:
        print(f"resuming at step {first} of {len(schedule)}", flush=True)

    table = Table()
    speeds = cfg.speed_map
    prev: StepPlan | None = None
    if first > 1 and first - 1 <= len(schedule):
        prev = make_plan(cfg.policy, speeds, cfg.L, schedule[first - 2], rows=R)
    all_ok = True
    ratios: list[float] = []
    overheads: list[float] = []
    worst_cond = 1.0
    for t in range(first, len(schedule) + 1):
        phase.set("step", t)
        avail = list(schedule[t - 1])
        w = step_vector(cfg, field, t)
        planned = make_plan(cfg.policy, speeds, cfg.L, avail, rows=R)
        preempted = [n for n in machines if n not in planned.available]
        late: list[int] = []
        attempt = 0
        t0 = time.perf_counter()
        while True:
            plan = make_plan(cfg.policy, speeds, cfg.L, avail, rows=R)
            ranges = {n: np.array(plan.machine_ranges(n), dtype=np.int64).reshape(-1, 2)
                      for n in plan.available}
            reqs = []
            for n in plan.available:
                reqs += P.isend(comm, n, P.Kind.TASK, t, ranges[n], aux=attempt)
                reqs += P.isend(comm, n, P.Kind.VECTOR, t, w)
            if attempt == 0:
                for n in preempted:
                    reqs += P.isend(comm, n, P.Kind.IDLE, t)
            predicted_now = float(plan.time) * R * cfg.t_row
            soft = time.monotonic() + cfg.step_deadline(predicted_now)
            got, missing = links.collect(list(plan.available), [P.Kind.RESULT, P.Kind.META],
                                         t, attempt, soft, deadline_in(cfg.timeout_s),
                                         f"step {t} results")
            if not missing:
                break
            late += missing
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
        wait_all(reqs, deadline_in(cfg.timeout_s), f"step {t} orders to be delivered")
        results = {n: got[n][0][1] for n in plan.available}
        meta = {n: got[n][1][1] for n in plan.available}
        yb, cond = decode_step(plan, results, decoder, field, R)  # type: ignore[arg-type]
        t2 = time.perf_counter()
        wall = t2 - t0
        y = yb.reshape(-1)[: cfg.rows]
        err = field.max_error(y, field.matmul(x, w))
        ok = bool(err == 0 if field.exact else err <= REAL_TOLERANCE)
        all_ok = all_ok and ok
        worst_cond = max(worst_cond, cond)
        predicted = float(plan.time) * R * cfg.t_row
        waste = transition_waste(prev, plan)
        m = {n: v for n, v in meta.items() if v is not None}
        overrun = [n for n in plan.available if m[n][0] > m[n][2] > 0]
        if overrun:
            print(f"warning: step {t}: real compute exceeded the throttle target on machines "
                  f"{overrun}; the speeds are not what the config says", file=sys.stderr)
        bytes_step = sum(int(r.nbytes) + int(w.nbytes) for r in ranges.values()) + \
            sum(int(res.nbytes) for res in results.values() if res is not None)
        rec = {
            "kind": "step", "job": "cec", "step": t, "policy": cfg.policy, "field": field.name,
            "available": list(plan.available), "preempted": preempted,
            "replanned": bool(late), "late": sorted(late), "attempts": attempt + 1,
            "load": {str(n): str(v) for n, v in plan.load},
            "rows": {str(n): c for n, c in plan.row_counts().items()},
            "sets": plan.to_dict()["sets"],
            "predicted_s": predicted,
            "predicted_planned_s": float(planned.time) * R * cfg.t_row,
            "wall_s": wall, "collect_s": t1 - t0, "decode_s": t2 - t1,
            "compute_s": {str(n): float(m[n][0]) for n in plan.available},
            "sleep_s": {str(n): float(m[n][1]) for n in plan.available},
            "throttle_overrun": overrun,
            "max_error": err, "verified": ok, "condition": cond,
            "transition_waste": str(waste), "transition_waste_rows": float(waste * R),
            "bytes_step": bytes_step,
        }
        writer.write(rec)
        table.row(rec)
        if predicted > 0 and not late:
            ratios.append(wall / predicted)
        overheads.append(wall - predicted)
        prev = plan

    phase.set("stop")
    last = len(schedule)
    reqs = []
    for n in machines:
        reqs += P.isend(comm, n, P.Kind.STOP, last)
    hard = deadline_in(cfg.timeout_s)
    stats, missing = links.collect(machines, [P.Kind.STATS, P.Kind.STATS], last, 0, hard, hard,
                                   "machine statistics")
    if missing:
        raise DeadlineExceeded(f"{links.name(missing)} did not stop within {cfg.timeout_s} s")
    wait_all(reqs, hard, "STOP to be delivered")
    idle = {}
    rows_by_step = {}
    for n in machines:
        s, tb = stats[n][0][1], stats[n][1][1]
        assert s is not None and tb is not None
        idle[str(n)] = {"wall_s": float(s[0]), "cpu_s": float(s[1]), "idle_steps": int(s[2]),
                        "cpu_fraction": float(s[1] / s[0]) if s[0] > 0 else 0.0}
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
        "setup_s": setup_s, "setup_bytes": setup_bytes, "idle": idle,
        "machine_steps": rows_by_step,
    }
    writer.write(summary)
    writer.close()
    print(f"done: {len(steps)} steps, all verified: {all_ok}, "
          f"wall {summary['total_wall_s']:.4f} s vs predicted {summary['total_predicted_s']:.4f} s",
          flush=True)
    if not all_ok:
        print("mpi-coded: error: decoded results did not match X w_t", file=sys.stderr)
        return 1
    return 0
