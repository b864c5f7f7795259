"""The fast GF(2^8) / GF(2^16) matrix products against galois, the independent reference."""

from __future__ import annotations

from typing import Any

import galois
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpi_coded import gf_kernels
from mpi_coded.gf_kernels import _matmul2d, gf_matmul, gf_matvec

DEGREES = (8, 16)
DTYPES = {8: np.uint8, 16: np.uint16}
KERNELS = ("direct", "sliced", "sliced_t", None)  # None: whatever the cost model picks

HYPO = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    for degree in DEGREES:
        gf_kernels.warm_up(degree)


def gf(degree: int) -> Any:
    return galois.GF(2**degree)


def reference(a: np.ndarray, b: np.ndarray, degree: int) -> np.ndarray:
    """galois's own ``a @ b`` as plain words."""
    field = gf(degree)
    out = np.asarray(field(a) @ field(b))
    return np.asarray(out.view(np.ndarray), dtype=DTYPES[degree])


def clmul_reduce(x: int, y: int, poly: int, degree: int) -> int:
    """Product in GF(2^degree) from scratch: carry-less multiply, then reduce modulo ``poly``."""
    r = 0
    for i in range(degree):
        if (y >> i) & 1:
            r ^= x << i
    for i in range(2 * degree - 2, degree - 1, -1):
        if (r >> i) & 1:
            r ^= poly << (i - degree)
    return r


def rand(rng: np.random.Generator, shape: tuple[int, ...], degree: int) -> np.ndarray:
    return rng.integers(0, 1 << degree, size=shape, dtype=DTYPES[degree])


def check(a: np.ndarray, b: np.ndarray, degree: int, kernel: str | None = None) -> None:
    want = reference(a, b, degree)
    if kernel is None:
        got = gf_matmul(a, b, degree)
    else:
        got = _matmul2d(np.ascontiguousarray(a), np.ascontiguousarray(b), degree, kernel)
    assert type(got) is np.ndarray
    assert got.dtype == DTYPES[degree]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# the field itself


@pytest.mark.parametrize("degree", DEGREES)
def test_polynomial_is_galois_default(degree: int) -> None:
    assert gf_kernels.POLYS[degree] == int(gf(degree).irreducible_poly)


def test_hand_checked_gf8() -> None:
    poly = 0x11D
    assert clmul_reduce(2, 128, poly, 8) == 0x1D  # x * x^7 = x^8 = x^4 + x^3 + x^2 + 1
    # by hand: 0x53 (x) 0xCA = 0xA6 ^ 0x298 ^ 0x14C0 ^ 0x2980 = 0x3F7E, then XOR in 0x11d
    # shifted by 5, 4, 3, 2, 0: 0x1CDE, 0x0D0E, 0x05E6, 0x0192, 0x008F
    assert clmul_reduce(0x53, 0xCA, poly, 8) == 0x8F
    for x, y, want in [(2, 128, 0x1D), (0x53, 0xCA, 0x8F), (1, 0xAB, 0xAB), (0, 0xFF, 0)]:
        a = np.array([[x]], dtype=np.uint8)
        b = np.array([[y]], dtype=np.uint8)
        for kernel in KERNELS:
            got = gf_matmul(a, b, 8) if kernel is None else _matmul2d(a, b, 8, kernel)
            assert int(got[0, 0]) == want
    # a 2 x 2 product by hand: [[2, 1], [3, 128]] @ [[128, 1], [1, 2]], where 2 * 128 = 0x1d,
    # so 3 * 128 = 0x1d ^ 0x80 and 128 * 2 = 0x1d
    a = np.array([[2, 1], [3, 128]], dtype=np.uint8)
    b = np.array([[128, 1], [1, 2]], dtype=np.uint8)
    want_2x2 = np.array([[0x1D ^ 1, 2 ^ 2], [0x1D ^ 0x80 ^ 0x80, 3 ^ 0x1D]], dtype=np.uint8)
    for kernel in KERNELS:
        got = gf_matmul(a, b, 8) if kernel is None else _matmul2d(a, b, 8, kernel)
        np.testing.assert_array_equal(got, want_2x2)


def test_hand_checked_gf16() -> None:
    poly = 0x1002D
    assert clmul_reduce(0x8000, 2, poly, 16) == 0x2D
    a = np.array([[0x8000, 0x1234]], dtype=np.uint16)
    b = np.array([[2], [0xABCD]], dtype=np.uint16)
    want = 0x2D ^ clmul_reduce(0x1234, 0xABCD, poly, 16)
    assert int(gf_matmul(a, b, 16)[0, 0]) == want
    assert want == int(gf(16)(0x8000) * gf(16)(2) + gf(16)(0x1234) * gf(16)(0xABCD))


