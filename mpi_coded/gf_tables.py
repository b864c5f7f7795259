"""GF(2^8) and GF(2^16) with numpy lookup tables alone: no JIT, nothing to compile.

Elements are uint8 / uint16 words in the polynomial basis of galois's default irreducible
polynomials (:data:`POLYS`), the same words as :mod:`mpi_coded.gf_kernels` and galois.  With
``exp[log[a] + log[b]] == a * b`` (:class:`Tables`, zeros included through a zero tail of
``exp``) every operation here is a few vectorised gathers and XORs:

* :func:`matmul`: ``out[i, j] = XOR_k exp[log a[i, k] + log b[k, j]]``, ``k`` taken in
  chunks so that the temporary stays small; ``m k n`` table lookups, against the bit-sliced
  kernels' far fewer word operations, so it is for small products (:data:`SMALL_WORK`);
* :func:`inv`: Gauss-Jordan elimination, one vectorised row update per pivot;
* :func:`reciprocal`: ``exp[(2^l - 1) - log a]``.

Why it exists: numba's first kernel (loading its cache included) and galois's first field
operation cost each process about 1 and 2 CPU seconds, paid by every rank of every job. A
job whose products are all small (:meth:`mpi_coded.fields.GFField.warm_up` with the job's
largest product) runs on these tables and never imports numba or galois; the results are the
field's, bit for bit (the inverse and the products are unique), which the tests check against
galois and the numba kernels.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["POLYS", "SMALL_WORK", "Tables", "inv", "matmul", "reciprocal", "tables"]

#: galois's default irreducible (primitive) polynomial of GF(2^degree), ``x`` primitive.
POLYS: dict[int, int] = {8: 0x11D, 16: 0x1002D}
DTYPES: dict[int, type[np.unsignedinteger[Any]]] = {8: np.uint8, 16: np.uint16}

SMALL_WORK = 1 << 18
"""The largest product (``m k n`` multiply-adds) a job may have and still run on the tables
alone (:meth:`mpi_coded.fields.GFField.warm_up`): at most a few milliseconds each here."""
_CHUNK = 1 << 16
"""Elements of :func:`matmul`'s temporary per chunk of ``k``."""


class Tables:
    """Lookup tables of GF(2^degree), built once per process with numpy.

    ``log`` (int32) / ``exp`` (field words): ``exp[log[a] + log[b]] == a * b`` for all ``a, b``,
    zeros included.  ``rows[h, c, p]``: row ``p`` of the bit matrix of "multiply by ``c << 8 h``"
    (bit ``r`` set iff bit ``p`` of ``(c << 8 h) * x^r`` is set); ``h`` is 0 only for GF(2^8),
    0 and 1 for GF(2^16), where the matrix of ``c`` is ``rows[0, c & 255] ^ rows[1, c >> 8]``
    since it is linear in ``c``.  ``mul_table``: the 256 x 256 products (GF(2^8) only).
    """

    def __init__(self, degree: int) -> None:
        if degree not in POLYS:
            raise ValueError(f"GF(2^{degree}) is not supported; degree must be 8 or 16")
        self.degree = degree
        order = 1 << degree
        poly = POLYS[degree]
        exp = np.zeros(order - 1, dtype=np.int64)
        x = 1
        for e in range(order - 1):
            exp[e] = x
            x <<= 1
            if x & order:
                x ^= poly
        if x != 1 or len(np.unique(exp)) != order - 1:
            raise AssertionError(f"x is not primitive modulo {poly:#x}")
        log = np.zeros(order, dtype=np.int64)
        log[exp] = np.arange(order - 1)
        # log[0] points past 2 (order - 2), the largest sum of two real logs, into a zero tail
        # of exp long enough for log[0] + log[0]: products with 0 need no branch.
        zlog = 2 * (order - 1)
        self.log = log.astype(np.int32)
        self.log[0] = zlog
        self.exp = np.zeros(2 * zlog + 2, dtype=DTYPES[degree])
        self.exp[:zlog] = np.concatenate([exp, exp])
        dtype = DTYPES[degree]
        n_rows = 256
        rows = np.zeros((2 if degree == 16 else 1, n_rows, degree), dtype=dtype)
        for half in range(rows.shape[0]):
            c = np.arange(n_rows, dtype=np.int64) << (8 * half)
            for r in range(degree):
                prod = self._mul(c, np.full_like(c, 1 << r))
                for p in range(degree):
                    rows[half, :, p] |= (((prod >> p) & 1) << r).astype(dtype)
        self.rows = rows
        if degree == 8:
            # full multiplication table MT[a, b] = a * b, 64 KiB
            a = np.repeat(np.arange(256, dtype=np.int64), 256)
            b = np.tile(np.arange(256, dtype=np.int64), 256)
            self.mul_table = self._mul(a, b).astype(np.uint8).reshape(256, 256)
        else:
            self.mul_table = np.zeros((0, 0), dtype=np.uint8)

    def _mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Elementwise product of int64 arrays (reference-grade, via the log tables)."""
        return self.exp[self.log[a] + self.log[b]].astype(np.int64)


@functools.cache
def tables(degree: int) -> Tables:
    """The (cached) lookup tables of GF(2^degree)."""
    return Tables(degree)


def matmul(a: np.ndarray, b: np.ndarray, degree: int) -> np.ndarray:
    """``a @ b`` over GF(2^degree) for 2-D word arrays ``(m, k) @ (k, n)``."""
    t = tables(degree)
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=DTYPES[degree])
    if not (m and n and k):
        return out
    la = t.log[a]
    lb = t.log[b]
    step = max(1, _CHUNK // (m * n))
    for j in range(0, k, step):
        prods = t.exp[la[:, j: j + step, None] + lb[None, j: j + step, :]]
        out ^= np.bitwise_xor.reduce(prods, axis=1)
    return out


def reciprocal(a: np.ndarray, degree: int) -> np.ndarray:
    """``1 / a`` elementwise; ZeroDivisionError if an element is 0."""
    t = tables(degree)
    arr = np.asarray(a)
    if np.any(arr == 0):
        raise ZeroDivisionError(f"GF(2^{degree}): 0 has no inverse")
    return t.exp[(1 << degree) - 1 - t.log[arr]]


def inv(a: np.ndarray, degree: int) -> np.ndarray:
    """The inverse of the square matrix ``a`` over GF(2^degree) (Gauss-Jordan);
    ``np.linalg.LinAlgError`` when it is singular, as galois raises."""
    t = tables(degree)
    k = a.shape[0]
    if a.ndim != 2 or a.shape[1] != k:
        raise np.linalg.LinAlgError(f"inverse of a non-square matrix of shape {a.shape}")
    dtype = DTYPES[degree]
    aug = np.concatenate([np.asarray(a, dtype=dtype), np.eye(k, dtype=dtype)], axis=1)
    top = (1 << degree) - 1
    for c in range(k):
        nonzero = np.flatnonzero(aug[c:, c])
        if not nonzero.size:
            raise np.linalg.LinAlgError(f"GF(2^{degree}) matrix of shape {a.shape} is singular")
        p = c + int(nonzero[0])
        if p != c:
            aug[[c, p]] = aug[[p, c]]
        scale = top - int(t.log[aug[c, c]])  # log of 1 / pivot
        aug[c] = t.exp[t.log[aug[c]] + scale]
        factors = aug[:, c].copy()
        factors[c] = 0  # every other row: row ^= factor * pivot row
        aug ^= t.exp[t.log[factors][:, None] + t.log[aug[c]][None, :]]
    return aug[:, k:].copy()
