"""Doorbells: a rank that sends a message to a rank of its own node also rings its bell.

A polite wait (:mod:`mpi_coded.runtime.core.wait`) tests its requests between sleeps,
because MPICH and Open MPI busy-poll inside their blocking calls.  Every timed wake-up
costs CPU (25-30 us of it on the 2-core VMs here: the timer, two context switches, the
Python loop around a 0.2 us ``MPI_Test``), and a message is noticed up to one sleep late.
With 7-64 ranks on 2 cores the machines' wake-ups near an expected order took the cores
from the master and from each other's work, and the step waited for the last of them to
notice its order.

So each rank has a bell, and every message of the wire protocol
(:func:`mpi_coded.runtime.core.wire.isend_packed`) rings the receiver's bell once it is
posted.  A waiting rank sleeps *on its bell* (:meth:`Doorbell.wait`, ``select`` with the
sleep as its timeout): it wakes when rung, tests at once, and otherwise wakes when its
sleep ends, exactly as without a bell.  The bell is only a hint: every wait still tests its
requests, keeps its deadline and its sleep cap, so a ring that is lost (the bell full, a
peer gone) costs at most one sleep, as before.

A bell is a Unix datagram socket in the abstract namespace (Linux), named by the job's
token (drawn by rank 0 at :func:`~mpi_coded.runtime.core.wait.configure`) and the rank.
Abstract names are per network namespace, so a rank rings only the ranks of its own
kernel and network namespace (:func:`bell_domain`): the emulated cluster's hosts, each a
network namespace, ring nobody on another host, as real hosts could not.  Elsewhere (not
Linux, a spawned rank without the job's token) there is no bell and every wait is timed.
A ring is one non-blocking ``sendto`` of an empty datagram (2-4 us); a wait drains every
ring that came.
"""

from __future__ import annotations

import os
import select
import socket
import sys
from collections.abc import Iterable

PREFIX = b"\0mpi_coded-bell-"


def bell_domain() -> str:
    """Which ranks may ring each other: those of one kernel (its boot id) and one network
    namespace (the inode of ``/proc/self/ns/net``); ``""`` where there are no bells."""
    if not sys.platform.startswith("linux"):
        return ""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return ""
    return f"{boot}:{netns}" if boot else ""


class Doorbell:
    """This rank's bell, and the ranks it may ring (``peers``: its domain's ranks)."""

    def __init__(self, token: str, rank: int, peers: Iterable[int]) -> None:
        self.token = token
        self.peers = frozenset(peers) - {rank}
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.address(rank))
        self.sock.setblocking(False)
        self._addr = {r: self.address(r) for r in self.peers}
        self.rung = 0  # rings that woke a wait (for the tests and the curious)
        self.owed: dict[int, None] = {}  # ranks to ring at the next flush, in order

    def address(self, rank: int) -> bytes:
        return PREFIX + f"{self.token}-{rank}".encode()

    def ring(self, rank: int) -> None:
        """Ring ``rank``'s bell if it is in this rank's domain (never blocks, never fails:
        a full bell is already rung, a missing one belongs to a rank gone)."""
        addr = self._addr.get(rank)
        if addr is None:
            return
        try:
            self.sock.sendto(b"", addr)
        except OSError:
            pass

    def later(self, rank: int) -> None:
        """Ring ``rank`` at this rank's next :meth:`flush` (before it next sleeps): a master
        ordering every machine rings them once all its orders are out, so that no machine
        woken by its order takes the master's core while it is still ordering the others."""
        if rank in self._addr:
            self.owed[rank] = None

    def flush(self) -> None:
        """Ring every rank :meth:`later` named, in the order named."""
        if self.owed:
            for rank in self.owed:
                self.ring(rank)
            self.owed.clear()

    def wait(self, timeout: float) -> bool:
        """Sleep until rung or ``timeout`` seconds pass; True if rung (every ring drained)."""
        ready, _, _ = select.select((self.sock,), (), (), timeout)
        if not ready:
            return False
        try:
            while True:
                self.sock.recv(1)
        except BlockingIOError:
            pass
        self.rung += 1
        return True

    def close(self) -> None:
        self.sock.close()
