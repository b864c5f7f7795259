"""Heterogeneous coded elastic computing (docs/theory.md, Part A): the pure planner and the
elastic job's math."""

from mpi_coded.cec.cyclic import cyclic_sets
from mpi_coded.cec.filling import RowSet, filling
from mpi_coded.cec.integer_rows import integer_rows
from mpi_coded.cec.optimal_load import optimal_load
from mpi_coded.cec.plan import StepPlan, make_plan
from mpi_coded.cec.waste import transition_waste

__all__ = [
    "RowSet",
    "StepPlan",
    "cyclic_sets",
    "filling",
    "integer_rows",
    "make_plan",
    "optimal_load",
    "transition_waste",
]
