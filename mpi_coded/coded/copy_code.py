"""Copy codes: every coded row a plain copy of one row of ``A`` (repetition sub-codes).

Replication, fractional repetition and any layout that stores rows of ``A`` as they are
is a :class:`~mpi_coded.coded.code.CodeLayout` of ``m`` partitions of dimension
``k = 1``: partition ``t`` is row ``t`` of ``A`` and its coded rows are its copies.
:class:`CopyCode` encodes and decodes such a layout by gathers (no field arithmetic;
the work lists say ``systematic``), and :class:`CopyCodeRules` is the code-rules part of
a scheme built on it (docs/architecture.md, "Schemes"): the partition map-end rule with
``k = 1`` (a finished copy of every row) and the deficit unicast rule.  A scheme needs
only its layout of copies (its :meth:`code_layout`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_coded.coded.code import Code, CodeLayout, CodeWork, PartitionCode
from mpi_coded.coded.mapend import partitions_covered
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.shuffle import UnicastBook, deficit_unicasts
from mpi_coded.codes import work as W
from mpi_coded.errors import NotDecodable, require
from mpi_coded.fields import Field


class RepetitionSubCode:
    """The ``(n, 1)`` repetition code over ``field``: generator all ones."""

    k = 1

    def __init__(self, field: Field, n: int) -> None:
        self.field = field
        self.n = n
        self.last_encoder = "systematic"
        self.last_decoder = "systematic"

    def generator(self) -> np.ndarray:
        G = self.field.zeros((self.n, 1))
        G[:] = 1
        return G

    def encode_work(self, positions: Sequence[int] | np.ndarray, vectors: int
                    ) -> tuple[str, list[W.Work]]:
        return "systematic", [W.call(), W.copy(len(positions) * vectors)]

    def encode_rows(self, positions: Sequence[int] | np.ndarray, message: np.ndarray
                    ) -> np.ndarray:
        return np.repeat(np.asarray(message, dtype=self.field.dtype)[:1],
                         len(positions), axis=0)

    def decode_work(self, positions: Sequence[int], vectors: int) -> tuple[str, list[W.Work]]:
        return "systematic", [W.call(), W.copy(vectors)]

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray) -> np.ndarray:
        require(len(positions) >= 1, "positions", "a repetition code needs one coded row",
                list(positions))
        return np.array(values[:1], dtype=self.field.dtype)


class CopyCode(PartitionCode):
    """``Psi`` of a layout of copies (``k = 1``): encoding and decoding are one gather."""

    def __init__(self, layout: CodeLayout, field_: Field) -> None:
        require(layout.k == 1, "layout", "a copy code's partitions have dimension 1",
                layout.k)
        super().__init__(layout, field_, RepetitionSubCode(field_, layout.n))
        self.source = layout.msg_index[layout.row_partition, 0]
        """Row of ``A`` each coded row copies."""

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        idx = np.arange(self.layout.r) if rows is None else np.asarray(list(rows), np.int64)
        self.encoders = {"systematic": 1}
        return np.array(A[self.source[idx]], dtype=self.field.dtype)

    def encode_work(self, rows: Sequence[int] | None, vectors: int) -> CodeWork:
        n = self.layout.r if rows is None else len(list(rows))
        out = CodeWork()
        out.add("systematic", [W.call(), W.copy(2 * n * vectors)])
        return out

    def _first_copies(self, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows of A, indices into rows)`` of the first listed copy of every row of
        ``A``; NotDecodable if a row has none."""
        src = self.source[np.asarray(list(rows), dtype=np.int64)]
        got, first = np.unique(src, return_index=True)
        if len(got) < self.layout.m:
            missing = np.setdiff1d(np.arange(self.layout.m), got)
            raise NotDecodable(f"rows {missing[:8].tolist()} of A have no copy among the "
                               f"{len(src)} coded values")
        return got, first

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        got, first = self._first_copies(rows)
        out = self.field.zeros((self.layout.m, values.shape[1]))
        out[got] = values[first]
        self.decoders = {"systematic": 1}
        return out

    def decode_work(self, rows: Sequence[int], vectors: int) -> CodeWork:
        self._first_copies(rows)
        out = CodeWork()
        out.add("systematic", [W.call(), W.copy(2 * self.layout.m * vectors)])
        return out


class CopyCodeRules:
    """The code rules of a scheme whose layout stores copies: :class:`CopyCode`, a
    finished copy of every row ends the map phase, deficit unicasts; no MDS code, so
    every field works (``auto``: gf2^8).  Override :meth:`check_job` for the scheme's
    own size rules."""

    mds = False
    searches_unicasts = False

    def __init__(self, cover_rule: str = " (every row needs a finished copy)") -> None:
        self.cover_rule = cover_rule

    def auto_field(self, p: CodedParams) -> str:
        return "gf2^8"

    def check_job(self, p: CodedParams) -> None:
        """The scheme's own rules on a runnable job (default: none)."""

    def model_length(self, p: CodedParams) -> int | None:
        return None

    def build(self, p: CodedParams, f: Field, layout: CodeLayout) -> Code:
        return CopyCode(layout, f)

    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        return partitions_covered(placement, finished)

    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        return deficit_unicasts(book, idx, known)
