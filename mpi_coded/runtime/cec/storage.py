"""The elastic job started from a coded store (``store = "DIR"``): who is which machine,
and the repair of missing blocks from peers, on every rank before READY.

Every rank runs :func:`open_store` at the start of the job:

1. a machine rank scans its host's store directory (:func:`mpi_coded.store.blocks.scan`:
   a store of another job is refused here, before any MPI traffic; bad blocks are not
   held, one warning line each naming the file and the rule);
2. one ``Iallgather``: each rank's held machines and manifest digest (hosts whose
   manifests differ refuse the job); every rank computes the same assignment
   (:func:`mpi_coded.store.assign.assign`);
3. each assigned rank checks its block(s) (:func:`mpi_coded.store.blocks.check_block`:
   not read when the verified mark fits the file, ``store_check = "mark"``; else read
   whole, chunk by chunk); a second ``Iallgather`` of those verdicts and timings; every
   rank computes the same repairs
   (:func:`mpi_coded.store.assign.plan_repairs`);
4. the manifest's identity (field, generator, sketch, ``||X||_2``) is broadcast from the
   lowest rank that has one, so that the master, which reads no disk, and a new host
   with no manifest have it;
5. repairs (:func:`repair`): each source sends its block(s) straight to the repairing
   rank (real point-to-point messages, ``TAG_REPAIR``), which combines them (S.3),
   writes the block to its own disk with its checksum, and lists it in its host's
   manifest (under a lock: two ranks of one host may write it).

Every wait has a deadline (``timeout_s``).  The master never reads or sends a block.
The opening is timed on every rank: :attr:`StoreRun.open_s` and :attr:`StoreRun.parts`
(the setup line's ``store_open_s`` and ``store_parts``).
"""

from __future__ import annotations

import fcntl
import json
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mpi4py import MPI

from mpi_coded import start_clock
from mpi_coded.cec.config import CECConfig
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.errors import ConfigError
from mpi_coded.fields import Field, get_field
from mpi_coded.results import StoreOpening
from mpi_coded.runtime.core.guard import CannotGoOn
from mpi_coded.runtime.core.wait import deadline_in, wait_all
from mpi_coded.store.assign import RankLayout, Repair, assign, plan_repairs
from mpi_coded.store.audit import Audit, for_machine
from mpi_coded.store.blocks import (
    Check,
    Expect,
    HostBlocks,
    check_block,
    open_block,
    scan,
    verify,
)
from mpi_coded.store.encode import BlockFile
from mpi_coded.store.manifest import MANIFEST, BlockEntry, Manifest, block_name, read_manifest
from mpi_coded.store.repair import combine, repair_coefficients

TAG_REPAIR = 13
"""The tag of a block sent to a repairing rank (the wire's are 11 and 12)."""
DIGEST = 16


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def expect(cfg: CECConfig) -> Expect:
    """What the job ``cfg`` needs of a store."""
    src = str(Path(cfg.data).resolve()) if cfg.data else None
    return Expect(get_field(cfg.field), cfg.rows, cfg.cols, cfg.L, cfg.N,
                  WORKLOADS.lookup(cfg.workload).products == 2, src)


@dataclass
class StoreRun:
    """What the store setup left on this rank (module docstring)."""

    layout: RankLayout
    identity: Manifest
    hosts: dict[int, str]  # rank -> host
    blocks: HostBlocks | None = None  # this machine rank's host
    machine: int | None = None  # this rank's machine
    repairs: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    check: Check = field(default_factory=Check)  # this rank's block checked at the start
    open_s: float = 0.0  # this rank's time in open_store
    parts: StoreOpening = field(default_factory=StoreOpening)  # the setup line's store_parts

    def audit(self) -> Audit | None:
        """This machine's blocks watched, and the ones the start trusted by an old mark
        audited in the background (:func:`mpi_coded.store.audit.for_machine`); None on
        the master."""
        if self.blocks is None or self.machine is None or \
                self.machine not in self.blocks.held:
            return None
        return for_machine(self.blocks, self.machine, self.check.marked)

    def record(self) -> dict[str, Any]:
        """The setup line's ``store`` field."""
        lay = self.layout
        return {"machines": {str(n): r for n, r in sorted(lay.rank_of.items())},
                "lost": list(lay.lost), "repairs": self.repairs,
                "dataset": self.identity.dataset}


