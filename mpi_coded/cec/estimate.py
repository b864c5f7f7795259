"""Speed estimation for ``speeds = "auto"``: relative speeds from measured step times.

Each step the master learns, for every machine that computed, the rows it
computed and the seconds its compute took; their ratio is a noisy sample of
that machine's seconds per row ``tau``.  The estimator keeps one running
estimate per machine and hands the planner (docs/theory.md A.3-A.5) relative
speeds ``s[n] ~ 1 / tau[n]`` as small exact fractions.

Choices, and why:

* **Log domain.**  Samples are combined as ``log tau``: noise on a shared
  machine is multiplicative (a co-tenant stretches a step by a factor), and a
  5x slowdown and a 5x speed-up are then followed equally fast.
* **Default ``kind = "ewma"``, ``alpha = 0.5``.**  A step on a shared machine is
  noisy, but a machine whose speed drifts must be followed within 2-3 steps,
  or the drifted machine becomes every step's straggler.  After a jump by a
  factor ``F`` the EWMA is off by ``F ** ((1 - alpha) ** k)`` after ``k``
  samples: for ``F = 5``, ``alpha = 0.5`` that is 2.24x, 1.50x, 1.22x after 1, 2,
  3 samples.  A single outlier moves it by ``outlier ** alpha`` for one step and
  decays geometrically.
* **``kind = "median"``** (windowed median of the last ``window`` samples)
  ignores any single outlier entirely, but lags a drift by about half the
  window (3 samples for ``window = 5``) and then jumps: use it when steps are
  very noisy and speeds stable.
* **Normalisation: the fastest machine has speed 1**, every other speed is in
  ``[1/max_denominator, 1]`` and is ``Fraction(x).limit_denominator(...)``, so
  the planner's exact arithmetic stays on small denominators.  Only ratios of
  speeds matter to the plan; absolute seconds per row are in
  :meth:`SpeedEstimator.seconds_per_row`.
* **Machines never observed** get the geometric mean of the observed ones'
  ``tau`` (a preempted machine returns at a typical speed); before any
  observation every machine has speed 1, so the first step uses equal speeds.

Relevant papers: Yang, Pedarsani, Avestimehr, "Coded Elastic Computing";
Woolsey, Chen, Ji, "Coded Elastic Computing on Machines with Heterogeneous
Storage and Computation Speed" (which assumes the speeds are known).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from fractions import Fraction

from mpi_coded.errors import require

ESTIMATORS = ("ewma", "median")
DEFAULT_ESTIMATOR = "ewma"
DEFAULT_ALPHA = 0.5
DEFAULT_WINDOW = 5
MAX_DENOMINATOR = 1000


def validate_estimator(kind: object, key: str = "estimator") -> str:
    """``kind`` if it names an estimator, else :class:`ConfigError` naming ``key``."""
    require(isinstance(kind, str) and kind in ESTIMATORS, key,
            f"must be one of {', '.join(ESTIMATORS)}", kind)
    assert isinstance(kind, str)
    return kind


def validate_alpha(alpha: object, key: str = "estimator_alpha") -> float:
    """The EWMA weight of the newest sample, in ``(0, 1]``."""
    ok = isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha <= 1
    require(ok, key, "must be a number in (0, 1]", alpha)
    assert isinstance(alpha, (int, float))
    return float(alpha)


def validate_window(window: object, key: str = "estimator_window") -> int:
    """The median's window, an integer ``>= 1``."""
    ok = isinstance(window, int) and not isinstance(window, bool) and window >= 1
    require(ok, key, "must be an integer >= 1", window)
    assert isinstance(window, int)
    return window


class SpeedEstimator:
    """Running per-machine estimates of seconds per row; relative speeds on demand."""

    def __init__(self, machines: Sequence[int], kind: str = DEFAULT_ESTIMATOR,
                 alpha: float = DEFAULT_ALPHA, window: int = DEFAULT_WINDOW,
                 max_denominator: int = MAX_DENOMINATOR) -> None:
        require(len(machines) >= 1, "machines", "at least one machine is needed", len(machines))
        require(len(set(machines)) == len(machines), "machines", "ids must be distinct",
                list(machines))
        require(max_denominator >= 1, "max_denominator", "must be >= 1", max_denominator)
        self.kind = validate_estimator(kind)
        self.alpha = validate_alpha(alpha)
        self.window = validate_window(window)
        self.max_denominator = max_denominator
        self.machines = tuple(machines)
        self._log_tau: dict[int, float] = {}  # ewma state
        self._samples: dict[int, deque[float]] = {n: deque(maxlen=self.window)
                                                  for n in self.machines}
        self.observations = {n: 0 for n in self.machines}

    def observe(self, machine: int, rows: int, seconds: float) -> bool:
        """Record that ``machine`` computed ``rows`` rows in ``seconds`` seconds.

        Returns whether the sample was used: ``rows == 0`` or ``seconds == 0``
        (nothing computed, or below the clock's resolution) carries no
        information and is skipped.
        """
        require(machine in self._samples, "machine", "unknown machine id", machine)
        require(rows >= 0, "rows", "must be >= 0", rows)
        require(math.isfinite(seconds) and seconds >= 0, "seconds", "must be finite and >= 0",
                seconds)
        if rows == 0 or seconds == 0:
            return False
        x = math.log(seconds / rows)
        self._samples[machine].append(x)
        prev = self._log_tau.get(machine)
        self._log_tau[machine] = x if prev is None else prev + self.alpha * (x - prev)
        self.observations[machine] += 1
        return True

    def _estimate(self, machine: int) -> float | None:
        """``log tau`` of ``machine``, or None if never observed."""
        if self.observations[machine] == 0:
            return None
        if self.kind == "median":
            return float(statistics.median(self._samples[machine]))
        return self._log_tau[machine]

    def seconds_per_row(self) -> dict[int, float]:
        """Estimated seconds per row of every machine (unobserved: geometric mean; none: 1.0)."""
        est = {n: self._estimate(n) for n in self.machines}
        seen = [v for v in est.values() if v is not None]
        fill = statistics.fmean(seen) if seen else 0.0
        return {n: math.exp(fill if v is None else v) for n, v in est.items()}

    def speeds(self) -> dict[int, Fraction]:
        """Relative speeds, fastest = 1, each a Fraction in ``[1/max_denominator, 1]``."""
        tau = self.seconds_per_row()
        fastest = min(tau.values())
        floor = Fraction(1, self.max_denominator)
        return {n: max(floor, Fraction(fastest / t).limit_denominator(self.max_denominator))
                for n, t in tau.items()}


def step_time(loads: Mapping[int, Fraction | int], speeds: Mapping[int, Fraction]) -> Fraction:
    """``max_n load[n] / speed[n]`` over machines with a positive load.

    With the estimated plan's loads and the *true* speeds this is the time the
    estimated plan really takes; compare it with the oracle plan's time
    (docs/theory.md A.3) to report the price of estimation.  Units are those of
    ``loads`` (blocks or rows) at speed 1.
    """
    busy = [n for n, k in loads.items() if k > 0]
    for n in busy:
        require(n in speeds, "speeds", f"machine {n} has a load but no speed", n)
        require(speeds[n] > 0, "speeds", f"speed of machine {n} must be > 0", str(speeds[n]))
    return max((Fraction(loads[n]) / Fraction(speeds[n]) for n in busy), default=Fraction(0))
