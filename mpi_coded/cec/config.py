"""Configuration of the elastic (CEC) job: TOML file, defaults, validation.

All checks live here and raise :class:`~mpi_coded.errors.ConfigError` naming
the key and the rule.  Every rank validates the same config before any MPI
traffic.  The defaults are the worked example of the heterogeneous CEC paper
(docs/theory.md, A.4): N=6, L=3, speeds
(1, 1, 1.5, 1.5, 2, 2), four steps without machines {}, {4}, {4, 6}, {1, 4, 6}.

Keys (top level of the TOML file)::

    N = 6                      # machines (ranks 1..N); world size is N + 1
    L = 3                      # row blocks; any L coded blocks decode
    speeds = [1, 1, 1.5, 1.5, 2, 2]   # rows per unit time, > 0 (exact decimals)
    rows = 1260                # q, rows of X (padded to a multiple of L)
    cols = 200                 # r, columns of X
    field = "float64"          # or "gf2^8", "gf2^16"
    policy = "heterogeneous"   # or "cyclic", "heterogeneous-tw", "uncoded" (X stored
                               #   uncoded, split by speed, rows moved on every change)
    workload = "independent"   # or "power" (square X), "linreg" (float64 only)
    t_row = 0.001              # seconds one row takes at speed 1 (>= 0)
    seed = 0                   # data, vectors and random availability
    data = ""                  # optional .npy file holding X (q x r)
    timeout_s = 120.0          # deadline of every other wait, seconds
    wait = "auto"              # "polite" (backoff sleeps), "busy" (spin), "auto"
    deadline_factor = 2.0      # a step's deadline: factor * predicted + slack; machines
    deadline_slack_s = 2.0     #   that miss it are re-planned away within the step
    S = 0                      # stragglers tolerated: every row set has L + S machines,
                               #   each set is decoded from its first L answers (L + S <= N)
    suspect_after = 2          # with S > 0: a machine cut off as the slowest more than this
                               #   many steps in a row is left out of the next plans
    speeds = "auto"            # instead of a list: plan with estimated speeds (below)
    true_speeds = [1, ...]     # with speeds = "auto": the throttles' real speeds (default 1),
                               #   unknown to the planner (used only to report the oracle)
    estimator = "ewma"         # or "median" (mpi_coded.cec.estimate)
    estimator_alpha = 0.5      # ewma: weight of the newest sample, in (0, 1]
    estimator_window = 5       # median: samples kept, >= 1
    stragglers = 0             # machines slowed at random each step (seeded), <= N
    straggler_factor = 5.0     # how much slower a random straggler is (>= 1)
    [availability]
    kind = "schedule"          # or "random", "trace"
    schedule = [[1,2,3,4,5,6], [1,2,3,5,6], [1,2,3,5], [2,3,5]]
    p = 0.3                    # kind = "random": preemption probability in [0, 1)
    steps = 10                 # kind = "random": number of steps
    path = "trace.txt"         # kind = "trace": one step per line, ids by commas
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.cec.estimate import (
    DEFAULT_ALPHA,
    DEFAULT_ESTIMATOR,
    DEFAULT_WINDOW,
    validate_alpha,
    validate_estimator,
    validate_window,
)
from mpi_coded.cec.plan import POLICIES as PLAN_POLICIES
from mpi_coded.cec.workloads import validate_workload
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import FIELD_NAMES
from mpi_coded.wait_modes import check_wait

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SEED_SCHEDULE: tuple[tuple[int, ...], ...] = (
    (1, 2, 3, 4, 5, 6),
    (1, 2, 3, 5, 6),
    (1, 2, 3, 5),
    (2, 3, 5),
)
AVAILABILITY_KINDS = ("schedule", "random", "trace")
POLICIES = (*PLAN_POLICIES, "uncoded")
"""The job's policies: the planner's, and the uncoded baseline (:mod:`mpi_coded.cec.uncoded`)."""
TOP_KEYS = ("N", "L", "speeds", "rows", "cols", "field", "policy", "t_row", "seed", "data",
            "timeout_s", "deadline_factor", "deadline_slack_s", "wait", "availability", "job",
            "S", "suspect_after", "true_speeds", "estimator", "estimator_alpha",
            "estimator_window", "stragglers", "straggler_factor", "workload")
AVAIL_KEYS = ("kind", "schedule", "p", "steps", "path")


def _fraction(x: Any, key: str) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ConfigError(key, "must be a number", x)
    try:
        return Fraction(str(x)) if not isinstance(x, int) else Fraction(x)
    except (ValueError, ZeroDivisionError):
        raise ConfigError(key, "must be a number", x) from None


def _int(x: Any, key: str) -> int:
    require(isinstance(x, int) and not isinstance(x, bool), key, "must be an integer", x)
    return int(x)


def _float(x: Any, key: str) -> float:
    require(isinstance(x, (int, float)) and not isinstance(x, bool), key, "must be a number", x)
    require(math.isfinite(float(x)), key, "must be finite", x)
    return float(x)


@dataclass(frozen=True)
class CECConfig:
    """A validated elastic-computing job."""

    N: int = 6
    L: int = 3
    speeds: tuple[Fraction, ...] = tuple(Fraction(s) for s in ("1", "1", "1.5", "1.5", "2", "2"))
    rows: int = 1260
    cols: int = 200
    field: str = "float64"
    policy: str = "heterogeneous"
    t_row: float = 0.001
    seed: int = 0
    data: str = ""
    timeout_s: float = 120.0
    wait: str = "auto"
    deadline_factor: float = 2.0
    deadline_slack_s: float = 2.0
    availability_kind: str = "schedule"
    schedule: tuple[tuple[int, ...], ...] = SEED_SCHEDULE
    p: float = 0.0
    steps: int = 4
    trace_path: str = ""
    S: int = 0
    suspect_after: int = 2
    speeds_auto: bool = False  # speeds = "auto": ``speeds`` holds the true (hidden) speeds
    estimator: str = DEFAULT_ESTIMATOR
    estimator_alpha: float = DEFAULT_ALPHA
    estimator_window: int = DEFAULT_WINDOW
    stragglers: int = 0
    straggler_factor: float = 5.0
    workload: str = "independent"
    source: str = dc_field(default="defaults", compare=False)

    @property
    def speed_map(self) -> dict[int, Fraction]:
        """The machines' configured (true) speeds; with ``speeds = "auto"`` the planner
        does not see them."""
        return {n + 1: s for n, s in enumerate(self.speeds)}

    @property
    def rows_per_block(self) -> int:
        """``ceil(q / L)``: X is padded with zero rows to ``L`` equal blocks (A.1)."""
        return -(-self.rows // self.L)

    @property
    def world_size(self) -> int:
        return self.N + 1

    def predicted_s(self, plan_time: Fraction) -> float:
        """Seconds a step with plan time ``plan_time`` takes at the configured speeds:
        ``time * R * t_row`` (a block of ``R`` rows at speed 1 takes ``R t_row``; A.2)."""
        return float(plan_time) * self.rows_per_block * self.t_row

    def step_deadline(self, predicted_s: float) -> float:
        """Seconds a step may take before late machines are re-planned away."""
        return self.deadline_factor * predicted_s + self.deadline_slack_s

    def validate(self) -> CECConfig:
        require(self.N >= 1, "N", "must be >= 1", self.N)
        require(self.L >= 1, "L", "must be >= 1", self.L)
        require(self.L <= self.N, "L", f"must be <= N={self.N}", self.L)
        require(len(self.speeds) == self.N, "speeds",
                f"must list one speed per machine (N={self.N})", len(self.speeds))
        for i, s in enumerate(self.speeds):
            require(s > 0, "speeds", f"speed of machine {i + 1} must be > 0", str(s))
        require(self.rows >= self.L, "rows", f"X needs at least L={self.L} rows", self.rows)
        require(self.cols >= 1, "cols", "must be >= 1", self.cols)
        require(self.field in FIELD_NAMES, "field", f"must be one of {', '.join(FIELD_NAMES)}",
                self.field)
        if self.field == "gf2^8":
            require(self.N <= 256, "N", "a GF(2^8) code has at most 256 machines", self.N)
        require(self.policy in POLICIES, "policy", f"must be one of {', '.join(POLICIES)}",
                self.policy)
        require(self.t_row >= 0, "t_row", "must be >= 0 seconds", self.t_row)
        require(self.timeout_s > 0, "timeout_s", "must be > 0 seconds", self.timeout_s)
        check_wait(self.wait)
        require(self.deadline_factor >= 1, "deadline_factor", "must be >= 1",
                self.deadline_factor)
        require(self.deadline_slack_s > 0, "deadline_slack_s", "must be > 0 seconds",
                self.deadline_slack_s)
        require(self.seed >= 0, "seed", "must be >= 0", self.seed)
        require(self.S >= 0, "S", "stragglers tolerated must be >= 0", self.S)
        if self.policy == "uncoded":
            require(self.S == 0, "S", 'must be 0 with policy = "uncoded" (rows are not '
                    "replicated)", self.S)
        require(self.L + self.S <= self.N, "S", f"L + S must be <= N={self.N} (L={self.L})",
                self.S)
        require(self.suspect_after >= 1, "suspect_after", "must be >= 1", self.suspect_after)
        validate_estimator(self.estimator)
        validate_alpha(self.estimator_alpha)
        validate_window(self.estimator_window)
        require(0 <= self.stragglers <= self.N, "stragglers", f"must be in 0..N={self.N}",
                self.stragglers)
        require(self.straggler_factor >= 1, "straggler_factor", "must be >= 1",
                self.straggler_factor)
        validate_workload(self.workload, self.field, self.rows, self.cols)
        if self.workload == "linreg":
            require(self.policy != "uncoded", "workload", 'linreg runs coded products only '
                    '(not with policy = "uncoded")', self.workload)
        require(self.availability_kind in AVAILABILITY_KINDS, "availability.kind",
                f"must be one of {', '.join(AVAILABILITY_KINDS)}", self.availability_kind)
        if self.availability_kind == "random":
            require(0 <= self.p < 1, "availability.p", "must be in [0, 1)", self.p)
            require(self.steps >= 1, "availability.steps", "must be >= 1", self.steps)
        if self.availability_kind in ("schedule", "trace"):
            key = "availability.schedule" if self.availability_kind == "schedule" else \
                f"availability.path ({self.trace_path})"
            require(len(self.schedule) >= 1, key, "needs at least one step", 0)
            for t, avail in enumerate(self.schedule):
                where = f"{key} step {t + 1}"
                require(len(set(avail)) == len(avail), where, "machine ids must be distinct",
                        list(avail))
                for a in avail:
                    require(1 <= a <= self.N, where, f"unknown machine id (ids are 1..{self.N})", a)
                require(len(avail) >= self.L, where,
                        f"at least L={self.L} machines must be available", len(avail))
        if self.data:
            shape, kind = npy_shape(self.data)
            require(len(shape) == 2, "data", "must hold a 2-D matrix X", shape)
            require(shape == (self.rows, self.cols), "data",
                    f"X must have rows x cols = {self.rows} x {self.cols} (rows and cols "
                    "default to the file's shape)", shape)
            if self.field != "float64":
                require(kind in "iu", "data", f"a {self.field} job needs an integer matrix",
                        kind)
        return self

    def with_overrides(self, **kw: Any) -> CECConfig:
        kw = {k: v for k, v in kw.items() if v is not None}
        return dataclasses.replace(self, **kw).validate() if kw else self

    def availability(self) -> list[tuple[int, ...]]:
        """The available set of every step (1-based machine ids, sorted)."""
        if self.availability_kind != "random":
            return [tuple(sorted(a)) for a in self.schedule]
        return random_availability(self.N, self.L, self.p, self.steps, self.seed)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["speeds"] = [str(s) for s in self.speeds]
        d["schedule"] = [list(a) for a in self.schedule]
        for k in NEW_KEY_DEFAULTS:  # results of older jobs (and --resume) compare equal
            if d[k] == NEW_KEY_DEFAULTS[k]:
                del d[k]
        return d


NEW_KEY_DEFAULTS: dict[str, Any] = {
    "S": 0, "suspect_after": 2, "speeds_auto": False, "estimator": DEFAULT_ESTIMATOR,
    "estimator_alpha": DEFAULT_ALPHA, "estimator_window": DEFAULT_WINDOW, "stragglers": 0,
    "straggler_factor": 5.0, "workload": "independent",
}
"""Keys added for stragglers, suspects and estimated speeds: left out of the results'
config line while at their defaults."""


def npy_shape(path: str) -> tuple[tuple[int, ...], str]:
    """Shape and dtype kind of an ``.npy`` file, read from its header only."""
    require(Path(path).is_file(), "data", "must be an existing .npy file", path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ConfigError("data", f"must be a readable .npy file ({exc})", path) from None
    return tuple(int(s) for s in arr.shape), arr.dtype.kind


def random_availability(n: int, L: int, p: float, steps: int, seed: int) -> list[tuple[int, ...]]:
    """Each machine preempted with probability ``p`` per step; at least ``L`` kept.

    When fewer than ``L`` survive, preempted machines are brought back, chosen
    uniformly at random, until ``L`` are available.
    """
    rng = np.random.default_rng([seed, 0xCEC])
    out = []
    for _ in range(steps):
        keep = rng.random(n) >= p
        avail = [i + 1 for i in range(n) if keep[i]]
        if len(avail) < L:
            back = [i + 1 for i in range(n) if not keep[i]]
            extra = rng.choice(back, size=L - len(avail), replace=False)
            avail += [int(x) for x in extra]
        out.append(tuple(sorted(avail)))
    return out


def read_trace(path: str) -> tuple[tuple[int, ...], ...]:
    """A trace file: one step per line, machine ids separated by commas or spaces."""
    p = Path(path)
    require(p.is_file(), "availability.path", "must be an existing trace file", path)
    steps = []
    for i, line in enumerate(p.read_text().splitlines()):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            steps.append(tuple(int(x) for x in line.replace(",", " ").split()))
        except ValueError:
            raise ConfigError(f"availability.path line {i + 1}",
                              "must be machine ids separated by commas", line) from None
    return tuple(steps)


def from_mapping(d: Mapping[str, Any], source: str = "config") -> CECConfig:
    """Build and validate a config from a parsed TOML table."""
    for k in d:
        require(k in TOP_KEYS, f"config key '{k}'",
                f"unknown key; known keys: {', '.join(TOP_KEYS)}")
    if "job" in d:
        require(d["job"] == "cec", "job", "this is the 'cec' job's config", d["job"])
    kw: dict[str, Any] = {"source": source}
    for k in ("N", "L", "rows", "cols", "seed", "S", "suspect_after", "stragglers"):
        if k in d:
            kw[k] = _int(d[k], k)
    if "estimator" in d:
        kw["estimator"] = validate_estimator(d["estimator"])
    if "estimator_alpha" in d:
        kw["estimator_alpha"] = validate_alpha(d["estimator_alpha"])
    if "estimator_window" in d:
        kw["estimator_window"] = validate_window(d["estimator_window"])
    for k in ("t_row", "timeout_s", "deadline_factor", "deadline_slack_s", "straggler_factor"):
        if k in d:
            kw[k] = _float(d[k], k)
    for k in ("field", "policy", "data", "wait", "workload"):
        if k in d:
            require(isinstance(d[k], str), k, "must be a string", d[k])
            kw[k] = d[k]
    if kw.get("data"):
        shape, _ = npy_shape(kw["data"])
        if len(shape) == 2:
            kw.setdefault("rows", shape[0])
            kw.setdefault("cols", shape[1])
    if d.get("speeds") == "auto":
        kw["speeds_auto"] = True
        n = kw.get("N", 6)
        true = d.get("true_speeds", [1] * n)
        require(isinstance(true, list), "true_speeds", "must be a list of numbers", true)
        require(len(true) == n, "true_speeds", f"must list one speed per machine (N={n})",
                len(true))
        kw["speeds"] = tuple(_fraction(s, "true_speeds") for s in true)
    elif "true_speeds" in d:
        raise ConfigError("true_speeds", 'is only used with speeds = "auto"', d["true_speeds"])
    elif "speeds" in d:
        require(isinstance(d["speeds"], list), "speeds",
                'must be a list of numbers or "auto"', d["speeds"])
        kw["speeds"] = tuple(_fraction(s, "speeds") for s in d["speeds"])
    elif "N" in d and kw["N"] != 6:
        kw["speeds"] = tuple(Fraction(1) for _ in range(kw["N"]))
    av = d.get("availability")
    if av is not None:
        require(isinstance(av, dict), "availability", "must be a table", av)
        for k in av:
            require(k in AVAIL_KEYS, f"config key 'availability.{k}'",
                    f"unknown key; known keys: {', '.join(AVAIL_KEYS)}")
        kind = av.get("kind", "schedule")
        require(isinstance(kind, str), "availability.kind", "must be a string", kind)
        kw["availability_kind"] = kind
        if kind == "schedule":
            sched = av.get("schedule")
            require(isinstance(sched, list) and all(isinstance(s, list) for s in sched),
                    "availability.schedule", "must be a list of lists of machine ids", sched)
            kw["schedule"] = tuple(
                tuple(_int(x, "availability.schedule") for x in s) for s in sched)
        elif kind == "random":
            kw["p"] = _float(av.get("p", 0.0), "availability.p")
            kw["steps"] = _int(av.get("steps", 4), "availability.steps")
        elif kind == "trace":
            path = av.get("path")
            require(isinstance(path, str) and path != "", "availability.path",
                    "must name a trace file", path)
            kw["trace_path"] = path
            kw["schedule"] = read_trace(path)
    elif "N" in d and kw["N"] != 6:
        kw["schedule"] = (tuple(range(1, kw["N"] + 1)),)
    try:
        cfg = CECConfig(**kw)
    except TypeError as exc:  # pragma: no cover - keys are filtered above
        raise ConfigError("config", str(exc)) from None
    return cfg.validate()


def load_config(path: str | None) -> CECConfig:
    """Read ``path`` (TOML) or return the validated defaults."""
    if not path:
        return CECConfig().validate()
    p = Path(path)
    require(p.is_file(), "--config", "must be an existing TOML file", path)
    try:
        d = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", f"malformed TOML: {exc}", path) from None
    return from_mapping(d, source=str(p))
