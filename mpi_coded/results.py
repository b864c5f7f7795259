"""Results files, the one schema module: written here, read here.

A results file holds one JSON object per line.  Nothing already measured is lost
when a job dies: every line is written and flushed (and fsync'ed) as soon as it
exists (:class:`ResultsWriter`); a job killed mid-write leaves at most one torn
last line (no final newline), which the readers skip.

Every line has a ``kind`` and a ``job``:

=========== ============== ==================================================
job         kind           record
=========== ============== ==================================================
``cec``     ``config``     :class:`ElasticConfig` (the config, host, versions)
``cec``     ``setup``      :class:`ElasticSetup` (coded blocks sent once)
``cec``     ``step``       :class:`ElasticStep` (one per step)
``cec``     ``summary``    :class:`ElasticSummary`
``coded``   ``config``     :class:`CodedConfig`
``coded``   ``run``        :class:`CodedRun` (one per repetition)
``coded``   ``summary``    :class:`CodedSummary`
(a sweep)   ``run_failed`` :class:`RunFailed` (written by ``scripts/sweep.py``)
=========== ============== ==================================================

Each kind is one :class:`Record`: a frozen dataclass whose fields are the declared
names of the schema (the one place they are spelled).  The runtime builds it,
:class:`ResultsWriter` writes it (:meth:`Record.to_dict`), and
:meth:`Record.from_record` reads the line back into the same class, field for
field.  Fields several kinds share are declared once as a :class:`Part` (e.g.
:class:`RunContext`: host, versions, MPI library and world), written flat into
the line.  Reading takes the fields a class declares, refuses a line that lacks
a required one (:class:`SchemaError`), and keeps the whole line in
:attr:`Record.raw`: lines may carry fields a class does not declare (newer
runtimes add some), and readers tolerate them.

Reading: :func:`read_results` (a file, skipping blank lines and a torn last
line), :func:`scan_results` (every line with its number and parse error, for
checkers), :func:`records` (filter by ``kind`` and ``job``), :func:`views`
(the typed views of one kind), :func:`elastic_jobs` and :func:`coded_jobs`
(a config line and the lines that follow it, per job in a file),
:func:`sweep_runs` (the runs of a sweep's combined file, by the annotation
:data:`SWEEP_KEYS` that ``scripts/sweep.py`` adds to every line), and :func:`frame`
(one kind of line of several files as a pandas DataFrame, a row per typed record;
docs/report.md).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TextIO, TypeVar


def jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays and Fractions to JSON types."""
    import fractions

    import numpy as np

    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, fractions.Fraction):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


