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

The cost rule prices each path as the list of kernel calls it makes
(:class:`~mpi_coded.codes.work.Work`: :func:`fft_encode_work`, :func:`fft_decode_work`,
:func:`generator_encode_work`, :func:`generator_decode_work`) with one
:class:`~mpi_coded.codes.prices.CostTable` (default :data:`~mpi_coded.codes.prices.DEFAULT`,
the table the runtime decides with) and takes the cheaper; :meth:`RSSubCode.encode_work` /
:meth:`RSSubCode.decode_work` return the very list that won, so the calibrated model
prices the calls the rule chose with the same kernels and counts (docs/theory.md (C.4)).
:func:`prefer_rs` is the build-time rule of a whole partition shape: the RS code is used
over GF(2^16) when its FFT beats the generator path for encoding or for decoding;
otherwise the partitions keep the ``[I; Cauchy]`` generator path
(:class:`mpi_coded.codes.cauchy.CauchyCode`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_coded.codes import work as W
from mpi_coded.codes.mds import DecoderCache
from mpi_coded.codes.prices import CostTable, Kernel
from mpi_coded.codes.work import DEFAULT_SECONDS, THIN_ROWS, Table, seconds
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.fields import Field

__all__ = ["DECODERS", "DEFAULT_SECONDS", "ENCODERS", "THIN_ROWS", "RSSubCode",
           "choose_decoder", "choose_encoder", "fft_decode_seconds", "fft_decode_work",
           "fft_encode_kernel", "fft_encode_seconds", "fft_encode_work", "generator_decode_seconds",
           "generator_decode_work", "generator_encode_seconds", "generator_encode_work",
           "prefer_rs", "seconds"]

ENCODERS = ("systematic", "generator", "rs_fft")
"""Encoder names in results (``systematic``: only data rows, copied)."""
DECODERS = ("systematic", "generator", "rs_fft")
"""Decoder names in results (``systematic``: every data row received, nothing to solve)."""

PARITY_CHUNK = 2048
"""Columns :meth:`RSSub.parity_rows` encodes at a time (bounded scratch memory)."""

LARGE_FFT_BYTES = 3 << 20
"""A transform whose working set (its points times the columns encoded at once, 2 bytes
each) exceeds this is priced as ``rs_fft_encode_large`` (:func:`fft_encode_kernel`): 3 MiB,
between the 2 MiB of a 512-point transform over a 2048-column chunk (0.58-0.70 ns per
counted operation alone) and the 3.5-4 MiB of a 1024-point one over 1800-2048 columns
(0.75-0.93 ns; docs/benchmarks.md)."""


def fft_encode_kernel(n: int, k: int, vectors: int) -> Kernel:
    """The kernel that prices the FFT parity of an ``(n, k)`` code on ``vectors`` columns:
    ``rs_fft_encode_large`` when a transform's working set, :func:`~mpi_coded.codes.rs_fft.
    fft_encode_points` ``x min(vectors, PARITY_CHUNK) x 2`` bytes, exceeds
    :data:`LARGE_FFT_BYTES`, else ``rs_fft_encode``.  The large transforms outgrow a core's
    cache: per counted operation they take 1.3-1.5x the small ones alone, and more beside
    other ranks (docs/theory.md (C.4); measured: docs/benchmarks.md)."""
    cols = min(vectors, PARITY_CHUNK)
    # deferred: numba (rs_fft's kernels), only when RS is priced
    from mpi_coded.codes.rs_fft import fft_encode_points

    big = fft_encode_points(n, k) * cols * 2 > LARGE_FFT_BYTES
    return Kernel.RS_FFT_ENCODE_LARGE if big else Kernel.RS_FFT_ENCODE


# --- the calls of each path ------------------------------------------------------------------
def generator_encode_work(field: str, rows: int, k: int, vectors: int,
                          blocked: bool = False) -> list[W.Work]:
    """``G[rows] @ message`` (``rows x k`` times ``k x vectors``): one product
    (:func:`mpi_coded.codes.work.product`: the scalar kernel for at most
    :data:`THIN_ROWS` rows unless ``blocked``); nothing for no row."""
    return W.product(field, rows, k, vectors, blocked) if rows > 0 else []


def generator_decode_work(field: str, k: int, vectors: int, cached: bool = False
                          ) -> list[W.Work]:
    """Decoding ``vectors`` columns by an inverse (computed unless ``cached``) and one
    product, priced as a blocked one (the rule's own, as it has always priced it)."""
    inv = [] if cached else W.inverse(field, k)
    return [*inv, *W.product(field, k, k, vectors, blocked=True)]


def fft_encode_work(n: int, k: int, vectors: int) -> list[W.Work]:
    """The FFT parity of ``vectors`` columns (all ``n - k`` parity rows) and its call."""
    # deferred: numba (rs_fft's kernels), only when RS runs
    from mpi_coded.codes.rs_fft import fft_encode_ops

    return [W.Work(fft_encode_kernel(n, k, vectors), fft_encode_ops(n, k, vectors)),
            W.call()]


def fft_decode_work(n: int, k: int, vectors: int) -> list[W.Work]:
    """FFT erasure decoding of ``vectors`` columns (one pattern) and its call."""
    # deferred: numba (rs_fft's kernels), only when RS runs
    from mpi_coded.codes.rs_fft import fft_decode_ops

    return [W.Work(Kernel.RS_FFT_DECODE, fft_decode_ops(n, k, vectors)), W.call()]


def generator_encode_seconds(field: str, rows: int, k: int, vectors: int,
                             table: Table = None, blocked: bool = False) -> float:
    """Seconds of :func:`generator_encode_work` in ``table``."""
    return W.price(generator_encode_work(field, rows, k, vectors, blocked), table)


def generator_decode_seconds(field: str, k: int, vectors: int, cached: bool = False,
                             table: Table = None) -> float:
    """Seconds of :func:`generator_decode_work` in ``table``."""
    return W.price(generator_decode_work(field, k, vectors, cached), table)


def fft_encode_seconds(n: int, k: int, vectors: int, table: Table = None) -> float:
    """Seconds of :func:`fft_encode_work` in ``table``."""
    return W.price(fft_encode_work(n, k, vectors), table)


def fft_decode_seconds(n: int, k: int, vectors: int, table: Table = None) -> float:
    """Seconds of :func:`fft_decode_work` in ``table``."""
    return W.price(fft_decode_work(n, k, vectors), table)


# --- the rule ------------------------------------------------------------------------------
def choose_encoder(n: int, k: int, parity_rows: int, vectors: int, table: Table = None
                   ) -> tuple[str, list[W.Work]]:
    """``(encoder, calls)`` producing ``parity_rows`` parity rows of ``vectors`` columns
    of an ``(n, k)`` RS code: ``rs_fft`` (:func:`fft_encode_work`) if it prices lower in
    ``table`` than ``generator`` (:func:`generator_encode_work` over GF(2^16)), else
    ``generator``; ``systematic`` and no call for no parity row."""
    if parity_rows <= 0:
        return "systematic", []
    fft = fft_encode_work(n, k, vectors)
    gen = generator_encode_work("gf2^16", parity_rows, k, vectors)
    t = CostTable.of(table)
    return ("rs_fft", fft) if W.price(fft, t) < W.price(gen, t) else ("generator", gen)


def choose_decoder(n: int, k: int, vectors: int, cached: bool = False, table: Table = None
                   ) -> tuple[str, list[W.Work]]:
    """``(decoder, calls)`` decoding ``vectors`` columns of an ``(n, k)`` RS code from a
    pattern that erases data rows: ``rs_fft`` (:func:`fft_decode_work`) if it prices lower
    than ``generator`` (:func:`generator_decode_work`, the inverse left out if
    ``cached``), else ``generator``."""
    fft = fft_decode_work(n, k, vectors)
    gen = generator_decode_work("gf2^16", k, vectors, cached)
    t = CostTable.of(table)
    return ("rs_fft", fft) if W.price(fft, t) < W.price(gen, t) else ("generator", gen)


def prefer_rs(n: int, k: int, encode_vectors: int, decode_vectors: int,
              table: Table = None) -> bool:
    """Whether partitions of shape ``(n, k)`` over GF(2^16) use the RS code (FFT paths
    available) rather than the ``[I; Cauchy]`` generator path: the FFT is cheaper in
    ``table`` for the parity of ``encode_vectors`` columns (against all ``n - k`` parity
    rows by generator) or for decoding ``decode_vectors`` columns with all data rows
    erased that can be.  The generator side is costed as one blocked product of all parity
    rows, so the shortest codes, whose FFT is a handful of butterflies, keep the
    ``[I; Cauchy]`` path (measured: the two paths encode them in about the same time)."""
    if not 1 <= k < n <= 1 << 16:
        return False
    t = CostTable.of(table)
    enc = W.price(fft_encode_work(n, k, encode_vectors), t) < W.price(
        generator_encode_work("gf2^16", n - k, k, encode_vectors, blocked=True), t)
    dec = choose_decoder(n, k, decode_vectors, table=t)[0] == "rs_fft"
    return enc or dec


class RSSubCode:
    """``(n, k)`` systematic RS code over GF(2^16) with FFT and generator paths (module
    docstring); ``last_encoder`` / ``last_decoder`` name the path of the latest call."""

    def __init__(self, field: Field, n: int, k: int,
                 table: Table = None) -> None:
        if field.name != "gf2^16":
            raise ConfigError("field", "the RS FFT code works over gf2^16", field.name)
        self.field = field
        self.n = n
        self.k = k
        # deferred: numba (rs_fft's kernels), only when an RS code is built
        from mpi_coded.codes.rs_fft import RSCode

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
        # deferred: numba (rs_fft's kernels), only when warming up
        from mpi_coded.codes.rs_fft import warm_up

        warm_up()

    def generator(self) -> np.ndarray:
        """The ``n x k`` generator ``[I; P]`` (computed on first use)."""
        if self._G is None:
            self._G = self.rs.generator()
        return self._G

    # --- encoding ------------------------------------------------------------------------
    def encode_cost(self, parity_rows: int, vectors: int) -> tuple[float, float]:
        """``(fft, generator)`` seconds to produce ``parity_rows`` parity rows of ``vectors``
        columns (the prices :func:`choose_encoder` compares)."""
        if parity_rows == 0:
            return 0.0, 0.0
        return (fft_encode_seconds(self.n, self.k, vectors, self.table),
                generator_encode_seconds("gf2^16", parity_rows, self.k, vectors, self.table))

    def encode_work(self, positions: Sequence[int] | np.ndarray, vectors: int
                    ) -> tuple[str, list[W.Work]]:
        """``(encoder, calls)`` of :meth:`encode_rows` on ``vectors`` columns: the coded
        rows written out (a copy), and the calls of the path :func:`choose_encoder` picks
        with this code's table: the FFT parity (all ``n - k`` rows), one generator product
        of the wanted parity rows, or nothing (``systematic``: no parity row; then one
        sub-code call)."""
        pos = np.asarray(positions, dtype=np.int64)
        par = np.unique(pos[pos >= self.k])
        name, calls = choose_encoder(self.n, self.k, len(par), vectors, self.table)
        return name, [W.copy(len(pos) * vectors), *(calls or [W.call()])]

    def parity_rows(self, message: np.ndarray, which: np.ndarray, out: np.ndarray,
                    into: np.ndarray, chunk: int = PARITY_CHUNK) -> None:
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
    def _cached(self, key: Sequence[int]) -> bool:
        return self._decoders is not None and list(key) in self._decoders

    def decode_cost(self, positions: Sequence[int], vectors: int) -> tuple[float, float]:
        """``(fft, generator)`` seconds to decode ``vectors`` columns from ``positions``
        (the prices :func:`choose_decoder` compares)."""
        key = sorted(int(x) for x in positions)
        return (fft_decode_seconds(self.n, self.k, vectors, self.table),
                generator_decode_seconds("gf2^16", self.k, vectors, self._cached(key),
                                         self.table))

    def decode_work(self, positions: Sequence[int], vectors: int) -> tuple[str, list[W.Work]]:
        """``(decoder, calls)`` of :meth:`decode` from the sorted ``positions`` on ``vectors``
        columns: nothing for the data rows themselves; else the calls of the path
        :func:`choose_decoder` picks with this code's table (the FFT decoder, or a cached
        inverse, computed first if new, and a product)."""
        key = [int(x) for x in positions]
        if key and key[-1] < self.k:
            return "systematic", [W.call(), W.copy(self.k * vectors)]
        return choose_decoder(self.n, self.k, vectors, self._cached(key), self.table)

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
