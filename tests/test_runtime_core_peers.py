"""runtime/core/peers.py in one process: ``Peers.collect`` (kinds in order, soft and hard
deadlines, ``until``, stale answers dropped and counted, wrong answers named), ``pump``,
``handshake`` and ``name``, over scripted arrivals instead of MPI.

``ScriptedPeers`` replaces only ``Peers.arrived`` (the one ``Testsome`` over the posted
header receives) and keeps its contract: each peer listened to delivers at most its next
message per round, in the order it sent them, and a peer not listened to keeps its
messages.  The real ``arrived`` over a real communicator: tests/test_runtime_core_mpi.py.
Deadlines are tens of ms; bounds are loose (not before the deadline, by 5 s).
"""

from __future__ import annotations

import socket
import time
from collections import deque
from typing import Any, cast

import numpy as np
import pytest
from mpi4py import MPI
from runtime_core_ranks import launched, payloads, result

from mpi_coded.runtime.core import wire
from mpi_coded.runtime.core.inbox import Msg
from mpi_coded.runtime.core.peers import Peers
from mpi_coded.runtime.core.wait import DeadlineExceeded, deadline_in
from mpi_coded.runtime.core.wire import Kind, WireError

K = Kind
LATE = 5.0


def msg(source: int, kind: Kind, step: int, aux: int = 0, payload: Any = None) -> Msg:
    arr = None if payload is None else np.asarray(payload)
    h = wire.Header(source, kind, step, None if arr is None else arr.dtype,
                    () if arr is None else arr.shape, aux)
    return h, arr


class ScriptedPeers(Peers):
    """Peers whose messages arrive from a script: ``(seconds after start, message)``."""

    def __init__(self, ranks: list[int], script: list[tuple[float, Msg]], **kw: Any) -> None:
        super().__init__(cast(MPI.Comm, None), ranks, **kw)
        self.queue: dict[int, deque[tuple[float, Msg]]] = {r: deque() for r in ranks}
        for t, m in script:
            self.queue[m[0].source].append((t, m))
        self.t0 = time.monotonic()
        self.listened: list[list[int]] = []

    def arrived(self, who, hard):
        who = list(who)
        self.listened.append(who)
        now = time.monotonic() - self.t0
        out = []
        for r in who:
            q = self.queue[r]
            if q and q[0][0] <= now:
                out.append(q.popleft()[1])
        return out

    def left(self, r: int) -> list[tuple[Kind, int, int]]:
        return [(m[0].kind, m[0].step, m[0].aux) for _, m in self.queue[r]]


def kinds_of(got: dict[int, list[Msg]]) -> dict[int, list[tuple[Kind, int, int]]]:
    return {r: [(h.kind, h.step, h.aux) for h, _ in v] for r, v in got.items()}


def test_peers_collect_takes_each_peers_messages_in_the_order_of_kinds():
    script = [(0.0, msg(2, K.RESULT, 4, payload=[1.0, 2.0])), (0.0, msg(2, K.META, 4)),
              (0.03, msg(1, K.RESULT, 4, payload=[3.0])), (0.03, msg(1, K.META, 4)),
              (0.0, msg(3, K.RESULT, 4)), (0.06, msg(3, K.META, 4))]
    peers = ScriptedPeers([1, 2, 3], script)
    got, missing = peers.collect([1, 2, 3], [K.RESULT, K.META], 4, hard=deadline_in(30),
                                 what="step 4")
    assert missing == [] and peers.dropped == 0
    assert list(got) == [2, 3, 1]  # in the order each peer's first message arrived
    assert kinds_of(got) == {r: [(K.RESULT, 4, 0), (K.META, 4, 0)] for r in (1, 2, 3)}
    assert np.asarray(got[2][0][1]).tolist() == [1.0, 2.0]
    assert np.asarray(got[1][0][1]).tolist() == [3.0]


def test_peers_collect_listens_only_to_peers_still_owing_and_leaves_the_rest_queued():
    script = [(0.0, msg(1, K.RESULT, 4)), (0.0, msg(1, K.RESULT, 5)),
              (0.05, msg(2, K.RESULT, 4))]
    peers = ScriptedPeers([1, 2], script)
    got, missing = peers.collect([1, 2], [K.RESULT], 4, hard=deadline_in(30), what="x")
    assert missing == [] and set(got) == {1, 2}
    assert all(1 not in who for who in peers.listened[1:])  # rank 1 had answered
    assert peers.left(1) == [(K.RESULT, 5, 0)]  # the next step's answer waits for it
    got, _ = peers.collect([1], [K.RESULT], 5, hard=deadline_in(30), what="x")
    assert kinds_of(got) == {1: [(K.RESULT, 5, 0)]}


