"""This host's link counters: the bytes its network interface has sent and received, and
the bytes each host's link carried in a phase of a job.

**Reading** (:func:`read`, :class:`LinkReader`).  The kernel counts every byte an
interface sends and receives (frames: payload, TCP/IP and Ethernet headers, ACKs, the MPI
library's own control traffic).  A rank reads them from ``/proc/self/net/dev``, which
lists the interfaces of the rank's own network namespace; ``/sys/class/net`` is only the
fallback, since sysfs shows the namespace it was *mounted* in, and the emulated
cluster's launcher enters a host with ``nsenter --net`` without remounting it (there
sysfs would count the machine's root namespace).  Which interfaces: the one
``MPI_CODED_NETWORK`` names in ``iface`` (``eth0`` on an emulated host, whose traffic
with the other hosts all crosses it), otherwise the sum of every interface but the
loopback.  ``None`` when nothing can be read (not Linux), or in a job whose link bytes
mean nothing (:func:`count`: every rank on one host, no described network).  One read is
one small file, 14-25 us here.

**On the wire** (:func:`span_values`, :func:`span_of`).  A worker reports the counters it
read at the start and the end of what a statistics record covers as the record's fields
:data:`mpi_coded.runtime.core.records.LINK` (-1: unreadable).

**Per host and phase** (:func:`host_phases`).  Ranks share a host's interface, so the
master turns the snapshots of the ranks on one host into that host's bytes per phase:
the host's phase ends at the *latest* end snapshot among its ranks that took part in it,
and starts where the host's previous measured phase ended (its first one: at the
*latest* start snapshot among those ranks, when every one of them had finished what came
before, e.g. received its part of the setup).  A host's phases thus tile its timeline: no
byte is counted in two phases, and every byte that crossed the interface between the
first start and the last end is in exactly one.  Where no rank of a host took part in a
phase (or none could read its counters) the host's entry is None and its bytes of that
time go to its next measured phase.  Which snapshots bound a phase on a host is the
job's choice (runtime/coded/lines.py, runtime/cec/cluster.py; docs/coded.md and
docs/elastic.md "Results"): on the master's host the master's own (it takes part in every
phase and marks its end once every report of it is in); elsewhere the ranks' own, chosen
so that a phase's data only moves after the host's previous boundary.  A send's tail
still leaving a host after its ranks marked the end is counted in the host's next phase,
unless the rank waits for it (:func:`read_sent`).

**Beside the plan** (:func:`mpi_coded.analysis.network.bytes_by_host`): the bytes the
network model counts for the same phase and host, from the plan the ranks executed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpi_coded.runtime.core.records import LINK

PROC_NET_DEV = Path("/proc/self/net/dev")
SYS_NET = Path("/sys/class/net")
LOOPBACK = "lo"
UNREAD = -1.0
"""A counter that could not be read, as a statistics record carries it."""


@dataclass(frozen=True)
class Counters:
    """Bytes an interface (or the sum of several) has sent and received so far."""

    sent: int
    received: int

    def minus(self, earlier: Counters) -> list[int] | None:
        """``[sent, received]`` since ``earlier``; None if a counter went back (reset)."""
        d = [self.sent - earlier.sent, self.received - earlier.received]
        return d if min(d) >= 0 else None


def parse_net_dev(text: str) -> dict[str, Counters]:
    """Every interface of a ``/proc/net/dev`` text: received bytes are the first number
    after the name, sent bytes the ninth."""
    out: dict[str, Counters] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.rpartition(":")
        nums = rest.split()
        if not sep or len(nums) < 9:
            continue
        try:
            out[name.strip()] = Counters(sent=int(nums[8]), received=int(nums[0]))
        except ValueError:
            continue
    return out


def _sysfs(root: Path) -> dict[str, Counters]:
    out: dict[str, Counters] = {}
    for d in sorted(root.iterdir()):
        try:
            tx = int((d / "statistics" / "tx_bytes").read_text())
            rx = int((d / "statistics" / "rx_bytes").read_text())
        except (OSError, ValueError):
            continue
        out[d.name] = Counters(sent=tx, received=rx)
    return out


class LinkReader:
    """Reads ``iface`` (None: every interface but the loopback) from ``proc`` (a
    ``net/dev`` file), else from ``sys`` (a ``class/net`` directory)."""

    def __init__(self, iface: str | None = None, proc: Path = PROC_NET_DEV,
                 sys: Path = SYS_NET) -> None:
        self.iface, self.proc, self.sys = iface, proc, sys
        self._fd: int | None = None  # ``proc`` kept open: a read is one pread (once a task)

    def _proc_text(self) -> str:
        if self._fd is None:
            self._fd = os.open(self.proc, os.O_RDONLY)
        chunks, off = [], 0
        while chunk := os.pread(self._fd, 1 << 16, off):
            chunks.append(chunk)
            off += len(chunk)
        return b"".join(chunks).decode(errors="replace")

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)

    def interfaces(self) -> dict[str, Counters]:
        """Every interface this process sees (empty when neither source can be read)."""
        try:
            found = parse_net_dev(self._proc_text())
            if found:
                return found
        except OSError:
            pass
        try:
            return _sysfs(self.sys)
        except OSError:
            return {}

    def read(self) -> Counters | None:
        """This host's counters now, or None (unreadable, or ``iface`` absent)."""
        found = self.interfaces()
        if self.iface is not None:
            return found.get(self.iface)
        mine = [c for name, c in found.items() if name != LOOPBACK]
        if not mine:
            return None
        return Counters(sent=sum(c.sent for c in mine), received=sum(c.received for c in mine))


