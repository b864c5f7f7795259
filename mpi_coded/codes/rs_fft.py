"""Systematic Reed-Solomon erasure code over GF(2^16) with O(n log n) encoding and decoding.

The algorithm is the additive FFT in the novel polynomial basis of S.-J. Lin, W.-H. Chung and
Y. S. Han, "Novel polynomial basis and its application to Reed-Solomon erasure codes" (FOCS
2014), and S.-J. Lin, T. Y. Al-Naffouri, Y. S. Han and W.-H. Chung, "Novel polynomial basis
with fast Fourier transform and its application to Reed-Solomon erasure codes" (IEEE Trans. IT
62(11), 2016) -- the algorithm of the Leopard-RS and reed-solomon-simd libraries.  Words are
uint16 in galois's polynomial basis (modulo ``0x1002D``); nothing here converts them.

Novel basis
    ``v_0..v_15`` is the Cantor basis (:data:`mpi_coded.codes.cantor.CANTOR`) and the
    evaluation points are ``omega_i = phi(i) = sum of v_t over the set bits t of i``.  The
    subspace polynomials ``s_j(x) = prod_{a in span(v_0..v_{j-1})} (x - a)`` are additive, and
    for a Cantor basis ``s_{j+1} = s_j^2 + s_j`` and ``s_j(v_j) = 1``, hence
    ``s_j(omega_i) = omega_{i >> j}`` and ``s_j'(x) = 1``.  The basis is
    ``X_i(x) = prod_{j in bits(i)} s_j(x)`` (``deg X_i = i``).
FFT (coefficients -> values on ``omega_{off} .. omega_{off + 2^m - 1}``, ``2^m | off``)
    ``D = D_0 + s_j D_1`` with ``D_0, D_1`` in ``X_0..X_{2^j - 1}``; on a block starting at
    ``b`` the factor ``s_j`` is the constant ``c = s_j(omega_b) = omega_{b >> j}`` on the first
    half and ``c + 1`` on the second, so the butterfly is ``D_0 += c D_1; D_1 += D_0`` for
    ``j = m-1 .. 0``; the inverse FFT undoes it from ``j = 0`` up.  ``m 2^(m-1)``
    multiplications.
Codes (the layouts of reed-solomon-simd, parity bit-identical to it; ``k2, p2`` are the powers
of two at or above ``k`` and ``p = n - k``)
    ``high`` (``p2 < k2``, or ``p2 == k2`` and ``k <= p``): data ``i`` at ``omega_{p2 + i}``,
    parity ``j`` at ``omega_j``; parity = FFT at 0 of the XOR over data chunks of their inverse
    FFTs (chunks of ``p2``).  ``low`` (otherwise): data at ``omega_0..``, parity ``j`` at
    ``omega_{k2 + j}``; parity = FFTs at ``k2, 2 k2, ..`` of the inverse FFT of the data.
    Both need ``min(k2, p2) + max(k, p) <= 65536``; other ``n <= 65536`` use ``full``: data at
    ``omega_p..omega_{n-1}``, parity at ``omega_0..omega_{p-1}``, zeros past ``n`` (a
    shortened RS code of length ``N = 2^ceil(log2 n)``), encoded by erasure decoding.
    Each is a (shortened, punctured) RS code: values ``f(omega_i)`` on ``i < N`` of a
    polynomial of degree below ``K`` that vanishes on a fixed set of indices.
Erasure decoding (Lin-Chung-Han; the Forney-like step via the formal derivative)
    Let ``E`` be the erased indices (``|E| = N - K``) and ``l(x) = prod_{e in E} (x - omega_e)``.
    (1) ``lam_i = log prod_{e in E, e != i} (omega_i + omega_e)`` (``= log l(omega_i)`` off
    ``E``, ``log l'(omega_i)`` on ``E``) is the XOR convolution of the indicator of ``E`` with
    ``L(t) = log omega_t`` (``L(0) = 0``), since ``omega_i + omega_e = omega_{i ^ e}``: two
    Walsh-Hadamard transforms modulo 65535 (where ``2^16 = 1``), once per erasure pattern.
    (2) ``g = f l`` has degree ``< N``: inverse FFT of ``c_i l(omega_i)`` (0 on ``E``).
    (3) ``g'(omega_e) = f(omega_e) l'(omega_e)`` on ``E``; in the novel basis
    ``(X_i)' = sum_{j in bits(i)} X_{i - 2^j}``.  (4) FFT, divide by ``l'(omega_e)``.
    Per vector: two FFTs of size ``N`` and ``2 N`` multiplications.

Kernels are numba ``njit(nogil=True)`` without parallel threads.  ``y * c`` for the constant
``c`` of a butterfly block is ``EXP[LOG[y] + log c]`` (the zero-padded tables of
:mod:`mpi_coded.gf_kernels`) on small blocks and ``LO[y & 255] ^ HI[y >> 8]`` (two 256-entry
tables of the GF(2)-linear map ``y -> c y``, built per block) on large ones.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from mpi_coded.codes.cantor import phi_table
from mpi_coded.errors import require
from mpi_coded.gf_kernels import jit, tables

__all__ = ["RSCode", "fft_decode_ops", "fft_encode_ops", "generator_decode_ops",
           "generator_encode_ops", "warm_up"]

ORDER = 1 << 16
Q = ORDER - 1  # order of the multiplicative group: logarithms live modulo Q
PATTERN_CACHE = 32  # erasure patterns (locator logarithms) remembered per code
SPLIT_MIN = 1024  # butterfly blocks of at least this many words multiply with split tables



def _pow2(x: int) -> int:
    """The least power of two ``>= x`` (``x >= 1``)."""
    return 1 << (x - 1).bit_length()


# --------------------------------------------------------------------------------------------
# tables


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(LOG, EXP, PLOG)``: field tables and ``PLOG[i] = LOG[omega_i]`` (int64)."""
    t = tables(16)
    plog = t.log[phi_table()].astype(np.int64)
    return t.log, t.exp, plog


