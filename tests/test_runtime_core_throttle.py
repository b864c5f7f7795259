"""runtime/core/throttle.py: the real work, then a sleep for the rest of the target
``rows * t_row / speed``; an overrun (work longer than the target) sleeps nothing."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_coded.runtime.core import throttle


@pytest.fixture
def clock(monkeypatch):
    """A fake clock: ``work`` advances it; sleeps are recorded and advance it too."""
    state: dict[str, Any] = {"t": 100.0, "sleeps": []}

    def sleep(s: float) -> None:
        state["sleeps"].append(s)
        state["t"] += s

    monkeypatch.setattr(throttle.time, "perf_counter", lambda: state["t"])
    monkeypatch.setattr(throttle.time, "sleep", sleep)
    return state


def test_throttle_sleeps_the_rest_of_the_target(clock):
    def work() -> str:
        clock["t"] += 0.01
        return "rows"

    out, th = throttle.throttled(work, rows=10, t_row=0.01, speed=2.0)
    assert out == "rows"
    assert th.target_s == pytest.approx(0.05) and th.compute_s == pytest.approx(0.01)
    assert clock["sleeps"] == [pytest.approx(0.04)] and th.sleep_s == pytest.approx(0.04)
    assert not th.overrun


def test_throttle_overrun_sleeps_nothing_and_says_so(clock):
    def work() -> None:
        clock["t"] += 0.2

    _, th = throttle.throttled(work, rows=4, t_row=0.01, speed=1.0)
    assert clock["sleeps"] == [] and th.sleep_s == 0.0
    assert th.overrun and th.compute_s == pytest.approx(0.2) and th.target_s == 0.04


def test_throttle_real_clock_takes_at_least_the_target():
    import time

    t0 = time.perf_counter()
    _, th = throttle.throttled(lambda: None, rows=5, t_row=0.01, speed=1.0)
    took = time.perf_counter() - t0
    assert took >= th.target_s == pytest.approx(0.05)
    assert th.compute_s + th.sleep_s >= 0.05 and took < 5.05
