"""The RS FFT code as a sub-code of the coded job, and the cost rule that picks a path.

:class:`RSSubCode` wraps :class:`mpi_coded.codes.rs_fft.RSCode` (systematic ``(n, k)``
Reed-Solomon over GF(2^16), docs/theory.md (C.1)) in the members the coded job's
partitions delegate to (:class:`mpi_coded.coded.code.SubCode`): ``n``, ``k``,
:meth:`~RSSubCode.generator`, :meth:`~RSSubCode.encode_rows`, :meth:`~RSSubCode.decode`.
It is one code with two ways to run it, chosen per call by the cost rule below (the
delay model's "whichever is lower", docs/theory.md (B.6), in seconds):

* ``rs_fft``: encoding computes the ``n - k`` parity rows by the additive FFT, erasure
  decoding runs the FFT decoder (no matrix inversion);
* ``generator``: ``G[rows] @ message`` with the code's own generator rows, and decoding
  by a cached inverse of ``G[positions]`` per erasure pattern -- cheaper for very short
  codes and few vectors.

Both compute the same codewords, so encoding and decoding may take different paths.

The cost rule weighs each path's operation count (:func:`~mpi_coded.codes.rs_fft.fft_encode_ops`,
:func:`~mpi_coded.codes.rs_fft.fft_decode_ops`,
:func:`~mpi_coded.codes.rs_fft.generator_encode_ops`,
:func:`~mpi_coded.codes.rs_fft.generator_decode_ops`) by seconds per operation of its
kernel, :data:`DEFAULT_SECONDS` (measured on the development machine; a calibration file,
:mod:`mpi_coded.analysis.calibration`, holds this machine's values) plus a fixed cost per
call.  :func:`prefer_rs` is the build-time rule of a whole partition shape: the RS code is
used over GF(2^16) when its FFT beats the generator path for encoding or for decoding;
otherwise the partitions keep the ``[I; Cauchy]`` generator path
(:class:`mpi_coded.codes.cauchy.CauchyCode`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mpi_coded.codes import work as W
from mpi_coded.codes.mds import DecoderCache
from mpi_coded.codes.rs_fft import (
    RSCode,
    fft_decode_ops,
    fft_encode_ops,
    generator_encode_ops,
    warm_up,
)
from mpi_coded.codes.work import DEFAULT_SECONDS, THIN_ROWS, seconds
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.fields import Field

__all__ = ["DECODERS", "DEFAULT_SECONDS", "ENCODERS", "THIN_ROWS", "RSSubCode",
           "fft_decode_seconds", "fft_encode_seconds", "generator_decode_seconds",
           "generator_encode_seconds", "prefer_rs", "seconds"]

ENCODERS = ("systematic", "generator", "rs_fft")
"""Encoder names in results (``systematic``: only data rows, copied)."""
DECODERS = ("systematic", "generator", "rs_fft")
"""Decoder names in results (``systematic``: every data row received, nothing to solve)."""


def generator_encode_seconds(field: str, rows: int, k: int, vectors: int,
                             table: Mapping[str, float] | None = None,
                             kernel: str | None = None) -> float:
    """Seconds of ``G[rows] @ message`` (``rows x k`` times ``k x vectors``) on ``kernel``
    (``matmul`` or ``thin``; default: ``thin`` for at most :data:`THIN_ROWS` rows; ``thin``
    also pays ``thin_operand`` per element of ``message``, 0 in the default table)."""
    if rows <= 0:
        return 0.0
    if kernel is None:
        kernel = "thin" if rows <= THIN_ROWS else "matmul"
    operand = k * vectors * seconds(f"{field}_thin_operand", table) if kernel == "thin" else 0.0
    return (generator_encode_ops(rows, k, vectors) * seconds(f"{field}_{kernel}", table)
            + operand + seconds("call", table))


def generator_decode_seconds(field: str, k: int, vectors: int, cached: bool = False,
                             table: Mapping[str, float] | None = None) -> float:
    """Seconds of decoding ``vectors`` columns by an inverse (computed unless ``cached``)."""
    inv = 0.0 if cached else k**3 * seconds(f"{field}_inverse", table)
    return inv + k * k * vectors * seconds(f"{field}_matmul", table) + seconds("call", table)


def fft_encode_seconds(n: int, k: int, vectors: int,
                       table: Mapping[str, float] | None = None) -> float:
    """Seconds of the FFT parity of ``vectors`` columns."""
    return fft_encode_ops(n, k, vectors) * seconds("rs_fft_encode", table) + seconds("call", table)


def fft_decode_seconds(n: int, k: int, vectors: int,
                       table: Mapping[str, float] | None = None) -> float:
    """Seconds of FFT erasure decoding of ``vectors`` columns (one pattern)."""
    return fft_decode_ops(n, k, vectors) * seconds("rs_fft_decode", table) + seconds("call", table)


def prefer_rs(n: int, k: int, encode_vectors: int, decode_vectors: int,
              table: Mapping[str, float] | None = None) -> bool:
    """Whether partitions of shape ``(n, k)`` over GF(2^16) use the RS code (FFT paths
    available) rather than the ``[I; Cauchy]`` generator path: the FFT is cheaper for the
    parity of ``encode_vectors`` columns (against all ``n - k`` parity rows by generator) or
    for decoding ``decode_vectors`` columns with all data rows erased that can be.  The
    generator side is costed as one product of all parity rows (``matmul``), so the
    shortest codes, whose FFT is a handful of butterflies, keep the ``[I; Cauchy]`` path
    (measured: the two paths encode them in about the same time)."""
    if not 1 <= k < n <= 1 << 16:
        return False
    p = n - k
    enc = fft_encode_seconds(n, k, encode_vectors, table) < generator_encode_seconds(
        "gf2^16", p, k, encode_vectors, table, kernel="matmul")
    dec = fft_decode_seconds(n, k, decode_vectors, table) < generator_decode_seconds(
        "gf2^16", k, decode_vectors, table=table)
    return enc or dec


class RSSubCode:
    """``(n, k)`` systematic RS code over GF(2^16) with FFT and generator paths (module
    docstring); ``last_encoder`` / ``last_decoder`` name the path of the latest call."""

    def __init__(self, field: Field, n: int, k: int,
                 table: Mapping[str, float] | None = None) -> None:
        if field.name != "gf2^16":
            raise ConfigError("field", "the RS FFT code works over gf2^16", field.name)
        self.field = field
        self.n = n
        self.k = k
        self.rs = RSCode(n, k)
        self.table = table
        self._G: np.ndarray | None = None
        self._decoders: DecoderCache | None = None
        self.last_encoder = "systematic"
        self.last_decoder = "systematic"

    def __repr__(self) -> str:
        return f"RSSubCode(n={self.n}, k={self.k})"

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the FFT kernels before anything is timed."""
        warm_up()

    def generator(self) -> np.ndarray:
        """The ``n x k`` generator ``[I; P]`` (computed on first use)."""
        if self._G is None:
            self._G = self.rs.generator()
        return self._G

    # --- encoding ------------------------------------------------------------------------
    def encode_cost(self, parity_rows: int, vectors: int) -> tuple[float, float]:
        """``(fft, generator)`` seconds to produce ``parity_rows`` parity rows of ``vectors``
        columns."""
        if parity_rows == 0:
            return 0.0, 0.0
        return (fft_encode_seconds(self.n, self.k, vectors, self.table),
                generator_encode_seconds("gf2^16", parity_rows, self.k, vectors, self.table))

    def encode_work(self, positions: Sequence[int] | np.ndarray, vectors: int
                    ) -> tuple[str, list[W.Work]]:
        """``(encoder, calls)`` of :meth:`encode_rows` on ``vectors`` columns: data rows
        copied; parity rows by the FFT (all ``n - k`` of them) or by their generator rows,
        whichever the cost rule finds cheaper (``systematic``: no parity row)."""
        pos = np.asarray(positions, dtype=np.int64)
        work = [W.call(), W.copy(len(pos) * vectors)]
        par = pos[pos >= self.k]
        if len(par) == 0:
            return "systematic", work
        fft, gen = self.encode_cost(len(np.unique(par)), vectors)
        if fft < gen:
            return "rs_fft", [*work, W.Work("rs_fft_encode", fft_encode_ops(self.n, self.k,
                                                                             vectors))]
        return "generator", [*work, *W.product("gf2^16", len(par), self.k, vectors)]

    def parity_rows(self, message: np.ndarray, which: np.ndarray, out: np.ndarray,
                    into: np.ndarray, chunk: int = 2048) -> None:
        """``out[into] = parity[which]`` of ``message`` (``k x w``) by the FFT, ``chunk``
        columns at a time: only the wanted parity rows are kept (bounded scratch memory)."""
        w = message.shape[1]
        for a in range(0, w, chunk):
            part = self.rs.parity(np.ascontiguousarray(message[:, a:a + chunk]))
            out[into, a:a + chunk] = part[which]

    def encode_rows(self, positions: Sequence[int] | np.ndarray, message: np.ndarray
                    ) -> np.ndarray:
        """Coded rows ``positions`` of ``message`` (``k x w``): data rows copied, parity rows
        by the FFT or by generator rows, whichever the cost rule finds cheaper."""
        pos = np.asarray(positions, dtype=np.int64)
        msg = np.asarray(message, dtype=np.uint16)
        out = np.empty((len(pos), msg.shape[1]), dtype=np.uint16)
        data = pos < self.k
        out[data] = msg[pos[data]]
        par = np.nonzero(~data)[0]
        self.last_encoder = self.encode_work(pos, msg.shape[1])[0]
        if self.last_encoder == "rs_fft":
            self.parity_rows(msg, pos[par] - self.k, out, par)
        elif self.last_encoder == "generator":
            out[par] = self.field.matmul(self.generator()[pos[par]], msg)
        return out

    # --- decoding ------------------------------------------------------------------------
    def decode_cost(self, positions: Sequence[int], vectors: int) -> tuple[float, float]:
        """``(fft, generator)`` seconds to decode ``vectors`` columns from ``positions``."""
        key = tuple(sorted(int(x) for x in positions))
        cached = self._decoders is not None and key in self._decoders
        return (fft_decode_seconds(self.n, self.k, vectors, self.table),
                generator_decode_seconds("gf2^16", self.k, vectors, cached, self.table))

    def decode_work(self, positions: Sequence[int], vectors: int) -> tuple[str, list[W.Work]]:
        """``(decoder, calls)`` of :meth:`decode` from the sorted ``positions`` on ``vectors``
        columns: nothing for the data rows themselves; else the FFT decoder or a cached
        inverse (computed first if new) and a product, whichever the cost rule finds
        cheaper."""
        key = [int(x) for x in positions]
        if key and key[-1] < self.k:
            return "systematic", [W.call(), W.copy(self.k * vectors)]
        fft, gen = self.decode_cost(key, vectors)
        if fft < gen:
            return "rs_fft", [W.call(), W.Work("rs_fft_decode",
                                               fft_decode_ops(self.n, self.k, vectors))]
        cached = self._decoders is not None and key in self._decoders
        inv = [] if cached else W.inverse("gf2^16", self.k)
        return "generator", [*inv, *W.product("gf2^16", self.k, self.k, vectors)]

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray) -> np.ndarray:
        """The ``k x w`` message from ``k`` coded values (``values[j]`` is row
        ``positions[j]``), by the FFT decoder or a cached inverse, whichever is cheaper;
        :class:`~mpi_coded.errors.NotDecodable` if the positions do not suffice."""
        pos = np.asarray(positions, dtype=np.int64)
        if len(pos) != self.k or len(set(pos.tolist())) != self.k or (
                len(pos) and (pos.min() < 0 or pos.max() >= self.n)):
            raise NotDecodable(f"need {self.k} distinct coded rows in [0, {self.n}), "
                               f"got {len(pos)}")
        vals = np.asarray(values, dtype=np.uint16)
        order = np.argsort(pos, kind="stable")
        pos, vals = pos[order], vals[order]
        self.last_decoder = self.decode_work(pos.tolist(), vals.shape[1])[0]
        if self.last_decoder == "systematic":  # the data rows themselves
            return np.array(vals, dtype=np.uint16)
        if self.last_decoder == "rs_fft":
            try:
                return self.rs.decode(pos, np.ascontiguousarray(vals))
            except ConfigError as exc:
                raise NotDecodable(str(exc)) from None
        if self._decoders is None:
            self._decoders = DecoderCache(self.field, self.generator())
        return self.field.matmul(self._decoders.inverse(pos.tolist()), vals)
