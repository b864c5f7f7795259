"""Benchmark of the elastic job: heterogeneous vs cyclic, and framework overhead.

Runs mpiexec itself (all figures from one run of this script):
1. the seed schedule (SPEC A.4) under the heterogeneous and the cyclic policy,
   with ``t_row`` chosen so that every step lasts at least 0.2 s;
2. the framework overhead per step at ``t_row = 0`` with N = 6 (7 ranks) and
   N = 15 (16 ranks), over many steps of random preemption.

The last output line is one JSON object with ``speedup_measured`` (cyclic total
wall over heterogeneous total wall), ``speedup_theory`` (the same ratio of the
plans' predicted times: 2.85 / 2.305), ``max_wall_over_predicted`` and
``overhead_ms_per_step`` (N = 6), plus the N = 15 overhead.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import read_jsonl, run_mpi  # noqa: E402


def seed_run(tmp: Path, policy: str, t_row: float, field: str) -> dict:
    out = tmp / f"seed_{policy}.jsonl"
    run_mpi(7, ["run", "cec", "--policy", policy, "--t-row", str(t_row), "--field", field,
                "--out", str(out)])
    return summarise(read_jsonl(out))


def summarise(lines: list[dict]) -> dict:
    steps = [r for r in lines if r["kind"] == "step"]
    return {
        "wall_s": [r["wall_s"] for r in steps],
        "predicted_s": [r["predicted_s"] for r in steps],
        "total_wall_s": sum(r["wall_s"] for r in steps),
        "total_predicted_s": sum(r["predicted_s"] for r in steps),
        "verified": all(r["verified"] for r in steps),
        "mean_wall_ms": 1e3 * sum(r["wall_s"] for r in steps) / len(steps),
    }


def overhead_run(tmp: Path, n: int, steps: int) -> dict:
    cfg = tmp / f"overhead_{n}.toml"
    speeds = ", ".join(str(1 + (i % 3) * 0.5) for i in range(n))
    L = max(1, n // 3)
    cfg.write_text(f'N = {n}\nL = {L}\nspeeds = [{speeds}]\nrows = {60 * L}\ncols = 100\n'
                   f't_row = 0\n[availability]\nkind = "random"\np = 0.3\nsteps = {steps}\n')
    out = tmp / f"overhead_{n}.jsonl"
    run_mpi(n + 1, ["run", "cec", "--config", str(cfg), "--out", str(out)])
    return summarise(read_jsonl(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-row", type=float, default=0.002,
                    help="seconds per row at speed 1 (0.002: the shortest step lasts 0.28 s)")
    ap.add_argument("--field", default="float64")
    ap.add_argument("--steps", type=int, default=200, help="steps of the overhead runs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        het = seed_run(tmp, "heterogeneous", args.t_row, args.field)
        cyc = seed_run(tmp, "cyclic", args.t_row, args.field)
        o6 = overhead_run(tmp, 6, args.steps)
        o15 = overhead_run(tmp, 15, args.steps)
    ratios = [w / p for run in (het, cyc) for w, p in zip(run["wall_s"], run["predicted_s"])]
    print("\nstep  het_wall  het_pred  cyc_wall  cyc_pred")
    for i in range(len(het["wall_s"])):
        print(f"{i + 1:>4} {het['wall_s'][i]:>9.4f} {het['predicted_s'][i]:>9.4f} "
              f"{cyc['wall_s'][i]:>9.4f} {cyc['predicted_s'][i]:>9.4f}")
    result = {
        "speedup_measured": cyc["total_wall_s"] / het["total_wall_s"],
        "speedup_theory": cyc["total_predicted_s"] / het["total_predicted_s"],
        "max_wall_over_predicted": max(ratios),
        "min_step_predicted_s": min(het["predicted_s"] + cyc["predicted_s"]),
        "overhead_ms_per_step": o6["mean_wall_ms"],
        "overhead_ms_per_step_N15": o15["mean_wall_ms"],
        "all_verified": het["verified"] and cyc["verified"] and o6["verified"] and o15["verified"],
        "t_row": args.t_row,
        "field": args.field,
    }
    result["speedup_error"] = result["speedup_measured"] / result["speedup_theory"] - 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
