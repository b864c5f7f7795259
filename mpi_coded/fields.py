"""Arithmetic fields used by the codes: real float64 and GF(2^l) via galois.

Arrays cross module boundaries (and the wire) as plain ``numpy.ndarray``:
float64 for the real field, uint8 / uint16 / uint32 words for GF(2^l).  Inside
:class:`GFField` they are viewed as galois arrays (``arr.view(GF)``) for the
arithmetic and viewed back with ``.view(np.ndarray)``.

galois and the numba kernels (:mod:`mpi_coded.gf_kernels`) are imported lazily: import plus
the first JIT-compiled product cost seconds, so the real field never pays for it, and
:meth:`Field.warm_up` lets a rank pay before anything is timed.  A rank whose products are
all small says so (``warm_up(largest)``, :data:`mpi_coded.gf_tables.SMALL_WORK`): its GF
arithmetic then runs on numpy lookup tables (:mod:`mpi_coded.gf_tables`), the same words
bit for bit, and it never imports numba or galois.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mpi_coded import gf_tables
from mpi_coded.errors import ConfigError

FIELD_NAMES = ("float64", "gf2^8", "gf2^16")


class Field:
    """Interface shared by the real field and GF(2^l)."""

    name: str = ""
    dtype: np.dtype[Any] = np.dtype(np.float64)
    exact: bool = False
    order: int = 0  # number of elements; 0 for the reals
    tolerance: float = 0.0
    """Largest :meth:`max_error` a verified result may have (0: exact fields)."""

    def random(self, shape: tuple[int, ...] | int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def inv(self, a: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def zeros(self, shape: tuple[int, ...] | int) -> np.ndarray:
        return np.zeros(shape, dtype=self.dtype)

    def max_error(self, got: np.ndarray, want: np.ndarray) -> float:
        """Relative error over the reals; number of wrong entries over GF."""
        raise NotImplementedError

    def verified(self, err: float) -> bool:
        """Whether a result with :meth:`max_error` ``err`` counts as correct."""
        return bool(err <= self.tolerance)

    def cauchy(self, n_rows: int, n_cols: int) -> np.ndarray:
        """A Cauchy matrix: every square submatrix is invertible."""
        raise NotImplementedError

    def warm_up(self, largest: int | None = None) -> None:
        """Pay import and JIT costs now, before anything is timed; ``largest``: the most
        multiply-adds (``m k n``) of any product this process will make, if known."""
        rng = np.random.default_rng(0)
        a = self.random((4, 4), rng)
        self.matmul(a, a)
        self.matmul(a, a[0])
        self.inv(self.cauchy(3, 3))

    def __repr__(self) -> str:
        return f"<Field {self.name}>"


class RealField(Field):
    """float64 with BLAS products; decoding is exact only up to rounding."""

    name = "float64"
    dtype = np.dtype(np.float64)
    exact = False
    tolerance = 1e-6  # relative; decoding real codes loses a few digits to conditioning
    order = 0

    def random(self, shape: tuple[int, ...] | int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal(shape)

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)

    def inv(self, a: np.ndarray) -> np.ndarray:
        return np.linalg.inv(np.asarray(a, dtype=np.float64))

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a - b

    def max_error(self, got: np.ndarray, want: np.ndarray) -> float:
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        diff = float(np.max(np.abs(got - want))) if want.size else 0.0
        return diff / scale if scale > 0 else diff

    def cauchy(self, n_rows: int, n_cols: int) -> np.ndarray:
        # C[i, j] = 1 / (x_i - y_j), rows scaled to unit norm (row scaling keeps every
        # square submatrix invertible).  The n_rows + n_cols nodes are equispaced in
        # [-1, 1]; the y nodes are spread evenly among them and the x nodes take the
        # rest, which keeps [I; C] far better conditioned than separated nodes
        # (worst 6x3 submatrix ~40 instead of ~500; 15x5 ~1e4 instead of ~7e7).
        n = n_rows + n_cols
        z = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        sel = np.round(np.linspace(0, n - 1, n_cols)).astype(np.int64) if n_cols > 1 else \
            np.array([n // 2], dtype=np.int64)[:n_cols]
        rest = np.ones(n, dtype=bool)  # the nodes not in sel (no setdiff1d: it imports
        rest[sel] = False                # numpy.ma, 20 ms of every rank's start)
        rest = np.flatnonzero(rest)
        c = 1.0 / (z[rest][:, None] - z[sel][None, :])
        return c / np.linalg.norm(c, axis=1, keepdims=True)


class GFField(Field):
    """GF(2^l) through galois; elements travel as unsigned integer words."""

    exact = True

    def __init__(self, degree: int) -> None:
        if degree not in (8, 16):
            raise ConfigError("field", "GF(2^l) is supported for l in {8, 16}", degree)
        self.degree = degree
        self.order = 1 << degree
        self.name = f"gf2^{degree}"
        self.dtype = np.dtype(np.uint8 if degree == 8 else np.uint16)
        self.jit = True
        """Products by the numba kernels and inverses by galois; False after
        ``warm_up(largest)`` with a small ``largest``: numpy tables (until a product is
        larger than :data:`~mpi_coded.gf_tables.SMALL_WORK`)."""

    @functools.cached_property
    def gf(self) -> Any:
        import galois  # deferred: galois, only when asked for its field

        return galois.GF(self.order)

    def _v(self, a: np.ndarray) -> Any:
        return np.ascontiguousarray(a, dtype=self.dtype).view(self.gf)

    def random(self, shape: tuple[int, ...] | int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, self.order, size=shape, dtype=self.dtype)

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(a, dtype=self.dtype)
        b = np.ascontiguousarray(b, dtype=self.dtype)
        if not self.jit and a.ndim in (1, 2) and b.ndim in (1, 2) and \
                a.shape[-1] == b.shape[0]:
            a2 = a.reshape(1, -1) if a.ndim == 1 else a
            b2 = b.reshape(-1, 1) if b.ndim == 1 else b
            if a2.shape[0] * a2.shape[1] * b2.shape[1] <= gf_tables.SMALL_WORK:
                out = gf_tables.matmul(a2, b2, self.degree)  # numpy's matmul shape rules
                if a.ndim == 1 and b.ndim == 1:
                    return out.reshape(())
                return out.reshape(-1) if a.ndim == 1 or b.ndim == 1 else out
            self.jit = True  # a large product after all: the kernels from now on
        from mpi_coded import gf_kernels  # deferred: numba (gf_kernels), only for large products

        return gf_kernels.gf_matmul(a, b, self.degree)

    def matmul_reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """galois's own product: the reference the fast kernels are tested against."""
        out = self._v(a) @ self._v(b)
        return np.asarray(out.view(np.ndarray), dtype=self.dtype)

    def warm_up(self, largest: int | None = None) -> None:
        """Compile (or load from numba's cache) every GF kernel, then galois's inverse; with
        a ``largest`` product of at most :data:`~mpi_coded.gf_tables.SMALL_WORK` multiply-adds
        build the lookup tables alone (:attr:`jit` False)."""
        self.jit = largest is None or largest > gf_tables.SMALL_WORK
        if self.jit:
            # deferred: numba (gf_kernels), only for large products
            from mpi_coded import gf_kernels

            gf_kernels.warm_up(self.degree)
        gf_tables.tables(self.degree)
        super().warm_up(largest)

    def inv(self, a: np.ndarray) -> np.ndarray:
        if not self.jit:
            return gf_tables.inv(np.asarray(a, dtype=self.dtype), self.degree)
        out = np.linalg.inv(self._v(a))
        return np.asarray(out.view(np.ndarray), dtype=self.dtype)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.bitwise_xor(a, b)

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.bitwise_xor(a, b)

    def max_error(self, got: np.ndarray, want: np.ndarray) -> float:
        return float(np.count_nonzero(np.asarray(got) != np.asarray(want)))

    def cauchy(self, n_rows: int, n_cols: int) -> np.ndarray:
        # C[i, j] = 1 / (x_i + y_j), x_i = n_cols + i, y_j = j: all nodes distinct,
        # so x_i + y_j = x_i XOR y_j is never 0.
        if n_rows + n_cols > self.order:
            raise ConfigError(
                "field", f"{self.name} has {self.order} elements, a Cauchy code needs "
                "rows + cols of them", n_rows + n_cols)
        x = np.arange(n_cols, n_cols + n_rows, dtype=self.dtype)
        y = np.arange(n_cols, dtype=self.dtype)
        return gf_tables.reciprocal(x[:, None] ^ y[None, :], self.degree).astype(self.dtype)


@functools.cache
def get_field(name: str) -> Field:
    """The field called ``name`` (one of :data:`FIELD_NAMES`)."""
    if name == "float64":
        return RealField()
    if name == "gf2^8":
        return GFField(8)
    if name == "gf2^16":
        return GFField(16)
    raise ConfigError("field", f"must be one of {', '.join(FIELD_NAMES)}", name)
