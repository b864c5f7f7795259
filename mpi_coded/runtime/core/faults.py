"""Applying injected faults on a worker rank (see :mod:`mpi_coded.faults`)."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import numpy as np
from mpi4py import MPI

from mpi_coded.errors import PluginError
from mpi_coded.faults import FAULTS, Fault, mode_of
from mpi_coded.runtime.core import wire as P

_FIRED: set[int] = set()


class _Context:
    """The :class:`~mpi_coded.faults.FaultContext` a firing fault is given."""

    def __init__(self, comm: MPI.Comm, where: str) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.host = socket.gethostname()
        self.where = where

    def send_garbled(self) -> None:
        bad = np.zeros(P.HEADER_WORDS, dtype=np.int64)
        bad[0], bad[1] = 0xBAD, 99
        self.comm.Send(bad, dest=0, tag=P.TAG_HEADER)


def at_phase(faults: Sequence[Fault], comm: MPI.Comm, phase: str, step: int | None) -> None:
    """Fire the faults of this rank for ``phase`` (at ``step``), once each: its mode's
    :meth:`~mpi_coded.faults.FaultMode.fire`."""
    rank = comm.Get_rank()
    for f in faults:
        if not f.fires(rank, phase, step) or id(f) in _FIRED:
            continue
        _FIRED.add(id(f))
        where = f"phase {phase}" + (f" {step}" if step is not None else "")
        mode = mode_of(f)
        origin = FAULTS.origin(mode.name)
        try:
            mode.fire(f, _Context(comm, where))
        except Exception as exc:  # a plugin mode's own failure names the plugin
            if origin == "mpi_coded":
                raise
            raise PluginError(origin, "fault mode", mode.name,
                              f"{type(exc).__name__}: {exc}") from exc
