"""An elastic policy from outside the package: speed-proportional loads, floor-rounded.

This is the assignment of the public EC2 implementation of heterogeneous coded elastic
computing, written as a plugin: every available machine ``n`` gets a share of the
``L + S`` copies of the block's ``R`` rows proportional to its speed ``s_n``,

    x_n = (L + S) * R * s_n / sum_{m available} s_m,

capped at ``R`` (a machine computes a row once; the excess of a capped machine is shared
out again in proportion to the others' speeds, until no share exceeds ``R``).  In
fractions of a block (``rows`` not given) these are the optimal loads of Woolsey, Chen and
Ji (docs/theory.md (A.3)).  In rows, each share is rounded *down*, ``k_n = floor(x_n)``,
and the fewer than ``|available|`` rows the floors leave out go one each to the fastest
machines (descending speed, then id) that are below ``R``.  The package's
``heterogeneous`` policy instead rounds the optimal load to the integer loads that
minimise the step time ``max_n k_n / s_n`` (A.5).  The row sets come from the filling
algorithm (A.4) in both, so the only difference is what the rounding costs: compare the
``time`` of the two plans (``python examples/proportional_floor.py``) or run both::

    mpiexec -n 7 mpi-coded --plugin examples/proportional_floor.py run cec \\
        --policy proportional-floor --out results/floor.jsonl
    mpiexec -n 7 mpi-coded run cec --out results/floor.jsonl
    mpi-coded --plugin examples/proportional_floor.py report results/floor.jsonl

This file touches nothing inside ``mpi_coded/``: the hook ``mpi_coded_register`` is all
the package needs (docs/architecture.md, "Plugins").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from mpi_coded.plugin import (
    Assignment,
    ElasticPolicy,
    Registrar,
    StepPlan,
    filled_sets,
    registered,
)


def proportional_shares(speeds: Mapping[int, Fraction], copies: int, cap: Fraction
                        ) -> dict[int, Fraction]:
    """``x_n``: ``copies * cap`` shared in proportion to ``speeds``, each share at most
    ``cap`` (the excess of capped machines shared out again among the others)."""
    shares: dict[int, Fraction] = {}
    free = dict(speeds)
    left = copies * cap
    while free:
        total = sum(free.values())
        over = [n for n, s in free.items() if left * s / total > cap]
        if not over:
            shares.update({n: left * s / total for n, s in free.items()})
            break
        for n in over:
            shares[n] = cap
            left -= cap
            del free[n]
    return shares


def floor_rows(speeds: Mapping[int, Fraction], copies: int, rows: int) -> dict[int, int]:
    """``k_n = floor(x_n)`` rows, the rows the floors leave out given one each to the
    fastest machines below ``rows``."""
    shares = proportional_shares(speeds, copies, Fraction(rows))
    k = {n: math.floor(x) for n, x in shares.items()}
    missing = copies * rows - sum(k.values())
    for n in sorted(speeds, key=lambda n: (-speeds[n], n)):
        if missing == 0:
            break
        if k[n] < rows:
            k[n] += 1
            missing -= 1
    return k


@dataclass(frozen=True, eq=False)
class ProportionalFloor(ElasticPolicy):
    """Speed-proportional loads, floor-rounded in rows; the filling algorithm's sets."""

    def assign(self, speeds: Mapping[int, Fraction], lp: int, available: tuple[int, ...],
               rows: int | None, prev: StepPlan | None) -> Assignment:
        if rows is not None:
            num: Mapping[int, int] = floor_rows(speeds, lp, rows)
            return Assignment(num, rows, filled_sets(num, lp, rows, rows))
        shares = proportional_shares(speeds, lp, Fraction(1))
        denom = math.lcm(*(x.denominator for x in shares.values()))
        num = {n: int(x * denom) for n, x in shares.items()}
        return Assignment(num, denom, filled_sets(num, lp, denom, None))


POLICY = ProportionalFloor(
    "proportional-floor",
    "speed-proportional loads, floor-rounded in rows (the public EC2 implementation)")


def mpi_coded_register(registry: Registrar) -> None:
    """The plugin hook: register the policy."""
    registry.policy(POLICY)


def main() -> None:
    """What the floor rounding costs: the two policies' step times on the worked example's
    steps and on random speeds, in rows of a block."""
    import random

    optimal = registered("policy", "heterogeneous")
    assert isinstance(optimal, ElasticPolicy)
    speeds = {1: Fraction(1), 2: Fraction(1), 3: Fraction(3, 2), 4: Fraction(3, 2),
              5: Fraction(2), 6: Fraction(2)}
    print(f"{'case':<36} {'rows':>5} {'optimal':>10} {'floor':>10} {'floor/opt':>9}")
    rng = random.Random(0)
    cases: list[tuple[str, dict[int, Fraction], tuple[int, ...]]] = [
        (f"worked example {list(a)}", speeds, a) for a in
             ((1, 2, 3, 4, 5, 6), (1, 2, 3, 5, 6), (1, 2, 3, 5), (2, 3, 5))]
    for i in range(4):
        sp = {n: Fraction(rng.randint(2, 40), 10) for n in range(1, 11)}
        cases.append((f"random speeds #{i} (N=10)", sp, tuple(range(1, 11))))
    for name, sp, avail in cases:
        for rows in (20, 420):
            opt = optimal.plan(sp, 3, avail, rows=rows).time
            flo = POLICY.plan(sp, 3, avail, rows=rows).time
            print(f"{name:<36} {rows:>5} {float(opt):>10.5f} {float(flo):>10.5f} "
                  f"{float(flo / opt):>9.4f}")


if __name__ == "__main__":
    main()
