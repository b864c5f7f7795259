"""A block's *verified mark*: the file was read whole against its checksum, and has not
changed since.

``block-<n>.npy.ok`` beside the block holds the block's checksum (the manifest's), the
file's identity when it was checked (device, inode, size, ``mtime_ns`` and ``ctime_ns``)
and when (Unix seconds).  A start whose block has a mark that matches the manifest's
checksum and the file as it is now, and is younger than :data:`MAX_AGE_S`, does not read
the block (:func:`mpi_coded.store.blocks.check_block`); when the mark is older than
:data:`AUDIT_AFTER_S`, its chunks are read in the background instead
(:mod:`mpi_coded.store.audit`), which renews the mark.

Any write to the file through the file system changes its ``ctime`` (which no user can
set back: ``os.utime`` sets ``mtime`` and itself moves ``ctime`` to now); a copy or a
rename onto it changes its inode or ``ctime``.  So a mark never vouches for bytes written
after it.  What a mark cannot see is a change below the file system (a disk returning
other bytes for an unchanged file): the audit, and a full check once the mark is older
than :data:`MAX_AGE_S`, catch that (docs/storage.md, "What a flipped byte costs").
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

MAX_AGE_S = 24 * 3600.0
"""A mark older than this is not trusted: the start reads the block whole again."""
AUDIT_AFTER_S = 3600.0
"""A mark older than this, trusted at a start, has its block audited in the background
(:mod:`mpi_coded.store.audit`); a younger one does not (a relaunch minutes after a check
reads nothing at all)."""
SUFFIX = ".ok"


def mark_path(block: Path) -> Path:
    return block.with_name(block.name + SUFFIX)


def identity(block: Path) -> list[int]:
    """The file's identity: device, inode, size, ``mtime_ns``, ``ctime_ns``."""
    st = os.stat(block)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def write(block: Path, checksum: str, ident: list[int] | None = None) -> None:
    """Mark ``block`` as checked against ``checksum`` (``ident``: its identity when it was
    read; default now).  Best effort: a directory that cannot be written gets no mark
    (the next start reads the block again)."""
    ident = identity(block) if ident is None else ident
    tmp = block.with_name(f".{block.name}{SUFFIX}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"checksum": checksum, "identity": ident,
                                   "checked_unix": time.time()}) + "\n")
        os.replace(tmp, mark_path(block))
    except OSError:
        tmp.unlink(missing_ok=True)


def drop(block: Path) -> None:
    """Remove ``block``'s mark: the next start reads it whole."""
    mark_path(block).unlink(missing_ok=True)


def age(block: Path) -> float:
    """Seconds since ``block``'s mark was written or renewed (infinite: no mark)."""
    try:
        return time.time() - float(json.loads(mark_path(block).read_text())["checked_unix"])
    except (OSError, ValueError, TypeError, KeyError):
        return float("inf")


def valid(block: Path, checksum: str, max_age_s: float = MAX_AGE_S) -> bool:
    """Whether ``block`` has a mark for ``checksum`` that fits the file as it is now and is
    younger than ``max_age_s``."""
    try:
        d = json.loads(mark_path(block).read_text())
        return (isinstance(d, dict) and d.get("checksum") == checksum
                and d.get("identity") == identity(block)
                and 0 <= time.time() - float(d.get("checked_unix", 0)) < max_age_s)
    except (OSError, ValueError, TypeError):
        return False
