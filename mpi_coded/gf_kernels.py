"""Matrix products over GF(2^8) and GF(2^16) on plain unsigned-integer arrays.

Elements are uint8 (GF(2^8)) or uint16 (GF(2^16)) words in the polynomial basis of galois's
default irreducible polynomials, 0x11d and 0x1002d (:data:`POLYS`).  :func:`gf_matmul` picks one
of three numba kernels per shape with a small measured cost model
(:func:`mpi_coded.gf_costs.choose`, numba-free):

``sliced``
    Bit-sliced product with Four Russians tables.  Multiplying by a fixed ``c`` is GF(2)-linear,
    an ``l x l`` bit matrix ``M(c)``: bit-plane ``p`` of ``c * b[k, :]`` is the XOR of the
    bit-planes ``r`` of ``b[k, :]`` for which row ``p`` of ``M(c)`` has bit ``r`` set.  ``b``'s
    rows are packed 64 columns to a uint64 word per bit-plane, and for each ``k`` a table holds
    all 256 XOR combinations of 8 planes; ``out[i, :] ^= a[i, k] * b[k, :]`` then costs ``l``
    (GF(2^8)) or ``2 l`` (GF(2^16)) table rows of ``ceil(n / 64)`` words instead of ``n`` scalar
    products.  Rows of one or two words keep their accumulators in registers; wider rows use a
    vectorised word loop.  ``sliced_t`` is the same on ``(b^T a^T)^T``, packing ``a``'s rows
    instead, when ``m`` is the wider side (e.g. map products with few output columns).
``direct``
    Scalar table products along ``b``'s rows: the row ``MT[a[i, k]]`` of the 256 x 256
    multiplication table gathered at ``b[k, :]`` for GF(2^8); ``EXP[LOG[a] + LOG[b]]`` with a
    zero-padded ``EXP`` (branch-free zeros) for GF(2^16).  Best when both ``m`` and ``n`` are
    small, and for matrix-vector products (a specialised one-column kernel).

Kernels are compiled ``nogil`` without ``parallel`` threads (MPI ranks already fill the cores),
and cached on disk when numba finds a writable cache directory (else compiled per process);
:func:`warm_up` compiles or loads them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

from mpi_coded.gf_costs import choose as _choose
from mpi_coded.gf_costs import product_ns as product_ns  # the kernels' estimate, here too
from mpi_coded.gf_costs import words as _words
from mpi_coded.gf_tables import DTYPES, POLYS, tables

__all__ = ["POLYS", "gf_matmul", "gf_matvec", "jit", "product_ns", "tables", "warm_up"]

_DTYPES = DTYPES  # tables, dtypes and polynomials: mpi_coded.gf_tables

_F = TypeVar("_F", bound=Callable[..., Any])


def jit(func: _F) -> _F:
    """``numba.njit(nogil=True)``, with an on-disk cache when numba can locate one."""
    try:
        return cast(_F, numba.njit(nogil=True, cache=True)(func))
    except Exception:  # no writable cache location: compile per process instead
        return cast(_F, numba.njit(nogil=True)(func))


# --------------------------------------------------------------------------------------------
# bit-slicing: pack / unpack

_B = np.uint64(255)


@jit
def _transpose8(x: np.uint64) -> np.uint64:  # pragma: no cover - numba
    """Transpose an 8 x 8 bit matrix held in a word: bit ``8 i + j`` goes to bit ``8 j + i``."""
    t = (x ^ (x >> np.uint64(7))) & np.uint64(0x00AA00AA00AA00AA)
    x = x ^ t ^ (t << np.uint64(7))
    t = (x ^ (x >> np.uint64(14))) & np.uint64(0x0000CCCC0000CCCC)
    x = x ^ t ^ (t << np.uint64(14))
    t = (x ^ (x >> np.uint64(28))) & np.uint64(0x00000000F0F0F0F0)
    return x ^ t ^ (t << np.uint64(28))  # type: ignore[no-any-return]


@jit
def _pack(b: np.ndarray, n_planes: int, n_words: int) -> np.ndarray:  # pragma: no cover - numba
    """Bit-planes of ``b`` (k, n): bit ``s`` of ``out[k, r, w]`` is bit ``r`` of ``b[k, 64 w + s]``.

    ``n_words >= ceil(n / 64)`` words per row; the words past the data stay zero.
    Eight columns at a time: their low (and high) bytes form an 8 x 8 bit matrix whose transpose
    holds one byte of each bit-plane.
    """
    k, n = b.shape
    out = np.zeros((k, n_planes, n_words), dtype=np.uint64)
    for kk in range(k):
        for g in range((n + 7) >> 3):
            j0 = g * 8
            lo = np.uint64(0)
            hi = np.uint64(0)
            for s in range(min(8, n - j0)):
                v = np.uint64(b[kk, j0 + s])
                lo |= (v & _B) << np.uint64(8 * s)
                hi |= (v >> np.uint64(8)) << np.uint64(8 * s)
            w = g >> 3
            shift = np.uint64(8 * (g & 7))
            y = _transpose8(lo)
            for r in range(8):
                out[kk, r, w] |= ((y >> np.uint64(8 * r)) & _B) << shift
            if n_planes == 16:
                y = _transpose8(hi)
                for r in range(8):
                    out[kk, 8 + r, w] |= ((y >> np.uint64(8 * r)) & _B) << shift
    return out


@jit
def _unpack(acc: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - numba
    """Inverse of :func:`_pack`: bit-planes ``acc`` (m, l, W) into the words ``out`` (m, n)."""
    m, n_planes, _ = acc.shape
    n = out.shape[1]
    for i in range(m):
        for g in range((n + 7) >> 3):
            j0 = g * 8
            w = g >> 3
            shift = np.uint64(8 * (g & 7))
            lo = np.uint64(0)
            hi = np.uint64(0)
            for p in range(8):
                lo |= ((acc[i, p, w] >> shift) & _B) << np.uint64(8 * p)
            y = _transpose8(lo)
            if n_planes == 16:
                for p in range(8):
                    hi |= ((acc[i, 8 + p, w] >> shift) & _B) << np.uint64(8 * p)
                z = _transpose8(hi)
                for s in range(min(8, n - j0)):
                    sh = np.uint64(8 * s)
                    out[i, j0 + s] = ((y >> sh) & _B) | (((z >> sh) & _B) << np.uint64(8))
            else:
                for s in range(min(8, n - j0)):
                    out[i, j0 + s] = (y >> np.uint64(8 * s)) & _B


@jit
def _lowbit() -> np.ndarray:  # pragma: no cover - numba
    """Index of the lowest set bit of 1..255 (entry 0 unused)."""
    out = np.zeros(256, dtype=np.int64)
    for idx in range(1, 256):
        r = 0
        while not (idx >> r) & 1:
            r += 1
        out[idx] = r
    return out


@jit
def _build(
    planes: np.ndarray, k0: int, kc: int, tab: np.ndarray, low: np.ndarray
) -> None:  # pragma: no cover - numba
    """Four Russians tables for rows ``k0 .. k0 + kc`` of ``b``.

    ``tab[kk, h, idx]`` is the XOR of the bit-planes ``8 h + r`` of ``b[k0 + kk]`` over the set
    bits ``r`` of ``idx``.  The 15 + 15 entries with one nibble zero are chained (each one XOR
    away from an earlier entry); the other 225 combine one of each, independently of each other.
    """
    n_words = planes.shape[2]
    for kk in range(kc):
        pl = planes[k0 + kk]
        for h in range(tab.shape[1]):
            t = tab[kk, h]
            if n_words == 1:  # as below, unrolled: short word loops cost more than the XORs
                t[0, 0] = 0
                for j in range(1, 16):
                    prev = j & (j - 1)
                    t[j, 0] = t[prev, 0] ^ pl[8 * h + low[j], 0]
                    t[16 * j, 0] = t[16 * prev, 0] ^ pl[8 * h + 4 + low[j], 0]
                for hi in range(16, 256, 16):
                    x = t[hi, 0]
                    for lo in range(1, 16):
                        t[hi + lo, 0] = x ^ t[lo, 0]
                continue
            if n_words == 2:
                t[0, 0] = 0
                t[0, 1] = 0
                for j in range(1, 16):
                    prev = j & (j - 1)
                    r = 8 * h + low[j]
                    t[j, 0] = t[prev, 0] ^ pl[r, 0]
                    t[j, 1] = t[prev, 1] ^ pl[r, 1]
                    t[16 * j, 0] = t[16 * prev, 0] ^ pl[r + 4, 0]
                    t[16 * j, 1] = t[16 * prev, 1] ^ pl[r + 4, 1]
                for hi in range(16, 256, 16):
                    x = t[hi, 0]
                    y = t[hi, 1]
                    for lo in range(1, 16):
                        t[hi + lo, 0] = x ^ t[lo, 0]
                        t[hi + lo, 1] = y ^ t[lo, 1]
                continue
            for w in range(n_words):
                t[0, w] = 0
            for j in range(1, 16):
                prev = j & (j - 1)
                r = 8 * h + low[j]
                for w in range(n_words):
                    t[j, w] = t[prev, w] ^ pl[r, w]
                    t[16 * j, w] = t[16 * prev, w] ^ pl[r + 4, w]
            for hi in range(16, 256, 16):
                for lo in range(1, 16):
                    for w in range(n_words):
                        t[hi + lo, w] = t[hi, w] ^ t[lo, w]


# --------------------------------------------------------------------------------------------
# GF(2^8) kernels


@jit
def _sliced8(
    a: np.ndarray, planes: np.ndarray, rows: np.ndarray, chunk: int
) -> np.ndarray:  # pragma: no cover - numba
    """Bit-planes (m, 8, W) of ``a @ b`` over GF(2^8); ``planes = _pack(b, 8)`` (k, 8, W).

    Rows of one or two words keep their 8 or 16 accumulators in registers (spelled out: numba
    cannot keep a small array in registers); wider rows loop over words in memory, vectorised.
    """
    m, k = a.shape
    n_words = planes.shape[2]
    low = _lowbit()
    acc = np.zeros((m, 8, n_words), dtype=np.uint64)
    tab = np.empty((chunk, 1, 256, n_words), dtype=np.uint64)
    for k0 in range(0, k, chunk):
        kc = min(chunk, k - k0)
        _build(planes, k0, kc, tab, low)
        if n_words == 1:
            for i in range(m):
                x0 = acc[i, 0, 0]
                x1 = acc[i, 1, 0]
                x2 = acc[i, 2, 0]
                x3 = acc[i, 3, 0]
                x4 = acc[i, 4, 0]
                x5 = acc[i, 5, 0]
                x6 = acc[i, 6, 0]
                x7 = acc[i, 7, 0]
                for kk in range(kc):
                    r = rows[a[i, k0 + kk]]
                    t = tab[kk, 0]
                    x0 ^= t[r[0], 0]
                    x1 ^= t[r[1], 0]
                    x2 ^= t[r[2], 0]
                    x3 ^= t[r[3], 0]
                    x4 ^= t[r[4], 0]
                    x5 ^= t[r[5], 0]
                    x6 ^= t[r[6], 0]
                    x7 ^= t[r[7], 0]
                acc[i, 0, 0] = x0
                acc[i, 1, 0] = x1
                acc[i, 2, 0] = x2
                acc[i, 3, 0] = x3
                acc[i, 4, 0] = x4
                acc[i, 5, 0] = x5
                acc[i, 6, 0] = x6
                acc[i, 7, 0] = x7
        elif n_words == 2:
            for i in range(m):
                x0 = acc[i, 0, 0]
                y0 = acc[i, 0, 1]
                x1 = acc[i, 1, 0]
                y1 = acc[i, 1, 1]
                x2 = acc[i, 2, 0]
                y2 = acc[i, 2, 1]
                x3 = acc[i, 3, 0]
                y3 = acc[i, 3, 1]
                x4 = acc[i, 4, 0]
                y4 = acc[i, 4, 1]
                x5 = acc[i, 5, 0]
                y5 = acc[i, 5, 1]
                x6 = acc[i, 6, 0]
                y6 = acc[i, 6, 1]
                x7 = acc[i, 7, 0]
                y7 = acc[i, 7, 1]
                for kk in range(kc):
                    c = a[i, k0 + kk]
                    t = rows[c, 0]
                    x0 ^= tab[kk, 0, t, 0]
                    y0 ^= tab[kk, 0, t, 1]
                    t = rows[c, 1]
                    x1 ^= tab[kk, 0, t, 0]
                    y1 ^= tab[kk, 0, t, 1]
                    t = rows[c, 2]
                    x2 ^= tab[kk, 0, t, 0]
                    y2 ^= tab[kk, 0, t, 1]
                    t = rows[c, 3]
                    x3 ^= tab[kk, 0, t, 0]
                    y3 ^= tab[kk, 0, t, 1]
                    t = rows[c, 4]
                    x4 ^= tab[kk, 0, t, 0]
                    y4 ^= tab[kk, 0, t, 1]
                    t = rows[c, 5]
                    x5 ^= tab[kk, 0, t, 0]
                    y5 ^= tab[kk, 0, t, 1]
                    t = rows[c, 6]
                    x6 ^= tab[kk, 0, t, 0]
                    y6 ^= tab[kk, 0, t, 1]
                    t = rows[c, 7]
                    x7 ^= tab[kk, 0, t, 0]
                    y7 ^= tab[kk, 0, t, 1]
                acc[i, 0, 0] = x0
                acc[i, 0, 1] = y0
                acc[i, 1, 0] = x1
                acc[i, 1, 1] = y1
                acc[i, 2, 0] = x2
                acc[i, 2, 1] = y2
                acc[i, 3, 0] = x3
                acc[i, 3, 1] = y3
                acc[i, 4, 0] = x4
                acc[i, 4, 1] = y4
                acc[i, 5, 0] = x5
                acc[i, 5, 1] = y5
                acc[i, 6, 0] = x6
                acc[i, 6, 1] = y6
                acc[i, 7, 0] = x7
                acc[i, 7, 1] = y7
        else:
            for i in range(m):
                for kk in range(kc):
                    c = a[i, k0 + kk]
                    for p in range(8):
                        t = rows[c, p]
                        for w in range(n_words):
                            acc[i, p, w] ^= tab[kk, 0, t, w]
    return acc


@jit
def _direct8(a: np.ndarray, b: np.ndarray, mt: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``a @ b`` over GF(2^8) by table rows: ``out[i, :] ^= MT[a[i, k]][b[k, :]]``."""
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.uint8)
    for i in range(m):
        for kk in range(k):
            c = a[i, kk]
            if c == 0:
                continue
            row = mt[c]
            for j in range(n):
                out[i, j] ^= row[b[kk, j]]
    return out


