"""The transition-waste-aware policy ``heterogeneous-tw``: valid plans, same loads and time as
``heterogeneous``, and less transition waste on the worked example and a random trace."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.cec import make_plan, transition_waste
from mpi_coded.cec.plan import POLICIES, StepPlan
from mpi_coded.cec.tw_policy import coarsen, tw_sets
from mpi_coded.errors import ConfigError

SPEEDS = {1: F(1), 2: F(1), 3: F(3, 2), 4: F(3, 2), 5: F(2), 6: F(2)}
SCHEDULE = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]


def assert_valid(plan: StepPlan, want: StepPlan) -> None:
    """Every row computed by exactly L + S distinct available machines; the loads of ``want``."""
    lp = plan.L + plan.S
    total = plan.rows or 1
    got = dict.fromkeys(plan.available, F(0))
    for rs in plan.sets:
        assert rs.size > 0
        assert len(set(rs.machines)) == lp == len(rs.machines)
        assert list(rs.machines) == sorted(rs.machines)
        assert set(rs.machines) <= set(plan.available)
        if plan.rows is not None:
            assert isinstance(rs.size, int)
        for n in rs.machines:
            got[n] += F(rs.size) / total
    assert sum(rs.size for rs in plan.sets) == total
    assert got == dict(plan.load) == dict(want.load)
    assert plan.time == want.time and plan.available == want.available
    assert plan.rows == want.rows and plan.S == want.S and plan.L == want.L


def run(policy, speeds, L, schedule, rows=None, S=0):
    prev, plans, wastes = None, [], []
    for avail in schedule:
        plan = make_plan(policy, speeds, L, avail, rows=rows, S=S, prev=prev)
        wastes.append(transition_waste(prev, plan))
        plans.append(plan)
        prev = plan
    return plans, wastes


def test_listed_and_without_prev_it_is_heterogeneous():
    assert "heterogeneous-tw" in POLICIES
    for rows in (None, 420):
        het = make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 5, 6], rows=rows)
        tw = make_plan("heterogeneous-tw", SPEEDS, 3, [1, 2, 3, 5, 6], rows=rows)
        assert tw.policy == "heterogeneous-tw"
        assert (tw.sets, tw.load, tw.time) == (het.sets, het.load, het.time)
        # prev is ignored by the other policies
        assert make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 5, 6], rows=rows, prev=tw) == het


@pytest.mark.parametrize("rows", [None, 420])
def test_worked_example_schedule_has_less_waste(rows):
    het_plans, het = run("heterogeneous", SPEEDS, 3, SCHEDULE, rows)
    tw_plans, tw = run("heterogeneous-tw", SPEEDS, 3, SCHEDULE, rows)
    for p, q in zip(tw_plans, het_plans):
        assert_valid(p, q)
    assert het == [0, F(4, 15), F(6, 35), 0]
    assert tw == [0, 0, F(1, 15), 0]
    assert sum(tw) < sum(het)  # 1/15 against 46/105 of a block


def random_trace(steps=50, n=12, seed=5):
    rng = random.Random(seed)
    speeds = {i: F(rng.randint(2, 8), 2) for i in range(1, n + 1)}
    schedule = []
    for _ in range(steps):
        avail = [m for m in speeds if rng.random() < 0.75]
        while len(avail) < 5:
            avail = sorted(set(avail) | {rng.randint(1, n)})
        schedule.append(avail)
    return speeds, schedule


@pytest.mark.parametrize("rows,S", [(None, 0), (600, 0), (600, 1)])
def test_random_trace_has_less_waste(rows, S):
    speeds, schedule = random_trace()
    het_plans, het = run("heterogeneous", speeds, 4, schedule, rows, S)
    tw_plans, tw = run("heterogeneous-tw", speeds, 4, schedule, rows, S)
    for p, q in zip(tw_plans, het_plans):
        assert_valid(p, q)
    assert sum(tw) < sum(het) / 5
    # the number of sets stays bounded (segments of the previous plan are coarsened)
    assert max(len(p.sets) for p in tw_plans) <= 3 * max(len(p.available) for p in tw_plans) + 12


def test_same_machines_and_loads_reproduce_the_previous_plan():
    for rows in (None, 420):
        first = make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 5, 6], rows=rows)
        again = make_plan("heterogeneous-tw", SPEEDS, 3, [1, 2, 3, 5, 6], rows=rows, prev=first)
        assert again.sets == first.sets and transition_waste(first, again) == 0


def test_previous_plan_must_use_the_same_rows():
    prev = make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 5, 6], rows=420)
    with pytest.raises(ConfigError, match="prev: the previous plan must use the same rows"):
        make_plan("heterogeneous-tw", SPEEDS, 3, [1, 2, 3, 5], rows=421, prev=prev)


def test_coarsen_merges_equal_neighbours_free_and_then_the_cheapest():
    parts = [(2, frozenset({1, 2})), (3, frozenset({1, 2})), (1, frozenset({1, 3})),
             (5, frozenset({4, 5}))]
    assert coarsen(parts, 10) == [(5, frozenset({1, 2})), (1, frozenset({1, 3})),
                                  (5, frozenset({4, 5}))]
    # merging {1,2}x5 with {1,3}x1 loses 5 + 1; {1,3}x1 with {4,5}x5 loses 2 + 10
    assert coarsen(parts, 2) == [(6, frozenset({1})), (5, frozenset({4, 5}))]


def test_tw_sets_with_a_segment_cap_is_still_valid():
    speeds, schedule = random_trace(steps=6)
    prev = None
    for avail in schedule:
        plan = make_plan("heterogeneous-tw", speeds, 4, avail, rows=600, prev=prev)
        if prev is not None:
            k = plan.row_counts()
            sets = tw_sets(prev, k, 600, 4, 600, max_segments=1)
            assert sum(rs.size for rs in sets) == 600
            got = dict.fromkeys(k, 0)
            for rs in sets:
                for n in rs.machines:
                    got[n] += int(rs.size)
            assert got == k
        prev = plan


@st.composite
def chains(draw: st.DrawFn):
    n = draw(st.integers(1, 12))
    pool = draw(st.lists(st.fractions(min_value=F(1, 3), max_value=6, max_denominator=3)
                         .filter(lambda f: f > 0), min_size=1, max_size=4))
    speeds = {i + 1: draw(st.sampled_from(pool)) for i in range(n)}
    L = draw(st.integers(1, n))
    S = draw(st.integers(0, n - L))
    rows = draw(st.one_of(st.none(), st.integers(1, 40), st.integers(41, 5000)))
    steps = []
    for _ in range(draw(st.integers(2, 4))):
        avail = draw(st.lists(st.sampled_from(sorted(speeds)), min_size=L + S, unique=True))
        policy = draw(st.sampled_from(["heterogeneous", "cyclic", "heterogeneous-tw"]))
        steps.append((sorted(avail), policy))
    return speeds, L, S, rows, steps


@settings(max_examples=300, deadline=None)
@given(chains())
def test_tw_plans_are_valid_after_any_previous_plan(chain):
    speeds, L, S, rows, steps = chain
    prev = None
    for avail, policy in steps:
        het = make_plan("heterogeneous", speeds, L, avail, rows=rows, S=S)
        tw = make_plan("heterogeneous-tw", speeds, L, avail, rows=rows, S=S, prev=prev)
        assert_valid(tw, het)
        if prev is not None and prev.available == tw.available and \
                dict(prev.load) == dict(tw.load) and prev.S == S and \
                len(prev.sets) <= 2 * len(avail):  # (more would be coarsened)
            assert transition_waste(prev, tw) == 0
        prev = tw if policy == "heterogeneous-tw" else \
            make_plan(policy, speeds, L, avail, rows=rows, S=S, prev=prev)


def test_huge_numbers_take_the_exact_object_path():
    rows = 2**61 + 3  # beyond int64 head-room: numpy object arrays of Python ints
    speeds, schedule = random_trace(steps=4, n=8, seed=2)
    prev = None
    for avail in schedule:
        het = make_plan("heterogeneous", speeds, 3, avail, rows=rows)
        tw = make_plan("heterogeneous-tw", speeds, 3, avail, rows=rows, prev=prev)
        assert_valid(tw, het)
        prev = tw
