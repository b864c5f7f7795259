"""Scheme ``sc``: straggler coding, a ``(K, q)`` MDS code per stripe (docs/theory.md (B.3)).

``A`` is cut into ``q`` blocks ``A_1..A_q`` of ``m/q`` rows and a ``(K, q)`` MDS
code is applied elementwise, ``C_k = sum_u G[k, u] A_u``: ``m/q`` strided
partitions (stripe ``t`` has message rows ``u m/q + t`` and coded rows
``k m/q + t``).  Server ``k`` stores ``C_k`` alone (``p = 1``); any ``q``
servers decode; load ``1 - 1/q``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from mpi_coded.analysis.delay import Ops, encode_ops, rs_decode_cost
from mpi_coded.analysis.loads import check_reference
from mpi_coded.coded.code import CodeLayout, striped_layout
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.schemes.base import DEFAULT_CONVENTION, Convention, Scheme


class StragglerCoding(Scheme):
    name = "sc"
    summary = "straggler coding: a (K, q) MDS code per stripe, one coded block per server"
    single_copy = True
    authors_fft_encode = False

    def code_shape(self, p: CodedParams) -> dict[str, int]:
        return {"partitions": p.m // p.q, "code_length": p.K, "code_dimension": p.q}

    def code_layout(self, p: CodedParams) -> CodeLayout:
        return striped_layout(p.m, p.K, p.q)

    def check_model_sizes(self, p: CodedParams) -> None:
        """The model of sc takes any ``m``."""

    def literal_load(self, K: int, q: int, mu: Any) -> Fraction:
        """``1 - 1/q``."""
        check_reference(K, q, mu)
        return 1 - Fraction(1, q)

    def encode_cost(self, p: CodedParams, conv: Convention = DEFAULT_CONVENTION) -> Ops:
        """``q`` nonzeros per coded row, for the ``m/q`` rows stored (the authors'
        conventions: ``mu m`` rows, the unified ``mu q`` factor kept)."""
        rows = float(p.mu * p.m) if conv.authors else self.model_rows(p)
        return encode_ops(rows, p.q, p.n)

    def decode_cost(self, p: CodedParams, sa: float, sm: float,
                    conv: Convention = DEFAULT_CONVENTION) -> tuple[float, str | None]:
        """``m/q`` RS codes of length ``K`` per output (the authors' conventions:
        Berlekamp-Massey)."""
        return rs_decode_cost(p.K, p.m / p.q, 1.0 - p.q / p.K, sa, sm,
                              "bm" if conv.authors else None, conv.c_add)
