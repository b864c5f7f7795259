"""The streaming encoder: ``X`` in row chunks to one coded block file per machine.

Machine ``n``'s block is ``X~_n = sum_l G[n, l] X_l`` (docs/theory.md (A.1)), ``X_l`` the
rows ``[l R, (l + 1) R)`` of the zero-padded ``X``.  Rows ``[i, i + c)`` of every
machine's block need rows ``[l R + i, l R + i + c)`` of each ``X_l``: the encoder reads
those ``L`` chunks, multiplies them by the machines' generator rows at once, and appends
each machine's ``c`` rows to its file (sequential writes, hashed as they go).  Blocks of
``X^T`` (linreg's second product) take columns of ``X``: the rows ``[i, i + c)`` of ``X``
give columns ``[i, i + c)`` of every ``X^T`` block, written through a memory map opened
for that chunk alone.  One sequential pass before encoding hashes ``X``, builds the
Freivalds sketch (:mod:`mpi_coded.store.sketch`) and, with ``X^T`` blocks, ``||X||_2``
(from the ``cols x cols`` Gram matrix ``X^T X``).

Peak memory: about ``(L + M) c cols`` words for ``M`` machines written, with ``c`` rows
per chunk (:data:`mpi_coded.store.source.CHUNK_BYTES` of ``X`` per chunk), whatever the
size of ``X`` (``scripts/bench_store.py`` measures it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from mpi_coded.codes.mds import systematic_mds
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import Field
from mpi_coded.store import checksum, marks
from mpi_coded.store.manifest import (
    MANIFEST,
    BlockEntry,
    Manifest,
    block_name,
    host_dir,
    read_manifest,
)
from mpi_coded.store.sketch import SketchBuilder
from mpi_coded.store.source import CHUNK_BYTES, Rows

GRAM_MAX_COLS = 8192
"""``||X||_2`` comes from the ``cols x cols`` Gram matrix: at most this many columns."""


def identity(src: Rows, field: Field, L: int, N: int, transpose: bool, seed: int,
             progress: Callable[[str], None] = lambda s: None) -> Manifest:
    """The facts every host's manifest shares, from one sequential pass over ``X``."""
    require(1 <= L <= N, "L", f"must be in 1..N={N}", L)
    require(src.rows >= L, "rows", f"X needs at least L={L} rows", src.rows)
    h = checksum.new()
    sk = SketchBuilder(field, src.rows, src.cols, seed)
    gram = np.zeros((src.cols, src.cols)) if transpose and not field.exact else None
    if gram is not None:
        require(src.cols <= GRAM_MAX_COLS, "--transpose",
                f"needs cols <= {GRAM_MAX_COLS} (||X||_2 from X^T X)", src.cols)
    for a, b, x in src.chunks():
        h.update(np.ascontiguousarray(x).tobytes())
        sk.add(a, b, x)
        if gram is not None:
            gram += x.T @ x
        progress(f"hashed rows {b}/{src.rows}")
    norm2 = None if gram is None else float(np.sqrt(max(np.linalg.eigvalsh(gram)[-1], 0.0)))
    g = systematic_mds(field, N, L)
    return Manifest(field=field.name, rows=src.rows, cols=src.cols, L=L, N=N,
                    generator=g.tolist(), dataset={"source": src.label, "hash": h.hexdigest()},
                    transpose=transpose, sketch=sk.to_dict(), norm2=norm2)


class Sums(NamedTuple):
    """A written block's checksums: the whole file's and each chunk of rows'."""

    checksum: str
    chunk_rows: int
    chunks: tuple[str, ...]

    def entry(self, machine: int, which: int, file: str, shape: tuple[int, int]
              ) -> BlockEntry:
        return BlockEntry(machine, which, file, shape, self.checksum, self.chunk_rows,
                          self.chunks)


class BlockFile:
    """One machine's ``.npy`` block written in row order, hashed as it goes (the whole
    file, and each chunk of :func:`~mpi_coded.store.checksum.chunk_rows` rows)."""

    def __init__(self, path: Path, shape: tuple[int, int], dtype: np.dtype[Any]) -> None:
        self.path, self.shape = path, shape
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self.f: BinaryIO = open(self.tmp, "wb")
        self.h = checksum.new()
        row_bytes = shape[1] * np.dtype(dtype).itemsize
        self.chunk_rows = checksum.chunk_rows(row_bytes)
        self.parts: checksum.ChunkHasher | None = None  # none while the header is written
        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                  "shape": shape}
        np.lib.format.write_array_header_1_0(self, header)
        self.parts = checksum.ChunkHasher(self.chunk_rows * row_bytes)

    def write(self, data: bytes | memoryview) -> None:
        self.f.write(data)
        self.h.update(data)
        if self.parts is not None:
            self.parts.update(data)

    def close(self) -> Sums:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)
        assert self.parts is not None
        return Sums(self.h.hexdigest(), self.chunk_rows, tuple(self.parts.close()))


def npy_offset(path: Path) -> int:
    """Where the data of the ``.npy`` file at ``path`` begins (the header's length)."""
    return int(np.load(path, mmap_mode="r", allow_pickle=False).offset)


def file_sums(path: Path, shape: tuple[int, int], dtype: np.dtype[Any]) -> Sums:
    """The :class:`Sums` of a block already on disk (one pass)."""
    rows = checksum.chunk_rows(shape[1] * np.dtype(dtype).itemsize)
    whole, parts = checksum.file_sums(path, npy_offset(path),
                                      rows * shape[1] * np.dtype(dtype).itemsize)
    return Sums(whole, rows, tuple(parts))


