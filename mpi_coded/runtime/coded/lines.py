"""The coded job's result lines, built from what the master measured.

A :class:`Repetition` collects, phase by phase, what the master times and what the
servers report (their statistics records, :mod:`mpi_coded.runtime.coded.setup`);
:func:`repetition_line` turns it into the repetition's results line, :func:`config_line`
and :func:`summary_line` build the first and the last line of a job.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.coded.code import algorithm_names
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.shuffle import ShufflePlan
from mpi_coded.results import CodedConfig, CodedRun, CodedServerMap, CodedSummary, RunContext
from mpi_coded.runtime.coded.setup import peak_rss_mb
from mpi_coded.runtime.core.inbox import Msg

Stats = dict[int, dict[str, float]]
"""Statistics records by server."""


@dataclass
class Repetition:
    """What the master measures in one repetition, phase by phase."""

    rep: int
    t: list[float] = field(default_factory=list)
    """Clock at the start, after encode, at the map's end, after shuffle, with the outputs in."""
    encode: Stats = field(default_factory=dict)
    map: Stats = field(default_factory=dict)
    """Every server's map report, the finishers' first (in finishing order)."""
    finished: list[int] = field(default_factory=list)
    end: MapEnd = MapEnd(())
    shuffle: Stats = field(default_factory=dict)
    outputs: dict[int, Msg] = field(default_factory=dict)
    reduce: Stats = field(default_factory=dict)
    unresponsive: list[int] = field(default_factory=list)

    def mark(self) -> float:
        """Read the clock at the end of a phase; the phase's seconds."""
        self.t.append(time.perf_counter())
        return self.t[-1] - self.t[-2] if len(self.t) > 1 else 0.0

    def seconds(self, i: int) -> float:
        """Seconds of phase ``i`` (0: encode ... 3: reduce)."""
        return self.t[i + 1] - self.t[i]



def algorithms(stats: Stats, key: str) -> str:
    """The algorithms (``encoder`` or ``decoder`` bit masks) any server of ``stats`` ran."""
    out = 0
    for v in stats.values():
        out |= int(v[key])
    return algorithm_names(out)


def peak_rss(*books: Stats) -> dict[str, float]:
    """Peak resident memory (MiB) of the master and of every server in ``books``."""
    rss: dict[str, float] = {"master": peak_rss_mb()}
    for book in books:
        for s, v in book.items():
            rss[str(s)] = max(rss.get(str(s), 0.0), v["peak_rss_mb"])
    return rss


def config_line(job: CodedJob, run: RunContext) -> CodedConfig:
    """The first line of a job: its parameters and where and with what it runs."""
    return CodedConfig.of(job.to_dict(), run)


def server_maps(stats: Stats) -> dict[str, CodedServerMap]:
    """Every reported map, by server."""
    return {str(s): CodedServerMap(compute_s=v["compute_s"], wall_s=v["wall_s"],
                                   target_s=v["target_s"], rows_done=int(v["rows_done"]),
                                   rows=int(v["rows"]), stopped=bool(v["stopped"]))
            for s, v in sorted(stats.items())}


def by_server(stats: Stats, key: str, convert: Callable[[float], Any] = float,
              ) -> dict[str, Any]:
    """``key`` of every server's statistics, keyed by the server's number as a string."""
    return {str(s): convert(v[key]) for s, v in stats.items()}


def repetition_line(job: CodedJob, field_name: str, r: Repetition, plan: ShufflePlan,
                    verify: str, ok: bool, err: float,
                    hosts: dict[str, str] | None = None) -> CodedRun:
    """The line of one repetition."""
    p = job.params
    shs = r.shuffle
    mc_values = int(sum(v["multicast_values"] for v in shs.values()))
    uc_values = int(sum(v["unicast_values"] for v in shs.values()))
    measured = Fraction(mc_values + uc_values, p.m * p.N)
    analytic = p.spec.paper_load(p)
    rss = peak_rss(r.encode, r.map, shs, r.reduce)
    return CodedRun(
        scheme=p.scheme, K=p.K, q=p.q, mu=str(p.mu), rows_per_batch=p.rows_per_batch,
        n=p.n, N=p.N, T=p.T, field=field_name, rep=r.rep, m=p.m, straggler=job.straggler,
        seed=job.seed, Q=list(r.end.Q), extra=list(r.end.extra), finishing_order=r.finished,
        encode_s=r.seconds(0), map_s=r.seconds(1), shuffle_s=r.seconds(2),
        reduce_s=r.seconds(3), total_s=r.t[4] - r.t[0],
        multicast_values=mc_values, unicast_values=uc_values,
        load_measured=float(measured), load_measured_exact=str(measured),
        load_analytic=float(analytic), load_analytic_exact=str(analytic),
        load_plan_exact=str(plan.load), padding_values=str(plan.padding),
        strategy=plan.strategy, s_q=plan.s_q,
        bytes_on_wire=int(sum(v["bytes_sent"] for v in shs.values())),
        verified=bool(ok), max_error=float(err), verify=verify,
        encoder=algorithms(r.encode, "encoder"), decoder=algorithms(r.reduce, "decoder"),
        server_encoder=by_server(r.encode, "encoder", _names),
        server_decoder=by_server(r.reduce, "decoder", _names),
        peak_rss_mb=rss, max_peak_rss_mb=max(rss.values()),
        server_encode_s=by_server(r.encode, "encode_s"), server_map=server_maps(r.map),
        server_shuffle_s=by_server(shs, "shuffle_s"), server_plan_s=by_server(shs, "plan_s"),
        server_decode_s=by_server(r.reduce, "decode_s"), unresponsive=r.unresponsive,
        hosts=hosts)


def _names(mask: float) -> str:
    return algorithm_names(int(mask))


def summary_line(reps: int, all_ok: bool, totals: list[float]) -> CodedSummary:
    """The last line of a job (``totals``: every repetition's ``total_s``)."""
    return CodedSummary(reps=reps, all_verified=all_ok, mean_total_s=float(np.mean(totals)))
