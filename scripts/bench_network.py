"""The network benchmark (issue 19): the coded job and the elastic job on an emulated
cluster with shaped links, measured beside the network model (docs/theory.md (B.7)).

In one run, on emulated clusters made by ``mpi-coded cluster`` (root; one host per rank
with ``--slots 1``: the master on ``node1``, server ``s`` / machine ``n`` on the next
hosts; a cluster per link setting, named ``t19c*``, always taken down, also on an error
or Ctrl-C; deep queues that drop nothing, the default, and TCP Reno on every host,
``--tcp`` (:data:`mpi_coded.cluster.bench.TCP`)):

1. **calibration**, at each rate on the rate's cluster: one MPI message of a few sizes
   between two hosts (round trips with a 1-byte answer, median of the repetitions),
   fitted as ``t = 2 a + 8 bytes / (e rate)`` (``efficiency`` ``e``); a burst of 200
   header-sized messages (``alpha``, seconds per message); every server host sending to
   every other at once (the uncoded shuffle's pattern: ``fabric``, the bits per second
   all links carry together on this machine).  Written into the calibration file's
   ``network`` object (``--calibration``; the first rate's at the top, every rate's in
   ``by_rate``); every model value of the bench uses its rate's;
2. **coded shuffle**: uc, cmr, unified, bdc, lt at 100 Mbit/s and 1 Gbit/s, ``p2p`` and
   ``bcast`` (uc has no multicasts: its bcast case is its p2p run): the measured
   ``shuffle_s`` (median over repetitions) over the model's shuffle seconds for the plan
   of every repetition's real finishing order (``finishing_order`` of its run line):
   the shuffle fitted on the job itself (docs/theory.md (B.8)), trained at each rate on
   uc, cmr and unified with ``p2p`` (``BenchSizes.training``), every other case held out; beside it
   the fit a previous run left in the calibration file (held out across runs) and the
   link-calibrated (B.7) model; ``cmr_over_uc_shuffle`` measured and modelled, beside
   the plain load ratio ``L_cmr / L_uc`` (a broadcast medium) and the bytes ratio;
3. **the unified trade-off**: total latency (encode + map + shuffle + reduce) against
   every feasible ``q`` at ``K = 9`` at 100 Mbit/s, under the shifted-exponential map
   throttle (``--t-row``), measured beside the model (map: the job's own straggler draws
   through the map-end rule; shuffle and gather: the network model; encode and decode:
   the servers' measured compute seconds, which the network model does not price), and
   the best ``q`` of each;
4. **the elastic job** on the seed schedule and on a 20-step random trace, coded
   (``heterogeneous``) and ``uncoded``, at 100 Mbit/s and 1 Gbit/s: total step time,
   ``bytes_moved``, ``move_s``, beside the model (every step: the planner's predicted
   compute seconds plus the step's messages and the uncoded baseline's moves priced on
   the links); ``uncoded_over_coded`` measured and modelled;
5. **link heterogeneity**: the first server's / machine's host at a tenth of the others'
   100 Mbit/s: every scheme (p2p) and both elastic policies, measured and modelled,
   against the uniform 100 Mbit/s runs.

Every run's outputs are verified (the jobs check every product; a line that did not
verify fails the bench).  Progress goes to stderr; the last line of stdout is one JSON
object.  ``--quick``: a smoke version (one rate, two schemes at K = 3, a 3-step schedule
of 3 machines, small sizes; about 15 s on an idle 2-core machine, 40-50 s on a loaded
one).  ``--out DIR`` keeps every job's JSON lines.

    .venv/bin/python scripts/bench_network.py [--quick] [--reps N] [--out DIR] [--calibration FILE]
    .venv/bin/python scripts/bench_network.py --replay DIR [--no-write-calibration]

The logic lives in the package: :mod:`mpi_coded.bench.network_bench` (the bench and its
report), :mod:`mpi_coded.analysis.compare` (result lines beside the models),
:mod:`mpi_coded.cluster.bench` (the clusters and the jobs on them) and
:mod:`mpi_coded.runtime.linkcal` (the calibration's MPI program).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mpi_coded.bench.network_bench import (  # noqa: E402
    BenchSizes,
    NetworkBench,
    link_section,
    write_link_calibration,
)
from mpi_coded.cluster.bench import BenchFailed  # noqa: E402

CALIBRATION = ROOT / "docs" / "runs" / "calibration.json"

FULL = BenchSizes()
QUICK = BenchSizes(quick=True, K=3, q=2, mu="1/2", m=240, n=10, N=480, reps=1,
                   rates=("100mbit",), schemes=("uc", "cmr"), modes=("p2p",), hetero=False,
                   to_m=240, to_N=240, to_t_row=0.001, to_reps=1, to_qs=(),
                   cal_sizes=(512 << 10, 1 << 20), cal_reps=1, el_cols=200,
                   el_traces=("small",), el_rates=("100mbit",))

SEED_TOML = ('job = "cec"\nN = 6\nL = 3\nspeeds = [1, 1, 1.5, 1.5, 2, 2]\nrows = 1260\n'
             'cols = {cols}\nfield = "float64"\nt_row = 0.001\nseed = 0\ntimeout_s = 120.0\n'
             'policy = "{policy}"\n[availability]\nkind = "schedule"\n'
             'schedule = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]\n')
RANDOM_TOML = ('job = "cec"\nN = 8\nL = 3\nspeeds = [1, 1, 1.5, 1.5, 2, 2, 3, 1]\nrows = 1200\n'
               'cols = {cols}\nfield = "float64"\nt_row = 0.0005\nseed = 3\ntimeout_s = 120.0\n'
               'policy = "{policy}"\n[availability]\nkind = "random"\np = 0.25\nsteps = 20\n')
SMALL_TOML = ('job = "cec"\nN = 3\nL = 2\nspeeds = [1, 2, 2]\nrows = 840\ncols = {cols}\n'
              'field = "float64"\nt_row = 0.0005\nseed = 0\ntimeout_s = 120.0\n'
              'policy = "{policy}"\n[availability]\nkind = "schedule"\n'
              'schedule = [[1, 2, 3], [1, 3], [2, 3]]\n')
TRACES = {"seed": SEED_TOML, "random20": RANDOM_TOML, "small": SMALL_TOML}


def bench_run(sz: BenchSizes, out: Path, base: Path, replay: bool = False,
              prior: Any = None) -> tuple[NetworkBench, dict[str, Any]]:
    """Run (or replay) the bench; its JSON object with ``wall_s``."""
    t_start = time.perf_counter()
    bench = NetworkBench(sz, TRACES, out, base, replay=replay, prior=prior)
    result = bench.run().to_dict()
    result["wall_s"] = time.perf_counter() - t_start
    return bench, result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke version")
    ap.add_argument("--out", default=None, help="keep every job's JSON lines in DIR")
    ap.add_argument("--calibration", default=str(CALIBRATION),
                    help="the calibration file whose network object is written")
    ap.add_argument("--no-write-calibration", action="store_true",
                    help="do not write the network object (the bench still uses its fit)")
    ap.add_argument("--reps", type=int, default=None, metavar="N",
                    help="repetitions of each scheme's coded case at each rate (default 3; 1 "
                         "with --quick; the trade-off and the heterogeneity keep theirs); "
                         "with --replay, default: the replayed run's")
    ap.add_argument("--replay", default=None, metavar="DIR",
                    help="no MPI: recompute the JSON object from a previous --out DIR")
    a = ap.parse_args(argv)
    if a.reps is not None and a.reps < 1:
        ap.error(f"--reps: must be at least 1, got {a.reps}")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    sz = QUICK if a.quick else FULL
    if a.reps is not None:
        sz = replace(sz, reps=a.reps)
    elif a.replay is not None and (Path(a.replay) / "bench_network.json").is_file():
        done = json.loads((Path(a.replay) / "bench_network.json").read_text())
        sz = replace(sz, reps=int(done.get("sizes", {}).get("reps", sz.reps)))
    cal_path = Path(a.calibration)
    prior = (json.loads(cal_path.read_text()).get("network") if cal_path.exists() else None)
    if a.replay is not None:
        where = Path(a.replay).resolve()
        _, result = bench_run(sz, where, where, replay=True, prior=prior)
        print(json.dumps(result))
        return 0 if result["all_verified"] else 1
    from mpi_coded.cluster import manage

    why = manage.missing_privilege()
    if why:
        print(f"bench_network: no emulated cluster here: {why}", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: then the teardown runs
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    keep = a.out is not None
    out = Path(a.out) if keep else Path(tempfile.mkdtemp(prefix="t19c-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="t19c-state-"))
    try:
        bench, result = bench_run(sz, out.resolve(), base, prior=prior)
        if not a.no_write_calibration:
            result["calibration_file"] = str(a.calibration)
            write_link_calibration(Path(a.calibration), link_section(bench.cal, bench.fits))
        (out / "bench_network.json").write_text(json.dumps(result) + "\n")
    except BenchFailed as exc:
        print(f"bench_network: {exc}", file=sys.stderr)
        return 1
    finally:
        left = sorted(base.glob("cluster-*/cluster.json"))
        if left:  # a teardown failed: keep its state, say how to finish it
            for f in left:
                print(f"bench_network: still up: mpi-coded cluster down --name "
                      f"{f.parent.name.removeprefix('cluster-')} --dir {f.parent}",
                      file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result))
    return 0 if result["all_verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
