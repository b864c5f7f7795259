"""Results files, the one schema module: written here, read here.

A results file holds one JSON object per line.  Nothing already measured is lost
when a job dies: every line is written and flushed (and fsync'ed) as soon as it
exists (:class:`ResultsWriter`); a job killed mid-write leaves at most one torn
last line (no final newline), which the readers skip.

Every line has a ``kind`` and a ``job``:

=========== ============== ==================================================
job         kind           view
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

The runtime writes plain dicts; the views are the reading side: frozen
dataclasses whose fields are the declared names of the schema (the one place
they are spelled), built with :meth:`View.from_record`.  A view takes the fields
it declares, refuses a line that lacks a required one (:class:`SchemaError`),
and keeps the whole line in :attr:`View.raw`: lines may carry fields a view does
not declare (newer runtimes add some), and readers tolerate them.

Reading: :func:`read_results` (a file, skipping blank lines and a torn last
line), :func:`scan_results` (every line with its number and parse error, for
checkers), :func:`records` (filter by ``kind`` and ``job``), :func:`views`
(the typed views of one kind), :func:`elastic_jobs` and :func:`coded_jobs`
(a config line and the lines that follow it, per job in a file), and
:func:`sweep_runs` (the runs of a sweep's combined file, by the annotation
:data:`SWEEP_KEYS` that ``scripts/sweep.py`` adds to every line).
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

    def write(self, record: dict[str, Any]) -> None:
        rec = jsonable(record)
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
# typed views of the lines


V = TypeVar("V", bound="View")


def _list() -> Any:
    return dataclasses.field(default_factory=list)


def _dict() -> Any:
    return dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class View:
    """A typed, read-only view of one results line (module docstring)."""

    KIND: ClassVar[str] = ""
    JOB: ClassVar[str | None] = None

    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    """The whole line, extra fields included."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The declared field names of this kind of line."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "raw")

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """The fields every such line must have."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "raw"
                     and f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)

    @classmethod
    def from_record(cls: type[V], rec: dict[str, Any]) -> V:
        """The view of ``rec``; :class:`SchemaError` if it is of another kind or job or
        lacks a required field.  Fields it does not declare stay in :attr:`raw`."""
        if not isinstance(rec, dict):
            raise SchemaError(f"a results line must be a JSON object, not {type(rec).__name__}")
        what = f"{cls.JOB or 'a'} '{cls.KIND}' line"
        if kind_of(rec) != cls.KIND or (cls.JOB is not None and job_of(rec) != cls.JOB):
            raise SchemaError(f"not a {what}: kind={rec.get('kind')!r} job={job_of(rec)!r}")
        missing = [k for k in cls.required() if k not in rec]
        if missing:
            raise SchemaError(f"a {what} lacks {', '.join(missing)}: {json.dumps(rec)[:120]}")
        return cls(**{k: rec[k] for k in cls.names() if k in rec}, raw=rec)

    def get(self, key: str, default: Any = None) -> Any:
        """Any field of the line, declared or not."""
        return self.raw.get(key, default)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticConfig(View):
    """The first line of an elastic job: its config (``CECConfig.to_dict()``), host and
    versions.  Keys left at their defaults by newer config options may be absent."""

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
    schedule: list[list[int]] = _list()
    """Available machines per step (``availability_kind`` schedule or trace)."""
    availability_kind: str = "schedule"
    p: float = 0.0
    steps: int = 0
    first_step: int = 1
    host: str = ""
    mpi: str | None = None
    world_size: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticSetup(View):
    KIND: ClassVar[str] = SETUP
    JOB: ClassVar[str | None] = CEC

    setup_s: float
    setup_bytes: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticStep(View):
    """One step of an elastic job (README, "Results"); more fields may follow."""

    KIND: ClassVar[str] = STEP
    JOB: ClassVar[str | None] = CEC

    step: int
    policy: str
    available: list[int]
    predicted_s: float
    """The plan's prediction of the step's seconds (``CECConfig.predicted_s``)."""
    wall_s: float
    """The master-observed latency: orders out, results in, decoded."""
    verified: bool
    field: str = ""
    preempted: list[int] = _list()
    replanned: bool = False
    late: list[int] = _list()
    load: dict[str, str] = _dict()
    rows: dict[str, int] = _dict()
    sets: list[dict[str, Any]] = _list()
    collect_s: float = 0.0
    decode_s: float = 0.0
    compute_s: dict[str, float] = _dict()
    sleep_s: dict[str, float] = _dict()
    max_error: float = 0.0
    condition: float = 1.0
    transition_waste: str = "0"
    bytes_step: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElasticSummary(View):
    KIND: ClassVar[str] = SUMMARY
    JOB: ClassVar[str | None] = CEC

    steps: int
    all_verified: bool
    total_wall_s: float
    total_predicted_s: float
    policy: str = ""
    first_step: int = 1
    replanned_steps: list[int] = _list()
    max_wall_over_predicted: float | None = None
    overhead_ms_per_step: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedConfig(View):
    """The first line of a coded job: ``CodedJob.to_dict()``, host and versions."""

    KIND: ClassVar[str] = CONFIG
    JOB: ClassVar[str | None] = CODED

    scheme: str
    K: int
    q: int
    mu: str
    rows_per_batch: int
    n: int
    N: int
    T: int = 1
    field: str = ""
    straggler: str = ""
    t_row: float = 0.0
    seed: int = 0
    reps: int = 1
    assignment: str = ""
    """The ``.npy`` assignment matrix of a bdc job ("": the default heuristic)."""
    m: int = 0
    r: int = 0
    host: str = ""


PHASE_KEYS = {"encode": "encode_s", "map": "map_s", "shuffle": "shuffle_s",
              "reduce": "reduce_s"}
"""Field of a coded ``run`` line holding each phase's seconds."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedRun(View):
    """One repetition of a coded job (README, "The coded job"); more fields may follow."""

    KIND: ClassVar[str] = RUN
    JOB: ClassVar[str | None] = CODED

    rep: int
    scheme: str
    K: int
    q: int
    mu: str
    """A fraction string, e.g. ``"1/2"``."""
    rows_per_batch: int
    m: int
    n: int
    N: int
    field: str
    verified: bool
    T: int = 1
    straggler: str = ""
    seed: int = 0
    Q: list[int] = _list()
    extra: list[int] = _list()
    encode_s: float = 0.0
    map_s: float = 0.0
    shuffle_s: float = 0.0
    reduce_s: float = 0.0
    total_s: float = 0.0
    multicast_values: int = 0
    unicast_values: int = 0
    load_measured: float = 0.0
    load_measured_exact: str = ""
    load_analytic: float = 0.0
    load_analytic_exact: str = ""
    load_plan_exact: str = ""
    max_error: float = 0.0

    def phase_s(self, phase: str) -> float:
        """Seconds of ``phase`` (``encode``, ``map``, ``shuffle``, ``reduce``)."""
        return float(getattr(self, PHASE_KEYS[phase]))


