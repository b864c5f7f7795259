"""runtime/core/inbox.py in one process: one posted header receive per peer, reposted after
each message; ``test`` never blocks, ``recv`` waits to its deadline, a malformed header is
consumed and named.  A stand-in communicator delivers headers, with inline payloads (the
others need MPI, tests/test_runtime_core_mpi.py)."""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import pytest

from mpi_coded.runtime.core import wire
from mpi_coded.runtime.core.inbox import Inbox
from mpi_coded.runtime.core.wait import DeadlineExceeded, deadline_in
from mpi_coded.runtime.core.wire import Kind, WireError


class _Req:
    def __init__(self, comm: _Comm, buf: np.ndarray, source: int, tag: int) -> None:
        self.comm, self.buf, self.source, self.tag = comm, buf, source, tag
        self.done = self.cancelled = self.completed = False

    def Test(self) -> bool:  # noqa: N802 - mpi4py's name
        assert not self.done and not self.cancelled, "a completed request tested again"
        self.comm.tests += 1
        q = self.comm.queue
        if q and q[0][0] <= self.comm.tests:
            msg = q.popleft()[1]
            self.buf[:len(msg)] = msg  # a message shorter than the posted buffer
            self.done = True
        return self.done

    def Cancel(self) -> None:  # noqa: N802
        self.cancelled = True

    def Wait(self) -> None:  # noqa: N802
        self.completed = True


class _Comm:
    """Delivers ``(after so many Tests, header words)`` from one peer, in order."""

    def __init__(self, *headers: tuple[int, np.ndarray]) -> None:
        self.queue = deque(headers)
        self.posted: list[_Req] = []
        self.tests = 0

    def Irecv(self, buf, source, tag):  # noqa: N802
        assert tag == wire.TAG_HEADER and buf.shape == (wire.HEADER_CAPACITY,)
        self.posted.append(_Req(self, buf, source, tag))
        return self.posted[-1]


def header(kind: Kind, step: int, aux: int = 0) -> np.ndarray:
    return wire._header(kind, step, None, aux)


def test_inbox_test_never_blocks_and_keeps_one_receive_posted():
    comm = _Comm((3, header(Kind.TASK, 2, aux=1)), (0, header(Kind.STOP, 2)))
    box = Inbox(comm, 4)  # type: ignore[arg-type]
    assert box.test({Kind.TASK}, 2, deadline_in(30)) is None
    assert box.test({Kind.TASK}, 2, deadline_in(30)) is None
    assert len(comm.posted) == 1 and comm.posted[0].source == 4
    h, payload = box.test({Kind.TASK}, 2, deadline_in(30))  # type: ignore[misc]
    assert (h.source, h.kind, h.step, h.aux, payload) == (4, Kind.TASK, 2, 1, None)
    h, _ = box.test({Kind.STOP}, None, deadline_in(30))  # type: ignore[misc]
    assert h.kind == Kind.STOP and len(comm.posted) == 2  # reposted after the message


def test_inbox_recv_waits_until_the_message_arrives():
    comm = _Comm((5, header(Kind.IDLE, 7)))
    box = Inbox(comm, 0)  # type: ignore[arg-type]
    h, _ = box.recv({Kind.IDLE, Kind.TASK}, 7, deadline_in(30), "an order")
    assert h.kind == Kind.IDLE and comm.tests == 5 and len(comm.posted) == 1


def test_inbox_recv_raises_at_its_deadline_naming_what_it_awaited():
    box = Inbox(_Comm(), 0)  # type: ignore[arg-type]
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"^timed out waiting for an order$"):
        box.recv({Kind.TASK}, 1, t0 + 0.2, "an order")
    assert 0.2 <= time.monotonic() - t0 < 5.2


def test_inbox_malformed_or_unexpected_header_is_consumed_and_names_the_sender():
    bad = header(Kind.TASK, 1)
    bad[0] = 0xBAD
    comm = _Comm((0, bad), (0, header(Kind.BYE, 1)), (0, header(Kind.TASK, 1)))
    box = Inbox(comm, 3)  # type: ignore[arg-type]
    with pytest.raises(WireError, match=r"from rank 3: bad magic 0xbad"):
        box.test({Kind.TASK}, 1, deadline_in(30))
    with pytest.raises(WireError, match=r"^unexpected BYE from rank 3 \(expected TASK\)$"):
        box.test({Kind.TASK}, 1, deadline_in(30))
    h, _ = box.test({Kind.TASK}, 1, deadline_in(30))  # type: ignore[misc]
    assert h.kind == Kind.TASK and len(comm.posted) == 3


