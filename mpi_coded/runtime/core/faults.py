"""Applying injected faults on a worker rank (see :mod:`mpi_coded.faults`)."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import numpy as np
from mpi4py import MPI

from mpi_coded.errors import PluginError
from mpi_coded.faults import FAULTS, Answer, Fault, mode_of
from mpi_coded.runtime.core import wire as P

_FIRED: set[int] = set()


class _Context:
    """The :class:`~mpi_coded.faults.FaultContext` a firing fault is given."""

    def __init__(self, comm: MPI.Comm, where: str, answer: Answer | None = None) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.host = socket.gethostname()
        self.where = where
        self.answer = answer

    def send_garbled(self) -> None:
        bad = np.zeros(P.HEADER_WORDS, dtype=np.int64)
        bad[0], bad[1] = 0xBAD, 99
        self.comm.Send(bad, dest=0, tag=P.TAG_HEADER)


def answer_rng(rank: int) -> np.random.Generator:
    """The generator of this rank's lying faults' draws (seeded by the rank: a run repeats)."""
    if rank not in _RNG:
        _RNG[rank] = np.random.default_rng([rank, 44])
    return _RNG[rank]


_RNG: dict[int, np.random.Generator] = {}


def at_phase(faults: Sequence[Fault], comm: MPI.Comm, phase: str, step: int | None,
             answer: Answer | None = None, answers_only: bool = False) -> None:
    """Fire the faults of this rank for ``phase`` (at ``step``): its mode's
    :meth:`~mpi_coded.faults.FaultMode.fire`, once each unless the mode
    :meth:`~mpi_coded.faults.FaultMode.repeats`; ``answer``: the answer about to be sent
    (the ``answer`` phase; the coded map output or shuffle payloads), which a lying mode
    changes in place.  A mode that :attr:`~mpi_coded.faults.FaultMode.needs_answer` is
    not fired (nor spent) without one; ``answers_only``: only such modes fire (the coded
    job's second call in a phase, after its work, the others having fired at its entry)."""
    rank = comm.Get_rank()
    for f in faults:
        mode = mode_of(f)
        if not mode.active(f, rank, phase, step) or id(f) in _FIRED:
            continue
        needs = getattr(mode, "needs_answer", False)
        if (needs and answer is None) or (answers_only and not needs):
            continue
        if not mode.repeats(f):
            _FIRED.add(id(f))
        where = f"phase {phase}" + (f" {step}" if step is not None else "")
        origin = FAULTS.origin(mode.name)
        try:
            mode.fire(f, _Context(comm, where, answer))
        except Exception as exc:  # a plugin mode's own failure names the plugin
            if origin == "mpi_coded":
                raise
            raise PluginError(origin, "fault mode", mode.name,
                              f"{type(exc).__name__}: {exc}") from exc
