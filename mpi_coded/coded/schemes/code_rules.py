"""Code rules: a scheme's code and what decodes it.

A scheme's code rule (``Scheme.code``, a :class:`CodeRules`) builds the job's code on
the partitions its layout gives (:class:`~mpi_coded.coded.code.CodeLayout`), picks
the field ``auto`` resolves to, checks that the field holds the code, and says when
coded rows suffice: the map-end rule (:meth:`CodeRules.covered`) and the unicast rule
of the shuffle (:meth:`CodeRules.reducer_rows`).  :class:`PartitionCodeRules` is the
rule of every scheme but lt: each partition an ``[I; Cauchy]`` (or, over GF(2^16),
Reed-Solomon) sub-code decoded from any ``k`` of its rows; :data:`MDS_CODE` (unified,
sc, bdc) and :data:`IDENTITY_CODE` (uc, cmr: ``Psi = I``).  lt's is in
:mod:`~mpi_coded.coded.schemes.lt`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mpi_coded.coded.code import Code, CodeLayout, PartitionCode, SubCode
from mpi_coded.coded.mapend import partitions_covered
from mpi_coded.coded.params import CodedParams, check_capacity, pick_field
from mpi_coded.coded.placement import Placement
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
from mpi_coded.fields import Field

AUTO_GF16_SAVING_S = 0.5
"""Seconds per repetition the RS path over gf2^16 must save for ``auto`` to leave gf2^8."""


class CodeRules(Protocol):
    """What a scheme's code rule answers (module docstring)."""

    @property
    def mds(self) -> bool:
        """Its sub-codes are ``[I; Cauchy]`` MDS codes whose length the field must hold."""
    @property
    def cover_rule(self) -> str:
        """Appended to the map-end failure message (what "enough" means)."""
    @property
    def searches_unicasts(self) -> bool:
        """Its unicast counts come from a search over decodability checks (lt): the master
        runs it once and ``MAP_END`` carries the counts (``MapEnd.unicast_rows``)."""

    def auto_field(self, p: CodedParams) -> str:
        """The field ``auto`` resolves to."""
    def check_job(self, p: CodedParams) -> None:
        """The code's rules of a runnable job (the field holds it, ...)."""
    def model_length(self, p: CodedParams) -> int | None:
        """Length of each MDS sub-code the field must hold (None: no MDS code)."""
    def build(self, p: CodedParams, f: Field, layout: CodeLayout) -> Code:
        """The job's code over ``f`` on the partitions of ``layout``."""
    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        """Whether the finishers' stored rows suffice (the map-end rule)."""
    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        """Unicasts for reducer ``Q[idx]`` knowing the batches ``known`` (added to
        ``book``); returns its unicast rows and decode rows."""


@dataclass(frozen=True)
class PartitionCodeRules:
    """Partitions of ``[I; Cauchy]`` or RS sub-codes, each decoded from any ``k`` of its
    rows (``mds`` False: the identity, ``Psi = I``, whose length no field need hold)."""

    mds: bool = True
    cover_rule: str = ""
    searches_unicasts: bool = False

    def auto_field(self, p: CodedParams) -> str:
        """gf2^8 for an identity or non-MDS code; gf2^16 for a sub-code longer than 256;
        otherwise gf2^8 unless the RS FFT path over gf2^16 saves at least
        :data:`AUTO_GF16_SAVING_S` seconds per repetition in the cost rule of
        :mod:`mpi_coded.codes.rs_sub` (:meth:`estimate_seconds`; the map products cost
        about three times more over gf2^16, so only large decoding or encoding work
        switches)."""
        if p.code_length == p.code_dimension or not self.mds:
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

    def check_job(self, p: CodedParams) -> None:
        """An MDS code with parity fits the field (gf2^8: length <= 256, gf2^16: <= 65536,
        float64: any)."""
        if self.mds and p.code_length > p.code_dimension:
            check_capacity(p.field, p.code_length, " (use gf2^16 or more partitions T)")

    def model_length(self, p: CodedParams) -> int | None:
        return p.code_length if self.mds else None

    def build(self, p: CodedParams, f: Field, layout: CodeLayout) -> Code:
        """Every partition the same sub-code (:meth:`sub_code`)."""
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

    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        """Whether the finishers' batches hold ``>= k`` rows of every partition."""
        return partitions_covered(placement, finished)

    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        """Fill each partition's deficit (:func:`~mpi_coded.coded.shuffle.deficit_unicasts`)."""
        return deficit_unicasts(book, idx, known)


MDS_CODE = PartitionCodeRules()
"""Unified, sc, bdc."""
IDENTITY_CODE = PartitionCodeRules(mds=False)
"""uc, cmr: uncoded storage."""
