"""runtime/core/records.py in one process: statistics packed and unpacked by field name,
never by position; a record of the wrong shape is a wire error naming the rank."""

from __future__ import annotations

import numpy as np
import pytest

from mpi_coded.runtime.core import records
from mpi_coded.runtime.core.records import StatsLayout
from mpi_coded.runtime.core.wire import WireError

PROBE_META = StatsLayout("step meta", ("compute_s", "sleep_s", "target_s", "rows"))
ALL = [v for v in vars(records).values() if isinstance(v, StatsLayout)]


def test_records_pack_by_name_whatever_the_argument_order():
    rec = StatsLayout("probe", ("a", "b", "c"))
    arr = rec.pack(c=3, a=1, b=2.5)
    assert arr.dtype == np.float64 and arr.tolist() == [1.0, 2.5, 3.0]
    assert rec.unpack(arr, 4) == {"a": 1.0, "b": 2.5, "c": 3.0}


@pytest.mark.parametrize("rec", ALL, ids=lambda r: r.name)
def test_records_every_declared_record_round_trips_by_name(rec):
    values = {f: float(i) * 1.5 + 0.25 for i, f in enumerate(reversed(rec.fields))}
    arr = rec.pack(**values)
    assert arr.shape == (len(rec.fields),)
    got = rec.unpack(arr, 1)
    assert got == values and all(type(v) is float for v in got.values())


def test_records_field_and_record_names_are_distinct():
    # a repeated field name would silently collapse two statistics into one
    for rec in ALL:
        assert len(set(rec.fields)) == len(rec.fields), rec.name
    assert len({r.name for r in ALL}) == len(ALL)
    assert {"TASK_META", "IDLE_STATS", "ENCODE_DONE", "MAP_DONE",
            "SHUFFLE_DONE", "REDUCE_DONE"} <= set(vars(records))


@pytest.mark.parametrize("values", [{"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3, "d": 4},
                                    {"a": 1, "b": 2, "x": 3}])
def test_records_pack_needs_every_field_and_nothing_else(values):
    rec = StatsLayout("probe", ("a", "b", "c"))
    with pytest.raises(ValueError, match=r"^probe: fields "):
        rec.pack(**values)


@pytest.mark.parametrize("arr,shape", [(np.zeros(3), r"\(3,\)"), (np.zeros(5), r"\(5,\)"),
                                       (np.zeros((1, 4)), r"\(1, 4\)"), (None, "None")])
def test_records_unpack_of_the_wrong_shape_names_the_rank(arr, shape):
    with pytest.raises(WireError, match=rf"^step meta record from rank 6 has shape {shape}, "
                                        r"expected \(4,\)$"):
        PROBE_META.unpack(arr, 6)