class ResultsWriter:
    """Append JSON lines to ``path`` (``None``: keep them in memory only)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lines: list[dict[str, Any]] = []
        self._fh: TextIO | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, record: Record | dict[str, Any]) -> None:
        """Append one line (a :class:`Record`'s :meth:`~Record.to_dict`, or a dict), flushed
        and fsync'ed before returning."""
        rec = jsonable(record.to_dict() if isinstance(record, Record) else record)
        self.lines.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec, sort_keys=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def run_context() -> dict[str, Any]:
    """Host and versions, for reproducibility."""
    import numpy as np

    from mpi_coded import __version__

    return {
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "mpi_coded": __version__,
    }


# ------------------------------------------------------------------------------------------
# the names


CEC = "cec"
"""``job`` of the elastic job's lines."""
CODED = "coded"
"""``job`` of the coded job's lines."""

CONFIG, SETUP, STEP, SUMMARY, RUN, RUN_FAILED = (
    "config", "setup", "step", "summary", "run", "run_failed")
"""The ``kind`` of a line."""

DEFAULT_JOB = {STEP: CEC, SETUP: CEC, RUN: CODED}
"""The job of a line that has no ``job`` field (files of older runtimes), by kind."""

VERIFIED = "verified"
"""Key of a step (elastic) or run (coded) line: the decoded result matched the direct one."""
ALL_VERIFIED = "all_verified"
"""Key of a summary line: every step or run verified."""

VERSION_KEYS = ("python", "numpy", "mpi_coded", "mpi", "platform")
"""Keys of a config line that name the software it ran with (:func:`run_context`, and the MPI
library the runtime adds)."""

SWEEP_KEYS = ("sweep_id", "run", "rep", "params", "host", "versions", "via")
"""Keys ``scripts/sweep.py`` adds to every line of its combined file (besides an optional
``slurm``).  Note that ``run`` there is the run's index, not a ``kind``."""


class SchemaError(ValueError):
    """A results file or line that does not follow the schema."""


# ------------------------------------------------------------------------------------------
# reading lines


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of a results file as read: its 1-based ``number`` and either the parsed
    ``record`` or the ``error`` that kept it from parsing (``torn``: the last line, cut
    short, with no final newline: a write the job did not finish)."""

    number: int
    record: Any = None
    error: str | None = None
    torn: bool = False
    text: str = ""
    """The line as written (kept only for a line that did not parse)."""


def scan_text(text: str) -> list[Line]:
    """Every non-blank line of ``text``, parsed or with its error (:class:`Line`)."""
    out: list[Line] = []
    rows = text.split("\n")
    ends_cut = not text.endswith("\n")
    for i, row in enumerate(rows, 1):
        if not row.strip():
            continue
        try:
            out.append(Line(i, json.loads(row)))
        except json.JSONDecodeError as exc:
            out.append(Line(i, error=f"{exc.msg} (column {exc.colno})",
                            torn=ends_cut and i == len(rows), text=row))
    return out


def scan_results(path: str | os.PathLike[str]) -> list[Line]:
    """:func:`scan_text` of the file at ``path`` (OSError if it cannot be read)."""
    return scan_text(Path(path).read_text(encoding="utf-8"))


def parse_results(text: str, source: str = "results") -> list[dict[str, Any]]:
    """The JSON objects of ``text``, one per non-blank line; a torn last line is skipped.

    Any other line that is not a JSON object raises :class:`SchemaError` naming
    ``source`` and the line number.
    """
    out: list[dict[str, Any]] = []
    for line in scan_text(text):
        if line.torn:
            continue
        if line.error is not None:
            raise SchemaError(f"{source}: line {line.number}: not JSON ({line.error})")
        if not isinstance(line.record, dict):
            raise SchemaError(f"{source}: line {line.number}: not a JSON object")
        out.append(line.record)
    return out


def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every line of the results file at ``path`` (:func:`parse_results`).

    Raises FileNotFoundError / OSError when it cannot be read, :class:`SchemaError`
    on a line (other than a torn last one) that is not a JSON object.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return parse_results(text, str(path))


def kind_of(rec: dict[str, Any]) -> str | None:
    """The line's ``kind`` (None if it has none)."""
    kind = rec.get("kind")
    return kind if isinstance(kind, str) else None


def job_of(rec: dict[str, Any]) -> str | None:
    """The line's ``job``; without one, the job its kind implies (:data:`DEFAULT_JOB`)."""
    job = rec.get("job")
    if isinstance(job, str):
        return job
    kind = kind_of(rec)
    return DEFAULT_JOB.get(kind) if kind is not None else None


def records(lines: Iterable[dict[str, Any]], kind: str | None = None,
            job: str | None = None) -> list[dict[str, Any]]:
    """The lines of ``kind`` (all kinds if None) of ``job`` (all jobs if None), in order."""
    return [r for r in lines if (kind is None or kind_of(r) == kind)
            and (job is None or job_of(r) == job)]


# ------------------------------------------------------------------------------------------
# the records: one typed class per kind of line, written and read back by the same class


R = TypeVar("R", bound="Record")


def _list() -> Any:
    return dataclasses.field(default_factory=list)


def _dict() -> Any:
    return dataclasses.field(default_factory=dict)


def optional() -> Any:
    """A field left out of the line while it is None (absent when read: None again)."""
    return dataclasses.field(default=None, metadata={"omit_none": True})


def part(cls: type[Part], required: bool = False) -> Any:
    """A field holding a :class:`Part`: its fields are written flat into the line, at this
    field's place; an optional part (default) is None when the line lacks it."""
    if required:
        return dataclasses.field(metadata={"part": cls})
    return dataclasses.field(default=None, metadata={"part": cls})


def nested(cls: type[Part]) -> Any:
    """An optional field holding a :class:`Part` written as a nested object (left out while
    None)."""
    return dataclasses.field(default=None, metadata={"nested": cls, "omit_none": True})


def _declared(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.name != "raw"]


def _is_required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class _Fields:
    """Writing and reading a flat group of declared fields (a record or a part)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The keys of the line these fields are written as (parts flattened)."""
        out: list[str] = []
        for f in _declared(cls):
            sub = f.metadata.get("part")
            out += sub.names() if sub is not None else [f.name]
        return tuple(out)

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """The keys every such line must have (those of a required part included)."""
        out: list[str] = []
        for f in _declared(cls):
            sub = f.metadata.get("part")
            if _is_required(f):
                out += sub.required() if sub is not None else [f.name]
        return tuple(out)

    def fields_dict(self) -> dict[str, Any]:
        """The declared fields as the line's keys, in declaration order."""
        out: dict[str, Any] = {}
        for f in _declared(type(self)):
            value = getattr(self, f.name)
            if f.metadata.get("part") is not None:
                if value is not None:
                    out.update(value.fields_dict())
            elif f.metadata.get("nested") is not None and value is not None:
                out[f.name] = value.fields_dict()
            elif value is not None or not f.metadata.get("omit_none"):
                out[f.name] = value
        return out

    @classmethod
    def _kwargs(cls, rec: dict[str, Any]) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        for f in _declared(cls):
            sub = f.metadata.get("part")
            if sub is not None:
                kw[f.name] = sub.take(rec)
            elif f.metadata.get("nested") is not None and isinstance(rec.get(f.name), dict):
                kw[f.name] = f.metadata["nested"](**f.metadata["nested"]._kwargs(rec[f.name]))
            elif f.name in rec:
                kw[f.name] = rec[f.name]
        return kw


@dataclasses.dataclass(frozen=True, kw_only=True)
class Part(_Fields):
    """A group of fields several kinds of line share (host and versions, ...), declared once
    and written flat into each line that has it (:func:`part`)."""

    @classmethod
    def take(cls: type[P], rec: dict[str, Any]) -> P | None:
        """The part in ``rec``; None when ``rec`` lacks one of its required keys (or, for a
        part with none required, all of its keys)."""
        names = cls.names()
        needed = cls.required()
        if any(k not in rec for k in needed) or not any(k in rec for k in names):
            return None
        return cls(**cls._kwargs(rec))


P = TypeVar("P", bound=Part)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record(_Fields):
    """One line of a results file: a frozen dataclass whose fields are the schema's declared
    names (the one place they are spelled).  The runtime builds it, :class:`ResultsWriter`
    writes :meth:`to_dict` (``kind`` and ``job`` first), :meth:`from_record` reads it back
    into the same class, field for field.

    Reading is tolerant: a line may carry keys the class does not declare (newer
    runtimes add some); they stay in :attr:`raw`.  A line lacking a required key is a
    :class:`SchemaError`.  Fields made with :func:`optional` are left out while None, and a
    :func:`part` is written flat (its keys at its place)."""

    KIND: ClassVar[str] = ""
    JOB: ClassVar[str | None] = None

    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    """The whole line as read, extra fields included (empty for a record the runtime built)."""

    def to_dict(self) -> dict[str, Any]:
        """The line: ``kind``, ``job`` (if the kind has one), then the declared fields."""
        head: dict[str, Any] = {"kind": self.KIND}
        if self.JOB is not None:
            head["job"] = self.JOB
        return {**head, **self.fields_dict()}

    @classmethod
    def from_record(cls: type[R], rec: dict[str, Any]) -> R:
        """The record of ``rec``; :class:`SchemaError` if it is of another kind or job or
        lacks a required field.  Fields it does not declare stay in :attr:`raw`."""
        if not isinstance(rec, dict):
            raise SchemaError(f"a results line must be a JSON object, not {type(rec).__name__}")
        what = f"{cls.JOB or 'a'} '{cls.KIND}' line"
        if kind_of(rec) != cls.KIND or (cls.JOB is not None and job_of(rec) != cls.JOB):
            raise SchemaError(f"not a {what}: kind={rec.get('kind')!r} job={job_of(rec)!r}")
        missing = [k for k in cls.required() if k not in rec]
        if missing:
            raise SchemaError(f"a {what} lacks {', '.join(missing)}: {json.dumps(rec)[:120]}")
        return cls(**cls._kwargs(rec), raw=rec)

    def get(self, key: str, default: Any = None) -> Any:
        """Any field of the line, declared or not (a record the runtime built: declared)."""
        if self.raw:
            return self.raw.get(key, default)
        return self.fields_dict().get(key, default)


View = Record
"""The older name of :class:`Record` (the reading side only, before the runtime built them)."""


# ------------------------------------------------------------------------------------------
# parts shared by several kinds


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunContext(Part):
    """Where and with what a job ran: host, versions, the MPI library and world, and the
    waiting strategy this rank resolved (the config line of both jobs)."""

    host: str = ""
    python: str = ""
    platform: str = ""
    numpy: str = ""
    mpi_coded: str = ""
    mpi: str | None = None
    """The MPI library's version line."""
    world_size: int | None = None
    wait_mode: str | None = optional()
    idle_sleep_s: float | None = optional()
    active_sleep_s: float | None = optional()
    dormant_sleep_s: float | None = optional()
    ranks_on_node: int | None = optional()
    cores: int | None = optional()
    network: dict[str, Any] | None = optional()
    """The network the job ran on: an emulated cluster's name, hosts, rates, transport and
    interface (``mpi-coded cluster run`` exports it as ``MPI_CODED_NETWORK``), else
    ``{"emulated": false}``; absent in lines of older runtimes."""

    @classmethod
    def here(cls, **more: Any) -> RunContext:
        """This process's host and versions (:func:`run_context`) and ``more`` (the runtime
        adds the MPI library, world size and waiting strategy)."""
        return cls(**run_context(), **more)


PhaseBytes = dict[str, dict[str, list[int] | None]]
"""Phase -> host -> ``[sent, received]`` bytes (None: not measured on that host)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LinkBytes(Part):
    """The bytes each host's link carried per phase, as its interface counted them, beside
    the bytes the plan sends over it (the network model, :mod:`mpi_coded.analysis.network`),
    in the run and step lines of a job whose ranks ran on several hosts or on an emulated
    network (docs/coded.md, docs/elastic.md "Results"); absent otherwise."""

    link_bytes: PhaseBytes | None = optional()
    """Phase -> host -> ``[sent, received]`` as the host's interface counted them (frames:
    payload, TCP/IP headers, acknowledgements, the MPI library's control); None where no
    rank on the host took part in the phase or its counters could not be read."""
    plan_bytes: PhaseBytes | None = optional()
    """Phase -> host -> ``[sent, received]`` the plan sends between hosts (headers and
    payloads, a multicast as its mode carries it; messages inside a host left out)."""

    def plus(self, other: LinkBytes) -> LinkBytes:
        """Both products of a step added, phase by phase and host by host (None where
        either is None)."""
        return LinkBytes(link_bytes=_add_phases(self.link_bytes, other.link_bytes),
                         plan_bytes=_add_phases(self.plan_bytes, other.plan_bytes))


class WithLinks:
    """The records that carry a :class:`LinkBytes` part (as ``link``): its fields read
    directly."""

    link: LinkBytes | None

    @property
    def link_bytes(self) -> PhaseBytes | None:
        return self.link.link_bytes if self.link is not None else None

    @property
    def plan_bytes(self) -> PhaseBytes | None:
        return self.link.plan_bytes if self.link is not None else None


def _add_phases(a: PhaseBytes | None, b: PhaseBytes | None) -> PhaseBytes | None:
    if a is None or b is None:
        return None
    out: PhaseBytes = {}
    for phase in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(phase, {}), b.get(phase, {})
        out[phase] = {}
        for h in [*x, *(k for k in y if k not in x)]:
            u, v = x.get(h, [0, 0]), y.get(h, [0, 0])
            out[phase][h] = None if u is None or v is None else [u[0] + v[0], u[1] + v[1]]
    return out


# ------------------------------------------------------------------------------------------
# the elastic job's records


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
    schedule: list[list[int]] = _list()
    """Available machines per step (``availability_kind`` schedule or trace)."""
    p: float = 0.0
    steps: int = 0
    trace_path: str | None = optional()
    S: int | None = optional()
    suspect_after: int | None = optional()
    speeds_auto: bool | None = optional()
    estimator: str | None = optional()
    estimator_alpha: float | None = optional()
    estimator_window: int | None = optional()
    stragglers: int | None = optional()
    straggler_factor: float | None = optional()
    workload: str | None = optional()
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
class ElasticSetup(WithLinks, Record):
    """The coded blocks (or the uncoded rows) sent once, before the first step."""

    KIND: ClassVar[str] = SETUP
    JOB: ClassVar[str | None] = CEC

    setup_s: float
    setup_bytes: int = 0
    bytes_per_machine: int = 0
    hosts: dict[str, str] = _dict()
    """Machine id -> the host it runs on."""
    link: LinkBytes | None = part(LinkBytes)
    """Phase ``setup``: measured on the master's host only (the machines report nothing
    before their first step)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Transpose(Part):
    """A linreg step's second product ``X^T z`` (the fields of its own step record)."""

    available: list[int] = _list()
    late: list[int] = _list()
    load: dict[str, str] = _dict()
    rows: dict[str, int] = _dict()
    sets: list[dict[str, Any]] = _list()
    predicted_s: float = 0.0
    wall_s: float = 0.0
    collect_s: float = 0.0
    decode_s: float = 0.0
    max_error: float = 0.0
    verified: bool = False
    condition: float = 1.0
    transition_waste: str = "0"
    waited_for: list[list[int]] = _list()
    cut_off: list[int] = _list()
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
    preempted: list[int] = _list()
    replanned: bool = False
    late: list[int] = _list()
    attempts: int = 1
    load: dict[str, str] = _dict()
    rows: dict[str, int] = _dict()
    sets: list[dict[str, Any]] = _list()
    predicted_s: float
    """The plan's prediction of the step's seconds (``CECConfig.predicted_s``)."""
    predicted_planned_s: float = 0.0
    """The prediction of the first attempt's plan (before any re-planning)."""
    wall_s: float
    """The master-observed latency: orders out, results in, decoded."""
    collect_s: float = 0.0
    decode_s: float = 0.0
    compute_s: dict[str, float] = _dict()
    sleep_s: dict[str, float] = _dict()
    throttle_overrun: list[int] = _list()
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
    suspects: list[int] = _list()
    suspects_forced: list[int] = _list()
    rejoined: list[int] = _list()
    waited_for: list[list[int]] = _list()
    cut_off: list[int] = _list()
    stragglers: list[int] = _list()
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
                                         "oracle_time_s", "true_time_s", "bytes_step")
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
    replanned_steps: list[int] = _list()
    late_answers_dropped: int = 0
    total_wall_s: float
    total_predicted_s: float
    max_wall_over_predicted: float | None = None
    overhead_ms_per_step: float | None = None
    worst_condition: float = 1.0
    decoder_cache: dict[str, int] = _dict()
    """``{"hits", "misses"}`` of the decoder cache."""
    setup_s: float = 0.0
    setup_bytes: int = 0
    idle: dict[str, dict[str, float]] = _dict()
    """Machine id -> its idle ``wall_s``, ``cpu_s``, ``idle_steps``, ``cpu_fraction``."""
    machine_steps: dict[str, dict[str, dict[str, Any]]] = _dict()
    """Machine id -> step -> ``{"rows", "idle"}``."""
    total_transition_waste: str = "0"
    total_oracle_time_s: float = 0.0
    total_true_time_s: float = 0.0
    workload_check: dict[str, Any] | None = None
    """Iterative workloads: ``{"workload", "relative_error", "rtol", "ok"}`` of the final
    ``w`` against numpy on the uncoded ``X``."""


