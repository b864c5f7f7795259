"""runtime/core/wait.py in one process: the idle cap, the backoff sequence, the strategy a
rank resolves from its ranks and cores, and waits that end at their deadline (with small
deadlines, bounds loose enough for a loaded machine: not before the deadline, by 5 s).
No MPI is started here; ``configure`` gets a stand-in communicator."""

from __future__ import annotations

import dataclasses
import os
import time

import pytest

from mpi_coded.errors import ConfigError
from mpi_coded.runtime.core import wait
from mpi_coded.runtime.core.wait import (
    ACTIVE_MAX_SLEEP,
    DORMANT_SLEEP,
    MAX_IDLE_SLEEP,
    MAX_SLEEP,
    MIN_SLEEP,
    POLICY,
    Backoff,
    DeadlineExceeded,
    Expecting,
    OrderClock,
    WaitPolicy,
)

LATE = 5.0  # a wait must have ended this long after its deadline, however loaded the node


@pytest.fixture(autouse=True)
def _policy():
    """Every test leaves this process's POLICY as it found it."""
    saved = dataclasses.replace(POLICY)
    yield
    for f in dataclasses.fields(WaitPolicy):
        setattr(POLICY, f.name, getattr(saved, f.name))


@pytest.fixture
def sleeps(monkeypatch):
    """Record the sleeps of wait.py instead of sleeping."""
    got: list[float] = []
    monkeypatch.setattr(wait.time, "sleep", got.append)
    return got


@pytest.mark.parametrize("ranks,cores,cap", [
    (1, 1, MAX_SLEEP), (8, 2, MAX_SLEEP), (4, 1, MAX_SLEEP),  # up to 4 x cores
    (16, 2, 2e-3), (64, 2, 8e-3), (48, 1, 1e-2), (1000, 2, MAX_IDLE_SLEEP),
    (3, 0, MAX_SLEEP),  # no cores reported: counted as one
])
def test_wait_idle_cap_follows_ranks_per_core(ranks, cores, cap):
    assert wait.idle_cap(ranks, cores) == pytest.approx(cap)


def test_wait_backoff_doubles_from_lo_up_to_hi_and_resets(sleeps):
    b = Backoff(lo=1e-5, hi=1e-4)
    for _ in range(6):
        b.sleep()
    assert sleeps == pytest.approx([1e-5, 2e-5, 4e-5, 8e-5, 1e-4, 1e-4])
    b.reset()
    b.sleep()
    assert sleeps[-1] == pytest.approx(1e-5)


def test_wait_backoff_with_zero_cap_never_sleeps(sleeps):
    b = Backoff(hi=0.0)
    for _ in range(5):
        b.sleep()
    assert sleeps == []


def test_wait_backoff_lo_above_the_cap_starts_at_the_cap(sleeps):
    b = Backoff(lo=1e-2, hi=1e-4)
    b.sleep()
    b.sleep()
    assert sleeps == pytest.approx([1e-4, 1e-4])


def test_wait_backoff_cap_defaults_to_this_ranks_idle_cap(sleeps):
    POLICY.idle_sleep = 4e-5
    b = Backoff()
    for _ in range(4):
        b.sleep()
    assert b.lo == MIN_SLEEP and sleeps == pytest.approx([1e-5, 2e-5, 4e-5, 4e-5])


@pytest.mark.parametrize("mode,active,cap", [
    ("polite", False, 7e-3), ("polite", True, ACTIVE_MAX_SLEEP),
    ("busy", True, 0.0),
    ("busy", False, 7e-3),  # idle ranks wait politely whatever the mode
])
def test_wait_policy_backoff_by_mode_and_activity(mode, active, cap):
    policy = WaitPolicy(mode=mode, idle_sleep=7e-3)
    assert policy.backoff(active).hi == cap


class _Node:
    def __init__(self, size: int) -> None:
        self.size = size

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's name
        return self.size

    def Free(self) -> None:  # noqa: N802
        pass


class _World:
    """Stands in for a communicator of ``ranks_on_node`` ranks all on this machine (as
    ``Split_type`` or an ``allgather`` of machine keys would tell); this is rank 0."""

    def __init__(self, ranks_on_node: int) -> None:
        self.ranks = ranks_on_node

    def Get_rank(self) -> int:  # noqa: N802
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return self.ranks

    def Split_type(self, kind: int) -> _Node:  # noqa: N802
        return _Node(self.ranks)

    def allgather(self, value: object) -> list[object]:
        return [value] * self.ranks


