"""Writing results files: :class:`ResultsWriter` appends one line per record, flushed and
fsync'ed before :meth:`~ResultsWriter.write` returns (a job killed mid-write leaves at
most one torn last line, which the readers skip), and :func:`jsonable`.

A file's *watcher* (:mod:`mpi_coded.results.last_word`) may yet append the summary of the
job whose rank 0 it watches: it holds an exclusive ``flock`` on the file while it lives
(:func:`hold`), and a writer that opens the file waits, up to :data:`WATCHER_WAIT_S`, until
no watcher holds it (:func:`wait_unheld`), so that a job resumed into the file of one
killed a moment ago (``--resume``) writes its lines after that job's last one."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from mpi_coded.results.record import Record

WATCHER_WAIT_S = 10.0
"""Seconds a writer waits for an earlier job's watcher to let go of the file."""


def jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays and Fractions to JSON types."""
    import fractions

    import numpy as np

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


def _try_lock(fd: int, seconds: float) -> bool:
    """An exclusive ``flock`` on ``fd`` within ``seconds`` (polled; False: not got)."""
    end = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)


def hold(path: str, seconds: float = WATCHER_WAIT_S) -> int | None:
    """A watcher's lock on ``path``: the descriptor holding it (kept open while the watcher
    lives), None when the file cannot be opened or another holds it past ``seconds``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    if _try_lock(fd, seconds):
        return fd
    os.close(fd)
    return None


def wait_unheld(path: str, seconds: float = WATCHER_WAIT_S) -> bool:
    """Wait until no watcher holds ``path`` (True), at most ``seconds`` (False); a file that
    does not exist is held by none."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return True
    try:
        return _try_lock(fd, seconds)  # closing the descriptor lets go at once
    finally:
        os.close(fd)


class ResultsWriter:
    """Append JSON lines to ``path`` (``None``: keep them in memory only), once no watcher of
    an earlier job holds it (module docstring)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lines: list[dict[str, Any]] = []
        self._fh: TextIO | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            if not wait_unheld(path, WATCHER_WAIT_S):
                sys.stderr.write(
                    f"mpi-coded: warning: the watcher of an earlier job still holds {path} "
                    f"after {WATCHER_WAIT_S:g} s: that job's summary may come among these "
                    "lines\n")
            self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, record: Record | dict[str, Any]) -> None:
        """Append one line (a :class:`Record`'s :meth:`~Record.to_dict`, or a dict), flushed
        and fsync'ed before returning."""
        rec = jsonable(record.to_dict() if isinstance(record, Record) else record)
        self.lines.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec, sort_keys=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
