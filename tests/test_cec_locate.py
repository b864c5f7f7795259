"""Wrong answers located and decoded around, without MPI (mpi_coded.cec.locate, docs/theory.md
A.10), the quarantine's bookkeeping (mpi_coded.cec.quarantine) and the lying fault modes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mpi_coded.cec.decode import StepDecoder
from mpi_coded.cec.locate import (
    candidates,
    decode_without,
    inconsistent_sets,
    outvoted,
    search,
    split_results,
    wrong_answers,
)
from mpi_coded.cec.plan import make_plan
from mpi_coded.cec.quarantine import BLOCK_GOOD, BLOCK_REPAIRED, LOST, READMITTED, Quarantine
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.errors import ConfigError
from mpi_coded.faults import Answer, check_steps, corrupt_entry, mode_of, parse_fault
from mpi_coded.fields import get_field
from mpi_coded.store.sketch import Sketch, SketchBuilder

N, L, R, COLS = 6, 3, 60, 8
SPEEDS = {n: Fraction(s) for n, s in zip(range(1, N + 1), (1, 1, 2, 2, 3, 3))}


def job(field_name: str, S: int, seed: int = 0):
    """A step's plan, the true answers of every machine per row set, and the decoder."""
    fld = get_field(field_name)
    rng = np.random.default_rng(seed)
    x = fld.random((L * R, COLS), rng)
    w = fld.random(COLS, rng)
    g = systematic_mds(fld, N, L)
    blocks = [fld.matmul(g[n - 1: n], x.reshape(L, R * COLS)).reshape(R, COLS)
              for n in range(1, N + 1)]
    plan = make_plan("heterogeneous", SPEEDS, L, list(range(1, N + 1)), rows=R, S=S)
    answers: dict[int, dict[int, np.ndarray]] = {}
    for f, (rs, (a, b)) in enumerate(zip(plan.sets, plan.set_ranges)):
        if b > a:
            answers[f] = {n: fld.matmul(blocks[n - 1][a:b], w) for n in rs.machines}
    dec = StepDecoder(DecoderCache(fld, g), fld, L, R)
    return fld, x, w, g, plan, answers, dec


def exact(fld, x, w):
    want = fld.matmul(x, w)
    return lambda z: fld.verified(fld.max_error(z.reshape(-1)[: x.shape[0]], want))


@pytest.mark.parametrize("field_name", ["gf2^8", "float64"])
def test_one_wrong_answer_is_located_and_decoded_around_with_one_spare(field_name):
    fld, x, w, g, plan, answers, dec = job(field_name, S=1)
    f = max(answers, key=lambda k: answers[k][next(iter(answers[k]))].size)
    liar = sorted(answers[f])[1]
    bad = answers[f][liar].copy()
    corrupt_entry(Answer(bad, fld.order, np.random.default_rng(3)))
    assert np.count_nonzero(bad != answers[f][liar]) == 1  # one entry, well-formed
    answers[f][liar] = bad
    assert inconsistent_sets(plan, answers, dec, g) == [f]
    assert set(candidates(plan, answers, dec, g)) == set(answers[f])
    found = search(plan, answers, dec, g, exact(fld, x, w), max_wrong=1)
    assert found is not None
    z, skip, _ = found
    assert liar in skip
    assert exact(fld, x, w)(z)
    named = wrong_answers(plan, answers, z, g, fld, 0, "spare")
    assert [(a.machine, a.set) for a in named] == [(liar, f)]
    assert named[0].rows == tuple(int(v) for v in plan.set_ranges[f])
    assert named[0].to_dict() == {"machine": liar, "set": f, "rows": list(named[0].rows),
                                  "attempt": 0, "found": "spare"}


