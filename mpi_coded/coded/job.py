"""Configuration of the coded matrix-vector job (``mpi-coded run coded``).

A :class:`CodedJob` is the validated :class:`~mpi_coded.coded.params.CodedParams`
plus how the run is executed: the map throttle, the straggler model, chunks,
repetitions, deadlines.  Same keys on the command line and in a TOML file
(``--config``; command-line flags win).  Every rank validates before any MPI
traffic.

Map throttle (docs/theory.md (B.6)): server ``s`` stores ``rows_s`` coded rows; its map
of all ``N`` vectors has nominal time ``sigma_s = rows_s * t_row``.  With
``straggler = "none"`` it takes ``sigma_s / speed_s``; with ``"shiftexp"`` it
takes ``sigma_s (1 + E_s) / speed_s`` with ``E_s ~ Exp(1)`` drawn from
``(seed, repetition, s)`` (shift and tail scale with ``sigma``).  Real compute
first, the rest is sleep, in ``chunks`` pieces; a server told to stop stops at
the next chunk (or during its sleep).

Multicast transport (``multicast``, :data:`MULTICAST_MODES`): ``p2p`` sends a coded
multicast as one message per receiver; ``bcast`` as one ``Ibcast`` on a communicator
of its group (:mod:`mpi_coded.runtime.coded.transfer`).  Loads, outputs and
``bytes_on_wire`` are the same.  ``bcast`` needs coded multicasts (groups of at least
two servers, hence a world of at least three ranks; sc, uc and some small settings
only unicast) and at most :data:`BCAST_MAX_GROUPS` group communicators per server.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.analysis.delay import sample_runtime
from mpi_coded.analysis.loads import strategy_levels
from mpi_coded.coded.params import AUTO_FIELD, CodedParams
from mpi_coded.coded.schemes import get, names
from mpi_coded.errors import ConfigError, require
from mpi_coded.wait_modes import check_wait

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STRAGGLERS = ("none", "shiftexp")
PARAM_KEYS = ("scheme", "K", "q", "mu", "rows_per_batch", "n", "N", "T", "field")
RUN_KEYS = ("straggler", "t_row", "speeds", "chunks", "seed", "reps", "timeout_s",
            "assignment", "wait", "multicast")
MULTICAST_MODES = ("p2p", "bcast")
BCAST_SETUP_GROUPS = 128
"""Under ``bcast``, a server that belongs to at most this many groups over every ``Q``
(:func:`bcast_groups_any_q`; K = 9, mu q = 2: 28) creates them all at setup, and no
shuffle then creates a communicator; beyond it, each shuffle creates its ``Q``'s missing
groups (``runtime/coded/transfer.py``)."""
BCAST_MAX_GROUPS = 1000
"""Most group communicators a server may need for one ``Q`` under ``bcast``.  MPICH gives a
process 2,046 communicators beyond its own (measured: ``Create_group`` fails after 2,046
on this machine) and a new one needs a context id free at every member, so sets of
overlapping groups can run out earlier; K = 18, q = 12, mu = 1/3 needs 495 and runs.
Half the limit leaves room for that and for the library's own communicators."""
TOP_KEYS = ("job", *PARAM_KEYS, *RUN_KEYS)
FIELD_ALIASES = {"gf8": "gf2^8", "gf16": "gf2^16", "real": "float64"}


@dataclass(frozen=True)
class CodedJob:
    params: CodedParams
    straggler: str = "none"
    t_row: float = 0.0
    speeds: tuple[float, ...] = ()
    chunks: int = 8
    seed: int = 0
    reps: int = 1
    timeout_s: float = 120.0
    assignment: str = ""
    wait: str = "auto"
    multicast: str = "p2p"

    @property
    def world_size(self) -> int:
        return self.params.K + 1

    def speed(self, server: int) -> float:
        return self.speeds[server] if self.speeds else 1.0

    def map_target(self, server: int, rows: int, rep: int) -> float:
        """Seconds server ``server`` should spend on its map of ``rows`` coded rows."""
        sigma = rows * self.t_row
        if self.straggler == "shiftexp":
            rng = np.random.default_rng([self.seed, rep, server, 0x5E])
            sigma = float(sample_runtime(sigma, rng))
        return sigma / self.speed(server)

    def validate(self) -> CodedJob:
        K = self.params.K
        require(self.straggler in STRAGGLERS, "straggler",
                f"must be one of {', '.join(STRAGGLERS)}", self.straggler)
        require(math.isfinite(self.t_row) and self.t_row >= 0, "t_row", "must be >= 0 seconds",
                self.t_row)
        if self.straggler == "shiftexp":
            require(self.t_row > 0, "t_row", "straggler shiftexp scales t_row: must be > 0",
                    self.t_row)
        if self.speeds:
            require(len(self.speeds) == K, "speeds", f"must list one speed per server (K={K})",
                    len(self.speeds))
            for i, s in enumerate(self.speeds):
                require(s > 0, "speeds", f"speed of server {i} must be > 0", s)
        require(self.chunks >= 1, "chunks", "must be >= 1", self.chunks)
        require(self.seed >= 0, "seed", "must be >= 0", self.seed)
        require(self.reps >= 1, "reps", "must be >= 1", self.reps)
        require(self.timeout_s > 0, "timeout_s", "must be > 0 seconds", self.timeout_s)
        check_wait(self.wait)
        require(self.multicast in MULTICAST_MODES, "multicast",
                f"must be one of {', '.join(MULTICAST_MODES)}", self.multicast)
        if self.multicast == "bcast":
            check_bcast(self.params)
        if self.assignment:
            require(self.params.spec.takes_assignment, "assignment",
                    f"only scheme {', '.join(names(takes_assignment=True))} takes one",
                    self.assignment)
            require(Path(self.assignment).is_file(), "assignment",
                    "must be an existing .npy file", self.assignment)
        return self

    def load_assignment(self) -> np.ndarray | None:
        return np.load(self.assignment) if self.assignment else None

    def to_dict(self) -> dict[str, Any]:
        p = self.params
        d: dict[str, Any] = {k: getattr(p, k) for k in PARAM_KEYS}
        d["mu"] = str(p.mu)
        d["field"] = p.field_name
        d.update({k: getattr(self, k) for k in RUN_KEYS})
        d["speeds"] = list(self.speeds)
        d.update(m=p.m, r=p.r, batches=p.n_batches, wait_for=p.wait_for)
        return d


