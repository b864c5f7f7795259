"""Waiting with deadlines: polite (backoff sleeps), busy (spin) or chosen automatically.

MPICH and Open MPI busy-poll inside blocking calls (``Recv``, ``Wait``); on an
oversubscribed laptop (8-64 ranks on 2 cores) a blocked rank would burn a core
and corrupt every timing.  Every wait here tests its requests, sleeps with an
exponential backoff up to a cap and gives up at a deadline, as mpi4py's
``futures`` worker loop (``_core.py``) backs off instead of spinning.

The strategy is a setting (``--wait`` / config key ``wait``,
:data:`mpi_coded.wait_modes.WAIT_MODES`):

``polite``
    back off from 10 us to the idle cap (0.2 ms while a rank is *expecting*
    answers, :meth:`WaitPolicy.backoff` with ``active=True``), for
    oversubscribed nodes;
``busy``
    test in a loop without sleeping, the lowest latency with one rank per core;
``auto``
    ``busy`` when the ranks on this node fit its cores, else ``polite``
    (:func:`mpi_coded.wait_modes.choose_mode`); the ranks of a node are those on the same
    physical machine (:func:`machine_key`, the kernel's boot id), whatever their host names.

Idle ranks (a preempted machine, a server with no part in a phase) always wait
politely, whatever the mode: only ranks expecting an answer may spin.

The idle cap follows the node's oversubscription (:func:`idle_cap`): 1 ms while
the ranks on a node are at most ``4 x cores``, else long enough that the idle
ranks of a node wake about ``IDLE_WAKEUPS_PER_CORE`` times per second per core
(8 ms for 64 ranks on 2 cores), at most 10 ms.  Every wake-up of a sleeping rank
preempts whoever is running, so on a small node the master, the one rank every
step waits for, would otherwise spend its time behind dozens of pollers.
Measured with 64 ranks on 2 cores (``scripts/bench_scale.py``, other jobs on the
node, alternating runs): 128-136 ms of elastic overhead per step with a 1 ms cap,
66-102 ms with the 8 ms one.  A rank notices an order at most one cap late, which
the step hides behind the other ranks' work on the same cores.

A *dormant* rank, one told it has no part until a next order (a preempted machine of the
elastic job, after IDLE), waits with a longer cap, ``DORMANT_SLEEP`` (5 ms, or the idle
cap when that is longer): it wakes about 200 times a second instead of 1000, so its CPU
share stays near 1% even where a wake-up costs 20-70 us (a Test of MPICH's progress
engine; 2.0-2.3% of the idle wall here and 5.1% once in CI with the 1 ms cap).  The price is
that a machine coming back from preemption notices its TASK at most 5 ms late.

An elastic machine *expects* its next order (:class:`OrderClock`, :class:`Expecting`): the
master orders every machine once a step, so the next step's order comes about one period
after this step's.  Until then the machine sleeps in a few halving steps (no run of 10 us
sleeps after each answer: on 64 ranks and 2 cores those wake-ups took the cores from the
work), and near it polls at the active cap where the node is not much oversubscribed.  No
sleep is longer than the cap it would have had, so the bounds above hold.
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mpi4py import MPI

from mpi_coded.runtime.core import ulfm
from mpi_coded.wait_modes import choose_mode

MIN_SLEEP = 1e-5
MAX_SLEEP = 1e-3  # idle cap when the node is not (much) oversubscribed
ACTIVE_MAX_SLEEP = 2e-4
MAX_IDLE_SLEEP = 1e-2  # idle cap however oversubscribed
DORMANT_SLEEP = 5e-3  # cap of a dormant rank (preempted) unless the idle cap is longer
IDLE_WAKEUPS_PER_CORE = 4000.0


def idle_cap(ranks_on_node: int, cores: int) -> float:
    """The longest sleep of an idle wait: ``MAX_SLEEP`` up to ``4 x cores`` ranks per node,
    then ``ranks / (cores x IDLE_WAKEUPS_PER_CORE)`` seconds, at most ``MAX_IDLE_SLEEP``."""
    per_core = ranks_on_node / max(1, cores)
    return min(MAX_IDLE_SLEEP, max(MAX_SLEEP, per_core / IDLE_WAKEUPS_PER_CORE))


def dormant_cap(idle: float) -> float:
    """The longest sleep of a dormant rank's wait: ``DORMANT_SLEEP``, or ``idle`` (the
    node's idle cap) when that is longer."""
    return max(idle, DORMANT_SLEEP)


class DeadlineExceeded(TimeoutError):
    """A wait ran past its deadline; the message says what was awaited."""


