"""The survival bench's pure parts (mpi_coded/bench/survival.py): where each machine sits,
the launches' times cut into the parts of a relaunch, each launch's job against its steps."""

from __future__ import annotations

from mpi_coded.bench.survival import breakdown, machines_on, parser, per_launch, summarize


def test_issue_45_places_machines_4_and_5_on_host_3() -> None:
    args = parser("x").parse_args(["--hosts", "4", "--slots", "2", "--N", "6", "--L", "3"])
    assert machines_on(args) == {0: [1], 1: [2, 3], 2: [4, 5], 3: [6]}
    old = parser("x").parse_args([])  # issue 44's matrix: machine 2 on host 3
    assert machines_on(old) == {1: [1], 2: [2], 3: [3], 0: [4]}


def _lines() -> list[dict]:
    setup = {"kind": "setup", "job": "cec", "setup_s": 0.001, "store_open_s": 0.1,
             "store_parts": {"arrive_s": 0.05}}
    step = {"kind": "step", "job": "cec", "verified": True, "wall_s": 0.08, "master_s": 0.01}
    summ = {"kind": "summary", "job": "cec", "job_s": 1.5, "before_steps_s": 0.2}
    return [setup, {**step, "step": 1}, {**step, "step": 2}, summ,
            setup, {**step, "step": 3, "wall_s": 0.1}, summ]


def test_per_launch_and_the_relaunchs_parts() -> None:
    jobs = per_launch(_lines())
    assert [j["steps"] for j in jobs] == [2, 1]
    assert abs(jobs[0]["steps_s"] - 0.18) < 1e-9 and abs(jobs[1]["first_step_s"] - 0.11) < 1e-9
    launches = [{"started": 100.0, "ended": 103.05}, {"started": 103.1, "ended": 110.0,
                                                      "first_verified": 104.5}]
    b = breakdown(launches, jobs, t_fail=103.0)
    assert b is not None
    assert abs(b["total_s"] - 1.5) < 1e-9 and abs(b["launcher_end_s"] - 0.05) < 1e-9
    assert abs(b["supervisor_gap_s"] - 0.05) < 1e-9
    # the start: the new launch to the master's clock, what its job's lines do not hold
    assert abs(b["start_to_master_s"] - (1.4 - 0.2 - 0.11)) < 1e-9
    assert breakdown(launches[:1], jobs, 103.0) is None and breakdown(launches, jobs, None) is None


def test_the_matrix_row() -> None:
    run = {"hung": False, "unverified": 0, "lost": 0, "repeated": 0, "rc": 0,
           "bytes_resent": 0, "needless_relaunches": 0, "failure_to_end_s": 0.02}
    rs = [{**run, "relaunch_to_verified_s": t, "failure_to_verified_s": t}
          for t in (1.0, 2.0, 3.0)]
    m = summarize(rs)
    assert m["runs"] == 3 and m["relaunch_p50_s"] == 2.0 and m["relaunch_p99_s"] == 3.0
    assert m["relaunch_max_s"] == 3.0 and m["failed"] == 0
