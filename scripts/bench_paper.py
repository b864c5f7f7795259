"""The BDC paper's own setting, run for real, beside the calibrated model.

K = 9, q = 6, mu = 1/3, rows-per-batch 250 (m = n = N = 6000, r = 9000), GF(2^16): the
unified code (one RS code of length 9000) and BDC at each ``--T`` (T RS or ``[I; Cauchy]``
partitions of length 9000/T), each one ``mpiexec -n 10`` job that encodes, maps,
shuffles, decodes and verifies every output (Freivalds' check over GF(2^16)).  Every job's
progress lines are streamed as they come (about 30 s per repetition on 2 cores).

Each job runs ``--reps`` repetitions (default 5: a repetition's reduce can take twice the
others when the servers told to stop are still in their last map chunk) and the median of
each phase is compared with the model; the first repetition is reported too. Touching
memory a rank has not used before costs page faults (on a virtual machine whose pages the
host hands out lazily, about 57 us per 4 KiB page, measured with getrusage: it doubled a
paper-size encode and reduce when 9 ranks share 2 cores); the ranks keep freed memory and
pre-touch their working heap during setup (:mod:`mpi_coded.runtime.core.memory`), so every
repetition reuses pages.

Next to each measured phase, the calibrated model of :mod:`mpi_coded.analysis.calibration`:
the work of the job's own code, priced per call, with the 9 servers sharing this machine's
cores.  Its table of seconds per operation is measured right before and right after each
job and averaged (a shared host's speed drifts by 10-20 % within minutes), unless
``--calibration FILE`` gives one for every job.

``--fit FILE`` adds the fitted model of docs/theory.md (C.5) carried to this held-out
size: the median of the fits of the independent runs in ``FILE`` (``scripts/bench_coded.py
--scaled-only --out FILE``, fitted at m = 1800 on this machine), its work listed for the
paper's jobs and priced with ``--base-table`` (default ``docs/runs/calibration.json``).

The last line is one JSON object: per ``T`` the measured and predicted encode, map and
reduce seconds, the encoder and decoder that ran, the peak RSS of the largest rank;
``encode_model_over_measured`` and ``reduce_model_over_measured`` (keyed by ``T``) and
``bdc_over_unified_measured`` / ``bdc_over_unified_model`` (encode + reduce), with
``--fit`` ``bdc_over_unified_fitted_model`` too.  Results are appended to ``--out`` (one
line per job, each repetition's phases in it) as they come; ``--merge FILE ...`` sets
the invocations in those files side by side as independent runs (median and IQR over the
runs, :func:`mpi_coded.analysis.calibration.summarize_runs`, as ``bench_coded.py --merge``).

    python scripts/bench_paper.py                      # unified and T = 10, 100, 1000, 3000
    python scripts/bench_paper.py --T 1000 --calibration calib.json
    python scripts/bench_paper.py --fit runs.jsonl --out paper.jsonl   # 3 times, then
    python scripts/bench_paper.py --merge paper.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import run_mpi  # noqa: E402

from mpi_coded.analysis import calibration  # noqa: E402
from mpi_coded.analysis.calibration.fitted import features, load_normalized  # noqa: E402
from mpi_coded.coded.schemes import coded_params  # noqa: E402
from mpi_coded.results import RUN, kind_of, read_results  # noqa: E402

K, Q, MU, ETA, M = 9, 6, "1/3", 250, 6000
DEFAULT_BASE = Path(__file__).resolve().parent.parent / "docs" / "runs" / "calibration.json"


def run_one(T: int, tmp: Path, timeout: float, reps: int) -> dict:
    """Run the job at ``T`` (1: unified); the medians of its repetitions."""
    scheme = "unified" if T == 1 else "bdc"
    out = tmp / f"paper_{scheme}_{T}.jsonl"
    args = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(Q), "--mu", MU,
            "--rows-per-batch", str(ETA), "--n", str(M), "--N", str(M), "--field", "gf2^16",
            "--out", str(out), "--timeout", str(int(timeout)), "--reps", str(reps)]
    if T > 1:
        args += ["--T", str(T)]
    t0 = time.perf_counter()
    run_mpi(K + 1, args, timeout=timeout * reps + 120, stream=True)
    wall = time.perf_counter() - t0
    runs = [r for r in read_results(out) if kind_of(r) == RUN]
    if not runs:
        raise SystemExit(f"T={T}: the job wrote no repetition to {out}")
    row: dict = {"T": T, "scheme": scheme, "verified": all(r["verified"] for r in runs),
                 "job_wall_s": wall, "reps": len(runs),
                 "first_rep": {f"{ph}_s": runs[0][f"{ph}_s"] for ph in ("encode", "map", "reduce")},
                 "max_peak_rss_mb": max(r.get("max_peak_rss_mb") or 0.0 for r in runs),
                 "encoder": runs[-1].get("encoder"), "decoder": runs[-1].get("decoder"),
                 "rep_phases": [[r["encode_s"], r["map_s"], r["reduce_s"]] for r in runs]}
    for ph in ("encode", "map", "shuffle", "reduce", "total"):
        row[f"{ph}_s"] = statistics.median(r[f"{ph}_s"] for r in runs)
    return row


def params_of(T: int):
    return coded_params("unified" if T == 1 else "bdc", K, Q, MU, ETA, M, M, T=T,
                        field="gf2^16")


def read_fit(paths: list[str]) -> calibration.FittedModel:
    """The median of the fits of the scaled runs in ``paths`` (``bench_coded.py --out``)."""
    from bench_coded import read_runs

    runs = read_runs(paths)
    return calibration.median_model([calibration.FittedModel.from_dict(r["fit"]) for r in runs])


def add_fitted(row: dict, model: calibration.FittedModel, base: dict | None) -> None:
    """The fitted model's seconds next to the measured ones in ``row``."""
    pred = model.predict(features(params_of(row["T"]), base))
    for ph in ("encode", "map", "reduce"):
        row[f"fitted_model_{ph}_s"] = pred[ph]


