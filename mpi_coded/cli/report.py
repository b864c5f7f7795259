"""``mpi-coded report FILE.jsonl [FILE ...] --out DIR``: one self-contained HTML page of
results files (docs/report.md).  Pure: no MPI.  A file that is not a results file, a bad
calibration file or a missing matplotlib end with one line on stderr and exit status 2,
and no page is written."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpi_coded.errors import EXIT_BAD_INPUT
from mpi_coded.plotting import PlotUnavailable
from mpi_coded.report import ReportError, write_report


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report", help="results files as one self-contained HTML page (needs matplotlib)",
        description="Read results files (elastic jobs, coded jobs, sweeps) and write "
        "DIR/report.html: tables, figures embedded, every failed or unverified run marked.")
    p.add_argument("files", nargs="+", metavar="FILE.jsonl", help="results files")
    p.add_argument("--out", required=True, metavar="DIR", help="directory of the page")
    p.add_argument("--calibration", default=None, metavar="FILE",
                   help="a calibration file (mpi-coded model --calibrate): each coded "
                        "job's phases predicted in seconds beside the measured ones")
    p.add_argument("--cores", type=int, default=None,
                   help="with --calibration: the cores the servers shared (default: as "
                        "recorded by each job)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    if args.cores is not None and args.cores < 1:
        print(f"mpi-coded: error: cores: must be an integer >= 1 (got {args.cores})",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        rep = write_report(args.files, args.out, args.calibration, args.cores,
                           progress=(lambda _line: None) if args.quiet else None)
    except (ReportError, PlotUnavailable) as exc:
        print(f"mpi-coded: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    status = "everything verified" if not rep.problems else f"{len(rep.problems)} problem(s)"
    print(f"report: wrote {rep.page} ({rep.bytes} bytes, {rep.figures} figures; {status})")
    return 0