class Backoff:
    """Sleeps ``lo, 2 lo, ..`` capped at ``hi``; ``hi == 0`` never sleeps (busy).

    ``hi`` defaults to this rank's idle cap (:attr:`WaitPolicy.idle_sleep`).
    """

    def __init__(self, lo: float = MIN_SLEEP, hi: float | None = None) -> None:
        if hi is None:
            hi = POLICY.idle_sleep
        self.lo, self.hi = min(lo, hi), hi
        self.delay = self.lo

    def reset(self) -> None:
        self.delay = self.lo

    def sleep(self) -> None:
        if self.hi <= 0:
            return
        time.sleep(self.delay)
        self.delay = min(self.hi, self.delay * 2)


class Expecting(Backoff):
    """The backoff of a wait for an order due at ``due`` (``time.perf_counter`` seconds;
    :class:`OrderClock`).

    Until ``due`` it sleeps half the time left (at most ``hi``, at least ``near``), so a few
    wake-ups reach ``due`` (no run of short first sleeps, as nothing is expected yet: on 64
    ranks and 2 cores those were most of the machines' wake-ups), and an order earlier than
    expected waits at most half the time that was left; from ``due`` on, for ``window``
    seconds, at ``near``; then at ``hi``.  No sleep is longer than ``hi`` (the idle or the
    dormant cap): an order that comes early is noticed at most one cap late, as without an
    expectation.
    """

    def __init__(self, due: float, window: float, hi: float | None = None,
                 near: float | None = None) -> None:
        super().__init__(hi=hi)
        self.due, self.window = due, window
        self.near = POLICY.near_sleep if near is None else near

    def sleep(self) -> None:
        left = self.due - time.perf_counter()
        if left > 0:  # half the time left: an early order costs at most half of it
            time.sleep(min(self.hi, max(self.near, left / 2)))
        elif -left < self.window:
            time.sleep(min(self.hi, self.near))
        else:
            time.sleep(self.hi)


EXPECT_EARLY = 0.8
"""An expected order is due after this fraction of the shortest recent period."""
EXPECT_PERIODS = 4
"""Periods (from one step's order to the next step's) an :class:`OrderClock` remembers."""


class OrderClock:
    """When a worker's next order is due: the master orders every worker once a step (a
    task, or idle), so the next order comes about one period after the last, learned from
    the periods between the orders of consecutive steps (the shortest recent one); the
    first order, right after the worker's READY (:meth:`expect_soon`)."""

    def __init__(self) -> None:
        self.periods: deque[float] = deque(maxlen=EXPECT_PERIODS)
        self.last: tuple[int, float] | None = None  # (step, when) of the last new step's order
        self.soon: tuple[float, float] | None = None  # (from, for how long) an order is due

    def expect_soon(self, window: float) -> None:
        """An order is due now, within about ``window`` seconds (the master takes every
        worker's READY, then orders its first step)."""
        self.soon = (time.perf_counter(), window)

    def arrived(self, step: int) -> None:
        """An order for ``step`` has come (a later one of the same step changes nothing)."""
        now = time.perf_counter()
        self.soon = None
        if self.last is not None and step <= self.last[0]:
            return
        if self.last is not None and step == self.last[0] + 1:
            self.periods.append(now - self.last[1])
        self.last = (step, now)

    def backoff(self, hi: float) -> Backoff | None:
        """The wait for the next order (:class:`Expecting`, sleeps capped at ``hi``): due one
        learned period after the last order; with one order in and no period yet, from that
        order on for :data:`FIRST_ORDER_WINDOW`, as the first order after READY; None while
        nothing is expected (no order yet, none due)."""
        if self.last is not None and self.periods:
            period = min(self.periods)
            return Expecting(self.last[1] + EXPECT_EARLY * period, window=period, hi=hi)
        if self.soon is not None:
            return Expecting(self.soon[0], window=self.soon[1], hi=hi)
        if self.last is not None:  # one order in, no period yet: the next is due within a
            # step, expected as the first is (measured: step 2 of 7 ranks 2.09 -> 1.85 ms)
            return Expecting(self.last[1], window=FIRST_ORDER_WINDOW, hi=hi)
        return None


FIRST_ORDER_WINDOW = 0.1
"""Seconds a worker polls at the near cap for its first order after READY
(:meth:`OrderClock.expect_soon`), then at its cap."""


