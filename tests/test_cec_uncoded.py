"""The uncoded elastic baseline: speed-proportional split and the rows it moves."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.cec.integer_rows import integer_rows
from mpi_coded.cec.uncoded import (
    MASTER,
    Move,
    bytes_moved,
    moves,
    uncoded_split,
    uncoded_time,
)
from mpi_coded.errors import ConfigError


def owners(layout, rows):
    out = [None] * rows
    for n, (a, b) in layout.items():
        for i in range(a, b):
            assert out[i] is None
            out[i] = n
    return out


def test_seed_speeds_split():
    speeds = {1: F(1), 2: F(1), 3: F(3, 2), 4: F(3, 2), 5: F(2), 6: F(2)}
    lay = uncoded_split(speeds, [1, 2, 3, 5, 6], 1500)
    assert lay == {1: (0, 200), 2: (200, 400), 3: (400, 700), 5: (700, 1100),
                   6: (1100, 1500)}
    assert uncoded_time(lay, speeds) == 200
    m = moves(None, lay)
    assert m == [Move(MASTER, n, a, b) for n, (a, b) in lay.items()]
    assert bytes_moved(m, cols=10, itemsize=8) == 1500 * 80


@st.composite
def steps(draw):
    n = draw(st.integers(1, 8))
    speeds = {i + 1: F(draw(st.integers(1, 20)), draw(st.integers(1, 4))) for i in range(n)}
    rows = draw(st.integers(1, 60))
    avail = [sorted(draw(st.lists(st.sampled_from(sorted(speeds)), min_size=1, unique=True)))
             for _ in range(draw(st.integers(1, 4)))]
    return speeds, rows, avail


@settings(max_examples=300, deadline=None)
@given(steps())
def test_splits_cover_and_moves_reconstruct(inst):
    speeds, rows, avail = inst
    prev = None
    for av in avail:
        cur = uncoded_split(speeds, av, rows)
        assert set(cur) == set(av)
        own = owners(cur, rows)
        assert None not in own and own == sorted(own)  # contiguous, id order
        k = {n: b - a for n, (a, b) in cur.items()}
        assert k == integer_rows({n: speeds[n] for n in av}, 1, rows)
        ms = moves(prev, cur)
        # replay: start from the previous holders (a preempted one holds nothing usable)
        held = owners(prev, rows) if prev is not None else [MASTER] * rows
        new = list(held)
        for m in ms:
            assert m.start < m.stop and m.src != m.dst and m.dst in cur
            for i in range(m.start, m.stop):
                expect = held[i] if held[i] in cur else MASTER
                assert m.src == expect
                new[i] = m.dst
        assert new == own
        moved = sum(m.stop - m.start for m in ms)
        assert moved == sum(1 for i in range(rows) if held[i] != own[i])
        for x, y in zip(ms, ms[1:]):
            assert x.stop <= y.start
            assert not (x.stop == y.start and (x.src, x.dst) == (y.src, y.dst))
        prev = cur


def test_preempted_owner_rows_come_from_the_master():
    speeds = {1: F(1), 2: F(1), 3: F(1)}
    prev = uncoded_split(speeds, [1, 2, 3], 9)   # 1:[0,3) 2:[3,6) 3:[6,9)
    cur = uncoded_split(speeds, [1, 3], 9)       # 1:[0,5) 3:[5,9)
    assert moves(prev, cur) == [Move(MASTER, 1, 3, 5), Move(MASTER, 3, 5, 6)]
    back = uncoded_split(speeds, [1, 2, 3], 9)
    assert moves(cur, back) == [Move(1, 2, 3, 5), Move(3, 2, 5, 6)]


def test_proportional_when_divisible():
    speeds = {1: F(1), 2: F(2), 3: F(3)}
    lay = uncoded_split(speeds, [1, 2, 3], 60)
    assert {n: b - a for n, (a, b) in lay.items()} == {1: 10, 2: 20, 3: 30}
    assert uncoded_time(lay, speeds) == 10


@pytest.mark.parametrize("args, key", [
    (({1: F(1)}, [], 5), "available"),
    (({1: F(1)}, [2], 5), "available"),
    (({1: F(1)}, [1], 0), "rows"),
])
def test_bad_input_names_the_key(args, key):
    with pytest.raises(ConfigError) as e:
        uncoded_split(*args)
    assert e.value.field == key


def test_layouts_must_cover_the_same_rows():
    speeds = {1: F(1)}
    with pytest.raises(ConfigError) as e:
        moves(uncoded_split(speeds, [1], 5), uncoded_split(speeds, [1], 6))
    assert e.value.field == "prev"