@pytest.mark.parametrize("kernel", KERNELS)
def test_full_gf8_multiplication_table(kernel: str | None) -> None:
    """All 65536 products at once: the outer product (k = 1) of 0..255 with itself."""
    col = np.arange(256, dtype=np.uint8).reshape(256, 1)
    row = col.reshape(1, 256)
    got = gf_matmul(col, row, 8) if kernel is None else _matmul2d(col, row, 8, kernel)
    want = np.array(
        [[clmul_reduce(x, y, 0x11D, 8) for y in range(256)] for x in range(256)], dtype=np.uint8
    )
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kernel", KERNELS)
def test_gf16_products_from_scratch(kernel: str | None) -> None:
    rng = np.random.default_rng(16)
    x = rand(rng, (150, 1), 16)
    y = rand(rng, (1, 140), 16)
    x[:3, 0] = [0, 1, 0xFFFF]
    y[0, :3] = [0, 1, 0xFFFF]
    got = gf_matmul(x, y, 16) if kernel is None else _matmul2d(x, y, 16, kernel)
    want = np.array(
        [[clmul_reduce(int(u), int(v), 0x1002D, 16) for v in y[0]] for u in x[:, 0]],
        dtype=np.uint16,
    )
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# products against galois

SHAPES = [
    (1, 1, 1),
    (1, 5, 1),
    (3, 1, 4),
    (5, 7, 3),
    (1, 40, 70),  # one row
    (40, 33, 1),  # one column
    (43, 33, 1),  # one column, rows not a multiple of 4
    (64, 64, 64),  # exactly one word
    (65, 40, 100),  # two words
    (129, 70, 9),
    (200, 5, 127),
    (7, 130, 200),  # four words
    (3, 300, 600),  # many words
    (130, 9, 520),
]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("degree", DEGREES)
def test_random_shapes(degree: int, shape: tuple[int, int, int], kernel: str | None) -> None:
    m, k, n = shape
    rng = np.random.default_rng(m * 10007 + k * 101 + n + degree)
    check(rand(rng, (m, k), degree), rand(rng, (k, n), degree), degree, kernel)


@pytest.mark.parametrize(
    "shape",
    [
        (400, 300, 60),  # map phase, narrow output
        (120, 200, 130),  # map phase, two words
        (60, 150, 500),  # encode, wide
        (25, 25, 1000),  # one block of a block-diagonal code
        (50, 50, 7),  # decode
        (300, 500, 1),  # matrix-vector as a column
    ],
    ids=lambda s: "x".join(map(str, s)),
)
@pytest.mark.parametrize("degree", DEGREES)
def test_workload_shapes(degree: int, shape: tuple[int, int, int]) -> None:
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    check(rand(rng, (m, k), degree), rand(rng, (k, n), degree), degree)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("degree", DEGREES)
def test_special_matrices(degree: int, kernel: str | None) -> None:
    rng = np.random.default_rng(3)
    top = (1 << degree) - 1
    dtype = DTYPES[degree]
    m, k, n = 70, 90, 130
    b = rand(rng, (k, n), degree)
    zeros = np.zeros((m, k), dtype=dtype)
    ones = np.ones((m, k), dtype=dtype)
    full = np.full((m, k), top, dtype=dtype)
    eye = np.eye(k, dtype=dtype)
    for a in (zeros, ones, full, rand(rng, (m, k), degree)):
        check(a, b, degree, kernel)
    check(eye, b, degree, kernel)
    np.testing.assert_array_equal(_matmul2d(eye, b, degree, kernel), b)
    assert not _matmul2d(zeros, b, degree, kernel).any()
    # all-ones rows sum the rows of b (addition is XOR)
    np.testing.assert_array_equal(
        _matmul2d(ones, b, degree, kernel)[0], np.bitwise_xor.reduce(b, axis=0)
    )
    check(full, np.full((k, n), top, dtype=dtype), degree, kernel)


@pytest.mark.parametrize("degree", DEGREES)
def test_one_dimensional_operands(degree: int) -> None:
    rng = np.random.default_rng(1)
    a = rand(rng, (30, 80), degree)
    b = rand(rng, (80, 70), degree)
    x = rand(rng, (80,), degree)
    y = rand(rng, (80,), degree)
    for lhs, rhs, shape in [(a, x, (30,)), (x, b, (70,)), (x, y, ())]:
        got = gf_matmul(lhs, rhs, degree)
        assert type(got) is np.ndarray and got.dtype == DTYPES[degree]
        assert got.shape == shape == (lhs @ rhs).shape
        np.testing.assert_array_equal(got, reference(lhs, rhs, degree))
    np.testing.assert_array_equal(gf_matvec(a, x, degree), reference(a, x, degree))
    with pytest.raises(ValueError):
        gf_matvec(x, a, degree)


