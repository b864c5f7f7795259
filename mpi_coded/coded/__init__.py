"""Coded matrix-vector products with straggling servers (seed 001; SPEC Part B). Pure: no MPI.

Modules: :mod:`.params` (parameters, validation), :mod:`.loads` (analytic
loads), :mod:`.assignment` (BDC matrix ``P``), :mod:`.codes` (``Psi``, encode,
decode), :mod:`.placement` (who stores what), :mod:`.mapend` (when the map
phase ends), :mod:`.shuffle` (the shuffle plan), :mod:`.replay` (one-process
execution of a plan), :mod:`.commands` (``mpi-coded load``), :mod:`.lt` (LT
codes) and :mod:`.lt_scheme` (scheme ``lt``: the LT code in the unified layout).
"""

from mpi_coded.coded.codes import Code, CodeLayout, NotDecodable, build_code, code_layout
from mpi_coded.coded.loads import UnifiedLoad, literal_load, scheme_load, unified_load
from mpi_coded.coded.mapend import MapEnd, map_end, map_phase_done
from mpi_coded.coded.params import SCHEMES, CodedParams, rows_per_batch_for
from mpi_coded.coded.placement import Placement, build_placement, rank_of
from mpi_coded.coded.shuffle import (
    Block,
    Multicast,
    ReducerPlan,
    Segment,
    ShufflePlan,
    Unicast,
    average_load,
    shuffle_plan,
)

__all__ = [
    "SCHEMES", "Block", "Code", "CodeLayout", "CodedParams", "MapEnd", "Multicast",
    "NotDecodable", "Placement", "ReducerPlan", "Segment", "ShufflePlan", "Unicast",
    "UnifiedLoad", "average_load", "build_code", "build_placement", "code_layout",
    "literal_load", "map_end", "map_phase_done", "rank_of", "rows_per_batch_for",
    "scheme_load", "shuffle_plan", "unified_load",
]
