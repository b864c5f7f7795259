"""One cost table: the seconds per operation of every kernel the coded job runs.

The runtime's path choices (FFT or generator per partition, :mod:`mpi_coded.codes.rs_sub`)
and the calibrated model (:mod:`mpi_coded.analysis.calibration`) price the same calls,
:class:`~mpi_coded.codes.work.Work` values, with this one table, so the two can never
price the same product differently (docs/theory.md (C.4)).

* :class:`Kernel`: an enum of the kernels (its values are the keys of a calibration
  file); :meth:`Kernel.gf` names a field's kernel of a :class:`FieldOp`.
* :class:`Contention`: the four factors of how much slower a rank computes beside others
  (no unit).
* :class:`CostTable`: a typed, immutable table of both; :data:`DEFAULT` is the table the
  runtime decides with (the development machine's rough prices, the runtime's rules as
  they have always priced the calls); ``mpi-coded model --calibrate`` measures this
  machine's.  :meth:`CostTable.of` turns a plain mapping (a calibration file's table,
  string keys) into one, and rejects unknown keys.

Operations per kernel (what a :class:`~mpi_coded.codes.work.Work` counts):

* ``matmul``: multiply-adds of a product of more than
  :data:`~mpi_coded.codes.work.THIN_ROWS` rows (the blocked kernels), and ``product``:
  nanoseconds of the GF kernels' own estimate of it (:func:`mpi_coded.gf_kernels.product_ns`).
  A blocked product lists both; :data:`DEFAULT` prices the multiply-adds only
  (``product`` 0: the rule the runtime has always used), a calibration the estimate only
  (``matmul`` 0: the estimate already counts the multiply-adds, and follows the shape);
* ``thin`` / ``thin_operand``: the scalar kernel of at most ``THIN_ROWS`` rows, per
  multiply-add and per element of its right operand;
* ``map``: the estimate's nanoseconds of a chunk of the map (its packed ``X`` outgrows the
  caches);
* ``inverse`` / ``inverse_step``: per ``k^3`` and per pivot step of a ``k x k`` inverse
  (``inverse_step`` 0 in :data:`DEFAULT`, as the runtime's rule prices an inverse);
* ``rs_fft_encode`` / ``rs_fft_decode``: the RS FFT's counted operations;
  ``rs_fft_encode_large``: those of an encode whose transforms outgrow a core's cache
  (:func:`mpi_coded.codes.rs_sub.fft_encode_kernel`; memory-bound);
* ``copy``: field elements moved; ``call``: one sub-code call (the Python around a
  kernel); ``place``: one partition stacked and placed by a grouped decoding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType


class FieldOp(Enum):
    """A kernel that exists once per GF field (:meth:`Kernel.gf`)."""

    MATMUL = "matmul"
    THIN = "thin"
    THIN_OPERAND = "thin_operand"
    INVERSE = "inverse"
    INVERSE_STEP = "inverse_step"
    PRODUCT = "product"
    MAP = "map"


class Kernel(str, Enum):
    """The kernels of the cost table; the value is the key in a calibration file."""

    GF8_MATMUL = "gf2^8_matmul"
    GF16_MATMUL = "gf2^16_matmul"
    GF8_THIN = "gf2^8_thin"
    GF16_THIN = "gf2^16_thin"
    GF8_THIN_OPERAND = "gf2^8_thin_operand"
    GF16_THIN_OPERAND = "gf2^16_thin_operand"
    GF8_INVERSE = "gf2^8_inverse"
    GF16_INVERSE = "gf2^16_inverse"
    GF8_INVERSE_STEP = "gf2^8_inverse_step"
    GF16_INVERSE_STEP = "gf2^16_inverse_step"
    GF8_PRODUCT = "gf2^8_product"
    GF16_PRODUCT = "gf2^16_product"
    GF8_MAP = "gf2^8_map"
    GF16_MAP = "gf2^16_map"
    RS_FFT_ENCODE = "rs_fft_encode"
    RS_FFT_ENCODE_LARGE = "rs_fft_encode_large"
    RS_FFT_DECODE = "rs_fft_decode"
    CALL = "call"
    PLACE = "place"
    COPY = "copy"

    def __str__(self) -> str:
        return self.value

    @staticmethod
    def gf(field: str, op: FieldOp) -> Kernel:
        """The kernel ``op`` over ``field`` (``gf2^8``, ``gf2^16``; float64 is priced as
        gf2^8)."""
        return _GF[(16 if field == "gf2^16" else 8, op)]

    @property
    def memory_bound(self) -> bool:
        """Whether its speed depends on caches and memory more than on arithmetic
        (:data:`MEMORY_BOUND`)."""
        return self in MEMORY_BOUND

    @property
    def op(self) -> FieldOp | None:
        """Its :class:`FieldOp` (None for a kernel that is not per field)."""
        return _OP.get(self)


_GF: dict[tuple[int, FieldOp], Kernel] = {
    (deg, op): Kernel(f"gf2^{deg}_{op.value}") for deg in (8, 16) for op in FieldOp}
_OP: dict[Kernel, FieldOp] = {k: op for (_, op), k in _GF.items()}


class Contention(str, Enum):
    """How many times more CPU a rank needs beside others (no unit; docs/theory.md (C.4)):
    with one rank per core and with more ranks than cores, for the compute-bound and the
    memory-bound kernels."""

    CORES = "contention_cores"
    OVER = "contention_over"
    CORES_MEMORY = "contention_cores_memory"
    OVER_MEMORY = "contention_over_memory"

    def __str__(self) -> str:
        return self.value


MEMORY_BOUND: frozenset[Kernel] = frozenset(
    k for k in Kernel if k.op in (FieldOp.THIN, FieldOp.THIN_OPERAND, FieldOp.INVERSE,
                                  FieldOp.INVERSE_STEP)
) | {Kernel.COPY, Kernel.CALL, Kernel.PLACE, Kernel.RS_FFT_ENCODE_LARGE}
"""Kernels whose speed depends on caches and memory more than on arithmetic: the scalar
product of a few rows, copies (gathers of rows), the RS FFT encode of transforms larger
than a core's cache, and -- though not memory-bound in the strict sense -- the Python
around short sub-codes (``call``, ``place``) and galois's small inverses.  Ranks sharing
cores slow them down more than the compute-bound kernels (the blocked products, the RS FFT
of smaller transforms): time slices of other ranks evict their caches and two cores share
the memory bus (measured values: docs/benchmarks.md)."""

Price = Kernel | Contention
KEYS: tuple[str, ...] = tuple(k.value for k in Kernel) + tuple(c.value for c in Contention)
"""The keys of a calibration file's table, in file order."""


