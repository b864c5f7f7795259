"""An exception on one rank ends the whole job, with a message naming the rank.

Without this an exception on one rank leaves the others blocked forever.  The
guard prints ``mpi-coded: rank R (host) failed in phase P: Type: message`` on
stderr and calls ``MPI.COMM_WORLD.Abort(1)``, which ends every rank.

A plugin's failure (:class:`~mpi_coded.errors.PluginError`) and a job that cannot go on
(:class:`CannotGoOn`) are one line, no traceback (a plugin's with
``MPI_CODED_TRACEBACK=1``).

Under ``fault_tolerance = "ulfm"`` the guard revokes the communicator first
(:func:`mpi_coded.runtime.core.ulfm.revoke`: with ranks dead, ``MPI_Abort`` alone left the
others running), and a rank whose operation fails as revoked ends quietly (the rank that
revoked said why).

The abort is bounded: when the launcher cannot be reached (this rank's host cut off by a
network fault), MPICH's ``MPI_Abort`` returns, and finalizing MPI would then wait for the
unreachable launcher forever; so the process ends itself (``os._exit(1)``) once ``Abort``
returns, or after :data:`ABORT_BOUND_S` if it does not.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from mpi_coded.errors import PluginError
from mpi_coded.runtime.core import ulfm

TRACEBACK_ENV = "MPI_CODED_TRACEBACK"
"""``MPI_CODED_TRACEBACK=1``: a plugin's failure in a job prints its traceback too."""
ABORT_GRACE_S = 0.3
ABORT_BOUND_S = 10.0
"""Seconds an ``Abort`` may take before this process ends itself."""


class CannotGoOn(RuntimeError):
    """The job cannot go on for a reason the user must read, not a bug (machines lost,
    fewer than the code needs left): the guard prints its message as one line, no
    traceback, and ends the job."""


class TooFewLeft(CannotGoOn):
    """Too few workers are left to go on (``fault_tolerance = "ulfm"``): the job ends
    itself, its results saying why."""


class Terminated(CannotGoOn):
    """The launcher ended the job (SIGTERM): e.g. Open MPI's, which ends every job that
    loses a host's daemon (docs/elastic.md, "Machines that die")."""


def stop_on_sigterm() -> None:
    """SIGTERM raises :class:`Terminated` in this (the main) thread, so that the job's
    results get their last line before the process ends."""
    def handler(signum: int, frame: Any) -> None:
        raise Terminated("the launcher ended the job (SIGTERM)")

    signal.signal(signal.SIGTERM, handler)


class Phase:
    """The phase a rank is in, for error messages (``setup``, ``step``, ...)."""

    def __init__(self) -> None:
        self.name = "start"
        self.step: int | None = None

    def set(self, name: str, step: int | None = None) -> None:
        self.name, self.step = name, step

    def __str__(self) -> str:
        return self.name if self.step is None else f"{self.name} {self.step}"


def _flush() -> None:
    """Flush stdout and stderr before this process ends."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed: nothing left to lose
            pass


def guarded(fn: Callable[[Phase], Any], comm: MPI.Comm | None = None) -> Any:
    """Run ``fn(phase)``; on any exception report it and abort the job."""
    comm = comm or MPI.COMM_WORLD
    phase = Phase()
    try:
        return fn(phase)
    except BaseException as exc:  # noqa: BLE001 - every failure must end the job
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            raise
        rank = comm.Get_rank()
        if ulfm.is_revoked(exc):  # another rank ends the job and said why: end quietly
            _flush()
            os._exit(1)
        if isinstance(exc, (CannotGoOn, PluginError)):
            sys.stderr.write(f"mpi-coded: error: rank {rank} ({socket.gethostname()}) in "
                             f"phase {phase}: {exc}\n")
            if isinstance(exc, PluginError) and os.environ.get(TRACEBACK_ENV) == "1":
                sys.stderr.write(traceback.format_exc())
        else:
            sys.stderr.write(
                f"mpi-coded: rank {rank} ({socket.gethostname()}) failed in phase {phase}: "
                f"{type(exc).__name__}: {exc}\n")
            sys.stderr.write(traceback.format_exc(limit=-3))
        _flush()
        time.sleep(ABORT_GRACE_S)  # let the launcher forward this rank's stderr first
        bound = threading.Timer(ABORT_BOUND_S, os._exit, args=(1,))
        bound.daemon = True
        bound.start()
        if comm == MPI.COMM_WORLD:  # under ULFM the others end on their own (ulfm.revoke);
            ulfm.revoke(comm)  # not a spawned machine's link to its master
        try:
            comm.Abort(1)
        except BaseException:
            bound.cancel()
            raise
        os._exit(1)  # pragma: no cover - Abort returned: its launcher is unreachable