# ------------------------------------------------------------------------------------------
# the coded job's records


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
    speeds: list[float] = _list()
    chunks: int = 8
    seed: int = 0
    reps: int = 1
    timeout_s: float = 120.0
    assignment: str = ""
    """The ``.npy`` assignment matrix of a bdc job ("": the default heuristic)."""
    wait: str | None = optional()
    multicast: str | None = optional()
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
    Q: list[int] = _list()
    extra: list[int] = _list()
    finishing_order: list[int] = _list()
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
    load_analytic_exact: str = ""
    load_plan_exact: str = ""
    padding_values: str = "0"
    strategy: int = 0
    s_q: int = 0
    bytes_on_wire: int = 0
    """Bytes of the shuffle, a multicast counted once per receiver."""
    verified: bool
    max_error: float = 0.0
    verify: str = ""
    """``exact`` or ``freivalds(k)``."""
    encoder: str = ""
    decoder: str = ""
    server_encoder: dict[str, str] = _dict()
    server_decoder: dict[str, str] = _dict()
    peak_rss_mb: dict[str, float] = _dict()
    """``master`` and each server -> peak resident memory in MiB."""
    max_peak_rss_mb: float = 0.0
    server_encode_s: dict[str, float] = _dict()
    server_map: dict[str, CodedServerMap] = _dict()
    server_shuffle_s: dict[str, float] = _dict()
    server_plan_s: dict[str, float] = _dict()
    server_groups_created: dict[str, int] = _dict()
    """``bcast``: group communicators each finisher created in this shuffle (0 for every
    repetition when the servers created every group at setup)."""
    server_groups_s: dict[str, float] = _dict()
    """``bcast``: seconds each finisher spent creating them (inside its ``shuffle_s``)."""
    server_decode_s: dict[str, float] = _dict()
    unresponsive: list[int] = _list()
    """Servers whose map report did not come within the grace period."""
    hosts: dict[str, str] | None = optional()
    """Rank -> the host it ran on (from the READY handshake)."""
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
class CodedSummary(Record):
    """The last line of a coded job."""

    KIND: ClassVar[str] = SUMMARY
    JOB: ClassVar[str | None] = CODED

    reps: int
    all_verified: bool
    mean_total_s: float = 0.0


