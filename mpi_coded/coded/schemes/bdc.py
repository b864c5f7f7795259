"""Scheme ``bdc``: block-diagonal coding (docs/theory.md (B.4); the BDC paper, Sec. IV).

``Psi = diag(psi_1..psi_T)``, each ``psi_t`` an ``(r/T, m/T)`` MDS code: ``T``
contiguous partitions, so a coded row costs ``m/T`` products to encode and a
reducer decodes ``T`` short codes.  Batch ``b`` holds ``P[b, t]`` rows of
partition ``t`` (the assignment matrix, :mod:`mpi_coded.coded.assignment`;
default: the heuristic).  The map phase waits for ``q`` servers and, while some
partition has fewer than ``m/T`` rows among the finishers, for extra ones; the
shuffle tries both finishing strategies per ``Q``.  Its load depends on ``P``
and ``Q`` (:mod:`mpi_coded.analysis.bdc_load`): no closed form.
"""

from __future__ import annotations

import numpy as np

from mpi_coded.analysis.delay import DelayCosts, Ops, encode_ops
from mpi_coded.coded.assignment import (
    batch_partition_rows,
    check_assignment,
    heuristic_assignment,
)
from mpi_coded.coded.code import CodeLayout
from mpi_coded.coded.params import CodedParams, CodeShape
from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.delay_terms import DenseTerms
from mpi_coded.coded.schemes.layout import BatchLayout, check_equal_batches
from mpi_coded.coded.schemes.load_rules import NoClosedForm
from mpi_coded.errors import require

MAX_CELLS = 20_000_000
"""Largest ``C(K, mu q) * max(T, K)`` (cells of ``P`` and of the batch membership)."""


def check_size(p: CodedParams) -> CodedParams:
    """Refuse designs whose matrices (``P``, batch membership) would not fit in memory."""
    cells = p.n_batches * max(p.T, p.K)
    require(cells <= MAX_CELLS, "T",
            f"C(K, mu q) * max(T, K) must be <= {MAX_CELLS} to hold P in memory",
            f"{p.n_batches} * {max(p.T, p.K)}")
    return p


class BlockDiagonalLayout(BatchLayout):
    """The unified batches, ``T`` contiguous ``(r/T, m/T)`` partitions; batch ``b`` holds
    ``P[b, t]`` rows of partition ``t``."""

    partitioned = True
    takes_assignment = True

    def code_shape(self, p: CodedParams) -> CodeShape:
        return CodeShape(partitions=p.T, code_length=p.r // p.T, code_dimension=p.m // p.T)

    def check_partitions(self, p: CodedParams) -> None:
        """``T`` divides ``m`` and ``r``."""
        require(p.m % p.T == 0, "T", f"T must divide m = {p.m}", p.T)
        require(p.r % p.T == 0, "T", f"T must divide r = {p.r}", p.T)

    def check_model_sizes(self, p: CodedParams) -> None:
        """Equal batches (the model reads ``P``)."""
        check_equal_batches(p)

    def batch_rows(self, p: CodedParams, layout: CodeLayout, assignment: np.ndarray | None
                   ) -> tuple[tuple[tuple[int, ...], ...], np.ndarray]:
        """Batch ``b`` takes, partition by partition, the next ``P[b, t]`` rows of ``t``
        (``P``: ``assignment``, default the heuristic)."""
        if assignment is None:
            P = heuristic_assignment(p.n_batches, p.rows_per_batch, p.T)
        else:
            P = check_assignment(assignment, p.n_batches, p.rows_per_batch, p.T)
        per = batch_partition_rows(P, [layout.coded_rows(t) for t in range(layout.T)])
        rows = tuple(tuple(r for part in per[b] for r in part) for b in range(p.n_batches))
        return rows, P


class BlockDiagonalTerms(DenseTerms):
    """``m/T`` products per coded row (or the FFT, :meth:`encode`), ``T`` RS codes of
    length ``r/T`` per output (the authors' conventions: Berlekamp-Massey); servers
    waited for and load come from ``P`` (:mod:`mpi_coded.analysis.bdc_load`)."""

    authors_fft_encode = False

    def check_setting(self, p: CodedParams, eps: float | None, c: float,
                      delta: float) -> None:
        """``P`` fits in memory (:func:`check_size`)."""
        check_size(p)

    def servers_needed(self, p: CodedParams) -> dict[int, float] | None:
        return None

    def generator_ops(self, p: CodedParams, costs: DelayCosts) -> Ops:
        """``m/T`` nonzeros per coded row (eq. (8))."""
        return encode_ops(self.rows(p), p.m / p.T, p.n)

    def decode(self, p: CodedParams, costs: DelayCosts) -> tuple[float, str | None]:
        return costs.rs_decode(p.r / p.T, p.T, 1.0 - p.q / p.K,
                               "bm" if costs.conv.authors else None)


BDC = Scheme(
    "bdc", "block-diagonal code: T partitions, each an (r/T, m/T) MDS code",
    layout=BlockDiagonalLayout(),
    loads=NoClosedForm("bdc has no closed-form load (it depends on P and Q); "
                       "use shuffle.average_load", "bdc"),
    delay=BlockDiagonalTerms(), compares_strategies=True)
