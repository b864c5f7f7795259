"""The :class:`Scheme`: one coded scheme, composed of its rules, concern by concern.

A scheme is a name, a summary and four small objects, each owning one concern for
the reference parameters ``K, q, mu`` of docs/theory.md (B.1):

* ``layout`` (:class:`~mpi_coded.coded.schemes.layout.Layout`) -- the effective sizes
  (servers waited for, servers per batch, the code's
  :class:`~mpi_coded.coded.params.CodeShape`), which rows of ``A`` each partition
  encodes, the coded rows of each batch, the size rules;
* ``code`` (:class:`~mpi_coded.coded.schemes.code_rules.CodeRules`) -- the code
  object, the field ``auto`` picks, the map-end rule and the unicast rule;
* ``loads`` (:class:`~mpi_coded.coded.schemes.load_rules.LoadRule`) -- the load, declared
  once: ``mpi-coded load``, the model and every run's check derive from it;
* ``delay`` (:class:`~mpi_coded.coded.schemes.delay_terms.DelayTerms`) -- the delay
  model's terms (docs/theory.md (B.6)) at one
  :class:`~mpi_coded.analysis.delay.DelayCosts`;

plus ``compares_strategies`` (the shuffle builds both finishing strategies and keeps
the cheaper one per ``Q``: bdc).  The defaults are the unified scheme of Li,
Maddah-Ali and Avestimehr.  The methods below are the questions the rest of the
package asks a scheme -- never its name -- each answered by the part that owns it; the
rules shared by every scheme (a runnable job's, an analytic setting's) are here.

A scheme is a plain value: building one registers nothing.  :data:`REGISTRY` (below)
names the known ones: the built-in ones (:mod:`mpi_coded.coded.schemes`) and a plugin's;
a test registers its own only for its duration (``with REGISTRY.registered(toy):``);
:class:`~mpi_coded.coded.params.CodedParams` carries its scheme as
:attr:`~mpi_coded.coded.params.CodedParams.spec`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.analysis.delay import DEFAULT_CONVENTION, Convention, DelayCosts
from mpi_coded.analysis.loads import UnifiedLoad, check_reference, is_int, unified_load
from mpi_coded.coded.code import Code, CodeLayout
from mpi_coded.coded.params import AUTO_FIELD, CodedParams, check_field, check_sizes
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.schemes.code_rules import MDS_CODE, CodeRules
from mpi_coded.coded.schemes.delay_terms import DelayTerms, DenseTerms, ModelTerms
from mpi_coded.coded.schemes.layout import BatchLayout, Layout
from mpi_coded.coded.schemes.load_rules import LoadRule, UnifiedLoadRule
from mpi_coded.coded.shuffle import UnicastBook
from mpi_coded.errors import require
from mpi_coded.fields import Field, get_field
from mpi_coded.registry import Registry

__all__ = ["DEFAULT_CONVENTION", "Convention", "DelayCosts", "ModelTerms", "Scheme"]


def _named(flag: str) -> str:
    """The registered schemes whose ``flag`` is true, for messages."""
    return ", ".join(REGISTRY.names(**{flag: True}))


@dataclass(frozen=True, eq=False, repr=False)
class Scheme:
    """A coded scheme (module docstring); compared by identity."""

    name: str
    """Name on the command line and in results."""
    summary: str
    """One line for help texts."""
    layout: Layout = BatchLayout()
    code: CodeRules = MDS_CODE
    loads: LoadRule = UnifiedLoadRule()
    delay: DelayTerms = DenseTerms()
    compares_strategies: bool = False
    """The shuffle builds both finishing strategies and keeps the cheaper one per ``Q``."""

    def __repr__(self) -> str:
        return f"<scheme {self.name}>"

    # --- what the registry's names(**flags) and the messages ask -------------------------
    @property
    def waits_for_all(self) -> bool:
        """The map phase waits for all ``K`` servers (uc, cmr), else for ``q``."""
        return self.layout.waits_for_all

    @property
    def partitioned(self) -> bool:
        """Takes ``T`` partitions (bdc)."""
        return self.layout.partitioned

    @property
    def takes_assignment(self) -> bool:
        """Its storage follows an assignment matrix ``P`` (bdc)."""
        return self.layout.takes_assignment

    @property
    def searches_unicasts(self) -> bool:
        """Its unicast counts come from a search (lt): ``MAP_END`` carries them."""
        return self.code.searches_unicasts

    @property
    def closed_form_load(self) -> bool:
        """:meth:`load` is the scheme's load (bdc: none; lt: only a lower bound)."""
        return self.loads.closed_form

    @property
    def mds_code(self) -> bool:
        """Its sub-codes are MDS codes whose length the field must hold (not uc, cmr, lt)."""
        return self.code.mds

    @property
    def cover_rule(self) -> str:
        """Appended to the map-end failure message (what "enough" means)."""
        return self.code.cover_rule

    # --- reference -> effective parameters ------------------------------------------------
    def wait_for(self, K: int, q: int) -> int:
        """``q_eff``: servers the map phase waits for (the layout's)."""
        return self.layout.wait_for(K, q)

    def replication(self, q: int, mu: Fraction) -> int:
        """``p``: servers storing each batch (the layout's)."""
        return self.layout.replication(q, mu)

    def effective_model(self, K: int, q: int, mu: Fraction) -> tuple[int, int, Fraction]:
        """``(K, q_eff, mu_eff)``: the unified-model parameters the scheme runs with.

        uc: ``(K, K, 1/K)``; cmr: ``(K, K, mu q / K)``; sc: ``(K, q, 1/q)``; the
        others ``(K, q, mu)`` (the BDC paper, definitions of the baselines).
        """
        q_eff = self.wait_for(K, q)
        return K, q_eff, Fraction(self.replication(q, mu), q_eff)

    def rows_per_batch_for(self, K: int, q: int, mu: Any, m: int) -> int:
        """``eta_b`` giving ``m`` rows of ``A``: ``m K / (q_eff C(K, p))``, checked integral."""
        mu_f = check_reference(K, q, mu)
        require(is_int(m) and m >= 1, "m", "must be an integer >= 1", m)
        denom = self.wait_for(K, q) * math.comb(K, self.replication(q, mu_f))
        require(
            (m * K) % denom == 0, "m",
            f"m * K must be a multiple of q_eff * C(K, p) = {denom} for this scheme", m)
        return m * K // denom

    # --- a runnable job ------------------------------------------------------------------
    def params(self, K: Any, q: Any, mu: Any, rows_per_batch: Any, n: Any, N: Any,
               T: Any = 1, field: str = AUTO_FIELD) -> CodedParams:
        """A runnable job's :class:`~mpi_coded.coded.params.CodedParams` from the batch size
        ``eta_b`` (``r = eta_b C(K, p)``, ``m = r q_eff / K``); every rule checked.

        Rules (in order): the reference parameters; ``rows_per_batch, n, N >= 1``;
        ``T >= 1``; ``m`` an integer; :meth:`check_job`.
        """
        mu_f = check_reference(K, q, mu)
        check_sizes(rows_per_batch=rows_per_batch, n=n, N=N)
        require(is_int(T) and T >= 1, "T", "must be an integer >= 1", T)
        q_eff, rep = self.wait_for(K, q), self.replication(q, mu_f)
        r = rows_per_batch * math.comb(K, rep)
        require(
            (r * q_eff) % K == 0, "rows_per_batch",
            f"m = rows_per_batch * C(K, {rep}) * {q_eff} / K must be an integer",
            rows_per_batch)
        params = CodedParams(self, K, q, mu_f, r * q_eff // K, n, N, T, field)
        self.check_job(params)
        return params

    def check_job(self, p: CodedParams) -> None:
        """The rules of a runnable job beyond its sizes: ``q_eff | N`` (reducers own
        ``N / q_eff`` outputs each); the partitions (``T = 1`` unless the layout is
        partitioned, then its rules); the field is known; the code's rules (an MDS code
        fits the field: gf2^8 length <= 256, gf2^16 <= 65536, float64 any; lt's own)."""
        who = "K" if self.waits_for_all else "q"
        require(p.N % p.wait_for == 0, "N", f"{who} = {p.wait_for} must divide N", p.N)
        self._check_partitions(p)
        check_field(p.field)
        self.code.check_job(p)

    def _check_partitions(self, p: CodedParams) -> None:
        if self.layout.partitioned:
            self.layout.check_partitions(p)
        else:
            require(p.T == 1, "T",
                    f"partitions apply only to scheme {_named('partitioned')}: must be 1", p.T)

    # --- an analytic setting -------------------------------------------------------------
    def check_model(self, p: CodedParams, eps: float | None, c: float, delta: float) -> None:
        """The rules of an analytic setting (:func:`mpi_coded.analysis.model.model_params`):
        the layout's size rules, the partitions, the delay terms' own rules."""
        self.layout.check_model_sizes(p)
        self._check_partitions(p)
        self.delay.check_setting(p, eps, c, delta)

    def model_code_length(self, p: CodedParams) -> int | None:
        """Length of each MDS sub-code the field must hold (None: no MDS code)."""
        return self.code.model_length(p)

    def model_terms(self, p: CodedParams, eps: float | None, c: float, delta: float,
                    costs: DelayCosts) -> ModelTerms:
        """The delay model's terms of the setting ``p`` (docs/theory.md (B.6)) at ``costs``
        (``sigma_A``, ``sigma_M`` and the convention)."""
        return self.delay.terms(p, eps, c, delta, costs)

    # --- the code and the storage --------------------------------------------------------
    def code_layout(self, p: CodedParams) -> CodeLayout:
        """Which rows of ``A`` and ``C`` each partition covers."""
        return self.layout.code_layout(p)

    def build_code(self, p: CodedParams, field: Field | None = None) -> Code:
        """The job's code over ``field`` (default ``p.field_name``)."""
        return self.code.build(p, field or get_field(p.field_name), self.code_layout(p))

    def batch_rows(self, p: CodedParams, layout: CodeLayout, assignment: np.ndarray | None
                   ) -> tuple[tuple[tuple[int, ...], ...], np.ndarray]:
        """``(rows, P)``: the coded rows of each batch in slot order and ``P[b, t]``."""
        require(assignment is None or self.takes_assignment, "assignment",
                f"only scheme {_named('takes_assignment')} takes an assignment matrix")
        return self.layout.batch_rows(p, layout, assignment)

    # --- map end and shuffle -------------------------------------------------------------
    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        """Whether the finishers' stored rows suffice (the map-end rule)."""
        return self.code.covered(placement, finished)

    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        """Unicasts for reducer ``Q[idx]`` knowing the batches ``known`` (added to ``book``);
        returns its unicast rows and decode rows."""
        return self.code.reducer_rows(book, idx, known)

    # --- loads ---------------------------------------------------------------------------
    def reference_load(self, K: int, q: int, mu: Any) -> UnifiedLoad:
        """The unified formula at the scheme's effective parameters: its ``s_q``, strategy
        and multicast levels drive the shuffle plan."""
        mu_f = check_reference(K, q, mu)
        return unified_load(*self.effective_model(K, q, mu_f))

    def paper_load(self, p: CodedParams) -> Fraction:
        """The load formula the measured load of a run is compared with:
        :meth:`reference_load` of ``p``'s reference parameters (bdc, lt: the unified one)."""
        return self.reference_load(p.K, p.q, p.mu).load

    def declared_load(self, p: CodedParams) -> Fraction:
        """The load every run of ``p`` is compared with: the scheme's own :meth:`load` when
        it has a closed form, else :meth:`paper_load` (bdc, lt)."""
        if self.closed_form_load:
            return self.load(p.K, p.q, p.mu).load
        return self.paper_load(p)

    def load_mismatch(self, p: CodedParams, moved: Fraction) -> str | None:
        """Why a run that moved ``moved`` (values before padding over ``m N``) contradicts
        the scheme's declared load (None when it agrees, or there is no closed form)."""
        if not self.closed_form_load:
            return None
        declared = self.declared_load(p)
        if moved == declared:
            return None
        return (f"scheme {self.name!r} declares load {declared}, the run moved {moved} "
                "(values before padding over m N)")

    def load(self, K: int, q: int, mu: Any) -> UnifiedLoad:
        """The load its load rule declares (docs/theory.md (B.3): uc ``1 - 1/K``, cmr
        ``(1/(mu q))(1 - mu q/K)``, sc ``1 - 1/q``, unified ``L(q)``), the one the
        ``load`` command prints, the model prices and a run is checked against; ``K, q,
        mu`` are the reference parameters (bdc: none, ConfigError; lt: a lower bound)."""
        return self.loads.load(self.reference_load(K, q, mu))


REGISTRY: Registry[Scheme] = Registry("scheme")
"""The schemes known by name: the one place a scheme gets the name the command line, the
results and the messages know."""