# ------------------------------------------------------------------------------------------
# (end of the coded job's records)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunFailed(View):
    """A run of a sweep that failed (``scripts/sweep.py``)."""

    KIND: ClassVar[str] = RUN_FAILED
    JOB: ClassVar[str | None] = None

    reason: str
    returncode: int | None = None
    output_tail: str = ""


VIEWS: dict[tuple[str | None, str], type[View]] = {
    (c.JOB, c.KIND): c for c in (ElasticConfig, ElasticSetup, ElasticStep, ElasticSummary,
                                 CodedConfig, CodedRun, CodedSummary, RunFailed)}
"""``(job, kind)`` -> view class."""


def view(rec: dict[str, Any]) -> View:
    """The typed view of any line (:class:`SchemaError` for an unknown job and kind)."""
    kind = kind_of(rec)
    cls = VIEWS.get((job_of(rec), kind or "")) or VIEWS.get((None, kind or ""))
    if cls is None:
        raise SchemaError(f"no view for job={job_of(rec)!r} kind={kind!r}")
    return cls.from_record(rec)


def views(lines: Iterable[dict[str, Any]], cls: type[R]) -> list[R]:
    """The view ``cls`` of every line of its kind and job, in order."""
    return [cls.from_record(r) for r in records(lines, cls.KIND, cls.JOB)]


