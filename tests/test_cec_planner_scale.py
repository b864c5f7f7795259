"""The fast planner against the straightforward one it replaced (kept here as the reference).

The reference is the planner as first written: ``Fraction`` arithmetic, a full re-sort of
the machines in every iteration of the filling algorithm, the integer-row greedy one row
at a time, and loads summed from the sets.  The fast planner must give the same plans,
value for value and byte for byte.  The only change to the reference is ``S``: every row
is computed by ``L + S`` machines (``L + S`` in place of ``L`` in every step).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from fractions import Fraction
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.cec import cyclic_sets, filling, integer_rows, make_plan, optimal_load
from mpi_coded.cec.filling import Number, RowSet
from mpi_coded.cec.plan import StepPlan
from mpi_coded.errors import ConfigError

# ---------------------------------------------------------------- the reference planner


def ref_optimal_load(speeds: Mapping[int, Fraction], L: int
                     ) -> tuple[Fraction, dict[int, Fraction]]:
    nt = len(speeds)
    order = sorted(speeds, key=lambda n: (speeds[n], n))
    s_sorted = [Fraction(speeds[n]) for n in order]
    prefix = [Fraction(0)]
    for s in s_sorted:
        prefix.append(prefix[-1] + s)
    k_best = 0
    for k in range(nt, 0, -1):
        if L - nt + k > 0 and s_sorted[k - 1] * (L - nt + k) <= prefix[k]:
            k_best = k
            break
    assert k_best > 0
    c = Fraction(L - nt + k_best) / prefix[k_best]
    mu = {n: (c * speeds[n] if i < k_best else Fraction(1)) for i, n in enumerate(order)}
    return c, mu


def ref_filling(loads: Mapping[int, Number], L: int, total: Number = 1) -> list[RowSet]:
    m = dict(loads)
    assert sum(m.values()) == L * total
    a: Number = total
    sets: list[RowSet] = []
    for _ in range(len(m) + 1):
        alive = sorted((n for n in m if m[n] > 0), key=lambda n: (m[n], n))
        if not alive:
            return sets
        assert len(alive) >= L
        s = alive[0]
        group = alive[len(alive) - (L - 1):] if L > 1 else []
        if len(alive) > L:
            l_mach = alive[len(alive) - L]
            alpha = min(m[s], a - m[l_mach])
        else:
            alpha = m[s]
        machines = tuple(sorted([s, *group]))
        sets.append(RowSet(alpha, machines))
        for n in machines:
            m[n] -= alpha
        a -= alpha
    raise AssertionError("filling algorithm did not end within |N_t| iterations")


def ref_integer_rows(speeds: Mapping[int, Fraction], L: int, rows: int) -> dict[int, int]:
    _, mu = ref_optimal_load(speeds, L)
    k = {n: min(rows, int(mu[n] * rows)) for n in speeds}
    missing = L * rows - sum(k.values())
    for _ in range(missing):
        cand = [n for n in k if k[n] < rows]
        best = min(cand, key=lambda n: (Fraction(k[n] + 1) / speeds[n], n))
        k[best] += 1
    return k


def ref_cyclic_sets(available: Sequence[int], L: int, rows: int | None = None) -> list[RowSet]:
    ids = sorted(available)
    nt = len(ids)
    sets: list[RowSet] = []
    for f in range(nt):
        machines = tuple(sorted(ids[(f + j) % nt] for j in range(L)))
        size: Number = Fraction(1, nt) if rows is None else \
            (f + 1) * rows // nt - f * rows // nt
        sets.append(RowSet(size, machines))
    return sets


def ref_make_plan(policy: str, speeds: Mapping[int, Fraction], L: int,
                  available: Sequence[int], rows: int | None = None, S: int = 0) -> StepPlan:
    avail = tuple(sorted(set(int(a) for a in available)))
    sp = {n: Fraction(speeds[n]) for n in avail}
    lp = L + S
    sets: list[RowSet]
    if policy in ("heterogeneous", "heterogeneous-tw"):
        if rows is None:
            _, mu = ref_optimal_load(sp, lp)
            sets = ref_filling(mu, lp, Fraction(1))
        else:
            k = ref_integer_rows(sp, lp, rows)
            sets = ref_filling(k, lp, rows)
    else:
        sets = ref_cyclic_sets(avail, lp, rows)
    denom = rows or 1
    load = {n: Fraction(0) for n in avail}
    for rs in sets:
        for n in rs.machines:
            load[n] += Fraction(rs.size) / denom
    time = max(load[n] / sp[n] for n in avail)
    return StepPlan(policy=policy, L=L, available=avail, speeds=tuple(sorted(sp.items())),
                    load=tuple(sorted(load.items())), time=time, sets=tuple(sets), rows=rows,
                    S=S)


# ---------------------------------------------------------------- comparisons


def assert_same_plan(got: StepPlan, want: StepPlan) -> None:
    assert got == want
    assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())
    assert str(got) == str(want)
    assert [type(v) for _, v in got.load] == [type(v) for _, v in want.load]
    assert type(got.time) is type(want.time)
    # sizes: Fraction in fractional plans, int in row plans (as the reference makes them)
    for g, w in zip(got.sets, want.sets):
        assert g.size == w.size and isinstance(g.size, Fraction) == isinstance(w.size, Fraction)
        assert g.machines == w.machines


@st.composite
def instances(draw: st.DrawFn, max_n: int = 40):
    n = draw(st.integers(1, max_n))
    pool = draw(st.lists(st.fractions(min_value=F(1, 4), max_value=8, max_denominator=4)
                         .filter(lambda f: f > 0), min_size=1, max_size=6))
    speeds = {i + 1: draw(st.sampled_from(pool)) for i in range(n)}  # ties are common
    avail = sorted(draw(st.lists(st.sampled_from(sorted(speeds)), min_size=1, unique=True)))
    L = draw(st.integers(1, len(avail)))
    S = draw(st.integers(0, len(avail) - L)) if draw(st.booleans()) else 0
    rows = draw(st.one_of(st.none(), st.integers(1, 60), st.integers(1, 10**6)))
    return speeds, avail, L, rows, S


@settings(max_examples=400, deadline=None)
@given(instances(), st.sampled_from(["heterogeneous", "cyclic", "heterogeneous-tw"]))
def test_fast_planner_equals_the_reference(inst, policy):
    speeds, avail, L, rows, S = inst
    got = make_plan(policy, speeds, L, avail, rows=rows, S=S)
    assert_same_plan(got, ref_make_plan(policy, speeds, L, avail, rows, S))


@settings(max_examples=300, deadline=None)
@given(instances())
def test_building_blocks_equal_the_reference(inst):
    speeds, avail, L, rows, _ = inst
    sp = {n: speeds[n] for n in avail}
    c, mu = optimal_load(sp, L)
    rc, rmu = ref_optimal_load(sp, L)
    assert c == rc and list(mu.items()) == list(rmu.items())  # same order too
    if rows is not None:
        assert list(integer_rows(sp, L, rows).items()) == \
            list(ref_integer_rows(sp, L, rows).items())
    assert filling(mu, L, F(1)) == ref_filling(rmu, L, F(1))
    assert cyclic_sets(avail, L, rows) == ref_cyclic_sets(avail, L, rows)


@st.composite
def valid_loads(draw: st.DrawFn):
    """Loads that some assignment realises: sums of random sets of L machines."""
    n = draw(st.integers(1, 30))
    L = draw(st.integers(1, n))
    integral = draw(st.booleans())
    m: dict[int, Number] = {i + 1: (0 if integral else F(0)) for i in range(n)}
    total: Number = 0 if integral else F(0)
    for _ in range(draw(st.integers(1, 12))):
        size: Number = draw(st.integers(1, 5)) if integral else \
            draw(st.fractions(min_value=F(1, 6), max_value=2, max_denominator=6))
        for i in draw(st.permutations(sorted(m)))[:L]:
            m[i] += size
        total += size
    return m, L, total


@settings(max_examples=400, deadline=None)
@given(valid_loads())
def test_filling_equals_the_reference_on_any_valid_loads(inst):
    m, L, total = inst
    got = filling(m, L, total)
    want = ref_filling(m, L, total)
    assert got == want
    assert [type(rs.size) for rs in got] == [type(rs.size) for rs in want]


@pytest.mark.parametrize("kind", ["wide", "narrow", "equal"])
@pytest.mark.parametrize("rows", [None, 997, 10**6])
def test_medium_instances_equal_the_reference(kind, rows):
    rng = random.Random(hash((kind, rows)) & 0xFFFF)
    n = 160
    if kind == "wide":
        speeds = {i + 1: F(rng.randint(1, 40), rng.randint(1, 8)) for i in range(n)}
    elif kind == "narrow":
        speeds = {i + 1: F(rng.randint(100, 130), 100) for i in range(n)}
    else:
        speeds = {i + 1: F(3, 2) for i in range(n)}
    avail = sorted(rng.sample(sorted(speeds), 90))
    for L, S in [(1, 0), (30, 0), (30, 4), (89, 1), (90, 0)]:
        for policy in ("heterogeneous", "cyclic"):
            got = make_plan(policy, speeds, L, avail, rows=rows, S=S)
            assert_same_plan(got, ref_make_plan(policy, speeds, L, avail, rows, S))


def test_huge_rows_use_the_exact_greedy():
    speeds = {1: F(1, 3), 2: F(2, 3), 3: F(1), 4: F(7, 5), 5: F(1, 3)}
    rows = 2**60 + 7
    assert integer_rows(speeds, 2, rows) == ref_integer_rows(speeds, 2, rows)


def test_large_plan_is_consistent():
    """N=10000 (5000 available): only checks that the fast planner's plan is valid."""
    rng = random.Random(1)
    speeds = {i + 1: F(rng.randint(1, 40), rng.randint(1, 8)) for i in range(10000)}
    avail = sorted(rng.sample(sorted(speeds), 5000))
    plan = make_plan("heterogeneous", speeds, 3000, avail, rows=30000)
    count = dict.fromkeys(avail, 0)
    for rs in plan.sets:
        assert len(rs.machines) == 3000
        for n in rs.machines:
            count[n] += int(rs.size)
    assert count == plan.row_counts()
    assert sum(rs.size for rs in plan.sets) == 30000
    _, mu = optimal_load({n: speeds[n] for n in avail}, 3000)
    assert all(abs(count[n] - mu[n] * 30000) < 1 + 40 * 8 for n in avail)


