"""Which coded rows each server stores (docs/theory.md (B.1), (B.4)).

Servers are 0-based, ``s = 0..K-1``; server ``s`` runs on MPI rank ``s + 1``
(rank 0 is the master).  Batches are labelled by the ``p``-subsets of servers
in ``itertools.combinations(range(K), p)`` order (``p`` = servers per batch,
:attr:`~mpi_coded.coded.params.CodedParams.replication`); batch ``b`` is stored
at exactly the servers of its label, so each server holds ``C(K-1, p-1)``
batches, ``mu_eff m`` rows.

Batch ``b`` fills the storage slots ``[b eta_b, (b+1) eta_b)``.  Which coded
rows fill them is the scheme's (:meth:`Scheme.batch_rows
<mpi_coded.coded.schemes.base.Scheme.batch_rows>`): slot ``i`` *is* coded row
``i`` of ``C = Psi A`` (:func:`slot_rows`), except for bdc, whose slots of batch
``b`` hold, partition by partition, the next ``P[b, t]`` rows of partition
``t`` (:mod:`mpi_coded.coded.assignment`), so a batch's rows of one partition
are contiguous in its slot order.

Uncoded storage (uc, cmr; ``Psi = I``): ``C = A``.  uc cuts ``A`` into ``K``
blocks of ``m/K`` rows, block ``k`` on server ``k`` alone (``p = 1``); every
server must then receive the other ``m - m/K`` rows for its outputs, load
``1 - 1/K``.  cmr cuts ``A`` into ``C(K, mu q)`` batches, each replicated on
``mu q`` servers (stored fraction ``mu q / K``); with all ``K`` servers waited
for, every missing batch is held by exactly ``mu q`` others and goes out in
level-``mu q`` multicasts, load ``(1/(mu q))(1 - mu q / K)``.  sc stores one
coded block ``C_k`` (``m/q`` rows) per server (``p = 1``), load ``1 - 1/q``.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mpi_coded.coded.code import CodeLayout
from mpi_coded.errors import require

if TYPE_CHECKING:
    from mpi_coded.coded.params import CodedParams


def batch_labels(K: int, p: int) -> tuple[tuple[int, ...], ...]:
    """Labels of the ``C(K, p)`` batches, in ``itertools.combinations`` order."""
    return tuple(itertools.combinations(range(K), p))


def rank_of(server: int) -> int:
    """MPI rank of server ``server`` (rank 0 is the master)."""
    return server + 1


def server_rows(K: int, p: int, rows_per_batch: int, server: int) -> np.ndarray:
    """Coded rows stored at ``server`` when slot ``i`` is coded row ``i``: batch ``b`` (the
    ``b``-th ``p``-subset in ``itertools.combinations`` order) holds rows
    ``[b eta_b, (b+1) eta_b)`` and is stored at the servers of its label."""
    require(0 <= server < K, "server", f"must be in 0..{K - 1}", server)
    batches = [b for b, lab in enumerate(itertools.combinations(range(K), p)) if server in lab]
    return np.concatenate([np.arange(b * rows_per_batch, (b + 1) * rows_per_batch)
                           for b in batches]).astype(np.int64)


def slot_rows(n_batches: int, rows_per_batch: int) -> tuple[tuple[int, ...], ...]:
    """Batch ``b`` holds coded rows ``[b eta_b, (b+1) eta_b)``: slot ``i`` is coded row ``i``."""
    eta = rows_per_batch
    return tuple(tuple(range(b * eta, (b + 1) * eta)) for b in range(n_batches))


def count_partitions(layout: CodeLayout, rows: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """``P[b, t]``: rows of partition ``t`` among the coded rows ``rows[b]`` of batch ``b``."""
    P = np.zeros((len(rows), layout.T), dtype=np.int64)
    sizes = np.fromiter((len(rs) for rs in rows), dtype=np.int64, count=len(rows))
    flat = np.fromiter((r for rs in rows for r in rs), dtype=np.int64, count=int(sizes.sum()))
    if flat.size:
        np.add.at(P, (np.repeat(np.arange(len(rows)), sizes), layout.row_partition[flat]), 1)
    return P


@dataclass(frozen=True, eq=False)
class Placement:
    """The storage design: batch labels, the coded rows of each batch, who holds what."""

    params: CodedParams
    layout: CodeLayout
    labels: tuple[tuple[int, ...], ...]
    batch_rows: tuple[tuple[int, ...], ...]  # coded rows of batch b, in slot order
    server_batches: tuple[tuple[int, ...], ...]  # batches stored at server s, ascending
    assignment: np.ndarray  # P[b, t]: rows of partition t in batch b (every scheme)

    @property
    def K(self) -> int:
        return self.params.K

    @property
    def n_batches(self) -> int:
        return len(self.labels)

    @property
    def rows_per_batch(self) -> int:
        return self.params.rows_per_batch

    @functools.cached_property
    def row_slots(self) -> tuple[np.ndarray, np.ndarray]:
        """``(batch, slot)`` of every coded row: row ``r`` is slot ``slot[r]`` of batch
        ``batch[r]`` (``-1`` for a row no batch holds)."""
        batch = np.full(self.layout.r, -1, dtype=np.int64)
        slot = np.full(self.layout.r, -1, dtype=np.int64)
        for b, rows in enumerate(self.batch_rows):
            idx = np.asarray(rows, dtype=np.int64)
            batch[idx] = b
            slot[idx] = np.arange(len(idx))
        return batch, slot

    def stored_rows(self, server: int) -> tuple[int, ...]:
        """Coded rows stored at ``server``: its batches' rows, batch by batch."""
        return tuple(r for b in self.server_batches[server] for r in self.batch_rows[b])

    def holds(self, server: int, batch: int) -> bool:
        """Whether ``server`` stores ``batch``."""
        return server in self.labels[batch]

    def partition_counts(self, batches: set[int] | list[int] | tuple[int, ...]) -> np.ndarray:
        """Rows of each partition in the union of ``batches`` (length ``T`` vector)."""
        idx = sorted(set(batches))
        if not idx:
            return np.zeros(self.layout.T, dtype=np.int64)
        return np.asarray(self.assignment[idx].sum(axis=0), dtype=np.int64)


def build_placement(params: CodedParams, assignment: np.ndarray | None = None) -> Placement:
    """The :class:`Placement` of ``params``.

    ``assignment`` is the ``C(K, mu q) x T`` matrix ``P`` of a scheme that takes
    one (bdc; default: the heuristic solver of docs/theory.md (B.4)); other
    schemes refuse it.
    """
    spec = params.spec
    layout = spec.code_layout(params)
    labels = batch_labels(params.K, params.replication)
    rows, P = spec.batch_rows(params, layout, assignment)
    held: list[list[int]] = [[] for _ in range(params.K)]
    for b, lab in enumerate(labels):
        for s in lab:
            held[s].append(b)
    server_batches = tuple(tuple(bs) for bs in held)
    return Placement(params, layout, labels, rows, server_batches, P)
