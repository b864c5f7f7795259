"""Scheme lt through the pure functions the MPI runtime calls (docs/theory.md (B.5)),
replayed for real."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from conftest import ROOT
from mpi_coded.analysis.loads import unified_load
from mpi_coded.coded.code import Code, build_code
from mpi_coded.coded.mapend import map_end, map_phase_done
from mpi_coded.coded.placement import build_placement, server_rows
from mpi_coded.coded.replay import ReplayError, random_instance, replay, replay_order
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.coded.schemes.lt import lt_seed, scheme_code
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.codes import lt
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.fields import get_field

TOL = {"gf2^8": 0.0, "gf2^16": 0.0, "float64": 1e-8}


def lt_params(K=6, q=4, mu="1/2", eta=10, N=8, field="gf2^8", **kw):
    return coded_params("lt", K, q, mu, rows_per_batch=eta, n=3, N=N, field=field, **kw)


def orders(K, count, seed):
    """``count`` distinct finishing orders: some fixed, the rest random permutations."""
    rng = np.random.default_rng(seed)
    out = [list(range(K)), list(range(K - 1, -1, -1))]
    while len(out) < count:
        out.append(rng.permutation(K).tolist())
    return out


def held_rows(pl, batches):
    return {r for b in batches for r in pl.batch_rows[b]}


# --- parameters and validation ---------------------------------------------------------------


def test_sizes_follow_the_unified_layout():
    p = lt_params(eta=40, N=12)
    assert (p.m, p.r, p.n_batches, p.wait_for, p.replication, p.partitions) == \
        (400, 600, 15, 4, 2, 1)
    assert p.mu_eff == Fraction(1, 2)
    assert p.field_name == "gf2^8"  # auto: LT has no MDS length limit
    # r = 600 > 256 is fine over gf2^8 for lt, not for the unified MDS code
    assert lt_params(eta=40, N=12, field="gf2^8").r == 600
    with pytest.raises(ConfigError, match="length <= 256"):
        coded_params("unified", 6, 4, "1/2", 40, n=3, N=12, field="gf2^8")


@pytest.mark.parametrize("kw,field,needle", [
    (dict(q=6, N=12), "q", "scheme lt needs q < K"),
    (dict(T=2), "T", "only to scheme bdc"),
    (dict(N=6), "N", "must divide N"),
    (dict(field="gf2^4"), "field", "must be one of"),
    (dict(K=20, q=10, mu="1/2", eta=100, N=10), "rows_per_batch", "must be <= 1000000"),
])
def test_lt_validation(kw, field, needle):
    with pytest.raises(ConfigError) as exc:
        lt_params(**kw)
    assert exc.value.field == field and needle in exc.value.rule


def test_rows_per_batch_must_give_a_decodable_code():
    # K=3, q=2, mu q=1: r = 3 eta, m = 2 eta.  eta = 4 draws a code whose 12 rows miss rank.
    with pytest.raises(ConfigError) as exc:
        lt_params(K=3, q=2, mu="1/2", eta=4, N=2)
    assert exc.value.field == "rows_per_batch" and "do not determine the m = 8" in exc.value.rule
    seed = int(exc.value.rule.split("(seed ")[1].split(")")[0])
    assert not lt.lt_code(8, 12, "gf2^8", seed=seed).decodable(np.arange(12))  # the rule's truth
    p = lt_params(K=3, q=2, mu="1/2", eta=5, N=2)
    assert scheme_code(p).decodable(np.arange(p.r))


def test_analytic_load_is_the_unified_formula():
    lt_scheme = get_scheme("lt")
    assert lt_scheme.load(6, 4, "1/2").load == Fraction(7, 20)
    assert get_scheme("lt").load(6, 5, "4/5") == unified_load(6, 5, "4/5")


# --- the code: seeded from the params, Code interface ----------------------------------------


def _digest(code):
    h = hashlib.sha256()
    for a in (code.indptr, code.indices, code.coeffs):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def test_every_process_builds_the_same_code():
    p = lt_params(eta=40, N=12)
    here = _digest(scheme_code(p))
    prog = ("from mpi_coded.coded.schemes import coded_params\n"
            "from mpi_coded.coded.code import build_code\n"
            "import hashlib, numpy as np\n"
            "c = build_code(coded_params('lt', 6, 4, '1/2', 40, n=7, N=12)).lt\n"
            "h = hashlib.sha256()\n"
            "for a in (c.indptr, c.indices, c.coeffs):\n"
            "    h.update(np.ascontiguousarray(a).tobytes())\n"
            "print(h.hexdigest())\n")
    for hashseed in ("1", "2"):
        r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                           cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": hashseed}, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == here
    # n and N do not change the code; anything that fixes Psi does
    assert _digest(scheme_code(lt_params(eta=40, N=12))) == here
    assert lt_seed(lt_params(eta=40, N=12)) != lt_seed(lt_params(eta=20, N=12))
    assert lt_seed(lt_params(eta=40, N=12)) != lt_seed(lt_params(eta=40, N=12, field="float64"))


@pytest.mark.parametrize("field", ["gf2^8", "gf2^16", "float64"])
def test_build_code_encodes_and_decodes(field):
    p = lt_params(eta=10, N=8, field=field)
    F = get_field(field)
    code = build_code(p, F)
    assert isinstance(code, Code)  # what the runtime's Setup holds
    rng = np.random.default_rng(1)
    A, X = F.random((p.m, 5), rng), F.random((5, 3), rng)
    rows = [7, 0, 149, 42]
    psi = code.psi()
    assert psi.shape == (p.r, p.m)
    assert np.count_nonzero(psi, axis=1).tolist() == scheme_code(p).degrees.tolist()
    C = code.encode(A)
    got = code.encode(A, rows)
    assert F.max_error(got, F.matmul(psi[rows], A)) <= TOL[field]
    assert F.max_error(C, F.matmul(psi, A)) <= TOL[field]
    all_rows = list(range(p.r))
    y = code.decode(all_rows, F.matmul(C, X))
    assert F.max_error(y, F.matmul(A, X)) <= TOL[field]
    one = list(build_placement(p).stored_rows(0))  # mu m = 50 < m = 100 rows
    with pytest.raises(NotDecodable):
        code.decode(one, F.matmul(C[one], X))


def test_build_code_needs_the_params_field():
    with pytest.raises(ConfigError) as exc:
        build_code(lt_params(field="gf2^8"), get_field("float64"))
    assert exc.value.field == "field"


# --- map end -----------------------------------------------------------------------------------


@pytest.mark.parametrize("K,q,mu,eta,field", [
    (6, 4, "1/2", 10, "gf2^8"),
    (4, 2, "1/2", 15, "float64"),  # mu q = 1: two servers hold exactly m rows
    (5, 3, "1/3", 40, "gf2^8"),
])
def test_map_end_is_the_first_decodable_prefix(K, q, mu, eta, field):
    p = lt_params(K=K, q=q, mu=mu, eta=eta, N=q, field=field)
    pl = build_placement(p)
    code = scheme_code(p)
    rows_of = [server_rows(K, p.replication, eta, s) for s in range(K)]
    assert [list(pl.stored_rows(s)) for s in range(K)] == [r.tolist() for r in rows_of]
    extras = 0
    for order in orders(K, 12, seed=K):
        g = lt.finishers_needed(code, rows_of, order, at_least=q)  # independent reference
        end = map_end(pl, order)
        assert end.Q == tuple(order[:q]) and end.finishers == tuple(order[:g])
        assert map_phase_done(pl, order[:g])
        assert not map_phase_done(pl, order[:g - 1])
        extras += bool(end.extra)
    if (K, q) == (4, 2):
        assert extras == 12  # no two servers of this code decode: every order needs an extra
    if (K, q) == (6, 4):
        assert extras == 0  # any four servers hold 140 rows for m = 100
    if (K, q) == (4, 2):
        with pytest.raises(ConfigError, match="to decode the LT code"):
            map_end(pl, [0, 1])


# --- shuffle plan --------------------------------------------------------------------------------


@pytest.mark.parametrize("K,q,mu,eta,N,field", [
    (6, 4, "1/2", 20, 12, "gf2^8"),
    (6, 4, "1/2", 10, 8, "float64"),
    (4, 2, "1/2", 15, 4, "float64"),
    (6, 5, "4/5", 4, 30, "gf2^8"),  # strategy 2
])
def test_plan_multicasts_as_unified_then_shortest_decodable_unicasts(K, q, mu, eta, N, field):
    p = lt_params(K=K, q=q, mu=mu, eta=eta, N=N, field=field)
    pl = build_placement(p)
    code = scheme_code(p)
    uni = build_placement(coded_params("unified", K, q, mu, eta, n=3, N=N, field="float64"))
    w = N // q
    grew = 0
    for order in orders(K, 4, seed=eta):
        end = map_end(pl, order)
        plan = shuffle_plan(pl, end)
        ref = shuffle_plan(uni, end.Q)
        assert plan.multicasts == ref.multicasts and plan.strategy == ref.strategy
        assert ref.padding == 0 and ref.load == get_scheme("lt").load(K, q, mu).load
        assert plan.load >= ref.load
        held = held_rows(pl, {b for s in end.finishers for b in pl.server_batches[s]})
        overhead = 0
        for red in plan.reducers:
            R = held_rows(pl, set(red.stored_batches) | set(red.multicast_batches))
            u = list(red.unicast_rows)
            assert set(red.decode_rows) == R | set(u) and len(u) == len(set(u))
            assert not set(u) & R and set(u) <= held
            assert code.decodable(list(red.decode_rows))
            if u:  # the shortest prefix: one row fewer does not decode
                assert not code.decodable(sorted(R | set(u[:-1])))
                assert len(u) >= p.m - len(R)
                overhead += len(u) - max(p.m - len(R), 0)
            else:
                assert code.decodable(sorted(R))
        assert plan.unicast_values == w * sum(len(r.unicast_rows) for r in plan.reducers)
        assert plan.unicast_values - ref.unicast_values == w * overhead
        for uc in plan.unicasts:
            assert uc.sender in end.finishers and uc.receiver in end.Q
        grew += overhead > 0
    if (K, q, eta) == (6, 4, 20):
        assert grew > 0  # the LT overhead shows as extra unicasts


def test_bare_q_that_does_not_decode_is_refused():
    pl = build_placement(lt_params(K=4, q=2, mu="1/2", eta=15, N=4, field="float64"))
    with pytest.raises(ConfigError) as exc:
        shuffle_plan(pl, [0, 1])
    assert exc.value.field == "Q"


# --- replay: real arithmetic, several orders and seeds ------------------------------------------


@pytest.mark.parametrize("K,q,mu,eta,N,field", [
    (6, 4, "1/2", 10, 8, "gf2^8"),
    (6, 4, "1/2", 10, 8, "float64"),
    (5, 3, "2/3", 6, 6, "gf2^16"),
    (4, 2, "1/2", 15, 4, "float64"),  # extras every time
    (6, 5, "4/5", 4, 10, "gf2^8"),  # strategy 2
])
def test_replay_every_reducer_decodes(K, q, mu, eta, N, field):
    p = lt_params(K=K, q=q, mu=mu, eta=eta, N=N, field=field)
    pl = build_placement(p)
    F = get_field(field)
    extra_sends = 0
    for i, order in enumerate(orders(K, 6, seed=100 + K)):
        res = replay_order(pl, order, F, seed=i)
        assert res.max_error <= TOL[field], (order, res.max_error)
        assert sorted(res.decoded) == sorted(res.plan.Q) and len(res.plan.Q) == q
        assert res.multicast_values == res.plan.multicast_values
        assert res.unicast_values == res.plan.unicast_values
        extra_sends += sum(u.size for u in res.plan.unicasts if u.sender in res.plan.extra)
    if (K, q) == (4, 2):
        assert extra_sends > 0  # extras send, and reducers need what they send


def replay_instance():
    """A K = 6 lt job over GF(2^8), its data, and the map end of one finishing order."""
    pl = build_placement(lt_params(eta=40, N=12))
    F = get_field("gf2^8")
    A, X = random_instance(pl, F, 5)
    return pl, F, A, X, map_end(pl, [2, 0, 5, 3, 1, 4])


def test_replay_detects_a_short_lt_plan():
    pl, F, A, X, end = replay_instance()
    plan = shuffle_plan(pl, end)
    assert replay(pl, plan, F, A, X).max_error == 0
    # a unicast dropped: the reducer lacks values it was to decode from
    with pytest.raises(ReplayError):
        replay(pl, dataclasses.replace(plan, unicasts=plan.unicasts[1:]), F, A, X)
    # a reducer told to decode from rows that miss rank: NotDecodable, never a wrong answer
    red = next(r for r in plan.reducers if r.unicast_rows)
    fewer = tuple(x for x in red.decode_rows if x != red.unicast_rows[-1])
    bad = dataclasses.replace(red, decode_rows=fewer)
    reducers = tuple(bad if r is red else r for r in plan.reducers)
    with pytest.raises(NotDecodable):
        replay(pl, dataclasses.replace(plan, reducers=reducers), F, A, X)


def test_all_q_sets_of_a_small_code():
    # every 4-subset as Q: each plan decodes and never sends less than the unified load
    p = lt_params(eta=5, N=4)
    pl = build_placement(p)
    F = get_field("gf2^8")
    for i, Qs in enumerate(itertools.combinations(range(6), 4)):
        order = list(Qs) + [s for s in range(6) if s not in Qs]
        res = replay_order(pl, order, F, seed=i)
        assert res.max_error == 0
        assert res.plan.load >= Fraction(7, 20)


@pytest.mark.parametrize("field", ["gf2^8", "float64"])
def test_unicast_count_is_the_shortest_decoding_run(field):
    # against a linear scan of the same prefixes: known rows alone, too few of them, the
    # candidates in shuffled order, and candidates that do not suffice
    from mpi_coded.coded.schemes.lt import unicast_count

    p = lt_params(K=6, q=4, mu="1/2", eta=10, field=field)
    code = scheme_code(p)
    rng = np.random.default_rng(11)
    seen = set()
    for _ in range(12):
        perm = [int(x) for x in rng.permutation(code.r)]
        k = int(rng.integers(0, code.m + 20))
        known, cand = perm[:k], perm[k:]
        first = next((n for n in range(len(cand) + 1)
                      if k + n >= code.m and code.decodable(known + cand[:n])), None)
        assert first is not None
        assert unicast_count(p, known, cand) == first
        seen.add("zero" if first == 0 else "some")
    assert seen == {"zero", "some"}
    with pytest.raises(ConfigError, match="do not decode"):
        unicast_count(p, [], list(range(code.m - 1)))
    with pytest.raises(ConfigError, match="do not decode"):
        unicast_count(p, [], [])


# --- the master's search carried by MAP_END (MapEnd.unicast_rows) ---------------------------


@pytest.mark.parametrize("field", ["gf2^8", "float64"])
def test_settled_end_gives_the_same_plan_without_a_search(field, monkeypatch):
    # the counts the master finds once give every finisher the plan it would have found,
    # and a plan built from them runs no decodability search at all
    from mpi_coded.coded import shuffle
    from mpi_coded.coded.schemes import lt as lt_scheme

    p = lt_params(K=6, q=4, mu="1/2", eta=10, N=8, field=field)
    pl = build_placement(p)
    settled = []
    for order in orders(6, 6, seed=5):
        end = map_end(pl, order)
        s = shuffle.settled_end(pl, end)
        assert (s.Q, s.extra) == (end.Q, end.extra) and len(s.unicast_rows) == len(end.Q)
        settled.append((s, shuffle.shuffle_plan(pl, end)))
    assert any(sum(s.unicast_rows) > 0 for s, _ in settled)
    monkeypatch.setattr(lt_scheme, "unicast_count",
                        lambda *a: pytest.fail("a settled end must not search"))
    for s, searched in settled:
        assert shuffle.settled_end(pl, s) is s
        plan = shuffle.shuffle_plan(pl, s)
        assert plan == searched
        assert tuple(len(r.unicast_rows) for r in plan.reducers) == s.unicast_rows


def test_settled_counts_are_the_ones_used():
    # one count short: the plan follows it and the reducer cannot decode (never a guess);
    # too many, or the wrong number of counts: the argument is named
    from mpi_coded.coded.shuffle import settled_end

    pl, F, A, X, end = replay_instance()
    end = settled_end(pl, end)
    assert replay(pl, shuffle_plan(pl, end), F, A, X).max_error == 0
    i = next(i for i, c in enumerate(end.unicast_rows) if c > 0)
    short = list(end.unicast_rows)
    short[i] -= 1
    with pytest.raises(NotDecodable):
        replay(pl, shuffle_plan(pl, dataclasses.replace(end, unicast_rows=tuple(short))),
               F, A, X)
    for bad in ((1,), tuple(-1 for _ in end.Q)):
        with pytest.raises(ConfigError, match="unicast_rows"):
            shuffle_plan(pl, dataclasses.replace(end, unicast_rows=bad))
    with pytest.raises(ConfigError, match="unicast_rows.*candidate rows"):
        shuffle_plan(pl, dataclasses.replace(end, unicast_rows=(10**6,) * len(end.Q)))


def test_schemes_without_a_search_settle_to_the_same_end():
    from mpi_coded.coded.shuffle import settled_end

    for name in ("uc", "cmr", "unified", "bdc"):
        spec = get_scheme(name)
        assert not spec.searches_unicasts
    assert get_scheme("lt").searches_unicasts
    p = coded_params("unified", 6, 4, "1/2", rows_per_batch=10, n=3, N=8, field="gf2^8")
    pl = build_placement(p)
    end = map_end(pl, [0, 1, 2, 3, 4, 5])
    assert settled_end(pl, end) is end
