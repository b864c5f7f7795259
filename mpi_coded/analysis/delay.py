"""The shifted-exponential delay model (the BDC paper; docs/theory.md (B.6)).

A server's runtime for a task of complexity ``sigma`` has CDF
``F(t) = 1 - exp(-(t / sigma - 1))`` for ``t >= sigma``: a shift ``sigma`` plus
an exponential tail of mean ``sigma`` (both scale with ``sigma``).  The variant
``scale_tail=False`` scales only the shift (tail of mean 1).

The ``i``-th fastest of ``K`` i.i.d. such runtimes has mean
``sigma (1 + sum_{j=K-i+1}^{K} 1/j)`` and variance ``sigma^2 sum_{j=K-i+1}^{K} 1/j^2``
(order statistics of the exponential: Renyi's representation).

The analytic side (docs/theory.md (B.6); the BDC paper, Sec. II-A and III-C) adds the
moment-matched shifted-Gamma approximation of an order statistic and its CDF
(:func:`order_stat_gamma`, :func:`order_stat_cdf`), the mean wait when the
number of finishers needed is random (:func:`mixture_order_mean`), and the
per-phase complexities over GF(2^l): addition ``l/64``, multiplication
``l log2 l`` (:func:`field_op_costs`); map products (:func:`matvec_ops`);
encoding with ``m`` (dense) or ``m/T`` (block-diagonal) nonzeros per coded row
(eq. (8), :func:`encode_ops`); RS decoding by Berlekamp-Massey (eq. (9)) or
the FFT-based decoder with the paper's fitted curves (eq. (10)).  What a field's operations
cost and the convention costing encoding and decoding travel together as one value,
:class:`DelayCosts` (``sigma_A``, ``sigma_M`` and a :class:`Convention`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mpi_coded.errors import require


def sample_runtime(sigma: float, rng: np.random.Generator, size: int | None = None,
                   scale_tail: bool = True) -> np.ndarray | float:
    """Draw runtimes ``sigma + tail`` with ``tail ~ Exp(sigma)`` (or ``Exp(1)``)."""
    require(sigma >= 0, "sigma", "must be >= 0", sigma)
    tail = rng.exponential(1.0, size=size)
    out = sigma + (sigma * tail if scale_tail else tail)
    return out if size is not None else float(out)


def order_stat_mean(K: int, i: int, sigma: float = 1.0) -> float:
    """Mean of the ``i``-th fastest of ``K`` runtimes (``i`` from 1)."""
    require(1 <= i <= K, "i", f"must be in 1..K={K}", i)
    return sigma * (1.0 + sum(1.0 / j for j in range(K - i + 1, K + 1)))


def order_stat_var(K: int, i: int, sigma: float = 1.0) -> float:
    """Variance of the ``i``-th fastest of ``K`` runtimes."""
    require(1 <= i <= K, "i", f"must be in 1..K={K}", i)
    return sigma**2 * sum(1.0 / j**2 for j in range(K - i + 1, K + 1))


# --------------------------------------------------------------------------------------------
# Moments with either tail convention, and the shifted-Gamma approximation
# (the BDC paper, Sec. II-A)


def order_stat_moments(K: int, i: int, sigma: float = 1.0,
                       scale_tail: bool = True) -> tuple[float, float]:
    """``(mean, variance)`` of the ``i``-th fastest of ``K`` runtimes (docs/theory.md (B.6)).

    ``scale_tail=True`` is :func:`order_stat_mean` / :func:`order_stat_var`; with
    ``scale_tail=False`` (the variant where ``sigma`` only moves the shift) the tail
    has mean 1: mean ``sigma + sum 1/j``, variance ``sum 1/j^2``.
    """
    require(sigma >= 0, "sigma", "must be >= 0", sigma)
    if scale_tail:
        return order_stat_mean(K, i, sigma), order_stat_var(K, i, sigma)
    excess = order_stat_mean(K, i, 1.0) - 1.0
    return sigma + excess, order_stat_var(K, i, 1.0)


@dataclass(frozen=True)
class ShiftedGamma:
    """``shift + Gamma(shape, scale)``: the approximation of an order statistic.

    Moment matched (the BDC paper, Sec. II-A, after [21], [22]): the shift is the
    minimum runtime ``sigma`` and the Gamma part carries the excess mean
    ``E - sigma`` and the whole variance ``V``: shape ``b = (E - sigma)^2 / V``,
    inverse scale ``a = (E - sigma) / V``.  The excess of the ``i``-th order
    statistic is a sum of ``i`` independent exponentials (Renyi), so for
    ``i = 1`` the approximation is exact (shape 1).
    """

    shift: float
    shape: float
    scale: float

    @property
    def rate(self) -> float:
        """Inverse scale ``a``."""
        return 1.0 / self.scale

    @property
    def mean(self) -> float:
        return self.shift + self.shape * self.scale

    @property
    def var(self) -> float:
        return self.shape * self.scale**2

    def cdf(self, t: float | np.ndarray) -> float | np.ndarray:
        """``P(H_(i) <= t) = gamma(b, a (t - shift)) / Gamma(b)`` (lower incomplete Gamma)."""
        from scipy.stats import gamma  # deferred: scipy, only for the gamma law (off a rank's path)

        out = gamma.cdf(np.asarray(t, dtype=np.float64) - self.shift, self.shape, scale=self.scale)
        return float(out) if np.ndim(out) == 0 else np.asarray(out)

    def pdf(self, t: float | np.ndarray) -> float | np.ndarray:
        from scipy.stats import gamma  # deferred: scipy, only for the gamma law (off a rank's path)

        out = gamma.pdf(np.asarray(t, dtype=np.float64) - self.shift, self.shape, scale=self.scale)
        return float(out) if np.ndim(out) == 0 else np.asarray(out)


def order_stat_gamma(K: int, i: int, sigma: float = 1.0,
                     scale_tail: bool = True) -> ShiftedGamma:
    """The moment-matched :class:`ShiftedGamma` of the ``i``-th fastest of ``K``."""
    require(sigma > 0, "sigma", "must be > 0", sigma)
    mean, var = order_stat_moments(K, i, sigma, scale_tail)
    excess = mean - sigma
    return ShiftedGamma(shift=sigma, shape=excess**2 / var, scale=var / excess)


def order_stat_cdf(t: float | np.ndarray, K: int, i: int, sigma: float = 1.0,
                   scale_tail: bool = True) -> float | np.ndarray:
    """``P(i-th fastest of K done by t)``, by the shifted-Gamma approximation."""
    return order_stat_gamma(K, i, sigma, scale_tail).cdf(t)


def mixture_order_mean(pmf: Mapping[int, float], K: int, sigma: float = 1.0,
                       scale_tail: bool = True) -> float:
    """``sum_g P(g) E[H_(g)]``: mean wait when ``g`` finishers are needed w.p. ``P(g)``.

    This is the map delay of BDC (and LT), whose number of finishers needed is random.
    """
    total = float(sum(pmf.values()))
    require(abs(total - 1.0) < 1e-9, "pmf", "probabilities must sum to 1", total)
    return float(sum(p * order_stat_moments(K, g, sigma, scale_tail)[0]
                     for g, p in pmf.items() if p > 0))


# --------------------------------------------------------------------------------------------
# Per-phase complexities over GF(2^l) (the BDC paper, Sec. II-A and eqs. (8)-(10))


@dataclass(frozen=True)
class Ops:
    """Counts of field additions and multiplications."""

    additions: float
    multiplications: float

    def __add__(self, other: Ops) -> Ops:
        return Ops(self.additions + other.additions, self.multiplications + other.multiplications)

    def scaled(self, factor: float) -> Ops:
        return Ops(self.additions * factor, self.multiplications * factor)

    def cost(self, sigma_a: float, sigma_m: float) -> float:
        """The complexity ``sigma = additions * sigma_A + multiplications * sigma_M``."""
        return self.additions * sigma_a + self.multiplications * sigma_m


def field_op_costs(l: int | None) -> tuple[float, float]:  # noqa: E741 (the paper's name)
    """``(sigma_A, sigma_M)`` over GF(2^l): ``l / 64`` and ``l log2 l`` (the BDC paper, after [18]).

    The hidden constants are taken as 1, as in the paper.  ``l = None`` stands for
    the real field (float64): one time unit per addition and per multiplication
    (our choice; the paper only models GF(2^l)).
    """
    if l is None:
        return 1.0, 1.0
    require(isinstance(l, int) and l >= 2, "l", "field degree must be an integer >= 2", l)
    return l / 64.0, l * math.log2(l)


def inner_product_ops(n: float) -> Ops:
    """Inner product of two length-``n`` vectors: ``n - 1`` additions, ``n`` multiplications."""
    return Ops(max(n - 1.0, 0.0), float(n))


def matvec_ops(rows: float, n: float, vectors: float = 1.0) -> Ops:
    """``rows`` inner products of length ``n`` for each of ``vectors`` vectors (the map phase)."""
    return inner_product_ops(n).scaled(rows * vectors)


def encode_ops(coded_rows: float, nonzeros_per_row: float, n: float) -> Ops:
    """Encoding ``coded_rows`` rows of ``C = Psi A`` (eq. (8)).

    Each coded row combines ``nonzeros_per_row`` rows of ``A`` (``m`` for a dense
    code, ``m/T`` for BDC, the degree for LT), column by column over the ``n``
    columns of ``A``.
    """
    return inner_product_ops(nonzeros_per_row).scaled(coded_rows * n)


def bm_decode_ops(code_length: float, xi: float) -> Ops:
    """Berlekamp-Massey erasure decoding of one RS codeword of length ``n`` (eq. (9), [24]).

    ``n (xi n - 1)`` additions and ``n^2 xi`` multiplications, ``xi`` the erased
    fraction (upper bounded by ``1 - q/K``).
    """
    n = float(code_length)
    return Ops(max(n * (xi * n - 1.0), 0.0), n * n * xi)


FFT_FIT_ADD = (2.0, 8.5, 0.867)
"""``(a, b, c)`` of ``a + b n log2(c n)``: additions of the FFT-based RS decoder [23]
(the BDC paper)."""
FFT_FIT_MUL = (2.0, 1.0, 4.0)
"""The same fit for its multiplications (the BDC paper)."""


AUTHORS_FFT_C = 0.86700826
"""The constant ``c`` of the additions' curve in the authors' evaluation code (the paper
prints 0.867; docs/theory.md (C.2))."""


def fft_decode_ops(code_length: float, c_add: float | None = None) -> Ops:
    """FFT-based RS erasure decoding [23] of one codeword of length ``n`` (eq. (10)).

    The paper's curves fitted to the authors' implementation: ``a + b n log2(c n)``
    with :data:`FFT_FIT_ADD` and :data:`FFT_FIT_MUL` (``c_add`` replaces the additions'
    ``c``, e.g. :data:`AUTHORS_FFT_C`).
    """
    n = float(code_length)

    def fit(abc: tuple[float, float, float]) -> float:
        a, b, c = abc
        return max(a + b * n * math.log2(c * n), 0.0)

    add = FFT_FIT_ADD if c_add is None else (FFT_FIT_ADD[0], FFT_FIT_ADD[1], c_add)
    return Ops(fit(add), fit(FFT_FIT_MUL))


def fft_encode_ops(code_length: float, codewords: float, c_add: float | None = None) -> Ops:
    """FFT encoding of ``codewords`` RS codewords of length ``n``, costed like the authors'
    code (docs/theory.md (C.2)): one FFT curve ``F(n)`` of eq. (10) per codeword (unified:
    ``n_cols F(r)`` per server, one codeword per column of ``A``)."""
    return fft_decode_ops(code_length, c_add).scaled(codewords)


def rs_decode_cost(code_length: float, partitions: float, xi: float, sigma_a: float,
                   sigma_m: float, force: str | None = None,
                   c_add: float | None = None) -> tuple[float, str]:
    """Complexity of decoding ``partitions`` RS codewords of length ``code_length`` (one output).

    The cheaper of Berlekamp-Massey (eq. (9)) and the FFT-based decoder (eq. (10)),
    as in the paper; returns ``(sigma, "bm" | "fft")``.  ``force`` (``bm`` or ``fft``)
    takes that decoder (the authors' conventions, docs/theory.md (C.2)).
    """
    bm = bm_decode_ops(code_length, xi).cost(sigma_a, sigma_m) * partitions
    fft = fft_decode_ops(code_length, c_add).cost(sigma_a, sigma_m) * partitions
    if force == "bm":
        return bm, "bm"
    if force == "fft":
        return fft, "fft"
    return (bm, "bm") if bm <= fft else (fft, "fft")


# --------------------------------------------------------------------------------------------
# The costs of one setting, as one value


@dataclass(frozen=True)
class Convention:
    """How the delay model costs encoding and decoding (docs/theory.md (B.6), (C.2)).

    ``fft_encode``: the FFT encoder is an option (the field has an FFT RS codec: the
    runtime's GF(2^16), or a degree given with ``model --l``); ``authors``: the BDC
    authors' evaluation code (unified encodes by FFT, bdc and sc decode by
    Berlekamp-Massey, sc encodes with the ``mu q`` factor, eq. (10) with 0.86700826,
    the map's additions ``n (rho - 1)``)."""

    fft_encode: bool = False
    authors: bool = False

    @property
    def c_add(self) -> float | None:
        """The additions' ``c`` of eq. (10) (None: the paper's 0.867)."""
        return AUTHORS_FFT_C if self.authors else None


DEFAULT_CONVENTION = Convention()


@dataclass(frozen=True)
class DelayCosts:
    """What the delay model charges in one setting: ``sa`` (``sigma_A``) per field
    addition, ``sm`` (``sigma_M``) per multiplication, and the :class:`Convention`
    costing encoding and decoding.  The scheme objects' delay terms take this one value
    (:meth:`mpi_coded.coded.schemes.base.Scheme.model_terms`)."""

    sa: float
    sm: float
    conv: Convention = DEFAULT_CONVENTION

    @classmethod
    def of_field(cls, l: int | None,  # noqa: E741 (the paper's name)
                 conv: Convention = DEFAULT_CONVENTION) -> DelayCosts:
        """The costs over GF(2^l) (:func:`field_op_costs`; ``l = None``: float64)."""
        sa, sm = field_op_costs(l)
        return cls(sa, sm, conv)

    def cost(self, ops: Ops) -> float:
        """``ops`` weighted: ``additions * sa + multiplications * sm``."""
        return ops.cost(self.sa, self.sm)

    def rs_decode(self, code_length: float, partitions: float, xi: float,
                  force: str | None = None) -> tuple[float, str]:
        """:func:`rs_decode_cost` at these costs and the convention's eq. (10) constant."""
        return rs_decode_cost(code_length, partitions, xi, self.sa, self.sm, force,
                              self.conv.c_add)
