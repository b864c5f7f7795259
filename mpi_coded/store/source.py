"""``X`` read in row chunks, so that no reader holds more than a chunk of it.

:class:`NpyRows` reads rows ``[a, b)`` of a C-ordered 2-D ``.npy`` file with one
``readinto`` (no memory map: pages of a mapped file count in the reader's resident set
as they are touched); :class:`ArrayRows` serves an array already in memory (the seeded
``X`` of a config).  Rows past the end read as zeros (the padding of A.1).  Both serve
the encoder (:mod:`mpi_coded.store.encode`) and the master's exact verification of a job
started from a store (:class:`mpi_coded.store.sketch.Streamed`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.errors import ConfigError
from mpi_coded.store import checksum

CHUNK_BYTES = 32 << 20
"""Bytes of ``X`` a chunk holds at most (its rows: :meth:`Rows.chunk_rows`)."""


class Rows:
    """Rows of a ``rows x cols`` matrix, in chunks."""

    rows: int
    cols: int
    dtype: np.dtype[Any]
    label: str

    def read(self, a: int, b: int) -> np.ndarray:
        """Rows ``[a, b)`` as a new ``(b - a, cols)`` array; rows ``>= rows`` are zeros."""
        out = np.zeros((b - a, self.cols), dtype=self.dtype)
        hi = min(b, self.rows)
        if hi > a:
            self._fill(a, hi, out[: hi - a])
        return out

    def _fill(self, a: int, b: int, out: np.ndarray) -> None:
        raise NotImplementedError

    def chunk_rows(self, limit: int | None = None) -> int:
        """Rows of a chunk of at most ``limit`` bytes (default :data:`CHUNK_BYTES`)."""
        size = CHUNK_BYTES if limit is None else limit
        return max(1, size // max(1, self.cols * self.dtype.itemsize))

    def chunks(self, limit: int | None = None) -> Any:
        """``(a, b, rows)`` for every chunk, in order."""
        c = self.chunk_rows(limit)
        for a in range(0, self.rows, c):
            b = min(self.rows, a + c)
            yield a, b, self.read(a, b)

    def data_hash(self) -> str:
        """The checksum of ``X``'s entries in row order (as the field's words)."""
        h = checksum.new()
        for _, _, x in self.chunks():
            h.update(np.ascontiguousarray(x).tobytes())
        return h.hexdigest()


class ArrayRows(Rows):
    def __init__(self, x: np.ndarray, label: str) -> None:
        self.x = x
        self.rows, self.cols = (int(s) for s in x.shape)
        self.dtype = x.dtype
        self.label = label

    def _fill(self, a: int, b: int, out: np.ndarray) -> None:
        out[:] = self.x[a:b]


class NpyRows(Rows):
    """A 2-D ``.npy`` file read in rows, cast to ``dtype`` (the field's words)."""

    def __init__(self, path: str | Path, dtype: np.dtype[Any], key: str = "data") -> None:
        self.path = Path(path)
        self.label = str(self.path.resolve())
        try:
            with open(self.path, "rb") as f:
                version = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, fortran, stored = read(f)
                self.offset = f.tell()
        except (OSError, ValueError) as exc:
            raise ConfigError(key, f"must be a readable .npy file ({exc})", str(path)) from None
        if len(shape) != 2 or fortran or stored.hasobject:
            raise ConfigError(key, "must hold a 2-D C-ordered numeric matrix", str(path))
        self.rows, self.cols = int(shape[0]), int(shape[1])
        self.stored = np.dtype(stored)
        self.dtype = np.dtype(dtype)

    def _fill(self, a: int, b: int, out: np.ndarray) -> None:
        buf = np.empty((b - a, self.cols), dtype=self.stored)
        with open(self.path, "rb") as f:
            f.seek(self.offset + a * self.cols * self.stored.itemsize)
            got = f.readinto(buf.data.cast("B"))
        if got != buf.nbytes:
            raise ConfigError("data", f"{self.path} is truncated (rows {a}..{b})")
        out[:] = buf  # cast to the field's words
