"""What the master and every server of the coded job build identically.

Every rank derives the same placement, code and data from the job and its
seed (docs/theory.md, B.1: the servers know ``A``, ``Psi`` and ``x_1..x_N`` at the
start),
so nothing but phase orders, map-end decisions, shuffle payloads and decoded
outputs crosses the wire.
"""

from __future__ import annotations

import math
import resource
import sys
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from mpi_coded.analysis.loads import strategy_levels
from mpi_coded.coded.code import Code, algorithm_mask, build_code
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.placement import Placement, build_placement
from mpi_coded.errors import ConfigError
from mpi_coded.fields import Field, get_field
from mpi_coded.runtime.core import records
from mpi_coded.runtime.core.records import StatsLayout
from mpi_coded.runtime.core.wire import WireError

# the coded job's statistics records: the core ones plus the algorithms that ran (a bit
# mask of mpi_coded.coded.code.ALGORITHMS), the rank's peak resident memory so far and its
# host's link counters at the phase's start and end (records.LINK); the shuffle's also the
# bcast group communicators it created and the seconds that took, and the messages a dead
# sender never completed (fault_tolerance = "ulfm")
ENCODE_STATS = StatsLayout("encode stats", (*records.ENCODE_DONE.fields, "encoder", "peak_rss_mb",
                                       *records.LINK))
MAP_STATS = StatsLayout("map stats", (*records.MAP_DONE.fields, "peak_rss_mb", *records.LINK))
SHUFFLE_STATS = StatsLayout("shuffle stats", (*records.SHUFFLE_DONE.fields, "groups_created",
                                         "groups_s", "messages_missing", "peak_rss_mb",
                                         *records.LINK))
REDUCE_STATS = StatsLayout("reduce stats", (*records.REDUCE_DONE.fields, "decoder", "peak_rss_mb",
                                       *records.LINK))

VERIFY_EXACT_OPS = 4 * 10**9
"""Above this many products (``m n N``) the master checks ``Y = A X`` over GF by
Freivalds' projections (:data:`VERIFY_PROJECTIONS` random rows) instead of the full product."""
VERIFY_PROJECTIONS = 4


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (``ru_maxrss``: KiB on Linux, bytes on
    macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1 << 20) if sys.platform == "darwin" else rss / 1024


def mask(book: dict[str, int]) -> float:
    """The algorithms of a code's ``encoders`` / ``decoders`` book as a record value."""
    return float(algorithm_mask(book))


@dataclass
class Setup:
    job: CodedJob
    field: Field
    placement: Placement
    code: Code
    A: np.ndarray  # m x n
    X: np.ndarray  # n x N: the vectors x_1..x_N as columns


PREFAULT_CAP = 512 << 20
"""At most this many bytes are pre-touched per rank (:func:`working_bytes`)."""


def working_bytes(job: CodedJob, field: Field, rows: int, copies: int = 12) -> int:
    """Heap a rank pre-touches in setup (:func:`mpi_coded.runtime.core.memory.prefault`):
    ``copies`` times its largest per-repetition array (a server: ``rows`` coded rows of
    ``max(n, N)`` values; it holds its coded rows, its map output, the values it receives in
    the shuffle with their masks, its decode values and the FFT scratch, about twelve such
    arrays; the master: the ``m x N`` outputs it receives and the decoded ``Y`` it assembles
    and verifies, three), at most :data:`PREFAULT_CAP`."""
    p = job.params
    item = np.dtype(field.dtype).itemsize
    return int(min(PREFAULT_CAP, copies * max(rows, 1) * max(p.n, p.N) * item))


def build_setup(job: CodedJob) -> Setup:
    p = job.params
    field = get_field(p.field_name)
    placement = build_placement(p, job.load_assignment())
    code = build_code(p, field)
    rng = np.random.default_rng([job.seed, 0xA])
    A = field.random((p.m, p.n), rng)
    X = field.random((p.n, p.N), rng)
    return Setup(job, field, placement, code, A, X)