def parse_key(key: str | Kernel | Contention) -> Price:
    """The :class:`Kernel` or :class:`Contention` named ``key``; KeyError if none is."""
    if isinstance(key, (Kernel, Contention)):
        return key
    try:
        return Kernel(key)
    except ValueError:
        pass
    try:
        return Contention(key)
    except ValueError:
        raise KeyError(f"unknown cost-table key {key!r} (known: {', '.join(KEYS)})") from None


@dataclass(frozen=True, eq=False)
class CostTable:
    """Seconds per operation of every :class:`Kernel` and the :class:`Contention` factors
    (immutable; :meth:`of` builds one from a mapping)."""

    prices: Mapping[Price, float]

    def __post_init__(self) -> None:
        missing = [str(k) for k in (*Kernel, *Contention) if k not in self.prices]
        if missing:
            raise KeyError(f"cost table without {', '.join(missing)}")
        object.__setattr__(self, "prices", MappingProxyType(
            {k: float(self.prices[k]) for k in (*Kernel, *Contention)}))

    def seconds(self, kernel: Kernel) -> float:
        """Seconds per operation of ``kernel``."""
        return self.prices[kernel]

    def factor(self, contention: Contention) -> float:
        """The contention factor ``contention``."""
        return self.prices[contention]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CostTable) and dict(self.prices) == dict(other.prices)

    def __hash__(self) -> int:
        return hash(tuple(self.prices.values()))

    def to_dict(self) -> dict[str, float]:
        """The table with string keys (a calibration file's ``seconds_per_op``)."""
        return {str(k): v for k, v in self.prices.items()}

    def replace(self, changes: Mapping[str | Price, float]) -> CostTable:
        """This table with ``changes`` (keys parsed by :func:`parse_key`)."""
        new: dict[Price, float] = dict(self.prices)
        new.update({parse_key(k): float(v) for k, v in changes.items()})
        return CostTable(new)

    @classmethod
    def of(cls, table: CostTable | Mapping[str, float] | Mapping[Price, float] | None
           ) -> CostTable:
        """``table`` as a :class:`CostTable`: None is :data:`DEFAULT`; a mapping overrides
        :data:`DEFAULT` key by key (an unknown key is a KeyError, never ignored), and one
        that gives ``rs_fft_encode`` but not ``rs_fft_encode_large`` prices both FFT
        encode sizes with it."""
        if table is None:
            return DEFAULT
        if isinstance(table, CostTable):
            return table
        given: dict[str | Price, float] = {parse_key(k): float(v) for k, v in table.items()}
        if Kernel.RS_FFT_ENCODE in given and Kernel.RS_FFT_ENCODE_LARGE not in given:
            # one FFT encode price given: it prices both sizes (as before the large one)
            given[Kernel.RS_FFT_ENCODE_LARGE] = given[Kernel.RS_FFT_ENCODE]
        return DEFAULT.replace(given)

    def check(self) -> list[str]:
        """What is wrong with the values: a price must be finite and ``>= 0``, a factor
        finite and ``>= 1`` (empty: nothing)."""
        bad = []
        for k, v in self.prices.items():
            least = 1.0 if isinstance(k, Contention) else 0.0
            if not (math.isfinite(v) and v >= least):
                bad.append(f"{k} = {v} (must be a number >= {least:g})")
        return bad


