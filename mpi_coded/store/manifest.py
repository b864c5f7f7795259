"""A store's manifest: what one host's store directory holds, and the rules a job checks.

``manifest.json`` in each host's store directory holds the facts every host shares (the
*identity*: field, shape of ``X``, ``L``, ``N``, the generator ``G`` whose row ``n``
encodes machine ``n``'s block, the data set's hash and source, the Freivalds sketch of
:mod:`mpi_coded.store.sketch`, ``||X||_2`` for linreg) and the blocks stored *there*,
each with its file, shape and checksum (:mod:`mpi_coded.store.checksum`).  Two hosts'
manifests of one store differ only in their blocks; :meth:`Manifest.digest` hashes the
identity so that ranks can compare theirs in a few bytes.

A manifest of another data set, another ``L``, ``N``, shape or field than the job's is
refused (:meth:`Manifest.check_job`, a :class:`~mpi_coded.errors.ConfigError` naming the
file and the rule) before any MPI traffic.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields, replace
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.errors import ConfigError
from mpi_coded.fields import get_field
from mpi_coded.store import checksum
from mpi_coded.store.sketch import ENCODING, encode_array

FORMAT = 2
"""The manifest's format version (a reader refuses a newer one).  2: the sketch's arrays
as base64 strings (:data:`mpi_coded.store.sketch.ENCODING`); 1, still read: as lists,
turned into format 2's strings as it is read (:func:`_sketch_as_bytes`)."""
MANIFEST = "manifest.json"


def block_name(machine: int, which: int) -> str:
    """The file of machine ``machine``'s coded block of ``X`` (``which = 0``) or of ``X^T``
    (``which = 1``, linreg's second product)."""
    return f"block-{machine}.npy" if which == 0 else f"block-{machine}-t.npy"


def host_dir(template: str, host: str) -> Path:
    """A host's store directory: ``template`` with ``{host}`` replaced by the host name."""
    return Path(template.replace("{host}", host))


@dataclass(frozen=True)
class BlockEntry:
    """One stored coded block."""

    machine: int
    which: int  # 0: a block of X; 1: of X^T
    file: str
    shape: tuple[int, int]
    checksum: str
    chunk_rows: int = 0
    """Rows per checksummed chunk (0: a manifest written before chunk checksums; the
    block is checked whole)."""
    chunks: tuple[str, ...] = ()
    """The checksum of each chunk of ``chunk_rows`` rows of the data (after the header)."""

    def chunk_range(self, i: int) -> tuple[int, int]:
        """The rows ``[a, b)`` of chunk ``i``."""
        return i * self.chunk_rows, min(self.shape[0], (i + 1) * self.chunk_rows)


