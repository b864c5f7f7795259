"""Entry point of ``mpi-coded run coded`` once the job is valid."""

from __future__ import annotations

from mpi4py import MPI

from mpi_coded.coded.job import CodedJob
from mpi_coded.errors import ConfigError
from mpi_coded.faults import Fault
from mpi_coded.runtime.coded_master import master_main
from mpi_coded.runtime.coded_server import server_main
from mpi_coded.runtime.guard import Phase, guarded


def run(job: CodedJob, out: str | None, faults: tuple[Fault, ...] = ()) -> int:
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    if size != job.world_size:
        raise ConfigError("mpiexec -n", f"must be K+1 = {job.world_size} (a master and "
                          f"K={job.params.K} servers)", size)

    def body(phase: Phase) -> int:
        if comm.Get_rank() == 0:
            return master_main(job, comm, phase, out)
        server_main(job, comm, phase, faults)
        return 0

    return int(guarded(body, comm))
