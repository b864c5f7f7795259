"""Benchmark of the elastic job: heterogeneous vs cyclic, and framework overhead.

Runs mpiexec itself (all figures from one run of this script):
1. the worked example's schedule (docs/theory.md, A.4) under the heterogeneous and the
   cyclic policy,
   with ``t_row`` chosen so that every step lasts at least 0.2 s;
2. the framework overhead per step at ``t_row = 0`` with N = 6 (7 ranks) and
   N = 15 (16 ranks), over many steps of random preemption.

3. the elastic job as clusters behave (every figure a real mpiexec run):
   ``straggler_speedup``: a 20-step random-preemption job (N = 8, L = 3) with one
   machine slowed 5x at random each step (config ``stragglers = 1``,
   ``straggler_factor = 5``), total wall with ``S = 0`` over ``S = 1``;
   ``auto_over_oracle_after_3_steps``: ``speeds = "auto"`` on a 20-step job whose
   machine 5 drifts to 0.4x its speed at step 10; per step the measured wall over
   the oracle plan's predicted time (the plan with the true speeds, reported by
   the master in the same step line: no second job), median over steps >= 4
   (``t_row >= 0.002`` there, so the framework's few ms per step stay small);
   ``auto_true_over_oracle_after_3_steps`` is the same without overhead (the
   estimated plan's time under the true speeds over the oracle's);
   ``tw_waste_ratio``: total transition waste of ``heterogeneous-tw`` over
   ``heterogeneous`` on the seed schedule and on a 50-step random trace (both
   reported; the step times must be identical);
   ``uncoded_over_coded``: total step time (moves included) of ``uncoded`` over
   coded ``heterogeneous`` on the same 20-step random schedule.

The last output line is one JSON object with ``speedup_measured`` (cyclic total
wall over heterogeneous total wall), ``speedup_theory`` (the same ratio of the
plans' predicted times: 2.85 / 2.305), ``max_wall_over_predicted`` and
``overhead_ms_per_step`` (N = 6), plus the N = 15 overhead, and the figures of 3.
``--elastic-only`` runs part 3 alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import run_mpi  # noqa: E402

from mpi_coded.results import STEP, kind_of, read_results  # noqa: E402


def seed_run(tmp: Path, policy: str, t_row: float, field: str) -> dict:
    out = tmp / f"seed_{policy}.jsonl"
    run_mpi(7, ["run", "cec", "--policy", policy, "--t-row", str(t_row), "--field", field,
                "--out", str(out)])
    return summarise(read_results(out))


def summarise(lines: list[dict]) -> dict:
    steps = [r for r in lines if kind_of(r) == STEP]
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
    return summarise(read_results(out))


ELASTIC = ('N = 8\nL = 3\nspeeds = [1, 1, 1.5, 1.5, 2, 2, 3, 1]\nrows = 1200\ncols = 200\n'
           'seed = 3\n')


def progress(msg: str) -> None:
    print(f"[bench_cec] {msg}", file=sys.stderr, flush=True)


def elastic_run(tmp: Path, name: str, toml: str, faults: tuple[str, ...] = ()) -> list[dict]:
    """One elastic job (N = 8 unless ``toml`` says otherwise); its step lines."""
    cfg = tmp / f"{name}.toml"
    cfg.write_text(toml)
    out = tmp / f"{name}.jsonl"
    n = 9 if "N = 8" in toml else 7
    args = ["run", "cec", "--config", str(cfg), "--out", str(out)]
    for f in faults:
        args += ["--fault", f]
    progress(f"{name} ...")
    run_mpi(n, args)
    steps = [r for r in read_results(out) if kind_of(r) == STEP]
    progress(f"{name}: {len(steps)} steps, total wall {sum(r['wall_s'] for r in steps):.3f} s, "
             f"verified {all(r['verified'] for r in steps)}")
    return steps


def total(steps: list[dict], key: str = "wall_s") -> float:
    return sum(float(r[key]) for r in steps)


def elastic_bench(tmp: Path, t_row: float) -> dict:
    random20 = '[availability]\nkind = "random"\np = 0.25\nsteps = 20\n'
    strag = f"t_row = {t_row}\nstragglers = 1\nstraggler_factor = 5\n"
    s0 = elastic_run(tmp, "stragglers_S0", ELASTIC + strag + "S = 0\n" + random20)
    s1 = elastic_run(tmp, "stragglers_S1", ELASTIC + strag + "S = 1\n" + random20)
    # the measured wall includes ~3-5 ms of framework per step (orders, collect, decode):
    # steps of >= 0.2 s keep that within 2-3% of the oracle time
    auto_t_row = max(0.002, t_row)
    auto = elastic_run(tmp, "auto_drift", ELASTIC.replace("speeds =", "true_speeds =") +
                       f't_row = {auto_t_row}\nspeeds = "auto"\n' + random20,
                       ("drift:5:10:0.4",))
    ratios = [r["wall_s"] / r["oracle_time_s"] for r in auto if r["step"] >= 4]
    tw: dict[str, dict[str, float | None]] = {}
    same_times = True
    for trace, toml in (("seed", "t_row = 0\n"),
                        ("random50", 't_row = 0\n[availability]\nkind = "random"\np = 0.3\n'
                                     'steps = 50\n')):
        waste = {}
        times = {}
        for policy in ("heterogeneous", "heterogeneous-tw"):
            steps = elastic_run(tmp, f"tw_{trace}_{policy}", f'policy = "{policy}"\n' + toml)
            waste[policy] = sum((Fraction(r["transition_waste"]) for r in steps), Fraction(0))
            times[policy] = [r["load"] for r in steps]
        same_times = same_times and times["heterogeneous"] == times["heterogeneous-tw"]
        tw[trace] = {"heterogeneous": float(waste["heterogeneous"]),
                     "heterogeneous-tw": float(waste["heterogeneous-tw"]),
                     "ratio": float(waste["heterogeneous-tw"] / waste["heterogeneous"])
                     if waste["heterogeneous"] else None}
    unc = elastic_run(tmp, "uncoded", ELASTIC + f't_row = {t_row}\npolicy = "uncoded"\n' +
                      random20)
    cod = elastic_run(tmp, "coded", ELASTIC + f't_row = {t_row}\n' + random20)
    runs = (s0, s1, auto, unc, cod)
    return {
        "straggler_speedup": total(s0) / total(s1),
        "straggler_wall_s": {"S0": total(s0), "S1": total(s1)},
        "auto_over_oracle_after_3_steps": statistics.median(ratios),
        "auto_true_over_oracle_after_3_steps": statistics.median(
            r["true_over_oracle"] for r in auto if r["step"] >= 4),
        "auto_t_row": auto_t_row,
        "tw_waste_ratio": {k: v["ratio"] for k, v in tw.items()},
        "tw_waste": tw,
        "tw_same_loads": same_times,
        "uncoded_over_coded": total(unc) / total(cod),
        "uncoded_move_s": total(unc, "move_s"),
        "uncoded_bytes_moved": int(total(unc, "bytes_moved")),
        "elastic_verified": all(r["verified"] for run in runs for r in run),
        "elastic_t_row": t_row,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-row", type=float, default=0.002,
                    help="seconds per row at speed 1 (0.002: the shortest step lasts 0.28 s)")
    ap.add_argument("--field", default="float64")
    ap.add_argument("--steps", type=int, default=200, help="steps of the overhead runs")
    ap.add_argument("--elastic-t-row", type=float, default=0.0005,
                    help="seconds per row at speed 1 in part 3 (stragglers, auto, uncoded)")
    ap.add_argument("--elastic-only", action="store_true", help="run part 3 only")
    args = ap.parse_args()
    if args.elastic_only:
        with tempfile.TemporaryDirectory() as d:
            print(json.dumps(elastic_bench(Path(d), args.elastic_t_row)))
        return 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        het = seed_run(tmp, "heterogeneous", args.t_row, args.field)
        cyc = seed_run(tmp, "cyclic", args.t_row, args.field)
        o6 = overhead_run(tmp, 6, args.steps)
        o15 = overhead_run(tmp, 15, args.steps)
        elastic = elastic_bench(tmp, args.elastic_t_row)
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
    result.update(elastic)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
