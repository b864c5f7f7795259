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
  throttle): unified and BDC at ``T`` = 10, 100 and rows-per-batch, each one MPI job of
  3 repetitions (their medians are compared with the model);
  ``bdc_over_unified_measured`` (encode + reduce, master-observed phases) and
  ``bdc_over_unified_model`` (the calibrated model of :mod:`mpi_coded.analysis.calibration`:
  the phases' wall time, the servers sharing this machine's cores), objects keyed by
  ``T``; ``bdc_over_unified_measured_compute``
  (the same from the slowest server's own encode and decode seconds, without the phases'
  messaging) and ``scaled_phases`` (measured and predicted encode and reduce seconds, the
  encoder and decoder that ran).
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

from mpi_coded.coded.schemes import get as get_scheme  # noqa: E402

K, Q, MU = 9, 6, "1/3"
SCALED_REPS = 3
"""Repetitions of each scaled-instance job; their medians are compared with the model."""


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


def scaled_instance(tmp: Path, m: int, table: dict) -> dict:
    """Unified and BDC at T = 10, 100, rows-per-batch on ``m = n = N``, GF(2^16): measured
    encode + reduce against the calibrated model (the phases' wall time with the servers
    sharing this machine's cores)."""
    from mpi_coded.analysis import calibration
    from mpi_coded.coded.schemes import coded_params

    cores = calibration.cores_here()
    eta = get_scheme("unified").rows_per_batch_for(K, Q, MU, m)
    Ts = [T for T in (10, 100, eta) if m % T == 0 and (eta * 36) % T == 0]
    phases: dict[str, dict] = {}
    for T in [1, *Ts]:
        scheme = "unified" if T == 1 else "bdc"
        out = tmp / f"scaled_{scheme}_{T}.jsonl"
        args = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(Q), "--mu", MU,
                "--rows-per-batch", str(eta), "--n", str(m), "--N", str(m),
                "--field", "gf2^16", "--out", str(out), "--timeout", "1200",
                "--reps", str(SCALED_REPS)]
        if T > 1:
            args += ["--T", str(T)]
        run_mpi(K + 1, args, timeout=1800)
        runs = [r for r in read_jsonl(out) if r["kind"] == "run"]
        warm = runs  # every repetition (the ranks pre-touch their heap)
        med = {k: statistics.median(r[k] for r in warm) for k in ("encode_s", "reduce_s")}
        rec = runs[-1]
        p = coded_params(scheme, K, Q, MU, eta, m, m, T=T, field="gf2^16")
        pred = calibration.predict_seconds(p, table, cores=cores)["wall"]
        phases[str(T)] = {
            "scheme": scheme, "encode_s": med["encode_s"], "reduce_s": med["reduce_s"],
            "first_encode_s": runs[0]["encode_s"], "first_reduce_s": runs[0]["reduce_s"],
            "server_encode_s": statistics.median(max(r["server_encode_s"].values())
                                                 for r in warm),
            "server_decode_s": statistics.median(max(r["server_decode_s"].values())
                                                 for r in warm),
            "model_encode_s": pred["encode"], "model_reduce_s": pred["reduce"],
            "encoder": rec.get("encoder"), "decoder": rec.get("decoder"),
            "verified": all(r["verified"] for r in runs),
            "max_peak_rss_mb": rec.get("max_peak_rss_mb")}
    uni = phases["1"]
    meas = {T: (v["encode_s"] + v["reduce_s"]) / (uni["encode_s"] + uni["reduce_s"])
            for T, v in phases.items() if T != "1"}
    compute = {T: (v["server_encode_s"] + v["server_decode_s"])
               / (uni["server_encode_s"] + uni["server_decode_s"])
               for T, v in phases.items() if T != "1"}
    model = {T: (v["model_encode_s"] + v["model_reduce_s"])
             / (uni["model_encode_s"] + uni["model_reduce_s"])
             for T, v in phases.items() if T != "1"}
    return {"bdc_over_unified_measured": meas, "bdc_over_unified_model": model,
            "bdc_over_unified_measured_compute": compute,
            "model_over_measured_ratio": {T: model[T] / meas[T] for T in meas},
            "model_over_measured_compute_ratio": {T: model[T] / compute[T] for T in meas},
            "scaled_phases": phases, "scaled_m": m, "scaled_rows_per_batch": eta}


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
    ap.add_argument("--calibration", default=None,
                    help="a calibration file (mpi-coded model --calibrate); default: measure")
    ap.add_argument("--rs-only", dest="rs_only", action="store_true",
                    help="only the RS additions (rs_reduce_speedup and the scaled instance)")
    args = ap.parse_args()
    from mpi_coded.analysis import calibration

    table = (calibration.load(args.calibration) if args.calibration
             else calibration.measure())
    rs = rs_reduce_speedup(720)
    print(f"rs_reduce_speedup at m=720: {rs['rs_reduce_speedup']:.0f} "
          f"(rs_fft {rs['rs_reduce_s']:.4f} s, inverse {rs['inverse_reduce_s']:.2f} s)",
          flush=True)
    with tempfile.TemporaryDirectory() as d:
        scaled = scaled_instance(Path(d), args.scaled_m, table)
    for T, v in scaled["scaled_phases"].items():
        print(f"scaled m={args.scaled_m} {v['scheme']} T={T}: encode {v['encode_s']:.3f} s "
              f"(server {v['server_encode_s']:.3f}, model {v['model_encode_s']:.3f}, "
              f"{v['encoder']}), reduce {v['reduce_s']:.3f} s (server "
              f"{v['server_decode_s']:.3f}, model {v['model_reduce_s']:.3f}, {v['decoder']})",
              flush=True)
    rs_out = {**rs, **scaled, "calibration": table}
    if args.rs_only:
        print(json.dumps(rs_out))
        return 0
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
