"""The last line of a job whose rank 0 was killed: a watcher outside the job writes it.

A launcher that loses a whole host ends the job at once, and not always with a signal
rank 0 can catch: MPICH's hydra asserts (``control_cb ... assert (!closed) failed``) and
every rank, rank 0 included, is SIGKILLed within ~30 ms; a timeout's ``kill -9`` does the
same.  Rank 0 then writes no summary and the results file ends with the last step, as if
the job were still running.

:class:`LastWord` starts a small watcher process when rank 0 opens its results file.
Rank 0 hands it, after each step, the summary it would write if it ended there (its
*provisional* summary, ``ended_early`` to be filled in); at a normal end rank 0 says
``done``.  When the watcher's pipe closes without ``done`` and the file's last line is not
a summary, rank 0 died without its last word: the watcher appends the provisional summary
with ``all_verified`` false and ``ended_early`` saying that rank 0 was killed, when, and
after which step.  Nothing measured is lost, and every reader sees a job that ended.

The watcher is this module run with ``python -m`` (no numpy, no MPI: it starts in well
under a second).  It double-forks into a session of its own, so that neither the
launcher's process-group kill nor a kill of rank 0's descendants reaches it, and it ends
as soon as the pipe closes: it never outlives rank 0 by more than the time to append one
line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import IO, Any

from mpi_coded.results.names import ALL_VERIFIED, SUMMARY
from mpi_coded.results.reading import kind_of

_DONE = "done"
"""What rank 0 writes to the pipe at a normal end (the watcher then writes nothing)."""


class LastWord:
    """Rank 0's end of the watcher (:func:`watch`) of results file ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._pipe: IO[str] | None = None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, path, str(os.getpid()),
                 socket.gethostname()],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, text=True)
        except OSError as exc:  # no watcher: rank 0's own last line is all there is
            sys.stderr.write(f"mpi-coded: warning: no watcher for {path}'s last line "
                             f"({exc})\n")
            return
        proc.wait(timeout=60)  # the first fork's parent returns at once
        self._pipe = proc.stdin

    def provisional(self, summary: dict[str, Any]) -> None:
        """The summary to write if rank 0 ends before its own (``ended_early`` is set by the
        watcher)."""
        self._send(json.dumps(summary))

    def done(self) -> None:
        """Rank 0 wrote its last line: the watcher writes nothing."""
        self._send(_DONE)
        if self._pipe is not None:
            try:
                self._pipe.close()
            except OSError:
                pass
            self._pipe = None

    def _send(self, line: str) -> None:
        if self._pipe is None:
            return
        try:
            self._pipe.write(line + "\n")
            self._pipe.flush()
        except (OSError, ValueError):  # the watcher is gone: nothing more to do
            self._pipe = None


def _last_kind(path: str) -> str | None:
    """The ``kind`` of the file's last complete line (a torn one is skipped)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - (1 << 20)))
            lines = fh.read().split(b"\n")
    except OSError:
        return None
    for raw in reversed(lines[:-1]):  # after the last newline: torn or empty
        if raw.strip():
            try:
                rec = json.loads(raw)
            except ValueError:
                return None
            return kind_of(rec) if isinstance(rec, dict) else None
    return None


def _reason(rank0_pid: int, host: str, at: float, summary: dict[str, Any]) -> str:
    """The watcher's ``ended_early``: rank 0 ended without its summary, when, after which
    step."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    steps = summary.get("steps")
    after = f"after step {summary.get('first_step', 1) + steps - 1}" if steps else \
        "before its first step"
    return (f"rank 0 ({host}, pid {rank0_pid}) ended at {stamp} {after} without writing "
            "its summary: it was killed (its launcher ended the job: a host lost?) or it "
            "failed (its stderr says why); this line is its watcher's")


def watch(path: str, rank0_pid: int, host: str, pipe: IO[str]) -> bool:
    """Read rank 0's provisional summaries until the pipe closes; without ``done``, append
    the last one as the job's summary.  True if a line was written."""
    last: str | None = None
    for line in pipe:
        line = line.strip()
        if line == _DONE:
            return False
        if line:
            last = line
    at = time.time()
    if last is None or _last_kind(path) == SUMMARY:
        return False
    summary = json.loads(last)
    summary[ALL_VERIFIED] = False
    summary["ended_early"] = _reason(rank0_pid, host, at, summary)
    with open(path, "r+b") as fh:
        _drop_torn_line(fh)
        fh.write((json.dumps(summary) + "\n").encode())
        fh.flush()
        os.fsync(fh.fileno())
    return True


def _drop_torn_line(fh: IO[bytes]) -> None:
    """Put ``fh`` at the end of its last complete line, dropping a line rank 0 was killed
    in the middle of (no reader can read it; after it, the summary would be unreadable)."""
    end = fh.seek(0, os.SEEK_END)
    start = max(0, end - (1 << 20))
    fh.seek(start)
    tail = fh.read()
    cut = tail.rfind(b"\n") + 1 if b"\n" in tail else (0 if start == 0 else len(tail))
    fh.seek(start + cut)
    fh.truncate()


def _main(argv: list[str]) -> int:
    path, pid, host = argv[0], int(argv[1]), argv[2]
    if os.fork():  # rank 0 waits for this parent only: the watcher is reparented
        os._exit(0)
    watch(path, pid, host, sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
