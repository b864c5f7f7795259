"""A process and all it started: found from /proc, killed together.

``mpiexec`` starts proxies and ranks that may sit in process groups of their own, so
killing the launcher's group can leave ranks running; benchmark scripts and tests end a
launch that timed out (or was interrupted) with :func:`kill_tree`.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc), whatever its process group."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid``'s process group and every descendant."""
    victims = descendants(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for v in victims:
        try:
            os.kill(v, signal.SIGKILL)
        except ProcessLookupError:
            pass