@dataclass(frozen=True)
class Manifest:
    """One host's manifest (module docstring)."""

    field: str
    rows: int
    cols: int
    L: int
    N: int
    generator: list[list[float | int]]
    dataset: dict[str, Any]  # {"source": ..., "hash": ...}
    transpose: bool = False
    sketch: dict[str, Any] = dc_field(default_factory=dict)
    norm2: float | None = None
    blocks: tuple[BlockEntry, ...] = ()
    format: int = FORMAT
    checksum_algorithm: str = checksum.ALGORITHM

    @property
    def R(self) -> int:
        """Rows of a coded block of ``X``: ``ceil(rows / L)`` (A.1)."""
        return -(-self.rows // self.L)

    @property
    def Rt(self) -> int:
        """Rows of a coded block of ``X^T``: ``ceil(cols / L)``."""
        return -(-self.cols // self.L)

    def block_shape(self, which: int) -> tuple[int, int]:
        return (self.R, self.cols) if which == 0 else (self.Rt, self.rows)

    def identity(self) -> dict[str, Any]:
        """Every fact but the blocks: the same in every host's manifest of one store.  Not
        copied deep (:func:`dataclasses.asdict` is): the sketch of an ``X`` of 2 GiB holds
        32768 floats, and a deep copy of them took 0.3 s of every rank's start."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "blocks"}

    def digest(self) -> bytes:
        """16 bytes that differ when two manifests' identities differ."""
        h = checksum.new()
        h.update(json.dumps(self.identity(), sort_keys=True).encode())
        return h.digest()

    def entry(self, machine: int, which: int = 0) -> BlockEntry | None:
        for b in self.blocks:
            if (b.machine, b.which) == (machine, which):
                return b
        return None

    def machines(self) -> list[int]:
        """Machines whose every block (``X``, and ``X^T`` with :attr:`transpose`) is listed."""
        need = (0, 1) if self.transpose else (0,)
        return sorted(n for n in {b.machine for b in self.blocks}
                      if all(self.entry(n, w) is not None for w in need))

    def with_blocks(self, blocks: list[BlockEntry]) -> Manifest:
        """This manifest holding ``blocks`` (replacing entries of the same machine and kind)."""
        keep = {(b.machine, b.which): b for b in self.blocks}
        keep.update({(b.machine, b.which): b for b in blocks})
        return replace(self, blocks=tuple(sorted(keep.values(),
                                                 key=lambda b: (b.machine, b.which))))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["blocks"] = [_entry_dict(b) for b in self.blocks]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: str = MANIFEST) -> Manifest:
        fmt = d.get("format")
        if not isinstance(fmt, int) or fmt > FORMAT:
            raise ConfigError("store", f"{path}: manifest format {fmt!r} is not one this "
                              f"version reads (<= {FORMAT})")
        try:
            blocks = tuple(_entry(b) for b in d.get("blocks", []))
            kw = {k: d[k] for k in ("field", "rows", "cols", "L", "N", "generator",
                                     "dataset")}
            sketch = dict(d.get("sketch", {}))
            if any(isinstance(sketch.get(k), list) for k in ("s", "t")):
                sketch, fmt = _sketch_as_bytes(sketch, str(kw["field"])), FORMAT
            return cls(**kw, transpose=bool(d.get("transpose", False)),
                       sketch=sketch, norm2=d.get("norm2"), blocks=blocks, format=fmt,
                       checksum_algorithm=str(d.get("checksum_algorithm", "")))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ConfigError("store", f"{path}: not a store manifest ({type(exc).__name__}: "
                              f"{exc})") from None

    def write(self, directory: Path) -> Path:
        """Write ``directory/manifest.json`` atomically (a temporary file, fsync, rename)."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / MANIFEST
        tmp = directory / f".{MANIFEST}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(directory)
        return path

    def check_job(self, path: str, field: str, rows: int, cols: int, L: int, N: int,
                  transpose: bool, source: str | None) -> None:
        """Refuse a manifest of another job: ConfigError naming ``path`` and the rule."""
        if self.checksum_algorithm != checksum.ALGORITHM:
            raise ConfigError("store", f"{path}: checksums are {self.checksum_algorithm!r}, "
                              f"this version checks {checksum.ALGORITHM!r}")
        for name, want, got in (("field", field, self.field), ("rows", rows, self.rows),
                                ("cols", cols, self.cols), ("L", L, self.L), ("N", N, self.N)):
            if want != got:
                raise ConfigError("store", f"{path}: the store holds {name} = {got!r}, the "
                                  f"job has {name} = {want!r} (a store of another job)")
        if transpose and not self.transpose:
            raise ConfigError("store", f"{path}: the workload needs coded blocks of X^T too; "
                              "write the store with --transpose")
        if source is not None and self.dataset.get("source") != source:
            raise ConfigError("store", f"{path}: the store holds the data set "
                              f"{self.dataset.get('source')!r}, the job's is {source!r} "
                              "(a store of another data set)")


def _entry_dict(b: BlockEntry) -> dict[str, Any]:
    d = {**asdict(b), "shape": list(b.shape), "chunks": list(b.chunks)}
    if not b.chunks:  # as written before chunk checksums
        del d["chunk_rows"], d["chunks"]
    return d


def _entry(b: dict[str, Any]) -> BlockEntry:
    """A block's entry; ``chunk_rows`` and ``chunks`` are absent from manifests written
    before chunk checksums (such a block is checked whole)."""
    e = BlockEntry(int(b["machine"]), int(b["which"]), str(b["file"]),
                   (int(b["shape"][0]), int(b["shape"][1])), str(b["checksum"]),
                   int(b.get("chunk_rows", 0)), tuple(str(c) for c in b.get("chunks", ())))
    if e.chunks and (e.chunk_rows < 1 or len(e.chunks) != -(-e.shape[0] // e.chunk_rows)):
        raise ValueError(f"block {e.file}: {len(e.chunks)} chunk checksums do not cover "
                         f"{e.shape[0]} rows in chunks of {e.chunk_rows}")
    return e


def _sketch_as_bytes(sketch: dict[str, Any], field: str) -> dict[str, Any]:
    """A format-1 sketch (lists of numbers) as format 2 holds it (base64 strings of the same
    values: exact, a JSON float reads back as the float written), so that a store whose
    hosts' manifests were written by the two versions has one identity
    (:meth:`Manifest.digest`), and a manifest rewritten is format 2."""
    dtype = get_field(field).dtype
    out = {**sketch, "encoding": ENCODING}
    for k in ("s", "t"):
        if isinstance(sketch.get(k), list):
            out[k] = encode_array(np.asarray(sketch[k], dtype=dtype))
    return out


def read_manifest(directory: Path) -> Manifest:
    """``directory/manifest.json``; ConfigError naming the file when it is unreadable."""
    path = directory / MANIFEST
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError("store", f"{path}: cannot read the manifest ({exc})") from None
    if not isinstance(d, dict):
        raise ConfigError("store", f"{path}: not a store manifest (not a JSON object)")
    return Manifest.from_dict(d, str(path))


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
