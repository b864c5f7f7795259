"""A host's stored blocks, opened and checked: bad storage is never used.

:func:`scan` reads the host's manifest and checks every listed block cheaply (the file
exists, its ``.npy`` header has the manifest's shape and the field's words, it is not
truncated); :func:`check_block` reads a block whole against its checksums (per chunk of
rows, naming the chunk that fails) unless its verified mark (:mod:`.marks`) shows the
file unchanged since it was last read so; :func:`verify` reads it whichever.  A block that fails
is *not held*: its machine is lost for this run (the job goes on while ``L`` machines
remain, and a rank without a block repairs it from its peers,
:mod:`mpi_coded.store.repair`), and the reason is one line naming the file and the rule.
A manifest of another job (another data set, ``L``, ``N``, shape or field, or a
generator that is not this version's code) refuses the job
(:class:`~mpi_coded.errors.ConfigError`) before any MPI traffic.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mpi_coded.codes.mds import systematic_mds
from mpi_coded.errors import ConfigError
from mpi_coded.fields import Field, get_field
from mpi_coded.store import checksum, marks
from mpi_coded.store.manifest import MANIFEST, BlockEntry, Manifest, host_dir, read_manifest


@dataclass(frozen=True)
class Expect:
    """What the job needs of a store (its config's facts)."""

    field: Field
    rows: int
    cols: int
    L: int
    N: int
    transpose: bool
    source: str | None  # the data set's source when the job names one (its .npy path)

    @property
    def kinds(self) -> tuple[int, ...]:
        return (0, 1) if self.transpose else (0,)


@dataclass
class HostBlocks:
    """What one host's store directory holds that a job may use."""

    directory: Path
    manifest: Manifest | None = None
    held: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def entries(self, n: int) -> list[BlockEntry]:
        assert self.manifest is not None
        return [e for e in self.manifest.blocks if e.machine == n]


def scan(template: str, host: str, want: Expect) -> HostBlocks:
    """The host's directory, its manifest checked against the job, the blocks that pass
    the cheap checks (module docstring)."""
    d = host_dir(template, host)
    out = HostBlocks(d)
    if not (d / MANIFEST).is_file():
        if d.is_dir():
            out.problems.append(f"{d / MANIFEST}: missing (this host's blocks are not used)")
        return out
    try:
        m = read_manifest(d)
    except ConfigError as exc:
        out.problems.append(f"{exc.rule} (this host's blocks are not used)")
        return out
    path = str(d / MANIFEST)
    m.check_job(path, want.field.name, want.rows, want.cols, want.L, want.N, want.transpose,
                want.source)
    g = systematic_mds(want.field, want.N, want.L)
    if not np.array_equal(np.asarray(m.generator, dtype=want.field.dtype), g):
        raise ConfigError("store", f"{path}: its generator is not this version's "
                          f"[I; Cauchy] code for N={want.N}, L={want.L}")
    out.manifest = m
    for n in m.machines():
        bad = [p for w in want.kinds if (p := cheap_check(d, m, n, w))]
        out.problems += bad
        if not bad:
            out.held.append(n)
    return out


def cheap_check(d: Path, m: Manifest, n: int, which: int) -> str | None:
    """Why machine ``n``'s block ``which`` cannot be used (None: it may be)."""
    e = m.entry(n, which)
    if e is None:
        return f"{d / MANIFEST}: lists no block {which} of machine {n}"
    path = d / e.file
    if not path.is_file():
        return f"{path}: missing (machine {n}'s coded block)"
    want = m.block_shape(which)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        return f"{path}: not a readable .npy block, or truncated ({exc})"
    if tuple(arr.shape) != want or tuple(e.shape) != want:
        return f"{path}: has shape {tuple(arr.shape)}, the store's blocks are {want}"
    if arr.dtype != np.dtype(m_dtype(m)):
        return f"{path}: holds {arr.dtype} words, {m.field} blocks hold {m_dtype(m)}"
    end = int(arr.offset) + int(arr.nbytes)
    size = os.path.getsize(path)
    if size != end:
        return f"{path}: is {size} bytes, a block of {want} is {end} (truncated or padded)"
    return None


def m_dtype(m: Manifest) -> str:
    return str(get_field(m.field).dtype)


@dataclass
class Check:
    """One machine's blocks checked at a start (:func:`check_block`)."""

    problem: str | None = None  # why they cannot be used (None: they may)
    read: int = 0  # blocks read whole against their checksums
    read_bytes: int = 0
    marked: list[Path] = field(default_factory=list)  # trusted by their mark, not read
    seconds: float = 0.0


def check_block(hb: HostBlocks, n: int, use_marks: bool = True) -> Check:
    """Machine ``n``'s blocks against their checksums: a block whose verified mark fits
    the file as it is now (:mod:`mpi_coded.store.marks`) is not read (with
    ``use_marks``); any other is read whole, chunk by chunk, and marked when it passes."""
    t0, out = time.perf_counter(), Check()
    for e in hb.entries(n):
        path = hb.directory / e.file
        if use_marks and marks.valid(path, e.checksum):
            out.marked.append(path)
            continue
        try:
            ident = marks.identity(path)
            out.problem = check_entry(path, e)
        except OSError as exc:  # gone or unreadable since the scan
            out.problem = f"{path}: cannot be read ({exc})"
            break
        out.read += 1
        out.read_bytes += ident[2]
        if out.problem is not None:
            marks.drop(path)
            break
        if marks.identity(path) == ident:  # unchanged while it was read
            marks.write(path, e.checksum, ident)
    out.seconds = time.perf_counter() - t0
    return out


def check_entry(path: Path, e: BlockEntry) -> str | None:
    """The block at ``path`` read whole against entry ``e``'s checksums (per chunk of
    rows when the manifest lists them, naming the first chunk that fails): why not
    (None: they match)."""
    if not e.chunks:  # a manifest written before chunk checksums: the whole file
        got = checksum.file_checksum(path)
    else:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        row_bytes = int(arr.itemsize) * e.shape[1]
        got, sums = checksum.file_sums(path, int(arr.offset), e.chunk_rows * row_bytes)
        del arr
        for i, (have, want) in enumerate(zip(sums, e.chunks)):
            if have != want:
                return chunk_problem(path, e, i, have)
        if len(sums) != len(e.chunks):
            return (f"{path}: holds {len(sums)} chunks of {e.chunk_rows} rows, the manifest "
                    f"lists {len(e.chunks)} (truncated or padded)")
    if got != e.checksum:
        return (f"{path}: checksum {got} does not match the manifest's {e.checksum} "
                f"({checksum.ALGORITHM}: the block is corrupt)")
    return None


def chunk_problem(path: Path, e: BlockEntry, i: int, got: str) -> str:
    a, b = e.chunk_range(i)
    return (f"{path}: checksum of rows {a}..{b} (chunk {i}) {got} does not match the "
            f"manifest's {e.chunks[i]} ({checksum.ALGORITHM}: the block is corrupt)")


def verify(hb: HostBlocks, n: int) -> str | None:
    """Machine ``n``'s blocks read whole against their checksums, marks or not: why not
    (None: they match; each is marked)."""
    return check_block(hb, n, use_marks=False).problem


def open_block(hb: HostBlocks, n: int, which: int) -> np.ndarray:
    """Machine ``n``'s block ``which``, memory-mapped read-only."""
    assert hb.manifest is not None
    e = hb.manifest.entry(n, which)
    assert e is not None
    return np.load(hb.directory / e.file, mmap_mode="r", allow_pickle=False)
