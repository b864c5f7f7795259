"""The master (rank 0) of the coded matrix-vector job (docs/theory.md, B.2).

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

from mpi_coded.coded.code import algorithm_names
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.mapend import map_end, map_phase_done
from mpi_coded.coded.phases import ENCODE, MAP, REDUCE, SHUFFLE
from mpi_coded.coded.placement import rank_of
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.results import ResultsWriter
from mpi_coded.runtime.coded.setup import (
    ENCODE_STATS,
    MAP_STATS,
    REDUCE_STATS,
    SHUFFLE_STATS,
    Verifier,
    build_setup,
    encode_map_end,
    padding_warning,
    peak_rss_mb,
    working_bytes,
)
from mpi_coded.runtime.core import records
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import Phase
from mpi_coded.runtime.core.inbox import Msg
from mpi_coded.runtime.core.memory import prefault
from mpi_coded.runtime.core.peers import Peers
from mpi_coded.runtime.core.run import run_record
from mpi_coded.runtime.core.wait import DeadlineExceeded, deadline_in, wait_all


def _union(masks: Any) -> int:
    out = 0
    for m in masks:
        out |= int(m)
    return out


def progress(rep: int, phase: str, seconds: float, what: str) -> None:
    """One progress line per phase on rank 0 (long jobs take minutes)."""
    print(f"  rep {rep} {phase:<7} {seconds:9.3f} s  {what}".rstrip(), flush=True)


def master_main(job: CodedJob, comm: MPI.Comm, phase: Phase, out: str | None) -> int:
    p = job.params
    K = p.K
    servers = list(range(K))
    phase.set("setup")
    setup = build_setup(job)
    setup.field.warm_up()
    field, pl = setup.field, setup.placement
    prefault(working_bytes(job, field, p.m, copies=3))  # the reducers' outputs arrive here
    warning = padding_warning(p, pl)
    if warning:
        print(f"mpi-coded: warning: {warning}", file=sys.stderr, flush=True)
    writer = ResultsWriter(out)
    writer.write({"kind": "config", "job": "coded", **job.to_dict(), **run_record(comm)})
    t_verify = time.perf_counter()
    verifier = Verifier(setup)  # the direct product (or its projections), for verification
    t_verify = time.perf_counter() - t_verify
    peers = Peers(comm, [rank_of(s) for s in servers],
                  label=lambda r: f"server {r - 1} = rank {r}")
    late_map = {s: -1 for s in servers}  # repetition whose MAP_DONE is still to come

    def stale(r: int, h: P.Header) -> bool:
        """A MAP_DONE the previous repetition left behind (a server that answered late)."""
        if h.kind == P.Kind.MAP_DONE and h.step == late_map[r - 1]:
            late_map[r - 1] = -1
            return True
        return False

    def collect(who: list[int], kind: P.Kind, rep: int, what: str, aux: int | None = None,
                ) -> dict[int, Msg]:
        got, _ = peers.collect([rank_of(s) for s in who], [kind], rep, aux=aux,
                               hard=deadline_in(job.timeout_s),
                               what=f"{what} (timeout {job.timeout_s} s)", stale=stale)
        return {r - 1: msgs[0] for r, msgs in got.items()}

    def soft_collect(who: list[int], kind: P.Kind, rep: int, seconds: float) -> dict[int, Msg]:
        """What ``who`` send within ``seconds``; the silent ones are left out."""
        t_end = deadline_in(seconds)
        got, _ = peers.collect([rank_of(s) for s in who], [kind], rep, soft=t_end,
                               hard=t_end + 1.0, what=kind.name, stale=stale)
        return {r - 1: msgs[0] for r, msgs in got.items() if msgs}

    def order(who: list[int], kind: P.Kind, rep: int, aux: int) -> None:
        peers.order([rank_of(s) for s in who], kind, rep, aux, job.timeout_s)

    def stats(msg: Msg, record: records.Record) -> dict[str, float]:
        return record.unpack(msg[1], msg[0].source)

    peers.handshake(job.timeout_s)
    print(f"coded job: scheme={p.scheme} K={K} q={p.q} mu={p.mu} m={p.m} n={p.n} N={p.N} "
          f"T={p.T} field={field.name} straggler={job.straggler}", flush=True)
    print(f"  setup: code {type(getattr(setup.code, 'sub', setup.code)).__name__} "
          f"(n={setup.code.layout.n}, k={setup.code.layout.k}, partitions="
          f"{setup.code.layout.T}), verification {verifier.method} ({t_verify:.2f} s)",
          flush=True)
    print(f"{'rep':>3} {'Q':<20} {'extra':<8} {'encode_s':>9} {'map_s':>8} {'shuffle_s':>9} "
          f"{'reduce_s':>9} {'load':>8} {'ok':>3}", flush=True)
    all_ok = True
    for rep in range(job.reps):
        phase.set("encode", rep)
        t0 = time.perf_counter()
        order(servers, P.Kind.PHASE, rep, ENCODE)
        enc = collect(servers, P.Kind.DONE, rep, "encode", aux=ENCODE)
        t1 = time.perf_counter()
        enc_stats = {s: stats(enc[s], ENCODE_STATS) for s in servers}
        encoders = algorithm_names(_union(v["encoder"] for v in enc_stats.values()))
        progress(rep, "encode", t1 - t0, f"encoder {encoders}")

        phase.set("map", rep)
        order(servers, P.Kind.PHASE, rep, MAP)
        try:
            got, _ = peers.collect(
                [rank_of(s) for s in servers], [P.Kind.MAP_DONE], rep,
                hard=deadline_in(job.timeout_s), what="map", stale=stale,
                until=lambda done: map_phase_done(pl, [r - 1 for r in done]))
        except DeadlineExceeded as exc:
            raise DeadlineExceeded(f"{exc}: too few servers finished their map within "
                                   f"{job.timeout_s} s") from None
        map_stats = {r - 1: stats(msgs[0], MAP_STATS) for r, msgs in got.items()}
        finished = list(map_stats)
        end = map_end(pl, finished)
        t2 = time.perf_counter()
        progress(rep, "map", t2 - t1, f"Q={','.join(map(str, end.Q))}"
                 + (f" extra={','.join(map(str, end.extra))}" if end.extra else ""))
        reqs = peers.send([rank_of(s) for s in servers], P.Kind.MAP_END, rep,
                          encode_map_end(end.Q, end.extra))
        wait_all(reqs, deadline_in(job.timeout_s), "MAP_END to be delivered")

        phase.set("shuffle", rep)
        finishers = list(end.finishers)
        sh = collect(finishers, P.Kind.DONE, rep, "shuffle", aux=SHUFFLE)
        t3 = time.perf_counter()
        progress(rep, "shuffle", t3 - t2, "")

        phase.set("reduce", rep)
        reducers = list(end.Q)
        order(reducers, P.Kind.PHASE, rep, REDUCE)
        outs = collect(reducers, P.Kind.OUTPUT, rep, "decoded outputs")
        t4 = time.perf_counter()
        red = collect(reducers, P.Kind.DONE, rep, "reduce", aux=REDUCE)
        red_stats = {s: stats(red[s], REDUCE_STATS) for s in reducers}
        decoders = algorithm_names(_union(v["decoder"] for v in red_stats.values()))
        progress(rep, "reduce", t4 - t3, f"decoder {decoders}")

        # servers told to stop report their map at their next chunk; a stalled one is not
        # waited for beyond a grace period (its report is dropped when it comes)
        late = [s for s in servers if s not in map_stats]
        grace = min(job.timeout_s, 1.0 + 2 * (t2 - t1))
        for s, msg in soft_collect(late, P.Kind.MAP_DONE, rep, grace).items():
            map_stats[s] = stats(msg, MAP_STATS)
        unresponsive = [s for s in late if s not in map_stats]
        for s in unresponsive:
            late_map[s] = rep

        plan = shuffle_plan(pl, end)
        y = field.zeros((p.m, p.N))
        for h, val in outs.values():
            assert val is not None
            y[:, h.aux:h.aux + val.shape[1]] = val
        t_check = time.perf_counter()
        err = verifier.max_error(y)
        ok = field.verified(err)
        progress(rep, "verify", time.perf_counter() - t_check,
                 f"{verifier.method}: {'ok' if ok else 'WRONG'}")
        all_ok = all_ok and ok
        shs = {s: stats(sh[s], SHUFFLE_STATS) for s in finishers}
        rss: dict[str, float] = {"master": peak_rss_mb()}
        for book in (enc_stats, map_stats, shs, red_stats):
            for s, v in book.items():
                rss[str(s)] = max(rss.get(str(s), 0.0), v["peak_rss_mb"])
        mc_values = int(sum(v["multicast_values"] for v in shs.values()))
        uc_values = int(sum(v["unicast_values"] for v in shs.values()))
        wire = int(sum(v["bytes_sent"] for v in shs.values()))
        measured = Fraction(mc_values + uc_values, p.m * p.N)
        analytic = p.spec.paper_load(p)
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
            "verified": ok, "max_error": err, "verify": verifier.method,
            "encoder": encoders, "decoder": decoders,
            "server_encoder": {str(s): algorithm_names(int(v["encoder"]))
                               for s, v in enc_stats.items()},
            "server_decoder": {str(s): algorithm_names(int(v["decoder"]))
                               for s, v in red_stats.items()},
            "peak_rss_mb": rss, "max_peak_rss_mb": max(rss.values()),
            "server_encode_s": {str(s): enc_stats[s]["encode_s"] for s in servers},
            "server_map": {str(s): {"compute_s": v["compute_s"], "wall_s": v["wall_s"],
                                    "target_s": v["target_s"], "rows_done": int(v["rows_done"]),
                                    "rows": int(v["rows"]), "stopped": bool(v["stopped"])}
                           for s, v in sorted(map_stats.items())},
            "server_shuffle_s": {str(s): shs[s]["shuffle_s"] for s in finishers},
            "server_plan_s": {str(s): shs[s]["plan_s"] for s in finishers},
            "server_decode_s": {str(s): red_stats[s]["decode_s"] for s in reducers},
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
    bye = soft_collect(servers, P.Kind.BYE, job.reps, job.timeout_s)
    if len(bye) < K:
        raise DeadlineExceeded(f"{peers.name(rank_of(s) for s in servers if s not in bye)} "
                               f"did not stop within {job.timeout_s} s (results are complete)")
    if not all_ok:
        print("mpi-coded: error: decoded outputs did not match A x_i", file=sys.stderr)
        return 1
    return 0
