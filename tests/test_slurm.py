"""The SLURM batch scripts on a real single-node SLURM, and shellcheck on every shell script.

``scripts/slurm_harness.sh`` starts munged, slurmctld and slurmd on this host (Debian's
``slurm-wlm`` and ``munge``, installed by ``.ci/run``), submits the shipped batch scripts,
runs a 3x2 sweep through ``sbatch`` (``scripts/sweep.py --via slurm``) and stops the
daemons.  It runs once, as a subprocess in its own process group with a hard timeout;
the tests below read its report and the results it left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_sweep import POINTS, check_png, check_sweep_file, needs_matplotlib

from conftest import (
    ROOT,
    launcher_args,
    launcher_env,
    mpiexec_cmd,
    processes_matching,
    run_cmd,
)
from mpi_coded.cluster.netns import SBIN_DIRS, find_tool

HARNESS = ROOT / "scripts" / "slurm_harness.sh"
SHELL_SCRIPTS = sorted([*ROOT.glob("slurm/*.sh"), *ROOT.glob("scripts/*.sh")])
BATCH_SCRIPTS = ["cec.sh", "coded.sh", "sweep_array.sh"]
HARNESS_TIMEOUT = 420.0


# --- static checks ------------------------------------------------------------------

def test_shellcheck_passes_on_every_shell_script():
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck; .ci/run does)")
    assert len(SHELL_SCRIPTS) >= 5
    r = run_cmd([exe, "-x", *[str(p.relative_to(ROOT)) for p in SHELL_SCRIPTS]], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", BATCH_SCRIPTS)
def test_batch_script_has_time_limit_and_results_output(name):
    text = (ROOT / "slurm" / name).read_text()
    assert re.search(r"^#SBATCH --time=\d\d:\d\d:\d\d$", text, re.M)
    assert re.search(r"^#SBATCH --output=results/slurm/", text, re.M)
    assert "source \"${MPI_CODED_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}/slurm/common.sh\"" in text
    assert os.access(ROOT / "slurm" / name, os.X_OK)


def test_launcher_is_checked_before_anything_runs(tmp_path):
    # outside SLURM, with a bad LAUNCHER: one line naming the variable, exit 2
    env = {"MPI_CODED_PYTHON": sys.executable, "NTASKS": "7", "LAUNCHER": "ssh",
           "RESULTS_DIR": str(tmp_path), "MPI_CODED_ROOT": str(ROOT)}
    r = run_cmd(["bash", str(ROOT / "slurm" / "cec.sh")], timeout=60, env=env)
    assert r.returncode == 2 and "LAUNCHER must be srun or mpiexec" in r.stderr
    env["MPI_CODED_PYTHON"] = str(tmp_path / "no-python")
    r = run_cmd(["bash", str(ROOT / "slurm" / "cec.sh")], timeout=60, env=env)
    assert r.returncode == 2 and "MPI_CODED_PYTHON" in r.stderr


STORE_JOB = """job = "cec"
N = 4
L = 2
rows = 32
cols = 16
t_row = 0
[availability]
schedule = [[1, 2, 3, 4], [1, 3, 4], [2, 4]]
"""


@pytest.mark.mpi  # slurm/cec.sh runs mpiexec
def test_cec_script_writes_its_store_when_missing(tmp_path):
    """Outside SLURM (this host is the one node) slurm/cec.sh with ``CEC_STORE=DIR/{host}``
    writes the store this host lacks (``store write --this-host --if-missing``) and runs the
    job from it (every block from disk, none sent); a second run leaves the store as it is.
    Under SLURM the same function writes on every node (the harness's ``cec-store``, and
    the multi-node test in tests/test_multihost_store.py)."""
    import socket

    mpiexec_cmd(5)  # skips without a launcher
    cfg = tmp_path / "job.toml"
    cfg.write_text(STORE_JOB)
    here = tmp_path / "store" / socket.gethostname()
    env = {**launcher_env(), "MPI_CODED_PYTHON": sys.executable, "NTASKS": "5",
           "LAUNCHER": "mpiexec", "MPIEXEC_ARGS": " ".join(launcher_args()),
           "RESULTS_DIR": str(tmp_path), "MPI_CODED_ROOT": str(ROOT), "CEC_CONFIG": str(cfg),
           "CEC_STORE": str(tmp_path / "store" / "{host}")}
    stamps = None
    for run in ("first", "second"):
        out = tmp_path / f"{run}.jsonl"
        r = run_cmd(["bash", str(ROOT / "slurm" / "cec.sh")], timeout=240,
                    env={**env, "OUT": str(out)})
        assert r.returncode == 0, r.stdout + r.stderr
        write = next(x for x in r.stdout.splitlines() if " store write " in x)
        assert {"--this-host", "--if-missing", "--hosts"} <= set(write.split()), write
        blocks = sorted(p.name for p in here.glob("block-*.npy"))
        assert blocks == [f"block-{n}.npy" for n in range(1, 5)], r.stdout
        now = {p.name: p.stat().st_mtime_ns for p in here.iterdir()}
        if stamps is None:
            stamps = now
            assert '"machines": [1, 2, 3, 4]' in r.stdout, r.stdout
        else:  # the store was there: nothing written, X not read
            assert now == stamps and '"machines": []' in r.stdout, r.stdout
        lines = read_jsonl(out)
        assert lines[0]["store"] == env["CEC_STORE"]
        setup = next(x for x in lines if x["kind"] == "setup")
        assert setup["setup_bytes"] == 0, setup
        steps = [x for x in lines if x["kind"] == "step"]
        assert len(steps) == 3 and all(x["verified"] for x in steps), steps


# --- the harness --------------------------------------------------------------------

@dataclass
class Harness:
    returncode: int
    output: str
    state: Path
    sweep_out: Path
    sweep_png: Path

    def result(self, name: str) -> dict[str, str]:
        for line in self.output.splitlines():
            if line.startswith(f"HARNESS RESULT name={name} "):
                return dict(kv.split("=", 1) for kv in line.split()[2:])
        pytest.fail(f"no result for {name} in the harness output:\n{self.output[-4000:]}")


def missing_slurm() -> str | None:
    """Why the harness cannot run here: root first, then the tools (Debian's slurmctld and
    slurmd are in /usr/sbin, found there as ``mpi-coded cluster`` finds them)."""
    if not sys.platform.startswith("linux"):
        return "the SLURM harness runs on Linux only"
    if os.geteuid() != 0:
        return "the SLURM harness must run as root (slurmd, munged)"
    missing = [t for t in ("sbatch", "slurmctld", "slurmd", "srun") if find_tool(t) is None]
    if missing:
        return (f"SLURM is not installed ({', '.join(missing)} missing): "
                "apt-get install slurm-wlm munge (.ci/run does; it failed or was not run)")
    return None


def path_with_sbin() -> str:
    """PATH and then the sbin directories it lacks (the harness finds its tools on PATH)."""
    path = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join([*path, *(d for d in SBIN_DIRS if d not in path)])


def run_harness(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[int, str]:
    """In its own process group; on timeout TERM the group (the harness stops its
    daemons), then KILL what is left."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, cwd=ROOT, env={**os.environ, **env})
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        pytest.fail(f"the SLURM harness timed out after {timeout} s:\n{out[-6000:]}")
    return proc.returncode, out


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    why = missing_slurm()
    if why:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("slurm")
    state = tmp / "state"
    sweep_out = tmp / "sweep_slurm.jsonl"
    sweep_png = tmp / "sweep_slurm.png"
    sweep_cmd = [sys.executable, "scripts/sweep.py", "--via", "slurm", "--sbatch-args",
                 "-N 1 --overcommit", "--time", "00:05:00", "--timeout", "120",
                 "--queue-wait", "120", "--grid", "cols=50,100,200", "--grid",
                 "policy=heterogeneous,cyclic", "--grid", "t_row=0", "--out", str(sweep_out)]
    env = {"MPI_CODED_PYTHON": sys.executable, "HARNESS_DIR": str(state),
           "HARNESS_JOB_TIMEOUT": "150", "PATH": path_with_sbin()}
    rc, out = run_harness(["bash", str(HARNESS), "--", *sweep_cmd], env, HARNESS_TIMEOUT)
    return Harness(rc, out, state, sweep_out, sweep_png)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.slurm  # starts slurmctld and slurmd
