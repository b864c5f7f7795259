"""The master (rank 0) of the elastic job.

Setup: build ``X`` (seeded, or from ``.npy``), pad it to ``L`` blocks, encode
``X~_n = sum_l G[n, l] X_l`` with the systematic MDS generator and send each
machine its block once (SPEC A.1).  Each step: plan (SPEC A.3-A.5 or the
cyclic baseline), send every available machine its row ranges and ``w_t``,
tell preempted machines to idle, collect, decode each row set with the cached
``G_P^{-1}`` (SPEC A.2), verify against the direct ``X w_t`` and append one
JSON line.  Nothing is re-sent to a machine when the available set changes.
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
from mpi_coded.runtime.wait import ACTIVE_MAX_SLEEP, deadline_in, wait_all

REAL_TOLERANCE = 1e-8


def make_data(cfg: CECConfig, field: Field) -> np.ndarray:
    """``X`` (``q x r``): from ``cfg.data`` or generated from ``cfg.seed``."""
    if cfg.data:
        x = np.load(cfg.data, allow_pickle=False)
        if field.exact and (x.min() < 0 or x.max() >= field.order):
            raise ValueError(f"data: entries of X must be in [0, {field.order}) for {field.name}")
        return np.ascontiguousarray(x, dtype=field.dtype)
    return field.random((cfg.rows, cfg.cols), np.random.default_rng([cfg.seed, 1]))


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


class Table:
    """A readable table on rank 0's stdout while the job runs."""

    HEAD = (f"{'step':>4} {'available':<18} {'pred_s':>8} {'wall_s':>8} {'ratio':>6} "
            f"{'decode_ms':>9} {'max_err':>9} {'waste':>7} ok")

    def __init__(self) -> None:
        print(self.HEAD, flush=True)

    def row(self, rec: dict[str, Any]) -> None:
        avail = ",".join(str(a) for a in rec["available"])
        ratio = rec["wall_s"] / rec["predicted_s"] if rec["predicted_s"] > 0 else float("nan")
        print(f"{rec['step']:>4} {avail:<18} {rec['predicted_s']:>8.4f} {rec['wall_s']:>8.4f} "
              f"{ratio:>6.3f} {rec['decode_s'] * 1e3:>9.3f} {rec['max_error']:>9.2e} "
              f"{rec['transition_waste']:>7} {'yes' if rec['verified'] else 'NO'}", flush=True)


