"""Batch labels and storage (docs/theory.md (B.1))."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest

from mpi_coded.coded.placement import batch_labels, build_placement, rank_of
from mpi_coded.coded.schemes import coded_params


@pytest.mark.parametrize("scheme,kw", [
    ("unified", {}), ("bdc", {"T": 5}), ("sc", {}), ("uc", {"N": 6}), ("cmr", {"N": 6}),
])
def test_storage(scheme, kw):
    base = dict(K=6, q=3, mu="2/3", rows_per_batch=2, n=2, N=3)
    base.update(kw)
    p = coded_params(scheme, **base)
    pl = build_placement(p)
    assert pl.labels == tuple(itertools.combinations(range(6), p.replication))
    # every coded row in exactly one batch, batches of eta_b rows
    rows = [r for b in pl.batch_rows for r in b]
    assert sorted(rows) == list(range(p.r))
    assert all(len(b) == 2 for b in pl.batch_rows)
    for s in range(6):
        assert pl.server_batches[s] == tuple(b for b, lab in enumerate(pl.labels) if s in lab)
        assert len(pl.server_batches[s]) == math.comb(5, p.replication - 1)
        assert len(pl.stored_rows(s)) == p.mu_eff * p.m
    # each batch is stored by exactly p servers
    cnt = Counter(b for s in range(6) for b in pl.server_batches[s])
    assert set(cnt.values()) == {p.replication}
    # the assignment matrix describes the batches for every scheme
    assert (pl.assignment.sum(axis=1) == 2).all()
    if scheme != "bdc":
        assert pl.batch_rows[1] == (2, 3)


def test_labels_and_ranks():
    assert batch_labels(4, 2)[:3] == ((0, 1), (0, 2), (0, 3))
    assert rank_of(0) == 1 and rank_of(5) == 6
