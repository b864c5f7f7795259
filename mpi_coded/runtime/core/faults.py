"""Applying injected faults on a worker rank (see :mod:`mpi_coded.faults`)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections.abc import Sequence

import numpy as np
from mpi4py import MPI

from mpi_coded.faults import Fault
from mpi_coded.runtime.core import wire as P

_FIRED: set[int] = set()


def at_phase(faults: Sequence[Fault], comm: MPI.Comm, phase: str, step: int | None) -> None:
    """Fire the faults of this rank for ``phase`` (at ``step``), once each."""
    rank = comm.Get_rank()
    for f in faults:
        if not f.fires(rank, phase, step) or id(f) in _FIRED:
            continue
        _FIRED.add(id(f))
        where = f"phase {phase}" + (f" {step}" if step is not None else "")
        host = socket.gethostname()
        if f.kind == "kill":
            sys.stderr.write(f"mpi-coded: rank {rank} ({host}) killed by fault injection in "
                             f"{where} at unix {time.time():.6f}\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        elif f.kind == "stall":
            sys.stderr.write(f"mpi-coded: rank {rank} ({host}) stalls {f.seconds:g} s by fault "
                             f"injection in {where}\n")
            sys.stderr.flush()
            time.sleep(f.seconds)
        elif f.kind == "garble":
            bad = np.zeros(P.HEADER_WORDS, dtype=np.int64)
            bad[0], bad[1] = 0xBAD, 99
            comm.Send(bad, dest=0, tag=P.TAG_HEADER)