def test_peers_collect_from_a_subset_never_takes_the_others_messages():
    peers = ScriptedPeers([1, 2], [(0.0, msg(2, K.BYE, 9)), (0.0, msg(1, K.DONE, 1))])
    got, _ = peers.collect([1], [K.DONE], 1, hard=deadline_in(30), what="x")
    assert list(got) == [1] and peers.left(2) == [(K.BYE, 9, 0)]
    assert all(who == [1] for who in peers.listened)


def test_peers_collect_wrong_kind_names_the_peer_and_what_was_expected():
    peers = ScriptedPeers([1, 2], [(0.0, msg(2, K.META, 4))],
                          label=lambda r: f"machine {r}")
    peers.host[2] = "nodeB"
    with pytest.raises(WireError) as e:
        peers.collect([1, 2], [K.RESULT, K.META], 4, hard=deadline_in(30), what="x")
    assert str(e.value) == ("unexpected META (step 4, aux 0) from machine 2 (nodeB); "
                            "expected RESULT (step 4)")


def test_peers_collect_wrong_step_or_aux_is_a_wire_error():
    peers = ScriptedPeers([1], [(0.0, msg(1, K.RESULT, 3))])
    with pytest.raises(WireError, match=r"unexpected RESULT \(step 3, aux 0\) from rank 1 "
                                        r"\(\?\); expected RESULT \(step 4\)"):
        peers.collect([1], [K.RESULT], 4, hard=deadline_in(30), what="x")
    peers = ScriptedPeers([1], [(0.0, msg(1, K.RESULT, 4, aux=2))])
    with pytest.raises(WireError, match=r"\(step 4, aux 2\) from rank 1 .*"
                                        r"expected RESULT \(step 4, aux 1\)"):
        peers.collect([1], [K.RESULT], 4, aux=1, hard=deadline_in(30), what="x")
    peers = ScriptedPeers([1], [(0.0, msg(1, K.RESULT, 4, aux=2))])
    got, _ = peers.collect([1], [K.RESULT], 4, hard=deadline_in(30), what="x")  # any aux
    assert kinds_of(got) == {1: [(K.RESULT, 4, 2)]}


def stale_before(step: int, attempt: int):
    """The elastic master's rule: an answer to an earlier (step, attempt) is late."""
    seen: list[tuple[int, int, int]] = []

    def stale(r: int, h: wire.Header) -> bool:
        seen.append((r, h.step, h.aux))
        return (h.step, h.aux) < (step, attempt)

    return stale, seen


def test_peers_collect_drops_and_counts_answers_of_earlier_steps_and_attempts():
    # rank 1 was re-planned away in attempt 0 of step 4: its late answers come first
    script = [(0.0, msg(1, K.RESULT, 4, aux=0)), (0.0, msg(1, K.META, 4, aux=0)),
              (0.0, msg(1, K.RESULT, 3, aux=2)),  # from the step before
              (0.02, msg(1, K.RESULT, 4, aux=1)), (0.02, msg(1, K.META, 4, aux=1)),
              (0.0, msg(2, K.META, 2, aux=0)),  # stale whatever its kind
              (0.0, msg(2, K.RESULT, 4, aux=1)), (0.0, msg(2, K.META, 4, aux=1))]
    peers = ScriptedPeers([1, 2], script)
    stale, seen = stale_before(4, 1)
    got, missing = peers.collect([1, 2], [K.RESULT, K.META], 4, aux=1, stale=stale,
                                 hard=deadline_in(30), what="x")
    assert missing == [] and peers.dropped == 4
    assert kinds_of(got) == {r: [(K.RESULT, 4, 1), (K.META, 4, 1)] for r in (1, 2)}
    assert (1, 4, 0) in seen and (2, 2, 0) in seen  # asked with the sender's rank
    # the count accumulates over collections
    peers2 = ScriptedPeers([1], [(0.0, msg(1, K.RESULT, 4, aux=1)),
                                 (0.0, msg(1, K.RESULT, 5, aux=0))])
    peers2.dropped = 4
    stale, _ = stale_before(5, 0)
    got, _ = peers2.collect([1], [K.RESULT], 5, aux=0, stale=stale, hard=deadline_in(30),
                            what="x")
    assert peers2.dropped == 5 and kinds_of(got) == {1: [(K.RESULT, 5, 0)]}


