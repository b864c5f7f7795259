"""runtime/core/memory.py: ranks keep freed memory (glibc ``mallopt``) and pre-touch their
working heap.  ``prefault`` in one process (without changing this process's malloc); the
``mallopt`` itself on the ranks of an MPI launch."""

from __future__ import annotations

import sys

import pytest
from runtime_core_ranks import launched, result

from mpi_coded.runtime.core import memory


@pytest.mark.parametrize("nbytes", [1, 5 << 20, memory.PREFAULT_BLOCK,
                                    memory.PREFAULT_BLOCK * 2 + 3])
def test_memory_prefault_touches_the_bytes_asked_when_memory_is_kept(monkeypatch, nbytes):
    monkeypatch.setattr(memory, "_RETAINED", True)
    assert memory.prefault(nbytes) == nbytes


@pytest.mark.parametrize("nbytes", [0, -5])
def test_memory_prefault_of_nothing_touches_nothing(monkeypatch, nbytes):
    monkeypatch.setattr(memory, "_RETAINED", True)
    assert memory.prefault(nbytes) == 0


def test_memory_prefault_does_nothing_where_freed_memory_is_not_kept(monkeypatch):
    monkeypatch.setattr(memory, "_RETAINED", False)
    assert memory.prefault(1 << 20) == 0


def test_memory_blocks_stay_below_the_mmap_threshold():
    # a block above the threshold would be mapped afresh (and unmapped) every time
    assert memory.PREFAULT_BLOCK < memory.MMAP_THRESHOLD_MAX


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_memory_launch_keeps_freed_memory_on_the_ranks():
    out = result(launched("exchange"))
    assert out["retained"] is True and out["prefault"] == 3 << 20
