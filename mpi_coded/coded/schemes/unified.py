"""Scheme ``unified``: the unified coding framework (Li, Maddah-Ali, Avestimehr 2016).

One dense ``(r, m)`` MDS code, ``r = m K / q`` coded rows in ``C(K, mu q)``
batches, each on the ``mu q`` servers of its label; the map phase waits for
``q`` servers; coded multicasts at levels ``mu q .. s_q``, then unicasts
(docs/theory.md (B.1)-(B.3)).  It is a :class:`~mpi_coded.coded.schemes.base.Scheme`
with every part at its default: :class:`~mpi_coded.coded.schemes.layout.BatchLayout`,
:data:`~mpi_coded.coded.schemes.code_rules.MDS_CODE`,
:class:`~mpi_coded.coded.schemes.load_rules.UnifiedLoadRule`,
:class:`~mpi_coded.coded.schemes.delay_terms.DenseTerms`.
"""

from __future__ import annotations

from mpi_coded.coded.schemes.base import Scheme

UNIFIED = Scheme("unified", "unified scheme: one dense (r, m) MDS code in C(K, mu q) batches")
