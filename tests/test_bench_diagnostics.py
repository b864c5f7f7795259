"""scripts/bench_fft_contention.py and scripts/bench_encode_prices.py: bad input is one
error naming the argument (exit 2); the contention bench runs at a small size and reports
both shapes with the model's counted operations."""

from __future__ import annotations

import json
import statistics
import sys

import pytest

from conftest import ROOT, run_cmd

FFT = ROOT / "scripts" / "bench_fft_contention.py"
PRICES = ROOT / "scripts" / "bench_encode_prices.py"


@pytest.mark.parametrize("script,args,message", [
    (FFT, ["--procs", "0"], "--procs: must be at least 1, got 0"),
    (FFT, ["--columns", "0"], "--columns: must be at least 1, got 0"),
    (PRICES, ["--reps", "0"], "--reps: must be at least 1, got 0"),
    (PRICES, ["--T", "x"], "--T: comma-separated integers"),
    (PRICES, ["--T", "7"], "--T 7 at --m 6000:"),
    (PRICES, ["--T", ","], "--T: at least one T"),
    (PRICES, ["--calibration", "/nonexistent/calib.json"], "--calibration:"),
    (FFT, ["--procs", "65"], "--procs: at most 64, got 65"),
])
def test_bad_input_is_one_error_naming_the_argument(script, args, message):
    r = run_cmd([sys.executable, str(script), *args], timeout=120)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr


def test_fft_contention_reports_both_shapes_with_their_counted_operations():
    from mpi_coded.codes import rs_fft

    r = run_cmd([sys.executable, str(FFT), "--procs", "2", "--reps", "1", "--columns", "64"],
                timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["bench"] == "fft_contention" and out["procs"] == 2
    u, p = out["shapes"]["unified"], out["shapes"]["partitions"]
    assert u["ops"] == rs_fft.fft_encode_ops(9000, 6000, 64)
    assert p["ops"] == 10 * rs_fft.fft_encode_ops(900, 600, 64)
    for sh in (u, p):
        assert sh["alone_s"] > 0 and len(sh["at_once_s"]) == 2
        assert all(w > 0 for w in sh["at_once_s"])
    for sh in (u, p):
        assert sh["slowdown"] == pytest.approx(statistics.median(sh["at_once_s"]) / sh["alone_s"])
        assert sh["beyond_share"] == pytest.approx(sh["slowdown"] / max(1.0, 2 / out["cores"]))
    got = out["unified_over_partitions"]
    assert got["alone"] == pytest.approx(u["alone_s"] / p["alone_s"])
    assert got["at_once"] == pytest.approx(statistics.median(u["at_once_s"])
                                           / statistics.median(p["at_once_s"]))
    assert got["model_ops"] == pytest.approx(1.059, abs=0.001)  # 82728 vs 78120 per column


def test_encode_prices_times_every_server_and_prices_its_own_calls():
    r = run_cmd([sys.executable, str(PRICES), "--m", "720", "--T", "1,10", "--reps", "1",
                 "--calibration", str(ROOT / "docs" / "runs" / "calibration.json")],
                timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["bench"] == "encode_prices" and out["m"] == 720
    assert set(out["by_T"]) == {"1", "10"}
    for row in out["by_T"].values():
        assert len(row["servers"]) == 9
        assert row["measured_s"] == pytest.approx(sum(x["measured_s"] for x in row["servers"]))
        assert row["model_s"] == pytest.approx(sum(x["model_s"] for x in row["servers"]))
        assert sum(row["model_share"].values()) == pytest.approx(1.0)
        assert all(x["measured_s"] > 0 and x["model_s"] > 0 for x in row["servers"])
    # unified's parity servers encode with the FFT, and the model says so
    share = out["by_T"]["1"]["model_share"]
    assert share.get("rs_fft_encode", 0) + share.get("rs_fft_encode_large", 0) > 0.5