@functools.cache
def _walsh_point_logs(m: int) -> np.ndarray:
    """Walsh-Hadamard transform of ``L(t) = log omega_t`` (``L(0) = 0``) on ``t < 2^m``, mod Q."""
    a = _tables()[2][: 1 << m].copy()
    a[0] = 0
    _fwht(a)
    return np.mod(a, Q)


# --------------------------------------------------------------------------------------------
# kernels


@jit
def _split_tables(ls: int, log_t: np.ndarray, exp_t: np.ndarray, lo_t: np.ndarray,
                  hi_t: np.ndarray) -> None:  # pragma: no cover - numba
    """``lo_t[b] = c b`` and ``hi_t[b] = c (b << 8)`` for bytes ``b``, ``c = exp(ls)``.

    Multiplying by ``c`` is GF(2)-linear, so ``c y = lo_t[y & 255] ^ hi_t[y >> 8]``: two loads
    from 1 KiB instead of two from the large LOG / EXP tables.
    """
    lo_t[0] = 0
    hi_t[0] = 0
    for t in range(8):
        lo_t[1 << t] = exp_t[log_t[1 << t] + ls]
        hi_t[1 << t] = exp_t[log_t[1 << (t + 8)] + ls]
    for b in range(3, 256):
        low = b & -b
        if low != b:
            lo_t[b] = lo_t[b ^ low] ^ lo_t[low]
            hi_t[b] = hi_t[b ^ low] ^ hi_t[low]


