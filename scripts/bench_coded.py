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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import ROOT, mpiexec, read_jsonl, run_mpi  # noqa: E402

from mpi_coded.analysis.calibration.fitted import features_of, load_normalized  # noqa: E402
from mpi_coded.analysis.calibration.predict import JobWork, job_work  # noqa: E402
from mpi_coded.coded.schemes import get as get_scheme  # noqa: E402
from mpi_coded.codes.prices import DEFAULT  # noqa: E402

K, Q, MU = 9, 6, "1/3"
SCALED_REPS = 7
"""Repetitions of each measured scaled-instance job (unified: two jobs, one first and one
last in a run); their medians are compared with the model."""
TRAIN_REPS = 3
"""Repetitions of each training job of the fitted model."""
TRAIN_T = "15,50,300"
"""BDC's training settings beside unified at m = 1800 (docs/theory.md (C.5)): T = 15
pins the blocked products (its encode), T = 50 the small inverses (its reduce), T = 300 the
scalar kernel and copies (its encode) and the per-partition Python (its reduce); unified
pins the RS FFT encoder and decoder."""


def run_scheme(tmp: Path, scheme: str, m: int, n: int, N: int, T: int, field: str,
               reps: int, t_row: float) -> dict:
    spec = get_scheme(scheme)
    eta = spec.rows_per_batch_for(K, Q, MU, m)
    out = tmp / f"{scheme}_{T}.jsonl"
    args = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(Q), "--mu", MU,
            "--rows-per-batch", str(eta), "--n", str(n), "--N", str(N), "--field", field,
            "--straggler", "shiftexp", "--t-row", str(t_row), "--reps", str(reps),
            "--out", str(out)]
    if spec.partitioned:
        args += ["--T", str(T)]
    run_mpi(K + 1, args, timeout=1800)
    runs = [r for r in read_jsonl(out) if r["kind"] == "run"]
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("encode_s", "map_s", "shuffle_s", "reduce_s", "total_s")}
    med["load"] = statistics.median(r["load_measured"] for r in runs)
    med["verified"] = all(r["verified"] for r in runs)
    med["shuffle_Bps"] = statistics.median(r["bytes_on_wire"] / r["shuffle_s"] for r in runs)
    # the exchange alone: bytes over the slowest server's send/receive/cancel time
    med["exchange_Bps"] = statistics.median(
        r["bytes_on_wire"] / max(r["server_shuffle_s"].values()) for r in runs)
    med["plan_s"] = statistics.median(max(r["server_plan_s"].values()) for r in runs)
    med["bytes_on_wire"] = statistics.median(r["bytes_on_wire"] for r in runs)
    med["messages_bytes"] = statistics.median(
        r["bytes_on_wire"] / max(1, r["multicast_values"] + r["unicast_values"]) for r in runs)
    return med


def rs_reduce_speedup(m: int = 720, seed: int = 0) -> dict:
    """One unified reducer's decode at ``m``: the RS FFT decoder against the old inverse path
    (``[I; Cauchy]``, a galois inverse per erasure pattern, then its product)."""
    from mpi_coded.codes.cauchy import CauchyCode
    from mpi_coded.codes.rs_fft import warm_up
    from mpi_coded.codes.rs_sub import RSSubCode
    from mpi_coded.fields import get_field

    f = get_field("gf2^16")
    f.warm_up()
    warm_up()
    r, w = m * K // Q, m // Q
    rng = np.random.default_rng(seed)
    msg = f.random((m, w), rng)
    pos = np.sort(rng.choice(r, size=m, replace=False))
    timings: dict[str, float] = {}
    # RS: best of 3, a fresh code each time (its erasure locator is computed every time);
    # the inverse path once (its cache would make a second decode a mere product)
    for name, make, tries in (("rs_fft", lambda: RSSubCode(f, r, m), 3),
                              ("inverse", lambda: CauchyCode(f, r, m), 1)):
        for _ in range(tries):
            code = make()
            vals = code.encode_rows(pos, msg)
            t = time.perf_counter()
            got = code.decode(pos, vals)
            dt = time.perf_counter() - t
            timings[name] = min(timings.get(name, dt), dt)
            assert np.array_equal(got, msg), f"{name} decoded wrongly"
    return {"rs_reduce_speedup": timings["inverse"] / timings["rs_fft"],
            "rs_reduce_s": timings["rs_fft"], "inverse_reduce_s": timings["inverse"], "m": m}


