"""Scheme lt on the real MPI runtime (unchanged): real shuffles, every output verified."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from conftest import run_mpi
from mpi_coded.coded.schemes import get as get_scheme

pytestmark = pytest.mark.mpi


def launch(tmp_path, K, args, timeout=240):
    out = tmp_path / "lt.jsonl"
    r = run_mpi(K + 1, ["run", "coded", "--scheme", "lt", "--K", str(K), *args,
                        "--out", str(out)], timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[-1]["kind"] == "summary" and lines[-1]["all_verified"] is True
    return [x for x in lines if x["kind"] == "run"]


def check_runs(recs, K, q, mu, reps):
    analytic = get_scheme("lt").load(K, q, mu).load
    assert len(recs) == reps
    for r in recs:
        assert r["scheme"] == "lt" and r["verified"] is True
        assert r["max_error"] == 0 if r["field"] != "float64" else r["max_error"] < 1e-6
        assert len(r["Q"]) == q and len(set(r["Q"]) | set(r["extra"])) >= q
        assert not set(r["Q"]) & set(r["extra"])
        # the load is what was sent: multicasts once plus unicasts, over m N
        sent = r["multicast_values"] + r["unicast_values"]
        assert sent > 0 and r["unicast_values"] > 0
        assert Fraction(r["load_measured_exact"]) == Fraction(sent, r["m"] * r["N"])
        assert Fraction(r["load_measured_exact"]) == Fraction(r["load_plan_exact"])
        assert Fraction(r["load_analytic_exact"]) == analytic  # the unified formula...
        assert Fraction(r["load_measured_exact"]) >= analytic  # ...a lower bound for LT
        assert r["bytes_on_wire"] >= sent
        finishers = set(r["Q"]) | set(r["extra"])
        for s, v in r["server_map"].items():
            if int(s) in finishers:
                assert v["rows_done"] == v["rows"]


@pytest.mark.portable
def test_lt_job_gf8_k6(tmp_path):
    recs = launch(tmp_path, 6, ["--q", "4", "--mu", "1/2", "--rows-per-batch", "40",
                                "--n", "30", "--N", "12", "--field", "gf2^8",
                                "--straggler", "shiftexp", "--t-row", "0.0005", "--reps", "3"])
    check_runs(recs, 6, 4, Fraction(1, 2), 3)
    assert all(r["m"] == 400 and r["multicast_values"] == 720 for r in recs)  # unified's


def test_lt_job_extra_finishers_float64(tmp_path):
    # mu q = 1: two servers hold exactly m rows, which this seeded code never decodes
    recs = launch(tmp_path, 4, ["--q", "2", "--mu", "1/2", "--rows-per-batch", "15",
                                "--n", "8", "--N", "4", "--field", "float64",
                                "--straggler", "shiftexp", "--t-row", "0.002", "--reps", "2",
                                "--seed", "3"])
    check_runs(recs, 4, 2, Fraction(1, 2), 2)
    assert all(r["extra"] for r in recs)
