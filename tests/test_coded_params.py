"""Parameters and their validation (docs/theory.md (B.1))."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.analysis.loads import check_reference, parse_fraction
from mpi_coded.coded.params import CodeShape, pick_field
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.errors import ConfigError


def effective_model(scheme, K, q, mu):
    return get_scheme(scheme).effective_model(K, q, mu)


def rows_per_batch_for(scheme, K, q, mu, m):
    return get_scheme(scheme).rows_per_batch_for(K, q, mu, m)


def make(**kw):
    base = dict(scheme="unified", K=6, q=4, mu="1/2", rows_per_batch=2, n=3, N=8)
    base.update(kw)
    return coded_params(**base)


def test_derived_sizes_unified():
    p = make()
    assert p.mu == Fraction(1, 2) and p.mu_q == 2
    assert p.n_batches == 15 and p.r == 30 and p.m == 20
    assert p.wait_for == 4 and p.outputs_per_reducer == 2
    assert p.code_length == 30 and p.code_dimension == 20 and p.field_name == "gf2^8"


def test_the_code_shape_is_one_typed_value():
    # bdc, K=6, q=4, mu=1/2, 2 rows per batch, T=2: r = 2 C(6,2) = 30, m = 20,
    # two (15, 10) sub-codes
    p = make(scheme="bdc", T=2)
    assert p.shape == CodeShape(partitions=2, code_length=15, code_dimension=10)
    assert (p.partitions, p.code_length, p.code_dimension) == (2, 15, 10)
    # sc: r = 2 C(6,1) = 12, m = 12 * 4/6 = 8, m/q = 2 stripes of a (K, q) = (6, 4) code;
    # uc: r = m = 2 C(6,1) = 12, the identity of length 12
    assert make(scheme="sc", N=12).shape == CodeShape(2, 6, 4)
    assert make(scheme="uc", N=12).shape == CodeShape(1, 12, 12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.shape.partitions = 3  # type: ignore[misc]


@pytest.mark.parametrize("scheme,wait,rep,m,r", [
    ("uc", 6, 1, 12, 12),        # K batches of 2 rows, rate 1
    ("cmr", 6, 2, 30, 30),       # C(6,2) batches, rate 1
    ("sc", 4, 1, 8, 12),         # K batches of m/q rows
    ("unified", 4, 2, 20, 30),
    ("bdc", 4, 2, 20, 30),
])
def test_effective_sizes(scheme, wait, rep, m, r):
    p = make(scheme=scheme, N=12)
    assert (p.wait_for, p.replication, p.m, p.r) == (wait, rep, m, r)
    assert p.mu_eff == Fraction(rep, wait)
    # each server stores mu_eff * m rows' worth (docs/theory.md (B.1) "each server holds mu m rows")
    assert p.rows_per_batch * math.comb(p.K - 1, rep - 1) == p.mu_eff * p.m


@pytest.mark.parametrize("kw,field,needle", [
    (dict(scheme="zz"), "scheme", "must be one of"),
    (dict(q=7), "q", "q <= K"),
    (dict(q=0), "q", ">= 1"),
    (dict(mu="1/3"), "mu", "mu * q must be an integer"),
    (dict(mu="3/2"), "mu", "[1, q]"),
    (dict(mu="0"), "mu", "[1, q]"),
    (dict(mu="abc"), "mu", "fraction"),
    (dict(N=6), "N", "must divide N"),
    (dict(rows_per_batch=0), "rows_per_batch", ">= 1"),
    (dict(rows_per_batch=1, K=4, q=3, mu="2/3", N=3), "rows_per_batch", "must be an integer"),
    (dict(T=2), "T", "only to scheme bdc"),
    (dict(scheme="bdc", T=3), "T", "divide m"),
    (dict(scheme="bdc", T=4), "T", "divide r"),
    (dict(field="gf2^4"), "field", "must be one of"),
    (dict(rows_per_batch=18), "field", None),  # r = 270 > 256 with auto -> gf2^16, fine
    (dict(rows_per_batch=18, field="gf2^8"), "field", "length <= 256"),
    (dict(scheme="uc", N=8), "N", "K = 6 must divide N"),
])
def test_validation(kw, field, needle):
    if needle is None:
        assert make(**kw).field_name == "gf2^16"
        return
    with pytest.raises(ConfigError) as exc:
        make(**kw)
    assert exc.value.field == field
    assert needle in exc.value.rule


def test_field_boundaries():
    assert pick_field(256) == "gf2^8"
    assert pick_field(257) == "gf2^16"
    assert pick_field(65536) == "gf2^16"
    with pytest.raises(ConfigError):
        pick_field(65537)
    # bdc: the sub-code length r/T decides; r = 270, T = 2 -> 135 fits gf2^8
    p = make(scheme="bdc", rows_per_batch=18, T=2, field="gf2^8")
    assert p.code_length == 135
    # identity codes need no Cauchy part: any field
    assert make(scheme="cmr", rows_per_batch=100, N=6, field="gf2^8").field_name == "gf2^8"
    assert make(field="float64", rows_per_batch=18).field_name == "float64"


def test_parse_fraction_and_model():
    assert parse_fraction("mu", "1/2") == Fraction(1, 2)
    assert parse_fraction("mu", "0.25") == Fraction(1, 4)
    assert parse_fraction("mu", 1) == 1
    for bad in ("1/0", "x", None, True):
        with pytest.raises(ConfigError):
            parse_fraction("mu", bad)
    assert check_reference(6, 4, "3/4") == Fraction(3, 4)
    assert effective_model("uc", 6, 4, Fraction(1, 2)) == (6, 6, Fraction(1, 6))
    assert effective_model("cmr", 6, 4, Fraction(1, 2)) == (6, 6, Fraction(2, 6))
    assert effective_model("sc", 6, 4, Fraction(1, 2)) == (6, 4, Fraction(1, 4))
    assert effective_model("unified", 6, 4, Fraction(1, 2)) == (6, 4, Fraction(1, 2))


def test_rows_per_batch_for():
    assert rows_per_batch_for("unified", 6, 4, "1/2", 20) == 2
    assert rows_per_batch_for("sc", 6, 4, "1/2", 20) == 5
    assert rows_per_batch_for("uc", 6, 4, "1/2", 12) == 2
    with pytest.raises(ConfigError) as exc:
        rows_per_batch_for("unified", 6, 4, "1/2", 15)
    assert exc.value.field == "m"


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.data())
def test_valid_params_roundtrip(K, data):
    q = data.draw(st.integers(1, K))
    mq = data.draw(st.integers(1, q))
    scheme = data.draw(st.sampled_from(["uc", "cmr", "sc", "unified"]))
    mu = Fraction(mq, q)
    m = data.draw(st.integers(1, 60))
    try:
        eta = rows_per_batch_for(scheme, K, q, mu, m)
    except ConfigError:
        return
    p = coded_params(scheme, K, q, mu, rows_per_batch=eta, n=1, N=K * q, field="float64")
    assert p.m == m
    assert p.r * p.wait_for == p.m * p.K
