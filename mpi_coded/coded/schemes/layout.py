"""Layout rules: how a scheme turns the reference parameters into sizes and storage.

A scheme's layout (``Scheme.layout``, a :class:`Layout`) answers, for the reference
parameters ``K, q, mu`` of docs/theory.md (B.1): how many servers the map phase waits
for (``q_eff``), how many store each batch (``p``), the shape of the code
(a :class:`~mpi_coded.coded.params.CodeShape`), which rows of ``A`` each partition
encodes, which coded rows each batch holds, and the size rules of partitions and of
an analytic setting.  :class:`BatchLayout` is the unified scheme's: ``C(K, mu q)``
batches on the ``mu q`` servers of their labels, one dense ``(r, m)`` code, waiting
for ``q``.  The other layouts live with their schemes (uc and cmr in
:mod:`~mpi_coded.coded.schemes.uc`, sc, bdc).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mpi_coded.coded.code import CodeLayout, contiguous_layout
from mpi_coded.coded.params import CodedParams, CodeShape
from mpi_coded.coded.placement import count_partitions, slot_rows
from mpi_coded.errors import require

if TYPE_CHECKING:
    BatchRows = tuple[tuple[tuple[int, ...], ...], np.ndarray]


class Layout(Protocol):
    """What a scheme's layout rule answers (module docstring)."""

    @property
    def waits_for_all(self) -> bool:
        """The map phase waits for all ``K`` servers (uc, cmr), else for ``q``."""
    @property
    def partitioned(self) -> bool:
        """Takes ``T`` partitions (bdc)."""
    @property
    def takes_assignment(self) -> bool:
        """Its storage follows an assignment matrix ``P`` (bdc)."""

    def wait_for(self, K: int, q: int) -> int:
        """``q_eff``: servers the map phase waits for."""
    def replication(self, q: int, mu: Fraction) -> int:
        """``p``: servers storing each batch."""
    def code_shape(self, p: CodedParams) -> CodeShape:
        """Partitions, length and dimension of each sub-code."""
    def code_layout(self, p: CodedParams) -> CodeLayout:
        """Which rows of ``A`` and ``C`` each partition covers."""
    def batch_rows(self, p: CodedParams, layout: CodeLayout, assignment: np.ndarray | None
                   ) -> BatchRows:
        """``(rows, P)``: the coded rows of each batch in slot order and ``P[b, t]``
        (``assignment``: ``P``, only for a layout that :attr:`takes_assignment`)."""
    def check_partitions(self, p: CodedParams) -> None:
        """The rules of ``T`` of a :attr:`partitioned` layout (any other takes ``T = 1``,
        which :meth:`~mpi_coded.coded.schemes.base.Scheme.check_job` checks)."""
    def check_model_sizes(self, p: CodedParams) -> None:
        """The size rules of an analytic setting built from ``m``."""


def check_dense_sizes(p: CodedParams) -> None:
    """The model of a dense code reads ``r = m K / q``: ``q`` divides ``m K``."""
    require((p.m * p.K) % p.q == 0, "m", f"q = {p.q} must divide m K", p.m)


def check_equal_batches(p: CodedParams) -> None:
    """:func:`check_dense_sizes`, and ``r = m K / q`` in ``C(K, mu q)`` equal batches (for a
    model that reads the batches: bdc's ``P``, lt's stored rows)."""
    check_dense_sizes(p)
    require(p.r % p.n_batches == 0, "m",
            f"r = m K/q must split into C(K, mu q) = {p.n_batches} equal batches", p.m)


class BatchLayout:
    """The unified layout: ``C(K, mu q)`` batches, batch ``b`` on the ``mu q`` servers of
    its label; one dense ``(r, m)`` code, coded row ``i`` in storage slot ``i``; the map
    phase waits for ``q`` servers.  Subclasses change what differs (a method each)."""

    waits_for_all = False
    partitioned = False
    takes_assignment = False

    def wait_for(self, K: int, q: int) -> int:
        """``q``."""
        return q

    def replication(self, q: int, mu: Fraction) -> int:
        """``mu q``."""
        return int(mu * q)

    def code_shape(self, p: CodedParams) -> CodeShape:
        """One ``(r, m)`` code."""
        return CodeShape(partitions=1, code_length=p.r, code_dimension=p.m)

    def code_layout(self, p: CodedParams) -> CodeLayout:
        """``T`` contiguous partitions (here one)."""
        return contiguous_layout(p.m, p.r, p.partitions)

    def batch_rows(self, p: CodedParams, layout: CodeLayout, assignment: np.ndarray | None
                   ) -> BatchRows:
        """Slot ``i`` is coded row ``i`` (no assignment matrix)."""
        rows = slot_rows(p.n_batches, p.rows_per_batch)
        return rows, count_partitions(layout, rows)

    def check_partitions(self, p: CodedParams) -> None:
        """None: not partitioned."""

    def check_model_sizes(self, p: CodedParams) -> None:
        """``q`` divides ``m K`` (:func:`check_dense_sizes`)."""
        check_dense_sizes(p)
