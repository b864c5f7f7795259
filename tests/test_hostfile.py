"""Hostfiles: the local one of the launcher (MPICH or Open MPI) runs the elastic job for real;
the examples are well formed."""

from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import ROOT, launcher_env, mpi_flavor, mpiexec_cmd, mpiexec_path, run_cmd

HOSTFILES = ROOT / "hostfiles"


def entries(path):
    lines = [ln.strip() for ln in path.read_text().splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


@pytest.mark.mpi
@pytest.mark.portable
def test_local_hostfile_runs_the_job(tmp_path):
    """The launcher's own local hostfile: hydra's ``-f local.hydra`` under MPICH, Open MPI's
    ``--hostfile local.openmpi --oversubscribe`` under Open MPI."""
    flavor = mpi_flavor()
    if flavor is None:
        pytest.skip("no mpiexec on PATH: install the 'local' or the 'openmpi' extra")
    if flavor == "openmpi":
        hostfile = ["--hostfile", str(HOSTFILES / "local.openmpi")]
    elif flavor == "mpich":
        hostfile = ["-f", str(HOSTFILES / "local.hydra")]
    else:
        pytest.skip(f"{mpiexec_path()} is neither MPICH's hydra nor Open MPI")
    cmd = mpiexec_cmd(7, *hostfile)
    assert ("--oversubscribe" in cmd) == (flavor == "openmpi")
    out = tmp_path / "cec.jsonl"
    r = run_cmd([*cmd, sys.executable, "-m", "mpi_coded", "run", "cec", "--t-row", "0",
                 "--out", str(out)], timeout=120, env=launcher_env())
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["kind"] == "config" and lines[0]["world_size"] == 7
    want = "Open MPI" if flavor == "openmpi" else "MPICH"
    assert want in lines[0]["mpi"], lines[0]["mpi"]
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
