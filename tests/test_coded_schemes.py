"""The scheme objects and their registry: every scheme answers the same questions."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from mpi_coded.analysis.loads import unified_load
from mpi_coded.cli.coded import LOAD_SCHEMES
from mpi_coded.coded.code import PartitionCode
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.schemes import REGISTRY, SCHEMES, Scheme, coded_params, get, names
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


@pytest.mark.parametrize("name", SCHEMES)
def test_every_scheme_answers_the_same_questions(name):
    s = get(name)
    K, q, mu = 6, 4, Fraction(1, 2)
    Ke, qe, mue = s.effective_model(K, q, mu)
    assert Ke == K and qe == s.wait_for(K, q) and mue == Fraction(s.replication(q, mu), qe)
    assert s.reference_load(K, q, mu) == unified_load(Ke, qe, mue)
    if s.closed_form_load:
        assert s.literal_load(K, q, mu) == s.load(K, q, mu).load
    p = s.params(K, q, mu, 4, n=2, N=12, T=2 if s.partitioned else 1)
    assert s.paper_load(p) == s.reference_load(K, q, mu).load
    code = s.build_code(p)
    assert code.layout.r == p.r and code.layout.m == p.m
    if s.mds_code or p.code_length == p.code_dimension:
        assert isinstance(code, PartitionCode) and isinstance(code.sub, CauchyCode)
        assert (code.sub.n, code.sub.k) == (p.code_length, p.code_dimension)
    terms = s.model_terms(p, None, 0.1, 0.5, 1.0, 1.0)
    assert terms.rows == pytest.approx(float(p.mu_eff * p.m))
    assert (terms.load is None) == s.takes_assignment


def test_literal_loads_are_the_papers():
    K, q, mu = 9, 6, Fraction(1, 3)
    assert get("uc").literal_load(K, q, mu) == 1 - Fraction(1, K)
    assert get("cmr").literal_load(K, q, mu) == (1 / (mu * q)) * (1 - mu * q / K)
    assert get("sc").literal_load(K, q, mu) == 1 - Fraction(1, q)
    with pytest.raises(ConfigError):
        get("bdc").load(K, q, mu)


def test_rows_per_batch_for_inverts_the_batch_size():
    for name in SCHEMES:
        s = get(name)
        p = s.params(6, 4, "1/2", 3, n=1, N=12)
        assert s.rows_per_batch_for(6, 4, "1/2", p.m) == 3
        assert p.m * p.K == 3 * p.wait_for * math.comb(6, p.replication)


def test_a_toy_scheme_plugs_in_without_touching_the_machinery():
    """What adding a scheme takes: a subclass; placement, map end, shuffle and replay use it."""
    from mpi_coded.coded.mapend import map_end
    from mpi_coded.coded.placement import build_placement
    from mpi_coded.coded.replay import replay_order

    class Replicated(Scheme):  # the unified layout, but every batch on all mu q + 1 servers
        name = ""
        summary = "toy"

        def replication(self, q: int, mu: Fraction) -> int:
            return int(mu * q) + 1

    toy = Replicated()
    p = toy.params(6, 4, "1/2", 3, n=3, N=8, field="gf2^8")
    assert p.replication == 3 and p.n_batches == 20
    pl = build_placement(p)
    end = map_end(pl, [5, 1, 3, 0, 2, 4])
    res = replay_order(pl, end, seed=1)
    assert res.max_error == 0 and res.plan.scheme == ""
    assert get_field("gf2^8").name == p.field_name
