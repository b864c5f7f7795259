"""Benchmark of the coded matrix-vector job: every scheme, per-phase times.

A paper-shaped instance scaled to a 2-core machine (the BDC paper: K = 9, q = 6,
mu = 1/3; the paper uses m = n = N = 6000, eta_b = 250): all schemes at the same
``m``, BDC for T from 1 to ``rows-per-batch``, all launched by this script with
mpiexec in one run, then raw MPI point-to-point throughput on the same ranks
and the GF(2^l) kernels against galois on the map shapes.

The last output line is one JSON object with ``bdc_over_unified_encode_reduce``
(BDC at T = rows-per-batch over unified, encode + reduce, medians),
``shuffle_over_p2p_throughput`` (the unified shuffle's exchange, bytes on the wire
over the slowest server's send/receive/cancel time, against raw point-to-point
moving the very same messages without computing: scripts/p2p_throughput.py),
``shuffle_phase_over_p2p_throughput`` (the same with the master-observed phase,
which also counts building the plan and noticing MAP_END), ``gf8_kernel_over_galois``
and ``gf16_kernel_over_galois`` (speedups of the kernels over galois's matmul).

Reed-Solomon codes (docs/theory.md (C.1), (C.4)) add, in the same run:

- ``rs_reduce_speedup``: one unified reducer's decoding at ``m = 720`` (the ``(1080, 720)``
  code, ``N/q = 120`` outputs, a random erasure pattern) by the RS FFT decoder against the
  old path, a ``[I; Cauchy]`` inverse (galois) and its product;
- a scaled paper instance (``m = n = N = --scaled-m``, default 1800, GF(2^16), no
  throttle), in ``--runs`` independent runs (each its own ``mpiexec`` jobs): per run, short
  training jobs (unified and BDC at ``--train-T``, default 15, 50, 300) fit the model of
  :mod:`mpi_coded.analysis.calibration.fitted` (docs/theory.md (C.5)); then the measured
  jobs, unified first and last and BDC at the held-out ``T`` = 10, 100 and rows-per-batch
  between, ``--scaled-reps`` repetitions each.  ``bdc_over_unified_measured`` (encode +
  reduce, median over the runs of each run's ratio of medians) with
  ``bdc_over_unified_measured_iqr`` (over the runs), ``bdc_over_unified_measured_normalized``
  (each repetition's encode + reduce scaled by the run's median map over its own map: the
  map does the same work in both schemes, so it measures the share of the cores the job
  got), ``bdc_over_unified_model`` (the fitted model, median over the runs' fits) and
  ``bdc_over_unified_table_model`` (the table model of docs/theory.md (C.4) with
  ``--calibration FILE`` or the base table), objects keyed by ``T``; ``scaled_summary`` and
  ``scaled_summary_normalized`` (:func:`mpi_coded.analysis.calibration.summarize_runs`: per
  ``T`` the runs' median, quartiles and IQR, the repetitions' spread, model over
  measured, ``comparable`` / ``within`` / ``held``) and ``scaled_runs`` (every run).

``--scaled-only`` runs only the scaled instance (no calibration measured); ``--out FILE``
appends each run as one JSON line as it ends; ``--merge FILE ...`` runs nothing and
summarizes the runs of several invocations (``--out`` files or this script's outputs)::

    python scripts/bench_coded.py --scaled-only --out runs.jsonl            # ~8-12 min
    python scripts/bench_coded.py --scaled-only --after-job --out runs.jsonl
    python scripts/bench_coded.py --merge runs.jsonl

This is the command line: it launches the jobs (``_launch.run_mpi``); the joins of their
records with the model are :mod:`mpi_coded.bench.bench_coded`, the in-process timings
:mod:`mpi_coded.bench.kernel_bench`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import ROOT, mpiexec, run_mpi  # noqa: E402

from mpi_coded.analysis.calibration.fitted import features_of  # noqa: E402
from mpi_coded.bench import bench_coded as bc  # noqa: E402
from mpi_coded.bench.bench_coded import MU, K, Q, merged  # noqa: E402
from mpi_coded.bench.kernel_bench import kernel_ratio, rs_reduce_speedup  # noqa: E402
from mpi_coded.codes.prices import DEFAULT  # noqa: E402


def run_scheme(tmp: Path, scheme: str, m: int, n: int, N: int, T: int, field: str,
               reps: int, t_row: float) -> dict[str, Any]:
    """One scheme's job (its own ``mpiexec``); the medians of its repetitions."""
    out = tmp / f"{scheme}_{T}.jsonl"
    run_mpi(K + 1, bc.coded_args(scheme, m, n, N, T, field, reps, t_row, out), timeout=1800)
    return bc.phase_medians(bc.run_records(out))


