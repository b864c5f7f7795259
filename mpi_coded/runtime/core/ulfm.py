"""MPI's failure reporting under ULFM (``fault_tolerance = "ulfm"``,
:mod:`mpi_coded.fault_tolerance`): a peer that died is reported, not waited for.

Off (the default) nothing here changes a job: an MPI error is an exception and the guard
ends the job (:mod:`mpi_coded.runtime.core.guard`).  On (:func:`enable`, every rank, before
any MPI traffic):

* a request whose peer died completes *in error* (``MPI_ERR_PROC_FAILED``): :func:`test`
  says so instead of raising, and :func:`mpi_coded.runtime.core.wait.wait_all` drops it
  (a send to a dead machine is not waited for);
* a send to a peer MPI already knows dead raises at once: :func:`mpi_coded.runtime.core.
  wire.isend` then sends nothing;
* :func:`failed_ranks`: the ranks of a communicator MPI knows dead (``MPI_Comm_get_failed``),
  acknowledged (``MPI_Comm_ack_failed``) so that later receives from any source go on.

The master's :class:`~mpi_coded.runtime.core.peers.Peers` tests its machines' posted
receives one by one (not one ``Testsome``: a failed request in a ``Testsome`` hides which
other ones completed) and marks a machine lost the moment its receive fails.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from mpi4py import MPI

from mpi_coded.errors import ConfigError
from mpi_coded.fault_tolerance import REQUIRED_ENV, on, ulfm_missing

FAILURE_CLASSES = frozenset({MPI.ERR_PROC_FAILED, MPI.ERR_PROC_FAILED_PENDING})
"""The error classes that mean "a peer died" (not a bug to end the job for)."""


class PeerLost(RuntimeError):
    """A peer died while its message was arriving (its payload is not whole)."""

    def __init__(self, rank: int) -> None:
        super().__init__(f"rank {rank} died while its message was arriving")
        self.rank = rank


class State:
    enabled = False


STATE = State()


def check(mode: str) -> None:
    """``mode`` is possible here (every rank, before any MPI traffic); ConfigError naming
    ``fault_tolerance`` and what this MPI lacks."""
    if mode != "ulfm":
        return
    why = ulfm_missing(MPI.Get_library_version(), os.environ)
    if why is not None:
        raise ConfigError("fault_tolerance", f"ulfm needs MPI fault tolerance (ULFM): {why}")


def enable(mode: str) -> bool:
    """Turn failure reporting on for ``mode == "ulfm"`` (after :func:`check`)."""
    STATE.enabled = mode == "ulfm"
    if STATE.enabled:
        MPI.COMM_WORLD.Set_errhandler(MPI.ERRORS_RETURN)  # errors as exceptions (mpi4py's)
    return STATE.enabled


def finalize_hangs(environ: Mapping[str, str]) -> bool:
    """Open MPI was launched with ULFM's detector in its own thread: ``MPI_Finalize`` would
    not return (:mod:`mpi_coded.fault_tolerance`), whatever the job's ``fault_tolerance``."""
    return all(on(environ.get(v)) for v in (*REQUIRED_ENV, "OMPI_MCA_mpi_ft_detector",
                                            "OMPI_MCA_mpi_ft_detector_thread"))


def enabled() -> bool:
    return STATE.enabled


def revoke(comm: MPI.Comm) -> None:
    """End the job on every rank (the guard, before ``MPI_Abort``): under ULFM with peers
    dead, Open MPI 5.0.11's ``MPI_Abort`` left the other ranks running and ``mpiexec``
    waiting ("Abort is in progress": a 7-rank job with 3 ranks killed, 2 of 2 runs; with 1
    of 4 killed it ended), whereas a revoked communicator fails every pending and later
    operation on it on every rank (``MPI_ERR_REVOKED``) at once, and their guards end them.
    Nothing without ULFM, or when the revoke itself fails."""
    if not STATE.enabled:
        return
    try:
        comm.Revoke()
    except MPI.Exception:
        pass


def is_revoked(exc: BaseException) -> bool:
    """``exc`` is ``MPI_ERR_REVOKED``: another rank is ending the job (:func:`revoke`), and
    said why."""
    return STATE.enabled and isinstance(exc, MPI.Exception) and \
        exc.Get_error_class() == MPI.ERR_REVOKED


def is_failure(exc: BaseException, in_status: bool = False) -> bool:
    """``exc`` reports a dead peer (and failure reporting is on); ``in_status``: also
    ``MPI_ERR_IN_STATUS``, the class of a ``Testall`` over requests one of which failed
    (the caller then asks :func:`failed_ranks` who)."""
    classes = FAILURE_CLASSES | ({MPI.ERR_IN_STATUS} if in_status else set())
    return STATE.enabled and isinstance(exc, MPI.Exception) and \
        exc.Get_error_class() in classes


def test(req: MPI.Request) -> bool | None:
    """``req.Test()``; None when it completed in error because its peer died."""
    try:
        return bool(req.Test())
    except MPI.Exception as exc:
        if not is_failure(exc):
            raise
        return None


def failed_ranks(comm: MPI.Comm) -> set[int]:
    """The ranks of ``comm`` MPI knows dead, acknowledged."""
    group, world = comm.Get_failed(), comm.Get_group()
    try:
        n = group.Get_size()
        ranks = MPI.Group.Translate_ranks(group, list(range(n)), world) if n else []
    finally:
        group.Free()
        world.Free()
    if ranks:
        comm.Ack_failed()
    return {int(r) for r in ranks if r != MPI.UNDEFINED}
