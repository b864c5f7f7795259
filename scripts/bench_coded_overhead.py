"""The coded job's master: its per-repetition overhead, at ``t_row = 0``.

With ``t_row = 0`` no server sleeps in its map, so a repetition's wall time (``total_s``,
the master's clock from the first order of the repetition to its verified result) is the
framework's: the master's orders, the servers' noticing them, the real encode, map,
shuffle and reduce of a small instance, and the master's own work in each phase (a
phase's time is the master's, from its order to the last answer).  The script runs
``mpi-coded run coded`` (``--reps`` repetitions, the same small instance for every ``K``:
``rows-per-batch`` 4, ``n`` 16, ``N`` a multiple of ``q``) at each ``K`` and scheme, all in
one run, and prints per job the median and the spread of ``total_s`` and each phase's
median.  The last line is one JSON object.

    python scripts/bench_coded_overhead.py                    # K = 6 and 18, uc and unified
    python scripts/bench_coded_overhead.py --K 6 --schemes uc --reps 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import run_mpi  # noqa: E402

from mpi_coded.results import RUN, kind_of, read_results  # noqa: E402

PHASES = ("encode_s", "map_s", "shuffle_s", "reduce_s")
SHAPES = {6: ("4", "1/2"), 18: ("12", "1/3")}
"""K -> (q, mu) of the instance (the tests' shapes)."""


def say(msg: str) -> None:
    print(f"[bench_coded_overhead {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def spread(xs: list[float]) -> dict[str, float]:
    ms = [1e3 * x for x in xs]
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms)}


def one(tmp: Path, K: int, scheme: str, reps: int) -> dict[str, Any]:
    q, mu = SHAPES[K]
    out = tmp / f"coded_{K}_{scheme}.jsonl"
    run_mpi(K + 1, ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", q, "--mu", mu,
                    "--rows-per-batch", "4", "--n", "16", "--N", str(3 * int(q)),
                    "--t-row", "0", "--reps", str(reps), "--out", str(out)])
    recs = [r for r in read_results(out) if kind_of(r) == RUN]
    if not recs or not all(r.get("verified") for r in recs):
        raise SystemExit(f"K={K} {scheme}: a repetition was not verified")
    total = [r["total_s"] for r in recs]
    tot = spread(total)
    each = {p: spread([r[p] for r in recs])["median_ms"] for p in PHASES}
    say(f"K={K:>2} {scheme:<8} per repetition: {tot['median_ms']:.2f} ms "
        f"(min {tot['min_ms']:.2f}, max {tot['max_ms']:.2f}); medians "
        + ", ".join(f"{p.removesuffix('_s')} {v:.2f}" for p, v in each.items()))
    return {"K": K, "ranks": K + 1, "scheme": scheme, "reps": len(recs), "total": tot,
            "phases_median_ms": each}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--K", default="6,18", help="servers, comma-separated (6, 18)")
    ap.add_argument("--schemes", default="uc,unified", help="comma-separated")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    Ks = [int(k) for k in args.K.split(",")]
    if any(k not in SHAPES for k in Ks) or args.reps < 2:
        ap.error(f"--K: each one of {sorted(SHAPES)}; --reps: >= 2")
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        jobs = [one(Path(d), K, s, args.reps) for K in Ks for s in args.schemes.split(",")]
    print(json.dumps({"cores": os.cpu_count(), "loadavg_start": load0,
                      "loadavg_end": os.getloadavg()[0], "jobs": jobs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
