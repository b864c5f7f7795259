"""mpi_coded/gf_tables.py: GF(2^8) and GF(2^16) on numpy lookup tables, checked word for word
against galois (an independent implementation) and the numba kernels; a field warmed up for
small products runs on them without importing numba or galois."""

from __future__ import annotations

import subprocess
import sys

import galois
import numpy as np
import pytest

from mpi_coded import gf_kernels, gf_tables
from mpi_coded.fields import GFField


@pytest.mark.parametrize("degree", [8, 16])
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 2), (7, 3, 1), (40, 17, 9), (2, 300, 4)])
def test_products_equal_galois_and_the_kernels(degree, shape):
    m, k, n = shape
    rng = np.random.default_rng([degree, m, k, n])
    dt = gf_tables.DTYPES[degree]
    a = rng.integers(0, 1 << degree, (m, k), dtype=dt)
    b = rng.integers(0, 1 << degree, (k, n), dtype=dt)
    a[0, :] = 0  # zeros go through the tables' zero tail
    gf = galois.GF(1 << degree)
    want = np.asarray((gf(a) @ gf(b)).view(np.ndarray), dtype=dt)
    got = gf_tables.matmul(a, b, degree)
    assert got.dtype == dt and np.array_equal(got, want)
    assert np.array_equal(got, gf_kernels.gf_matmul(a, b, degree))


@pytest.mark.parametrize("degree", [8, 16])
def test_inverses_and_reciprocals_equal_galois(degree):
    rng = np.random.default_rng(degree)
    dt = gf_tables.DTYPES[degree]
    gf = galois.GF(1 << degree)
    done = 0
    for k in (1, 2, 5, 17, 40):
        a = rng.integers(0, 1 << degree, (k, k), dtype=dt)
        try:
            want = np.asarray(np.linalg.inv(gf(a)).view(np.ndarray), dtype=dt)
        except np.linalg.LinAlgError:
            continue
        got = gf_tables.inv(a, degree)
        assert np.array_equal(got, want)
        assert np.array_equal(gf_tables.matmul(a, got, degree), np.eye(k, dtype=dt))
        done += 1
    assert done >= 4
    x = np.arange(1, min(300, 1 << degree), dtype=dt)
    assert np.array_equal(gf_tables.reciprocal(x, degree),
                          np.asarray(np.reciprocal(gf(x)).view(np.ndarray), dtype=dt))
    with pytest.raises(ZeroDivisionError):
        gf_tables.reciprocal(np.array([3, 0], dtype=dt), degree)


@pytest.mark.parametrize("degree", [8, 16])
def test_a_singular_matrix_is_refused_as_galois_refuses_it(degree):
    dt = gf_tables.DTYPES[degree]
    singular = np.array([[1, 2, 3], [2, 4, 6], [0, 0, 1]], dtype=dt)  # row 2 = 2 x row 1
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        gf_tables.inv(singular, degree)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(galois.GF(1 << degree)(singular))


def test_a_field_for_small_products_uses_the_tables_and_switches_for_a_large_one():
    f = GFField(8)
    f.warm_up(largest=100)
    assert not f.jit
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (6, 5), dtype=np.uint8)
    w = rng.integers(0, 256, 5, dtype=np.uint8)
    assert np.array_equal(f.matmul(a, w), f.matmul_reference(a, w))  # matrix-vector
    v = rng.integers(0, 256, 6, dtype=np.uint8)
    for x, y in [(v, a), (w, w), (a.T, v)]:  # numpy's shape rules for 1-D operands
        got, want = f.matmul(x, y), f.matmul_reference(x, y)
        assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(f.inv(f.cauchy(4, 4)), np.linalg.inv(f._v(f.cauchy(4, 4))))
    assert not f.jit
    big = rng.integers(0, 256, (80, 80), dtype=np.uint8)  # 512000 > SMALL_WORK
    assert np.array_equal(f.matmul(big, big), f.matmul_reference(big, big))
    assert f.jit  # the numba kernels from then on
    f.warm_up()  # unknown sizes: the kernels
    assert f.jit


def test_a_rank_with_small_products_imports_neither_numba_nor_galois():
    code = ("import sys; from mpi_coded.fields import GFField\n"
            "for d in (8, 16):\n"
            "    f = GFField(d); f.warm_up(largest=5000)\n"
            "    a = f.cauchy(6, 3); f.inv(a[:3]); f.matmul(a, a[:3])\n"
            "print(sorted(m for m in ('numba', 'galois') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
