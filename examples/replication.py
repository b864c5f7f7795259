"""Scheme ``rep``: r-fold replication, the classic straggler baseline, as a plugin.

Plain replication (a rate-``1/R`` repetition code) is the baseline of the straggler-coding
papers: Lee, Lam, Pedarsani, Papailiopoulos, Ramchandran, "Speeding Up Distributed Machine
Learning Using Codes", IEEE Trans. Inf. Theory 64(3), 2018 (Sec. III, "r-replication";
their Table I and Theorem 1 compare it with MDS coding).  This module builds it from the
package's scheme parts (:class:`~mpi_coded.coded.schemes.base.Scheme`: layout, code rules,
load rule, delay terms) without touching the package, and registers it as a plugin::

    mpi-coded --plugin examples/replication.py run coded --scheme rep --K 6 --q 3 ...

Design
======

The knob is ``q``, read as the number of *blocks*: ``R = K / q`` copies of each (``q``
must divide ``K``; ``--q 3`` with ``K = 6`` is 2-fold replication, ``--q 2`` 3-fold,
``--q K`` is plain uncoded storage).  As for ``sc``, ``--mu`` is only checked
(``mu q`` an integer), never used; pass ``--mu 1/q``.  The effective parameters are
``(K, q_eff, mu_eff) = (K, q, 1/q)``, the code rate is ``q / K = 1 / R``.

* **Layout** (:class:`ReplicationLayout`): ``A`` (``m`` rows) is cut into ``q`` blocks
  of ``b = m / q`` rows; server ``k`` stores a plain copy of block ``k mod q`` (so group
  ``u = {u, u + q, ..., u + (R - 1) q}`` holds block ``u``; consecutive ranks hold
  different blocks).  In the package's terms: ``K`` batches of ``eta_b = b`` rows, batch
  ``k`` on server ``k`` alone (``p = 1``); coded row ``k b + i`` is row
  ``(k mod q) b + i`` of ``A``; ``r = m K / q = R m`` coded rows.  ``--rows-per-batch``
  is ``b``, the rows each server stores.
* **Code** (:class:`ReplicationCode`, :data:`REPLICATION_CODE`): ``Psi`` is ``R``
  stacked identities (up to the row order): ``m`` partitions, one per row of ``A``, each
  an ``(R, 1)`` repetition code (:class:`RepetitionSubCode`, generator all ones).  Encoding
  copies rows of ``A``; decoding takes the first listed copy of every row; both are one
  gather, recorded as ``systematic``.  No MDS code, so ``auto`` is gf2^8 and every field
  works.
* **Map-end rule**: the package's partition rule with ``k = 1``
  (:func:`~mpi_coded.coded.mapend.partitions_covered`): the phase ends once every row of
  ``A`` has a finished copy, i.e. once every group has a finisher.  The first ``q``
  finishers are ``Q`` (the reducers, ``N / q`` outputs each); later finishers needed to
  cover the last groups are *extra* servers that send unicasts but do not reduce
  (:func:`~mpi_coded.coded.mapend.map_end`).
* **Shuffle and reduce**: as for ``uc``: no two groups share a block, so there is nothing
  to multicast (``p = 1``); each reducer receives by unicast the ``m - b`` rows' values it
  does not store (the package's deficit rule,
  :func:`~mpi_coded.coded.shuffle.deficit_unicasts`, from some finisher of each other
  group) and assembles ``y_i = A x_i``, nothing to decode.

Equations
=========

(R1) **Load.**  Each of the ``q`` reducers owns ``N / q`` outputs, stores ``b = m / q`` of
the ``m`` values of each and receives the other ``m - m/q`` by unicast, whichever servers
finished; normalised by ``m N`` (docs/theory.md (B.3))::

    L_rep = q (N/q) (m - m/q) / (m N) = 1 - 1/q = 1 - R/K .

It is the unified formula of docs/theory.md (B.3) at ``(K, q, 1/q)`` (``p = 1``: no
multicast level, ``s_q = 2``, strategy 1), so the package's plan and its ``load_analytic``
agree with it; exact as a ``Fraction`` (:func:`replication_load`).  For ``R = 1``
it is uc's ``1 - 1/K``; it equals sc's ``1 - 1/q`` at the same ``q``.

(R2) **Finishers waited for.**  Runtimes i.i.d. and continuous make the finishing order a
uniformly random permutation of the ``K`` servers.  The map phase ends at the first
``g`` whose prefix meets all ``q`` groups of ``R``; by inclusion-exclusion over the groups
that a prefix of ``j`` servers misses::

    P(g <= j) = sum_{i=0}^{q} (-1)^i C(q, i) C(K - i R, j) / C(K, j) ,
    P(g = j)  = P(g <= j) - P(g <= j - 1),      q <= j <= K - R + 1

(:func:`servers_needed_pmf`, exact ``Fraction``s; the model's ``servers_needed``).

(R3) **Map delay** (docs/theory.md (B.6); Lee et al., Sec. III-B, the expected time of
r-replication).  A server stores ``rho = b = m/q`` rows and maps them against ``N``
vectors: complexity ``sigma = rho N ((n - 1) sigma_A + n sigma_M)`` and runtime
``sigma (1 + E)``, ``E ~ Exp(1)`` (the runtime's ``--straggler shiftexp``:
``rho t_row (1 + E)`` seconds).  The phase lasts the max over the ``q`` groups of the min
over the group's ``R`` servers.  The min of ``R`` is ``sigma (1 + E'/R)`` with
``E' ~ Exp(1)``; the max of ``q`` independent ``Exp(1)`` has mean ``H_q = sum_{j<=q} 1/j``
(Renyi) and variance ``sum_{j<=q} 1/j^2``::

    E[D_map]   = sigma (1 + H_q / R) ,      Var[D_map] = (sigma / R)^2 sum_{j=1}^{q} 1/j^2

(:func:`expected_map_factor`; shift-only variant: ``sigma + H_q / R``).  Because the
order-statistic values are independent of which servers they belong to, the package's
mixture ``sum_g P(g) E[H_(g)]`` over the pmf (R2) is this very mean
(:func:`mixture_order_mean`; :func:`check_model` checks the two agree).  Compare uc's
``sigma_uc (1 + H_K)`` (``sigma_uc = sigma / R``) and sc's ``sigma (1 + H_K - H_{K-q})``.

(R4) **Encode and reduce.**  Nothing to encode (copies: ``Ops(0, 0)``, ``D_encode = 0``)
nor to decode (``D_reduce = 0``), as for uc (docs/theory.md (B.6), the uc row).

Registration
============

:func:`mpi_coded_register` is the plugin hook (``registry.scheme(SCHEME)``).  Without
the hook: ``REGISTRY.register(SCHEME)`` from :mod:`mpi_coded.coded.schemes.registry`, or
``with REGISTRY.registered(replication_scheme()) as rep: ...`` in a test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.analysis.delay import DelayCosts, Ops, mixture_order_mean
from mpi_coded.analysis.loads import UnifiedLoad
from mpi_coded.coded.code import Code, CodeLayout, CodeWork, PartitionCode
from mpi_coded.coded.mapend import partitions_covered
from mpi_coded.coded.params import CodedParams, CodeShape
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.delay_terms import DenseTerms
from mpi_coded.coded.schemes.layout import BatchLayout
from mpi_coded.coded.schemes.load_rules import UnifiedLoadRule
from mpi_coded.coded.shuffle import UnicastBook, deficit_unicasts
from mpi_coded.codes import work as W
from mpi_coded.errors import NotDecodable, require
from mpi_coded.fields import Field

NAME = "rep"
"""The scheme's name on the command line and in results."""

