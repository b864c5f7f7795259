"""Property tests of the planner over random speeds, L and available sets."""

from __future__ import annotations

from fractions import Fraction as F

from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.cec import make_plan, optimal_load
from mpi_coded.cec.integer_rows import integer_time


@st.composite
def instances(draw, with_rows=False):
    n = draw(st.integers(1, 9))
    speeds = {i + 1: F(draw(st.integers(1, 40)), draw(st.integers(1, 8))) for i in range(n)}
    avail = draw(st.lists(st.sampled_from(sorted(speeds)), min_size=1, unique=True))
    L = draw(st.integers(1, len(avail)))
    rows = draw(st.integers(1, 30)) if with_rows else None
    policy = draw(st.sampled_from(["heterogeneous", "cyclic"]))
    return speeds, sorted(avail), L, rows, policy


def coverage(plan):
    """Every row range of every set, with the machines computing it."""
    for rs, (a, b) in zip(plan.sets, plan.set_ranges):
        yield rs, a, b


@settings(max_examples=300, deadline=None)
@given(instances())
def test_fractional_plans(inst):
    speeds, avail, L, _, policy = inst
    plan = make_plan(policy, speeds, L, avail)
    assert sum(rs.size for rs in plan.sets) == 1
    assert len(plan.sets) <= len(avail)
    for rs in plan.sets:
        assert rs.size > 0
        assert len(set(rs.machines)) == L and set(rs.machines) <= set(avail)
    loads = dict(plan.load)
    assert sum(loads.values()) == L
    assert all(0 <= v <= 1 for v in loads.values())
    if policy == "heterogeneous":
        c, mu = optimal_load({n: speeds[n] for n in avail}, L)
        assert plan.time == c
        assert loads == mu
        # c* solves sum min(1, c s) = L
        assert sum(min(F(1), c * speeds[n]) for n in avail) == L


@settings(max_examples=300, deadline=None)
@given(instances(with_rows=True))
def test_integer_plans(inst):
    speeds, avail, L, rows, policy = inst
    plan = make_plan(policy, speeds, L, avail, rows=rows)
    # every row computed by exactly L distinct available machines
    count = [0] * rows
    for rs, a, b in coverage(plan):
        assert isinstance(rs.size, int) and rs.size >= 0
        assert len(set(rs.machines)) == L and set(rs.machines) <= set(avail)
        for i in range(a, b):
            count[i] += 1
    assert plan.set_ranges[-1][1] == rows
    assert all(c == 1 for c in count)  # sets are disjoint and cover every row once
    k = plan.row_counts()
    assert sum(k.values()) == L * rows
    assert all(0 <= v <= rows for v in k.values())
    assert len(plan.sets) <= len(avail)
    if policy == "heterogeneous":
        sp = {n: speeds[n] for n in avail}
        c, _ = optimal_load(sp, L)
        t = integer_time(k, sp)
        assert t >= c * rows  # never better than the relaxed optimum
        # optimal among integer allocations: at the minimal time T, capacity fits exactly
        # no allocation can finish earlier: with any smaller time the capacity is short
        cap_below = sum(min(rows, _max_rows_below(t, s)) for s in sp.values())
        assert cap_below < L * rows
        assert plan.time == t / rows


def _max_rows_below(t, s):
    """Largest k with k / s < t."""
    k = t * s
    return int(k) - 1 if k == int(k) else int(k)
