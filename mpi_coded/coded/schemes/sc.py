"""Scheme ``sc``: straggler coding, a ``(K, q)`` MDS code per stripe (docs/theory.md (B.3)).

``A`` is cut into ``q`` blocks ``A_1..A_q`` of ``m/q`` rows and a ``(K, q)`` MDS
code is applied elementwise, ``C_k = sum_u G[k, u] A_u``: ``m/q`` strided
partitions (stripe ``t`` has message rows ``u m/q + t`` and coded rows
``k m/q + t``).  Server ``k`` stores ``C_k`` alone (``p = 1``); any ``q``
servers decode; load ``1 - 1/q``.
"""

from __future__ import annotations

from fractions import Fraction

from mpi_coded.analysis.delay import DelayCosts, Ops, encode_ops
from mpi_coded.coded.code import CodeLayout, striped_layout
from mpi_coded.coded.params import CodedParams, CodeShape
from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.delay_terms import DenseTerms
from mpi_coded.coded.schemes.layout import BatchLayout


class StripedLayout(BatchLayout):
    """``m/q`` strided ``(K, q)`` codes; server ``k`` stores coded block ``k`` alone."""

    def replication(self, q: int, mu: Fraction) -> int:
        """``1``."""
        return 1

    def code_shape(self, p: CodedParams) -> CodeShape:
        return CodeShape(partitions=p.m // p.q, code_length=p.K, code_dimension=p.q)

    def code_layout(self, p: CodedParams) -> CodeLayout:
        return striped_layout(p.m, p.K, p.q)

    def check_model_sizes(self, p: CodedParams) -> None:
        """The model of sc takes any ``m``."""


class StripedTerms(DenseTerms):
    """``q`` products per coded row; ``m/q`` RS codes of length ``K`` per output."""

    authors_fft_encode = False

    def generator_ops(self, p: CodedParams, costs: DelayCosts) -> Ops:
        """``q`` nonzeros per coded row, for the ``m/q`` rows stored (the authors'
        conventions: ``mu m`` rows, the unified ``mu q`` factor kept)."""
        rows = float(p.mu * p.m) if costs.conv.authors else self.rows(p)
        return encode_ops(rows, p.q, p.n)

    def decode(self, p: CodedParams, costs: DelayCosts) -> tuple[float, str | None]:
        """``m/q`` RS codes of length ``K`` per output (the authors' conventions:
        Berlekamp-Massey)."""
        return costs.rs_decode(p.K, p.m / p.q, 1.0 - p.q / p.K,
                               "bm" if costs.conv.authors else None)


SC = Scheme("sc", "straggler coding: a (K, q) MDS code per stripe, one coded block per server",
            layout=StripedLayout(), delay=StripedTerms())
