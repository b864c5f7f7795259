"""Timings the coded bench reports beside its jobs (``scripts/bench_coded.py``): one
reducer's decode by the RS FFT decoder against the old inverse path, and the GF(2^l) matrix
kernels of :mod:`mpi_coded.gf_kernels` against galois.  In this process, no MPI."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mpi_coded.codes.cauchy import CauchyCode
from mpi_coded.codes.rs_sub import RSSubCode
from mpi_coded.fields import get_field


def rs_reduce_speedup(m: int = 720, seed: int = 0, K: int = 9, q: int = 6) -> dict[str, Any]:
    """One unified reducer's decode at ``m`` (the ``(m K/q, m)`` code, ``m/q`` outputs, a
    random erasure pattern): the RS FFT decoder against the old inverse path
    (``[I; Cauchy]``, a galois inverse per erasure pattern, then its product).  The speedup
    and both times (RS: best of 3, a fresh code each time; the inverse path once, its cache
    would make a second decode a mere product)."""
    # deferred: numba (rs_fft's kernels), only when benched
    from mpi_coded.codes.rs_fft import warm_up

    f = get_field("gf2^16")
    f.warm_up()
    warm_up()
    r, w = m * K // q, m // q
    rng = np.random.default_rng(seed)
    msg = f.random((m, w), rng)
    pos = np.sort(rng.choice(r, size=m, replace=False))
    timings: dict[str, float] = {}
    makers: tuple[tuple[str, Callable[[], Any], int], ...] = (
        ("rs_fft", lambda: RSSubCode(f, r, m), 3), ("inverse", lambda: CauchyCode(f, r, m), 1))
    for name, make, tries in makers:
        for _ in range(tries):
            code = make()
            vals = code.encode_rows(pos, msg)
            t = time.perf_counter()
            got = code.decode(pos, vals)
            dt = time.perf_counter() - t
            timings[name] = min(timings.get(name, dt), dt)
            assert np.array_equal(got, msg), f"{name} decoded wrongly"
    return {"rs_reduce_speedup": timings["inverse"] / timings["rs_fft"],
            "rs_reduce_s": timings["rs_fft"], "inverse_reduce_s": timings["inverse"], "m": m}


def _median_time(f: Callable[[], Any], reps: int = 3) -> float:
    """The median seconds of ``reps`` calls of ``f``."""
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def kernel_ratio(degree: int, shape: tuple[int, int, int]) -> float:
    """galois matmul time over :func:`mpi_coded.gf_kernels.gf_matmul` time on
    ``(m x k) @ (k x n)`` over GF(2^degree) (degree 8 or 16), medians of 3; the two
    products are checked equal first."""
    import galois  # deferred: galois, only to check the products

    from mpi_coded import gf_kernels  # deferred: numba (gf_kernels), only when benched

    gf = galois.GF(2**degree)
    dt = np.uint8 if degree == 8 else np.uint16
    rng = np.random.default_rng(0)
    m, k, n = shape
    a = rng.integers(0, 2**degree, (m, k)).astype(dt)
    b = rng.integers(0, 2**degree, (k, n)).astype(dt)
    ga, gb = a.view(gf), b.view(gf)
    want = np.asarray((ga @ gb).view(np.ndarray))
    assert np.array_equal(gf_kernels.gf_matmul(a, b, degree), want)
    return (_median_time(lambda: ga @ gb)
            / _median_time(lambda: gf_kernels.gf_matmul(a, b, degree)))
