"""Scheme ``uc``: uncoded storage, one copy of each block (docs/theory.md (B.3), baselines).

``A`` is cut into ``K`` blocks of ``m/K`` rows, block ``k`` on server ``k``
alone; the map phase waits for all ``K`` servers and every reducer receives the
other ``m - m/K`` rows for its outputs: load ``1 - 1/K``.  No encoding, no
decoding.  :class:`IdentityScheme` is what uc and cmr share: ``Psi = I``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from mpi_coded.analysis.delay import Ops
from mpi_coded.analysis.loads import check_reference
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.schemes.base import DEFAULT_CONVENTION, Convention, Scheme


class IdentityScheme(Scheme):
    """Uncoded storage (``Psi = I_m``): one partition needing all ``m`` rows."""

    waits_for_all = True
    mds_code = False

    def code_shape(self, p: CodedParams) -> dict[str, int]:
        return {"partitions": 1, "code_length": p.m, "code_dimension": p.m}

    def check_model_sizes(self, p: CodedParams) -> None:
        """The model of uncoded storage takes any ``m``."""

    def encode_cost(self, p: CodedParams, conv: Convention = DEFAULT_CONVENTION) -> Ops:
        return Ops(0.0, 0.0)

    def decode_cost(self, p: CodedParams, sa: float, sm: float,
                    conv: Convention = DEFAULT_CONVENTION) -> tuple[float, str | None]:
        return 0.0, None


class Uncoded(IdentityScheme):
    name = "uc"
    summary = "uncoded: K blocks, one per server; waits for all K"
    single_copy = True

    def literal_load(self, K: int, q: int, mu: Any) -> Fraction:
        """``1 - 1/K``."""
        check_reference(K, q, mu)
        return 1 - Fraction(1, K)
