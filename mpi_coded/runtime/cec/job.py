"""Entry point of ``mpi-coded run cec`` once the config is valid."""

from __future__ import annotations

from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.policy import POLICIES
from mpi_coded.faults import Fault, check_steps
from mpi_coded.runtime.cec.join import join_main, spawned
from mpi_coded.runtime.cec.machine import machine_main
from mpi_coded.runtime.cec.master import master_main
from mpi_coded.runtime.cec.steps import steps_for
from mpi_coded.runtime.core.run import launch


def run(cfg: CECConfig, out: str | None, faults: tuple[Fault, ...] = (),
        first: int = 1) -> int:
    faults = (*faults, *cfg.death_faults())  # the config's deaths are kills too
    check_steps(faults, len(cfg.available_sets()))  # bad input: before any MPI traffic
    steps = steps_for(POLICIES.lookup(cfg.policy))  # the policy's runtime phases
    parent = spawned()
    if parent is not None:  # a machine the master started to replace a lost one
        return join_main(cfg, parent, steps.store, faults)
    rule = f"N+1 = {cfg.world_size} (a master and N={cfg.N} machines)" if not cfg.store \
        else (f"in {cfg.L + 1}..{cfg.world_size} (a master and L={cfg.L} to N={cfg.N} "
              "machines: from a store, the machines without a rank are lost)")
    return launch(cfg.world_sizes, rule,
                  cfg.wait,
                  lambda comm, phase: master_main(cfg, comm, phase, out, steps, first, faults),
                  lambda comm, phase: machine_main(cfg, comm, phase, steps.store, faults),
                  cfg.fault_tolerance)
