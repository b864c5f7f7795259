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

from mpi_coded.analysis.network import (
    ITEMSIZE,
    Traffic,
    bytes_by_host,
    gather_traffic,
    shuffle_traffic,
)
from mpi_coded.coded.code import algorithm_names
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.locate import WrongOutput
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.shuffle import ShufflePlan
from mpi_coded.results import (
    CodedAbandoned,
    CodedConfig,
    CodedRun,
    CodedServerMap,
    CodedSummary,
    LinkBytes,
    PhaseBytes,
    RunContext,
)
from mpi_coded.runtime.coded.setup import peak_rss_mb
from mpi_coded.runtime.core import linkstats
from mpi_coded.runtime.core.inbox import Msg
from mpi_coded.runtime.core.linkstats import Counters, Span

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
    lost: list[int] = field(default_factory=list)
    """Servers found dead during this repetition."""
    lost_at: dict[int, float] = field(default_factory=dict)
    """Each of :attr:`lost` -> the Unix time the master knew it dead."""
    abandoned: tuple[str, str] | None = None
    """(phase, why): a finisher's death ended the repetition there (no outputs)."""
    link: list[Counters | None] = field(default_factory=list)
    """The master's link counters at each :attr:`t` (:mod:`~mpi_coded.runtime.core.linkstats`)."""
    attempt: int = 0
    """0, or how many earlier attempts of this repetition decoded wrong outputs."""
    without: list[int] = field(default_factory=list)
    """Servers this attempt's map end leaves out (named wrong in an earlier attempt)."""
    wrong: list[WrongOutput] = field(default_factory=list)
    """The wrong map outputs and payloads found in this repetition so far."""
    rerun_s: float = 0.0
    """Seconds of the earlier attempts."""
    resumed: bool = False
    """No encode: every server's map of the earlier attempt resumed where it stopped, and
    the outputs decoded from the servers but :attr:`without` (the spare finishers)."""
    quarantined: list[int] = field(default_factory=list)
    """Servers every attempt's map end leaves out from the start (caught answering wrong
    in an earlier repetition, or lost for it: :mod:`mpi_coded.coded.quarantine`)."""
    probation: list[int] = field(default_factory=list)
    """Servers this repetition uses on probation."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """This repetition's quarantine events (``{server, rank, host, event}``)."""

    def mark(self) -> float:
        """Read the clock (and the link counters) at the end of a phase; its seconds."""
        self.link.append(linkstats.read())
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
    sent = {**shs, **unreported(plan, r, field_name)}
    mc_values = int(sum(v["multicast_values"] for v in sent.values()))
    uc_values = int(sum(v["unicast_values"] for v in sent.values()))
    measured = Fraction(mc_values + uc_values, p.m * p.N)
    analytic = p.spec.declared_load(p)
    mismatch = p.spec.load_mismatch(p, plan.load - plan.padding / (p.m * p.N))
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
        bytes_on_wire=int(sum(v["bytes_sent"] for v in sent.values())),
        verified=bool(ok) and mismatch is None, max_error=float(err), verify=verify,
        load_check=mismatch,
        encoder=algorithms(r.encode, "encoder"), decoder=algorithms(r.reduce, "decoder"),
        server_encoder=by_server(r.encode, "encoder", _names),
        server_decoder=by_server(r.reduce, "decoder", _names),
        peak_rss_mb=rss, max_peak_rss_mb=max(rss.values()),
        server_encode_s=by_server(r.encode, "encode_s"), server_map=server_maps(r.map),
        server_shuffle_s=by_server(shs, "shuffle_s"), server_plan_s=by_server(shs, "plan_s"),
        server_groups_s=by_server(shs, "groups_s"),
        server_groups_created=by_server(shs, "groups_created", int),
        server_decode_s=by_server(r.reduce, "decode_s"), unresponsive=r.unresponsive,
        lost=r.lost, lost_at={str(s): t for s, t in sorted(r.lost_at.items())},
        hosts=hosts, link=link_part(job, field_name, r, plan, hosts),
        wrong_answers=[w.to_dict() for w in r.wrong] or None, rerun=r.attempt or None,
        without=r.without or None, rerun_s=r.rerun_s if r.attempt else None,
        resumed=r.resumed or None, quarantined=r.quarantined or None,
        probation=r.probation or None, quarantine=r.events or None)


def unreported(plan: ShufflePlan, r: Repetition, field_name: str) -> Stats:
    """The shuffle's values and bytes of finishers that sent their part and died before
    reporting it (``fault_tolerance = "ulfm"``: the reducers got every message, so the
    repetition decoded), from the plan; their times stay unknown."""
    out: Stats = {}
    for s in r.end.finishers:
        if s in r.shuffle:
            continue
        mc, uc = plan.sends(s)
        mcv = sum(plan.multicasts[i].length for i in mc)
        mcb = sum(plan.multicasts[i].length * len(plan.multicasts[i].receivers) for i in mc)
        ucv = sum(plan.unicasts[i].size for i in uc)
        out[s] = {"multicast_values": float(mcv), "unicast_values": float(ucv),
                  "bytes_sent": float((mcb + ucv) * ITEMSIZE[field_name])}
    return out


