"""The scheme objects and their registry: every scheme answers the same questions."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from mpi_coded.analysis.delay import DelayCosts
from mpi_coded.cli.coded import LOAD_SCHEMES
from mpi_coded.coded.code import PartitionCode
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.schemes import REGISTRY, SCHEMES, Scheme, coded_params, get, names
from mpi_coded.coded.schemes.bdc import BlockDiagonalLayout
from mpi_coded.coded.schemes.layout import BatchLayout
from mpi_coded.codes.cauchy import CauchyCode
from mpi_coded.errors import ConfigError
from mpi_coded.fields import get_field


def test_registry():
    assert SCHEMES == ("uc", "cmr", "sc", "unified", "bdc", "lt")
    for name, scheme in REGISTRY.items():
        assert isinstance(scheme, Scheme) and scheme.name == name and get(name) is scheme
        assert scheme.summary
    with pytest.raises(ConfigError) as exc:
        get("rs")
    assert exc.value.field == "scheme" and "uc, cmr, sc, unified, bdc, lt" in exc.value.rule
    assert names(closed_form_load=True) == LOAD_SCHEMES == ("uc", "cmr", "sc", "unified")
    assert names(takes_assignment=True) == names(partitioned=True) == ("bdc",)
    assert names(waits_for_all=True) == ("uc", "cmr")


def test_params_carry_their_scheme_and_sizes_once():
    p = coded_params("bdc", 6, 4, "1/2", 4, n=3, N=8, T=4)
    assert isinstance(p, CodedParams) and p.spec is get("bdc") and p.scheme == "bdc"
    assert (p.wait_for, p.replication, p.n_batches, p.r, p.m) == (4, 2, 15, 60, 40)
    assert (p.partitions, p.code_length, p.code_dimension) == (4, 15, 10)
    assert p.rows_per_batch == 4 and p.outputs_per_reducer == 2
    # a model setting takes any m for the uncoded baseline (the model is continuous)
    q = CodedParams(get("uc"), 6, 4, Fraction(1, 2), m=7, n=7, N=7)
    assert (q.wait_for, q.r, q.code_length) == (6, 7, 7)


# Hand-computed values, independent of mpi_coded's formulas (none of them is evaluated here).
#
# The spec's example (/work/shared/SPEC.md B.3: "K=6, q=4, mu=1/2 gives s_q = 2 and
# L = 0.35"), 4 rows per batch.  Effective parameters (K, q_eff, mu_eff), the BDC paper's
# definitions of the baselines (Severinson, Graell i Amat, Rosnes, Sec. II): UC waits for
# all K servers, each storing one uncoded batch (mu_eff = 1/K); CMR waits for all K, each
# batch at mu q servers (mu_eff = mu q / K); SC waits for q, one coded batch per server
# (mu_eff = 1/q); unified (Li, Maddah-Ali, Avestimehr), BDC and LT keep (K, q, mu).
# With p = mu_eff q_eff servers per batch, SPEC.md B.3:
#   B_j = C(q-1, j) C(K-q, p-j) / ((q/K) C(K, p)), s_q = the smallest s >= 2 with
#   sum_{j>=s} B_j <= 1 - mu, L = sum_{j>=s_q} B_j/j + min(1 - mu - sum_{j>=s_q} B_j,
#   B_{s_q-1}/(s_q-1)) (strategy 1: the first term of the min, unicasts; 2: the second).
#   uc  (6, 6, 1/6), p = 1: B_1 = C(5,1) C(0,0) / (1 * 6) = 5/6; no level >= 2, so nothing
#       is multicast; unicast 1 - 1/6 - 0 = 5/6 (= B_1, not smaller: strategy 1).  L = 5/6,
#       the literal UC load 1 - 1/K.
#   cmr (6, 6, 1/3), p = 2: B_2 = C(5,2) C(0,0) / (1 * 15) = 2/3 <= 1 - 1/3; B_1 = 0.
#       L = B_2/2 + min(2/3 - 2/3, 0) = 1/3, the literal (1/(mu q))(1 - mu q/K) = 1/2 * 2/3.
#   sc  (6, 4, 1/4), p = 1: B_1 = C(3,1) C(2,0) / ((2/3) 6) = 3/4; unicast 1 - 1/4 = 3/4
#       = L, the literal SC load 1 - 1/q.
#   unified (6, 4, 1/2), p = 2: (q/K) C(6,2) = 10; B_0 = C(3,0) C(2,2)/10 = 1/10,
#       B_1 = C(3,1) C(2,1)/10 = 3/5, B_2 = C(3,2) C(2,0)/10 = 3/10.  B_2 <= 1/2 < B_1 + B_2,
#       so s_q = 2; L = 3/20 + min(1/2 - 3/10, 3/5) = 3/20 + 1/5 = 7/20 = 0.35 (strategy 1).
# Sizes at 4 rows per batch: C(K, p) batches, r = 4 C(K, p) coded rows, m = r q_eff / K.
#          q_eff mu_eff      p  batches r   m   s_q strategy L
EXAMPLE = {
    "uc": (6, Fraction(1, 6), 1, 6, 24, 24, 2, 1, Fraction(5, 6)),
    "cmr": (6, Fraction(1, 3), 2, 15, 60, 60, 2, 1, Fraction(1, 3)),
    "sc": (4, Fraction(1, 4), 1, 6, 24, 16, 2, 1, Fraction(3, 4)),
    "unified": (4, Fraction(1, 2), 2, 15, 60, 40, 2, 1, Fraction(7, 20)),
    "bdc": (4, Fraction(1, 2), 2, 15, 60, 40, 2, 1, Fraction(7, 20)),
    "lt": (4, Fraction(1, 2), 2, 15, 60, 40, 2, 1, Fraction(7, 20)),
}
UNIFIED_B = (Fraction(1, 10), Fraction(3, 5), Fraction(3, 10))  # B_0, B_1, B_2 above
ROWS_PER_SERVER = {"uc": 4, "cmr": 20, "sc": 4, "unified": 20, "bdc": 20, "lt": 20}
"""Coded rows a server multiplies (SPEC.md C.2: m/K for UC, mu q m/K for CMR, m/q for SC,
mu m for unified and BDC): 24/6, 2*60/6, 16/4, 40/2."""


@pytest.mark.parametrize("name", SCHEMES)
def test_every_scheme_at_the_spec_example(name):
    s = get(name)
    K, q, mu = 6, 4, Fraction(1, 2)
    q_eff, mu_eff, rep, batches, r, m, s_q, strategy, L = EXAMPLE[name]
    assert s.effective_model(K, q, mu) == (K, q_eff, mu_eff)
    assert (s.wait_for(K, q), s.replication(q, mu)) == (q_eff, rep)
    ref = s.reference_load(K, q, mu)
    assert (ref.s_q, ref.strategy, ref.load) == (s_q, strategy, L)
    if s.closed_form_load:
        assert s.load(K, q, mu).load == L
    p = s.params(K, q, mu, 4, n=2, N=12, T=2 if s.partitioned else 1)
    assert (p.wait_for, p.replication, p.n_batches, p.r, p.m) == (q_eff, rep, batches, r, m)
    assert s.paper_load(p) == L
    code = s.build_code(p)
    assert code.layout.r == p.r and code.layout.m == p.m
    if s.mds_code or p.code_length == p.code_dimension:
        assert isinstance(code, PartitionCode) and isinstance(code.sub, CauchyCode)
        assert (code.sub.n, code.sub.k) == (p.code_length, p.code_dimension)
    terms = s.model_terms(p, None, 0.1, 0.5, DelayCosts(1.0, 1.0))
    assert terms.rows == pytest.approx(ROWS_PER_SERVER[name])
    assert (terms.load is None) == (s.closed_form_load or s.takes_assignment)


def test_unified_levels_at_the_spec_example():
    u = get("unified").load(6, 4, Fraction(1, 2))
    assert u.B == UNIFIED_B
    assert (u.multicast, u.unicast) == (Fraction(3, 20), Fraction(1, 5))


def test_literal_loads_are_the_papers():
    # The BDC paper's numerical setting K=9, q=6, mu=1/3 (mu q = 2), by hand:
    #   UC 1 - 1/9 = 8/9; CMR (1/2)(1 - 2/9) = 7/18; SC 1 - 1/6 = 5/6.
    #   unified: (q/K) C(9,2) = 24; B_2 = C(5,2) C(3,0)/24 = 10/24 <= 1 - mu = 16/24,
    #   B_1 = C(5,1) C(3,1)/24 = 15/24, B_1 + B_2 > 16/24, so s_q = 2 and
    #   L = (10/24)/2 + min(16/24 - 10/24, 15/24) = 5/24 + 6/24 = 11/24 (strategy 1).
    K, q, mu = 9, 6, Fraction(1, 3)
    assert get("uc").load(K, q, mu).load == Fraction(8, 9)
    assert get("cmr").load(K, q, mu).load == Fraction(7, 18)
    assert get("sc").load(K, q, mu).load == Fraction(5, 6)
    u = get("unified").load(K, q, mu)
    assert (u.s_q, u.strategy, u.load) == (2, 1, Fraction(11, 24))
    with pytest.raises(ConfigError):
        get("bdc").load(K, q, mu)


def test_unified_load_takes_strategy_2_where_it_is_cheaper():
    # K=7, q=6, mu=2/3 (mu q = 4), by hand: (q/K) C(7,4) = 30; B_4 = C(5,4) C(1,0)/30 = 1/6,
    # B_3 = C(5,3) C(1,1)/30 = 1/3, B_j = 0 below (C(1, 4-j) = 0).  1 - mu = 1/3: B_4 <= 1/3
    # < B_3 + B_4, so s_q = 4.  Strategy 1 would unicast 1/3 - 1/6 = 1/6; strategy 2
    # multicasts level 3 too, B_3/3 = 1/9 < 1/6: L = B_4/4 + B_3/3 = 1/24 + 1/9 = 11/72.
    u = get("unified").load(7, 6, Fraction(2, 3))
    assert (u.s_q, u.strategy, u.load) == (4, 2, Fraction(11, 72))
    assert (u.multicast, u.unicast) == (Fraction(11, 72), 0)


def test_rows_per_batch_for_inverts_the_batch_size():
    for name in SCHEMES:
        s = get(name)
        p = s.params(6, 4, "1/2", 3, n=1, N=12)
        assert s.rows_per_batch_for(6, 4, "1/2", p.m) == 3
        assert p.m * p.K == 3 * p.wait_for * math.comb(6, p.replication)


class _Replicated(BatchLayout):
    """A toy layout: the unified one, but every batch on all ``mu q + 1`` servers."""

    def replication(self, q: int, mu: Fraction) -> int:
        return int(mu * q) + 1


def test_a_toy_scheme_plugs_in_without_touching_the_machinery():
    """What adding a scheme takes: a Scheme with the part that differs (here its layout);
    placement, map end, shuffle and replay use it, unregistered."""
    from mpi_coded.coded.mapend import map_end
    from mpi_coded.coded.placement import build_placement
    from mpi_coded.coded.replay import replay_order

    toy = Scheme("toy", "toy", layout=_Replicated())
    assert "toy" not in REGISTRY  # building a scheme registers nothing
    p = toy.params(6, 4, "1/2", 3, n=3, N=8, field="gf2^8")
    assert p.replication == 3 and p.n_batches == 20 and p.spec is toy
    pl = build_placement(p)
    end = map_end(pl, [5, 1, 3, 0, 2, 4])
    res = replay_order(pl, end, seed=1)
    assert res.max_error == 0 and res.plan.scheme == "toy"
    assert get_field("gf2^8").name == p.field_name


def test_a_toy_scheme_registered_in_a_test_is_gone_afterwards():
    """Registration goes only through the registry, and a test's registration ends with it."""
    before = dict(REGISTRY)
    toy = Scheme("toy", "toy", layout=BlockDiagonalLayout())  # partitioned: shows in names()
    with REGISTRY.registered(toy) as registered:
        assert registered is toy and get("toy") is toy and "toy" in REGISTRY
        assert names(partitioned=True) == ("bdc", "toy")
        with pytest.raises(ConfigError) as exc:  # the messages list it while registered
            coded_params("unified", 6, 4, "1/2", 4, n=2, N=8, T=2)
        assert "only to scheme bdc, toy" in exc.value.rule
        with pytest.raises(ValueError):
            REGISTRY.register(Scheme("toy", "another toy"))
    assert "toy" not in REGISTRY and dict(REGISTRY) == before
    with pytest.raises(ConfigError):
        get("toy")
    assert names(partitioned=True) == ("bdc",)
    # gone even when the block fails
    with pytest.raises(RuntimeError), REGISTRY.registered(toy):
        raise RuntimeError("boom")
    assert "toy" not in REGISTRY and tuple(REGISTRY) == SCHEMES
    with pytest.raises(ValueError):
        REGISTRY.register(Scheme("", "nameless"))


@pytest.fixture
def registered_toy():
    with REGISTRY.registered(Scheme("toy", "toy", layout=_Replicated())) as toy:
        yield toy


def test_a_fixture_registers_a_toy(registered_toy):
    assert get("toy") is registered_toy


def test_the_fixtures_toy_is_gone():
    """Runs after :func:`test_a_fixture_registers_a_toy`: nothing of its toy is left."""
    assert "toy" not in REGISTRY and tuple(REGISTRY) == SCHEMES