@pytest.mark.parametrize("mode,ranks,cores,want", [
    ("auto", 2, 2, "busy"), ("auto", 1, 4, "busy"), ("auto", 3, 2, "polite"),
    ("auto", 64, 2, "polite"), ("polite", 1, 8, "polite"), ("busy", 64, 2, "busy"),
])
def test_wait_configure_resolves_the_mode_from_ranks_on_the_node_and_cores(
        monkeypatch, mode, ranks, cores, want):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    world = _World(ranks)
    assert wait.configure(mode, world) == want  # type: ignore[arg-type]
    assert (POLICY.mode, POLICY.ranks_on_node, POLICY.cores) == (want, ranks, cores)
    assert POLICY.idle_sleep == wait.idle_cap(ranks, cores)
    assert POLICY.active_sleep == ACTIVE_MAX_SLEEP
    assert POLICY.dormant_sleep == max(DORMANT_SLEEP, POLICY.idle_sleep)
    assert POLICY.to_dict() == {"wait_mode": want, "idle_sleep_s": POLICY.idle_sleep,
                                "active_sleep_s": ACTIVE_MAX_SLEEP,
                                "dormant_sleep_s": POLICY.dormant_sleep,
                                "ranks_on_node": ranks, "cores": cores}


@pytest.mark.parametrize("idle,want", [
    (MAX_SLEEP, DORMANT_SLEEP), (2e-3, DORMANT_SLEEP), (8e-3, 8e-3), (MAX_IDLE_SLEEP, 1e-2)])
def test_wait_dormant_cap_is_5_ms_or_the_idle_cap_when_longer(idle, want):
    assert wait.dormant_cap(idle) == pytest.approx(want)


@pytest.mark.parametrize("mode", ["polite", "busy"])
def test_wait_a_dormant_wait_backs_off_to_the_dormant_cap_and_active_wins(sleeps, mode):
    POLICY.mode, POLICY.idle_sleep, POLICY.dormant_sleep = mode, MAX_SLEEP, DORMANT_SLEEP
    b = POLICY.backoff(dormant=True)
    for _ in range(12):
        b.sleep()
    # nothing is due soon: it starts at the idle cap, no run of short sleeps
    assert sleeps[0] == pytest.approx(MAX_SLEEP) and sleeps[-1] == pytest.approx(DORMANT_SLEEP)
    assert max(sleeps) == pytest.approx(DORMANT_SLEEP)
    assert POLICY.backoff().hi == MAX_SLEEP  # not dormant: the idle cap
    active = POLICY.backoff(active=True, dormant=True)  # expecting answers: never dormant
    assert active.hi == (0.0 if mode == "busy" else ACTIVE_MAX_SLEEP)


def test_wait_poll_until_dormant_sleeps_up_to_the_dormant_cap(sleeps):
    POLICY.idle_sleep, POLICY.dormant_sleep = MAX_SLEEP, DORMANT_SLEEP
    calls = iter([False] * 12 + [True])
    wait.poll_until(lambda: next(calls), time.monotonic() + 60, "an order", dormant=True)
    assert len(sleeps) == 12 and max(sleeps) == pytest.approx(DORMANT_SLEEP)


def test_wait_configure_refuses_an_unknown_mode():
    with pytest.raises(ConfigError, match=r"^wait: must be one of auto, polite, busy"):
        wait.configure("spin", _World(2))  # type: ignore[arg-type]


def test_wait_deadline_in_is_on_the_monotonic_clock():
    t = time.monotonic()
    d = wait.deadline_in(0.5)
    assert t + 0.5 <= d <= time.monotonic() + 0.5


def test_wait_poll_until_returns_at_once_when_done_even_past_the_deadline(sleeps):
    wait.poll_until(lambda: True, time.monotonic() - 10, "nothing")
    assert sleeps == []


def test_wait_poll_until_tests_between_backoff_sleeps_until_done(sleeps):
    calls = []

    def test() -> bool:
        calls.append(1)
        return len(calls) == 4

    wait.poll_until(test, wait.deadline_in(60), "the fourth try")
    assert len(calls) == 4 and sleeps == pytest.approx([1e-5, 2e-5, 4e-5])


@pytest.mark.parametrize("mode,active", [("polite", False), ("polite", True), ("busy", True)])
def test_wait_poll_until_raises_at_its_deadline_not_before(mode, active):
    POLICY.mode = mode
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"^timed out waiting for the answer$"):
        wait.poll_until(lambda: False, t0 + 0.2, "the answer", active)
    took = time.monotonic() - t0
    assert 0.2 <= took < 0.2 + LATE
    assert issubclass(DeadlineExceeded, TimeoutError)


def test_wait_busy_active_poll_never_sleeps(sleeps):
    POLICY.mode = "busy"
    with pytest.raises(DeadlineExceeded):
        wait.poll_until(lambda: False, wait.deadline_in(0.05), "x", active=True)
    assert sleeps == []


def test_wait_sleep_until_ends_at_its_end_not_before():
    t0 = time.perf_counter()
    assert wait.sleep_until(t0 + 0.2, lambda: False) is False
    took = time.perf_counter() - t0
    assert 0.2 <= took < 0.2 + LATE


def test_wait_sleep_until_returns_true_when_interrupted():
    calls = []

    def interrupt() -> bool:
        calls.append(1)
        return len(calls) == 3

    t0 = time.perf_counter()
    assert wait.sleep_until(t0 + 30, interrupt) is True
    assert len(calls) == 3 and time.perf_counter() - t0 < LATE


