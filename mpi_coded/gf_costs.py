"""The GF(2^l) kernels' cost model: estimated nanoseconds of a product on each kernel of
:mod:`mpi_coded.gf_kernels`, from which it picks one (:func:`choose`) and the job's work
prices estimate a product (:func:`product_ns`, :mod:`mpi_coded.codes.work`).

Pure arithmetic on the shapes, apart from the kernels themselves: pricing a job's work
(every rank of a coded job does, a float64 one included) imports neither numba nor the
kernels, which cost about a second of a rank's start.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EstimateCosts:
    """Rough costs in ns, measured on x86-64 (AVX-512), of the pieces of the GF products,
    from which :func:`choose` picks a kernel and :func:`product_ns` estimates its ns.  They
    are the estimate's coefficients, not prices: the one cost table
    (:mod:`mpi_coded.codes.prices`) prices that estimate per ns (``product``, ``map``), so
    only their ratios matter for the runtime.

    ``direct`` / ``matvec``: per scalar multiply-add.  ``lookup1`` / ``lookup2`` /
    ``lookup_a + lookup_b W``: per output bit-plane row and ``k`` in a sliced kernel with W
    words per row.  ``entry1`` / ``entry2`` / ``entry_a + entry_b W``: per table entry
    built.  ``pack`` / ``unpack`` / ``copy`` (transpose): per element.  ``call``: fixed cost
    of a kernel."""

    direct: float
    matvec: float
    lookup1: float
    lookup2: float
    lookup_a: float
    lookup_b: float
    entry1: float
    entry2: float
    entry_a: float
    entry_b: float
    pack: float
    unpack: float
    copy: float
    call: float

    def lookup(self, n_words: int) -> float:
        """ns per output bit-plane row and ``k`` with ``n_words`` words per row."""
        if n_words == 1:
            return self.lookup1
        if n_words == 2:
            return self.lookup2
        return self.lookup_a + self.lookup_b * n_words

    def entry(self, n_words: int) -> float:
        """ns per table entry built with ``n_words`` words per row."""
        if n_words == 1:
            return self.entry1
        if n_words == 2:
            return self.entry2
        return self.entry_a + self.entry_b * n_words


_COST: dict[int, EstimateCosts] = {
    8: EstimateCosts(direct=0.4, matvec=0.5, lookup1=0.48, lookup2=0.92, lookup_a=1.3,
                     lookup_b=0.17, entry1=0.4, entry2=0.7, entry_a=2.0, entry_b=0.16,
                     pack=1.0, unpack=0.75, copy=0.6, call=2e4),
    16: EstimateCosts(direct=0.85, matvec=1.3, lookup1=1.3, lookup2=2.6, lookup_a=3.3,
                      lookup_b=0.27, entry1=0.4, entry2=0.7, entry_a=2.0, entry_b=0.16,
                      pack=2.2, unpack=1.3, copy=0.7, call=2e4),
}
"""The estimate's coefficients per field degree (:class:`EstimateCosts`)."""


def words(n: int) -> int:
    """uint64 words per packed row of ``n`` columns: beyond 4, a multiple of 8 (one AVX-512
    vector), which the word loops vectorise well (measured: 8 words cost less than 7)."""
    n_words = (n + 63) // 64
    return n_words if n_words <= 4 else -(-n_words // 8) * 8


def _sliced_cost(rows: int, k: int, cols: int, degree: int) -> float:
    """Estimated ns of the sliced kernel for (rows, k) @ (k, cols), packing ``cols``."""
    c = _COST[degree]
    n_words = words(cols)
    return (
        rows * k * degree * c.lookup(n_words)
        + k * 256 * c.entry(n_words) * (degree // 8)
        + k * cols * c.pack
        + rows * cols * c.unpack
        + c.call
    )


def _kernel_costs(m: int, k: int, n: int, degree: int) -> dict[str, float]:
    """Estimated ns of an (m, k) @ (k, n) product on each kernel."""
    c = _COST[degree]
    return {
        "direct": (c.matvec if n == 1 else c.direct) * m * k * n,
        "sliced": _sliced_cost(m, k, n, degree),
        # transposed: (b^T a^T)^T, packing a's m columns; pays for three transposed copies
        "sliced_t": _sliced_cost(n, k, m, degree) + c.copy * (m * k + k * n + m * n),
    }


def choose(m: int, k: int, n: int, degree: int) -> str:
    """Cheapest kernel for an (m, k) @ (k, n) product: "direct", "sliced" or "sliced_t"."""
    costs = _kernel_costs(m, k, n, degree)
    return min(costs, key=costs.__getitem__)


def product_ns(m: int, k: int, n: int, degree: int) -> float:
    """Estimated nanoseconds of an ``(m, k) @ (k, n)`` product on the kernel :func:`gf_matmul`
    picks (the development machine's costs; a calibration scales them to this one)."""
    if m <= 0 or k <= 0 or n <= 0:
        return 0.0
    return float(min(_kernel_costs(m, k, n, degree).values()))
