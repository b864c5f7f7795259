"""Predicting every phase of a coded job in seconds with a cost table (docs/theory.md (C.4)).

The prediction prices the work the runtime really does (:func:`job_work`): the job's own
code and placement are built (pure, no MPI), and every server's encoding and every
reducer's decoding is listed call by call by the code's ``encode_work`` /
``decode_work`` -- the same decisions its ``encode`` / ``decode`` take (which sub-code,
FFT or generator path per partition, which partitions share an erasure pattern), with the
shuffle plan's decode rows for a few seeded finishing orders -- and each call is priced
with the table (:func:`mpi_coded.codes.work.price`).  The code's path choices are the
runtime's: taken by the cost rule of :mod:`mpi_coded.codes.rs_sub` with the table the
runtime decides with (:data:`mpi_coded.codes.prices.DEFAULT`; it reads no calibration),
pricing the very lists the model then prices with the calibration.

A phase ends when its slowest server ends.  When the ``K`` servers share a machine's
``cores`` (``mpiexec -n 10`` on a laptop), they share the cores while they compute: the
phase lasts the makespan of processor sharing (:func:`shared_wall`: while ``a > cores``
servers compute, each runs at ``cores / a`` of a core), each server slowed further by
the contention of its kind of work (:func:`slowdown`: memory-bound kernels, which time
slices of other ranks evict from the caches, much more than compute-bound ones; both
measured by :func:`mpi_coded.analysis.calibration.contention.measure_contention`).
``cores=None``: a core per server (a cluster).  During the reduce the servers told to stop
their map finish their current chunk (half a chunk on average) and compete for the cores.
Not modelled: the messages of the phase orders and answers (a few ms), the master's own
work, first touches of memory (the ranks pre-touch their heap:
:mod:`mpi_coded.runtime.core.memory`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpi_coded.coded.code import (
    CodeWork,
    PartitionCode,
    algorithm_mask,
    algorithm_names,
    build_code,
)
from mpi_coded.coded.exchange import reducer_batches
from mpi_coded.coded.job import CodedJob, map_chunk_cuts
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.codes import work as W
from mpi_coded.codes.prices import Contention, CostTable
from mpi_coded.codes.rs_sub import choose_encoder
from mpi_coded.codes.work import Table, Work, memory_share, price
from mpi_coded.fields import get_field


def runtime_field(params: Any) -> str:
    """The field the runtime would use for ``params`` (``auto`` resolved by its scheme)."""
    return str(params.field_name)


def slowdown(active: int, cores: int | None, table: Table = None,
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
    t = CostTable.of(table)
    c_full, m_full = t.factor(Contention.CORES), t.factor(Contention.CORES_MEMORY)
    c_over = max(c_full, t.factor(Contention.OVER))
    m_over = max(m_full, t.factor(Contention.OVER_MEMORY))
    if active <= cores:
        return (1.0 - memory) * c_full + memory * m_full
    return active / cores * ((1.0 - memory) * c_over + memory * m_over)


def shared_wall(seconds_each: Sequence[float], cores: int | None, table: Table = None,
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
    tab = CostTable.of(table)
    bg = [(float(t), float(background_memory[i]) if i < len(background_memory) else 0.0)
          for i, t in enumerate(background) if t > 0]
    left = [t for t, _ in fg + bg]
    share = [m for _, m in fg + bg]
    is_fg = [True] * len(fg) + [False] * len(bg)
    clock = 0.0
    while any(f and w > 0 for f, w in zip(is_fg, left)):
        active = [i for i, w in enumerate(left) if w > 0]
        slow = {i: slowdown(len(active), cores, tab, share[i]) for i in active}
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

    def seconds(self, table: Table, cores: int | None) -> dict[str, Any]:
        t = CostTable.of(table)
        enc = [w.seconds(t) for w in self.encode]
        enc_mem = [memory_share(w.work, t) for w in self.encode]
        mp = [price(w, t) for w in self.map]
        mp_mem = [memory_share(w, t) for w in self.map]
        reds = [[w.seconds(t) for w in order] for order in self.reduce]
        reds_mem = [[memory_share(w.work, t) for w in order] for order in self.reduce]
        # a server told to stop finishes its current map chunk (half a chunk left, on
        # average) while the reducers decode
        walls = [shared_wall(r, cores, t, [mp[s] / self.chunks / 2 for s in stop],
                             r_mem, [mp_mem[s] for s in stop])
                 for r, r_mem, stop in zip(reds, reds_mem, self.stopped)]
        wall = {"encode": shared_wall(enc, cores, t, memory=enc_mem),
                "map": shared_wall(mp, cores, t, memory=mp_mem),
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


SPARSE_DEGREE = 3
"""Nonzeros per coded row :func:`phase_seconds` prices a code that is not MDS with (lt)."""


def phase_seconds(params: Any, table: Table = None, field: str | None = None,
                  chunks: int = CodedJob.chunks) -> dict[str, Any]:
    """One server's seconds per phase by the operation counts alone (no placement): the
    fallback of :func:`predict_seconds` for codes that do not list their work (lt).

    ``map``: its ``mu_eff m`` stored rows times ``X`` in ``chunks`` products.  ``encode``:
    the stored rows by the encoder the cost rule of :mod:`mpi_coded.codes.rs_sub` picks
    (:func:`~mpi_coded.codes.rs_sub.choose_encoder`, with ``table``): for an MDS code over
    gf2^16 with parity, per partition it touches, the FFT parity or one generator product
    of its share of parity rows, whichever prices lower; otherwise ``generator``, the only
    path (a code that is not MDS: sparse rows of :data:`SPARSE_DEGREE` nonzeros; an MDS
    code: its parity rows times the ``k`` message rows).  ``reduce``: not priced (0).
    Returns also ``encoder`` and ``decoder`` (None: not priced)."""
    p = params
    f = field or runtime_field(p)
    t = CostTable.of(table)
    rows = int(p.mu_eff * p.m)
    n_code, k = int(p.code_length), int(p.code_dimension)
    mds = bool(p.spec.mds_code)
    if not mds:
        encoder, listing = "generator", W.product(f, rows, SPARSE_DEGREE, p.n)
        touched = 1
    else:
        touched = max(1, min(int(p.partitions), rows))
        parity = max(0, round(rows * (n_code - k) / n_code / touched))
        if f == "gf2^16" and n_code > k:
            encoder, listing = choose_encoder(n_code, k, parity, p.n, t)
        elif parity > 0:
            encoder, listing = "generator", W.product(f, parity, k, p.n)
        else:
            encoder, listing = "systematic", []
    return {"map": price(_map_work(f, rows, p.n, p.N, chunks), t),
            "encode": price(listing, t) * touched, "reduce": 0.0,
            "encoder": encoder, "decoder": None}


@dataclass(frozen=True)
class PhaseSeconds:
    """Seconds of the encode, map and reduce phases (and their ``total``)."""

    encode: float
    map: float
    reduce: float

    @property
    def total(self) -> float:
        return self.encode + self.map + self.reduce

    def to_dict(self, total: bool = True) -> dict[str, float]:
        return {"encode": self.encode, "map": self.map, "reduce": self.reduce,
                **({"total": self.total} if total else {})}

    @classmethod
    def of(cls, d: Mapping[str, float]) -> PhaseSeconds:
        return cls(float(d["encode"]), float(d["map"]), float(d["reduce"]))


@dataclass(frozen=True)
class PredictedSeconds:
    """What :func:`predict_seconds` returns (:meth:`to_dict`: its JSON object)."""

    per_server: PhaseSeconds
    """The slowest server's own seconds per phase (no ``total`` in the dict)."""
    wall: PhaseSeconds
    """Wall seconds with ``cores`` cores shared by the servers computing at once."""
    encoder: str | None
    decoder: str | None
    cores: int
    field: str

    def to_dict(self) -> dict[str, Any]:
        return {"per_server": self.per_server.to_dict(total=False),
                "wall": self.wall.to_dict(), "encoder": self.encoder,
                "decoder": self.decoder, "cores": self.cores, "field": self.field}


