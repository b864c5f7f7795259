"""Iterative workloads: validation, step functions, numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from mpi_coded.cec.workloads import (
    REFERENCE_RTOL,
    WORKLOADS,
    linreg_eta,
    linreg_residual,
    linreg_step,
    linreg_targets,
    power_step,
    reference_linreg,
    reference_power,
    relative_error,
    start_vector,
    validate_workload,
)
from mpi_coded.errors import ConfigError


def spd(n: int, seed: int = 0) -> np.ndarray:
    """Symmetric, eigenvalues 1..n-1 and a clear top eigenvalue 2n."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    ev = np.r_[2.0 * n, np.arange(1.0, n)]
    return (q * ev) @ q.T


@pytest.mark.parametrize("w", WORKLOADS)
def test_valid_workloads(w):
    assert validate_workload(w, "float64", 8, 8) == w


@pytest.mark.parametrize("args", [
    ("pagerank", "float64", 8, 8),
    (None, "float64", 8, 8),
    ("power", "gf2^8", 8, 8),
    ("linreg", "gf2^16", 8, 4),
    ("power", "float64", 8, 4),
])
def test_bad_workload_names_the_key(args):
    with pytest.raises(ConfigError) as e:
        validate_workload(*args)
    assert e.value.field == "workload" and str(e.value).startswith("workload: ")


def test_independent_over_gf_and_any_shape():
    assert validate_workload("independent", "gf2^8", 9, 4) == "independent"
    assert validate_workload("linreg", "float64", 9, 4) == "linreg"


def test_power_reference_converges():
    x = spd(12)
    w, est = reference_power(x, start_vector(12, 0), 60)
    assert est[-1] == pytest.approx(24.0, rel=1e-9)
    top = np.linalg.eigh(x)[1][:, -1]
    assert min(np.linalg.norm(w - top), np.linalg.norm(w + top)) < 1e-8
    assert np.linalg.norm(w) == pytest.approx(1.0)


def test_power_step_is_rayleigh_and_normalised():
    w = np.array([1.0, 0.0])
    w2, lam = power_step(w, np.array([3.0, 4.0]))
    assert lam == 3.0 and np.allclose(w2, [0.6, 0.8])
    with pytest.raises(ConfigError):
        power_step(w, np.zeros(2))


def test_linreg_reference_converges_to_least_squares():
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.standard_normal((20, 6)))
    x = q * np.linspace(1.0, 2.0, 6)  # singular values 1..2: condition 2
    b = linreg_targets(20, 0)
    eta = linreg_eta(x)
    assert eta == pytest.approx(0.25)
    w, res = reference_linreg(x, b, start_vector(6, 0), eta, 200)
    w_ls = np.linalg.lstsq(x, b, rcond=None)[0]
    assert relative_error(w, w_ls) < 1e-10
    assert all(r1 <= r0 + 1e-12 for r0, r1 in zip(res, res[1:]))
    assert res[-1] == pytest.approx(np.linalg.norm(x @ w_ls - b), rel=1e-9)


def test_linreg_steps_match_the_reference_under_decoding_noise():
    """The runtime path (two decoded products a step) agrees within REFERENCE_RTOL."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((30, 10))
    b, w0, eta = linreg_targets(30, 5), start_vector(10, 5), linreg_eta(x)
    ref, _ = reference_linreg(x, b, w0, eta, 50)
    w = w0
    for _ in range(50):
        y = x @ w * (1 + 1e-12 * rng.standard_normal(30))
        z, _ = linreg_residual(y, b)
        g = x.T @ z * (1 + 1e-12 * rng.standard_normal(10))
        w = linreg_step(w, g, eta)
    assert relative_error(w, ref) < REFERENCE_RTOL


def test_seeded_vectors_are_reproducible():
    assert np.array_equal(start_vector(5, 3), start_vector(5, 3))
    assert np.linalg.norm(start_vector(5, 3)) == pytest.approx(1.0)
    assert np.array_equal(linreg_targets(4, 1), linreg_targets(4, 1))
    assert not np.array_equal(linreg_targets(4, 1), linreg_targets(4, 2))
