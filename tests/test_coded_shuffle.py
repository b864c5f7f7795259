"""The shuffle plan (docs/theory.md (B.3)): structure and exact loads for every Q."""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.analysis.loads import unified_load
from mpi_coded.coded.mapend import MapEnd, map_end
from mpi_coded.coded.placement import Placement, build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.coded.shuffle import ShufflePlan, _flat_blocks, average_load, shuffle_plan
from mpi_coded.errors import ConfigError


def placement(scheme, K, q, mu, eta, N, T=1) -> Placement:
    return build_placement(coded_params(scheme, K, q, mu, rows_per_batch=eta, n=1, N=N, T=T))


def plan_for(pl: Placement, Q, strategy=None) -> ShufflePlan:
    rest = [s for s in range(pl.K) if s not in Q]
    return shuffle_plan(pl, map_end(pl, list(Q) + rest), strategy)


def check_structure(pl: Placement, plan: ShufflePlan) -> None:
    """Invariants any runtime relies on."""
    lab = pl.labels
    eta = pl.rows_per_batch
    fin = set(plan.Q + plan.extra)
    Qset = set(plan.Q)
    owner_out = {r.server: (r.out_start, r.out_stop) for r in plan.reducers}
    assert [r.server for r in plan.reducers] == list(plan.Q)
    w = plan.N // plan.q
    assert [owner_out[k] for k in plan.Q] == [(i * w, (i + 1) * w) for i in range(plan.q)]
    pieces: dict[tuple[int, tuple[int, ...]], list] = defaultdict(list)
    for mc in plan.multicasts:
        assert mc.sender in mc.group and set(mc.receivers) == set(mc.group) - {mc.sender}
        assert set(mc.group) <= Qset and len(mc.group) == mc.level + 1
        for seg, k in zip(mc.segments, mc.receivers):
            assert seg.owner == k
            assert seg.size == sum(b.size for b in seg.blocks) <= mc.length
            assert seg.index == sorted(set(mc.group) - {k}).index(mc.sender)
            for b in seg.blocks:
                assert mc.sender in lab[b.batch]  # sender stores what it sums
                assert k not in lab[b.batch]  # receiver lacks its own segment
                assert set(lab[b.batch]) & Qset == set(mc.group) - {k}
                assert owner_out[k][0] <= b.out_start < b.out_stop <= owner_out[k][1]
                for other in mc.receivers:  # every other receiver can cancel it
                    if other != k:
                        assert other in lab[b.batch]
            pieces[(k, mc.group)].append((seg.index, seg.size, mc.length))
    for segs in pieces.values():  # segments of V_k: j of them, padded to one L
        segs.sort()
        j = len(segs)
        L = segs[0][2]
        v = sum(s[1] for s in segs)
        assert [s[0] for s in segs] == list(range(j)) and L == math.ceil(v / j)
        assert all(s[1] == min(L, max(0, v - i * L)) for i, s in enumerate(segs))
    for uc in plan.unicasts:
        assert uc.sender in fin and uc.receiver in Qset and uc.sender != uc.receiver
        for b in uc.blocks:
            assert uc.sender in lab[b.batch] and uc.receiver not in lab[b.batch]
            assert 0 <= b.row_start < b.row_stop <= eta
    lay = pl.layout
    for red in plan.reducers:
        counts = np.bincount(lay.row_partition[list(red.decode_rows)], minlength=lay.T)
        assert (counts == lay.k).all()
        known = {r for b in red.stored_batches + red.multicast_batches for r in pl.batch_rows[b]}
        assert set(red.decode_rows) <= known | set(red.unicast_rows)
    assert plan.multicast_values == sum(mc.length for mc in plan.multicasts)
    assert plan.unicast_values == sum(u.size for u in plan.unicasts)
    n_mc = n_uc = 0
    for s in range(pl.K):
        mcs, ucs = plan.sends(s)
        n_mc, n_uc = n_mc + len(mcs), n_uc + len(ucs)
        assert not mcs or s in Qset
        rmc, ruc = plan.receives(s)
        assert (rmc == [] and ruc == []) or s in Qset
    assert (n_mc, n_uc) == (len(plan.multicasts), len(plan.unicasts))
    assert plan.wire_bytes(2) == 2 * plan.values
    json.dumps(plan.to_dict())


