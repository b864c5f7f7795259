"""The analytic side beside the real runs: model curves, measured points (PNG).

    python scripts/figures.py --run [--small] --out docs/figures [--keep-results DIR]
    python scripts/figures.py --results coded_T.jsonl coded_K.jsonl cec.jsonl --out DIR
    python scripts/figures.py --network-bench docs/runs/bench_network.jsonl --out docs/figures

Three figures, the MODEL as curves and REAL runs (JSON lines of ``mpi-coded run``) as points:

``coded_vs_T.png``
    BDC against the unified scheme (the BDC paper) as the number of partitions ``T`` grows:
    (a) communication load, (b) delay ``encode + map + reduce``, (c) the same per phase.
``coded_vs_K.png``
    the same against the number of servers ``K`` (``q = round(2K/3)``, ``mu q = 2``,
    ``m`` close to a target, BDC with the largest ``T`` dividing ``m`` and ``r`` whose
    partitions keep at least ``--part-rows`` rows).
``cec_steps.png``
    heterogeneous against cyclic elastic computing (the heterogeneous CEC paper), per step of
    the schedule:
    (a) step time, (b) cumulative time.

The figures and the jobs are :mod:`mpi_coded.plotting.figures` (this is its command line;
the model's normalisation and the figures' contents are documented there and in
:mod:`mpi_coded.plotting.coded_figures` and :mod:`mpi_coded.plotting.elastic_figures`).

``--results``: every file is one figure's data, told apart by content (files of one kind are
merged).  ``--run`` launches the jobs itself (each an ``mpiexec`` in its own process group
with a timeout, :func:`_launch.run_mpi`), writes exactly those three files and draws them.
``--rs-bench``, ``--paper-bench``, ``--network-bench`` draw a bench's last JSON line.  The
last output line is a JSON summary; an error is one line on stderr (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import run_mpi  # noqa: E402

from mpi_coded.plotting import figures  # noqa: E402
from mpi_coded.plotting.figures import FigError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--run", action="store_true", help="launch the jobs (mpiexec), then draw")
    mode.add_argument("--results", nargs="+", type=Path, metavar="FILE",
                      help="JSON-lines results to draw (one figure's data per file)")
    mode.add_argument("--rs-bench", type=Path, metavar="FILE", default=None,
                      help="the output of scripts/bench_coded.py (its last line): draw "
                           "rs_bdc_vs_T.png, BDC over unified with Reed-Solomon codes")
    mode.add_argument("--paper-bench", type=Path, metavar="FILE", default=None,
                      help="the output of scripts/bench_paper.py (its last line): draw "
                           "rs_paper_phases.png and rs_bdc_vs_T_paper.png")
    mode.add_argument("--network-bench", type=Path, metavar="FILE", default=None,
                      help="the output of scripts/bench_network.py (its last line): draw "
                           + ", ".join(figures.NETWORK_PNGS.values()))
    ap.add_argument("--small", action="store_true",
                    help="with --run: a tiny version (float64, few ranks; well under a minute)")
    ap.add_argument("--out", type=Path, required=True, help="directory for the PNGs")
    ap.add_argument("--keep-results", type=Path, default=None, metavar="DIR",
                    help="with --run: keep coded_T.jsonl, coded_K.jsonl, cec.jsonl here")
    args = ap.parse_args(argv)
    try:
        if args.small and not args.run:
            raise FigError("--small applies only with --run")
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise FigError("matplotlib is not installed (pip install matplotlib, or the "
                           "'plot' extra)") from None
        benches = {"rs": args.rs_bench, "paper": args.paper_bench,
                   "network": args.network_bench}
        bench = next((k for k, v in benches.items() if v is not None), None)
        if bench is not None:
            summary = figures.draw_bench(plt, bench, benches[bench], args.out)
        elif args.run:
            preset = figures.PRESETS["small" if args.small else "full"]
            with tempfile.TemporaryDirectory() as d:
                files = figures.run_all(preset, Path(d), run_mpi)
                if args.keep_results is not None:
                    args.keep_results.mkdir(parents=True, exist_ok=True)
                    for f in files.values():
                        shutil.copy(f, args.keep_results / f.name)
                groups: dict[str, list[Any]] = {
                    k: figures.classify(p, figures.read_results(p))[1] for k, p in files.items()}
                summary = figures.draw_all(plt, groups, args.out)
        else:
            summary = figures.draw_files(plt, args.results, args.out)
    except FigError as exc:
        print(f"figures.py: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