@pytest.mark.parametrize(
    "sa, sb",
    [((0, 5), (5, 3)), ((4, 0), (0, 3)), ((4, 5), (5, 0)), ((0,), (0,)), ((0,), (0, 6))],
)
@pytest.mark.parametrize("degree", DEGREES)
def test_empty_dimensions(degree: int, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    dtype = DTYPES[degree]
    a = np.ones(sa, dtype=dtype)
    b = np.ones(sb, dtype=dtype)
    got = gf_matmul(a, b, degree)
    want = a @ b  # numpy's shape; an empty sum is 0 in any field
    assert got.shape == want.shape and got.dtype == dtype
    assert not got.any()


@pytest.mark.parametrize("degree", DEGREES)
def test_inputs_are_normalised(degree: int) -> None:
    rng = np.random.default_rng(5)
    a = rand(rng, (90, 60), degree)
    b = rand(rng, (90, 40), degree)
    want = reference(np.ascontiguousarray(a.T), b, degree)
    np.testing.assert_array_equal(gf_matmul(a.T, b, degree), want)  # non-contiguous view
    np.testing.assert_array_equal(gf_matmul(a.T.astype(np.int64), b, degree), want)
    b_ro = b.copy()
    b_ro.flags.writeable = False
    np.testing.assert_array_equal(gf_matmul(a.T, b_ro, degree), want)
    np.testing.assert_array_equal(gf_matmul(a[::2].T, b[::2], degree),
                                  reference(np.ascontiguousarray(a[::2].T), b[::2], degree))
    assert np.array_equal(a, a.copy())  # inputs untouched


def test_bad_inputs() -> None:
    a = np.ones((3, 4), dtype=np.uint8)
    with pytest.raises(ValueError):
        gf_matmul(a, np.ones((5, 2), dtype=np.uint8), 8)
    with pytest.raises(ValueError):
        gf_matmul(a, np.ones((4, 2), dtype=np.uint8), 4)
    with pytest.raises(ValueError):
        gf_matmul(np.ones((2, 3, 4), dtype=np.uint8), np.ones((4, 2), dtype=np.uint8), 8)
    with pytest.raises(ValueError):
        gf_matmul(a, np.full((4, 2), 256, dtype=np.uint16), 8)
    with pytest.raises(ValueError):
        gf_matmul(a, -np.ones((4, 2), dtype=np.int64), 8)
    with pytest.raises(TypeError):
        gf_matmul(a, np.ones((4, 2)), 8)
    with pytest.raises(ValueError):
        gf_kernels.warm_up(12)


@pytest.mark.parametrize("degree", DEGREES)
def test_pack_unpack_round_trip(degree: int) -> None:
    rng = np.random.default_rng(9)
    for n in (1, 7, 8, 63, 64, 65, 200, 300, 600):
        b = rand(rng, (5, n), degree)
        n_words = gf_kernels._words(n)
        assert n_words >= (n + 63) // 64
        planes = gf_kernels._pack(b, degree, n_words)
        assert planes.shape == (5, degree, n_words)
        assert not planes[:, :, (n + 63) // 64 :].any()  # padding words stay zero
        bits = (b[:, None, :] >> np.arange(degree, dtype=b.dtype)[None, :, None]) & 1
        j = np.arange(n)
        np.testing.assert_array_equal(
            (planes[:, :, j // 64] >> (j % 64).astype(np.uint64)) & np.uint64(1), bits
        )
        out = np.empty_like(b)
        gf_kernels._unpack(planes, out)
        np.testing.assert_array_equal(out, b)


def test_field_class_uses_kernels() -> None:
    from mpi_coded.fields import get_field

    rng = np.random.default_rng(11)
    for name in ("gf2^8", "gf2^16"):
        field: Any = get_field(name)
        a = field.random((40, 50), rng)
        b = field.random((50, 70), rng)
        np.testing.assert_array_equal(field.matmul(a, b), field.matmul_reference(a, b))


# ---------------------------------------------------------------------------------------------
# properties


@st.composite
def operands(draw: st.DrawFn, n_max: int = 140) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    degree = draw(st.sampled_from(DEGREES))
    m = draw(st.integers(1, 20))
    k = draw(st.integers(1, 20))
    n = draw(st.integers(1, n_max))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sparse = draw(st.booleans())  # many zeros and ones, the kernels' special cases
    a = rand(rng, (m, k), degree)
    b = rand(rng, (k, n), degree)
    c = rand(rng, (k, n), degree)
    if sparse:
        a[rng.random((m, k)) < 0.5] = 0
        b[rng.random((k, n)) < 0.3] = 1
    return degree, a, b, c


@HYPO
@given(operands(), st.sampled_from(KERNELS))
def test_property_matches_galois(ops: tuple[int, np.ndarray, np.ndarray, np.ndarray],
                                 kernel: str | None) -> None:
    degree, a, b, _ = ops
    check(a, b, degree, kernel)


@HYPO
@given(operands(), st.sampled_from(KERNELS))
def test_property_algebra(ops: tuple[int, np.ndarray, np.ndarray, np.ndarray],
                          kernel: str | None) -> None:
    degree, a, b, c = ops

    def mm(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        y = np.ascontiguousarray(y)
        return gf_matmul(x, y, degree) if kernel is None else _matmul2d(x, y, degree, kernel)

    ab = mm(a, b)
    np.testing.assert_array_equal(mm(a, b ^ c), ab ^ mm(a, c))  # distributive
    np.testing.assert_array_equal(mm(b.T, a.T), ab.T)  # (ab)^T = b^T a^T
    d = rand(np.random.default_rng(int(a.sum())), (b.shape[1], 5), degree)
    np.testing.assert_array_equal(mm(ab, d), mm(a, mm(b, d)))  # associative
