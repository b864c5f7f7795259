"""Predicted load and delay of every scheme (docs/theory.md (B.3), (B.6); the BDC paper,
Sec. II-A, III-C, VI).

``D = D_encode + D_map + D_reduce`` in time units of the shifted-exponential
model (:mod:`mpi_coded.analysis.delay`): a phase whose per-server complexity is
``sigma`` lasts as long as the ``i``-th fastest server needs, mean
``E[H_(i)] = sigma (1 + sum_{j=K-i+1}^{K} 1/j)`` (``scale_tail=False``:
``sigma + sum 1/j``).  Complexities weight additions by ``sigma_A = l/64`` and
multiplications by ``sigma_M = l log2 l`` over GF(2^l) (1 and 1 over float64).

========= ============= ===================== ================================
scheme    rows/server   encode (nonzeros/row) reduce (per output, per reducer)
========= ============= ===================== ================================
uc        ``m/K``       none                  none
cmr       ``mu q m/K``  none                  none (the BDC paper)
sc        ``m/q``       ``q`` (T = m/q)       ``m/q`` RS codes of length ``K``
unified   ``mu m``      ``m`` (dense)         one RS code of length ``r``
bdc       ``mu m``      ``m/T``               ``T`` RS codes of length ``r/T``
lt        ``mu m``      mean degree           peeling: one product and one
                                              addition per edge
========= ============= ===================== ================================

* encode (eq. (8)): every server encodes the rows it stores; wait for all ``K``.
  Where the costed field has an FFT RS codec (GF(2^16), the runtime's, or a degree
  above 8 given with ``model --l``) the encoding is the cheaper of eq. (8) and FFT
  encoding, one codeword of eq. (10)'s curve per column of ``A`` and partition the server
  stores rows of (unified: ``n F(r)``, the authors' convention; docs/theory.md (C.2));
  ``predict`` reports the ``encoder`` costed.
* conventions: ``repository`` (this table) or ``authors`` (docs/theory.md (C.2): the BDC
  authors' evaluation code -- ``l = ceil(log2(r + 1))``, FFT encoding for unified, eq. (8)
  for bdc and sc with sc's ``mu q`` factor, Berlekamp-Massey for bdc and sc, eq. (10) with
  0.86700826, the map's additions ``n (rho - 1)``), which reproduces their ``D / D_UC``.
* map: ``rows x n`` products per vector, ``N`` vectors; wait for ``K`` (uc,
  cmr), ``q`` (sc, unified), or the number ``g`` of finishers the map-end rule
  needs (bdc: random, its distribution from :func:`bdc_load.servers_needed_pmf`
  for the assignment ``P``, and ``D_map = sum_g P(g) E[H_(g)]``; lt: the first
  ``g`` whose stored rows number ``>= ceil(m (1 + eps))``).
* reduce: each of the ``q`` reducers decodes ``N/q`` outputs; RS decoding by
  the cheaper of Berlekamp-Massey (eq. (9), erased fraction ``xi = 1 - q/K``)
  and the FFT decoder (eq. (10), the paper's fitted curves); wait for all ``q``.
  The paper gives no curve for LT decoding: we charge the standard peeling
  cost, one multiplication and one addition per edge of the decoding graph,
  ``ceil(m (1 + eps))`` rows times the mean degree (inactivation's small dense
  solve is left out).
* load: the one its load rule declares (:meth:`Scheme.load`: uc, cmr, sc, unified),
  :func:`mpi_coded.analysis.bdc_load.bdc_load` of ``P`` (bdc, default: the
  heuristic), and for lt the unified formula with the reducers needing
  ``(1 + eps) m`` values instead of ``m`` (:func:`mpi_coded.analysis.loads.lt_load`).

Each row of the table is the scheme object's
(:meth:`~mpi_coded.coded.schemes.base.Scheme.model_terms`); :func:`predict`
turns the terms into delays the same way for every scheme.  A scheme that
:attr:`~mpi_coded.coded.schemes.base.Scheme.takes_assignment` (bdc) gets its
load and servers waited for from its assignment matrix.

LT's ``eps`` defaults to the robust Soliton design overhead ``beta - 1``
(:func:`mpi_coded.codes.lt.design_overhead`), which the plain peeling decoder
needs; the inactivation decoder of :mod:`mpi_coded.codes.lt` needs far less
(measure it with :func:`mpi_coded.codes.lt.measure_overhead`, pass ``eps``).

``field="auto"`` costs every scheme of a setting in one field: the smallest
GF(2^l) holding the unified ``(r, m)`` MDS code, ``r = m K/q`` (else the
scheme's own code), so that schemes are compared at equal ``l``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.analysis.bdc_load import (
    EXACT_LIMIT,
    SAMPLES,
    bdc_load,
    check_P,
    mean_servers_needed,
    servers_needed_pmf,
)
from mpi_coded.analysis.delay import (
    Convention,
    DelayCosts,
    Ops,
    matvec_ops,
    mixture_order_mean,
    order_stat_moments,
)
from mpi_coded.analysis.loads import check_reference, is_int
from mpi_coded.coded.assignment import heuristic_assignment
from mpi_coded.coded.params import (
    AUTO_FIELD,
    FIELD_DEGREE,
    GF_CAPACITY,
    CodedParams,
    check_capacity,
    check_field,
    pick_field,
)
from mpi_coded.coded.schemes import SCHEMES, get, names
from mpi_coded.codes.lt import DEFAULT_C, DEFAULT_DELTA
from mpi_coded.errors import require

MODEL_SCHEMES = SCHEMES
"""The package's own schemes: every scheme has a model."""


