"""scripts/bench_store_open.py at a small size, under mpiexec (every launch a subprocess of
the script, killed on its timeout; the script itself run with a timeout): the full mode
reads every block, the mark mode none, the audit's jobs run; bad arguments are refused in
one line naming the argument."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT, run_cmd

SCRIPT = ROOT / "scripts" / "bench_store_open.py"


@pytest.mark.mpi
def test_the_bench_measures_both_modes_and_the_audit(tmp_path) -> None:
    r = run_cmd([sys.executable, str(SCRIPT), "--rows", "300", "--cols", "300", "--runs",
                 "1", "--audit-steps", "3", "--dir", str(tmp_path)], timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["block_bytes"] == 128 + 100 * 300 * 8  # the header, then 100 rows
    full, mark = out["full"]["runs"][0], out["mark"]["runs"][0]
    assert full["verified"] and mark["verified"]
    assert full["parts"]["blocks_read"] == 5 and full["parts"]["blocks_marked"] == 0
    assert full["parts"]["read_bytes"] == 5 * out["block_bytes"]
    assert mark["parts"]["blocks_read"] == 0 and mark["parts"]["blocks_marked"] == 5
    assert full["store_open_s"] > 0 and mark["store_open_s"] > 0
    assert out["audit"]["aged"]["steps"] == out["audit"]["fresh"]["steps"] == 3
    assert all(a < 60 for a in out["audit"]["fresh"]["mark_ages_after_s"])


@pytest.mark.parametrize("args, msg", [
    (["--modes", "fast"], "--modes must list full and/or mark"),
    (["--runs", "0"], "--runs must be >= 1, got 0"),
    (["--rows", "2"], "--rows must be >= 3, got 2"),
])
def test_bad_arguments_are_refused_in_one_line(args: list[str], msg: str) -> None:
    r = run_cmd([sys.executable, str(SCRIPT), *args], timeout=60)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
