"""Replay every plan with real field arithmetic and check every reducer decodes A x."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest

from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.replay import ReplayError, random_instance, replay, replay_order
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.errors import NotDecodable
from mpi_coded.fields import get_field

TOL = {"gf2^8": 0.0, "float64": 1e-8}


def orders(K, q, limit=None):
    """Every q-subset as Q (rest ascending), plus a few reordered ones."""
    out = [list(Q) + [s for s in range(K) if s not in Q]
           for Q in itertools.combinations(range(K), q)]
    rng = np.random.default_rng(K * 100 + q)
    out += [rng.permutation(K).tolist() for _ in range(3)]
    return out if limit is None else out[:limit]


def run_all(scheme, K, q, mu, eta, N, field, T=1, limit=None):
    p = coded_params(scheme, K, q, mu, rows_per_batch=eta, n=3, N=N, T=T, field=field)
    pl = build_placement(p)
    f = get_field(field)
    extras = 0
    loads = set()
    for i, order in enumerate(orders(K, p.wait_for, limit)):
        res = replay_order(pl, order, f, seed=i)
        assert res.max_error <= TOL[field], (order, res.max_error)
        assert res.multicast_values == res.plan.multicast_values
        assert res.unicast_values == res.plan.unicast_values
        assert sorted(res.decoded) == sorted(res.plan.Q)
        extras += bool(res.plan.extra)
        loads.add(res.plan.load)
    return extras, loads


@pytest.mark.parametrize("field", ["gf2^8", "float64"])
@pytest.mark.parametrize("scheme,K,q,mu,eta,N", [
    ("unified", 4, 3, "1/3", 1, 3),  # (4, 3) code
    ("unified", 5, 3, "2/3", 1, 6),  # (10, 6) code
    ("sc", 5, 3, "1/3", 2, 3),
    ("uc", 4, 2, "1/2", 1, 4),
    ("cmr", 4, 2, "1", 1, 8),
    ("bdc", 6, 4, "1/2", 2, 8, ),  # T below, divides eta_b
])
def test_replay_small_every_q(scheme, K, q, mu, eta, N, field):
    T = 2 if scheme == "bdc" else 1
    run_all(scheme, K, q, mu, eta, N, field, T=T)


def test_replay_spec_example_and_strategy_two_gf():
    run_all("unified", 6, 4, "1/2", 2, 8, "gf2^8")
    run_all("unified", 6, 5, "4/5", 2, 30, "gf2^8")  # strategy 2, no unicasts
    run_all("unified", 6, 5, "4/5", 2, 5, "gf2^8")  # padded segments


def test_replay_paper_setting_sampled():
    run_all("unified", 9, 6, "1/3", 1, 6, "gf2^8", limit=6)
    run_all("bdc", 9, 6, "1/3", 1, 6, "gf2^8", T=12, limit=6)


def test_replay_bdc_uneven():
    # T > eta_b: uneven P, unicasts beyond the unified scheme
    for args, T in [(("gf2^8",), 10), (("float64",), 5)]:
        _, loads = run_all("bdc", 6, 4, "1/2", 2, 8, *args, T=T)
        assert max(loads) > Fraction(7, 20)  # more unicasts than the unified scheme
    _, loads = run_all("bdc", 4, 2, "1", 2, 4, "gf2^8", T=6)
    assert len(loads) > 1


def test_replay_bdc_extra_servers():
    p = coded_params("bdc", 6, 2, "1/2", rows_per_batch=1, n=3, N=4, T=2, field="gf2^8")
    pl = build_placement(p)
    f = get_field("gf2^8")
    seen_extra = 0
    for Q in itertools.permutations(range(6), 2):
        for tail in ([s for s in range(6) if s not in Q], [s for s in range(5, -1, -1)
                                                            if s not in Q]):
            res = replay_order(pl, list(Q) + tail, f)
            assert res.max_error == 0
            seen_extra += bool(res.plan.extra)
            for u in res.plan.unicasts:
                assert u.sender in res.plan.Q + res.plan.extra
    assert seen_extra > 0


def test_replay_detects_broken_plans():
    p = coded_params("unified", 6, 4, "1/2", rows_per_batch=2, n=3, N=8, field="gf2^8")
    pl = build_placement(p)
    f = get_field("gf2^8")
    A, X = random_instance(pl, f, 3)
    plan = shuffle_plan(pl, map_end(pl, [0, 1, 2, 3, 4, 5]))
    assert replay(pl, plan, f, A, X).max_error == 0
    # a missing unicast leaves a reducer short
    short = dataclasses.replace(plan, unicasts=plan.unicasts[1:])
    with pytest.raises((ReplayError, NotDecodable)):
        replay(pl, short, f, A, X)
    # a sender that does not store the batch it sends
    u = plan.unicasts[0]
    wrong = dataclasses.replace(u, sender=u.receiver)
    with pytest.raises(ReplayError):
        replay(pl, dataclasses.replace(plan, unicasts=(wrong,) + plan.unicasts[1:]), f, A, X)
    # segments swapped between receivers decode to wrong values
    mc = plan.multicasts[0]
    swapped = dataclasses.replace(mc, segments=mc.segments[::-1])
    with pytest.raises(ReplayError):
        replay(pl, dataclasses.replace(plan, multicasts=(swapped,) + plan.multicasts[1:]),
               f, A, X)
    # a segment block that another receiver cannot cancel
    seg = mc.segments[0]
    blk = seg.blocks[0]
    other = next(b for b in pl.server_batches[mc.sender] if mc.receivers[1] not in pl.labels[b])
    bad_seg = dataclasses.replace(seg, blocks=(dataclasses.replace(blk, batch=other),))
    bad_mc = dataclasses.replace(mc, segments=(bad_seg,) + mc.segments[1:])
    with pytest.raises(ReplayError):
        replay(pl, dataclasses.replace(plan, multicasts=(bad_mc,) + plan.multicasts[1:]),
               f, A, X)
