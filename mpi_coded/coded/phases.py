"""The phases of a coded job, in order (docs/theory.md, B.2): the one list of them.

The wire carries a phase as its index (a PHASE or DONE header's ``aux``);
results, progress lines and fault specs use the names.
"""

from __future__ import annotations

PHASES = ("encode", "map", "shuffle", "reduce")
ENCODE, MAP, SHUFFLE, REDUCE = range(len(PHASES))
