"""Faults: killed, stalled, slow and garbling ranks; nothing hangs, nothing is lost.

Each scenario launches mpiexec in its own process group with a hard timeout
and checks how the job ends.  Run with ``-s`` to see the table of outcomes and
times to exit.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import run_mpi

pytestmark = pytest.mark.mpi

CEC_CFG = 't_row = 0.0005\ndeadline_factor = 1.5\ndeadline_slack_s = 0.5\n'
CODED = ["run", "coded", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4",
         "--n", "16", "--N", "12", "--field", "float64", "--t-row", "0.002"]


def lines(path):
    out = []
    for raw in path.read_text().splitlines() if path.exists() else []:
        out.append(json.loads(raw))  # every line written so far is valid JSON
    return out


def launch(tmp_path, args, n=7, timeout=90):
    t = time.monotonic()
    r = run_mpi(n, args, timeout=timeout)
    r.elapsed = time.monotonic() - t  # type: ignore[attr-defined]
    return r


def cec(tmp_path, faults, extra=()):
    cfg = tmp_path / "job.toml"
    cfg.write_text(CEC_CFG)
    out = tmp_path / "cec.jsonl"
    args = ["run", "cec", "--config", str(cfg), "--out", str(out), "--timeout", "6", *extra]
    for f in faults:
        args += ["--fault", f]
    return launch(tmp_path, args), out


def report(name, r):
    print(f"\n| {name} | exit {r.returncode} | {r.elapsed:.1f} s |")


@pytest.mark.portable
@pytest.mark.parametrize("fault,phase", [("kill:2:setup", "setup"), ("kill:4:step@1", "step 1"),
                                         ("kill:5:step@3", "step 3")])
def test_cec_killed_machine_ends_the_job(tmp_path, fault, phase):
    r, out = cec(tmp_path, [fault])
    report(f"cec {fault}", r)
    assert r.returncode != 0
    rank = fault.split(":")[1]
    assert f"rank {rank} " in r.stderr and f"in phase {phase}" in r.stderr
    recs = lines(out)
    done = [x["step"] for x in recs if x["kind"] == "step"]
    assert all(x["verified"] for x in recs if x["kind"] == "step")
    if phase == "step 3":
        assert done == [1, 2]


def test_cec_stalled_machine_in_setup_is_named(tmp_path):
    r, _ = cec(tmp_path, ["stall:3:setup:60"])
    report("cec stall:3:setup:60", r)
    assert r.returncode != 0
    assert "READY from rank 3" in r.stderr and "phase setup" in r.stderr


def test_cec_stalled_machine_in_a_step_is_replanned(tmp_path):
    r, out = cec(tmp_path, ["stall:4:step@1:2"])
    report("cec stall:4:step@1:2", r)
    assert r.returncode == 0, r.stderr
    steps = [x for x in lines(out) if x["kind"] == "step"]
    assert steps[0]["replanned"] and steps[0]["late"] == [4]
    assert 4 not in steps[0]["available"]
    assert all(s["verified"] for s in steps) and len(steps) == 4


def test_cec_slow_machine_is_replanned_and_verified(tmp_path):
    r, out = cec(tmp_path, ["slow:1:30"])
    report("cec slow:1:30", r)
    assert r.returncode == 0, r.stderr
    recs = lines(out)
    steps = [x for x in recs if x["kind"] == "step"]
    assert steps[0]["replanned"] and steps[0]["late"] == [1]
    # a machine that missed a deadline is a suspect: the next step does not wait for it
    for a, b in zip(steps, steps[1:]):
        assert a["late"] in ([], [1])
        if a["late"] == [1]:
            assert not b["replanned"] and 1 not in b["available"]
    assert steps[1]["suspects"] == [1]  # left out (step 4's schedule has no machine 1)
    assert all(s["verified"] for s in steps)
    assert recs[-1]["kind"] == "summary" and \
        recs[-1]["replanned_steps"] == [s["step"] for s in steps if s["replanned"]]


def test_cec_malformed_message_fails_loudly(tmp_path):
    r, _ = cec(tmp_path, ["garble:3:step@2"])
    report("cec garble:3:step@2", r)
    assert r.returncode != 0
    assert "malformed header from rank 3" in r.stderr


def test_cec_resume_after_kill_reproduces_the_remaining_steps(tmp_path):
    clean_dir = tmp_path / "clean"
    clean_dir.mkdir()
    r, clean_out = cec(clean_dir, [])
    assert r.returncode == 0, r.stderr
    r, out = cec(tmp_path, ["kill:5:step@3"])
    assert r.returncode != 0
    assert [x["step"] for x in lines(out) if x["kind"] == "step"] == [1, 2]
    r2, _ = cec(tmp_path, [], extra=["--resume"])
    report("cec --resume after kill:5:step@3", r2)
    assert r2.returncode == 0, r2.stderr
    assert "resuming at step 3" in r2.stdout
    got = [x for x in lines(out) if x["kind"] == "step"]
    want = [x for x in lines(clean_out) if x["kind"] == "step"]
    assert [x["step"] for x in got] == [1, 2, 3, 4]
    keys = ("available", "load", "rows", "sets", "verified", "transition_waste")
    assert [{k: x[k] for k in keys} for x in got] == [{k: x[k] for k in keys} for x in want]
    assert abs(got[2]["max_error"] - want[2]["max_error"]) < 1e-12  # same w_3, same data


def test_cec_resume_needs_a_matching_results_file(tmp_path):
    r, _ = cec(tmp_path, [], extra=["--resume"])
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("mpi-coded: error: --resume:")


def coded(tmp_path, scheme, faults, timeout="5", extra=()):
    out = tmp_path / "coded.jsonl"
    args = [*CODED, "--scheme", scheme, "--out", str(out), "--timeout", timeout, *extra]
    for f in faults:
        args += ["--fault", f]
    return launch(tmp_path, args), out


@pytest.mark.parametrize("phase", ["encode", "map", "shuffle", "reduce"])
def test_coded_killed_server_in_each_phase(tmp_path, phase):
    # uc: every server maps, shuffles and reduces, so the fault always fires
    r, out = coded(tmp_path, "uc", [f"kill:3:{phase}@0"])
    report(f"coded kill:3:{phase}@0", r)
    assert r.returncode != 0
    assert "rank 3 " in r.stderr and f"in phase {phase} 0" in r.stderr
    assert all(x["kind"] != "run" for x in lines(out))


@pytest.mark.parametrize("phase", ["encode", "shuffle", "reduce"])
def test_coded_stalled_server_in_a_waited_phase_is_named(tmp_path, phase):
    r, out = coded(tmp_path, "uc", [f"stall:2:{phase}@0:60"], timeout="3")
    report(f"coded stall:2:{phase}@0:60", r)
    assert r.returncode != 0
    assert "rank 2 (" in r.stderr and "timed out" in r.stderr
    assert f"failed in phase {phase} 0" in r.stderr


def test_coded_stalled_server_in_map_is_a_straggler_not_waited_for(tmp_path):
    r, out = coded(tmp_path, "unified", ["stall:2:map@0:3"], timeout="10",
                   extra=["--reps", "2"])
    report("coded stall:2:map@0:3", r)
    assert r.returncode == 0, r.stderr
    runs = [x for x in lines(out) if x["kind"] == "run"]
    assert len(runs) == 2 and all(x["verified"] for x in runs)
    assert 1 not in runs[0]["Q"]  # server 1 = rank 2
    assert runs[0]["map_s"] < 2.5  # the stall of 3 s was not waited for


def test_coded_slow_server_is_left_out(tmp_path):
    r, out = coded(tmp_path, "unified", ["slow:4:50"], extra=["--reps", "2"])
    report("coded slow:4:50", r)
    assert r.returncode == 0, r.stderr
    runs = [x for x in lines(out) if x["kind"] == "run"]
    assert all(3 not in x["Q"] and x["verified"] for x in runs)
    assert all(x["server_map"]["3"]["stopped"] for x in runs if "3" in x["server_map"])


def test_coded_malformed_message_fails_loudly(tmp_path):
    r, _ = coded(tmp_path, "unified", ["garble:2:encode@0"])
    report("coded garble:2:encode@0", r)
    assert r.returncode != 0
    assert "malformed header from rank 2" in r.stderr


@pytest.mark.parametrize("spec,msg", [
    ("kill:0:step", "RANK must be a worker rank 1..6"),
    ("kill:9:step", "RANK must be a worker rank 1..6"),
    ("kill:2:map", "PHASE must be one of setup, step"),
    ("stall:2:step", "must look like stall:RANK:PHASE[@STEP]:SECONDS"),
    ("slow:2:0.5", "slow FACTOR must be >= 1"),
    ("boom:1:step", "kind must be one of"),
])
def test_bad_fault_specs(spec, msg, capsys):
    from mpi_coded.cli import main

    assert main(["run", "cec", "--fault", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]