def model_schemes() -> tuple[str, ...]:
    """Every registered scheme, plugins' included (asked when a parser is built, after the
    plugins are loaded): every scheme has a model."""
    return names()

CONVENTIONS = ("repository", "authors")
"""Delay-model conventions: this repository's (docs/theory.md (B.6)) or the BDC authors'
evaluation code's (docs/theory.md (C.2))."""


@dataclass(frozen=True)
class ModelSetting:
    """One setting of the analytic model: the sizes (a :class:`CodedParams`) and the
    model's options; validated on construction (rules in :func:`check_setting`).

    ``eps`` is the LT overhead (lt only; None: the design overhead), ``c`` and
    ``delta`` the robust Soliton parameters (lt only), ``scale_tail`` the delay
    model's convention (:mod:`mpi_coded.analysis.delay`).
    """

    params: CodedParams
    eps: float | None = None
    c: float = DEFAULT_C
    delta: float = DEFAULT_DELTA
    scale_tail: bool = True
    degree: int | None = None
    """``model --l``: cost the field as GF(2^degree) (None: the field's own degree)."""
    convention: str = "repository"
    """``repository`` (docs/theory.md (B.6)) or ``authors`` (docs/theory.md (C.2))."""

    def __post_init__(self) -> None:
        check_setting(self)

    @property
    def conv(self) -> Convention:
        """What the scheme objects cost: the FFT encoder is offered where an FFT RS codec
        exists for the costed field (GF(2^16), the runtime's; any ``--l`` above 8)."""
        l = self.l  # noqa: E741 (the paper's name)
        return Convention(fft_encode=l is not None and l > 8,
                          authors=self.convention == "authors")

    @property
    def scheme(self) -> str:
        return self.params.scheme

    @property
    def field_name(self) -> str:
        """The field costed: ``auto`` is the smallest GF(2^l) holding the unified
        ``(r, m)`` code, ``r = m K/q`` (else the scheme's own MDS code), so that every
        scheme of a setting is costed at the same ``l``."""
        p = self.params
        if p.field != AUTO_FIELD:
            return p.field
        r = p.m * p.K // p.q
        if r <= GF_CAPACITY["gf2^16"]:
            return pick_field(max(r, 2))
        own = p.spec.model_code_length(p)
        return pick_field(own) if own is not None else "gf2^16"

    @property
    def l(self) -> int | None:  # noqa: E743 (the paper's name)
        """Field degree costed (None for float64): ``degree`` if given; with the authors'
        conventions ``ceil(log2(r + 1))``; else the degree of :attr:`field_name`."""
        if self.degree is not None:
            return self.degree
        if self.convention == "authors" and self.params.field == AUTO_FIELD:
            r = self.params.m * self.params.K // self.params.q
            return max(2, math.ceil(math.log2(r + 1)))
        return FIELD_DEGREE.get(self.field_name)

    @property
    def field_label(self) -> str:
        """The field as printed: its name, or ``gf2^l`` for a costed degree."""
        if self.degree is None and self.l == FIELD_DEGREE.get(self.field_name):
            return self.field_name
        return "float64" if self.l is None else f"gf2^{self.l}"


