"""The next message from one peer, received politely and tested without blocking.

A rank that computes in chunks (the map phase) keeps a receive posted for the
master's next header and tests it between chunks, so an order to stop is seen
at the next chunk boundary without ever blocking or spinning.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
from mpi4py import MPI

from mpi_coded.runtime import protocol as P
from mpi_coded.runtime.wait import MAX_SLEEP, poll_until


class Inbox:
    """One posted header receive from ``source``; reposted after each message."""

    def __init__(self, comm: MPI.Comm, source: int) -> None:
        self.comm = comm
        self.source = source
        self._req: MPI.Request | None = None
        self._buf: np.ndarray | None = None

    def _post(self) -> None:
        if self._req is None:
            self._req, self._buf = P.post_header(self.comm, self.source)

    def test(self, expect: Collection[P.Kind], step: int | None, deadline: float
             ) -> tuple[P.Header, np.ndarray | None] | None:
        """The next message if it has arrived, else ``None`` (never blocks)."""
        self._post()
        assert self._req is not None and self._buf is not None
        if not self._req.Test():
            return None
        buf = self._buf
        self._req = self._buf = None
        h = P.parse_header(buf, self.source, expect, step)
        return h, P.recv_payload(self.comm, h, deadline)

    def recv(self, expect: Collection[P.Kind], step: int | None, deadline: float,
             what: str, max_sleep: float = MAX_SLEEP) -> tuple[P.Header, np.ndarray | None]:
        """Wait politely for the next message."""
        got: list[tuple[P.Header, np.ndarray | None]] = []

        def test() -> bool:
            r = self.test(expect, step, deadline)
            if r is not None:
                got.append(r)
            return bool(got)

        poll_until(test, deadline, what, max_sleep)
        return got[0]

    def cancel(self) -> None:
        if self._req is not None:
            self._req.Cancel()
            self._req = self._buf = None
