"""Encoding matrices ``Psi`` of the five schemes over a Field (SPEC B.1, B.4).

Every scheme's ``Psi`` (``r x m``, ``C = Psi A``) is a set of independent
sub-codes ("partitions"), all with the same ``n x k`` systematic MDS generator
``G = [I_k; Cauchy]`` (:func:`mpi_coded.codes.mds.systematic_mds`): partition
``t`` maps rows ``msg_index[t]`` of ``A`` to coded rows ``coded_index[t]``:
``C[coded_index[t][a]] = sum_c G[a, c] A[msg_index[t][c]]``.  Any ``k`` coded
rows of a partition decode it.

* unified: one partition, ``G`` the dense ``(r, m)`` MDS code;
* bdc: ``T`` contiguous partitions, ``Psi = diag(psi_1..psi_T)``, each
  ``psi_t`` an ``(r/T, m/T)`` MDS code (SPEC B.4);
* sc: ``A`` cut into ``q`` blocks ``A_1..A_q`` of ``m/q`` rows and a ``(K, q)``
  MDS code applied elementwise, ``C_k = sum_u G[k, u] A_u`` (seed 001), i.e.
  ``m/q`` strided partitions: stripe ``t`` has message rows ``u m/q + t`` and
  coded rows ``k m/q + t``;
* uc, cmr: ``Psi = I_m`` (uncoded), one partition needing all ``m`` rows;
* lt: one partition of ``r`` rows and ``m`` columns, but ``Psi`` is a seeded
  sparse LT code, not MDS: :func:`build_code` returns a
  :class:`mpi_coded.coded.lt_scheme.LTSchemeCode` (same interface).

:class:`CodeLayout` is the structure only (no field); :class:`Code` adds the
generator and does encoding (costing ``k`` products per coded row: ``m/T`` for
BDC, SPEC B.2) and decoding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mpi_coded.coded.params import CodedParams
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.fields import Field, get_field


class NotDecodable(RuntimeError):
    """Fewer than ``k`` coded values of some partition: a plan or protocol bug."""


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


def code_layout(params: CodedParams) -> CodeLayout:
    """The partition structure of ``params.scheme`` (see the module docstring)."""
    m, r, K, q = params.m, params.r, params.K, params.q
    if params.scheme == "sc":
        stripes = m // q
        t = np.arange(stripes)[:, None]
        msg = t + stripes * np.arange(q)[None, :]
        coded = t + stripes * np.arange(K)[None, :]
    else:
        T = params.partitions
        msg = np.arange(m).reshape(T, m // T)
        coded = np.arange(r).reshape(T, r // T)
    return CodeLayout(m=m, r=r, msg_index=msg.astype(np.int64), coded_index=coded.astype(np.int64))


class Code:
    """A :class:`CodeLayout` with its generator over a field: ``Psi``, encode, decode."""

    def __init__(self, layout: CodeLayout, field_: Field) -> None:
        self.layout = layout
        self.field = field_
        self.generator = systematic_mds(field_, layout.n, layout.k)
        self.decoders = DecoderCache(field_, self.generator)

    def psi(self) -> np.ndarray:
        """The full ``r x m`` encoding matrix (for tests and small sizes)."""
        lay = self.layout
        out = self.field.zeros((lay.r, lay.m))
        for t in range(lay.T):
            out[np.ix_(lay.coded_index[t], lay.msg_index[t])] = self.generator
        return out

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        """Coded rows ``C[rows] = Psi[rows] A`` (all ``r`` if ``rows`` is None).

        Each coded row costs ``k`` products (only its partition's block of ``Psi``).
        """
        lay = self.layout
        idx = np.arange(lay.r) if rows is None else np.asarray(list(rows), dtype=np.int64)
        out = self.field.zeros((len(idx), A.shape[1]))
        parts = lay.row_partition[idx]
        pos = lay.row_position[idx]
        uniq_parts, uniq_pos = np.unique(parts), np.unique(pos)
        if len(uniq_parts) <= len(uniq_pos):
            # one product per partition: G[positions] @ A[message rows of t]
            for t in uniq_parts:
                sel = np.nonzero(parts == t)[0]
                out[sel] = self.field.matmul(self.generator[pos[sel]], A[lay.msg_index[t]])
        else:
            # one product per generator row, over all partitions using it
            for a in uniq_pos:
                sel = np.nonzero(pos == a)[0]
                blocks = A[lay.msg_index[parts[sel]]]  # (len(sel), k, cols)
                flat = blocks.transpose(1, 0, 2).reshape(lay.k, -1)
                prod = self.field.matmul(self.generator[a][None, :], flat)
                out[sel] = prod.reshape(len(sel), A.shape[1])
        return out

    def decode_partition(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``A[msg_index[t]] x`` from exactly ``k`` coded rows of one partition ``t``.

        ``values[j]`` is the value (row vector over outputs) of coded row ``rows[j]``.
        """
        lay = self.layout
        rows_a = np.asarray(list(rows), dtype=np.int64)
        if len(rows_a) != lay.k or len(set(lay.row_partition[rows_a].tolist())) != 1:
            raise NotDecodable(f"need exactly {lay.k} rows of one partition, got {list(rows)}")
        pos = lay.row_position[rows_a]
        order = np.argsort(pos, kind="stable")
        pos, vals = pos[order], values[order]
        if np.array_equal(pos, np.arange(lay.k)):  # systematic rows: nothing to invert
            return np.array(vals, dtype=self.field.dtype)
        return self.field.matmul(self.decoders.inverse(pos.tolist()), vals)

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        """``y = A x`` (``m x outputs``) from coded values ``values[j]`` of ``rows[j]``.

        Uses, per partition, the first ``k`` listed rows of that partition;
        partitions using the same positions are decoded in one product.
        Raises :class:`NotDecodable` if some partition has fewer than ``k`` rows.
        """
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
        for key, ts in groups.items():
            stacked = np.concatenate([values[sel_of[t]] for t in ts], axis=1)  # (k, |ts| cols)
            if key == tuple(range(lay.k)):
                dec = np.array(stacked, dtype=self.field.dtype)
            else:
                dec = self.field.matmul(self.decoders.inverse(key), stacked)
            for i, t in enumerate(ts):
                out[lay.msg_index[t]] = dec[:, i * cols:(i + 1) * cols]
        return out


def build_code(params: CodedParams, field_: Field | None = None) -> Code:
    """The :class:`Code` of ``params`` over ``field_`` (default: ``params.field_name``).

    For lt: the scheme's seeded LT code (:func:`mpi_coded.coded.lt_scheme.lt_scheme_code`;
    ``field_`` must then be ``params.field_name``).
    """
    if params.scheme == "lt":
        from mpi_coded.coded.lt_scheme import lt_scheme_code

        return lt_scheme_code(params, field_)
    return Code(code_layout(params), field_ or get_field(params.field_name))