def check_setting(s: ModelSetting) -> None:
    """The scheme's rules of an analytic setting
    (:meth:`~mpi_coded.coded.schemes.base.Scheme.check_model`: e.g. bdc and lt need
    ``r = m K/q`` in whole batches, bdc ``T | m`` and ``T | r``, lt ``eps >= 0`` and
    ``m (1 + eps) <= r``); then the field is known and holds the scheme's MDS code."""
    p = s.params
    p.spec.check_model(p, s.eps, s.c, s.delta)
    check_field(p.field)
    length = p.spec.model_code_length(p)
    if p.field in GF_CAPACITY and length is not None:
        check_capacity(p.field, length)
    _ = s.field_name  # auto must resolve
    require(s.convention in CONVENTIONS, "convention", f"must be one of {', '.join(CONVENTIONS)}",
            s.convention)
    if s.degree is not None:
        require(is_int(s.degree) and 2 <= s.degree <= 32, "l",
                "field degree must be an integer in [2, 32]", s.degree)
        length = p.spec.model_code_length(p)
        require(length is None or length <= 1 << s.degree, "l",
                f"GF(2^l) must hold the code: its length {length} needs 2^l >= {length}",
                s.degree)
        require(p.field != "float64", "l", "costs a GF(2^l) field; the field is float64",
                s.degree)


def model_params(scheme: str, K: Any, q: Any, mu: Any, m: Any = None,
                 rows_per_batch: Any = None, n: Any = None, N: Any = None, T: Any = 1,
                 field: str = AUTO_FIELD, eps: float | None = None, **kw: Any) -> ModelSetting:
    """A :class:`ModelSetting` from either ``m`` or the reference batch size.

    ``rows_per_batch`` (``eta_b`` of the unified/bdc layout) gives
    ``m = eta_b C(K, mu q) q / K``; with neither, ``m`` is the smallest valid one.
    ``n`` and ``N`` default to ``m`` (the paper's ``m = n = N``).  ``kw``: ``c``,
    ``delta``, ``scale_tail``, ``degree`` (``model --l``), ``convention``.
    """
    spec = get(scheme)
    mu_f = check_reference(K, q, mu)
    nb = math.comb(K, int(mu_f * q))
    require(m is None or rows_per_batch is None, "m",
            "give either m or rows_per_batch, not both", m)
    if rows_per_batch is not None:
        require(is_int(rows_per_batch) and rows_per_batch >= 1, "rows_per_batch",
                "must be an integer >= 1", rows_per_batch)
        require((rows_per_batch * nb * q) % K == 0, "rows_per_batch",
                f"m = rows_per_batch * C(K, {int(mu_f * q)}) * q / K must be an integer",
                rows_per_batch)
        m = rows_per_batch * nb * q // K
    elif m is None:
        require(is_int(T) and T >= 1, "T", "must be an integer >= 1", T)
        m = _smallest_m(spec.partitioned, K, q, nb, int(T))
    params = CodedParams(spec, K, q, mu_f, m, m if n is None else n, m if N is None else N,
                         T, field)
    return ModelSetting(params, eps, **kw)


def _smallest_m(partitioned: bool, K: int, q: int, nb: int, T: int) -> int:
    """Smallest ``m`` with whole batches of ``r = m K/q`` rows and, with partitions,
    ``T | m``, ``T | r``.

    ``eta_b = g t`` with ``g = K / gcd(K, nb q)`` makes ``m = t a``, ``r = t b``
    (``a = g nb q / K``, ``b = g nb``); ``T`` divides both iff ``T / gcd(T, a, b)`` divides ``t``.
    """
    g = K // math.gcd(K, nb * q)
    a, b = g * nb * q // K, g * nb
    t = T // math.gcd(T, a, b) if partitioned else 1
    return t * a


def _mean(K: int, i: int, sigma: float, scale_tail: bool) -> float:
    return order_stat_moments(K, i, sigma, scale_tail)[0] if sigma > 0 else 0.0


@dataclass(frozen=True)
class PhaseDelays:
    """Expected delay of each phase, in time units (module docstring)."""

    encode: float
    map: float
    reduce: float

    @property
    def total(self) -> float:
        """``D = D_encode + D_map + D_reduce``."""
        return self.encode + self.map + self.reduce

    def to_dict(self) -> dict[str, float]:
        return {"encode": self.encode, "map": self.map, "reduce": self.reduce,
                "total": self.total}


@dataclass(frozen=True)
class Complexities:
    """``sigma_A``, ``sigma_M`` and the per-server complexity of each phase."""

    A: float
    M: float
    encode: float
    map: float
    reduce: float

    def to_dict(self) -> dict[str, float]:
        return {"A": self.A, "M": self.M, "encode": self.encode, "map": self.map,
                "reduce": self.reduce}


