"""The wire protocol: every tag and message kind lives here.

A message is a fixed header of 8 int64 words, then (if ``ndim > 0``) one
payload: a contiguous numpy array sent with buffer-based ``Isend``/``Irecv``
(``arr.view(np.ndarray)`` for galois arrays).  Header layout::

    [MAGIC, kind, step, dtype code, ndim, shape0, shape1, aux]

A payload of at most :data:`INLINE_BYTES` travels *inline*: its bytes follow the 8 words in
the header's own MPI message (the dtype code word carries :data:`INLINE`), so a small
order or answer is one MPI message, not two, and its receiver takes it whole with the
header, without a second receive and its wait.  Receivers of headers post a buffer of
:data:`HEADER_CAPACITY` words for that (:func:`post_header`); senders whose receiver posts
the header and the payload receives itself, of known sizes (the coded job's shuffle), pass
``inline=False``.

Messages that go to one receiver one right after the other (an elastic machine's TASK and
its ``w_t``; its RESULT and META) travel as a *bundle* (:func:`bundle`) when they fit
together: the inline messages one after another in one MPI message, the dtype code word of
each but the last carrying :data:`MORE`.  The receiver takes them in order
(:func:`unbundle`; an :class:`~mpi_coded.runtime.core.inbox.Inbox` hands out the later ones
at its next tests, with no receive).

Receivers check magic, kind, step and shape, so an unexpected or malformed
message fails loudly instead of being misread.  Every wait is polite and has
a deadline (:mod:`mpi_coded.runtime.core.wait`).  Statistics travel as named
records (:mod:`mpi_coded.runtime.core.records`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from mpi_coded.runtime.core import ulfm
from mpi_coded.runtime.core.wait import poll_until, wait_all

MAGIC = 0x4D5043  # "MPC"
HEADER_WORDS = 8
INLINE_BYTES = 4032
"""The largest payload sent inline, in the header's message: with the header 4096 bytes,
within every MPI's eager limit (Open MPI's shared-memory one is 4 KiB)."""
HEADER_CAPACITY = HEADER_WORDS + INLINE_BYTES // 8
"""int64 words of a posted header receive: the header and the largest inline payload."""
INLINE = 0x40
"""Added to the dtype code word: the payload follows the header in its message."""
MORE = 0x80
"""Added to the dtype code word: another message of the bundle follows this one's inline
payload (:func:`bundle`)."""
TAG_HEADER = 11
TAG_PAYLOAD = 12


class Kind(enum.IntEnum):
    """Message kinds (the header's second word)."""

    BLOCK = 1  # master -> machine: its coded block X~_n (setup, once)
    READY = 2  # machine -> master: block stored, field warmed up
    TASK = 3  # master -> machine: row ranges (int64 (k, 2)) of this step
    VECTOR = 4  # master -> machine: w_t
    RESULT = 5  # machine -> master: X~_n[ranges] . w_t, ranges concatenated
    META = 6  # machine -> master: float64 [compute_s, sleep_s, target_s, rows]
    IDLE = 7  # master -> machine: preempted this step, compute nothing
    STOP = 8  # master -> machine: the job is over
    STATS = 9  # machine -> master: float64 per-machine statistics
    PART = 10  # machine -> master: one row set's X~_n[rows] . w_t (aux: attempt and set index)
    CUT = 11  # master -> machine: stop step ``step``, attempt ``aux``, at the next chance
    ROWS = 12  # uncoded baseline, master/machine -> machine: rows of X from row ``aux`` on
    MOVES = 13  # uncoded baseline: master -> machine int64 (k, 4) [src, dst, start, stop]
    #   (first row [-1, -1, a, b]: its new rows); machine -> master: moves done (no payload)
    JOIN = 14  # master -> a machine it spawned: you replace machine ``aux`` (no payload)
    CHECK = 15  # master -> machine: you answered wrong, check your block's checksum
    CHECKED = 16  # machine -> master: int64 [1: the block is intact, 0: corrupt]
    REPAIR = 17  # master -> machine: int64 [role, machine, rank, ...] a block rebuilt
    #   from peers while the job runs (role 0: send yours to rank; 1: rebuild yours from
    #   the (machine, rank) pairs that follow)
    REPAIRED = 18  # machine -> master: float64 [bytes, seconds] its block rebuilt
    # coded matrix-vector job (the BDC paper)
    PHASE = 20  # master -> server: start phase ``aux`` (mpi_coded.coded.phases)
    DONE = 21  # server -> master: phase ``aux`` finished, float64 statistics
    MAP_DONE = 22  # server -> master: map finished (aux 0) or stopped early (aux 1)
    MAP_END = 23  # master -> server: int64 [Q..., -1, extra..., -1, unicast_rows...]
    MULTICAST = 24  # server -> server: a coded multicast payload (aux = plan index)
    UNICAST = 25  # server -> server: unicast values (aux = plan index)
    OUTPUT = 26  # reducer -> master: decoded y for its outputs (m x N/q)
    BYE = 27  # server -> master: stopping (the job may end)
    ABANDON = 28  # master -> reducer: repetition ``step`` ends here (a finisher died), no reduce
    AUDIT = 29  # master -> finisher: repetition ``step`` decoded wrong, send what you kept
    AUDITED = 30  # finisher -> master: aux 0 its map output (rows x N), aux 1 the shuffle
    #   payloads it received, concatenated in plan order (no payload: none)




_DTYPES: dict[int, np.dtype] = {
    1: np.dtype(np.float64),
    2: np.dtype(np.uint8),
    3: np.dtype(np.uint16),
    4: np.dtype(np.int64),
    5: np.dtype(np.uint32),
}
_CODES = {v: k for k, v in _DTYPES.items()}


class WireError(RuntimeError):
    """An unexpected or malformed message."""


@dataclass(frozen=True)
class Header:
    source: int
    kind: Kind
    step: int
    dtype: np.dtype | None
    shape: tuple[int, ...]
    aux: int
    inline: bool = False  # the payload came in the header's message


def _header(kind: Kind, step: int, arr: np.ndarray | None, aux: int) -> np.ndarray:
    h = np.zeros(HEADER_WORDS, dtype=np.int64)
    h[0], h[1], h[2], h[7] = MAGIC, int(kind), step, aux
    if arr is not None:
        if arr.ndim > 2:
            raise WireError(f"payload must be 1-D or 2-D, got shape {arr.shape}")
        code = _CODES.get(arr.dtype)
        if code is None:
            raise WireError(f"dtype {arr.dtype} cannot be sent")
        h[3], h[4] = code, arr.ndim
        h[5:5 + arr.ndim] = arr.shape
    return h


def pack(kind: Kind, step: int, arr: np.ndarray | None = None, aux: int = 0, *,
         inline: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """One message's buffers: the header (with the payload inline when it is at most
    :data:`INLINE_BYTES` and ``inline``), and the payload sent after it, or None."""
    payload = None if arr is None else np.ascontiguousarray(arr.view(np.ndarray))
    h = _header(kind, step, payload, aux)
    if inline and payload is not None and payload.nbytes <= INLINE_BYTES:
        h[3] += INLINE
        msg = np.zeros(HEADER_WORDS + -(-payload.nbytes // 8), dtype=np.int64)
        msg[:HEADER_WORDS] = h
        msg.view(np.uint8)[8 * HEADER_WORDS: 8 * HEADER_WORDS + payload.nbytes] = \
            payload.reshape(-1).view(np.uint8)
        return msg, None
    return h, payload


def isend_packed(comm: MPI.Comm, dest: int, packed: tuple[np.ndarray, np.ndarray | None]
                 ) -> list[MPI.Request]:
    """Start sending a message :func:`pack` made (the same buffers may go to many)."""
    h, payload = packed
    reqs: list[MPI.Request] = []
    try:
        reqs.append(comm.Isend(h, dest=dest, tag=TAG_HEADER))
        if payload is not None:
            reqs.append(comm.Isend(payload, dest=dest, tag=TAG_PAYLOAD))
    except MPI.Exception as exc:  # ulfm: MPI knows ``dest`` dead, nothing is sent to it
        if not ulfm.is_failure(exc):
            raise
    return reqs


def isend_together(comm: MPI.Comm, dest: int,
                   parts: Sequence[tuple[np.ndarray, np.ndarray | None]]) -> list[MPI.Request]:
    """Start sending messages :func:`pack` made, in order: as one bundle when they fit
    together (:func:`bundle`), else one by one."""
    both = bundle(parts)
    if both is not None:
        return isend_packed(comm, dest, both)
    return [q for packed in parts for q in isend_packed(comm, dest, packed)]


def isend(comm: MPI.Comm, dest: int, kind: Kind, step: int,
          arr: np.ndarray | None = None, aux: int = 0, *,
          inline: bool = True) -> list[MPI.Request]:
    """Start sending one message; returns the requests to wait for.  A payload of at most
    :data:`INLINE_BYTES` goes in the header's message unless ``inline`` is False."""
    return isend_packed(comm, dest, pack(kind, step, arr, aux, inline=inline))


def send(comm: MPI.Comm, dest: int, kind: Kind, step: int, arr: np.ndarray | None = None,
         aux: int = 0, *, deadline: float) -> None:
    """Send one message and wait politely until its buffers are free."""
    wait_all(isend(comm, dest, kind, step, arr, aux), deadline,
             f"rank {dest} to receive {kind.name} (step {step})")


def post_header(comm: MPI.Comm, source: int) -> tuple[MPI.Request, np.ndarray]:
    """Post a receive for the next header from ``source`` (room for an inline payload)."""
    buf = np.empty(HEADER_CAPACITY, dtype=np.int64)  # read only as far as its headers say
    return comm.Irecv(buf, source=source, tag=TAG_HEADER), buf


def parse_header(buf: np.ndarray, source: int, expect: Collection[Kind],
                 step: int | None) -> Header:
    """Check a received header against what the receiver expects."""
    return check(_parse_at(buf, 0, source)[0], expect, step)


def check(h: Header, expect: Collection[Kind], step: int | None) -> Header:
    """``h`` if it is of a kind in ``expect`` and for ``step`` (None: any), else WireError."""
    if h.kind not in expect:
        names = ", ".join(k.name for k in expect)
        raise WireError(f"unexpected {h.kind.name} from rank {h.source} (expected {names})")
    if step is not None and h.step != step:
        raise WireError(f"{h.kind.name} from rank {h.source} is for step {h.step}, "
                        f"expected step {step}")
    return h


def _parse_at(buf: np.ndarray, at: int, source: int) -> tuple[Header, bool]:
    """The header at word ``at`` of ``buf``, and whether another message of a bundle
    follows its inline payload."""
    magic, kind_w, step, code, ndim, s0, s1, aux = buf[at: at + HEADER_WORDS].tolist()
    if magic != MAGIC:
        raise WireError(f"malformed header from rank {source}: bad magic {magic:#x}")
    try:
        kind = Kind(kind_w)
    except ValueError:
        raise WireError(f"malformed header from rank {source}: unknown kind {kind_w}") \
            from None
    if ndim not in (0, 1, 2):
        raise WireError(f"malformed header from rank {source}: ndim {ndim}")
    more = code & MORE == MORE
    code &= ~MORE
    inline = bool(ndim) and code & INLINE == INLINE
    dtype = _DTYPES.get(code - INLINE if inline else code) if ndim else None
    if ndim and dtype is None:
        raise WireError(f"malformed header from rank {source}: dtype code {code}")
    shape = (s0, s1)[:ndim]
    if any(x < 0 for x in shape):
        raise WireError(f"malformed header from rank {source}: shape {shape}")
    if inline:
        assert dtype is not None
        nbytes = (s0 if ndim == 1 else s0 * s1) * dtype.itemsize
        if nbytes > INLINE_BYTES or len(buf) < HEADER_CAPACITY or \
                at + HEADER_WORDS + -(-nbytes // 8) > len(buf):
            raise WireError(f"malformed header from rank {source}: inline payload of shape "
                            f"{shape} does not fit {INLINE_BYTES} bytes")
    if more and ndim and not inline:
        raise WireError(f"malformed header from rank {source}: a bundle's message whose "
                        "payload is not inline")
    return Header(source, kind, step, dtype, shape, aux, inline), more


def inline_payload(h: Header, buf: np.ndarray, at: int = 0) -> np.ndarray:
    """The payload that came inline after header ``h`` (at word ``at``) in ``buf`` (a copy)."""
    assert h.dtype is not None and h.inline
    n = math.prod(h.shape) * h.dtype.itemsize
    start = 8 * (at + HEADER_WORDS)
    raw = buf.view(np.uint8)[start: start + n]
    return raw.view(h.dtype).reshape(h.shape).copy()


def unbundle(buf: np.ndarray, source: int) -> list[tuple[Header, np.ndarray | None]]:
    """The messages of a received header buffer: one, or a bundle's in order (each inline
    payload a copy; None for a payload that follows in its own message, or none)."""
    out: list[tuple[Header, np.ndarray | None]] = []
    at, more = 0, True
    while more:
        if at + HEADER_WORDS > len(buf):
            raise WireError(f"malformed bundle from rank {source}: it runs past its buffer")
        h, more = _parse_at(buf, at, source)
        out.append((h, inline_payload(h, buf, at) if h.inline else None))
        at += HEADER_WORDS
        if h.inline:
            assert h.dtype is not None
            at += -(-math.prod(h.shape) * h.dtype.itemsize // 8)
    return out


def bundle(parts: Sequence[tuple[np.ndarray, np.ndarray | None]]
           ) -> tuple[np.ndarray, None] | None:
    """Messages :func:`pack` made for one receiver as one MPI message (a bundle), or None
    when one has a payload of its own or together they exceed :data:`HEADER_CAPACITY`
    words (then they are sent one by one)."""
    if any(payload is not None for _, payload in parts) or \
            sum(len(h) for h, _ in parts) > HEADER_CAPACITY:
        return None
    msg = np.concatenate([h for h, _ in parts])
    at = 0
    for h, _ in parts[:-1]:
        msg[at + 3] |= MORE
        at += len(h)
    return msg, None


def recv_payload(comm: MPI.Comm, h: Header, deadline: float,
                 source: int | None = None) -> np.ndarray | None:
    """Receive the payload announced by header ``h`` (from ``source``, default the
    header's: a peer known by another name, a machine spawned later, is ``source`` in its
    own communicator)."""
    if h.dtype is None:
        return None
    out = np.empty(h.shape, dtype=h.dtype)
    req = comm.Irecv(out, source=h.source if source is None else source, tag=TAG_PAYLOAD)
    if ulfm.enabled():  # a peer dying mid-payload leaves it partial: never taken as data
        state: list[bool | None] = [False]

        def done() -> bool:
            state[0] = ulfm.test(req)
            return state[0] is not False

        poll_until(done, deadline, f"{h.kind.name} payload from rank {h.source}", active=True)
        if state[0] is None:
            raise ulfm.PeerLost(h.source)
        return out
    wait_all([req], deadline, f"{h.kind.name} payload from rank {h.source}", active=True)
    return out