@jit
def _transform(w: np.ndarray, off: int, lo: int, hi: int, inverse: bool, log_t: np.ndarray,
               exp_t: np.ndarray, plog: np.ndarray) -> None:  # pragma: no cover - numba
    """In place on the ``2^m`` rows of ``w`` (``2^m`` divides ``off``).

    FFT: novel-basis coefficients -> values at ``omega_{off + i}``, layers ``j = m-1 .. 0``;
    a block of ``2^(j+1)`` rows starting at ``b`` has the halves ``D_0, D_1`` and the constant
    ``c = s_j(omega_{off + b}) = omega_{(off + b) >> j}``, and its butterfly is
    ``D_0 += c D_1; D_1 += D_0``.  Inverse FFT: layers ``j = 0 .. m-1``, butterflies
    ``D_1 += D_0; D_0 += c D_1``.  Blocks not meeting rows ``[lo, hi)`` are skipped: for the
    FFT only those outputs are wanted, for the inverse all other inputs are zero (truncated
    transforms).
    """
    size, v = w.shape
    m = 0
    while (1 << m) < size:
        m += 1
    lo_t = np.empty(256, dtype=np.uint16)
    hi_t = np.empty(256, dtype=np.uint16)
    for layer in range(m):
        j = layer if inverse else m - 1 - layer
        h = 1 << j
        for b in range(0, size, 2 * h):
            if b + 2 * h <= lo or b >= hi:
                continue
            s = (off + b) >> j
            if s == 0:  # c = 0: both directions are D_1 += D_0
                for i in range(b, b + h):
                    x, y = w[i], w[i + h]
                    for col in range(v):
                        y[col] ^= x[col]
                continue
            ls = plog[s]
            split = h * v >= SPLIT_MIN
            if split:
                _split_tables(ls, log_t, exp_t, lo_t, hi_t)
            for i in range(b, b + h):
                x, y = w[i], w[i + h]
                if inverse and split:
                    for col in range(v):
                        t = y[col] ^ x[col]
                        y[col] = t
                        x[col] ^= lo_t[t & 255] ^ hi_t[t >> 8]
                elif inverse:
                    for col in range(v):
                        t = y[col] ^ x[col]
                        y[col] = t
                        x[col] ^= exp_t[log_t[t] + ls]
                elif split:
                    for col in range(v):
                        t = y[col]
                        u = x[col] ^ lo_t[t & 255] ^ hi_t[t >> 8]
                        x[col] = u
                        y[col] = t ^ u
                else:
                    for col in range(v):
                        t = y[col]
                        u = x[col] ^ exp_t[log_t[t] + ls]
                        x[col] = u
                        y[col] = t ^ u


def _fft(w: np.ndarray, off: int, lo: int, hi: int, log_t: np.ndarray, exp_t: np.ndarray,
         plog: np.ndarray) -> None:
    """FFT of :func:`_transform` (coefficients -> values)."""
    _transform(w, off, lo, hi, False, log_t, exp_t, plog)


def _ifft(w: np.ndarray, off: int, lo: int, hi: int, log_t: np.ndarray, exp_t: np.ndarray,
          plog: np.ndarray) -> None:
    """Inverse FFT of :func:`_transform` (values -> coefficients)."""
    _transform(w, off, lo, hi, True, log_t, exp_t, plog)


@jit
def _ifft_sum(data: np.ndarray, acc: np.ndarray, tmp: np.ndarray, off: int, log_t: np.ndarray,
              exp_t: np.ndarray, plog: np.ndarray) -> None:  # pragma: no cover - numba
    """``acc = XOR over chunks c of IFFT_{off + c size}(chunk c of data)`` (``size = len(acc)``).

    The last chunk is zero-padded; ``tmp`` is scratch of ``acc``'s shape.
    """
    size, v = acc.shape
    k = data.shape[0]
    for start in range(0, k, size):
        cnt = min(size, k - start)
        buf = acc if start == 0 else tmp
        buf[:cnt] = data[start:start + cnt]
        buf[cnt:] = 0
        _transform(buf, off + start, 0, cnt, True, log_t, exp_t, plog)
        if start > 0:
            for i in range(size):
                a = acc[i]
                t = tmp[i]
                for c in range(v):
                    a[c] ^= t[c]


