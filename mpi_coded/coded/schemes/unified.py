"""Scheme ``unified``: the unified coding framework (Li, Maddah-Ali, Avestimehr 2016).

One dense ``(r, m)`` MDS code, ``r = m K / q`` coded rows in ``C(K, mu q)``
batches, each on the ``mu q`` servers of its label; the map phase waits for
``q`` servers; coded multicasts at levels ``mu q .. s_q``, then unicasts
(docs/theory.md (B.1)-(B.3)).  It is the :class:`~mpi_coded.coded.schemes.base.Scheme`
base class as is.
"""

from __future__ import annotations

from mpi_coded.coded.schemes.base import Scheme


class Unified(Scheme):
    name = "unified"
    summary = "unified scheme: one dense (r, m) MDS code in C(K, mu q) batches"
