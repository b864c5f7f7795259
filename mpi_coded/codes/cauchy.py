"""The ``[I_k; Cauchy]`` systematic MDS code: one sub-code of the coded job.

A :class:`CauchyCode` is an ``(n, k)`` code over a :class:`~mpi_coded.fields.Field`
with the generator of :func:`mpi_coded.codes.mds.systematic_mds` (``n x k``, its
first ``k`` rows the identity).  Any ``k`` of its ``n`` coded rows decode: with
one cached inverse per erasure pattern (:class:`~mpi_coded.codes.mds.DecoderCache`),
and with no product at all when the ``k`` rows are the systematic ones.

It is the sub-code the coded job's partitions delegate to
(:class:`mpi_coded.coded.code.PartitionCode`); any object with the same four
members (``n``, ``k``, :meth:`~CauchyCode.generator`, :meth:`~CauchyCode.encode_rows`,
:meth:`~CauchyCode.decode`) can take its place, e.g. an RS code with FFT decoding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_coded.codes import work as W
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.errors import NotDecodable
from mpi_coded.fields import Field


class CauchyCode:
    """``(n, k)`` systematic MDS code ``G = [I_k; Cauchy]`` over ``field``."""

    def __init__(self, field: Field, n: int, k: int) -> None:
        self.field = field
        self.n = n
        self.k = k
        self.G = systematic_mds(field, n, k)
        self.decoders = DecoderCache(field, self.G)
        self.last_encoder = "generator"
        self.last_decoder = "generator"

    def generator(self) -> np.ndarray:
        """The ``n x k`` generator."""
        return self.G

    def encode_work(self, positions: Sequence[int] | np.ndarray, vectors: int
                    ) -> tuple[str, list[W.Work]]:
        """``(encoder, calls)`` of :meth:`encode_rows` on ``vectors`` columns: one product
        ``G[positions] @ message`` (named ``systematic`` when every row is a data row)."""
        pos = np.asarray(positions, dtype=np.int64)
        name = "systematic" if bool(np.all(pos < self.k)) else "generator"
        return name, W.product(self.field.name, len(pos), self.k, vectors)

    def encode_rows(self, positions: Sequence[int] | np.ndarray, message: np.ndarray
                    ) -> np.ndarray:
        """Coded rows ``G[positions] @ message`` (``message`` is ``k x w``)."""
        pos = np.asarray(positions, dtype=np.int64)
        self.last_encoder = self.encode_work(pos, 0)[0]
        return self.field.matmul(self.G[pos], message)

    def decode_work(self, positions: Sequence[int], vectors: int) -> tuple[str, list[W.Work]]:
        """``(decoder, calls)`` of :meth:`decode` from the sorted ``positions`` on ``vectors``
        columns: nothing for the systematic rows, else an inverse (unless cached) and a
        product."""
        key = tuple(int(x) for x in positions)
        if key == tuple(range(self.k)):
            return "systematic", [W.call(), W.copy(self.k * vectors)]
        work = [] if key in self.decoders else W.inverse(self.field.name, self.k)
        return "generator", [*work, *W.product(self.field.name, self.k, self.k, vectors)]

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray) -> np.ndarray:
        """The ``k x w`` message from ``k`` coded values: ``values[j]`` is row ``positions[j]``.

        Positions may come in any order; the cached inverse is keyed by the sorted set.
        """
        pos = np.asarray(positions, dtype=np.int64)
        if len(pos) != self.k or len(set(pos.tolist())) != self.k:
            raise NotDecodable(f"need {self.k} distinct coded rows, got {pos.tolist()}")
        order = np.argsort(pos, kind="stable")
        pos, vals = pos[order], values[order]
        self.last_decoder = self.decode_work(pos.tolist(), 0)[0]
        if self.last_decoder == "systematic":  # systematic rows: nothing to invert
            return np.array(vals, dtype=self.field.dtype)
        return self.field.matmul(self.decoders.inverse(pos.tolist()), vals)
