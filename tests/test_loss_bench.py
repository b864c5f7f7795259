"""The kill benchmark's joins (mpi_coded/analysis/loss_bench.py), on hand-made lines."""

from __future__ import annotations

import pytest

from mpi_coded.analysis.loss_bench import kill_run, kill_times, report

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