def master_main(cfg: CECConfig, comm: MPI.Comm, phase: Phase, out: str | None) -> int:
    field = get_field(cfg.field)
    R, N = cfg.rows_per_block, cfg.N
    machines = list(range(1, N + 1))
    writer = ResultsWriter(out)
    ctx = run_context()
    ctx.update(mpi=MPI.Get_library_version().splitlines()[0].strip(),
               world_size=comm.Get_size())
    writer.write({"kind": "config", "job": "cec", **cfg.to_dict(), **ctx})

    phase.set("setup")
    field.warm_up()
    x = make_data(cfg, field)
    g = systematic_mds(field, N, cfg.L)
    decoder = DecoderCache(field, g)
    coded = encode_blocks(cfg, field, g, x)
    t0 = time.perf_counter()
    deadline = deadline_in(cfg.timeout_s)
    reqs = []
    for n in machines:
        reqs += P.isend(comm, n, P.Kind.BLOCK, 0, coded[n - 1])
    wait_all(reqs, deadline, "machines to receive their coded blocks")
    P.gather(comm, machines, {P.Kind.READY}, 0, deadline=deadline, what="READY")
    setup_s = time.perf_counter() - t0
    setup_bytes = int(coded.nbytes)
    writer.write({"kind": "setup", "job": "cec", "setup_s": setup_s, "setup_bytes": setup_bytes,
                  "bytes_per_machine": int(coded[0].nbytes)})
    print(f"setup: {N} coded blocks of {R}x{cfg.cols} {field.name}, {setup_bytes} bytes "
          f"in {setup_s:.3f} s (sent once)", flush=True)

    table = Table()
    rng_w = np.random.default_rng([cfg.seed, 2])
    speeds = cfg.speed_map
    prev: StepPlan | None = None
    all_ok = True
    ratios: list[float] = []
    overheads: list[float] = []
    worst_cond = 1.0
    schedule = cfg.availability()
    for t, avail in enumerate(schedule, start=1):
        phase.set("step", t)
        plan = make_plan(cfg.policy, speeds, cfg.L, avail, rows=R)
        w = field.random(cfg.cols, rng_w)
        preempted = [n for n in machines if n not in plan.available]
        ranges = {n: np.array(plan.machine_ranges(n), dtype=np.int64).reshape(-1, 2)
                  for n in plan.available}
        deadline = deadline_in(cfg.timeout_s)
        t0 = time.perf_counter()
        reqs = []
        for n in plan.available:
            reqs += P.isend(comm, n, P.Kind.TASK, t, ranges[n])
            reqs += P.isend(comm, n, P.Kind.VECTOR, t, w)
        for n in preempted:
            reqs += P.isend(comm, n, P.Kind.IDLE, t)
        got = P.gather(comm, plan.available, {P.Kind.RESULT}, t, deadline=deadline,
                       what=f"step {t} results", max_sleep=ACTIVE_MAX_SLEEP)
        meta = P.gather(comm, plan.available, {P.Kind.META}, t, deadline=deadline,
                        what=f"step {t} timings")
        wait_all(reqs, deadline, f"step {t} orders to be delivered")
        t1 = time.perf_counter()
        results = {n: got[n][1] for n in plan.available}
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
        m = {n: meta[n][1] for n in plan.available}
        overrun = [n for n in plan.available if m[n][0] > m[n][2] > 0]  # type: ignore[index]
        if overrun:
            print(f"warning: step {t}: real compute exceeded the throttle target on machines "
                  f"{overrun}; the speeds are not what the config says", file=sys.stderr)
        bytes_step = sum(int(r.nbytes) + int(w.nbytes) for r in ranges.values()) + \
            sum(int(res.nbytes) for res in results.values() if res is not None)
        rec = {
            "kind": "step", "job": "cec", "step": t, "policy": cfg.policy, "field": field.name,
            "available": list(plan.available), "preempted": preempted,
            "load": {str(n): str(v) for n, v in plan.load},
            "rows": {str(n): c for n, c in plan.row_counts().items()},
            "sets": plan.to_dict()["sets"],
            "predicted_s": predicted, "wall_s": wall, "collect_s": t1 - t0, "decode_s": t2 - t1,
            "compute_s": {str(n): float(m[n][0]) for n in plan.available},  # type: ignore[index]
            "sleep_s": {str(n): float(m[n][1]) for n in plan.available},  # type: ignore[index]
            "throttle_overrun": overrun,
            "max_error": err, "verified": bool(ok), "condition": cond,
            "transition_waste": str(waste), "transition_waste_rows": float(waste * R),
            "bytes_step": bytes_step,
        }
        writer.write(rec)
        table.row(rec)
        if predicted > 0:
            ratios.append(wall / predicted)
        overheads.append(wall - predicted)
        prev = plan

    phase.set("stop")
    deadline = deadline_in(cfg.timeout_s)
    for n in machines:
        P.send(comm, n, P.Kind.STOP, len(schedule), deadline=deadline)
    stats = P.gather(comm, machines, {P.Kind.STATS}, len(schedule), deadline=deadline,
                     what="machine statistics")
    tables = P.gather(comm, machines, {P.Kind.STATS}, len(schedule), deadline=deadline,
                      what="machine step tables")
    idle = {}
    rows_by_step = {}
    for n in machines:
        s = stats[n][1]
        assert s is not None
        idle[str(n)] = {"wall_s": float(s[0]), "cpu_s": float(s[1]), "idle_steps": int(s[2]),
                        "cpu_fraction": float(s[1] / s[0]) if s[0] > 0 else 0.0}
        tb = tables[n][1]
        assert tb is not None
        rows_by_step[str(n)] = {str(int(r[0])): {"rows": int(r[1]), "idle": bool(r[2])}
                                for r in tb}
    summary = {
        "kind": "summary", "job": "cec", "steps": len(schedule), "policy": cfg.policy,
        "field": field.name, "all_verified": all_ok,
        "total_wall_s": sum(r["wall_s"] for r in writer.lines if r.get("kind") == "step"),
        "total_predicted_s": sum(r["predicted_s"] for r in writer.lines
                                 if r.get("kind") == "step"),
        "max_wall_over_predicted": max(ratios) if ratios else None,
        "overhead_ms_per_step": 1e3 * float(np.mean(overheads)) if overheads else None,
        "worst_condition": worst_cond, "decoder_cache": {"hits": decoder.hits,
                                                         "misses": decoder.misses},
        "setup_s": setup_s, "setup_bytes": setup_bytes, "idle": idle,
        "machine_steps": rows_by_step,
    }
    writer.write(summary)
    writer.close()
    print(f"done: {len(schedule)} steps, all verified: {all_ok}, "
          f"wall {summary['total_wall_s']:.4f} s vs predicted {summary['total_predicted_s']:.4f} s",
          flush=True)
    if not all_ok:
        print("mpi-coded: error: decoded results did not match X w_t", file=sys.stderr)
        return 1
    return 0
