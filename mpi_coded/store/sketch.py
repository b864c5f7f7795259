"""Checking ``y = X w`` without ``X``: Freivalds' check against a sketch of ``X``.

When a job starts from a store and the master cannot read ``X`` (or is told not to), it
verifies each decoded product against a sketch written with the store, ``k`` random
combinations of ``X``'s rows and columns (Freivalds, "Fast probabilistic algorithms",
1979):

* ``r_j`` (``rows`` random field elements, seeded) and ``s_j = r_j^T X``: a decoded
  ``y`` passes when ``r_j . y = s_j . w`` for every ``j`` (docs/storage.md (S.1));
* ``u_j`` (``cols`` elements) and ``t_j = X u_j``: a decoded gradient ``g = X^T z``
  passes when ``u_j . g = t_j . z`` (S.2).

Over GF(2^l) the check is exact arithmetic: a wrong ``y`` passes one ``j`` with
probability ``1 / 2^l`` over the draw of ``r_j``, all ``k`` with ``2^(-l k)``
(:data:`SKETCH_K`: ``k = 4`` over GF(2^8), ``2`` over GF(2^16), ``2^-32`` either way).
Over float64 the residual ``|r_j . y - s_j . w| / (||s_j|| ||w||)`` is held to the field's
tolerance (the scale of the right side, never of ``y``: a wrong entry that makes ``y`` huge
must not shrink its own residual; a ``y`` with an infinite or NaN entry fails at once): an
error much smaller than that, or one whose effect cancels in every ``r_j``
(probability zero for a random error, but the ``r_j`` are fixed when the store is
written), goes unnoticed.  What it cannot see at all: a store whose blocks and sketch
were both made from a wrong ``X`` (the checksums and the data set's hash guard that).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpi_coded.fields import Field
from mpi_coded.store.source import Rows

SKETCH_K = {"float64": 2, "gf2^8": 4, "gf2^16": 2}
"""Rows of the sketch per field (module docstring)."""


ENCODING = "base64-le"
"""How a manifest holds ``s`` and ``t`` (format 2): the little-endian bytes of the array in
base64, one JSON string each.  Format 1 held lists of numbers: at ``X`` of 16384 columns
32768 floats that every rank parsed, hashed and sent as text at its start (about 0.1 s
of CPU a rank); a string is read, hashed and sent at memory speed.  A format-1
manifest's lists become these strings where it is read
(:meth:`mpi_coded.store.manifest.Manifest.from_dict`), the one place that knows both."""


def encode_array(a: np.ndarray) -> str:
    """``a``'s values as the base64 of their little-endian bytes (:data:`ENCODING`)."""
    return base64.b64encode(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
                            .tobytes()).decode("ascii")


def decode_array(v: str, dtype: np.dtype[Any], shape: tuple[int, int]) -> np.ndarray:
    """A sketch array as :func:`encode_array` wrote it."""
    raw = np.frombuffer(base64.b64decode(v, validate=True),
                        dtype=np.dtype(dtype).newbyteorder("<"))
    return raw.astype(dtype).reshape(shape)


def sketch_vectors(field: Field, k: int, n: int, seed: int, which: int) -> np.ndarray:
    """The ``k x n`` random vectors ``r`` (``which = 0``) or ``u`` (``which = 1``)."""
    return field.random((k, n), np.random.default_rng([seed, 7, which]))


@dataclass
class SketchBuilder:
    """Accumulates ``s = r X`` and ``t = X u`` over ``X``'s row chunks, in order."""

    field: Field
    rows: int
    cols: int
    seed: int

    def __post_init__(self) -> None:
        f, k = self.field, SKETCH_K[self.field.name]
        self.r = sketch_vectors(f, k, self.rows, self.seed, 0)
        self.u = sketch_vectors(f, k, self.cols, self.seed, 1)
        self.s = f.zeros((k, self.cols))
        self.t = f.zeros((k, self.rows))

    def add(self, a: int, b: int, x: np.ndarray) -> None:
        f = self.field
        self.s = f.add(self.s, f.matmul(self.r[:, a:b], x))
        self.t[:, a:b] = f.matmul(self.u, x.T)

    def to_dict(self) -> dict[str, Any]:
        return {"k": int(self.r.shape[0]), "seed": self.seed, "encoding": ENCODING,
                "s": encode_array(self.s), "t": encode_array(self.t)}