def map_chunk_cuts(rows: int, chunks: int) -> np.ndarray:
    """Row boundaries of a server's map in ``chunks`` pieces: chunk ``c`` is rows
    ``[cuts[c], cuts[c + 1])`` (the runtime maps them one product each; the calibrated
    model prices them so)."""
    return np.linspace(0, rows, chunks + 1).round().astype(int)


def multicast_levels(p: CodedParams) -> tuple[int, ...]:
    """Multicast levels any shuffle plan of ``p`` may use (both strategies for a scheme
    that compares them); a level-``j`` group has ``j + 1`` servers."""
    ul = p.spec.reference_load(p.K, p.q, p.mu)
    strategies = (1, 2) if p.spec.compares_strategies else (ul.strategy,)
    return tuple(sorted({j for s in strategies
                         for j in strategy_levels(p.replication, ul.s_q, s)}))


def bcast_groups_per_server(p: CodedParams) -> int:
    """Upper bound on the multicast groups of one server for one ``Q``: ``sum_j C(q-1, j)``."""
    return sum(math.comb(p.wait_for - 1, j) for j in multicast_levels(p))


def bcast_groups_any_q(p: CodedParams) -> int:
    """The multicast groups one server belongs to over every possible ``Q``:
    ``sum_j C(K-1, j)`` (uc and cmr: ``Q`` is every server, so their one ``Q``'s count)."""
    return sum(math.comb(p.K - 1, j) for j in multicast_levels(p))


def check_bcast(p: CodedParams) -> None:
    """ConfigError unless ``bcast`` can carry ``p``'s multicasts (module docstring)."""
    levels = multicast_levels(p)
    require(bool(levels) and p.wait_for >= 2, "multicast",
            f"bcast needs coded multicast groups of >= 2 servers (a world of >= 3 ranks); "
            f"scheme {p.scheme} with K={p.K}, q={p.q}, mu={p.mu} only unicasts", "bcast")
    n = bcast_groups_per_server(p)
    require(n <= BCAST_MAX_GROUPS, "multicast",
            f"bcast would need up to {n} group communicators per server, more than "
            f"{BCAST_MAX_GROUPS} (MPI context ids); use p2p", "bcast")


def _typed(key: str, value: Any) -> Any:
    ints = ("K", "q", "rows_per_batch", "n", "N", "T", "chunks", "seed", "reps")
    if key in ints:
        require(isinstance(value, int) and not isinstance(value, bool), key,
                "must be an integer", value)
    elif key in ("t_row", "timeout_s"):
        require(isinstance(value, (int, float)) and not isinstance(value, bool), key,
                "must be a number", value)
        value = float(value)
    elif key == "speeds":
        require(isinstance(value, (list, tuple)), key, "must be a list of numbers", value)
        for v in value:
            require(isinstance(v, (int, float)) and not isinstance(v, bool), key,
                    "must be a list of numbers", value)
        value = tuple(float(v) for v in value)
    elif key in ("scheme", "straggler", "field", "assignment", "wait", "multicast"):
        require(isinstance(value, str), key, "must be a string", value)
    elif key == "mu":
        require(isinstance(value, (str, int, float)) and not isinstance(value, bool), key,
                "must be a fraction like 1/2", value)
    return value


def from_mapping(d: Mapping[str, Any]) -> CodedJob:
    """Build and validate a job from a flat mapping (TOML table or parsed flags)."""
    for k in d:
        require(k in TOP_KEYS, f"config key '{k}'",
                f"unknown key; known keys: {', '.join(TOP_KEYS)}")
    if "job" in d:
        require(d["job"] == "coded", "job", "this is the 'coded' job's config", d["job"])
    vals = {k: _typed(k, v) for k, v in d.items() if k != "job" and v is not None}
    for k in ("scheme", "K", "q", "mu", "rows_per_batch", "n", "N"):
        require(k in vals, k, "is required (flag or config key)")
    field = vals.get("field", AUTO_FIELD)
    field = FIELD_ALIASES.get(field, field)
    params = get(vals["scheme"]).params(
        K=vals["K"], q=vals["q"], mu=vals["mu"], rows_per_batch=vals["rows_per_batch"],
        n=vals["n"], N=vals["N"], T=vals.get("T", 1), field=field)
    run = {k: vals[k] for k in RUN_KEYS if k in vals}
    return CodedJob(params=params, **run).validate()


def load_job(path: str | None, overrides: Mapping[str, Any]) -> CodedJob:
    """``path`` (TOML, optional) with ``overrides`` (flags, ``None`` = not given) on top."""
    d: dict[str, Any] = {}
    if path:
        p = Path(path)
        require(p.is_file(), "--config", "must be an existing TOML file", path)
        try:
            d = dict(tomllib.loads(p.read_text()))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError("--config", f"malformed TOML: {exc}", path) from None
    d.update({k: v for k, v in overrides.items() if v is not None})
    return from_mapping(d)


def replace(job: CodedJob, **kw: Any) -> CodedJob:
    return dataclasses.replace(job, **kw).validate()
