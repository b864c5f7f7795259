"""A wrong decoded output of the coded job, traced to the server that made it (issue 44, 5).

The master verifies every decoded ``y_i`` against ``A x_i``.  When a repetition's outputs
are wrong, it asks every finisher (``Q`` and the extra servers) for two things it kept
from the repetition: its map output (``Y`` of its stored coded rows, as it used it) and
the shuffle payloads it received (in ``ShufflePlan.receives`` order, as they arrived).
The master knows ``A``, ``X``, the code and the placement, so it recomputes what each
should have been:

1. **map** (:func:`wrong_maps`): every finisher's expected map output
   ``Psi[rows_s] A X`` (:func:`expected_map`) against the reported one; a server whose
   rows differ is named ``(server, "map", batches)``, the batches holding a wrong row;
2. **shuffle** (:func:`wrong_payloads`): from the *expected* map outputs, every payload of
   the plan is recomputed with :mod:`mpi_coded.coded.exchange` (the arithmetic the
   servers run) and compared with what each receiver reports having received; the
   sender of a payload that differs is named ``(server, "shuffle", batches, "multicast
   i" / "unicast i")``, unless it is already named for its map (its payloads then
   carry its wrong map output: one cause, one name).

Comparison: exact over GF(2^l); over float64 an entry is wrong when it differs from the
expected one by more than :data:`LOCATE_RTOL` times the largest magnitude of the expected
array (the map output or the payload), far above the rounding of the same products in a
different order and far below the ``corrupt`` fault's change (one of the top 8 mantissa
bits of one entry, a relative change of at least ``2^-8``).  What falls below it: an entry
changed by less than ``1e-9`` of the array's scale, which also moves the decoded outputs
by at most about that much times the decoding's conditioning.

Guarantee and assumption: a server's *reports* (its map output, what it received) are
what it held and what arrived: the fault model is silent corruption of a computation or
of a message in flight, not a server that lies about what it holds.  Under it every
wrong map output and every wrong payload a reducer used is found, and an innocent server
is never named.  A wrong output with nothing found (a corruption in the reduce, or one
below the tolerance) is ``unlocated``: the repetition is re-run with every server.

Pure: plain integers and arrays, no MPI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpi_coded.coded.code import Code
from mpi_coded.coded.exchange import multicast_payload, unicast_payload
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.replay import ServerData
from mpi_coded.coded.shuffle import Block, ShufflePlan
from mpi_coded.fields import Field

LOCATE_RTOL = 1e-9
"""float64: an entry is wrong beyond this times the expected array's largest magnitude."""


@dataclass(frozen=True)
class WrongOutput:
    """One wrong map output or shuffle payload: the server that made it, the phase
    (``map`` or ``shuffle``), the batches a wrong value belongs to, the message
    (``multicast I`` / ``unicast I``, the plan index; "" for a map output), how many values
    were wrong, the attempt of the repetition and how it was found."""

    server: int
    phase: str
    batches: tuple[int, ...]
    message: str = ""
    values: int = 0
    attempt: int = 0
    found: str = ""
    receivers: tuple[int, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "phase": self.phase, "batches": list(self.batches),
                "message": self.message, "values": self.values, "attempt": self.attempt,
                "found": self.found}

    def __str__(self) -> str:
        what = f"{self.message} " if self.message else "output "
        return (f"{self.phase} {what}wrong (batches {','.join(map(str, self.batches))}; "
                f"{self.values} wrong value{'s' if self.values != 1 else ''}; {self.found})")