@dataclass
class WaitPolicy:
    """The resolved strategy of this rank (``polite`` or ``busy``) and its sleep caps."""

    mode: str = "polite"
    idle_sleep: float = MAX_SLEEP
    active_sleep: float = ACTIVE_MAX_SLEEP
    dormant_sleep: float = DORMANT_SLEEP
    ranks_on_node: int = 1
    cores: int = 1
    hosts: tuple[str, ...] = ()  # every rank's host name (gathered with the machine keys)

    @property
    def near_sleep(self) -> float:
        """The cap near an expected order (:class:`Expecting`): the active cap where the
        node is not much oversubscribed (its idle cap is the least, ``MAX_SLEEP``), else
        the idle cap (dozens of ranks polling fast would take the cores from the work)."""
        return self.active_sleep if self.idle_sleep <= MAX_SLEEP else self.idle_sleep

    def backoff(self, active: bool = False, dormant: bool = False) -> Backoff:
        """A backoff for one wait; ``active``: this rank expects answers now; ``dormant``:
        it has no part until its next order (ignored when ``active``)."""
        if active:
            return Backoff(hi=0.0 if self.mode == "busy" else self.active_sleep)
        if dormant:  # nothing is due soon: no short first sleeps
            return Backoff(lo=self.idle_sleep, hi=self.dormant_sleep)
        return Backoff(hi=self.idle_sleep)

    def to_dict(self) -> dict[str, float | int | str]:
        """What this rank resolved (for a results file's config line)."""
        return {"wait_mode": self.mode, "idle_sleep_s": self.idle_sleep,
                "active_sleep_s": self.active_sleep, "dormant_sleep_s": self.dormant_sleep,
                "ranks_on_node": self.ranks_on_node, "cores": self.cores}


POLICY = WaitPolicy()
"""This process's waiting strategy, set once by :func:`configure`."""


def machine_key() -> str:
    """What identifies this rank's physical machine: the kernel's boot id, the same in
    every namespace and container of one kernel, so emulated hosts (network namespaces
    with their own host names, ``mpi-coded cluster``) sharing one machine's cores count
    as one node; the host name where the boot id is unreadable."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"boot:{boot}" if boot else f"host:{socket.gethostname()}"


def configure(mode: str, comm: MPI.Comm) -> str:
    """Resolve ``mode`` for this rank (``auto`` from ranks on the node and its cores) and its
    idle cap (:func:`idle_cap`); returns the mode.  A node is a physical machine
    (:func:`machine_key`), not a host name: emulated hosts on one machine share its cores."""
    found = comm.allgather((machine_key(), socket.gethostname()))
    keys = [k for k, _ in found]
    POLICY.hosts = tuple(h for _, h in found)
    ranks_on_node = keys.count(keys[comm.Get_rank()])
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    POLICY.mode = choose_mode(mode, ranks_on_node, cores)
    POLICY.ranks_on_node, POLICY.cores = ranks_on_node, cores
    POLICY.idle_sleep = idle_cap(ranks_on_node, cores)
    POLICY.active_sleep = ACTIVE_MAX_SLEEP
    POLICY.dormant_sleep = dormant_cap(POLICY.idle_sleep)
    return POLICY.mode


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds


def poll_until(test: Callable[[], bool], deadline: float, what: str,
               active: bool = False, dormant: bool = False,
               backoff: Backoff | None = None) -> None:
    """Call ``test()`` with backoff sleeps until it returns True or time runs out
    (``backoff``, default :meth:`WaitPolicy.backoff` for ``active`` and ``dormant``)."""
    backoff = backoff or POLICY.backoff(active, dormant)
    while not test():
        if time.monotonic() > deadline:
            raise DeadlineExceeded(f"timed out waiting for {what}")
        backoff.sleep()


def sleep_until(t_end: float, interrupt: Callable[[], bool]) -> bool:
    """Sleep politely until ``t_end``; return True early when ``interrupt()`` is True."""
    backoff = Backoff()
    while True:
        if interrupt():
            return True
        left = t_end - time.perf_counter()
        if left <= 0:
            return False
        time.sleep(min(left, backoff.delay))
        backoff.delay = min(backoff.hi, backoff.delay * 2)


def wait_all(reqs: Sequence[MPI.Request], deadline: float, what: str,
             active: bool = False) -> None:
    """Wait for every request (one ``Testall`` per try).  With failure reporting on
    (:mod:`mpi_coded.runtime.core.ulfm`) a request whose peer died is done: it is tested on
    its own and dropped."""
    pending = list(reqs)
    if not pending:
        return
    if not ulfm.enabled():
        poll_until(lambda: bool(MPI.Request.Testall(pending)), deadline, what, active)
        return

    def done() -> bool:
        pending[:] = [r for r in pending if ulfm.test(r) is False]
        return not pending

    poll_until(done, deadline, what, active)
