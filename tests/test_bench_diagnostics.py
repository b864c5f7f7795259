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


# --- scripts/bench_coded.py over mpi_coded.bench.bench_coded ---------------------------

CODED_BENCH = ROOT / "scripts" / "bench_coded.py"
SCALED_RUNS = ROOT / "docs" / "runs" / "bdc_over_unified_m1800.jsonl"
MERGE_KEYS = {
    "bdc_over_unified_measured_normalized", "bdc_over_unified_measured_normalized_iqr",
    "model_over_measured_normalized_ratio", "scaled_summary_normalized",
    "bdc_over_unified_measured", "bdc_over_unified_measured_iqr", "bdc_over_unified_model",
    "bdc_over_unified_table_model", "model_over_measured_ratio", "scaled_summary",
    "scaled_m", "scaled_phases", "all_verified_scaled"}


def test_bench_coded_merge_prints_the_summary_keys(tmp_path):
    from mpi_coded.bench import bench_coded as bc

    runs = bc.scaled_runs_in([SCALED_RUNS, SCALED_RUNS])  # each run once
    assert runs and len(runs) == len(bc.scaled_runs_in([SCALED_RUNS]))
    merged = bc.merged(runs)
    assert set(merged) == MERGE_KEYS | {"scaled_runs"}
    r = run_cmd([sys.executable, str(CODED_BENCH), "--merge", str(SCALED_RUNS)], timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(out) == MERGE_KEYS
    assert out["bdc_over_unified_measured"] == pytest.approx(
        merged["bdc_over_unified_measured"])
    assert "BDC over unified, encode + reduce, m = n = N = 1800" in r.stdout
    # a bench's own output (progress lines, then its JSON line) holds its runs too
    printed = tmp_path / "bench.txt"
    printed.write_text("progress\n" + json.dumps({"scaled_runs": runs}) + "\n")
    assert bc.scaled_runs_in([printed]) == runs
    empty = tmp_path / "empty.txt"
    empty.write_text("nothing\n")
    r = run_cmd([sys.executable, str(CODED_BENCH), "--merge", str(empty)], timeout=120)
    assert r.returncode != 0 and "no scaled runs" in r.stderr


def _coded_run(scale: float) -> dict:
    return {"kind": "run", "job": "coded", "encode_s": 1.0 * scale, "map_s": 2.0 * scale,
            "shuffle_s": 0.5 * scale, "reduce_s": 0.25 * scale, "total_s": 3.75 * scale,
            "load_measured": 0.5, "verified": True, "bytes_on_wire": 1000,
            "server_shuffle_s": {"0": 0.1 * scale, "1": 0.2 * scale},
            "server_plan_s": {"0": 0.01, "1": 0.02}, "multicast_values": 6,
            "unicast_values": 4}


def test_bench_coded_joins_the_repetitions(tmp_path):
    from mpi_coded.bench import bench_coded as bc

    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in (
        {"kind": "config", "job": "coded", "scheme": "unified"}, _coded_run(1.0),
        _coded_run(3.0), _coded_run(2.0), {"kind": "summary", "job": "coded"})))
    runs = bc.run_records(path)
    assert len(runs) == 3
    med = bc.phase_medians(runs)
    assert med["encode_s"] == 2.0 and med["total_s"] == 7.5 and med["verified"]
    assert med["shuffle_Bps"] == pytest.approx(1000 / 1.0)
    assert med["exchange_Bps"] == pytest.approx(1000 / 0.4)
    assert med["plan_s"] == 0.02 and med["messages_bytes"] == 100
    # only a partitioned scheme takes T
    args = bc.coded_args("bdc", 720, 720, 720, 10, "gf2^16", 3, 0.0002, path)
    assert args[args.index("--T") + 1] == "10"
    assert "--T" not in bc.coded_args("unified", 720, 720, 720, 1, "gf2^16", 3, 0.0, path)
    assert "--T" not in bc.scaled_args(1800, 300, 1, 2, path)
    assert bc.scheme_at(1) == "unified" and bc.scheme_at(50) == "bdc"
    assert bc.bench_Ts(720) == [1, 2, 5, 10, bc.eta_for("unified", 720)]
    lines = bc.scheme_lines({"unified": med})
    assert lines[0] == "" and lines[2].startswith("unified ") and lines[2].endswith("yes")
