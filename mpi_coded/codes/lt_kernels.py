"""Numba kernels of LT decoding (:mod:`mpi_coded.codes.lt`, its module docstring).

:func:`peel` is step 1 there, the symbolic peeling with inactivation on the structure of
``Psi_R`` (valid for every field): while some unused row has exactly one unresolved column,
every such row resolves its column at once (a *wave*); when none has, the unresolved column
occurring most often in the rows of least remaining degree is inactivated.  It makes exactly
the choices of the numpy reference ``lt._peel_reference``:

* a wave's ripple is the rows of degree one not yet used, and its pivots are one row per
  distinct column, the smallest row naming it, ordered by column (``np.unique(...,
  return_index=True)`` on the ripple's columns);
* the inactivated column is the smallest index among those occurring most often in the
  entries, on unresolved columns, of the rows of least degree ``>= 2`` (``np.argmax`` of
  the ``np.bincount``).

Degrees and "sum of the unresolved columns" of the rows are updated column by column
through a column-to-rows index; the rows whose degree drops to one form the next ripple
(every row of a ripple has its column resolved by its wave, so no other row can be of
degree one), hence a wave costs its entries, not a scan of the rows.

:func:`propagate` is step 2 over float64: the back-substitution, wave after wave, of
``z_c = (y_r - sum_{e != c} psi_e z_e) / psi_c`` as an affine function of the ``u``
inactivated columns (the matrix ``Z``: ``m x (w + u)``, ``w`` value columns then ``u``
inactive ones), then ``T = Psi_rest Z`` for the rows not used as pivots.  Its arithmetic is
that of the numpy reference: products ``psi_e z_e`` summed as ``np.add.reduceat`` does (the
first product, plus numpy's pairwise sum of the others: eight accumulators up to 128 terms,
halves above), ``0 - s`` (or ``y - s``) then times ``1 / psi_c``; so ``Z`` and ``T`` are
bitwise those of numpy (tests/test_codes_lt.py checks it).

Kernels are ``nogil``, cached on disk (:func:`mpi_coded.gf_kernels.jit`); :func:`warm_up`
compiles or loads them.
"""

from __future__ import annotations

import numpy as np

from mpi_coded.gf_kernels import jit

__all__ = ["peel", "propagate", "warm_up"]


# --------------------------------------------------------------------------------------------
# step 1: symbolic peeling with inactivation