def differs(field_: Field, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Boolean mask of the entries of ``got`` that differ from ``want`` (module
    docstring: exact over GF, :data:`LOCATE_RTOL` over float64)."""
    if got.shape != want.shape:
        return np.ones(want.shape, dtype=bool)
    if field_.exact:
        return np.asarray(got != want)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    bad = np.abs(np.asarray(got, dtype=np.float64) - want) > LOCATE_RTOL * max(scale, 1e-300)
    return np.asarray(bad | ~np.isfinite(got))


def expected_map(code: Code, field_: Field, placement: Placement, A: np.ndarray,
                 X: np.ndarray, server: int) -> np.ndarray:
    """What server ``server``'s map should give: ``Psi[rows_s] A X`` (its stored rows in
    ``placement.stored_rows`` order, as it encodes and maps them)."""
    return field_.matmul(code.encode(A, placement.stored_rows(server)), X)


def wrong_maps(placement: Placement, field_: Field, expected: Mapping[int, np.ndarray],
               got: Mapping[int, np.ndarray], attempt: int = 0) -> list[WrongOutput]:
    """The servers of ``got`` whose map output differs from ``expected`` (by server)."""
    eta = placement.rows_per_batch
    out = []
    for s in sorted(got):
        bad = differs(field_, got[s], expected[s])
        if not bad.any():
            continue
        rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
        batches = sorted({placement.server_batches[s][int(i) // eta] for i in rows})
        out.append(WrongOutput(s, "map", tuple(batches), "", int(bad.sum()), attempt,
                               "map output recomputed by the master"))
    return out


def _batches_at(blocks: Sequence[Block], positions: np.ndarray) -> set[int]:
    """The batches of the values at ``positions`` of the concatenation of ``blocks``."""
    ends = np.cumsum([b.size for b in blocks])
    out: set[int] = set()
    for p in positions:
        i = int(np.searchsorted(ends, int(p), side="right"))
        if i < len(blocks):
            out.add(blocks[i].batch)
    return out


def expected_payloads(plan: ShufflePlan, placement: Placement, field_: Field,
                      maps: Mapping[int, np.ndarray], N: int
                      ) -> dict[tuple[str, int], np.ndarray]:
    """Every payload of ``plan``, by (``multicast``/``unicast``, plan index), as the
    senders compute it from the map outputs ``maps`` (by server)."""
    data = {s: ServerData.from_map_output(s, placement, maps[s], field_, N)
            for s in plan.Q + plan.extra}
    out = {("multicast", i): multicast_payload(mc, data[mc.sender])
           for i, mc in enumerate(plan.multicasts)}
    out.update({("unicast", i): unicast_payload(u, data[u.sender])
                for i, u in enumerate(plan.unicasts)})
    return out


def split_received(plan: ShufflePlan, receiver: int, values: np.ndarray
                   ) -> dict[tuple[str, int], np.ndarray]:
    """A receiver's reported payloads (concatenated in ``plan.receives`` order) by message."""
    mc_recv, uc_recv = plan.receives(receiver)
    keys = [("multicast", i, plan.multicasts[i].length) for i in mc_recv]
    keys += [("unicast", i, plan.unicasts[i].size) for i in uc_recv]
    out, pos = {}, 0
    for kind, i, size in keys:
        out[(kind, i)] = values[pos:pos + size]
        pos += size
    return out


def wrong_payloads(plan: ShufflePlan, placement: Placement, field_: Field,
                   expected: Mapping[tuple[str, int], np.ndarray],
                   received: Mapping[int, np.ndarray], skip: Sequence[int] = (),
                   attempt: int = 0) -> list[WrongOutput]:
    """The senders of the payloads that arrived different from ``expected`` (by message)
    at the receivers of ``received`` (receiver -> its reported payloads), but those of
    ``skip`` (already named for their map); one entry per message, naming its receivers."""
    seen: dict[tuple[str, int], tuple[set[int], np.ndarray]] = {}
    for k in sorted(received):
        for key, got in split_received(plan, k, received[k]).items():
            bad = differs(field_, got, expected[key])
            if bad.any():
                recv, mask = seen.setdefault(key, (set(), np.zeros(bad.shape, dtype=bool)))
                recv.add(k)
                mask |= bad
    out = []
    for (kind, i), (recv, mask) in sorted(seen.items()):
        pos = np.flatnonzero(mask)
        if kind == "multicast":
            mc = plan.multicasts[i]
            sender = mc.sender
            batches = set().union(*(_batches_at(seg.blocks, pos) for seg in mc.segments))
        else:
            sender = plan.unicasts[i].sender
            batches = _batches_at(plan.unicasts[i].blocks, pos)
        if sender in skip:
            continue
        out.append(WrongOutput(sender, "shuffle", tuple(sorted(batches)), f"{kind} {i}",
                               int(pos.size), attempt, "payload as received by server "
                               + ",".join(map(str, sorted(recv))), tuple(sorted(recv))))
    return out


def locate(plan: ShufflePlan, placement: Placement, code: Code, field_: Field,
           A: np.ndarray, X: np.ndarray, maps: Mapping[int, np.ndarray],
           received: Mapping[int, np.ndarray], attempt: int = 0) -> list[WrongOutput]:
    """Every wrong map output of the finishers (``maps``: what they report) and every
    wrong payload the reducers received (``received``), named (module docstring)."""
    want = {s: expected_map(code, field_, placement, A, X, s) for s in plan.Q + plan.extra}
    found = wrong_maps(placement, field_, want, maps, attempt)
    payloads = expected_payloads(plan, placement, field_, want, X.shape[1])
    return found + wrong_payloads(plan, placement, field_, payloads, received,
                                  [w.server for w in found], attempt)