def abandoned_line(job: CodedJob, field_name: str, r: Repetition,
                   hosts: dict[str, str] | None = None) -> CodedAbandoned:
    """The line of a repetition a finisher's death ended (``r.abandoned``)."""
    assert r.abandoned is not None
    p = job.params
    phase, why = r.abandoned
    return CodedAbandoned(
        scheme=p.scheme, K=p.K, q=p.q, mu=str(p.mu), rows_per_batch=p.rows_per_batch,
        n=p.n, N=p.N, T=p.T, field=field_name, rep=r.rep, phase=phase, why=why, lost=r.lost,
        lost_at={str(s): t for s, t in sorted(r.lost_at.items())},
        Q=list(r.end.Q), extra=list(r.end.extra), finishing_order=r.finished,
        missing={str(s): int(v["messages_missing"]) for s, v in sorted(r.shuffle.items())},
        encode_s=r.seconds(0), map_s=r.seconds(1), phase_s=r.t[-1] - r.t[-2],
        total_s=r.t[-1] - r.t[0], hosts=hosts)


PHASES = ("encode", "map", "shuffle", "reduce")
"""The phases of a repetition, in order (the keys of ``link_bytes`` and ``plan_bytes``)."""


def link_spans(r: Repetition, hosts: dict[str, str]) -> list[tuple[str, dict[str, list[Span]]]]:
    """Per phase, the link spans that bound it on each host (linkstats module docstring).

    The master's host: the master's marks (:attr:`Repetition.link`; it marks a phase's end
    once every report of it is in).  Every other host: its servers that took part, each
    from the counters it read at its start and end of the phase, except that the map is
    bounded by the finishers' map ends (a late server's stop comes after the shuffle
    began; a host without a finisher: its late servers'), and the shuffle of a host with
    reducers by the earliest reduce order one of them took (every shuffle message had
    arrived by then, and no output had left).
    """
    master = hosts["0"]
    marks = {p: (r.link[i], r.link[i + 1]) for i, p in enumerate(PHASES) if i + 1 < len(r.link)}
    finished = {s: r.map[s] for s in r.finished if s in r.map}
    late = {s: v for s, v in r.map.items() if s not in finished}
    out: list[tuple[str, dict[str, list[Span]]]] = []
    for phase, stats in (("encode", r.encode), ("map", finished), ("shuffle", r.shuffle),
                         ("reduce", r.reduce)):
        spans = _by_host(stats, hosts, master)
        if phase == "map":
            spans = {**_by_host(late, hosts, master), **spans}
        if phase == "shuffle":
            for h, starts in _by_host(r.reduce, hosts, master).items():
                first = linkstats.earliest(s for s, _ in starts)
                spans[h] = [(linkstats.earliest(s for s, _ in spans.get(h, [])), first)]
        if phase in marks:
            spans[master] = [marks[phase]]
        out.append((phase, spans))
    return out


def _by_host(stats: Stats, hosts: dict[str, str], master: str) -> dict[str, list[Span]]:
    """The servers' spans of ``stats`` by host, the master's host left out."""
    out: dict[str, list[Span]] = {}
    for s, v in stats.items():
        h = hosts[str(s + 1)]
        if h != master:
            out.setdefault(h, []).append(linkstats.span_of(v))
    return out


def plan_phases(plan: ShufflePlan, field_name: str, multicast: str,
                hosts: dict[str, str]) -> PhaseBytes:
    """The network model's bytes per phase and host for ``plan``: the shuffle (each
    multicast as ``multicast`` carries it) and, in the reduce, the reducers' outputs to
    the master; nothing in encode and map (orders and statistics only)."""
    item = ITEMSIZE[field_name]
    host_of = {int(k): v for k, v in hosts.items()}
    per = {"shuffle": shuffle_traffic(plan, item, multicast), "reduce": gather_traffic(plan, item)}
    return {p: bytes_by_host(per.get(p, Traffic()), host_of) for p in PHASES}


def link_part(job: CodedJob, field_name: str, r: Repetition, plan: ShufflePlan,
              hosts: dict[str, str] | None) -> LinkBytes | None:
    """The repetition's ``link_bytes`` beside its ``plan_bytes`` (None on one host without a
    described network: there the ranks share memory, linkstats.measured)."""
    if not hosts or not linkstats.measured(linkstats.described_network(), hosts.values()):
        return None
    link = linkstats.host_phases(link_spans(r, hosts), hosts.values())
    unread = all(v is None for by_host in link.values() for v in by_host.values())
    return LinkBytes(link_bytes=None if unread else link,
                     plan_bytes=plan_phases(plan, field_name, job.multicast, hosts))


def _names(mask: float) -> str:
    return algorithm_names(int(mask))


def summary_line(reps: int, all_ok: bool, totals: list[float],
                 lost: list[int] | None = None,
                 abandoned: list[int] | None = None,
                 ended_early: str | None = None, wrong: int = 0,
                 reruns: int = 0, events: dict[str, int] | None = None,
                 lost_wrong: list[int] | None = None) -> CodedSummary:
    """The last line of a job (``totals``: every decoded repetition's ``total_s``; ``lost``:
    the servers found dead; ``abandoned``: the repetitions a death ended; ``ended_early``:
    why it ended before its last repetition; ``wrong``: the wrong outputs named;
    ``reruns``: the attempts run again; ``events``: the quarantine events by kind;
    ``lost_wrong``: the servers lost for answering wrong)."""
    return CodedSummary(reps=reps, all_verified=all_ok and not ended_early,
                        mean_total_s=float(np.mean(totals)) if totals else 0.0,
                        lost=list(lost or []), abandoned=list(abandoned or []),
                        ended_early=ended_early, wrong_answers=wrong or None,
                        reruns=reruns or None, quarantine=dict(events or {}) or None,
                        lost_wrong=list(lost_wrong or []) or None)
