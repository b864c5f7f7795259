"""The last line of a job whose rank 0 was killed: a watcher outside the job writes it.

A launcher that loses a whole host ends the job at once, and not always with a signal
rank 0 can catch: MPICH's hydra asserts (``control_cb ... assert (!closed) failed``) and
every rank, rank 0 included, is SIGKILLed within ~30 ms; a timeout's ``kill -9`` does the
same.  Rank 0 then writes no summary and the results file ends with the last step, as if
the job were still running.

:class:`LastWord` starts a small watcher process when rank 0 opens its results file.
Rank 0 hands it, after each step (the elastic job) or repetition (the coded job), the
summary it would write if it ended there (its *provisional* summary, ``ended_early`` to be
filled in, with how far the job got); at a normal end rank 0 says ``done``.  When the
watcher's pipe closes without ``done`` and the file's last line is not a summary, rank 0
died without its last word: the watcher appends the provisional summary with
``all_verified`` false and ``ended_early`` saying that rank 0 was killed, when, and after
which step or repetition.  Nothing measured is lost, and every reader sees a job that ended.

The watcher is this module's :func:`watcher_main` (no numpy, no MPI: it starts in well
under a second; a watcher that cannot start is one warning line, and rank 0 goes on
without it).  It double-forks into a session of its own, so that neither the
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
from mpi_coded.results.writer import WATCHER_WAIT_S, try_lock

_DONE = "done"
"""What rank 0 writes to the pipe at a normal end (the watcher then writes nothing)."""
_SUMMARY, _AFTER = "provisional_summary", "after"
"""Keys of a pipe line that carries how far the job got beside its summary."""


class LastWord:
    """Rank 0's end of the watcher (:func:`watch`) of results file ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._pipe: IO[str] | None = None
        self._starting: subprocess.Popen[str] | None = None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _START, path, str(os.getpid()), socket.gethostname()],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                start_new_session=True, close_fds=True, text=True)
        except OSError as exc:  # no watcher: rank 0's own last line is all there is
            _warn(path, str(exc))
            return
        # Rank 0 does not wait for the watcher to start (its Python and its imports: a
        # tenth of a second of CPU, a second and more on a loaded host; issue 45: rank 0
        # waited so before the first step of every relaunch).  Its pipe takes the lines
        # meanwhile; whether it started is read as rank 0 goes (:meth:`_started`).
        self._pipe, self._starting = proc.stdin, proc

    def _started(self, wait: float | None = None) -> None:
        """Reap the watcher's first parent (it exits as soon as the watcher runs), waiting
        up to ``wait`` seconds (None: only if it has exited): a watcher that could not
        start is one warning line, and rank 0 goes on without it."""
        proc = self._starting
        if proc is None:
            return
        try:
            rc = proc.wait(timeout=wait) if wait else proc.poll()
        except subprocess.TimeoutExpired:  # slow to start: its pipe works all the same
            rc = 0
        if rc is None:
            return
        self._starting = None
        if rc != 0:  # it could not start (its error, in one line)
            err = (proc.stderr.read() if proc.stderr else "").strip().splitlines()
            _warn(self.path, err[-1] if err else f"exit status {rc}")
            self._close()
        if proc.stderr is not None:  # the watcher's own is /dev/null
            proc.stderr.close()

    def _close(self) -> None:
        if self._pipe is not None:
            try:
                self._pipe.close()
            except OSError:
                pass
            self._pipe = None

    def provisional(self, summary: dict[str, Any], after: str | None = None) -> None:
        """The summary to write if rank 0 ends before its own (``ended_early`` is set by the
        watcher); ``after``: how far the job got, for ``ended_early`` (``after repetition
        3``; default: from the elastic summary's ``steps``)."""
        self._send(json.dumps(summary if after is None else {_SUMMARY: summary,
                                                              _AFTER: after}))

    def done(self) -> None:
        """Rank 0 wrote its last line: the watcher writes nothing."""
        self._started(60)
        self._send(_DONE)
        self._close()

    def _send(self, line: str) -> None:
        self._started()
        if self._pipe is None:
            return
        try:
            self._pipe.write(line + "\n")
            self._pipe.flush()
        except (OSError, ValueError):  # the watcher is gone: nothing more to do
            self._pipe = None