def test_a_consistent_liar_in_every_set_is_found_and_named_in_each():
    fld, x, w, g, plan, answers, dec = job("gf2^16", S=1)
    liar = 4
    wrong_w = w.copy()
    wrong_w[0] ^= 1
    blocks_x = fld.matmul(g[liar - 1: liar], x.reshape(L, R * COLS)).reshape(R, COLS)
    mine = []
    for f, got in answers.items():
        if liar in got:
            a, b = (int(v) for v in plan.set_ranges[f])
            got[liar] = fld.matmul(blocks_x[a:b], wrong_w)
            mine.append(f)
    found = search(plan, answers, dec, g, exact(fld, x, w), max_wrong=1)
    assert found is not None and liar in found[1]
    named = wrong_answers(plan, answers, found[0], g, fld, 0, "spare")
    assert sorted(a.set for a in named) == sorted(mine)
    assert {a.machine for a in named} == {liar}


def test_without_a_spare_answer_nothing_decodes_around():
    fld, x, w, g, plan, answers, dec = job("gf2^8", S=0)
    f = next(iter(answers))
    n = next(iter(answers[f]))
    answers[f][n] = answers[f][n] ^ np.uint8(1)
    assert inconsistent_sets(plan, answers, dec, g) == []
    assert search(plan, answers, dec, g, exact(fld, x, w), max_wrong=1) is None
    # the plain decode is tried only when asked (fewest = 0): it fails here too
    assert search(plan, answers, dec, g, exact(fld, x, w), 1, fewest=0) is None


def test_two_liars_need_two_spares():
    fld, x, w, g, plan, answers, dec = job("gf2^8", S=2)
    f = max(answers, key=lambda k: answers[k][next(iter(answers[k]))].size)
    liars = sorted(answers[f])[:2]
    for n in liars:
        answers[f][n] = answers[f][n] ^ np.uint8(7)
    found = search(plan, answers, dec, g, exact(fld, x, w), max_wrong=2)
    assert found is not None and set(liars) <= found[1]
    named = wrong_answers(plan, answers, found[0], g, fld, 1, "re-asked")
    assert sorted(a.machine for a in named) == liars


def test_split_results_matches_the_concatenation_in_plan_order():
    fld, x, w, g, plan, answers, dec = job("float64", S=1)
    results = {n: np.concatenate([answers[f][n] for f in sorted(answers) if n in answers[f]])
               for n in plan.available}
    split = split_results(plan, results)
    assert split.keys() == answers.keys()
    for f in answers:
        for n in answers[f]:
            assert np.array_equal(split[f][n], answers[f][n])


def test_freivalds_fails_a_y_made_huge_by_one_wrong_entry():
    """The float residual is scaled by the right side: a wrong entry of 1e300 made
    ``||y||`` overflow and the old scale ``||r|| ||y||`` passed it."""
    fld = get_field("float64")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 10))
    w = rng.standard_normal(10)
    b = SketchBuilder(fld, 40, 10, seed=1)
    b.add(0, 40, x)
    sk = Sketch(fld, b.to_dict(), 40, 10)
    y = x @ w
    assert fld.verified(sk.error(0, y, w))
    for bad in (1e300, np.inf, np.nan):
        z = y.copy()
        z[7] = bad
        assert not fld.verified(sk.error(0, z, w)), bad
    z = y.copy()
    z[3] *= 1 + 2.0 ** -8
    assert not fld.verified(sk.error(0, z, w))


def test_quarantine_out_probation_readmitted():
    q = Quarantine(out_steps=2)
    q.caught(2, 5)
    assert q.block_checked(2, good=True) == BLOCK_GOOD
    for t in (6, 7):
        s = q.for_step(t, [1, 2, 3, 4, 5], need=4, least=3)
        assert s.left_out == (2,) and 2 not in s.planned and s.probes == ()
    s = q.for_step(8, [1, 2, 3, 4, 5], need=4, least=3)
    assert 2 in s.planned and s.probes == (2,)
    assert q.probed(2, clean=True) == READMITTED
    assert q.for_step(9, [1, 2, 3], need=3, least=3).probes == ()


