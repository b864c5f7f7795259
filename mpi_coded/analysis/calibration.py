"""Calibration: seconds per operation of the kernels that really run (docs/theory.md (C.4)).

The delay model counts field operations (docs/theory.md (B.6)); the runtime measures
seconds, and its kernels cost very different seconds per operation: the bit-sliced GF
products of encode and map, the RS FFT codec (:mod:`mpi_coded.codes.rs_fft`), the
generator path's inverses (galois), the copies around them.  :func:`measure` times each on
this machine and :func:`write` stores the table as a small JSON file
(``mpi-coded model --calibrate``); :func:`load` reads it back (``model --calibration
FILE``) and :func:`predict_seconds` predicts every phase of a job in seconds.

The prediction prices the work the runtime really does (:func:`job_work`): the job's own
code and placement are built (pure, no MPI), and every server's encoding and every
reducer's decoding is listed call by call by the code's ``encode_work`` /
``decode_work`` -- the same decisions its ``encode`` / ``decode`` take (which sub-code,
FFT or generator path per partition, which partitions share an erasure pattern), with the
shuffle plan's decode rows for a few seeded finishing orders -- and each call is priced
with the table (:func:`mpi_coded.codes.work.price`).  Keys of the table: those of
:data:`mpi_coded.codes.work.DEFAULT_SECONDS`.

A phase ends when its slowest server ends.  When the ``K`` servers share a machine's
``cores`` (``mpiexec -n 10`` on a laptop), they share the cores while they compute: the
phase lasts the makespan of processor sharing (:func:`shared_wall`: while ``a > cores``
servers compute, each runs at ``cores / a`` of a core), each server slowed further by
the contention of its kind of work (:func:`slowdown`: memory-bound kernels, which time
slices of other ranks evict from the caches, much more than compute-bound ones; both
measured by :func:`measure_contention`).  ``cores=None``: a core per server (a cluster).
During the reduce the servers told to stop their map finish their current chunk (half a
chunk on average) and compete for the cores.  Not modelled: the messages
of the phase orders and answers (a few ms), the master's own work, first touches of memory
(the ranks pre-touch their heap: :mod:`mpi_coded.runtime.core.memory`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.coded.code import CodeWork, PartitionCode, algorithm_mask, algorithm_names
from mpi_coded.coded.job import CodedJob, map_chunk_cuts
from mpi_coded.codes import work as W
from mpi_coded.codes.work import DEFAULT_SECONDS, Work, memory_share, price, seconds
from mpi_coded.errors import ConfigError, require

KEYS = tuple(DEFAULT_SECONDS)
VERSION = 3


def _best(fn: Callable[[], object], reps: int = 3) -> float:
    best = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def measure(quick: bool = False) -> dict[str, float]:
    """Seconds per operation of every kernel, measured here (``quick``: smaller shapes)."""
    from mpi_coded.codes import rs_fft
    from mpi_coded.fields import get_field
    from mpi_coded.gf_kernels import product_ns

    rng = np.random.default_rng(0)
    out: dict[str, float] = {}
    rows, inner, cols = (64, 512, 512) if quick else (250, 4096, 1024)
    # products: the map's shape, a generator row over many partitions (thin), a short
    # partition's parity rows and inverse product, a long partition's
    # (and the parity rows of a BDC partition of the paper's T = 100: 20 rows of 60)
    shapes = [(rows, inner, cols), (9, 18, 1800), (18, 18, 300), (180, 180, 300),
              (20, 60, 6000)]
    for deg in (8, 16):
        f = get_field(f"gf2^{deg}")
        f.warm_up()
        a = f.random((rows, inner), rng)
        b = f.random((inner, cols), rng)
        out[f"gf2^{deg}_matmul"] = _best(functools.partial(f.matmul, a, b), 2) / (
            rows * inner * cols)
        # the scalar kernel: seconds per operand element = thin_operand + rows * thin,
        # fitted on one row (a generator row over many partitions) and six (a short
        # partition's inverse times its values)
        per_operand = {}
        for t_rows, t_inner, t_cols in ((1, 18, 40000), (6, 6, 60000)):
            t_cols //= 5 if quick else 1
            ta, tb = f.random((t_rows, t_inner), rng), f.random((t_inner, t_cols), rng)
            per_operand[t_rows] = _best(functools.partial(f.matmul, ta, tb), 3) / tb.size
        mac = max((per_operand[6] - per_operand[1]) / 5, 1e-13)
        out[f"gf2^{deg}_thin"] = mac
        out[f"gf2^{deg}_thin_operand"] = max(per_operand[1] - mac, 1e-13)
        took = est = 0.0  # seconds over the kernels' estimate, summed over the shapes
        for m_, k_, n_ in shapes:
            x, y = f.random((m_, k_), rng), f.random((k_, n_), rng)
            took += _best(functools.partial(f.matmul, x, y), 3)
            est += product_ns(m_, k_, n_, deg)
        out[f"gf2^{deg}_product"] = took / est
        # the map: one chunk of the paper's map (250 rows of A times all of X)
        mr, mn = (64, 1200) if quick else (250, 6000)
        xm, ym = f.random((mr, mn), rng), f.random((mn, mn), rng)
        out[f"gf2^{deg}_map"] = _best(functools.partial(f.matmul, xm, ym), 2) / product_ns(
            mr, mn, mn, deg)
        del xm, ym
        # an inverse: k pivot steps of k^2 updates, fitted on two sizes
        f.inv(f.cauchy(4, 4))  # compile galois's inverse before timing it
        k1, k2 = (12, 48) if quick else (18, 96)
        t1 = _best(functools.partial(f.inv, f.cauchy(k1, k1)), 3)
        t2 = _best(functools.partial(f.inv, f.cauchy(k2, k2)), 2)
        cube = max((t2 / k2 - t1 / k1) / (k2**2 - k1**2), 1e-12)
        out[f"gf2^{deg}_inverse"] = cube
        out[f"gf2^{deg}_inverse_step"] = max(t1 / k1 - cube * k1**2, 1e-9)
    # one sub-code call on a tiny partition: the Python work around a kernel (what a code
    # with many short partitions pays per partition)
    from mpi_coded.codes.cauchy import CauchyCode

    f16 = get_field("gf2^16")
    tiny = CauchyCode(f16, 9, 6)
    small = f16.random((6, 4), rng)
    word = tiny.encode_rows(range(9), small)
    tiny.decode([1, 2, 3, 6, 7, 8], word[[1, 2, 3, 6, 7, 8]])
    out["call"] = _best(lambda: (tiny.encode_rows([7], small),
                                 tiny.decode([1, 2, 3, 6, 7, 8], word[[1, 2, 3, 6, 7, 8]])),
                        20) / 2
    # a gather of rows (fancy indexing), per element: half the rows, in order, of an A of
    # the paper's size (the encode's gathers read A from memory, not from the caches)
    side = 1000 if quick else 6000
    src = rng.integers(0, 1 << 16, size=(side, side), dtype=np.uint16)
    idx = np.sort(rng.permutation(side)[: side // 2])
    out["copy"] = _best(lambda: src[idx], 5) / (len(idx) * side)
    # a grouped decoding's loop over partitions (stack each one's values, place its
    # outputs), per partition: what a decoding of many short systematic partitions takes
    # beyond the rest of its listed work (the copies, the one sub-code call)
    from mpi_coded.coded.code import build_code
    from mpi_coded.coded.schemes import coded_params

    many = build_code(coded_params("bdc", 9, 6, "1/3", 25, 600, 600, T=300,
                                   field="gf2^16"), f16)
    assert isinstance(many, PartitionCode)
    sys_rows = np.flatnonzero(many.layout.row_position < many.layout.k).tolist()
    width = 200 if quick else 1000
    sys_vals = f16.random((len(sys_rows), width), rng)
    many.decode(sys_rows, sys_vals)
    rest = price([w for w in many.decode_work(sys_rows, width).work if w.kernel != "place"],
                 out)
    took = _best(lambda: many.decode(sys_rows, sys_vals), 5)
    out["place"] = max(took - rest, 1e-9) / many.layout.T
    rs_fft.warm_up()
    # RS codes of the paper's shapes (unified at m = 6000 and 1800, BDC partitions), each
    # encoding a 2048-column chunk (the runtime's) and decoding a reducer's outputs: seconds
    # over counted operations, summed over the shapes (the long codes weigh most)
    shapes_rs = ([(1080, 720, 256, 120), (270, 180, 256, 120), (36, 24, 256, 120)] if quick
                 else [(9000, 6000, 2048, 1000), (2700, 1800, 1800, 300),
                       (900, 600, 2048, 1000), (270, 180, 1800, 300), (36, 24, 2048, 3000)])
    enc: list[tuple[float, int]] = []
    dec: list[tuple[float, int]] = []
    for n, k, v, w in shapes_rs:
        code = rs_fft.RSCode(n, k)
        data = rng.integers(0, 1 << 16, size=(k, v), dtype=np.uint16)
        enc.append((_best(functools.partial(code.parity, data)), rs_fft.fft_encode_ops(n, k, v)))
        word = code.encode(data[:, :w].copy())
        pos = np.sort(rng.choice(n, size=k, replace=False))
        code.decode(pos, word[pos])  # the erasure pattern's locator, once
        dec.append((_best(functools.partial(code.decode, pos, word[pos])),
                    rs_fft.fft_decode_ops(n, k, w)))
    out["rs_fft_encode"] = sum(t for t, _ in enc) / sum(o for _, o in enc)
    out["rs_fft_decode"] = sum(t for t, _ in dec) / sum(o for _, o in dec)
    out.update(measure_contention(quick))
    return {key: float(out[key]) for key in KEYS}


def cores_here() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


OVER_PER_CORE = 4
"""``contention_over`` is measured with this many processes per core."""
MAX_CONTENTION_PROCS = 64
"""At most this many processes at once (on a large machine: a subset of its cores)."""


def _mix(quick: bool) -> Callable[[], None]:
    """A rank's compute-bound work: RS FFT parity and decoding, a 250-row GF product."""
    from mpi_coded.codes import rs_fft
    from mpi_coded.fields import get_field

    rng = np.random.default_rng(1)
    f = get_field("gf2^16")
    n, k, v = (540, 360, 360) if quick else (2700, 1800, 1800)
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
    """A rank's memory-bound work (:data:`mpi_coded.codes.work.MEMORY_BOUND`): a parity
    server's encoding in the paper's BDC ``T = 1000`` and ``T = 3000`` (``[I; Cauchy]``
    partitions of 9 coded rows of 6, of 3 of 2): gathers of rows of ``A`` and one-row
    products over all partitions.  Measured here, 9 ranks on 2 cores inflate its CPU
    seconds about as much as the same jobs' reducers (1.3-1.45x, from the reduce's wall
    time and the reducers' own seconds); a decoding of the same code's partitions in one
    process, on values that stay in cache, much less (1.1x), so it is not part of the mix."""
    from mpi_coded.coded.code import build_code
    from mpi_coded.coded.placement import build_placement
    from mpi_coded.coded.schemes import coded_params
    from mpi_coded.fields import get_field

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
compute-bound and the memory-bound kernels (:data:`mpi_coded.codes.work.MEMORY_BOUND`)."""

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


CONTENTION_TIMEOUT = 300.0
"""Seconds :func:`measure_contention` waits for the processes of one mix (their setup and
every run) before giving up on it (factors 1.0, with a warning)."""


def _contention(mix: str, cores: int, quick: bool) -> tuple[float, float]:
    """``(full, over)``: the mean CPU seconds of a run of ``mix`` (:data:`MIXES`) in each
    of ``cores`` and of ``OVER_PER_CORE x cores`` processes computing at once, over
    one process's alone (:func:`_worker`; CPU seconds: what the sharing of the cores does
    not explain)."""
    import multiprocessing

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


def measure_contention(quick: bool = False) -> dict[str, float]:
    """How much slower a rank computes when others compute beside it, beyond its share of
    the cores, for each of :data:`MIXES`: the CPU seconds of each process with one process
    per core (``contention_cores``) and with :data:`OVER_PER_CORE` per core
    (``contention_over``) over those of one process alone, for the compute-bound mix;
    ``contention_cores_memory``, ``contention_over_memory`` for the memory-bound one.  The
    caches and the memory bus are shared, and time slices of oversubscribed ranks evict
    each other's data.  1.0 where processes cannot be forked (then measure it by running a
    job)."""
    import multiprocessing

    keys = {"compute": ("contention_cores", "contention_over"),
            "memory": ("contention_cores_memory", "contention_over_memory")}
    out = {key: 1.0 for pair in keys.values() for key in pair}
    if "fork" not in multiprocessing.get_all_start_methods():
        return out
    cores = min(cores_here(), MAX_CONTENTION_PROCS // OVER_PER_CORE)
    for mix, (k_cores, k_over) in keys.items():
        try:
            full, over = _contention(mix, cores, quick)
        except Exception as exc:  # a worker died or timed out (memory?): not measured
            warnings.warn(f"calibration: contention of the {mix} mix not measured ({exc!r}); "
                          f"{k_cores} and {k_over} set to 1.0", stacklevel=2)
            continue
        out[k_cores] = max(1.0, full)
        out[k_over] = max(1.0, over)
    return out


def write(table: Mapping[str, float], path: str | Path) -> dict[str, Any]:
    """Write the calibration file; returns what was written."""
    doc = {"version": VERSION, "host": platform.node(), "cpu_count": os.cpu_count(),
           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "seconds_per_op": {k: float(table[k]) for k in KEYS}}
    try:
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        raise ConfigError("out", f"cannot write the calibration file: {exc.strerror}",
                          str(path)) from None
    return doc


def load(path: str | Path) -> dict[str, float]:
    """The table of a calibration file; ConfigError (``calibration``) if it is not one."""
    p = Path(path)
    require(p.is_file(), "calibration", "must be an existing calibration file", str(path))
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError("calibration", f"not a JSON calibration file: {exc}",
                          str(path)) from None
    version = doc.get("version") if isinstance(doc, dict) else None
    require(version == VERSION, "calibration",
            f"is a version {version} file; this model reads version {VERSION} "
            "(run mpi-coded model --calibrate again)", str(path))
    table = doc.get("seconds_per_op") if isinstance(doc, dict) else None
    require(isinstance(table, dict), "calibration", "has no seconds_per_op table", str(path))
    assert isinstance(table, dict)
    for key in KEYS:
        val = table.get(key)
        least, rule = (1.0, ">= 1") if key.startswith("contention") else (0.0, ">= 0")
        require(isinstance(val, (int, float)) and not isinstance(val, bool)
                and math.isfinite(val) and val >= least, "calibration",
                f"seconds_per_op.{key} must be a number {rule}", val)
    return {k: float(table[k]) for k in KEYS}


def runtime_field(params: Any) -> str:
    """The field the runtime would use for ``params`` (``auto`` resolved by its scheme)."""
    return str(params.field_name)


def slowdown(active: int, cores: int | None, table: Mapping[str, float] | None = None,
             memory: float = 0.0) -> float:
    """How many times longer one core's second of work takes with ``active`` servers
    computing on ``cores`` cores: their share of the cores (``active / cores`` when they
    outnumber them) times the measured contention (``contention_cores`` when they fill the
    cores, the larger of both beyond), of the compute-bound and the memory-bound kernels
    weighted by ``memory``, the work's share of memory-bound seconds
    (:func:`mpi_coded.codes.work.memory_share`); 1 with a core each (``cores=None``) or
    alone."""
    if cores is None or active <= 1:
        return 1.0

    def kappa(suffix: str) -> tuple[float, float]:
        full = seconds(f"contention_cores{suffix}", table)
        return full, max(full, seconds(f"contention_over{suffix}", table))

    (c_full, c_over), (m_full, m_over) = kappa(""), kappa("_memory")
    if active <= cores:
        return (1.0 - memory) * c_full + memory * m_full
    return active / cores * ((1.0 - memory) * c_over + memory * m_over)


def shared_wall(seconds_each: Sequence[float], cores: int | None,
                table: Mapping[str, float] | None = None,
                background: Sequence[float] = (), memory: Sequence[float] = (),
                background_memory: Sequence[float] = ()) -> float:
    """Wall time until the last of ``seconds_each`` (one core's seconds of each server
    computing at once) ends, the servers still computing sharing ``cores`` cores equally
    (processor sharing, each slowed by :func:`slowdown` with its share of memory-bound
    seconds, ``memory[i]``, 0 if not given); ``background``: work of other ranks competing
    for the cores meanwhile (``background_memory``: its memory-bound shares), whose end is
    not waited for; ``cores=None``: a core each (the longest of ``seconds_each``)."""
    fg = [(float(t), float(memory[i]) if i < len(memory) else 0.0)
          for i, t in enumerate(seconds_each) if t > 0]
    if not fg:
        return 0.0
    if cores is None:
        return max(t for t, _ in fg)
    bg = [(float(t), float(background_memory[i]) if i < len(background_memory) else 0.0)
          for i, t in enumerate(background) if t > 0]
    left = [t for t, _ in fg + bg]
    share = [m for _, m in fg + bg]
    is_fg = [True] * len(fg) + [False] * len(bg)
    clock = 0.0
    while any(f and w > 0 for f, w in zip(is_fg, left)):
        active = [i for i, w in enumerate(left) if w > 0]
        slow = {i: slowdown(len(active), cores, table, share[i]) for i in active}
        first = min(active, key=lambda i: left[i] * slow[i])  # the next one to end
        step = left[first] * slow[first]  # wall seconds until it ends
        clock += step
        for i in active:
            left[i] = 0.0 if i == first else max(0.0, left[i] - step / slow[i])
    return clock


@dataclass
class JobWork:
    """The priced work of a job (:func:`job_work`): per server, its encoding and its map;
    per finishing order, each reducer's reduce (gathering its decode values, decoding,
    sending its outputs)."""

    encode: list[CodeWork]
    map: list[list[Work]]
    reduce: list[list[CodeWork]]
    stopped: list[list[int]]
    """Per finishing order, the servers told to stop their map (not finishers)."""
    chunks: int = CodedJob.chunks

    def seconds(self, table: Mapping[str, float] | None, cores: int | None
                ) -> dict[str, Any]:
        enc = [w.seconds(table) for w in self.encode]
        enc_mem = [memory_share(w.work, table) for w in self.encode]
        mp = [price(w, table) for w in self.map]
        mp_mem = [memory_share(w, table) for w in self.map]
        reds = [[w.seconds(table) for w in order] for order in self.reduce]
        reds_mem = [[memory_share(w.work, table) for w in order] for order in self.reduce]
        # a server told to stop finishes its current map chunk (half a chunk left, on
        # average) while the reducers decode
        walls = [shared_wall(r, cores, table, [mp[s] / self.chunks / 2 for s in stop],
                             r_mem, [mp_mem[s] for s in stop])
                 for r, r_mem, stop in zip(reds, reds_mem, self.stopped)]
        wall = {"encode": shared_wall(enc, cores, table, memory=enc_mem),
                "map": shared_wall(mp, cores, table, memory=mp_mem),
                "reduce": sum(walls) / len(walls)}
        wall["total"] = sum(wall.values())
        per = {"encode": max(enc), "map": max(mp),
               "reduce": sum(max(r) for r in reds) / len(reds)}
        return {"per_server": per, "wall": wall,
                "encoder": _names(w.algorithms for w in self.encode),
                "decoder": _names(w.algorithms for r in self.reduce for w in r)}


def _names(books: Any) -> str:
    seen: set[str] = set()
    for book in books:
        seen.update(book)
    return algorithm_names(algorithm_mask(seen))


def job_work(params: Any, field: str | None = None, orders: int = 3, seed: int = 0,
             chunks: int = CodedJob.chunks) -> JobWork | None:
    """Every call of the job's encode (per server) and reduce (per reducer, for ``orders``
    seeded random finishing orders), from the job's own code and placement (module
    docstring); the map in ``chunks`` pieces; None for a code that does not list its work
    (lt).  Decoding is priced as in a job's first repetition: a server's code caches the
    inverses of the erasure patterns it met, so later repetitions of a short-partition code
    (whose decoding the inverses dominate) can be cheaper than predicted."""
    from mpi_coded.coded.code import build_code
    from mpi_coded.coded.exchange import reducer_batches
    from mpi_coded.coded.mapend import map_end
    from mpi_coded.coded.placement import build_placement
    from mpi_coded.coded.shuffle import shuffle_plan
    from mpi_coded.fields import get_field

    p = params
    f = get_field(field or runtime_field(p))
    code = build_code(p, f)
    if not isinstance(code, PartitionCode):
        return None
    pl = build_placement(p)
    encode = [code.encode_work(pl.stored_rows(s), p.n) for s in range(p.K)]
    mp = [_map_work(f.name, len(pl.stored_rows(s)), p.n, p.N, chunks) for s in range(p.K)]
    rng = np.random.default_rng(seed)
    reduce: list[list[CodeWork]] = []
    stopped: list[list[int]] = []
    for _ in range(max(1, orders)):
        end = map_end(pl, [int(s) for s in rng.permutation(p.K)])
        plan = shuffle_plan(pl, end)
        stopped.append([s for s in range(p.K) if s not in end.finishers])
        per: list[CodeWork] = []
        for red in plan.reducers:
            w = red.out_stop - red.out_start
            cw = code.decode_work(red.decode_rows, w)
            # gathering the decode values (one call per batch), sending the outputs
            cw.work.extend([W.copy(2 * len(red.decode_rows) * w), W.copy(p.m * w),
                            *[W.call() for _ in range(reducer_batches(red, pl))]])
            per.append(cw)
        reduce.append(per)
    return JobWork(encode, mp, reduce, stopped, chunks)


def _map_work(field: str, rows: int, n: int, N: int, chunks: int) -> list[Work]:
    """A server's map as the runtime runs it: ``chunks`` products of consecutive rows
    (each packs ``X`` again)."""
    cuts = map_chunk_cuts(rows, chunks)
    work: list[Work] = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        work += W.map_product(field, int(b - a), n, N) if b > a else []
    return work


def phase_seconds(params: Any, table: Mapping[str, float] | None = None,
                  field: str | None = None) -> dict[str, Any]:
    """One server's seconds per phase by the operation counts alone (no placement): the
    fallback of :func:`predict_seconds` for codes that do not list their work (lt).

    ``encode``: the stored rows (sparse rows, three products each); ``map``:
    ``rows n N`` products; ``reduce``: not priced (0).  Returns also ``encoder`` and
    ``decoder``.
    """
    p = params
    f = field or runtime_field(p)
    mm = f"{f}_matmul" if f != "float64" else "gf2^8_matmul"
    rows = float(p.mu_eff * p.m)
    out: dict[str, Any] = {"map": rows * p.n * p.N * seconds(mm, table),
                           "encode": rows * p.n * 3 * seconds(mm, table), "reduce": 0.0,
                           "encoder": "generator", "decoder": None}
    return out


def predict_seconds(params: Any, table: Mapping[str, float] | None = None,
                    cores: int | None = None, field: str | None = None,
                    orders: int = 3) -> dict[str, Any]:
    """Seconds per phase (module docstring): ``per_server`` (the slowest server's own
    seconds) and ``wall`` with ``cores`` cores shared by the servers computing at once
    (encode: all ``K``; map: all ``K``; reduce: the reducers); ``cores=None``: a core per
    server (a cluster), so ``wall`` is the slowest server's seconds.  ``encoder`` and
    ``decoder`` name the algorithms the runtime's code runs."""
    c = None if cores is None else max(1, int(cores))
    jw = job_work(params, field, orders)
    if jw is not None:
        out = jw.seconds(table, c)
    else:
        per = phase_seconds(params, table, field)
        K = params.K
        wall = {ph: shared_wall([per[ph]] * K, c, table) for ph in ("encode", "map", "reduce")}
        wall["total"] = sum(wall.values())
        out = {"per_server": {ph: per[ph] for ph in ("encode", "map", "reduce")},
               "wall": wall, "encoder": per["encoder"], "decoder": per["decoder"]}
    out.update(cores=params.K if c is None else c, field=field or runtime_field(params))
    return out
