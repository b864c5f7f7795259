"""The coded matrix-vector job for real: mpiexec, real shuffles, verified outputs."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from conftest import run_mpi
from mpi_coded.coded.schemes import get as get_scheme

pytestmark = pytest.mark.mpi


def runs(path):
    return [json.loads(x) for x in path.read_text().splitlines()
            if json.loads(x)["kind"] == "run"]


def launch(tmp_path, K, args, timeout=240):
    out = tmp_path / "coded.jsonl"
    r = run_mpi(K + 1, ["run", "coded", "--K", str(K), *args, "--out", str(out)],
                timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return runs(out)


def check_exact_loads(recs, scheme, K, q, mu):
    formula = get_scheme(scheme).load(K, q, mu).load
    orders = set()
    for r in recs:
        assert r["verified"] is True
        assert r["scheme"] == scheme
        assert r["padding_values"] == "0"
        assert Fraction(r["load_measured_exact"]) == formula == Fraction(r["load_analytic_exact"])
        assert r["multicast_values"] + r["unicast_values"] == formula * r["m"] * r["N"]
        assert r["bytes_on_wire"] >= (r["multicast_values"] + r["unicast_values"])
        orders.add(tuple(r["Q"]))
    return orders


@pytest.mark.portable
@pytest.mark.parametrize("scheme", ["uc", "cmr", "sc", "unified"])
def test_measured_load_equals_analytic_K6_q4(tmp_path, scheme):
    recs = launch(tmp_path, 6, ["--scheme", scheme, "--q", "4", "--mu", "1/2",
                                "--rows-per-batch", "4", "--n", "16", "--N", "12",
                                "--field", "float64", "--straggler", "shiftexp",
                                "--t-row", "0.001", "--reps", "4", "--seed", "3"])
    orders = check_exact_loads(recs, scheme, 6, 4, Fraction(1, 2))
    if scheme == "unified":
        assert all(Fraction(r["load_measured_exact"]) == Fraction(7, 20) for r in recs)
    assert len(orders) >= 2  # several finishing orders were tried


@pytest.mark.slow  # K = 9, every scheme: the paper's shape
def test_paper_shape_K9_q6_all_schemes_gf8(tmp_path):
    for scheme in ("unified", "sc", "cmr", "uc"):
        recs = launch(tmp_path / scheme, 9, [
            "--scheme", scheme, "--q", "6", "--mu", "1/3", "--rows-per-batch", "2",
            "--n", "24", "--N", "36", "--field", "gf2^8", "--straggler", "shiftexp",
            "--t-row", "0.0005", "--reps", "2"])
        check_exact_loads(recs, scheme, 9, 6, Fraction(1, 3))
        assert all(r["max_error"] == 0 for r in recs)
        if scheme == "unified":
            assert Fraction(recs[0]["load_measured_exact"]) == Fraction(11, 24)


def test_strategy_two_instance(tmp_path):
    recs = launch(tmp_path, 6, ["--scheme", "unified", "--q", "5", "--mu", "4/5",
                                "--rows-per-batch", "2", "--n", "10", "--N", "30",
                                "--field", "gf2^8", "--reps", "2", "--seed", "1",
                                "--straggler", "shiftexp", "--t-row", "0.001"])
    check_exact_loads(recs, "unified", 6, 5, Fraction(4, 5))
    assert all(r["strategy"] == 2 and r["s_q"] == 4 for r in recs)
    assert Fraction(recs[0]["load_measured_exact"]) == Fraction(19, 150)


@pytest.mark.portable
def test_bdc_loads_and_early_stop(tmp_path):
    common = ["--scheme", "bdc", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4",
              "--n", "20", "--N", "12", "--straggler", "shiftexp", "--t-row", "0.004",
              "--chunks", "16", "--reps", "3", "--seed", "5"]
    # T divides rows-per-batch: exactly the unified load
    for r in launch(tmp_path / "t4", 6, [*common, "--T", "4"]):
        assert r["verified"] and r["extra"] == []
        assert Fraction(r["load_measured_exact"]) == Fraction(7, 20)
    # larger T: extra unicasts are sent, counted and still decoded
    recs = launch(tmp_path / "t20", 6, [*common, "--T", "20"])
    assert all(r["verified"] for r in recs)
    assert any(Fraction(r["load_measured_exact"]) > Fraction(7, 20) for r in recs)
    for r in recs:
        assert Fraction(r["load_measured_exact"]) == Fraction(r["load_plan_exact"])
        finishers = set(r["Q"]) | set(r["extra"])
        sm = r["server_map"]
        assert len({round(v["target_s"], 9) for v in sm.values()}) == 6  # realised draws logged
        for s, v in sm.items():
            if int(s) in finishers:
                assert not v["stopped"] and v["rows_done"] == v["rows"]
        stopped = [v for s, v in sm.items() if int(s) not in finishers and v["stopped"]]
        assert all(v["rows_done"] < v["rows"] or v["target_s"] > r["map_s"] for v in stopped)
    assert any(v["stopped"] for r in recs for v in r["server_map"].values())


def test_bad_input_and_world_size(tmp_path):
    base = ["run", "coded", "--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2",
            "--rows-per-batch", "4", "--n", "16", "--N", "12"]
    r = run_mpi(5, [*base, "--out", str(tmp_path / "x.jsonl")], timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "mpi-coded: error: mpiexec -n: must be K+1 = 7 (a master and K=6 servers) (got 5)"]
    for bad, msg in [(["--q", "7"], "q: must satisfy q <= K"),
                     (["--mu", "1/3"], "mu"),
                     (["--scheme", "bdc", "--T", "7"], "T: T must divide"),
                     (["--straggler", "sometimes"], "straggler: must be one of"),
                     (["--N", "10"], "N: q = 4 must divide N"),
                     (["--rows-per-batch", "20", "--field", "gf2^8"],
                      "field: gf2^8 holds MDS codes of length <= 256")]:
        # checked before MPI starts, whatever the world size: 2 ranks (not K+1 = 7) still
        # show that only rank 0 says it
        r = run_mpi(2, [*base, *bad, "--out", str(tmp_path / "x.jsonl")], timeout=60)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "x.jsonl").exists()


def _rank_of(pid: str) -> int | None:
    """The MPI rank a process's launcher gave it (hydra's ``PMI_RANK``, Open MPI's
    ``OMPI_COMM_WORLD_RANK``), None for the launcher itself."""
    from pathlib import Path

    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for var in (b"PMI_RANK=", b"OMPI_COMM_WORLD_RANK="):
        for e in env:
            if e.startswith(var):
                return int(e[len(var):])
    return None


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_a_coded_job_whose_rank_0_is_killed_ends_with_a_summary_saying_so(tmp_path, sig):
    """kill -9 of rank 0 after its first repetition (as a host lost takes it): the
    results end with the summary its watcher wrote, unverified, saying how far it got;
    SIGTERM (as Open MPI's launcher ends a job that lost a host): rank 0 writes it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT, launcher_env, mpiexec_cmd, processes_matching
    from mpi_coded.proctree import kill_tree
    from mpi_coded.results import RUN, SUMMARY, kind_of, read_results

    out = tmp_path / "coded.jsonl"
    cmd = [*mpiexec_cmd(7), sys.executable, "-m", "mpi_coded", "run", "coded", "--scheme",
           "unified", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4", "--n",
           "8", "--N", "12", "--reps", "500", "--t-row", "0.01", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=ROOT,
                            env={**os.environ, **launcher_env()})
    try:
        end = time.monotonic() + 180
        while not (out.exists() and any(kind_of(ln) == RUN for ln in read_results(out))):
            assert proc.poll() is None and time.monotonic() < end, "no repetition came"
            time.sleep(0.1)
        [rank0] = [p.split(":")[0] for p in processes_matching(str(out))  # not its watcher
                   if " run coded " in p and _rank_of(p.split(":")[0]) == 0]
        os.kill(int(rank0), getattr(signal, sig))
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            kill_tree(proc.pid)
            proc.communicate()
    end = time.monotonic() + 15  # the watcher appends its line a moment after rank 0 died
    while kind_of(list(read_results(out))[-1]) != SUMMARY and time.monotonic() < end:
        time.sleep(0.1)
    lines = list(read_results(out))
    runs = [ln for ln in lines if kind_of(ln) == RUN]
    summary = lines[-1]
    assert kind_of(summary) == SUMMARY and not summary["all_verified"], lines[-1]
    last = runs[-1]["rep"]  # a signal between its line and the next step may name the one before
    if sig == "SIGKILL":
        assert summary["ended_early"].startswith(
            f"rank 0 ({os.uname().nodename}, pid {rank0})")
        assert re.search(rf"after repetition ({last}|{last - 1}) without writing its summary",
                         summary["ended_early"]), summary["ended_early"]
    else:
        assert re.fullmatch(rf"rep ({last + 1}|{last}): the launcher ended the job \(SIGTERM\)",
                            summary["ended_early"]), (summary["ended_early"], err)
        assert "the launcher ended the job (SIGTERM)" in err
    assert runs and all(r["verified"] for r in runs) and summary["reps"] == 500
