"""Late answers re-encoded against their verified step (mpi_coded.cec.late, docs/theory.md
A.10), without MPI: a right one passes, a wrong one is named ``late`` with its step, an
answer of a product no longer kept is not read."""

from __future__ import annotations

import numpy as np
import pytest
from test_cec_locate import job

from mpi_coded.cec.decode import decode_parts
from mpi_coded.cec.late import LateAnswers
from mpi_coded.cec.locate import split_results
from mpi_coded.faults import Answer, corrupt_entry


def verified(fld, plan, answers, dec):
    z, _, _ = decode_parts(plan, answers, dec, condition=False)
    return z.copy()


@pytest.mark.parametrize("field_name", ["gf2^8", "float64"])
def test_a_late_spare_answer_is_checked_against_its_verified_step(field_name):
    fld, x, w, g, plan, answers, dec = job(field_name, S=1)
    z = verified(fld, plan, answers, dec)
    assert fld.verified(fld.max_error(z.reshape(-1)[: x.shape[0]], fld.matmul(x, w)))
    late = LateAnswers(g, fld)
    late.keep(7, {0: plan}, z, 4)
    f = max(answers, key=lambda k: next(iter(answers[k].values())).size)
    n = sorted(answers[f])[-1]
    late.part(7, 0, n, f, answers[f][n])  # right: nothing named
    assert late.take() == [] and late.checked == 1
    bad = answers[f][n].copy()
    corrupt_entry(Answer(bad, fld.order, np.random.default_rng(1)))
    late.part(7, 0, n, f, bad)
    named = late.take()
    assert [(a.machine, a.set, a.found, a.step) for a in named] == [(n, f, "late", 4)]
    assert named[0].to_dict()["step"] == 4
    late.part(7, 1, n, f, bad)  # an attempt never kept: not read
    late.part(8, 0, n, f, bad)  # a product never kept (unverified, or not yet over)
    other = next(m for m in range(1, 7) if m not in plan.sets[f].machines)
    late.part(7, 0, other, f, bad)  # a machine the row set was not asked of
    assert late.take() == [] and late.checked == 2


def test_a_late_whole_answer_is_split_by_its_plan_and_a_short_one_is_wrong():
    fld, x, w, g, plan, answers, dec = job("gf2^8", S=0)
    z = verified(fld, plan, answers, dec)
    late = LateAnswers(g, fld)
    late.keep(3, {0: plan}, z, 3)
    n = plan.available[0]
    whole = np.concatenate([answers[f][n] for f in sorted(answers) if n in answers[f]])
    assert split_results(plan, {n: whole}).keys() <= answers.keys()
    late.result(3, 0, n, whole)
    assert late.take() == []
    wrong = whole.copy()
    wrong[-1] ^= 1
    late.result(3, 0, n, wrong)
    assert [a.machine for a in late.take()] == [n]
    late.result(3, 0, n, whole[:-1])
    assert [(a.machine, a.set) for a in late.take()] == [(n, -1)]


def test_only_the_last_attempts_are_kept():
    fld, x, w, g, plan, answers, dec = job("gf2^8", S=1)
    z = verified(fld, plan, answers, dec)
    late = LateAnswers(g, fld, keep_last=2)
    for v in range(1, 5):
        late.keep(v, {0: plan}, z, v)
    assert sorted(late.kept) == [(3, 0), (4, 0)]
