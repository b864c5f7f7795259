"""The survival bench's pure parts (mpi_coded/bench/survival.py): where each machine sits,
the launches' times cut into the parts of a relaunch, each launch's job against its steps."""

from __future__ import annotations

import time

from mpi_coded import start_clock
from mpi_coded.bench.survival import (
    breakdown,
    machines_on,
    parser,
    per_launch,
    start_parts,
    summarize,
)


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


def test_the_start_in_parts_from_the_ranks_traces(monkeypatch) -> None:
    """Each rank's start trace line (mpi_coded/start_clock.py) read back, and the relaunched
    launch's start cut into spawn, imports, MPI and the store's opening from its ranks'
    latest marks; a rank of the killed launch (its process older) is left out."""
    monkeypatch.setenv(start_clock.ENV, "1")
    old = {"rank": 1.0, "process": 90.0, "imports": 90.3, "mpi": 90.6, "opened": 90.7}
    new = [{"rank": 0.0, "process": 100.10, "imports": 100.40, "mpi": 100.70, "opened": 100.80},
           {"rank": 1.0, "process": 100.12, "imports": 100.45, "mpi": 100.71, "opened": 100.82}]
    p = start_parts([old, *new], started=100.05)
    assert p is not None and p["ranks"] == 2
    for k, v in (("spawn_s", 0.07), ("imports_s", 0.33), ("mpi_s", 0.26), ("store_s", 0.11)):
        assert abs(p[k] - v) < 1e-9, k
    assert start_parts([old], started=100.05) is None
    third = {**new[0], "process": 107.0, "imports": 107.5, "mpi": 108.0, "opened": 108.1}
    assert start_parts([old, *new, third], 100.05, next_started=106.9) == p  # not launch 3's
    back = start_clock.parse("start trace: rank 1 (h): process 10.000; imports -0.001 s")
    assert back is not None and abs(back["imports"] - 9.999) < 1e-9  # a clock stepped back


def test_a_start_trace_line_round_trips(monkeypatch) -> None:
    monkeypatch.delenv(start_clock.ENV, raising=False)
    start_clock.mark("imports")
    assert start_clock.line(3, "h") is None  # nothing printed unless asked
    monkeypatch.setenv(start_clock.ENV, "1")
    start_clock.mark("mpi")
    text = start_clock.line(3, "h")
    assert text is not None and text.startswith("start trace: rank 3 (h): process ")
    got = start_clock.parse(text)
    assert got is not None and got["rank"] == 3
    born = start_clock.process_start()
    assert born is not None and born <= got["imports"] <= got["mpi"] <= time.time() + 0.01
    assert abs(got["process"] - born) < 0.05  # two readings of two clocks, under load
    assert start_clock.parse("warning: something else") is None
