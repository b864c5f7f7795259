"""A block repaired from peers across emulated hosts (root; docs/storage.md (S.3)):
``scripts/bench_repair.py`` once, small: host 1 holds no block, its spare rank rebuilds
machine 4's from the three machines on the other hosts, the L blocks cross host 1's link
(its counters), and the job verifies."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_multihost import Emulated, _need_namespaces, _need_slurm

from conftest import ROOT, mpi_flavor, processes_matching, run_cmd

pytestmark = [pytest.mark.mpi, pytest.mark.multihost]


def test_a_block_is_repaired_from_peers_across_hosts() -> None:
    _need_namespaces()
    name = f"rp{os.getpid() % 10000:04d}"
    r = run_cmd([sys.executable, str(ROOT / "scripts" / "bench_repair.py"), "--runs", "1",
                 "--mib", "0.5", "--rate", "1gbit", "--name", name], timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["all_verified"]
    assert out["repair_bytes"] == 3 * out["block_bytes"]  # L blocks
    assert out["host1_received"][0] >= out["repair_bytes"]  # they crossed host 1's link


def test_a_lost_host_costs_a_relaunch_not_the_job() -> None:
    """``scripts/bench_survival.py`` once per failure of a whole host (killed with its
    daemon; its link down for good): the job from the store is relaunched on the hosts
    left and resumed, no hang, every step verified once, none lost, no byte re-sent."""
    _need_namespaces()
    name = f"sv{os.getpid() % 10000:04d}"
    r = run_cmd([sys.executable, str(ROOT / "scripts" / "bench_survival.py"), "--runs", "1",
                 "--cases", "host,link", "--steps", "16", "--name", name], timeout=500)
    assert r.returncode == 0, r.stdout + r.stderr
    matrix = json.loads(r.stdout.strip().splitlines()[-1])["matrix"]
    for case in ("host", "link"):
        m = matrix[case]
        assert m["hangs"] == 0 and m["failed"] == 0, (case, m, r.stderr)
        assert m["unverified"] == 0 and m["lost"] == 0 and m["repeated"] == 0, (case, m)
        assert m["bytes_resent"] == 0 and m["relaunch_p50_s"] is not None, (case, m)
        assert m["needless_relaunches"] == 0, (case, m, r.stderr)


def test_a_host_lost_early_in_a_long_job_costs_one_relaunch() -> None:
    """The host killed after 2 of 40 steps, three times: the relaunched job, healthy, runs
    its 38 steps (about 8 s, more than the 5 s the supervisor gives a launcher once the
    job's summary is written) to the end in one relaunch.  The summary the first launch's
    master leaves (its watcher's, written a few ms after the launcher ended, often after the
    relaunch began) once ended the relaunched job: about half the runs relaunched twice."""
    _need_namespaces()
    name = f"se{os.getpid() % 10000:04d}"
    r = run_cmd([sys.executable, str(ROOT / "scripts" / "bench_survival.py"), "--runs", "3",
                 "--cases", "host", "--steps", "40", "--after", "2", "--name", name],
                timeout=500)
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads(r.stdout.strip().splitlines()[-1])["matrix"]["host"]
    assert m["needless_relaunches"] == 0 and m["failed"] == 0 and m["hangs"] == 0, \
        (m, r.stderr)
    assert m["unverified"] == 0 and m["lost"] == 0 and m["repeated"] == 0, m


SLURM_JOB = """job = "cec"
N = 4
L = 2
rows = 64
cols = 64
t_row = 0.008
timeout_s = 10
workload = "power"
[availability]
kind = "random"
p = 0.2
steps = 30
"""


def _batch_done(env: dict[str, str], job: str, timeout: float) -> dict[str, str]:
    """``scontrol show job`` once the batch script has ended (COMPLETING counts: a node
    that died keeps a job there until slurmctld marks it down)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = run_cmd(["scontrol", "show", "job", "-o", job], 60, env=env)
        fields = dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)
        if fields.get("JobState") not in (None, "PENDING", "RUNNING", "CONFIGURING"):
            return fields
        time.sleep(1)
    run_cmd(["scancel", job], 60, env=env)
    pytest.fail(f"job {job} did not end within {timeout} s")