__all__ = ["NAME", "REPLICATION_CODE", "SCHEME", "ReplicationCode", "ReplicationCodeRules",
           "ReplicationLayout", "ReplicationLoad", "ReplicationTerms", "RepetitionSubCode",
           "check_model", "copies", "expected_map_factor", "mpi_coded_register",
           "replication_layout", "replication_load", "replication_scheme",
           "servers_needed_pmf"]


# --- sizes -------------------------------------------------------------------------------
def check_blocks(K: int, q: int) -> None:
    """``q`` (the number of blocks) divides ``K``: ``R = K / q`` copies of each block."""
    require(K % q == 0, "q",
            f"scheme {NAME}: q (the number of blocks) must divide K = {K}, so that every "
            f"block has R = K / q copies", q)


def copies(K: int, q: int) -> int:
    """``R = K / q``, checked."""
    check_blocks(K, q)
    return K // q


def replication_layout(m: int, K: int, q: int) -> CodeLayout:
    """``m`` partitions (one per row of ``A``), each an ``(R, 1)`` code: row ``t = u b + i``
    of ``A`` (block ``u``, ``b = m/q``) has coded rows ``(u + j q) b + i``, ``j < R``
    (the copy on server ``u + j q``, position ``j``)."""
    R = K // q
    b = m // q
    t = np.arange(m, dtype=np.int64)
    u, i = t // b, t % b
    coded = (u[:, None] + q * np.arange(R, dtype=np.int64)[None, :]) * b + i[:, None]
    return CodeLayout(m=m, r=R * m, msg_index=t[:, None].copy(), coded_index=coded)


