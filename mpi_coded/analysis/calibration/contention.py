"""How much slower a rank computes beside other ranks: the contention factors of the cost
table (:class:`~mpi_coded.codes.prices.Contention`, docs/theory.md (C.4)).

:func:`measure_contention` runs a mix of work in forked processes -- one alone, one per
core, :data:`OVER_PER_CORE` per core, the settings alternating -- and reports the ratios
of their median CPU seconds, for the compute-bound and the memory-bound kernels
(:data:`MIXES`).  A mix that could not be measured (no ``fork``, a worker that died or
timed out) keeps the factor 1.0 and is *reported* as a problem, never silently; a
measured ratio below 1 (noise) is raised to 1.0 and reported likewise.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mpi_coded.coded.code import build_code
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes.prices import Contention
from mpi_coded.fields import get_field

OVER_PER_CORE = 4
"""``contention_over`` is measured with this many processes per core."""
MAX_CONTENTION_PROCS = 64
"""At most this many processes at once (on a large machine: a subset of its cores)."""
CONTENTION_TIMEOUT = 300.0
"""Seconds :func:`measure_contention` waits for the processes of one mix (their setup and
every run) before giving up on it (factors 1.0, reported as a problem)."""


def cores_here() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _mix(quick: bool) -> Callable[[], None]:
    """A rank's compute-bound work: RS FFT parity (transforms that fit a core's cache, the
    ``rs_fft_encode`` class: 1024 points over 1024 columns) and decoding, a 250-row GF
    product."""
    from mpi_coded.codes import rs_fft  # deferred: numba (rs_fft's kernels), only for the RS mix

    rng = np.random.default_rng(1)
    f = get_field("gf2^16")
    n, k, v = (540, 360, 360) if quick else (2700, 1800, 1024)
    code = rs_fft.RSCode(n, k)
    data = rng.integers(0, 1 << 16, size=(k, v), dtype=np.uint16)
    word = code.encode(data[:, : v // 6].copy())
    pos = np.sort(rng.choice(n, size=k, replace=False))
    a = f.random((64 if quick else 250, k), rng)

    def run() -> None:
        code.parity(data)
        code.decode(pos, word[pos])
        f.matmul(a, data)

    run()
    return run


def _mix_memory(quick: bool) -> Callable[[], None]:
    """A rank's memory-bound work (:data:`mpi_coded.codes.prices.MEMORY_BOUND`): a parity
    server's encoding in the paper's BDC ``T = 1000`` and ``T = 3000`` (``[I; Cauchy]``
    partitions of 9 coded rows of 6, of 3 of 2): gathers of rows of ``A`` and one-row
    products over all partitions.  It inflates about as much as the jobs' reducers do; a
    decoding of the same partitions in one process, on values that stay in cache, much
    less, so it is not part of the mix (measured: docs/benchmarks.md)."""
    rng = np.random.default_rng(2)
    f = get_field("gf2^16")
    eta, n, Ts = (25, 1200, (100, 300)) if quick else (250, 6000, (1000, 3000))
    params = [coded_params("bdc", 9, 6, "1/3", eta, n, n, T=T, field="gf2^16") for T in Ts]
    a = f.random((params[0].m, n), rng)  # the same A for both codes (m does not depend on T)
    jobs = [(build_code(p, f), build_placement(p).stored_rows(p.K - 1)) for p in params]

    def run() -> None:
        for code, rows in jobs:
            code.encode(a, rows)

    run()
    return run


MIXES: dict[str, Callable[[bool], Callable[[], None]]] = {"compute": _mix,
                                                          "memory": _mix_memory}
"""The work whose slowdown beside other ranks :func:`measure_contention` measures: the
compute-bound and the memory-bound kernels (:data:`mpi_coded.codes.prices.MEMORY_BOUND`)."""

FACTORS: dict[str, tuple[Contention, Contention]] = {
    "compute": (Contention.CORES, Contention.OVER),
    "memory": (Contention.CORES_MEMORY, Contention.OVER_MEMORY)}
"""The factors each mix measures: with one process per core, with more than the cores."""

_WORKER: dict[str, Any] = {}


def _worker_init(barrier: Any, quick: bool, reps: int, mix: str, cores: int) -> None:
    _WORKER.update(barrier=barrier, run=MIXES[mix](quick), reps=reps, cores=cores)


def _worker(i: int) -> tuple[float, float, float]:
    """Worker ``i``'s median CPU seconds of one run of the mix: alone (worker 0 only), with
    one process per core (workers below ``cores``), with every worker; the three settings
    alternate ``reps`` times, so that a machine whose speed drifts (a shared host) drifts
    in all three alike."""
    run, barrier, cores = _WORKER["run"], _WORKER["barrier"], _WORKER["cores"]

    def timed() -> float:
        t = time.process_time()
        run()
        return time.process_time() - t

    took: list[list[float]] = [[], [], []]
    for _rep in range(_WORKER["reps"]):
        for setting, busy in enumerate((i == 0, i < cores, True)):
            barrier.wait()
            if busy:
                took[setting].append(timed())
    med = [float(np.median(t)) if t else math.nan for t in took]
    return med[0], med[1], med[2]


def _contention(mix: str, cores: int, quick: bool) -> tuple[float, float]:
    """``(full, over)``: the mean CPU seconds of a run of ``mix`` (:data:`MIXES`) in each
    of ``cores`` and of ``OVER_PER_CORE x cores`` processes computing at once, over
    one process's alone (:func:`_worker`; CPU seconds: what the sharing of the cores does
    not explain)."""
    procs = OVER_PER_CORE * cores
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(procs, timeout=CONTENTION_TIMEOUT)
    with ctx.Pool(procs, initializer=_worker_init,
                  initargs=(barrier, quick, 3 if quick else 7, mix, cores)) as pool:
        took = pool.map_async(_worker, range(procs), chunksize=1).get(CONTENTION_TIMEOUT)
    alone = took[0][0]
    full = float(np.mean([t[1] for t in took[:cores]]))
    over = float(np.mean([t[2] for t in took]))
    return full / alone, over / alone


def measure_contention(quick: bool = False) -> tuple[dict[str, float], dict[str, str]]:
    """``(factors, problems)``: how much slower a rank computes when others compute beside
    it, beyond its share of the cores, for each of :data:`MIXES` (:data:`FACTORS`): the CPU
    seconds of each process with one process per core and with :data:`OVER_PER_CORE` per
    core over those of one process alone.  The caches and the memory bus are shared, and
    time slices of oversubscribed ranks evict each other's data.

    ``problems`` names each factor that is not a measurement: 1.0 because it could not be
    measured (no ``fork``: measure it by running a job; a worker died or timed out), or a
    measured ratio below 1 raised to 1.0."""
    out = {str(key): 1.0 for pair in FACTORS.values() for key in pair}
    problems: dict[str, str] = {}
    if "fork" not in multiprocessing.get_all_start_methods():
        for key in out:
            problems[key] = "not measured (no fork on this platform): 1.0"
        return out, problems
    cores = min(cores_here(), MAX_CONTENTION_PROCS // OVER_PER_CORE)
    for mix, pair in FACTORS.items():
        try:
            measured = _contention(mix, cores, quick)
        except Exception as exc:  # a worker died or timed out (memory?): not measured
            for key in pair:
                problems[str(key)] = f"not measured ({exc!r}): 1.0"
            continue
        for key, val in zip(pair, measured):
            if not (math.isfinite(val) and val >= 1.0):
                problems[str(key)] = f"measured {val:.4g}, below 1 (noise?): 1.0"
                val = 1.0
            out[str(key)] = float(val)
    return out, problems
