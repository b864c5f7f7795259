"""What a machine of the elastic job stores, and how, by policy: the machine's side of a
policy's runtime phases (:attr:`mpi_coded.runtime.cec.steps.Steps.store`).

* :class:`CodedStore` (the coded policies): the coded block ``X~_n`` received once at
  setup (``workload = "linreg"`` and any workload of two products: a coded block of
  ``X^T`` too, used on the second product of a step); nothing moves afterwards.
* :class:`UncodedStore` (the uncoded baseline, :mod:`mpi_coded.cec.uncoded`): no coded
  block; the machine stores the rows ``[a, b)`` of ``X`` it owns.  MOVES gives its new
  range and the moves involving it: it sends the rows it gives away (ROWS, straight from
  its store) to their new owners, receives the rows it takes over (from other machines or
  the master), keeps the overlap, and acknowledges.  IDLE drops the store (a preempted
  machine's memory is reclaimed).  The second product of a step (two-product workloads,
  wire step ``2t``) is this machine's part of ``X^T z``: ``X[a:b]^T z[a:b]`` on the rows
  it stores (VECTOR carries ``z[a:b]``), one RESULT that the master adds up.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Protocol

import numpy as np
from mpi4py import MPI

from mpi_coded.runtime.cec.storage import rebuild_block, send_blocks, warn
from mpi_coded.runtime.core import linkstats
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.guard import CannotGoOn
from mpi_coded.runtime.core.inbox import Inbox
from mpi_coded.runtime.core.wait import deadline_in, wait_all
from mpi_coded.store import checksum
from mpi_coded.store.blocks import open_block, verify

if TYPE_CHECKING:
    from mpi_coded.cec.config import CECConfig
    from mpi_coded.fields import Field
    from mpi_coded.runtime.cec.storage import StoreRun
    from mpi_coded.runtime.core.peers import MasterLink
    from mpi_coded.store.audit import Audit


class Holder(Protocol):
    """What a store reads and sets of the machine that holds it
    (:class:`mpi_coded.runtime.cec.machine.Machine`, which imports the stores: a store
    names only this, so the two modules form no circle)."""

    cfg: CECConfig
    comm: MPI.Comm
    rank: int
    field: Field
    master: MasterLink
    per_step: int
    block: np.ndarray
    out: np.ndarray
    stored: StoreRun | None
    peers: dict[int, Inbox]
    link_mark: linkstats.Counters | None


class MachineStore:
    """A machine's data under one kind of policy; the coded default does nothing extra."""

    def __init__(self, m: Holder) -> None:
        self.m = m
        self.base = 0  # the row of the stored matrix of ``m.block``'s first row

    def setup(self) -> None:
        """Receive what the policy sends once, before READY."""

    def begin(self, step: int) -> None:
        """Before the products of a TASK of wire step ``step``."""

    def answer(self, step: int, done: int) -> np.ndarray:
        """The RESULT of a TASK of wire step ``step`` that computed ``done`` rows."""
        return self.m.out[:done]

    def moved(self, step: int) -> linkstats.Counters | None:
        """The link counters when the moves of wire step ``step`` were done (None: none)."""
        return None

    def select(self, step: int) -> None:
        """Before a TASK of wire step ``step``: the block it multiplies."""

    def idle(self) -> None:
        """IDLE: the machine is preempted for this step."""

    def transposed(self, step: int) -> bool:
        """Whether wire step ``step`` is the ``X^T z`` part computed on stored rows."""
        return False

    def product_t(self, a: int, b: int, off: int, z: np.ndarray) -> None:
        raise P.WireError("this policy's machines compute no X^T z parts")

    def moves(self, step: int, table: np.ndarray | None) -> None:
        raise P.WireError(f"MOVES for step {step}: this policy moves no rows")

    def intact(self) -> bool:
        """Whether the stored data is what it was when stored (default: nothing to check)."""
        return True

    def send_block(self, rank: int) -> None:
        raise P.WireError("REPAIR: this policy's machines hold no block of a store")

    def rebuild(self, n: int, rank: int, sources: list[tuple[int, int]]) -> np.ndarray:
        raise P.WireError("REPAIR: this policy's machines hold no block of a store")


