"""The :class:`Scheme` base class: everything a coded scheme decides, in one object.

A scheme owns, for the reference parameters ``K, q, mu`` of docs/theory.md (B.1):

* its **parameter rules** and **effective sizes** -- how many servers the map
  phase waits for, how many hold each batch, the shape of its sub-codes, the
  field ``auto`` picks, the extra rules of a runnable job (:meth:`Scheme.params`)
  or of an analytic setting (:meth:`Scheme.check_model`);
* its **code** -- which rows of ``A`` each partition encodes
  (:meth:`Scheme.code_layout`) and the code object (:meth:`Scheme.build_code`);
* its **storage** -- the coded rows of each batch (:meth:`Scheme.batch_rows`);
* its **map-end rule** -- when the finishers' results suffice (:meth:`Scheme.covered`);
* its **shuffle choice** -- the analytic load the plan follows
  (:meth:`Scheme.reference_load`), whether both finishing strategies are tried
  (:attr:`Scheme.compares_strategies`), and the unicast rule
  (:meth:`Scheme.reducer_rows`);
* its **load formulas** (:meth:`Scheme.load`, :meth:`Scheme.literal_load`) and
  **model terms** (:meth:`Scheme.model_terms`: rows per server, encoding and
  decoding costs, servers waited for, load; docs/theory.md (B.6)).

The base class is the unified scheme of Li, Maddah-Ali and Avestimehr: a dense
``(r, m)`` MDS code in ``C(K, mu q)`` batches, waiting for ``q`` servers.  The
other schemes override the few template methods and attributes where they
differ.  Objects are stateless singletons, looked up by name in the registry
(:mod:`mpi_coded.coded.schemes`); :class:`~mpi_coded.coded.params.CodedParams`
carries its scheme as :attr:`~mpi_coded.coded.params.CodedParams.spec`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from mpi_coded.analysis.delay import (
    AUTHORS_FFT_C,
    Ops,
    encode_ops,
    fft_encode_ops,
    rs_decode_cost,
)
from mpi_coded.analysis.loads import UnifiedLoad, check_reference, is_int, unified_load
from mpi_coded.coded.code import Code, CodeLayout, PartitionCode, SubCode, contiguous_layout
from mpi_coded.coded.mapend import partitions_covered
from mpi_coded.coded.params import (
    AUTO_FIELD,
    CodedParams,
    check_capacity,
    check_field,
    check_sizes,
    pick_field,
)
from mpi_coded.coded.placement import Placement, count_partitions, slot_rows
from mpi_coded.coded.shuffle import UnicastBook, deficit_unicasts
from mpi_coded.codes.cauchy import CauchyCode
from mpi_coded.codes.rs_sub import (
    RSSubCode,
    fft_decode_seconds,
    fft_encode_seconds,
    generator_decode_seconds,
    generator_encode_seconds,
    prefer_rs,
    seconds,
)
from mpi_coded.errors import require
from mpi_coded.fields import Field, get_field

_KINDS: list[type[Scheme]] = []

AUTO_GF16_SAVING_S = 0.5
"""Seconds per repetition the RS path over gf2^16 must save for ``auto`` to leave gf2^8."""


def names_with(flag: str) -> str:
    """Names of the defined schemes whose attribute ``flag`` is true, comma-separated."""
    return ", ".join(c.name for c in _KINDS if c.name and getattr(c, flag))


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
        return AUTHORS_FFT_C if self.authors else None


DEFAULT_CONVENTION = Convention()


@dataclass(frozen=True)
class ModelTerms:
    """A scheme's terms of the delay model for one setting (docs/theory.md (B.6))."""

    rows: float
    """Coded rows each server stores and maps (for all ``N`` vectors)."""
    encode: Ops
    """Operations to encode those rows (``Ops(0, 0)``: uncoded)."""
    decode_per_output: float
    """Cost of decoding one output at a reducer (0: nothing to decode)."""
    decoder: str | None
    """The decoder costed (``bm``, ``fft``, ``peeling``) or None."""
    servers_needed: dict[int, float] | None
    """Distribution of the finishers the map phase waits for; None: from the assignment."""
    load: Fraction | float | None
    """Exact (Fraction) or approximate (float) load; None: from the assignment."""
    eps: float | None = None
    """lt: the LT overhead used."""
    encoder: str | None = None
    """The encoder costed (``generator``: eq. (8); ``fft``; None: nothing to encode)."""


