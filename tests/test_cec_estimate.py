"""Speed estimation for speeds = "auto" and the step time under true speeds."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.cec.estimate import (
    ESTIMATORS,
    SpeedEstimator,
    step_time,
    validate_alpha,
    validate_estimator,
    validate_window,
)
from mpi_coded.errors import ConfigError


def feed(est: SpeedEstimator, tau: dict[int, float], rows: int = 100) -> None:
    for n, t in tau.items():
        est.observe(n, rows, t * rows)


def test_first_step_uses_equal_speeds():
    assert SpeedEstimator([1, 2, 3]).speeds() == {1: 1, 2: 1, 3: 1}


@pytest.mark.parametrize("kind", ESTIMATORS)
def test_recovers_steady_speeds(kind):
    est = SpeedEstimator([1, 2, 3, 4], kind=kind)
    for _ in range(3):
        feed(est, {1: 0.002, 2: 0.002, 3: 0.001, 4: 0.004})
    assert est.speeds() == {1: F(1, 2), 2: F(1, 2), 3: F(1), 4: F(1, 4)}
    assert est.seconds_per_row()[4] == pytest.approx(0.004)


def test_unobserved_machines_get_the_geometric_mean():
    est = SpeedEstimator([1, 2, 3])
    feed(est, {1: 0.001, 2: 0.004})
    assert est.seconds_per_row()[3] == pytest.approx(0.002)
    assert est.speeds() == {1: F(1), 2: F(1, 4), 3: F(1, 2)}


@pytest.mark.parametrize("factor", [5.0, 1 / 5])
def test_ewma_follows_a_5x_drift_within_3_observations(factor):
    est = SpeedEstimator([1, 2])
    for _ in range(4):
        feed(est, {1: 0.001, 2: 0.001})
    for _ in range(3):
        feed(est, {1: 0.001, 2: 0.001 * factor})
    ratio = float(est.speeds()[2] / est.speeds()[1]) if factor > 1 else \
        float(est.speeds()[1] / est.speeds()[2])
    # 5 ** (1/8) = 1.22: within 25% of the true 1/5, from 400% off
    assert 0.2 <= ratio <= 0.2 * 1.25


def test_median_rejects_a_single_outlier_ewma_does_not():
    med = SpeedEstimator([1, 2], kind="median")
    ewma = SpeedEstimator([1, 2], kind="ewma")
    for e in (med, ewma):
        for t in range(5):
            feed(e, {1: 0.001, 2: 0.01 if t == 2 else 0.001})
    assert med.speeds()[2] == 1
    assert ewma.speeds()[2] < 1


def test_median_lags_a_drift_by_half_the_window():
    est = SpeedEstimator([1, 2], kind="median", window=5)
    for _ in range(5):
        feed(est, {1: 0.001, 2: 0.001})
    feed(est, {1: 0.001, 2: 0.005})
    feed(est, {1: 0.001, 2: 0.005})
    assert est.speeds()[2] == 1
    feed(est, {1: 0.001, 2: 0.005})
    assert est.speeds()[2] == F(1, 5)


def test_empty_samples_are_skipped():
    est = SpeedEstimator([1, 2])
    assert not est.observe(1, 0, 0.5)
    assert not est.observe(1, 10, 0.0)
    assert est.observations[1] == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-9, 1e3), min_size=1, max_size=8),
       st.sampled_from(ESTIMATORS))
def test_speeds_are_bounded_fractions_fastest_one(taus, kind):
    est = SpeedEstimator(list(range(1, len(taus) + 1)), kind=kind)
    feed(est, {n + 1: t for n, t in enumerate(taus)}, rows=7)
    sp = est.speeds()
    assert max(sp.values()) == 1
    assert all(F(1, 1000) <= s <= 1 and s.denominator <= 1000 for s in sp.values())


@pytest.mark.parametrize("call, key", [
    (lambda: validate_estimator("mean"), "estimator"),
    (lambda: validate_estimator(3), "estimator"),
    (lambda: validate_alpha(0), "estimator_alpha"),
    (lambda: validate_alpha(1.5), "estimator_alpha"),
    (lambda: validate_alpha(True), "estimator_alpha"),
    (lambda: validate_window(0), "estimator_window"),
    (lambda: validate_window(2.5), "estimator_window"),
    (lambda: SpeedEstimator([1], kind="kalman"), "estimator"),
    (lambda: SpeedEstimator([1, 1]), "machines"),
    (lambda: SpeedEstimator([1]).observe(2, 1, 1.0), "machine"),
    (lambda: SpeedEstimator([1]).observe(1, 1, -1.0), "seconds"),
])
def test_bad_input_names_the_key(call, key):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == key and str(e.value).startswith(f"{key}: ")


def test_step_time_under_true_speeds():
    loads = {1: F(1, 2), 2: F(1, 2), 3: F(0)}
    assert step_time(loads, {1: F(1), 2: F(2), 3: F(1, 10)}) == F(1, 2)
    assert step_time({1: 6, 2: 0}, {1: F(3, 2)}) == 4
    with pytest.raises(ConfigError):
        step_time({1: F(1)}, {2: F(1)})
