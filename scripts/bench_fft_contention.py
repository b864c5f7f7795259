"""How much the RS FFT encode slows down beside other ranks, by the size of its code.

The paper-size coded job (``scripts/bench_paper.py``: K = 9, q = 6, m = n = N = 6000,
GF(2^16)) encodes with the FFT in both schemes it compares: unified, one code
(9000, 6000), and BDC at T = 10, ten codes (900, 600). Its parity servers encode at once
on the machine's cores: six FFT encoders in unified's job; in T = 10's five, beside one
that encodes with generator rows (``--procs``, default 6, runs that many of either
shape). Version 4 of the table model (docs/theory.md (C.4)) priced both with one price
per counted FFT operation and one contention factor for compute-bound kernels; version 5
prices unified's transforms (beyond a core's cache) as ``rs_fft_encode_large``, with the
memory-bound contention factor, and T = 10's as ``rs_fft_encode``. This bench measures, for each of
the two shapes, the wall seconds of one server's encode (6000 columns, 2048 at a time, as
``mpi_coded.codes.rs_sub.RSSub.parity_rows`` does) alone and in ``--procs`` processes
started together, and reports

* ``slowdown``: the processes' median wall over the wall alone;
* ``beyond_share``: the slowdown over ``max(1, procs / cores)`` (1.0: the cores are simply
  shared);
* ``unified_over_partitions``: the unified encode over the ten partitions', alone and at
  once; the model's ratio (counted operations) beside them.

The processes wait for each other at the start of every round, so that each round runs
them all at once. Progress goes to stderr; the last stdout line is one JSON object. About
20 s on 2 cores.

    python scripts/bench_fft_contention.py [--procs 6] [--reps 5] [--columns 6000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    from mpi_coded.codes import rs_fft
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mpi_coded.codes import rs_fft
from mpi_coded.codes.rs_sub import PARITY_CHUNK as CHUNK  # the runtime's

SHAPES = {"unified": (1, 9000, 6000), "partitions": (10, 900, 600)}
"""name: (codes, n, k) of one paper-size server's encode."""
MAX_PROCS = 64
BARRIER_TIMEOUT = 600.0
"""Seconds a process waits for the others at a round's start (a failed one ends the
bench with an error instead of a hang)."""


def encoder(codes: int, n: int, k: int, columns: int, seed: int):
    """One server's encode of ``columns`` columns: every code's parity, ``CHUNK`` columns
    at a time."""
    rng = np.random.default_rng(seed)
    rs = [rs_fft.RSCode(n, k) for _ in range(codes)]
    data = [rng.integers(0, 1 << 16, size=(k, columns), dtype=np.uint16) for _ in range(codes)]

    def run() -> None:
        for code, d in zip(rs, data):
            for a in range(0, columns, CHUNK):
                code.parity(np.ascontiguousarray(d[:, a:a + CHUNK]))

    run()  # warm: compiled kernels, pages
    return run


def alternating(runs: dict[str, Any], reps: int, barrier: Any = None) -> dict[str, float]:
    """Each run's median wall over ``reps`` rounds, the runs alternating within a round
    (the machine's drift falls on both alike); with ``barrier``, every run of every round
    starts when all the processes are there."""
    walls: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            if barrier is not None:
                barrier.wait()
            t = time.perf_counter()
            run()
            walls[name].append(time.perf_counter() - t)
    return {name: statistics.median(w) for name, w in walls.items()}


def encoders(columns: int, seed: int) -> dict[str, Any]:
    return {name: encoder(*shape, columns, seed) for name, shape in SHAPES.items()}


_BARRIER: Any = None


def _init(barrier: Any) -> None:
    global _BARRIER
    _BARRIER = barrier


def _task(args: tuple[int, int, int]) -> dict[str, float]:
    columns, reps, seed = args
    runs = encoders(columns, seed)
    return alternating(runs, reps, _BARRIER)


def at_once(procs: int, columns: int, reps: int) -> list[dict[str, float]]:
    """Each of ``procs`` processes' median walls (:func:`alternating`), started together."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(procs, timeout=BARRIER_TIMEOUT)
    with ctx.Pool(procs, initializer=_init, initargs=(barrier,)) as pool:
        return pool.map(_task, [(columns, reps, i) for i in range(procs)], chunksize=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=6,
                    help="processes at once (default 6: the paper job's parity servers)")
    ap.add_argument("--reps", type=int, default=5,
                    help="rounds timed per process (default 5), the two shapes alternating")
    ap.add_argument("--columns", type=int, default=6000, help="columns per encode")
    a = ap.parse_args(argv)
    for arg, v in (("--procs", a.procs), ("--reps", a.reps), ("--columns", a.columns)):
        if v < 1:
            ap.error(f"{arg}: must be at least 1, got {v}")
    if a.procs > MAX_PROCS:
        ap.error(f"--procs: at most {MAX_PROCS}, got {a.procs}")
    from mpi_coded.analysis.calibration import cores_here

    rs_fft.warm_up()
    cores = cores_here()
    out: dict[str, Any] = {"bench": "fft_contention", "procs": a.procs, "cores": cores,
                           "columns": a.columns, "chunk": CHUNK, "reps": a.reps, "shapes": {}}
    print("alone ...", file=sys.stderr, flush=True)
    alone = alternating(encoders(a.columns, 0), a.reps)
    print(f"{a.procs} processes at once ...", file=sys.stderr, flush=True)
    each = at_once(a.procs, a.columns, a.reps)
    for name, (codes, n, k) in SHAPES.items():
        walls = [w[name] for w in each]
        slow = statistics.median(walls) / alone[name]
        out["shapes"][name] = {
            "codes": codes, "n": n, "k": k, "alone_s": alone[name], "at_once_s": walls,
            "slowdown": slow, "beyond_share": slow / max(1.0, a.procs / cores),
            "ops": codes * rs_fft.fft_encode_ops(n, k, a.columns)}
        print(f"{name} ({codes} x ({n}, {k})): alone {alone[name]:.3f} s, at once median "
              f"{statistics.median(walls):.3f} s (slowdown {slow:.2f}, beyond sharing the "
              f"cores {out['shapes'][name]['beyond_share']:.2f})", file=sys.stderr, flush=True)
    u, p = out["shapes"]["unified"], out["shapes"]["partitions"]
    out["unified_over_partitions"] = {
        "alone": u["alone_s"] / p["alone_s"],
        "at_once": statistics.median(u["at_once_s"]) / statistics.median(p["at_once_s"]),
        "model_ops": u["ops"] / p["ops"]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