def _gather(comm: MPI.Comm, mine: np.ndarray, timeout: float, what: str) -> np.ndarray:
    every = np.zeros((comm.Get_size(), mine.size), dtype=mine.dtype)
    wait_all([comm.Iallgather(mine, every)], deadline_in(timeout), what)
    return every


def open_store(cfg: CECConfig, comm: MPI.Comm) -> StoreRun:
    """Steps 1-5 of the module docstring, on every rank; timed (:attr:`StoreRun.parts`)."""
    t0 = time.perf_counter()
    rank, host, N = comm.Get_rank(), socket.gethostname(), cfg.N
    hb = _scan(cfg, rank, host)
    scan_s = time.perf_counter() - t0
    mine = np.zeros(N + DIGEST + 64, dtype=np.uint8)
    if hb is not None and hb.manifest is not None:
        mine[[n - 1 for n in hb.held]] = 1
        mine[N:N + DIGEST] = np.frombuffer(hb.manifest.digest(), dtype=np.uint8)
    name = host.encode()[:64]
    mine[N + DIGEST: N + DIGEST + len(name)] = np.frombuffer(name, dtype=np.uint8)
    t1 = time.perf_counter()
    start_clock.mark("scanned")
    every = _gather(comm, mine, cfg.timeout_s, "every rank's stored blocks")
    arrive_s = time.perf_counter() - t1
    start_clock.mark("arrived")
    hosts = {r: bytes(row[N + DIGEST:]).rstrip(b"\0").decode(errors="replace")
             for r, row in enumerate(every)}
    if hb is not None and rank == min(r for r in hosts if r > 0 and hosts[r] == host):
        for p in hb.problems:  # once per host: its ranks share the directory
            warn(f"rank {rank} ({host}): {p}")
    root = _check_digests(every, N, hosts, cfg.store)
    first = assign([[int(n) + 1 for n in np.flatnonzero(row[:N])] for row in every])
    chk, machine = Check(), first.get(rank)
    if hb is not None and machine is not None:
        chk = check_block(hb, machine, use_marks=cfg.store_check == "mark")
        if chk.problem:
            warn(f"rank {rank} ({host}): {chk.problem}")
    facts = np.array([float(chk.problem is None), scan_s, chk.seconds, chk.read,
                      chk.read_bytes, len(chk.marked), arrive_s])
    oks = _gather(comm, facts, cfg.timeout_s, "every rank's block checks")
    layout = plan_repairs(first, {r: bool(oks[r, 0]) for r in first}, N, cfg.L)
    if len(layout.machine_of) < cfg.L or layout.unused:
        raise CannotGoOn(f"store {cfg.store}: {len(layout.rank_of)} machines have a block "
                         f"(machines {sorted(layout.rank_of)}), fewer than the L={cfg.L} "
                         "that decode (or repair) a step")
    identity = _identity(comm, root, hb, cfg.timeout_s)
    run = StoreRun(layout, identity, hosts, hb, layout.machine_of.get(rank), [],
                   [chk.problem] if chk.problem else [], chk)
    t2 = time.perf_counter()
    repair(run, cfg, comm, get_field(cfg.field))
    run.parts = _parts(oks, time.perf_counter() - t2)
    run.open_s = time.perf_counter() - t0
    start_clock.mark("opened")
    if (said := start_clock.line(rank, host)) is not None:
        print(said, file=sys.stderr, flush=True)
    return run


def _scan(cfg: CECConfig, rank: int, host: str) -> HostBlocks | None:
    """A machine rank's host directory scanned (step 1); None on the master."""
    if rank == 0:
        return None
    try:
        return scan(cfg.store, host, expect(cfg))
    except ConfigError as exc:
        raise CannotGoOn(f"store: {exc.rule}") from None


def _parts(facts: np.ndarray, repair_s: float) -> StoreOpening:
    """The setup line's ``store_parts`` from every rank's gathered facts (``[ok, scan_s,
    verify_s, blocks read, bytes read, blocks marked, arrive_s]``) and the repairs' wall
    time; ``arrive_s`` is the master's wait for every rank to reach the store and scan."""
    return StoreOpening(arrive_s=float(facts[0, 6]), scan_s=float(facts[:, 1].max()),
                        verify_s=float(facts[:, 2].max()), blocks_read=int(facts[:, 3].sum()),
                        read_bytes=int(facts[:, 4].sum()),
                        blocks_marked=int(facts[:, 5].sum()), repair_s=repair_s)


