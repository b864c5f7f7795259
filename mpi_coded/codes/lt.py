"""LT codes (docs/theory.md (B.5); the BDC paper, Sec. VI; Luby 2002).

Encoding ``C = Psi_LT A``: coded row ``i`` is ``sum_j Psi[i, j] A[j]`` over ``d_i``
distinct source rows chosen uniformly, ``d_i`` drawn from the robust Soliton
distribution (:func:`robust_soliton`), coefficients uniform nonzero in GF(2^l)
or, over float64, ``+-1`` (default: every peeling step divides by 1, so it
adds no rounding) or standard Gaussian.  A code is fully determined by
``(m, r, field, c, delta, seed)``: every rank builds the same one.

Decoding (:meth:`LTCode.decode`, :meth:`LTCode.decodable`) solves
``Psi_R z = y`` for the received rows ``R`` by peeling with inactivation:

1. symbolic peeling: while some unused row has exactly one unresolved column,
   that row resolves the column (all rows of degree one at once: a *wave*);
   when none has, the unresolved column occurring most often in the rows of
   least remaining degree is *inactivated* (treated as known) and peeling goes on;
2. numeric back-substitution, wave by wave, of every resolved column as an
   affine function ``z_c = alpha_c + beta_c z_I`` of the ``u`` inactivated
   columns ``z_I`` (over GF(2^l) vectorised: one gather, one multiply and one
   segmented sum per wave);
3. the unused rows give the small dense system ``M z_I = b``, solved by
   Gaussian elimination (``u x u`` inverse over GF(2^l), least squares over
   float64); then ``z = alpha + beta z_I``.

Step 1 (every field) and step 2 over float64 run in the numba kernels of
:mod:`mpi_coded.codes.lt_kernels` (:meth:`LTCode.warm_up` compiles them); the
numpy versions :func:`_peel_reference` and :func:`_propagate_reference` (the
latter also step 2 over GF(2^l)) are their reference: the same waves, the same
inactivated columns and, over float64, bitwise the same ``alpha``, ``beta``
and ``M``.

This is exact: the rows decode iff ``Psi_R`` has full column rank iff ``M``
has rank ``u``, so :meth:`LTCode.decodable` answers "do these rows suffice"
exactly, and more rows never hurt.  :meth:`LTCode.deficit` says by how much they fall
short: ``rank Psi_R = (m - u) + rank M``, so at least ``u - rank M`` more rows are needed,
which lets :func:`shortest_decoding_prefix` jump instead of bisecting.
``inactivation=False`` gives plain peeling (the decoder Luby's analysis is about).

Field elements are plain ndarrays of :func:`mpi_coded.fields.get_field`'s dtype
(the polynomial basis of galois's default polynomials 0x11d and 0x1002d).

Runtime use (scheme ``lt``, :mod:`mpi_coded.coded.schemes.lt`):
:meth:`LTCode.encode` (a server's coded rows), :meth:`LTCode.decodable` /
:func:`finishers_needed` (when the map phase may end), :meth:`LTCode.decode`
(a reducer's ``A x``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpi_coded.errors import NotDecodable, require
from mpi_coded.fields import FIELD_NAMES, get_field

DEFAULT_C = 0.1
"""Robust Soliton ``c`` (Luby's constant in ``R = c ln(k/delta) sqrt(k)``)."""
DEFAULT_DELTA = 0.5
"""Robust Soliton ``delta`` (Luby's bound on the peeling failure probability)."""
REAL_COEFFS = ("pm1", "gaussian")


# --------------------------------------------------------------------------------------------
# degree distribution


def _soliton_parts(k: int, c: float, delta: float) -> tuple[np.ndarray, np.ndarray, float]:
    require(isinstance(k, (int, np.integer)) and k >= 1, "m", "must be an integer >= 1", k)
    require(c > 0, "c", "must be > 0", c)
    require(0 < delta < 1, "delta", "must be in (0, 1)", delta)
    d = np.arange(k + 1, dtype=np.float64)
    rho = np.zeros(k + 1)
    rho[1] = 1.0 / k
    rho[2:] = 1.0 / (d[2:] * (d[2:] - 1.0))
    R = c * math.log(k / delta) * math.sqrt(k)
    spike = int(min(max(round(k / R), 1), k))
    tau = np.zeros(k + 1)
    tau[1:spike] = R / (d[1:spike] * k)
    tau[spike] = max(R * math.log(R / delta) / k, 0.0)
    return rho, tau, R


def robust_soliton(k: int, c: float = DEFAULT_C, delta: float = DEFAULT_DELTA) -> np.ndarray:
    """The robust Soliton pmf ``mu(d)``, ``d = 0..k`` (``mu(0) = 0``), Luby 2002.

    ``rho`` is the ideal Soliton (``1/k`` at 1, ``1/(d(d-1))`` above),
    ``R = c ln(k/delta) sqrt(k)``, ``tau(d) = R/(d k)`` below the spike
    ``k/R`` (rounded, in ``[1, k]``), ``tau(k/R) = R ln(R/delta)/k`` (clipped at 0
    for tiny ``k``), and ``mu = (rho + tau) / beta``, ``beta = sum(rho + tau)``.
    Larger ``c`` or smaller ``delta`` move mass to degree 1 and the spike: more
    overhead, fewer peeling failures.
    """
    rho, tau, _ = _soliton_parts(k, c, delta)
    mu = rho + tau
    return np.asarray(mu / mu.sum())


def design_overhead(k: int, c: float = DEFAULT_C, delta: float = DEFAULT_DELTA) -> float:
    """``beta - 1``: Luby's ``k beta`` received rows let peeling succeed w.p. ``>= 1 - delta``."""
    rho, tau, _ = _soliton_parts(k, c, delta)
    return float((rho + tau).sum() - 1.0)


def mean_degree(k: int, c: float = DEFAULT_C, delta: float = DEFAULT_DELTA) -> float:
    """Mean number of source rows per coded row (nonzeros per row of ``Psi_LT``)."""
    mu = robust_soliton(k, c, delta)
    return float(np.dot(np.arange(k + 1), mu))


# --------------------------------------------------------------------------------------------
# field arithmetic on plain arrays


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, e)`` over the pairs (vectorised)."""
    lens = np.asarray(ends, dtype=np.int64) - np.asarray(starts, dtype=np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.cumsum(lens) - lens
    return np.repeat(np.asarray(starts, dtype=np.int64) - offs, lens) + np.arange(total)


class _Arith:
    """Elementwise arithmetic, segmented sums and small solves of one field."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.field = get_field(name)
        self.dtype = self.field.dtype
        self.exact = self.field.exact

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape, dtype=self.dtype)

    def one(self) -> Any:
        return self.dtype.type(1)

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(a * b)

    def inv(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(1.0 / a)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(a + b)

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(a - b)

    def _reduceat(self, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.asarray(np.add.reduceat(values, starts, axis=0))

    def segment_sum(self, values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
        """``out[g] = sum of values[i] with owner[i] == g`` (``owner`` sorted)."""
        out = self.zeros((n,) + values.shape[1:])
        if len(owner) == 0:
            return out
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        out[owner[starts]] = self._reduceat(values, starts)
        return out

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.shape[1] == 0:
            return self.zeros((a.shape[0], b.shape[1]))
        return self.field.matmul(a, b)

    def rank(self, M: np.ndarray) -> int:
        """Rank of ``M`` (numerical over float64: numpy's ``matrix_rank`` tolerance)."""
        if M.size == 0:
            return 0
        return int(np.linalg.matrix_rank(M))

    def solve(self, M: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        """``z`` with ``M z = b`` if ``M`` has full column rank, else None."""
        u = M.shape[1]
        if M.shape[0] < u or self.rank(M) < u:
            return None
        if b.shape[1] == 0:
            return self.zeros((u, 0))
        return np.asarray(np.linalg.lstsq(M, b, rcond=None)[0])


@functools.cache
def _gf_tables(degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(LOG, EXP, MT)``: ``EXP[LOG[a] + LOG[b]] = a b`` for all ``a, b`` (zeros included);
    ``MT`` the full product table for GF(2^8) (empty for GF(2^16)).  The tables of
    :mod:`mpi_coded.gf_kernels` (one construction, galois's default polynomials)."""
    from mpi_coded import gf_kernels  # deferred: numba (gf_kernels), only for GF products

    t = gf_kernels.tables(degree)
    return t.log.astype(np.int64), t.exp, t.mul_table


class _GFArith(_Arith):
    """GF(2^l) on uint words: XOR additions, log/exp-table products."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.degree = 8 if self.dtype == np.uint8 else 16
        self.log, self.exp, self.mt = _gf_tables(self.degree)
        self.order = 1 << self.degree

    def mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.degree == 8:
            return np.asarray(self.mt[a, b])
        return np.asarray(self.exp[self.log[a] + self.log[b]])

    def inv(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        require(bool(np.all(a != 0)), "value", "0 has no inverse")
        return np.asarray(self.exp[(self.order - 1) - self.log[a]])

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.bitwise_xor(a, b))

    sub = add

    def _reduceat(self, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.asarray(np.bitwise_xor.reduceat(values, starts, axis=0))

    def _pivot_rows(self, M: np.ndarray, stop_early: bool) -> np.ndarray | None:
        """Rows of ``M`` (``n x u``) that are pivots of its row echelon form, one per
        independent column (so ``len`` = rank); ``stop_early``: None at the first column
        without a pivot (``M`` not of full column rank)."""
        A = M.copy()
        n, u = A.shape
        rows = np.arange(n)
        top = 0  # pivots found so far: rows[:top]
        for col in range(u):
            if top == n:
                break
            nz = np.flatnonzero(A[top:, col])
            if nz.size == 0:
                if stop_early:
                    return None
                continue
            p = top + int(nz[0])
            if p != top:
                A[[top, p]] = A[[p, top]]
                rows[[top, p]] = rows[[p, top]]
            A[top] = self.mul(self.inv(A[top, col]), A[top])
            below = top + 1 + np.flatnonzero(A[top + 1:, col])
            if below.size:
                A[below] ^= self.mul(A[below, col][:, None], A[top][None, :])
            top += 1
        if stop_early and top < u:
            return None
        return rows[:top]

    def _independent_rows(self, M: np.ndarray) -> np.ndarray | None:
        """Indices of ``u`` rows of ``M`` (``n x u``) forming an invertible matrix, or None."""
        return self._pivot_rows(M, stop_early=True)

    def rank(self, M: np.ndarray) -> int:
        """Exact rank of ``M`` by Gaussian elimination."""
        if M.size == 0:
            return 0
        rows = self._pivot_rows(M, stop_early=False)
        assert rows is not None
        return len(rows)

    def inverse(self, S: np.ndarray) -> np.ndarray:
        """Inverse of an invertible ``u x u`` matrix by Gauss-Jordan elimination."""
        u = S.shape[0]
        A = np.concatenate([S, np.eye(u, dtype=self.dtype)], axis=1)
        for col in range(u):
            p = col + int(np.flatnonzero(A[col:, col])[0])
            if p != col:
                A[[col, p]] = A[[p, col]]
            A[col] = self.mul(self.inv(A[col, col]), A[col])
            others = np.flatnonzero(A[:, col])
            others = others[others != col]
            if others.size:
                A[others] ^= self.mul(A[others, col][:, None], A[col][None, :])
        return A[:, u:]

    def solve(self, M: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        u = M.shape[1]
        if M.shape[0] < u:
            return None
        sel = self._independent_rows(M)
        if sel is None:
            return None
        if b.shape[1] == 0:
            return self.zeros((u, 0))
        return self.matmul(self.inverse(M[sel]), b[sel])


@functools.cache
def arith(field: str) -> _Arith:
    """Arithmetic of ``field`` (``float64``, ``gf2^8``, ``gf2^16``)."""
    require(field in FIELD_NAMES, "field", f"must be one of {', '.join(FIELD_NAMES)}", field)
    return _Arith(field) if field == "float64" else _GFArith(field)


# --------------------------------------------------------------------------------------------
# peeling with inactivation


@dataclass(frozen=True)
class _Peeled:
    rows: np.ndarray  # pivot rows, wave after wave
    cols: np.ndarray  # their columns
    wave_ptr: np.ndarray  # wave t: rows[wave_ptr[t]:wave_ptr[t + 1]] (and cols)
    inactive: np.ndarray  # inactivated columns, in order
    used: np.ndarray  # (n,) bool: row is a pivot
    complete: bool  # every column resolved or inactivated

    @property
    def waves(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """``(pivot rows, their columns)`` per wave."""
        p = self.wave_ptr
        return tuple((self.rows[p[t]:p[t + 1]], self.cols[p[t]:p[t + 1]])
                     for t in range(len(p) - 1))


def _peel(indptr: np.ndarray, indices: np.ndarray, m: int, inactivation: bool) -> _Peeled:
    """Symbolic phase (module docstring, step 1) on the structure of ``Psi_R``: the numba
    kernel :func:`mpi_coded.codes.lt_kernels.peel` (the choices of :func:`_peel_reference`)."""
    # deferred: numba (lt_kernels), only when peeling with the kernel
    from mpi_coded.codes import lt_kernels

    rows, cols, wave_ptr, inactive, used, complete = lt_kernels.peel(
        np.ascontiguousarray(indptr, dtype=np.int64),
        np.ascontiguousarray(indices, dtype=np.int64), int(m), bool(inactivation))
    return _Peeled(rows, cols, wave_ptr, inactive, used, bool(complete))


def _peel_reference(indptr: np.ndarray, indices: np.ndarray, m: int,
                    inactivation: bool) -> _Peeled:
    """Step 1 in numpy, one iteration per wave or inactivation (the reference of
    :func:`_peel`, for the tests)."""
    n = len(indptr) - 1
    deg = np.diff(indptr).astype(np.int64)
    row_of = np.repeat(np.arange(n), deg)
    live_sum = np.zeros(n, dtype=np.int64)  # sum of the row's unresolved columns
    np.add.at(live_sum, row_of, indices)
    order = np.argsort(indices, kind="stable")
    col_rows = row_of[order]
    col_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(indices, minlength=m), out=col_ptr[1:])
    state = np.zeros(m, dtype=np.int8)  # 0 unresolved, 1 resolved, 2 inactive
    used = np.zeros(n, dtype=bool)
    waves: list[tuple[np.ndarray, np.ndarray]] = []
    inactive: list[int] = []
    left = m

    def remove(cols: np.ndarray) -> None:
        idx = _ranges(col_ptr[cols], col_ptr[cols + 1])
        rows = col_rows[idx]
        np.subtract.at(deg, rows, 1)
        np.subtract.at(live_sum, rows, np.repeat(cols, col_ptr[cols + 1] - col_ptr[cols]))

    while left > 0:
        ripple = np.flatnonzero((deg == 1) & ~used)
        if ripple.size:
            cols, first = np.unique(live_sum[ripple], return_index=True)
            rows = ripple[first]
            used[rows] = True
            state[cols] = 1
            left -= len(cols)
            waves.append((rows, cols))
            remove(cols)
            continue
        if not inactivation:
            break
        open_rows = deg >= 2
        if not open_rows.any():
            break  # some column occurs in no row: not decodable
        dmin = int(deg[open_rows].min())
        sel = (deg[row_of] == dmin) & (state[indices] == 0)
        col = int(np.argmax(np.bincount(indices[sel], minlength=m)))
        state[col] = 2
        inactive.append(col)
        left -= 1
        remove(np.array([col], dtype=np.int64))
    wave_ptr = np.zeros(len(waves) + 1, dtype=np.int64)
    np.cumsum([len(r) for r, _ in waves], out=wave_ptr[1:])
    flat = [np.concatenate([w[k] for w in waves]) if waves else np.zeros(0, dtype=np.int64)
            for k in (0, 1)]
    return _Peeled(flat[0].astype(np.int64), flat[1].astype(np.int64), wave_ptr,
                   np.array(inactive, dtype=np.int64), used, left == 0)


def _propagate_reference(ar: _Arith, indptr: np.ndarray, indices: np.ndarray,
                         coeffs: np.ndarray, m: int, Y: np.ndarray,
                         peeled: _Peeled) -> tuple[np.ndarray, np.ndarray]:
    """Step 2 in numpy, one iteration per wave (every field): ``(Z, T)``, ``Z``
    (``m x (w + u)``) the resolved columns as affine functions of the values ``Y``
    (``n x w``) and of the ``u`` inactive columns, ``T = Psi[~used] Z``."""
    w, u = Y.shape[1], len(peeled.inactive)
    Z = ar.zeros((m, w + u))
    Z[peeled.inactive, w + np.arange(u)] = ar.one()
    for prow, pcol in peeled.waves:
        e = _ranges(indptr[prow], indptr[prow + 1])
        owner = np.repeat(np.arange(len(prow)), indptr[prow + 1] - indptr[prow])
        ce = indices[e]
        piv = ce == pcol[owner]
        rhs = ar.zeros((len(prow), w + u))
        rhs[:, :w] = Y[prow]
        other = ~piv
        if other.any():
            prod = ar.mul(coeffs[e[other]][:, None], Z[ce[other]])
            rhs = ar.sub(rhs, ar.segment_sum(prod, owner[other], len(prow)))
        Z[pcol] = ar.mul(ar.inv(coeffs[e[piv]])[:, None], rhs)
    rest = np.flatnonzero(~peeled.used)
    e = _ranges(indptr[rest], indptr[rest + 1])
    owner = np.repeat(np.arange(len(rest)), indptr[rest + 1] - indptr[rest])
    T = ar.segment_sum(ar.mul(coeffs[e][:, None], Z[indices[e]]), owner, len(rest))
    return Z, T


# --------------------------------------------------------------------------------------------
# the code


@dataclass(frozen=True, eq=False)
class LTCode:
    """``r`` LT-coded rows of an ``m``-row matrix, as a CSR ``Psi_LT`` (module docstring)."""

    m: int
    field: str
    indptr: np.ndarray  # (r + 1,)
    indices: np.ndarray  # source rows of each coded row, ascending within a row
    coeffs: np.ndarray  # nonzero coefficients, field dtype
    c: float = DEFAULT_C
    delta: float = DEFAULT_DELTA
    seed: int = 0

    @property
    def r(self) -> int:
        """Number of coded rows."""
        return len(self.indptr) - 1

    @property
    def degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    def _rows(self, rows: Sequence[int] | np.ndarray | None) -> np.ndarray:
        if rows is None:
            return np.arange(self.r, dtype=np.int64)
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        require(bool(np.all((idx >= 0) & (idx < self.r))), "rows",
                f"coded rows must be in 0..{self.r - 1}")
        return idx

    def sub(self, rows: Sequence[int] | np.ndarray | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR ``(indptr, indices, coeffs)`` of the coded rows ``rows`` (in that order)."""
        idx = self._rows(rows)
        starts, ends = self.indptr[idx], self.indptr[idx + 1]
        e = _ranges(starts, ends)
        indptr = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=indptr[1:])
        return indptr, self.indices[e], self.coeffs[e]

    def generator(self, rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Dense rows of ``Psi_LT`` (for tests and small sizes)."""
        indptr, indices, coeffs = self.sub(rows)
        out = np.zeros((len(indptr) - 1, self.m), dtype=coeffs.dtype)
        out[np.repeat(np.arange(len(indptr) - 1), np.diff(indptr)), indices] = coeffs
        return out

    def encode(self, A: np.ndarray, rows: Sequence[int] | np.ndarray | None = None,
               chunk: int = 1 << 22) -> np.ndarray:
        """``C[rows] = Psi_LT[rows] A`` with sparse rows: ``deg`` products per column each."""
        ar = arith(self.field)
        A = np.asarray(A, dtype=ar.dtype)
        require(A.ndim == 2 and A.shape[0] == self.m, "A", f"must have {self.m} rows", A.shape)
        indptr, indices, coeffs = self.sub(rows)
        n_rows, cols = len(indptr) - 1, A.shape[1]
        out = ar.zeros((n_rows, cols))
        per = max(1, chunk // max(cols, 1))  # entries per chunk
        lo = 0
        while lo < n_rows:  # whole rows per chunk, about `per` entries
            hi = int(np.searchsorted(indptr, indptr[lo] + per, side="right")) - 1
            hi = min(max(hi, lo + 1), n_rows)
            e0, e1 = int(indptr[lo]), int(indptr[hi])
            prod = ar.mul(coeffs[e0:e1, None], A[indices[e0:e1]])
            owner = np.repeat(np.arange(hi - lo), np.diff(indptr[lo:hi + 1]))
            out[lo:hi] = ar.segment_sum(prod, owner, hi - lo)
            lo = hi
        return out

    # -- decoding ------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the decoding kernels
        (:func:`mpi_coded.codes.lt_kernels.warm_up`), so that no timed phase pays for them."""
        from mpi_coded.codes import lt_kernels  # deferred: numba (lt_kernels), only when warming up

        lt_kernels.warm_up()

    def _propagate(self, indptr: np.ndarray, indices: np.ndarray, coeffs: np.ndarray,
                   Y: np.ndarray, peeled: _Peeled, reference: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Step 2: ``(Z, T)`` (the numba kernel over float64, else numpy)."""
        if self.field == "float64" and not reference:
            # deferred: numba (lt_kernels), only when decoding with the kernel
            from mpi_coded.codes import lt_kernels

            return lt_kernels.propagate(indptr, indices, coeffs, self.m,
                                        np.ascontiguousarray(Y, dtype=np.float64),
                                        peeled.rows, peeled.cols, peeled.inactive,
                                        peeled.used)
        return _propagate_reference(arith(self.field), indptr, indices, coeffs, self.m, Y,
                                    peeled)

    def _solve(self, rows: Sequence[int] | np.ndarray, values: np.ndarray,
               inactivation: bool = True, reference: bool = False) -> np.ndarray | None:
        """Steps 1-3 of the module docstring: ``Z`` with ``Psi[rows] Z = values``, or None.

        Steps 1 and (over float64) 2 run in the numba kernels of
        :mod:`mpi_coded.codes.lt_kernels`; ``reference``: in numpy
        (:func:`_peel_reference`, :func:`_propagate_reference`), for the tests.
        """
        ar = arith(self.field)
        indptr, indices, coeffs = self.sub(rows)
        n = len(indptr) - 1
        if n < self.m:
            return None
        peeled = (_peel_reference if reference else _peel)(indptr, indices, self.m,
                                                           inactivation)
        if not peeled.complete:
            return None
        Y = values
        w, u = Y.shape[1], len(peeled.inactive)
        Z, T = self._propagate(indptr, indices, coeffs, Y, peeled, reference)
        if u == 0:
            return Z[:, :w]
        rest = np.flatnonzero(~peeled.used)
        M = T[:, w:]
        b = ar.sub(Y[rest], T[:, :w])
        z_inactive = ar.solve(M, b)
        if z_inactive is None:
            return None
        return ar.add(Z[:, :w], ar.matmul(np.ascontiguousarray(Z[:, w:]), z_inactive))

    def deficit(self, rows: Sequence[int] | np.ndarray, inactivation: bool = True,
                reference: bool = False) -> int:
        """0 if the coded rows ``rows`` decode, else a lower bound ``d >= 1`` on how many
        more rows they need (docs/theory.md (B.5)).

        With inactivation the peeling leaves ``u`` inactive columns and the unused rows'
        ``M`` (step 3), and ``rank Psi[rows] = (m - u) + rank M`` exactly (the used rows
        are triangular on the resolved columns); a row raises the rank by at most one, so
        ``d = u - rank M`` rows at least are missing.  Fewer than ``m`` rows: ``m - n``.
        A column in no row (peeling stops): the number of such columns.  Plain peeling
        (``inactivation=False``) gives no rank, only ``d = 1``.
        """
        indptr, indices, coeffs = self.sub(rows)
        n = len(indptr) - 1
        if n < self.m:
            return self.m - n
        peeled = (_peel_reference if reference else _peel)(indptr, indices, self.m,
                                                           inactivation)
        if not peeled.complete:
            if not inactivation:
                return 1
            return max(1, self.m - int(np.unique(indices).size))
        u = len(peeled.inactive)
        if u == 0:
            return 0
        ar = arith(self.field)
        _, T = self._propagate(indptr, indices, coeffs, ar.zeros((n, 0)), peeled, reference)
        return u - ar.rank(T)

    def decodable(self, rows: Sequence[int] | np.ndarray, inactivation: bool = True) -> bool:
        """Whether the coded rows ``rows`` determine every source row (exact rank test)."""
        return self.deficit(rows, inactivation) == 0

    def decode(self, rows: Sequence[int] | np.ndarray, values: np.ndarray,
               inactivation: bool = True) -> np.ndarray:
        """``Z`` (``m x w``) with ``Psi[rows] Z = values``: ``A X`` from the values ``C[rows] X``.

        ``values`` is ``(len(rows), w)`` (or a vector, giving a vector).  Raises
        :class:`~mpi_coded.errors.NotDecodable` if ``rows`` do not suffice.
        """
        ar = arith(self.field)
        vals = np.asarray(values, dtype=ar.dtype)
        vec = vals.ndim == 1
        vals2 = vals.reshape(-1, 1) if vec else vals
        idx = self._rows(rows)
        require(vals2.shape[0] == len(idx), "values", f"must have one row per coded row "
                f"({len(idx)})", vals2.shape)
        out = self._solve(idx, np.ascontiguousarray(vals2), inactivation)
        if out is None:
            raise NotDecodable(f"{len(idx)} LT-coded rows do not determine the {self.m} "
                               "source rows")
        return out.reshape(-1) if vec else out

    def rows_needed(self, order: Sequence[int] | np.ndarray | None = None,
                    inactivation: bool = True) -> int | None:
        """Smallest ``n`` such that the first ``n`` rows of ``order`` (default: all rows in
        index order) decode; None if all of them do not (:func:`shortest_decoding_prefix`)."""
        seq = self._rows(order)
        cover = covering_prefix(self, [], seq)
        if cover is None:
            return None
        return shortest_decoding_prefix(
            lambda n: self.deficit(seq[:n], inactivation), max(cover, self.m), len(seq))


def shortest_decoding_prefix(deficit: Callable[[int], int], start: int, end: int
                             ) -> int | None:
    """Smallest ``n`` in ``start..end`` with ``deficit(n) == 0``, or None.

    ``deficit(n)`` is :meth:`LTCode.deficit` of a prefix of ``n`` rows of one sequence:
    0 when the prefix decodes, else at least one and a lower bound on the rows it still
    needs, so every ``n' < n + deficit(n)`` fails too and the search jumps there.  Rows
    of an LT code mostly raise the rank by one each, so it usually ends in two checks
    (where galloping and bisection took about eight).  Rows that add nothing (in the span
    already) would make it walk one row at a time, so from the third miss in a row the jumps
    go 1, 3, 7, 15, ... rows beyond the bound and an overshoot is bisected back: exact
    either way, and never more than about twice galloping's checks.
    """
    if start > end:
        return None
    fails = start - 1  # every prefix up to this one fails
    n, misses, found = start, 0, None
    while n <= end:
        d = deficit(n)
        if d == 0:
            found = n
            break
        fails = max(fails, n + d - 1)
        misses += 1
        n = fails + 1 + (0 if misses < 3 else (1 << (misses - 2)) - 1)
        if n > end and fails < end:
            n = end  # the last prefix decides whether any does
    if found is None:
        return None
    while found - fails > 1:  # bisect an overshoot: fails < answer <= found
        mid = (fails + found) // 2
        d = deficit(mid)
        if d == 0:
            found = mid
        else:
            fails = max(fails, min(mid + d - 1, found - 1))
    return found


def covering_prefix(code: LTCode, known: Sequence[int] | np.ndarray,
                    seq: Sequence[int] | np.ndarray) -> int | None:
    """Smallest ``n`` such that the coded rows ``known`` and ``seq[:n]`` together touch every
    source row (a column in no row: not decodable, whatever the rank of the rest); None
    if all of ``seq`` does not.  A lower bound for :func:`shortest_decoding_prefix`."""
    covered = np.zeros(code.m, dtype=bool)
    covered[code.sub(known)[1]] = True
    indptr, indices, _ = code.sub(seq)
    n = len(indptr) - 1
    first = np.full(code.m, n + 1, dtype=np.int64)
    np.minimum.at(first, indices, np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr)))
    need = first[~covered]
    if need.size == 0:
        return 0
    last = int(need.max())
    return None if last > n else last + 1


def lt_code(m: int, r: int, field: str = "gf2^8", c: float = DEFAULT_C,
            delta: float = DEFAULT_DELTA, seed: int = 0, real_coeffs: str = "pm1") -> LTCode:
    """A seeded LT code: ``r`` coded rows of an ``m``-row matrix over ``field``."""
    require(isinstance(r, (int, np.integer)) and r >= 1, "r", "must be an integer >= 1", r)
    require(real_coeffs in REAL_COEFFS, "real_coeffs", f"must be one of {REAL_COEFFS}",
            real_coeffs)
    ar = arith(field)
    pmf = robust_soliton(m, c, delta)
    rng = np.random.default_rng(seed)
    deg = rng.choice(m + 1, size=r, p=pmf).astype(np.int64)
    indptr = np.zeros(r + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    for i in range(r):
        indices[indptr[i]:indptr[i + 1]] = np.sort(rng.choice(m, int(deg[i]), replace=False))
    nnz = len(indices)
    if field == "float64":
        if real_coeffs == "pm1":
            coeffs = np.where(rng.random(nnz) < 0.5, -1.0, 1.0)
        else:
            coeffs = rng.standard_normal(nnz)
    else:
        order = 1 << (8 if ar.dtype == np.uint8 else 16)
        coeffs = rng.integers(1, order, size=nnz).astype(ar.dtype)
    return LTCode(m, field, indptr, indices, np.asarray(coeffs, dtype=ar.dtype), c, delta, seed)


# --------------------------------------------------------------------------------------------
# runtime helpers


def finishers_needed(code: LTCode, rows_of: Sequence[Sequence[int] | np.ndarray],
                     order: Sequence[int], at_least: int = 1) -> int | None:
    """How many finishers, in ``order``, the map phase needs: the first ``g >= at_least``
    whose stored rows (``rows_of[server]``, union) decode; None if all of them do not."""
    held: list[int] = []
    seen: set[int] = set()
    for g, s in enumerate(order, start=1):
        for row in np.asarray(rows_of[s]).tolist():
            if row not in seen:
                seen.add(row)
                held.append(row)
        if g >= at_least and len(held) >= code.m and code.decodable(held):
            return g
    return None


@dataclass(frozen=True)
class OverheadStats:
    """Rows needed to decode over ``trials`` seeded codes (``rows_needed / m`` = overhead)."""

    m: int
    field: str
    needed: tuple[int, ...]  # per trial (every trial decodes from 2m rows or counts as failed)
    failures: int  # trials that did not decode from ceil(m (1 + eps)) rows
    eps: float
    design: float  # 1 + design_overhead(m, c, delta)

    @property
    def trials(self) -> int:
        return len(self.needed)

    @property
    def overhead(self) -> float:
        """Mean of ``rows_needed / m``."""
        return float(np.mean(self.needed)) / self.m

    @property
    def worst(self) -> float:
        return max(self.needed) / self.m


def measure_overhead(m: int, trials: int = 10, field: str = "gf2^8", eps: float | None = None,
                     c: float = DEFAULT_C, delta: float = DEFAULT_DELTA, seed: int = 0,
                     inactivation: bool = True, max_ratio: float = 2.0) -> OverheadStats:
    """Measured overhead and failure count: codes seeded ``seed .. seed + trials - 1``.

    Each code has ``ceil(max_ratio m)`` i.i.d. rows; rows needed is the shortest decoding
    prefix (a uniformly random set of that size), ``ceil(max_ratio m) + 1`` if none.
    ``eps`` (default: the design overhead) sets the failure threshold.
    """
    require(trials >= 1, "trials", "must be >= 1", trials)
    require(max_ratio > 1, "max_ratio", "must be > 1", max_ratio)
    design = 1.0 + design_overhead(m, c, delta)
    eps_ = design - 1.0 if eps is None else float(eps)
    require(eps_ >= 0, "eps", "must be >= 0", eps_)
    r = math.ceil(max_ratio * m)
    budget = math.ceil(m * (1 + eps_))
    needed = []
    for t in range(trials):
        code = lt_code(m, r, field, c, delta, seed + t)
        n = code.rows_needed(inactivation=inactivation)
        needed.append(r + 1 if n is None else n)
    failures = sum(1 for n in needed if n > budget)
    return OverheadStats(m, field, tuple(needed), failures, eps_, design)
