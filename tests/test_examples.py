"""The plugins of examples/ from outside the package, as a user runs them: under mpiexec,
every output verified, the model beside the measurement, in ``mpi-coded report``."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest

from conftest import ROOT, run_cli, run_cmd, run_mpi
from mpi_coded.results import CONFIG, RUN, STEP, SUMMARY, kind_of, read_results

REPLICATION = str(ROOT / "examples" / "replication.py")
FLOOR = str(ROOT / "examples" / "proportional_floor.py")
REP_JOB = ["--K", "6", "--q", "3", "--mu", "1/3", "--rows-per-batch", "4", "--n", "8",
           "--N", "6"]


def lines_of(path, kind):
    return [r for r in read_results(path) if kind_of(r) == kind]


def report(tmp_path, plugin, *files):
    out = tmp_path / "page"
    r = run_cli(["--plugin", plugin, "report", *map(str, files), "--out", str(out),
                 "--quiet"], timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return (out / "report.html").read_text()


@pytest.mark.mpi
@pytest.mark.portable
def test_the_replication_scheme_runs_verified_beside_its_model(tmp_path):
    out = tmp_path / "rep.jsonl"
    r = run_mpi(7, ["--plugin", REPLICATION, "run", "coded", "--scheme", "rep", *REP_JOB,
                    "--straggler", "shiftexp", "--t-row", "0.002", "--reps", "3",
                    "--out", str(out)], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = lines_of(out, RUN)
    assert len(runs) == 3
    for run in runs:
        assert run["scheme"] == "rep" and run["verified"] is True
        # every block of A is stored on R = K / q = 2 servers: load 1 - 1/q (R1)
        assert Fraction(run["load_measured_exact"]) == Fraction(2, 3)
    load = run_cli(["--plugin", REPLICATION, "load", "--scheme", "rep", "--K", "6", "--q", "3",
                    "--mu", "1/3", "--json"])
    assert load.returncode == 0, load.stderr
    assert json.loads(load.stdout)["load_exact"] == "2/3"
    model = run_cli(["--plugin", REPLICATION, "model", "--scheme", "rep", *REP_JOB, "--json"])
    assert model.returncode == 0, model.stderr
    page = report(tmp_path, REPLICATION, out)
    assert "rep" in page and "NOT VERIFIED" not in page.upper()


@pytest.mark.mpi
@pytest.mark.portable
def test_the_proportional_floor_policy_runs_verified_beside_the_optimal_one(tmp_path):
    out = tmp_path / "floor.jsonl"
    for policy in ("proportional-floor", "heterogeneous"):
        r = run_mpi(7, ["--plugin", FLOOR, "run", "cec", "--policy", policy, "--t-row",
                        "0.0005", "--out", str(out)], timeout=240)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "all verified: True" in r.stdout
    configs = lines_of(out, CONFIG)
    assert [c["policy"] for c in configs] == ["proportional-floor", "heterogeneous"]
    steps = lines_of(out, STEP)
    assert len(steps) == 8 and all(s["verified"] for s in steps)
    assert all(s["all_verified"] for s in lines_of(out, SUMMARY))
    # the worked example's loads are integral at 420 rows: rounding costs nothing there
    floor, optimal = steps[:4], steps[4:]
    assert [s["predicted_s"] for s in floor] == pytest.approx(
        [s["predicted_s"] for s in optimal])
    page = report(tmp_path, FLOOR, out)
    assert "proportional-floor" in page


def test_the_policy_example_prints_what_rounding_costs():
    r = run_cmd([sys.executable, FLOOR], timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines()[1:]]
    ratios = [float(x[-1]) for x in rows]
    assert len(ratios) == 16 and min(ratios) >= 1.0 and max(ratios) > 1.0


def test_the_example_commit_touches_nothing_in_the_package():
    """The commit that added the examples changed no file under mpi_coded/."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the history this test reads is absent")
    git = ["git", "-C", str(ROOT)]
    shallow = subprocess.run([*git, "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, timeout=60, check=True)
    if shallow.stdout.strip() == "true":
        pytest.skip("a shallow clone: the commit that added the examples may be cut off")
    added = subprocess.run([*git, "log", "--diff-filter=A", "--format=%H", "--",
                            "examples/replication.py", "examples/proportional_floor.py"],
                           capture_output=True, text=True, timeout=60, check=True)
    commits = added.stdout.split()
    assert commits, "the examples are not committed"
    for c in commits:
        files = subprocess.run([*git, "show", "--name-only", "--format=", c],
                               capture_output=True, text=True, timeout=60, check=True)
        assert [f for f in files.stdout.split() if f.startswith("mpi_coded/")] == [], c
