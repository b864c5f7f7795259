"""BDC assignment matrix P and its heuristic solver (docs/theory.md (B.4))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded.coded.assignment import (
    batch_partition_rows,
    check_assignment,
    format_assignment,
    heuristic_assignment,
)
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.errors import ConfigError


def test_spec_example():
    P = heuristic_assignment(6, 2, 6)  # K=4, q=2, mu q=2 -> C(4,2)=6 batches, eta_b=2, T=6
    assert format_assignment(P) == ["110000", "001100", "000011",
                                    "110000", "001100", "000011"]


def test_divisible_is_constant():
    P = heuristic_assignment(15, 4, 2)
    assert np.all(P == 2)
    assert np.all(heuristic_assignment(5, 3, 3) == 1)  # T = eta_b: the all-ones matrix


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(1, 30))
def test_heuristic_sums(n_batches, eta, T):
    if (n_batches * eta) % T:
        return
    P = heuristic_assignment(n_batches, eta, T)
    assert P.shape == (n_batches, T)
    assert np.all(P.sum(axis=1) == eta)
    assert np.all(P.sum(axis=0) == n_batches * eta // T)
    assert P.max() - P.min() <= 1
    check_assignment(P, n_batches, eta, T)


def test_rows_handed_out_in_order():
    P = np.array([[2, 0], [1, 1], [0, 2]])
    parts = [[0, 1, 2], [10, 11, 12]]
    out = batch_partition_rows(P, parts)
    assert out == [[[0, 1], []], [[2], [10]], [[], [11, 12]]]


def test_check_assignment_rejects():
    with pytest.raises(ConfigError) as exc:
        check_assignment(np.ones((3, 2)), 3, 3, 2)
    assert "row must sum" in exc.value.rule
    with pytest.raises(ConfigError) as exc:
        check_assignment(np.array([[2, 0], [2, 0]]), 2, 2, 2)
    assert "column must sum" in exc.value.rule
    with pytest.raises(ConfigError):
        check_assignment(np.ones((2, 3)), 3, 2, 2)


def test_placement_uses_assignment():
    p = coded_params("bdc", 4, 2, 1, rows_per_batch=2, n=1, N=2, T=6)
    pl = build_placement(p)
    assert format_assignment(pl.assignment) == ["110000", "001100", "000011"] * 2
    # partition t has coded rows [2t, 2t+2); batch 0 takes c_1 of partitions 0 and 1,
    # batch 3 the second rows of the same partitions
    assert pl.batch_rows[0] == (0, 2) and pl.batch_rows[3] == (1, 3)
    custom = np.array([[2, 0, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0], [0, 0, 2, 0, 0, 0],
                       [0, 0, 0, 2, 0, 0], [0, 0, 0, 0, 2, 0], [0, 0, 0, 0, 0, 2]])
    pl2 = build_placement(p, custom)
    assert pl2.batch_rows[0] == (0, 1)
    with pytest.raises(ConfigError):
        build_placement(coded_params("unified", 4, 2, 1, rows_per_batch=2, n=1, N=2), custom)