def test_a_corrupt_block_earns_no_strike_a_second_good_block_loses_the_machine():
    q = Quarantine(out_steps=1)
    q.caught(3, 1)
    assert q.block_checked(3, good=False) == BLOCK_REPAIRED
    q.caught(3, 4)
    assert q.block_checked(3, good=True) == BLOCK_GOOD
    q.caught(3, 8)
    assert q.block_checked(3, good=True) == LOST
    assert 3 in q.lost
    s = q.for_step(20, [1, 2, 3, 4], need=3, least=3)
    assert s.left_out == (3,) and s.planned == (1, 2, 4)
    # fewer than L left without it: a lost machine is planned (and checked like any other)
    assert q.for_step(21, [1, 3, 4], need=3, least=3).planned == (1, 3, 4)


def test_too_few_machines_plan_the_quarantined_on_probation():
    q = Quarantine(out_steps=3)
    q.caught(1, 1)
    q.caught(2, 2)
    s = q.for_step(3, [1, 2, 3, 4], need=3, least=2)
    assert s.planned == (1, 3, 4) and s.left_out == (2,) and s.probes == (1,)
    with pytest.raises(ConfigError, match="quarantine_steps"):
        Quarantine(out_steps=-1)


def test_a_late_answer_of_a_time_already_caught_earns_no_second_catch() -> None:
    q = Quarantine(out_steps=0)
    q.caught(3, 4)
    assert q.known(3, 4) and q.known(3, 2) and not q.known(3, 5) and not q.known(2, 1)
    q.lose(2)
    assert q.known(2, 9)


def test_quarantine_steps_zero_plans_a_caught_machine_on_probation_at_once() -> None:
    q = Quarantine(out_steps=0)
    q.caught(2, 5)
    s = q.for_step(6, [1, 2, 3, 4], need=3, least=2)
    assert s.planned == (1, 2, 3, 4) and s.left_out == () and s.probes == (2,)
    assert q.probed(2, True) == "readmitted" and not q.probation


@pytest.mark.parametrize("spec, rule", [
    ("corrupt:1:step", "corrupt PHASE must be answer"),
    ("corrupt:1:answer:0", "P must be in"),
    ("corrupt:1:answer:1.5", "P must be in"),
    ("corrupt:1:answer:x", "P must be a number"),
    ("corrupt:1:answer@2:0.5:9", "must look like"),
    ("lie:1:0", "lie STEP must be >= 1"),
    ("lie:1:2:3", "must look like"),
    ("lie:9", "RANK must be a worker rank"),
])
def test_lying_fault_specs_are_checked(spec, rule):
    with pytest.raises(ConfigError, match=rule):
        parse_fault(spec, "cec", 7)


def test_lying_fault_modes_fire_as_specified():
    once = parse_fault("corrupt:2:answer@3", "cec", 7)
    mode = mode_of(once)
    assert not mode.repeats(once) and mode.active(once, 2, "answer", 3)
    assert not mode.active(once, 2, "answer", 4)
    every = parse_fault("corrupt:2:answer:0.2", "cec", 7)
    assert mode_of(every).repeats(every) and every.p == 0.2
    lie = parse_fault("lie:3:4", "cec", 7)
    lmode = mode_of(lie)
    assert lmode.repeats(lie) and not lmode.active(lie, 3, "answer", 3)
    assert lmode.active(lie, 3, "answer", 4) and lmode.active(lie, 3, "answer", 40)
    with pytest.raises(ConfigError, match=r"repetition \(coded\) of the job \(0..2\)"):
        check_steps([parse_fault("lie:1:3", "coded", 7)], 2)  # 3 repetitions: 0..2
    coded = parse_fault("lie:1", "coded", 7)  # the coded job: the map, from repetition 0
    assert coded.phase == "map" and coded.step == 0
    assert lmode.active(coded, 1, "map", 0) and not lmode.active(coded, 1, "shuffle", 0)
    assert not lmode.active(coded, 1, "answer", 5)
    with pytest.raises(ConfigError, match="lie STEP must be >= 0"):
        parse_fault("lie:1:-1", "coded", 7)


