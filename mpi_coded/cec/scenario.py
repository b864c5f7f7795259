"""The machines' true speeds at each step: configured speeds, faults, random stragglers.

What the throttles really run at (docs/theory.md A.2: a row at speed ``s``
takes ``t_row / s`` seconds) is a pure function of the config, the injected
faults and the step, computed identically by every rank:

* the configured speeds (``speeds``, or ``true_speeds`` when ``speeds = "auto"``);
* divided by the ``slow:RANK:FACTOR`` faults (for the whole job);
* multiplied by the ``drift:RANK:STEP:FACTOR`` faults from their step on;
* divided by ``straggler_factor`` for the ``stragglers`` machines drawn (seeded,
  per step) among the step's available machines.

A machine applies its own true speed to its throttle; the master uses them only
to *report* what a plan with known speeds would have taken (the oracle), never
to plan when ``speeds = "auto"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from mpi_coded.cec.config import CECConfig
from mpi_coded.faults import Fault, drift_factor, slow_factor


def stragglers_at(cfg: CECConfig, step: int, available: Sequence[int]) -> tuple[int, ...]:
    """The machines slowed by ``straggler_factor`` at ``step`` (seeded, among ``available``)."""
    k = min(cfg.stragglers, len(available))
    if k == 0:
        return ()
    rng = np.random.default_rng([cfg.seed, 5, step])
    pick = rng.choice(sorted(available), size=k, replace=False)
    return tuple(sorted(int(x) for x in pick))


def true_speeds(cfg: CECConfig, faults: Sequence[Fault], step: int,
                available: Sequence[int]) -> dict[int, Fraction]:
    """Every machine's real throttle speed at ``step`` (exact where the inputs are)."""
    slowed = set(stragglers_at(cfg, step, available))
    return {n: _speed(cfg, faults, step, n, n in slowed) for n in cfg.speed_map}


def true_speed(cfg: CECConfig, faults: Sequence[Fault], step: int, available: Sequence[int],
               machine: int) -> Fraction:
    """Machine ``machine``'s real throttle speed at ``step`` (:func:`true_speeds` of one)."""
    return _speed(cfg, faults, step, machine, machine in stragglers_at(cfg, step, available))


def _speed(cfg: CECConfig, faults: Sequence[Fault], step: int, n: int, slowed: bool
           ) -> Fraction:
    v = Fraction(cfg.speed_map[n]) / Fraction(slow_factor(faults, n)) \
        * Fraction(drift_factor(faults, n, step))
    return v / Fraction(cfg.straggler_factor) if slowed else v
