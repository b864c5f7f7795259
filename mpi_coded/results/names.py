"""The names of the schema, each spelled once: the ``job`` and ``kind`` of a line, the keys
every line or several kinds share, and :class:`SchemaError`."""

from __future__ import annotations

KIND_KEY = "kind"
"""Key of every line: what the line is (:data:`CONFIG`, :data:`STEP`, ...)."""
JOB_KEY = "job"
"""Key of a line: the job that wrote it (:data:`CEC`, :data:`CODED`)."""

CEC = "cec"
"""``job`` of the elastic job's lines."""
CODED = "coded"
"""``job`` of the coded job's lines."""

CONFIG, SETUP, STEP, SUMMARY, RUN, RUN_FAILED, ABANDONED = (
    "config", "setup", "step", "summary", "run", "run_failed", "abandoned")
"""The ``kind`` of a line."""

DEFAULT_JOB = {STEP: CEC, SETUP: CEC, RUN: CODED}
"""The job of a line that has no ``job`` field (files of older runtimes), by kind."""

VERIFIED = "verified"
"""Key of a step (elastic) or run (coded) line: the decoded result matched the direct one."""
ALL_VERIFIED = "all_verified"
"""Key of a summary line: every step or run verified."""

VERSION_KEYS = ("python", "numpy", "mpi_coded", "mpi", "platform")
"""Keys of a config line that name the software it ran with
(:func:`mpi_coded.results.common.run_context`, and the MPI library the runtime adds)."""

SWEEP_KEYS = ("sweep_id", "run", "rep", "params", "host", "versions", "via")
"""Keys ``scripts/sweep.py`` adds to every line of its combined file (besides an optional
``slurm``).  Note that ``run`` there is the run's index, not a ``kind``."""


class SchemaError(ValueError):
    """A results file or line that does not follow the schema."""
