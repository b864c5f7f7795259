"""The coded job's code: ``C = Psi A`` as independent partitions of one sub-code.

Every scheme's ``Psi`` (``r x m``) is a set of independent sub-codes
("partitions") of the same ``(n, k)`` code: partition ``t`` maps rows
``msg_index[t]`` of ``A`` to coded rows ``coded_index[t]``,
``C[coded_index[t][a]] = sum_c G[a, c] A[msg_index[t][c]]``, and any ``k``
coded rows of a partition decode it.  Which rows go where is the scheme's
(:meth:`~mpi_coded.coded.schemes.base.Scheme.code_layout`): one dense partition
(unified), ``T`` contiguous ones (bdc, docs/theory.md (B.4)), ``m/q`` strided
stripes (sc), or the identity (uc, cmr).

:class:`CodeLayout` is the structure only (no field).  :class:`PartitionCode`
adds the sub-code and does encoding (``k`` products per coded row: ``m/T`` for
bdc, docs/theory.md (B.2)) and decoding, with one decoder call per partition and
erasure pattern; each partition's encode and decode is delegated to the
sub-code object (:class:`mpi_coded.codes.cauchy.CauchyCode`; an RS code with the
same members plugs in).  :class:`Code` is the interface the runtime and
:mod:`~mpi_coded.coded.replay` use; scheme ``lt`` has its own implementation
(:class:`mpi_coded.coded.schemes.lt.LTJobCode`).  :func:`build_code` asks the
scheme for its code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mpi_coded.errors import NotDecodable
from mpi_coded.fields import Field

if TYPE_CHECKING:
    from mpi_coded.coded.params import CodedParams


@dataclass(frozen=True, eq=False)
class CodeLayout:
    """Which rows of ``A`` and of ``C`` each partition covers (no field needed)."""

    m: int
    r: int
    msg_index: np.ndarray  # (T, k) rows of A per partition
    coded_index: np.ndarray  # (T, n) coded rows per partition, in hand-out order
    row_partition: np.ndarray = field(init=False)  # (r,) partition of each coded row
    row_position: np.ndarray = field(init=False)  # (r,) position inside its partition

    def __post_init__(self) -> None:
        part = np.full(self.r, -1, dtype=np.int64)
        pos = np.full(self.r, -1, dtype=np.int64)
        for t in range(self.T):
            part[self.coded_index[t]] = t
            pos[self.coded_index[t]] = np.arange(self.n)
        assert np.all(part >= 0), "every coded row belongs to one partition"
        object.__setattr__(self, "row_partition", part)
        object.__setattr__(self, "row_position", pos)

    @property
    def T(self) -> int:
        """Number of partitions."""
        return int(self.msg_index.shape[0])

    @property
    def k(self) -> int:
        """Values needed to decode one partition."""
        return int(self.msg_index.shape[1])

    @property
    def n(self) -> int:
        """Coded rows per partition."""
        return int(self.coded_index.shape[1])

    def coded_rows(self, t: int) -> tuple[int, ...]:
        """Coded rows of partition ``t``, in hand-out order."""
        return tuple(int(x) for x in self.coded_index[t])

    def message_rows(self, t: int) -> tuple[int, ...]:
        """Rows of ``A`` that partition ``t`` encodes."""
        return tuple(int(x) for x in self.msg_index[t])


def contiguous_layout(m: int, r: int, T: int) -> CodeLayout:
    """``T`` partitions of consecutive rows: message rows ``[t m/T, (t+1) m/T)``, coded
    rows ``[t r/T, (t+1) r/T)`` (``T = 1``: one dense code)."""
    msg = np.arange(m).reshape(T, m // T)
    coded = np.arange(r).reshape(T, r // T)
    return CodeLayout(m=m, r=r, msg_index=msg.astype(np.int64),
                      coded_index=coded.astype(np.int64))


def striped_layout(m: int, K: int, q: int) -> CodeLayout:
    """``m/q`` stripes: stripe ``t`` has message rows ``u m/q + t`` (``u < q``) and coded
    rows ``k m/q + t`` (``k < K``), i.e. a ``(K, q)`` code applied elementwise to ``q``
    blocks of ``m/q`` rows."""
    stripes = m // q
    t = np.arange(stripes)[:, None]
    msg = t + stripes * np.arange(q)[None, :]
    coded = t + stripes * np.arange(K)[None, :]
    return CodeLayout(m=m, r=stripes * K, msg_index=msg.astype(np.int64),
                      coded_index=coded.astype(np.int64))


class SubCode(Protocol):
    """One partition's ``(n, k)`` code (:class:`mpi_coded.codes.cauchy.CauchyCode`)."""

    n: int
    k: int

    def generator(self) -> np.ndarray: ...

    def encode_rows(self, positions: Sequence[int] | np.ndarray, message: np.ndarray
                    ) -> np.ndarray: ...

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray
               ) -> np.ndarray: ...


