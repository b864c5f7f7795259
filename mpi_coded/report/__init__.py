"""``mpi-coded report``: results files (JSON lines of both jobs and of sweeps) as one
self-contained HTML page (docs/report.md).

* :mod:`.sources`: reading the files, every line checked (:func:`read_source`,
  :class:`ReportError` naming the file and line);
* :mod:`.sections`: one section per elastic job, coded job and sweep, and the run records;
  figures drawn by :mod:`mpi_coded.plotting`;
* :mod:`.html`: the page's building blocks and its status script (what a headless browser
  reads back: script errors, every image's natural width);
* :mod:`.build`: :func:`write_report`, and the calibrated model of a coded job
  (:func:`calibrated_model`).
"""

from mpi_coded.report.build import PAGE, Report, calibrated_model, render, write_report
from mpi_coded.report.html import status_of
from mpi_coded.report.sources import ReportError, Source, read_source

__all__ = ["PAGE", "Report", "ReportError", "Source", "calibrated_model", "read_source",
           "render", "status_of", "write_report"]
