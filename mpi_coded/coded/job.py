"""Configuration of the coded matrix-vector job (``mpi-coded run coded``).

A :class:`CodedJob` is the validated :class:`~mpi_coded.coded.params.CodedParams`
plus how the run is executed: the map throttle, the straggler model, chunks,
repetitions, deadlines.  Same keys on the command line and in a TOML file
(``--config``; command-line flags win).  Every rank validates before any MPI
traffic.

Every key is declared once, as a field of :class:`ParamKeys` (the scheme and its sizes)
or of :class:`CodedJob` (how it runs), with :func:`~mpi_coded.config_keys.key`: its flag,
type, default, value rule and doc.  The known keys, the flags
(:func:`~mpi_coded.config_keys.add_flags`), the type and rule messages and the key table
of docs/coded.md (:func:`key_table`) are derived from them.  The scheme's choices are the
registry's (:mod:`mpi_coded.coded.schemes`) when they are asked for, not at import.

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
from mpi_coded.coded.params import AUTO_FIELD, FIELDS, CodedParams
from mpi_coded.coded.quarantine import OUT_REPS, STRIKES
from mpi_coded.coded.schemes import get, names
from mpi_coded.config_keys import (
    NUMBER,
    ValueType,
    above,
    at_least,
    check_rules,
    key,
    key_names,
    one_of,
    parse_flat,
    refuse_unknown,
    require_keys,
    table_rows,
)
from mpi_coded.errors import ConfigError, require
from mpi_coded.fault_tolerance import MODES as FT_MODES
from mpi_coded.wait_modes import WAIT_MODES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STRAGGLERS = ("none", "shiftexp")
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
FIELD_ALIASES = {"gf8": "gf2^8", "gf16": "gf2^16", "real": "float64"}
JOB = "coded"
"""The value of the optional ``job`` key."""
REQUIRED = "is required (flag or config key)"
"""The rule a missing required key breaks."""
FRACTION = ValueType("a fraction like 1/2",
                     lambda x: isinstance(x, (str, int, float)) and not isinstance(x, bool),
                     lambda x, name: x)
"""``mu``: a string such as ``"1/2"`` or a number; the scheme checks its value."""


@dataclass(frozen=True)
class ParamKeys:
    """The keys of the job's :class:`~mpi_coded.coded.params.CodedParams`, declared once
    (:func:`~mpi_coded.config_keys.key`): flags, TOML keys, types and the key table of
    docs/coded.md; the scheme checks their values (:meth:`params`)."""

    scheme: str = key(flag=True, rule=one_of(names), doc="the coded scheme")
    K: int = key(flag=True, doc="servers, on ranks 1..K (the world is `K + 1` ranks)")
    q: int = key(flag=True, doc="servers the map phase waits for, `q <= K`")
    mu: str = key(flag=True, parse=FRACTION.parse,
                  doc="fraction of the coded rows each server stores, e.g. `1/2` "
                      "(`mu q` an integer)")
    rows_per_batch: int = key(flag=True, doc="coded rows per batch (eta_b); the rows of "
                              "`A` follow from it")
    n: int = key(flag=True, doc="columns of `A`")
    N: int = key(flag=True, doc="number of vectors `x_i` (the servers waited for divide it)")
    T: int = key(1, flag=True, doc="partitions of the block-diagonal code (a partitioned "
                 "scheme only)")
    field: str = key(AUTO_FIELD, flag=True,
                     doc=", ".join(f"`{f}`" for f in FIELDS[1:]) + f" or `{AUTO_FIELD}` "
                         "(the smallest GF that holds the code); also "
                         + ", ".join(f"`{a}`" for a in FIELD_ALIASES))

    def params(self) -> CodedParams:
        """The scheme's parameters: every rule of the scheme and its sizes checked."""
        check_rules(self)
        return get(self.scheme).params(
            K=self.K, q=self.q, mu=self.mu, rows_per_batch=self.rows_per_batch, n=self.n,
            N=self.N, T=self.T, field=FIELD_ALIASES.get(self.field, self.field))


