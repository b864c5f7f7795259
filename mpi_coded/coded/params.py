"""Parameters of a coded matrix-vector job with straggling servers (SPEC B.1).

A job is described by the *reference* parameters of the paper (seed 001):
``K`` servers, the map phase waits for ``q`` of them, each stores a fraction
``mu`` of the coded rows (``mu q`` an integer).  The baselines reuse the same
``K, q, mu`` the way the paper compares schemes (seed 001, "corresponding
UC/CMR/SC schemes") and derive their *effective* parameters from them:

======== ============ ======================= ===================== ============
scheme   waits for    servers per batch ``p`` stored fraction       code
======== ============ ======================= ===================== ============
uc       ``K``        ``1``                   ``1/K``               identity
cmr      ``K``        ``mu q``                ``mu q / K``          identity
sc       ``q``        ``1``                   ``1/q``               ``(K, q)`` MDS per stripe
unified  ``q``        ``mu q``                ``mu``                ``(r, m)`` MDS
bdc      ``q``        ``mu q``                ``mu``                ``T`` x ``(r/T, m/T)`` MDS
lt       ``q`` (+)    ``mu q``                ``mu``                ``(r, m)`` LT
======== ============ ======================= ===================== ============

(+) lt and bdc wait for ``q`` servers and, when those do not suffice to
decode, for extra finishers (:mod:`mpi_coded.coded.mapend`); lt's code is
seeded from the parameters (:mod:`mpi_coded.coded.lt_scheme`).

Sizes (our choice, SPEC B.1 leaves it open): the user gives the batch size
``rows_per_batch`` (``eta_b``).  There are ``C(K, p)`` batches, so
``r = eta_b C(K, p)`` coded rows and ``m = r q_eff / K`` rows of ``A``
(``q_eff`` the number of servers waited for; rate 1 for uc/cmr, so ``r = m``).
:func:`rows_per_batch_for` goes the other way, from a wanted ``m``.

All checks live in :func:`validate` (one :class:`~mpi_coded.errors.ConfigError`
per broken rule, naming the argument); :func:`check_model` is its first part,
the rules the analytic loads need, and is what ``mpi-coded load`` runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import FIELD_NAMES

SCHEMES = ("uc", "cmr", "sc", "unified", "bdc", "lt")
"""Scheme names, as on the command line."""

AUTO_FIELD = "auto"
"""``field`` value asking for the smallest GF(2^l) that holds the code."""

GF_CAPACITY = {"gf2^8": 1 << 8, "gf2^16": 1 << 16}
"""Longest Cauchy-based MDS code (rows + columns of the Cauchy part) per field."""


def parse_fraction(field: str, value: Any) -> Fraction:
    """``value`` (``Fraction``, ``int``, or a string like ``"1/2"``/``"0.5"``) as a Fraction."""
    if isinstance(value, bool):
        raise ConfigError(field, "must be a fraction like 1/2", value)
    if isinstance(value, (Fraction, int)):
        return Fraction(value)
    if isinstance(value, float):
        value = repr(value)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise ConfigError(field, "must be a fraction like 1/2", value)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def wait_count(scheme: str, K: int, q: int) -> int:
    """Number of servers the map phase waits for: ``K`` for uc/cmr, else ``q``."""
    return K if scheme in ("uc", "cmr") else q


def replication(scheme: str, q: int, mu: Fraction) -> int:
    """Servers storing each batch (``p``): 1 for uc/sc, ``mu q`` otherwise."""
    return 1 if scheme in ("uc", "sc") else int(mu * q)


def effective_model(scheme: str, K: int, q: int, mu: Fraction) -> tuple[int, int, Fraction]:
    """``(K, q_eff, mu_eff)``: the unified-model parameters the scheme runs with.

    uc: ``(K, K, 1/K)``; cmr: ``(K, K, mu q / K)``; sc: ``(K, q, 1/q)``;
    unified and bdc: ``(K, q, mu)`` (seed 001, definitions of the baselines).
    """
    q_eff = wait_count(scheme, K, q)
    return K, q_eff, Fraction(replication(scheme, q, mu), q_eff)


MAX_K = 1024
"""Largest number of servers accepted."""

LT_MAX_ROWS = 1_000_000
"""Most coded rows of an lt job (every rank builds and checks the seeded code at start)."""


def check_model(scheme: str, K: Any, q: Any, mu: Any) -> Fraction:
    """Check ``scheme, K, q, mu`` (SPEC B.1); return ``mu`` as a Fraction.

    Rules: scheme known; ``1 <= K <= MAX_K``; ``1 <= q <= K``; ``mu q`` an integer
    with ``1 <= mu q <= q``.  ``MAX_K`` keeps the exact combinatorics (``C(K, mu q)``
    batches) within what a run or a formula can evaluate.
    """
    require(scheme in SCHEMES, "scheme", f"must be one of {', '.join(SCHEMES)}", scheme)
    require(_is_int(K) and K >= 1, "K", "must be an integer >= 1", K)
    require(K <= MAX_K, "K", f"must be <= {MAX_K} servers", K)
    require(_is_int(q) and q >= 1, "q", "must be an integer >= 1", q)
    require(q <= K, "q", f"must satisfy q <= K = {K}", q)
    mu_f = parse_fraction("mu", mu)
    mu_q = mu_f * q
    require(mu_q.denominator == 1, "mu", f"mu * q must be an integer (q = {q})", str(mu_f))
    require(1 <= mu_q <= q, "mu", f"mu * q must be in [1, q] (q = {q})", str(mu_f))
    return mu_f


def pick_field(code_length: int) -> str:
    """Smallest of ``gf2^8``, ``gf2^16`` holding an MDS code of ``code_length`` nodes."""
    for name in ("gf2^8", "gf2^16"):
        if code_length <= GF_CAPACITY[name]:
            return name
    raise ConfigError(
        "field", "no supported GF(2^l) holds the code: its length must be <= 65536",
        code_length)


@dataclass(frozen=True)
class CodedParams:
    """One coded matrix-vector job (SPEC B.1); validated on construction.

    ``mu`` may be given as a string like ``"1/2"``; it is stored as a Fraction.
    ``T`` (partitions) is only meaningful for ``bdc`` and must be 1 otherwise.
    ``field`` is ``"auto"`` (smallest GF holding the code, :func:`pick_field`)
    or one of ``float64``, ``gf2^8``, ``gf2^16``.
    """

    scheme: str
    K: int
    q: int
    mu: Fraction
    rows_per_batch: int
    n: int
    N: int
    T: int = 1
    field: str = AUTO_FIELD

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_model(self.scheme, self.K, self.q, self.mu))
        validate(self)

    # --- derived sizes -------------------------------------------------
    @property
    def mu_q(self) -> int:
        """``mu q`` of the reference parameters."""
        return int(self.mu * self.q)

    @property
    def wait_for(self) -> int:
        """``q_eff``: servers the map phase waits for (and reducers)."""
        return wait_count(self.scheme, self.K, self.q)

    @property
    def replication(self) -> int:
        """``p``: servers holding each batch (batch labels are ``p``-subsets)."""
        return replication(self.scheme, self.q, self.mu)

    @property
    def mu_eff(self) -> Fraction:
        """Fraction of the ``m`` rows' worth stored per server: ``p / q_eff``."""
        return Fraction(self.replication, self.wait_for)

    @property
    def n_batches(self) -> int:
        """``C(K, p)``."""
        return math.comb(self.K, self.replication)

    @property
    def r(self) -> int:
        """Coded rows: ``rows_per_batch * C(K, p)``."""
        return self.rows_per_batch * self.n_batches

    @property
    def m(self) -> int:
        """Rows of ``A``: ``r q_eff / K`` (validated to be an integer)."""
        return self.r * self.wait_for // self.K

    @property
    def outputs_per_reducer(self) -> int:
        """``N / q_eff``."""
        return self.N // self.wait_for

    @property
    def partitions(self) -> int:
        """Independent sub-codes: ``T`` (bdc), ``m/q`` stripes (sc), else 1."""
        if self.scheme == "bdc":
            return self.T
        if self.scheme == "sc":
            return self.m // self.q
        return 1

    @property
    def code_length(self) -> int:
        """Length ``n`` of each sub-code (``r``, ``r/T``, ``K``; ``m`` for identity)."""
        if self.scheme in ("unified", "lt"):
            return self.r
        if self.scheme == "bdc":
            return self.r // self.T
        if self.scheme == "sc":
            return self.K
        return self.m

    @property
    def code_dimension(self) -> int:
        """Dimension ``k`` of each sub-code: values needed to decode a partition
        (lt: ``m`` is a lower bound, the LT overhead comes on top)."""
        if self.scheme in ("unified", "lt"):
            return self.m
        if self.scheme == "bdc":
            return self.m // self.T
        if self.scheme == "sc":
            return self.q
        return self.m

    @property
    def field_name(self) -> str:
        """The field actually used (``auto`` resolved)."""
        if self.field != AUTO_FIELD:
            return self.field
        if self.code_length == self.code_dimension or self.scheme == "lt":
            # identity or LT (random sparse coefficients, no MDS length limit): any field
            return "gf2^8"
        return pick_field(self.code_length)