# ---------------------------------------------------------------- stragglers (S)


def test_s_zero_output_is_unchanged_and_s_is_recorded():
    speeds = {1: F(1), 2: F(1), 3: F(3, 2), 4: F(3, 2), 5: F(2), 6: F(2)}
    plain = make_plan("heterogeneous", speeds, 3, [1, 2, 3, 5, 6], rows=420)
    assert plain == make_plan("heterogeneous", speeds, 3, [1, 2, 3, 5, 6], rows=420, S=0)
    assert "S" not in plain.to_dict() and "S=" not in str(plain)
    plan = make_plan("heterogeneous", speeds, 3, [1, 2, 3, 5, 6], rows=420, S=1)
    d = plan.to_dict()
    assert list(d)[:3] == ["policy", "L", "S"] and d["S"] == 1 and plan.S == 1
    assert str(plan).startswith("heterogeneous plan, L=3, S=1, available=[1, 2, 3, 5, 6]")
    assert all(len(s["machines"]) == 4 for s in d["sets"])
    # the loads solve the problem with L + S = 4: all 4/5 ... and time is when all copies end
    c, mu = optimal_load({n: speeds[n] for n in [1, 2, 3, 5, 6]}, 4)
    assert sum(plan.row_counts().values()) == 4 * 420
    assert plan.time >= c and plan.time == max(F(k, 420) / speeds[n]
                                               for n, k in plan.row_counts().items())
    assert dict(make_plan("heterogeneous", speeds, 3, [1, 2, 3, 5, 6], S=1).load) == mu
    cyc = make_plan("cyclic", speeds, 3, [1, 2, 3, 5, 6], S=2)
    assert [rs.machines for rs in cyc.sets][:2] == [(1, 2, 3, 5, 6), (1, 2, 3, 5, 6)]
    assert set(dict(cyc.load).values()) == {F(1)}


@pytest.mark.parametrize("S,avail,msg", [
    (-1, [1, 2, 3], "S: stragglers tolerated must be >= 0"),
    (1, [1, 2], "S: L + S must be <= the number of available machines (2)"),
    (3, [1, 2, 3, 4], "S: L + S must be <= the number of available machines (4)"),
])
def test_bad_s(S, avail, msg):
    speeds = {1: F(1), 2: F(2), 3: F(3), 4: F(4)}
    with pytest.raises(ConfigError) as e:
        make_plan("heterogeneous", speeds, 2, avail, S=S)
    assert str(e.value).startswith(msg)