@dataclasses.dataclass(frozen=True, kw_only=True)
class CodedSummary(View):
    KIND: ClassVar[str] = SUMMARY
    JOB: ClassVar[str | None] = CODED

    reps: int
    all_verified: bool
    mean_total_s: float = 0.0


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


def views(lines: Iterable[dict[str, Any]], cls: type[V]) -> list[V]:
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
class CodedJob:
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


def coded_jobs(lines: Iterable[dict[str, Any]]) -> list[CodedJob]:
    """The coded jobs in ``lines``, in order (config, run lines, summary)."""
    return _jobs(lines, CODED, RUN, CodedJob, CodedConfig, CodedRun, CodedSummary)


# ------------------------------------------------------------------------------------------
# sweeps


def sweep_note(sweep_id: str, run: int, rep: int, params: dict[str, Any], host: str,
               versions: dict[str, Any], via: str, **extra: Any) -> dict[str, Any]:
    """The annotation a sweep adds to every line of a run (:data:`SWEEP_KEYS`)."""
    note = dict(zip(SWEEP_KEYS, (sweep_id, run, rep, params, host, versions, via)))
    return {**note, **extra}


def run_failed(reason: str, returncode: int | None, output_tail: str) -> dict[str, Any]:
    """The line a sweep writes for a run that failed."""
    return {"kind": RUN_FAILED, "reason": reason, "returncode": returncode,
            "output_tail": output_tail}


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
