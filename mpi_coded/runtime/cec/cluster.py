"""What the elastic master knows of its machines, shared by the job and its policies.

:class:`MachinePool` holds the links to the machines (:class:`~mpi_coded.runtime.core.peers.Peers`),
the speeds the plans use (the configured ones, or ``speeds = "auto"``: the
:class:`~mpi_coded.cec.estimate.SpeedEstimator` estimates learnt from every measured
answer, on time or late) and the suspects (:mod:`mpi_coded.cec.suspects`).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded.analysis.network import Traffic, bytes_by_host
from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.quarantine import Quarantine
from mpi_coded.cec.scenario import stragglers_at, true_speeds
from mpi_coded.cec.suspects import Suspects
from mpi_coded.faults import Fault
from mpi_coded.fields import get_field
from mpi_coded.results import LinkBytes, LostMachine, PhaseBytes
from mpi_coded.runtime.core import linkstats, records, ulfm
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import CannotGoOn, Terminated
from mpi_coded.runtime.core.linkstats import Span
from mpi_coded.runtime.core.peers import Peers
from mpi_coded.runtime.core.wait import deadline_in


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def payload(msg: tuple[P.Header, np.ndarray | None]) -> np.ndarray:
    """The array of a message that must carry one (a wire error naming the sender if not)."""
    h, arr = msg
    if arr is None:
        raise P.WireError(f"{h.kind.name} from rank {h.source} has no payload")
    return arr


class MachinePool:
    """The master's view of the cluster: links, speeds, suspects."""

    def __init__(self, cfg: CECConfig, comm: MPI.Comm, faults: tuple[Fault, ...],
                 rank_of: Mapping[int, int] | None = None) -> None:
        """``rank_of``: machine -> rank of a job from a store (machines without a rank are
        not in it: :meth:`lose` them); None: machine ``n`` is rank ``n``."""
        self.cfg, self.comm, self.faults = cfg, comm, faults
        self.field = get_field(cfg.field)
        # alive: a lost machine is removed
        self.machines = sorted(rank_of) if rank_of is not None else list(range(1, cfg.N + 1))
        self.links = Peers(comm, self.machines, on_lost=self.lose, where=rank_of)
        self.at: tuple[str, int] = ("setup", 0)  # the master's phase and step (for losses)
        self.lost: list[dict[str, Any]] = []  # ElasticSummary.lost, in order
        self.stand_ins: list[int] = []  # this step's (stand_in)
        self.joined: list[dict[str, Any]] = []  # ElasticSummary.joined, in order
        self.suspects = Suspects(cfg.suspect_after)
        # machines caught answering wrong (docs/theory.md A.10)
        self.quarantine = Quarantine(cfg.quarantine_steps, cfg.mercurial_strikes)
        # a late answer read before it is dropped (the coded steps' check: mpi_coded.cec.late)
        self.late_check: Callable[[P.Header, np.ndarray | None], None] | None = None
        self.estimator = cfg.speeds.make_estimator(list(range(1, cfg.N + 1)))
        self.observed = 0
        self.book = linkstats.HostBook()  # each host's last measured phase end
        self.link_at = linkstats.read()  # the master's link counters at its last mark

    def lose(self, n: int) -> None:
        """Machine ``n`` died (``fault_tolerance = "ulfm"``): it is planned, ordered and
        waited for no more."""
        if n in self.machines:
            self.machines.remove(n)
        phase, step = self.at
        self.lost.append(LostMachine(machine=n, host=self.links.host.get(n, "?"), step=step,
                                     phase=phase,
                                     detected_unix=self.links.lost.get(n)).to_dict())
        warn(f"{phase} {step}: machine {n} ({self.links.host.get(n, '?')}) died: lost; the "
             f"job goes on with {self.machines}")

    def absent(self, n: int) -> None:
        """Machine ``n`` has no rank in a job from a store (its host is not in this run, or
        no rank could hold or repair its block): lost from the start."""
        self.lost.append(LostMachine(machine=n, host="?", step=0, phase="store",
                                     detected_unix=None).to_dict())
        warn(f"store: machine {n} has no rank in this run (its host is not here, or its "
             f"block is not readable): lost; the job goes on with {self.machines}")

    def stand_in(self, t: int, env: list[int]) -> list[int]:
        """Step ``t``'s available machines without the lost ones; when that leaves fewer
        than ``L + S``, alive machines the schedule preempts stand in for the lost (the
        lowest ids first; :attr:`stand_ins`); fewer than ``L`` alive: CannotGoOn."""
        cfg = self.cfg
        alive = [n for n in env if n in self.machines]
        self.stand_ins = []
        if len(alive) == len(env) or len(alive) >= cfg.L + cfg.S:
            return alive
        if len(self.machines) < cfg.L:
            raise CannotGoOn(self.too_few(f"step {t}"))
        spare = [n for n in self.machines if n not in alive]
        self.stand_ins = spare[: cfg.L + cfg.S - len(alive)]
        warn(f"step {t}: machines {self.stand_ins} stand in for the lost "
             f"{[n for n in env if n not in self.machines]}")
        return sorted(alive + self.stand_ins)

    def ended(self, exc: Exception) -> str:
        """Why the job ended early, naming the machines found dead and their hosts (the
        launcher's SIGTERM: after asking MPI which ranks it knows dead)."""
        if not isinstance(exc, Terminated):
            return str(exc)
        if ulfm.enabled():
            self.links.detect()
        phase, step = self.at
        gone = ", ".join(f"machine {e['machine']} ({e['host']})" for e in self.lost)
        return (f"{phase} {step}: {exc}; " + (f"machines found dead: {gone}" if gone else
                                               "no machine was found dead before it"))

    def too_few(self, where: str) -> str:
        """The one line of a job that lost too many machines to go on."""
        gone = ", ".join(f"machine {e['machine']} ({e['host']}, {e['phase']} {e['step']})"
                         for e in self.lost)
        return (f"{where}: {len(self.machines)} machines left {self.machines}, fewer than "
                f"the L={self.cfg.L} a step needs: lost {gone}")

    def lost_host(self, n: int) -> str | None:
        """Where the lost machine ``n`` ran (its replacement runs there: a free slot);
        None when it died before it said."""
        host = self.links.host.get(n, "?")
        return None if host == "?" else host

    def unreplaced(self) -> list[int]:
        """Lost machines no new process has replaced yet."""
        return [e["machine"] for e in self.lost if e["machine"] not in self.machines]

    def rejoin(self, n: int, entry: dict[str, Any]) -> None:
        """A new process is machine ``n`` now (``entry``: :attr:`ElasticStep.joined`)."""
        self.machines.append(n)
        self.machines.sort()
        self.joined.append(entry)

    def joined_in(self, step: int) -> list[dict[str, Any]]:
        return [e for e in self.joined if e["step"] == step]

    def lost_in(self, step: int) -> list[dict[str, Any]]:
        """The losses found during ``step``."""
        return [e for e in self.lost if e["step"] == step and e["phase"] == "step"]

    def hard(self) -> float:
        """The deadline of a wait that is not a step's (``timeout_s`` from now)."""
        return deadline_in(self.cfg.timeout_s)

    # -- speeds ---------------------------------------------------------------------------

    @property
    def estimated(self) -> bool:
        """``speeds = "auto"``: plans use estimates, the configured speeds are hidden."""
        return self.cfg.speeds.auto

    def plan_speeds(self) -> dict[int, Fraction]:
        """The speeds a plan uses: estimated, or the configured ones."""
        return self.estimator.speeds() if self.estimated else self.cfg.speed_map

    def seconds_per_row(self) -> dict[int, float]:
        """Estimated seconds per row (``t_row`` each until a machine was measured)."""
        if self.observed:
            return self.estimator.seconds_per_row()
        return {n: self.cfg.t_row for n in self.machines}

    def true_speeds(self, t: int, env: list[int]) -> dict[int, Fraction]:
        """The throttles' real speeds at step ``t`` (only to report the oracle's time)."""
        return true_speeds(self.cfg, self.faults, t, env)

    def stragglers(self, t: int, env: list[int]) -> list[int]:
        return list(stragglers_at(self.cfg, t, env))

    def speed_estimates(self, speeds: dict[int, Fraction]) -> dict[str, float] | None:
        """The step record's ``speed_estimates`` (None unless estimated)."""
        return {str(n): float(v) for n, v in speeds.items()} if self.estimated else None

    # -- answers --------------------------------------------------------------------------

    def observe(self, metas: dict[int, dict[str, float]]) -> None:
        """Learn from machines' ``TASK_META`` records (estimated speeds only)."""
        for n, meta in metas.items():
            if self.estimated and meta["rows"] > 0 and \
                    self.estimator.observe(n, int(meta["rows"]), meta["busy_s"]):
                self.observed += 1

    def on_late(self, h: P.Header, arr: np.ndarray | None) -> None:
        """A late answer: the machine is alive; a late META still measures its speed."""
        self.suspects.heard(h.source)
        if h.kind == P.Kind.META:
            self.observe({h.source: records.TASK_META.unpack(arr, h.source)})
        elif self.late_check is not None:
            self.late_check(h, arr)

    def on_stale(self, msg: tuple[P.Header, np.ndarray | None]) -> None:
        """A late answer dropped while the master waited for something else."""
        self.on_late(*msg)

    def preempted(self, env: list[int]) -> list[int]:
        return [n for n in self.machines if n not in env]

    # -- the links ------------------------------------------------------------------------

    def link_mark(self) -> Span:
        """The master's link counters since its last mark (a span), and a new mark."""
        now = linkstats.read()
        span, self.link_at = (self.link_at, now), now
        return span

    def host_of(self) -> dict[int, str]:
        """Rank -> host: the master's and every machine's (from READY; a lost machine's
        last known host, a machine that joined later its own)."""
        absent = {n: "?" for n in range(1, self.cfg.N + 1)}  # a store's machines with no rank
        return {0: socket.gethostname(),
                **absent, **{n: self.links.host[n] for n in self.links.ranks}}

    def links_measured(self) -> bool:
        """Whether link bytes mean anything for this job (:func:`linkstats.measured`; a
        machine lost before its READY has no host and is left out)."""
        known = [h for h in self.host_of().values() if h != "?"]
        return linkstats.measured(linkstats.described_network(), known)

    def link_record(self, phases: Sequence[tuple[str, Mapping[int, Span]]],
                    plans: Mapping[str, Traffic | None]) -> LinkBytes | None:
        """``link_bytes`` of ``phases`` (in order: each phase's spans of the ranks that took
        part, rank 0 the master; a machine's step ends when its answer is ready, so the
        answer's tail still leaving its host counts in the host's next step) beside the
        plan's bytes (``plans[phase]``, the network model's messages; None: not
        modelled); None on one host without a described network (linkstats.measured)."""
        host_of = self.host_of()
        if not self.links_measured():
            return None
        by_host = [(name, _group(spans, host_of)) for name, spans in phases]
        link = linkstats.host_phases(by_host, host_of.values(), self.book)
        plan: PhaseBytes = {name: {h: v for h, v in bytes_by_host(t, host_of).items()
                                   if h != "?"}
                            for name, t in plans.items() if t is not None}
        unread = all(v is None for per in link.values() for v in per.values())
        return LinkBytes(link_bytes=None if unread else link, plan_bytes=plan or None)


