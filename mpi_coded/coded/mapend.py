"""When the map phase ends (docs/theory.md (B.2), step 2).

The map phase waits for the first ``q_eff`` finishers (``q``; all ``K`` for uc
and cmr): they form ``Q`` in finishing order and are the reducers.  Then, while
some partition ``t`` has fewer than ``k`` (``m/T`` for bdc) coded rows in the
batches held by the finishers, the next finisher joins as an *extra* server: it
sends unicasts but does not reduce.  Among the MDS schemes only bdc can need
extras: any ``q`` servers hold ``>= m`` rows of the dense code and ``q`` rows
of each sc stripe.

The rule is the scheme's (:meth:`Scheme.covered
<mpi_coded.coded.schemes.base.Scheme.covered>`, :func:`partitions_covered` for
the MDS schemes).  lt (docs/theory.md (B.5)): "the finishers' stored rows
together decode" (an exact rank test of the seeded LT code,
:func:`mpi_coded.coded.schemes.lt.finishers_decode`, cached per set of
finishers since the master polls it) instead of a row count, so lt needs extras
when the first ``q`` finishers' rows fall short of ``m`` plus the LT overhead
(always likely when ``mu q = 1``: they hold exactly ``m`` rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mpi_coded.coded.placement import Placement
from mpi_coded.errors import require


@dataclass(frozen=True)
class MapEnd:
    """``Q`` (reducers, finishing order) and the extra finishers needed by bdc."""

    Q: tuple[int, ...]
    extra: tuple[int, ...] = ()
    unicast_rows: tuple[int, ...] = ()
    """Rows each reducer of ``Q`` receives by unicast, when the scheme finds that number by
    a search (lt): the master searches once (:func:`mpi_coded.coded.shuffle.settled_end`)
    and ``MAP_END`` carries the counts, so the finishers derive the same plan without
    repeating it.  Empty: every deriver counts for itself (the default)."""

    @property
    def finishers(self) -> tuple[int, ...]:
        """Everyone whose map results are used: ``Q`` then ``extra``."""
        return self.Q + self.extra


def _check_order(placement: Placement, order: Sequence[int]) -> tuple[int, ...]:
    K = placement.K
    out = tuple(int(s) for s in order)
    require(all(0 <= s < K for s in out), "order", f"servers must be in 0..{K - 1}", list(out))
    require(len(set(out)) == len(out), "order", "servers must be distinct", list(out))
    return out


def partitions_covered(placement: Placement, finished: Sequence[int]) -> bool:
    """Whether the batches of ``finished`` hold ``>= k`` rows of every partition."""
    batches = {b for s in finished for b in placement.server_batches[s]}
    counts = placement.partition_counts(batches)
    return bool(np.all(counts >= placement.layout.k))


def covered(placement: Placement, finished: Sequence[int]) -> bool:
    """Whether the map results of ``finished`` suffice to decode (the scheme's rule:
    ``>= k`` rows of every partition; lt: their rows decode)."""
    return placement.params.spec.covered(placement, finished)


def map_phase_done(placement: Placement, finished: Sequence[int]) -> bool:
    """Whether the map phase can end once ``finished`` (in order) have finished."""
    fin = _check_order(placement, finished)
    return len(fin) >= placement.params.wait_for and covered(placement, fin)


def map_end(placement: Placement, order: Sequence[int]) -> MapEnd:
    """``(Q, extra)`` for the finishing order ``order`` (a prefix of it is enough):
    ``Q`` the first ``q_eff``, ``extra`` the further finishers up to the first
    prefix that :func:`covered` accepts.

    Raises ConfigError if ``order`` is too short to end the map phase.
    """
    fin = _check_order(placement, order)
    q = placement.params.wait_for
    require(len(fin) >= q, "order", f"needs at least {q} finishers", list(fin))
    used = q
    while not covered(placement, fin[:used]):
        require(used < len(fin), "order",
                "the finishers do not hold enough rows of every partition"
                + placement.params.spec.cover_rule,
                list(fin))
        used += 1
    return MapEnd(Q=fin[:q], extra=fin[q:used])