def run_of(rows: list[dict]) -> dict:
    """One invocation's jobs as a run of :func:`calibration.summarize_runs`: per ``T`` the
    measured ratio (medians of encode + reduce), the load-normalized one (each repetition
    at the run's median map), the fitted and the table model's."""
    by = {str(r["T"]): r for r in rows}
    if "1" not in by:
        raise SystemExit(f"run {rows[0].get('run_started')}: no unified job (T = 1)")
    er = {T: [e + red for e, _, red in r["rep_phases"]] for T, r in by.items()}
    run_map = statistics.median(mp for r in rows for _, mp, _ in r["rep_phases"])
    norm = {T: load_normalized([{"encode_s": e, "map_s": mp, "reduce_s": red}
                                for e, mp, red in r["rep_phases"]], "encode_reduce", run_map)
            for T, r in by.items()}
    Ts = [T for T in by if T != "1"]

    def model(prefix: str, T: str) -> float:
        return ((by[T][f"{prefix}encode_s"] + by[T][f"{prefix}reduce_s"])
                / (by["1"][f"{prefix}encode_s"] + by["1"][f"{prefix}reduce_s"]))

    run = {"started": rows[0].get("run_started"), "reps": er, "reps_normalized": norm,
           "ratio_measured": {T: statistics.median(er[T]) / statistics.median(er["1"])
                              for T in Ts},
           "ratio_measured_normalized": {T: statistics.median(norm[T])
                                         / statistics.median(norm["1"]) for T in Ts},
           "ratio_model": {T: model("model_", T) for T in Ts},
           "verified": all(r["verified"] for r in rows)}
    if all("fitted_model_encode_s" in r for r in rows):
        run["ratio_fitted_model"] = {T: model("fitted_model_", T) for T in Ts}
    return run


SUMMARIES = (("paper_summary", "ratio_measured", "reps", "medians of the repetitions"),
             ("paper_summary_normalized", "ratio_measured_normalized", "reps_normalized",
              "each repetition at the run's median map"))
"""The merge's views: (key, measured ratio, repetitions, what the table says)."""


def merge(paths: list[str]) -> int:
    """``--merge``: the invocations in ``paths`` as independent runs."""
    from bench_coded import print_table

    groups: dict[str, list[dict]] = {}
    for path in paths:
        for line in read_results(Path(path)):
            if line.get("kind") == "paper_bench" and "rep_phases" in line:
                groups.setdefault(str(line.get("run_started")), []).append(line)
    if not groups:
        raise SystemExit(f"no paper_bench lines with repetitions in {', '.join(paths)}")
    runs = [run_of(rows) for rows in groups.values()]
    out: dict = {"kind": "paper_merge", "paper_runs": runs,
                 "all_verified": all(r["verified"] for r in runs)}
    fitted = all("ratio_fitted_model" in r for r in runs)
    for key, measured, reps, what in SUMMARIES:
        # the model of this bench: the table measured around each job (C.4)
        out[key] = calibration.summarize_runs(runs, measured_key=measured, reps_key=reps)
        print_table(out[key], M, f"{what}, table model")
        if fitted:  # the fit of the m = 1800 runs (C.5), carried to this size
            alt = [{**r, "ratio_model": r["ratio_fitted_model"]} for r in runs]
            out[f"{key}_fitted"] = calibration.summarize_runs(alt, measured_key=measured,
                                                              reps_key=reps)
            print_table(out[f"{key}_fitted"], M, f"{what}, fitted model")
    print(json.dumps(out))
    return 0 if out["all_verified"] else 1


