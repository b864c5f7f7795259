"""A host's stored blocks, opened and checked: bad storage is never used.

:func:`scan` reads the host's manifest and checks every listed block cheaply (the file
exists, its ``.npy`` header has the manifest's shape and the field's words, it is not
truncated); :func:`verify` reads a block whole against its checksum.  A block that fails
is *not held*: its machine is lost for this run (the job goes on while ``L`` machines
remain, and a rank without a block repairs it from its peers,
:mod:`mpi_coded.store.repair`), and the reason is one line naming the file and the rule.
A manifest of another job (another data set, ``L``, ``N``, shape or field, or a
generator that is not this version's code) refuses the job
(:class:`~mpi_coded.errors.ConfigError`) before any MPI traffic.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mpi_coded.codes.mds import systematic_mds
from mpi_coded.errors import ConfigError
from mpi_coded.fields import Field
from mpi_coded.store import checksum
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
    from mpi_coded.fields import get_field

    return str(get_field(m.field).dtype)


def verify(hb: HostBlocks, n: int) -> str | None:
    """Machine ``n``'s blocks read whole against their checksums: why not (None: they
    match)."""
    for e in hb.entries(n):
        path = hb.directory / e.file
        got = checksum.file_checksum(path)
        if got != e.checksum:
            return (f"{path}: checksum {got} does not match the manifest's {e.checksum} "
                    f"({checksum.ALGORITHM}: the block is corrupt)")
    return None


def open_block(hb: HostBlocks, n: int, which: int) -> np.ndarray:
    """Machine ``n``'s block ``which``, memory-mapped read-only."""
    assert hb.manifest is not None
    e = hb.manifest.entry(n, which)
    assert e is not None
    return np.load(hb.directory / e.file, mmap_mode="r", allow_pickle=False)
