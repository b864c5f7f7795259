"""The one parameter class of the coded job and of its analytic model (docs/theory.md (B.1)).

A setting is described by the *reference* parameters of the BDC paper: ``K``
servers, the map phase waits for ``q`` of them, each stores a fraction ``mu``
of the coded rows (``mu q`` an integer); and by the sizes ``m`` (rows of ``A``),
``n`` (its columns), ``N`` (vectors), ``T`` (partitions of a block-diagonal
code) and the field.  The scheme object (:attr:`CodedParams.spec`, one of
:mod:`mpi_coded.coded.schemes`) turns them into its *effective* sizes, computed
once on construction by its layout rule (``spec.layout``: servers waited for, servers
per batch, and the code's shape, a :class:`CodeShape`):

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
decode, for extra finishers (:mod:`mpi_coded.coded.mapend`).

There are ``C(K, p)`` batches and ``r = m K / q_eff`` coded rows (rate 1 for
uc/cmr), ``rows_per_batch = r / C(K, p)`` each (``eta_b``).

Two ways to build one, each checking its own rules:

* a runnable job, from the batch size: :meth:`Scheme.params
  <mpi_coded.coded.schemes.base.Scheme.params>` (or by name,
  :func:`mpi_coded.coded.schemes.coded_params`): integral batches, ``q_eff | N``,
  a field that holds the code, ...;
* an analytic setting, from ``m``: :func:`mpi_coded.analysis.model.model_params`
  (the model is continuous: e.g. uc takes any ``m``).

The constructor itself checks what both share: the reference parameters
(:func:`~mpi_coded.analysis.loads.check_reference`) and positive integer sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from mpi_coded.analysis.loads import check_reference, is_int
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import FIELD_NAMES

AUTO_FIELD = "auto"
"""``field`` value asking for the smallest GF(2^l) that holds the code."""

FIELDS = (AUTO_FIELD, *FIELD_NAMES)
"""Accepted ``field`` values."""

GF_CAPACITY = {"gf2^8": 1 << 8, "gf2^16": 1 << 16}
"""Longest Cauchy-based MDS code (rows + columns of the Cauchy part) per field."""

FIELD_DEGREE = {"gf2^8": 8, "gf2^16": 16}
"""``l`` of GF(2^l)."""


def pick_field(code_length: int) -> str:
    """Smallest of ``gf2^8``, ``gf2^16`` holding an MDS code of ``code_length`` nodes."""
    for name in ("gf2^8", "gf2^16"):
        if code_length <= GF_CAPACITY[name]:
            return name
    raise ConfigError(
        "field", "no supported GF(2^l) holds the code: its length must be <= 65536",
        code_length)


def check_field(name: str) -> None:
    """``name`` is ``auto`` or a known field."""
    require(name in FIELDS, "field", f"must be one of {', '.join(FIELDS)}", name)


def check_capacity(name: str, length: int, hint: str = "") -> None:
    """An explicit GF field holds an MDS code of ``length`` nodes (``auto``: some field does)."""
    if name == AUTO_FIELD:
        pick_field(length)
    elif name in GF_CAPACITY:
        cap = GF_CAPACITY[name]
        require(length <= cap, "field",
                f"{name} holds MDS codes of length <= {cap}; this code has length "
                f"{length}{hint}", name)


def check_sizes(**sizes: Any) -> None:
    """Each given size is an integer ``>= 1``, in order."""
    for name, val in sizes.items():
        require(is_int(val) and val >= 1, name, "must be an integer >= 1", val)


def _derived() -> Any:
    return field(init=False, repr=False, compare=False)


@dataclass(frozen=True)
class CodeShape:
    """The shape of a scheme's code for one setting (the scheme's layout rule,
    :meth:`~mpi_coded.coded.schemes.layout.BatchLayout.code_shape`)."""

    partitions: int
    """Independent sub-codes: ``T`` (bdc), ``m/q`` stripes (sc), else 1."""
    code_length: int
    """Length ``n`` of each sub-code (``r``, ``r/T``, ``K``; ``m`` for identity)."""
    code_dimension: int
    """Values needed to decode a partition (lt: ``m`` is a lower bound)."""


@dataclass(frozen=True)
class CodedParams:
    """One setting of a coded scheme (module docstring); the sizes are computed once.

    ``mu`` may be given as a string like ``"1/2"``; it is stored as a Fraction.
    ``T`` (partitions) is only meaningful for a partitioned scheme (bdc).
    ``field`` is ``"auto"`` or one of ``float64``, ``gf2^8``, ``gf2^16``.
    """

    spec: Any
    """The :class:`~mpi_coded.coded.schemes.base.Scheme` (typed ``Any``: parameters sit
    below the schemes, which build them; no import of the schemes from here)."""
    K: int
    q: int
    mu: Fraction
    m: int
    n: int
    N: int
    T: int = 1
    field: str = AUTO_FIELD

    wait_for: int = _derived()
    """``q_eff``: servers the map phase waits for (and reducers)."""
    replication: int = _derived()
    """``p``: servers holding each batch (batch labels are ``p``-subsets)."""
    n_batches: int = _derived()
    """``C(K, p)``."""
    r: int = _derived()
    """Coded rows: ``m K / q_eff``."""
    shape: CodeShape = _derived()
    """The code's shape (:attr:`partitions`, :attr:`code_length`, :attr:`code_dimension`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_reference(self.K, self.q, self.mu))
        check_sizes(m=self.m, n=self.n, N=self.N)
        require(is_int(self.T) and self.T >= 1, "T", "must be an integer >= 1", self.T)
        layout = self.spec.layout
        wait = layout.wait_for(self.K, self.q)
        rep = layout.replication(self.q, self.mu)
        object.__setattr__(self, "wait_for", wait)
        object.__setattr__(self, "replication", rep)
        object.__setattr__(self, "n_batches", math.comb(self.K, rep))
        object.__setattr__(self, "r", self.m * self.K // wait)
        object.__setattr__(self, "shape", layout.code_shape(self))

    # --- names and views -----------------------------------------------------------------
    @property
    def scheme(self) -> str:
        """The scheme's name (``uc``, ``cmr``, ``sc``, ``unified``, ``bdc``, ``lt``)."""
        return self.spec.name

    @property
    def partitions(self) -> int:
        """Independent sub-codes: ``T`` (bdc), ``m/q`` stripes (sc), else 1."""
        return self.shape.partitions

    @property
    def code_length(self) -> int:
        """Length ``n`` of each sub-code (``r``, ``r/T``, ``K``; ``m`` for identity)."""
        return self.shape.code_length

    @property
    def code_dimension(self) -> int:
        """Values needed to decode a partition (lt: ``m`` is a lower bound)."""
        return self.shape.code_dimension

    @property
    def mu_q(self) -> int:
        """``mu q`` of the reference parameters."""
        return int(self.mu * self.q)

    @property
    def mu_eff(self) -> Fraction:
        """Fraction of the ``m`` rows' worth stored per server: ``p / q_eff``."""
        return Fraction(self.replication, self.wait_for)

    @property
    def rows_per_batch(self) -> int:
        """``eta_b = r / C(K, p)`` (integral for a runnable job)."""
        return self.r // self.n_batches

    @property
    def outputs_per_reducer(self) -> int:
        """``N / q_eff``."""
        return self.N // self.wait_for

    @property
    def largest_product(self) -> int:
        """A bound on the multiply-adds (``m k n``) of the largest field product a rank of the
        job makes: the master's check ``A X`` (``m n N``), a server's encoding and map (its
        coded rows times ``n`` or ``N`` columns): ``max(m, r) max(n, N) max(n, N, K)``.  A
        rank under :data:`mpi_coded.gf_tables.SMALL_WORK` runs on lookup tables
        (:meth:`mpi_coded.fields.Field.warm_up`)."""
        return max(self.m, self.r) * max(self.n, self.N) * max(self.n, self.N, self.K)

    @property
    def field_name(self) -> str:
        """The field actually used (``auto`` resolved by the scheme)."""
        if self.field != AUTO_FIELD:
            return self.field
        return self.spec.code.auto_field(self)