DEFAULT = CostTable({
    Kernel.GF8_MATMUL: 0.35e-9,
    Kernel.GF16_MATMUL: 1.0e-9,
    Kernel.GF8_THIN: 2.0e-9,
    Kernel.GF16_THIN: 1.0e-8,
    Kernel.GF8_THIN_OPERAND: 0.0,
    Kernel.GF16_THIN_OPERAND: 0.0,
    Kernel.GF8_INVERSE: 8.0e-8,
    Kernel.GF16_INVERSE: 1.0e-7,
    Kernel.GF8_INVERSE_STEP: 0.0,
    Kernel.GF16_INVERSE_STEP: 0.0,
    Kernel.GF8_PRODUCT: 0.0,
    Kernel.GF16_PRODUCT: 0.0,
    Kernel.GF8_MAP: 1.3e-9,
    Kernel.GF16_MAP: 1.3e-9,
    Kernel.RS_FFT_ENCODE: 5.0e-9,
    Kernel.RS_FFT_ENCODE_LARGE: 5.0e-9,
    Kernel.RS_FFT_DECODE: 5.0e-9,
    Kernel.CALL: 2.0e-5,
    Kernel.PLACE: 5.0e-6,
    Kernel.COPY: 1.0e-9,
    Contention.CORES: 1.0,
    Contention.OVER: 1.0,
    Contention.CORES_MEMORY: 1.0,
    Contention.OVER_MEMORY: 1.0,
})
"""The table the runtime decides with (it reads no calibration): rough prices of a 2-core
development machine, in the form the runtime's cost rules have always used -- a blocked
product per multiply-add (``matmul``; ``product`` 0), the scalar kernel per multiply-add
(``thin_operand`` 0), an inverse per ``k^3`` (``inverse_step`` 0), the RS FFT encode at one
price whatever its size (``rs_fft_encode_large`` = ``rs_fft_encode``), no contention."""
