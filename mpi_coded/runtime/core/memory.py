"""Keep freed memory in the rank: later repetitions reuse pages instead of faulting fresh ones.

A repetition allocates and frees the same large arrays every time (coded rows, FFT scratch,
gathered values).  By default glibc hands blocks above a sliding threshold back to the
kernel on ``free`` (``munmap``, heap trimming), so every repetition touches fresh pages
again; on a virtual machine whose pages come from the host lazily a first touch costs
about 57 us per 4 KiB page (measured with getrusage on a Firecracker VM), as much as the
computing.  :func:`retain_freed_memory` raises the mmap threshold to its maximum (32 MiB on
64-bit glibc) and turns heap trimming off (``mallopt``), and :func:`prefault` touches a
heap of the job's working size during setup, so the timed phases reuse pages the rank
already has.  Arrays above 32 MiB are still mapped afresh each time (at the paper's size:
the master's ``m x N`` outputs; no timed server array is that large).  A rank keeps the
larger of its peak and its pre-touched heap resident (reported as ``peak_rss_mb``).
Elsewhere (not glibc) both do nothing.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20
"""glibc's largest mmap threshold on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX``)."""


def retain_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory (module docstring); True if it did."""
    if not sys.platform.startswith("linux"):
        return False
    try:  # the C library already loaded (no ldconfig subprocess after MPI_Init)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
    ok = mallopt(M_TRIM_THRESHOLD, (1 << 31) - 1) == 1 and ok
    global _RETAINED
    _RETAINED = _RETAINED or ok
    return ok


_RETAINED = False


PREFAULT_BLOCK = 16 << 20
"""Bytes per block touched by :func:`prefault` (below the mmap threshold: heap memory)."""


def prefault(nbytes: int) -> int:
    """Touch ``nbytes`` of heap memory and free it again, so that later allocations of
    the timed phases reuse pages the rank already has (with :func:`retain_freed_memory`
    the heap keeps them); returns the bytes touched (0 where freed memory is not kept)."""
    if nbytes <= 0 or not _RETAINED:
        return 0

    blocks = []
    done = 0
    while done < nbytes:
        size = min(PREFAULT_BLOCK, nbytes - done)
        block = np.empty(size, dtype=np.uint8)
        block.fill(0)  # the first touch: the page faults happen here, untimed
        blocks.append(block)
        done += size
    del blocks
    return done
