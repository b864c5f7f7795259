"""Continuing an elastic job from its results file (``--resume``)."""

from __future__ import annotations

import json
from pathlib import Path

from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.errors import ConfigError
from mpi_coded.results import CEC, CONFIG, STEP, SchemaError, kind_of, read_results, records
from mpi_coded.results.writer import jsonable
from mpi_coded.store import checkpoint


def resume_point(cfg: CECConfig, out: str | None) -> int:
    """First step still to run: after the last step line of the last matching job in ``out``."""
    if not WORKLOADS.lookup(cfg.workload).resumable:
        raise ConfigError("--resume", f"workload = \"{cfg.workload}\" carries w from step to "
                          "step; it cannot be resumed", cfg.workload)
    if not out or not Path(out).is_file():
        raise ConfigError("--resume", "needs the results file of the job to continue", out)
    want = {k: v for k, v in json.loads(json.dumps(cfg.to_dict())).items() if k != "source"}
    try:
        lines = read_results(out)
    except SchemaError as exc:
        raise ConfigError("--resume", f"cannot read the results file: {exc}", out) from None
    last = 0
    found = False
    for rec in records(lines, job=CEC):
        if kind_of(rec) == CONFIG:
            same = all(rec.get(k) == v for k, v in want.items())
            found = found or same
            if not same:
                found, last = False, 0
        elif kind_of(rec) == STEP and found:
            last = max(last, int(rec["step"]))
    if not found:
        raise ConfigError("--resume", f"{out} holds no run of this job's config to continue", out)
    if WORKLOADS.lookup(cfg.workload).stateful:  # from the state saved with a step
        st = checkpoint.load(out, checkpoint.job_digest(jsonable(cfg.to_dict())))
        if st is None:
            raise ConfigError("--resume", f"workload = \"{cfg.workload}\" carries w from "
                              f"step to step and {checkpoint.state_path(out)} holds no saved "
                              "state", out)
        return min(st.step, last) + 1
    return last + 1
