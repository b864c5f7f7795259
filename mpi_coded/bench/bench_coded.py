"""The coded bench's joins of measured runs with the model (``scripts/bench_coded.py`` is its
command line and launches the jobs; nothing here starts a process).

A paper-shaped instance scaled to a small machine (the BDC paper: ``K = 9, q = 6,
mu = 1/3``).  Two parts:

* every scheme at one ``m``, per-phase medians of each job's repetitions
  (:func:`phase_medians`) and the bench's headline ratios (:func:`calibration_summary`);
* the scaled paper instance (``m = n = N``, GF(2^16)), in independent runs: per run the
  model of :mod:`mpi_coded.analysis.calibration.fitted` fitted on training jobs
  (:func:`fit_run`), then the measured jobs joined with it and with the table model
  (:func:`join_run`); the runs' summary (:func:`merged`) and its table
  (:func:`table_lines`).

Runs are read through :mod:`mpi_coded.results` (:func:`run_records`); the scaled runs a
bench wrote (``--out`` lines of kind :data:`SCALED_RUN`, or the ``scaled_runs`` of a
bench's last JSON line) through :func:`scaled_runs_in`.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mpi_coded import results
from mpi_coded.analysis import calibration
from mpi_coded.analysis.calibration.fitted import (
    Features,
    FittedModel,
    features_of,
    load_normalized,
)
from mpi_coded.analysis.calibration.predict import JobWork, job_work
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.schemes import get as get_scheme

K, Q, MU = 9, 6, "1/3"
"""The paper's servers, servers waited for and storage fraction."""
SCALED_FIELD = "gf2^16"
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
REFERENCE, CANDIDATE = "unified", "bdc"
"""The scaled instance's schemes: ``T = 1`` is the reference, every other ``T`` the
candidate."""
SCALED_RUN = "scaled_run"
"""The ``kind`` of a line ``--out`` appends: one scaled run."""
UNIFIED_KEY = "1"
"""The key of the reference job in a run's per-``T`` objects."""


def scheme_at(T: int) -> str:
    """The scheme of the scaled instance's job at ``T``."""
    return {1: REFERENCE}.get(T, CANDIDATE)


def eta_for(scheme: str, m: int) -> int:
    """Rows per batch of ``scheme`` at the paper's ``K, q, mu`` with ``m`` rows."""
    return get_scheme(scheme).rows_per_batch_for(K, Q, MU, m)


# ------------------------------------------------------------------------------------------
# the jobs' arguments and their records


def coded_args(scheme: str, m: int, n: int, N: int, T: int, field: str, reps: int,
               t_row: float, out: Path) -> list[str]:
    """``run coded`` arguments of one scheme at the paper's ``K, q, mu`` with ``m`` rows
    (shifted-exponential stragglers of ``t_row``; ``T`` if the scheme is partitioned)."""
    spec = get_scheme(scheme)
    args = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(Q), "--mu", MU,
            "--rows-per-batch", str(eta_for(scheme, m)), "--n", str(n), "--N", str(N),
            "--field", field, "--straggler", "shiftexp", "--t-row", str(t_row),
            "--reps", str(reps), "--out", str(out)]
    if spec.partitioned:
        args += ["--T", str(T)]
    return args


def scaled_args(m: int, eta: int, T: int, reps: int, out: Path) -> list[str]:
    """``run coded`` arguments of the scaled instance's job at ``T`` (no throttle)."""
    scheme = scheme_at(T)
    args = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(Q), "--mu", MU,
            "--rows-per-batch", str(eta), "--n", str(m), "--N", str(m),
            "--field", SCALED_FIELD, "--out", str(out), "--timeout", "1200",
            "--reps", str(reps)]
    if get_scheme(scheme).partitioned:
        args += ["--T", str(T)]
    return args


def run_records(path: Path) -> list[dict[str, Any]]:
    """The coded job's ``run`` lines (one per repetition) of the results file at ``path``."""
    return results.records(results.read_results(path), results.RUN, results.CODED)


