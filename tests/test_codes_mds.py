"""MDS generators and decoding over float64, GF(2^8) and GF(2^16)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mpi_coded.codes import DecoderCache, systematic_mds, worst_condition
from mpi_coded.errors import ConfigError
from mpi_coded.fields import get_field


@pytest.mark.parametrize("name", ["float64", "gf2^8", "gf2^16"])
@pytest.mark.parametrize("n,k", [(6, 3), (7, 1), (5, 5), (9, 4)])
def test_any_k_rows_decode(name, n, k):
    field = get_field(name)
    g = systematic_mds(field, n, k)
    assert g.shape == (n, k) and g.dtype == field.dtype
    assert np.array_equal(g[:k], np.eye(k, dtype=field.dtype))
    rng = np.random.default_rng(7)
    x = field.random((k, 11), rng)
    coded = field.matmul(g, x)
    dec = DecoderCache(field, g)
    for rows in itertools.combinations(range(n), k):
        z = dec.decode(rows, coded[list(rows)])
        if field.exact:
            assert np.array_equal(z, x)
        else:
            assert field.max_error(z, x) < 1e-9
    assert dec.misses == len(list(itertools.combinations(range(n), k)))
    dec.decode(tuple(range(k)), coded[:k])
    assert dec.hits == 1


def test_gf_decoding_is_exact_against_galois_arithmetic():
    import galois

    gf = galois.GF(2**8)
    field = get_field("gf2^8")
    g = systematic_mds(field, 6, 3)
    # every 3x3 submatrix is invertible according to galois itself
    for rows in itertools.combinations(range(6), 3):
        assert np.linalg.det(gf(g[list(rows)])) != 0
    # Cauchy entries: 1 / (x_i + y_j) with x_i = 3 + i, y_j = j
    assert gf(g[3, 0]) * (gf(3) + gf(0)) == gf(1)
    assert gf(g[5, 2]) * (gf(5) + gf(2)) == gf(1)


def test_real_condition_numbers_are_reported():
    field = get_field("float64")
    g = systematic_mds(field, 6, 3)
    w = worst_condition(field, g)
    assert w is not None and 1.0 <= w < 1e4
    assert worst_condition(field, systematic_mds(field, 40, 20)) is None  # too many subsets
    assert worst_condition(get_field("gf2^8"), systematic_mds(get_field("gf2^8"), 6, 3)) == 1.0


def test_field_too_small_and_bad_arguments():
    with pytest.raises(ConfigError, match="Cauchy"):
        systematic_mds(get_field("gf2^8"), 300, 10)
    with pytest.raises(ConfigError, match="n >= k"):
        systematic_mds(get_field("float64"), 2, 3)
    with pytest.raises(ConfigError, match="field: must be one of"):
        get_field("gf2^9")