@jit
def peel(indptr: np.ndarray, indices: np.ndarray, m: int, inactivation: bool
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                    bool]:  # pragma: no cover - numba
    """Step 1 on the CSR structure ``(indptr, indices)`` of ``n`` rows over ``m`` columns.

    Returns ``(rows, cols, wave_ptr, inactive, used, complete)``: the pivot rows and their
    columns, wave after wave (wave ``t`` is ``rows[wave_ptr[t]:wave_ptr[t + 1]]``); the
    inactivated columns in order; ``used[i]``: row ``i`` is a pivot; ``complete``: every
    column is resolved or inactivated.
    """
    n = indptr.shape[0] - 1
    nnz = indices.shape[0]
    deg = np.empty(n, dtype=np.int64)
    live_sum = np.zeros(n, dtype=np.int64)  # sum of the row's unresolved columns
    col_ptr = np.zeros(m + 1, dtype=np.int64)
    for r in range(n):
        deg[r] = indptr[r + 1] - indptr[r]
        for e in range(indptr[r], indptr[r + 1]):
            live_sum[r] += indices[e]
            col_ptr[indices[e] + 1] += 1
    for c in range(m):
        col_ptr[c + 1] += col_ptr[c]
    fill = col_ptr[:m].copy()
    col_rows = np.empty(nnz, dtype=np.int64)  # the rows of each column
    for r in range(n):
        for e in range(indptr[r], indptr[r + 1]):
            c = indices[e]
            col_rows[fill[c]] = r
            fill[c] += 1

    state = np.zeros(m, dtype=np.int8)  # 0 unresolved, 1 resolved, 2 inactive
    used = np.zeros(n, dtype=np.bool_)
    rows = np.empty(min(n, m), dtype=np.int64)
    cols = np.empty(min(n, m), dtype=np.int64)
    wave_ptr = np.zeros(m + 1, dtype=np.int64)
    inactive = np.empty(m, dtype=np.int64)
    best = np.full(m, -1, dtype=np.int64)  # per wave: the smallest ripple row naming a column
    gone = np.empty(m, dtype=np.int64)  # the columns this step resolves or inactivates
    count = np.zeros(m, dtype=np.int64)
    cand = np.empty(n, dtype=np.int64)  # the rows of degree one (and maybe used ones)
    ncand = 0
    for r in range(n):
        if deg[r] == 1:
            cand[ncand] = r
            ncand += 1
    npiv = 0
    nwave = 0
    ninact = 0
    left = m
    while left > 0:
        k = 0  # distinct columns of the ripple
        for i in range(ncand):
            r = cand[i]
            if deg[r] == 1 and not used[r]:
                c = live_sum[r]
                if best[c] < 0:
                    best[c] = r
                    gone[k] = c
                    k += 1
                elif r < best[c]:
                    best[c] = r
        if k > 0:  # a wave: its columns ascending, each with its smallest row
            gone[:k].sort()
            for i in range(k):
                c = gone[i]
                r = best[c]
                best[c] = -1
                rows[npiv + i] = r
                cols[npiv + i] = c
                used[r] = True
                state[c] = 1
            npiv += k
            left -= k
            nwave += 1
            wave_ptr[nwave] = npiv
        else:
            if not inactivation:
                break
            dmin = -1
            for r in range(n):
                d = deg[r]
                if d >= 2 and (dmin < 0 or d < dmin):
                    dmin = d
            if dmin < 0:
                break  # some column occurs in no row: not decodable
            for r in range(n):
                if deg[r] == dmin:
                    for e in range(indptr[r], indptr[r + 1]):
                        c = indices[e]
                        if state[c] == 0:
                            count[c] += 1
            col = 0
            most = -1
            for c in range(m):
                if count[c] > most:  # the first of the most frequent
                    most = count[c]
                    col = c
                count[c] = 0
            state[col] = 2
            inactive[ninact] = col
            ninact += 1
            left -= 1
            gone[0] = col
            k = 1
        # take the columns out of their rows; the rows reaching degree one: the next ripple
        ncand = 0
        for i in range(k):
            c = gone[i]
            for t in range(col_ptr[c], col_ptr[c + 1]):
                r = col_rows[t]
                deg[r] -= 1
                live_sum[r] -= c
                if deg[r] == 1:
                    cand[ncand] = r
                    ncand += 1
    return (rows[:npiv].copy(), cols[:npiv].copy(), wave_ptr[:nwave + 1].copy(),
            inactive[:ninact].copy(), used, left == 0)


# --------------------------------------------------------------------------------------------
# step 2 over float64


