"""Launching a job: the world-size check, the guarded body, the run record.

Both jobs start the same way: every rank checks, before any MPI traffic, that
the world has the size the job needs (a wrong ``mpiexec -n`` is bad input,
reported on every rank); rank 0 runs the master and every other rank a worker,
inside :func:`~mpi_coded.runtime.core.guard.guarded` so an exception on one
rank ends the whole job naming it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from mpi_coded import start_clock
from mpi_coded.errors import ConfigError
from mpi_coded.results import RunContext
from mpi_coded.runtime.core import linkstats, ulfm
from mpi_coded.runtime.core.guard import Phase, guarded, stop_on_sigterm
from mpi_coded.runtime.core.linkstats import described_network
from mpi_coded.runtime.core.memory import retain_freed_memory
from mpi_coded.runtime.core.wait import POLICY, configure


def check_world(comm: MPI.Comm, size: int | range, rule: str) -> None:
    """Raise ConfigError (on every rank) unless the world has ``size`` ranks (or one of
    the sizes of a range)."""
    got = comm.Get_size()
    if got not in (size if isinstance(size, range) else (size,)):
        raise ConfigError("mpiexec -n", f"must be {rule}", got)


def run_info(comm: MPI.Comm) -> RunContext:
    """Host, versions, MPI library, world size and the resolved waiting strategy: the
    :class:`~mpi_coded.results.RunContext` of the results' config line."""
    return RunContext.here(mpi=MPI.Get_library_version().splitlines()[0].strip(),
                           world_size=comm.Get_size(), network=network_info(),
                           **POLICY.to_dict())


NOT_DESCRIBED = {"emulated": False}
"""The network record of a run no one described (one host, or a cluster's own network)."""


def network_info() -> dict[str, Any]:
    """The network ``mpi-coded cluster run`` describes in ``MPI_CODED_NETWORK`` (a JSON
    object: cluster, ``emulated``, hosts, rates, transport, the hosts' interface
    ``iface``); :data:`NOT_DESCRIBED` when unset or not an object, so that every config
    line says what it ran on."""
    return described_network() or dict(NOT_DESCRIBED)


def run_record(comm: MPI.Comm) -> dict[str, Any]:
    """:func:`run_info` as the config line's keys."""
    return run_info(comm).fields_dict()


def launch(size: int | range, rule: str, wait: str, master: Callable[[MPI.Comm, Phase], int],
           worker: Callable[[MPI.Comm, Phase], None], fault_tolerance: str = "none") -> int:
    """Check the world (and that ``fault_tolerance`` is possible here), choose the waiting
    strategy, run master or worker guarded.

    Under ``fault_tolerance = "ulfm"`` every rank ends its own process when its part is
    done, its output flushed (the master's results are written and closed by then):
    Open MPI's ``MPI_Finalize`` after a peer died crashed (in ``ompi_comm_shrink_internal``;
    with the failure detector's thread it never returned, whatever the job's setting,
    :func:`mpi_coded.runtime.core.ulfm.finalize_hangs`), and a job that lost a machine must
    not wait for it at the end.
    """
    start_clock.mark("mpi")
    comm = MPI.COMM_WORLD
    check_world(comm, size, rule)
    ulfm.check(fault_tolerance)
    ulfm.enable(fault_tolerance)
    configure(wait, comm)
    linkstats.count(linkstats.measured(described_network(), POLICY.hosts))
    retain_freed_memory()

    def body(phase: Phase) -> int:
        if comm.Get_rank() == 0:
            stop_on_sigterm()  # the results get a last line saying why
            return master(comm, phase)
        worker(comm, phase)
        return 0

    rc = int(guarded(body, comm))
    if ulfm.enabled() or ulfm.finalize_hangs(os.environ):
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(rc)
    return rc