ALGORITHMS = ("systematic", "generator", "rs_fft", "peeling")
"""Names of the encoders and decoders a code records (:attr:`Code.encoders`,
:attr:`Code.decoders`): ``systematic`` (data rows copied, nothing computed), ``generator``
(generator rows / a cached inverse), ``rs_fft`` (the RS FFT codec), ``peeling`` (LT)."""


def algorithm_mask(names: set[str] | dict[str, int]) -> int:
    """Bit mask of algorithm names (bit ``i``: :data:`ALGORITHMS` ``[i]``), for the wire."""
    return sum(1 << i for i, a in enumerate(ALGORITHMS) if a in names)


def algorithm_names(mask: int) -> str:
    """``"rs_fft"``, ``"generator+rs_fft"``, ... from :func:`algorithm_mask` (``"none"``: 0)."""
    got = [a for i, a in enumerate(ALGORITHMS) if int(mask) >> i & 1]
    return "+".join(got) if got else "none"


class Code:
    """What the job needs of a code: ``Psi``, encoding of coded rows, decoding of ``A x``."""

    layout: CodeLayout
    field: Field
    encoders: dict[str, int]
    """Partitions per encoder of the latest :meth:`encode` (:data:`ALGORITHMS`)."""
    decoders: dict[str, int]
    """Decoder calls per decoder of the latest :meth:`decode`."""

    def psi(self) -> np.ndarray:
        """The full ``r x m`` encoding matrix (for tests and small sizes)."""
        raise NotImplementedError

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        """Coded rows ``C[rows] = Psi[rows] A`` (all ``r`` if ``rows`` is None)."""
        raise NotImplementedError

    def decode_partition(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``A[msg_index[t]] x`` from coded values of one partition ``t`` (``values[j]``:
        coded row ``rows[j]``)."""
        raise NotImplementedError

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``y = A x`` (``m x outputs``) from coded values ``values[j]`` of ``rows[j]``.

        Raises :class:`~mpi_coded.errors.NotDecodable` if the rows do not suffice.
        """
        raise NotImplementedError


class PartitionCode(Code):
    """A :class:`CodeLayout` whose every partition is the same sub-code."""

    def __init__(self, layout: CodeLayout, field_: Field, sub: SubCode) -> None:
        assert (sub.n, sub.k) == (layout.n, layout.k), "sub-code shape matches the layout"
        self.layout = layout
        self.field = field_
        self.sub = sub
        self.encoders = {}
        self.decoders = {}

    def _record(self, book: dict[str, int], name: str) -> None:
        book[name] = book.get(name, 0) + 1

    def psi(self) -> np.ndarray:
        lay = self.layout
        out = self.field.zeros((lay.r, lay.m))
        G = self.sub.generator()
        for t in range(lay.T):
            out[np.ix_(lay.coded_index[t], lay.msg_index[t])] = G
        return out

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        """Coded rows ``C[rows] = Psi[rows] A``.

        A sub-code with a fast encoder (``encode_cost``: the RS code) is called once per
        partition and picks its path there (the FFT parity of the partition's message, or
        ``k`` products per coded row); a generator-only sub-code gets one product per
        partition or one per generator row, whichever needs fewer calls.  The encoders that
        ran are in :attr:`encoders`.
        """
        lay = self.layout
        idx = np.arange(lay.r) if rows is None else np.asarray(list(rows), dtype=np.int64)
        out = self.field.zeros((len(idx), A.shape[1]))
        parts = lay.row_partition[idx]
        pos = lay.row_position[idx]
        uniq_parts, uniq_pos = np.unique(parts), np.unique(pos)
        self.encoders = {}
        if hasattr(self.sub, "encode_cost") or len(uniq_parts) <= len(uniq_pos):
            # one call per partition: G[positions] @ A[message rows of t], or its FFT parity
            for t in uniq_parts:
                sel = np.nonzero(parts == t)[0]
                out[sel] = self.sub.encode_rows(pos[sel], A[lay.msg_index[t]])
                self._record(self.encoders, getattr(self.sub, "last_encoder", "generator"))
        else:
            # one product per generator row, over all partitions using it
            for a in uniq_pos:
                sel = np.nonzero(pos == a)[0]
                if a < lay.k:  # a systematic row: a row of A
                    out[sel] = A[lay.msg_index[parts[sel], a]]
                    self._record(self.encoders, "systematic")
                    continue
                flat = A[lay.msg_index[parts[sel]].T].reshape(lay.k, -1)  # (k, len(sel) cols)
                prod = self.sub.encode_rows([a], flat)
                out[sel] = prod.reshape(len(sel), A.shape[1])
                self._record(self.encoders, "generator")
        return out

    def decode_partition(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``A[msg_index[t]] x`` from exactly ``k`` coded rows of one partition ``t``."""
        lay = self.layout
        rows_a = np.asarray(list(rows), dtype=np.int64)
        if len(rows_a) != lay.k or len(set(lay.row_partition[rows_a].tolist())) != 1:
            raise NotDecodable(f"need exactly {lay.k} rows of one partition, got {list(rows)}")
        return self.sub.decode(lay.row_position[rows_a], values)

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``y = A x`` using, per partition, the first ``k`` listed rows of that partition;
        partitions with the same erasure pattern are decoded in one call."""
        lay = self.layout
        chosen: dict[int, list[int]] = defaultdict(list)
        for j, row in enumerate(rows):
            t = int(lay.row_partition[int(row)])
            if len(chosen[t]) < lay.k:
                chosen[t].append(j)
        short = [t for t in range(lay.T) if len(chosen[t]) < lay.k]
        if short:
            raise NotDecodable(
                f"partitions {short[:8]} have fewer than {lay.k} coded values")
        rows_a = np.asarray(list(rows), dtype=np.int64)
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        sel_of: dict[int, np.ndarray] = {}
        for t in range(lay.T):
            sel = np.asarray(chosen[t], dtype=np.int64)
            pos = lay.row_position[rows_a[sel]]
            order = np.argsort(pos, kind="stable")
            sel_of[t] = sel[order]
            groups[tuple(int(x) for x in pos[order])].append(t)
        cols = values.shape[1]
        out = self.field.zeros((lay.m, cols))
        self.decoders = {}
        for key, ts in groups.items():
            if len(ts) == 1:
                stacked = values[sel_of[ts[0]]]
            else:
                stacked = np.concatenate([values[sel_of[t]] for t in ts], axis=1)  # (k, |ts| cols)
            dec = self.sub.decode(key, stacked)
            self._record(self.decoders, getattr(self.sub, "last_decoder", "generator"))
            for i, t in enumerate(ts):
                out[lay.msg_index[t]] = dec[:, i * cols:(i + 1) * cols]
        return out


def build_code(params: CodedParams, field_: Field | None = None) -> Code:
    """The :class:`Code` of ``params`` over ``field_`` (default: ``params.field_name``),
    as its scheme builds it (:meth:`~mpi_coded.coded.schemes.base.Scheme.build_code`)."""
    return params.spec.build_code(params, field_)
