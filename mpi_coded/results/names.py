"""The names of the schema, each spelled once: the ``job`` and ``kind`` of a line, the keys
every line or several kinds share, and :class:`SchemaError`."""

from __future__ import annotations

KIND_KEY = "kind"
"""Key of every line: what the line is (:data:`CONFIG`, :data:`STEP`, ...)."""
JOB_KEY = "job"
"""Key of a line: the job that wrote it (:data:`CEC`, :data:`CODED`)."""

SCHEMA_KEY = "schema"
"""Key of every line written since schema versions exist: the :data:`SCHEMA_VERSION` it
follows.  A line without it is from an older runtime and reads as version ``1.0``."""
SCHEMA_VERSION = "1.3"
"""``MAJOR.MINOR`` of the lines this package writes.  A new MINOR only adds keys (older
readers ignore them); a new MAJOR renames or removes keys or changes their meaning, and a
reader of an older major refuses the line in one message (:func:`check_schema`).
1.2 added the setup line's ``store_open_s`` and ``store_parts``; 1.3 the wrong answers
found late (a ``wrong_answers`` entry's ``found: "late"`` and its ``step``), the elastic
summary's ``wrong_answers_after_steps``, and the coded job's quarantine (a run line's
``quarantined``, ``probation`` and ``quarantine``, the summary's ``quarantine`` and
``lost_wrong``)."""

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


def schema_major(rec: dict[str, object]) -> int:
    """The major version of the schema a line follows (1 for a line without one)."""
    v = rec.get(SCHEMA_KEY, "1.0")
    try:
        return int(str(v).split(".", 1)[0])
    except ValueError:
        raise SchemaError(f"{SCHEMA_KEY} must look like MAJOR.MINOR, not {v!r}") from None


def check_schema(rec: dict[str, object], source: str = "results") -> None:
    """SchemaError, in one line, when ``rec`` was written by a newer major version."""
    major = schema_major(rec)
    ours = int(SCHEMA_VERSION.split(".", 1)[0])
    if major > ours:
        raise SchemaError(
            f"{source}: written with results schema {rec.get(SCHEMA_KEY)}, newer than this "
            f"mpi_coded reads ({SCHEMA_VERSION}): upgrade mpi_coded to read it")
