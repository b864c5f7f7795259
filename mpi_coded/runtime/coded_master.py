"""The master (rank 0) of the coded matrix-vector job (SPEC B.2).

Per repetition, every phase is started by the master's order and timed by
the master until the last server reports: encode (all ``K``), map (until the
map-end rule holds on the real finishing order; then MAP_END tells everyone
``Q`` and the extra servers, and the others stop at their next chunk),
shuffle (until every finisher has sent and received its part of the plan),
reduce (until every reducer's decoded outputs are in).  The master then
verifies every ``y_i`` against the direct ``A x_i`` and appends one JSON line.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.loads import scheme_load, unified_load
from mpi_coded.coded.mapend import map_end, map_phase_done
from mpi_coded.coded.placement import rank_of
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.results import ResultsWriter, run_context
from mpi_coded.runtime import protocol as P
from mpi_coded.runtime.coded_common import build_setup, encode_map_end
from mpi_coded.runtime.coded_server import ENCODE, MAP, REDUCE, SHUFFLE
from mpi_coded.runtime.guard import Phase
from mpi_coded.runtime.inbox import Inbox
from mpi_coded.runtime.wait import (
    ACTIVE_MAX_SLEEP,
    DeadlineExceeded,
    deadline_in,
    poll_until,
    wait_all,
)

REAL_TOLERANCE = 1e-6


def analytic_load(job: CodedJob) -> Fraction:
    """The paper's load formula for the scheme (bdc: the unified load it matches)."""
    p = job.params
    if p.scheme == "bdc":
        return unified_load(p.K, p.q, p.mu).load
    return scheme_load(p.scheme, p.K, p.q, p.mu).load


