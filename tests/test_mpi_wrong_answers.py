"""Machines that answer well-formed and wrong, under mpiexec (docs/theory.md A.10): located in
the step, decoded around with a spare answer or re-asked, quarantined, probed and
re-admitted, lost when mercurial; a stored block overwritten mid-run rebuilt from peers; a
step without enough correct answers NOT VERIFIED while the job goes on.  The power
workload's end check against numpy on the uncoded ``X`` is the independent proof that no
wrong ``y`` was used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import kill_tree, launcher_env, mpiexec_cmd, run_cli, run_mpi

pytestmark = pytest.mark.mpi

BASE = """job = "cec"
N = 6
L = 3
speeds = [1, 1, 1.5, 1.5, 2, 2]
rows = {rows}
cols = {cols}
t_row = {t_row}
seed = 1
timeout_s = 30
{extra}
[availability]
kind = "schedule"
schedule = {schedule}
"""
ALL = [1, 2, 3, 4, 5, 6]


def config(tmp_path: Path, schedule: list[list[int]], extra: str = "", rows: int = 240,
           cols: int = 240, t_row: float = 0.0001) -> Path:
    p = tmp_path / "job.toml"
    p.write_text(BASE.format(rows=rows, cols=cols, extra=extra, schedule=schedule,
                             t_row=t_row))
    return p


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def of_kind(path: Path, kind: str) -> list[dict]:
    return [x for x in lines(path) if x["kind"] == kind]


def run(tmp_path: Path, cfg: Path, *faults: str, timeout: float = 120):
    out = tmp_path / "out.jsonl"
    r = run_mpi(7, ["run", "cec", "--config", str(cfg), "--out", str(out),
                    *[a for f in faults for a in ("--fault", f)]], timeout=timeout)
    return r, out


def test_spare_answer_decodes_around_a_corrupt_answer_gf(tmp_path: Path) -> None:
    """S = 1 over GF(2^8): machine 2's first answer of step 2 has one symbol changed (the
    others' first answers are late: it is used); the master waits for the spare answers,
    decodes around it, names machine 2, the row set and its rows, quarantines it for two
    steps (its block is intact) and re-admits it after a clean probe (its answers of that
    step awaited)."""
    cfg = config(tmp_path, [ALL] * 6, 'S = 1\nfield = "gf2^8"')
    # the others' first answers of step 2 come 0.3 s late: machine 2's first is used
    late = [f"stall:{n}:answer@2:0.3" for n in ALL if n != 2]
    r, out = run(tmp_path, cfg, "corrupt:2:answer@2", *late)
    assert r.returncode == 0, r.stdout + r.stderr
    steps = of_kind(out, "step")
    assert all(s["verified"] and s["max_error"] == 0 for s in steps)
    wrong = steps[1]["wrong_answers"]
    assert {a["machine"] for a in wrong} == {2} and all(a["found"] == "spare" for a in wrong)
    for a in wrong:
        assert a["set"] in range(len(steps[1]["sets"])) and len(a["rows"]) == 2
    assert steps[1]["attempts"] == 1 and steps[1]["verify_s"] > 0
    events = [e["event"] for e in steps[1]["quarantine"]]
    assert events == ["caught", "block-good"]
    assert steps[2]["quarantined"] == [2] and steps[3]["quarantined"] == [2]
    assert 2 not in steps[2]["available"] and 2 not in steps[3]["available"]
    assert 2 in steps[4]["available"]
    assert [e["event"] for e in steps[4]["quarantine"]] == ["readmitted"]
    assert steps[5]["quarantined"] == [] and 2 in steps[5]["available"]
    summary = of_kind(out, "summary")[0]
    assert summary["all_verified"] and summary["wrong_answers"] == len(wrong)
    assert "wrong answers of [2] (spare)" in r.stdout
    assert "machine 2 (" in r.stderr and "intact block" in r.stderr


def test_a_late_wrong_answer_is_checked_against_its_verified_step(tmp_path: Path) -> None:
    """S = 1, power iteration: machine 3 corrupts its first answer of step 4 and stalls
    0.2 s before sending it; step 4 verifies from the others and is over.  The answer
    arrives during a later step, is re-encoded against step 4's verified result, named
    ``late`` (with its step) in that step's line and machine 3 caught; with
    ``quarantine_steps = 0`` it is planned on probation at once and re-admitted after a
    clean probe.  In a short job the same answer arrives only at the end: named in the
    summary's ``wrong_answers_after_steps``."""
    extra = 'workload = "power"\nS = 1\nquarantine_steps = 0'
    cfg = config(tmp_path, [ALL] * 9, extra, t_row=0.002)
    r, out = run(tmp_path, cfg, "corrupt:3:answer@4", "stall:3:answer@4:0.2")
    assert r.returncode == 0, r.stdout + r.stderr
    steps = of_kind(out, "step")
    assert all(s["verified"] for s in steps) and len(steps) == 9
    assert steps[3]["wrong_answers"] == [] and 3 in steps[3]["cut_off"]
    named = [(s["step"], a) for s in steps for a in s["wrong_answers"]]
    assert len(named) == 1, named
    t, a = named[0]
    assert t > 4 and (a["machine"], a["found"], a["step"], a["attempt"]) == (3, "late", 4, 0)
    events = [(s["step"], e["event"]) for s in steps for e in s["quarantine"]
              if e["machine"] == 3]
    assert events[:2] == [(t, "caught"), (t, "block-good")]
    assert (t + 1, "readmitted") in events or (t + 2, "readmitted") in events, events
    assert all(s["quarantined"] == [] for s in steps)  # quarantine_steps = 0: never left out
    assert "wrong answers of [3] (late of step 4)" in r.stdout
    summary = of_kind(out, "summary")[0]
    assert summary["all_verified"] and summary["wrong_answers"] == 1
    assert summary["wrong_answers_after_steps"] == []
    assert summary["workload_check"]["ok"]
    short = tmp_path / "short"
    short.mkdir()
    cfg = config(short, [ALL] * 5, 'workload = "power"\nS = 1', t_row=0.0002)
    r, out = run(short, cfg, "corrupt:3:answer@4", "stall:3:answer@4:0.3")
    assert r.returncode == 0, r.stdout + r.stderr
    summary = of_kind(out, "summary")[0]
    after = summary["wrong_answers_after_steps"]
    assert [(a["machine"], a["step"], a["found"]) for a in after] == [(3, 4, "late")]
    assert summary["all_verified"] and summary["wrong_answers"] == 1
    assert "wrong, late (after the step was verified): named at the job's end" in r.stderr