# ------------------------------------------------------------------------------------------
# jobs in a file


@dataclasses.dataclass
class ElasticJob:
    """One elastic job of a file: its config line and the step and summary lines after it."""

    config: ElasticConfig
    steps: list[ElasticStep] = dataclasses.field(default_factory=list)
    summary: ElasticSummary | None = None

    @property
    def items(self) -> list[ElasticStep]:
        return self.steps


@dataclasses.dataclass
class CodedJobLines:
    """One coded job of a file: its config line and the run and summary lines after it."""

    config: CodedConfig
    runs: list[CodedRun] = dataclasses.field(default_factory=list)
    summary: CodedSummary | None = None

    @property
    def items(self) -> list[CodedRun]:
        return self.runs


def _jobs(lines: Iterable[dict[str, Any]], job: str, item_kind: str, make: Any,
          config_cls: Any, item_cls: Any, summary_cls: Any) -> list[Any]:
    """Group ``job``'s lines: a config line starts a job (``make(config)``), then its
    ``item_kind`` lines (steps or runs) and its summary; lines before any config are left out."""
    jobs: list[Any] = []
    for r in records(lines, job=job):
        kind = kind_of(r)
        if kind == CONFIG:
            jobs.append(make(config_cls.from_record(r)))
        elif kind == item_kind and jobs:
            jobs[-1].items.append(item_cls.from_record(r))
        elif kind == SUMMARY and jobs:
            jobs[-1].summary = summary_cls.from_record(r)
    return jobs


