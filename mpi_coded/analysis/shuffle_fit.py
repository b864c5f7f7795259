"""The shuffle's network term fitted on training runs of the coded job (docs/theory.md (B.8)).

:func:`~mpi_coded.analysis.network.phase_seconds` prices a phase with the link constants
measured by microbenchmarks (a stream between two hosts, an all-to-all exchange): the
achieved fraction ``e`` of a host's rate, the per-message cost ``alpha`` and the shared
``fabric``.  The coded job's shuffle runs slower than those: its servers also pack the
coded sums, decode what arrives, answer the master, and the ranks share the machine's cores
with the links' own processing.  As :mod:`mpi_coded.analysis.calibration.fitted` does for
the compute, this keeps the *work* the model counts (every host's bytes and messages under
the plan the runtime executes) and fits three parameters and one measured constant on a
few short training runs of the job itself, then checks them on held-out schemes and modes:

    T_shuffle = o + max( s_host max_h t_h,  s_fabric 8 B / fabric ) + beta n_max

* ``t_h`` and ``8 B / fabric``: the two terms of (B.7) on the calibrated network;
  ``n_max``: the most payload copies one host sends or receives in the plan
  (:attr:`~mpi_coded.analysis.network.HostTraffic.sent_copies`: a point-to-point
  message's header and payload are one copy, one edge of a broadcast tree is one);
* ``s_fabric`` and ``beta`` (seconds per message, >= 0): least squares over the
  fabric-limited training cases (those whose fabric term is the larger) of their measured
  transfer against ``(8 B / fabric, n_max)``, identified when two of them differ in
  messages per byte (uc's few large unicasts, cmr's many small multicasts); with one such
  case, or a negative ``beta``, ``beta = 0`` and ``s_fabric`` is the median ratio;
* ``s_host``: the median over the host-limited cases of (transfer - ``beta n_max``) over
  ``max_h t_h``; a kind without a training case takes the other's multiplier;
* ``o``: the median over the training cases of the master-observed shuffle minus its
  slowest server's own transfer (the plan, the packing, the orders): *measured*, not fitted.

``beta`` is the CPU a copy costs beyond the link's ``alpha`` when every rank shares the
machine's cores: about zero where the links bound the shuffle (100 Mbit/s here), hundreds
of microseconds where the CPUs do (1 Gbit/s on 2 cores).  It is counted per copy, not per
MPI message: counted per message, a broadcast edge (no header) cost half a point-to-point
copy and the model put cmr's bcast shuffle at 1 Gbit/s 12-19% below its p2p one, while
measured the two took the same time within the runs' spread (docs/benchmarks.md).

The measured transfer is the slowest finisher's ``shuffle_s`` (``server_shuffle_s``: from
the plan's end to its last receive); the master's ``shuffle_s`` is the whole phase.

Pure: no mpi4py.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpi_coded.analysis.network import PhaseCost, rate_entry
from mpi_coded.errors import ConfigError, require


@dataclass(frozen=True)
class TrainingCase:
    """One training setting: the model's two terms and what was measured (medians over its
    repetitions), in seconds."""

    name: str
    host_s: float  # max_h t_h on the calibrated network
    fabric_s: float  # 8 B / fabric (0: no fabric)
    transfer_s: float  # the slowest finisher's transfer, measured
    overhead_s: float  # the master's shuffle minus that, measured
    copies: float = 0.0  # n_max: the most payload copies one host sends or receives

    @property
    def fabric_limited(self) -> bool:
        return self.fabric_s > self.host_s


def terms(cost: PhaseCost) -> tuple[float, float, int]:
    """``(max_h t_h, 8 B / fabric, n_max)`` of a priced phase (0 for a missing fabric;
    ``n_max`` in payload copies)."""
    n = max((max(t.sent_copies, t.recv_copies) for t in cost.hosts.values()), default=0)
    return max(cost.host_seconds.values(), default=0.0), cost.fabric_seconds or 0.0, n


@dataclass(frozen=True)
class ShuffleFit:
    """``T = o + max(s_host max_h t_h, s_fabric 8 B / fabric) + beta n_max`` (module
    docstring)."""

    host_scale: float
    fabric_scale: float
    overhead_s: float
    trained_on: tuple[str, ...] = ()
    copy_s: float = 0.0  # beta

    def __post_init__(self) -> None:
        for key, val in (("host_scale", self.host_scale), ("fabric_scale", self.fabric_scale)):
            require(val > 0, "calibration", f"shuffle_fit.{key} must be > 0", val)
        for key, val in (("overhead_s", self.overhead_s), ("copy_s", self.copy_s)):
            require(val >= 0, "calibration", f"shuffle_fit.{key} must be >= 0", val)

    def seconds(self, cost: PhaseCost) -> float:
        host, fab, n = terms(cost)
        if host == 0 and fab == 0:  # nothing crosses a link: no shuffle to wait for
            return 0.0
        return (self.overhead_s + max(self.host_scale * host, self.fabric_scale * fab)
                + self.copy_s * n)

    def to_dict(self) -> dict[str, Any]:
        return {"host_scale": self.host_scale, "fabric_scale": self.fabric_scale,
                "copy_s": self.copy_s, "overhead_s": self.overhead_s,
                "trained_on": list(self.trained_on)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> ShuffleFit:
        """From a calibration file's ``shuffle_fit`` object; ConfigError naming
        ``calibration`` when a value is missing or not a number."""
        require(isinstance(doc, Mapping), "calibration", "shuffle_fit must be an object", doc)
        require("message_s" not in doc, "calibration",
                "shuffle_fit.message_s was fitted per MPI message by an earlier version; the "
                "model counts payload copies (copy_s): run scripts/bench_network.py again",
                doc.get("message_s"))
        vals: dict[str, float] = {"copy_s": 0.0}
        for key in ("host_scale", "fabric_scale", "overhead_s", "copy_s"):
            if key == "copy_s" and key not in doc:  # a fit without the per-copy term
                continue
            v = doc.get(key)
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise ConfigError("calibration", f"shuffle_fit.{key} must be a number", v)
            vals[key] = float(v)
        names = doc.get("trained_on", [])
        require(isinstance(names, list) and all(isinstance(x, str) for x in names),
                "calibration", "shuffle_fit.trained_on must be a list of names", names)
        return cls(vals["host_scale"], vals["fabric_scale"], vals["overhead_s"], tuple(names),
                   vals["copy_s"])


def fit_shuffle(cases: Sequence[TrainingCase]) -> ShuffleFit:
    """The multipliers and the overhead of the module docstring from ``cases``."""
    require(len(cases) > 0, "cases", "needs at least one training case", len(cases))
    fl = [c for c in cases if c.fabric_limited]
    hl = [c for c in cases if not c.fabric_limited and c.host_s > 0]
    require(bool(fl or hl), "cases", "needs a case with traffic on the links",
            [c.name for c in cases])
    s_fab, beta = _fabric_and_messages(fl)
    host = [(c.transfer_s - beta * c.copies) / c.host_s for c in hl]
    if s_fab is None:
        s_fab = statistics.median(host)
    s_host = statistics.median(host) if host else s_fab
    over = max(0.0, statistics.median([c.overhead_s for c in cases]))
    return ShuffleFit(s_host, s_fab, over, tuple(c.name for c in cases), beta)


def _fabric_and_messages(cases: Sequence[TrainingCase]) -> tuple[float | None, float]:
    """``(s_fabric, beta)`` by least squares of ``transfer = s 8B/F + beta n_max`` over the
    fabric-limited ``cases`` (module docstring); ``(None, 0)`` without any."""
    if not cases:
        return None, 0.0
    ratio = statistics.median([c.transfer_s / c.fabric_s for c in cases])
    a = np.array([[c.fabric_s, c.copies] for c in cases], dtype=np.float64)
    y = np.array([c.transfer_s for c in cases], dtype=np.float64)
    if len(cases) < 2 or np.linalg.matrix_rank(a) < 2:
        return ratio, 0.0
    (s, beta), *_ = np.linalg.lstsq(a, y, rcond=None)
    if beta < 0 or s <= 0:
        return ratio, 0.0
    return float(s), float(beta)


def rate_fit(netdoc: Mapping[str, Any] | None, rate: float | None) -> ShuffleFit | None:
    """The ``shuffle_fit`` of a calibration file's ``network`` object at ``rate`` (bit/s:
    the ``by_rate`` entry at that rate), None where there is none."""
    chosen = rate_entry(netdoc, rate)
    doc = None if chosen is None else chosen.get("shuffle_fit")
    return None if doc is None else ShuffleFit.from_dict(doc)
