"""Which coded rows each server stores (SPEC B.1, B.4).

Servers are 0-based, ``s = 0..K-1``; server ``s`` runs on MPI rank ``s + 1``
(rank 0 is the master).  Batches are labelled by the ``p``-subsets of servers
in ``itertools.combinations(range(K), p)`` order (``p`` = servers per batch,
:attr:`~mpi_coded.coded.params.CodedParams.replication`); batch ``b`` is stored
at exactly the servers of its label, so each server holds ``C(K-1, p-1)``
batches, ``mu_eff m`` rows.

Batch ``b`` fills the storage slots ``[b eta_b, (b+1) eta_b)``.  For every
scheme but bdc slot ``i`` *is* coded row ``i`` of ``C = Psi A``; for bdc the
slots of batch ``b`` hold, partition by partition, the next ``P[b, t]`` rows of
partition ``t`` (:mod:`mpi_coded.coded.assignment`), so a batch's rows of one
partition are contiguous in its slot order.

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

import itertools
from dataclasses import dataclass

import numpy as np

from mpi_coded.coded.assignment import (
    batch_partition_rows,
    check_assignment,
    heuristic_assignment,
)
from mpi_coded.coded.codes import CodeLayout, code_layout
from mpi_coded.coded.params import CodedParams
from mpi_coded.errors import require


def batch_labels(K: int, p: int) -> tuple[tuple[int, ...], ...]:
    """Labels of the ``C(K, p)`` batches, in ``itertools.combinations`` order."""
    return tuple(itertools.combinations(range(K), p))


def rank_of(server: int) -> int:
    """MPI rank of server ``server`` (rank 0 is the master)."""
    return server + 1


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

    For bdc, ``assignment`` is the ``C(K, mu q) x T`` matrix ``P`` (default: the
    heuristic solver of SPEC B.4); other schemes take no assignment.
    """
    layout = code_layout(params)
    labels = batch_labels(params.K, params.replication)
    eta = params.rows_per_batch
    if params.scheme == "bdc":
        if assignment is None:
            P = heuristic_assignment(len(labels), eta, params.T)
        else:
            P = check_assignment(assignment, len(labels), eta, params.T)
        per = batch_partition_rows(P, [layout.coded_rows(t) for t in range(layout.T)])
        rows = tuple(tuple(r for part in per[b] for r in part) for b in range(len(labels)))
    else:
        require(assignment is None, "assignment", "only scheme bdc takes an assignment matrix")
        rows = tuple(tuple(range(b * eta, (b + 1) * eta)) for b in range(len(labels)))
        P = np.zeros((len(labels), layout.T), dtype=np.int64)
        for b, rs in enumerate(rows):
            np.add.at(P[b], layout.row_partition[list(rs)], 1)
    server_batches = tuple(
        tuple(b for b, lab in enumerate(labels) if s in lab) for s in range(params.K))
    return Placement(params, layout, labels, rows, server_batches, P)