def test_wait_sleep_until_checks_the_interrupt_before_sleeping(sleeps):
    assert wait.sleep_until(time.perf_counter() + 30, lambda: True) is True
    assert sleeps == []


def test_wait_sleep_until_never_sleeps_past_its_end(sleeps):
    POLICY.idle_sleep = 10.0  # a huge cap: the sleep must still stop at the end
    t_end = time.perf_counter() + 0.05
    sleeps_left: list[float] = []

    def interrupt() -> bool:
        sleeps_left.append(t_end - time.perf_counter())
        return len(sleeps_left) > 40

    wait.sleep_until(t_end, interrupt)
    # each sleep is at most what was left when it started (and the backoff grows)
    assert all(s <= left + 1e-9 for s, left in zip(sleeps, sleeps_left))


def test_wait_all_of_no_requests_returns_at_once():
    wait.wait_all([], time.monotonic() - 10, "nothing")


class _Clock:
    """A stand-in for ``time.perf_counter`` and ``time.sleep``: sleeping moves it on."""

    def __init__(self, monkeypatch, now: float = 100.0) -> None:
        self.now, self.sleeps = now, []
        monkeypatch.setattr(wait.time, "perf_counter", lambda: self.now)
        monkeypatch.setattr(wait.time, "sleep", self.sleep)

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def test_wait_expecting_halves_the_time_left_then_polls_near_then_at_the_cap(monkeypatch):
    clock = _Clock(monkeypatch)
    b = Expecting(due=100.008, window=0.004, hi=1e-3, near=2e-4)
    while clock.now < 100.0125:
        b.sleep()
    s = clock.sleeps
    before = [x for x, t in zip(s, _times(100.0, s)) if t < 100.008]
    assert max(s) == pytest.approx(1e-3)  # never longer than the cap it was given
    assert len(before) <= 8 + 4  # a few wake-ups to the due time, not a run of 10 us ones
    assert min(before) >= 2e-4 - 1e-12
    near = [x for x, t in zip(s, _times(100.0, s)) if 100.008 <= t < 100.012]
    assert near and all(x == pytest.approx(2e-4) for x in near)
    assert s[-1] == pytest.approx(1e-3)  # past the window: the cap again


def _times(t0: float, sleeps: list[float]) -> list[float]:
    """When each sleep started."""
    out = []
    for x in sleeps:
        out.append(t0)
        t0 += x
    return out


def test_wait_expecting_far_due_sleeps_at_the_cap_so_an_early_order_is_one_cap_late(
        monkeypatch):
    clock = _Clock(monkeypatch)
    b = Expecting(due=101.0, window=1.0, hi=5e-3, near=2e-4)
    for _ in range(5):
        b.sleep()
    assert clock.sleeps == [pytest.approx(5e-3)] * 5


def test_wait_order_clock_learns_the_shortest_recent_period_of_new_steps(monkeypatch):
    clock = _Clock(monkeypatch, now=10.0)
    oc = OrderClock()
    assert oc.backoff(1e-3) is None  # nothing learned yet
    for step, at in [(1, 10.0), (1, 10.001), (2, 10.010), (3, 10.030), (5, 10.040)]:
        clock.now = at
        oc.arrived(step)  # a second order of step 1 and a skipped step teach nothing
    assert list(oc.periods) == [pytest.approx(0.010), pytest.approx(0.020)]
    b = oc.backoff(1e-3)
    assert isinstance(b, Expecting) and b.hi == 1e-3
    assert b.due == pytest.approx(10.040 + wait.EXPECT_EARLY * 0.010)
    assert b.window == pytest.approx(0.010)
    clock.now = 10.041
    oc.arrived(4)  # an older step's order (a late CUT's): ignored
    assert oc.last == (5, 10.040)


def test_wait_order_clock_expects_from_one_period_or_a_first_order_due_now(monkeypatch):
    clock = _Clock(monkeypatch, now=5.0)
    oc = OrderClock()
    oc.expect_soon(0.1)
    b = oc.backoff(1e-3)  # due now: near polls for 0.1 s, then the cap
    assert isinstance(b, Expecting) and (b.due, b.window, b.hi) == (5.0, 0.1, 1e-3)
    clock.now = 5.001
    oc.arrived(1)
    assert oc.soon is None  # one order, no period yet: the next is expected as the first
    b = oc.backoff(1e-3)
    assert isinstance(b, Expecting) and (b.due, b.window) == (5.001, wait.FIRST_ORDER_WINDOW)
    clock.now = 5.02
    oc.arrived(2)
    b = oc.backoff(1e-3)
    assert isinstance(b, Expecting) and b.due == pytest.approx(5.02 + wait.EXPECT_EARLY * 0.019)


@pytest.mark.parametrize("idle,near", [(MAX_SLEEP, ACTIVE_MAX_SLEEP), (8e-3, 8e-3)])
def test_wait_near_an_expected_order_polls_fast_only_where_the_node_is_not_crowded(idle, near):
    POLICY.idle_sleep, POLICY.active_sleep = idle, ACTIVE_MAX_SLEEP
    assert POLICY.near_sleep == near
