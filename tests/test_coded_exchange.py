"""The shuffle's payload arithmetic (what replay and the MPI servers both run)."""

from __future__ import annotations

import numpy as np
import pytest

from mpi_coded.coded import exchange
from mpi_coded.coded.code import build_code
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.replay import ReplayError, ServerData, random_instance
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.fields import get_field


def setup(field: str = "gf2^8"):
    p = coded_params("unified", 6, 4, "1/2", 3, n=4, N=8, field=field)
    pl = build_placement(p)
    F = get_field(field)
    A, X = random_instance(pl, F, 2)
    code = build_code(p, F)
    data = {s: ServerData.from_map_output(s, pl, F.matmul(code.encode(A, pl.stored_rows(s)), X),
                                          F, p.N) for s in range(p.K)}
    return p, pl, F, A, X, code, data


@pytest.mark.parametrize("field", ["gf2^8", "float64"])
def test_multicast_cancels_to_the_receivers_segment(field):
    p, pl, F, A, X, code, data = setup(field)
    plan = shuffle_plan(pl, map_end(pl, [0, 1, 2, 3, 4, 5]))
    assert plan.multicasts
    C = code.encode(A)
    for mc in plan.multicasts:
        payload = exchange.multicast_payload(mc, data[mc.sender])
        assert payload.shape == (mc.length,)
        for i, k in enumerate(mc.receivers):
            own = exchange.cancel(mc, k, payload, data[k])
            seg = mc.segments[i]
            # the truth: the segment's values computed directly from C X
            want = np.concatenate([
                F.matmul(C[list(pl.batch_rows[b.batch][b.row_start:b.row_stop])],
                         X[:, b.out_start:b.out_stop]).ravel() for b in seg.blocks])
            assert F.max_error(own, want) <= (0 if F.exact else 1e-9)
        with pytest.raises(ReplayError):  # a receiver lacking another's segment cannot cancel
            exchange.cancel(mc, mc.receivers[0], payload, _without(data[mc.receivers[0]], mc, 1))


def _without(d: ServerData, mc, i: int) -> ServerData:
    """``d`` minus the batch of segment ``i``'s first block: cancelling must fail."""
    missing = mc.segments[i].blocks[0].batch
    return ServerData(d.sid, d.placement, {b: y for b, y in d.stored.items() if b != missing},
                      d.field, d.N)


def test_reducers_decode_from_what_they_hold():
    p, pl, F, A, X, code, data = setup()
    plan = shuffle_plan(pl, map_end(pl, [3, 0, 5, 1, 2, 4]))
    for mc in plan.multicasts:
        payload = exchange.multicast_payload(mc, data[mc.sender])
        for k in mc.receivers:
            exchange.take_multicast(mc, k, payload, data[k])
    for u in plan.unicasts:
        exchange.take_unicast(u, exchange.unicast_payload(u, data[u.sender]), data[u.receiver])
    for red in plan.reducers:
        vals = exchange.reducer_values(red, data[red.server])
        assert vals.shape == (len(red.decode_rows), red.out_stop - red.out_start)
        y = exchange.reduce_outputs(red, data[red.server], code)
        assert np.array_equal(y, F.matmul(A, X[:, red.out_start:red.out_stop]))


def test_stored_values_cut_the_map_output_per_batch():
    p, pl, F, A, X, code, data = setup()
    out = np.arange(len(pl.stored_rows(2)) * p.N).reshape(-1, p.N)
    Y = exchange.stored_values(pl, 2, out)
    assert list(Y) == list(pl.server_batches[2])
    assert np.array_equal(np.concatenate(list(Y.values())), out)
