"""Measuring the cost table: seconds per operation of every kernel, on this machine
(docs/theory.md (C.4); measured values: docs/benchmarks.md).

:func:`measure_report` times each kernel on shapes of the paper's setting and returns a
:class:`Measurement`: the table (every key of :data:`mpi_coded.codes.prices.KEYS`) and its
*problems* -- each value that is not a plain measurement: a fit that came out zero or
negative (set to a small positive floor so that the table stays usable), a contention
factor that could not be measured (1.0).  :func:`measure` returns the table and warns about
the problems (``strict``: raises :class:`CalibrationError` instead), so that no clamp or
fallback passes unseen.

Blocked products are priced per nanosecond of the GF kernels' estimate (``product``); their
price per multiply-add (``matmul``) is 0 in a calibration, not a measurement: the estimate
already counts the multiply-adds (:mod:`mpi_coded.codes.prices`).
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpi_coded.analysis.calibration.contention import measure_contention
from mpi_coded.coded.code import PartitionCode, build_code
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes.cauchy import CauchyCode
from mpi_coded.codes.prices import KEYS, FieldOp, Kernel
from mpi_coded.codes.rs_sub import fft_encode_kernel
from mpi_coded.codes.work import price
from mpi_coded.fields import get_field
from mpi_coded.gf_costs import product_ns

FLOORS: dict[FieldOp | Kernel, float] = {
    FieldOp.THIN: 1e-13, FieldOp.THIN_OPERAND: 1e-13, FieldOp.INVERSE: 1e-12,
    FieldOp.INVERSE_STEP: 1e-9, Kernel.PLACE: 1e-9}
"""The value a fit that came out zero or negative is set to (and reported)."""


class CalibrationError(RuntimeError):
    """A strict measurement (:func:`measure` with ``strict``) found problems."""


@dataclass
class Measurement:
    """A measured cost table with string keys, and what in it is not a plain measurement
    (``problems``: key -> why)."""

    table: dict[str, float] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    def fit(self, key: Kernel, value: float, floor: float) -> None:
        """Record the fitted ``value`` of ``key``; one that is not a positive number is set
        to ``floor`` and reported."""
        if math.isfinite(value) and value > 0:
            self.table[str(key)] = float(value)
        else:
            self.table[str(key)] = floor
            self.problems[str(key)] = f"fit {value:.4g} is not > 0: set to {floor:g}"


def _best(fn: Callable[[], object], reps: int = 3) -> float:
    best = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


PRODUCT_SHAPES = [(9, 18, 1800), (18, 18, 300), (180, 180, 300), (20, 60, 6000),
                  (10, 60, 6000), (100, 600, 6000)]
"""Products the ``product`` price is fitted on, beside one large one: a generator row over
many partitions, a short partition's parity rows and inverse product, a long partition's,
and the parity rows of BDC partitions of the paper's size (``T = 100``: 9 to 13 rows of
60 per server, and 20; ``T = 10``: 100 rows of 600)."""


def product_price(f: Any, shapes: Sequence[tuple[int, int, int]],
                  rng: np.random.Generator, reps: int = 3) -> float:
    """Seconds per nanosecond of the GF kernels' estimate (:func:`mpi_coded.gf_kernels.
    product_ns`) of ``f.matmul`` on ``shapes``: of each shape, the best of ``reps`` seconds
    over its estimate; of the shapes, the geometric mean, so that every shape counts the
    same (a sum would be the largest shape's price, and under-price the short products a
    code with many partitions runs by 1.3-1.6x: docs/benchmarks.md)."""
    logs = []
    for m_, k_, n_ in shapes:
        x, y = f.random((m_, k_), rng), f.random((k_, n_), rng)
        took = _best(functools.partial(f.matmul, x, y), reps)
        logs.append(math.log(max(took, 1e-12) / product_ns(m_, k_, n_, f.degree)))
    return math.exp(sum(logs) / len(logs))


def measure_products(deg: int, quick: bool, out: Measurement,
                     rng: np.random.Generator) -> None:
    """The products over GF(2^deg): the scalar kernel (``thin`` per multiply-add and
    ``thin_operand`` per operand element, fitted on one row and six: seconds per operand
    element ``= thin_operand + rows x thin``), the blocked ones (``product``, seconds over
    the estimate's ns, geometric mean over the shapes: :func:`product_price`), the map's
    chunk (``map``); ``matmul`` 0."""
    f = get_field(f"gf2^{deg}")
    f.warm_up()
    field_ = f"gf2^{deg}"
    rows, inner, cols = (64, 512, 512) if quick else (250, 4096, 1024)
    out.table[str(Kernel.gf(field_, FieldOp.MATMUL))] = 0.0
    per_operand = {}
    for t_rows, t_inner, t_cols in ((1, 18, 40000), (6, 6, 60000)):
        t_cols //= 5 if quick else 1
        ta, tb = f.random((t_rows, t_inner), rng), f.random((t_inner, t_cols), rng)
        per_operand[t_rows] = _best(functools.partial(f.matmul, ta, tb), 3) / tb.size
    mac = (per_operand[6] - per_operand[1]) / 5
    out.fit(Kernel.gf(field_, FieldOp.THIN), mac, FLOORS[FieldOp.THIN])
    mac = out.table[str(Kernel.gf(field_, FieldOp.THIN))]
    out.fit(Kernel.gf(field_, FieldOp.THIN_OPERAND), per_operand[1] - mac,
            FLOORS[FieldOp.THIN_OPERAND])
    out.fit(Kernel.gf(field_, FieldOp.PRODUCT),
            product_price(f, [(rows, inner, cols), *PRODUCT_SHAPES], rng), 1e-12)
    # the map: one chunk of the paper's map (250 rows of A times all of X)
    mr, mn = (64, 1200) if quick else (250, 6000)
    out.fit(Kernel.gf(field_, FieldOp.MAP), product_price(f, [(mr, mn, mn)], rng, 2), 1e-12)


def measure_inverse(deg: int, quick: bool, out: Measurement) -> None:
    """An inverse over GF(2^deg): ``k`` pivot steps of ``k^2`` updates, fitted on two sizes
    (``inverse`` per ``k^3``, ``inverse_step`` per step)."""
    f = get_field(f"gf2^{deg}")
    field_ = f"gf2^{deg}"
    f.inv(f.cauchy(4, 4))  # compile galois's inverse before timing it
    k1, k2 = (12, 48) if quick else (18, 96)
    t1 = _best(functools.partial(f.inv, f.cauchy(k1, k1)), 3)
    t2 = _best(functools.partial(f.inv, f.cauchy(k2, k2)), 2)
    out.fit(Kernel.gf(field_, FieldOp.INVERSE), (t2 / k2 - t1 / k1) / (k2**2 - k1**2),
            FLOORS[FieldOp.INVERSE])
    cube = out.table[str(Kernel.gf(field_, FieldOp.INVERSE))]
    out.fit(Kernel.gf(field_, FieldOp.INVERSE_STEP), t1 / k1 - cube * k1**2,
            FLOORS[FieldOp.INVERSE_STEP])


def measure_call(out: Measurement, rng: np.random.Generator) -> None:
    """One sub-code call on a tiny partition: the Python work around a kernel (what a code
    with many short partitions pays per partition)."""
    f16 = get_field("gf2^16")
    tiny = CauchyCode(f16, 9, 6)
    small = f16.random((6, 4), rng)
    word = tiny.encode_rows(range(9), small)
    tiny.decode([1, 2, 3, 6, 7, 8], word[[1, 2, 3, 6, 7, 8]])
    out.fit(Kernel.CALL, _best(lambda: (tiny.encode_rows([7], small),
                                        tiny.decode([1, 2, 3, 6, 7, 8],
                                                    word[[1, 2, 3, 6, 7, 8]])), 20) / 2, 1e-9)


def measure_copy(quick: bool, out: Measurement, rng: np.random.Generator) -> None:
    """A gather of rows (fancy indexing), per element: half the rows, in order, of an ``A``
    of the paper's size (the encode's gathers read ``A`` from memory, not from the
    caches)."""
    side = 1000 if quick else 6000
    src = rng.integers(0, 1 << 16, size=(side, side), dtype=np.uint16)
    idx = np.sort(rng.permutation(side)[: side // 2])
    out.fit(Kernel.COPY, _best(lambda: src[idx], 5) / (len(idx) * side), 1e-13)


def measure_place(quick: bool, out: Measurement, rng: np.random.Generator) -> None:
    """A grouped decoding's loop over partitions (stack each one's values, place its
    outputs), per partition: what a decoding of many short systematic partitions takes
    beyond the rest of its listed work (the copies, the one sub-code call), priced with the
    values measured so far (``copy``, ``call``)."""
    f16 = get_field("gf2^16")
    many = build_code(coded_params("bdc", 9, 6, "1/3", 25, 600, 600, T=300,
                                   field="gf2^16"), f16)
    assert isinstance(many, PartitionCode)
    sys_rows = np.flatnonzero(many.layout.row_position < many.layout.k).tolist()
    width = 200 if quick else 1000
    sys_vals = f16.random((len(sys_rows), width), rng)
    many.decode(sys_rows, sys_vals)
    rest = price([w for w in many.decode_work(sys_rows, width).work
                  if w.kernel is not Kernel.PLACE], out.table)
    took = _best(lambda: many.decode(sys_rows, sys_vals), 5)
    out.fit(Kernel.PLACE, (took - rest) / many.layout.T, FLOORS[Kernel.PLACE])


def measure_rs(quick: bool, out: Measurement, rng: np.random.Generator) -> None:
    """RS codes of the paper's shapes (unified at m = 6000 and 1800, BDC partitions), each
    encoding a 2048-column chunk (the runtime's) and decoding a reducer's outputs: seconds
    over counted operations, summed over the shapes (the long codes weigh most).  The
    encode is fitted twice: ``rs_fft_encode_large`` on the shapes whose transforms outgrow a
    core's cache (:func:`mpi_coded.codes.rs_sub.fft_encode_kernel`), ``rs_fft_encode`` on
    the others."""
    # deferred: numba (rs_fft's kernels), only when RS is measured
    from mpi_coded.codes import rs_fft

    rs_fft.warm_up()
    shapes = ([(2700, 1800, 1800, 120), (1080, 720, 256, 120), (270, 180, 256, 120),
               (36, 24, 256, 120)] if quick
              else [(9000, 6000, 2048, 1000), (2700, 1800, 1800, 300),
                    (900, 600, 2048, 1000), (270, 180, 1800, 300), (36, 24, 2048, 3000)])
    enc: dict[Kernel, list[tuple[float, int]]] = {
        Kernel.RS_FFT_ENCODE: [], Kernel.RS_FFT_ENCODE_LARGE: []}
    dec: list[tuple[float, int]] = []
    for n, k, v, w in shapes:
        code = rs_fft.RSCode(n, k)
        data = rng.integers(0, 1 << 16, size=(k, v), dtype=np.uint16)
        enc[fft_encode_kernel(n, k, v)].append(
            (_best(functools.partial(code.parity, data)), rs_fft.fft_encode_ops(n, k, v)))
        word = code.encode(data[:, :w].copy())
        pos = np.sort(rng.choice(n, size=k, replace=False))
        code.decode(pos, word[pos])  # the erasure pattern's locator, once
        dec.append((_best(functools.partial(code.decode, pos, word[pos])),
                    rs_fft.fft_decode_ops(n, k, w)))
    for key, got in enc.items():
        assert got, f"no calibration shape for {key}"
        out.fit(key, sum(t for t, _ in got) / sum(o for _, o in got), 1e-13)
    out.fit(Kernel.RS_FFT_DECODE, sum(t for t, _ in dec) / sum(o for _, o in dec), 1e-13)


def measure_report(quick: bool = False, contention: bool = True) -> Measurement:
    """Seconds per operation of every kernel and the contention factors, measured here
    (``quick``: smaller shapes; ``contention`` False: factors 1.0, reported as not
    measured), with the problems of the measurement (module docstring)."""
    rng = np.random.default_rng(0)
    out = Measurement()
    for deg in (8, 16):
        measure_products(deg, quick, out, rng)
        measure_inverse(deg, quick, out)
    measure_call(out, rng)
    measure_copy(quick, out, rng)
    measure_place(quick, out, rng)
    measure_rs(quick, out, rng)
    if contention:
        factors, problems = measure_contention(quick)
    else:
        factors = {key: 1.0 for key in KEYS if key.startswith("contention")}
        problems = {key: "not measured (contention=False): 1.0" for key in factors}
    out.table.update(factors)
    out.problems.update(problems)
    out.table = {key: float(out.table[key]) for key in KEYS}
    return out


def measure(quick: bool = False, strict: bool = False) -> dict[str, float]:
    """The table of :func:`measure_report`; its problems are warned about
    (:class:`UserWarning`), or raised as :class:`CalibrationError` with ``strict``."""
    got = measure_report(quick)
    if got.problems:
        text = "; ".join(f"{k}: {v}" for k, v in got.problems.items())
        if strict:
            raise CalibrationError(f"calibration problems: {text}")
        warnings.warn(f"calibration: {text}", stacklevel=2)
    return got.table
