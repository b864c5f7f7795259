"""runtime/cec/collect.py's :class:`Attempt` without MPI: when an attempt is complete (S = 0:
every planned machine's RESULT and META; S > 0: ``L`` answers for every row set), kept as
answers come instead of rescanned on every poll of the master."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mpi_coded.cec.plan import make_plan
from mpi_coded.runtime.cec.collect import Attempt
from mpi_coded.runtime.cec.tasks import part_aux
from mpi_coded.runtime.core import records
from mpi_coded.runtime.core.wire import Header, Kind, WireError

SPEEDS = {n: Fraction(s) for n, s in zip(range(1, 7), ["1", "1", "3/2", "3/2", "2", "2"])}
META = records.TASK_META.pack(**{f: 0.0 for f in records.TASK_META.fields})


def answer(kind: Kind, n: int, payload: np.ndarray, aux: int = 0) -> tuple[Header, np.ndarray]:
    return Header(n, kind, 4, payload.dtype, payload.shape, aux), payload


def name(n: int) -> str:
    return f"machine {n}"


def test_without_stragglers_complete_once_every_machine_sent_result_and_meta():
    plan = make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 5, 6], rows=60)
    att = Attempt(plan, 4, 0, per_set=False)
    counts = plan.row_counts()
    order = list(plan.available)
    for i, n in enumerate(order):
        assert not att.complete()
        if i % 2:  # META first for some, RESULT first for others
            att.take(*answer(Kind.META, n, META), name)
            assert not att.finished(n) and not att.complete()
            att.take(*answer(Kind.RESULT, n, np.zeros(counts[n])), name)
        else:
            att.take(*answer(Kind.RESULT, n, np.zeros(counts[n])), name)
            assert not att.finished(n)
            att.take(*answer(Kind.META, n, META), name)
        assert att.finished(n)
        assert att.missing() == order[i + 1:]
    assert att.complete() and att.delivered == {n: counts[n] for n in order}
    with pytest.raises(WireError, match="machine 4, which has no task in step 4"):
        att.take(*answer(Kind.META, 4, META), name)


def test_with_stragglers_complete_once_every_row_set_has_L_answers():
    plan = make_plan("heterogeneous", SPEEDS, 2, [1, 2, 3, 5, 6], rows=60, S=1)
    att = Attempt(plan, 4, 1, per_set=True)
    sets = [(f, list(rs.machines), int(b) - int(a))
            for f, (rs, (a, b)) in enumerate(zip(plan.sets, plan.set_ranges)) if b > a]
    assert sets and all(len(ms) == plan.L + 1 for _, ms, _ in sets)
    for k, (f, ms, size) in enumerate(sets):
        for n in ms[:plan.L]:  # the first L of each set
            assert not att.complete()
            att.take(*answer(Kind.PART, n, np.zeros(size), part_aux(1, f)), name)
        # the set is done; the others are still short
        assert att.complete() == (k == len(sets) - 1)
    late = sets[0]  # a straggler's answer after its set was done changes nothing
    att.take(*answer(Kind.PART, late[1][-1], np.zeros(late[2]), part_aux(1, late[0])), name)
    assert att.complete() and att.missing() == []
    with pytest.raises(WireError, match="does not fit the plan"):
        att.take(*answer(Kind.PART, late[1][0], np.zeros(late[2] + 1), part_aux(1, late[0])),
                 name)
