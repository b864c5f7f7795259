"""LT codes: robust Soliton, sparse encoding, peeling with inactivation (docs/theory.md (B.5))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.coded.placement import build_placement, server_rows
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes import lt, lt_kernels
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.fields import get_field

FIELDS = ["gf2^8", "gf2^16", "float64"]


def check_equal(field, got, want):
    F = get_field(field)
    if F.exact:
        assert np.array_equal(got, want)
    else:
        assert F.max_error(got, want) < 1e-8


# --- degree distribution -------------------------------------------------------------------


@settings(deadline=None)
@given(st.integers(1, 3000), st.floats(0.01, 0.5), st.floats(0.01, 0.99))
def test_robust_soliton_is_a_distribution(k, c, delta):
    mu = lt.robust_soliton(k, c, delta)
    assert mu.shape == (k + 1,) and mu[0] == 0.0
    assert np.all(mu >= 0) and mu.sum() == pytest.approx(1.0)
    assert 1.0 <= lt.mean_degree(k, c, delta) <= k
    assert lt.design_overhead(k, c, delta) >= 0.0


def test_robust_soliton_by_hand():
    # k = 100, c = 0.1, delta = 0.5: R = 0.1 ln(200) 10, spike at round(k/R) = 19
    k, c, delta = 100, 0.1, 0.5
    R = c * math.log(k / delta) * math.sqrt(k)
    spike = round(k / R)
    rho = np.array([0, 1 / k] + [1 / (d * (d - 1)) for d in range(2, k + 1)])
    tau = np.zeros(k + 1)
    tau[1:spike] = [R / (d * k) for d in range(1, spike)]
    tau[spike] = R * math.log(R / delta) / k
    beta = (rho + tau).sum()
    assert spike == 19
    assert np.allclose(lt.robust_soliton(k, c, delta), (rho + tau) / beta)
    assert lt.design_overhead(k, c, delta) == pytest.approx(beta - 1)
    # more c: more overhead
    assert lt.design_overhead(k, 0.2, delta) > lt.design_overhead(k, c, delta)


# --- encoding -------------------------------------------------------------------------------


@pytest.mark.parametrize("field", FIELDS)
def test_encode_is_sparse_psi_times_a(field):
    F = get_field(field)
    rng = np.random.default_rng(3)
    code = lt.lt_code(120, 200, field, seed=5)
    A = F.random((120, 7), rng)
    G = code.generator()
    assert np.count_nonzero(G, axis=1).tolist() == code.degrees.tolist()
    rows = [5, 0, 199, 42]
    check_equal(field, code.encode(A), F.matmul(G, A))
    check_equal(field, code.encode(A, rows), F.matmul(G[rows], A))
    # chunking keeps whole rows together
    check_equal(field, code.encode(A, chunk=7), F.matmul(G, A))


def test_codes_are_seeded():
    a, b = lt.lt_code(300, 400, seed=9), lt.lt_code(300, 400, seed=9)
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.coeffs, b.coeffs)
    c = lt.lt_code(300, 400, seed=10)
    assert not np.array_equal(a.indptr, c.indptr) or not np.array_equal(a.indices, c.indices)
    assert np.all(a.coeffs != 0)
    real = lt.lt_code(300, 400, "float64", seed=9)
    assert set(np.unique(real.coeffs).tolist()) == {-1.0, 1.0}
    gauss = lt.lt_code(300, 400, "float64", seed=9, real_coeffs="gaussian")
    assert len(np.unique(gauss.coeffs)) == len(gauss.coeffs)


# --- decoding -------------------------------------------------------------------------------


@pytest.mark.parametrize("field", FIELDS)
def test_decode_from_enough_random_rows(field):
    F = get_field(field)
    rng = np.random.default_rng(11)
    m = 1000
    code = lt.lt_code(m, 2 * m, field, seed=2)
    A = F.random((m, 40), rng)
    X = F.random((40, 5), rng)
    C = code.encode(A)
    rows = rng.permutation(2 * m)[: int(1.03 * m)]
    assert code.decodable(rows)
    got = code.decode(rows, F.matmul(C[rows], X))
    check_equal(field, got, F.matmul(A, X))
    vec = code.decode(rows, F.matmul(C[rows], X[:, 0]))
    assert vec.shape == (m,)
    check_equal(field, vec, F.matmul(A, X[:, 0]))


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 40), st.integers(0, 2**32 - 1), st.floats(0.7, 1.6),
       st.sampled_from(["pm1", "gaussian"]))
def test_decodable_is_full_column_rank(m, seed, ratio, coeffs):
    # float64: the exact rank of the dense generator is an independent reference
    code = lt.lt_code(m, 2 * m, "float64", seed=seed, real_coeffs=coeffs)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(2 * m)[: max(1, int(ratio * m))]
    full_rank = np.linalg.matrix_rank(code.generator(rows)) == m
    assert code.decodable(rows) == full_rank
    if full_rank:
        A = rng.standard_normal((m, 3))
        got = code.decode(rows, code.encode(A, rows))
        assert np.max(np.abs(got - A)) < 1e-6 * max(1.0, np.max(np.abs(A)))
    else:
        with pytest.raises(NotDecodable):
            code.decode(rows, np.zeros((len(rows), 2)))


@settings(max_examples=15, deadline=None)
@given(st.integers(5, 30), st.integers(0, 2**32 - 1), st.floats(0.9, 1.3))
def test_decodable_over_gf_is_full_column_rank(m, seed, ratio):
    # galois's rank over GF(2^8) is the independent reference
    F = get_field("gf2^8")
    code = lt.lt_code(m, 2 * m, "gf2^8", seed=seed)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(2 * m)[: max(1, int(ratio * m))]
    full_rank = int(np.linalg.matrix_rank(code.generator(rows).view(F.gf))) == m
    assert code.decodable(rows) == full_rank
    A = F.random((m, 2), rng)
    if full_rank:
        assert np.array_equal(code.decode(rows, code.encode(A, rows)), A)


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 40), st.integers(0, 2**32 - 1), st.floats(0.5, 1.4),
       st.sampled_from(["float64", "gf2^8"]))
def test_deficit_is_the_missing_rank(m, seed, ratio, field):
    # the dense generator's rank (numpy over float64, galois over GF(2^8)) is independent
    code = lt.lt_code(m, 2 * m, field, seed=seed)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(2 * m)[: max(1, int(ratio * m))]
    dense = code.generator(rows)
    if field != "float64":
        dense = dense.view(get_field(field).gf)
    missing = m - int(np.linalg.matrix_rank(dense))
    d = code.deficit(rows)
    assert (d == 0) == (missing == 0)
    assert 1 <= d <= missing or d == missing == 0  # a lower bound, never more
    covered = np.unique(code.sub(rows)[1]).size == m
    if len(rows) >= m and covered:
        assert d == missing  # exact once the peeling completes


def test_shortest_decoding_prefix_is_the_first_that_decodes():
    for field in ("float64", "gf2^8"):
        for seed in range(4):
            code = lt.lt_code(120, 240, field, seed=seed)
            order = np.random.default_rng(seed).permutation(240)
            first = next(n for n in range(241) if code.decodable(order[:n]))  # linear scan
            assert code.rows_needed(order) == first
            def deficit(n, code=code, order=order):
                return code.deficit(order[:n])

            assert lt.shortest_decoding_prefix(deficit, 0, first - 1) is None
    code = lt.lt_code(50, 60, seed=1)
    assert code.rows_needed(np.arange(49)) is None


@pytest.mark.parametrize("answer", [0, 1, 5, 37, 200, 999])
def test_the_prefix_search_is_exact_and_short_when_rows_add_nothing(answer):
    # a deficit stuck at 1 (rows in the span already) until the answer: no walk row by row
    calls = []

    def deficit(n):
        calls.append(n)
        return 0 if n >= answer else 1

    assert lt.shortest_decoding_prefix(deficit, 0, 1000) == answer
    assert len(calls) <= 2 * math.ceil(math.log2(answer + 2)) + 4, calls
    assert lt.shortest_decoding_prefix(lambda n: 1, 0, 1000) is None
    assert lt.shortest_decoding_prefix(lambda n: 0, 7, 1000) == 7
    assert lt.shortest_decoding_prefix(lambda n: 0, 8, 7) is None


def test_covering_prefix_is_the_first_that_touches_every_source_row():
    code = lt.lt_code(60, 240, seed=5)
    order = np.random.default_rng(5).permutation(240)
    cols = [set(code.sub([int(i)])[1].tolist()) for i in order]
    first = next(n for n in range(241) if len(set().union(*cols[:n])) == 60)  # by hand
    assert lt.covering_prefix(code, [], order) == first
    known = order[:first - 1]  # all but the last one's new columns
    assert lt.covering_prefix(code, known, order[first - 1:]) == 1
    assert lt.covering_prefix(code, order, []) == 0
    assert lt.covering_prefix(code, [], order[:first - 1]) is None


def test_too_few_rows_and_uncovered_columns():
    code = lt.lt_code(200, 400, seed=4)
    assert not code.decodable(np.arange(199))
    holding_0 = {i for i in range(400) if 0 in code.indices[code.indptr[i]:code.indptr[i + 1]]}
    rows = [i for i in range(400) if i not in holding_0]
    assert len(rows) >= 200 and not code.decodable(rows)
    with pytest.raises(NotDecodable):
        code.decode(np.arange(100), np.zeros((100, 1), dtype=np.uint8))


def test_inactivation_decodes_where_peeling_stalls():
    stalls = 0
    for seed in range(5):
        code = lt.lt_code(400, 800, seed=seed)
        with_inact, plain = code.rows_needed(), code.rows_needed(inactivation=False)
        assert with_inact is not None and plain is not None
        assert with_inact <= plain
        assert code.decodable(np.arange(with_inact))
        assert not code.decodable(np.arange(with_inact - 1))
        stalls += with_inact < plain
    assert stalls >= 4


# --- overhead and failures ------------------------------------------------------------------


def test_measured_overhead_near_the_design():
    m, trials = 500, 6
    design = 1 + lt.design_overhead(m)
    peel = lt.measure_overhead(m, trials, inactivation=False, seed=100)
    inact = lt.measure_overhead(m, trials, seed=100)
    assert peel.trials == inact.trials == trials
    # plain peeling needs about Luby's k beta rows; inactivation needs barely more than m
    assert peel.overhead == pytest.approx(design, abs=0.1)
    assert 1.0 <= inact.overhead <= 1.02 and inact.worst < design
    assert inact.failures == 0  # at eps = the design overhead
    assert peel.design == pytest.approx(design)


def test_failures_are_counted():
    m, trials = 300, 6
    plain = lt.measure_overhead(m, trials, eps=0.005, seed=7, inactivation=False)
    assert plain.failures == trials  # plain peeling never decodes from m (1 + 0.5%) rows
    exact = lt.measure_overhead(m, trials, eps=0.0, seed=7)
    recount = sum(not lt.lt_code(m, 2 * m, seed=7 + t).decodable(np.arange(m))
                  for t in range(trials))
    assert exact.failures == recount
    assert 0 < exact.failures < trials  # from exactly m rows: sometimes, not always
    assert lt.measure_overhead(m, trials, eps=0.5, seed=7).failures == 0


# --- runtime helpers ------------------------------------------------------------------------


def test_server_rows_follow_the_batch_layout():
    params = coded_params("unified", 6, 4, "1/2", 3, n=2, N=4, field="float64")
    placement = build_placement(params)
    for s in range(6):
        assert server_rows(6, 2, 3, s).tolist() == list(placement.stored_rows(s))


def test_finishers_needed():
    K, p, eta = 9, 2, 30
    m = eta * math.comb(K, p) * 6 // K  # rate 6/9 as in the paper's setting
    code = lt.lt_code(m, eta * math.comb(K, p), seed=1)
    rows_of = [server_rows(K, p, eta, s) for s in range(K)]
    order = [3, 1, 4, 0, 8, 5, 2, 7, 6]
    g = lt.finishers_needed(code, rows_of, order)
    assert g is not None
    union = lambda j: np.unique(np.concatenate([rows_of[s] for s in order[:j]]))  # noqa: E731
    assert code.decodable(union(g)) and (g == 1 or not code.decodable(union(g - 1)))
    assert lt.finishers_needed(code, rows_of, order, at_least=6) == max(g, 6)


@pytest.mark.parametrize("call,needle", [
    (lambda: lt.robust_soliton(0), "m: must be an integer >= 1"),
    (lambda: lt.robust_soliton(10, c=0), "c: must be > 0"),
    (lambda: lt.robust_soliton(10, delta=1.0), "delta: must be in"),
    (lambda: lt.lt_code(10, 0), "r: must be an integer >= 1"),
    (lambda: lt.lt_code(10, 20, field="gf2^4"), "field: must be one of"),
    (lambda: lt.lt_code(10, 20, "float64", real_coeffs="binary"), "real_coeffs: must be"),
    (lambda: lt.lt_code(10, 20).decodable([25]), "rows: coded rows must be in 0..19"),
    (lambda: lt.lt_code(10, 20).decode([0, 1], np.zeros((3, 1))), "values: must have one row"),
    (lambda: server_rows(4, 2, 1, 4), "server: must be in 0..3"),
    (lambda: lt.measure_overhead(10, 0), "trials: must be >= 1"),
])
def test_bad_input(call, needle):
    with pytest.raises(ConfigError, match=needle):
        call()


# --- numba kernels against the numpy reference ----------------------------------------------


def _subsets(code, rng, count):
    """Row subsets of ``code``: random sizes around ``m`` (some below), random order, some
    without any row holding a chosen column, one with repeated rows."""
    m, r = code.m, code.r
    out = []
    for t in range(count):
        size = int(rng.integers(max(1, m // 2), min(r, int(1.3 * m) + 2) + 1))
        rows = rng.permutation(r)[:size]
        if t % 4 == 3:
            col = int(rng.integers(m))
            rows = np.array([i for i in rows
                             if col not in code.indices[code.indptr[i]:code.indptr[i + 1]]],
                            dtype=np.int64)
        out.append(rows)
    out.append(np.concatenate([out[0], out[0][: m // 3]]))
    out.append(np.arange(r))
    return out


def _same_peel(a, b):
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.cols, b.cols)
    assert np.array_equal(a.wave_ptr, b.wave_ptr)
    assert np.array_equal(a.inactive, b.inactive) and np.array_equal(a.used, b.used)
    assert a.complete == b.complete
    assert len(a.waves) == len(b.waves)
    for (ra, ca), (rb, cb) in zip(a.waves, b.waves):
        assert np.array_equal(ra, rb) and np.array_equal(ca, cb)


def _close(x, y):
    """Equal up to rounding: the kernel adds a row's entries in numpy's pairwise order (bit
    for bit equal under numpy 2.4), but that order is numpy's internal detail, so a test
    that must hold on every supported numpy (the lowest is 1.24) asks for 1e-12 only."""
    scale = max(1.0, float(np.max(np.abs(y)))) if y.size else 1.0
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-12, atol=1e-12 * scale))


KERNEL_CODES = [(10, 0, "pm1"), (40, 1, "gaussian"), (150, 2, "pm1"), (400, 3, "gaussian"),
                (720, 4, "pm1")]


@pytest.mark.parametrize("m,seed,coeffs", KERNEL_CODES)
def test_numba_peel_is_the_reference_peel(m, seed, coeffs):
    code = lt.lt_code(m, 2 * m, "float64", seed=seed, real_coeffs=coeffs)
    rng = np.random.default_rng(seed)
    seen = {"inactivated": 0, "complete": 0, "incomplete": 0}
    for rows in _subsets(code, rng, 8 if m >= 400 else 16):
        indptr, indices, _ = code.sub(rows)
        for inactivation in (True, False):
            got = lt._peel(indptr, indices, m, inactivation)
            want = lt._peel_reference(indptr, indices, m, inactivation)
            _same_peel(got, want)
            seen["inactivated"] += len(want.inactive) > 0
            seen["complete" if want.complete else "incomplete"] += 1
    assert min(seen.values()) > 0, seen  # every branch of the peeling ran


@pytest.mark.parametrize("field", ["float64", "gf2^8"])
@pytest.mark.parametrize("m,seed,coeffs", KERNEL_CODES)
def test_decodable_is_the_reference_decision(m, seed, coeffs, field):
    code = lt.lt_code(m, 2 * m, field, seed=seed, real_coeffs=coeffs)
    rng = np.random.default_rng(100 + seed)
    ar = lt.arith(field)
    answers = set()
    for rows in _subsets(code, rng, 6 if m >= 400 else 12):
        d = code.deficit(rows)
        assert d == code.deficit(rows, reference=True)
        got = d == 0
        assert code.decodable(rows) == got
        answers.add(got)
        indptr, indices, coeffs_ = code.sub(rows)
        peeled = lt._peel(indptr, indices, m, True)
        if field == "float64" and peeled.complete and len(peeled.inactive):
            # the kernel's alpha | beta and M are numpy's (to rounding)
            Y = np.zeros((len(rows), 0))
            Z, T = lt_kernels.propagate(indptr, indices, coeffs_, m, Y, peeled.rows,
                                        peeled.cols, peeled.inactive, peeled.used)
            Zr, Tr = lt._propagate_reference(ar, indptr, indices, coeffs_, m, Y, peeled)
            assert _close(Z, Zr) and _close(T, Tr)
    if m >= 40:
        assert answers == {True, False}


def test_propagate_sums_long_rows_as_numpy():
    # rows of more than 128 (and 256) other entries: numpy's pairwise sum splits them
    m = 700
    rng = np.random.default_rng(5)
    base = lt.lt_code(m, 2 * m, "float64", seed=5, real_coeffs="gaussian")
    dense = [np.sort(rng.choice(m, d, replace=False)) for d in (140, 300, 699, 700, 129)]
    indptr = np.concatenate([base.indptr, base.indptr[-1] + np.cumsum([len(d) for d in dense])])
    indices = np.concatenate([base.indices] + dense)
    coeffs = np.concatenate([base.coeffs, rng.standard_normal(len(indices) - len(base.indices))])
    code = lt.LTCode(m, "float64", indptr, indices, coeffs)
    ar = lt.arith("float64")
    for rows in (np.r_[np.arange(2 * m, 2 * m + 5), rng.permutation(2 * m)[:m]],
                 np.r_[rng.permutation(2 * m)[:m - 200], np.arange(2 * m, 2 * m + 5)]):
        sub = code.sub(rows)
        peeled = lt._peel(sub[0], sub[1], m, True)
        assert peeled.complete and len(peeled.inactive)
        long_rows = np.diff(sub[0]) > 129
        assert long_rows[peeled.rows].any() and long_rows[~peeled.used].any()
        Y = rng.standard_normal((len(rows), 3))
        got = lt_kernels.propagate(*sub, m, Y, peeled.rows, peeled.cols, peeled.inactive,
                                   peeled.used)
        want = lt._propagate_reference(ar, *sub, m, Y, peeled)
        assert _close(got[0], want[0]) and _close(got[1], want[1])


@pytest.mark.parametrize("field", FIELDS)
def test_decode_with_the_kernels_is_exact(field):
    F = get_field(field)
    m = 300
    code = lt.lt_code(m, 2 * m, field, seed=8)
    rng = np.random.default_rng(8)
    A = F.random((m, 6), rng)
    X = F.random((6, 4), rng)
    order = rng.permutation(2 * m)
    rows = order[: code.rows_needed(order) + 3]
    indptr, indices, _ = code.sub(rows)
    assert len(lt._peel(indptr, indices, m, True).inactive) > 0  # back-substitution runs
    values = F.matmul(code.encode(A, rows), X)
    got = code.decode(rows, values)
    check_equal(field, got, F.matmul(A, X))
    want = code._solve(rows, np.ascontiguousarray(values), reference=True)
    assert want is not None
    if F.exact:
        assert np.array_equal(got, want)
    else:
        assert _close(got, want)  # same Z, M and b (to rounding), same numpy solve


def test_warm_up_compiles_the_kernels():
    code = lt.lt_code(20, 40, "float64", seed=1)
    code.warm_up()
    assert lt_kernels.peel.signatures and lt_kernels.propagate.signatures
