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

from mpi_coded.codes import work as W
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


ROW_OPERAND = 1 << 20
"""Elements of the operand of one generator-row product when encoding row by row."""


@dataclass
class CodeWork:
    """The kernel calls of one :meth:`PartitionCode.encode` or :meth:`PartitionCode.decode`
    (:class:`~mpi_coded.codes.work.Work`) and how many sub-code calls ran each algorithm
    (:data:`ALGORITHMS`); :meth:`seconds` prices them with a calibration table."""

    algorithms: dict[str, int] = field(default_factory=dict)
    work: list[W.Work] = field(default_factory=list)

    def add(self, algorithm: str, work: Sequence[W.Work]) -> None:
        self.algorithms[algorithm] = self.algorithms.get(algorithm, 0) + 1
        self.work.extend(work)

    def seconds(self, table: W.Table = None) -> float:
        return W.price(self.work, table)


class SubCode(Protocol):
    """One partition's ``(n, k)`` code (:class:`mpi_coded.codes.cauchy.CauchyCode`)."""

    n: int
    k: int

    def generator(self) -> np.ndarray: ...

    def encode_rows(self, positions: Sequence[int] | np.ndarray, message: np.ndarray
                    ) -> np.ndarray: ...

    def decode(self, positions: Sequence[int] | np.ndarray, values: np.ndarray
               ) -> np.ndarray: ...

    def encode_work(self, positions: Sequence[int] | np.ndarray, vectors: int
                    ) -> tuple[str, list[W.Work]]: ...

    def decode_work(self, positions: Sequence[int], vectors: int
                    ) -> tuple[str, list[W.Work]]: ...


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

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) the kernels this code runs, so that no
        timed phase pays for them (the field's own kernels: ``Field.warm_up``)."""

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

    def warm_up(self) -> None:
        warm = getattr(self.sub, "warm_up", None)
        if warm is not None:
            warm()

    def psi(self) -> np.ndarray:
        lay = self.layout
        out = self.field.zeros((lay.r, lay.m))
        G = self.sub.generator()
        for t in range(lay.T):
            out[np.ix_(lay.coded_index[t], lay.msg_index[t])] = G
        return out

    def _encode_calls(self, rows: Sequence[int] | None, vectors: int
                      ) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int, np.ndarray]]]:
        """``(parts, pos, calls)`` of encoding ``rows``: each call is ``("partition", t,
        sel)`` (one sub-code call for partition ``t``) or ``("row", a, sel)`` (generator
        row ``a`` over all partitions using it), filling ``sel`` of the output rows."""
        lay = self.layout
        idx = np.arange(lay.r) if rows is None else np.asarray(list(rows), dtype=np.int64)
        parts = lay.row_partition[idx]
        pos = lay.row_position[idx]
        uniq_parts, uniq_pos = np.unique(parts), np.unique(pos)
        if hasattr(self.sub, "encode_cost") or len(uniq_parts) <= len(uniq_pos):
            calls = [("partition", int(t), np.nonzero(parts == t)[0]) for t in uniq_parts]
            return parts, pos, calls
        # a generator row's operand gathers k message rows per output row: pieces of at
        # most ROW_OPERAND elements keep it in cache (one huge operand runs memory-bound)
        piece = max(1, ROW_OPERAND // max(1, lay.k * vectors))
        calls = []
        for a in uniq_pos:
            sel = np.nonzero(pos == a)[0]
            step = len(sel) if a < lay.k else piece
            calls += [("row", int(a), sel[i:i + step]) for i in range(0, len(sel), step)]
        return parts, pos, calls

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        """Coded rows ``C[rows] = Psi[rows] A``.

        A sub-code with a fast encoder (``encode_cost``: the RS code) is called once per
        partition and picks its path there (the FFT parity of the partition's message, or
        ``k`` products per coded row); a generator-only sub-code gets one product per
        partition or one per generator row, whichever needs fewer calls.  The encoders that
        ran are in :attr:`encoders`; :meth:`encode_work` lists the same calls.
        """
        lay = self.layout
        parts, pos, calls = self._encode_calls(rows, A.shape[1])
        out = self.field.zeros((len(parts), A.shape[1]))
        self.encoders = {}
        for how, key, sel in calls:
            if how == "partition":  # G[positions] @ A[message rows of t], or its FFT parity
                out[sel] = self.sub.encode_rows(pos[sel], self._message(A, key))
                self._record(self.encoders, getattr(self.sub, "last_encoder", "generator"))
            elif key < lay.k:  # a systematic row: a row of A
                out[sel] = A[lay.msg_index[parts[sel], key]]
                self._record(self.encoders, "systematic")
            else:
                flat = A[lay.msg_index[parts[sel]].T].reshape(lay.k, -1)  # (k, len(sel) cols)
                prod = self.sub.encode_rows([key], flat)
                out[sel] = prod.reshape(len(sel), A.shape[1])
                self._record(self.encoders, "generator")
        return out

    def _consecutive(self, t: int) -> bool:
        """Whether partition ``t``'s message rows are consecutive rows of ``A``."""
        return bool(np.all(np.diff(self.layout.msg_index[t]) == 1))

    def _message(self, A: np.ndarray, t: int) -> np.ndarray:
        """``A[msg_index[t]]``: a view (no copy) when the rows are consecutive."""
        idx = self.layout.msg_index[t]
        if self._consecutive(t):
            return A[int(idx[0]):int(idx[-1]) + 1]
        return A[idx]

    def encode_work(self, rows: Sequence[int] | None, vectors: int) -> CodeWork:
        """The calls :meth:`encode` makes for ``rows`` of an ``A`` with ``vectors`` columns,
        with the encoders they run (the same decisions, no arithmetic)."""
        lay = self.layout
        parts, pos, calls = self._encode_calls(rows, vectors)
        out = CodeWork()
        for how, key, sel in calls:
            if how == "partition":
                name, work = self.sub.encode_work(pos[sel], vectors)
                gather = 0 if self._consecutive(key) else lay.k * vectors
                out.add(name, [W.copy(gather), *work, W.copy(len(sel) * vectors)])
            elif key < lay.k:
                out.add("systematic", [W.call(), W.copy(2 * len(sel) * vectors)])
            else:
                out.add("generator", [W.copy(lay.k * len(sel) * vectors),
                                      *W.product(self.field.name, 1, lay.k, len(sel) * vectors),
                                      W.copy(len(sel) * vectors)])
        return out

    def decode_partition(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``A[msg_index[t]] x`` from exactly ``k`` coded rows of one partition ``t``."""
        lay = self.layout
        rows_a = np.asarray(list(rows), dtype=np.int64)
        if len(rows_a) != lay.k or len(set(lay.row_partition[rows_a].tolist())) != 1:
            raise NotDecodable(f"need exactly {lay.k} rows of one partition, got {list(rows)}")
        return self.sub.decode(lay.row_position[rows_a], values)

    def _decode_groups(self, rows: Sequence[int]
                       ) -> tuple[dict[tuple[int, ...], list[int]], dict[int, np.ndarray]]:
        """``(groups, sel_of)``: partitions by erasure pattern (sorted positions) and, per
        partition, the indices into ``rows`` of its first ``k`` values in position order;
        :class:`~mpi_coded.errors.NotDecodable` if a partition has fewer."""
        lay = self.layout
        rows_a = np.asarray(list(rows), dtype=np.int64)
        part = lay.row_partition[rows_a]
        by_part = np.argsort(part, kind="stable")  # row indices, partition by partition
        counts = np.bincount(part, minlength=lay.T)
        short = np.flatnonzero(counts < lay.k)
        if short.size:
            raise NotDecodable(
                f"partitions {short[:8].tolist()} have fewer than {lay.k} coded values")
        starts = np.r_[0, np.cumsum(counts)[:-1]]
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        sel_of: dict[int, np.ndarray] = {}
        for t in range(lay.T):
            sel = by_part[starts[t]:starts[t] + lay.k]  # its first k listed rows
            pos = lay.row_position[rows_a[sel]]
            order = np.argsort(pos, kind="stable")
            sel_of[t] = sel[order]
            groups[tuple(pos[order].tolist())].append(t)
        return groups, sel_of

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``y = A x`` using, per partition, the first ``k`` listed rows of that partition;
        partitions with the same erasure pattern are decoded in one call
        (:meth:`decode_work` lists the same calls)."""
        lay = self.layout
        groups, sel_of = self._decode_groups(rows)
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

    def decode_work(self, rows: Sequence[int], vectors: int) -> CodeWork:
        """The calls :meth:`decode` makes from ``rows`` on ``vectors`` columns, with the
        decoders they run (the same decisions, no arithmetic)."""
        lay = self.layout
        groups, _ = self._decode_groups(rows)
        out = CodeWork()
        for key, ts in groups.items():
            vec = len(ts) * vectors
            name, work = self.sub.decode_work(key, vec)
            # each partition: its values stacked and its outputs placed (Python, copies)
            out.add(name, [*[W.place() for _ in ts], W.copy(2 * lay.k * vec), *work])
        return out


def build_code(params: CodedParams, field_: Field | None = None) -> Code:
    """The :class:`Code` of ``params`` over ``field_`` (default: ``params.field_name``),
    as its scheme builds it (:meth:`~mpi_coded.coded.schemes.base.Scheme.build_code`)."""
    return params.spec.build_code(params, field_)
