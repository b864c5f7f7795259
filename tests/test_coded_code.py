"""Encoding matrices Psi per scheme and partition decoding (docs/theory.md (B.1), (B.4))."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mpi_coded.coded.code import build_code
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes.mds import systematic_mds
from mpi_coded.errors import NotDecodable
from mpi_coded.fields import get_field


def params(scheme, **kw):
    base = dict(K=4, q=2, mu=1, rows_per_batch=2, n=3, N=4)
    base.update(kw)
    return coded_params(scheme, **base)


def test_bdc_psi_is_block_diagonal():
    f = get_field("gf2^8")
    p = params("bdc", T=3)  # r = 12, m = 6: three (4, 2) blocks
    code = build_code(p, f)
    psi = code.psi()
    g = systematic_mds(f, 4, 2)
    want = np.zeros((12, 6), dtype=f.dtype)
    for t in range(3):
        want[4 * t:4 * t + 4, 2 * t:2 * t + 2] = g
    assert np.array_equal(psi, want)
    assert code.layout.coded_rows(1) == (4, 5, 6, 7)
    assert code.layout.message_rows(2) == (4, 5)


def test_sc_psi_is_kronecker():
    f = get_field("gf2^8")
    p = params("sc", K=5, q=3, mu="1/3", N=3)  # m = 6, stripes of m/q = 2 rows
    code = build_code(p, f)
    g = systematic_mds(f, 5, 3)
    want = np.kron(g, np.eye(2, dtype=f.dtype))  # C_k = sum_u G[k, u] A_u
    assert np.array_equal(code.psi(), want)
    assert code.layout.T == 2 and code.layout.coded_rows(1) == (1, 3, 5, 7, 9)


@pytest.mark.parametrize("scheme", ["uc", "cmr"])
def test_uncoded_is_identity(scheme):
    f = get_field("gf2^8")
    code = build_code(params(scheme, N=4), f)
    assert np.array_equal(code.psi(), np.eye(code.layout.m, dtype=f.dtype))


@pytest.mark.parametrize("field_name", ["gf2^8", "float64"])
@pytest.mark.parametrize("scheme,kw", [
    ("unified", {}), ("bdc", {"T": 2}), ("bdc", {"T": 6}),
    ("sc", {"K": 5, "q": 3, "mu": "1/3", "N": 3}),
    ("uc", {}), ("cmr", {}),
])
def test_encode_and_decode_any_k(field_name, scheme, kw):
    f = get_field(field_name)
    p = params(scheme, **kw)
    code = build_code(p, f)
    rng = np.random.default_rng(1)
    A = f.random((p.m, p.n), rng)
    X = f.random((p.n, 3), rng)
    C = code.encode(A)
    assert np.array_equal(C, f.matmul(code.psi(), A)) or f.max_error(
        C, f.matmul(code.psi(), A)) < 1e-12
    sub = code.encode(A, [3, 0])
    assert f.max_error(sub, C[[3, 0]]) < 1e-12
    Y = f.matmul(C, X)
    want = f.matmul(A, X)
    lay = code.layout
    # every choice of k rows of partition 0 decodes it
    for rows in itertools.combinations(lay.coded_rows(0), lay.k):
        got = code.decode_partition(list(rows)[::-1], Y[list(rows)[::-1]])
        assert f.max_error(got, want[list(lay.message_rows(0))]) < 1e-9
    # whole decode from a shuffled selection holding >= k rows of every partition
    order = rng.permutation(p.r)
    got = code.decode(order.tolist(), Y[order])
    assert f.max_error(got, want) < 1e-9


def test_not_decodable():
    f = get_field("gf2^8")
    code = build_code(params("bdc", T=3), f)
    Y = f.random((12, 2), np.random.default_rng(0))
    with pytest.raises(NotDecodable):
        code.decode([0, 4, 5, 8, 9], Y[[0, 4, 5, 8, 9]])  # only one row of partition 0
    with pytest.raises(NotDecodable):
        code.decode_partition([0, 4], Y[[0, 4]])  # rows of two partitions