def test_peers_collect_answer_of_a_later_attempt_is_not_dropped_but_an_error():
    peers = ScriptedPeers([1], [(0.0, msg(1, K.RESULT, 4, aux=2))])
    stale, _ = stale_before(4, 1)
    with pytest.raises(WireError, match=r"aux 2\) from rank 1"):
        peers.collect([1], [K.RESULT], 4, aux=1, stale=stale, hard=deadline_in(30),
                      what="x")
    assert peers.dropped == 0


def test_peers_collect_returns_who_is_missing_at_the_soft_deadline():
    script = [(0.0, msg(1, K.RESULT, 4)), (0.0, msg(3, K.RESULT, 4)),
              (0.0, msg(2, K.RESULT, 3)),  # rank 2 sends only a stale answer
              (60.0, msg(2, K.RESULT, 4))]
    peers = ScriptedPeers([1, 2, 3], script)
    stale, _ = stale_before(4, 0)
    t0 = time.monotonic()
    got, missing = peers.collect([1, 2, 3], [K.RESULT], 4, soft=t0 + 0.2,
                                 hard=t0 + 60, stale=stale, what="x")
    took = time.monotonic() - t0
    assert 0.2 <= took < 0.2 + LATE
    assert missing == [2] and sorted(got) == [1, 3] and peers.dropped == 1


def test_peers_collect_soft_deadline_keeps_partial_answers():
    peers = ScriptedPeers([1, 2], [(0.0, msg(1, K.RESULT, 4)), (0.0, msg(1, K.META, 4)),
                                   (0.0, msg(2, K.RESULT, 4))])
    t0 = time.monotonic()
    got, missing = peers.collect([1, 2], [K.RESULT, K.META], 4, soft=t0 + 0.05,
                                 hard=t0 + 60, what="x")
    assert missing == [2] and kinds_of(got) == {1: [(K.RESULT, 4, 0), (K.META, 4, 0)],
                                                2: [(K.RESULT, 4, 0)]}


def test_peers_collect_raises_at_the_hard_deadline_naming_only_the_missing():
    peers = ScriptedPeers([1, 2, 3], [(0.0, msg(2, K.RESULT, 4))],
                          label=lambda r: f"server {r - 1} = rank {r}")
    peers.host.update({1: "h1", 3: "h3"})
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded) as e:
        peers.collect([3, 2, 1], [K.RESULT], 4, hard=t0 + 0.2, what="step 4 results")
    took = time.monotonic() - t0
    assert 0.2 <= took < 0.2 + LATE
    assert str(e.value) == ("timed out waiting for step 4 results from "
                            "server 0 = rank 1 (h1), server 2 = rank 3 (h3)")


def test_peers_collect_stops_when_until_holds_on_complete_answers():
    script = [(0.0, msg(1, K.RESULT, 4)), (0.0, msg(1, K.META, 4)),
              (0.0, msg(2, K.RESULT, 4)),  # rank 2 never completes
              (0.02, msg(3, K.RESULT, 4)), (0.02, msg(3, K.META, 4))]
    peers = ScriptedPeers([1, 2, 3], script)
    shown: list[dict[int, int]] = []

    def until(done: dict[int, list[Msg]]) -> bool:
        shown.append({r: len(v) for r, v in done.items()})
        return len(done) == 2

    t0 = time.monotonic()
    got, missing = peers.collect([1, 2, 3], [K.RESULT, K.META], 4, until=until,
                                 hard=t0 + 30, what="x")
    assert time.monotonic() - t0 < LATE
    assert missing == [2] and sorted(got) == [1, 2, 3]
    assert all(n == 2 for d in shown for n in d.values())  # only complete answers
    assert shown[-1].keys() == {1, 3}


def test_peers_pump_owed_peers_are_named_at_soft_and_hard_deadlines():
    peers = ScriptedPeers([1, 2], [(0.0, msg(1, K.PART, 4))])
    handled: list[Msg] = []
    t0 = time.monotonic()
    owed = peers.pump(lambda: [1, 2], handled.append, lambda: False, hard=t0 + 60,
                      soft=t0 + 0.05, what="x", owed=lambda: [2])
    assert owed == [2] and [h.kind for h, _ in handled] == [K.PART]
    assert time.monotonic() - t0 >= 0.05
    with pytest.raises(DeadlineExceeded, match=r"^timed out waiting for parts from rank 2 "):
        peers.pump(lambda: [1, 2], handled.append, lambda: False, hard=time.monotonic() + 0.05,
                   what="parts", owed=lambda: [2])
    assert peers.pump(lambda: [1, 2], handled.append, lambda: True, hard=0.0, what="x") == []