def scaled_job(tmp: Path, m: int, eta: int, T: int, reps: int, tag: str) -> list[dict]:
    """One scaled-instance job (its own ``mpiexec``): unified (``T = 1``) or BDC at ``T``,
    ``reps`` repetitions; its repetitions' records."""
    scheme = "unified" if T == 1 else "bdc"
    out = tmp / f"scaled_{tag}_{scheme}_{T}.jsonl"
    args = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(Q), "--mu", MU,
            "--rows-per-batch", str(eta), "--n", str(m), "--N", str(m),
            "--field", "gf2^16", "--out", str(out), "--timeout", "1200", "--reps", str(reps)]
    if T > 1:
        args += ["--T", str(T)]
    run_mpi(K + 1, args, timeout=1800)
    runs = [r for r in read_jsonl(out) if r["kind"] == "run"]
    if not runs:
        raise SystemExit(f"scaled T={T}: the job wrote no repetition to {out}")
    return runs


_WORK: dict[tuple[int, int], JobWork] = {}


def scaled_work(m: int, eta: int, T: int) -> JobWork:
    """The job's listed work (:func:`mpi_coded.analysis.calibration.job_work`), cached."""
    from mpi_coded.coded.schemes import coded_params

    if (m, T) not in _WORK:
        p = coded_params("unified" if T == 1 else "bdc", K, Q, MU, eta, m, m, T=T,
                         field="gf2^16")
        jw = job_work(p)
        assert jw is not None  # unified and BDC list their work
        _WORK[(m, T)] = jw
    return _WORK[(m, T)]


def short_mpi_job() -> None:
    """A short coded job (unified at m = 720, 2 repetitions): what the machine looks like
    right after another MPI job."""
    eta = get_scheme("unified").rows_per_batch_for(K, Q, MU, 720)
    with tempfile.TemporaryDirectory() as d:
        run_mpi(K + 1, ["run", "coded", "--scheme", "unified", "--K", str(K), "--q", str(Q),
                        "--mu", MU, "--rows-per-batch", str(eta), "--n", "720", "--N", "720",
                        "--field", "gf2^16", "--reps", "2", "--out", str(Path(d) / "w.jsonl")],
                timeout=600)


