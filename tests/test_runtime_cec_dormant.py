"""A preempted machine of the elastic job waits dormant (runtime/cec/machine.py): its wait
for the master's next order uses the dormant cap after IDLE and until that order, and no
other wait does; once it has seen the orders of
consecutive steps, a machine expects the next one (``Expecting``, capped at its cap).  No
MPI traffic: the machine's link to the master is a stand-in."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

from mpi_coded.runtime.cec.machine import IdleClock, Machine
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.wait import FIRST_ORDER_WINDOW, POLICY, Expecting, OrderClock


class FakeMaster:
    """Records the ``dormant`` flag of every wait for the master's next message."""

    def __init__(self) -> None:
        self.dormant: list[bool] = []
        self.active: list[bool] = []
        self.backoff: list[object] = []
        self.step = 0

    def recv(self, kinds, step, timeout, what, dormant=False, active=False,  # noqa: ANN001
             backoff=None):
        self.dormant.append(dormant)
        self.active.append(active)
        self.backoff.append(backoff)
        self.step += 1  # every order is the next step's
        return SimpleNamespace(kind=P.Kind.TASK, step=self.step, aux=0), None


def a_machine() -> Machine:
    m = object.__new__(Machine)  # the waiting state only: no communicator, no block
    m.pending = deque()
    m.master = FakeMaster()  # type: ignore[assignment]
    m.cfg = SimpleNamespace(timeout_s=5.0)  # type: ignore[assignment]
    m.idle_clock = IdleClock()
    m.orders = OrderClock()
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


def test_a_machine_expects_the_next_order_once_it_has_seen_a_period():
    m = a_machine()
    for _ in range(3):  # orders of steps 1, 2, 3: the third is expected after one period
        m.next_order()
    m.idle_clock.start()
    m.next_order()  # dormant: expecting, capped at the dormant cap
    m.idle_clock.stop()
    m.next_order()
    seen = m.master.backoff  # type: ignore[attr-defined]
    assert seen[0] is None  # no order yet, none due
    assert all(isinstance(b, Expecting) for b in seen[1:])
    assert seen[1].window == FIRST_ORDER_WINDOW  # one order in: the next as the first
    assert seen[2].window != FIRST_ORDER_WINDOW  # from then on, one period after the last
    assert seen[3].hi == POLICY.dormant_sleep and seen[4].hi == POLICY.idle_sleep


def test_a_machine_expects_its_first_order_right_after_ready():
    m = a_machine()
    m.orders.expect_soon(0.1)  # what Machine.run does after READY
    m.next_order()
    m.next_order()  # step 2: no period known yet, expected as the first was
    first, second = m.master.backoff  # type: ignore[attr-defined]
    assert isinstance(first, Expecting) and first.window == 0.1 and first.hi == POLICY.idle_sleep
    assert isinstance(second, Expecting) and second.window == FIRST_ORDER_WINDOW
    assert m.orders.last is not None and second.due <= m.orders.last[1]  # from order 1
