"""The background audit of blocks a start trusted by their verified mark.

A start does not read a block whose mark fits the file (:mod:`mpi_coded.store.marks`).
When that mark is older than :data:`~mpi_coded.store.marks.AUDIT_AFTER_S`
(:func:`for_machine`), the machine's :class:`Audit` reads it chunk by chunk in a thread
from the job's second step (or the machine's first IDLE) on, paced to use at most
:data:`DUTY` of a core (a chunk hashed in ``d`` seconds is followed by a sleep of
``d (1 / DUTY - 1)``), and compares each chunk of rows with the manifest's checksum and
the whole file with its checksum.  When all pass, the mark is renewed; when one fails,
the mark is removed and :meth:`Audit.problem` says so in one line, naming the file and the
chunk's rows: the machine withholds its block before its next task
(:class:`mpi_coded.runtime.cec.stores.DiskStore`: never computed on again, rebuilt from its
peers in the running job).  :meth:`Audit.problem` also compares each block file's identity
with the one it had at the start (one ``stat`` per file): a block written while the job
runs is withheld too (its mark removed).

Pure: files and a thread, no MPI.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mpi_coded.store import checksum, marks
from mpi_coded.store.blocks import HostBlocks, chunk_problem
from mpi_coded.store.manifest import BlockEntry

DUTY = 0.25
"""The share of one core the audit's reading and hashing may take."""


class Audit:
    """Checks ``entries`` (``(path, entry)``: the blocks trusted by their mark) in a
    thread once :meth:`start` is called; watches the identity of every file of
    ``watch``."""

    def __init__(self, entries: Sequence[tuple[Path, BlockEntry]], watch: Sequence[Path],
                 duty: float = DUTY) -> None:
        if not 0 < duty <= 1:
            raise ValueError(f"duty must be in (0, 1], got {duty}")
        self.entries, self.duty = list(entries), duty
        self.idents = {p: marks.identity(p) for p in watch}
        self.failed: str | None = None
        self.checked_bytes = 0
        self.done = threading.Event()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (once; a daemon: the process may end before it is done)."""
        if self.thread is None and not self.entries:
            self.done.set()  # nothing to check: no thread
        elif self.thread is None:
            self.thread = threading.Thread(target=self.run, name="store-audit", daemon=True)
            self.thread.start()

    def run(self) -> None:
        """Every entry's chunks, then the marks renewed (module docstring)."""
        for path, e in self.entries:
            if self.stop.is_set():
                return
            try:
                bad = self.check(path, e)
            except OSError as exc:
                bad = f"{path}: cannot be read ({exc})"
            if bad is not None:
                marks.drop(path)
                self.failed = f"{bad} (found by the background audit)"
                self.done.set()
                return
            if marks.identity(path) == self.idents.get(path, marks.identity(path)):
                marks.write(path, e.checksum, self.idents.get(path))
        self.done.set()

    def check(self, path: Path, e: BlockEntry) -> str | None:
        """``path`` read chunk by chunk (paced) against ``e``: why not (None: it passes)."""
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        off, row_bytes = int(arr.offset), int(arr.itemsize) * e.shape[1]
        del arr
        whole = checksum.new()
        with open(path, "rb") as f:
            whole.update(f.read(off))
            per = e.chunk_rows or checksum.chunk_rows(row_bytes)  # no chunks: paced alike
            for i, a in enumerate(range(0, e.shape[0], per)):
                if self.stop.is_set():
                    return None
                t0 = time.perf_counter()
                b = min(e.shape[0], a + per)
                data = f.read((b - a) * row_bytes)
                whole.update(data)
                self.checked_bytes += len(data)
                if e.chunks:
                    got = checksum.new()
                    got.update(data)
                    if got.hexdigest() != e.chunks[i]:
                        return chunk_problem(path, e, i, got.hexdigest())
                time.sleep((time.perf_counter() - t0) * (1 / self.duty - 1))
        if whole.hexdigest() != e.checksum:
            return (f"{path}: checksum {whole.hexdigest()} does not match the manifest's "
                    f"{e.checksum} ({checksum.ALGORITHM}: the block is corrupt)")
        return None

    def problem(self) -> str | None:
        """Why the machine must not use its blocks (None: it may): the audit failed, or a
        block file changed since the start (its mark is removed)."""
        if self.failed is not None:
            return self.failed
        for path, ident in self.idents.items():
            try:
                now = marks.identity(path)
            except OSError:
                now = None
            if now != ident:
                marks.drop(path)
                return (f"{path}: changed on disk while the job ran (inode, size, mtime or "
                        "ctime differ from the start's)")
        return None


def for_machine(hb: HostBlocks, n: int, marked: Sequence[Path],
                after_s: float = marks.AUDIT_AFTER_S, duty: float = DUTY) -> Audit:
    """Machine ``n``'s audit: every one of its block files watched; those of ``marked``
    (trusted by their mark at the start) whose mark is at least ``after_s`` old checked."""
    paths = [(hb.directory / e.file, e) for e in hb.entries(n)]
    due = [(p, e) for p, e in paths if p in marked and marks.age(p) >= after_s]
    return Audit(due, [p for p, _ in paths], duty)
