"""Entry point of ``mpi-coded run cec`` once the config is valid."""

from __future__ import annotations

from mpi4py import MPI

from mpi_coded.cec.config import CECConfig
from mpi_coded.errors import ConfigError
from mpi_coded.faults import Fault
from mpi_coded.runtime.cec_machine import machine_main
from mpi_coded.runtime.cec_master import master_main
from mpi_coded.runtime.guard import Phase, guarded


def check_world(cfg: CECConfig, comm: MPI.Comm) -> None:
    """Raise on every rank, before any traffic, if the world does not fit the config."""
    size = comm.Get_size()
    if size != cfg.world_size:
        raise ConfigError("mpiexec -n", f"must be N+1 = {cfg.world_size} (a master and N={cfg.N} "
                          "machines)", size)


def run(cfg: CECConfig, out: str | None, faults: tuple[Fault, ...] = (),
        first: int = 1) -> int:
    comm = MPI.COMM_WORLD
    check_world(cfg, comm)

    def body(phase: Phase) -> int:
        if comm.Get_rank() == 0:
            return master_main(cfg, comm, phase, out, first)
        machine_main(cfg, comm, phase, faults)
        return 0

    return int(guarded(body, comm))
