"""The shuffle's messages of one server, as an object built from the shuffle plan.

Every finisher derives the same :class:`~mpi_coded.coded.shuffle.ShufflePlan`
from ``(Q, extra, unicast_rows)`` (the map end ``MAP_END`` carries), so a
:class:`ShuffleTransfer` knows every message it will send and receive, and its size,
before anything moves (as mpi4py-fft's
``pencil.py`` builds its transfer object from a pure decomposition):

1. :meth:`ShuffleTransfer.post` posts every receive up front (header and
   payload, in each sender's posting order): no message waits for a handshake;
2. :meth:`ShuffleTransfer.send` starts this server's coded multicasts (the sum
   of its padded segments, :mod:`mpi_coded.coded.exchange`) and unicasts;
3. :meth:`ShuffleTransfer.finish` waits for everything with a deadline,
   cancelling what it stores out of each multicast as it arrives.

Headers are still checked (kind, repetition, plan index, shape).  A deadline passed names
the servers still owing a message and those a send of this server has not reached, each
as ``server S = rank R (host)`` (the hosts from :func:`~mpi_coded.runtime.core.peers.world_hosts`).
Under ``fault_tolerance = "ulfm"`` a message whose sender died completes in error: it is
:attr:`ShuffleTransfer.missing` (the shuffle goes on with the servers left, whose messages
are all received, and the master ends the repetition when a reducer misses one); a send
to a dead server is not waited for.

Multicast transport (``--multicast``, :data:`mpi_coded.coded.job.MULTICAST_MODES`):

``p2p`` (default)
    a multicast is one ``Isend`` (header and payload) per receiver, as above;
``bcast``
    each multicast group ``S`` of the plan (its sender and receivers) has its own
    communicator, created with ``MPI_Comm_create_group`` by the group's members
    only (:class:`GroupComms`), and every multicast of ``S`` is one ``Ibcast`` on
    it rooted at the sender; receivers post their ``Ibcast`` with the known length.
    Collectives on a communicator match by call order, so every member issues the
    ``Ibcast`` of ``S`` (as root or receiver) in plan order, in :meth:`ShuffleTransfer.send`,
    after creating the missing communicators in plan order (every finisher derives the
    same plan, and creating in one global order cannot deadlock).  No headers travel
    with a broadcast (the communicator and the call order identify it).  Unicasts stay
    point-to-point.  ``bytes_sent`` counts what ``p2p`` sends, a multicast once per
    receiver: a tree broadcast (MPICH and Open MPI for short messages) also delivers
    the payload once to each non-root member.

Communicators are cached by member set across repetitions.  When the servers created
every group of every ``Q`` at setup (:meth:`GroupComms.create_all`, below) they keep
them all to the end.  Otherwise every server (finisher or not) calls
:meth:`GroupComms.keep_within` with the repetition's ``Q`` (from MAP_END), which frees
those whose group is not inside ``Q`` (no plan of that repetition can use them).  The
decision depends only on ``Q``, which every server knows, so all members of a group free
it in the same repetition and create it again together.  Then at most one ``Q``'s groups
are alive: at K = 18, q = 12, mu = 1/3 a
server belongs to 495 of the plan's 1,287 groups (levels 4 and 3: ``C(11, 4) +
C(11, 3)``).  MPICH lets a process hold 2,046 communicators beyond its own (measured),
so the job refuses ``bcast`` beyond :data:`mpi_coded.coded.job.BCAST_MAX_GROUPS` per
server.  Creating is the cost of ``bcast``: every creation synchronises the group's
members (a blocking call, which busy-polls inside MPICH), so the first repetition with
new groups is slower; later ones with the same ``Q`` reuse them.  A server in at most
:data:`mpi_coded.coded.job.BCAST_SETUP_GROUPS` groups over every ``Q`` creates them all
at setup (:meth:`GroupComms.create_all`), so that no shuffle creates one: on the
emulated cluster (K = 9, mu q = 2, 28 groups a server) creating a new ``Q``'s groups cost
lt's and bdc's bcast shuffles tens of milliseconds.  Each shuffle's record carries the
groups it created and the seconds it spent on them (``server_groups_s``).  Creating is a
blocking call without a deadline: a server killed or stalled at setup leaves the others
in it, and the master's READY deadline then names every server that did not report.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from mpi4py import MPI

from mpi_coded.coded import exchange
from mpi_coded.coded.placement import rank_of
from mpi_coded.coded.replay import ServerData
from mpi_coded.coded.shuffle import ShufflePlan
from mpi_coded.runtime.core import ulfm
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.wait import DeadlineExceeded, poll_until

SHUFFLE_MARGIN_S = 2.0
"""Seconds the master waits for the shuffle beyond the servers' own deadline (their error
names whom they miss: the master only knows who has not finished)."""

GROUP_TAG = 0x4D43
"""Tag of ``MPI_Comm_create_group`` (distinguishes it from other creations)."""


class GroupComms:
    """Communicators of the coded multicast groups of this server, by member set.

    Created with ``comm.Create_group`` among the group's members only (MPI-3's
    ``MPI_Comm_create_group``: collective over the group, not over ``comm``);
    freed by :meth:`keep_within` and :meth:`free` (module docstring).
    """

    def __init__(self, comm: MPI.Comm) -> None:
        if not isinstance(comm, MPI.Intracomm):
            raise TypeError("group communicators are created from an intracommunicator")
        self.comm = comm
        self._world = comm.Get_group()
        self._comms: dict[tuple[int, ...], MPI.Comm] = {}
        self.created = 0  # communicators created so far
        self.create_s = 0.0  # seconds spent creating them
        self.peak = 0  # most communicators alive at once
        self.every_q = False  # create_all ran: every group of every Q is alive, none freed

    def __len__(self) -> int:
        return len(self._comms)

    def get(self, group: tuple[int, ...]) -> MPI.Comm:
        """The communicator of ``group`` (sorted servers), created on first use.

        Every member of ``group`` must ask for it at the same point of its sequence of
        creations (plan order); rank ``i`` of the result is server ``group[i]``.
        """
        c = self._comms.get(group)
        if c is None:
            t = time.perf_counter()
            g = self._world.Incl([rank_of(s) for s in group])
            try:
                c = self.comm.Create_group(g, GROUP_TAG)
            finally:
                g.Free()
            self.create_s += time.perf_counter() - t
            self._comms[group] = c
            self.created += 1
            self.peak = max(self.peak, len(self._comms))
        return c

    def create_all(self, K: int, levels: Iterable[int], server: int) -> None:
        """At setup: the communicator of every group of ``j + 1`` servers (``j`` in
        ``levels``) that ``server`` belongs to, whatever ``Q``; :meth:`keep_within` then
        frees none.  Every server walks the same global order (sizes ascending, members
        lexicographic) and creates the groups it is in: the earliest group not yet created
        always has all its members at it, so the walk cannot deadlock."""
        for j in sorted(set(levels)):
            for group in itertools.combinations(range(K), j + 1):
                if server in group:
                    self.get(group)
        self.every_q = True

    def prepare(self, plan: ShufflePlan, server: int) -> None:
        """Create the missing communicators of ``server``'s groups in ``plan``, in plan order."""
        for mc in plan.multicasts:
            if server in mc.group and mc.group not in self._comms:
                self.get(mc.group)

    def keep_within(self, servers: Collection[int]) -> None:
        """Free the communicators of groups not inside ``servers`` (this repetition's ``Q``)."""
        if self.every_q:
            return
        keep = set(servers)
        for group in [g for g in self._comms if not keep.issuperset(g)]:
            self._comms.pop(group).Free()

    def free(self) -> None:
        """Free every communicator (at stop, before MPI finalises)."""
        self.every_q = False
        self.keep_within(())
        if self._world != MPI.GROUP_NULL:
            self._world.Free()


