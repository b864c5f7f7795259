"""Analytic loads (docs/theory.md (B.3))."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.analysis.loads import b_level, unified_load
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.errors import ConfigError


def test_spec_example():
    res = unified_load(6, 4, Fraction(1, 2))
    assert res.s_q == 2 and res.strategy == 1
    assert res.B == (Fraction(1, 10), Fraction(3, 5), Fraction(3, 10))
    assert res.load == Fraction(7, 20)


def test_paper_setting():
    res = unified_load(9, 6, "1/3")
    assert res.load == Fraction(11, 24)
    assert round(float(res.load), 6) == 0.458333
    assert res.s_q == 2 and res.strategy == 1


def test_strategy_two_instance():
    # K=6, q=5, mu=4/5: s_q = 4, unicasting the rest costs 3/25 but multicasting
    # level 3 costs B_3/3 = 8/75, so strategy 2 is used.
    res = unified_load(6, 5, "4/5")
    assert res.s_q == 4 and res.strategy == 2
    assert res.B[4] / 4 == Fraction(1, 50)
    assert 1 - res.mu - res.B[4] == Fraction(3, 25)
    assert res.B[3] / 3 == Fraction(8, 75)
    assert res.load == Fraction(19, 150)
    assert res.levels == (4, 3)


@pytest.mark.parametrize("scheme,K,q,mu,want", [
    ("uc", 6, 4, "1/2", Fraction(5, 6)),
    ("cmr", 6, 4, "1/2", Fraction(1, 3)),
    ("sc", 6, 4, "1/2", Fraction(3, 4)),
    ("unified", 6, 4, "1/2", Fraction(7, 20)),
    ("cmr", 9, 6, "1/3", Fraction(7, 18)),
])
def test_literal_loads(scheme, K, q, mu, want):
    assert get_scheme(scheme).load(K, q, mu).load == want


PAPER_FORMS = {"uc": lambda K, q, mu: 1 - Fraction(1, K),
               "cmr": lambda K, q, mu: (1 / (mu * q)) * (1 - mu * q / K),
               "sc": lambda K, q, mu: 1 - Fraction(1, q)}
"""The loads as the papers write them (docs/theory.md (B.3)); the schemes declare theirs
once, as the unified formula at their effective parameters."""


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 14), st.data())
def test_scheme_load_matches_literal(K, data):
    q = data.draw(st.integers(1, K))
    mq = data.draw(st.integers(1, q))
    mu = Fraction(mq, q)
    for scheme, paper in PAPER_FORMS.items():
        assert get_scheme(scheme).load(K, q, mu).load == paper(K, q, mu)
    res = unified_load(K, q, mu)
    # B_j are fractions of m received at level j; all batches not at k sum to K/q - mu
    assert sum(res.B) == Fraction(K, q) - mu
    assert sum(b_level(K, q, mu, j) for j in range(1, mq + 1)) >= 1 - mu
    assert 2 <= res.s_q <= mq + 1
    assert sum(res.B[res.s_q:]) <= 1 - mu
    if res.s_q > 2:  # s_q is the smallest such s
        assert sum(res.B[res.s_q - 1:]) > 1 - mu
    assert 0 <= res.load <= 1 - mu
    assert res.load <= get_scheme("sc").load(K, q, mu).load


def test_bad_input():
    with pytest.raises(ConfigError) as exc:
        unified_load(6, 4, "1/3")
    assert exc.value.field == "mu"
    with pytest.raises(ConfigError) as exc:
        get_scheme("bdc").load(6, 4, "1/2")
    assert exc.value.field == "scheme"
