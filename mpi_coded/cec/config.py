"""Configuration of the elastic (CEC) job: TOML file, defaults, validation.

All checks live here and raise :class:`~mpi_coded.errors.ConfigError` naming
the key and the rule.  Every rank validates the same config before any MPI
traffic.  The defaults are the seed's example (SPEC A.4): N=6, L=3, speeds
(1, 1, 1.5, 1.5, 2, 2), four steps without machines {}, {4}, {4, 6}, {1, 4, 6}.

Keys (top level of the TOML file)::

    N = 6                      # machines (ranks 1..N); world size is N + 1
    L = 3                      # row blocks; any L coded blocks decode
    speeds = [1, 1, 1.5, 1.5, 2, 2]   # rows per unit time, > 0 (exact decimals)
    rows = 1260                # q, rows of X (padded to a multiple of L)
    cols = 200                 # r, columns of X
    field = "float64"          # or "gf2^8", "gf2^16"
    policy = "heterogeneous"   # or "cyclic"
    t_row = 0.001              # seconds one row takes at speed 1 (>= 0)
    seed = 0                   # data, vectors and random availability
    data = ""                  # optional .npy file holding X (q x r)
    timeout_s = 120.0          # deadline of every other wait, seconds
    deadline_factor = 2.0      # a step's deadline: factor * predicted + slack; machines
    deadline_slack_s = 2.0     #   that miss it are re-planned away within the step
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

from mpi_coded.cec.plan import POLICIES
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import FIELD_NAMES

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
TOP_KEYS = ("N", "L", "speeds", "rows", "cols", "field", "policy", "t_row", "seed", "data",
            "timeout_s", "deadline_factor", "deadline_slack_s", "availability", "job")
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
    deadline_factor: float = 2.0
    deadline_slack_s: float = 2.0
    availability_kind: str = "schedule"
    schedule: tuple[tuple[int, ...], ...] = SEED_SCHEDULE
    p: float = 0.0
    steps: int = 4
    trace_path: str = ""
    source: str = dc_field(default="defaults", compare=False)

    @property
    def speed_map(self) -> dict[int, Fraction]:
        return {n + 1: s for n, s in enumerate(self.speeds)}

    @property
    def rows_per_block(self) -> int:
        """``ceil(q / L)``: X is padded with zero rows to ``L`` equal blocks (SPEC A.1)."""
        return -(-self.rows // self.L)

    @property
    def world_size(self) -> int:
        return self.N + 1

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
        require(self.deadline_factor >= 1, "deadline_factor", "must be >= 1",
                self.deadline_factor)
        require(self.deadline_slack_s > 0, "deadline_slack_s", "must be > 0 seconds",
                self.deadline_slack_s)
        require(self.seed >= 0, "seed", "must be >= 0", self.seed)
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
        return d


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
    for k in ("N", "L", "rows", "cols", "seed"):
        if k in d:
            kw[k] = _int(d[k], k)
    for k in ("t_row", "timeout_s", "deadline_factor", "deadline_slack_s"):
        if k in d:
            kw[k] = _float(d[k], k)
    for k in ("field", "policy", "data"):
        if k in d:
            require(isinstance(d[k], str), k, "must be a string", d[k])
            kw[k] = d[k]
    if kw.get("data"):
        shape, _ = npy_shape(kw["data"])
        if len(shape) == 2:
            kw.setdefault("rows", shape[0])
            kw.setdefault("cols", shape[1])
    if "speeds" in d:
        require(isinstance(d["speeds"], list), "speeds", "must be a list of numbers", d["speeds"])
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