def _rfind_newline(fh: IO[bytes], before: int) -> int:
    """The offset of the last newline in ``fh`` before offset ``before`` (-1: none),
    read backwards in chunks: a line may be longer than any one chunk."""
    chunk = 1 << 16
    end = before
    while end > 0:
        start = max(0, end - chunk)
        fh.seek(start)
        at = fh.read(end - start).rfind(b"\n")
        if at >= 0:
            return start + at
        end = start
    return -1


def _tail(fh: IO[bytes]) -> tuple[int, bytes]:
    """Where the file's torn last line starts (its size if it ends with a newline) and its
    last complete line."""
    size = fh.seek(0, os.SEEK_END)
    nl = _rfind_newline(fh, size)
    torn = nl + 1
    if nl < 0:
        return 0, b""
    prev = _rfind_newline(fh, nl)
    fh.seek(prev + 1)
    return torn, fh.read(nl - prev - 1)


def _last_kind(fh: IO[bytes]) -> str | None:
    """The ``kind`` of the file's last complete line (a torn one after it is skipped)."""
    try:
        _, raw = _tail(fh)
        rec = json.loads(raw) if raw.strip() else None
    except (OSError, ValueError):
        return None
    return kind_of(rec) if isinstance(rec, dict) else None


def _reason(rank0_pid: int, host: str, at: float, summary: dict[str, Any],
            after: str | None = None) -> str:
    """The watcher's ``ended_early``: rank 0 ended without its summary, when, after which
    step (``after``, else the elastic summary's ``steps``)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    steps = summary.get("steps")
    if after is None:
        after = f"after step {summary.get('first_step', 1) + steps - 1}" if steps else \
            "before its first step"
    return (f"rank 0 ({host}, pid {rank0_pid}) ended at {stamp} {after} without writing "
            "its summary: it was killed (its launcher ended the job: a host lost?) or it "
            "failed (its stderr says why); this line is its watcher's")


def watch(path: str, rank0_pid: int, host: str, pipe: IO[str]) -> bool:
    """Read rank 0's provisional summaries until the pipe closes; without ``done``, append
    the last one as the job's summary.  True if a line was written."""
    last: dict[str, Any] | None = None
    after: str | None = None
    for line in pipe:
        line = line.strip()
        if line == _DONE:
            return False
        try:  # a line cut by rank 0's death is not a summary
            rec = json.loads(line) if line else None
        except ValueError:
            continue
        if isinstance(rec, dict) and set(rec) == {_SUMMARY, _AFTER}:
            last, after = rec[_SUMMARY], str(rec[_AFTER])
        elif isinstance(rec, dict):
            last, after = rec, None
    at = time.time()
    if last is None:
        return False
    summary = last
    summary[ALL_VERIFIED] = False
    summary["ended_early"] = _reason(rank0_pid, host, at, summary, after)
    with open(path, "r+b") as fh:
        # a job opening the file to append meanwhile (--resume) waits for this line
        try_lock(fh.fileno(), WATCHER_WAIT_S)
        if _last_kind(fh) == SUMMARY:
            return False
        _drop_torn_line(fh)
        fh.write((json.dumps(summary) + "\n").encode())
        fh.flush()
        os.fsync(fh.fileno())
    return True


def _drop_torn_line(fh: IO[bytes]) -> None:
    """Put ``fh`` at the end of its last complete line, dropping a line rank 0 was killed
    in the middle of (no reader can read it; after it, the summary would be unreadable)."""
    torn, _ = _tail(fh)
    fh.seek(torn)
    fh.truncate()


def _warn(path: str, why: str) -> None:
    sys.stderr.write(f"mpi-coded: warning: no watcher for the last line of {path} ({why})\n")


_START = ("import sys; from mpi_coded.results.last_word import watcher_main; "
          "sys.exit(watcher_main(sys.argv[1:]))")
"""How rank 0 starts the watcher (``python -c``: a plain import of the package)."""


def watcher_main(argv: list[str]) -> int:
    """The watcher process: ``PATH RANK0_PID HOST``, rank 0's pipe on stdin."""
    path, pid, host = argv[0], int(argv[1]), argv[2]
    if os.fork():  # rank 0 waits for this parent only: the watcher is reparented
        os._exit(0)
    null = os.open(os.devnull, os.O_WRONLY)  # rank 0 reads the first parent's stderr only
    os.dup2(null, 2)
    watch(path, pid, host, sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(watcher_main(sys.argv[1:]))
