"""Run a :class:`~mpi_coded.coded.shuffle.ShufflePlan` in one process with real arithmetic.

The reference for the MPI runtime: every finisher encodes its own stored rows
(``C[rows] = Psi[rows] A``, docs/theory.md (B.2) step 1) and maps them
(``Y_b = C[batch_rows[b]] X``, step 2); servers outside ``Q + extra`` hold
nothing.  Each multicast is summed by its sender from the sender's own data
and cancelled by each receiver using only the receiver's data; unicasts copy
blocks; each reducer then decodes ``y_i = A x_i`` for its outputs from the
plan's ``decode_rows`` (step 4) -- with the arithmetic of
:mod:`~mpi_coded.coded.exchange`, the same the MPI servers run.  Any use of data
a server does not have, or a missing value, raises :class:`ReplayError`.  The
code is :func:`~mpi_coded.coded.code.build_code` of the placement's params, as
on every MPI rank (lt: the seeded LT code over ``params.field_name``, so
``field_`` must be that field).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mpi_coded.coded.code import build_code
from mpi_coded.coded.exchange import (
    ExchangeError,
    multicast_payload,
    reduce_outputs,
    stored_values,
    take_multicast,
    take_unicast,
    unicast_payload,
)
from mpi_coded.coded.mapend import MapEnd, map_end
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.shuffle import Block, ShufflePlan, shuffle_plan
from mpi_coded.fields import Field, get_field

ReplayError = ExchangeError
"""The plan asked a server for data it does not have, or left a value missing."""


@dataclass
class ReplayResult:
    """Outcome of :func:`replay`: what was sent and what each reducer decoded."""

    plan: ShufflePlan
    multicast_values: int = 0
    unicast_values: int = 0
    max_error: float = 0.0  # worst over reducers of Field.max_error(decoded, A x)
    decoded: dict[int, np.ndarray] = field(default_factory=dict)  # reducer -> m x w


class ServerData:
    """One server's data: its stored batches' intermediate values and what it received."""

    def __init__(self, sid: int, placement: Placement, Y: dict[int, np.ndarray],
                 field_: Field, N: int) -> None:
        self.sid = sid
        self.placement = placement
        self.stored = Y
        self.eta = placement.rows_per_batch
        self.N = N
        self.field = field_
        self.received: dict[int, np.ndarray] = {}
        self.mask: dict[int, np.ndarray] = {}

    @classmethod
    def from_map_output(cls, sid: int, placement: Placement, values: np.ndarray,
                        field_: Field, N: int) -> ServerData:
        """The data of server ``sid`` whose map produced ``values`` (``Y`` of its stored rows,
        in ``placement.stored_rows(sid)`` order)."""
        return cls(sid, placement, stored_values(placement, sid, values), field_, N)

    def gather(self, blocks: Sequence[Block], own_only: bool = True) -> np.ndarray:
        """Values of ``blocks`` (flattened, concatenated) from the stored batches (and, unless
        ``own_only``, from what was received)."""
        parts = []
        for bl in blocks:
            if bl.batch in self.stored:
                src = self.stored[bl.batch]
            elif not own_only and bl.batch in self.received:
                if not self.mask[bl.batch][bl.row_start:bl.row_stop,
                                           bl.out_start:bl.out_stop].all():
                    raise ReplayError(f"server {self.sid} lacks values of {bl}")
                src = self.received[bl.batch]
            else:
                raise ReplayError(f"server {self.sid} does not store batch {bl.batch}")
            parts.append(src[bl.row_start:bl.row_stop, bl.out_start:bl.out_stop].ravel())
        if not parts:
            return self.field.zeros(0)
        return np.concatenate(parts)

    def take_rows(self, batch: int, slots: np.ndarray, out_start: int, out_stop: int
                  ) -> np.ndarray:
        """``Y_batch[slots, out_start:out_stop]`` from a stored batch or from what was
        received (every value of it must have arrived)."""
        if batch in self.stored:
            return self.stored[batch][slots, out_start:out_stop]
        if batch in self.received:
            if not self.mask[batch][slots, out_start:out_stop].all():
                raise ReplayError(f"server {self.sid} lacks values of batch {batch} rows "
                                  f"{list(slots)[:8]} outputs {out_start}..{out_stop - 1}")
            return self.received[batch][slots, out_start:out_stop]
        raise ReplayError(f"server {self.sid} does not store batch {batch}")

    def scatter(self, blocks: Sequence[Block], vec: np.ndarray) -> None:
        """Store received values ``vec`` as the concatenation of ``blocks``."""
        pos = 0
        for bl in blocks:
            if bl.batch not in self.received:
                self.received[bl.batch] = self.field.zeros((self.eta, self.N))
                self.mask[bl.batch] = np.zeros((self.eta, self.N), dtype=bool)
            shape = (bl.row_stop - bl.row_start, bl.out_stop - bl.out_start)
            piece = vec[pos:pos + bl.size].reshape(shape)
            self.received[bl.batch][bl.row_start:bl.row_stop, bl.out_start:bl.out_stop] = piece
            self.mask[bl.batch][bl.row_start:bl.row_stop, bl.out_start:bl.out_stop] = True
            pos += bl.size


def replay(placement: Placement, plan: ShufflePlan, field_: Field, A: np.ndarray,
           X: np.ndarray) -> ReplayResult:
    """Execute ``plan`` on ``A`` (``m x n``) and ``X`` (``n x N``); decode at every reducer."""
    code = build_code(placement.params, field_)
    N = X.shape[1]
    finishers = plan.Q + plan.extra
    servers: dict[int, ServerData] = {}
    for s in finishers:
        Y = {}
        for b in placement.server_batches[s]:
            C_b = code.encode(A, placement.batch_rows[b])
            Y[b] = field_.matmul(C_b, X)
        servers[s] = ServerData(s, placement, Y, field_, N)
    res = ReplayResult(plan)

    def server(s: int) -> ServerData:
        if s not in servers:
            raise ReplayError(f"server {s} is not a finisher")
        return servers[s]

    for mc in plan.multicasts:
        payload = multicast_payload(mc, server(mc.sender))
        res.multicast_values += len(payload)
        for k in mc.receivers:
            take_multicast(mc, k, payload, server(k))

    for uc in plan.unicasts:
        vec = unicast_payload(uc, server(uc.sender))
        res.unicast_values += len(vec)
        take_unicast(uc, vec, server(uc.receiver))

    for red in plan.reducers:
        y = reduce_outputs(red, server(red.server), code)
        want = field_.matmul(A, X[:, red.out_start:red.out_stop])
        res.decoded[red.server] = y
        res.max_error = max(res.max_error, field_.max_error(y, want))
    return res


def random_instance(placement: Placement, field_: Field, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Random ``A`` (``m x n``) and ``X = [x_1..x_N]`` (``n x N``) over ``field_``."""
    p = placement.params
    rng = np.random.default_rng(seed)
    return field_.random((p.m, p.n), rng), field_.random((p.n, p.N), rng)


def replay_order(placement: Placement, order: Sequence[int] | MapEnd,
                 field_: Field | str | None = None, seed: int = 0,
                 strategy: int | None = None) -> ReplayResult:
    """Map-end rule, plan and replay for one finishing order, on random data."""
    f = get_field(field_ or placement.params.field_name) if not isinstance(field_, Field) \
        else field_
    end = order if isinstance(order, MapEnd) else map_end(placement, order)
    plan = shuffle_plan(placement, end, strategy)
    A, X = random_instance(placement, f, seed)
    return replay(placement, plan, f, A, X)