class Scheme:
    """A coded scheme (module docstring); the base class is the unified scheme."""

    name: ClassVar[str] = ""
    """Name on the command line and in results."""
    summary: ClassVar[str] = ""
    """One line for help texts."""

    waits_for_all: ClassVar[bool] = False
    """The map phase waits for all ``K`` servers (uc, cmr), else for ``q``."""
    single_copy: ClassVar[bool] = False
    """Each batch is stored on one server (``p = 1``: uc, sc), else on ``mu q``."""
    partitioned: ClassVar[bool] = False
    """Takes ``T`` partitions (bdc)."""
    takes_assignment: ClassVar[bool] = False
    """Its storage follows an assignment matrix ``P`` (bdc)."""
    compares_strategies: ClassVar[bool] = False
    """The shuffle builds both finishing strategies and keeps the cheaper one per ``Q``."""
    closed_form_load: ClassVar[bool] = True
    """:meth:`load` is the scheme's load (bdc: none; lt: only a lower bound)."""
    mds_code: ClassVar[bool] = True
    """Its sub-codes are ``[I; Cauchy]`` MDS codes whose length the field must hold."""
    authors_fft_encode: ClassVar[bool] = True
    """The BDC authors' evaluation code encodes this scheme by FFT (unified) rather than by
    eq. (8) (docs/theory.md (C.2))."""
    cover_rule: ClassVar[str] = ""
    """Appended to the map-end failure message (what "enough" means)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _KINDS.append(cls)

    def __repr__(self) -> str:
        return f"<scheme {self.name}>"

    # --- reference -> effective parameters ------------------------------------------------
    def wait_for(self, K: int, q: int) -> int:
        """``q_eff``: servers the map phase waits for."""
        return K if self.waits_for_all else q

    def replication(self, q: int, mu: Fraction) -> int:
        """``p``: servers storing each batch."""
        return 1 if self.single_copy else int(mu * q)

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

    # --- sizes ---------------------------------------------------------------------------
    def code_shape(self, p: CodedParams) -> dict[str, int]:
        """``partitions``, ``code_length`` and ``code_dimension`` of each sub-code."""
        return {"partitions": 1, "code_length": p.r, "code_dimension": p.m}

    def auto_field(self, p: CodedParams) -> str:
        """The field ``auto`` resolves to: gf2^8 for an identity or non-MDS code; gf2^16
        for a sub-code longer than 256; otherwise gf2^8 unless the RS FFT path over gf2^16
        saves at least :data:`AUTO_GF16_SAVING_S` seconds per repetition in the cost rule
        of :mod:`mpi_coded.codes.rs_sub` (:meth:`estimate_seconds`; the map products cost
        about three times more over gf2^16, so only large decoding or encoding work
        switches)."""
        if p.code_length == p.code_dimension or not self.mds_code:
            return "gf2^8"
        small = pick_field(p.code_length)
        if small == "gf2^16":
            return small
        saving = self.estimate_seconds(p, "gf2^8") - self.estimate_seconds(p, "gf2^16")
        return "gf2^16" if saving >= AUTO_GF16_SAVING_S else small

    def estimate_seconds(self, p: CodedParams, field: str,
                         table: Mapping[str, float] | None = None) -> float:
        """Rough seconds of one repetition's critical path over ``field`` by the kernels'
        cost rule: one server's map and encoding, one reducer's decoding.  Over gf2^16 each
        partition takes the cheaper of the RS FFT and the generator path; over gf2^8 the
        ``[I; Cauchy]`` generator path (an inverse per partition)."""
        n_code, k = p.code_length, p.code_dimension
        rows = float(p.mu_eff * p.m)
        parity_rows = rows * (n_code - k) / n_code
        touched = max(1, min(p.partitions, int(rows)))
        per_part = max(1, round(parity_rows / touched))
        w = p.outputs_per_reducer
        secs = rows * p.n * p.N * seconds(f"{field}_matmul", table)
        gen_enc = generator_encode_seconds(field, per_part, k, p.n, table) * touched
        gen_dec = generator_decode_seconds(field, k, w, table=table) * p.partitions
        if field == "gf2^16" and n_code > k:
            gen_enc = min(gen_enc, fft_encode_seconds(n_code, k, p.n, table) * touched)
            gen_dec = min(gen_dec, fft_decode_seconds(n_code, k, w, table) * p.partitions)
        return secs + gen_enc + gen_dec

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
        ``N / q_eff`` outputs each); the partitions (:meth:`check_partitions`); the field
        is known and holds the code (gf2^8: length <= 256, gf2^16: <= 65536, float64:
        any); then :meth:`check_job_extra`."""
        who = "K" if self.waits_for_all else "q"
        require(p.N % p.wait_for == 0, "N", f"{who} = {p.wait_for} must divide N", p.N)
        self.check_partitions(p)
        check_field(p.field)
        if self.mds_code and p.code_length > p.code_dimension:
            check_capacity(p.field, p.code_length, " (use gf2^16 or more partitions T)")
        self.check_job_extra(p)

    def check_partitions(self, p: CodedParams) -> None:
        """``T == 1`` unless the scheme is partitioned."""
        require(p.T == 1, "T",
                f"partitions apply only to scheme {names_with('partitioned')}: must be 1", p.T)

    def check_job_extra(self, p: CodedParams) -> None:
        """Scheme-specific rules of a runnable job (none)."""

    # --- an analytic setting -------------------------------------------------------------
    def check_model(self, p: CodedParams, eps: float | None, c: float, delta: float) -> None:
        """The rules of an analytic setting (:func:`mpi_coded.analysis.model.model_params`):
        :meth:`check_model_sizes`, :meth:`check_partitions`, :meth:`check_model_extra`."""
        self.check_model_sizes(p)
        self.check_partitions(p)
        self.check_model_extra(p, eps, c, delta)

    def check_model_sizes(self, p: CodedParams) -> None:
        """The model of a dense code reads ``r = m K / q``: ``q`` divides ``m K``."""
        require((p.m * p.K) % p.q == 0, "m", f"q = {p.q} must divide m K", p.m)

    def check_equal_batches(self, p: CodedParams) -> None:
        """:meth:`check_model_sizes`, and ``r = m K / q`` in ``C(K, mu q)`` equal batches
        (for a model that reads the batches: bdc's ``P``, lt's stored rows)."""
        Scheme.check_model_sizes(self, p)
        require(p.r % p.n_batches == 0, "m",
                f"r = m K/q must split into C(K, mu q) = {p.n_batches} equal batches", p.m)

    def check_model_extra(self, p: CodedParams, eps: float | None, c: float,
                          delta: float) -> None:
        """Scheme-specific rules of an analytic setting (none)."""

    def model_code_length(self, p: CodedParams) -> int | None:
        """Length of each MDS sub-code the field must hold (None: no MDS code)."""
        return p.code_length if self.mds_code else None

    # --- the code ------------------------------------------------------------------------
    def code_layout(self, p: CodedParams) -> CodeLayout:
        """Which rows of ``A`` and ``C`` each partition covers (``T`` contiguous ones)."""
        return contiguous_layout(p.m, p.r, p.partitions)

    def build_code(self, p: CodedParams, field: Field | None = None) -> Code:
        """The job's code over ``field`` (default ``p.field_name``): every partition the
        same sub-code (:meth:`sub_code`)."""
        f = field or get_field(p.field_name)
        layout = self.code_layout(p)
        return PartitionCode(layout, f, self.sub_code(p, f, layout))

    def sub_code(self, p: CodedParams, f: Field, layout: CodeLayout) -> SubCode:
        """Each partition's code: over gf2^16, the RS code (FFT or generator path per call,
        :class:`~mpi_coded.codes.rs_sub.RSSubCode`) when its FFT is cheaper for encoding
        the ``n`` columns of ``A`` or for decoding a reducer's ``N / q_eff`` outputs
        (:func:`~mpi_coded.codes.rs_sub.prefer_rs`); else the ``[I; Cauchy]`` generator
        path (:class:`~mpi_coded.codes.cauchy.CauchyCode`; float64 keeps its real code)."""
        if f.name == "gf2^16" and prefer_rs(layout.n, layout.k, p.n, p.outputs_per_reducer):
            return RSSubCode(f, layout.n, layout.k)
        return CauchyCode(f, layout.n, layout.k)

    # --- storage -------------------------------------------------------------------------
    def batch_rows(self, p: CodedParams, layout: CodeLayout, assignment: np.ndarray | None
                   ) -> tuple[tuple[tuple[int, ...], ...], np.ndarray]:
        """``(rows, P)``: the coded rows of each batch in slot order and ``P[b, t]``.
        Slot ``i`` is coded row ``i``; no assignment matrix."""
        require(assignment is None, "assignment",
                f"only scheme {names_with('takes_assignment')} takes an assignment matrix")
        rows = slot_rows(p.n_batches, p.rows_per_batch)
        return rows, count_partitions(layout, rows)

    # --- map end -------------------------------------------------------------------------
    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        """Whether the finishers' batches hold ``>= k`` rows of every partition."""
        return partitions_covered(placement, finished)

    # --- shuffle -------------------------------------------------------------------------
    def reference_load(self, K: int, q: int, mu: Any) -> UnifiedLoad:
        """The unified formula at the scheme's effective parameters: its ``s_q``, strategy
        and multicast levels drive the shuffle plan."""
        mu_f = check_reference(K, q, mu)
        return unified_load(*self.effective_model(K, q, mu_f))

    def paper_load(self, p: CodedParams) -> Fraction:
        """The load formula the measured load of a run is compared with:
        :meth:`reference_load` of ``p``'s reference parameters (bdc, lt: the unified one)."""
        return self.reference_load(p.K, p.q, p.mu).load

    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        """Unicasts for reducer ``Q[idx]`` knowing the batches ``known`` (added to ``book``);
        returns its unicast rows and decode rows.  MDS: fill each partition's deficit."""
        return deficit_unicasts(book, idx, known)

    # --- loads ---------------------------------------------------------------------------
    def load(self, K: int, q: int, mu: Any) -> UnifiedLoad:
        """The closed-form load (docs/theory.md (B.3)): the unified formula at the
        effective parameters; ``K, q, mu`` are the reference parameters."""
        return self.reference_load(K, q, mu)

    def literal_load(self, K: int, q: int, mu: Any) -> Fraction:
        """The load as the papers write it (unified: ``L(q)``)."""
        return self.load(K, q, mu).load

    # --- the delay model -----------------------------------------------------------------
    def model_terms(self, p: CodedParams, eps: float | None, c: float, delta: float,
                    sa: float, sm: float, conv: Convention = DEFAULT_CONVENTION
                    ) -> ModelTerms:
        """Model terms (docs/theory.md (B.6)) with additions costing ``sa`` and
        multiplications ``sm``: a dense ``(r, m)`` code, ``mu m`` rows per server,
        encoding by ``m`` products per coded row or the FFT (:meth:`encode_terms`), one RS
        decoding of length ``r`` per output."""
        cost, decoder = self.decode_cost(p, sa, sm, conv)
        enc, encoder = self.encode_terms(p, sa, sm, conv)
        return ModelTerms(
            rows=self.model_rows(p), encode=enc, decode_per_output=cost,
            decoder=decoder, servers_needed={p.wait_for: 1.0},
            load=self.load(p.K, p.q, p.mu).load, encoder=encoder)

    def fft_codewords(self, p: CodedParams) -> float:
        """Codewords one server's FFT encoding computes per column of ``A``: one per
        partition it stores rows of (unified: 1)."""
        return float(min(p.partitions, self.model_rows(p)))

    def encode_terms(self, p: CodedParams, sa: float, sm: float,
                     conv: Convention = DEFAULT_CONVENTION) -> tuple[Ops, str | None]:
        """The encoding operations and the encoder costed: the generator product (eq. (8),
        :meth:`encode_cost`) or, where the convention offers the FFT encoder, the FFT
        (``n`` columns times :meth:`fft_codewords` times eq. (10)'s curve,
        :func:`~mpi_coded.analysis.delay.fft_encode_ops`), whichever is lower."""
        gen = self.encode_cost(p, conv)
        if gen.additions == 0 and gen.multiplications == 0:
            return gen, None
        if not conv.fft_encode or not self.mds_code or p.code_length <= p.code_dimension:
            return gen, "generator"
        fft = fft_encode_ops(p.code_length, self.fft_codewords(p) * p.n, conv.c_add)
        if conv.authors:  # their code: FFT for the dense unified code, eq. (8) otherwise
            return (fft, "fft") if self.authors_fft_encode else (gen, "generator")
        return (fft, "fft") if fft.cost(sa, sm) < gen.cost(sa, sm) else (gen, "generator")

    def model_rows(self, p: CodedParams) -> float:
        """Coded rows per server: ``mu_eff m``."""
        return float(p.mu_eff * p.m)

    def encode_cost(self, p: CodedParams, conv: Convention = DEFAULT_CONVENTION) -> Ops:
        """Encoding the stored rows by generator rows: ``m`` nonzeros per coded row."""
        return encode_ops(self.model_rows(p), p.m, p.n)

    def decode_cost(self, p: CodedParams, sa: float, sm: float,
                    conv: Convention = DEFAULT_CONVENTION) -> tuple[float, str | None]:
        """RS decoding of one output: one code of length ``r``, erased fraction ``1 - q/K``
        (the authors' conventions: the FFT decoder)."""
        return rs_decode_cost(p.r, 1, 1.0 - p.q / p.K, sa, sm,
                              "fft" if conv.authors else None, conv.c_add)
