"""The work a code does, as a value: kernel calls the cost table prices (docs/theory.md (C.4)).

A :class:`Work` is one kernel call with its operation count: a GF product on the blocked
or the scalar (``thin``) kernel, an inverse, the RS FFT encoder or decoder, a copy of
field elements, or the fixed Python cost of one sub-code call; its kernel is a
:class:`~mpi_coded.codes.prices.Kernel`.  Codes report the calls they would make
(``encode_work`` / ``decode_work`` of :class:`~mpi_coded.codes.cauchy.CauchyCode`,
:class:`~mpi_coded.codes.rs_sub.RSSubCode` and :class:`~mpi_coded.coded.code.PartitionCode`)
from the very decisions their ``encode`` / ``decode`` take, and the runtime's cost rule
(:mod:`mpi_coded.codes.rs_sub`) takes those decisions by pricing the same lists, so the
calibrated model prices the work that really runs, as the runtime priced it.

:func:`price` turns a list of calls into seconds with one
:class:`~mpi_coded.codes.prices.CostTable` (:data:`~mpi_coded.codes.prices.DEFAULT`, or this
machine's from ``mpi-coded model --calibrate``; a plain mapping with the file's string keys
is read by :meth:`~mpi_coded.codes.prices.CostTable.of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from mpi_coded.codes.prices import (
    DEFAULT,
    MEMORY_BOUND,
    CostTable,
    FieldOp,
    Kernel,
    Price,
    parse_key,
)
from mpi_coded.gf_costs import product_ns

Table = CostTable | Mapping[str, float] | Mapping[Price, float] | None
"""What :func:`price` and the cost rules take: a :class:`CostTable`, a mapping of some of
its keys (the rest from :data:`~mpi_coded.codes.prices.DEFAULT`), or None (the default)."""

DEFAULT_SECONDS: Mapping[str, float] = MappingProxyType(DEFAULT.to_dict())
""":data:`mpi_coded.codes.prices.DEFAULT` with the file's string keys."""

THIN_ROWS = 8
"""Products with at most this many rows run on the scalar kernel: ``thin`` seconds per
multiply-add and ``thin_operand`` per element of the right operand."""


@dataclass(frozen=True)
class Work:
    """One kernel call: ``kernel`` (a :class:`~mpi_coded.codes.prices.Kernel`; a file key
    such as ``"rs_fft_decode"`` is parsed) and its operation count ``ops``."""

    kernel: Kernel
    ops: float

    def __post_init__(self) -> None:
        if not isinstance(self.kernel, Kernel):
            key = parse_key(self.kernel)
            if not isinstance(key, Kernel):
                raise KeyError(f"{key} is a contention factor, not a kernel")
            object.__setattr__(self, "kernel", key)


def memory_bound(kernel: Kernel | str) -> bool:
    """Whether ``kernel`` belongs to :data:`~mpi_coded.codes.prices.MEMORY_BOUND`."""
    key = parse_key(kernel)
    return key in MEMORY_BOUND


def seconds(kernel: Kernel | str, table: Table = None) -> float:
    """Seconds per operation of ``kernel`` in ``table``."""
    key = parse_key(kernel)
    t = CostTable.of(table)
    return t.factor(key) if not isinstance(key, Kernel) else t.seconds(key)


def price(work: Iterable[Work], table: Table = None) -> float:
    """Seconds of ``work``: the sum of ``ops x seconds(kernel)``."""
    t = CostTable.of(table)
    return sum(w.ops * t.seconds(w.kernel) for w in work)


def memory_share(work: Iterable[Work], table: Table = None) -> float:
    """The fraction of the seconds of ``work`` spent in memory-bound kernels (0 for none)."""
    items = list(work)
    t = CostTable.of(table)
    total = price(items, t)
    if total <= 0:
        return 0.0
    return price((w for w in items if w.kernel in MEMORY_BOUND), t) / total


def call() -> Work:
    """The fixed cost of one sub-code call (the Python around a kernel)."""
    return Work(Kernel.CALL, 1.0)


def place() -> Work:
    """Stacking one partition's values for a grouped decoding and placing its outputs (the
    Python loop of :meth:`mpi_coded.coded.code.PartitionCode.decode`; the elements moved
    are a :func:`copy`)."""
    return Work(Kernel.PLACE, 1.0)


def copy(elements: float) -> Work:
    """Moving ``elements`` field elements (a gather, a concatenation, a scatter)."""
    return Work(Kernel.COPY, float(elements))


def _degree(field: str) -> int:
    return 16 if field == "gf2^16" else 8


def product(field: str, rows: int, inner: int, cols: int, blocked: bool = False
            ) -> list[Work]:
    """``(rows x inner) @ (inner x cols)`` over ``field`` (``gf2^8``, ``gf2^16``; float64
    is priced as gf2^8), and its kernel call: at most :data:`THIN_ROWS` rows (unless
    ``blocked``) run on the scalar kernel, priced per multiply-add (``thin``) and per
    element of the right operand (``thin_operand``: loaded once for all rows); larger
    products on the blocked kernels, priced per multiply-add (``matmul``) and per
    nanosecond the GF kernels estimate for the kernel they pick
    (``product``, :func:`mpi_coded.gf_kernels.product_ns`).  ``blocked``: price a short
    product as a blocked one (the runtime's rule for a decoding's product, as it has
    always priced it)."""
    macs = float(rows) * inner * cols
    if rows <= THIN_ROWS and not blocked:
        return [Work(Kernel.gf(field, FieldOp.THIN), macs),
                Work(Kernel.gf(field, FieldOp.THIN_OPERAND), float(inner) * cols), call()]
    return [Work(Kernel.gf(field, FieldOp.MATMUL), macs),
            Work(Kernel.gf(field, FieldOp.PRODUCT),
                 _product_ns(rows, inner, cols, _degree(field))), call()]


def map_product(field: str, rows: int, n: int, N: int) -> list[Work]:
    """One chunk of a server's map, ``(rows x n) @ (n x N)``: as :func:`product`, but a
    product of more than :data:`THIN_ROWS` rows is priced per nanosecond of the kernels'
    estimate on its own calibration (``map``, measured at the paper's chunk shape): its
    packed right operand (all of ``X``) outgrows the caches, which the estimate, fitted on
    cache-sized operands, does not see (measured ratio: docs/benchmarks.md)."""
    if rows <= THIN_ROWS:
        return product(field, rows, n, N)
    return [Work(Kernel.gf(field, FieldOp.MAP), _product_ns(rows, n, N, _degree(field))),
            call()]


def _product_ns(m: int, k: int, n: int, degree: int) -> float:
    """:func:`mpi_coded.gf_costs.product_ns`: the kernels' own estimate, without the
    kernels (numba: about a second of a rank's start, which a float64 job never needs)."""
    return product_ns(m, k, n, degree)


def inverse(field: str, k: int) -> list[Work]:
    """A ``k x k`` inverse over ``field`` (float64 priced as gf2^8): Gauss-Jordan's ``k``
    pivot steps, each a fixed cost (``inverse_step``) and ``k^2`` element updates
    (``inverse``, per ``k^3``)."""
    return [Work(Kernel.gf(field, FieldOp.INVERSE), float(k) ** 3),
            Work(Kernel.gf(field, FieldOp.INVERSE_STEP), float(k))]