def elastic_jobs(lines: Iterable[dict[str, Any]]) -> list[ElasticJob]:
    """The elastic jobs in ``lines``, in order (config, step lines, summary)."""
    return _jobs(lines, CEC, STEP, ElasticJob, ElasticConfig, ElasticStep, ElasticSummary)


def coded_jobs(lines: Iterable[dict[str, Any]]) -> list[CodedJobLines]:
    """The coded jobs in ``lines``, in order (config, run lines, summary)."""
    return _jobs(lines, CODED, RUN, CodedJobLines, CodedConfig, CodedRun, CodedSummary)


# ------------------------------------------------------------------------------------------
# sweeps


def sweep_note(sweep_id: str, run: int, rep: int, params: dict[str, Any], host: str,
               versions: dict[str, Any], via: str, **extra: Any) -> dict[str, Any]:
    """The annotation a sweep adds to every line of a run (:data:`SWEEP_KEYS`)."""
    note = dict(zip(SWEEP_KEYS, (sweep_id, run, rep, params, host, versions, via)))
    return {**note, **extra}


def run_failed(reason: str, returncode: int | None, output_tail: str) -> dict[str, Any]:
    """The line a sweep writes for a run that failed (a :class:`RunFailed`)."""
    return RunFailed(reason=reason, returncode=returncode, output_tail=output_tail).to_dict()


