"""Writing results files: :class:`ResultsWriter` appends one line per record, with one
``write`` system call before :meth:`~ResultsWriter.write` returns (in the kernel's hands:
a process killed after it loses nothing; a job killed mid-write leaves at most one torn
last line, which the readers skip; an exception raised by a signal handler comes between
lines, never inside one), and :func:`jsonable`.  The line reaches the disk (``fsync``)
from a background thread a moment later, and at :meth:`~ResultsWriter.close` for sure:
the master's step does not wait for the disk (an fsync took 2-21 ms on the development VM
under load, once per line), and only a crash of the whole host within that moment can
lose a line.

A file's *watcher* (:mod:`mpi_coded.results.last_word`) may append the summary of the job
whose rank 0 died: it takes an exclusive ``flock`` on the file for that write
(:func:`try_lock`), and a writer that opens the file waits, up to
:data:`WATCHER_WAIT_S`, until no watcher holds it (:func:`wait_unheld`), so that a job
resumed into the file of one killed a moment ago (``--resume``) writes its lines after
that job's last one.  Where ``flock`` does not work (some cluster file systems) nobody
waits: the lock is a courtesy, never a reason to fail."""

from __future__ import annotations

import fcntl
import fractions
import json
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.results.names import SCHEMA_KEY, SCHEMA_VERSION
from mpi_coded.results.record import Record

WATCHER_WAIT_S = 10.0
"""Seconds a writer waits for an earlier job's watcher to let go of the file."""


def jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays and Fractions to JSON types."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, fractions.Fraction):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


def _lock(fd: int, seconds: float) -> bool | None:
    """An exclusive ``flock`` on ``fd`` (a file open for writing) within ``seconds``,
    polled: True got, False another holds it, None the file system cannot lock."""
    end = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)
        except OSError:  # ENOSYS, ENOLCK, EBADF: no locking here
            return None


def try_lock(fd: int, seconds: float) -> bool:
    """An exclusive ``flock`` on ``fd`` (a file open for writing) within ``seconds``;
    False when another holds it, or when the file system cannot lock."""
    return bool(_lock(fd, seconds))


def wait_unheld(path: str, seconds: float = WATCHER_WAIT_S) -> bool:
    """Wait until no watcher holds ``path`` (True), at most ``seconds`` (False: still
    held); a path that is not a regular file, or that cannot be locked, is held by none."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return True
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return True
    try:
        return _lock(fd, seconds) is not False  # closing the descriptor lets go at once
    finally:
        os.close(fd)


class ResultsWriter:
    """Append JSON lines to ``path`` (``None``: keep them in memory only), once no watcher of
    an earlier job holds it (module docstring)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lines: list[dict[str, Any]] = []
        self._fd: int | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            if not wait_unheld(path, WATCHER_WAIT_S):
                sys.stderr.write(
                    f"mpi-coded: warning: the watcher of an earlier job still holds {path} "
                    f"after {WATCHER_WAIT_S:g} s: its summary may come among these lines\n")
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._dirty = threading.Event()
            self._closing = False
            self._syncer = threading.Thread(target=self._sync_loop, daemon=True,
                                            name="results-fsync")
            self._syncer.start()

    def _sync_loop(self) -> None:
        """fsync the file each time lines were written, until :meth:`close`."""
        while True:
            self._dirty.wait()
            self._dirty.clear()
            fd = self._fd
            if fd is not None:
                try:
                    os.fsync(fd)
                except OSError:  # closed under us, or a disk that cannot sync: close() tells
                    pass
            if self._closing:
                return

    def write(self, record: Record | dict[str, Any]) -> None:
        """Append one line (a :class:`Record`'s :meth:`~Record.to_dict`, or a dict) in one
        ``write`` call; the background thread fsyncs it (module docstring)."""
        rec = jsonable(record.to_dict() if isinstance(record, Record) else record)
        if SCHEMA_KEY not in rec:
            rec = {**rec, SCHEMA_KEY: SCHEMA_VERSION}
        self.lines.append(rec)
        if self._fd is not None:
            data = (json.dumps(rec, sort_keys=False) + "\n").encode("utf-8")
            done = os.write(self._fd, data)
            while done < len(data):  # a short write (a full disk, a signal): the rest
                done += os.write(self._fd, data[done:])
            self._dirty.set()

    def close(self) -> None:
        """Stop the background fsync, fsync what is left, close the file."""
        if self._fd is not None:
            self._closing = True
            self._dirty.set()
            self._syncer.join(timeout=60.0)
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
