"""Fault mode ``hog``: a noisy neighbour that keeps the rank's core busy for a while.

``hog:RANK:PHASE[@STEP]:SECONDS``: when the rank enters PHASE (at STEP), it spins on
the CPU for SECONDS of wall time before going on, as a co-located process would steal
its core.  Unlike ``stall`` (a sleep) it takes a core from the other ranks of the host
too.  Imports only :mod:`mpi_coded.plugin`::

    mpi-coded --plugin examples/hog.py run cec --fault hog:2:step@3:0.5 ...
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mpi_coded.plugin import (
    Fault,
    FaultContext,
    FaultMode,
    Registrar,
    number,
    phase_at,
    require,
)


class Hog(FaultMode):
    name = "hog"
    usage = "hog:RANK:PHASE[@STEP]:SECONDS"
    summary = "the rank spins on its core for SECONDS"

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) == 2, "--fault", f"must look like {self.usage}", spec)
        phase, step = phase_at(fields[0], job, spec)
        seconds = number(fields[1], "SECONDS", spec)
        require(0 <= seconds <= 3600, "--fault", "hog SECONDS must be a number in [0, 3600]",
                spec)
        return Fault(self.name, rank, phase, step, seconds=seconds)

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        print(f"mpi-coded: rank {ctx.rank} ({ctx.host}) hogs its core {fault.seconds:g} s "
              f"by fault injection in {ctx.where}", flush=True)
        end = time.perf_counter() + fault.seconds
        spins = 0
        while time.perf_counter() < end:
            spins += 1


def mpi_coded_register(registry: Registrar) -> None:
    registry.fault(Hog())