def test_spec_example_every_q():
    pl = placement("unified", 6, 4, "1/2", 2, 8)
    for Q in itertools.permutations(range(6), 4):
        plan = plan_for(pl, Q)
        assert plan.load == Fraction(7, 20)
        assert plan.multicast_load == Fraction(3, 20) and plan.unicast_load == Fraction(1, 5)
        assert plan.s_q == 2 and plan.strategy == 1 and plan.levels == (2,)
        assert plan.padding == 0
    check_structure(pl, plan)
    assert len(plan.multicasts) == math.comb(4, 3) * 3


def test_paper_setting_sampled_q():
    pl = placement("unified", 9, 6, "1/3", 2, 12)
    rng = np.random.default_rng(7)
    for _ in range(15):
        Q = rng.permutation(9)[:6].tolist()
        plan = plan_for(pl, Q)
        assert plan.load == Fraction(11, 24)
        # C(6, 3) groups x 3 senders x |V_k|/2, |V_k| = C(3, 0) eta_b w = 4
        assert plan.level_values() == {2: 20 * 3 * 2}
    check_structure(pl, plan)


def test_strategy_two_every_q():
    # K=6, q=5, mu=4/5: strategy 2 (multicast level 3 as well) is cheaper
    pl = placement("unified", 6, 5, "4/5", 2, 30)
    for Q in itertools.combinations(range(6), 5):
        plan = plan_for(pl, Q)
        assert plan.strategy == 2 and plan.levels == (4, 3)
        assert plan.unicast_values == 0 and plan.padding == 0
        assert plan.load == Fraction(19, 150) == unified_load(6, 5, "4/5").load
        forced = plan_for(pl, Q, strategy=1)
        assert forced.load == Fraction(7, 50) > plan.load
    check_structure(pl, plan)
    check_structure(pl, forced)


@pytest.mark.parametrize("scheme,K,q,mu,eta,N", [
    ("sc", 6, 4, "1/2", 2, 8),
    ("uc", 5, 3, "2/3", 2, 10),
    ("cmr", 5, 3, "2/3", 1, 10),
    ("cmr", 6, 4, "3/4", 1, 18),
    ("unified", 7, 4, "3/4", 3, 4),
])
def test_baselines_every_q(scheme, K, q, mu, eta, N):
    pl = placement(scheme, K, q, mu, eta, N)
    want = get_scheme(scheme).load(K, q, mu).load
    if scheme in ("sc", "unified"):
        orders = list(itertools.permutations(range(K), pl.params.wait_for))
    else:
        orders = [tuple(range(K)), tuple(reversed(range(K))), (2, 4, 0, 1, 3) + tuple(range(5, K))]
    for i, Q in enumerate(orders):
        plan = plan_for(pl, Q)
        assert plan.load == want
        if i % 97 == 0:
            check_structure(pl, plan)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.data())
def test_any_model_any_q(K, data):
    q = data.draw(st.integers(1, K))
    mq = data.draw(st.integers(1, q))
    scheme = data.draw(st.sampled_from(["uc", "cmr", "sc", "unified"]))
    mu = Fraction(mq, q)
    q_eff = K if scheme in ("uc", "cmr") else q
    p = 1 if scheme in ("uc", "sc") else mq
    eta = K // math.gcd(K, math.comb(K, p) * q_eff)  # smallest eta_b with integral m
    w = math.lcm(*range(1, p + 1))  # every level j divides |V_k|: no padding
    p0 = coded_params(scheme, K, q, mu, rows_per_batch=eta, n=1, N=q_eff * w)
    pl = build_placement(p0)
    order = data.draw(st.permutations(range(K)))
    plan = shuffle_plan(pl, map_end(pl, order))
    assert plan.padding == 0
    assert plan.load == get_scheme(scheme).load(K, q, mu).load


