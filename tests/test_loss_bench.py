"""The kill benchmark's joins (mpi_coded/bench/loss_bench.py), on hand-made lines."""

from __future__ import annotations

import pytest

from mpi_coded.bench.loss_bench import kill_run, kill_times, report

STDERR = ("warning: something else\n"
          "mpi-coded: rank 2 (node-a) killed by fault injection in phase step 2 at unix "
          "100.250000\n")
LINES = [
    {"kind": "config", "job": "cec", "deadline_factor": 2.0, "deadline_slack_s": 2.0},
    {"kind": "step", "job": "cec", "step": 1, "wall_s": 0.3, "predicted_s": 0.28},
    {"kind": "step", "job": "cec", "step": 2, "wall_s": 0.5, "predicted_s": 0.4,
     "predicted_planned_s": 0.3},
    {"kind": "summary", "job": "cec", "all_verified": True,
     "lost": [{"machine": 2, "host": "node-a", "step": 2, "phase": "step",
               "detected_unix": 100.262}]},
]


def test_kill_times_are_read_from_the_dying_ranks_lines():
    assert kill_times(STDERR) == {2: 100.25}
    assert kill_times("mpi-coded: rank 3 (h) killed by fault injection in phase setup at "
                      "unix 7.5\n") == {3: 7.5}


def test_a_kill_run_joins_the_kill_with_the_masters_record():
    run = kill_run("kill:2:step@2", 2, 0, STDERR, LINES, wall_s=4.0)
    assert run.verified and not run.hang and run.lost_step == 2 and run.phase == "step"
    assert run.detection_ms == pytest.approx(12.0)
    assert run.deadline_s == pytest.approx(2.0 * 0.3 + 2.0)  # the first plan's deadline
    assert run.step_extra_s == pytest.approx(0.1)


def test_hangs_and_unnamed_deaths_count_against_the_run():
    hung = kill_run("kill:2:step@2", 2, None, STDERR, LINES[:2])
    assert hung.hang and not hung.verified and hung.detection_ms is None
    unnamed = kill_run("kill:3:idle@2", 3, 0, STDERR, LINES)
    assert not unnamed.verified  # machine 3 is not in the summary's lost list
    failed = kill_run("kill:2:step@2", 2, 1, STDERR, LINES)
    assert not failed.verified
    rep = report([kill_run("kill:2:step@2", 2, 0, STDERR, LINES), hung, unnamed])
    assert (rep["runs"], rep["hangs"], rep["unverified"]) == (3, 1, 2)
    assert rep["detection_ms_median"] == pytest.approx(12.0)
    assert rep["by_phase"]["step"]["runs"] == 2 and rep["by_phase"]["idle"]["runs"] == 1


CODED_STDERR = ("mpi-coded: rank 3 (node-b) killed by fault injection in phase shuffle 1 at "
                "unix 200.000000\n")
CODED_LINES = [
    {"kind": "config", "job": "coded"},
    {"kind": "run", "job": "coded", "rep": 0, "verified": True, "total_s": 0.3, "lost": []},
    {"kind": "abandoned", "job": "coded", "rep": 1, "phase": "shuffle", "total_s": 0.13,
     "lost": [2], "lost_at": {"2": 200.025}},
    {"kind": "run", "job": "coded", "rep": 2, "verified": True, "total_s": 0.5, "lost": []},
    {"kind": "summary", "job": "coded", "all_verified": True, "lost": [2], "abandoned": [1]},
]


def test_a_coded_kill_run_joins_the_kill_with_the_repetition_it_hit():
    from mpi_coded.bench.loss_bench import coded_kill_run, coded_report

    run = coded_kill_run("kill:3:shuffle@1", 0, CODED_STDERR, CODED_LINES, wall_s=9.0)
    assert (run.server, run.phase, run.rep, run.abandoned) == (2, "shuffle", 1, True)
    assert run.verified and run.detection_ms == pytest.approx(25.0)
    assert (run.rep_total_s, run.others_total_s) == (0.13, pytest.approx(0.4))
    # a run line that did not verify, a hang, a death nobody recorded: each counts against
    bad = [dict(r, verified=False) if r.get("rep") == 2 else r for r in CODED_LINES]
    assert not coded_kill_run("kill:3:shuffle@1", 0, CODED_STDERR, bad).verified
    hung = coded_kill_run("kill:3:shuffle@1", None, CODED_STDERR, CODED_LINES[:2])
    assert hung.hang and not hung.verified and hung.rep is None
    other = coded_kill_run("kill:5:reduce@1", 0, CODED_STDERR, CODED_LINES)
    assert not other.verified and other.detection_ms is None
    rep = coded_report([run, hung, other])
    assert (rep["runs"], rep["hangs"], rep["unverified"]) == (3, 1, 2)
    assert rep["by_phase"]["shuffle"]["abandoned"] == 1
    assert rep["detection_ms_median"] == pytest.approx(25.0)
