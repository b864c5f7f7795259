"""The coded job's records (``job`` :data:`~mpi_coded.results.names.CODED`):
:class:`CodedConfig` (its first line), :class:`CodedRun` (one per repetition, each server's
map a :class:`CodedServerMap`), :class:`CodedAbandoned` (a repetition a finisher's death
ended, ``fault_tolerance = "ulfm"``) and :class:`CodedSummary` (its last line)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from mpi_coded.results.common import LinkBytes, RunContext, WithLinks
from mpi_coded.results.names import ABANDONED, CODED, CONFIG, RUN, SUMMARY, SchemaError
from mpi_coded.results.record import Record, empty_dict, empty_list, optional, part


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedRecord(Record):
    """The fields every coded config and run line starts with: the scheme and its sizes
    (``mpi_coded.coded.job.PARAM_KEYS``), declared once for both."""

    JOB: ClassVar[str | None] = CODED

    scheme: str
    K: int
    q: int
    mu: str
    """A fraction string, e.g. ``"1/2"``."""
    rows_per_batch: int
    n: int
    N: int
    T: int = 1
    field: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedConfig(CodedRecord):
    """The first line of a coded job: ``CodedJob.to_dict()`` and the :class:`RunContext`.
    Keys that older runtimes did not write are absent (None)."""

    KIND: ClassVar[str] = CONFIG

    straggler: str = ""
    t_row: float = 0.0
    speeds: list[float] = empty_list()
    chunks: int = 8
    seed: int = 0
    reps: int = 1
    timeout_s: float = 120.0
    assignment: str = ""
    """The ``.npy`` assignment matrix of a bdc job ("": the default heuristic)."""
    wait: str | None = optional()
    multicast: str | None = optional()
    fault_tolerance: str | None = optional()
    quarantine_reps: int | None = optional()
    mercurial_strikes: int | None = optional()
    m: int = 0
    r: int = 0
    batches: int = 0
    wait_for: int = 0
    run: RunContext | None = part(RunContext)

    @classmethod
    def of(cls, job: dict[str, Any], run: RunContext) -> CodedConfig:
        """The line of a job's ``to_dict()``; :class:`SchemaError` for a key this class does
        not declare (declare it here first)."""
        unknown = sorted(set(job) - set(cls.names()))
        if unknown:
            raise SchemaError(f"CodedConfig does not declare {', '.join(unknown)}")
        return cls(**job, run=run)

    @property
    def host(self) -> str:
        return self.run.host if self.run else ""


PHASE_KEYS = {"encode": "encode_s", "map": "map_s", "shuffle": "shuffle_s",
              "reduce": "reduce_s"}
"""Field of a coded ``run`` line holding each phase's seconds."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedServerMap:
    """One server's map in a repetition (a value of :attr:`CodedRun.server_map`)."""

    compute_s: float
    """Seconds in the products."""
    wall_s: float
    """Seconds from the map order to the report (products and throttle sleeps)."""
    target_s: float
    """The throttle's target for all its rows."""
    rows_done: int
    rows: int
    stopped: bool
    """Stopped by the map end before its last row."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CodedServerMap:
        """The map of ``d``; :class:`SchemaError` if it lacks a field."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [k for k in names if k not in d]
        if missing:
            raise SchemaError(f"a coded server_map entry lacks {', '.join(missing)}: {d}")
        return cls(**{k: d[k] for k in names})


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedRun(WithLinks, CodedRecord):
    """One repetition of a coded job (docs/coded.md, "Results").  Per-server fields are
    keyed by the server's number as a string."""

    KIND: ClassVar[str] = RUN

    rep: int
    m: int
    straggler: str = ""
    seed: int = 0
    Q: list[int] = empty_list()
    extra: list[int] = empty_list()
    finishing_order: list[int] = empty_list()
    encode_s: float = 0.0
    map_s: float = 0.0
    shuffle_s: float = 0.0
    reduce_s: float = 0.0
    total_s: float = 0.0
    multicast_values: int = 0
    unicast_values: int = 0
    load_measured: float = 0.0
    """Values sent over ``m N``, a multicast counted once."""
    load_measured_exact: str = ""
    load_analytic: float = 0.0
    """The scheme's own declared load (:meth:`Scheme.declared_load`)."""
    load_analytic_exact: str = ""
    load_plan_exact: str = ""
    padding_values: str = "0"
    strategy: int = 0
    s_q: int = 0
    bytes_on_wire: int = 0
    """Bytes of the shuffle, a multicast counted once per receiver."""
    verified: bool
    """The decoded outputs matched ``A x_i`` and the load the run moved is the scheme's
    declared one (else :attr:`load_check` says why)."""
    max_error: float = 0.0
    load_check: str | None = optional()
    """Why the run's load contradicts the scheme's declared load (absent when it agrees)."""
    verify: str = ""
    """``exact`` or ``freivalds(k)``."""
    encoder: str = ""
    decoder: str = ""
    server_encoder: dict[str, str] = empty_dict()
    server_decoder: dict[str, str] = empty_dict()
    peak_rss_mb: dict[str, float] = empty_dict()
    """``master`` and each server -> peak resident memory in MiB."""
    max_peak_rss_mb: float = 0.0
    server_encode_s: dict[str, float] = empty_dict()
    server_map: dict[str, CodedServerMap] = empty_dict()
    server_shuffle_s: dict[str, float] = empty_dict()
    server_plan_s: dict[str, float] = empty_dict()
    server_groups_created: dict[str, int] = empty_dict()
    """``bcast``: group communicators each finisher created in this shuffle (0 for every
    repetition when the servers created every group at setup)."""
    server_groups_s: dict[str, float] = empty_dict()
    """``bcast``: seconds each finisher spent creating them (inside its ``shuffle_s``)."""
    server_decode_s: dict[str, float] = empty_dict()
    unresponsive: list[int] = empty_list()
    """Servers whose map report did not come within the grace period."""
    lost: list[int] = empty_list()
    """Servers found dead during this repetition (``fault_tolerance = "ulfm"``): lost for
    good, the repetition ran (and verified) without them."""
    lost_at: dict[str, float] = empty_dict()
    """Each of :attr:`lost` -> the Unix time the master knew it dead."""
    hosts: dict[str, str] | None = optional()
    """Rank -> the host it ran on (from the READY handshake)."""
    wrong_answers: list[dict[str, Any]] | None = optional()
    """The wrong map outputs and shuffle payloads found in this repetition's earlier
    attempts (and in this one, when it is not verified), each ``{server, phase ("map" or
    "shuffle"), batches, message ("multicast I" / "unicast I"; "" for a map output),
    values (how many were wrong), attempt, found}`` (:mod:`mpi_coded.coded.locate`);
    absent when every attempt's outputs were right."""
    rerun: int | None = optional()
    """Attempts of this repetition before this one whose decoded outputs were wrong (each
    located and run again; docs/coded.md "A server that answers wrong"); absent: none."""
    without: list[int] | None = optional()
    """Servers this attempt's map end left out (named wrong in an earlier attempt);
    absent: none."""
    rerun_s: float | None = optional()
    """Seconds of the earlier, wrong attempts (encode to the located wrong answers)."""
    resumed: bool | None = optional()
    """True: this attempt decoded without :attr:`without` from the spare servers, every
    server's map of the earlier attempt resumed where it stopped (no encode, the rows
    mapped kept); absent: encoded and mapped anew."""
    quarantined: list[int] | None = optional()
    """Servers the map end left out from the start of this repetition: caught answering
    wrong in an earlier one (``quarantine_reps``) or lost for answering wrong
    (``mercurial_strikes``); absent: none."""
    probation: list[int] | None = optional()
    """Servers this repetition used on probation (their time out over, or kept because the
    servers left could not end the map without them); absent: none."""
    quarantine: list[dict[str, Any]] | None = optional()
    """Quarantine events of this repetition, each ``{server, rank, host, event}`` with
    ``event`` one of ``caught``, ``readmitted``, ``lost``, ``needed``
    (:mod:`mpi_coded.coded.quarantine`); absent: none."""
    link: LinkBytes | None = part(LinkBytes)
    """Phases ``encode``, ``map``, ``shuffle``, ``reduce`` (the reducers' outputs to the
    master travel in the reduce)."""

    def fields_dict(self) -> dict[str, Any]:
        out = super().fields_dict()
        out["server_map"] = {s: v.to_dict() for s, v in self.server_map.items()}
        return out

    @classmethod
    def _kwargs(cls, rec: dict[str, Any]) -> dict[str, Any]:
        kw = super()._kwargs(rec)
        if "server_map" in kw:
            kw["server_map"] = {s: CodedServerMap.from_dict(v)
                                for s, v in kw["server_map"].items()}
        return kw

    def phase_s(self, phase: str) -> float:
        """Seconds of ``phase`` (``encode``, ``map``, ``shuffle``, ``reduce``)."""
        return float(getattr(self, PHASE_KEYS[phase]))


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedAbandoned(CodedRecord):
    """A repetition that ended without its outputs: a finisher died in the shuffle (a
    reducer then misses its messages) or a reducer in the reduce (``fault_tolerance =
    "ulfm"``, docs/coded.md "A server that dies").  The job went on with the next
    repetition; nothing here is a measurement of the scheme (no ``verified``)."""

    KIND: ClassVar[str] = ABANDONED

    rep: int
    phase: str
    """``shuffle`` or ``reduce``: where the repetition ended."""
    why: str
    """``server S = rank R (host), ... died in the PHASE``."""
    lost: list[int] = empty_list()
    """Servers found dead during this repetition."""
    lost_at: dict[str, float] = empty_dict()
    """Each of :attr:`lost` -> the Unix time the master knew it dead."""
    Q: list[int] = empty_list()
    extra: list[int] = empty_list()
    finishing_order: list[int] = empty_list()
    missing: dict[str, int] = empty_dict()
    """Each finisher left -> the shuffle messages it never got whole (their sender died)."""
    encode_s: float = 0.0
    map_s: float = 0.0
    phase_s: float = 0.0
    """Seconds of :attr:`phase` until the master knew it could not end."""
    total_s: float = 0.0
    hosts: dict[str, str] | None = optional()


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedSummary(Record):
    """The last line of a coded job."""

    KIND: ClassVar[str] = SUMMARY
    JOB: ClassVar[str | None] = CODED

    reps: int
    all_verified: bool
    mean_total_s: float = 0.0
    lost: list[int] = empty_list()
    """Every server found dead (``fault_tolerance = "ulfm"``), in order."""
    abandoned: list[int] = empty_list()
    """Repetitions a finisher's death ended (:class:`CodedAbandoned`); ``all_verified``
    speaks of the others, and is false when no repetition ended with its outputs."""
    ended_early: str | None = None
    """Why the job ended before its last repetition (too few servers left to end the map,
    ``fault_tolerance = "ulfm"``); ``all_verified`` is then false."""
    wrong_answers: int | None = optional()
    """Wrong map outputs and shuffle payloads named over the job (absent: none)."""
    reruns: int | None = optional()
    """Attempts run again because their outputs were wrong (absent: none)."""
    quarantine: dict[str, int] | None = optional()
    """Quarantine events over the job, by event (``caught``, ``readmitted``, ``lost``,
    ``needed``; absent: none)."""
    lost_wrong: list[int] | None = optional()
    """Servers lost for the job for answering wrong (``mercurial_strikes``), in order
    (absent: none)."""