def iface_of(network: Mapping[str, object] | None) -> str | None:
    """The interface a network record names (``iface``), if a string."""
    iface = network.get("iface") if network else None
    return iface if isinstance(iface, str) and iface else None


def described_network() -> dict[str, Any] | None:
    """The network ``MPI_CODED_NETWORK`` describes (a JSON object), or None."""
    try:
        net = json.loads(os.environ.get("MPI_CODED_NETWORK") or "null")
    except ValueError:
        return None
    return net if isinstance(net, dict) else None


def reader_from_env() -> LinkReader:
    """The reader for this process: the interface ``MPI_CODED_NETWORK`` names, if any."""
    return LinkReader(iface_of(described_network()))


_READER: list[LinkReader] = []
_COUNTING = [True]


def count(on: bool) -> None:
    """Whether :func:`read` reads the counters in this process: a job's ranks turn it
    off where link bytes mean nothing (:func:`measured`: one host, no described network),
    so that a task does not read a file whose numbers no record keeps."""
    _COUNTING[0] = on


def read() -> Counters | None:
    """This host's counters now (:func:`reader_from_env`, made once per process); None
    when unreadable or not counted (:func:`count`)."""
    if not _COUNTING[0]:
        return None
    if not _READER:
        _READER.append(reader_from_env())
    return _READER[0].read()


PROC_TCP = (Path("/proc/self/net/tcp"), Path("/proc/self/net/tcp6"))
ESTABLISHED = "01"


def unacknowledged(tables: Sequence[Path] = PROC_TCP) -> int | None:
    """Bytes this network namespace's established TCP connections have sent and not yet
    seen acknowledged (``tx_queue`` of ``/proc/net/tcp``); None when unreadable."""
    total, seen = 0, False
    for path in tables:
        try:
            lines = path.read_text().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for line in lines:
            cols = line.split()
            if len(cols) > 4 and cols[3] == ESTABLISHED:
                total += int(cols[4].partition(":")[0], 16)
    return total if seen else None


def read_sent(wait: float = 1.0, tables: Sequence[Path] = PROC_TCP) -> Counters | None:
    """:func:`read` once what this host has sent has left it: when no TCP connection of its
    namespace waits for an acknowledgement (at most ``wait`` seconds, polled every
    millisecond).  For the end of a rank's phase whose last message is large (a reducer's
    outputs): an MPI send completes when the library has handed the bytes to the kernel,
    before they crossed the link.  Only on a host whose interface the network record
    names (an emulated host: its namespace holds the job's connections alone); elsewhere
    the machine's other connections could keep it waiting, and it reads at once."""
    if not _READER:
        _READER.append(reader_from_env())
    end = time.monotonic() + (wait if _READER[0].iface is not None else 0.0)
    while time.monotonic() < end and (unacknowledged(tables) or 0) > 0:
        time.sleep(1e-3)
    return read()


