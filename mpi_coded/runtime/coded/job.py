"""Entry point of ``mpi-coded run coded`` once the job is valid."""

from __future__ import annotations

from mpi_coded.coded.job import CodedJob
from mpi_coded.faults import Fault
from mpi_coded.runtime.coded.master import master_main
from mpi_coded.runtime.coded.server import server_main
from mpi_coded.runtime.core.run import launch


def run(job: CodedJob, out: str | None, faults: tuple[Fault, ...] = ()) -> int:
    return launch(job.world_size,
                  f"K+1 = {job.world_size} (a master and K={job.params.K} servers)",
                  job.wait,
                  lambda comm, phase: master_main(job, comm, phase, out),
                  lambda comm, phase: server_main(job, comm, phase, faults),
                  job.fault_tolerance)
