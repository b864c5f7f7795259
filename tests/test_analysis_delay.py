"""The shifted-exponential delay model and the per-phase complexities (docs/theory.md (B.6))."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.analysis import delay
from mpi_coded.errors import ConfigError

K_I = st.integers(1, 40).flatmap(lambda K: st.tuples(st.just(K), st.integers(1, K)))
SIGMA = st.floats(0.01, 1e6)


def test_paper_setting_sixth_fastest_of_nine():
    # the BDC paper's setting K = 9, q = 6: mean 1 + 1/4 + ... + 1/9, variance sum 1/j^2
    assert delay.order_stat_mean(9, 6, 1.0) == pytest.approx(1.995635, abs=5e-7)
    assert delay.order_stat_var(9, 6, 1.0) == pytest.approx(0.178657, abs=5e-7)
    assert delay.order_stat_moments(9, 6, 1.0) == (delay.order_stat_mean(9, 6),
                                                   delay.order_stat_var(9, 6))


@settings(deadline=None)
@given(K_I, SIGMA)
def test_moments_scale_and_grow(ki, sigma):
    K, i = ki
    mean, var = delay.order_stat_moments(K, i, sigma)
    assert mean == pytest.approx(sigma * delay.order_stat_mean(K, i, 1.0), rel=1e-12)
    assert var == pytest.approx(sigma**2 * delay.order_stat_var(K, i, 1.0), rel=1e-12)
    if i < K:
        assert delay.order_stat_mean(K, i + 1, sigma) > mean
    # shift-only variant: the tail keeps mean 1
    m2, v2 = delay.order_stat_moments(K, i, sigma, scale_tail=False)
    assert m2 == pytest.approx(sigma + delay.order_stat_mean(K, i, 1.0) - 1.0, rel=1e-12)
    assert v2 == pytest.approx(delay.order_stat_var(K, i, 1.0), rel=1e-12)


@settings(deadline=None)
@given(K_I, SIGMA, st.booleans())
def test_gamma_matches_the_moments(ki, sigma, scale_tail):
    K, i = ki
    g = delay.order_stat_gamma(K, i, sigma, scale_tail)
    mean, var = delay.order_stat_moments(K, i, sigma, scale_tail)
    assert g.shift == sigma
    assert g.mean == pytest.approx(mean, rel=1e-9)
    assert g.var == pytest.approx(var, rel=1e-9)
    assert g.rate == pytest.approx(1.0 / g.scale)
    assert g.cdf(sigma) == 0.0
    assert 0.0 < g.cdf(mean) < 1.0


@pytest.mark.parametrize("K", [1, 4, 9])
def test_fastest_is_exact(K):
    # the minimum of K shifted exponentials: excess ~ Exp(K / sigma), a Gamma of shape 1
    sigma = 2.5
    t = np.linspace(sigma, 4 * sigma, 17)
    want = 1.0 - np.exp(-K * (t / sigma - 1.0))
    assert delay.order_stat_gamma(K, 1, sigma).shape == pytest.approx(1.0)
    assert np.allclose(delay.order_stat_cdf(t, K, 1, sigma), want, atol=1e-12)


def test_gamma_approximates_sampled_order_statistics():
    K, i, sigma = 9, 6, 3.0
    rng = np.random.default_rng(7)
    draws = np.asarray(delay.sample_runtime(sigma, rng, size=(20000, K)))
    h = np.sort(draws, axis=1)[:, i - 1]
    assert h.mean() == pytest.approx(delay.order_stat_mean(K, i, sigma), rel=0.01)
    assert h.var() == pytest.approx(delay.order_stat_var(K, i, sigma), rel=0.05)
    grid = np.quantile(h, np.linspace(0.01, 0.99, 99))
    empirical = np.searchsorted(np.sort(h), grid, side="right") / len(h)
    assert np.max(np.abs(empirical - delay.order_stat_cdf(grid, K, i, sigma))) < 0.03


def test_mixture_mean():
    want = 0.25 * delay.order_stat_mean(9, 6, 2.0) + 0.75 * delay.order_stat_mean(9, 7, 2.0)
    assert delay.mixture_order_mean({6: 0.25, 7: 0.75}, 9, 2.0) == pytest.approx(want)
    assert delay.mixture_order_mean({6: 1.0}, 9, 2.0) == delay.order_stat_mean(9, 6, 2.0)
    with pytest.raises(ConfigError, match="pmf: probabilities must sum to 1"):
        delay.mixture_order_mean({6: 0.5}, 9)


def test_field_costs():
    assert delay.field_op_costs(8) == (8 / 64, 8 * 3)
    assert delay.field_op_costs(16) == (16 / 64, 16 * 4)
    assert delay.field_op_costs(None) == (1.0, 1.0)
    with pytest.raises(ConfigError, match="l: field degree"):
        delay.field_op_costs(1)


def test_phase_operation_counts():
    assert delay.inner_product_ops(5) == delay.Ops(4, 5)
    assert delay.matvec_ops(3, 5, 2) == delay.Ops(24, 30)
    ops = delay.Ops(4, 5)
    assert ops.cost(0.5, 2.0) == 12.0
    assert ops + ops == delay.Ops(8, 10)
    # eq. (8): a dense coded row costs m products per column, a block-diagonal one m/T
    m, T, rows, n = 6000, 250, 2000, 6000
    dense, bdc = delay.encode_ops(rows, m, n), delay.encode_ops(rows, m // T, n)
    assert dense == delay.Ops(rows * n * (m - 1), rows * n * m)
    assert bdc == delay.Ops(rows * n * (m // T - 1), rows * n * (m // T))


def test_decoding_counts():
    # eq. (9): n (xi n - 1) additions, n^2 xi multiplications
    assert delay.bm_decode_ops(36, 1 / 3) == delay.Ops(36 * 11, 36 * 36 / 3)
    # eq. (10): the paper's fits a + b n log2(c n)
    fft = delay.fft_decode_ops(1024)
    assert fft.multiplications == pytest.approx(2 + 1024 * 12)
    assert fft.additions == pytest.approx(2 + 8.5 * 1024 * math.log2(0.867 * 1024))
    for n, parts in [(36, 250), (9000, 1), (9, 1000)]:
        sa, sm = delay.field_op_costs(16)
        bm = delay.bm_decode_ops(n, 1 / 3).cost(sa, sm) * parts
        ff = delay.fft_decode_ops(n).cost(sa, sm) * parts
        cost, algo = delay.rs_decode_cost(n, parts, 1 / 3, sa, sm)
        assert cost == min(bm, ff) and algo == ("bm" if bm <= ff else "fft")
    assert delay.rs_decode_cost(9000, 1, 1 / 3, 0.25, 64)[1] == "fft"


def test_delay_costs_travel_as_one_value():
    # GF(2^16): sigma_A = 16/64, sigma_M = 16 log2 16 (the paper's costs)
    costs = delay.DelayCosts.of_field(16)
    assert (costs.sa, costs.sm, costs.conv) == (0.25, 64.0, delay.Convention())
    assert costs.cost(delay.Ops(4, 2)) == 4 * 0.25 + 2 * 64.0
    assert delay.DelayCosts.of_field(None) == delay.DelayCosts(1.0, 1.0)
    # the decoder's cost at these costs; the authors' convention carries their eq. (10) c
    assert costs.rs_decode(36, 250, 1 / 3) == delay.rs_decode_cost(36, 250, 1 / 3, 0.25, 64.0)
    authors = delay.DelayCosts(0.25, 64.0, delay.Convention(authors=True))
    assert authors.conv.c_add == 0.86700826 and delay.Convention().c_add is None
    assert authors.rs_decode(9000, 1, 1 / 3, "fft") == delay.rs_decode_cost(
        9000, 1, 1 / 3, 0.25, 64.0, "fft", 0.86700826)
    with pytest.raises(dataclasses.FrozenInstanceError):
        costs.sa = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("call,needle", [
    (lambda: delay.order_stat_mean(9, 10), "i: must be in 1..K=9"),
    (lambda: delay.order_stat_var(9, 0), "i: must be in 1..K=9"),
    (lambda: delay.order_stat_moments(9, 3, -1.0), "sigma: must be >= 0"),
    (lambda: delay.order_stat_gamma(9, 3, 0.0), "sigma: must be > 0"),
])
def test_bad_input(call, needle):
    with pytest.raises(ConfigError, match=needle):
        call()


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), SIGMA)
def test_later_order_statistics_are_slower(K, sigma):
    # the true order statistics are stochastically ordered; the moment-matched
    # approximation keeps that up to a small error in the far tails
    t = delay.order_stat_mean(K, K // 2 + 1, sigma)
    cdfs = [delay.order_stat_cdf(t, K, i, sigma) for i in range(1, K + 1)]
    assert all(a >= b - 1e-3 for a, b in zip(cdfs, cdfs[1:]))
    assert cdfs[0] > cdfs[-1]
