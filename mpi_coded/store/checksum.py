"""The checksum of a stored block: BLAKE2b with a 16-byte digest over the file's bytes,
and over each fixed chunk of its rows.

BLAKE2b is in Python's standard library (``hashlib``, no dependency), runs at about
1 GB/s on one core here, and is a cryptographic hash: an accidental corruption (a torn
write, a flipped bit, a file of another store) goes unnoticed with probability
``2^-128``.  A file is hashed in 8 MiB reads, so hashing never holds the file in memory.

Besides the whole file's checksum, a block's manifest entry lists one checksum per chunk
of :func:`chunk_rows` rows of its data (the bytes after the ``.npy`` header): a failing
chunk is named by its rows, and a chunk can be checked alone (the background audit,
:mod:`mpi_coded.store.audit`).  One pass over the file gives both (:func:`file_sums`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ALGORITHM = "blake2b-128"
"""The name written in manifests next to every checksum."""
CHUNK_BYTES = 8 << 20
ROW_CHUNK_BYTES = 8 << 20
"""A block's rows are checksummed in chunks of about this many bytes (whole rows)."""


def new() -> hashlib.blake2b:
    """A fresh hasher of :data:`ALGORITHM` (to feed bytes as they are written)."""
    return hashlib.blake2b(digest_size=16)


def file_checksum(path: str | Path) -> str:
    """The hex checksum of the file at ``path``, read in chunks."""
    h = new()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def chunk_rows(row_bytes: int) -> int:
    """Rows per checksummed chunk for rows of ``row_bytes`` bytes (at least one)."""
    return max(1, ROW_CHUNK_BYTES // max(1, row_bytes))


class ChunkHasher:
    """The checksums of consecutive chunks of ``chunk_bytes`` bytes of a stream fed in
    pieces of any size (the data of a block as it is written)."""

    def __init__(self, chunk_bytes: int) -> None:
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
        self.size, self.h, self.filled = chunk_bytes, new(), 0
        self.sums: list[str] = []

    def update(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        while len(view):
            take = min(len(view), self.size - self.filled)
            self.h.update(view[:take])
            self.filled += take
            view = view[take:]
            if self.filled == self.size:
                self.sums.append(self.h.hexdigest())
                self.h, self.filled = new(), 0

    def close(self) -> list[str]:
        """Every chunk's checksum (the last one may be short)."""
        if self.filled:
            self.sums.append(self.h.hexdigest())
            self.h, self.filled = new(), 0
        return self.sums


def file_sums(path: str | Path, offset: int, chunk_bytes: int) -> tuple[str, list[str]]:
    """The whole file's checksum and the checksums of its bytes from ``offset`` on in
    chunks of ``chunk_bytes``, in one pass."""
    whole, parts = new(), ChunkHasher(chunk_bytes)
    with open(path, "rb") as f:
        head = f.read(offset)
        whole.update(head)
        while chunk := f.read(CHUNK_BYTES):
            whole.update(chunk)
            parts.update(chunk)
    return whole.hexdigest(), parts.close()


def range_checksum(path: str | Path, start: int, nbytes: int) -> str:
    """The checksum of ``nbytes`` bytes of the file from ``start`` (one chunk of rows)."""
    h = new()
    with open(path, "rb") as f:
        f.seek(start)
        left = nbytes
        while left > 0 and (chunk := f.read(min(CHUNK_BYTES, left))):
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()
