"""The additive-FFT Reed-Solomon code against galois and the reed-solomon-leopard library.

galois (``GF(2^16)``, polynomial ``0x1002D``) is the independent reference for the field, the
novel polynomial basis, the code (Lagrange interpolation) and the generator; the
reed-solomon-leopard package (Rust reed-solomon-simd) pins the parity bit for bit.
"""

from __future__ import annotations

import itertools
from typing import Any

import galois
import numpy as np
import pytest

from mpi_coded.codes import cantor
from mpi_coded.codes import rs_fft as rs
from mpi_coded.codes.rs_fft import (
    RSCode,
    fft_decode_ops,
    fft_encode_ops,
    generator_decode_ops,
    generator_encode_ops,
)
from mpi_coded.errors import ConfigError

GF: Any = galois.GF(2**16)
Q = 65535


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    rs.warm_up()


def words(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)


def omega(idx: Any) -> Any:
    """Evaluation points ``omega_i = phi(i)`` as galois elements."""
    return GF(cantor.phi_table()[np.asarray(idx, dtype=np.int64)])


def gf_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` over GF(2^16) with galois's elementwise multiply and add (XOR) reduce."""
    return np.asarray(np.add.reduce(GF(a)[:, :, None] * GF(b)[None, :, :], axis=1))


def lagrange(x: Any, y: Any, z: Any) -> Any:
    """The polynomial of degree ``< len(x)`` through ``(x, y)``, evaluated at ``z`` (galois)."""
    diff = x[:, None] - x[None, :]
    diff[np.diag_indices(x.size)] = 1
    weights = y / np.multiply.reduce(diff, axis=1)
    out = GF(np.zeros(z.size, dtype=np.uint16))
    for t in range(z.size):
        terms = z[t] - x
        hit = np.flatnonzero(terms == 0)
        if hit.size:
            out[t] = y[hit[0]]
            continue
        out[t] = np.multiply.reduce(terms) * np.add.reduce(weights / terms)
    return out


def round_trip(code: RSCode, data: np.ndarray, positions: list[int] | np.ndarray) -> np.ndarray:
    word = code.encode(data)
    return code.decode(positions, word[np.asarray(positions)])


# --------------------------------------------------------------------------------------------
# (a) every erasure pattern of small codes


@pytest.mark.parametrize("n, k", [(6, 3), (8, 4), (9, 6), (5, 1), (6, 2), (7, 5), (4, 3)])
def test_every_erasure_pattern(n: int, k: int) -> None:
    rng = np.random.default_rng([n, k])
    code = RSCode(n, k)
    data = words(rng, k, 3)
    word = code.encode(data)
    assert np.array_equal(word[:k], data)
    for subset in itertools.combinations(range(n), k):
        pos = list(subset)
        rng.shuffle(pos)
        assert np.array_equal(code.decode(pos, word[pos]), data), pos
    # more than k positions: decoding reads the k smallest
    pos = list(rng.permutation(n))
    assert np.array_equal(code.decode(pos, word[pos]), data)
    assert list(code.used_positions(pos)) == list(range(k))


def test_small_codes_cover_all_layouts() -> None:
    kinds = {RSCode(n, k).kind for n, k in [(6, 3), (5, 1), (65536, 40000)]}
    assert kinds == {"high", "low", "full"}


# --------------------------------------------------------------------------------------------
# (b) random patterns of long codes, up to the full field


@pytest.mark.parametrize("n, k, kind", [
    (65535, 32768, "low"), (65535, 32767, "high"), (65536, 61440, "high"), (65536, 1, "low"),
    (65536, 65535, "high"), (65536, 40000, "full"), (65535, 1000, "full"),
    (60000, 50000, "full"), (40000, 3000, "low"),
])
def test_long_codes_random_patterns(n: int, k: int, kind: str) -> None:
    rng = np.random.default_rng([n, k, 1])
    code = RSCode(n, k)
    assert code.kind == kind
    data = words(rng, k, 2)
    word = code.encode(data)
    for _ in range(2):
        pos = rng.choice(n, size=k, replace=False)
        assert np.array_equal(code.decode(pos, word[pos]), data)


# --------------------------------------------------------------------------------------------
# (c) galois: generator, the RS code itself, MDS, the transforms and the locator


@pytest.mark.parametrize("n, k", [(6, 3), (9, 6), (7, 2), (12, 8), (17, 1), (40, 39), (3, 2)])
def test_encode_is_generator_product(n: int, k: int) -> None:
    rng = np.random.default_rng([n, k, 2])
    code = RSCode(n, k)
    g = code.generator()
    assert g.shape == (n, k) and np.array_equal(g[:k], np.eye(k, dtype=np.uint16))
    data = words(rng, k, 5)
    assert np.array_equal(gf_matmul(g, data), code.encode(data))


def _reference_parity(n: int, k: int, data: np.ndarray) -> np.ndarray:
    """Parity from the documented layout by Lagrange interpolation in galois (no FFT).

    The code word is ``f(omega_i)`` for the polynomial ``f`` of degree below ``K`` through the
    data points and the forced zeros (their number is exactly ``K``).
    """
    p = n - k
    k2, p2 = 1 << (k - 1).bit_length(), 1 << (p - 1).bit_length()
    code = RSCode(n, k)
    big = code.size
    if code.kind == "high":
        d_idx, p_idx, zeros = p2 + np.arange(k), np.arange(p), np.arange(p2 + k, big)
    elif code.kind == "low":
        d_idx, p_idx, zeros = np.arange(k), k2 + np.arange(p), np.arange(k, k2)
    else:
        d_idx, p_idx, zeros = p + np.arange(k), np.arange(p), np.arange(n, big)
    assert np.array_equal(code.eval_index, np.concatenate([d_idx, p_idx]))
    x = omega(np.concatenate([d_idx, zeros]))
    out = np.empty((p, data.shape[1]), dtype=np.uint16)
    for col in range(data.shape[1]):
        y = GF(np.concatenate([data[:, col], np.zeros(zeros.size, dtype=np.uint16)]))
        out[:, col] = np.asarray(lagrange(x, y, omega(p_idx)))
    return out


@pytest.mark.parametrize("n, k", [(6, 3), (9, 6), (5, 1), (7, 2), (12, 5), (20, 13), (3, 2)])
def test_code_is_reed_solomon(n: int, k: int) -> None:
    rng = np.random.default_rng([n, k, 3])
    data = words(rng, k, 2)
    assert np.array_equal(RSCode(n, k).parity(data), _reference_parity(n, k, data))


@pytest.mark.parametrize("n, k", [(8, 4), (9, 6)])
def test_generator_is_mds(n: int, k: int) -> None:
    g = GF(RSCode(n, k).generator())
    for rows in itertools.combinations(range(n), k):
        assert np.linalg.matrix_rank(g[list(rows)]) == k


def _novel_basis_values(m: int, off: int) -> Any:
    """``X_i(omega_{off + t})`` for ``i, t < 2^m``, straight from the definition, in galois."""
    pts = omega(off + np.arange(1 << m))
    s = []
    for j in range(m):
        sj = GF(np.ones(pts.size, dtype=np.uint16))
        for a in omega(np.arange(1 << j)):
            sj = sj * (pts - a)
        s.append(sj)
    x = GF(np.ones((1 << m, pts.size), dtype=np.uint16))
    for i in range(1 << m):
        for j in range(m):
            if i >> j & 1:
                x[i] = x[i] * s[j]
    return x


@pytest.mark.parametrize("m, off", [(1, 0), (3, 0), (3, 8), (4, 48), (2, 65532)])
def test_fft_evaluates_novel_basis(m: int, off: int) -> None:
    rng = np.random.default_rng([m, off])
    coef = words(rng, 1 << m, 3)
    basis = _novel_basis_values(m, off)  # (i, t)
    want = gf_matmul(np.asarray(basis.T), coef)
    log_t, exp_t, plog = rs._tables()
    w = coef.copy()
    rs._fft(w, off, 0, 1 << m, log_t, exp_t, plog)
    assert np.array_equal(w, want)
    rs._ifft(w, off, 0, 1 << m, log_t, exp_t, plog)
    assert np.array_equal(w, coef)


def test_formal_derivative_in_novel_basis() -> None:
    """FFT(derivative(D)) equals D' by the product rule on ``D = sum d_i prod s_j``, with
    ``s_j' = sum_a prod_{b != a} (x - b)`` (``a, b`` in the subspace) evaluated directly."""
    rng = np.random.default_rng(5)
    m = 4
    coef = words(rng, 1 << m, 1)
    pts = omega(np.arange(1 << m))
    s, ds = [], []
    for j in range(m):
        sub = omega(np.arange(1 << j))
        factors = pts[:, None] - sub[None, :]  # (point, a)
        s.append(np.multiply.reduce(factors, axis=1))
        d = GF(np.zeros(pts.size, dtype=np.uint16))
        for a in range(sub.size):
            rest = np.delete(factors, a, axis=1)
            d = d + (np.multiply.reduce(rest, axis=1) if rest.shape[1] else GF(1))
        ds.append(d)
    want = GF(np.zeros(pts.size, dtype=np.uint16))
    for i in range(1 << m):
        bits = [j for j in range(m) if i >> j & 1]
        for j in bits:
            term = ds[j] * GF(int(coef[i, 0]))
            for other in bits:
                if other != j:
                    term = term * s[other]
            want = want + term
    log_t, exp_t, plog = rs._tables()
    w = coef.copy()
    rs._formal_derivative(w)
    rs._fft(w, 0, 0, 1 << m, log_t, exp_t, plog)
    assert np.array_equal(w[:, 0], np.asarray(want))


def test_locator_logs_are_products() -> None:
    """``lam_i = log prod_{e in E, e != i} (omega_i + omega_e)`` (Walsh-Hadamard trick)."""
    code = RSCode(9, 6)  # N = 16
    used = np.array([0, 2, 3, 5, 7, 8])
    lam = code._locator(used)
    erased = np.flatnonzero(code._erased_base)
    erased = np.setdiff1d(erased, code.eval_index[used])
    assert erased.size == 4  # N - K erasures: K = N - p2, p2 = 4
    for i in range(code.size):
        others = [e for e in erased if e != i]
        prod = np.prod(omega(i) + omega(others))
        assert lam[i] == int(np.log(prod)) % Q


# --------------------------------------------------------------------------------------------
# (d) the reed-solomon-leopard library (reed-solomon-simd) on the same shards

LIB_SHAPES = [(3, 2), (2, 3), (3, 3), (3, 4), (4, 3), (4, 4), (1, 5), (5, 1), (1, 1), (64, 64),
              (65, 64), (64, 65), (720, 360), (100, 1000), (6000, 3000), (1000, 24)]


@pytest.mark.parametrize("k, p", LIB_SHAPES)
def test_parity_equals_library(k: int, p: int) -> None:
    lib = pytest.importorskip("reed_solomon_leopard")
    rng = np.random.default_rng([k, p, 4])
    code = RSCode(k + p, k)
    data = words(rng, k, 64)
    parity = code.parity(data)
    assert np.array_equal(cantor.from_shards(lib.encode(cantor.to_shards(data), p)), parity)
    # the library decodes our shards, and we decode the library's
    lost = rng.choice(k, size=min(k, p), replace=False)
    kept = np.setdiff1d(np.arange(k), lost)
    rec = rng.choice(p, size=lost.size, replace=False)
    shards, rshards = cantor.to_shards(data), cantor.to_shards(parity)
    restored = lib.decode(k, p, {int(i): shards[i] for i in kept},
                          {int(j): rshards[j] for j in rec})
    assert np.array_equal(cantor.from_shards([restored[int(i)] for i in lost]), data[lost])
    pos = np.concatenate([kept, k + rec])
    word = np.concatenate([data, parity])
    assert np.array_equal(code.decode(pos, word[pos]), data)


def test_full_layout_is_beyond_library() -> None:
    lib = pytest.importorskip("reed_solomon_leopard")
    for n, k in [(65536, 40000), (65535, 1000), (60000, 50000)]:
        assert RSCode(n, k).kind == "full" and not lib.supports(k, n - k)
    for k, p in LIB_SHAPES:
        assert lib.supports(k, p) and RSCode(k + p, k).kind != "full"


# --------------------------------------------------------------------------------------------
# (e) the basis change


def test_phi_is_a_field_isomorphism() -> None:
    phi = cantor.phi_table()
    assert np.unique(phi).size == 1 << 16  # the Cantor words are linearly independent
    assert np.array_equal(cantor.to_cantor(phi), np.arange(1 << 16))
    v = GF(np.array(cantor.CANTOR, dtype=np.uint16))
    assert v[0] == 1 and np.array_equal(v[1:] ** 2 + v[1:], v[:-1])  # a Cantor basis
    # the library's field: log(b) = log_x(phi(b)) for an LFSR modulo 0x1002D, exp its inverse
    lfsr = np.zeros(Q, dtype=np.int64)
    x = 1
    for e in range(Q):
        lfsr[e] = x
        x = (x << 1) ^ (0x1002D if x & 0x8000 else 0)
    log_poly = np.zeros(1 << 16, dtype=np.int64)
    log_poly[lfsr] = np.arange(Q)
    log_c = log_poly[phi]
    exp_c = np.zeros(Q, dtype=np.int64)
    exp_c[log_c[1:]] = np.arange(1, 1 << 16)
    rng = np.random.default_rng(6)
    a = rng.integers(1, 1 << 16, size=4000)
    b = rng.integers(1, 1 << 16, size=4000)
    prod_c = exp_c[(log_c[a] + log_c[b]) % Q]
    assert np.array_equal(GF(phi[prod_c]), GF(phi[a]) * GF(phi[b]))
    assert np.array_equal(GF(phi[a ^ b]), GF(phi[a]) + GF(phi[b]))
    assert np.array_equal(GF(phi[exp_c[(Q - log_c[a]) % Q]]), GF(phi[a]) ** -1)


def test_shard_layout() -> None:
    rows = np.arange(64, dtype=np.uint16).reshape(1, 64) * np.uint16(0x0101)
    raw = cantor.to_shards(cantor.from_cantor(rows))[0]
    assert raw[:32] == bytes(range(32)) and raw[32:64] == bytes(range(32))
    assert raw[64:96] == bytes(range(32, 64))
    assert np.array_equal(cantor.from_shards([raw]), cantor.from_cantor(rows))


# --------------------------------------------------------------------------------------------
# (f) the lengths the coded jobs use


@pytest.mark.parametrize("n, k", [(1080, 720), (9000, 6000), (900, 600), (90, 60), (9, 6),
                                  (3, 2), (2, 1), (4, 2), (5, 3), (6, 4), (12, 8), (15, 10)])
def test_round_trips_at_job_lengths(n: int, k: int) -> None:
    rng = np.random.default_rng([n, k, 7])
    code = RSCode(n, k)
    data = words(rng, k, 3)
    lost = rng.choice(k, size=min(k, n - k), replace=False)
    pos = rng.permutation(np.setdiff1d(np.arange(n), lost))
    word = code.encode(data)
    assert np.array_equal(code.decode(pos, word[pos]), data)
    # the cached pattern serves another batch, and columns are independent
    more = words(rng, k, 1)
    assert np.array_equal(code.decode(pos, code.encode(more)[pos]), more)
    assert np.array_equal(code.decode(pos, word[pos][:, 1:2]), data[:, 1:2])
    # only parity
    if n - k >= k:
        pos = k + rng.choice(n - k, size=k, replace=False)
        assert np.array_equal(code.decode(pos, word[pos]), data)


def test_zero_columns_and_all_data() -> None:
    code = RSCode(9, 6)
    assert code.encode(np.zeros((6, 0), dtype=np.uint16)).shape == (9, 0)
    data = words(np.random.default_rng(8), 6, 2)
    assert np.array_equal(round_trip(code, data, [5, 4, 3, 2, 1, 0]), data)


def test_cost_model() -> None:
    assert generator_encode_ops(5, 3) == 15 and generator_encode_ops(5, 3, vectors=2) == 30
    assert generator_decode_ops(10) == 1100 and generator_decode_ops(10, vectors=3) == 1300
    assert fft_decode_ops(1080, 720, 120) * 40 < generator_decode_ops(720, 120)
    assert fft_encode_ops(9000, 6000, 6000) < generator_encode_ops(3000, 6000, 6000) / 20
    assert fft_encode_ops(9000, 6000, 2) == 2 * fft_encode_ops(9000, 6000)
    assert fft_encode_ops(65536, 40000) == fft_decode_ops(65536, 40000)  # full: a decode


# --------------------------------------------------------------------------------------------
# (g) bad input


@pytest.mark.parametrize("n, k, field", [(1, 1, "n"), (65537, 3, "n"), (5, 0, "k"), (5, 5, "k"),
                                         (5, 7, "k"), (5.0, 2, "n"), (5, "2", "k")])
def test_bad_parameters(n: Any, k: Any, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        RSCode(n, k)
    assert err.value.field == field


def test_bad_arrays() -> None:
    code = RSCode(6, 3)
    good = np.zeros((3, 2), dtype=np.uint16)
    for bad in (np.zeros((3, 2)), np.zeros((2, 2), dtype=np.uint16),
                np.zeros(3, dtype=np.uint16)):
        with pytest.raises(ConfigError, match="data"):
            code.encode(bad)
        with pytest.raises(ConfigError, match="data"):
            code.parity(bad)
    word = code.encode(good)
    cases: list[tuple[Any, np.ndarray, str]] = [
        ([0, 1], word[:2], "at least k = 3"), ([0, 1, 1], word[:3], "distinct"),
        ([0, 1, 6], word[:3], r"\[0, 6\)"), ([-1, 1, 2], word[:3], r"\[0, 6\)"),
        ([[0, 1, 2]], word[:3], "1-D"), ([0.0, 1.0, 2.0], word[:3], "integers"),
        ([0, 1, 2], word[:2], "shape"), ([0, 1, 2], word[:3].astype(np.int64), "uint16")]
    for pos, vals, msg in cases:
        with pytest.raises(ConfigError, match=msg):
            code.decode(pos, vals)
