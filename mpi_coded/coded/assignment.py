"""The BDC assignment matrix ``P`` (docs/theory.md (B.4); the BDC paper, Sec. IV).

``P[b, t]`` is the number of coded rows of partition ``t`` stored in batch
``b``.  Rows sum to the batch size ``eta_b``, columns to ``r/T``.  Within a
partition rows are handed out in order: the first batch that takes ``k`` rows
of partition ``t`` gets its first ``k`` coded rows, the next one the following
rows, and so on (:func:`batch_partition_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_coded.errors import require


def heuristic_assignment(n_batches: int, rows_per_batch: int, T: int) -> np.ndarray:
    """The heuristic solver of docs/theory.md (B.4): an ``n_batches x T`` int matrix.

    ``g = floor(eta_b / T)`` rows of every partition in every batch; the
    ``rho = eta_b - g T`` remaining slots of batch ``b = 0, 1, ..`` take one row
    of each of partitions ``c, c+1, .., c+rho-1 (mod T)``, then
    ``c = (c + rho) mod T`` (``c`` starts at 0).  Columns come out equal
    whenever ``T`` divides ``n_batches * eta_b``.
    """
    require(n_batches >= 1, "n_batches", "must be >= 1", n_batches)
    require(rows_per_batch >= 1, "rows_per_batch", "must be >= 1", rows_per_batch)
    require(T >= 1, "T", "must be >= 1", T)
    g, rho = divmod(rows_per_batch, T)
    P = np.full((n_batches, T), g, dtype=np.int64)
    c = 0
    for b in range(n_batches):
        for i in range(rho):
            P[b, (c + i) % T] += 1
        c = (c + rho) % T
    return P


def check_assignment(P: np.ndarray, n_batches: int, rows_per_batch: int, T: int) -> np.ndarray:
    """Check an assignment matrix (shape, non-negative, row and column sums); return it as int64."""
    arr = np.asarray(P)
    require(arr.shape == (n_batches, T), "assignment",
            f"must have shape ({n_batches}, {T})", arr.shape)
    require(bool(np.all(arr >= 0)), "assignment", "entries must be >= 0")
    arr = arr.astype(np.int64)
    require(bool(np.all(arr.sum(axis=1) == rows_per_batch)), "assignment",
            f"every row must sum to the batch size {rows_per_batch}")
    per_part = n_batches * rows_per_batch // T
    require(bool(np.all(arr.sum(axis=0) == per_part)), "assignment",
            f"every column must sum to r/T = {per_part}")
    return arr


def batch_partition_rows(P: np.ndarray, partition_rows: Sequence[Sequence[int]]
                         ) -> list[list[list[int]]]:
    """``out[b][t]``: the coded row indices of partition ``t`` placed in batch ``b``.

    ``partition_rows[t]`` lists partition ``t``'s coded rows in hand-out order
    (``c_1^{(t)}, c_2^{(t)}, ..``); batch ``b`` takes the next ``P[b, t]`` of them.
    """
    n_batches, T = P.shape
    cursor = [0] * T
    out: list[list[list[int]]] = []
    for b in range(n_batches):
        row: list[list[int]] = []
        for t in range(T):
            k = int(P[b, t])
            row.append([int(x) for x in partition_rows[t][cursor[t]:cursor[t] + k]])
            cursor[t] += k
        out.append(row)
    return out


def format_assignment(P: np.ndarray) -> list[str]:
    """Rows of ``P`` as digit strings (``"110000"``), as in docs/theory.md (B.4) (entries < 10)."""
    return ["".join(str(int(v)) for v in row) for row in P]