def test_harness_passes_and_stops_its_daemons(harness):
    assert harness.returncode == 0, harness.output[-6000:]
    assert "HARNESS DONE failures=0" in harness.output
    assert "stopped daemons" in harness.output
    assert processes_matching(str(harness.state)) == []


@pytest.mark.slurm  # starts slurmctld and slurmd
@pytest.mark.parametrize("launcher", ["srun", "mpiexec"])
def test_cec_batch_script_completes_verified(harness, launcher):
    name = f"cec-{launcher}"
    res = harness.result(name)
    assert (res["state"], res["exit"], res["verified"]) == ("COMPLETED", "0:0", "yes"), res
    lines = read_jsonl(harness.state / "results" / f"{name}.jsonl")
    assert lines[0]["kind"] == "config" and lines[0]["world_size"] == 7
    steps = [x for x in lines if x["kind"] == "step"]
    assert len(steps) == 4 and all(s["verified"] is True for s in steps)
    assert lines[-1]["kind"] == "summary" and lines[-1]["all_verified"] is True
    log = (harness.state / "results" / f"{name}-{res['job']}.out").read_text()
    started = "+ srun --mpi=pmi2 -n 7 " if launcher == "srun" else "mpiexec -n 7 "
    assert started in log and "all verified: True" in log


