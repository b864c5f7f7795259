"""The elastic job for real: mpiexec, real messages, decoded and verified."""

from __future__ import annotations

import json

import pytest

from conftest import run_mpi

pytestmark = pytest.mark.mpi

SEED_AVAIL = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]


def read_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_default_job(lines, field):
    kinds = [r["kind"] for r in lines]
    assert kinds == ["config", "setup", "step", "step", "step", "step", "summary"]
    steps = [r for r in lines if r["kind"] == "step"]
    assert [s["available"] for s in steps] == SEED_AVAIL
    for s in steps:
        assert s["verified"] is True and s["field"] == field
        if field.startswith("gf"):
            assert s["max_error"] == 0
        else:
            assert s["max_error"] < 1e-8
        assert sum(s["rows"].values()) == 3 * 420
        assert s["wall_s"] > 0 and s["predicted_s"] > 0
    assert [s["sets"][0]["machines"] for s in steps] == [[1, 5, 6], [1, 5, 6], [1, 3, 5], [2, 3, 5]]
    summary = lines[-1]
    assert summary["all_verified"] is True
    # preempted machines computed nothing, on their own account (server-side counters)
    for s in steps:
        for n in range(1, 7):
            rec = summary["machine_steps"][str(n)][str(s["step"])]
            if n in s["available"]:
                assert rec["rows"] == s["rows"][str(n)] > 0 and not rec["idle"]
            else:
                assert rec["rows"] == 0 and rec["idle"]
    # the coded blocks were sent once, at setup; a step moves only ranges, w and results
    setup = lines[1]
    assert setup["setup_bytes"] == 6 * 420 * 200 * (8 if field == "float64" else 1)
    assert all(s["bytes_step"] < setup["bytes_per_machine"] for s in steps)
    return summary


@pytest.mark.portable
def test_default_job_float64(tmp_path):
    out = tmp_path / "cec.jsonl"
    r = run_mpi(7, ["run", "cec", "--out", str(out), "--t-row", "0.0005"], timeout=120)
    assert r.returncode == 0, r.stderr
    check_default_job(read_lines(out), "float64")
    assert "step available" in r.stdout and "all verified: True" in r.stdout


def test_default_job_gf8_cyclic_and_idle_ranks_do_not_spin(tmp_path):
    out = tmp_path / "cec.jsonl"
    r = run_mpi(7, ["run", "cec", "--out", str(out), "--field", "gf2^8", "--t-row", "0.002"],
                timeout=180)
    assert r.returncode == 0, r.stderr
    summary = check_default_job(read_lines(out), "gf2^8")
    idle = summary["idle"]
    # machine 4 idles in steps 2-4, machine 6 in 3-4, machine 1 in step 4
    assert [idle[str(n)]["idle_steps"] for n in range(1, 7)] == [1, 0, 0, 3, 0, 2]
    assert idle["4"]["wall_s"] > 0.8
    for n in ("1", "4", "6"):
        assert idle[n]["cpu_s"] < 0.05 * idle[n]["wall_s"], idle[n]


def test_cyclic_policy_and_random_availability(tmp_path):
    cfg = tmp_path / "job.toml"
    cfg.write_text('N = 5\nL = 2\nspeeds = [1, 2, 1, 3, 1.5]\nrows = 37\ncols = 5\n'
                   'policy = "cyclic"\nt_row = 0\n'
                   '[availability]\nkind = "random"\np = 0.4\nsteps = 6\n')
    out = tmp_path / "r.jsonl"
    r = run_mpi(6, ["run", "cec", "--config", str(cfg), "--out", str(out), "--field", "gf2^16"],
                timeout=120)
    assert r.returncode == 0, r.stderr
    steps = [x for x in read_lines(out) if x["kind"] == "step"]
    assert len(steps) == 6 and all(s["verified"] and s["policy"] == "cyclic" for s in steps)
    assert all(len(s["available"]) >= 2 for s in steps)
    # padding never reaches the result: 37 rows in 2 blocks of 19
    assert all(sum(s["rows"].values()) == 2 * 19 for s in steps)


def test_results_are_appended(tmp_path):
    out = tmp_path / "r.jsonl"
    for _ in range(2):
        r = run_mpi(7, ["run", "cec", "--out", str(out), "--t-row", "0"], timeout=120)
        assert r.returncode == 0, r.stderr
    kinds = [x["kind"] for x in read_lines(out)]
    assert kinds.count("summary") == 2 and kinds.count("step") == 8


def test_data_from_npy_file(tmp_path):
    import numpy as np

    x = np.random.default_rng(3).integers(0, 256, size=(50, 7))
    np.save(tmp_path / "x.npy", x)
    cfg = tmp_path / "job.toml"
    cfg.write_text(f'data = "{tmp_path / "x.npy"}"\nfield = "gf2^8"\nt_row = 0\n')
    out = tmp_path / "r.jsonl"
    r = run_mpi(7, ["run", "cec", "--config", str(cfg), "--out", str(out)], timeout=120)
    assert r.returncode == 0, r.stderr
    lines = read_lines(out)
    assert lines[0]["rows"] == 50 and lines[0]["cols"] == 7
    assert all(s["verified"] and s["max_error"] == 0 for s in lines if s["kind"] == "step")
