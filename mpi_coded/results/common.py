"""The parts several kinds of line share and the one kind no job writes:
:class:`RunContext` (host, versions, MPI library and world: the config line of both jobs),
:class:`LinkBytes` (the bytes each host's link carried, in step, setup and run lines), and
:class:`RunFailed` (a sweep's failed run)."""

from __future__ import annotations

import dataclasses
import platform
import socket
import sys
from typing import Any, ClassVar

import numpy as np

from mpi_coded import __version__
from mpi_coded.results.names import RUN_FAILED
from mpi_coded.results.record import Part, Record, optional


def run_context() -> dict[str, Any]:
    """Host and versions, for reproducibility."""
    return {
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "mpi_coded": __version__,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunContext(Part):
    """Where and with what a job ran: host, versions, the MPI library and world, and the
    waiting strategy this rank resolved (the config line of both jobs)."""

    host: str = ""
    python: str = ""
    platform: str = ""
    numpy: str = ""
    mpi_coded: str = ""
    mpi: str | None = None
    """The MPI library's version line."""
    world_size: int | None = None
    wait_mode: str | None = optional()
    idle_sleep_s: float | None = optional()
    active_sleep_s: float | None = optional()
    dormant_sleep_s: float | None = optional()
    ranks_on_node: int | None = optional()
    cores: int | None = optional()
    network: dict[str, Any] | None = optional()
    """The network the job ran on: an emulated cluster's name, hosts, rates, transport and
    interface (``mpi-coded cluster run`` exports it as ``MPI_CODED_NETWORK``), else
    ``{"emulated": false}``; absent in lines of older runtimes."""

    @classmethod
    def here(cls, **more: Any) -> RunContext:
        """This process's host and versions (:func:`run_context`) and ``more`` (the runtime
        adds the MPI library, world size and waiting strategy)."""
        return cls(**run_context(), **more)


PhaseBytes = dict[str, dict[str, list[int] | None]]
"""Phase -> host -> ``[sent, received]`` bytes (None: not measured on that host)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LinkBytes(Part):
    """The bytes each host's link carried per phase, as its interface counted them, beside
    the bytes the plan sends over it (the network model, :mod:`mpi_coded.analysis.network`),
    in the run and step lines of a job whose ranks ran on several hosts or on an emulated
    network (docs/coded.md, docs/elastic.md "Results"); absent otherwise."""

    link_bytes: PhaseBytes | None = optional()
    """Phase -> host -> ``[sent, received]`` as the host's interface counted them (frames:
    payload, TCP/IP headers, acknowledgements, the MPI library's control); None where no
    rank on the host took part in the phase or its counters could not be read."""
    plan_bytes: PhaseBytes | None = optional()
    """Phase -> host -> ``[sent, received]`` the plan sends between hosts (headers and
    payloads, a multicast as its mode carries it; messages inside a host left out)."""

    def plus(self, other: LinkBytes) -> LinkBytes:
        """Both products of a step added, phase by phase and host by host (None where
        either is None)."""
        return LinkBytes(link_bytes=_add_phases(self.link_bytes, other.link_bytes),
                         plan_bytes=_add_phases(self.plan_bytes, other.plan_bytes))


class WithLinks:
    """The records that carry a :class:`LinkBytes` part (as ``link``): its fields read
    directly."""

    link: LinkBytes | None

    @property
    def link_bytes(self) -> PhaseBytes | None:
        return self.link.link_bytes if self.link is not None else None

    @property
    def plan_bytes(self) -> PhaseBytes | None:
        return self.link.plan_bytes if self.link is not None else None


def _add_phases(a: PhaseBytes | None, b: PhaseBytes | None) -> PhaseBytes | None:
    if a is None or b is None:
        return None
    out: PhaseBytes = {}
    for phase in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(phase, {}), b.get(phase, {})
        out[phase] = {}
        for h in [*x, *(k for k in y if k not in x)]:
            u, v = x.get(h, [0, 0]), y.get(h, [0, 0])
            out[phase][h] = None if u is None or v is None else [u[0] + v[0], u[1] + v[1]]
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunFailed(Record):
    """A run of a sweep that failed (``scripts/sweep.py``)."""

    KIND: ClassVar[str] = RUN_FAILED
    JOB: ClassVar[str | None] = None

    reason: str
    returncode: int | None = None
    output_tail: str = ""

