"""Several coded jobs in one launch: ``mpiexec -n K+1 python multihost_coded_jobs.py
JOBS.json``.  Not a test module (pytest does not collect it): tests/test_multihost.py runs
every scheme in both multicast modes across the emulated hosts with it, where starting
seven Pythons per job would cost more than the jobs themselves.

``JOBS.json`` is a list of ``{"args": [...], "out": FILE}``; ``args`` are the flags of
``mpi-coded run coded`` (parsed by its own parser into the same job).  Each job runs as
``mpi-coded run coded`` runs it (:func:`mpi_coded.runtime.core.run.launch`: the world
check, the waiting strategy, the guard, master on rank 0 and a server on every other
rank), on its own duplicate of ``MPI_COMM_WORLD``, so nothing one job leaves posted can
match a message of the next.  Exits 1 if any job's outputs did not verify.
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    from mpi4py import MPI

    from mpi_coded.cli.main import build_parser
    from mpi_coded.coded.job import load_job
    from mpi_coded.runtime.coded.master import master_main
    from mpi_coded.runtime.coded.server import server_main
    from mpi_coded.runtime.core.guard import Phase, guarded
    from mpi_coded.runtime.core.run import check_world
    from mpi_coded.runtime.core.wait import configure

    jobs = json.loads(open(path).read())
    parser = build_parser()
    status = 0
    for spec in jobs:
        args = parser.parse_args(["run", "coded", *spec["args"]])
        job = load_job(args.config, {k: getattr(args, k) for k in (
            "scheme", "K", "q", "mu", "rows_per_batch", "n", "N", "T", "field", "straggler",
            "t_row", "chunks", "seed", "reps", "timeout_s", "assignment", "wait",
            "multicast")})
        comm = MPI.COMM_WORLD.Dup()
        check_world(comm, job.world_size, f"K+1 = {job.world_size}")
        configure(job.wait, comm)
        out = spec["out"]

        def body(phase: Phase, job=job, comm=comm, out=out) -> int:
            if comm.Get_rank() == 0:
                return int(master_main(job, comm, phase, out))
            server_main(job, comm, phase, ())
            return 0

        status |= int(guarded(body, comm))
        comm.Free()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