@dataclass
class _Incoming:
    sender: int
    kind: P.Kind
    index: int
    header: np.ndarray
    payload: np.ndarray
    reqs: list[MPI.Request]


@dataclass
class ShuffleTransfer:
    """Server ``server``'s part of ``plan`` in repetition ``rep``."""

    comm: MPI.Comm
    plan: ShufflePlan
    data: ServerData
    server: int
    rep: int
    groups: GroupComms | None = None  # bcast transport: the group communicators
    hosts: Mapping[int, str] | None = None  # every rank's host, for error messages
    multicast_values: int = 0
    unicast_values: int = 0
    bytes_sent: int = 0
    _incoming: list[_Incoming] = field(default_factory=list)
    _bcasts: list[tuple[int, np.ndarray, MPI.Request]] = field(default_factory=list)
    _sends: list[MPI.Request] = field(default_factory=list)
    _send_to: list[tuple[int, ...]] = field(default_factory=list)  # receivers, per send
    _keep: list[np.ndarray] = field(default_factory=list)
    missing: list[tuple[P.Kind, int]] = field(default_factory=list)
    """``fault_tolerance = "ulfm"``: the messages (kind, plan index) whose sender died
    before they arrived whole (the repetition cannot reduce here)."""
    received: dict[tuple[P.Kind, int], np.ndarray] = field(default_factory=dict)
    """Every payload that arrived, as it arrived, by (kind, plan index): the master may
    ask for them when a decoded output is wrong (:meth:`received_values`)."""
    _out: dict[tuple[P.Kind, int], np.ndarray] | None = None
    _flat: np.ndarray | None = None

    def outgoing(self) -> np.ndarray:
        """Every payload this server sends (its multicasts in plan order, then its
        unicasts), computed now, as views into one flat buffer, which is returned: a lying
        fault (``corrupt:RANK:shuffle``) changes one entry of it before :meth:`send`."""
        if self._flat is not None:
            return self._flat
        mc_send, uc_send = self.plan.sends(self.server)
        sizes = ([self.plan.multicasts[i].length for i in mc_send]
                 + [self.plan.unicasts[i].size for i in uc_send])
        self._flat = flat = self.data.field.zeros(int(sum(sizes)))
        keys = [(P.Kind.MULTICAST, i) for i in mc_send] + [(P.Kind.UNICAST, i) for i in uc_send]
        self._out, pos = {}, 0
        for (kind, i), size in zip(keys, sizes):
            view = flat[pos:pos + size]
            view[:] = (exchange.multicast_payload(self.plan.multicasts[i], self.data)
                       if kind == P.Kind.MULTICAST else
                       exchange.unicast_payload(self.plan.unicasts[i], self.data))
            self._out[(kind, i)] = view
            pos += size
        self._keep.append(flat)
        return flat

    def carried(self) -> np.ndarray:
        """The positions of :meth:`outgoing`'s buffer that carry a value some receiver
        keeps: all but a multicast's padding beyond its longest segment (a value changed
        there is dropped by every receiver)."""
        mc_send, uc_send = self.plan.sends(self.server)
        parts, pos = [], 0
        for i in mc_send:
            mc = self.plan.multicasts[i]
            parts.append(pos + np.arange(max((g.size for g in mc.segments), default=0)))
            pos += mc.length
        for i in uc_send:
            parts.append(pos + np.arange(self.plan.unicasts[i].size))
            pos += self.plan.unicasts[i].size
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def received_values(self) -> np.ndarray:
        """The payloads received, concatenated in ``plan.receives`` order (multicasts, then
        unicasts; zeros for one that never arrived)."""
        mc_recv, uc_recv = self.plan.receives(self.server)
        parts = [self.received.get((P.Kind.MULTICAST, i),
                                   self.data.field.zeros(self.plan.multicasts[i].length))
                 for i in mc_recv]
        parts += [self.received.get((P.Kind.UNICAST, i),
                                    self.data.field.zeros(self.plan.unicasts[i].size))
                  for i in uc_recv]
        return np.concatenate(parts) if parts else self.data.field.zeros(0)

    def post(self) -> None:
        """Post every receive of this server, with its known size (bcast: the unicasts;
        the broadcasts are issued in plan order by :meth:`send`)."""
        mc_recv, uc_recv = self.plan.receives(self.server)
        expected = [] if self.groups is not None else [
            (self.plan.multicasts[i].sender, P.Kind.MULTICAST, i,
             self.plan.multicasts[i].length) for i in mc_recv]
        expected += [(self.plan.unicasts[i].sender, P.Kind.UNICAST, i,
                      self.plan.unicasts[i].size) for i in uc_recv]
        expected.sort(key=lambda e: (e[0], e[1] != P.Kind.MULTICAST, e[2]))
        for sender, kind, i, size in expected:
            hbuf = np.zeros(P.HEADER_WORDS, dtype=np.int64)
            pbuf = self.data.field.zeros(size)
            src = rank_of(sender)
            self._incoming.append(_Incoming(sender, kind, i, hbuf, pbuf, [
                self.comm.Irecv(hbuf, source=src, tag=P.TAG_HEADER),
                self.comm.Irecv(pbuf, source=src, tag=P.TAG_PAYLOAD)]))

    def send(self) -> None:
        """Start this server's multicasts (counted once: shared medium) and unicasts."""
        mc_send, uc_send = self.plan.sends(self.server)
        self.outgoing()
        assert self._out is not None
        if self.groups is not None:
            self._broadcast()
            mc_send = []
        for i in mc_send:
            mc = self.plan.multicasts[i]
            payload = self._out[(P.Kind.MULTICAST, i)]
            self.multicast_values += mc.length
            for k in mc.receivers:
                self._sending((k,), P.isend(self.comm, rank_of(k), P.Kind.MULTICAST,
                                            self.rep, payload, aux=i, inline=False))
                self.bytes_sent += int(payload.nbytes)
        for i in uc_send:
            u = self.plan.unicasts[i]
            vec = self._out[(P.Kind.UNICAST, i)]
            self.unicast_values += u.size
            self._sending((u.receiver,), P.isend(self.comm, rank_of(u.receiver),
                                                 P.Kind.UNICAST, self.rep, vec, aux=i,
                                                 inline=False))
            self.bytes_sent += int(vec.nbytes)

    def _broadcast(self) -> None:
        """bcast: one ``Ibcast`` per multicast of this server's groups, in plan order."""
        assert self.groups is not None
        self.groups.prepare(self.plan, self.server)
        for i, mc in enumerate(self.plan.multicasts):
            if self.server not in mc.group:
                continue
            gcomm = self.groups.get(mc.group)
            root = mc.group.index(mc.sender)
            if mc.sender == self.server:
                assert self._out is not None
                payload = self._out[(P.Kind.MULTICAST, i)]
                self.multicast_values += mc.length
                self.bytes_sent += int(payload.nbytes) * len(mc.receivers)
                self._sending(tuple(mc.receivers), [gcomm.Ibcast(payload, root=root)])
            else:
                buf = self.data.field.zeros(mc.length)
                self._bcasts.append((i, buf, gcomm.Ibcast(buf, root=root)))

    def _sending(self, receivers: tuple[int, ...], reqs: list[MPI.Request]) -> None:
        self._sends += reqs
        self._send_to += [receivers] * len(reqs)

    def name(self, servers: Iterable[int]) -> str:
        """``server S = rank R (host), ...``."""
        hosts = self.hosts or {}
        return ", ".join(f"server {s} = rank {rank_of(s)} ({hosts.get(rank_of(s), '?')})"
                         for s in sorted(set(servers)))

    def _take(self, m: _Incoming) -> None:
        h = P.parse_header(m.header, rank_of(m.sender), {m.kind}, self.rep)
        if h.aux != m.index or h.shape != m.payload.shape:
            raise P.WireError(f"{m.kind.name} {h.aux} of shape {h.shape} from server "
                              f"{m.sender}, expected {m.index} of shape {m.payload.shape}")
        self.received[(m.kind, m.index)] = m.payload
        if m.kind == P.Kind.MULTICAST:
            exchange.take_multicast(self.plan.multicasts[m.index], self.server, m.payload,
                                    self.data)
        else:
            self.data.scatter(self.plan.unicasts[m.index].blocks, m.payload)

    def _progress(self) -> bool:
        if self._bcasts:
            waiting = []
            for i, buf, req in self._bcasts:
                if req.Test():
                    exchange.take_multicast(self.plan.multicasts[i], self.server, buf,
                                            self.data)
                    self.received[(P.Kind.MULTICAST, i)] = buf
                else:
                    waiting.append((i, buf, req))
            self._bcasts = waiting
        if not ulfm.enabled():  # one Testall per message and for the sends (a death raises)
            still = []
            for m in self._incoming:
                if MPI.Request.Testall(m.reqs):
                    self._take(m)
                else:
                    still.append(m)
            self._incoming = still
            if self._incoming or self._bcasts:
                return False
            return bool(MPI.Request.Testall(self._sends))
        still = []
        for m in self._incoming:
            state = self._arrived(m)
            if state is True:
                self._take(m)
            elif state is False:
                still.append(m)
        self._incoming = still
        if self._incoming or self._bcasts:
            return False
        sending = [(req, to) for req, to in zip(self._sends, self._send_to)
                   if ulfm.test(req) is False]  # None: its receiver died, nothing to wait for
        self._sends, self._send_to = [r for r, _ in sending], [t for _, t in sending]
        return not self._sends

    def _arrived(self, m: _Incoming) -> bool | None:
        """``m`` arrived whole (True), not yet (False), or never will: its sender died
        (None; its requests left are cancelled, and it is in :attr:`missing`)."""
        states = [ulfm.test(req) for req in m.reqs]
        if None not in states:
            return all(states)
        for req, state in zip(m.reqs, states):
            if state is False:
                req.Cancel()
                ulfm.test(req)  # a cancelled request completes (cancelled, or in error)
        self.missing.append((m.kind, m.index))
        return None

    def finish(self, deadline: float) -> None:
        """Wait for every message in and out; a timeout names the silent senders.  Under
        ``fault_tolerance = "ulfm"`` a peer's death is not waited for: the messages of the
        servers left are still received (none is left behind for a later repetition's
        receives to match), the dead one's are :attr:`missing`."""
        try:
            poll_until(self._progress, deadline, "shuffle messages", active=True)
        except DeadlineExceeded:
            for m in self._incoming:
                for r in m.reqs:
                    r.Cancel()
            senders = {m.sender for m in self._incoming}
            senders |= {self.plan.multicasts[i].sender for i, _, _ in self._bcasts}
            unsent = {k for req, to in zip(self._sends, self._send_to)
                      if ulfm.test(req) is False for k in to}
            said = [f"shuffle messages from {self.name(senders)}"] if senders else []
            said += [f"this server's sends to {self.name(unsent)} to complete"] if unsent \
                else ([] if senders else ["this server's sends to complete"])
            raise DeadlineExceeded("timed out waiting for " + " and ".join(said)) from None
        self._keep.clear()

    @property
    def sent_values(self) -> int:
        return self.multicast_values + self.unicast_values