def phase_medians(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Medians over a job's repetitions: every phase's seconds, the load, the shuffle's
    throughput (phase and exchange alone: bytes over the slowest server's
    send/receive/cancel time), the plan time, bytes and bytes per message; ``verified``."""
    med: dict[str, Any] = {k: statistics.median(r[k] for r in runs)
                           for k in ("encode_s", "map_s", "shuffle_s", "reduce_s", "total_s")}
    med["load"] = statistics.median(r["load_measured"] for r in runs)
    med[results.VERIFIED] = all(r[results.VERIFIED] for r in runs)
    med["shuffle_Bps"] = statistics.median(r["bytes_on_wire"] / r["shuffle_s"] for r in runs)
    med["exchange_Bps"] = statistics.median(
        r["bytes_on_wire"] / max(r["server_shuffle_s"].values()) for r in runs)
    med["plan_s"] = statistics.median(max(r["server_plan_s"].values()) for r in runs)
    med["bytes_on_wire"] = statistics.median(r["bytes_on_wire"] for r in runs)
    med["messages_bytes"] = statistics.median(
        r["bytes_on_wire"] / max(1, r["multicast_values"] + r["unicast_values"]) for r in runs)
    return med


# ------------------------------------------------------------------------------------------
# one run of the scaled instance


_WORK: dict[tuple[int, int], JobWork] = {}


def scaled_work(m: int, eta: int, T: int) -> JobWork:
    """The listed work of the scaled job at ``T``
    (:func:`mpi_coded.analysis.calibration.job_work`), cached."""
    if (m, T) not in _WORK:
        p = coded_params(scheme_at(T), K, Q, MU, eta, m, m, T=T, field=SCALED_FIELD)
        jw = job_work(p)
        assert jw is not None  # unified and BDC list their work
        _WORK[(m, T)] = jw
    return _WORK[(m, T)]


Training = list[tuple[str, Features, list[dict[str, Any]]]]
"""Per training job: its name (``T``), its features and its repetitions' records."""


def fit_run(training: Training, cores: int) -> FittedModel:
    """The fitted model of one run's training jobs: every phase at the run's median map
    (:func:`load_normalized`: a repetition that other work on the machine slowed is
    slowed in its map alike), the phase overhead from all their records."""
    train_records = [r for _, _, recs in training for r in recs]
    train_map = statistics.median(r["map_s"] for r in train_records)
    obs = [calibration.Observation(name, feats, {
        **{ph: statistics.median(load_normalized(recs, ph, train_map))
           for ph in ("encode", "reduce")},
        "map": statistics.median(r["map_s"] for r in recs)})
        for name, feats, recs in training]
    return calibration.fit(obs, cores, calibration.phase_overhead(train_records))


def fit_line(index: int, train_Ts: Sequence[int], model: FittedModel) -> str:
    """One line on the fit of run ``index``: multipliers, map, overhead, training ratios."""
    theta = ", ".join(f"{k} x{v:.3f}" for k, v in model.theta.items())
    train = ", ".join(f"{k}: {v['encode']:.2f}/{v['reduce']:.2f}"
                      for k, v in model.training.items())
    return (f"run {index}: fitted on T={[1, *train_Ts]}: {theta}, map x{model.map:.3f}, "
            f"overhead {model.overhead_s * 1e3:.1f} ms, fixed {list(model.fixed)}; "
            f"training pred/meas encode/reduce {train}")


def _job_phases(key: str, recs: list[dict[str, Any]], er: list[float], pred: Mapping[str, float],
                table: Mapping[str, float]) -> dict[str, Any]:
    """One measured job of a run: its medians beside the fitted and the table model's."""
    return {
        "scheme": scheme_at(int(key)), "reps": len(recs),
        **{f"{ph}_s": statistics.median(r[f"{ph}_s"] for r in recs)
           for ph in ("encode", "reduce", "map")},
        "encode_reduce": calibration.spread(er),
        "server_encode_s": statistics.median(max(r["server_encode_s"].values())
                                             for r in recs),
        "server_decode_s": statistics.median(max(r["server_decode_s"].values())
                                             for r in recs),
        "model_encode_s": pred["encode"], "model_reduce_s": pred["reduce"],
        "model_map_s": pred["map"],
        "table_model_encode_s": table["encode"],
        "table_model_reduce_s": table["reduce"],
        "encoder": recs[-1].get("encoder"), "decoder": recs[-1].get("decoder"),
        results.VERIFIED: all(r[results.VERIFIED] for r in recs),
        "max_peak_rss_mb": recs[-1].get("max_peak_rss_mb")}


def join_run(m: int, eta: int, Ts: Sequence[int], records: dict[str, list[dict[str, Any]]],
             training: Training, model: FittedModel, base: Any, table: Any,
             cores: int) -> dict[str, Any]:
    """The measured jobs of one run (``records``: ``T`` -> repetitions, ``"1"`` unified)
    joined with the fitted ``model`` and the table model
    (:meth:`~mpi_coded.analysis.calibration.JobWork.seconds` priced with ``table``, or
    with ``base``): per ``T`` every repetition's encode + reduce (also load-normalized),
    the measured ratio over unified (medians), the fitted model's and the table model's."""
    u = UNIFIED_KEY
    feats_u = features_of(scaled_work(m, eta, 1), base)
    pred_table = {str(T): scaled_work(m, eta, T).seconds(table or base, cores)["wall"]
                  for T in [1, *Ts]}
    reps_er = {T: [r["encode_s"] + r["reduce_s"] for r in recs] for T, recs in records.items()}
    run_map = statistics.median(r["map_s"] for recs in records.values() for r in recs)
    reps_norm = {T: load_normalized(recs, "encode_reduce", run_map)
                 for T, recs in records.items()}
    phases: dict[str, dict[str, Any]] = {}
    for key, recs in records.items():
        f = features_of(scaled_work(m, eta, int(key)), base)
        phases[key] = _job_phases(key, recs, reps_er[key], model.predict(f), pred_table[key])
        if key != u:
            phases[key]["model_ratio"] = model.ratio(f, feats_u)
    uni = statistics.median(reps_er[u])
    uni_norm = statistics.median(reps_norm[u])
    tu = pred_table[u]["encode"] + pred_table[u]["reduce"]

    def compute(k: str) -> float:
        return phases[k]["server_encode_s"] + phases[k]["server_decode_s"]

    return dict(
        reps=dict(reps_er.items()),
        reps_normalized=reps_norm, map_reference_s=run_map,
        rep_phases={T: [[r["encode_s"], r["map_s"], r["reduce_s"]] for r in recs]
                    for T, recs in records.items()},
        train_phases={name: [[r["encode_s"], r["map_s"], r["reduce_s"]] for r in recs]
                      for name, _, recs in training},
        ratio_measured={str(T): statistics.median(reps_er[str(T)]) / uni for T in Ts},
        ratio_measured_normalized={str(T): statistics.median(reps_norm[str(T)]) / uni_norm
                                   for T in Ts},
        ratio_model={str(T): phases[str(T)]["model_ratio"] for T in Ts},
        ratio_table_model={str(T): (pred_table[str(T)]["encode"] + pred_table[str(T)]["reduce"])
                           / tu for T in Ts},
        ratio_measured_compute={str(T): compute(str(T)) / compute(u) for T in Ts},
        phases=phases, verified=all(v[results.VERIFIED] for v in phases.values()))


def ratio_lines(run: Mapping[str, Any], Ts: Sequence[int]) -> list[str]:
    """One line per held-out ``T`` of a joined run: measured, load-normalized, the
    repetitions' spread, fitted and table model."""
    phases = run["phases"]
    out = []
    for T in Ts:
        k = str(T)
        out.append(
            f"run {run['run']} T={T}: measured {run['ratio_measured'][k]:.3f}, "
            f"load-normalized {run['ratio_measured_normalized'][k]:.3f} (BDC reps IQR/med "
            f"{phases[k]['encode_reduce']['rel_iqr']:.2f}, unified "
            f"{phases[UNIFIED_KEY]['encode_reduce']['rel_iqr']:.2f}), fitted model "
            f"{run['ratio_model'][k]:.3f}, table model {run['ratio_table_model'][k]:.3f}")
    return out


def default_Ts(m: int) -> list[int]:
    """The held-out ``T`` of the scaled instance: 10, 100 and rows-per-batch where valid."""
    eta = eta_for(REFERENCE, m)
    return [T for T in (10, 100, eta) if m % T == 0 and (eta * 36) % T == 0]


# ------------------------------------------------------------------------------------------
# across runs


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs' summary (:func:`mpi_coded.analysis.calibration.summarize_runs`) and the
    keys the figures read: ``bdc_over_unified_measured`` (median over the runs),
    ``bdc_over_unified_model`` (the fitted model, median over the runs),
    ``bdc_over_unified_table_model``, objects keyed by ``T``."""
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
        "all_verified_scaled": all(r[results.VERIFIED] for r in runs)}


SUMMARIES = (("scaled_summary", "medians of the repetitions"),
             ("scaled_summary_normalized", "each repetition at the run's median map"))
"""The two summaries of :func:`merged` and what each measures."""


def table_lines(s: Mapping[str, Any], m: int, what: str) -> list[str]:
    """A summary of :func:`merged` as a table: per ``T`` the measured ratio, its IQR over
    the runs, the repetitions' relative IQR, the models and the verdicts."""
    out = ["", f"BDC over unified, encode + reduce, m = n = N = {m}, {what}, {s['runs']} "
           f"independent runs (model within {s['tolerance']:.0%}?)",
           f"{'T':>5} {'measured':>9} {'IQR runs':>9} {'reps IQR/med':>13} {'model':>7} "
           f"{'model/meas':>10} {'table':>7} comparable within held"]
    for T, v in s["per_T"].items():
        reps = (f"{v['reps_bdc']['rel_iqr']:.2f}/{v['reps_unified']['rel_iqr']:.2f}"
                if "reps_bdc" in v else "-")
        tab = f"{v['table_model']['median']:.3f}" if "table_model" in v else "-"
        out.append(f"{T:>5} {v['measured']['median']:>9.3f} {v['measured']['iqr']:>9.3f} "
                   f"{reps:>13} {v['model']['median']:>7.3f} {v['model_over_measured']:>10.3f} "
                   f"{tab:>7} {str(v['comparable']):>10} {str(v['within']):>6} {v['held']}")
    return out


def phase_lines(scaled: Mapping[str, Any], m: int) -> list[str]:
    """The last run's phases per ``T``: measured, the slowest server's and the model's."""
    return [f"scaled m={m} {v['scheme']} T={T} (last run): encode "
            f"{v['encode_s']:.3f} s (server {v['server_encode_s']:.3f}, model "
            f"{v['model_encode_s']:.3f}, {v['encoder']}), reduce {v['reduce_s']:.3f} s "
            f"(server {v['server_decode_s']:.3f}, model {v['model_reduce_s']:.3f}, "
            f"{v['decoder']})" for T, v in scaled["scaled_phases"].items()]


def scaled_runs_in(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The scaled runs in ``paths``: lines of kind :data:`SCALED_RUN` (``--out``) and the
    ``scaled_runs`` of a bench's JSON lines (its other lines are progress), each run once."""
    runs: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for path in paths:
        for line in results.scan_results(path):
            obj = line.record
            if not isinstance(obj, dict):
                continue
            found = ([obj] if results.kind_of(obj) == SCALED_RUN
                     else obj.get("scaled_runs", []))
            for r in found:
                key = (r.get("started"), r.get("run"), r.get("scaled_m"))
                if key not in seen:
                    seen.add(key)
                    runs.append(r)
    return runs


# ------------------------------------------------------------------------------------------
# every scheme at one m


def scheme_lines(jobs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A table of :func:`phase_medians` per job."""
    out = ["", f"{'scheme':<10} {'encode_s':>9} {'map_s':>8} {'shuffle_s':>9} {'reduce_s':>9} "
           f"{'total_s':>8} {'load':>7} ok"]
    for name, r in jobs.items():
        out.append(f"{name:<10} {r['encode_s']:>9.4f} {r['map_s']:>8.4f} "
                   f"{r['shuffle_s']:>9.4f} {r['reduce_s']:>9.4f} {r['total_s']:>8.4f} "
                   f"{r['load']:>7.4f} {'yes' if r[results.VERIFIED] else 'NO'}")
    return out


def bench_Ts(m: int) -> list[int]:
    """The ``T`` of BDC in the every-scheme part: 1, 2, 5, 10 and unified's rows per batch
    where they divide both."""
    eta = eta_for(REFERENCE, m)
    return sorted({T for T in (1, 2, 5, 10, eta) if eta % T == 0 and m % T == 0 and T <= eta})


def calibration_summary(jobs: Mapping[str, Mapping[str, Any]], m: int, raw: Mapping[str, Any],
                        k8: float, k16: float) -> dict[str, Any]:
    """The every-scheme part's headline: BDC at ``T`` = rows-per-batch over unified
    (encode + reduce), the unified shuffle's throughput over raw point-to-point ``raw``
    (``scripts/p2p_throughput.py``'s output), the GF kernels' speedups ``k8``, ``k16``
    over galois, and the loads."""
    uni = jobs[REFERENCE]
    bdc = jobs[f"{CANDIDATE}_T{eta_for(REFERENCE, m)}"]
    return {
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
        "all_verified": all(r[results.VERIFIED] for r in jobs.values()),
    }
