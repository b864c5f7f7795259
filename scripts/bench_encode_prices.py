"""Each server's encode at the paper's size, alone, beside the table model's price of it.

The table model of docs/theory.md (C.4) prices every call the runtime makes with one
table of seconds per operation, then shares the cores among the servers. This bench
takes the sharing out: in one process it times every server's own encode
(``code.encode(A, rows)``, the runtime's call, median of ``--reps``) of the paper's
setting (K = 9, q = 6, mu = 1/3, m = n = N = 6000 or ``--m``, GF(2^16); unified for
``T = 1``, BDC at each other ``T``) and prices the same server's work list with the table
(``encode_work(rows, n).seconds``), split by kernel. Measured over model, summed over the
servers, per ``T``: where it is not the same for every ``T`` the table's relative prices,
not the contention, are what a ratio of two schemes gets wrong.

The table is measured first (``mpi_coded.analysis.calibration.measure``, about 25 s)
unless ``--calibration FILE`` gives one. Progress goes to stderr; the last stdout line is
one JSON object. About a minute on 2 cores.

    python scripts/bench_encode_prices.py [--T 1,10,100,1000,3000] [--reps 3] [--m 6000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paper import MU, K, M, Q  # noqa: E402

from mpi_coded.analysis import calibration  # noqa: E402
from mpi_coded.coded.schemes import coded_params  # noqa: E402
from mpi_coded.coded.schemes import get as get_scheme  # noqa: E402
from mpi_coded.codes.prices import CostTable  # noqa: E402
from mpi_coded.codes.work import price  # noqa: E402
from mpi_coded.errors import ConfigError  # noqa: E402


def params_at(T: int, m: int):
    """The paper's setting at ``m = n = N`` (6000: the paper's own), unified for ``T = 1``."""
    eta = get_scheme("unified").rows_per_batch_for(K, Q, MU, m)
    return coded_params("unified" if T == 1 else "bdc", K, Q, MU, eta, m, m, T=T,
                        field="gf2^16")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", default="1,10,100,1000,3000",
                    help="comma-separated T (1: the unified code)")
    ap.add_argument("--reps", type=int, default=3, help="encodes timed per server")
    ap.add_argument("--calibration", default=None,
                    help="a calibration file (default: measure one now)")
    ap.add_argument("--m", type=int, default=M,
                    help=f"m = n = N (default {M}, the paper's; smaller for a quick check)")
    a = ap.parse_args(argv)
    try:
        Ts = [int(x) for x in a.T.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--T: comma-separated integers, got {a.T!r}")
    if not Ts:
        ap.error("--T: at least one T")
    if a.reps < 1:
        ap.error(f"--reps: must be at least 1, got {a.reps}")
    for T in Ts:  # every rule before any work
        try:
            params_at(T, a.m)
        except ConfigError as exc:
            ap.error(f"--T {T} at --m {a.m}: {exc}")
    doc = None
    if a.calibration:
        try:
            doc = calibration.load(a.calibration)
        except (ConfigError, OSError) as exc:
            ap.error(f"--calibration: {exc}")
    from mpi_coded.coded.code import build_code
    from mpi_coded.coded.placement import build_placement
    from mpi_coded.fields import get_field

    if doc is None:
        print("calibrating the kernels ...", file=sys.stderr, flush=True)
        doc = calibration.measure()
    table = CostTable.of(doc)
    f = get_field("gf2^16")
    f.warm_up()
    A = f.random((a.m, a.m), np.random.default_rng(0))
    out: dict = {"bench": "encode_prices", "m": a.m, "reps": a.reps, "by_T": {}}
    for T in Ts:
        p = params_at(T, a.m)
        code = build_code(p, f)
        code.warm_up()
        pl = build_placement(p)
        servers = []
        for s in range(p.K):
            rows = pl.stored_rows(s)
            cw = code.encode_work(rows, p.n)
            code.encode(A, rows)  # warm: this code's kernels and scratch
            walls = []
            for _ in range(a.reps):
                t = time.perf_counter()
                code.encode(A, rows)
                walls.append(time.perf_counter() - t)
            by: dict[str, float] = defaultdict(float)
            for w in cw.work:
                by[w.kernel.value] += price([w], table)
            servers.append({"server": s, "measured_s": statistics.median(walls),
                            "model_s": cw.seconds(table), "model_by_kernel": dict(by)})
        meas = sum(x["measured_s"] for x in servers)
        model = sum(x["model_s"] for x in servers)
        kernels: dict[str, float] = defaultdict(float)
        for x in servers:
            for k, v in x["model_by_kernel"].items():
                kernels[k] += v
        out["by_T"][str(T)] = {"measured_s": meas, "model_s": model,
                               "measured_over_model": meas / model,
                               "model_share": {k: v / model for k, v in kernels.items()},
                               "servers": servers}
        top = ", ".join(f"{k} {v / model:.2f}" for k, v in sorted(
            kernels.items(), key=lambda kv: -kv[1]) if v / model >= 0.05)
        print(f"T={T}: encode summed over the servers {meas:.3f} s measured, {model:.3f} s "
              f"modelled (measured / model {meas / model:.2f}; model's kernels: {top})",
              file=sys.stderr, flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