def _check_digests(every: np.ndarray, N: int, hosts: dict[int, str], store: str) -> int:
    """The lowest rank with a manifest; CannotGoOn when two hosts' manifests differ or no
    rank has one."""
    seen: dict[bytes, int] = {}
    for r, row in enumerate(every):
        d = bytes(row[N:N + DIGEST])
        if any(d):
            seen.setdefault(d, r)
    if not seen:
        raise CannotGoOn(f"store {store}: no rank found a usable manifest ({MANIFEST}) in "
                         "its host's store directory")
    if len(seen) > 1:
        a, b = sorted(seen.values())[:2]
        raise CannotGoOn(f"store {store}: the manifests of {hosts[a]} (rank {a}) and "
                         f"{hosts[b]} (rank {b}) belong to different stores")
    return min(seen.values())


def _identity(comm: MPI.Comm, root: int, hb: HostBlocks | None, timeout: float) -> Manifest:
    """The manifest's identity on every rank (broadcast from ``root``)."""
    text = b""
    if comm.Get_rank() == root:
        assert hb is not None and hb.manifest is not None
        text = json.dumps(hb.manifest.identity()).encode()
    size = np.array([len(text)], dtype=np.int64)
    wait_all([comm.Ibcast(size, root=root)], deadline_in(timeout), "the store's manifest")
    buf = np.frombuffer(text, dtype=np.uint8).copy() if text else \
        np.zeros(int(size[0]), dtype=np.uint8)
    wait_all([comm.Ibcast(buf, root=root)], deadline_in(timeout), "the store's manifest")
    return Manifest.from_dict({**json.loads(buf.tobytes()), "blocks": []})


def repair(run: StoreRun, cfg: CECConfig, comm: MPI.Comm, fld: Field) -> None:
    """Send this rank's blocks to the ranks it is a source of; rebuild this rank's block
    when it repairs one (S.3); every rank learns each repair's bytes and seconds."""
    rank, ident = comm.Get_rank(), run.identity
    kinds = (0, 1) if ident.transpose else (0,)
    reqs: list[MPI.Request] = []
    for rp in run.layout.repairs:
        for m, r in rp.sources:
            if r == rank and run.blocks is not None:
                for w in kinds:
                    blk = np.ascontiguousarray(open_block(run.blocks, m, w))
                    reqs.append(comm.Isend(blk, dest=rp.rank, tag=TAG_REPAIR + 10 * w))
    mine = [rp for rp in run.layout.repairs if rp.rank == rank]
    stats = np.zeros(2)
    if mine:
        stats = _rebuild(run, cfg, comm, fld, mine[0], kinds)
    wait_all(reqs, deadline_in(cfg.timeout_s), "blocks to reach the repairing ranks")
    every = _gather(comm, stats, cfg.timeout_s, "the repairs' statistics")
    for rp in run.layout.repairs:
        run.repairs.append({"machine": rp.machine, "rank": rp.rank,
                            "host": run.hosts.get(rp.rank, "?"),
                            "sources": [m for m, _ in rp.sources],
                            "bytes": int(every[rp.rank, 0]), "seconds": float(every[rp.rank, 1])})


def send_blocks(run: StoreRun | None, cfg: CECConfig, comm: MPI.Comm, n: int,
                rank: int) -> None:
    """A repair while the job runs (docs/theory.md A.10), as a source: machine ``n``'s
    block(s) straight to the repairing ``rank``."""
    assert run is not None and run.blocks is not None
    kinds = (0, 1) if run.identity.transpose else (0,)
    reqs = [comm.Isend(np.ascontiguousarray(open_block(run.blocks, n, w)), dest=rank,
                       tag=TAG_REPAIR + 10 * w) for w in kinds]
    wait_all(reqs, deadline_in(cfg.timeout_s), f"machine {n}'s block to reach rank {rank}")


