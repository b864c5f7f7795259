"""runtime/core/wire.py in one process: the header's layout, packing and unpacking, and the
checks on receipt, each naming the sender.  No MPI is started here (``mpi4py.rc``); the
header words are built by the sender's own packer and read by the receiver's own parser.
The same messages over a real communicator: tests/test_runtime_core_mpi.py.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest
from runtime_core_ranks import launched, result

from mpi_coded.runtime.core import wire
from mpi_coded.runtime.core.wire import Kind, WireError

DTYPES = [np.float64, np.uint8, np.uint16, np.int64, np.uint32]


def packed(kind: Kind, step: int, arr: np.ndarray | None = None, aux: int = 0) -> np.ndarray:
    return wire._header(kind, step, arr, aux)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5,), (0,), (3, 4), (0, 2), (1, 1)])
def test_wire_header_round_trip_every_dtype_and_shape(dtype, shape):
    arr = np.zeros(shape, dtype=dtype)
    h = wire.parse_header(packed(Kind.RESULT, 17, arr, aux=-3), 4, {Kind.RESULT}, 17)
    assert h == wire.Header(4, Kind.RESULT, 17, np.dtype(dtype), shape, -3)


@pytest.mark.parametrize("kind", list(Kind))
def test_wire_header_round_trip_every_kind_without_payload(kind):
    h = wire.parse_header(packed(kind, 2**40, None, aux=2**33 + 5), 9, [kind], None)
    assert (h.source, h.kind, h.step, h.dtype, h.shape, h.aux) == \
        (9, kind, 2**40, None, (), 2**33 + 5)


def test_wire_header_words_are_the_documented_layout():
    # [MAGIC, kind, step, dtype code, ndim, shape0, shape1, aux]
    h = packed(Kind.PART, 6, np.zeros((2, 3), dtype=np.uint16), aux=41)
    assert h.dtype == np.int64 and h.shape == (wire.HEADER_WORDS,) == (8,)
    assert h.tolist() == [wire.MAGIC, int(Kind.PART), 6, 3, 2, 2, 3, 41]
    one = packed(Kind.VECTOR, 1, np.zeros(7))
    assert one.tolist() == [wire.MAGIC, int(Kind.VECTOR), 1, 1, 1, 7, 0, 0]
    assert packed(Kind.STOP, 3).tolist() == [wire.MAGIC, int(Kind.STOP), 3, 0, 0, 0, 0, 0]
    assert wire.TAG_HEADER != wire.TAG_PAYLOAD


def test_wire_kinds_have_distinct_values():
    # an IntEnum silently makes a repeated value an alias of the first name
    assert len(Kind.__members__) == len(list(Kind))
    assert all(0 < k < 99 for k in Kind)  # 99: the kind a garbling fault sends


def test_wire_header_from_wrong_magic_names_the_sender():
    h = packed(Kind.RESULT, 1)
    h[0] = 0xBAD
    with pytest.raises(WireError, match=r"malformed header from rank 3: bad magic 0xbad"):
        wire.parse_header(h, 3, {Kind.RESULT}, 1)


def test_wire_header_of_unknown_kind_names_the_sender():
    h = packed(Kind.RESULT, 1)
    h[1] = 99
    with pytest.raises(WireError, match=r"malformed header from rank 5: unknown kind 99"):
        wire.parse_header(h, 5, {Kind.RESULT}, 1)


def test_wire_unexpected_kind_names_the_sender_and_what_was_expected():
    h = packed(Kind.BYE, 1)
    with pytest.raises(WireError) as e:
        wire.parse_header(h, 6, [Kind.RESULT, Kind.META], 1)
    assert str(e.value) == "unexpected BYE from rank 6 (expected RESULT, META)"


def test_wire_header_for_another_step_names_the_sender_and_both_steps():
    h = packed(Kind.META, 4)
    with pytest.raises(WireError) as e:
        wire.parse_header(h, 2, {Kind.META}, 5)
    assert str(e.value) == "META from rank 2 is for step 4, expected step 5"
    assert wire.parse_header(h, 2, {Kind.META}, None).step == 4  # None: any step


@pytest.mark.parametrize("word,value,match", [
    (4, 3, r"rank 8: ndim 3"),
    (4, -1, r"rank 8: ndim -1"),
    (3, 0, r"rank 8: dtype code 0"),
    (3, 77, r"rank 8: dtype code 77"),
    (5, -2, r"rank 8: shape \(-2, 4\)"),
    (6, -1, r"rank 8: shape \(3, -1\)"),
])
def test_wire_malformed_header_fields_name_the_sender(word, value, match):
    h = packed(Kind.RESULT, 1, np.zeros((3, 4)))
    h[word] = value
    with pytest.raises(WireError, match=r"malformed header from " + match):
        wire.parse_header(h, 8, {Kind.RESULT}, 1)


def test_wire_header_without_payload_ignores_the_dtype_and_shape_words():
    h = packed(Kind.IDLE, 1)
    h[3], h[5], h[6] = 77, -1, -1  # ndim 0: no payload follows, nothing else to read
    got = wire.parse_header(h, 1, {Kind.IDLE}, 1)
    assert got.dtype is None and got.shape == ()


@pytest.mark.parametrize("arr", [np.zeros((2, 2, 2)), np.zeros(3, dtype=np.complex128),
                                 np.zeros(3, dtype=np.int32), np.zeros(3, dtype=bool)])
def test_wire_refuses_to_pack_a_payload_it_cannot_describe(arr):
    with pytest.raises(WireError):
        packed(Kind.RESULT, 1, arr)


class _Sent:
    """A communicator that records what ``isend`` hands it (no MPI)."""

    def __init__(self) -> None:
        self.calls: list[tuple[np.ndarray, int, int]] = []

    def Isend(self, buf, dest, tag):  # noqa: N802 - mpi4py's name
        self.calls.append((buf, dest, tag))
        return f"req{len(self.calls)}"


class _Sub(np.ndarray):
    """An ndarray subclass (as galois arrays are): sent as a plain ndarray."""


@pytest.mark.parametrize("arr", [
    np.arange(12.0).reshape(3, 4)[:, ::2],  # not contiguous
    np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    np.array(5.0),  # 0-d: sent as one value
    np.arange(4, dtype=np.uint16).view(_Sub),
    np.zeros(0, dtype=np.uint8),
])
def test_wire_isend_header_describes_exactly_the_payload_it_sends(arr):
    comm = _Sent()
    reqs = wire.isend(comm, 3, Kind.RESULT, 7, arr, aux=2,  # type: ignore[arg-type]
                      inline=False)
    assert reqs == ["req1", "req2"]
    (h, d0, t0), (payload, d1, t1) = comm.calls
    assert (d0, t0, d1, t1) == (3, wire.TAG_HEADER, 3, wire.TAG_PAYLOAD)
    assert type(payload) is np.ndarray and payload.flags.c_contiguous
    got = wire.parse_header(h, 0, {Kind.RESULT}, 7)
    assert got.shape == payload.shape and got.dtype == payload.dtype and got.aux == 2
    assert np.array_equal(payload.reshape(-1), np.asarray(arr).reshape(-1))


@pytest.mark.parametrize("arr", [
    np.arange(12.0).reshape(3, 4)[:, ::2],
    np.arange(4, dtype=np.uint16).view(_Sub),
    np.arange(7, dtype=np.uint8),
    np.zeros(0, dtype=np.uint8),
    np.arange(wire.INLINE_BYTES // 8, dtype=np.float64),  # the largest inline payload
])
def test_wire_small_payload_goes_inline_in_the_headers_message(arr):
    comm = _Sent()
    assert wire.isend(comm, 3, Kind.RESULT, 7, arr, aux=2) == ["req1"]  # type: ignore[arg-type]
    msg, dest, tag = comm.calls[0]
    assert (dest, tag) == (3, wire.TAG_HEADER) and msg.dtype == np.int64
    buf = np.zeros(wire.HEADER_CAPACITY, dtype=np.int64)
    buf[:len(msg)] = msg
    h = wire.parse_header(buf, 3, {Kind.RESULT}, 7)
    assert h.inline and h.aux == 2 and h.dtype == np.asarray(arr).dtype
    got = wire.inline_payload(h, buf)
    assert np.array_equal(got.reshape(-1), np.asarray(arr).reshape(-1))
    assert got.base is None or got.base is not buf  # a copy: the buffer is reused


def test_wire_payload_one_byte_over_the_inline_limit_is_its_own_message():
    comm = _Sent()
    arr = np.zeros(wire.INLINE_BYTES + 1, dtype=np.uint8)
    assert wire.isend(comm, 1, Kind.VECTOR, 1, arr) == ["req1", "req2"]  # type: ignore[arg-type]
    h = wire.parse_header(comm.calls[0][0], 0, {Kind.VECTOR}, 1)
    assert not h.inline and comm.calls[1][2] == wire.TAG_PAYLOAD


def test_wire_inline_header_announcing_more_than_fits_names_the_sender():
    h = np.zeros(wire.HEADER_CAPACITY, dtype=np.int64)
    h[:wire.HEADER_WORDS] = packed(Kind.RESULT, 1, np.zeros(4), aux=0)
    h[3] += wire.INLINE
    h[5] = wire.INLINE_BYTES // 8 + 1
    with pytest.raises(WireError, match=r"from rank 5: inline payload of shape \(505,\) "
                                        r"does not fit 4032 bytes"):
        wire.parse_header(h, 5, {Kind.RESULT}, 1)


def test_wire_isend_without_payload_sends_the_header_only():
    comm = _Sent()
    assert wire.isend(comm, 1, Kind.STOP, 9) == ["req1"]  # type: ignore[arg-type]
    assert wire.parse_header(comm.calls[0][0], 0, {Kind.STOP}, 9).dtype is None


def test_wire_recv_payload_of_a_header_without_one_receives_nothing():
    h = wire.Header(2, Kind.IDLE, 1, None, (), 0)
    assert wire.recv_payload(object(), h, 0.0) is None  # type: ignore[arg-type]


# --- over a real communicator (mpiexec, tests/runtime_core_ranks.py) ---

@pytest.mark.mpi
@pytest.mark.portable
def test_wire_over_mpi_errors_name_the_sender_and_leave_the_link_usable():
    out = result(launched("wire"))
    host = socket.gethostname()
    assert out["host"] == host
    assert out["errors"] == [
        f"unexpected BYE (step 1, aux 0) from rank 1 ({host}); expected RESULT (step 1)",
        f"unexpected RESULT (step 9, aux 0) from rank 1 ({host}); expected RESULT (step 1)",
        "step meta record from rank 1 has shape (3,), expected (4,)",
        "malformed header from rank 1: bad magic 0xbad",  # the garble fault's header
    ]
    assert out["worker"] == "unexpected IDLE from rank 0 (expected STOP)"


def test_a_bundle_carries_its_messages_in_order_in_one_buffer():
    table = np.array([[0, 7]], dtype=np.int64)
    w = np.arange(13, dtype=np.uint8)  # not a whole number of words: padded
    parts = [wire.pack(Kind.TASK, 2, table, aux=3), wire.pack(Kind.VECTOR, 2, w),
             wire.pack(Kind.IDLE, 2)]
    msg, payload = wire.bundle(parts)  # type: ignore[misc]
    assert payload is None and len(msg) == 8 + 2 + 8 + 2 + 8
    buf = np.zeros(wire.HEADER_CAPACITY, dtype=np.int64)
    buf[:len(msg)] = msg
    got = wire.unbundle(buf, 4)
    assert [(h.kind, h.step, h.aux, h.source) for h, _ in got] == \
        [(Kind.TASK, 2, 3, 4), (Kind.VECTOR, 2, 0, 4), (Kind.IDLE, 2, 0, 4)]
    assert np.array_equal(got[0][1], table) and np.array_equal(got[1][1], w)
    assert got[2][1] is None
    # the first header alone reads as the bundle's first message (MORE set in its word 3)
    assert wire.parse_header(buf, 4, {Kind.TASK}, 2).kind == Kind.TASK
    # one message alone: unbundle gives it
    one = np.zeros(wire.HEADER_CAPACITY, dtype=np.int64)
    one[:len(parts[1][0])] = parts[1][0]
    assert [h.kind for h, _ in wire.unbundle(one, 4)] == [Kind.VECTOR]


def test_what_does_not_fit_one_bundle_is_not_bundled():
    full = np.zeros(wire.INLINE_BYTES // 8)  # the largest inline payload
    assert wire.bundle([wire.pack(Kind.RESULT, 1, full)]) is not None
    assert wire.bundle([wire.pack(Kind.RESULT, 1, full), wire.pack(Kind.IDLE, 1)]) is None
    big = wire.pack(Kind.RESULT, 1, np.zeros(wire.INLINE_BYTES // 8 + 1))
    assert big[1] is not None and wire.bundle([big, wire.pack(Kind.IDLE, 1)]) is None
    half = np.zeros(wire.HEADER_CAPACITY // 2 - wire.HEADER_WORDS)  # with 2 headers: 4096 B
    both = wire.bundle([wire.pack(Kind.RESULT, 1, half), wire.pack(Kind.META, 1, half)])
    assert both is not None and len(both[0]) == wire.HEADER_CAPACITY
    more = np.zeros(len(half) + 1)
    assert wire.bundle([wire.pack(Kind.RESULT, 1, more), wire.pack(Kind.META, 1, half)]) is None


def test_a_bundle_that_runs_past_its_buffer_is_malformed():
    msg, _ = wire.bundle([wire.pack(Kind.TASK, 1, np.zeros((1, 2), np.int64)),  # type: ignore[misc]
                          wire.pack(Kind.IDLE, 1)])
    buf = np.zeros(wire.HEADER_CAPACITY, dtype=np.int64)
    buf[:len(msg)] = msg
    buf[8 + 2 + 3] |= wire.MORE  # the last message says another follows: zeros
    with pytest.raises(WireError, match="malformed header from rank 6: bad magic 0x0"):
        wire.unbundle(buf, 6)
    # the second message's inline payload (fits 4032 bytes alone) would run past the buffer
    buf[8 + 2: 8 + 2 + 8] = wire.pack(Kind.RESULT, 1, np.zeros(wire.INLINE_BYTES // 8))[0][:8]
    with pytest.raises(WireError, match="rank 6: inline payload of shape .* does not fit"):
        wire.unbundle(buf, 6)
