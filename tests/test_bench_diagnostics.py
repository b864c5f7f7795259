"""scripts/bench_fft_contention.py and scripts/bench_encode_prices.py: bad input is one
error naming the argument (exit 2); the contention bench runs at a small size and reports
both shapes with the model's counted operations."""

from __future__ import annotations

import json
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
    (PRICES, ["--T", "7"], "--T 7:"),
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
    assert out["unified_over_partitions"]["model_ops"] == pytest.approx(u["ops"] / p["ops"])

