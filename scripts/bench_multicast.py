"""Benchmark of the coded multicast transport and of shuffle plan building at K = 18.

``bcast_over_p2p_shuffle``: the master-observed shuffle phase time of the same coded
job (default K = 9, q = 6, mu = 1/3, unified) with ``--multicast bcast`` over
``--multicast p2p``, medians over repetitions.  The servers get distinct speeds, so the
finishing order (hence ``Q`` and the multicast groups) is the same in every
repetition; launches alternate p2p and bcast.  ``cold`` is the first repetition, ``warm``
the later ones (the ratio reported).  At the default K = 9 a server belongs to 28 groups
over every ``Q`` (at most :data:`mpi_coded.coded.job.BCAST_SETUP_GROUPS`), so the servers
create them all at setup and no repetition creates one: cold and warm then differ only by
first touches.  Larger jobs still create a new ``Q``'s groups in its first shuffle (the
records' ``server_groups_created`` and ``server_groups_s``).

``plan_build_s_K18``: seconds to build one shuffle plan at K = 18, q = 12, mu = 1/3
(3060 batches, rows-per-batch 1, N = 48): the median CPU time of the building process
over builds, which is the wall time on an idle core; the median wall time is reported
beside it as ``plan_build_wall_s_K18`` (on a shared, oversubscribed node it follows
the load: 0.17 s of CPU took 2.4 s of wall time at a load average of 35 on 2 cores).

The last output line is one JSON object with both.  ``scripts/bench_scale.py`` may call
:func:`measure_bcast_over_p2p` and :func:`measure_plan_build_k18` directly.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import run_mpi  # noqa: E402

from mpi_coded.results import RUN, kind_of, read_results  # noqa: E402


def _job(tmp: Path, mode: str, K: int, q: int, mu: str, eta: int, n: int, N: int,
         field: str, reps: int, t_row: float, tag: str) -> list[dict[str, Any]]:
    cfg = tmp / "speeds.toml"
    speeds = ", ".join(f"{2.0 * 0.85 ** s:.4f}" for s in range(K))
    cfg.write_text(f"speeds = [{speeds}]\nt_row = {t_row}\n")
    out = tmp / f"{mode}_{tag}.jsonl"
    run_mpi(K + 1, ["run", "coded", "--config", str(cfg), "--scheme", "unified",
                    "--K", str(K), "--q", str(q), "--mu", mu, "--rows-per-batch", str(eta),
                    "--n", str(n), "--N", str(N), "--field", field, "--reps", str(reps),
                    "--multicast", mode, "--out", str(out)], timeout=1800)
    runs = [r for r in read_results(out) if kind_of(r) == RUN]
    if not all(r["verified"] for r in runs):
        raise SystemExit(f"{mode}: a repetition did not verify")
    return runs


def measure_bcast_over_p2p(K: int = 9, q: int = 6, mu: str = "1/3", eta: int = 4,
                           n: int = 40, N: int = 240, field: str = "gf2^8", reps: int = 8,
                           rounds: int = 2, t_row: float = 0.002) -> dict[str, Any]:
    """Shuffle phase time, bcast over p2p, on the same unified job (module docstring).

    Returns ``bcast_over_p2p_shuffle`` (warm medians' ratio) with the medians behind it.
    """
    shuffle: dict[str, list[float]] = {"p2p": [], "bcast": []}
    cold: dict[str, list[float]] = {"p2p": [], "bcast": []}
    loads: dict[str, set[str]] = {"p2p": set(), "bcast": set()}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i in range(rounds):
            for mode in ("p2p", "bcast"):
                runs = _job(tmp, mode, K, q, mu, eta, n, N, field, reps, t_row, str(i))
                cold[mode].append(runs[0]["shuffle_s"])
                shuffle[mode] += [r["shuffle_s"] for r in runs[1:]]
                loads[mode] |= {r["load_measured_exact"] for r in runs}
    if loads["p2p"] != loads["bcast"]:
        raise SystemExit(f"loads differ: p2p {loads['p2p']}, bcast {loads['bcast']}")
    med = {m: statistics.median(v) for m, v in shuffle.items()}
    med_cold = {m: statistics.median(v) for m, v in cold.items()}
    return {
        "bcast_over_p2p_shuffle": med["bcast"] / med["p2p"],
        "bcast_over_p2p_shuffle_cold": med_cold["bcast"] / med_cold["p2p"],
        "shuffle_s_p2p": med["p2p"], "shuffle_s_bcast": med["bcast"],
        "shuffle_s_cold_p2p": med_cold["p2p"], "shuffle_s_cold_bcast": med_cold["bcast"],
        "multicast_job": {"scheme": "unified", "K": K, "q": q, "mu": mu,
                          "rows_per_batch": eta, "n": n, "N": N, "field": field,
                          "reps": reps, "rounds": rounds, "load": sorted(loads["p2p"])},
    }


def measure_plan_build_k18(builds: int = 5) -> dict[str, Any]:
    """Seconds to build one shuffle plan at K = 18, q = 12, mu = 1/3 (median CPU; wall)."""
    from mpi_coded.coded.job import load_job
    from mpi_coded.coded.mapend import map_end
    from mpi_coded.coded.placement import build_placement
    from mpi_coded.coded.shuffle import shuffle_plan

    job = load_job(None, {"scheme": "unified", "K": 18, "q": 12, "mu": "1/3",
                          "rows_per_batch": 1, "n": 4, "N": 48, "field": "gf2^16"})
    t = time.perf_counter()
    pl = build_placement(job.params)
    placement_s = time.perf_counter() - t
    rng = random.Random(0)
    wall, cpu = [], []
    for _ in range(builds):
        order = list(range(18))
        rng.shuffle(order)
        end = map_end(pl, order)
        t, c = time.perf_counter(), time.process_time()
        plan = shuffle_plan(pl, end)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return {"plan_build_s_K18": statistics.median(cpu),
            "plan_build_wall_s_K18": statistics.median(wall),
            "placement_s_K18": placement_s,
            "plan_K18_messages": len(plan.multicasts) + len(plan.unicasts)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=8, help="repetitions per launch")
    ap.add_argument("--rounds", type=int, default=2, help="launches per transport")
    ap.add_argument("--builds", type=int, default=5, help="K = 18 plans built")
    args = ap.parse_args()
    res = measure_plan_build_k18(args.builds)
    print(f"plan K=18: {res['plan_build_s_K18']:.3f} s CPU, "
          f"{res['plan_build_wall_s_K18']:.3f} s wall (medians)", flush=True)
    mc = measure_bcast_over_p2p(reps=args.reps, rounds=args.rounds)
    print(f"shuffle phase, warm medians: p2p {mc['shuffle_s_p2p']:.4f} s, "
          f"bcast {mc['shuffle_s_bcast']:.4f} s; cold: p2p {mc['shuffle_s_cold_p2p']:.4f} s, "
          f"bcast {mc['shuffle_s_cold_bcast']:.4f} s", flush=True)
    res.update(mc)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