def scaled_run(m: int, Ts: list[int], train_Ts: list[int], reps: int, train_reps: int,
               base: dict, table: dict | None, after_job: bool, index: int) -> dict:
    """One independent run of the scaled instance (``m = n = N``, GF(2^16)): short training
    jobs (unified and BDC at ``train_Ts``, ``train_reps`` each) fit the model of
    :mod:`mpi_coded.analysis.calibration.fitted` (docs/theory.md (C.5)); then the measured
    jobs, unified first and last (its repetitions pooled: the machine drifts within a run)
    and BDC at each held-out ``T`` between, ``reps`` each.  Per ``T``: every repetition's
    encode + reduce, the measured ratio (medians), the fitted model's and the table model's
    (:func:`mpi_coded.analysis.calibration.predict_seconds`'s work priced with ``table``,
    or with ``base``)."""
    from mpi_coded.analysis import calibration

    cores = calibration.cores_here()
    eta = get_scheme("unified").rows_per_batch_for(K, Q, MU, m)
    run: dict = {"run": index, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "load_average": os.getloadavg()[0], "after_mpi_job": after_job,
                 "scaled_m": m, "cores": cores}
    if after_job:
        short_mpi_job()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        observations, train_records = [], []
        for T in [1, *train_Ts]:
            recs = scaled_job(tmp, m, eta, T, train_reps, f"train{index}")
            train_records += recs
            feats = features_of(scaled_work(m, eta, T), base)
            observations.append((str(T), feats, recs))
        # every training phase at the run's median map (load_normalized): a repetition
        # that other work on the machine slowed is slowed in its map alike
        train_map = statistics.median(r["map_s"] for r in train_records)
        obs = [calibration.Observation(name, feats, {
            **{ph: statistics.median(load_normalized(recs, ph, train_map))
               for ph in ("encode", "reduce")},
            "map": statistics.median(r["map_s"] for r in recs)})
            for name, feats, recs in observations]
        model = calibration.fit(obs, cores, calibration.phase_overhead(train_records))
        run["train_s"] = time.perf_counter() - t0
        theta = ", ".join(f"{k} x{v:.3f}" for k, v in model.theta.items())
        train = ", ".join(f"{k}: {v['encode']:.2f}/{v['reduce']:.2f}"
                          for k, v in model.training.items())
        print(f"run {index}: fitted on T={[1, *train_Ts]}: {theta}, map x{model.map:.3f}, "
              f"overhead {model.overhead_s * 1e3:.1f} ms, fixed {list(model.fixed)}; "
              f"training pred/meas encode/reduce {train}", flush=True)
        records: dict[str, list[dict]] = {"1": []}
        for T in [1, *Ts, 1]:
            records.setdefault(str(T), []).extend(
                scaled_job(tmp, m, eta, T, reps, f"run{index}_{len(records)}"))
    run["measure_s"] = time.perf_counter() - t0 - run["train_s"]
    run["fit"] = model.to_dict()
    feats_u = features_of(scaled_work(m, eta, 1), base)
    pred_table = {str(T): scaled_work(m, eta, T).seconds(table or base, cores)["wall"]
                  for T in [1, *Ts]}
    reps_er = {T: [r["encode_s"] + r["reduce_s"] for r in recs] for T, recs in records.items()}
    run_map = statistics.median(r["map_s"] for recs in records.values() for r in recs)
    reps_norm = {T: load_normalized(recs, "encode_reduce", run_map)
                 for T, recs in records.items()}
    phases: dict[str, dict] = {}
    for key, recs in records.items():
        f = features_of(scaled_work(m, eta, int(key)), base)
        pred = model.predict(f)
        phases[key] = {
            "scheme": "unified" if key == "1" else "bdc", "reps": len(recs),
            **{f"{ph}_s": statistics.median(r[f"{ph}_s"] for r in recs)
               for ph in ("encode", "reduce", "map")},
            "encode_reduce": calibration.spread(reps_er[key]),
            "server_encode_s": statistics.median(max(r["server_encode_s"].values())
                                                 for r in recs),
            "server_decode_s": statistics.median(max(r["server_decode_s"].values())
                                                 for r in recs),
            "model_encode_s": pred["encode"], "model_reduce_s": pred["reduce"],
            "model_map_s": pred["map"],
            "table_model_encode_s": pred_table[key]["encode"],
            "table_model_reduce_s": pred_table[key]["reduce"],
            "encoder": recs[-1].get("encoder"), "decoder": recs[-1].get("decoder"),
            "verified": all(r["verified"] for r in recs),
            "max_peak_rss_mb": recs[-1].get("max_peak_rss_mb")}
        if key != "1":
            phases[key]["model_ratio"] = model.ratio(f, feats_u)
    uni = statistics.median(reps_er["1"])
    uni_norm = statistics.median(reps_norm["1"])
    tu = pred_table["1"]["encode"] + pred_table["1"]["reduce"]
    run.update(
        reps={T: v for T, v in reps_er.items()},
        reps_normalized=reps_norm, map_reference_s=run_map,
        rep_phases={T: [[r["encode_s"], r["map_s"], r["reduce_s"]] for r in recs]
                    for T, recs in records.items()},
        train_phases={name: [[r["encode_s"], r["map_s"], r["reduce_s"]] for r in recs]
                      for name, _, recs in observations},
        ratio_measured={str(T): statistics.median(reps_er[str(T)]) / uni for T in Ts},
        ratio_measured_normalized={str(T): statistics.median(reps_norm[str(T)]) / uni_norm
                                   for T in Ts},
        ratio_model={str(T): phases[str(T)]["model_ratio"] for T in Ts},
        ratio_table_model={str(T): (pred_table[str(T)]["encode"] + pred_table[str(T)]["reduce"])
                           / tu for T in Ts},
        ratio_measured_compute={
            str(T): (phases[str(T)]["server_encode_s"] + phases[str(T)]["server_decode_s"])
            / (phases["1"]["server_encode_s"] + phases["1"]["server_decode_s"]) for T in Ts},
        phases=phases, verified=all(v["verified"] for v in phases.values()),
        load_average_end=os.getloadavg()[0])
    for T in Ts:
        k = str(T)
        print(f"run {index} T={T}: measured {run['ratio_measured'][k]:.3f}, load-normalized "
              f"{run['ratio_measured_normalized'][k]:.3f} (BDC reps IQR/med "
              f"{phases[k]['encode_reduce']['rel_iqr']:.2f}, unified "
              f"{phases['1']['encode_reduce']['rel_iqr']:.2f}), fitted model "
              f"{run['ratio_model'][k]:.3f}, table model {run['ratio_table_model'][k]:.3f}",
              flush=True)
    return run


