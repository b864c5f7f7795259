"""Scheme ``uc``: uncoded storage, one copy of each block (docs/theory.md (B.3), baselines).

``A`` is cut into ``K`` blocks of ``m/K`` rows, block ``k`` on server ``k``
alone; the map phase waits for all ``K`` servers and every reducer receives the
other ``m - m/K`` rows for its outputs: load ``1 - 1/K``.  No encoding, no
decoding.  What uc and cmr share (``Psi = I``): :class:`IdentityLayout`,
:data:`~mpi_coded.coded.schemes.code_rules.IDENTITY_CODE` and :class:`UncodedTerms`.
"""

from __future__ import annotations

from fractions import Fraction

from mpi_coded.analysis.delay import DelayCosts, Ops
from mpi_coded.coded.params import CodedParams, CodeShape
from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.code_rules import IDENTITY_CODE
from mpi_coded.coded.schemes.delay_terms import DenseTerms
from mpi_coded.coded.schemes.layout import BatchLayout


class IdentityLayout(BatchLayout):
    """Uncoded storage in ``C(K, mu q)`` batches (cmr): one partition needing all ``m``
    rows; the map phase waits for all ``K`` servers."""

    waits_for_all = True

    def wait_for(self, K: int, q: int) -> int:
        """``K``."""
        return K

    def code_shape(self, p: CodedParams) -> CodeShape:
        """The identity: length and dimension ``m``."""
        return CodeShape(partitions=1, code_length=p.m, code_dimension=p.m)

    def check_model_sizes(self, p: CodedParams) -> None:
        """The model of uncoded storage takes any ``m``."""


class UncodedLayout(IdentityLayout):
    """uc: ``K`` blocks, one per server."""

    def replication(self, q: int, mu: Fraction) -> int:
        """``1``."""
        return 1


class UncodedTerms(DenseTerms):
    """Nothing to encode or decode."""

    def generator_ops(self, p: CodedParams, costs: DelayCosts) -> Ops:
        return Ops(0.0, 0.0)

    def decode(self, p: CodedParams, costs: DelayCosts) -> tuple[float, str | None]:
        return 0.0, None


UC = Scheme("uc", "uncoded: K blocks, one per server; waits for all K",
            layout=UncodedLayout(), code=IDENTITY_CODE, delay=UncodedTerms())
