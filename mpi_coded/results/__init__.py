"""Results files, the one schema package: written here, read here.

A results file holds one JSON object per line.  Nothing already measured is lost
when a job dies: every line is written and flushed (and fsync'ed) as soon as it
exists (:class:`ResultsWriter`); a job killed mid-write leaves at most one torn
last line (no final newline), which the readers skip.

Every line has a ``kind`` and a ``job`` (their values: :mod:`.names`):

=========== ============== ==================================================
job         kind           record
=========== ============== ==================================================
``cec``     ``config``     :class:`ElasticConfig` (the config, host, versions)
``cec``     ``setup``      :class:`ElasticSetup` (coded blocks sent once)
``cec``     ``step``       :class:`ElasticStep` (one per step)
``cec``     ``summary``    :class:`ElasticSummary`
``coded``   ``config``     :class:`CodedConfig`
``coded``   ``run``        :class:`CodedRun` (one per repetition)
``coded``   ``abandoned``  :class:`CodedAbandoned` (a repetition a server's death ended)
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

The modules, each importing only those above it:

================ ==========================================================
``names``        the ``job`` and ``kind`` values and shared keys; :class:`SchemaError`
``reading``      the one reader of files: :func:`read_results`, :func:`scan_results`,
                 :func:`kind_of`, :func:`job_of`, :func:`records`
``record``       :class:`Record`, :class:`Part` and the field helpers
``common``       :class:`RunContext`, :class:`LinkBytes`, :class:`RunFailed`
``elastic``      the elastic job's records (:class:`ElasticStep`, ...)
``coded``        the coded job's records (:class:`CodedRun`, ...)
``writer``       :class:`ResultsWriter`, :func:`jsonable`; :func:`try_lock`, :func:`wait_unheld`:
                 the file lock of a watcher's write
``last_word``    :class:`LastWord`, :func:`watch`, :func:`watcher_main`: the watcher that
                 writes the summary of a job whose rank 0 was killed before it could
``jobs``         :func:`view`, :func:`views`, :func:`elastic_jobs`, :func:`coded_jobs`
``sweeps``       :func:`sweep_note`, :func:`run_failed`, :func:`sweep_runs`, :func:`verdict`
``frames``       :func:`frame` (pandas, imported lazily)
================ ==========================================================

Import from the package (``from mpi_coded.results import ElasticStep``): it re-exports
every public name of its modules.
"""

from __future__ import annotations

from mpi_coded.results.coded import (
    PHASE_KEYS,
    CodedAbandoned,
    CodedConfig,
    CodedRecord,
    CodedRun,
    CodedServerMap,
    CodedSummary,
)
from mpi_coded.results.common import (
    LinkBytes,
    PhaseBytes,
    RunContext,
    RunFailed,
    WithLinks,
    run_context,
)
from mpi_coded.results.elastic import (
    ElasticConfig,
    ElasticSetup,
    ElasticStep,
    ElasticSummary,
    JoinedMachine,
    LostMachine,
    StoreOpening,
    Transpose,
)
from mpi_coded.results.frames import KINDS, frame, frame_rows
from mpi_coded.results.jobs import (
    VIEWS,
    CodedJobLines,
    ElasticJob,
    coded_jobs,
    elastic_jobs,
    view,
    views,
)
from mpi_coded.results.last_word import LastWord, watch, watcher_main
from mpi_coded.results.names import (
    ABANDONED,
    ALL_VERIFIED,
    CEC,
    CODED,
    CONFIG,
    DEFAULT_JOB,
    JOB_KEY,
    KIND_KEY,
    RUN,
    RUN_FAILED,
    SCHEMA_KEY,
    SCHEMA_VERSION,
    SETUP,
    STEP,
    SUMMARY,
    SWEEP_KEYS,
    VERIFIED,
    VERSION_KEYS,
    SchemaError,
    check_schema,
    schema_major,
)
from mpi_coded.results.reading import (
    Line,
    job_of,
    kind_of,
    parse_results,
    read_results,
    records,
    scan_results,
    scan_text,
)
from mpi_coded.results.record import P, Part, R, Record, View, nested, optional, part
from mpi_coded.results.sweeps import SweepRun, run_failed, sweep_note, sweep_runs, verdict
from mpi_coded.results.writer import WATCHER_WAIT_S, ResultsWriter, jsonable, try_lock, wait_unheld

__all__ = [
    # names
    "ABANDONED", "ALL_VERIFIED", "CEC", "CODED", "CONFIG", "DEFAULT_JOB", "JOB_KEY", "KIND_KEY",
    "RUN", "RUN_FAILED", "SCHEMA_KEY", "SCHEMA_VERSION", "SETUP", "STEP", "SUMMARY",
    "SWEEP_KEYS", "VERIFIED", "VERSION_KEYS", "check_schema", "schema_major",
    "SchemaError",
    # reading
    "Line", "job_of", "kind_of", "parse_results", "read_results", "records", "scan_results",
    "scan_text",
    # record
    "P", "Part", "R", "Record", "View", "nested", "optional", "part",
    # common
    "LinkBytes", "PhaseBytes", "RunContext", "RunFailed", "WithLinks", "run_context",
    # elastic
    "ElasticConfig", "ElasticSetup", "ElasticStep", "ElasticSummary", "Transpose",
    "JoinedMachine", "LostMachine", "StoreOpening",
    # coded
    "PHASE_KEYS", "CodedAbandoned", "CodedConfig", "CodedRecord", "CodedRun", "CodedServerMap",
    "CodedSummary",
    # writer
    "WATCHER_WAIT_S", "ResultsWriter", "jsonable", "try_lock", "wait_unheld",
    # last_word
    "LastWord", "watch", "watcher_main",
    # jobs
    "VIEWS", "CodedJobLines", "ElasticJob", "coded_jobs", "elastic_jobs", "view", "views",
    # sweeps
    "SweepRun", "run_failed", "sweep_note", "sweep_runs", "verdict",
    # frames
    "KINDS", "frame", "frame_rows",
]
