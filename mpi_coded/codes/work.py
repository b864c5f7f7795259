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
    "gf2^8_inverse": 8.0e-8,
    "gf2^16_inverse": 1.0e-7,
    "gf2^8_inverse_step": 5.0e-5,
    "gf2^16_inverse_step": 5.0e-5,
    "gf2^8_product": 1.0e-9,
    "gf2^16_product": 1.0e-9,
    "rs_fft_encode": 5.0e-9,
    "rs_fft_decode": 5.0e-9,
    "call": 2.0e-5,
    "copy": 1.0e-9,
    "contention_cores": 1.0,
    "contention_over": 1.0,
})
"""Seconds per operation of each kernel: per multiply-add of a product (``matmul`` for
many rows, ``thin`` for at most :data:`THIN_ROWS` rows on the scalar kernel: the cost rules
of :mod:`mpi_coded.codes.rs_sub`), per nanosecond of the kernels' own estimate
(``product``: :func:`mpi_coded.gf_kernels.product_ns`, what :func:`product` prices), per
``k^3`` and per pivot step of an inverse (``inverse``, ``inverse_step``), per counted
operation of the RS FFT, per field element moved (``copy``) and per sub-code ``call``; and
two factors (no unit), how much slower a rank computes beside others
(``contention_cores``, ``contention_over``: :func:`mpi_coded.analysis.calibration.slowdown`).
Defaults from a 2-core development machine; ``mpi-coded model --calibrate`` measures them here."""

THIN_ROWS = 8
"""Products with at most this many rows cost ``thin`` seconds per multiply-add."""


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


def copy(elements: float) -> Work:
    """Moving ``elements`` field elements (a gather, a concatenation, a scatter)."""
    return Work("copy", float(elements))


def product(field: str, rows: int, inner: int, cols: int) -> list[Work]:
    """``(rows x inner) @ (inner x cols)`` over ``field`` (``gf2^8``, ``gf2^16``; float64
    is priced as gf2^8): at most :data:`THIN_ROWS` rows run on the scalar kernel, priced per
    multiply-add (``thin``); larger products by the nanoseconds the GF kernels estimate for
    the kernel they pick (:func:`mpi_coded.gf_kernels.product_ns`), priced per nanosecond
    (``product``)."""
    f = field if field in ("gf2^8", "gf2^16") else "gf2^8"
    if rows <= THIN_ROWS:
        return [Work(f"{f}_thin", float(rows) * inner * cols), call()]
    return [Work(f"{f}_product", product_ns(rows, inner, cols, int(f[4:]))), call()]


def inverse(field: str, k: int) -> list[Work]:
    """A ``k x k`` inverse over ``field`` (float64 priced as gf2^8): Gauss-Jordan's ``k``
    pivot steps, each a fixed cost (``inverse_step``) and ``k^2`` element updates
    (``inverse``, per ``k^3``)."""
    f = field if field in ("gf2^8", "gf2^16") else "gf2^8"
    return [Work(f"{f}_inverse", float(k) ** 3), Work(f"{f}_inverse_step", float(k))]
