"""Continuing an elastic job from its results file (``--resume``)."""

from __future__ import annotations

import json
from pathlib import Path

from mpi_coded.cec.config import CECConfig
from mpi_coded.errors import ConfigError


def resume_point(cfg: CECConfig, out: str | None) -> int:
    """First step still to run: after the last step line of the last matching job in ``out``."""
    if cfg.workload != "independent":
        raise ConfigError("--resume", f"workload = \"{cfg.workload}\" carries w from step to "
                          "step; it cannot be resumed", cfg.workload)
    if not out or not Path(out).is_file():
        raise ConfigError("--resume", "needs the results file of the job to continue", out)
    want = {k: v for k, v in json.loads(json.dumps(cfg.to_dict())).items() if k != "source"}
    last = 0
    found = False
    for line in Path(out).read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line of a killed job
        if rec.get("job") != "cec":
            continue
        if rec.get("kind") == "config":
            same = all(rec.get(k) == v for k, v in want.items())
            found = found or same
            if not same:
                found, last = False, 0
        elif rec.get("kind") == "step" and found:
            last = max(last, int(rec["step"]))
    if not found:
        raise ConfigError("--resume", f"{out} holds no run of this job's config to continue", out)
    return last + 1
