"""An iterative workload's state, saved durably with each verified step.

Power iteration and linear regression carry ``w`` (and linreg its ``b`` and ``eta``) from
step to step.  After each step line is written, the master saves that state to
``OUT.state.npz`` next to the results file ``OUT``: written to a temporary file, fsync'ed,
renamed over the last one, the directory fsync'ed, so that a crash leaves either the last
state or the one before, never a torn one.  ``--resume`` reads it back and continues
after its step with the same ``w``: the resumed job computes the same values as an
uninterrupted one (the same arithmetic on the same vectors; float64 decoding from another
set of machines differs by rounding only).  The state names the job (a digest of its
config line), so a state of another job is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.errors import ConfigError
from mpi_coded.store.manifest import fsync_dir

SUFFIX = ".state.npz"


def state_path(out: str) -> Path:
    """Where the state of the job writing ``out`` lives."""
    return Path(out + SUFFIX)


def job_digest(config: dict[str, Any]) -> str:
    """A short digest of a job's config line (without its ``source``)."""
    plain = {k: v for k, v in config.items() if k != "source"}
    return hashlib.blake2b(json.dumps(plain, sort_keys=True, default=str).encode(),
                           digest_size=8).hexdigest()


@dataclass(frozen=True)
class SavedState:
    """The state after step :attr:`step`."""

    step: int
    job: str
    arrays: dict[str, np.ndarray]
    values: dict[str, float]


def save(out: str, state: SavedState) -> Path:
    """Write ``state`` for the job writing ``out`` (module docstring)."""
    path = state_path(out)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    meta = np.array(json.dumps({"step": state.step, "job": state.job,
                                "values": state.values}))
    with open(tmp, "wb") as f:
        np.savez(f, __meta__=meta, **state.arrays)  # type: ignore[arg-type]
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent if str(path.parent) else Path("."))
    return path


def load(out: str, job: str) -> SavedState | None:
    """The saved state of the job ``job`` writing ``out``; None when there is none;
    ConfigError (``--resume``) when it is another job's or unreadable."""
    path = state_path(out)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["__meta__"]))
            arrays = {k: np.array(z[k]) for k in z.files if k != "__meta__"}
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError("--resume", f"{path}: cannot read the saved state ({exc})") from None
    if meta.get("job") != job:
        raise ConfigError("--resume", f"{path}: the saved state is another job's (config "
                          "differs)")
    return SavedState(int(meta["step"]), job, arrays, dict(meta.get("values", {})))
