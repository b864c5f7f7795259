"""Run a grid of parameters of the elastic job, locally or through SLURM; one results file.

    python scripts/sweep.py --grid t_row=0,0.001 --grid policy=heterogeneous,cyclic --reps 3
    python scripts/sweep.py --via slurm --sbatch-args="-N 1 --overcommit" --grid cols=50,100,200 \\
        --grid policy=heterogeneous,cyclic --grid t_row=0 --out results/sweep.jsonl --plot s.png

A grid key is one of the ``mpi-coded run cec`` override flags (``field``, ``policy``,
``t_row``, ``seed``, ``timeout``), passed on the command line, or a config key (``N``,
``L``, ``speeds``, ``rows``, ``cols``, ``availability.p``, ...), written with the base
``--config`` into a temporary TOML file.  Values are split on commas outside brackets and
read as JSON when they parse (``--grid 'speeds=[1,1,2],[2,2,2]'``), as strings otherwise.
The world size (``mpiexec -n``, ``sbatch --ntasks``) is ``N + 1`` of each point's config.

Every point runs ``--reps`` times (repetitions interleaved).  ``--via local`` launches
``mpiexec`` as a subprocess in its own process group with a timeout, killing the whole
group on timeout (killing only mpiexec leaves hydra proxies behind).  ``--via slurm``
submits ``slurm/sweep_array.sh`` as one array job per world size (``sbatch``), waits for
it (``squeue``), and cancels it on timeout.  The JSON lines of every run are appended to
ONE file (``--out``), each line with ``sweep_id``, ``run``, ``rep``, ``params``, ``host``,
``versions`` and ``via`` (:data:`mpi_coded.results.SWEEP_KEYS`); a run that failed leaves a
``run_failed`` line.  Results are read and written through :mod:`mpi_coded.results`, and
every point is validated by the job's own rules (``CECConfig.validate``) before any
launch.  Exit status 0 when every run succeeded and verified, 1 otherwise, 2 on bad input.

The logic lives in :mod:`mpi_coded.cluster.sweep`; this is its command line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mpi_coded.cluster.sweep import (  # noqa: E402
    FLAG_KEYS,
    LAUNCHERS,
    LaunchOptions,
    SweepCollector,
    SweepError,
    job_args,
    parse_grid,
    plan_runs,
    points,
    split_values,
)

__all__ = ["FLAG_KEYS", "SweepError", "job_args", "main", "parse_grid", "points",
           "split_values", "sweep"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                    help="a swept parameter (repeat for a product grid)")
    ap.add_argument("--reps", type=int, default=1, help="repetitions of every point")
    ap.add_argument("--config", type=Path, default=None, help="base TOML config")
    ap.add_argument("--out", type=Path, default=None,
                    help="the results file (appended; default results/sweep-<id>.jsonl)")
    ap.add_argument("--via", choices=("local", "slurm"), default="local")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--python", default=sys.executable, help="python running the job")
    ap.add_argument("--mpiexec", default=None, help="local: the mpiexec to use")
    ap.add_argument("--hostfile", type=Path, default=None, help="local: mpiexec -f HOSTFILE")
    ap.add_argument("--mpiexec-args", default="", help="local: more mpiexec arguments")
    ap.add_argument("--launcher", choices=("srun", "mpiexec"), default="srun",
                    help="slurm: how the batch script starts the ranks")
    ap.add_argument("--sbatch-args", default="",
                    help="slurm: more sbatch arguments, e.g. '-p PART -A ACCOUNT'")
    ap.add_argument("--max-parallel", type=int, default=1,
                    help="slurm: array tasks running at once (default 1: no co-scheduling)")
    ap.add_argument("--time", default="00:10:00", help="slurm: --time of every array task")
    ap.add_argument("--queue-wait", type=float, default=3600.0,
                    help="slurm: extra seconds allowed for queueing")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="per-run files (default: next to --out; on a shared file system "
                         "for slurm); removed after success unless --keep-work")
    ap.add_argument("--keep-work", action="store_true")
    ap.add_argument("--plot", type=Path, default=None,
                    help="then draw PNG with scripts/plot_results.py (first swept key as x)")
    return ap


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    opts = build_parser().parse_args(argv)
    try:
        return sweep(opts)
    except SweepError as exc:
        print(f"sweep: error: {exc}", file=sys.stderr)
        return 2


def launch_options(opts: argparse.Namespace) -> LaunchOptions:
    return LaunchOptions(timeout=opts.timeout, python=opts.python, mpiexec=opts.mpiexec,
                         hostfile=opts.hostfile, mpiexec_args=opts.mpiexec_args,
                         launcher=opts.launcher, sbatch_args=opts.sbatch_args,
                         max_parallel=opts.max_parallel, time=opts.time,
                         queue_wait=opts.queue_wait)


def sweep(opts: argparse.Namespace) -> int:
    grid = parse_grid(opts.grid)
    if opts.reps < 1:
        raise SweepError("--reps must be >= 1")
    if opts.max_parallel < 1:
        raise SweepError("--max-parallel must be >= 1")
    if opts.config is not None and not opts.config.is_file():
        raise SweepError(f"--config {opts.config}: no such file")
    sweep_id = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    out = opts.out or ROOT / "results" / f"sweep-{sweep_id}.jsonl"
    out = out.resolve()
    work = (opts.work_dir or out.parent / f".sweep-{sweep_id}").resolve()
    (work / "runs").mkdir(parents=True, exist_ok=True)
    pts, runs = plan_runs(grid, opts.reps, opts.config.resolve() if opts.config else None,
                          work)
    print(f"sweep {sweep_id}: {len(pts)} points x {opts.reps} reps = {len(runs)} runs "
          f"via {opts.via} -> {out}", flush=True)
    col = SweepCollector(out, sweep_id, opts.via)
    LAUNCHERS[opts.via](runs, launch_options(opts), work, col)
    print(f"sweep {sweep_id}: {len(runs) - col.failed}/{len(runs)} runs verified -> {out}")
    if col.failed == 0 and not opts.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    elif col.failed:
        print(f"sweep: per-run files kept in {work}", file=sys.stderr)
    if opts.plot is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import plot_results

        plot_results.main([str(out), "--out", str(opts.plot), "--sweep-id", sweep_id])
    return 1 if col.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
