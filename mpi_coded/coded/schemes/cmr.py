"""Scheme ``cmr``: coded MapReduce, uncoded replicated storage (docs/theory.md (B.3)).

``A`` is cut into ``C(K, mu q)`` batches, each stored on the ``mu q`` servers of
its label (stored fraction ``mu q / K``); the map phase waits for all ``K``
servers, so every missing batch is held by exactly ``mu q`` others and goes out
in level-``mu q`` multicasts: load ``(1/(mu q))(1 - mu q / K)``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from mpi_coded.analysis.loads import check_reference
from mpi_coded.coded.schemes.uc import IdentityScheme


class CodedMapReduce(IdentityScheme):
    name = "cmr"
    summary = "coded MapReduce: uncoded batches on mu q servers each; waits for all K"

    def literal_load(self, K: int, q: int, mu: Any) -> Fraction:
        """``(1/(mu q))(1 - mu q/K)``."""
        mq = check_reference(K, q, mu) * q
        return (1 / mq) * (1 - mq / K)
