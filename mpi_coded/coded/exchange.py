"""The shuffle's payload arithmetic, shared by :mod:`~mpi_coded.coded.replay` and the MPI servers.

A server holds the intermediate values of the batches it stores and, as the
shuffle goes on, what it receives (:class:`HeldValues`, implemented by
:class:`mpi_coded.coded.replay.ServerData`).  For a
:class:`~mpi_coded.coded.shuffle.Multicast` the sender sums (XOR over GF(2^l))
its zero-padded segments, one per receiver (:func:`multicast_payload`); each
receiver subtracts the segments of the others, which it stores, and keeps its
own (:func:`cancel`, :func:`take_multicast`).  A
:class:`~mpi_coded.coded.shuffle.Unicast` copies blocks
(:func:`unicast_payload`, :func:`take_unicast`).  A reducer then gathers the
values of its plan's ``decode_rows`` (:func:`reducer_values`) and decodes its
outputs (:func:`reduce_outputs`).

Nothing here sends: the runtime moves the payloads, replay hands them over in
memory.  Any use of data a server does not have raises :class:`ExchangeError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from mpi_coded.coded.code import Code
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.shuffle import Block, Multicast, ReducerPlan, Unicast
from mpi_coded.fields import Field


class ExchangeError(RuntimeError):
    """A plan asked a server for data it does not have, or left a value missing."""


class HeldValues(Protocol):
    """One server's values: its stored batches and what it received (``ServerData``)."""

    sid: int
    field: Field
    placement: Placement

    def gather(self, blocks: Sequence[Block], own_only: bool = True) -> np.ndarray: ...

    def take_rows(self, batch: int, slots: np.ndarray, out_start: int, out_stop: int
                  ) -> np.ndarray: ...

    def scatter(self, blocks: Sequence[Block], vec: np.ndarray) -> None: ...


def stored_values(placement: Placement, server: int, values: np.ndarray
                  ) -> dict[int, np.ndarray]:
    """``{batch: Y_b}`` from the map output of ``server``: its stored rows' values
    (``placement.stored_rows(server)`` order, i.e. batch by batch) cut per batch."""
    eta = placement.rows_per_batch
    return {b: values[i * eta:(i + 1) * eta]
            for i, b in enumerate(placement.server_batches[server])}


def _pad(field: Field, vec: np.ndarray, length: int) -> np.ndarray:
    out = field.zeros(length)
    out[:len(vec)] = vec
    return out


def _segment_sum(mc: Multicast, data: HeldValues, skip: int | None = None) -> np.ndarray:
    """Sum of the zero-padded segments of ``mc`` from ``data``'s stored values, but ``skip``."""
    field = data.field
    out = field.zeros(mc.length)
    for i, seg in enumerate(mc.segments):
        if i == skip:
            continue
        vec = data.gather(seg.blocks)
        if len(vec) != seg.size or seg.size > mc.length:
            raise ExchangeError(f"segment size mismatch in {mc}")
        out = field.add(out, _pad(field, vec, mc.length))
    return out


def multicast_payload(mc: Multicast, data: HeldValues) -> np.ndarray:
    """The ``mc.length`` values ``mc.sender`` sends: the sum of its padded segments."""
    return _segment_sum(mc, data)


def cancel(mc: Multicast, receiver: int, payload: np.ndarray, data: HeldValues) -> np.ndarray:
    """The receiver's own segment of ``mc``: ``payload`` minus the others' padded segments
    (which ``receiver`` stores), cut to the segment's size."""
    i = mc.receivers.index(receiver)
    own = mc.segments[i]
    if own.owner != receiver:
        raise ExchangeError(f"segment {i} of {mc} is not for receiver {receiver}")
    got = data.field.sub(payload, _segment_sum(mc, data, skip=i))
    return got[:own.size]


def take_multicast(mc: Multicast, receiver: int, payload: np.ndarray,
                   data: HeldValues) -> None:
    """:func:`cancel` and store the receiver's segment in ``data``."""
    own = mc.segments[mc.receivers.index(receiver)]
    data.scatter(own.blocks, cancel(mc, receiver, payload, data))


def unicast_payload(u: Unicast, data: HeldValues) -> np.ndarray:
    """The ``u.size`` values ``u.sender`` sends: its blocks, concatenated."""
    return data.gather(u.blocks)


def take_unicast(u: Unicast, payload: np.ndarray, data: HeldValues) -> None:
    """Store a unicast's values in the receiver's ``data``."""
    data.scatter(u.blocks, payload)


def reducer_values(red: ReducerPlan, data: HeldValues) -> np.ndarray:
    """``(len(red.decode_rows), w)``: the values of the reducer's decode rows for its outputs,
    from what it stores or received (pass them with ``red.decode_rows`` to ``Code.decode``);
    one gather per batch."""
    batch, slot = data.placement.row_slots
    rows = np.asarray(red.decode_rows, dtype=np.int64)
    out = data.field.zeros((len(rows), red.out_stop - red.out_start))
    b_of = batch[rows]
    for b in np.unique(b_of):
        sel = np.flatnonzero(b_of == b)
        out[sel] = data.take_rows(int(b), slot[rows[sel]], red.out_start, red.out_stop)
    return out


def reducer_batches(red: ReducerPlan, placement: Placement) -> int:
    """How many batches :func:`reducer_values` gathers from (one gather each)."""
    batch, _ = placement.row_slots
    return len(np.unique(batch[np.asarray(red.decode_rows, dtype=np.int64)]))


def reduce_outputs(red: ReducerPlan, data: HeldValues, code: Code) -> np.ndarray:
    """The reducer's ``A [x_i ...]`` for its outputs ``[red.out_start, red.out_stop)``
    (``m x w``), decoded from :func:`reducer_values`."""
    return code.decode(red.decode_rows, reducer_values(red, data))