class CodedStore(MachineStore):
    """The coded block(s), received once (module docstring)."""

    def __init__(self, m: Holder) -> None:
        super().__init__(m)
        self.blocks: list[np.ndarray] = []  # two products: [block of X, block of X^T]
        self.digest = ""  # of the block(s) as received

    def setup(self) -> None:
        m, cfg = self.m, self.m.cfg
        m.block = self.receive(0, (cfg.rows_per_block, cfg.cols), "the coded block")
        if m.per_step == 2:
            rt = -(-cfg.cols // cfg.L)
            block_t = self.receive(1, (rt, cfg.rows), "the coded block of X^T")
            self.blocks = [m.block, block_t]
            m.out = m.field.zeros(max(cfg.rows_per_block, rt))
        self.digest = self.hash()

    def hash(self) -> str:
        """The checksum of the block(s) in memory (:mod:`mpi_coded.store.checksum`)."""
        h = checksum.new()
        for b in self.blocks or [self.m.block]:
            h.update(np.ascontiguousarray(b).data.cast("B"))
        return h.hexdigest()

    def intact(self) -> bool:
        return self.hash() == self.digest

    def receive(self, step: int, shape: tuple[int, int], what: str) -> np.ndarray:
        _, block = self.m.master.recv({P.Kind.BLOCK}, step, self.m.cfg.timeout_s,
                                      f"{what} from the master")
        if block is None or block.shape != shape:
            raise P.WireError(f"{what} has shape {None if block is None else block.shape}, "
                              f"expected {shape}")
        return block

    def select(self, step: int) -> None:
        if self.blocks:
            self.m.block = self.blocks[(step - 1) % 2]


class DiskStore(CodedStore):
    """The coded block(s) memory-mapped from this host's store directory (checked, or
    repaired, by :func:`mpi_coded.runtime.cec.storage.open_store`); nothing received.

    The blocks the start trusted by their verified mark are audited in the background
    from the job's second step on, or from its first IDLE (:mod:`mpi_coded.store.audit`:
    the first step is not slowed); before every task the machine asks the audit whether
    its blocks may still be used (no chunk failed, no file changed on disk since the
    start).  If not, the machine *withholds* its block (one warning line naming the file
    and the rows): it computes on zeros instead, so its answers fail the master's check,
    and its CHECK answers "corrupt" (without reading the file again when a chunk failed):
    the block is rebuilt from ``L`` peers in the running job (docs/theory.md A.10), as a
    block found corrupt any other way is."""

    def __init__(self, m: Holder) -> None:
        super().__init__(m)
        self.audit: Audit | None = None
        self.withheld: str | None = None  # why the block is not used (None: it is)

    def setup(self) -> None:
        m, run = self.m, self.m.stored
        assert run is not None and run.blocks is not None
        m.block = open_block(run.blocks, m.rank, 0)
        if m.per_step == 2:
            block_t = open_block(run.blocks, m.rank, 1)
            self.blocks = [m.block, block_t]
            m.out = m.field.zeros(max(m.cfg.rows_per_block, block_t.shape[0]))
        if self.audit is not None:  # mapped again (a rebuilt block): the old audit ends
            self.audit.stop.set()
        self.audit, self.withheld = run.audit(), None

    def idle(self) -> None:
        if self.audit is not None:  # nothing computed this step: a good time to audit
            self.audit.start()

    def select(self, step: int) -> None:
        if self.audit is not None:
            if step > self.m.per_step:  # the first step's products are done
                self.audit.start()
            bad = self.audit.problem()
            if bad is not None and self.withheld is None:
                self.withhold(bad)
        super().select(step)

    def withhold(self, why: str) -> None:
        """Stop using the block(s): zeros of their shapes in their place (module
        docstring); ``why`` in one warning line."""
        m = self.m
        warn(f"rank {m.comm.Get_rank()} ({socket.gethostname()}): machine {m.rank}: {why}; "
             "its block is not used "
             "(its answers are zeros until the block is checked and rebuilt from its peers)")
        self.withheld = why
        self.blocks = [m.field.zeros(b.shape) for b in self.blocks]
        m.block = self.blocks[0] if self.blocks else m.field.zeros(m.block.shape)

    def intact(self) -> bool:
        """The block file(s) read whole against the manifest's checksum (a chunk the
        audit found corrupt: False at once).  A withheld block found intact (its file
        was only touched) is used again."""
        if self.audit is not None and self.audit.failed is not None:
            return False
        run = self.m.stored
        assert run is not None and run.blocks is not None
        ok = verify(run.blocks, self.m.rank) is None
        if ok and self.withheld is not None:
            self.setup()
        return ok

    def send_block(self, rank: int) -> None:
        """REPAIR, as a source: this machine's block(s) straight to the repairing rank
        (never a withheld one: the repair would copy its corruption)."""
        if self.withheld is not None:
            raise CannotGoOn(f"machine {self.m.rank} was asked for its block to repair "
                             f"rank {rank}'s, but it is withheld: {self.withheld}")
        send_blocks(self.m.stored, self.m.cfg, self.m.comm, self.m.rank, rank)

    def rebuild(self, n: int, rank: int, sources: list[tuple[int, int]]) -> np.ndarray:
        """REPAIR, as the target: this machine's block rebuilt from ``sources`` (S.3),
        written with its checksum, mapped again; ``[bytes, seconds]``."""
        stats = rebuild_block(self.m.stored, self.m.cfg, self.m.comm, n, rank, sources)
        self.setup()
        return stats


class UncodedStore(MachineStore):
    """The rows of ``X`` this machine owns, moved as the split changes (module docstring)."""

    def __init__(self, m: Holder) -> None:
        super().__init__(m)
        self.acc = m.field.zeros(m.cfg.cols)  # two products: this machine's part of X^T z
        self.moved_at: tuple[int, linkstats.Counters | None] = (-1, None)

    def setup(self) -> None:
        self.m.out = self.m.field.zeros(self.m.cfg.rows)

    def idle(self) -> None:  # reclaimed: its rows are gone
        self.m.block, self.base = self.m.field.zeros((0, self.m.cfg.cols)), 0

    def begin(self, step: int) -> None:
        if self.transposed(step):
            self.acc = self.m.field.zeros(self.m.cfg.cols)

    def answer(self, step: int, done: int) -> np.ndarray:
        return self.acc if self.transposed(step) else self.m.out[:done]

    def moved(self, step: int) -> linkstats.Counters | None:
        return self.moved_at[1] if self.moved_at[0] == step else None

    def transposed(self, step: int) -> bool:
        return self.m.per_step == 2 and step % 2 == 0

    def product_t(self, a: int, b: int, off: int, z: np.ndarray) -> None:
        """``acc += X[a:b]^T z[off:off + b - a]``: this machine's part of ``X^T z``."""
        m = self.m
        rows = m.block[a - self.base: b - self.base]
        self.acc += m.field.matmul(rows.T, z[off: off + b - a])

    def moves(self, step: int, table: np.ndarray | None) -> None:
        """Carry out the moves of ``step`` and acknowledge them."""
        m, cfg = self.m, self.m.cfg
        if table is None or table.ndim != 2 or table.shape[1] != 4 or table.shape[0] < 1:
            raise P.WireError(f"MOVES for step {step} has no (k, 4) table")
        _, _, a, b = (int(v) for v in table[0])
        old, base = m.block, self.base
        new = m.field.zeros((b - a, cfg.cols))
        lo, hi = max(a, base), min(b, base + old.shape[0])
        if hi > lo:
            new[lo - a: hi - a] = old[lo - base: hi - base]
        reqs: list[MPI.Request] = []
        moves = [tuple(int(v) for v in mv) for mv in table[1:]]
        for src, dst, s0, s1 in moves:
            if src == m.rank:
                if s0 < base or s1 > base + old.shape[0]:
                    raise P.WireError(f"step {step}: asked to send rows {s0}..{s1} not stored")
                reqs += P.isend(m.comm, dst, P.Kind.ROWS, step, old[s0 - base: s1 - base],
                                aux=s0)
        for src, dst, s0, s1 in moves:
            if dst == m.rank:
                new[s0 - a: s1 - a] = self.take_rows(step, src, s0, s1, a, b)
        wait_all(reqs, deadline_in(cfg.timeout_s), f"step {step} rows to be delivered")
        m.block, self.base = new, a
        self.moved_at = (step, linkstats.read())
        if step == 0:  # the setup's moves: no task reports them
            m.link_mark = self.moved_at[1]
        m.master.send(P.Kind.MOVES, step, timeout=cfg.timeout_s)

    def take_rows(self, step: int, src: int, s0: int, s1: int, a: int, b: int) -> np.ndarray:
        """Rows ``s0..s1`` of ``X`` from rank ``src`` (the master or a machine)."""
        m = self.m
        box = m.master.inbox if src == 0 else m.peers.setdefault(src, Inbox(m.comm, src))
        h, rows = box.recv({P.Kind.ROWS}, step, deadline_in(m.cfg.timeout_s),
                           f"rows {s0}..{s1} of X from rank {src}")
        if h.aux != s0 or rows is None or rows.shape != (s1 - s0, m.cfg.cols) or \
                not a <= s0 <= s1 <= b:
            raise P.WireError(f"step {step}: rows from rank {src} do not fit {s0}..{s1}")
        return rows