@dataclass(frozen=True)
class CodedJob:
    """A validated coded job: its :class:`~mpi_coded.coded.params.CodedParams` and how it
    runs, each run key declared once (:func:`~mpi_coded.config_keys.key`)."""

    params: CodedParams
    straggler: str = key("none", flag=True, rule=one_of(STRAGGLERS),
                         doc="the map's straggler model (`shiftexp`: each map takes `1 + "
                             "Exp(1)` times its nominal time, drawn from the seed)")
    t_row: float = key(0.0, flag=True, parse=NUMBER.parse, rule=at_least(0, "seconds"),
                       doc="map seconds per stored coded row at speed 1 (all `N` vectors; "
                           "`> 0` with `shiftexp`)")
    speeds: tuple[float, ...] = key((), shown="1 each",
                                    doc="one speed per server, `> 0` (TOML only): a "
                                        "server's map takes its time over its speed")
    chunks: int = key(8, flag=True, rule=at_least(1),
                      doc="map chunks (a server told to stop stops at the next one)")
    seed: int = key(0, flag=True, rule=at_least(0),
                    doc="seeds `A`, the vectors, the code and the straggler draws")
    reps: int = key(1, flag=True, rule=at_least(1),
                    doc="repetitions (new straggler draws each)")
    timeout_s: float = key(120.0, flag="--timeout", parse=NUMBER.parse,
                           rule=above(0, "seconds"), doc="the deadline of every wait")
    assignment: str = key("", flag=True,
                          doc="a saved assignment matrix `P` (`.npy`) for a scheme that "
                              "takes one")
    wait: str = key("auto", flag=True, rule=one_of(WAIT_MODES),
                    doc="how ranks wait (`polite`: backoff sleeps, `busy`: spin, `auto`: "
                        "busy when the ranks on a node fit its cores)")
    multicast: str = key("p2p", flag=True, rule=one_of(MULTICAST_MODES),
                         doc="how coded multicasts travel (`p2p`: one message per "
                             "receiver; `bcast`: `Ibcast` on a communicator per group)")
    fault_tolerance: str = key("none", flag=True, rule=one_of(FT_MODES),
                               doc="`ulfm`: a server that dies is lost, and the job goes on "
                                   "while the servers left can run the scheme (Open MPI 5 "
                                   "launched with `mpiexec --with-ft ulfm`; docs/coded.md); "
                                   "`none`: a death ends the job")
    quarantine_reps: int = key(OUT_REPS, flag=True, rule=at_least(0),
                               doc="a server named wrong sits out this many repetitions "
                                   "(left out of the map end where the servers left can "
                                   "end the map; else kept, on probation), then is on "
                                   "probation until a verified repetition uses it; 0: "
                                   "left out of its own repetition only (docs/coded.md)")
    mercurial_strikes: int = key(STRIKES, flag=True, rule=at_least(1),
                                 doc="a server named wrong in this many repetitions (a "
                                     "mercurial core) is lost for the job where the "
                                     "servers left can end the map without it")

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
        """The declared rules of the keys (:func:`~mpi_coded.config_keys.check_rules`),
        then those between keys and the scheme."""
        K = self.params.K
        check_rules(self)
        require(math.isfinite(self.t_row), "t_row", "must be >= 0 seconds", self.t_row)
        if self.straggler == "shiftexp":
            require(self.t_row > 0, "t_row", "straggler shiftexp scales t_row: must be > 0",
                    self.t_row)
        if self.speeds:
            require(len(self.speeds) == K, "speeds", f"must list one speed per server (K={K})",
                    len(self.speeds))
            for i, s in enumerate(self.speeds):
                require(s > 0, "speeds", f"speed of server {i} must be > 0", s)
        if self.multicast == "bcast":
            check_bcast(self.params)
            require(self.fault_tolerance == "none", "fault_tolerance",
                    "must be none with multicast = bcast (a group's communicator with a "
                    "dead member fails every Ibcast on it)", self.fault_tolerance)
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


PARAM_KEYS = key_names(ParamKeys)
"""The keys of the job's parameters (the first fields of its results' lines)."""
RUN_KEYS = key_names(CodedJob)
"""The keys of how it runs."""
KEY_CLASSES = (ParamKeys, CodedJob)
"""The classes that declare the job's keys, in the order of its flags and its key table."""


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


def top_keys() -> tuple[str, ...]:
    """The keys a config file (or the flags) may have: ``job``, then the declared ones."""
    return ("job", *PARAM_KEYS, *RUN_KEYS)


def key_table() -> str:
    """The key table of docs/coded.md, from the declarations (scheme names as registered
    now)."""
    head = ["| key | flag | default | meaning and rules |", "|---|---|---|---|"]
    job = f'| `job` | | | optional: `"{JOB}"`, this job\'s config (the elastic job has its own) |'
    rows = [row for cls in KEY_CLASSES for row in table_rows(cls, flags=True)]
    return "\n".join([*head, *rows, job]) + "\n"


def from_mapping(d: Mapping[str, Any]) -> CodedJob:
    """Build and validate a job from a flat mapping (TOML table or parsed flags; ``None``:
    not given): unknown keys, ``job``, each value's type in the mapping's order, the
    required keys, the scheme's rules, then the run's."""
    refuse_unknown(d, top_keys())
    if "job" in d:
        require(d["job"] == JOB, "job", f"this is the '{JOB}' job's config", d["job"])
    vals = parse_flat(KEY_CLASSES, d)
    require_keys(ParamKeys, vals, REQUIRED)
    params = ParamKeys(**{k: vals[k] for k in PARAM_KEYS if k in vals}).params()
    return CodedJob(params=params, **{k: vals[k] for k in RUN_KEYS if k in vals}).validate()


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
