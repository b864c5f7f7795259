"""The link calibration's MPI program (``scripts/bench_network.py``, docs/theory.md (B.7)):
run under ``mpiexec`` on an emulated cluster, one rank per host.

    python -m mpi_coded.runtime.linkcal --sizes 1048576,4194304 --reps 3 [--exchange BYTES]

:func:`stream`: rank 0 sends rank 1 one message of each size, ``reps`` times (plus a
warm-up), rank 1 answering each with 1 byte; then a burst of :data:`BURST` header-sized
messages (``alpha``, seconds per message).  :func:`exchange`: every rank but 0 (the
master's host, idle as in the shuffle) sends ``BYTES`` to every other such rank, split
evenly, and receives as much, all at once (the uncoded shuffle's pattern).  Rank 0 prints
one JSON object per part (``{"walls", "hosts"}`` and ``{"exchange_walls", "bytes",
"hosts"}``).
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from mpi4py import MPI

BURST = 200
"""Header-sized messages of the calibration's burst (``alpha``: seconds per message)."""


def _round_trips(comm: Any, size: int, reps: int) -> list[float]:
    """``reps`` round trips (after a warm-up) of one ``size``-byte message and a 1-byte
    answer between ranks 0 and 1; rank 0's walls."""
    rank = comm.Get_rank()
    ack = np.zeros(1, dtype=np.uint8)
    buf = np.ones(size, dtype=np.uint8) if rank == 0 else np.zeros(size, dtype=np.uint8)
    walls = []
    for _ in range(reps + 1):
        comm.Barrier()
        if rank == 0:
            t0 = time.perf_counter()
            comm.Send(buf, dest=1, tag=3)
            comm.Recv(ack, source=1, tag=4)
            walls.append(time.perf_counter() - t0)
        elif rank == 1:
            comm.Recv(buf, source=0, tag=3)
            assert int(buf.min()) == 1, "the message arrived corrupted"
            comm.Send(ack, dest=0, tag=4)
    return walls[1:]


def _burst(comm: Any, reps: int) -> list[float]:
    """Seconds per message of :data:`BURST` header-sized messages sent back to back."""
    rank = comm.Get_rank()
    ack = np.zeros(1, dtype=np.uint8)
    small = [np.ones(64, dtype=np.uint8) for _ in range(BURST)]
    bursts = []
    for _ in range(reps + 1):
        comm.Barrier()
        if rank == 0:
            t0 = time.perf_counter()
            MPI.Request.Waitall([comm.Isend(b, dest=1, tag=5) for b in small])
            comm.Recv(ack, source=1, tag=6)
            bursts.append((time.perf_counter() - t0) / BURST)
        elif rank == 1:
            MPI.Request.Waitall([comm.Irecv(b, source=0, tag=5) for b in small])
            comm.Send(ack, dest=0, tag=6)
    return bursts[1:]


def stream(sizes: Sequence[int], reps: int) -> None:
    """One stream between ranks 0 and 1 at each size, then the burst (module docstring)."""
    comm = MPI.COMM_WORLD
    hosts = comm.gather(socket.gethostname(), root=0)
    out = {str(size): _round_trips(comm, size, reps) for size in sizes}
    out["burst64"] = _burst(comm, reps)
    if comm.Get_rank() == 0:
        print(json.dumps({"walls": out, "hosts": hosts}), flush=True)


def exchange(nbytes: int, reps: int) -> None:
    """Every rank but 0 sends ``nbytes`` to the others at once (module docstring); rank 0
    prints the slowest rank's seconds per round."""
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    peers = [r for r in range(1, size) if r != rank]
    each = max(1, nbytes // max(1, len(peers)))
    outs = [np.ones(each, dtype=np.uint8) for _ in peers]
    ins = [np.zeros(each, dtype=np.uint8) for _ in peers]
    walls = []
    for _ in range(reps + 1):
        comm.Barrier()
        t0 = time.perf_counter()
        if rank > 0:
            reqs = [comm.Irecv(b, source=p, tag=7) for p, b in zip(peers, ins)]
            reqs += [comm.Isend(b, dest=p, tag=7) for p, b in zip(peers, outs)]
            MPI.Request.Waitall(reqs)
            assert all(int(b.min()) == 1 for b in ins), "a message arrived corrupted"
        w = comm.gather(time.perf_counter() - t0, root=0)
        if rank == 0:
            assert w is not None
            walls.append(max(w[1:]))
    if rank == 0:
        print(json.dumps({"exchange_walls": walls[1:], "bytes": each * len(peers),
                          "hosts": size - 1}), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--exchange", type=int, default=None, metavar="BYTES")
    a = ap.parse_args(argv)
    stream([int(x) for x in a.sizes.split(",")], a.reps)
    if a.exchange is not None:
        exchange(a.exchange, max(2, a.reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