# --- on the wire --------------------------------------------------------------------------

Span = tuple[Counters | None, Counters | None]
"""A rank's snapshots at the start and the end of what it reports."""


def values(names: Sequence[str], c: Counters | None) -> dict[str, float]:
    """Record fields ``names`` (sent, received) holding ``c`` (-1 for None)."""
    vals = [UNREAD, UNREAD] if c is None else [float(c.sent), float(c.received)]
    return dict(zip(names, vals))


def span_values(start: Counters | None, end: Counters | None) -> dict[str, float]:
    """The record fields (:data:`~mpi_coded.runtime.core.records.LINK`) of a span."""
    return {**values(LINK[:2], start), **values(LINK[2:], end)}


def counters_at(stats: Mapping[str, float], sent: str, received: str) -> Counters | None:
    """The counters a record carries in fields ``sent`` and ``received`` (None: -1)."""
    s, r = stats.get(sent, UNREAD), stats.get(received, UNREAD)
    return None if s < 0 or r < 0 else Counters(sent=int(s), received=int(r))


def span_of(stats: Mapping[str, float]) -> Span:
    """The span a record carries (:func:`span_values`)."""
    return counters_at(stats, LINK[0], LINK[1]), counters_at(stats, LINK[2], LINK[3])


# --- per host and phase -------------------------------------------------------------------

PhaseBytes = dict[str, dict[str, list[int] | None]]
"""Phase -> host -> ``[sent, received]`` bytes (None: not measured)."""


def latest(cs: Iterable[Counters | None]) -> Counters | None:
    """The latest of snapshots of one host's counters (None: none readable)."""
    got = [c for c in cs if c is not None]
    return Counters(max(c.sent for c in got), max(c.received for c in got)) if got else None


def earliest(cs: Iterable[Counters | None]) -> Counters | None:
    """The earliest of snapshots of one host's counters (None: none readable)."""
    got = [c for c in cs if c is not None]
    return Counters(min(c.sent for c in got), min(c.received for c in got)) if got else None


class HostBook:
    """Where each host's last measured phase ended (module docstring), across phases."""

    def __init__(self) -> None:
        self.last: dict[str, Counters] = {}

    def phase(self, spans: Mapping[str, Sequence[Span]], hosts: Iterable[str]
              ) -> dict[str, list[int] | None]:
        """One phase: ``spans[host]`` of the ranks on ``host`` that took part; every host
        of ``hosts`` gets ``[sent, received]`` or None."""
        out: dict[str, list[int] | None] = {}
        for h in hosts:
            mine = spans.get(h, ())
            end = latest(e for _, e in mine)
            start = self.last.get(h) or latest(s for s, _ in mine)
            if end is None or start is None:
                out[h] = None
                continue
            out[h] = end.minus(start)
            self.last[h] = end
        return out


def host_phases(phases: Sequence[tuple[str, Mapping[str, Sequence[Span]]]],
                hosts: Iterable[str], book: HostBook | None = None) -> PhaseBytes:
    """Every phase of ``phases`` (in order: its name and the spans per host) for every host
    of ``hosts`` (:meth:`HostBook.phase`), continuing ``book`` if given."""
    book = book or HostBook()
    names = sorted(set(hosts))
    return {name: book.phase(spans, names) for name, spans in phases}


def measured(network: Mapping[str, object] | None, hosts: Iterable[str]) -> bool:
    """Whether link bytes mean anything for a run: an emulated network, or ranks on more
    than one host (on one host the ranks talk through shared memory and an interface
    counts only the machine's other traffic)."""
    return bool(network and network.get("emulated")) or len(set(hosts)) > 1