def master_main(job: CodedJob, comm: MPI.Comm, phase: Phase, out: str | None) -> int:
    p = job.params
    K = p.K
    servers = list(range(K))
    phase.set("setup")
    setup = build_setup(job)
    setup.field.warm_up()
    field, pl = setup.field, setup.placement
    writer = ResultsWriter(out)
    ctx = run_context()
    ctx.update(mpi=MPI.Get_library_version().splitlines()[0].strip(),
               world_size=comm.Get_size())
    writer.write({"kind": "config", "job": "coded", **job.to_dict(), **ctx})
    want = field.matmul(setup.A, setup.X)  # the direct product, for verification
    inbox = {s: Inbox(comm, rank_of(s)) for s in servers}
    host = {s: "?" for s in servers}
    late_map = {s: -1 for s in servers}  # repetition whose MAP_DONE is still to come

    def name(who: Any) -> str:
        return ", ".join(f"server {s} = rank {rank_of(s)} ({host[s]})" for s in sorted(who))

    def poll(s: int, kind: P.Kind, rep: int, deadline: float
             ) -> tuple[P.Header, np.ndarray | None] | None:
        """Next message of ``kind`` from ``s``; a late MAP_DONE of an earlier rep is dropped."""
        while True:
            r = inbox[s].test({kind, P.Kind.MAP_DONE}, None, deadline)
            if r is None:
                return None
            h = r[0]
            if h.kind == P.Kind.MAP_DONE and kind != P.Kind.MAP_DONE or \
                    h.kind == P.Kind.MAP_DONE and h.step < rep:
                if h.kind != P.Kind.MAP_DONE or h.step != late_map[s]:
                    raise P.WireError(f"unexpected {h.kind.name} (rep {h.step}) from {name([s])}")
                late_map[s] = -1
                continue
            if h.step != rep:
                raise P.WireError(f"{h.kind.name} for repetition {h.step} from {name([s])}, "
                                  f"expected {rep}")
            return r

    def collect(who: list[int], kind: P.Kind, rep: int, what: str, aux: int | None = None,
                timeout: float | None = None) -> dict[int, tuple[P.Header, np.ndarray | None]]:
        got: dict[int, tuple[P.Header, np.ndarray | None]] = {}
        deadline = deadline_in(job.timeout_s if timeout is None else timeout)

        def test() -> bool:
            for s in who:
                if s not in got:
                    r = poll(s, kind, rep, deadline)
                    if r is not None:
                        if aux is not None and r[0].aux != aux:
                            raise P.WireError(f"{kind.name} from {name([s])} for phase "
                                              f"{r[0].aux}, expected {aux}")
                        got[s] = r
            return len(got) == len(who)

        try:
            poll_until(test, deadline, what, ACTIVE_MAX_SLEEP)
        except DeadlineExceeded:
            if timeout is not None:
                return got  # a soft wait: the caller records who did not answer
            raise DeadlineExceeded(f"timed out after {job.timeout_s} s waiting for {what} "
                                   f"from {name(set(who) - set(got))}") from None
        return got

    def order(who: list[int], kind: P.Kind, rep: int, aux: int) -> None:
        reqs = []
        for s in who:
            reqs += P.isend(comm, rank_of(s), kind, rep, aux=aux)
        wait_all(reqs, deadline_in(job.timeout_s), f"{kind.name} to be delivered")

    for s, (_, payload) in collect(servers, P.Kind.READY, 0, "READY").items():
        host[s] = bytes(payload).decode(errors="replace") if payload is not None else "?"
    print(f"coded job: scheme={p.scheme} K={K} q={p.q} mu={p.mu} m={p.m} n={p.n} N={p.N} "
          f"T={p.T} field={field.name} straggler={job.straggler}", flush=True)
    print(f"{'rep':>3} {'Q':<20} {'extra':<8} {'encode_s':>9} {'map_s':>8} {'shuffle_s':>9} "
          f"{'reduce_s':>9} {'load':>8} {'ok':>3}", flush=True)
    all_ok = True
    for rep in range(job.reps):
        phase.set("encode", rep)
        t0 = time.perf_counter()
        order(servers, P.Kind.PHASE, rep, ENCODE)
        enc = collect(servers, P.Kind.DONE, rep, "encode", aux=ENCODE)
        t1 = time.perf_counter()

        phase.set("map", rep)
        order(servers, P.Kind.PHASE, rep, MAP)
        finished: list[int] = []
        map_stats: dict[int, np.ndarray] = {}
        deadline = deadline_in(job.timeout_s)

        def map_test(rep: int = rep, deadline: float = deadline,
                     finished: list[int] = finished,
                     map_stats: dict[int, np.ndarray] = map_stats) -> bool:
            for s in servers:
                if s not in map_stats:
                    r = poll(s, P.Kind.MAP_DONE, rep, deadline)
                    if r is not None:
                        assert r[1] is not None
                        map_stats[s] = r[1]
                        finished.append(s)
            return map_phase_done(pl, finished)

        try:
            poll_until(map_test, deadline, "map", ACTIVE_MAX_SLEEP)
        except DeadlineExceeded:
            raise DeadlineExceeded(
                f"timed out after {job.timeout_s} s: too few servers finished their map "
                f"(finished: {finished}; waiting on {name(set(servers) - set(finished))})"
            ) from None
        end = map_end(pl, finished)
        t2 = time.perf_counter()
        reqs = []
        msg = encode_map_end(end.Q, end.extra)
        for s in servers:
            reqs += P.isend(comm, rank_of(s), P.Kind.MAP_END, rep, msg)
        wait_all(reqs, deadline_in(job.timeout_s), "MAP_END to be delivered")

        phase.set("shuffle", rep)
        finishers = list(end.finishers)
        sh = collect(finishers, P.Kind.DONE, rep, "shuffle", aux=SHUFFLE)
        t3 = time.perf_counter()

        phase.set("reduce", rep)
        reducers = list(end.Q)
        order(reducers, P.Kind.PHASE, rep, REDUCE)
        outs = collect(reducers, P.Kind.OUTPUT, rep, "decoded outputs")
        t4 = time.perf_counter()
        red = collect(reducers, P.Kind.DONE, rep, "reduce", aux=REDUCE)

        # servers told to stop report their map at their next chunk; a stalled one is not
        # waited for beyond a grace period (its report is dropped when it comes)
        late = [s for s in servers if s not in map_stats]
        grace = min(job.timeout_s, 1.0 + 2 * (t2 - t1))
        for s, (_, st) in collect(late, P.Kind.MAP_DONE, rep, "late map reports",
                                  timeout=grace).items():
            assert st is not None
            map_stats[s] = st
        unresponsive = [s for s in late if s not in map_stats]
        for s in unresponsive:
            late_map[s] = rep

        plan = shuffle_plan(pl, end)
        y = field.zeros((p.m, p.N))
        for h, val in outs.values():
            assert val is not None
            y[:, h.aux:h.aux + val.shape[1]] = val
        err = field.max_error(y, want)
        ok = bool(err == 0 if field.exact else err <= REAL_TOLERANCE)
        all_ok = all_ok and ok
        mc_values = int(sum(sh[s][1][1] for s in finishers))  # type: ignore[index]
        uc_values = int(sum(sh[s][1][2] for s in finishers))  # type: ignore[index]
        wire = int(sum(sh[s][1][3] for s in finishers))  # type: ignore[index]
        measured = Fraction(mc_values + uc_values, p.m * p.N)
        analytic = analytic_load(job)
        rec: dict[str, Any] = {
            "kind": "run", "job": "coded", "rep": rep, "scheme": p.scheme, "K": K, "q": p.q,
            "mu": str(p.mu), "rows_per_batch": p.rows_per_batch, "m": p.m, "n": p.n, "N": p.N,
            "T": p.T, "field": field.name, "straggler": job.straggler, "seed": job.seed,
            "Q": list(end.Q), "extra": list(end.extra), "finishing_order": finished,
            "encode_s": t1 - t0, "map_s": t2 - t1, "shuffle_s": t3 - t2, "reduce_s": t4 - t3,
            "total_s": t4 - t0,
            "multicast_values": mc_values, "unicast_values": uc_values,
            "load_measured": float(measured), "load_measured_exact": str(measured),
            "load_analytic": float(analytic), "load_analytic_exact": str(analytic),
            "load_plan_exact": str(plan.load), "padding_values": str(plan.padding),
            "strategy": plan.strategy, "s_q": plan.s_q,
            "bytes_on_wire": wire,
            "verified": ok, "max_error": err,
            "server_encode_s": {str(s): float(enc[s][1][0]) for s in servers},  # type: ignore[index]
            "server_map": {str(s): {"compute_s": float(v[0]), "wall_s": float(v[1]),
                                    "target_s": float(v[2]), "rows_done": int(v[3]),
                                    "rows": int(v[4]), "stopped": bool(v[5])}
                           for s, v in sorted(map_stats.items())},
            "server_shuffle_s": {str(s): float(sh[s][1][0]) for s in finishers},  # type: ignore[index]
            "server_plan_s": {str(s): float(sh[s][1][4]) for s in finishers},  # type: ignore[index]
            "server_decode_s": {str(s): float(red[s][1][0]) for s in reducers},  # type: ignore[index]
            "unresponsive": unresponsive,
        }
        writer.write(rec)
        print(f"{rep:>3} {','.join(map(str, end.Q)):<20} {','.join(map(str, end.extra)):<8} "
              f"{rec['encode_s']:>9.4f} {rec['map_s']:>8.4f} {rec['shuffle_s']:>9.4f} "
              f"{rec['reduce_s']:>9.4f} {float(measured):>8.4f} {'yes' if ok else 'NO':>3}",
              flush=True)

    phase.set("stop")
    order(servers, P.Kind.STOP, job.reps, 0)
    runs = [r for r in writer.lines if r.get("kind") == "run"]
    writer.write({"kind": "summary", "job": "coded", "reps": job.reps, "all_verified": all_ok,
                  "mean_total_s": float(np.mean([r["total_s"] for r in runs]))})
    writer.close()
    bye = collect(servers, P.Kind.BYE, job.reps, "BYE", timeout=job.timeout_s)
    if len(bye) < K:
        raise DeadlineExceeded(f"{name(set(servers) - set(bye))} did not stop within "
                               f"{job.timeout_s} s (results are complete)")
    if not all_ok:
        print("mpi-coded: error: decoded outputs did not match A x_i", file=sys.stderr)
        return 1
    return 0