def scaled_instance(m: int, runs: int, reps: int, train_reps: int, Ts: list[int] | None,
                    train_Ts: list[int], base: dict, table: dict | None, after_job: bool,
                    out: str | None) -> dict:
    """``runs`` independent runs of the scaled instance (:func:`scaled_run`; the first
    started right after a short MPI job if ``after_job``), each appended to ``out`` as one
    JSON line as it ends, and their summary (:func:`merged`)."""
    eta = get_scheme("unified").rows_per_batch_for(K, Q, MU, m)
    if Ts is None:
        Ts = [T for T in (10, 100, eta) if m % T == 0 and (eta * 36) % T == 0]
    done = []
    for i in range(runs):
        r = scaled_run(m, Ts, train_Ts, reps, train_reps, base, table, after_job and i == 0,
                       i)
        done.append(r)
        if out:
            with open(out, "a") as fh:
                fh.write(json.dumps({"kind": "scaled_run", **r}) + "\n")
    return merged(done)


def merged(runs: list[dict]) -> dict:
    """The runs' summary (:func:`mpi_coded.analysis.calibration.summarize_runs`) and the
    keys the figures read: ``bdc_over_unified_measured`` (median over the runs),
    ``bdc_over_unified_model`` (the fitted model, median over the runs),
    ``bdc_over_unified_table_model``, objects keyed by ``T``."""
    from mpi_coded.analysis import calibration

    summary = calibration.summarize_runs(runs)
    per = summary["per_T"]
    norm = calibration.summarize_runs(runs, measured_key="ratio_measured_normalized",
                                      reps_key="reps_normalized")
    return {
        "bdc_over_unified_measured_normalized": {T: v["measured"]["median"]
                                                 for T, v in norm["per_T"].items()},
        "bdc_over_unified_measured_normalized_iqr": {T: v["measured"]["iqr"]
                                                     for T, v in norm["per_T"].items()},
        "model_over_measured_normalized_ratio": {T: v["model_over_measured"]
                                                 for T, v in norm["per_T"].items()},
        "scaled_summary_normalized": norm,
        "bdc_over_unified_measured": {T: v["measured"]["median"] for T, v in per.items()},
        "bdc_over_unified_measured_iqr": {T: v["measured"]["iqr"] for T, v in per.items()},
        "bdc_over_unified_model": {T: v["model"]["median"] for T, v in per.items()},
        "bdc_over_unified_table_model": {T: v["table_model"]["median"] for T, v in per.items()
                                         if "table_model" in v},
        "model_over_measured_ratio": {T: v["model_over_measured"] for T, v in per.items()},
        "scaled_summary": summary, "scaled_runs": runs,
        "scaled_m": runs[0]["scaled_m"], "scaled_phases": runs[-1]["phases"],
        "all_verified_scaled": all(r["verified"] for r in runs)}