def rebuild_block(run: StoreRun | None, cfg: CECConfig, comm: MPI.Comm, n: int, rank: int,
                  sources: list[tuple[int, int]]) -> np.ndarray:
    """A repair while the job runs, as the target: machine ``n``'s block rebuilt from the
    ``(machine, rank)`` ``sources`` on this ``rank``; ``[bytes, seconds]``."""
    assert run is not None
    kinds = (0, 1) if run.identity.transpose else (0,)
    rp = Repair(rank, n, tuple(sources))
    return _rebuild(run, cfg, comm, get_field(cfg.field), rp, kinds)


def _rebuild(run: StoreRun, cfg: CECConfig, comm: MPI.Comm, fld: Field, rp: Any,
             kinds: tuple[int, ...]) -> np.ndarray:
    """Receive the ``L`` source blocks, combine, write, check; ``[bytes, seconds]``."""
    ident, t0 = run.identity, time.perf_counter()
    g = np.asarray(ident.generator, dtype=fld.dtype)
    srcs = [m for m, _ in rp.sources]
    c = repair_coefficients(fld, g, rp.machine, srcs)
    d = Path(cfg.store.replace("{host}", socket.gethostname()))
    d.mkdir(parents=True, exist_ok=True)
    entries, nbytes = [], 0
    for w in kinds:
        shape = ident.block_shape(w)
        bufs = [np.empty(shape, dtype=fld.dtype) for _ in srcs]
        reqs = [comm.Irecv(b, source=r, tag=TAG_REPAIR + 10 * w)
                for b, (_, r) in zip(bufs, rp.sources)]
        wait_all(reqs, deadline_in(cfg.timeout_s),
                 f"the blocks of machines {srcs} to repair machine {rp.machine}")
        nbytes += sum(int(b.nbytes) for b in bufs)
        block = np.ascontiguousarray(combine(fld, c, bufs))
        f = BlockFile(d / block_name(rp.machine, w), shape, fld.dtype)
        f.write(block.data.cast("B"))
        entries.append(f.close().entry(rp.machine, w, block_name(rp.machine, w), shape))
    _list(d, ident, entries, fld)
    run.blocks = scan(cfg.store, socket.gethostname(), expect(cfg))
    bad = verify(run.blocks, rp.machine)
    if bad or rp.machine not in run.blocks.held:
        raise CannotGoOn(f"repaired machine {rp.machine}: {bad or 'not readable back'}")
    print(f"rank {comm.Get_rank()} ({socket.gethostname()}): repaired machine "
          f"{rp.machine}'s block from machines {srcs} ({nbytes} bytes in "
          f"{time.perf_counter() - t0:.3f} s)", flush=True)
    return np.array([float(nbytes), time.perf_counter() - t0])


def _list(d: Path, ident: Manifest, entries: list[BlockEntry], fld: Field) -> None:
    """List ``entries`` in ``d``'s manifest (created from ``ident`` when missing), under
    an exclusive lock.  Over GF a repaired block is the original, bit for bit: a checksum
    already listed must match (CannotGoOn if not); over float64 it differs by rounding and
    its own checksum replaces the old one."""
    with open(d / ".manifest.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = read_manifest(d) if (d / MANIFEST).is_file() else None
        if old is not None and old.digest() != ident.digest():
            old = None  # another store's manifest (refused at scan) or a torn one
        for e in entries:
            prev = old.entry(e.machine, e.which) if old is not None else None
            if fld.exact and prev is not None and prev.checksum != e.checksum:
                raise CannotGoOn(f"{d / e.file}: the repaired block's checksum {e.checksum} "
                                 f"differs from the manifest's {prev.checksum} (over "
                                 f"{fld.name} a repair is exact: the repair is wrong)")
        (old or ident).with_blocks(entries).write(d)



def store_line(open_s: float, p: StoreOpening) -> str:
    """The store's opening in one line (the setup line's ``store_open_s``, ``store_parts``)."""
    return (f"store opened in {open_s:.3f} s (every rank in {p.arrive_s:.3f} s, scan "
            f"{p.scan_s:.3f} s, {p.blocks_read} blocks read whole, {p.read_bytes} bytes, in "
            f"{p.verify_s:.3f} s; {p.blocks_marked} unchanged since checked, not read; "
            f"repairs {p.repair_s:.3f} s)")
