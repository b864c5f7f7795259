"""The master's peers: one inbox and a host name each; collection with deadlines.

Both jobs' masters talk to their workers through :class:`Peers`:

* :meth:`Peers.handshake` takes every worker's READY (which carries its host
  name, so every later error names ``rank R (host)``);
* :meth:`Peers.collect` gathers, from many peers at once, each one's next
  messages of given kinds, testing all outstanding header receives with one
  ``Testsome``; answers the caller declares *stale* (a late answer to an
  earlier step or attempt) are counted and dropped; a *soft* deadline returns
  who is missing, the *hard* one raises naming them;
* :meth:`Peers.order` sends one order to many and waits for delivery;
* with failure reporting on (``fault_tolerance = "ulfm"``, :mod:`mpi_coded.runtime.core.ulfm`)
  a peer whose posted receive fails is *lost* (:attr:`Peers.lost`, ``on_lost``): it is
  no longer listened to, sent to or waited for, and a collection with a soft deadline
  that still waits for it returns at once with the peers missing.

The worker side is :class:`MasterLink`: its inbox from the master, READY with
the host name, and sends that wait politely for delivery.

Workers that talk to each other (the coded job's shuffle) learn every rank's host with
:func:`world_hosts` (one ``Iallgather`` with a deadline), so that their errors too name
``rank R (host)``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np
from mpi4py import MPI

from mpi_coded.runtime.core import ulfm, wire
from mpi_coded.runtime.core.inbox import Inbox, Msg
from mpi_coded.runtime.core.wait import POLICY, Backoff, DeadlineExceeded, deadline_in, wait_all

MASTER = 0


HOST_BYTES = 200
"""Bytes of a host name sent (longer names are cut)."""


def _host_bytes() -> np.ndarray:
    return np.frombuffer(socket.gethostname().encode()[:HOST_BYTES], dtype=np.uint8)


def world_hosts(comm: MPI.Comm, timeout: float) -> dict[int, str]:
    """Every rank's host name, by rank: collective over ``comm`` (every rank calls it at
    the same point), one ``Iallgather`` waited for with a deadline."""
    mine = np.zeros(HOST_BYTES, dtype=np.uint8)
    name = _host_bytes()
    mine[:len(name)] = name
    every = np.zeros((comm.Get_size(), HOST_BYTES), dtype=np.uint8)
    wait_all([comm.Iallgather(mine, every)], deadline_in(timeout), "every rank's host name")
    return {r: bytes(row).rstrip(b"\0").decode(errors="replace") for r, row in enumerate(every)}


class Peers:
    """The master's links to ``ranks``; ``label(rank)`` names a rank in messages."""

    def __init__(self, comm: MPI.Comm, ranks: Sequence[int],
                 label: Callable[[int], str] = lambda r: f"rank {r}",
                 on_lost: Callable[[int], None] | None = None,
                 where: Mapping[int, int] | None = None) -> None:
        """``ranks``: the peers' names; ``where``: the rank of each name in ``comm`` when
        it is not the name itself (a job from a store on fewer ranks than machines)."""
        self.comm = comm
        self.ranks = list(ranks)
        at = dict(where or {})
        self.link: dict[int, tuple[MPI.Comm, int]] = {r: (comm, at.get(r, r))
                                                      for r in self.ranks}
        self.inbox = {r: Inbox(comm, self.link[r][1], name=r) for r in self.ranks}
        self.host = {r: "?" for r in self.ranks}
        self.label = label
        self.dropped = 0
        self.lost: dict[int, float] = {}  # rank -> when it was found dead (Unix seconds)
        self.on_lost = on_lost
        self.joined: dict[int, MPI.Intercomm] = {}  # peers spawned later, by name
        # (peers, their posted receives, the slots taken from) of the last :meth:`arrived`,
        # reused while the peers are the same
        self._polled: tuple[tuple[int, ...], list[MPI.Request], list[int]] | None = None

    def join(self, r: int, inter: MPI.Intercomm) -> None:
        """Peer ``r`` is now the process at the other end of ``inter`` (spawned to replace
        the lost ``r``): listened to, sent to and named ``r`` as before."""
        self._polled = None
        self.joined[r] = inter
        self.link[r] = (inter, 0)
        self.inbox[r] = Inbox(inter, 0, name=r)
        self.host[r] = "?"
        self.lost.pop(r, None)

    def isend(self, r: int, kind: wire.Kind, step: int, arr: np.ndarray | None = None,
              aux: int = 0) -> list[MPI.Request]:
        """Start sending one message to peer ``r`` (through its link)."""
        comm, dest = self.link[r]
        return wire.isend(comm, dest, kind, step, arr, aux)

    def isend_packed(self, r: int, packed: tuple[np.ndarray, np.ndarray | None]
                     ) -> list[MPI.Request]:
        """Start sending peer ``r`` a message :func:`wire.pack` made."""
        comm, dest = self.link[r]
        return wire.isend_packed(comm, dest, packed)

    def isend_together(self, r: int, parts: Sequence[tuple[np.ndarray, np.ndarray | None]]
                       ) -> list[MPI.Request]:
        """Start sending peer ``r`` messages :func:`wire.pack` made, one bundle if they fit
        (:func:`wire.isend_together`)."""
        comm, dest = self.link[r]
        return wire.isend_together(comm, dest, parts)

    def disconnect(self, timeout: float) -> None:
        """Disconnect from the peers spawned later (so that they may finalize), each within
        ``timeout`` (a peer that does not take part is left: this process ends anyway)."""
        for r, inter in self.joined.items():
            if r in self.lost:  # a disconnect waits for the dead: leave it
                continue
            # MPI_Comm_disconnect waits for every pending operation on the communicator:
            # the header receive posted for the peer's next message would never end
            self._polled = None
            self.inbox[r].cancel()
            worker = threading.Thread(target=inter.Disconnect, daemon=True)
            worker.start()
            worker.join(timeout)
        self.joined.clear()

    def alive(self, who: Iterable[int]) -> list[int]:
        """``who`` without the lost peers."""
        return [r for r in who if r not in self.lost]

    def detect(self, failed: Iterable[int] = ()) -> list[int]:
        """Mark the peers MPI knows dead (and ``failed``, whose receive failed) lost; the
        newly lost ones."""
        now = time.time()
        name = {rk: r for r, (c, rk) in self.link.items() if c is self.comm}
        world = {name[r] for r in ulfm.failed_ranks(self.comm)
                 if r in name and name[r] not in self.joined}
        dead = (world | set(failed)) & set(self.ranks)
        new = sorted(r for r in dead if r not in self.lost)
        if new:
            self._polled = None
        for r in new:
            self.lost[r] = now
            self.inbox[r].forget()
            if self.on_lost is not None:
                self.on_lost(r)
        return new

    def name(self, who: Iterable[int]) -> str:
        """``rank 3 (host), ...`` (or the job's own label) for error messages."""
        return ", ".join(f"{self.label(r)} ({self.host[r]})" for r in sorted(who))

    def send(self, who: Iterable[int], kind: wire.Kind, step: int,
             arr: np.ndarray | None = None, aux: int = 0) -> list[MPI.Request]:
        """Start sending the same message to each of ``who`` (packed once)."""
        packed = wire.pack(kind, step, arr, aux)
        reqs: list[MPI.Request] = []
        for r in self.alive(who):
            reqs += self.isend_packed(r, packed)
        return reqs

    def order(self, who: Iterable[int], kind: wire.Kind, step: int, aux: int,
              timeout: float) -> None:
        """Send an order to each of ``who`` and wait until it is delivered."""
        wait_all(self.send(who, kind, step, aux=aux), deadline_in(timeout),
                 f"{kind.name} to be delivered")

    def arrived(self, who: Sequence[int], hard: float) -> list[Msg]:
        """The messages from ``who`` whose headers are in now (a bundle's all): one
        ``Testsome`` over the posted receives, then their payloads.  Never waits for a
        header.  With failure reporting on, each receive is tested on its own, and a peer
        whose receive failed is lost (:meth:`detect`).

        The list of posted receives is kept from one call to the next while ``who`` is the
        same (a master polls the same peers all through a step); a peer's next receive is
        posted in its place when the list is next polled."""
        if self.lost:
            who = self.alive(who)
        key = tuple(who)
        if self._polled is None or self._polled[0] != key:
            self._polled = (key, [self.inbox[r].request() for r in key], [])
        reqs, taken = self._polled[1], self._polled[2]
        for i in taken:  # the next receive of a peer taken from, posted when next polled
            reqs[i] = self.inbox[key[i]].request()
        taken.clear()
        if not ulfm.enabled():
            msgs: list[Msg] = []
            for i in MPI.Request.Testsome(reqs) or []:
                taken.append(i)
                try:
                    msgs += self.inbox[key[i]].take_all(hard)
                except BaseException:  # a malformed message: the next call starts anew
                    self._polled = None
                    raise
            return msgs
        done = [(i, ulfm.test(q)) for i, q in enumerate(reqs)]
        failed = [key[i] for i, ok in done if ok is None]
        msgs = []
        for i in (i for i, ok in done if ok):
            taken.append(i)
            try:
                msgs += self.inbox[key[i]].take_all(hard)
            except ulfm.PeerLost:  # died mid-message: its partial payload is dropped
                failed.append(key[i])
            except BaseException:
                self._polled = None
                raise
        if failed:
            self.detect(failed)
        return msgs

    def pump(self, who: Callable[[], Sequence[int]], handle: Callable[[Msg], None],
             done: Callable[[], bool], *, hard: float, what: str,
             soft: float | None = None,
             owed: Callable[[], Sequence[int]] | None = None) -> list[int]:
        """Hand every message from ``who()`` to ``handle`` until ``done()``.

        The one waiting loop of the masters: ``who()`` is re-read each round
        (the peers listened to); ``owed()`` (default ``who()``) are the peers
        still owing an answer.  Returns ``[]`` when done, ``owed()`` at ``soft``,
        and raises :class:`DeadlineExceeded` naming them at ``hard``.  Backs off
        between empty rounds (:data:`POLICY`).
        """
        owing = owed or who
        backoff = POLICY.backoff(active=True)
        while not done():
            msgs = self.arrived(who(), hard)
            for msg in msgs:  # what is in is taken, then the deadlines are checked: a
                handle(msg)   # steady stream of stale answers cannot outlast them
            if done():
                break
            if soft is not None and self.lost and any(r in self.lost for r in owing()):
                return list(owing())  # a peer it waits for is dead: no use waiting on
            now = time.monotonic()
            if soft is not None and now > soft:
                return list(owing())
            if now > hard:
                raise DeadlineExceeded(f"timed out waiting for {what} from {self.name(owing())}")
            if msgs:
                backoff.reset()
            else:
                backoff.sleep()
        return []

    def drop(self) -> None:
        """Count one stale answer (a late answer to an earlier step or attempt) dropped."""
        self.dropped += 1

    def collect(self, who: Sequence[int], kinds: Sequence[wire.Kind], step: int, *,
                hard: float, what: str, soft: float | None = None, aux: int | None = None,
                stale: Callable[[int, wire.Header], bool] | None = None,
                until: Callable[[dict[int, list[Msg]]], bool] | None = None,
                on_stale: Callable[[Msg], None] | None = None,
                ) -> tuple[dict[int, list[Msg]], list[int]]:
        """Each peer's next ``len(kinds)`` messages (in that order) for ``step``.

        Returns ``(got, missing)``; ``got`` lists peers in the order their first
        message arrived.  Stops early when ``until(got)`` holds (peers with a
        complete answer), returns at ``soft`` with the peers still missing, and
        raises :class:`DeadlineExceeded` naming them at ``hard``.  A message
        for which ``stale(rank, header)`` is true is dropped and counted (and given to
        ``on_stale``: a late answer may still be read).  Any
        other message of the wrong kind, step or ``aux`` is a wire error.
        """
        got: dict[int, list[Msg]] = {}

        def pending() -> list[int]:  # a lost peer owes nothing
            return [r for r in who if len(got.get(r, ())) < len(kinds) and r not in self.lost]

        def done() -> bool:
            if until is not None and until(
                    {r: v for r, v in got.items() if len(v) == len(kinds)}):
                return True
            return not pending()

        def handle(msg: Msg) -> None:
            h = msg[0]
            r = h.source
            if stale is not None and stale(r, h):
                self.drop()
                if on_stale is not None:
                    on_stale(msg)
                return
            want = kinds[len(got.get(r, ()))]
            if h.kind != want or h.step != step or (aux is not None and h.aux != aux):
                raise wire.WireError(
                    f"unexpected {h.kind.name} (step {h.step}, aux {h.aux}) from "
                    f"{self.name([r])}; expected {want.name} (step {step}"
                    + (f", aux {aux})" if aux is not None else ")"))
            got.setdefault(r, []).append(msg)

        self.pump(pending, handle, done, hard=hard, what=what, soft=soft)
        return got, pending()

    def handshake(self, timeout: float, who: Sequence[int] | None = None) -> None:
        """Take every peer's READY (or ``who``'s) and remember its host name."""
        got, _ = self.collect(self.ranks if who is None else who, [wire.Kind.READY], 0,
                              hard=deadline_in(timeout), what="READY")
        for r, msgs in got.items():
            payload = msgs[0][1]
            self.host[r] = bytes(payload).decode(errors="replace") if payload is not None \
                else "?"

    def cancel(self) -> None:
        self._polled = None
        for box in self.inbox.values():
            box.cancel()


