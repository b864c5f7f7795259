"""The doorbells (mpi_coded/runtime/core/doorbell.py) and the waits that sleep on them
(mpi_coded/runtime/core/wait.py): no MPI, two bells in this process stand for two ranks."""

from __future__ import annotations

import dataclasses
import os
import threading
import time

import pytest

from mpi_coded.runtime.core import doorbell, wait
from mpi_coded.runtime.core.doorbell import Doorbell, bell_domain
from mpi_coded.runtime.core.wait import MIN_SLEEP, POLICY, Backoff, OrderClock, WaitPolicy

pytestmark = pytest.mark.skipif(not bell_domain(), reason="doorbells are Linux's (abstract "
                                "Unix sockets); elsewhere every wait is timed")

LONG = 30.0  # a wait that is rung must end long before this


@pytest.fixture
def pair():
    token = os.urandom(6).hex()
    a, b = Doorbell(token, 0, [0, 1]), Doorbell(token, 1, [0, 1])
    yield a, b
    a.close()
    b.close()


@pytest.fixture(autouse=True)
def _policy():
    saved = dataclasses.replace(POLICY)
    yield
    for f in dataclasses.fields(WaitPolicy):
        setattr(POLICY, f.name, getattr(saved, f.name))


def test_a_ring_ends_the_wait_and_is_drained(pair):
    a, b = pair
    assert b.wait(0.001) is False  # nobody rang: the timeout
    a.ring(1)
    a.ring(1)
    t0 = time.monotonic()
    assert b.wait(LONG) is True
    assert time.monotonic() - t0 < LONG / 2
    assert b.wait(0.001) is False  # both rings were taken by the first wait
    assert b.rung == 1


def test_a_ring_from_another_thread_wakes_a_sleeping_wait(pair):
    a, b = pair
    timer = threading.Timer(0.05, a.ring, args=(1,))
    timer.start()
    t0 = time.monotonic()
    try:
        assert b.wait(LONG) is True
    finally:
        timer.cancel()
    assert 0.03 < time.monotonic() - t0 < LONG / 2


def test_rings_owed_are_rung_at_the_flush_in_order_once(pair):
    a, b = pair
    a.later(1)
    a.later(1)
    a.later(7)  # not in a's domain: never rung, never owed
    assert list(a.owed) == [1]
    assert b.wait(0.001) is False  # not rung before the flush
    a.flush()
    assert a.owed == {}
    assert b.wait(LONG) is True


def test_ringing_a_rank_outside_the_domain_or_gone_does_nothing(pair):
    a, b = pair
    a.ring(5)  # not a peer
    b.close()
    a.ring(1)  # its bell is gone: no error
    assert a.wait(0.001) is False


def test_the_domain_is_the_kernel_and_the_network_namespace():
    boot, _, netns = bell_domain().partition(":")
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert boot == f.read().strip()
    assert int(netns) == os.stat("/proc/self/ns/net").st_ino


def test_a_nap_on_the_bell_says_it_was_rung_and_a_backoff_restarts_short(pair):
    a, b = pair
    POLICY.bell = b
    assert wait.nap(0.001) is False
    back = Backoff(lo=0.004, hi=0.004)
    a.ring(1)
    back.sleep()
    assert back.delay == MIN_SLEEP  # rung: test again soon, the message may not be whole
    back.sleep()
    assert back.delay == 2 * MIN_SLEEP  # not rung: doubling again


def test_a_nap_rings_what_this_rank_owes_before_it_sleeps(pair):
    a, b = pair
    POLICY.bell = a
    a.later(1)
    wait.nap(0.0)
    assert b.wait(LONG) is True


def test_a_busy_wait_rings_what_this_rank_owes_too(pair):
    a, b = pair
    POLICY.bell = a
    a.later(1)
    Backoff(hi=0.0).sleep()  # a spinning master still rings the machines it ordered
    assert a.owed == {}
    assert b.wait(LONG) is True


def test_ring_only_for_the_bells_communicator(pair):
    a, b = pair
    world, other = object(), object()
    POLICY.bell, POLICY.bell_comm = a, world
    wait.ring(other, 1)  # type: ignore[arg-type]
    assert a.owed == {}
    wait.ring(world, 1)  # type: ignore[arg-type]
    assert list(a.owed) == [1]


def test_rung_waits_sleep_longer_and_only_with_a_bell(pair):
    a, _ = pair
    POLICY.mode, POLICY.idle_sleep, POLICY.active_sleep = "polite", 1e-3, 2e-4
    POLICY.bell = None
    assert POLICY.backoff(active=True, rung=True).hi == 2e-4  # no bell: the active cap
    assert wait.rung_by(0) is False
    POLICY.bell = a
    assert POLICY.backoff(active=True, rung=True).hi == 1e-3  # rung: up to the idle cap
    assert POLICY.backoff(active=True).hi == 2e-4
    POLICY.mode = "busy"
    assert POLICY.backoff(active=True, rung=True).hi == 0.0  # busy spins whatever
    assert wait.rung_by(1) is True and wait.rung_by(0) is False  # a's peers: rank 1


def test_an_order_rung_by_the_master_needs_no_expectation():
    token = os.urandom(6).hex()
    machine = Doorbell(token, 1, [0, 1])
    try:
        clock = OrderClock()
        clock.arrived(1)
        clock.arrived(2)  # a period is known: without a bell, an Expecting wait
        POLICY.bell = None
        assert isinstance(clock.backoff(1e-3), wait.Expecting)
        POLICY.bell = machine
        b = clock.backoff(1e-3)
        assert type(b) is Backoff and (b.lo, b.hi) == (1e-3, 1e-3)
    finally:
        machine.close()


class _World:
    """``ranks`` ranks all in this process's bell domain; this is rank 0."""

    def __init__(self, ranks: int) -> None:
        self.ranks = ranks

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's name
        return 0

    def allgather(self, value: object) -> list[object]:
        return [value] * self.ranks


@pytest.mark.parametrize("ranks,cores,env,bells", [
    (7, 2, None, 7), (8, 2, None, 8), (9, 2, None, 0), (64, 2, None, 0), (7, 2, "0", 0),
])
def test_configure_gives_bells_up_to_four_ranks_per_core(monkeypatch, ranks, cores, env,
                                                        bells):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    if env is None:
        monkeypatch.delenv(wait.DOORBELL_ENV, raising=False)
    else:
        monkeypatch.setenv(wait.DOORBELL_ENV, env)
    POLICY.bell = None
    try:
        wait.configure("auto", _World(ranks))  # type: ignore[arg-type]
        assert POLICY.to_dict()["doorbells"] == bells
        assert (POLICY.bell is not None) == (bells > 0)
        assert POLICY.hosts == (os.uname().nodename,) * ranks
    finally:
        if POLICY.bell is not None:
            POLICY.bell.close()


def test_the_module_names_its_prefix():
    assert doorbell.PREFIX.startswith(b"\0")  # abstract: nothing on disk to clean up
