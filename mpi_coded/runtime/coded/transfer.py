"""The shuffle's messages of one server, as an object built from the shuffle plan.

Every finisher derives the same :class:`~mpi_coded.coded.shuffle.ShufflePlan`
from ``(Q, extra)``, so a :class:`ShuffleTransfer` knows every message it will
send and receive, and its size, before anything moves (as mpi4py-fft's
``pencil.py`` builds its transfer object from a pure decomposition):

1. :meth:`ShuffleTransfer.post` posts every receive up front (header and
   payload, in each sender's posting order): no message waits for a handshake;
2. :meth:`ShuffleTransfer.send` starts this server's coded multicasts (the sum
   of its padded segments, :mod:`mpi_coded.coded.exchange`) and unicasts;
3. :meth:`ShuffleTransfer.finish` waits for everything with a deadline,
   cancelling what it stores out of each multicast as it arrives.

Headers are still checked (kind, repetition, plan index, shape).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mpi4py import MPI

from mpi_coded.coded import exchange
from mpi_coded.coded.placement import rank_of
from mpi_coded.coded.replay import ServerData
from mpi_coded.coded.shuffle import ShufflePlan
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.wait import DeadlineExceeded, poll_until


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
    multicast_values: int = 0
    unicast_values: int = 0
    bytes_sent: int = 0
    _incoming: list[_Incoming] = field(default_factory=list)
    _sends: list[MPI.Request] = field(default_factory=list)
    _keep: list[np.ndarray] = field(default_factory=list)

    def post(self) -> None:
        """Post every receive of this server, with its known size."""
        mc_recv, uc_recv = self.plan.receives(self.server)
        expected = [(self.plan.multicasts[i].sender, P.Kind.MULTICAST, i,
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
        for i in mc_send:
            mc = self.plan.multicasts[i]
            payload = exchange.multicast_payload(mc, self.data)
            self._keep.append(payload)
            self.multicast_values += mc.length
            for k in mc.receivers:
                self._sends += P.isend(self.comm, rank_of(k), P.Kind.MULTICAST, self.rep,
                                       payload, aux=i)
                self.bytes_sent += int(payload.nbytes)
        for i in uc_send:
            u = self.plan.unicasts[i]
            vec = self.data.gather(u.blocks)
            self._keep.append(vec)
            self.unicast_values += u.size
            self._sends += P.isend(self.comm, rank_of(u.receiver), P.Kind.UNICAST, self.rep,
                                   vec, aux=i)
            self.bytes_sent += int(vec.nbytes)

    def _take(self, m: _Incoming) -> None:
        h = P.parse_header(m.header, rank_of(m.sender), {m.kind}, self.rep)
        if h.aux != m.index or h.shape != m.payload.shape:
            raise P.WireError(f"{m.kind.name} {h.aux} of shape {h.shape} from server "
                              f"{m.sender}, expected {m.index} of shape {m.payload.shape}")
        if m.kind == P.Kind.MULTICAST:
            exchange.take_multicast(self.plan.multicasts[m.index], self.server, m.payload,
                                    self.data)
        else:
            self.data.scatter(self.plan.unicasts[m.index].blocks, m.payload)

    def _progress(self) -> bool:
        still = []
        for m in self._incoming:
            if MPI.Request.Testall(m.reqs):
                self._take(m)
            else:
                still.append(m)
        self._incoming = still
        if self._incoming:
            return False
        return bool(MPI.Request.Testall(self._sends))

    def finish(self, deadline: float) -> None:
        """Wait for every message in and out; a timeout names the silent senders."""
        try:
            poll_until(self._progress, deadline, "shuffle messages", active=True)
        except DeadlineExceeded:
            for m in self._incoming:
                for r in m.reqs:
                    r.Cancel()
            who = ", ".join(f"server {s} = rank {rank_of(s)}"
                            for s in sorted({m.sender for m in self._incoming}))
            raise DeadlineExceeded(
                f"timed out waiting for shuffle messages from {who}" if who else
                "timed out waiting for this server's sends to complete") from None
        self._keep.clear()

    @property
    def sent_values(self) -> int:
        return self.multicast_values + self.unicast_values