def print_summary(res: dict) -> None:
    for key, what in (("scaled_summary", "medians of the repetitions"),
                      ("scaled_summary_normalized", "each repetition at the run's median map")):
        print_table(res[key], res["scaled_m"], what)


def print_table(s: dict, m: int, what: str) -> None:
    print(f"\nBDC over unified, encode + reduce, m = n = N = {m}, {what}, {s['runs']} "
          f"independent runs (model within {s['tolerance']:.0%}?)")
    print(f"{'T':>5} {'measured':>9} {'IQR runs':>9} {'reps IQR/med':>13} {'model':>7} "
          f"{'model/meas':>10} {'table':>7} comparable within held")
    for T, v in s["per_T"].items():
        reps = (f"{v['reps_bdc']['rel_iqr']:.2f}/{v['reps_unified']['rel_iqr']:.2f}"
                if "reps_bdc" in v else "-")
        tab = f"{v['table_model']['median']:.3f}" if "table_model" in v else "-"
        print(f"{T:>5} {v['measured']['median']:>9.3f} {v['measured']['iqr']:>9.3f} "
              f"{reps:>13} {v['model']['median']:>7.3f} {v['model_over_measured']:>10.3f} "
              f"{tab:>7} {str(v['comparable']):>10} {str(v['within']):>6} {v['held']}")


def read_runs(paths: list[str]) -> list[dict]:
    """The scaled runs in ``paths``: lines ``{"kind": "scaled_run", ...}`` (``--out``) and
    the ``scaled_runs`` of a bench's last JSON line, each run once."""
    runs: list[dict] = []
    seen: set[tuple] = set()
    for path in paths:
        for line in Path(path).read_text().splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            found = ([obj] if obj.get("kind") == "scaled_run" else obj.get("scaled_runs", []))
            for r in found:
                key = (r.get("started"), r.get("run"), r.get("scaled_m"))
                if key not in seen:
                    seen.add(key)
                    runs.append(r)
    if not runs:
        raise SystemExit(f"no scaled runs in {', '.join(paths)}")
    return runs