@dataclasses.dataclass
class SweepRun:
    """One run of a sweep's combined file: its annotation and lines."""

    sweep_id: str
    run: int
    rep: int
    params: dict[str, Any]
    lines: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(records(self.lines, RUN_FAILED))

    @property
    def summary(self) -> dict[str, Any] | None:
        found = [r for r in self.lines if kind_of(r) == SUMMARY]
        return found[-1] if found else None

    @property
    def steps(self) -> list[dict[str, Any]]:
        return records(self.lines, STEP)


def sweep_runs(lines: Iterable[dict[str, Any]], sweep_id: str | None = None) -> list[SweepRun]:
    """The runs of a sweep's combined file (lines without the annotation are left out),
    in order of first appearance; only ``sweep_id``'s when given."""
    runs: dict[tuple[str, int], SweepRun] = {}
    for r in lines:
        if "sweep_id" not in r or (sweep_id and r["sweep_id"] != sweep_id):
            continue
        key = (r["sweep_id"], r["run"])
        if key not in runs:
            runs[key] = SweepRun(r["sweep_id"], r["run"], r["rep"], r["params"])
        runs[key].lines.append(r)
    return list(runs.values())


def verdict(lines: Sequence[dict[str, Any]]) -> str | None:
    """Why the lines of one finished job do not show a verified job, or None when every
    line with :data:`VERIFIED` says true and it has a summary whose :data:`ALL_VERIFIED`
    is true."""
    summaries = records(lines, SUMMARY)
    if not summaries:
        return "no summary line"
    if not all(r.get(VERIFIED) is True for r in lines if VERIFIED in r):
        return "a step did not verify"
    if not all(s.get(ALL_VERIFIED) is True for s in summaries):
        return "summary: all_verified is false"
    return None