def test_without_spares_the_step_is_asked_again_power_iterate_untouched(tmp_path: Path
                                                                        ) -> None:
    """S = 0, float64 power iteration: a corrupt answer at step 3 is found by asking the step
    again with one spare answer within the step; the final w equals numpy's."""
    cfg = config(tmp_path, [ALL] * 6, 'workload = "power"')
    r, out = run(tmp_path, cfg, "corrupt:4:answer@3")
    assert r.returncode == 0, r.stdout + r.stderr
    steps = of_kind(out, "step")
    assert all(s["verified"] for s in steps)
    s3 = steps[2]
    assert s3["attempts"] == 2 and s3["S"] == 1
    assert {a["machine"] for a in s3["wrong_answers"]} == {4}
    assert {a["found"] for a in s3["wrong_answers"]} == {"re-asked"}
    assert {a["attempt"] for a in s3["wrong_answers"]} == {0}
    check = of_kind(out, "summary")[0]["workload_check"]
    assert check["ok"] and check["relative_error"] < 1e-9


def test_a_mercurial_machine_is_lost_and_too_few_answers_is_not_verified(tmp_path: Path
                                                                         ) -> None:
    """A consistent liar (wrong w from step 1): caught at step 1 (intact block: a strike),
    out for 2 steps, planned again at step 4 and caught again: lost for the job, one
    warning naming rank, host and machine.  Step 6 has only L machines, the liar among
    them: NOT VERIFIED, the job goes on, the power iterate is not carried forward (the end
    check still equals numpy's over the steps taken), exit 1."""
    sched = [ALL, ALL, ALL, ALL, ALL, [1, 3, 5], ALL]
    cfg = config(tmp_path, sched, 'workload = "power"')
    r, out = run(tmp_path, cfg, "lie:3")
    assert r.returncode == 1, r.stdout + r.stderr
    steps = of_kind(out, "step")
    assert len(steps) == 7
    assert [s["verified"] for s in steps] == [True] * 5 + [False, True]
    assert [e["event"] for e in steps[0]["quarantine"]] == ["caught", "block-good"]
    assert [e["event"] for e in steps[3]["quarantine"]] == ["caught", "lost"]
    assert steps[4]["quarantined"] == [3] and steps[6]["quarantined"] == [3]
    lost = [ln for ln in r.stderr.splitlines() if "mercurial" in ln]
    assert len(lost) == 1 and "machine 3 (rank 3," in lost[0]
    assert "NOT VERIFIED" in r.stderr and "the power iterate is kept" in r.stderr
    summary = of_kind(out, "summary")[0]
    assert not summary["all_verified"] and summary["steps_repeated"] == 1
    assert summary["workload_check"]["ok"]
    assert [e["event"] for e in summary["quarantine"]].count("lost") == 1


def test_intermittent_corruption_never_reaches_a_verified_line(tmp_path: Path) -> None:
    """A mercurial machine (P = 0.3 at every answer), S = 1, exact check: every step is
    verified or NOT VERIFIED, and the power iterate equals numpy's (no wrong y used)."""
    cfg = config(tmp_path, [ALL] * 12, 'workload = "power"\nS = 1\nquarantine_steps = 1')
    r, out = run(tmp_path, cfg, "corrupt:5:answer:0.3")
    steps = of_kind(out, "step")
    assert len(steps) == 12, r.stdout + r.stderr
    assert any(s["wrong_answers"] for s in steps)
    summary = of_kind(out, "summary")[0]
    assert summary["workload_check"]["ok"], summary["workload_check"]
    assert r.returncode == (0 if summary["all_verified"] else 1)


