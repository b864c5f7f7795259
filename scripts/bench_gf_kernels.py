"""Benchmark the GF(2^8) / GF(2^16) matrix-product kernels against galois's own ``@``.

Times :func:`mpi_coded.gf_kernels.gf_matmul` and galois on the same operands (median of a few
repetitions after warming up both JITs), checks that they agree, and prints one line per shape.
The last output line is a JSON object; ``gf8_kernel_over_galois`` and ``gf16_kernel_over_galois``
are the geometric-mean speedups (galois time / kernel time) over the map-phase shapes.

    python scripts/bench_gf_kernels.py [--reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

#: (label, m, k, n): ``(m, k) @ (k, n)``; the "map" shapes define the headline ratios.
MAP_SHAPES = [("map", 400, 2000, 60), ("map", 1000, 3000, 120)]
OTHER_SHAPES = [
    ("map-narrow", 2000, 3000, 8),
    ("encode", 500, 3000, 1000),
    ("encode-block", 25, 25, 1000),
    ("decode", 1000, 1000, 100),
    ("decode-small", 50, 50, 600),
    ("matvec", 2000, 3000, 1),
]


def _kernels() -> ModuleType:
    """Import :mod:`mpi_coded.gf_kernels`, from this checkout if the package is not installed."""
    try:
        from mpi_coded import gf_kernels
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from mpi_coded import gf_kernels
    return gf_kernels


def median_time(func: Callable[[], Any], reps: int) -> float:
    """Median wall time of ``reps`` calls of ``func``, in seconds."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_shape(
    gk: ModuleType, gf: Any, degree: int, m: int, k: int, n: int, reps: int, galois_reps: int
) -> dict[str, float]:
    """Kernel, galois and float64-BLAS times for one shape; raises if the products differ."""
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    dtype = np.uint8 if degree == 8 else np.uint16
    a = rng.integers(0, 1 << degree, size=(m, k), dtype=dtype)
    b = rng.integers(0, 1 << degree, size=(k, n), dtype=dtype)
    if n == 1:
        b = b[:, 0].copy()
    ga, gb = a.view(gf), b.view(gf)
    got = gk.gf_matmul(a, b, degree)
    want = np.asarray((ga @ gb).view(np.ndarray))
    if not np.array_equal(got, want):
        raise AssertionError(f"GF(2^{degree}) {m}x{k} @ {k}x{n}: kernel differs from galois")
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    return {
        "kernel": median_time(lambda: gk.gf_matmul(a, b, degree), reps),
        "galois": median_time(lambda: ga @ gb, galois_reps),
        "blas": median_time(lambda: fa @ fb, reps),
        "choice": gk._choose(m, k, n, degree),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print one line per shape and a JSON summary last."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions per timing (median)")
    parser.add_argument("--quick", action="store_true", help="map shapes only")
    args = parser.parse_args(argv)

    import galois

    gk = _kernels()
    shapes = MAP_SHAPES + ([] if args.quick else OTHER_SHAPES)
    summary: dict[str, Any] = {}
    for degree in (8, 16):
        gf = galois.GF(2**degree)
        gk.warm_up(degree)
        small = np.ones((4, 4), dtype=np.uint8 if degree == 8 else np.uint16).view(gf)
        _ = small @ small  # galois's JIT
        ratios = []
        for label, m, k, n in shapes:
            flops = m * k * n
            galois_reps = max(1, min(args.reps, int(3e8 // flops)))
            r = bench_shape(gk, gf, degree, m, k, n, args.reps, galois_reps)
            ratio = r["galois"] / r["kernel"]
            if label == "map":
                ratios.append(ratio)
            summary[f"gf{degree}_{label}_{m}x{k}x{n}"] = round(ratio, 2)
            print(
                f"GF(2^{degree:<2}) {label:<13} {m:>5}x{k:<5} @ {k:>5}x{n:<5}"
                f" kernel {r['kernel'] * 1e3:9.2f} ms ({r['choice']:<8})"
                f" galois {r['galois'] * 1e3:9.2f} ms  x{ratio:6.1f}"
                f"   float64 BLAS {r['blas'] * 1e3:8.2f} ms",
                flush=True,
            )
        summary[f"gf{degree}_kernel_over_galois"] = round(
            math.exp(sum(math.log(x) for x in ratios) / len(ratios)), 2
        )
    headline = {k: summary.pop(k) for k in ("gf8_kernel_over_galois", "gf16_kernel_over_galois")}
    print(json.dumps({**headline, **summary, "reps": args.reps}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