class Sketch:
    """The master's check of decoded products from a store's sketch (module docstring)."""

    def __init__(self, field: Field, d: dict[str, Any], rows: int, cols: int) -> None:
        self.field = field
        k, seed = int(d["k"]), int(d["seed"])
        self.r = sketch_vectors(field, k, rows, seed, 0)
        self.u = sketch_vectors(field, k, cols, seed, 1)
        self.s = decode_array(d["s"], field.dtype, (k, cols))
        self.t = decode_array(d["t"], field.dtype, (k, rows))

    def error(self, which: int, y: np.ndarray, w: np.ndarray) -> float:
        """Product ``which`` (0: ``y = X w``; 1: ``y = X^T w``) against the sketch: the
        number of failed checks over GF, the largest relative residual over float64."""
        f = self.field
        left, right = (self.r, self.s) if which == 0 else (self.u, self.t)
        if not f.exact and not np.all(np.isfinite(y)):
            return float("inf")  # an overflowed or NaN answer is wrong, whatever its scale
        lhs, rhs = f.matmul(left, y), f.matmul(right, w)
        if f.exact:
            return float(np.count_nonzero(lhs != rhs))
        # the scale of s_j . w (|s_j . w| <= ||s_j|| ||w||), not of y: a y grown huge by a
        # wrong entry must not shrink its own residual
        scale = np.maximum(np.linalg.norm(right, axis=1) * float(np.linalg.norm(w)), 1e-300)
        return float(np.max(np.abs(lhs - rhs) / scale))


class Streamed:
    """``X`` (or ``X^T``) as a matrix read in row chunks: ``X @ v`` and ``X.T @ v`` exact,
    with memory bounded by a chunk (the master's exact check of a job from a store)."""

    exact = True
    streamed = True

    def __init__(self, rows: Rows, field: Field, transposed: bool = False,
                 norm2: float | None = None) -> None:
        self.rows_src, self.field, self.transposed = rows, field, transposed
        self.norm2 = norm2
        r, c = rows.rows, rows.cols
        self.shape = (c, r) if transposed else (r, c)

    @property
    def T(self) -> Streamed:
        return Streamed(self.rows_src, self.field, not self.transposed, self.norm2)

    def error(self, y: np.ndarray, w: np.ndarray) -> float:
        """``y`` against the exact product, computed chunk by chunk."""
        return self.field.max_error(y, self @ w)

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        f, src = self.field, self.rows_src
        if not self.transposed:
            out = f.zeros(src.rows)
            for a, b, x in src.chunks():
                out[a:b] = f.matmul(x, v)
            return out
        acc = f.zeros(src.cols)
        for a, b, x in src.chunks():
            acc = f.add(acc, f.matmul(x.T, v[a:b]))
        return acc


class Sketched:
    """``X`` (or ``X^T``) as the master knows it from a store without ``X``: its shape,
    ``||X||_2`` and Freivalds' check (:meth:`error`); no products (:attr:`exact` False:
    the iterative workloads' end check against numpy is not made)."""

    exact = False

    def __init__(self, sketch: Sketch, shape: tuple[int, int], norm2: float | None,
                 which: int = 0) -> None:
        self.sketch, self.shape, self.norm2, self.which = sketch, shape, norm2, which

    @property
    def T(self) -> Sketched:
        return Sketched(self.sketch, (self.shape[1], self.shape[0]), self.norm2,
                        1 - self.which)

    def error(self, y: np.ndarray, w: np.ndarray) -> float:
        """Freivalds' check of ``y`` against this matrix times ``w`` (S.1, S.2)."""
        return self.sketch.error(self.which, y, w)