@pytest.mark.slurm
@pytest.mark.timeout(900)
def test_under_slurm_a_lost_node_costs_a_relaunch_on_the_nodes_left() -> None:
    """``sbatch -N 4 --no-kill`` of slurm/cec.sh with ``RELAUNCH=2`` and a store of one
    directory per node that no one wrote: the batch script writes each node's blocks on
    that node (one task per node, ``store write --this-host --if-missing``), then node 3 is
    killed mid-run (its slurmd and ranks); the batch script finds the nodes left with
    SLURM's own means (sinfo, a one-task step on each) and relaunches there with --resume;
    the job is COMPLETED, every step verified once, no block ever sent."""
    _need_namespaces()
    _need_slurm()
    if mpi_flavor() != "mpich":
        pytest.skip("the SLURM jobs here use MPICH's hydra inside the allocation")
    work = Path(tempfile.mkdtemp(prefix="mcs-"))
    c = Emulated(work, 4, "--rate", "1gbit", "--slurm")
    try:
        env = dict(re.findall(r"^export (\w+)=(.*)$", c.cli("env").stdout, re.M))
        env = {k: v.strip("'") for k, v in env.items()}
        cfg = work / "job.toml"
        cfg.write_text(SLURM_JOB)
        store = str(work / "store" / "{host}")
        hosts = [f"{c.name}-node{k}" for k in range(1, 5)]
        out = work / "cec.jsonl"
        r = run_cmd(["sbatch", "--parsable", "-N", "4", "--ntasks=5", "--no-kill",
                     f"--output={work}/job-%j.out", "slurm/cec.sh"], 60,
                    env={**env, "LAUNCHER": "mpiexec", "RELAUNCH": "2",
                         "CEC_CONFIG": str(cfg), "CEC_STORE": store,
                         "MPI_CODED_ROOT": str(ROOT), "MPI_CODED_PYTHON": sys.executable,
                         "RESULTS_DIR": str(work), "OUT": str(out)})
        assert r.returncode == 0, r.stderr
        job = r.stdout.strip().split(";")[0]
        end = time.monotonic() + 300
        while time.monotonic() < end:
            text = out.read_text() if out.exists() else ""
            if text.count('"kind": "step"') >= 5:
                break
            time.sleep(0.2)
        # about 0.2 s a step: 25 steps left (5 s) for the kill to land (with t_row 0.004 a
        # loaded machine once saw the job end before it did, and no relaunch)
        k = c.cli("kill", "3")
        assert k.returncode == 0, k.stderr
        fields = _batch_done(env, job, 400)
        log = next(work.glob(f"job-{job}.out")).read_text()
        # the dead node keeps the job COMPLETING until slurmctld marks it down
        assert fields["JobState"] in ("COMPLETED", "COMPLETING"), (fields, log)
        assert fields["ExitCode"] == "0:0", log
        assert "relaunch 1 on" in log, log
        write = next(x for x in log.splitlines() if " store write " in x)
        assert write.startswith("+ srun --nodes=4 --ntasks=4 --ntasks-per-node=1"), write
        for k, h in enumerate(hosts):  # the master's node (1) holds one block, and so on
            blocks = sorted(p.name for p in (work / "store" / h).glob("block-*.npy"))
            assert blocks == [f"block-{(k + 3) % 4 + 1}.npy"], (h, blocks, log)
        lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
        steps = [int(x["step"]) for x in lines if x.get("kind") == "step"]
        assert sorted(steps) == list(range(1, 31)), steps
        assert all(x["verified"] for x in lines if x.get("kind") == "step")
        setups = [x for x in lines if x.get("kind") == "setup"]
        assert len(setups) >= 2 and all(x["setup_bytes"] == 0 for x in setups), setups
        assert hosts[2] not in setups[-1]["hosts"].values(), setups[-1]["hosts"]
    finally:
        c.down()
        shutil.rmtree(work, ignore_errors=True)
    assert processes_matching(str(c.dir)) == []
