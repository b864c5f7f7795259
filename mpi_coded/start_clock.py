"""Where a rank's start went, for the relaunch's measurements (docs/benchmarks.md).

A rank of an elastic job from a store marks the wall-clock time (``time.time()``, so that
ranks on different hosts of one machine, and the bench that killed a host, share a clock)
of each stage of its start: its process's birth (from ``/proc/self/stat``, Linux),
``imports`` (the command line parsed, the config read: just before MPI starts), ``mpi``
(``MPI_Init`` done and the runtime imported), then the store's ``scanned``, ``arrived``
(every rank reached the store) and ``opened``.  With :data:`ENV` set to ``1`` each rank
prints them in one line on stderr once its store is open (:func:`line`)::

    start trace: rank 2 (host-2): process 1796449571.123; imports +0.301 s, mpi +0.552 s, ...

Nothing is printed without :data:`ENV`; the marks cost a ``time.time()`` each.  Pure: no
MPI here.
"""

from __future__ import annotations

import os
import time

ENV = "MPI_CODED_START_TRACE"
PREFIX = "start trace:"
_marks: dict[str, float] = {}


def mark(stage: str) -> None:
    """This rank reached ``stage`` now."""
    _marks[stage] = time.time()


def process_start() -> float | None:
    """The UNIX time this process began (``/proc``: to 1/100 s), or None off Linux."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)  # the clock of starttime
        return time.time() - (since_boot - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def line(rank: int, host: str) -> str | None:
    """The trace line of this rank (module docstring); None unless :data:`ENV` is ``1``."""
    if os.environ.get(ENV) != "1":
        return None
    t0 = process_start()
    base = t0 if t0 is not None else min(_marks.values(), default=time.time())
    stages = ", ".join(f"{k} {v - base:+.3f} s" for k, v in _marks.items())
    return f"{PREFIX} rank {rank} ({host}): process {base:.3f}; {stages}"


def parse(text: str) -> dict[str, float] | None:
    """A :func:`line` back as ``{"rank": r, "process": unix, stage: unix, ...}`` (None if
    ``text`` is not one)."""
    if not text.startswith(PREFIX):
        return None
    try:
        head, _, rest = text[len(PREFIX):].partition(": process ")
        base_s, _, stages = rest.partition(";")
        out = {"rank": float(head.split()[1]), "process": float(base_s)}
        for part in stages.split(","):
            if part.strip():
                name, off, _ = part.split()
                out[name] = out["process"] + float(off)
        return out
    except (ValueError, IndexError):
        return None