@jit
def _fft_chunks(w: np.ndarray, size: int, off: int, count: int, log_t: np.ndarray,
                exp_t: np.ndarray, plog: np.ndarray) -> None:  # pragma: no cover - numba
    """FFT chunk ``c`` (rows ``c size ..``) of ``w`` in place at ``off + c size``.

    Only the first ``count`` rows of ``w`` are wanted.
    """
    for start in range(0, count, size):
        _transform(w[start:start + size], off + start, 0, min(size, count - start), False,
                   log_t, exp_t, plog)


@jit
def _formal_derivative(w: np.ndarray) -> None:  # pragma: no cover - numba
    """In place, novel basis: ``D'_t = XOR of D_{t + 2^j}`` over the clear bits ``j`` of ``t``.

    ``X_i' = sum_{j in bits(i)} X_{i - 2^j}`` since every ``s_j' = 1``.  Row ``t`` reads rows
    above ``t`` only, so ascending ``t`` works in place.
    """
    size, v = w.shape
    for t in range(size):
        low = (t + 1) & ~t  # lowest clear bit of t
        if t | low >= size:
            for c in range(v):
                w[t, c] = 0
            continue
        for c in range(v):
            w[t, c] = w[t | low, c]
        bit = low << 1
        while bit < size:
            if t & bit == 0:
                for c in range(v):
                    w[t, c] ^= w[t | bit, c]
            bit <<= 1


@jit
def _fwht(a: np.ndarray) -> None:  # pragma: no cover - numba
    """Walsh-Hadamard transform over the integers, in place (length a power of two)."""
    n = a.size
    h = 1
    while h < n:
        for b in range(0, n, 2 * h):
            for i in range(b, b + h):
                x = a[i]
                y = a[i + h]
                a[i] = x + y
                a[i + h] = x - y
        h *= 2


@jit
def _locator_logs(erased: np.ndarray, walsh: np.ndarray,
                  inv_n: int) -> np.ndarray:  # pragma: no cover - numba
    """``lam_i = sum_{e erased} L(i ^ e) mod Q``: XOR convolution via two FWHTs (``H H = N``)."""
    n = erased.size
    a = erased.astype(np.int64)
    _fwht(a)
    for i in range(n):
        a[i] = (((a[i] % Q) + Q) % Q) * walsh[i] % Q
    _fwht(a)
    for i in range(n):
        a[i] = (((a[i] % Q) + Q) % Q) * inv_n % Q
    return a


@jit
def _scatter_scaled(w: np.ndarray, idx: np.ndarray, src: np.ndarray, rows: np.ndarray,
                    logs: np.ndarray, log_t: np.ndarray,
                    exp_t: np.ndarray) -> None:  # pragma: no cover - numba
    """``w[idx[q]] = src[rows[q]] * exp(logs[q])``."""
    v = w.shape[1]
    for q in range(idx.size):
        out = w[idx[q]]
        row = src[rows[q]]
        ls = logs[q]
        for c in range(v):
            out[c] = exp_t[log_t[row[c]] + ls]


@jit
def _gather_scaled(out: np.ndarray, rows: np.ndarray, w: np.ndarray, idx: np.ndarray,
                   logs: np.ndarray, log_t: np.ndarray,
                   exp_t: np.ndarray) -> None:  # pragma: no cover - numba
    """``out[rows[q]] = w[idx[q]] * exp(logs[q])``."""
    v = w.shape[1]
    for q in range(idx.size):
        dst = out[rows[q]]
        row = w[idx[q]]
        ls = logs[q]
        for c in range(v):
            dst[c] = exp_t[log_t[row[c]] + ls]


# --------------------------------------------------------------------------------------------
# the code