# --- layout ------------------------------------------------------------------------------
class ReplicationLayout(BatchLayout):
    """``K`` batches, batch ``k`` on server ``k`` alone, holding a copy of block
    ``k mod q``; waits for ``q`` (then extras until every block has a finished copy)."""

    def replication(self, q: int, mu: Fraction) -> int:
        """``p = 1``: the copies of a block are distinct batches (no server holds two)."""
        return 1

    def code_shape(self, p: CodedParams) -> CodeShape:
        """``m`` repetition codes of length ``R = K/q`` and dimension 1."""
        return CodeShape(partitions=p.m, code_length=max(1, p.K // p.q), code_dimension=1)

    def code_layout(self, p: CodedParams) -> CodeLayout:
        return replication_layout(p.m, p.K, p.q)

    def check_model_sizes(self, p: CodedParams) -> None:
        """``q | K`` and ``q | m`` (whole blocks)."""
        check_blocks(p.K, p.q)
        require(p.m % p.q == 0, "m", f"scheme {NAME}: q = {p.q} blocks must divide m", p.m)


# --- code --------------------------------------------------------------------------------
class RepetitionSubCode:
    """The ``(n, 1)`` repetition code over ``field``: every coded row a plain copy of the
    one message row (generator all ones); any one row decodes."""

    k = 1

    def __init__(self, field: Field, n: int) -> None:
        self.field = field
        self.n = n
        self.last_encoder = "systematic"
        self.last_decoder = "systematic"

    def generator(self) -> np.ndarray:
        G = self.field.zeros((self.n, 1))
        G[:] = 1
        return G

    def encode_work(self, positions: Sequence[int] | np.ndarray, vectors: int
                    ) -> tuple[str, list[W.Work]]:
        return "systematic", [W.call(), W.copy(len(positions) * vectors)]

    def encode_rows(self, positions: Sequence[int] | np.ndarray, message: np.ndarray
                    ) -> np.ndarray:
        """``len(positions)`` copies of the ``1 x w`` message."""
        return np.repeat(np.asarray(message, dtype=self.field.dtype)[:1],
                         len(positions), axis=0)

    def decode_work(self, positions: Sequence[int], vectors: int) -> tuple[str, list[W.Work]]:
        return "systematic", [W.call(), W.copy(vectors)]

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray) -> np.ndarray:
        require(len(positions) >= 1, "positions", "a repetition code needs one coded row",
                list(positions))
        return np.array(values[:1], dtype=self.field.dtype)


class ReplicationCode(PartitionCode):
    """``Psi``: ``R`` copies of every row of ``A`` (``m`` repetition partitions).  Encoding
    and decoding are one gather each (no arithmetic); the work lists say so."""

    def __init__(self, layout: CodeLayout, field_: Field) -> None:
        super().__init__(layout, field_, RepetitionSubCode(field_, layout.n))
        self.source = layout.msg_index[layout.row_partition, 0]
        """Row of ``A`` each coded row copies."""

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        """``C[rows]``: the rows of ``A`` they copy."""
        idx = np.arange(self.layout.r) if rows is None else np.asarray(list(rows), np.int64)
        self.encoders = {"systematic": 1}
        return np.array(A[self.source[idx]], dtype=self.field.dtype)

    def encode_work(self, rows: Sequence[int] | None, vectors: int) -> CodeWork:
        n = self.layout.r if rows is None else len(list(rows))
        out = CodeWork()
        out.add("systematic", [W.call(), W.copy(2 * n * vectors)])
        return out

    def _first_copies(self, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows of A, indices into rows)``: the first listed copy of every row of ``A``;
        NotDecodable if a row has none."""
        rows_a = np.asarray(list(rows), dtype=np.int64)
        src = self.source[rows_a]
        got, first = np.unique(src, return_index=True)
        if len(got) < self.layout.m:
            missing = np.setdiff1d(np.arange(self.layout.m), got)
            raise NotDecodable(f"rows {missing[:8].tolist()} of A have no copy among the "
                               f"{len(rows_a)} coded values")
        return got, first

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``y = A x``: the first listed copy of every row of ``A``."""
        got, first = self._first_copies(rows)
        out = self.field.zeros((self.layout.m, values.shape[1]))
        out[got] = values[first]
        self.decoders = {"systematic": 1}
        return out

    def decode_work(self, rows: Sequence[int], vectors: int) -> CodeWork:
        self._first_copies(rows)
        out = CodeWork()
        out.add("systematic", [W.call(), W.copy(2 * self.layout.m * vectors)])
        return out


class ReplicationCodeRules:
    """The repetition code, the partition map-end rule (``k = 1``: a finished copy of every
    row) and the deficit unicast rule; no MDS code."""

    mds = False
    cover_rule = " (rep: every block needs a finished copy)"
    searches_unicasts = False

    def auto_field(self, p: CodedParams) -> str:
        return "gf2^8"

    def check_job(self, p: CodedParams) -> None:
        """``q | K`` (every field holds a repetition code)."""
        check_blocks(p.K, p.q)

    def model_length(self, p: CodedParams) -> int | None:
        return None

    def build(self, p: CodedParams, f: Field, layout: CodeLayout) -> Code:
        return ReplicationCode(layout, f)

    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        """Every partition (row of ``A``) has a row among the finishers' batches."""
        return partitions_covered(placement, finished)

    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        return deficit_unicasts(book, idx, known)


REPLICATION_CODE = ReplicationCodeRules()


# --- load --------------------------------------------------------------------------------
def replication_load(K: int, q: int) -> Fraction:
    """(R1): ``1 - 1/q = 1 - R/K``."""
    check_blocks(K, q)
    return 1 - Fraction(1, q)


class ReplicationLoad(UnifiedLoadRule):
    """The unified formula at ``(K, q, 1/q)`` is the load; its literal form is (R1)."""

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        """The reference load (``1 - 1/q``: no multicast level), once ``q | K`` holds."""
        check_blocks(reference.K, reference.q)
        assert reference.load == replication_load(reference.K, reference.q)
        return reference

    def literal(self, K: int, q: int, mu: Fraction, reference: UnifiedLoad) -> Fraction:
        """``1 - 1/q`` (= ``1 - R/K``)."""
        return replication_load(K, q)


# --- delay -------------------------------------------------------------------------------
def servers_needed_pmf(K: int, q: int) -> dict[int, Fraction]:
    """(R2): ``P(g = j)``, the first ``j`` finishers of a uniformly random order meeting
    all ``q`` groups of ``R = K/q`` servers (exact)."""
    R = copies(K, q)

    def cdf(j: int) -> Fraction:
        if j < 0:
            return Fraction(0)
        return sum((Fraction((-1) ** i * math.comb(q, i) * math.comb(K - i * R, j),
                             math.comb(K, j)) for i in range(q + 1)), Fraction(0))

    pmf = {j: cdf(j) - cdf(j - 1) for j in range(1, K + 1)}
    return {j: pr for j, pr in pmf.items() if pr != 0}


def expected_map_factor(K: int, q: int, scale_tail: bool = True) -> float:
    """(R3): ``E[D_map] / sigma = 1 + H_q / R`` (``scale_tail=False``: the excess over the
    shift, ``H_q / R``, in the tail's unit of 1)."""
    R = copies(K, q)
    h = sum(1.0 / j for j in range(1, q + 1)) / R
    return 1.0 + h if scale_tail else h


def check_model(K: int, q: int) -> tuple[float, float]:
    """``(closed form, package mixture)`` of ``E[D_map] / sigma``: (R3) against
    ``sum_g P(g) E[H_(g)]`` over the pmf (R2); AssertionError unless they agree."""
    pmf = {g: float(pr) for g, pr in servers_needed_pmf(K, q).items()}
    mix = mixture_order_mean(pmf, K, 1.0)
    closed = expected_map_factor(K, q)
    assert abs(mix - closed) < 1e-9, (K, q, mix, closed)
    return closed, mix


class ReplicationTerms(DenseTerms):
    """``m/q`` rows per server; nothing to encode or decode; the map waits for the
    random number of finishers (R2), so ``D_map`` is (R3); the load is (R1)."""

    authors_fft_encode = False

    def check_setting(self, p: CodedParams, eps: float | None, c: float,
                      delta: float) -> None:
        check_blocks(p.K, p.q)

    def servers_needed(self, p: CodedParams) -> dict[int, float] | None:
        return {g: float(pr) for g, pr in servers_needed_pmf(p.K, p.q).items()}

    def load(self, p: CodedParams) -> Fraction | float | None:
        return replication_load(p.K, p.q)

    def generator_ops(self, p: CodedParams, costs: DelayCosts) -> Ops:
        return Ops(0.0, 0.0)

    def decode(self, p: CodedParams, costs: DelayCosts) -> tuple[float, str | None]:
        return 0.0, None


# --- the scheme and the plugin hook ------------------------------------------------------
def replication_scheme(name: str = NAME) -> Scheme:
    """A fresh replication scheme called ``name`` (a plain value: registers nothing).
    ``R`` is not fixed here: each setting's ``R = K / q``."""
    return Scheme(name, "r-fold replication: q blocks, R = K/q plain copies of each; "
                        "waits for a finished copy of every block",
                  layout=ReplicationLayout(), code=REPLICATION_CODE, loads=ReplicationLoad(),
                  delay=ReplicationTerms())


SCHEME = replication_scheme()
"""The ``rep`` scheme."""


def mpi_coded_register(registry: Any) -> None:
    """The plugin hook: ``mpi-coded --plugin examples/replication.py ...``."""
    registry.scheme(SCHEME)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the load and the map-delay check for a few settings (no MPI)."""
    del argv
    for K, q in ((6, 6), (6, 3), (6, 2), (9, 3), (12, 4)):
        closed, mix = check_model(K, q)
        pmf = servers_needed_pmf(K, q)
        mean_g = float(sum(g * pr for g, pr in pmf.items()))
        print(f"K={K:2d} q={q} R={K // q}: load {replication_load(K, q)}, "
              f"E[g] = {mean_g:.4f}, E[D_map]/sigma = 1 + H_q/R = {closed:.6f} "
              f"(mixture {mix:.6f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