# ------------------------------------------------------------------------------------------
# data frames


KINDS = {c.__name__: c for c in VIEWS.values()}
"""Record class names (``"ElasticStep"``, ``"CodedRun"``, ...) -> class, for :func:`frame`."""


def frame_rows(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
               kind: str | type[Record], job: str | None = None) -> list[dict[str, Any]]:
    """The rows :func:`frame` makes: per line of ``kind`` (and ``job``), its typed record's
    fields (:meth:`Record.to_dict`: ``kind``, ``job``, the declared fields, parts flat),
    then the keys the line has that its class does not declare (a sweep's annotation, a
    newer runtime's fields), then ``file`` and ``line`` (its 1-based number)."""
    cls = kind if isinstance(kind, type) else KINDS.get(kind)
    name = cls.KIND if cls is not None else str(kind)
    if cls is not None and job is None:
        job = cls.JOB
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for path in paths:
        for ln in scan_results(path):
            if ln.torn:
                continue
            if ln.error is not None or not isinstance(ln.record, dict):
                raise SchemaError(f"{path}: line {ln.number}: not a JSON object")
            rec = ln.record
            if kind_of(rec) != name or (job is not None and job_of(rec) != job):
                continue
            try:
                typed = view(rec)
            except SchemaError as exc:
                raise SchemaError(f"{path}: line {ln.number}: {exc}") from None
            row = typed.to_dict()
            row.update({k: v for k, v in rec.items() if k not in row})
            row.update(file=str(path), line=ln.number)
            rows.append(row)
    return rows


def frame(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
          kind: str | type[Record] = STEP, job: str | None = None) -> Any:
    """A pandas ``DataFrame`` of one kind of line of the results files ``paths``: one row
    per line, one column per field (:func:`frame_rows`; nested values, e.g. ``load`` or
    ``server_map``, stay Python objects).  ``kind`` is a line's kind (``"step"``,
    ``"run"``, ``"config"``, ``"summary"``, ``"setup"``, ``"run_failed"``), a record class
    or its name (``"CodedRun"``); ``job`` (``"cec"``, ``"coded"``) keeps one job's lines
    (the kinds ``config`` and ``summary`` are both jobs').  pandas is the ``report`` extra;
    it is imported here, not with this module.

    >>> steps = frame("results/cec.jsonl", "step")          # doctest: +SKIP
    >>> steps[["step", "predicted_s", "wall_s", "verified"]]  # doctest: +SKIP
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("frame() needs pandas (pip install pandas, or the 'report' "
                          "extra)") from None
    return pd.DataFrame(frame_rows(paths, kind, job))
