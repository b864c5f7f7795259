"""The MAP_END payload: ``Q``, the extra finishers and lt's unicast counts round-trip."""

from __future__ import annotations

import numpy as np
import pytest

from mpi_coded.coded.mapend import MapEnd
from mpi_coded.runtime.coded.setup import decode_map_end, encode_map_end
from mpi_coded.runtime.core.wire import WireError


@pytest.mark.parametrize("end", [MapEnd((2, 0, 1)), MapEnd((3, 1), (0,)),
                                 MapEnd((5, 4, 0, 2), (1,), (0, 7, 12, 3)),
                                 MapEnd((0,), (), (0,))])
def test_map_end_round_trips(end):
    arr = encode_map_end(end)
    assert arr.dtype == np.int64 and arr.ndim == 1
    assert decode_map_end(arr) == end


@pytest.mark.parametrize("vals", [[0, 1, 2], [0, -1, 1], [0, -1, -1, 2, -1]])
def test_a_payload_of_another_shape_is_a_wire_error(vals):
    with pytest.raises(WireError, match="MAP_END payload"):
        decode_map_end(np.array(vals, dtype=np.int64))
