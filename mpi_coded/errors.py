"""The package's error types.

Every check of user input raises :class:`ConfigError` naming the argument (or
config key) and the rule it broke; the CLI turns it into a single line on
stderr and exit status 2, on every rank, before any MPI traffic.
:class:`NotDecodable` is a decoder given too few coded values: a plan or
protocol bug, never bad input.
"""

from __future__ import annotations

import os
from typing import Any

EXIT_BAD_INPUT = 2


class ConfigError(ValueError):
    """Bad user input: ``<field>: <rule> (got <value>)``."""

    def __init__(self, field: str, rule: str, got: Any = None) -> None:
        self.field = field
        self.rule = rule
        self.got = got
        msg = f"{field}: {rule}"
        if got is not None:
            msg += f" (got {got!r})" if not isinstance(got, str) else f" (got {got})"
        super().__init__(msg)


class NotDecodable(RuntimeError):
    """Too few coded values (or values of the wrong rows) to decode: a plan or protocol bug."""


def require(cond: bool, field: str, rule: str, got: Any = None) -> None:
    """Raise :class:`ConfigError` unless ``cond`` holds."""
    if not cond:
        raise ConfigError(field, rule, got)


def launcher_rank() -> int | None:
    """This process's MPI rank as the launcher announced it, without initialising MPI.

    Lets bad input be reported once (by rank 0) even before MPI is touched.
    """
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        v = os.environ.get(var)
        if v is not None and v.strip().isdigit():
            return int(v)
    return None


class PluginError(RuntimeError):
    """A plugin's object failed inside a running job: ``plugin <origin>: <kind> <name>:
    <what went wrong>``.  The job ends in that one line (no traceback unless
    ``MPI_CODED_TRACEBACK=1``), its results ending with a failure line."""

    def __init__(self, origin: str, kind: str, name: str, what: str) -> None:
        self.origin = origin
        self.kind = kind
        self.name = name
        super().__init__(f"plugin {origin}: {kind} {name!r}: {what}")
