"""Artificial speed throttles.

A machine of speed ``s`` spends ``t_row / s`` seconds of wall time per row
(docs/theory.md, A.2: speeds are rows per unit time): it does the real computation, then
sleeps the remainder of its target.  Real compute and throttle sleep are
reported apart; when the real compute alone exceeds the target the throttle
cannot hold the speed and says so (``overrun``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Throttled:
    compute_s: float
    sleep_s: float
    target_s: float

    @property
    def overrun(self) -> bool:
        return self.compute_s > self.target_s


def throttled(work: Callable[[], T], rows: int, t_row: float, speed: float) -> tuple[T, Throttled]:
    """Run ``work`` (computing ``rows`` rows), then sleep up to ``rows * t_row / speed``."""
    target = rows * t_row / speed
    t0 = time.perf_counter()
    out = work()
    t1 = time.perf_counter()
    remaining = target - (t1 - t0)
    if remaining > 0:
        time.sleep(remaining)
    t2 = time.perf_counter()
    return out, Throttled(compute_s=t1 - t0, sleep_s=t2 - t1, target_s=target)
