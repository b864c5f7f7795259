"""Predicted load and delay of every scheme (SPEC B.3, B.6; seed 001, Sec. II-A, III-C, VI).

``D = D_encode + D_map + D_reduce`` in time units of the shifted-exponential
model (:mod:`mpi_coded.delay`): a phase whose per-server complexity is
``sigma`` lasts as long as the ``i``-th fastest server needs, mean
``E[H_(i)] = sigma (1 + sum_{j=K-i+1}^{K} 1/j)`` (``scale_tail=False``:
``sigma + sum 1/j``).  Complexities weight additions by ``sigma_A = l/64`` and
multiplications by ``sigma_M = l log2 l`` over GF(2^l) (1 and 1 over float64).

========= ============= ===================== ================================
scheme    rows/server   encode (nonzeros/row) reduce (per output, per reducer)
========= ============= ===================== ================================
uc        ``m/K``       none                  none
cmr       ``mu q m/K``  none                  none (seed 001)
sc        ``m/q``       ``q`` (T = m/q)       ``m/q`` RS codes of length ``K``
unified   ``mu m``      ``m`` (dense)         one RS code of length ``r``
bdc       ``mu m``      ``m/T``               ``T`` RS codes of length ``r/T``
lt        ``mu m``      mean degree           peeling: one product and one
                                              addition per edge
========= ============= ===================== ================================

* encode (eq. (8)): every server encodes the rows it stores; wait for all ``K``.
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
* load: :func:`mpi_coded.coded.loads.scheme_load` (uc, cmr, sc, unified),
  :func:`mpi_coded.coded.bdc_load.bdc_load` of ``P`` (bdc, default: the
  heuristic), and for lt the unified formula with the reducers needing
  ``(1 + eps) m`` values instead of ``m`` (:func:`lt_load`).

LT's ``eps`` defaults to the robust Soliton design overhead ``beta - 1``
(:func:`mpi_coded.coded.lt.design_overhead`), which the plain peeling decoder
needs; the inactivation decoder of :mod:`mpi_coded.coded.lt` needs far less
(measure it with :func:`mpi_coded.coded.lt.measure_overhead`, pass ``eps``).

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

from mpi_coded.coded import lt as ltmod
from mpi_coded.coded.assignment import heuristic_assignment
from mpi_coded.coded.bdc_load import (
    EXACT_LIMIT,
    SAMPLES,
    BDCInstance,
    bdc_load,
    mean_servers_needed,
    servers_needed_pmf,
)
from mpi_coded.coded.loads import b_level, scheme_load
from mpi_coded.coded.params import (
    AUTO_FIELD,
    GF_CAPACITY,
    CodedParams,
    check_model,
    parse_fraction,
    pick_field,
)
from mpi_coded.delay import (
    Ops,
    encode_ops,
    field_op_costs,
    matvec_ops,
    mixture_order_mean,
    order_stat_moments,
    rs_decode_cost,
)
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import FIELD_NAMES

MODEL_SCHEMES = ("uc", "cmr", "sc", "unified", "bdc", "lt")
LT_MAX_M = 100_000_000


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


@dataclass(frozen=True)
class ModelParams:
    """One setting of the analytic model; validated on construction (rules in :meth:`check`).

    ``m`` rows and ``n`` columns of ``A``, ``N`` vectors; ``T`` partitions (bdc
    only); ``eps`` the LT overhead (lt only; None: the design overhead); ``c``,
    ``delta`` the robust Soliton parameters (lt only).
    """

    scheme: str
    K: int
    q: int
    mu: Fraction
    m: int
    n: int
    N: int
    T: int = 1
    field: str = AUTO_FIELD
    eps: float | None = None
    c: float = ltmod.DEFAULT_C
    delta: float = ltmod.DEFAULT_DELTA
    scale_tail: bool = True

    def __post_init__(self) -> None:
        require(self.scheme in MODEL_SCHEMES, "scheme",
                f"must be one of {', '.join(MODEL_SCHEMES)}", self.scheme)
        mu = check_model("unified" if self.scheme == "lt" else self.scheme,
                         self.K, self.q, self.mu)
        object.__setattr__(self, "mu", mu)
        self.check()

    # sizes of the reference (unified) layout
    @property
    def p(self) -> int:
        return int(self.mu * self.q)

    @property
    def n_batches(self) -> int:
        return math.comb(self.K, self.p)

    @property
    def r(self) -> int:
        """Coded rows ``m K / q`` (unified, bdc, lt)."""
        return self.m * self.K // self.q

    @property
    def rows_per_batch(self) -> int:
        return self.r // self.n_batches

    def check(self) -> None:
        """Rules: ``m, n, N >= 1``; ``q | m K``; bdc and lt: ``r = m K/q`` splits into
        ``C(K, mu q)`` equal batches; ``T == 1`` unless bdc, for bdc ``T | m`` and
        ``T | r``; lt: ``eps >= 0`` and ``m (1 + eps) <= r``, ``c > 0``,
        ``0 < delta < 1``; the field is known and holds the scheme's MDS code."""
        for name in ("m", "n", "N"):
            val = getattr(self, name)
            require(_is_int(val) and val >= 1, name, "must be an integer >= 1", val)
        require(_is_int(self.T) and self.T >= 1, "T", "must be an integer >= 1", self.T)
        if self.scheme in ("bdc", "lt", "unified"):
            require((self.m * self.K) % self.q == 0, "m", f"q = {self.q} must divide m K",
                    self.m)
        if self.scheme in ("bdc", "lt"):
            require(self.r % self.n_batches == 0, "m",
                    f"r = m K/q must split into C(K, mu q) = {self.n_batches} equal batches",
                    self.m)
        if self.scheme != "bdc":
            require(self.T == 1, "T", "partitions apply only to scheme bdc: must be 1", self.T)
        else:
            require(self.m % self.T == 0, "T", f"T must divide m = {self.m}", self.T)
            require(self.r % self.T == 0, "T", f"T must divide r = {self.r}", self.T)
            BDCInstance(self.K, self.q, self.mu, self.rows_per_batch, self.T).check_size()
        if self.scheme == "lt":
            require(self.m <= LT_MAX_M, "m", f"the LT degree distribution needs m <= {LT_MAX_M}",
                    self.m)
            require(self.c > 0, "c", "must be > 0", self.c)
            require(0 < self.delta < 1, "delta", "must be in (0, 1)", self.delta)
            eps = self.lt_eps
            require(math.isfinite(eps) and eps >= 0, "eps", "must be a number >= 0", eps)
            require(math.ceil(self.m * (1 + eps)) <= self.r, "eps",
                    f"m (1 + eps) must not exceed the r = {self.r} coded rows", eps)
        allowed = (AUTO_FIELD, *FIELD_NAMES)
        require(self.field in allowed, "field", f"must be one of {', '.join(allowed)}",
                self.field)
        length = self.code_length
        if self.field in GF_CAPACITY and length is not None:
            cap = GF_CAPACITY[self.field]
            require(length <= cap, "field",
                    f"{self.field} holds MDS codes of length <= {cap}; this code has length "
                    f"{length}", self.field)
        _ = self.field_name  # auto must resolve

    @property
    def lt_eps(self) -> float:
        """The LT overhead used (``eps`` or the design overhead)."""
        if self.eps is not None:
            return float(self.eps)
        return ltmod.design_overhead(self.m, self.c, self.delta)

    @property
    def code_length(self) -> int | None:
        """Length of each MDS sub-code (None: uncoded or LT)."""
        return {"sc": self.K, "unified": self.r,
                "bdc": self.r // self.T if self.scheme == "bdc" else None}.get(self.scheme)

    @property
    def field_name(self) -> str:
        if self.field != AUTO_FIELD:
            return self.field
        if self.r <= GF_CAPACITY["gf2^16"]:
            return pick_field(max(self.r, 2))
        own = self.code_length
        return pick_field(own) if own is not None else "gf2^16"

    @property
    def l(self) -> int | None:  # noqa: E743 (the paper's name)
        """Field degree (None for float64)."""
        return {"gf2^8": 8, "gf2^16": 16}.get(self.field_name)


def model_params(scheme: str, K: Any, q: Any, mu: Any, m: Any = None,
                 rows_per_batch: Any = None, n: Any = None, N: Any = None, T: Any = 1,
                 field: str = AUTO_FIELD, eps: float | None = None, **kw: Any) -> ModelParams:
    """A :class:`ModelParams` from either ``m`` or the reference batch size.

    ``rows_per_batch`` (``eta_b`` of the unified/bdc layout) gives
    ``m = eta_b C(K, mu q) q / K``; with neither, ``m`` is the smallest valid one.
    ``n`` and ``N`` default to ``m`` (the paper's ``m = n = N``).
    """
    require(scheme in MODEL_SCHEMES, "scheme", f"must be one of {', '.join(MODEL_SCHEMES)}",
            scheme)
    mu_f = check_model("unified" if scheme == "lt" else scheme, K, q, mu)
    nb = math.comb(K, int(mu_f * q))
    require(m is None or rows_per_batch is None, "m",
            "give either m or rows_per_batch, not both", m)
    if rows_per_batch is not None:
        require(_is_int(rows_per_batch) and rows_per_batch >= 1, "rows_per_batch",
                "must be an integer >= 1", rows_per_batch)
        require((rows_per_batch * nb * q) % K == 0, "rows_per_batch",
                f"m = rows_per_batch * C(K, {int(mu_f * q)}) * q / K must be an integer",
                rows_per_batch)
        m = rows_per_batch * nb * q // K
    elif m is None:
        require(_is_int(T) and T >= 1, "T", "must be an integer >= 1", T)
        m = _smallest_m(scheme, K, q, nb, int(T))
    return ModelParams(scheme, K, q, mu_f, m, m if n is None else n, m if N is None else N,
                       T, field, eps, **kw)


def _smallest_m(scheme: str, K: int, q: int, nb: int, T: int) -> int:
    """Smallest ``m`` with whole batches of ``r = m K/q`` rows and, for bdc, ``T | m``, ``T | r``.

    ``eta_b = g t`` with ``g = K / gcd(K, nb q)`` makes ``m = t a``, ``r = t b``
    (``a = g nb q / K``, ``b = g nb``); ``T`` divides both iff ``T / gcd(T, a, b)`` divides ``t``.
    """
    g = K // math.gcd(K, nb * q)
    a, b = g * nb * q // K, g * nb
    t = T // math.gcd(T, a, b) if scheme == "bdc" else 1
    return t * a


def from_coded(params: CodedParams, **kw: Any) -> ModelParams:
    """The :class:`ModelParams` of runtime parameters (same ``m, n, N, T, field``)."""
    return ModelParams(params.scheme, params.K, params.q, params.mu, params.m, params.n,
                       params.N, params.T, params.field, **kw)


def lt_load(K: int, q: int, mu: Any, eps: float) -> float:
    """Load of the LT scheme: SPEC B.3 with reducers needing ``(1 + eps) m`` values.

    ``s_q`` is the smallest ``s >= 2`` with ``sum_{j>=s} B_j <= 1 + eps - mu``;
    strategy 1 unicasts ``1 + eps - mu - sum_{j>=s_q} B_j``; strategy 2 (level
    ``s_q - 1`` multicast too) counts only if it delivers the ``(1 + eps) m``
    values; the cheaper is taken.  ``eps = 0`` is the unified load.
    """
    mu_f = parse_fraction("mu", mu)
    p = int(mu_f * q)
    B = [float(b_level(K, q, mu_f, j)) for j in range(p + 1)]
    need = 1.0 + eps - float(mu_f)

    def tail(s: int) -> float:
        return sum(B[s:])

    s = p + 1
    while s - 1 >= 1 and tail(s - 1) <= need + 1e-12:
        s -= 1
    s = max(s, 2)
    multicast = sum(B[j] / j for j in range(s, p + 1))
    one = multicast + max(need - tail(s), 0.0)
    if s - 1 <= p and tail(s - 1) >= need - 1e-12:
        return min(one, multicast + B[s - 1] / (s - 1))
    return one


def _lt_servers(mp: ModelParams) -> int:
    """First ``g >= q`` whose stored rows number ``>= ceil(m (1 + eps))`` (batch layout)."""
    need = math.ceil(mp.m * (1 + mp.lt_eps))
    for g in range(mp.q, mp.K + 1):
        held = mp.rows_per_batch * (mp.n_batches - math.comb(mp.K - g, mp.p))
        if held >= need:
            return g
    raise ConfigError("eps", "even all K servers do not hold m (1 + eps) coded rows",
                      mp.lt_eps)


def _mean(K: int, i: int, sigma: float, scale_tail: bool) -> float:
    return order_stat_moments(K, i, sigma, scale_tail)[0] if sigma > 0 else 0.0


def predict(params: ModelParams | CodedParams, assignment: np.ndarray | None = None,
            exact_limit: int = EXACT_LIMIT, samples: int = SAMPLES, seed: int = 0
            ) -> dict[str, Any]:
    """Predicted load, servers needed and delay per phase (module docstring).

    Returns ``{"scheme", "load", "servers_needed", "delay": {"encode", "map",
    "reduce", "total"}}`` plus details: ``field``, ``sigma`` (per-server
    complexities and ``sigma_A``, ``sigma_M``), ``decoder``, ``servers_needed_pmf``,
    ``load_exact`` (a fraction string where exact), ``exact``.
    """
    mp = from_coded(params) if isinstance(params, CodedParams) else params
    K, q, m, n, N, mu = mp.K, mp.q, mp.m, mp.n, mp.N, mp.mu
    sa, sm = field_op_costs(mp.l)
    xi = 1.0 - q / K
    scheme = mp.scheme
    load_exact: Fraction | None = None
    exact = True
    decoder: str | None = None
    if scheme in ("uc", "cmr"):
        rows = m / K if scheme == "uc" else mp.p * m / K
        enc = Ops(0.0, 0.0)
        red_per_output = 0.0
        pmf = {K: 1.0}
    elif scheme == "sc":
        rows = m / q
        enc = encode_ops(rows, q, n)
        red_per_output, decoder = rs_decode_cost(K, m / q, xi, sa, sm)
        pmf = {q: 1.0}
    elif scheme == "unified":
        rows = float(mu * m)
        enc = encode_ops(rows, m, n)
        red_per_output, decoder = rs_decode_cost(mp.r, 1, xi, sa, sm)
        pmf = {q: 1.0}
    elif scheme == "bdc":
        rows = float(mu * m)
        enc = encode_ops(rows, m / mp.T, n)
        red_per_output, decoder = rs_decode_cost(mp.r / mp.T, mp.T, xi, sa, sm)
        inst = BDCInstance(K, q, mu, mp.rows_per_batch, mp.T)
        P = (heuristic_assignment(inst.n_batches, inst.rows_per_batch, inst.T)
             if assignment is None else inst.check(assignment))
        res = bdc_load(inst, P, exact_limit=exact_limit, samples=samples, seed=seed)
        load_exact, exact = res.load, res.exact
        pmf, pmf_exact = servers_needed_pmf(inst, P, samples=samples, seed=seed)
        exact = exact and pmf_exact
    else:  # lt
        rows = float(mu * m)
        dbar = ltmod.mean_degree(m, mp.c, mp.delta)
        enc = encode_ops(rows, dbar, n)
        edges = math.ceil(m * (1 + mp.lt_eps)) * dbar
        red_per_output, decoder = Ops(edges, edges).cost(sa, sm), "peeling"
        pmf = {_lt_servers(mp): 1.0}
    require(assignment is None or scheme == "bdc", "assignment",
            "only scheme bdc takes an assignment matrix")
    if scheme in ("uc", "cmr", "sc", "unified"):
        load_exact = scheme_load(scheme, K, q, mu).load
    load = float(load_exact) if load_exact is not None else lt_load(K, q, mu, mp.lt_eps)
    sigma_enc = enc.cost(sa, sm)
    sigma_map = matvec_ops(rows, n, N).cost(sa, sm)
    reducers = K if scheme in ("uc", "cmr") else q
    sigma_red = red_per_output * N / reducers
    d_enc = _mean(K, K, sigma_enc, mp.scale_tail)
    d_map = mixture_order_mean(pmf, K, sigma_map, mp.scale_tail) if sigma_map > 0 else 0.0
    d_red = _mean(q, q, sigma_red, mp.scale_tail)
    return {
        "scheme": scheme,
        "load": load,
        "servers_needed": mean_servers_needed(pmf),
        "delay": {"encode": d_enc, "map": d_map, "reduce": d_red,
                  "total": d_enc + d_map + d_red},
        "field": mp.field_name,
        "sigma": {"A": sa, "M": sm, "encode": sigma_enc, "map": sigma_map,
                  "reduce": sigma_red},
        "decoder": decoder,
        "servers_needed_pmf": {str(g): p for g, p in sorted(pmf.items())},
        "load_exact": None if load_exact is None else str(load_exact),
        "exact": exact,
        "eps": mp.lt_eps if scheme == "lt" else None,
    }
