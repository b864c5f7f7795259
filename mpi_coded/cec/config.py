"""Configuration of the elastic (CEC) job: TOML file, defaults, validation.

Every key is a field of :class:`CECConfig` or of one of its alternatives
(:mod:`mpi_coded.cec.config_types`: speeds :class:`Fixed` or :class:`Estimated`,
availability :class:`Schedule`, :class:`Random` or :class:`Trace`), declared once with
its default, type and doc (:mod:`mpi_coded.cec.config_fields`); the known keys, the type
messages and the key table of docs/elastic.md (:func:`key_table`) are derived from them.
All checks raise :class:`~mpi_coded.errors.ConfigError` naming the key and the rule.  Every
rank validates the same config before any MPI traffic.  The defaults are the worked
example of the heterogeneous CEC paper (docs/theory.md, A.4): N=6, L=3, speeds
(1, 1, 1.5, 1.5, 2, 2), four steps without machines {}, {4}, {4, 6}, {1, 4, 6}.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.cec.config_types import (
    AVAILABILITIES,
    AVAILABILITY_KINDS,
    SEED_SCHEDULE,
    SEED_SPEEDS,
    SPEEDS,
    Availability,
    Estimated,
    Fixed,
    Random,
    Schedule,
    Trace,
    random_availability,
    read_trace,
)
from mpi_coded.cec.plan import POLICIES
from mpi_coded.cec.workloads import WORKLOADS, validate_workload
from mpi_coded.config_keys import (
    STR,
    Sets,
    check_unused,
    key,
    key_names,
    one_of,
    parse_keys,
    record_of,
    refuse_unknown,
    table_keys,
    table_rows,
)
from mpi_coded.errors import ConfigError, require
from mpi_coded.fault_tolerance import MODES as FT_MODES
from mpi_coded.faults import Fault
from mpi_coded.fields import FIELD_NAMES
from mpi_coded.wait_modes import check_wait

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "AVAILABILITY_KINDS", "POLICIES", "SEED_SCHEDULE", "SEED_SPEEDS", "CECConfig", "Estimated",
    "Fixed", "Random", "Schedule", "Trace", "from_mapping", "from_record", "key_table",
    "load_config", "npy_shape", "random_availability", "read_trace",
]

JOB = "cec"
"""The value of the optional ``job`` key."""
SELECTOR = "kind"
"""The ``[availability]`` key that chooses its alternative."""


@dataclass(frozen=True)
class CECConfig:
    """A validated elastic-computing job (each field's ``doc`` is its row in docs/elastic.md)."""

    N: int = key(6, doc="machines (ranks 1..N); the world size is `N + 1`; `>= 1`")
    L: int = key(3, doc="row blocks, any `L` coded blocks decode; `1 <= L <= N`")
    speeds: Fixed | Estimated = key(
        Fixed(), alternatives=SPEEDS, shown="1, 1, 1.5, 1.5, 2, 2 (N = 6), else 1 each",
        doc="rows per unit time, one per machine, `> 0` (exact decimals); or `\"auto\"`: "
            "planned with speeds estimated from measurements (keys below)")
    rows: int = key(1260, doc="rows of `X` (padded with zeros to a multiple of `L`; the "
                               "padding never reaches the result), `>= L`")
    cols: int = key(200, doc="columns of `X`, `>= 1`")
    field: str = key("float64", flag=True, doc="`float64`, `gf2^8` (at most 256 machines) "
                     "or `gf2^16` (exact)")
    policy: str = key("heterogeneous", flag=True, rule=one_of(lambda: tuple(POLICIES)),
                      doc="`heterogeneous` (optimal load, filling "
                       "algorithm), `heterogeneous-tw` (same loads, row sets chosen to cut "
                       "transition waste), `cyclic` (homogeneous baseline), `uncoded` (the "
                       "uncoded elastic baseline: data re-split and moved)")
    t_row: float = key(0.001, flag=True, doc="seconds one row takes at speed 1, `>= 0`")
    seed: int = key(0, flag=True, doc="data, vectors and random availability, `>= 0`")
    data: str = key("", doc="an `.npy` file holding `X` (`rows`, `cols` default to its "
                             "shape; an integer matrix over GF)")
    timeout_s: float = key(120.0, flag="--timeout",
                           doc="the deadline of every other wait, seconds, `> 0`")
    wait: str = key("auto", flag=True, doc="`polite` (backoff sleeps), `busy` (spin; one rank per "
                                 "core), `auto` (busy when the ranks on a node fit its cores)")
    deadline_factor: float = key(2.0, doc="a step's deadline is `factor * predicted + "
                                  "slack`; machines that miss it are re-planned away; `>= 1`")
    deadline_slack_s: float = key(2.0, doc="the slack of a step's deadline, seconds, `> 0`")
    availability: Availability = key(
        Schedule(SEED_SCHEDULE), alternatives=AVAILABILITIES, table=True,
        shown="the seed's 4 steps (N = 6), else all machines, 1 step",
        doc=f"a table; `{SELECTOR}` = " + ", ".join(f'`"{k}"`' for k in AVAILABILITY_KINDS)
            + " (default the first) chooses its keys (below)")
    S: int = key(0, omit_default=True, doc="stragglers tolerated: every row set on `L + S` "
                  "machines, decoded from its first `L` answers; `L + S <= N`; 0 with "
                  "`uncoded`")
    suspect_after: int = key(2, omit_default=True, doc="with `S > 0`: a machine cut off as "
                              "the slowest more than this many steps in a row is left out "
                              "until it answers again; `>= 1`")
    quarantine_steps: int = key(2, omit_default=True, doc="a machine caught answering wrong "
                                "(docs/theory.md A.10) sits out this many steps, its block "
                                "checked (and rebuilt when corrupt), then is planned on "
                                "probation (`0`: on probation from the next step, its "
                                "answers checked against the verified step); `>= 0`")
    mercurial_strikes: int = key(2, omit_default=True, doc="a machine caught answering wrong "
                                 "this many times with an intact block (a mercurial core) is "
                                 "lost for the job; `>= 1`")
    stragglers: int = key(0, omit_default=True, doc="a scenario: each step this many "
                           "available machines (seeded draw) run slower; `0..N`")
    straggler_factor: float = key(5.0, omit_default=True, doc="how much slower a random "
                                   "straggler runs, `>= 1`")
    workload: str = key("independent", omit_default=True, flag=True,
                        rule=one_of(lambda: tuple(WORKLOADS)),
                        doc="`power` (power iteration "
                         "`w_{t+1} = y_t / norm(y_t)`, square `X`) or `linreg` (gradient "
                         "descent; coded blocks of `X` and `X^T`); float64 only; checked "
                         "against numpy at the end")
    fault_tolerance: str = key("none", omit_default=True, rule=one_of(FT_MODES), flag=True,
                               doc="`ulfm`: a machine that dies is lost and the job goes on "
                                   "without it (Open MPI 5 launched with `mpiexec --with-ft "
                                   "ulfm`; docs/elastic.md, \"Machines that die and join\"); "
                                   "`none`: a dead machine ends the job")
    replace_lost: str = key("none", omit_default=True, rule=one_of(("none", "spawn")),
                            flag=True,
                            doc="`spawn`: a new process replaces each lost machine before "
                                "the next step (`MPI_Comm_spawn`; it gets the lost "
                                "machine's coded block over the network); needs "
                                "`fault_tolerance = \"ulfm\"`")
    deaths: Sets = key((), omit_default=True,
                       doc="`[[step, machine], ...]`: the machine's process is killed "
                           "(SIGKILL) as it starts that step, computing or idle; needs "
                           "`fault_tolerance = \"ulfm\"`; TOML only")
    joins: Sets = key((), omit_default=True,
                      doc="`[[step, machine], ...]`: a new process replaces the lost "
                          "machine before that step (as `replace_lost = \"spawn\"` does "
                          "at once); needs `fault_tolerance = \"ulfm\"`; TOML only")
    store: str = key("", omit_default=True, flag=True,
                     doc="a coded store written by `mpi-coded store write` (a directory; "
                         "`{host}` in it is each rank's host name): each machine memory-maps "
                         "its block from its host's directory, the master loads no `X` and "
                         "sends no block, the world may be smaller than `N + 1` (machines "
                         "without a rank are lost) and a rank whose host holds no block "
                         "repairs one from `L` peers (docs/storage.md); coded policies only")
    verify: str = key("auto", omit_default=True, rule=one_of(("auto", "exact", "sketch")),
                      flag=True,
                      doc="with `store`: `exact` checks each product against `X` streamed "
                          "from `data` (the master's check grows with `X`); `sketch` with "
                          "Freivalds' check against the store's sketch (no `X`); `auto`: "
                          "`sketch`")
    store_check: str = key("mark", omit_default=True, rule=one_of(("mark", "full")),
                           flag=True,
                           doc="with `store`: `mark` reads at the start only the blocks "
                               "whose verified mark does not fit the file (changed, or "
                               "checked more than a day ago) and audits the others in the "
                               "background; `full` reads every block whole at every start "
                               "(docs/storage.md)")
    source: str = dc_field(default="defaults", compare=False)

    @property
    def speed_map(self) -> dict[int, Fraction]:
        """The machines' true speeds (the throttles'); with ``speeds = "auto"`` the planner
        does not see them."""
        return {n + 1: s for n, s in enumerate(self.speeds.true)}

    @property
    def rows_per_block(self) -> int:
        """``ceil(q / L)``: X is padded with zero rows to ``L`` equal blocks (A.1)."""
        return -(-self.rows // self.L)

    @property
    def world_size(self) -> int:
        return self.N + 1

    @property
    def world_sizes(self) -> range:
        """The world sizes the job runs on: ``N + 1``; from a store, ``L + 1`` to ``N + 1``
        (the machines without a rank are lost)."""
        return range(self.L + 1 if self.store else self.N + 1, self.N + 2)

    @property
    def exact_check(self) -> bool:
        """Whether each product is checked against ``X`` itself (not a sketch)."""
        return not self.store or self.verify == "exact"

    @property
    def largest_products(self) -> tuple[int, int]:
        """Bounds on the multiply-adds of the largest field product of the master and of a
        machine: the master encodes the ``N`` blocks of ``X`` (and of ``X^T``), ``N (rows +
        L) (cols + L)`` covering its check ``X w`` and its decoding; a machine multiplies at
        most ``rows x cols``.  Under :data:`mpi_coded.gf_tables.SMALL_WORK` a rank runs on
        lookup tables (:meth:`mpi_coded.fields.Field.warm_up`)."""
        return self.N * (self.rows + self.L) * (self.cols + self.L), self.rows * self.cols

    def predicted_s(self, plan_time: Fraction, R: int | None = None) -> float:
        """Seconds a step with plan time ``plan_time`` takes at the configured speeds:
        ``time * R * t_row`` (a block of ``R`` rows at speed 1 takes ``R t_row``; A.2);
        ``R`` defaults to the job's rows per block."""
        return float(plan_time) * (self.rows_per_block if R is None else R) * self.t_row

    def step_deadline(self, predicted_s: float) -> float:
        """Seconds a step may take before late machines are re-planned away."""
        return self.deadline_factor * predicted_s + self.deadline_slack_s

    def validate(self) -> CECConfig:
        self._check_machines()
        self._check_run()
        self._check_stragglers()
        POLICIES[self.policy].check_config(self)
        validate_workload(self.workload, self.field, self.rows, self.cols)
        self.availability.check(self.N, self.L)
        self._check_events()
        if self.data:
            self._check_data()
        self._check_store()
        return self

    def _check_store(self) -> None:
        require(self.verify in ("auto", "exact", "sketch"), "verify",
                "must be one of auto, exact, sketch", self.verify)
        require(self.store_check in ("mark", "full"), "store_check",
                "must be one of mark, full", self.store_check)
        if not self.store:
            require(self.verify == "auto", "verify", "needs store (without one the master "
                    "checks against the X it holds)", self.verify)
            return
        require(bool(self.data) or self.verify != "exact", "verify",
                "exact needs data (the .npy file of X, streamed by the master)", self.verify)
        require(POLICIES[self.policy].plans_row_sets, "store",
                f"policy {self.policy!r} moves uncoded rows; a store holds coded blocks",
                self.store)
        require(self.replace_lost == "none" and not self.joins, "store",
                "a store's lost machines are repaired at the next (re)launch, not spawned",
                self.store)

    def _check_machines(self) -> None:
        require(self.N >= 1, "N", "must be >= 1", self.N)
        require(self.L >= 1, "L", "must be >= 1", self.L)
        require(self.L <= self.N, "L", f"must be <= N={self.N}", self.L)
        self.speeds.check(self.N)
        require(self.rows >= self.L, "rows", f"X needs at least L={self.L} rows", self.rows)
        require(self.cols >= 1, "cols", "must be >= 1", self.cols)
        require(self.field in FIELD_NAMES, "field", f"must be one of {', '.join(FIELD_NAMES)}",
                self.field)
        if self.field == "gf2^8":
            require(self.N <= 256, "N", "a GF(2^8) code has at most 256 machines", self.N)

    def _check_run(self) -> None:
        POLICIES.lookup(self.policy)
        require(self.t_row >= 0, "t_row", "must be >= 0 seconds", self.t_row)
        require(self.timeout_s > 0, "timeout_s", "must be > 0 seconds", self.timeout_s)
        check_wait(self.wait)
        require(self.deadline_factor >= 1, "deadline_factor", "must be >= 1",
                self.deadline_factor)
        require(self.deadline_slack_s > 0, "deadline_slack_s", "must be > 0 seconds",
                self.deadline_slack_s)
        require(self.seed >= 0, "seed", "must be >= 0", self.seed)
        require(self.fault_tolerance in FT_MODES, "fault_tolerance",
                f"must be one of {', '.join(FT_MODES)}", self.fault_tolerance)
        require(self.replace_lost in ("none", "spawn"), "replace_lost",
                "must be one of none, spawn", self.replace_lost)
        require(self.replace_lost == "none" or self.fault_tolerance == "ulfm", "replace_lost",
                'spawn needs fault_tolerance = "ulfm" (without it no machine is lost: a '
                "death ends the job)", self.replace_lost)

    def _check_events(self) -> None:
        """``deaths`` and ``joins``: pairs ``[step, machine]`` of this job's steps and
        machines, under ``ulfm``; a machine dies once, joins after it died."""
        require(not (self.joins and self.replace_lost == "spawn"), "joins",
                'must be empty with replace_lost = "spawn" (which replaces every lost '
                "machine at once)", list(map(list, self.joins)))
        died: dict[int, int] = {}
        for name, pairs in (("deaths", self.deaths), ("joins", self.joins)):
            if not pairs:
                continue
            require(self.fault_tolerance == "ulfm", name, 'needs fault_tolerance = "ulfm"',
                    list(map(list, pairs)))
            for pair in pairs:
                steps = len(self.available_sets())
                require(len(pair) == 2 and 1 <= pair[1] <= self.N and 1 <= pair[0] <= steps,
                        name, f"must be [step, machine] pairs, step in 1..{steps}, machine in "
                              f"1..N={self.N}", list(pair))
                step, n = pair
                if name == "deaths":
                    require(n not in died, name, f"machine {n} can die once", list(pair))
                    died[n] = step
                else:
                    require(step > died.get(n, 0), name,
                            f"machine {n} joins after it died (at step {died.get(n)})",
                            list(pair))

    def _check_stragglers(self) -> None:
        require(self.S >= 0, "S", "stragglers tolerated must be >= 0", self.S)
        require(self.L + self.S <= self.N, "S", f"L + S must be <= N={self.N} (L={self.L})",
                self.S)
        require(self.suspect_after >= 1, "suspect_after", "must be >= 1", self.suspect_after)
        require(self.quarantine_steps >= 0, "quarantine_steps", "must be >= 0",
                self.quarantine_steps)
        require(self.mercurial_strikes >= 1, "mercurial_strikes", "must be >= 1",
                self.mercurial_strikes)
        require(0 <= self.stragglers <= self.N, "stragglers", f"must be in 0..N={self.N}",
                self.stragglers)
        require(self.straggler_factor >= 1, "straggler_factor", "must be >= 1",
                self.straggler_factor)

    def _check_data(self) -> None:
        shape, kind = npy_shape(self.data)
        require(len(shape) == 2, "data", "must hold a 2-D matrix X", shape)
        require(shape == (self.rows, self.cols), "data",
                f"X must have rows x cols = {self.rows} x {self.cols} (rows and cols "
                "default to the file's shape)", shape)
        if self.field != "float64":
            require(kind in "iu", "data", f"a {self.field} job needs an integer matrix", kind)

    def with_overrides(self, **kw: Any) -> CECConfig:
        kw = {k: v for k, v in kw.items() if v is not None}
        return dataclasses.replace(self, **kw).validate() if kw else self

    def death_faults(self) -> tuple[Fault, ...]:
        """``deaths`` as kill faults: the machine dies as it starts its step, computing
        (``step``) or idle (``idle``), whichever it is told."""
        return tuple(Fault("kill", n, phase, step) for step, n in self.deaths
                     for phase in ("step", "idle"))

    def available_sets(self) -> list[tuple[int, ...]]:
        """The available set of every step (1-based machine ids, sorted)."""
        return self.availability.sets(self.N, self.L, self.seed)

    def to_dict(self) -> dict[str, Any]:
        """The results' config line: every field, the alternatives in the flat layout of
        older results, keys added since then left out while at their defaults (so the lines
        of older jobs, and ``--resume``, compare equal)."""
        return record_of(self)


def top_keys() -> tuple[str, ...]:
    """The keys a config file may have at its top level."""
    return (*key_names(CECConfig), "job")


def availability_keys() -> tuple[str, ...]:
    """The keys of its ``[availability]`` table."""
    return table_keys(AVAILABILITIES, SELECTOR)


def key_table() -> str:
    """The key table of docs/elastic.md, from the fields."""
    head = ["| key | default | meaning and rules |", "|---|---|---|"]
    job = f'| `job` | | optional: `"{JOB}"`, this job\'s config (the coded job has its own) |'
    return "\n".join([*head, *table_rows(CECConfig), job]) + "\n"


def npy_shape(path: str) -> tuple[tuple[int, ...], str]:
    """Shape and dtype kind of an ``.npy`` file, read from its header only."""
    require(Path(path).is_file(), "data", "must be an existing .npy file", path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ConfigError("data", f"must be a readable .npy file ({exc})", path) from None
    return tuple(int(s) for s in arr.shape), arr.dtype.kind


def _defaults_for(n: int) -> tuple[Fixed | Estimated, Availability]:
    """Speeds and availability when the file has none: the fields' defaults for the default
    N, else speed 1 and every machine available (one step)."""
    if n == CECConfig.N:
        defaults = CECConfig()
        return defaults.speeds, defaults.availability
    return Fixed((Fraction(1),) * n), Schedule((tuple(range(1, n + 1)),))


def _speeds(d: Mapping[str, Any], n: int) -> Fixed | Estimated:
    chosen: type[Fixed] | type[Estimated] = Estimated if d.get("speeds") == "auto" else Fixed
    check_unused(d, chosen, SPEEDS, selector="speeds")
    kw = parse_keys(chosen, d)
    if chosen is Estimated:
        kw.setdefault("true_speeds", (Fraction(1),) * n)
    elif "speeds" not in kw:
        return _defaults_for(n)[0]
    return chosen(**kw)


def _availability(av: Any, n: int) -> Availability:
    if av is None:
        return _defaults_for(n)[1]
    require(isinstance(av, dict), "availability", "must be a table", av)
    refuse_unknown(av, availability_keys(), "availability.")
    kind = STR.parse(av.get(SELECTOR, AVAILABILITY_KINDS[0]), f"availability.{SELECTOR}")
    require(kind in AVAILABILITY_KINDS, f"availability.{SELECTOR}",
            f"must be one of {', '.join(AVAILABILITY_KINDS)}", kind)
    chosen = AVAILABILITIES[AVAILABILITY_KINDS.index(kind)]
    check_unused(av, chosen, AVAILABILITIES, "availability.", selector=SELECTOR)
    return chosen.build(parse_keys(chosen, av, "availability."))


def from_mapping(d: Mapping[str, Any], source: str = "config") -> CECConfig:
    """Build and validate a config from a parsed TOML table."""
    refuse_unknown(d, top_keys())
    if "job" in d:
        require(d["job"] == JOB, "job", f"this is the '{JOB}' job's config", d["job"])
    kw: dict[str, Any] = {**parse_keys(CECConfig, d), "source": source}
    if kw.get("data"):
        shape, _ = npy_shape(kw["data"])
        if len(shape) == 2:
            kw.setdefault("rows", shape[0])
            kw.setdefault("cols", shape[1])
    n = kw.get("N", CECConfig.N)
    kw["speeds"] = _speeds(d, n)
    kw["availability"] = _availability(d.get("availability"), n)
    return CECConfig(**kw).validate()


def from_record(rec: Mapping[str, Any]) -> CECConfig:
    """The config a results file's config line (:meth:`CECConfig.to_dict`) records,
    validated; keys the line lacks (older results) take their defaults."""
    plain = [f.name for f in dataclasses.fields(CECConfig)
             if f.name != "source" and not f.metadata.get("alternatives")]
    kw: dict[str, Any] = {k: rec[k] for k in plain if rec.get(k) is not None}
    kw["speeds"] = (Estimated if rec.get("speeds_auto") else Fixed).from_record(rec)
    kind = rec.get("availability_kind") or AVAILABILITY_KINDS[0]
    require(kind in AVAILABILITY_KINDS, "availability_kind",
            f"must be one of {', '.join(AVAILABILITY_KINDS)}", kind)
    kw["availability"] = AVAILABILITIES[AVAILABILITY_KINDS.index(kind)].from_record(rec)
    return CECConfig(**kw).validate()


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
