"""Hostfiles: the local MPICH one runs the elastic job for real; the examples are well formed."""

from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import ROOT, mpiexec_path, run_cmd

HOSTFILES = ROOT / "hostfiles"


def entries(path):
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


@pytest.mark.mpi
def test_local_hydra_hostfile_runs_the_job(tmp_path):
    exe = mpiexec_path()
    if exe is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel)")
    version = run_cmd([exe, "--version"], timeout=30)
    if "HYDRA" not in version.stdout + version.stderr:
        pytest.skip(f"{exe} is not MPICH's hydra (the -f host:n format is hydra's)")
    out = tmp_path / "cec.jsonl"
    r = run_cmd([exe, "-f", str(HOSTFILES / "local.hydra"), "-n", "7", sys.executable, "-m",
                 "mpi_coded", "run", "cec", "--t-row", "0", "--out", str(out)], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["kind"] == "config" and lines[0]["world_size"] == 7
    steps = [x for x in lines if x["kind"] == "step"]
    assert len(steps) == 4 and all(s["verified"] is True for s in steps)
    assert lines[-1]["kind"] == "summary" and lines[-1]["all_verified"] is True


@pytest.mark.parametrize("name", ["local.hydra", "example.hydra"])
def test_hydra_hostfiles_are_host_colon_count(name):
    found = entries(HOSTFILES / name)
    assert found and all(re.fullmatch(r"[\w.-]+:\d+", e) for e in found), found


@pytest.mark.parametrize("name", ["local.openmpi", "example.openmpi"])
def test_openmpi_hostfiles_are_host_slots(name):
    found = entries(HOSTFILES / name)
    assert found and all(re.fullmatch(r"[\w.-]+ slots=\d+", e) for e in found), found


def test_local_hostfiles_hold_the_seed_example():
    # 7 ranks: the master and the seed example's 6 machines
    assert entries(HOSTFILES / "local.hydra") == ["localhost:7"]
    assert entries(HOSTFILES / "local.openmpi") == ["localhost slots=7"]
