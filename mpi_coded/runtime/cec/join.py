"""A machine that joins a running elastic job (``replace_lost = "spawn"``).

When a machine is lost (``fault_tolerance = "ulfm"``), the master starts a new process for
it before the next step: ``MPI_Comm_spawn`` of the same command line (``python -m mpi_coded
<the job's arguments>``, in the job's working directory), through the launcher, which may
place it on any host of the job's allocation.  The master and the new process talk over
the intercommunicator the spawn returns (the new process is rank 0 at its other end):

1. JOIN (``aux`` = the lost machine's id): the new machine takes that id, its speed
   (throttle) and its row of the MDS generator;
2. its coded block(s), encoded again by the master and sent over the network, timed
   (:meth:`mpi_coded.runtime.cec.steps.Steps.send_block`);
3. READY with its host name; from this step on it is planned like any machine.

At the end of the job the two sides disconnect (each within the job's ``timeout_s``), so
that the new process finalizes MPI by itself: Open MPI counts a spawned process that ends
without finalizing as a failed job.

The new process runs :func:`join_main`: ``mpi-coded run cec`` knows it was spawned from
``MPI_Comm_get_parent``.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mpi4py import MPI

from mpi_coded.cec.config import CECConfig
from mpi_coded.faults import Fault
from mpi_coded.runtime.cec.machine import machine_main
from mpi_coded.runtime.cec.stores import MachineStore
from mpi_coded.runtime.core import ulfm
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import Phase, guarded
from mpi_coded.runtime.core.peers import MasterLink
from mpi_coded.runtime.core.wait import configure


def bounded(seconds: float, what: str) -> threading.Timer:
    """A watchdog for a blocking MPI call that takes no deadline (``MPI_Comm_spawn``,
    ``MPI_Comm_disconnect``): after ``seconds`` it says what did not end and ends this
    process (exit 1).  Cancel it when the call returns."""
    def fire() -> None:
        sys.stderr.write(f"mpi-coded: rank {MPI.COMM_WORLD.Get_rank()} "
                         f"({socket.gethostname()}): {what} did not end within {seconds:g} s\n")
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


@dataclass(frozen=True)
class Spawned:
    """A new process at the other end of ``inter``, and the seconds its spawn took."""

    inter: MPI.Intercomm
    spawn_s: float


def spawn_machine(timeout: float, host: str | None = None) -> Spawned:
    """Start one new process running this job's command line (module docstring), on
    ``host`` when given (the launcher's choice otherwise)."""
    info = MPI.Info.Create()
    info.Set("wdir", os.getcwd())
    if host:
        info.Set("host", host)
        info.Set("map_by", "slot:OVERSUBSCRIBE")  # the dead process's slot is not freed
    args = ["-m", "mpi_coded", *sys.argv[1:]]
    watchdog = bounded(timeout, "spawning a new machine (MPI_Comm_spawn)")
    t0 = time.perf_counter()
    try:
        inter = MPI.COMM_SELF.Spawn(Path(sys.executable), args=args, maxprocs=1, info=info)
    finally:
        watchdog.cancel()
        info.Free()
    return Spawned(inter, time.perf_counter() - t0)


def spawned() -> MPI.Intercomm | None:
    """The intercommunicator to the master when this process was spawned by it."""
    parent = MPI.Comm.Get_parent()
    return None if parent == MPI.COMM_NULL else parent


def join_main(cfg: CECConfig, parent: MPI.Intercomm, store: type[MachineStore],
              faults: tuple[Fault, ...]) -> int:
    """The new process: take its machine id (JOIN), then run as that machine; disconnect
    from the master at the end (bounded) and return, so that MPI finalizes."""
    ulfm.enable(cfg.fault_tolerance)
    configure("polite" if cfg.wait == "auto" else cfg.wait, MPI.COMM_SELF)

    def body(phase: Phase) -> int:
        h, _ = MasterLink(parent).recv({P.Kind.JOIN}, 0, cfg.timeout_s,
                                       "the master's JOIN (which machine this one replaces)")
        machine_main(cfg, parent, phase, store, faults, machine=h.aux)
        return 0

    rc = int(guarded(body, parent))
    watchdog = bounded(cfg.timeout_s, "disconnecting from the master")
    parent.Disconnect()
    watchdog.cancel()
    return rc
