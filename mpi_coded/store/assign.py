"""Which rank is which machine, from the blocks each rank's host holds (pure).

A job started from a store may run on fewer ranks than ``N + 1`` (a relaunch on the hosts
left after one was lost) or on new hosts.  Every rank computes the same answer from the
same gathered facts, so no message says who is who:

1. :func:`assign`: ranks ``1, 2, ...`` in turn take the lowest machine whose block their
   host holds (and no earlier rank took); a rank left without one is *spare*.
2. :func:`plan_repairs`: once each assigned rank has read its block against its checksum,
   the ranks whose block failed, and the spare ranks (taking the machines no rank holds,
   lowest first), repair a block from ``L`` machines whose blocks passed
   (:mod:`mpi_coded.store.repair`); the sources of successive repairs rotate through those
   machines so that no one machine sends every block.  Machines left without a rank are
   *lost* for the run: the elastic job never plans them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


def assign(held: Sequence[Sequence[int]]) -> dict[int, int | None]:
    """Rank -> machine (None: spare) for ranks ``1..len(held) - 1``; ``held[r]`` lists the
    machines whose blocks rank ``r``'s host holds (``held[0]``, the master's, is unused)."""
    taken: set[int] = set()
    out: dict[int, int | None] = {}
    for r in range(1, len(held)):
        mine = sorted(n for n in held[r] if n not in taken)
        out[r] = mine[0] if mine else None
        if mine:
            taken.add(mine[0])
    return out


@dataclass(frozen=True)
class Repair:
    """Rank ``rank`` rebuilds machine ``machine``'s block from ``sources`` (machine, rank)."""

    rank: int
    machine: int
    sources: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class RankLayout:
    """The run's ranks and machines: who is which machine, who repairs, who is lost."""

    machine_of: dict[int, int]  # rank -> machine, every machine rank
    repairs: tuple[Repair, ...] = ()
    lost: tuple[int, ...] = ()
    unused: tuple[int, ...] = field(default=())  # ranks with nothing to do

    @property
    def rank_of(self) -> dict[int, int]:
        return {n: r for r, n in self.machine_of.items()}


def plan_repairs(first: Mapping[int, int | None], ok: Mapping[int, bool], N: int, L: int
                 ) -> RankLayout:
    """The layout once every assigned rank checked its block (module docstring, step 2);
    ``ok[r]``: rank ``r``'s block passed.  With fewer than ``L`` good blocks there are no
    repairs: the ranks that would repair are unused."""
    good = {n: r for r, n in first.items() if n is not None and ok.get(r, False)}
    held = set(good)
    free = [n for n in range(1, N + 1) if n not in held and
            n not in {m for m in first.values() if m is not None}]
    jobs: list[tuple[int, int]] = []
    for r, n in sorted(first.items()):
        if n is not None and not ok.get(r, False):
            jobs.append((r, n))  # its own block is bad: rebuilt in place
    for r, n in sorted(first.items()):
        if n is None and free:
            jobs.append((r, free.pop(0)))
    srcs = sorted(good)
    if len(srcs) < L:
        unused = tuple(r for r, _ in jobs) + tuple(r for r, n in first.items()
                                                    if n is None and r not in dict(jobs))
        return RankLayout(dict(sorted((r, n) for n, r in good.items())), (),
                      tuple(n for n in range(1, N + 1) if n not in held), tuple(sorted(unused)))
    repairs = []
    for i, (r, n) in enumerate(jobs):
        rot = [srcs[(i * L + j) % len(srcs)] for j in range(L)]
        repairs.append(Repair(r, n, tuple((m, good[m]) for m in sorted(rot))))
    machine_of = {**{r: n for n, r in good.items()}, **{rp.rank: rp.machine for rp in repairs}}
    unused = tuple(r for r in sorted(first) if r not in machine_of)
    lost = tuple(n for n in range(1, N + 1) if n not in machine_of.values())
    return RankLayout(dict(sorted(machine_of.items())), tuple(repairs), lost, unused)