@jit
def propagate(indptr: np.ndarray, indices: np.ndarray, coeffs: np.ndarray, m: int,
              Y: np.ndarray, rows: np.ndarray, cols: np.ndarray, inactive: np.ndarray,
              used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - numba
    """Step 2 over float64: ``(Z, T)``, ``Z`` (``m x (w + u)``) the resolved columns as
    ``alpha | beta`` over the values ``Y`` (``n x w``) and the inactive columns, pivots
    ``rows``/``cols`` in wave order; ``T = Psi[~used] Z`` (rows ascending).

    A row's sum ``s = sum_i coef_i Z[col_i]`` (its other entries for a pivot, all of them
    for ``T``, in CSR order) is ``np.add.reduceat``'s: ``P_0 + pairwise(P_1 .. P_{k-1})``,
    with numpy's ``pairwise_sum`` (loops_utils): in turn from ``-0.0`` below 8 terms; up to
    128, eight accumulators over the multiple of 8 combined as a tree, then the rest in
    turn; above, the sum of the halves ``n2 = n // 2`` rounded down to a multiple of 8 and
    ``n - n2`` (run on an explicit stack of frames).
    """
    n = indptr.shape[0] - 1
    w = Y.shape[1]
    u = inactive.shape[0]
    q = w + u
    Z = np.zeros((m, q))
    for t in range(u):
        Z[inactive[t], w + t] = 1.0
    maxdeg = 1
    for r in range(n):
        maxdeg = max(maxdeg, indptr[r + 1] - indptr[r])
    depth = 1
    while (1 << depth) < maxdeg:
        depth += 1
    size = 2 * depth + 2  # frames: two per level of halving
    f_lo = np.empty(size, dtype=np.int64)
    f_n = np.empty(size, dtype=np.int64)
    f_split = np.zeros(size, dtype=np.bool_)  # children pushed: add their two values
    vals = np.empty((size, q))
    acc = np.empty((8, q))
    coef = np.empty(maxdeg)
    col = np.empty(maxdeg, dtype=np.int64)
    npiv = rows.shape[0]
    rest = np.flatnonzero(~used)
    T = np.zeros((rest.shape[0], q))
    for p in range(npiv + rest.shape[0]):
        k = 0
        piv = 0.0
        c = -1
        if p < npiv:
            r = rows[p]
            c = cols[p]
        else:
            r = rest[p - npiv]
        for e in range(indptr[r], indptr[r + 1]):
            if indices[e] == c:
                piv = coeffs[e]
            else:
                coef[k] = coeffs[e]
                col[k] = indices[e]
                k += 1
        if k > 1:  # vals[0] = pairwise sum of the terms 1 .. k - 1
            top = 1
            f_lo[0] = 1
            f_n[0] = k - 1
            nv = 0
            while top > 0:
                t = top - 1
                lo = f_lo[t]
                nt = f_n[t]
                if nt <= 128:  # a leaf
                    out = vals[nv]
                    if nt < 8:
                        for j in range(q):
                            out[j] = -0.0  # numpy's start: the identity of + (-0 + -0 = -0)
                        for i in range(lo, lo + nt):
                            a = coef[i]
                            zr = Z[col[i]]
                            for j in range(q):
                                out[j] += a * zr[j]
                    else:
                        for h in range(8):
                            a = coef[lo + h]
                            zr = Z[col[lo + h]]
                            for j in range(q):
                                acc[h, j] = a * zr[j]
                        i = 8
                        stop = nt - nt % 8
                        while i < stop:
                            for h in range(8):
                                a = coef[lo + i + h]
                                zr = Z[col[lo + i + h]]
                                for j in range(q):
                                    acc[h, j] += a * zr[j]
                            i += 8
                        for j in range(q):
                            out[j] = (((acc[0, j] + acc[1, j]) + (acc[2, j] + acc[3, j]))
                                      + ((acc[4, j] + acc[5, j]) + (acc[6, j] + acc[7, j])))
                        while i < nt:
                            a = coef[lo + i]
                            zr = Z[col[lo + i]]
                            for j in range(q):
                                out[j] += a * zr[j]
                            i += 1
                    nv += 1
                    top -= 1
                elif f_split[t]:
                    for j in range(q):
                        vals[nv - 2, j] += vals[nv - 1, j]  # left + right (+ commutes)
                    nv -= 1
                    f_split[t] = False
                    top -= 1
                else:
                    f_split[t] = True
                    n2 = nt // 2
                    n2 -= n2 % 8
                    f_lo[top] = lo
                    f_n[top] = n2
                    f_lo[top + 1] = lo + n2
                    f_n[top + 1] = nt - n2
                    top += 2
        s = vals[0]
        if k == 1:
            a = coef[0]
            zr = Z[col[0]]
            for j in range(q):
                s[j] = a * zr[j]
        elif k > 1:
            a = coef[0]
            zr = Z[col[0]]
            for j in range(q):
                s[j] = a * zr[j] + s[j]
        if p >= npiv:
            if k > 0:
                for j in range(q):
                    T[p - npiv, j] = s[j]
            continue
        inv = 1.0 / piv
        if k == 0:
            for j in range(w):
                Z[c, j] = inv * Y[r, j]
            for j in range(w, q):
                Z[c, j] = inv * 0.0
        else:
            for j in range(w):
                Z[c, j] = inv * (Y[r, j] - s[j])
            for j in range(w, q):
                Z[c, j] = inv * (0.0 - s[j])
    return Z, T


def warm_up() -> None:
    """Compile (or load from numba's cache) both kernels."""
    indptr = np.array([0, 1, 3], dtype=np.int64)
    indices = np.array([0, 0, 1], dtype=np.int64)
    coeffs = np.array([1.0, -1.0, 1.0])
    out = peel(indptr, indices, 2, True)
    propagate(indptr, indices, coeffs, 2, np.zeros((2, 0)), out[0], out[1], out[3], out[4])
