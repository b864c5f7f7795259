"""``GroupComms.create_all``: every group of every ``Q`` in one global order, none freed."""

from __future__ import annotations

import itertools

from mpi4py import MPI

from mpi_coded.runtime.coded.transfer import GroupComms


def test_create_all_walks_every_group_in_one_global_order(monkeypatch):
    # each server asks for exactly the groups of sizes j + 1 it belongs to, in the order of
    # one list shared by all (sizes ascending, members lexicographic): two servers meet
    # their common groups in the same order, so the collective creations cannot deadlock
    K, levels = 5, (2, 1)
    every = [g for j in sorted(levels) for g in itertools.combinations(range(K), j + 1)]
    asked: dict[int, list[tuple[int, ...]]] = {}
    for server in range(K):
        gc = GroupComms(MPI.COMM_SELF)
        mine: list[tuple[int, ...]] = []
        monkeypatch.setattr(gc, "get", mine.append)
        gc.create_all(K, levels, server)
        assert gc.every_q
        asked[server] = mine
    for s, mine in asked.items():
        assert mine == [g for g in every if s in g]
    for a, b in itertools.combinations(range(K), 2):
        common_a = [g for g in asked[a] if b in g]
        assert common_a == [g for g in asked[b] if a in g]


class _Comm:
    def __init__(self) -> None:
        self.freed = False

    def Free(self) -> None:  # noqa: N802 (mpi4py's name)
        self.freed = True


def test_groups_of_every_q_are_kept_until_the_end():
    gc = GroupComms(MPI.COMM_SELF)
    comms = {(0, 1, 2): _Comm(), (1, 2, 3): _Comm()}
    gc._comms.update(comms)
    gc.every_q = True
    gc.keep_within((0, 1, 2))  # a Q without server 3: nothing is freed
    assert not any(c.freed for c in comms.values()) and len(gc) == 2
    gc.free()
    assert all(c.freed for c in comms.values()) and len(gc) == 0
    # without create_all, the groups outside Q are freed
    lazy = GroupComms(MPI.COMM_SELF)
    comms = {(0, 1, 2): _Comm(), (1, 2, 3): _Comm()}
    lazy._comms.update(comms)
    lazy.keep_within((0, 1, 2))
    assert comms[(1, 2, 3)].freed and not comms[(0, 1, 2)].freed
    lazy.free()