def encode_blocks(src: Rows, field: Field, g: np.ndarray, L: int,
                  files: Mapping[int, Path], progress: Callable[[str], None]) -> dict[int, Sums]:
    """Write each machine ``n`` of ``files`` its block of ``X`` (module docstring); their
    checksums."""
    R = -(-src.rows // L)
    ms = sorted(files)
    out = {n: BlockFile(files[n], (R, src.cols), field.dtype) for n in ms}
    gm = g[[n - 1 for n in ms]]
    c = max(1, src.chunk_rows(CHUNK_BYTES) // L)
    for i in range(0, R, c):
        j = min(R, i + c)
        stack = np.stack([src.read(b * R + i, b * R + j) for b in range(L)])
        coded = field.matmul(gm, stack.reshape(L, -1)).reshape(len(ms), j - i, src.cols)
        for k, n in enumerate(ms):
            out[n].write(np.ascontiguousarray(coded[k]).data.cast("B"))
        progress(f"encoded rows {j}/{R} of {len(ms)} blocks")
    return {n: out[n].close() for n in ms}


def encode_blocks_t(src: Rows, field: Field, g: np.ndarray, L: int,
                    files: Mapping[int, Path], progress: Callable[[str], None]
                    ) -> dict[int, Sums]:
    """Each machine's block of ``X^T`` (``ceil(cols / L) x rows``), column chunk by
    column chunk; their checksums."""
    Rt = -(-src.cols // L)
    ms = sorted(files)
    gm = g[[n - 1 for n in ms]]
    tmp = {n: files[n].with_name(f".{files[n].name}.{os.getpid()}.tmp") for n in ms}
    for n in ms:
        np.lib.format.open_memmap(tmp[n], mode="w+", dtype=field.dtype,
                                  shape=(Rt, src.rows)).flush()
    for a, b, x in src.chunks(CHUNK_BYTES // max(1, L)):
        padded = np.zeros((b - a, L * Rt), dtype=field.dtype)
        padded[:, : src.cols] = x
        parts = padded.reshape(b - a, L, Rt).transpose(1, 2, 0).reshape(L, -1)
        coded = field.matmul(gm, parts).reshape(len(ms), Rt, b - a)
        for k, n in enumerate(ms):
            mm = np.lib.format.open_memmap(tmp[n], mode="r+")
            mm[:, a:b] = coded[k]
            mm.flush()
            del mm  # unmapped: the chunk's pages leave this process
        progress(f"encoded columns {b}/{src.rows} of {len(ms)} X^T blocks")
    sums = {}
    for n in ms:
        with open(tmp[n], "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp[n], files[n])
        sums[n] = file_sums(files[n], (Rt, src.rows), field.dtype)
    return sums


def placement(N: int, hosts: Sequence[str], place: Sequence[str]) -> dict[int, str]:
    """Machine -> host: ``place`` entries ``HOST:1,2`` first; the machines left go to
    ``hosts`` in turn (machine ``n`` to ``hosts[(n - 1) % len(hosts)]``); no host: ``""``."""
    out: dict[int, str] = {}
    for entry in place:
        host, sep, ms = entry.partition(":")
        require(bool(sep and host), "--place", "must be HOST:MACHINE[,MACHINE...]", entry)
        try:
            nums = [int(m) for m in ms.split(",") if m.strip()]
        except ValueError:
            raise ConfigError("--place", "machines must be integers", entry) from None
        for n in nums:
            require(1 <= n <= N, "--place", f"machines must be in 1..N={N}", n)
            require(n not in out, "--place", f"machine {n} is placed twice", entry)
            out[n] = host
    for n in range(1, N + 1):
        if n not in out:
            out[n] = hosts[(n - 1) % len(hosts)] if hosts else ""
    return out


def write_store(src: Rows, field: Field, L: int, N: int, template: str,
                where: Mapping[int, str], machines: Sequence[int], transpose: bool, seed: int,
                progress: Callable[[str], None] | None = None) -> list[Path]:
    """Encode ``machines``' blocks into their hosts' directories (``template`` with
    ``{host}``), each directory's manifest last; the directories written."""
    say = progress or (lambda s: print(s, file=sys.stderr, flush=True))
    ident = identity(src, field, L, N, transpose, seed, say)
    g = np.asarray(ident.generator, dtype=field.dtype)
    files = {n: host_dir(template, where[n]) / block_name(n, 0) for n in machines}
    dirs = sorted({f.parent for f in files.values()})
    olds = {}
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        olds[d] = _existing(d, ident)
    sums = encode_blocks(src, field, g, L, files, say)
    entries = [sums[n].entry(n, 0, files[n].name, ident.block_shape(0)) for n in machines]
    if transpose:
        files_t = {n: files[n].parent / block_name(n, 1) for n in machines}
        sums_t = encode_blocks_t(src, field, g, L, files_t, say)
        entries += [sums_t[n].entry(n, 1, files_t[n].name, ident.block_shape(1))
                    for n in machines]
    for e in entries:  # checked as written: a start with the file unchanged reads it not
        marks.write(files[e.machine].parent / e.file, e.checksum)
    for d in dirs:
        mine = [e for e in entries if files[e.machine].parent == d]
        (olds[d] or ident).with_blocks(mine).write(d)
        say(f"{d}: machines {sorted({e.machine for e in mine})} written")
    return dirs


def _existing(d: Path, ident: Manifest) -> Manifest | None:
    """The directory's manifest when it is one of this store (more blocks are added to it);
    None when there is none; ConfigError when it belongs to another store."""
    if not (d / MANIFEST).is_file():
        return None
    old = read_manifest(d)
    if old.digest() != ident.digest():
        raise ConfigError("--out", f"{d / MANIFEST} belongs to another store (another data "
                          "set, L, N or field); write into an empty directory")
    return old