def test_peers_handshake_remembers_host_names_and_name_sorts_by_rank():
    host = lambda s: np.frombuffer(s.encode(), dtype=np.uint8)  # noqa: E731
    script = [(0.0, msg(2, K.READY, 0, payload=host("beta"))),
              (0.01, msg(1, K.READY, 0, payload=host("alpha"))),
              (0.0, msg(3, K.READY, 0))]  # no host name sent
    peers = ScriptedPeers([1, 2, 3], script, label=lambda r: f"machine {r}")
    peers.handshake(30)
    assert peers.host == {1: "alpha", 2: "beta", 3: "?"}
    assert peers.name([3, 1, 2]) == "machine 1 (alpha), machine 2 (beta), machine 3 (?)"


def test_peers_handshake_times_out_naming_the_silent():
    peers = ScriptedPeers([1, 2], [(0.0, msg(1, K.READY, 0))])
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"^timed out waiting for READY from rank 2 "
                                               r"\(\?\)$"):
        peers.handshake(0.1)
    assert 0.1 <= time.monotonic() - t0 < 0.1 + LATE


# --- over a real communicator (mpiexec, tests/runtime_core_ranks.py) ---

@pytest.mark.mpi
@pytest.mark.portable
def test_peers_over_mpi_handshake_order_and_payloads_of_every_dtype():
    out = result(launched("exchange"))
    assert out["hosts"] == {"1": socket.gethostname(), "2": socket.gethostname()}
    assert out["probe_empty"] == {"1": 1, "2": 1}  # a worker's inbox test never blocks
    assert out["missing"] == []
    n = len(payloads(1))
    # per payload: aux, dtype, shape, bytes as sent
    assert out["payloads"] == {r: [[True] * 4] * n for r in ("1", "2")}
    want = {"compute_s": 0.5, "sleep_s": 0.25, "target_s": 1.0, "rows": 42.0}
    assert out["meta"] == {"1": want, "2": want}  # unpacked by name


@pytest.mark.mpi
@pytest.mark.portable
def test_peers_over_mpi_soft_deadline_stale_attempts_and_hard_deadline():
    out = result(launched("late"))
    soft = out["soft"]
    assert soft["missing"] == [1] and soft["got"] == [2]
    assert 0.3 <= soft["took"] < 0.3 + LATE
    # machine 1's attempt-0 answer came first and was dropped; attempt 1's taken
    assert out["attempt1"] == {"aux": 1, "payload": [1.0, 1.0], "dropped": 1, "missing": []}
    # machine 2's leftover answer of step 1 dropped too
    assert out["step2"] == {"got": {"1": [1.0, 2.0], "2": [2.0, 2.0]}, "dropped": 2,
                            "missing": []}
    host = socket.gethostname()
    assert out["hard"]["message"] == ("timed out waiting for step 3 results from "
                                      f"machine 1 ({host}), machine 2 ({host})")
    assert 0.3 <= out["hard"]["took"] < 0.3 + LATE


@pytest.mark.mpi
def test_peers_over_mpi_cancel_frees_the_posted_receives():
    # Peers.cancel after the hard deadline left header receives posted: MPICH reports a
    # request never completed at finalize ("has pending N references")
    r = launched("late")
    assert r.returncode == 0 and "pending" not in r.stderr, r.stderr


class StalePeers(ScriptedPeers):
    """Rank 1 delivers a stale answer (step 3) in every round, for ever."""

    def arrived(self, who, hard):
        self.listened.append(list(who))
        return [msg(1, K.RESULT, 3)] if 1 in who else []


def test_peers_collect_a_steady_stream_of_stale_answers_cannot_outlast_the_deadlines():
    peers = StalePeers([1, 2], [])
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="rank 1"):
        peers.collect([1, 2], [K.RESULT], 4, hard=t0 + 0.2, what="x",
                      stale=lambda r, h: h.step < 4)
    assert 0.2 <= time.monotonic() - t0 < 0.2 + LATE and peers.dropped > 0
    t0 = time.monotonic()
    got, missing = peers.collect([1, 2], [K.RESULT], 4, hard=t0 + 60, soft=t0 + 0.1,
                                 what="x", stale=lambda r, h: h.step < 4)
    assert missing == [1, 2] and got == {}
    assert 0.1 <= time.monotonic() - t0 < 0.1 + LATE
