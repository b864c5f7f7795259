"""A preempted machine of the elastic job waits dormant (runtime/cec/machine.py): its wait
for the master's next order uses the dormant cap after IDLE and until that order, and no
other wait does.  No MPI traffic: the machine's link to the master is a stand-in."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

from mpi_coded.runtime.cec.machine import IdleClock, Machine
from mpi_coded.runtime.core import wire as P


class FakeMaster:
    """Records the ``dormant`` flag of every wait for the master's next message."""

    def __init__(self) -> None:
        self.dormant: list[bool] = []

    def recv(self, kinds, step, timeout, what, dormant=False):  # noqa: ANN001
        self.dormant.append(dormant)
        return SimpleNamespace(kind=P.Kind.TASK, step=1, aux=0), None


def a_machine() -> Machine:
    m = object.__new__(Machine)  # the waiting state only: no communicator, no block
    m.pending = deque()
    m.master = FakeMaster()  # type: ignore[assignment]
    m.cfg = SimpleNamespace(timeout_s=5.0)  # type: ignore[assignment]
    m.idle_clock = IdleClock()
    return m


def test_only_a_machine_idled_by_the_master_waits_dormant():
    m = a_machine()
    m.next_order()  # working: the idle cap
    m.idle_clock.start()  # what IDLE does (Machine.idle)
    m.next_order()
    m.next_order({P.Kind.TASK, P.Kind.STOP})  # still idle (a CUT of an old step came)
    m.idle_clock.stop()  # the next order arrived (Machine.run)
    m.next_order({P.Kind.VECTOR}, 1, "w_t")  # a task's vector: expected now
    assert m.master.dormant == [False, True, True, False]  # type: ignore[attr-defined]
    assert m.idle_clock.wall >= 0 and m.idle_clock.since is None