def scaled_job(tmp: Path, m: int, eta: int, T: int, reps: int, tag: str) -> list[dict]:
    """One scaled-instance job (its own ``mpiexec``): unified (``T = 1``) or BDC at ``T``,
    ``reps`` repetitions; its repetitions' records."""
    out = tmp / f"scaled_{tag}_{bc.scheme_at(T)}_{T}.jsonl"
    run_mpi(K + 1, bc.scaled_args(m, eta, T, reps, out), timeout=1800)
    runs = bc.run_records(out)
    if not runs:
        raise SystemExit(f"scaled T={T}: the job wrote no repetition to {out}")
    return runs


def short_mpi_job() -> None:
    """A short coded job (unified at m = 720, 2 repetitions): what the machine looks like
    right after another MPI job."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "w.jsonl"
        run_mpi(K + 1, bc.scaled_args(720, bc.eta_for(bc.REFERENCE, 720), 1, 2, out),
                timeout=600)


def scaled_run(m: int, Ts: list[int], train_Ts: list[int], reps: int, train_reps: int,
               base: dict, table: dict | None, after_job: bool, index: int) -> dict:
    """One independent run of the scaled instance (``m = n = N``, GF(2^16)): short training
    jobs (unified and BDC at ``train_Ts``, ``train_reps`` each) fit the model
    (:func:`mpi_coded.bench.bench_coded.fit_run`); then the measured jobs, unified first
    and last (its repetitions pooled: the machine drifts within a run) and BDC at each
    held-out ``T`` between, ``reps`` each, joined with the model
    (:func:`mpi_coded.bench.bench_coded.join_run`)."""
    from mpi_coded.analysis import calibration

    cores = calibration.cores_here()
    eta = bc.eta_for(bc.REFERENCE, m)
    run: dict = {"run": index, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "load_average": os.getloadavg()[0], "after_mpi_job": after_job,
                 "scaled_m": m, "cores": cores}
    if after_job:
        short_mpi_job()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        training = []
        for T in [1, *train_Ts]:
            recs = scaled_job(tmp, m, eta, T, train_reps, f"train{index}")
            training.append((str(T), features_of(bc.scaled_work(m, eta, T), base), recs))
        model = bc.fit_run(training, cores)
        run["train_s"] = time.perf_counter() - t0
        print(bc.fit_line(index, train_Ts, model), flush=True)
        records: dict[str, list[dict]] = {bc.UNIFIED_KEY: []}
        for T in [1, *Ts, 1]:
            records.setdefault(str(T), []).extend(
                scaled_job(tmp, m, eta, T, reps, f"run{index}_{len(records)}"))
    run["measure_s"] = time.perf_counter() - t0 - run["train_s"]
    run["fit"] = model.to_dict()
    run.update(bc.join_run(m, eta, Ts, records, training, model, base, table, cores))
    run["load_average_end"] = os.getloadavg()[0]
    for line in bc.ratio_lines(run, Ts):
        print(line, flush=True)
    return run


def scaled_instance(m: int, runs: int, reps: int, train_reps: int, Ts: list[int] | None,
                    train_Ts: list[int], base: dict, table: dict | None, after_job: bool,
                    out: str | None) -> dict:
    """``runs`` independent runs of the scaled instance (:func:`scaled_run`; the first
    started right after a short MPI job if ``after_job``), each appended to ``out`` as one
    JSON line as it ends, and their summary (:func:`merged`)."""
    Ts = bc.default_Ts(m) if Ts is None else Ts
    done = []
    for i in range(runs):
        r = scaled_run(m, Ts, train_Ts, reps, train_reps, base, table, after_job and i == 0,
                       i)
        done.append(r)
        if out:
            with open(out, "a") as fh:
                fh.write(json.dumps({"kind": bc.SCALED_RUN, **r}) + "\n")
    return merged(done)


def print_summary(res: dict) -> None:
    for key, what in bc.SUMMARIES:
        print_table(res[key], res["scaled_m"], what)


def print_table(s: dict, m: int, what: str) -> None:
    """Print a summary of :func:`merged` (:func:`mpi_coded.bench.bench_coded.table_lines`)."""
    print("\n".join(bc.table_lines(s, m, what)))


def read_runs(paths: list[str]) -> list[dict]:
    """The scaled runs in ``paths`` (:func:`mpi_coded.bench.bench_coded.scaled_runs_in`);
    none: exit with a message."""
    runs = bc.scaled_runs_in(paths)
    if not runs:
        raise SystemExit(f"no scaled runs in {', '.join(paths)}")
    return runs


def p2p(m: int, n: int, N: int, field: str) -> dict:
    """Raw point-to-point on the unified shuffle's own messages (scripts/p2p_throughput.py)."""
    import signal
    import subprocess

    eta = bc.eta_for(bc.REFERENCE, m)
    cmd = [mpiexec(), "-n", str(K + 1), sys.executable,
           str(ROOT / "scripts" / "p2p_throughput.py"), "--scheme", bc.REFERENCE,
           "--K", str(K), "--q", str(Q), "--mu", MU, "--rows-per-batch", str(eta),
           "--n", str(n), "--N", str(N), "--field", field, "--reps", "5"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise SystemExit("p2p benchmark timed out") from None
    return json.loads(out.strip().splitlines()[-1])


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


DEFAULT_BASE = ROOT / "docs" / "runs" / "calibration.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=720, help="rows of A (the paper: 6000)")
    ap.add_argument("--n", type=int, default=720, help="columns of A")
    ap.add_argument("--N", type=int, default=720, help="vectors (a multiple of K and q)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--t-row", type=float, default=0.0002)
    ap.add_argument("--field", default="gf2^16")
    ap.add_argument("--scaled-m", dest="scaled_m", type=int, default=1800,
                    help="m = n = N of the scaled paper instance (RS codes, GF(2^16))")
    ap.add_argument("--scaled-T", dest="scaled_T", default=None,
                    help="held-out T of the scaled instance (default 10,100,rows-per-batch)")
    ap.add_argument("--train-T", dest="train_T", default=bc.TRAIN_T,
                    help=f"BDC T of the training jobs, beside unified (default {bc.TRAIN_T})")
    ap.add_argument("--scaled-reps", dest="scaled_reps", type=int, default=bc.SCALED_REPS,
                    help=f"repetitions per measured scaled job (default {bc.SCALED_REPS})")
    ap.add_argument("--train-reps", dest="train_reps", type=int, default=bc.TRAIN_REPS,
                    help=f"repetitions per training job (default {bc.TRAIN_REPS})")
    ap.add_argument("--runs", type=int, default=1,
                    help="independent runs of the scaled instance (separate mpiexec jobs)")
    ap.add_argument("--after-job", dest="after_job", action="store_true",
                    help="start the first scaled run right after a short MPI job")
    ap.add_argument("--out", default=None,
                    help="append each scaled run here as one JSON line as it ends")
    ap.add_argument("--merge", nargs="+", metavar="FILE", default=None,
                    help="no job: summarize the scaled runs in these files (--out files or "
                         "outputs of this script) across runs")
    ap.add_argument("--base-table", dest="base_table", default=None,
                    help="the calibration file whose prices weigh the work within a class "
                         "(default docs/runs/calibration.json)")
    ap.add_argument("--calibration", default=None,
                    help="a calibration file (mpi-coded model --calibrate) for the table "
                         "model; default: measure (the base table with --scaled-only)")
    ap.add_argument("--rs-only", dest="rs_only", action="store_true",
                    help="only the RS additions (rs_reduce_speedup and the scaled instance)")
    ap.add_argument("--scaled-only", dest="scaled_only", action="store_true",
                    help="only the scaled instance, no calibration measured")
    args = ap.parse_args()
    from mpi_coded.analysis import calibration

    if args.merge:
        res = merged(read_runs(args.merge))
        print_summary(res)
        print(json.dumps({k: v for k, v in res.items() if k != "scaled_runs"}))
        return 0
    base_path = args.base_table or (str(DEFAULT_BASE) if DEFAULT_BASE.is_file() else None)
    base = calibration.load(base_path) if base_path else DEFAULT.to_dict()
    if args.calibration:
        table = calibration.load(args.calibration)
    elif args.scaled_only:
        table = None
    else:
        table = calibration.measure()
    Ts = int_list(args.scaled_T) if args.scaled_T else None
    rs: dict = {}
    if not args.scaled_only:
        rs = rs_reduce_speedup(720)
        print(f"rs_reduce_speedup at m=720: {rs['rs_reduce_speedup']:.0f} "
              f"(rs_fft {rs['rs_reduce_s']:.4f} s, inverse {rs['inverse_reduce_s']:.2f} s)",
              flush=True)
    scaled = scaled_instance(args.scaled_m, args.runs, args.scaled_reps, args.train_reps, Ts,
                             int_list(args.train_T), base, table, args.after_job, args.out)
    print("\n".join(bc.phase_lines(scaled, args.scaled_m)), flush=True)
    print_summary(scaled)
    rs_out = {**rs, **scaled, "base_table": base_path, "calibration": table}
    if args.rs_only or args.scaled_only:
        print(json.dumps(rs_out))
        return 0 if scaled["all_verified_scaled"] else 1
    Ts = bc.bench_Ts(args.m)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for scheme in ("uc", "cmr", "sc", bc.REFERENCE):
            results[scheme] = run_scheme(tmp, scheme, args.m, args.n, args.N, 1, args.field,
                                         args.reps, args.t_row)
        for T in Ts:
            results[f"{bc.CANDIDATE}_T{T}"] = run_scheme(tmp, bc.CANDIDATE, args.m, args.n,
                                                         args.N, T, args.field, args.reps,
                                                         args.t_row)
    print("\n".join(bc.scheme_lines(results)))
    raw = p2p(args.m, args.n, args.N, args.field)
    k8 = kernel_ratio(8, (120, args.n, args.N))
    k16 = kernel_ratio(16, (120, args.n, args.N))
    out = {**bc.calibration_summary(results, args.m, raw, k8, k16),
           "m": args.m, "n": args.n, "N": args.N, "field": args.field, "Ts": Ts,
           "loads": {k: r["load"] for k, r in results.items()},
           **rs_out}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