def _check(n: Any, k: Any) -> tuple[int, int]:
    """``(n, k)`` as ints, or :class:`~mpi_coded.errors.ConfigError` naming the bad one."""
    require(isinstance(n, int | np.integer) and bool(2 <= n <= ORDER), "n",
            f"code length must be an integer in [2, {ORDER}]", n)
    require(isinstance(k, int | np.integer) and bool(1 <= k < n), "k",
            f"dimension must be an integer with 1 <= k < n = {n}", k)
    return int(n), int(k)


def _layout(n: int, k: int) -> tuple[str, int, int, int, int, int]:
    """``(kind, N, data offset, parity offset, zeros start, zeros stop)`` for an (n, k) code."""
    n, k = _check(n, k)
    p = n - k
    k2, p2 = _pow2(k), _pow2(p)
    if min(k2, p2) + max(k, p) <= ORDER:
        if p2 < k2 or (p2 == k2 and k <= p):
            big = _pow2(p2 + k)
            return "high", big, p2, 0, p2 + k, big
        return "low", _pow2(k2 + p), 0, k2, k, k2
    big = _pow2(n)
    return "full", big, p, 0, n, big


class RSCode:
    """Systematic (n, k) RS code over GF(2^16): positions ``0..k-1`` are the data, ``k..n-1``
    the parity; ``1 <= k < n <= 65536``.

    Position ``q`` is evaluated at ``omega_{eval_index[q]}`` (see the module docstring for the
    three layouts, ``kind``); ``size`` is the transform length ``N`` of decoding.  Arrays are
    uint16 ``(rows, V)``: every method works on ``V`` columns at once.  Per erasure pattern the
    locator logarithms are cached, so decoding many batches with one pattern pays for them once.
    """

    def __init__(self, n: int, k: int) -> None:
        self.n, self.k = _check(n, k)
        self.kind, self.size, self._d_off, self._p_off, z0, z1 = _layout(self.n, self.k)
        self.eval_index = np.concatenate([
            self._d_off + np.arange(self.k), self._p_off + np.arange(self.n - self.k)])
        self._m = self.size.bit_length() - 1
        # erased by default: every index of the length-N code that is no forced zero
        self._erased_base = np.ones(self.size, dtype=np.int8)
        self._erased_base[z0:z1] = 0
        self._patterns: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # the kernels release the GIL: callers may use threads

    def __repr__(self) -> str:
        return f"RSCode(n={self.n}, k={self.k}, kind={self.kind!r}, N={self.size})"

    # -- checks --------------------------------------------------------------------------------

    @staticmethod
    def _words(a: Any, field: str, rows: int) -> np.ndarray:
        arr = np.asarray(a)
        require(arr.dtype == np.uint16, field, "must be a uint16 array", str(arr.dtype))
        require(arr.ndim == 2 and arr.shape[0] == rows, field,
                f"must have shape ({rows}, V)", arr.shape)
        return np.ascontiguousarray(arr)

    # -- encoding ------------------------------------------------------------------------------

    def encode(self, data: np.ndarray) -> np.ndarray:
        """Codeword ``(n, V)`` of ``data`` ``(k, V)``: the data rows, then :meth:`parity`."""
        d = self._words(data, "data", self.k)
        return np.concatenate([d, self._parity(d)])

    def parity(self, data: np.ndarray) -> np.ndarray:
        """The ``n - k`` parity rows ``(n - k, V)`` of ``data`` ``(k, V)``."""
        return self._parity(self._words(data, "data", self.k))

    def _parity(self, d: np.ndarray) -> np.ndarray:
        k, p, v = self.k, self.n - self.k, d.shape[1]
        log_t, exp_t, plog = _tables()
        if self.kind == "high":
            p2 = self._d_off
            acc = np.empty((p2, v), dtype=np.uint16)
            tmp = np.empty((p2 if k > p2 else 0, v), dtype=np.uint16)
            _ifft_sum(d, acc, tmp, p2, log_t, exp_t, plog)
            _fft(acc, 0, 0, p, log_t, exp_t, plog)
            return acc[:p] if p == p2 else acc[:p].copy()
        if self.kind == "low":
            k2 = self._p_off
            coef = np.zeros((k2, v), dtype=np.uint16)
            coef[:k] = d
            _ifft(coef, 0, 0, k, log_t, exp_t, plog)
            chunks = -(-p // k2)
            w = np.tile(coef, (chunks, 1))
            _fft_chunks(w, k2, k2, p, log_t, exp_t, plog)
            return w[:p] if chunks * k2 == p else w[:p].copy()
        # full: the parity positions are the erasures of a decode from the data positions
        return self._solve(np.arange(k), d, np.arange(k), np.arange(k, self.n))

    def generator(self) -> np.ndarray:
        """``(n, k)`` generator ``G = [I; P]``: ``encode(d) == G @ d`` over GF(2^16)."""
        return self.encode(np.eye(self.k, dtype=np.uint16))

    # -- decoding ------------------------------------------------------------------------------

    def used_positions(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """The positions :meth:`decode` reads: the ``k`` smallest (data before parity)."""
        return np.sort(self._positions(positions))[: self.k]

    def _positions(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        pos = np.asarray(positions)
        require(pos.ndim == 1 and (pos.size == 0 or np.issubdtype(pos.dtype, np.integer)),
                "positions", "must be a 1-D sequence of integers", pos.shape)
        require(pos.size >= self.k, "positions",
                f"need at least k = {self.k} received positions", int(pos.size))
        pos = pos.astype(np.int64)
        require(bool(pos.min() >= 0 and pos.max() < self.n), "positions",
                f"must lie in [0, {self.n})", (int(pos.min()), int(pos.max())))
        seen = np.zeros(self.n, dtype=bool)
        seen[pos] = True
        dup = int(pos.size - np.count_nonzero(seen))
        require(dup == 0, "positions", "must be distinct", f"{dup} repeated")
        return pos

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray) -> np.ndarray:
        """The data ``(k, V)`` from codeword rows ``values[q]`` at ``positions[q]``.

        Needs at least ``k`` distinct positions in ``[0, n)``; reads exactly the ``k``
        smallest (:meth:`used_positions`), so received data rows are copied, not recomputed.
        """
        pos = self._positions(positions)
        vals = self._words(values, "values", pos.size)
        order = np.argsort(pos, kind="stable")[: self.k]
        used = pos[order]
        out = np.empty((self.k, vals.shape[1]), dtype=np.uint16)
        have = used[used < self.k]
        out[have] = vals[order[: have.size]]
        if have.size == self.k:
            return out
        missing = np.setdiff1d(np.arange(self.k), have, assume_unique=True)
        out[missing] = self._solve(used, vals, order, missing)
        return out

    def _solve(self, used: np.ndarray, vals: np.ndarray, rows: np.ndarray,
               want: np.ndarray) -> np.ndarray:
        """Erasure decoding: the codeword rows at positions ``want`` from ``vals[rows]`` at the
        ``k`` positions ``used`` (every other index of the length-N code is an erasure)."""
        lam = self._locator(used)
        log_t, exp_t, plog = _tables()
        known = self.eval_index[used]
        wanted = self.eval_index[want]
        work = np.zeros((self.size, vals.shape[1]), dtype=np.uint16)
        _scatter_scaled(work, known, vals, rows.astype(np.int64), lam[known], log_t, exp_t)
        _ifft(work, 0, int(known.min()), int(known.max()) + 1, log_t, exp_t, plog)
        _formal_derivative(work)
        _fft(work, 0, int(wanted.min()), int(wanted.max()) + 1, log_t, exp_t, plog)
        out = np.empty((want.size, vals.shape[1]), dtype=np.uint16)
        _gather_scaled(out, np.arange(want.size), work, wanted, (Q - lam[wanted]) % Q,
                       log_t, exp_t)
        return out

    def _locator(self, used: np.ndarray) -> np.ndarray:
        """Cached ``lam`` (int64, length N) for the erasure pattern "all but ``used``"."""
        key = used.tobytes()
        with self._lock:
            lam = self._patterns.get(key)
            if lam is not None:
                self._patterns.move_to_end(key)
                return lam
        erased = self._erased_base.copy()
        erased[self.eval_index[used]] = 0
        inv_n = pow(2, 16 - self._m, Q)  # 1 / N modulo Q, as 2^16 = 1
        lam = _locator_logs(erased, _walsh_point_logs(self._m), inv_n)
        with self._lock:
            self._patterns[key] = lam
            if len(self._patterns) > PATTERN_CACHE:
                self._patterns.popitem(last=False)
        return lam


# --------------------------------------------------------------------------------------------
# cost model (field multiply-adds)


def _transform_ops(size: int) -> int:
    """Butterflies (one multiply and two adds each) of one FFT of ``size`` points."""
    return size // 2 * max(1, int(math.log2(size)))


def fft_encode_ops(n: int, k: int, vectors: int = 1) -> int:
    """Estimated operations of :meth:`RSCode.parity` on ``vectors`` columns.

    ``high``: ``ceil(k / p2) + 1`` transforms of ``p2`` points; ``low``: ``1 + ceil(p / k2)``
    transforms of ``k2`` points; ``full``: a decode.  Each transform of ``S`` points costs
    ``S/2 log2 S``; plus ``n`` for moving the rows.
    """
    kind, big, d_off, p_off, _, _ = _layout(n, k)
    p = n - k
    if kind == "high":
        per = (-(-k // d_off) + 1) * _transform_ops(d_off) + n
    elif kind == "low":
        per = (1 + -(-p // p_off)) * _transform_ops(p_off) + n
    else:
        return fft_decode_ops(n, k, vectors)
    return per * vectors


def fft_encode_points(n: int, k: int) -> int:
    """Points of each transform :meth:`RSCode.parity` runs (``p2`` for ``high``, ``k2`` for
    ``low``, ``N`` for ``full``): with the columns encoded at once, the transform's working
    set (:func:`mpi_coded.codes.rs_sub.fft_encode_kernel`)."""
    kind, big, d_off, p_off, _, _ = _layout(n, k)
    return d_off if kind == "high" else p_off if kind == "low" else big


def fft_decode_ops(n: int, k: int, vectors: int = 1) -> int:
    """Estimated operations of :meth:`RSCode.decode` with one pattern on ``vectors`` columns.

    ``N log2 N`` once for the locator (two Walsh-Hadamard transforms of ``N`` points), then per
    vector ``N log2 N`` (inverse FFT, FFT) ``+ 2 N`` (scalings); ``N`` = :attr:`RSCode.size`.
    """
    big = _layout(n, k)[1]
    lg = max(1, int(math.log2(big)))
    return big * lg + vectors * (big * lg + 2 * big)


def generator_encode_ops(rows: int, k: int, vectors: int = 1) -> int:
    """Multiply-adds of ``G[rows] @ data``: ``rows k`` per vector."""
    return rows * k * vectors


def generator_decode_ops(k: int, vectors: int = 1) -> int:
    """Decoding with a generator: a ``k x k`` inverse (``~k^3``) once, then ``k^2`` per vector."""
    return k**3 + vectors * k * k


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel, on all three layouts."""
    rng = np.random.default_rng(0)
    for n, k in ((6, 4), (6, 2), (65536, 40000)):  # high, low, full
        code = RSCode(n, k)
        d = rng.integers(0, ORDER, size=(k, 1), dtype=np.uint16)
        c = code.encode(d)
        code.decode(np.arange(code.n - code.k, code.n), c[code.n - code.k:])