@pytest.mark.slurm  # starts slurmctld and slurmd
def test_cec_batch_script_writes_its_store_when_missing(harness):
    """``CEC_STORE=DIR/{host}`` and no store yet: the batch script writes the node's blocks
    with one task per node (srun ... store write --this-host --if-missing) and the job
    runs from them: no block sent, every step verified."""
    res = harness.result("cec-store")
    assert (res["state"], res["exit"], res["verified"]) == ("COMPLETED", "0:0", "yes"), res
    log = (harness.state / "results" / f"cec-store-{res['job']}.out").read_text()
    write = next(x for x in log.splitlines() if " store write " in x)
    assert write.startswith("+ srun ") and "--ntasks-per-node=1" in write, write
    assert {"--this-host", "--if-missing"} <= set(write.split()), write
    nodes = list((harness.state / "results" / "store").iterdir())
    assert len(nodes) == 1 and (nodes[0] / "manifest.json").is_file(), nodes
    assert len(list(nodes[0].glob("block-*.npy"))) == 6  # N = 6, all on the one node
    lines = read_jsonl(harness.state / "results" / "cec-store.jsonl")
    assert lines[0]["store"].endswith("/store/{host}")
    assert next(x for x in lines if x["kind"] == "setup")["setup_bytes"] == 0
    steps = [x for x in lines if x["kind"] == "step"]
    assert len(steps) == 4 and all(s["verified"] is True for s in steps)


@pytest.mark.slurm  # starts slurmctld and slurmd
def test_coded_batch_script_completes_verified(harness):
    r = run_cmd([sys.executable, "-m", "mpi_coded", "run", "coded", "--help"], timeout=60)
    if r.returncode != 0:
        assert "HARNESS SKIP name=coded" in harness.output
        pytest.skip("the coded job does not exist yet ('mpi-coded run coded --help' exits "
                    f"{r.returncode}): slurm/coded.sh not submitted")
    res = harness.result("coded")
    assert (res["state"], res["exit"], res["verified"]) == ("COMPLETED", "0:0", "yes"), res


@pytest.mark.slurm  # starts slurmctld and slurmd
def test_sweep_through_slurm_3x2(harness):
    assert "HARNESS COMMAND rc=0" in harness.output, harness.output[-6000:]
    check_sweep_file(harness.sweep_out, "slurm", POINTS)
    jobs = {rec["slurm"]["array_job_id"] for rec in read_jsonl(harness.sweep_out)}
    assert len(jobs) == 1 and jobs != {""}  # one array job ran all six points


@pytest.mark.slurm  # starts slurmctld and slurmd
def test_plot_of_the_slurm_sweep(harness):
    needs_matplotlib()
    assert harness.sweep_out.is_file(), harness.output[-6000:]
    r = run_cmd([sys.executable, "scripts/plot_results.py", str(harness.sweep_out), "--out",
                 str(harness.sweep_png), "--metric", "wall_s"], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    check_png(harness.sweep_png)