def _group(spans: Mapping[int, Span], host_of: Mapping[int, str]) -> dict[str, list[Span]]:
    """Spans by host; on the master's host the master's alone (it marks a phase's end once
    every answer of it is in, linkstats module docstring)."""
    out: dict[str, list[Span]] = {}
    for rank, span in spans.items():
        if rank == 0 or host_of[rank] != host_of[0]:
            out.setdefault(host_of[rank], []).append(span)
    return out


def meta_spans(metas: Mapping[int, Mapping[str, float]], moved: bool
               ) -> tuple[dict[int, Span], dict[int, Span]]:
    """The machines' spans of their TASK_META records: before and after their moves were
    done (the uncoded baseline, ``moved``), else ``({}, the whole task)``."""
    before: dict[int, Span] = {}
    after: dict[int, Span] = {}
    for n, meta in metas.items():
        start, end = linkstats.span_of(meta)
        mid = linkstats.counters_at(meta, *records.MOVED) if moved else None
        if mid is not None:
            before[n] = (start, mid)
        after[n] = (mid or start, end)
    return before, after


def overrun(metas: dict[int, dict[str, float]]) -> list[int]:
    """Machines whose real compute took longer than their throttle's target."""
    return [n for n in metas if metas[n]["compute_s"] > metas[n]["target_s"] > 0]


def measured(metas: dict[int, dict[str, float]]) -> dict[str, Any]:
    """A step record's ``compute_s``, ``sleep_s`` and ``throttle_overrun`` from its METAs."""
    return {"compute_s": {str(n): metas[n]["compute_s"] for n in sorted(metas)},
            "sleep_s": {str(n): metas[n]["sleep_s"] for n in sorted(metas)},
            "throttle_overrun": overrun(metas)}
