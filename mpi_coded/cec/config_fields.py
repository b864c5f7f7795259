"""The elastic job's key declarations: :mod:`mpi_coded.config_keys`, re-exported.

The machinery (``key``, the value types, the parsing, the docs table) moved to
:mod:`mpi_coded.config_keys`, below both jobs, so that the coded job declares its keys the
same way without importing the elastic job.  This module keeps its old names working.
"""

from __future__ import annotations

from mpi_coded.config_keys import (
    FLOAT,
    INT,
    NUMBERS,
    SETS,
    STR,
    VALUE_TYPES,
    Parser,
    Sets,
    Speeds,
    ValueType,
    as_fraction,
    check_unused,
    is_required,
    key,
    key_names,
    keys,
    parse_keys,
    record_of,
    refuse_unknown,
    table_keys,
    table_rows,
    when,
)

__all__ = [
    "FLOAT", "INT", "NUMBERS", "SETS", "STR", "VALUE_TYPES", "Parser", "Sets", "Speeds",
    "ValueType", "as_fraction", "check_unused", "is_required", "key", "key_names", "keys",
    "parse_keys", "record_of", "refuse_unknown", "table_keys", "table_rows", "when",
]
