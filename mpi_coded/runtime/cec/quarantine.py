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
    """Between steps every answer is late (a cut-off machine's report): dropped (read
    first by :meth:`MachinePool.on_stale`)."""
    return h.kind in ANSWERS


def ask(cl: MachinePool, n: int, vstep: int, kind: P.Kind, reply: P.Kind,
        arr: np.ndarray | None = None, what: str = "") -> np.ndarray:
    """Send machine ``n`` one order and take its one reply (within the hard deadline)."""
    reqs = cl.links.send([n], kind, vstep, arr)
    got, _ = cl.links.collect([n], [reply], vstep, hard=cl.hard(), what=what,
                              stale=_stale, on_stale=cl.on_stale)
    wait_all(reqs, cl.hard(), f"{kind.name} to machine {n}")
    return payload(got[n][0])


def check_blocks(cl: MachinePool, who: list[int], vstep: int) -> dict[int, bool]:
    """CHECK to each of ``who`` at once (each reads its block whole, in parallel): whether
    each block is intact."""
    who = [n for n in who if n in cl.machines]
    reqs = cl.links.send(who, P.Kind.CHECK, vstep)
    got, _ = cl.links.collect(who, [P.Kind.CHECKED], vstep, hard=cl.hard(),
                              what="block checks", stale=_stale, on_stale=cl.on_stale)
    wait_all(reqs, cl.hard(), "CHECK to be delivered")
    return {n: bool(payload(got[n][0])[0]) for n in who if n in got}


def catch(cl: MachinePool, steps: Any, named: list[int], t: int, vstep: int,
          known: dict[int, bool] | None = None) -> list[dict[str, Any]]:
    """Machines ``named`` answered wrong in step ``t``: all quarantined first, their blocks
    checked at once (``known``: verdicts already had), the corrupt ones rebuilt; in a job
    from a store every other sound machine's block is checked first and only intact ones
    are sources (a second corrupt block is caught too, never combined into a repair).
    The step's quarantine events."""
    q = cl.quarantine
    for n in named:
        q.caught(n, t)
    events = [_event(cl, n, Q.CAUGHT) for n in named]
    alive = [n for n in named if n in cl.machines]
    t0 = time.perf_counter()
    verdicts = dict(known or {})
    verdicts.update(check_blocks(cl, [n for n in alive if n not in verdicts], vstep))
    sound: list[int] = []
    if cl.cfg.store and not all(verdicts.get(n, True) for n in alive):
        others = [m for m in cl.machines if m not in q.since and m not in q.lost
                  and m not in cl.links.joined]
        theirs = check_blocks(cl, others, vstep)
        sound = [m for m in others if theirs.get(m, False)]
        for m in [m for m in others if not theirs.get(m, True)]:  # corrupt, unnamed
            q.caught(m, t)
            events.append(_event(cl, m, Q.CAUGHT))
            alive.append(m)
            verdicts[m] = False
    check_s = time.perf_counter() - t0
    for n in alive:
        events.append(_verdict(cl, steps, n, t, vstep, verdicts.get(n, True), check_s, sound))
    return events


def _event(cl: MachinePool, n: int, event: str) -> dict[str, Any]:
    return {"machine": n, "host": cl.links.host.get(n, "?"), "event": event}


def _verdict(cl: MachinePool, steps: Any, n: int, t: int, vstep: int, good: bool,
             check_s: float, sound: list[int]) -> dict[str, Any]:
    """Machine ``n``'s block verdict as a quarantine event (rebuilt from ``sound`` when
    corrupt), with its one line."""
    q, host = cl.quarantine, cl.links.host.get(n, "?")
    entry = {**_event(cl, n, q.block_checked(n, good)), "check_s": check_s}
    if not good:
        t1 = time.perf_counter()
        entry["bytes"] = steps.rebuild_block(n, vstep, sound)
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
    return entry


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
