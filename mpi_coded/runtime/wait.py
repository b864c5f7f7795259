"""Polite waiting: test with an exponential backoff sleep, never spin.

MPICH and Open MPI busy-poll inside blocking calls (``Recv``, ``Wait``); on an
oversubscribed laptop (8-16 ranks on 2 cores) a blocked rank would burn a core
and corrupt every timing.  Every wait here tests the request, sleeps, doubles
the sleep up to :data:`MAX_SLEEP` (about 1 ms) and gives up at a deadline.
This follows mpi4py's ``futures`` worker loop (``_core.py``: backoff instead of
spinning).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from mpi4py import MPI

MIN_SLEEP = 1e-5
MAX_SLEEP = 1e-3
# The master, while a step's results are due, is one rank that is working, not
# idling: it may poll a little faster so that step latency is not rounded up
# to the idle cap.  Idle machines always use MAX_SLEEP.
ACTIVE_MAX_SLEEP = 2e-4


class DeadlineExceeded(TimeoutError):
    """A wait ran past its deadline; the message says what was awaited."""


class Backoff:
    """Sleeps ``MIN_SLEEP, 2 MIN_SLEEP, ..`` capped at ``MAX_SLEEP``."""

    def __init__(self, lo: float = MIN_SLEEP, hi: float = MAX_SLEEP) -> None:
        self.lo, self.hi = lo, hi
        self.delay = lo

    def reset(self) -> None:
        self.delay = self.lo

    def sleep(self) -> None:
        time.sleep(self.delay)
        self.delay = min(self.hi, self.delay * 2)


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds


def poll_until(test: Callable[[], bool], deadline: float, what: str,
               max_sleep: float = MAX_SLEEP) -> None:
    """Call ``test()`` with backoff sleeps until it returns True or time runs out."""
    backoff = Backoff(hi=max_sleep)
    while not test():
        if time.monotonic() > deadline:
            raise DeadlineExceeded(f"timed out waiting for {what}")
        backoff.sleep()


def wait(req: MPI.Request, deadline: float, what: str,
         status: MPI.Status | None = None) -> None:
    """Politely wait for one request."""
    if status is None:
        poll_until(req.Test, deadline, what)
    else:
        poll_until(lambda: req.Test(status), deadline, what)


def wait_all(reqs: Sequence[MPI.Request], deadline: float, what: str) -> None:
    """Politely wait for every request."""
    pending = [r for r in reqs]

    def test() -> bool:
        pending[:] = [r for r in pending if not r.Test()]
        return not pending

    poll_until(test, deadline, what)
