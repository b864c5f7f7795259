"""The map-end rule (docs/theory.md (B.2) step 2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mpi_coded.coded.mapend import MapEnd, covered, map_end, map_phase_done
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.errors import ConfigError


def test_unified_first_q():
    pl = build_placement(coded_params("unified", 6, 4, "1/2", rows_per_batch=2, n=1, N=4))
    for order in itertools.permutations(range(6)):
        end = map_end(pl, order)
        assert end == MapEnd(tuple(order[:4]), ())
    assert not map_phase_done(pl, [0, 1, 2])
    assert map_phase_done(pl, [5, 1, 2, 0])


def test_uc_cmr_wait_for_all():
    for scheme in ("uc", "cmr"):
        pl = build_placement(coded_params(scheme, 4, 2, "1", rows_per_batch=1, n=1, N=4))
        assert map_end(pl, [2, 0, 3, 1]) == MapEnd((2, 0, 3, 1), ())
        with pytest.raises(ConfigError):
            map_end(pl, [2, 0, 3])


def test_bdc_extra_finishers():
    # K=6, q=2, mu q=1, eta_b=1, T=2: batch b holds one row of partition b % 2,
    # so servers {0, 2} only hold partition 0 and a partition-1 holder must join.
    p = coded_params("bdc", 6, 2, "1/2", rows_per_batch=1, n=1, N=2, T=2)
    pl = build_placement(p)
    assert pl.assignment[:, 1].tolist() == [0, 1, 0, 1, 0, 1]
    end = map_end(pl, [0, 2, 4, 3, 1, 5])
    assert end == MapEnd((0, 2), (4, 3))
    assert end.finishers == (0, 2, 4, 3)
    assert not map_phase_done(pl, [0, 2, 4])
    assert map_phase_done(pl, [0, 2, 4, 3])
    assert map_end(pl, [0, 1, 2]) == MapEnd((0, 1), ())
    with pytest.raises(ConfigError) as exc:
        map_end(pl, [0, 2, 4])
    assert exc.value.field == "order"


def test_bdc_coverage_property():
    p = coded_params("bdc", 6, 4, "1/2", rows_per_batch=2, n=1, N=4, T=10)
    pl = build_placement(p)
    rng = np.random.default_rng(0)
    for _ in range(50):
        order = rng.permutation(6).tolist()
        end = map_end(pl, order)
        assert covered(pl, end.finishers)
        if end.extra:  # minimal: one fewer would not do
            assert not covered(pl, end.finishers[:-1])


def test_bad_orders():
    pl = build_placement(coded_params("unified", 6, 4, "1/2", rows_per_batch=2, n=1, N=4))
    for bad in ([0, 0, 1, 2], [0, 1, 2, 9]):
        with pytest.raises(ConfigError) as exc:
            map_end(pl, bad)
        assert exc.value.field == "order"
