"""Timing of the elastic-computing planner (``make_plan``) at scale; pure Python, no MPI.

Instances: N = 1000 machines (500 available, L = 300) and N = 10000 (5000
available, L = 3000), each with exact fractions and with integer rows
(``rows = 10 L``).  Speeds cycle 1, 1.5, 2 (as ``scripts/bench_scale.py``) or,
with ``--speeds wide``, are random fractions ``a / b`` (``a <= 40``, ``b <= 8``);
the available machines are a seeded random sample.  Each figure is the median
wall time of a few runs (the CPU time is printed too).  The last line is one JSON object:
``{"planner_ms_N1000": .., "planner_ms_N1000_rows": .., "planner_ms_N10000": ..,
"planner_ms_N10000_rows": ..}``.

    python scripts/bench_planner.py [--policy heterogeneous] [--speeds cycle] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from fractions import Fraction

from mpi_coded.cec.plan import POLICIES, make_plan

CASES = [("N1000", 1000, 500, 300), ("N10000", 10000, 5000, 3000)]


def instance(n: int, n_avail: int, kind: str, seed: int = 0
             ) -> tuple[dict[int, Fraction], list[int]]:
    rng = random.Random(seed)
    if kind == "wide":
        speeds = {i: Fraction(rng.randint(1, 40), rng.randint(1, 8)) for i in range(1, n + 1)}
    else:
        cycle = (Fraction(1), Fraction(3, 2), Fraction(2))
        speeds = {i: cycle[(i - 1) % 3] for i in range(1, n + 1)}
    return speeds, sorted(rng.sample(range(1, n + 1), n_avail))


def planner_ms(policy: str, n: int, n_avail: int, L: int, rows: int | None, kind: str,
               runs: int) -> tuple[float, float, int]:
    """Median wall and CPU time of ``make_plan`` (ms), and the plan's number of row sets."""
    speeds, avail = instance(n, n_avail, kind)
    wall, cpu = [], []
    nsets = 0
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        plan = make_plan(policy, speeds, L, avail, rows=rows)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        nsets = len(plan.sets)
    return 1e3 * statistics.median(wall), 1e3 * statistics.median(cpu), nsets


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", choices=POLICIES, default="heterogeneous")
    ap.add_argument("--speeds", choices=["cycle", "wide"], default="cycle")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    out: dict[str, float] = {}
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
              "(wall times grow with it; CPU times much less)", flush=True)
    for name, n, n_avail, L in CASES:
        for rows in (None, 10 * L):
            ms, cpu, nsets = planner_ms(args.policy, n, n_avail, L, rows, args.speeds,
                                        args.runs)
            key = f"planner_ms_{name}" + ("_rows" if rows else "")
            out[key] = round(ms, 3)
            print(f"{key}: {ms:.2f} ms wall, {cpu:.2f} ms CPU ({args.policy}, N={n}, "
                  f"{n_avail} available, L={L}, rows={rows}, speeds {args.speeds}, "
                  f"{nsets} row sets)", flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
