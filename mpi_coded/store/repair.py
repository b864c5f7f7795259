"""A lost machine's block rebuilt from ``L`` surviving blocks (pure arithmetic).

Machine ``m``'s block is ``X~_m = G[m] X`` (docs/theory.md (A.1)).  From the blocks of any
``L`` machines ``S``, ``X = G_S^{-1} X~_S``, so machine ``n``'s block is

    X~_n = G[n] G_S^{-1} X~_S = sum_{i in S} c_i X~_i,   c = G[n] G_S^{-1}     (S.3)

one ``1 x L`` combination of the ``L`` blocks received: the repair moves ``L`` blocks
(``L R cols`` words, as much as ``X`` itself) over the network, the cost of an MDS code
(docs/storage.md, "Repair traffic").  The new block is checked against the manifest's
checksum when the host already lists one, else its checksum is computed and listed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_coded.fields import Field


def repair_coefficients(field: Field, g: np.ndarray, n: int, sources: Sequence[int]
                        ) -> np.ndarray:
    """``c = G[n] G_S^{-1}`` (S.3) for machine ``n`` from machines ``sources`` (1-based)."""
    gs = g[[m - 1 for m in sources]]
    return field.matmul(g[n - 1: n], field.inv(gs))


def combine(field: Field, c: np.ndarray, blocks: Sequence[np.ndarray]) -> np.ndarray:
    """``sum_i c_i B_i`` for the ``L`` blocks ``B_i`` (same shape)."""
    shape = blocks[0].shape
    stack = np.stack([np.asarray(b) for b in blocks]).reshape(len(blocks), -1)
    return field.matmul(c, stack).reshape(shape)


def repair_bytes(L: int, shape: tuple[int, int], itemsize: int, kinds: int = 1) -> int:
    """Bytes a repair moves: ``L`` blocks of ``shape`` (``kinds``: blocks per machine)."""
    return L * shape[0] * shape[1] * itemsize * kinds
