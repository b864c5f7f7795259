"""Raw MPI point-to-point throughput among the server ranks (run under mpiexec).

Every server rank (1..K) sends one message of ``--bytes`` bytes to every other
server rank and receives one from each, with nonblocking Isend/Irecv and the
same polite waiting the runtime uses, ``--reps`` times after a barrier.  Rank 0
(the master, idle here as in the shuffle) prints one JSON object: total bytes
moved over the slowest rank's wall time.

    mpiexec -n 10 python scripts/p2p_throughput.py --bytes 65536 --reps 20
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from mpi4py import MPI

from mpi_coded.runtime.wait import deadline_in, wait_all


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=65536)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    peers = [r for r in range(1, size) if r != rank]
    buf = np.ones(args.bytes, dtype=np.uint8)
    inbox = {r: np.empty(args.bytes, dtype=np.uint8) for r in peers}
    moved = 0
    req = comm.Ibarrier()
    wait_all([req], deadline_in(60), "barrier")
    t0 = time.perf_counter()
    if rank > 0:
        for _ in range(args.reps):
            reqs = [comm.Irecv(inbox[r], source=r, tag=7) for r in peers]
            reqs += [comm.Isend(buf, dest=r, tag=7) for r in peers]
            wait_all(reqs, deadline_in(120), "p2p exchange")
            moved += args.bytes * len(peers)
    wall = time.perf_counter() - t0
    walls = comm.gather(wall, root=0)
    total = comm.gather(moved, root=0)
    if rank == 0:
        slow = max(walls[1:])
        print(json.dumps({"bytes_per_message": args.bytes, "ranks": size - 1,
                          "bytes_moved": sum(total), "wall_s": slow,
                          "throughput_Bps": sum(total) / slow}))


if __name__ == "__main__":
    main()