def test_padding_rule():
    # N=5: w=1, |V_k| = 2 values at levels 4 and 3 -> segments of 1 value, some empty
    pl = placement("unified", 6, 5, "4/5", 2, 5)
    plan = plan_for(pl, (0, 1, 2, 3, 4))
    check_structure(pl, plan)
    assert plan.padding == Fraction(55, 6)
    assert plan.load == unified_load(6, 5, "4/5").load + plan.padding / (plan.m * plan.N)
    assert {mc.length for mc in plan.multicasts} == {1}
    assert any(seg.size == 0 for mc in plan.multicasts for seg in mc.segments)


def test_flat_blocks_cover_slices():
    batches = [3, 7]
    eta, w = 3, 4
    flat = [(b, r, c) for b in batches for r in range(eta) for c in range(w)]
    for a in range(len(flat) + 1):
        for z in range(a, len(flat) + 1):
            got = [(bl.batch, r, c - 10) for bl in _flat_blocks(batches, eta, 10, w, a, z)
                   for r in range(bl.row_start, bl.row_stop)
                   for c in range(bl.out_start, bl.out_stop)]
            assert got == flat[a:z]


def test_bdc_divisible_matches_unified():
    # T | eta_b: P is constant and each partition behaves like the unified code
    pl = placement("bdc", 6, 4, "1/2", 2, 8, T=2)
    for Q in itertools.combinations(range(6), 4):
        plan = plan_for(pl, Q)
        assert plan.load == Fraction(7, 20)
    check_structure(pl, plan)


def test_bdc_large_t():
    pl = placement("bdc", 6, 4, "1/2", 2, 8, T=10)
    loads = set()
    for Q in itertools.combinations(range(6), 4):
        plan = plan_for(pl, Q)
        one, two = plan_for(pl, Q, 1), plan_for(pl, Q, 2)
        assert plan.values == min(one.values, two.values)
        assert one.multicast_load == Fraction(3, 20)  # multicast phase independent of T
        assert plan.load >= Fraction(7, 20)
        check_structure(pl, plan)
        loads.add(plan.load)
    assert len(loads) > 1  # the unicast phase depends on Q
    assert average_load(pl) == Fraction(241, 600)
    assert average_load(placement("bdc", 6, 4, "1/2", 2, 8, T=5)) == Fraction(73, 200)


def test_bdc_with_extra_senders():
    pl = placement("bdc", 6, 2, "1/2", 1, 2, T=2)
    plan = shuffle_plan(pl, map_end(pl, [0, 2, 4, 3, 1, 5]))
    assert plan.extra == (4, 3)
    check_structure(pl, plan)
    assert {u.sender for u in plan.unicasts} <= {3}  # partition 1 only at server 3
    assert plan.load == Fraction(1, 2)
    with pytest.raises(ConfigError) as exc:
        shuffle_plan(pl, (0, 2))  # no extras: partition 1 cannot be covered
    assert exc.value.field == "Q"


def test_bad_q():
    pl = placement("unified", 6, 4, "1/2", 2, 8)
    for bad in [(0, 1, 2), (0, 1, 2, 2), (0, 1, 2, 6)]:
        with pytest.raises(ConfigError):
            shuffle_plan(pl, bad)
    with pytest.raises(ConfigError):
        shuffle_plan(pl, MapEnd((0, 1, 2, 3), (3,)))
    with pytest.raises(ConfigError):
        shuffle_plan(pl, (0, 1, 2, 3), strategy=3)


def test_describe():
    pl = placement("unified", 6, 4, "1/2", 2, 8)
    text = plan_for(pl, (3, 1, 0, 5)).describe(detail=True)
    assert "multicast j=2 S=[0, 1, 3] 0 -> [1, 3]: 2 values" in text
    assert "load 7/20" in text