def validate(p: CodedParams) -> None:
    """Every rule of SPEC B.1 on a :class:`CodedParams`; raise ConfigError on the first broken.

    Rules (in order): :func:`check_model`; ``rows_per_batch, n, N >= 1``;
    ``m = r q_eff / K`` an integer; ``q_eff | N`` (``q`` for coded schemes, ``K``
    for uc/cmr which reduce at all servers); ``T == 1`` unless bdc; for bdc
    ``T | m`` and ``T | r``; the field is known and holds the code
    (gf2^8: length <= 256, gf2^16: <= 65536, float64: any; lt: any field);
    for lt ``q < K`` (else ``r = m``: no spare coded rows), ``r <= LT_MAX_ROWS``
    and the seeded LT code decodes from all its ``r`` rows (else ``rows_per_batch`` is too small;
    :mod:`mpi_coded.coded.lt_scheme`).
    """
    check_model(p.scheme, p.K, p.q, p.mu)
    for name in ("rows_per_batch", "n", "N"):
        val = getattr(p, name)
        require(_is_int(val) and val >= 1, name, "must be an integer >= 1", val)
    require(_is_int(p.T) and p.T >= 1, "T", "must be an integer >= 1", p.T)
    r = p.r
    require(
        (r * p.wait_for) % p.K == 0, "rows_per_batch",
        f"m = rows_per_batch * C(K, {p.replication}) * {p.wait_for} / K must be an integer",
        p.rows_per_batch)
    who = "K" if p.scheme in ("uc", "cmr") else "q"
    require(p.N % p.wait_for == 0, "N", f"{who} = {p.wait_for} must divide N", p.N)
    if p.scheme != "bdc":
        require(p.T == 1, "T", "partitions apply only to scheme bdc: must be 1", p.T)
    else:
        require(p.m % p.T == 0, "T", f"T must divide m = {p.m}", p.T)
        require(r % p.T == 0, "T", f"T must divide r = {r}", p.T)
    if p.scheme == "lt":
        require(p.q < p.K, "q",
                f"scheme lt needs q < K = {p.K}: with q = K there are only r = m coded rows "
                "and an LT code needs more than m", p.q)
    allowed = (AUTO_FIELD, *FIELD_NAMES)
    require(p.field in allowed, "field", f"must be one of {', '.join(allowed)}", p.field)
    if p.code_length > p.code_dimension and p.scheme != "lt":
        if p.field == AUTO_FIELD:
            pick_field(p.code_length)
        elif p.field in GF_CAPACITY:
            cap = GF_CAPACITY[p.field]
            require(
                p.code_length <= cap, "field",
                f"{p.field} holds MDS codes of length <= {cap}; this code has length "
                f"{p.code_length} (use gf2^16 or more partitions T)", p.field)
    if p.scheme == "lt":
        from mpi_coded.coded.lt_scheme import full_code_decodes, lt_seed

        require(r <= LT_MAX_ROWS, "rows_per_batch",
                f"scheme lt builds r = rows_per_batch * C(K, mu q) coded rows on every rank: "
                f"r must be <= {LT_MAX_ROWS} (r = {r})", p.rows_per_batch)
        require(full_code_decodes(p), "rows_per_batch",
                f"too small for scheme lt: all r = {r} coded rows of the seeded LT code "
                f"(seed {lt_seed(p)}) do not determine the m = {p.m} rows of A (an unlucky "
                "draw, likelier for short codes): use more rows per batch", p.rows_per_batch)


def rows_per_batch_for(scheme: str, K: int, q: int, mu: Any, m: int) -> int:
    """``eta_b`` giving ``m`` rows of ``A``: ``m K / (q_eff C(K, p))``, checked integral."""
    mu_f = check_model(scheme, K, q, mu)
    require(_is_int(m) and m >= 1, "m", "must be an integer >= 1", m)
    denom = wait_count(scheme, K, q) * math.comb(K, replication(scheme, q, mu_f))
    require(
        (m * K) % denom == 0, "m",
        f"m * K must be a multiple of q_eff * C(K, p) = {denom} for this scheme", m)
    return m * K // denom
