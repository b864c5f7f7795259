"""The coded job's quarantine of servers caught answering wrong, without MPI
(mpi_coded.coded.quarantine): left out of the next repetitions where the map end can do
without them, probation, re-admission, lost at the last strike or kept where needed."""

from __future__ import annotations

import pytest

from mpi_coded.coded import quarantine as Qm
from mpi_coded.coded.job import from_mapping
from mpi_coded.coded.mapend import map_phase_done
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.errors import ConfigError

K = list(range(6))


def rule(scheme):
    """The scheme's map-end rule on a set of servers (K = 6, q = 4, mu = 1/2)."""
    T = 2 if scheme == "bdc" else 1
    pl = build_placement(coded_params(scheme, 6, 4, "1/2", 4, n=16, N=12, T=T,
                                      field="float64"))
    return lambda rest: map_phase_done(pl, rest)


def test_caught_sits_out_the_next_reps_then_probation_then_readmitted():
    q = Qm.ServerQuarantine(out_reps=2)
    enough = rule("unified")
    assert q.for_rep(0, K, enough) == Qm.RepQuarantine((), ())
    assert q.caught(1, 1, can_lose=True) == Qm.CAUGHT
    assert q.for_rep(2, K, enough).left_out == (1,)
    assert q.for_rep(3, K, enough).left_out == (1,)
    r4 = q.for_rep(4, K, enough)
    assert r4 == Qm.RepQuarantine((), (1,))
    assert q.clean(0) is None  # never caught: no event
    assert q.clean(1) == Qm.READMITTED
    assert q.for_rep(5, K, enough) == Qm.RepQuarantine((), ())
    assert q.clean(1) is None  # re-admitted once only


def test_out_reps_one_sits_out_one_rep():
    q = Qm.ServerQuarantine(out_reps=1)
    q.caught(3, 0, can_lose=True)
    assert q.for_rep(1, K, rule("unified")).left_out == (3,)
    assert q.for_rep(2, K, rule("unified")) == Qm.RepQuarantine((), (3,))


def test_a_scheme_that_waits_for_every_server_keeps_it_in_on_probation():
    """uc waits for all K: the caught server is put back at once, on probation."""
    q = Qm.ServerQuarantine()
    q.caught(2, 0, can_lose=False)
    assert q.for_rep(1, K, rule("uc")) == Qm.RepQuarantine((), (2,))
    assert q.current == ()


def test_too_many_caught_the_oldest_are_put_back_first():
    """unified q = 4 of 6: at most two servers can be left out."""
    q = Qm.ServerQuarantine(out_reps=5)
    q.caught(4, 2, can_lose=True)
    q.caught(0, 1, can_lose=True)
    q.caught(5, 3, can_lose=True)
    r = q.for_rep(4, K, rule("unified"))
    assert r.left_out == (4, 5) and r.probation == (0,)  # 0 caught longest ago
    assert q.current == (4, 5)


def test_second_strike_loses_it_where_the_scheme_can_do_without_it():
    q = Qm.ServerQuarantine(out_reps=1, strikes_lost=2)
    enough = rule("bdc")
    assert q.caught(1, 0, can_lose=True) == Qm.CAUGHT
    assert q.for_rep(1, K, enough).left_out == (1,)
    assert q.for_rep(2, K, enough).probation == (1,)
    assert q.caught(1, 2, can_lose=True) == Qm.LOST
    for rep in range(3, 9):  # out for good
        assert q.for_rep(rep, K, enough) == Qm.RepQuarantine((1,), ())
    assert q.clean(1) is None


def test_last_strike_where_the_scheme_needs_it_keeps_it_checked():
    q = Qm.ServerQuarantine(strikes_lost=2)
    assert q.caught(1, 0, can_lose=False) == Qm.CAUGHT
    assert q.caught(1, 1, can_lose=False) == Qm.NEEDED
    assert q.for_rep(2, K, rule("uc")) == Qm.RepQuarantine((), (1,))
    assert q.clean(1) is None  # never re-admitted: past its strikes, checked every rep
    assert q.caught(1, 2, can_lose=False) == Qm.NEEDED


def test_a_lost_server_is_put_back_only_when_the_map_end_needs_it():
    """Two servers of unified's six lost; a third caught: the map end needs four, so the
    caught one goes back first, and lost ones only after it."""
    q = Qm.ServerQuarantine(strikes_lost=1)
    assert q.caught(0, 0, can_lose=True) == Qm.LOST
    assert q.caught(1, 0, can_lose=True) == Qm.LOST
    q2 = Qm.ServerQuarantine(strikes_lost=2, lost={0, 1})
    q2.caught(2, 0, can_lose=True)
    r = q2.for_rep(1, K, rule("unified"))
    assert r.left_out == (0, 1) and r.probation == (2,)
    r = q2.for_rep(2, [0, 1, 2, 3, 4], rule("unified"))  # server 5 dead: one lost back in
    assert r.left_out == (1,) and 0 in r.probation and 2 in r.probation


def test_out_reps_zero_is_no_quarantine_only_probation():
    q = Qm.ServerQuarantine(out_reps=0)
    assert q.caught(3, 0, can_lose=True) == Qm.CAUGHT
    assert q.for_rep(1, K, rule("unified")) == Qm.RepQuarantine((), (3,))


@pytest.mark.parametrize(("key", "low"), [("quarantine_reps", 0), ("mercurial_strikes", 1)])
def test_keys_are_validated_naming_the_key_and_rule(key, low):
    base = {"scheme": "unified", "K": 6, "q": 4, "mu": "1/2", "rows_per_batch": 4, "n": 16,
            "N": 12}
    with pytest.raises(ConfigError, match=f"{key}: must be >= {low}"):
        from_mapping({**base, key: low - 1})
    with pytest.raises(ConfigError, match=f"{key}: must be >= {low}"):
        Qm.ServerQuarantine(**{"out_reps" if key == "quarantine_reps" else "strikes_lost": low - 1})
    job = from_mapping({**base, key: 3})
    assert getattr(job, key) == 3 and job.to_dict()[key] == 3
