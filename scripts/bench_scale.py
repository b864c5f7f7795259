"""Scaling benchmark: elastic-job overhead per step against ranks, and the planner at scale.

Runs mpiexec itself (all figures from one run of this script):

1. The elastic job at 7, 16, 32 and 64 ranks (``N = ranks - 1`` machines,
   ``L = N // 2``, speeds cycling 1, 1.5, 2, ``rows = 60 L`` so every coded block
   has 60 rows of 100 float64 columns, ``t_row = 0``), a schedule of 10 steps:
   all machines in step 1, then each step preempts a seeded random 1 to
   ``(N - L) // 2`` machines.  With ``t_row = 0`` every step's plan time is 0, so
   the step's wall time is the framework's overhead: ``wall - predicted`` (orders
   out, results in, decoded), averaged over the steps.  Once with the config key
   ``wait = "auto"`` and once with ``wait = "polite"``.
2. The planner alone (``mpi_coded.cec.plan.make_plan``, heterogeneous policy) at
   N = 1000 (500 available, L = 300) and N = 10000 (5000 available, L = 3000),
   with exact fractions and with integer rows (``rows = 10 L``): the median of 5
   runs, timed by ``scripts/bench_planner.py``'s ``planner_ms``.

First ``--warmup`` jobs (default 1) of the first world size, not counted (as pyperf's
warmups): without one, the first 7-rank job of a run measured 2.4-3.0 ms a step and the
same job later in the run 1.4-2.1, whichever ``wait`` ran first (cause not found).
Progress goes to stdout line by line; the last line is one JSON object with
``overhead_ms_<ranks>`` (auto), ``overhead_ms_<ranks>_polite``, the median and
the mean ``collect``/``decode`` parts of each, ``planner_ms_N1000``,
``planner_ms_N10000`` (exact) and ``..._rows``, and the 1-minute load average
before and after (the node's other work shows in every wall time).
On a node with fewer cores than ranks, ``auto`` resolves to ``polite``, so the
two series differ only by noise there.

    python scripts/bench_scale.py [--plot docs/figures/scale_overhead.png]
    python scripts/bench_scale.py --worlds 7,16 --no-planner      # quick
    python scripts/bench_scale.py --scaling --profile /tmp/prof     # the scaling curve

``--scaling``: 7, 15, 31, 64 ranks (wait = auto) and the least-squares model
``overhead_ms = a + b * N + c * rowsets`` over every step (``N`` available machines,
``rowsets`` of the step's plan) with its prediction at 1000 machines, in ``"model"``.
``--profile DIR``: each job's rank 0 runs under cProfile (``MPI_CODED_PROFILE_MASTER``).

Uses the ``mpiexec`` next to the running python (the venv's MPI wheel); under
Open MPI it adds ``--oversubscribe`` (and, as root, the ``OMPI_ALLOW_*`` variables).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import ROOT, mpiexec  # noqa: E402
from _scale_model import fit_model, print_profile  # noqa: E402

from mpi_coded.results import STEP, kind_of, read_results  # noqa: E402

WORLDS = (7, 16, 32, 64)
SCALING_WORLDS = (7, 15, 31, 64)
STEPS = 10
ROWS_PER_BLOCK = 60
COLS = 100
SPEED_CYCLE = (1, 1.5, 2)
PLANNER_CASES = ((1000, 500, 300), (10000, 5000, 3000))  # (N, available, L)
OPENMPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def say(msg: str) -> None:
    print(f"[bench_scale {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def launcher() -> tuple[list[str], dict[str, str]]:
    """``[mpiexec, flags...]`` and the extra environment for this MPI."""
    exe = mpiexec()
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, **OPENMPI_ROOT_ENV})
    if "Open MPI" in version.stdout + version.stderr:
        env = OPENMPI_ROOT_ENV if os.geteuid() == 0 else {}
        return [exe, "--oversubscribe"], dict(env)
    return [exe], {}


def schedule(n: int, L: int, steps: int, seed: int) -> list[list[int]]:
    """All machines first, then each step without 1..(N-L)//2 seeded random machines."""
    rng = random.Random(seed)
    machines = list(range(1, n + 1))
    out = [machines]
    for _ in range(steps - 1):
        k = rng.randint(1, max(1, (n - L) // 2))
        gone = set(rng.sample(machines, k))
        out.append([m for m in machines if m not in gone])
    return out


def write_config(path: Path, world: int, wait: str, steps: int, seed: int) -> None:
    n = world - 1
    L = max(1, n // 2)
    speeds = ", ".join(str(SPEED_CYCLE[i % len(SPEED_CYCLE)]) for i in range(n))
    sched = json.dumps(schedule(n, L, steps, seed))
    path.write_text(f'N = {n}\nL = {L}\nspeeds = [{speeds}]\nrows = {ROWS_PER_BLOCK * L}\n'
                    f'cols = {COLS}\nt_row = 0\nseed = {seed}\nwait = "{wait}"\n'
                    f'timeout_s = 300.0\n'
                    f'[availability]\nkind = "schedule"\nschedule = {sched}\n')


def run_job(world: int, cfg: Path, out: Path, timeout: float,
            extra_env: dict[str, str] | None = None) -> float:
    """One elastic job in its own process group (killed on timeout); returns its wall time."""
    cmd, env = launcher()
    env = {**env, **(extra_env or {})}
    cmd += ["-n", str(world), sys.executable, "-m", "mpi_coded", "run", "cec",
            "--config", str(cfg), "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, start_new_session=True, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})
    try:
        text, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        text, _ = proc.communicate()
        sys.stdout.write(text[-3000:])
        raise SystemExit(f"timed out after {timeout} s: {' '.join(cmd)}") from None
    if proc.returncode != 0:
        sys.stdout.write(text[-3000:])
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return time.perf_counter() - t0


def overhead(tmp: Path, world: int, wait: str, steps: int, seed: int,
             timeout: float, profile: Path | None = None) -> dict[str, Any]:
    cfg = tmp / f"scale_{world}_{wait}.toml"
    out = tmp / f"scale_{world}_{wait}.jsonl"
    out.unlink(missing_ok=True)  # results are appended: a warm-up's steps are not this job's
    write_config(cfg, world, wait, steps, seed)
    prof = profile / f"master_{world}_{wait}.prof" if profile else None
    job_s = run_job(world, cfg, out, timeout,
                    {"MPI_CODED_PROFILE_MASTER": str(prof)} if prof else None)
    if prof is not None:
        print_profile(prof)
    recs = [r for r in read_results(out) if kind_of(r) == STEP]
    over = [1e3 * (r["wall_s"] - r["predicted_s"]) for r in recs]
    res = {
        "world": world, "wait": wait, "steps": len(recs),
        "overhead_ms": statistics.fmean(over),
        "overhead_ms_median": statistics.median(over),
        "overhead_ms_max": max(over),
        "collect_ms": 1e3 * statistics.fmean(r["collect_s"] for r in recs),
        "decode_ms": 1e3 * statistics.fmean(r["decode_s"] for r in recs),
        "verified": all(r["verified"] for r in recs),
        "replanned": sum(bool(r["replanned"]) for r in recs),
        "job_s": job_s,
        # (machines available, row sets in the plan, overhead ms) per step, for the model
        "points": [(len(r["available"]), len(r["sets"]), o) for r, o in zip(recs, over)],
    }
    say(f"{world:>3} ranks, wait={wait:<6}: overhead {res['overhead_ms']:7.2f} ms/step "
        f"(median {res['overhead_ms_median']:.2f}, max {res['overhead_ms_max']:.2f}; "
        f"collect {res['collect_ms']:.2f}, decode {res['decode_ms']:.2f}), "
        f"{len(recs)} steps verified={res['verified']}, job {job_s:.1f} s")
    return res


def planner_ms(n: int, n_avail: int, L: int, rows: int | None) -> float:
    """Median wall time of ``make_plan`` (ms): ``scripts/bench_planner.py``'s, 5 runs."""
    import bench_planner

    return float(bench_planner.planner_ms("heterogeneous", n, n_avail, L, rows, "cycle", 5)[0])


def plot(results: dict[str, Any], worlds: list[int], waits: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for wait, marker in zip(waits, "os"):
        suffix = "" if wait == "auto" else f"_{wait}"
        ys = [results[f"overhead_ms_{w}{suffix}"] for w in worlds]
        ax.plot(worlds, ys, marker=marker, label=f"wait = {wait}")
    ax.plot([7, 64], [4, 40], "kx", markersize=9, label="targets (7: 4 ms, 64: 40 ms)")
    ax.set_xlabel("MPI ranks (master + N machines), 2 cores")
    ax.set_ylabel("overhead per step (ms)")
    ax.set_title(f"Elastic job, t_row = 0, {ROWS_PER_BLOCK} rows x {COLS} per block, L = N // 2")
    ax.set_xticks(worlds)
    ax.text(0.98, 0.02, f"load average {results.get('loadavg_start', '?')} -> "
            f"{results.get('loadavg_end', '?')}", transform=ax.transAxes, ha="right",
            va="bottom", fontsize=8, color="0.4")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    say(f"plot written to {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", default=",".join(map(str, WORLDS)),
                    help="MPI world sizes (ranks), comma separated")
    ap.add_argument("--waits", default="auto,polite", help="wait settings to run")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--warmup", type=int, default=1, help="jobs run first and not counted")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mpiexec run")
    ap.add_argument("--no-planner", action="store_true", help="skip the planner timings")
    ap.add_argument("--no-coded", action="store_true",
                    help="skip the coded shuffle parts (bcast over p2p, K=18 plan build)")
    ap.add_argument("--plot", type=Path, help="draw overhead against ranks (PNG)")
    ap.add_argument("--scaling", action="store_true",
                    help="the scaling curve: worlds 7,15,31,64, wait=auto, and the fitted model "
                         "overhead = a + b*N + c*rowsets (no planner, no coded parts)")
    ap.add_argument("--profile", type=Path,
                    help="directory: rank 0 of each job writes its cProfile statistics there "
                         "(the top entries are printed)")
    args = ap.parse_args()
    if args.scaling:
        args.worlds, args.waits = ",".join(map(str, SCALING_WORLDS)), "auto"
        args.no_planner = args.no_coded = True
    worlds = [int(x) for x in args.worlds.split(",")]
    waits = args.waits.split(",")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"rows_per_block": ROWS_PER_BLOCK, "cols": COLS,
                               "steps": args.steps, "t_row": 0, "field": "float64",
                               "cores": len(os.sched_getaffinity(0)),
                               "loadavg_start": round(os.getloadavg()[0], 2)}
    say(f"{results['cores']} cores, load average {results['loadavg_start']:.1f}; "
        f"launcher: {' '.join(launcher()[0])}")
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.warmup):  # the first job after idle ran slower, whatever its mode
            say("warm-up job (not counted):")
            overhead(Path(d), worlds[0], waits[0], args.steps, args.seed, args.timeout)
        for wait in waits:
            for world in worlds:
                r = overhead(Path(d), world, wait, args.steps, args.seed, args.timeout,
                             args.profile)
                runs.append(r)
                suffix = "" if wait == "auto" else f"_{wait}"
                results[f"overhead_ms_{world}{suffix}"] = round(r["overhead_ms"], 3)
                results[f"overhead_median_ms_{world}{suffix}"] = round(r["overhead_ms_median"], 3)
                results[f"collect_ms_{world}{suffix}"] = round(r["collect_ms"], 3)
                results[f"decode_ms_{world}{suffix}"] = round(r["decode_ms"], 3)
    results["all_verified"] = all(r["verified"] for r in runs)
    if len(worlds) >= 3:
        model = fit_model([p for r in runs if r["wait"] == waits[0] for p in r["points"]])
        results["model"] = {k: round(v, 4) for k, v in model.items()}
        say(f"model (wait={waits[0]}, {model['points']} steps): overhead_ms = "
            f"{model['a_ms']:.2f} + {model['b_ms_per_machine']:.3f} * N + "
            f"{model['c_ms_per_rowset']:.3f} * rowsets (rms residual "
            f"{model['rms_residual_ms']:.2f} ms); rowsets = {model['rowsets_d']:.2f} + "
            f"{model['rowsets_e_per_machine']:.3f} * N; at N = 1000 available: "
            f"{model['predicted_ms_N1000']:.0f} ms ({model['predicted_rowsets_N1000']:.0f} "
            f"row sets)")
    if not args.no_planner:
        for n, n_avail, L in PLANNER_CASES:
            for rows in (None, 10 * L):
                ms = planner_ms(n, n_avail, L, rows)
                key = f"planner_ms_N{n}" + ("" if rows is None else "_rows")
                results[key] = round(ms, 3)
                say(f"planner N={n} available={n_avail} L={L} "
                    f"{'exact' if rows is None else f'rows={rows}'}: {ms:.2f} ms")
    if not args.no_coded:
        import bench_multicast

        say("coded shuffle: bcast against p2p (K=9, q=6, mu=1/3 unified)")
        mc = bench_multicast.measure_bcast_over_p2p()
        results["bcast_over_p2p_shuffle"] = mc["bcast_over_p2p_shuffle"]
        say(f"bcast_over_p2p_shuffle = {mc['bcast_over_p2p_shuffle']}")
        pb = bench_multicast.measure_plan_build_k18()
        results["plan_build_s_K18"] = pb["plan_build_s_K18"]
        say(f"plan_build_s_K18 = {pb['plan_build_s_K18']}")
    results["loadavg_end"] = round(os.getloadavg()[0], 2)
    if args.plot:
        plot(results, worlds, waits, args.plot)
    print(json.dumps(results))
    return 0 if results["all_verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
