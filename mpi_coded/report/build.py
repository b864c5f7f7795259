"""``mpi-coded report``: results files to one self-contained HTML page.

:func:`write_report` reads every file (:func:`~mpi_coded.report.sources.read_source`:
every line checked, one :class:`~mpi_coded.report.sources.ReportError` naming the file and
line otherwise), draws each job's figures with :mod:`mpi_coded.plotting`, and only then
writes the page (to a temporary file renamed into place: a failed report leaves no
partial page).  With a calibration file, each coded job's phases are predicted in seconds
by :func:`mpi_coded.analysis.compare.job_seconds` (the calibrated model,
:func:`mpi_coded.analysis.calibration.predict_seconds`) at the job's own parameters and
cores, beside the measured ones.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mpi_coded.report.html as H
from mpi_coded import plotting
from mpi_coded.analysis import calibration, compare
from mpi_coded.errors import ConfigError
from mpi_coded.report.sections import (
    Model,
    Section,
    coded_section,
    elastic_section,
    records_section,
    sweep_section,
)
from mpi_coded.report.sources import ReportError, Source, read_source
from mpi_coded.results import CodedJobLines

PAGE = "report.html"
"""The page's name in the output directory."""


@dataclasses.dataclass
class Report:
    """What :func:`write_report` wrote."""

    page: Path
    bytes: int
    figures: int
    problems: list[str]
    sources: list[Source]


def calibrated_model(path: str | os.PathLike[str], cores: int | None = None) -> Model:
    """The calibrated model of a coded job from the calibration file at ``path``
    (:class:`ReportError` if it cannot be read): the wall seconds of each phase at the
    job's parameters, with its servers sharing ``cores`` (default: the cores its config
    line recorded when every rank ran on one node; else a core per server)."""
    try:
        table = calibration.load(str(path))
    except (OSError, ValueError, KeyError, ConfigError) as exc:
        raise ReportError(f"{path}: not a calibration file ({exc})") from None
    cache: dict[tuple[Any, ...], tuple[dict[str, Any] | None, str]] = {}

    def model(job: CodedJobLines) -> tuple[dict[str, Any] | None, str]:
        c = job.config
        run = c.run
        share = cores
        if share is None and run is not None and run.cores and run.world_size and \
                (run.ranks_on_node or 0) >= run.world_size:
            share = int(run.cores)
        key = (c.scheme, c.K, c.q, c.mu, c.rows_per_batch, c.n, c.N, c.T, c.field, share)
        if key not in cache:
            try:
                secs = compare.job_seconds(c, table, cores=share)
            except (ConfigError, ValueError, ZeroDivisionError) as exc:
                cache[key] = (None, f"calibrated model: not available for this job ({exc})")
            else:
                where = (f"{share} cores shared by the {c.K} servers" if share else
                         "a core per server")
                extra = (" The map's throttle (t_row) and straggler delays are not in the "
                         "model." if c.t_row or (c.straggler or "none") != "none" else "")
                cache[key] = ({**secs.wall.to_dict(), "encoder": secs.encoder,
                               "decoder": secs.decoder},
                              f"calibrated model ({path}): wall seconds with {where}; it "
                              f"has no shuffle term.{extra}")
        return cache[key]

    return model


def build_sections(sources: Sequence[Source], model: Model | None) -> list[Section]:
    out: list[Section] = []
    for src in sources:
        out += [elastic_section(src, i, j) for i, j in enumerate(src.elastic)]
        out += [coded_section(src, i, j, model) for i, j in enumerate(src.coded)]
        out += [sweep_section(src, sid, runs) for sid, runs in src.sweeps.items()]
    return out


def _overview(sources: Sequence[Source], sections: Sequence[Section]) -> str:
    rows = [{"file": s.name, "lines": len(s.lines), "elastic": len(s.elastic),
             "coded": len(s.coded), "sweep_runs": sum(len(v) for v in s.sweeps.values()),
             "failed": len(s.failed), "torn": s.torn, "orphans": s.orphans}
            for s in sources]
    cols = [("file", "file"), ("lines", "lines"), ("elastic", "elastic jobs"),
            ("coded", "coded jobs"), ("sweep_runs", "sweep runs"),
            ("failed", "failed runs"), ("torn", "torn last line"),
            ("orphans", "lines outside a job")]
    bad = [bool(s.failed) for s in sources]
    nav = " ".join(f'<a href="#{sec.anchor}">{H.esc(sec.title)}</a><br>' for sec in sections)
    return H.table(cols, rows, "files", bad) + f"<nav>{nav}</nav>"


def render(sources: Sequence[Source], model: Model | None = None
           ) -> tuple[str, list[Section]]:
    """The page's HTML and its sections."""
    sections = build_sections(sources, model)
    problems = [p for sec in sections for p in sec.problems]
    for src in sources:
        problems += [f"{src.name}: a run failed: {f.reason}" for f in src.failed]
    head = ["<h1>mpi_coded results</h1>",
            H.note(f"{len(sources)} file(s): " + ", ".join(s.name for s in sources)),
            H.verdict(not problems, "everything ran and verified" if not problems else
                      f"{len(problems)} problem(s): failed or unverified runs below")]
    if problems:
        head.append("<ul>" + "".join(f"<li>{H.esc(p)}</li>" for p in problems) + "</ul>")
    head.append(_overview(sources, sections))
    body = [*head, "<h2>Jobs</h2>", *[sec.html for sec in sections],
            records_section(list(sources)).html]
    return H.page("mpi_coded report", body), sections


def write_report(paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str],
                 calibration: str | os.PathLike[str] | None = None, cores: int | None = None,
                 progress: Callable[[str], None] | None = None) -> Report:
    """Read ``paths``, draw, and write ``out_dir/report.html``; :class:`ReportError` (and no
    page) for a file that is not a results file, :class:`plotting.PlotUnavailable` without
    matplotlib."""
    plotting.require()
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    model = calibrated_model(calibration, cores) if calibration is not None else None
    sources = []
    for k, p in enumerate(paths, 1):
        src = read_source(p)
        say(f"report: [{k}/{len(paths)}] {src.name}: {src.describe()}")
        sources.append(src)
    text, sections = render(sources, model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    page = out / PAGE
    tmp = out / f".{PAGE}.{os.getpid()}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, page)
    problems = [p for sec in sections for p in sec.problems]
    return Report(page, len(text.encode()), sum(s.figures for s in sections), problems,
                  sources)