class Verifier:
    """Checks the decoded ``Y`` against ``A X``: exactly (the full product, computed once),
    or over GF for large jobs by Freivalds' test, ``R Y == (R A) X`` for
    :data:`VERIFY_PROJECTIONS` seeded random rows ``R``; a wrong column passes one row with
    probability ``1/|F|``, all of them with ``|F|^-4`` (``2^-64`` over GF(2^16)).
    :meth:`max_error` counts wrong entries (exact) or wrong columns (Freivalds)."""

    def __init__(self, setup: Setup) -> None:
        p = setup.job.params
        self.field = setup.field
        self.exact = (not setup.field.exact) or p.m * p.n * p.N <= VERIFY_EXACT_OPS
        self.method = "exact" if self.exact else f"freivalds({VERIFY_PROJECTIONS})"
        if self.exact:
            self.want = setup.field.matmul(setup.A, setup.X)
        else:
            rng = np.random.default_rng([setup.job.seed, 0xF4E1])
            self.R = setup.field.random((VERIFY_PROJECTIONS, p.m), rng)
            self.want = setup.field.matmul(setup.field.matmul(self.R, setup.A), setup.X)

    def max_error(self, y: np.ndarray) -> float:
        if self.exact:
            return self.field.max_error(y, self.want)
        got = self.field.matmul(self.R, y)
        return float(np.count_nonzero(np.any(got != self.want, axis=0)))


def multicast_padding(p: CodedParams, rows_per_batch: int) -> Fraction:
    """Zero values the multicast segments carry per shuffle beyond ``v / j`` (docs/theory.md
    (B.3), padding), at ``p``'s effective parameters with batches of ``rows_per_batch``
    rows: level ``j`` sends ``C(q, j + 1) (j + 1)`` messages of ``ceil(v / j)`` values,
    ``v = C(K - q, p - j) rows_per_batch N / q``."""
    ul = p.spec.reference_load(p.K, p.q, p.mu)
    q, rep, w = p.wait_for, p.replication, p.outputs_per_reducer
    pad = Fraction(0)
    for j in strategy_levels(rep, ul.s_q, ul.strategy):
        if j < 2:
            continue
        v = math.comb(p.K - q, rep - j) * rows_per_batch * w
        pad += math.comb(q, j + 1) * (j + 1) * (Fraction(-(-v // j)) - Fraction(v, j))
    return pad


def padding_warning(p: CodedParams, placement: Placement | None = None) -> str | None:
    """A warning when zero padding of the multicast segments makes the planned load exceed
    the analytic one by more than 5%, naming the smallest ``rows_per_batch`` that splits
    every segment evenly (None: no warning)."""
    del placement  # the padding follows from the parameters alone
    analytic = p.spec.paper_load(p)
    planned = analytic + multicast_padding(p, p.rows_per_batch) / (p.m * p.N)
    if analytic <= 0 or planned <= analytic * Fraction(105, 100):
        return None
    better = None
    for eta in range(1, 100_000):
        if multicast_padding(p, eta) != 0:
            continue
        try:
            p.spec.params(p.K, p.q, p.mu, eta, p.n, p.N, p.T, p.field)
        except ConfigError:
            continue
        better = eta
        break
    hint = (f"--rows-per-batch {better} splits every segment evenly" if better is not None
            else "no rows-per-batch below 100000 splits every segment evenly")
    return (f"rows_per_batch: zero padding of the multicast segments makes the planned load "
            f"{planned} ({float(planned):.4f}) exceed the analytic load {analytic} "
            f"({float(analytic):.4f}) by {float(planned / analytic - 1):.0%}; {hint}")


def encode_map_end(end: MapEnd) -> np.ndarray:
    """MAP_END payload: ``[Q..., -1, extra..., -1, unicast_rows...]``."""
    return np.array([*end.Q, -1, *end.extra, -1, *end.unicast_rows], dtype=np.int64)


def decode_map_end(arr: np.ndarray) -> MapEnd:
    """The :class:`MapEnd` of a MAP_END payload; WireError unless it has two ``-1``
    separators."""
    vals = [int(x) for x in arr]
    if vals.count(-1) != 2:
        raise WireError(f"MAP_END payload {vals} does not have the shape "
                        "[Q..., -1, extra..., -1, unicast_rows...]")
    a = vals.index(-1)
    b = vals.index(-1, a + 1)
    return MapEnd(tuple(vals[:a]), tuple(vals[a + 1:b]), tuple(vals[b + 1:]))