def test_a_stored_block_overwritten_mid_run_is_rebuilt_and_its_machine_back(tmp_path: Path
                                                                            ) -> None:
    """Machines 2's and 4's block files overwritten in place while the job runs (their
    mapped pages change): the step that uses them is located (or, without a spare, every
    machine checks its block), every block checked, the two rebuilt from L peers whose
    blocks are intact (never from each other), both quarantined, then re-admitted; every
    step verified against the store's sketch."""
    sched = [ALL] * 4 + [[1, 2, 3, 4, 5]] * 30
    cfg = config(tmp_path, sched, f'store = "{tmp_path / "store"}"', rows=600, cols=60,
                 t_row=0.0004)
    r = run_cli(["store", "write", "--config", str(cfg), "--out", str(tmp_path / "store")])
    assert r.returncode == 0, r.stderr
    block = tmp_path / "store" / "block-2.npy"
    out = tmp_path / "out.jsonl"
    cmd = [*mpiexec_cmd(7), sys.executable, "-m", "mpi_coded", "run", "cec", "--config",
           str(cfg), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, **launcher_env()})
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            if out.exists() and out.read_text().count('"kind": "step"') >= 3:
                break
            time.sleep(0.005)
        for path in (block, block.with_name("block-4.npy")):  # every 10th row of two
            with open(path, "r+b") as f:
                for row in range(0, 200, 10):
                    f.seek(128 + 8 * (60 * row + 7))
                    f.write(b"\x12\x34\x56\x78\x9a\xbc\xde\xf0")
        stdout, stderr = proc.communicate(timeout=120)
    except BaseException:
        kill_tree(proc.pid)
        proc.communicate()
        raise
    steps = of_kind(out, "step")
    assert proc.returncode == 0, stdout + stderr
    assert len(steps) == 34 and all(s["verified"] for s in steps)
    caught = [s for s in steps if s["quarantine"]]
    events = [(e["machine"], e["event"]) for s in caught for e in s["quarantine"]]
    for n in (2, 4):
        assert (n, "block-repaired") in events and (n, "readmitted") in events, events
        assert (n, "block-good") not in events and (n, "lost") not in events, events
    first = next(s for s in caught if s["wrong_answers"])
    assert {a["machine"] for a in first["wrong_answers"]} <= {2, 4}
    rep = [e for s in caught for e in s["quarantine"] if e["event"] == "block-repaired"]
    assert all(e["bytes"] > 0 and e["repair_s"] > 0 for e in rep)
    # each rebuilt from intact blocks only: never from the other corrupt one
    for n, other in ((2, 4), (4, 2)):
        line = next(x for x in stdout.splitlines() if f"repaired machine {n}'s block" in x)
        assert str(other) not in line.split("from machines")[1].split("(")[0], line
    # on disk again with its checksum: the next start's check finds nothing to repair
    again = run_mpi(7, ["run", "cec", "--config", str(cfg), "--out",
                        str(tmp_path / "again.jsonl")], timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "corrupt" not in again.stderr


def test_a_lying_plugin_fault_mode_is_one_file_and_is_located(tmp_path: Path) -> None:
    """examples/liar.py (imports only mpi_coded.plugin): every answer of rank 2 negated from
    step 2 on; S = 1: located with the spare answers at step 2, quarantined; caught again
    at its probe: lost for the job; every step verified."""
    cfg = config(tmp_path, [ALL] * 7, "S = 1")
    out = tmp_path / "out.jsonl"
    liar = str(Path(__file__).resolve().parent.parent / "examples" / "liar.py")
    r = run_mpi(7, ["--plugin", liar, "run", "cec", "--config", str(cfg), "--out", str(out),
                    "--fault", "negate:2:2"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    steps = of_kind(out, "step")
    assert all(s["verified"] for s in steps) and not steps[0]["wrong_answers"]
    assert {a["machine"] for a in steps[1]["wrong_answers"]} == {2}
    events = [e["event"] for s in steps for e in s["quarantine"]]
    assert events == ["caught", "block-good", "caught", "lost"], events
    assert steps[-1]["quarantined"] == [2]


def test_every_second_of_the_master_is_counted(tmp_path: Path) -> None:
    """A step's wall_s plus the master's time outside it (master_s) and the time before
    and after the steps add up to the master's run (job_s), which fits in the launcher's
    wall time; the check's own seconds are in every line (verify_s)."""
    cfg = config(tmp_path, [ALL, [1, 2, 3, 5], ALL, [2, 3, 4, 6]], "S = 1")
    t0 = time.monotonic()
    r, out = run(tmp_path, cfg)
    outside = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    steps = of_kind(out, "step")
    s = of_kind(out, "summary")[0]
    counted = s["before_steps_s"] + sum(x["wall_s"] + x["master_s"] for x in steps) + \
        s["after_steps_s"]
    assert abs(counted - s["job_s"]) <= 0.05 * s["job_s"]
    assert abs(s["master_s"] - sum(x["master_s"] for x in steps)) < 1e-9
    assert s["job_s"] < outside
    assert all(x["verify_s"] > 0 and x["master_s"] >= 0 for x in steps)