@jit
def _matvec8(a: np.ndarray, x: np.ndarray, mt: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``a @ x`` over GF(2^8) for a vector ``x``; four rows at a time share ``MT[x[k]]``."""
    m, k = a.shape
    out = np.zeros(m, dtype=np.uint8)
    m4 = m - m % 4
    for i in range(0, m4, 4):
        s0 = np.uint8(0)
        s1 = np.uint8(0)
        s2 = np.uint8(0)
        s3 = np.uint8(0)
        for kk in range(k):
            row = mt[x[kk]]
            s0 ^= row[a[i, kk]]
            s1 ^= row[a[i + 1, kk]]
            s2 ^= row[a[i + 2, kk]]
            s3 ^= row[a[i + 3, kk]]
        out[i] = s0
        out[i + 1] = s1
        out[i + 2] = s2
        out[i + 3] = s3
    for i in range(m4, m):
        s = np.uint8(0)
        for kk in range(k):
            s ^= mt[x[kk], a[i, kk]]
        out[i] = s
    return out


# --------------------------------------------------------------------------------------------
# GF(2^16) kernels


@jit
def _sliced16(
    a: np.ndarray, planes: np.ndarray, rows: np.ndarray, chunk: int
) -> np.ndarray:  # pragma: no cover - numba
    """Bit-planes (m, 16, W) of ``a @ b`` over GF(2^16); ``planes = _pack(b, 16)`` (k, 16, W).

    Row ``p`` of M(c) is ``rows[0, c & 255, p] ^ rows[1, c >> 8, p]``; its low byte indexes the
    table of planes 0-7, its high byte the table of planes 8-15.  Rows of one or two words do
    planes 0-7 then 8-15 with register accumulators; wider rows loop over words in memory.
    """
    m, k = a.shape
    n_words = planes.shape[2]
    low = _lowbit()
    acc = np.zeros((m, 16, n_words), dtype=np.uint64)
    tab = np.empty((chunk, 2, 256, n_words), dtype=np.uint64)
    for k0 in range(0, k, chunk):
        kc = min(chunk, k - k0)
        _build(planes, k0, kc, tab, low)
        if n_words == 1:
            for i in range(m):
                for q in range(0, 16, 8):
                    x0 = acc[i, q, 0]
                    x1 = acc[i, q + 1, 0]
                    x2 = acc[i, q + 2, 0]
                    x3 = acc[i, q + 3, 0]
                    x4 = acc[i, q + 4, 0]
                    x5 = acc[i, q + 5, 0]
                    x6 = acc[i, q + 6, 0]
                    x7 = acc[i, q + 7, 0]
                    for kk in range(kc):
                        c = a[i, k0 + kk]
                        ra = rows[0, c & 255]
                        rb = rows[1, c >> 8]
                        tl = tab[kk, 0]
                        th = tab[kk, 1]
                        t = ra[q] ^ rb[q]
                        x0 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 1] ^ rb[q + 1]
                        x1 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 2] ^ rb[q + 2]
                        x2 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 3] ^ rb[q + 3]
                        x3 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 4] ^ rb[q + 4]
                        x4 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 5] ^ rb[q + 5]
                        x5 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 6] ^ rb[q + 6]
                        x6 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                        t = ra[q + 7] ^ rb[q + 7]
                        x7 ^= tl[t & 255, 0] ^ th[t >> 8, 0]
                    acc[i, q, 0] = x0
                    acc[i, q + 1, 0] = x1
                    acc[i, q + 2, 0] = x2
                    acc[i, q + 3, 0] = x3
                    acc[i, q + 4, 0] = x4
                    acc[i, q + 5, 0] = x5
                    acc[i, q + 6, 0] = x6
                    acc[i, q + 7, 0] = x7
        elif n_words == 2:
            for i in range(m):
                for q in range(0, 16, 8):
                    x0 = acc[i, q, 0]
                    y0 = acc[i, q, 1]
                    x1 = acc[i, q + 1, 0]
                    y1 = acc[i, q + 1, 1]
                    x2 = acc[i, q + 2, 0]
                    y2 = acc[i, q + 2, 1]
                    x3 = acc[i, q + 3, 0]
                    y3 = acc[i, q + 3, 1]
                    x4 = acc[i, q + 4, 0]
                    y4 = acc[i, q + 4, 1]
                    x5 = acc[i, q + 5, 0]
                    y5 = acc[i, q + 5, 1]
                    x6 = acc[i, q + 6, 0]
                    y6 = acc[i, q + 6, 1]
                    x7 = acc[i, q + 7, 0]
                    y7 = acc[i, q + 7, 1]
                    for kk in range(kc):
                        c = a[i, k0 + kk]
                        ra = rows[0, c & 255]
                        rb = rows[1, c >> 8]
                        t = ra[q] ^ rb[q]
                        u = t & 255
                        v = t >> 8
                        x0 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y0 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 1] ^ rb[q + 1]
                        u = t & 255
                        v = t >> 8
                        x1 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y1 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 2] ^ rb[q + 2]
                        u = t & 255
                        v = t >> 8
                        x2 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y2 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 3] ^ rb[q + 3]
                        u = t & 255
                        v = t >> 8
                        x3 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y3 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 4] ^ rb[q + 4]
                        u = t & 255
                        v = t >> 8
                        x4 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y4 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 5] ^ rb[q + 5]
                        u = t & 255
                        v = t >> 8
                        x5 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y5 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 6] ^ rb[q + 6]
                        u = t & 255
                        v = t >> 8
                        x6 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y6 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                        t = ra[q + 7] ^ rb[q + 7]
                        u = t & 255
                        v = t >> 8
                        x7 ^= tab[kk, 0, u, 0] ^ tab[kk, 1, v, 0]
                        y7 ^= tab[kk, 0, u, 1] ^ tab[kk, 1, v, 1]
                    acc[i, q, 0] = x0
                    acc[i, q, 1] = y0
                    acc[i, q + 1, 0] = x1
                    acc[i, q + 1, 1] = y1
                    acc[i, q + 2, 0] = x2
                    acc[i, q + 2, 1] = y2
                    acc[i, q + 3, 0] = x3
                    acc[i, q + 3, 1] = y3
                    acc[i, q + 4, 0] = x4
                    acc[i, q + 4, 1] = y4
                    acc[i, q + 5, 0] = x5
                    acc[i, q + 5, 1] = y5
                    acc[i, q + 6, 0] = x6
                    acc[i, q + 6, 1] = y6
                    acc[i, q + 7, 0] = x7
                    acc[i, q + 7, 1] = y7
        else:
            for i in range(m):
                for kk in range(kc):
                    c = a[i, k0 + kk]
                    if c == 0:
                        continue
                    ra = rows[0, c & 255]
                    rb = rows[1, c >> 8]
                    for p in range(16):
                        t = ra[p] ^ rb[p]
                        u = t & 255
                        v = t >> 8
                        for w in range(n_words):
                            acc[i, p, w] ^= tab[kk, 0, u, w] ^ tab[kk, 1, v, w]
    return acc


@jit
def _direct16(
    a: np.ndarray, b: np.ndarray, log: np.ndarray, exp: np.ndarray
) -> np.ndarray:  # pragma: no cover - numba
    """``a @ b`` over GF(2^16) by ``EXP[LOG[a] + LOG[b]]`` (zero-padded, branch-free)."""
    m, k = a.shape
    n = b.shape[1]
    lb = np.empty((k, n), dtype=np.int32)
    for kk in range(k):
        for j in range(n):
            lb[kk, j] = log[b[kk, j]]
    out = np.zeros((m, n), dtype=np.uint16)
    for i in range(m):
        for kk in range(k):
            c = a[i, kk]
            if c == 0:
                continue
            la = log[c]
            for j in range(n):
                out[i, j] ^= exp[la + lb[kk, j]]
    return out


@jit
def _matvec16(
    a: np.ndarray, x: np.ndarray, log: np.ndarray, exp: np.ndarray
) -> np.ndarray:  # pragma: no cover - numba
    """``a @ x`` over GF(2^16) for a vector ``x``."""
    m, k = a.shape
    lx = np.empty(k, dtype=np.int32)
    for kk in range(k):
        lx[kk] = log[x[kk]]
    out = np.zeros(m, dtype=np.uint16)
    for i in range(m):
        s = np.uint16(0)
        for kk in range(k):
            s ^= exp[log[a[i, kk]] + lx[kk]]
        out[i] = s
    return out


# --------------------------------------------------------------------------------------------
# dispatch

def _chunk(n_words: int, degree: int) -> int:
    """How many rows of ``b`` share a table buffer (measured: 4, 16 for one-word GF(2^8) rows,
    fewer when the tables would pass 256 KiB)."""
    if degree == 8 and n_words == 1:
        return 16
    per_k = (256 if degree == 8 else 512) * n_words * 8
    return int(max(1, min(4, (256 * 1024) // per_k)))


def _sliced(a: np.ndarray, b: np.ndarray, degree: int, chunk: int | None = None) -> np.ndarray:
    """``a @ b`` (2-D, contiguous) by the bit-sliced kernel, packing ``b``'s columns."""
    t = tables(degree)
    planes = _pack(b, degree, _words(b.shape[1]))
    n_words = planes.shape[2]
    if chunk is None:
        chunk = _chunk(n_words, degree)
    if degree == 8:
        acc = _sliced8(a, planes, t.rows[0], chunk)
    else:
        acc = _sliced16(a, planes, t.rows, chunk)
    out = np.empty((a.shape[0], b.shape[1]), dtype=_DTYPES[degree])
    _unpack(acc, out)
    return out


def _matmul2d(a: np.ndarray, b: np.ndarray, degree: int, kernel: str | None = None) -> np.ndarray:
    """``a @ b`` for contiguous 2-D operands of the field dtype; ``kernel`` forces a kernel."""
    m, k = a.shape
    n = b.shape[1]
    dtype = _DTYPES[degree]
    if m == 0 or n == 0 or k == 0:
        return np.zeros((m, n), dtype=dtype)
    t = tables(degree)
    if kernel is None:
        kernel = _choose(m, k, n, degree)
    if kernel == "direct":
        if n == 1:
            x = np.ascontiguousarray(b[:, 0])
            if degree == 8:
                return _matvec8(a, x, t.mul_table).reshape(m, 1)
            return _matvec16(a, x, t.log, t.exp).reshape(m, 1)
        if degree == 8:
            return _direct8(a, b, t.mul_table)  # type: ignore[no-any-return]
        return _direct16(a, b, t.log, t.exp)  # type: ignore[no-any-return]
    if kernel == "sliced":
        return _sliced(a, b, degree)
    if kernel == "sliced_t":
        out_t = _sliced(np.ascontiguousarray(b.T), np.ascontiguousarray(a.T), degree)
        return np.ascontiguousarray(out_t.T)
    raise ValueError(f"unknown kernel {kernel!r}")


def _as_field(x: np.ndarray, degree: int, name: str) -> np.ndarray:
    """``x`` as a contiguous array of the field's dtype, checking the values fit."""
    dtype = _DTYPES[degree]
    arr = np.asarray(x)
    if arr.dtype != dtype:
        if arr.dtype.kind not in "ui" and arr.size:
            raise TypeError(f"{name}: expected an unsigned integer array, got {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= (1 << degree)):
            raise ValueError(f"{name}: values outside GF(2^{degree})")
        arr = arr.astype(dtype)
    if not arr.flags.writeable:  # numba compiles read-only arrays separately: copy instead
        return arr.copy()
    return np.ascontiguousarray(arr)


def gf_matmul(a: np.ndarray, b: np.ndarray, degree: int) -> np.ndarray:
    """``a @ b`` over GF(2^degree); inputs and output are uint words.

    ``degree`` is 8 (uint8 words) or 16 (uint16 words), with galois's default polynomials
    (:data:`POLYS`).  Operands are 1-D or 2-D with numpy's ``matmul`` shape rules: (m, k) @ (k, n)
    -> (m, n), (m, k) @ (k,) -> (m,), (k,) @ (k, n) -> (n,), (k,) @ (k,) -> 0-d.  Returns a plain
    ``np.ndarray`` of the field's dtype.
    """
    if degree not in POLYS:
        raise ValueError(f"GF(2^{degree}) is not supported; degree must be 8 or 16")
    a = _as_field(a, degree, "a")
    b = _as_field(b, degree, "b")
    if a.ndim not in (1, 2) or b.ndim not in (1, 2):
        raise ValueError(f"gf_matmul takes 1-D or 2-D operands, got {a.shape} @ {b.shape}")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[1] != b2.shape[0]:
        raise ValueError(f"matmul: mismatched inner dimensions {a.shape} @ {b.shape}")
    out = _matmul2d(a2, b2, degree)
    if a.ndim == 1 and b.ndim == 1:
        return out.reshape(())
    if a.ndim == 1:
        return out.reshape(-1)
    if b.ndim == 1:
        return out.reshape(-1)
    return out


def gf_matvec(a: np.ndarray, x: np.ndarray, degree: int) -> np.ndarray:
    """``a @ x`` over GF(2^degree) for a 2-D ``a`` and a 1-D ``x`` (see :func:`gf_matmul`)."""
    if np.ndim(a) != 2 or np.ndim(x) != 1:
        raise ValueError("gf_matvec takes a 2-D matrix and a 1-D vector")
    return gf_matmul(a, x, degree)


def warm_up(degree: int) -> None:
    """Build the tables and JIT-compile (or load from the cache) every kernel of GF(2^degree)."""
    if degree not in POLYS:
        raise ValueError(f"GF(2^{degree}) is not supported; degree must be 8 or 16")
    dtype = _DTYPES[degree]
    rng = np.random.default_rng(0)
    a = rng.integers(0, 1 << degree, size=(2, 3), dtype=dtype)
    for n in (1, 2, 70, 130):  # direct: matvec, matrix; sliced: 1, 2 and 3 words per row
        b = rng.integers(0, 1 << degree, size=(3, n), dtype=dtype)
        _matmul2d(a, b, degree, "direct" if n <= 2 else "sliced")
        if n == 2:
            _matmul2d(a, b, degree, "sliced")