def test_a_liar_answers_a_consistent_product_of_a_wrong_w():
    fld = get_field("gf2^8")
    rng = np.random.default_rng(1)
    block = fld.random((5, 4), rng)
    w = fld.random(4, rng)
    values = fld.matmul(block, w)

    class Ctx:
        rank, host, where = 3, "h", "phase answer 1"
        answer = Answer(values, fld.order, rng, w, lambda v: fld.matmul(block, v))

    fault = parse_fault("lie:3", "cec", 7)
    mode_of(fault).fire(fault, Ctx())
    wrong = w.copy()
    wrong[3 % 4] ^= 1
    assert np.array_equal(values, fld.matmul(block, wrong))


@pytest.mark.parametrize("field_name", ["gf2^8", "float64"])
def test_with_two_spares_a_row_set_outvotes_its_wrong_answer(field_name):
    """S = 2: every row set has L + 2 answers; a different machine wrong in each set is
    outvoted set by set, and the step decoded without them passes at the first check
    (the search over candidate sets would try single machines first)."""
    fld, x, w, g, plan, answers, dec = job(field_name, S=2)
    liars: dict[int, int] = {}
    rng = np.random.default_rng(5)
    for f in sorted(answers):
        assert len(answers[f]) == L + 2
        n = next(m for m in sorted(answers[f]) if m not in liars)
        bad = answers[f][n].copy()
        corrupt_entry(Answer(bad, fld.order, rng))
        answers[f][n] = bad
        liars[n] = f
    assert len(liars) == len(answers) >= 2
    assert outvoted(plan, answers, dec, g) == {f: n for n, f in liars.items()}
    checks = []

    def accept(z):
        checks.append(z)
        return exact(fld, x, w)(z)

    found = search(plan, answers, dec, g, accept, max_wrong=2)
    assert found is not None and len(checks) == 1
    assert found[1] == frozenset() and found[2] == {f: n for n, f in liars.items()}
    named = wrong_answers(plan, answers, found[0], g, fld, 0, "spare")
    assert {(a.machine, a.set) for a in named} == set(liars.items())
    for n in liars:  # no single machine left out decodes right: the vote saved checks
        z = decode_without(plan, answers, dec, frozenset({n}))
        assert z is None or not exact(fld, x, w)(z)


def test_a_set_with_two_wrong_answers_outvotes_no_one():
    fld, x, w, g, plan, answers, dec = job("gf2^8", S=2)
    f = max(answers, key=lambda k: len(answers[k]))
    two = sorted(answers[f])[:2]
    for n in two:
        answers[f][n] = answers[f][n] ^ np.uint8(1)
    assert outvoted(plan, answers, dec, g) == {}


def test_a_vote_and_a_search_together_find_three_wrong_answers_with_two_spares():
    """S = 2, three wrong answers (more than S machines): row set 0 has two (its vote
    fails), row set 1 one (outvoted, its answer dropped in that set only); the search
    leaves out up to S machines of set 0 beside the drop and passes without asking
    again, naming all three."""
    fld, x, w, g, plan, answers, dec = job("gf2^8", S=2)
    assert sorted(answers[0]) == [1, 3, 4, 5, 6] and sorted(answers[1]) == [2, 3, 4, 5, 6]
    for f, n in ((0, 1), (0, 3), (1, 2)):
        answers[f][n] = answers[f][n] ^ np.uint8(7)
    assert outvoted(plan, answers, dec, g) == {1: 2}
    found = search(plan, answers, dec, g, exact(fld, x, w), max_wrong=2)
    assert found is not None and found[1] == frozenset({1, 3}) and found[2] == {1: 2}
    named = wrong_answers(plan, answers, found[0], g, fld, 0, "spare")
    assert {(a.machine, a.set) for a in named} == {(1, 0), (3, 0), (2, 1)}