def p2p(m: int, n: int, N: int, field: str) -> dict:
    """Raw point-to-point on the unified shuffle's own messages (scripts/p2p_throughput.py)."""
    import signal
    import subprocess

    eta = get_scheme("unified").rows_per_batch_for(K, Q, MU, m)
    cmd = [mpiexec(), "-n", str(K + 1), sys.executable,
           str(ROOT / "scripts" / "p2p_throughput.py"), "--scheme", "unified", "--K", str(K),
           "--q", str(Q), "--mu", MU, "--rows-per-batch", str(eta), "--n", str(n),
           "--N", str(N), "--field", field, "--reps", "5"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise SystemExit("p2p benchmark timed out") from None
    return json.loads(out.strip().splitlines()[-1])


def kernel_ratio(degree: int, shape: tuple[int, int, int]) -> float:
    """galois matmul time over gf_kernels time on ``(m x k) @ (k x n)``, medians of 3."""
    import galois

    from mpi_coded import gf_kernels

    gf = galois.GF(2**degree)
    dt = np.uint8 if degree == 8 else np.uint16
    rng = np.random.default_rng(0)
    m, k, n = shape
    a = rng.integers(0, 2**degree, (m, k)).astype(dt)
    b = rng.integers(0, 2**degree, (k, n)).astype(dt)
    ga, gb = a.view(gf), b.view(gf)
    want = np.asarray((ga @ gb).view(np.ndarray))
    assert np.array_equal(gf_kernels.gf_matmul(a, b, degree), want)

    def med(f) -> float:
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    return med(lambda: ga @ gb) / med(lambda: gf_kernels.gf_matmul(a, b, degree))


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
    ap.add_argument("--train-T", dest="train_T", default=TRAIN_T,
                    help=f"BDC T of the training jobs, beside unified (default {TRAIN_T})")
    ap.add_argument("--scaled-reps", dest="scaled_reps", type=int, default=SCALED_REPS,
                    help=f"repetitions per measured scaled job (default {SCALED_REPS})")
    ap.add_argument("--train-reps", dest="train_reps", type=int, default=TRAIN_REPS,
                    help=f"repetitions per training job (default {TRAIN_REPS})")
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
    for T, v in scaled["scaled_phases"].items():
        print(f"scaled m={args.scaled_m} {v['scheme']} T={T} (last run): encode "
              f"{v['encode_s']:.3f} s (server {v['server_encode_s']:.3f}, model "
              f"{v['model_encode_s']:.3f}, {v['encoder']}), reduce {v['reduce_s']:.3f} s "
              f"(server {v['server_decode_s']:.3f}, model {v['model_reduce_s']:.3f}, "
              f"{v['decoder']})", flush=True)
    print_summary(scaled)
    rs_out = {**rs, **scaled, "base_table": base_path, "calibration": table}
    if args.rs_only or args.scaled_only:
        print(json.dumps(rs_out))
        return 0 if scaled["all_verified_scaled"] else 1
    eta_unified = get_scheme("unified").rows_per_batch_for(K, Q, MU, args.m)
    Ts = [T for T in (1, 2, 5, 10, eta_unified) if eta_unified % T == 0 and
          args.m % T == 0 and T <= eta_unified]
    Ts = sorted(set(Ts))
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for scheme in ("uc", "cmr", "sc", "unified"):
            results[scheme] = run_scheme(tmp, scheme, args.m, args.n, args.N, 1, args.field,
                                         args.reps, args.t_row)
        for T in Ts:
            results[f"bdc_T{T}"] = run_scheme(tmp, "bdc", args.m, args.n, args.N, T,
                                              args.field, args.reps, args.t_row)
    print(f"\n{'scheme':<10} {'encode_s':>9} {'map_s':>8} {'shuffle_s':>9} {'reduce_s':>9} "
          f"{'total_s':>8} {'load':>7} ok")
    for name, r in results.items():
        print(f"{name:<10} {r['encode_s']:>9.4f} {r['map_s']:>8.4f} {r['shuffle_s']:>9.4f} "
              f"{r['reduce_s']:>9.4f} {r['total_s']:>8.4f} {r['load']:>7.4f} "
              f"{'yes' if r['verified'] else 'NO'}")
    uni = results["unified"]
    bdc = results[f"bdc_T{eta_unified}"]
    raw = p2p(args.m, args.n, args.N, args.field)
    k8 = kernel_ratio(8, (120, args.n, args.N))
    k16 = kernel_ratio(16, (120, args.n, args.N))
    out = {
        "bdc_over_unified_encode_reduce": (bdc["encode_s"] + bdc["reduce_s"]) /
        (uni["encode_s"] + uni["reduce_s"]),
        "shuffle_over_p2p_throughput": uni["exchange_Bps"] / raw["throughput_Bps"],
        "shuffle_phase_over_p2p_throughput": uni["shuffle_Bps"] / raw["throughput_Bps"],
        "unified_plan_s": uni["plan_s"],
        "gf8_kernel_over_galois": k8,
        "gf16_kernel_over_galois": k16,
        "unified_shuffle_Bps": uni["shuffle_Bps"],
        "p2p_Bps": raw["throughput_Bps"],
        "p2p_messages": raw["messages"],
        "all_verified": all(r["verified"] for r in results.values()),
        "m": args.m, "n": args.n, "N": args.N, "field": args.field, "Ts": Ts,
        "loads": {k: r["load"] for k, r in results.items()},
        **rs_out,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
