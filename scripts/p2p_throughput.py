"""Raw MPI point-to-point throughput on the shuffle's own traffic (run under mpiexec).

Builds the shuffle plan of a coded job for the finishing order ``0, 1, .., K-1``
and moves exactly its messages (every multicast once per receiver, every
unicast; header and payload, the same sizes and the same sender/receiver
pairs) with nonblocking Isend/Irecv posted up front and the runtime's polite
waiting, but without computing anything: what the network and MPI alone can
do.  Repeated ``--reps`` times after a barrier; rank 0 prints one JSON object
with the bytes moved (payloads) over the slowest rank's wall time.

    mpiexec -n 10 python scripts/p2p_throughput.py --scheme unified --K 9 --q 6 --mu 1/3 \\
        --rows-per-batch 30 --n 720 --N 720 --field gf2^16
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from mpi4py import MPI

from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement, rank_of
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.fields import get_field
from mpi_coded.runtime.core.wait import deadline_in, wait_all
from mpi_coded.runtime.core.wire import HEADER_WORDS, TAG_HEADER, TAG_PAYLOAD


def one_message(nbytes: int) -> None:
    """Rank 0 -> rank 1, ``nbytes``; rank 0 prints the round trip (see the module doc)."""
    import socket

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    hosts = comm.gather(socket.gethostname(), root=0)
    small, ack = np.zeros(1024, dtype=np.uint8), np.zeros(1, dtype=np.uint8)
    buf = np.ones(nbytes, dtype=np.uint8) if rank == 0 else np.zeros(nbytes, dtype=np.uint8)
    if rank == 0:  # warm-up: connections up before the clock starts
        wait_all([comm.Isend(small, dest=1, tag=1)], deadline_in(60), "warm-up")
        wait_all([comm.Irecv(ack, source=1, tag=2)], deadline_in(60), "warm-up ack")
        t0 = time.perf_counter()
        wait_all([comm.Isend(buf, dest=1, tag=3)], deadline_in(300), "the message", True)
        wait_all([comm.Irecv(ack, source=1, tag=4)], deadline_in(300), "the ack", True)
        wall = time.perf_counter() - t0
        print(json.dumps({"bytes": nbytes, "wall_s": wall, "hosts": hosts}))
    elif rank == 1:
        wait_all([comm.Irecv(small, source=0, tag=1)], deadline_in(60), "warm-up")
        wait_all([comm.Isend(ack, dest=0, tag=2)], deadline_in(60), "warm-up ack")
        wait_all([comm.Irecv(buf, source=0, tag=3)], deadline_in(300), "the message", True)
        assert int(buf.min()) == 1, "the message arrived corrupted"
        wait_all([comm.Isend(ack, dest=0, tag=4)], deadline_in(300), "the ack", True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=None,
                    help="time one message of this size from rank 0 to rank 1 instead")
    for k in ("scheme", "mu", "field"):
        ap.add_argument(f"--{k}")
    for k in ("K", "q", "rows-per-batch", "n", "N"):
        ap.add_argument(f"--{k}", type=int)
    ap.add_argument("--T", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if a.bytes is not None:
        one_message(a.bytes)
        return
    missing = [k for k in ("scheme", "mu", "field", "K", "q", "rows_per_batch", "n", "N")
               if getattr(a, k) is None]
    if missing:
        ap.error(f"missing --{', --'.join(m.replace('_', '-') for m in missing)} "
                 "(or give --bytes)")
    p = coded_params(scheme=a.scheme, K=a.K, q=a.q, mu=a.mu, rows_per_batch=a.rows_per_batch,
                     n=a.n, N=a.N, T=a.T, field=a.field)
    field = get_field(p.field_name)
    pl = build_placement(p)
    plan = shuffle_plan(pl, map_end(pl, list(range(p.K))))
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    sends, recvs = [], []
    for mc in plan.multicasts:
        for k in mc.receivers:
            if rank_of(mc.sender) == rank:
                sends.append((rank_of(k), mc.length))
            if rank_of(k) == rank:
                recvs.append((rank_of(mc.sender), mc.length))
    for u in plan.unicasts:
        if rank_of(u.sender) == rank:
            sends.append((rank_of(u.receiver), u.size))
        if rank_of(u.receiver) == rank:
            recvs.append((rank_of(u.sender), u.size))
    head = np.zeros(HEADER_WORDS, dtype=np.int64)
    out_bufs = [field.zeros(n) for _, n in sends]
    in_bufs = [(np.zeros(HEADER_WORDS, dtype=np.int64), field.zeros(n)) for _, n in recvs]
    wait_all([comm.Ibarrier()], deadline_in(60), "barrier")
    moved = 0
    t0 = time.perf_counter()
    for _ in range(a.reps):
        reqs = []
        for (src, _), (hb, pb) in zip(recvs, in_bufs):
            reqs += [comm.Irecv(hb, source=src, tag=TAG_HEADER),
                     comm.Irecv(pb, source=src, tag=TAG_PAYLOAD)]
        for (dst, _), buf in zip(sends, out_bufs):
            reqs += [comm.Isend(head, dest=dst, tag=TAG_HEADER),
                     comm.Isend(buf, dest=dst, tag=TAG_PAYLOAD)]
            moved += int(buf.nbytes)
        wait_all(reqs, deadline_in(120), "p2p exchange")
        wait_all([comm.Ibarrier()], deadline_in(60), "barrier")
    wall = time.perf_counter() - t0
    walls = comm.gather(wall, root=0)
    total = comm.gather(moved, root=0)
    if rank == 0:
        assert walls is not None and total is not None
        slow = max(walls[1:])
        print(json.dumps({"messages": sum(len(mc.receivers) for mc in plan.multicasts) +
                          len(plan.unicasts), "bytes_moved": sum(total), "wall_s": slow,
                          "throughput_Bps": sum(total) / slow, "reps": a.reps}))


if __name__ == "__main__":
    main()
