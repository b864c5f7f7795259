"""The elastic job's records (``job`` :data:`~mpi_coded.results.names.CEC`):
:class:`ElasticConfig` (its first line), :class:`ElasticSetup` (the blocks sent once),
:class:`ElasticStep` (one per step; a linreg step's second product as :class:`Transpose`)
and :class:`ElasticSummary` (its last line)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from mpi_coded.results.common import LinkBytes, RunContext, WithLinks
from mpi_coded.results.names import CEC, CONFIG, SETUP, STEP, SUMMARY, SchemaError
from mpi_coded.results.record import Part, Record, empty_dict, empty_list, nested, optional, part


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticConfig(Record):
    """The first line of an elastic job: its config (``CECConfig.to_dict()``), host and
    versions.  Keys left at their defaults by newer config options are absent (None)."""

    KIND: ClassVar[str] = CONFIG
    JOB: ClassVar[str | None] = CEC

    N: int
    L: int
    speeds: list[Any]
    """Speeds as fraction strings (``"3/2"``) or numbers, machine 1 first."""
    rows: int
    cols: int
    field: str
    policy: str
    t_row: float
    seed: int = 0
    data: str = ""
    timeout_s: float = 120.0
    wait: str | None = optional()
    deadline_factor: float | None = optional()
    deadline_slack_s: float | None = optional()
    availability_kind: str = "schedule"
    schedule: list[list[int]] = empty_list()
    """Available machines per step (``availability_kind`` schedule or trace)."""
    p: float = 0.0
    steps: int = 0
    trace_path: str | None = optional()
    S: int | None = optional()
    suspect_after: int | None = optional()
    quarantine_steps: int | None = optional()
    mercurial_strikes: int | None = optional()
    speeds_auto: bool | None = optional()
    estimator: str | None = optional()
    estimator_alpha: float | None = optional()
    estimator_window: int | None = optional()
    stragglers: int | None = optional()
    straggler_factor: float | None = optional()
    workload: str | None = optional()
    fault_tolerance: str | None = optional()
    replace_lost: str | None = optional()
    deaths: list[list[int]] | None = optional()
    joins: list[list[int]] | None = optional()
    store: str | None = optional()
    verify: str | None = optional()
    store_check: str | None = optional()
    source: str | None = optional()
    run: RunContext | None = part(RunContext)
    first_step: int = 1

    @classmethod
    def of(cls, config: dict[str, Any], run: RunContext, first_step: int) -> ElasticConfig:
        """The line of a config's ``to_dict()``; :class:`SchemaError` for a key this class
        does not declare (declare it here first)."""
        unknown = sorted(set(config) - set(cls.names()))
        if unknown:
            raise SchemaError(f"ElasticConfig does not declare {', '.join(unknown)}")
        return cls(**config, run=run, first_step=first_step)

    @property
    def host(self) -> str:
        return self.run.host if self.run else ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class StoreOpening(Part):
    """The parts of a job's opening of its coded store (the setup line's ``store_parts``;
    docs/storage.md, "A job from a store")."""

    arrive_s: float = 0.0
    """The master's wait for every rank to reach the store and scan its directory."""
    scan_s: float = 0.0
    """The slowest rank's scan (manifest read and checked, headers of its blocks)."""
    verify_s: float = 0.0
    """The slowest rank's check of its block against the checksums."""
    blocks_read: int = 0
    """Blocks read whole against their checksums (all ranks)."""
    read_bytes: int = 0
    blocks_marked: int = 0
    """Blocks whose verified mark fitted the file: not read (docs/storage.md)."""
    repair_s: float = 0.0
    """The repairs from peers, to the last rank's end."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticSetup(WithLinks, Record):
    """The coded blocks (or the uncoded rows) sent once, before the first step."""

    KIND: ClassVar[str] = SETUP
    JOB: ClassVar[str | None] = CEC

    setup_s: float
    setup_bytes: int = 0
    bytes_per_machine: int = 0
    hosts: dict[str, str] = empty_dict()
    """Machine id -> the host it runs on."""
    link: LinkBytes | None = part(LinkBytes)
    """Phase ``setup``: measured on the master's host only (the machines report nothing
    before their first step)."""
    master_peak_rss_mb: float | None = optional()
    """The master's peak resident memory at the end of the setup (MiB; ``VmHWM``)."""
    store: dict[str, Any] | None = optional()
    """A job from a coded store: ``machines`` (machine -> rank), ``lost`` (machines without
    a rank), ``repairs`` (machine, rank, host, sources, bytes, seconds), ``dataset``."""
    store_open_s: float | None = optional()
    """A job from a coded store: the master's seconds from the start of the store's opening
    (scan, checks, repairs: every rank's, as the master waits for them) to its end, before
    ``setup_s`` is counted (docs/storage.md, "A job from a store")."""
    store_parts: StoreOpening | None = nested(StoreOpening)
    """The parts of ``store_open_s`` (:class:`StoreOpening`)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LostMachine:
    """A machine found dead (``fault_tolerance = "ulfm"``; :attr:`ElasticStep.lost`)."""

    machine: int
    host: str
    step: int
    """The step the master was in (0: the setup)."""
    phase: str
    """The master's phase: ``setup``, ``step`` or ``stop``."""
    detected_unix: float | None
    """When the master knew (Unix seconds)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class JoinedMachine:
    """A process spawned to replace a lost machine (:attr:`ElasticStep.joined`)."""

    machine: int
    """The lost machine's id, which it takes."""
    host: str
    step: int
    """The first step it is planned in."""
    spawn_s: float
    block_bytes: int
    block_s: float
    """From sending its block to its READY."""
    master_link_sent_bytes: int | None
    """What the master's host link sent meanwhile (None on one host)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Transpose(Part):
    """A linreg step's second product ``X^T z`` (the fields of its own step record)."""

    available: list[int] = empty_list()
    late: list[int] = empty_list()
    load: dict[str, str] = empty_dict()
    rows: dict[str, int] = empty_dict()
    sets: list[dict[str, Any]] = empty_list()
    predicted_s: float = 0.0
    wall_s: float = 0.0
    collect_s: float = 0.0
    decode_s: float = 0.0
    max_error: float = 0.0
    verified: bool = False
    condition: float = 1.0
    transition_waste: str = "0"
    waited_for: list[list[int]] = empty_list()
    cut_off: list[int] = empty_list()
    verify_s: float = 0.0
    """The master's seconds checking decoded products (exactly, or Freivalds' sketch),
    every check of the step (those of a search for a decode that passes too)."""
    wrong_answers: list[dict[str, Any]] = empty_list()
    """Answers found wrong (docs/theory.md A.10): each ``{"machine", "set", "rows",
    "attempt", "found"}`` (``found``: ``spare``, decoded around with the spare answers
    already sent; ``re-asked``, the product asked again within the step)."""
    oracle_time_s: float = 0.0
    true_time_s: float = 0.0

    @classmethod
    def of(cls, step: ElasticStep) -> Transpose:
        return cls(**{k: getattr(step, k) for k in cls.names()})


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticStep(WithLinks, Record):
    """One step of an elastic job (README, "Results"), of every policy: the coded ones and
    the uncoded baseline (``bytes_moved``, ``move_s``, ``moves``: its data moves; 0 for the
    coded policies) and every workload (``eigenvalue``: power; ``residual`` and
    ``transpose``, the step's ``X^T`` product: linreg)."""

    KIND: ClassVar[str] = STEP
    JOB: ClassVar[str | None] = CEC

    step: int
    policy: str
    field: str = ""
    available: list[int]
    preempted: list[int] = empty_list()
    replanned: bool = False
    late: list[int] = empty_list()
    attempts: int = 1
    load: dict[str, str] = empty_dict()
    rows: dict[str, int] = empty_dict()
    sets: list[dict[str, Any]] = empty_list()
    predicted_s: float
    """The plan's prediction of the step's seconds (``CECConfig.predicted_s``)."""
    predicted_planned_s: float = 0.0
    """The prediction of the first attempt's plan (before any re-planning)."""
    wall_s: float
    """The master-observed latency: orders out, results in, decoded."""
    collect_s: float = 0.0
    decode_s: float = 0.0
    compute_s: dict[str, float] = empty_dict()
    sleep_s: dict[str, float] = empty_dict()
    throttle_overrun: list[int] = empty_list()
    max_error: float = 0.0
    verified: bool
    condition: float = 1.0
    transition_waste: str = "0"
    transition_waste_rows: float = 0.0
    bytes_step: int = 0
    bytes_moved: int = 0
    move_s: float = 0.0
    moves: int = 0
    S: int = 0
    suspects: list[int] = empty_list()
    suspects_forced: list[int] = empty_list()
    rejoined: list[int] = empty_list()
    waited_for: list[list[int]] = empty_list()
    cut_off: list[int] = empty_list()
    verify_s: float = 0.0
    """The master's seconds checking decoded products (exactly, or Freivalds' sketch),
    every check of the step (those of a search for a decode that passes too); not in
    ``wall_s`` when the first check passes."""
    master_s: float = 0.0
    """The master's seconds of this step outside ``wall_s``, since the previous step's end:
    the check when it passed, the cut-offs, the record, the line written, the state
    saved, the table printed (every second counted: the summary's ``job_s``)."""
    wrong_answers: list[dict[str, Any]] = empty_list()
    """Answers found wrong (docs/theory.md A.10): each ``{"machine", "set", "rows",
    "attempt", "found"}`` (``found``: ``spare``, decoded around with the spare answers
    already sent; ``re-asked``, the product asked again within the step; ``unused``, a
    spare answer the step did not decode from, re-encoded against the verified step;
    ``probe``, a machine on probation's answer, likewise)."""
    quarantined: list[int] = empty_list()
    """Machines left out of this step's plan for answering wrong (A.10)."""
    quarantine: list[dict[str, Any]] = empty_list()
    """Quarantine events of the step (A.10): each ``{"machine", "host", "event", ...}``,
    ``event`` one of ``caught``, ``block-good``, ``block-repaired`` (with ``bytes`` and
    ``repair_s``), ``readmitted``, ``lost``; ``check_s``: the block check's seconds."""
    lost: list[dict[str, Any]] = empty_list()
    """Machines found dead during this step (``fault_tolerance = "ulfm"``): each
    ``{"machine", "host", "step", "phase", "detected_unix"}`` (:class:`ElasticSummary`)."""
    joined: list[dict[str, Any]] = empty_list()
    """Machines that joined before this step (``replace_lost = "spawn"``): each
    ``{"machine", "host", "step", "spawn_s", "block_bytes", "block_s",
    "master_link_sent_bytes"}``: the id of the lost machine it replaces, where it runs, the
    spawn's seconds, its coded block's bytes, the seconds from sending them to its READY,
    and the bytes the master's host link sent meanwhile (None on one host, where the block
    goes through shared memory)."""
    stand_ins: list[int] = empty_list()
    """Machines the schedule preempts this step, planned because lost machines left fewer
    than ``L + S`` of its available ones alive."""
    stragglers: list[int] = empty_list()
    speed_estimates: dict[str, float] | None = None
    oracle_time_s: float = 0.0
    true_time_s: float = 0.0
    true_over_oracle: float | None = None
    workload: str = "independent"
    eigenvalue: float | None = None
    residual: float | None = None
    transpose: Transpose | None = nested(Transpose)
    """linreg: the step's second product, ``X^T z``."""
    link: LinkBytes | None = part(LinkBytes)
    """Phases ``step`` (and ``moves``: the uncoded baseline); linreg: both products added."""

    SUMMED: ClassVar[tuple[str, ...]] = ("wall_s", "collect_s", "decode_s", "predicted_s",
                                         "oracle_time_s", "true_time_s", "bytes_step",
                                         "verify_s")
    """A linreg step's fields that add its two products."""

    def with_transpose(self, t: ElasticStep, residual: float) -> ElasticStep:
        """This step (the product ``X w``) joined with its ``X^T z`` product ``t``: the
        :attr:`SUMMED` fields added, verified and max_error over both, ``t`` kept in
        :attr:`transpose`."""
        added = {k: getattr(self, k) + getattr(t, k) for k in self.SUMMED}
        oracle, true = added["oracle_time_s"], added["true_time_s"]
        return dataclasses.replace(
            self, **added, residual=residual, transpose=Transpose.of(t),
            verified=self.verified and t.verified, max_error=max(self.max_error, t.max_error),
            quarantine=[*self.quarantine, *t.quarantine],
            true_over_oracle=true / oracle if oracle > 0 else None,
            link=self.link.plus(t.link) if self.link and t.link else None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticSummary(Record):
    """The last line of an elastic job."""

    KIND: ClassVar[str] = SUMMARY
    JOB: ClassVar[str | None] = CEC

    steps: int
    first_step: int = 1
    policy: str = ""
    field: str = ""
    all_verified: bool
    replanned_steps: list[int] = empty_list()
    late_answers_dropped: int = 0
    total_wall_s: float
    total_predicted_s: float
    max_wall_over_predicted: float | None = None
    overhead_ms_per_step: float | None = None
    worst_condition: float = 1.0
    decoder_cache: dict[str, int] = empty_dict()
    """``{"hits", "misses"}`` of the decoder cache."""
    setup_s: float = 0.0
    setup_bytes: int = 0
    idle: dict[str, dict[str, float]] = empty_dict()
    """Machine id -> its idle ``wall_s``, ``cpu_s``, ``idle_steps``, ``cpu_fraction``."""
    machine_steps: dict[str, dict[str, dict[str, Any]]] = empty_dict()
    """Machine id -> step -> ``{"rows", "idle"}``."""
    total_transition_waste: str = "0"
    total_oracle_time_s: float = 0.0
    total_true_time_s: float = 0.0
    lost: list[dict[str, Any]] = empty_list()
    """Every machine found dead (``fault_tolerance = "ulfm"``), in order: ``machine``,
    ``host``, ``step`` (the step the master was in: 0 is the setup), ``phase`` (the
    master's: ``setup``, ``step``, ``stop``) and ``detected_unix`` (when the master knew,
    Unix seconds: beside the kill's own time it is the detection latency)."""
    joined: list[dict[str, Any]] = empty_list()
    """Every machine that joined (:attr:`ElasticStep.joined`), in order."""
    ended_early: str | None = None
    """The job could not go on (too few machines left alive): why, as rank 0 said it; the
    steps before it are in the file, ``all_verified`` is false."""
    machines_left: list[int] | None = None
    """With machines lost: the machines still alive at the end."""
    wrong_answers: int = 0
    """Answers found wrong over the job (docs/theory.md A.10), every product."""
    wrong_answers_after_steps: list[dict[str, Any]] = empty_list()
    """Late answers of the last steps found wrong after the last step (at STOP): their
    machine, row set, rows, attempt, ``found`` (``late``) and ``step``."""
    quarantine: list[dict[str, Any]] = empty_list()
    """Every quarantine event of the job, each with its ``step`` (:class:`ElasticStep`)."""
    job_s: float | None = None
    """The master's run, config line to summary: ``before_steps_s`` + every step's
    ``wall_s`` + ``master_s`` (the sum: ``master_s`` here) + ``after_steps_s``."""
    before_steps_s: float | None = None
    """The store's opening, config, ``X`` (or the store's view of it), the setup, up to the
    first step."""
    after_steps_s: float | None = None
    """After the last step: the end check, STOP, the machines' statistics."""
    master_s: float = 0.0
    """Every step's ``master_s``, added."""
    steps_repeated: int = 0
    """Steps of an iterative workload NOT VERIFIED, whose ``y`` never reached the iterate
    (the end check's reference takes as many steps fewer)."""
    workload_check: dict[str, Any] | None = None
    """Iterative workloads: ``{"workload", "relative_error", "rtol", "ok"}`` of the final
    ``w`` against numpy on the uncoded ``X``."""
