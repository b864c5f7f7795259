"""Coded matrix-vector products with straggling servers (docs/theory.md, Part B). Pure: no MPI.

The coded job's planning, in dependency order: :mod:`.params` (the one
parameter class), :mod:`.code` (the job's code: partitions of a sub-code),
:mod:`.assignment` (BDC's matrix ``P``), :mod:`.placement` (who stores what),
:mod:`.mapend` (when the map phase ends), :mod:`.shuffle` (the shuffle plan),
:mod:`.exchange` (the payload arithmetic of the shuffle), :mod:`.replay`
(one-process execution of a plan), :mod:`.schemes` (one object per scheme and
the registry), :mod:`.job` (the job's configuration).
"""
