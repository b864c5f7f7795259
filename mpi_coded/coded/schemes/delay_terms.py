"""Delay terms: what a scheme contributes to the delay model (docs/theory.md (B.6)).

A scheme's delay terms (``Scheme.delay``, a :class:`DelayTerms`) give, for one
analytic setting and the costs of its field (one
:class:`~mpi_coded.analysis.delay.DelayCosts`: ``sigma_A``, ``sigma_M`` and the
convention), the :class:`ModelTerms` :func:`mpi_coded.analysis.model.predict` turns
into delays the same way for every scheme: rows per server, encoding operations,
decoding cost per output, servers waited for.  The load is not theirs: the scheme's
load rule declares it once (:mod:`~mpi_coded.coded.schemes.load_rules`).
:class:`DenseTerms` is the unified scheme's (a dense ``(r, m)`` RS code); the others
live with their schemes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mpi_coded.analysis.delay import DelayCosts, Ops, encode_ops, fft_encode_ops
from mpi_coded.coded.params import CodedParams


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
    load: float | None = None
    """Only for a scheme without a closed-form load (the model uses the scheme's load rule
    otherwise): lt's approximate load; None: from the assignment (bdc)."""
    eps: float | None = None
    """lt: the LT overhead used."""
    encoder: str | None = None
    """The encoder costed (``generator``: eq. (8); ``fft``; None: nothing to encode)."""


class DelayTerms(Protocol):
    """What a scheme's delay terms answer (module docstring).  ``eps``, ``c``, ``delta``:
    the LT overhead and robust Soliton parameters of the setting (lt only)."""

    def check_setting(self, p: CodedParams, eps: float | None, c: float,
                      delta: float) -> None:
        """The scheme's own rules of an analytic setting."""
    def terms(self, p: CodedParams, eps: float | None, c: float, delta: float,
              costs: DelayCosts) -> ModelTerms:
        """The model terms of the setting ``p`` at ``costs``."""


class DenseTerms:
    """A dense ``(r, m)`` MDS (RS) code: ``mu m`` rows per server, encoding by ``m``
    products per coded row or the FFT (:meth:`encode`), one RS decoding of length ``r``
    per output, waiting for ``q_eff`` servers.  Subclasses change the hooks
    (:meth:`generator_ops`, :meth:`decode`, :meth:`fft_codewords`, ...)."""

    authors_fft_encode = True
    """The BDC authors' evaluation code encodes this scheme by FFT (unified) rather than by
    eq. (8) (docs/theory.md (C.2))."""

    def check_setting(self, p: CodedParams, eps: float | None, c: float,
                      delta: float) -> None:
        """None."""

    def terms(self, p: CodedParams, eps: float | None, c: float, delta: float,
              costs: DelayCosts) -> ModelTerms:
        cost, decoder = self.decode(p, costs)
        enc, encoder = self.encode(p, costs)
        return ModelTerms(
            rows=self.rows(p), encode=enc, decode_per_output=cost, decoder=decoder,
            servers_needed=self.servers_needed(p), encoder=encoder)

    def rows(self, p: CodedParams) -> float:
        """Coded rows per server: ``mu_eff m``."""
        return float(p.mu_eff * p.m)

    def servers_needed(self, p: CodedParams) -> dict[int, float] | None:
        """``q_eff``, always."""
        return {p.wait_for: 1.0}

    def generator_ops(self, p: CodedParams, costs: DelayCosts) -> Ops:
        """Encoding the stored rows by generator rows: ``m`` nonzeros per coded row."""
        return encode_ops(self.rows(p), p.m, p.n)

    def fft_codewords(self, p: CodedParams) -> float:
        """Codewords one server's FFT encoding computes per column of ``A``: one per
        partition it stores rows of (unified: 1)."""
        return float(min(p.partitions, self.rows(p)))

    def encode(self, p: CodedParams, costs: DelayCosts) -> tuple[Ops, str | None]:
        """The encoding operations and the encoder costed: the generator product (eq. (8),
        :meth:`generator_ops`) or, where the convention offers the FFT encoder, the FFT
        (``n`` columns times :meth:`fft_codewords` times eq. (10)'s curve,
        :func:`~mpi_coded.analysis.delay.fft_encode_ops`), whichever is lower."""
        conv = costs.conv
        gen = self.generator_ops(p, costs)
        if gen.additions == 0 and gen.multiplications == 0:
            return gen, None
        if not conv.fft_encode or p.code_length <= p.code_dimension:
            return gen, "generator"
        fft = fft_encode_ops(p.code_length, self.fft_codewords(p) * p.n, conv.c_add)
        if conv.authors:  # their code: FFT for the dense unified code, eq. (8) otherwise
            return (fft, "fft") if self.authors_fft_encode else (gen, "generator")
        return (fft, "fft") if costs.cost(fft) < costs.cost(gen) else (gen, "generator")

    def decode(self, p: CodedParams, costs: DelayCosts) -> tuple[float, str | None]:
        """RS decoding of one output: one code of length ``r``, erased fraction ``1 - q/K``
        (the authors' conventions: the FFT decoder)."""
        return costs.rs_decode(p.r, 1, 1.0 - p.q / p.K, "fft" if costs.conv.authors else None)