@dataclass(frozen=True)
class Prediction:
    """What :func:`predict` returns: load, servers needed, delay per phase and details
    (:meth:`to_dict`: the model's JSON object)."""

    scheme: str
    load: float
    servers_needed: float
    delay: PhaseDelays
    field: str
    l: int | None  # noqa: E741 (the paper's name)
    convention: str
    encoder: str | None
    encode_ops: Ops
    """The encoding's operation counts per server."""
    map_rows: float
    """Rows each server multiplies in the map."""
    sigma: Complexities
    decoder: str | None
    servers_needed_pmf: dict[int, float]
    """``P(g)``: probability that the map phase waits for ``g`` servers."""
    load_exact: Fraction | None
    exact: bool
    eps: float | None

    def to_dict(self) -> dict[str, Any]:
        """The nested dict of the model's JSON output (``load_exact`` a fraction string,
        the pmf keyed by strings)."""
        return {
            "scheme": self.scheme,
            "load": self.load,
            "servers_needed": self.servers_needed,
            "delay": self.delay.to_dict(),
            "field": self.field,
            "l": self.l,
            "convention": self.convention,
            "encoder": self.encoder,
            "ops": {"encode": self.encode_ops, "map_rows": self.map_rows},
            "sigma": self.sigma.to_dict(),
            "decoder": self.decoder,
            "servers_needed_pmf": {str(g): pr for g, pr in sorted(self.servers_needed_pmf.items())},
            "load_exact": None if self.load_exact is None else str(self.load_exact),
            "exact": self.exact,
            "eps": self.eps,
        }


def predict(setting: ModelSetting | CodedParams, assignment: np.ndarray | None = None,
            exact_limit: int = EXACT_LIMIT, samples: int = SAMPLES, seed: int = 0
            ) -> Prediction:
    """Predicted load, servers needed and delay per phase (module docstring).

    ``setting`` may be a runtime :class:`CodedParams` (default model options).
    Returns a :class:`Prediction`: ``scheme``, ``load``, ``servers_needed``, ``delay``
    (encode, map, reduce, total) plus details: ``field``, ``sigma`` (per-server
    complexities and ``sigma_A``, ``sigma_M``), ``decoder``, ``servers_needed_pmf``,
    ``load_exact`` (exact where known), ``exact``, ``eps`` (lt).
    """
    ms = ModelSetting(setting) if isinstance(setting, CodedParams) else setting
    p = ms.params
    spec = p.spec
    K, q, N = p.K, p.q, p.N
    costs = DelayCosts.of_field(ms.l, ms.conv)
    sa, sm, conv = costs.sa, costs.sm, costs.conv
    terms = spec.model_terms(p, ms.eps, ms.c, ms.delta, costs)
    load_exact: Fraction | None = None
    exact = True
    pmf = terms.servers_needed
    if spec.takes_assignment:
        P = (heuristic_assignment(p.n_batches, p.rows_per_batch, p.T)
             if assignment is None else check_P(p, assignment))
        res = bdc_load(p, P, exact_limit=exact_limit, samples=samples, seed=seed)
        load_exact, exact = res.load, res.exact
        pmf, pmf_exact = servers_needed_pmf(p, P, samples=samples, seed=seed)
        exact = exact and pmf_exact
    else:
        require(assignment is None, "assignment",
                f"only scheme {', '.join(names(takes_assignment=True))} takes an assignment "
                "matrix")
    assert pmf is not None
    if spec.closed_form_load:  # the load its load rule declares, as the load command's
        load_exact = spec.load(K, q, p.mu).load
    load = float(load_exact) if load_exact is not None else float(terms.load or 0)
    sigma_enc = terms.encode.cost(sa, sm)
    if conv.authors:  # their addition count n (rho - 1) (docs/theory.md (C.2))
        sigma_map = (Ops(p.n * max(terms.rows - 1.0, 0.0), terms.rows * p.n).scaled(N)
                     .cost(sa, sm))
    else:
        sigma_map = matvec_ops(terms.rows, p.n, N).cost(sa, sm)
    sigma_red = terms.decode_per_output * N / p.wait_for
    d_enc = _mean(K, K, sigma_enc, ms.scale_tail)
    d_map = mixture_order_mean(pmf, K, sigma_map, ms.scale_tail) if sigma_map > 0 else 0.0
    d_red = _mean(q, q, sigma_red, ms.scale_tail)
    return Prediction(
        scheme=p.scheme, load=load, servers_needed=mean_servers_needed(pmf),
        delay=PhaseDelays(d_enc, d_map, d_red), field=ms.field_label, l=ms.l,
        convention=ms.convention, encoder=terms.encoder, encode_ops=terms.encode,
        map_rows=terms.rows,
        sigma=Complexities(sa, sm, sigma_enc, sigma_map, sigma_red),
        decoder=terms.decoder, servers_needed_pmf=dict(sorted(pmf.items())),
        load_exact=load_exact, exact=exact, eps=terms.eps)