def predict_seconds(params: Any, table: Table = None, cores: int | None = None,
                    field: str | None = None, orders: int = 3) -> PredictedSeconds:
    """Seconds per phase (module docstring): ``per_server`` (the slowest server's own
    seconds) and ``wall`` with ``cores`` cores shared by the servers computing at once
    (encode: all ``K``; map: all ``K``; reduce: the reducers); ``cores=None``: a core per
    server (a cluster), so ``wall`` is the slowest server's seconds.  ``encoder`` and
    ``decoder`` name the algorithms the runtime's code runs."""
    c = None if cores is None else max(1, int(cores))
    jw = job_work(params, field, orders)
    if jw is not None:
        out = jw.seconds(table, c)
        per, wall = PhaseSeconds.of(out["per_server"]), PhaseSeconds.of(out["wall"])
        encoder, decoder = out["encoder"], out["decoder"]
    else:
        ops = phase_seconds(params, table, field)
        K = params.K
        per = PhaseSeconds.of(ops)
        wall = PhaseSeconds(*(shared_wall([ops[ph]] * K, c, table)
                              for ph in ("encode", "map", "reduce")))
        encoder, decoder = ops["encoder"], ops["decoder"]
    return PredictedSeconds(per, wall, encoder, decoder, params.K if c is None else c,
                            field or runtime_field(params))
