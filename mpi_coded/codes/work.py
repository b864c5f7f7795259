"""The work a code does, as a value: kernel calls the delay model can price (docs/theory.md (C.4)).

A :class:`Work` is one kernel call with its operation count: a GF product on the blocked
(``matmul``) or the scalar (``thin``) kernel, an inverse, the RS FFT encoder or decoder, a
copy of field elements, or the fixed Python cost of one sub-code call.  Codes report the
calls they would make (``encode_work`` / ``decode_work`` of
:class:`~mpi_coded.codes.cauchy.CauchyCode`, :class:`~mpi_coded.codes.rs_sub.RSSubCode`
and :class:`~mpi_coded.coded.code.PartitionCode`) from the very decisions their
``encode`` / ``decode`` take, so the calibrated model prices the work that really runs.

:func:`price` turns a list of calls into seconds with a table of seconds per operation
(:data:`DEFAULT_SECONDS`, or this machine's from ``mpi-coded model --calibrate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from mpi_coded.gf_kernels import product_ns

DEFAULT_SECONDS: Mapping[str, float] = MappingProxyType({
    "gf2^8_matmul": 0.35e-9,
    "gf2^16_matmul": 1.0e-9,
    "gf2^8_thin": 2.0e-9,
    "gf2^16_thin": 1.0e-8,
    "gf2^8_thin_operand": 0.0,
    "gf2^16_thin_operand": 0.0,
    "gf2^8_inverse": 8.0e-8,
    "gf2^16_inverse": 1.0e-7,
    "gf2^8_inverse_step": 5.0e-5,
    "gf2^16_inverse_step": 5.0e-5,
    "gf2^8_product": 1.0e-9,
    "gf2^16_product": 1.0e-9,
    "gf2^8_map": 1.3e-9,
    "gf2^16_map": 1.3e-9,
    "rs_fft_encode": 5.0e-9,
    "rs_fft_decode": 5.0e-9,
    "call": 2.0e-5,
    "place": 5.0e-6,
    "copy": 1.0e-9,
    "contention_cores": 1.0,
    "contention_over": 1.0,
    "contention_cores_memory": 1.0,
    "contention_over_memory": 1.0,
})
"""Seconds per operation of each kernel: per multiply-add of a product (``matmul`` for
many rows: the cost rules of :mod:`mpi_coded.codes.rs_sub`; ``thin`` for at most
:data:`THIN_ROWS` rows on the scalar kernel, plus ``thin_operand`` per element of its right
operand, which each output row reuses), per nanosecond of the kernels' own estimate
(``product``: :func:`mpi_coded.gf_kernels.product_ns`, what :func:`product` prices; ``map``
the same for the map's wide products, :func:`map_product`), per
``k^3`` and per pivot step of an inverse (``inverse``, ``inverse_step``), per counted
operation of the RS FFT, per field element moved (``copy``), per sub-code ``call`` and per
partition whose values a decoding stacks and whose outputs it places (``place``); and
four factors (no unit), how much slower a rank computes beside others, for
compute-bound kernels (``contention_cores``, ``contention_over``) and for memory-bound ones
(``contention_cores_memory``, ``contention_over_memory``; :data:`MEMORY_BOUND`;
:func:`mpi_coded.analysis.calibration.slowdown`).
Defaults from a 2-core development machine (the scalar kernel priced per multiply-add only,
``thin_operand`` 0, as the runtime's cost rules in :mod:`mpi_coded.codes.rs_sub` have always
priced it); ``mpi-coded model --calibrate`` measures them here."""

MEMORY_BOUND = ("thin", "thin_operand", "copy", "call", "place", "inverse", "inverse_step")
"""Kernels (by the end of their key) whose speed depends on caches and memory more than on
arithmetic: the scalar product of a few rows, copies (gathers of rows), and -- though not
memory-bound in the strict sense -- the Python around short sub-codes (``call``,
``place``) and galois's small inverses.  Ranks sharing cores slow them down more than the
compute-bound kernels (the blocked products, the RS FFT): time slices of other ranks evict
their caches and two cores share the memory bus.  Measured here, 8 processes on 2 cores
(:func:`mpi_coded.analysis.calibration.measure_contention`): 1.15-1.4x the CPU seconds of
the paper's BDC ``T = 1000`` and ``3000`` encodings of a parity server, 1.03x for RS FFT
and blocked products."""


def memory_bound(kernel: str) -> bool:
    """Whether ``kernel`` belongs to :data:`MEMORY_BOUND`."""
    return any(kernel == k or kernel.endswith(f"_{k}") for k in MEMORY_BOUND)


def memory_share(work: Iterable[Work], table: Mapping[str, float] | None = None) -> float:
    """The fraction of the seconds of ``work`` spent in memory-bound kernels (0 for none)."""
    items = list(work)
    total = price(items, table)
    if total <= 0:
        return 0.0
    return price((w for w in items if memory_bound(w.kernel)), table) / total


THIN_ROWS = 8
"""Products with at most this many rows run on the scalar kernel: ``thin`` seconds per
multiply-add and ``thin_operand`` per element of the right operand."""


@dataclass(frozen=True)
class Work:
    """One kernel call: ``kernel`` (a key of the seconds table, e.g. ``gf2^16_matmul``,
    ``rs_fft_decode``, ``copy``, ``call``) and its operation count ``ops``."""

    kernel: str
    ops: float


def seconds(kernel: str, table: Mapping[str, float] | None = None) -> float:
    """Seconds per operation of ``kernel`` (from ``table`` if it has it)."""
    if table is not None and kernel in table:
        return float(table[kernel])
    return DEFAULT_SECONDS[kernel]


def price(work: Iterable[Work], table: Mapping[str, float] | None = None) -> float:
    """Seconds of ``work``: the sum of ``ops x seconds(kernel)``."""
    return sum(w.ops * seconds(w.kernel, table) for w in work)


def call() -> Work:
    """The fixed cost of one sub-code call (the Python around a kernel)."""
    return Work("call", 1.0)


def place() -> Work:
    """Stacking one partition's values for a grouped decoding and placing its outputs (the
    Python loop of :meth:`mpi_coded.coded.code.PartitionCode.decode`; the elements moved
    are a :func:`copy`)."""
    return Work("place", 1.0)


def copy(elements: float) -> Work:
    """Moving ``elements`` field elements (a gather, a concatenation, a scatter)."""
    return Work("copy", float(elements))


def product(field: str, rows: int, inner: int, cols: int) -> list[Work]:
    """``(rows x inner) @ (inner x cols)`` over ``field`` (``gf2^8``, ``gf2^16``; float64
    is priced as gf2^8): at most :data:`THIN_ROWS` rows run on the scalar kernel, priced per
    multiply-add (``thin``) and per element of the right operand (``thin_operand``: loaded
    once for all rows); larger products by the nanoseconds the GF kernels estimate for the
    kernel they pick (:func:`mpi_coded.gf_kernels.product_ns`), priced per nanosecond
    (``product``)."""
    f = field if field in ("gf2^8", "gf2^16") else "gf2^8"
    if rows <= THIN_ROWS:
        return [Work(f"{f}_thin", float(rows) * inner * cols),
                Work(f"{f}_thin_operand", float(inner) * cols), call()]
    return [Work(f"{f}_product", product_ns(rows, inner, cols, int(f[4:]))), call()]


def map_product(field: str, rows: int, n: int, N: int) -> list[Work]:
    """One chunk of a server's map, ``(rows x n) @ (n x N)``: as :func:`product`, but a
    product of more than :data:`THIN_ROWS` rows is priced per nanosecond of the kernels'
    estimate on its own calibration (``map``, measured at the paper's chunk shape): its
    packed right operand (all of ``X``) outgrows the caches, which the estimate, fitted on
    cache-sized operands, does not see (measured: 1.3x its seconds per estimated ns at
    ``(250, 6000, 6000)`` against ``(250, 4096, 1024)``)."""
    f = field if field in ("gf2^8", "gf2^16") else "gf2^8"
    if rows <= THIN_ROWS:
        return product(field, rows, n, N)
    return [Work(f"{f}_map", product_ns(rows, n, N, int(f[4:]))), call()]


def inverse(field: str, k: int) -> list[Work]:
    """A ``k x k`` inverse over ``field`` (float64 priced as gf2^8): Gauss-Jordan's ``k``
    pivot steps, each a fixed cost (``inverse_step``) and ``k^2`` element updates
    (``inverse``, per ``k^3``)."""
    f = field if field in ("gf2^8", "gf2^16") else "gf2^8"
    return [Work(f"{f}_inverse", float(k) ** 3), Work(f"{f}_inverse_step", float(k))]
