"""The master's side of a quarantine (:mod:`mpi_coded.cec.quarantine`, docs/theory.md A.10).

A machine caught answering wrong is asked to check its block (CHECK: the block read
whole against its checksum; CHECKED ``[1]`` intact, ``[0]`` corrupt).  A corrupt block is
rebuilt before the next step: sent again by a master that holds ``X`` (the block encoded
again, as for a machine that joins), or, in a job from a store, rebuilt from ``L`` peers
(REPAIR: each source sends its block straight to the machine, which combines them (S.3),
writes the block and its checksum to its disk and maps it again; REPAIRED with the bytes
and seconds).  Every wait has the job's hard deadline; the seconds are in the event.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpi_coded.cec import quarantine as Q
from mpi_coded.runtime.cec.cluster import MachinePool, payload, warn
from mpi_coded.runtime.core import wire as P
from mpi_coded.runtime.core.wait import wait_all

ANSWERS = (P.Kind.RESULT, P.Kind.META, P.Kind.PART)


def _stale(_r: int, h: P.Header) -> bool:
    """Between steps every answer is late (a cut-off machine's report): dropped."""
    return h.kind in ANSWERS


def ask(cl: MachinePool, n: int, vstep: int, kind: P.Kind, reply: P.Kind,
        arr: np.ndarray | None = None, what: str = "") -> np.ndarray:
    """Send machine ``n`` one order and take its one reply (within the hard deadline)."""
    reqs = cl.links.send([n], kind, vstep, arr)
    got, _ = cl.links.collect([n], [reply], vstep, hard=cl.hard(), what=what,
                              stale=_stale)
    wait_all(reqs, cl.hard(), f"{kind.name} to machine {n}")
    return payload(got[n][0])


def check_blocks(cl: MachinePool, who: list[int], vstep: int) -> dict[int, bool]:
    """CHECK to each of ``who`` at once (each reads its block whole, in parallel): whether
    each block is intact."""
    who = [n for n in who if n in cl.machines]
    reqs = cl.links.send(who, P.Kind.CHECK, vstep)
    got, _ = cl.links.collect(who, [P.Kind.CHECKED], vstep, hard=cl.hard(),
                              what="block checks", stale=_stale)
    wait_all(reqs, cl.hard(), "CHECK to be delivered")
    return {n: bool(payload(got[n][0])[0]) for n in who if n in got}


def catch(cl: MachinePool, steps: Any, n: int, t: int, vstep: int,
          good: bool | None = None) -> list[dict[str, Any]]:
    """Machine ``n`` answered wrong in step ``t``: quarantined, its block checked (unless
    ``good`` already says) and rebuilt when corrupt; the step's quarantine events."""
    q, host = cl.quarantine, cl.links.host.get(n, "?")
    q.caught(n, t)
    events = [{"machine": n, "host": host, "event": Q.CAUGHT}]
    if n not in cl.machines:  # died meanwhile
        return events
    t0 = time.perf_counter()
    if good is None:
        good = check_blocks(cl, [n], vstep).get(n, True)
    entry: dict[str, Any] = {"machine": n, "host": host, "event": q.block_checked(n, good),
                             "check_s": time.perf_counter() - t0}
    if not good:
        t1 = time.perf_counter()
        entry["bytes"] = steps.rebuild_block(n, vstep)
        entry["repair_s"] = time.perf_counter() - t1
        print(f"step {t}: machine {n} ({host}) answered wrong: its block was corrupt; "
              f"rebuilt ({entry['bytes']} bytes in {entry['repair_s']:.3f} s), quarantined "
              f"for {q.out_steps} steps", flush=True)
    elif entry["event"] == Q.LOST:
        warn(f"step {t}: machine {n} (rank {cl.links.link[n][1]}, {host}) answered wrong "
             f"again with an intact block (a mercurial machine): lost for the job")
    else:
        warn(f"step {t}: machine {n} ({host}) answered wrong with an intact block; "
             f"quarantined for {q.out_steps} steps, then on probation")
    events.append(entry)
    return events


def repair_from_peers(cl: MachinePool, n: int, vstep: int, sources: list[int],
                      rank_of: dict[int, int]) -> int:
    """Machine ``n``'s block rebuilt from the blocks of ``sources`` (``L`` machines) sent
    straight to it (module docstring); the bytes it received."""
    target = rank_of[n]
    reqs = []
    for m in sources:
        reqs += cl.links.send([m], P.Kind.REPAIR, vstep,
                              np.array([0, n, target], dtype=np.int64))
    pairs = [x for m in sources for x in (m, rank_of[m])]
    stats = ask(cl, n, vstep, P.Kind.REPAIR, P.Kind.REPAIRED,
                np.array([1, n, target, *pairs], dtype=np.int64),
                what=f"machine {n}'s block rebuilt from machines {sources}")
    wait_all(reqs, cl.hard(), "REPAIR orders to be delivered")
    return int(stats[0])
