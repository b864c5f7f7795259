"""The next message from one peer, received without blocking.

An inbox keeps one header receive posted for its peer.  A rank that computes
in chunks tests it between chunks, so an order to stop is seen at the next
chunk boundary without blocking or spinning; a master collecting from many
peers hands all their posted requests to one ``Testsome``
(:class:`mpi_coded.runtime.core.peers.Peers`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

import numpy as np
from mpi4py import MPI

from mpi_coded.runtime.core import wire
from mpi_coded.runtime.core.wait import Backoff, poll_until

Msg = tuple[wire.Header, np.ndarray | None]


class Inbox:
    """One posted header receive from ``source``; reposted after each message.  The later
    messages of a bundle (:func:`mpi_coded.runtime.core.wire.bundle`) wait in the inbox and
    come out first at its next tests."""

    def __init__(self, comm: MPI.Comm, source: int, name: int | None = None) -> None:
        self.comm = comm
        self.source = source
        self.name = source if name is None else name  # the peer as headers name it
        self._req: MPI.Request | None = None
        self._buf: np.ndarray | None = None
        self.queued: deque[Msg] = deque()  # a bundle's messages not yet handed out

    def request(self) -> MPI.Request:
        """The posted header receive (posted now if none is)."""
        if self._req is None:
            self._req, self._buf = wire.post_header(self.comm, self.source)
        return self._req

    def take_all(self, deadline: float) -> list[Msg]:
        """Every message the completed header receive brought (one, or a bundle's), the
        payload of one that has its own message received; not checked (the caller does)."""
        assert self._buf is not None
        buf = self._buf
        self._req = self._buf = None
        msgs = wire.unbundle(buf, self.name)
        h, payload = msgs[0]
        if h.dtype is not None and not h.inline:  # a lone message: its payload follows
            msgs[0] = h, wire.recv_payload(self.comm, h, deadline, self.source)
        return msgs

    def take(self, expect: Collection[wire.Kind], step: int | None, deadline: float) -> Msg:
        """The message whose header receive has completed (or a bundle's next one): check
        it, receive its payload."""
        if not self.queued:
            self.queued.extend(self.take_all(deadline))
        h, payload = self.queued.popleft()
        return wire.check(h, expect, step), payload

    def test(self, expect: Collection[wire.Kind], step: int | None, deadline: float
             ) -> Msg | None:
        """The next message if it has arrived, else ``None`` (never blocks)."""
        if not self.queued and not self.request().Test():
            return None
        return self.take(expect, step, deadline)

    def recv(self, expect: Collection[wire.Kind], step: int | None, deadline: float,
             what: str, dormant: bool = False, active: bool = False,
             backoff: Backoff | None = None) -> Msg:
        """Wait politely for the next message (``dormant``: with the dormant cap,
        :data:`mpi_coded.runtime.core.wait.DORMANT_SLEEP`; ``active``: one due now, with
        the active cap; ``backoff``: this one)."""
        got: list[Msg] = []

        def test() -> bool:
            r = self.test(expect, step, deadline)
            if r is not None:
                got.append(r)
            return bool(got)

        poll_until(test, deadline, what, active=active, dormant=dormant, backoff=backoff)
        return got[0]

    def forget(self) -> None:
        """Drop the posted receive of a peer that died (it completed in error)."""
        self._req = self._buf = None

    def cancel(self) -> None:
        """Cancel the posted header receive (a header already in is discarded)."""
        if self._req is not None:
            self._req.Cancel()
            self._req.Wait()  # a cancelled request must still complete to be freed
            self._req = self._buf = None