def add_model(row: dict, table: dict, cores: int) -> None:
    """The calibrated model's seconds next to the measured ones in ``row``."""
    T = row["T"]
    p = coded_params(row["scheme"], K, Q, MU, ETA, M, M, T=T, field="gf2^16")
    pred = calibration.predict_seconds(p, table, cores=cores)
    row.update(model_encoder=pred.encoder, model_decoder=pred.decoder, calibration=table)
    for ph in ("encode", "map", "reduce"):
        row[f"model_{ph}_s"] = getattr(pred.wall, ph)
        row[f"{ph}_model_over_measured"] = getattr(pred.wall, ph) / row[f"{ph}_s"]


def mean_table(a: dict, b: dict) -> dict:
    """Key by key, the mean of two calibration tables."""
    return {k: (a[k] + b[k]) / 2 for k in a}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", default="1,10,100,1000,3000",
                    help="comma-separated T (1: the unified code); default 1,10,100,1000,3000")
    ap.add_argument("--calibration", default=None,
                    help="a calibration file (mpi-coded model --calibrate); default: measure")
    ap.add_argument("--out", default=None, help="append one JSON line per job here")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per repetition")
    ap.add_argument("--reps", type=int, default=5,
                    help="repetitions per job (default 5; their medians meet the model)")
    ap.add_argument("--fit", nargs="+", default=None, metavar="FILE",
                    help="scaled runs of bench_coded.py --scaled-only --out: their median fit "
                         "priced at this size")
    ap.add_argument("--base-table", dest="base_table", default=None,
                    help="with --fit: the calibration file of the base prices (default "
                         "docs/runs/calibration.json)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="FILE",
                    help="no job: the invocations in these --out files as independent runs")
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge)
    if args.base_table and not args.fit:
        ap.error("--base-table: only with --fit (the fitted model's base prices)")
    try:
        Ts = [int(x) for x in args.T.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--T: comma-separated integers, got {args.T!r}")
    for T in Ts:  # every rule before any MPI job (T | m, T | r, ...)
        params_of(T)
    cores = calibration.cores_here()
    fixed = calibration.load(args.calibration) if args.calibration else None
    fitted = read_fit(args.fit) if args.fit else None
    base_path = args.base_table or (str(DEFAULT_BASE) if DEFAULT_BASE.is_file() else None)
    base = calibration.load(base_path) if fitted is not None and base_path else None
    # one invocation = one run of --merge: its start, to the microsecond, and the process
    started = (f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime())}."
               f"{int(time.time() * 1e6) % 1_000_000:06d}Z/{os.getpid()}")

    def table_now(when: str) -> dict:
        if fixed is not None:
            return fixed
        print(f"calibrating the kernels ({when}) ...", flush=True)
        return calibration.measure()

    print(f"paper setting: K={K} q={Q} mu={MU} m=n=N={M} GF(2^16); {cores} cores", flush=True)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as d:
        before = table_now("before the first job")
        for i, T in enumerate(Ts):
            print(f"[{i + 1}/{len(Ts)}] T={T}", flush=True)
            row = run_one(T, Path(d), args.timeout, args.reps)
            after = table_now("after the job")  # and before the next one
            add_model(row, mean_table(before, after), cores)
            if fitted is not None:
                add_fitted(row, fitted, base)
            before = after
            row["run_started"] = started
            rows[str(T)] = row
            print(f"T={T}: encode {row['encode_s']:.3f} s (model {row['model_encode_s']:.3f}, "
                  f"{row['encoder']}), map {row['map_s']:.2f} s (model "
                  f"{row['model_map_s']:.2f}), reduce {row['reduce_s']:.3f} s (model "
                  f"{row['model_reduce_s']:.3f}, {row['decoder']}), verified "
                  f"{row['verified']}, peak RSS {row['max_peak_rss_mb']:.0f} MB, job "
                  f"{row['job_wall_s']:.0f} s", flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps({"kind": "paper_bench", **row}) + "\n")
    out: dict = {"paper": rows, "cores": cores,
                 "encode_model_over_measured": {T: r["encode_model_over_measured"]
                                                for T, r in rows.items()},
                 "reduce_model_over_measured": {T: r["reduce_model_over_measured"]
                                                for T, r in rows.items()},
                 "all_verified": all(r["verified"] for r in rows.values())}
    if "1" in rows:
        uni = rows["1"]
        er = "encode_s", "reduce_s"
        out["bdc_over_unified_measured"] = {
            T: sum(r[k] for k in er) / sum(uni[k] for k in er)
            for T, r in rows.items() if T != "1"}
        out["bdc_over_unified_model"] = {
            T: (r["model_encode_s"] + r["model_reduce_s"])
            / (uni["model_encode_s"] + uni["model_reduce_s"])
            for T, r in rows.items() if T != "1"}
        if fitted is not None:
            out["fit"] = fitted.to_dict()
            out["bdc_over_unified_fitted_model"] = {
                T: (r["fitted_model_encode_s"] + r["fitted_model_reduce_s"])
                / (uni["fitted_model_encode_s"] + uni["fitted_model_reduce_s"])
                for T, r in rows.items() if T != "1"}
    print(json.dumps(out))
    return 0 if out["all_verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
