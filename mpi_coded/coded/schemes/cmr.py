"""Scheme ``cmr``: coded MapReduce, uncoded replicated storage (docs/theory.md (B.3)).

``A`` is cut into ``C(K, mu q)`` batches, each stored on the ``mu q`` servers of
its label (stored fraction ``mu q / K``); the map phase waits for all ``K``
servers, so every missing batch is held by exactly ``mu q`` others and goes out
in level-``mu q`` multicasts: load ``(1/(mu q))(1 - mu q / K)``.
"""

from __future__ import annotations

from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.code_rules import IDENTITY_CODE
from mpi_coded.coded.schemes.uc import IdentityLayout, UncodedTerms

CMR = Scheme("cmr", "coded MapReduce: uncoded batches on mu q servers each; waits for all K",
             layout=IdentityLayout(), code=IDENTITY_CODE, delay=UncodedTerms())