def test_inbox_cancel_cancels_the_posted_receive_and_forgets_it():
    comm = _Comm()
    box = Inbox(comm, 1)  # type: ignore[arg-type]
    box.cancel()  # nothing posted: nothing to cancel
    assert comm.posted == []
    assert box.test({Kind.TASK}, 1, deadline_in(30)) is None
    box.cancel()
    assert comm.posted[0].cancelled and comm.posted[0].completed  # completed: freed
    box.request()
    assert len(comm.posted) == 2 and not comm.posted[1].cancelled


class _Sent:
    """Captures what ``wire.isend`` sends."""

    def __init__(self) -> None:
        self.calls: list[tuple[np.ndarray, int, int]] = []

    def Isend(self, buf, dest, tag):  # noqa: N802 - mpi4py's name
        self.calls.append((buf.copy(), dest, tag))
        return len(self.calls)


@pytest.mark.parametrize("arr", [
    np.arange(5, dtype=np.int64).reshape(5, 1) * 7,  # a task's row-set table
    np.linspace(-1.0, 1.0, 100),  # w_t
    np.arange(13, dtype=np.uint8),  # GF(2^8): not a multiple of 8 bytes
    np.arange(2 * 3, dtype=np.uint16).reshape(2, 3),
])
def test_inbox_takes_an_inline_payload_whole_with_its_header(arr):
    sent = _Sent()
    assert wire.isend(sent, 0, Kind.RESULT, 4, arr, aux=1) == [1]  # type: ignore[arg-type]
    msg, _, tag = sent.calls[0]
    assert tag == wire.TAG_HEADER and len(msg) == wire.HEADER_WORDS + -(-arr.nbytes // 8)
    comm = _Comm((0, msg))
    box = Inbox(comm, 2)  # type: ignore[arg-type]
    h, payload = box.test({Kind.RESULT}, 4, deadline_in(30))  # type: ignore[misc]
    assert h.inline and (h.source, h.aux) == (2, 1)
    assert payload is not None and payload.dtype == arr.dtype and np.array_equal(payload, arr)
    assert len(comm.posted) == 1  # no payload receive: it came with the header


def test_inbox_hands_out_a_bundles_messages_in_order_from_one_receive():
    sent = _Sent()
    table = np.array([[0, 40], [60, 80]], dtype=np.int64)
    w = np.linspace(0.0, 1.0, 100)
    parts = (wire.pack(Kind.TASK, 3, table, aux=1), wire.pack(Kind.VECTOR, 3, w))
    assert wire.isend_together(sent, 0, parts) == [1]  # type: ignore[arg-type]
    comm = _Comm((0, sent.calls[0][0]), (0, header(Kind.STOP, 4)))
    box = Inbox(comm, 2)  # type: ignore[arg-type]
    h, got = box.test({Kind.TASK}, 3, deadline_in(30))  # type: ignore[misc]
    assert (h.kind, h.aux) == (Kind.TASK, 1) and np.array_equal(got, table)
    assert len(comm.posted) == 1 and len(box.queued) == 1
    # the VECTOR comes out at the next test, with no receive and no Test of MPI
    tests = comm.tests
    with pytest.raises(WireError, match="unexpected VECTOR from rank 2"):
        box.test({Kind.STOP}, None, deadline_in(30))  # checked as it is handed out
    assert comm.tests == tests and not box.queued
    h, _ = box.recv({Kind.STOP}, None, deadline_in(30), "STOP")
    assert h.kind == Kind.STOP and len(comm.posted) == 2


def test_inbox_take_all_gives_every_message_of_a_bundle_unchecked():
    sent = _Sent()
    y = np.arange(60, dtype=np.uint16)
    meta = np.arange(14, dtype=np.float64)
    wire.isend_together(sent, 0, (wire.pack(Kind.RESULT, 5, y, aux=2),  # type: ignore[arg-type]
                                  wire.pack(Kind.META, 5, meta, aux=2)))
    comm = _Comm((0, sent.calls[0][0]))
    box = Inbox(comm, 7)  # type: ignore[arg-type]
    assert box.request().Test()
    (h1, p1), (h2, p2) = box.take_all(deadline_in(30))
    assert (h1.kind, h1.source, h2.kind, h2.source, h2.aux) == \
        (Kind.RESULT, 7, Kind.META, 7, 2)
    assert np.array_equal(p1, y) and p1.dtype == y.dtype and np.array_equal(p2, meta)