class MasterLink:
    """A worker's link to the master (rank 0)."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm = comm
        self.inbox = Inbox(comm, MASTER)

    def send(self, kind: wire.Kind, step: int, arr: np.ndarray | None = None, aux: int = 0, *,
             timeout: float) -> None:
        """Send one message to the master and wait until it is delivered: politely, or
        with the short active backoff when it carries a payload (a large one moves only
        while both sides call into MPI)."""
        wait_all(wire.isend(self.comm, MASTER, kind, step, arr, aux), deadline_in(timeout),
                 f"the master to receive {kind.name} (step {step})", active=arr is not None)

    def isend(self, kind: wire.Kind, step: int, arr: np.ndarray | None = None,
              aux: int = 0) -> list[MPI.Request]:
        return wire.isend(self.comm, MASTER, kind, step, arr, aux)

    def isend_together(self, parts: Sequence[tuple[np.ndarray, np.ndarray | None]]
                       ) -> list[MPI.Request]:
        """Start sending the master messages :func:`wire.pack` made, one bundle if they fit
        (:func:`wire.isend_together`)."""
        return wire.isend_together(self.comm, MASTER, parts)

    def ready(self, timeout: float) -> None:
        """Tell the master this rank is set up, with its host name."""
        self.send(wire.Kind.READY, 0, _host_bytes(), timeout=timeout)

    def recv(self, expect: Collection[wire.Kind], step: int | None, timeout: float,
             what: str, dormant: bool = False, active: bool = False,
             backoff: Backoff | None = None) -> Msg:
        """The master's next message (``dormant``: this rank has no part until it comes;
        ``active``: it is due now, the second message of an order; ``backoff``: this
        one, an expected order's)."""
        return self.inbox.recv(expect, step, deadline_in(timeout), what, dormant, active,
                               backoff)
