"""``mpi-coded model`` and ``mpi-coded solve``: the analytic side (pure, no MPI;
docs/theory.md (B.3)-(B.6)).

Hook-up (in :func:`mpi_coded.cli.main.build_parser`, next to ``register_load``)::

    from mpi_coded.cli import analysis as analysis_commands
    analysis_commands.register(sub)  # = register_model(sub) and register_solve(sub)

``model`` prints the predicted load, servers waited for and delay per phase of
one scheme (:func:`mpi_coded.analysis.model.predict`); ``--json`` prints exactly
``{"scheme", "load", "servers_needed", "delay": {"encode", "map", "reduce",
"total"}}``.  ``solve`` finds a BDC assignment matrix ``P``
(:mod:`mpi_coded.analysis.solvers`), optionally saves it as ``.npy`` (what
``run coded --assignment`` reads); ``--json`` prints ``{"solver", "load",
"servers_needed"}``.  Bad input raises :class:`~mpi_coded.errors.ConfigError`
(one line, exit 2, via :func:`mpi_coded.cli.main`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mpi_coded.analysis import calibration
from mpi_coded.analysis.bdc_load import make_instance
from mpi_coded.analysis.model import CONVENTIONS, MODEL_SCHEMES, model_params, predict
from mpi_coded.analysis.solvers import SOLVERS, load_assignment, save_assignment, solve
from mpi_coded.coded.schemes import names
from mpi_coded.codes.lt import DEFAULT_C, DEFAULT_DELTA
from mpi_coded.errors import ConfigError, require


def _calibrate(args: argparse.Namespace) -> int:
    table = calibration.measure(quick=args.quick)
    doc = calibration.write(table, args.out)
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"calibration written to {args.out} (seconds per operation):")
    for key, val in table.items():
        print(f"  {key:<16} {val:.4g}")
    return 0


def _run_model(args: argparse.Namespace) -> int:
    if args.calibrate:
        return _calibrate(args)
    missing = [f"--{name}" for name in ("scheme", "K", "q", "mu") if getattr(args, name) is None]
    if missing:
        args.model_parser.error(f"the following arguments are required: {', '.join(missing)}")
    table = calibration.load(args.calibration) if args.calibration is not None else None
    require(args.cores is None or args.cores >= 1, "cores", "must be an integer >= 1",
            args.cores)
    mp = model_params(args.scheme, args.K, args.q, args.mu, m=args.m,
                      rows_per_batch=args.rows_per_batch, n=args.n, N=args.N, T=args.T,
                      field=args.field, eps=args.eps, c=args.c, delta=args.delta,
                      scale_tail=not args.shift_only, degree=args.l,
                      convention=args.convention)
    p = mp.params
    P = None
    if args.assignment is not None:
        require(p.spec.takes_assignment, "assignment",
                f"only scheme {', '.join(names(takes_assignment=True))} takes an assignment "
                "matrix")
        P = load_assignment(args.assignment)
    require(args.samples >= 1, "samples", "must be >= 1", args.samples)
    out = predict(mp, assignment=P, samples=args.samples, seed=args.seed)
    if args.l is not None or args.convention != "repository":
        uc = predict(model_params("uc", args.K, args.q, args.mu, m=p.m, n=p.n, N=p.N,
                                  field=args.field, scale_tail=not args.shift_only,
                                  degree=mp.l, convention=args.convention))
        out["D_over_uc"] = out["delay"]["total"] / uc["delay"]["total"]
    secs = None
    if table is not None:
        secs = calibration.predict_seconds(p, table, cores=args.cores)
    if args.json:
        keys = ["scheme", "load", "servers_needed", "delay"]
        if args.l is not None or args.convention != "repository":
            keys += ["l", "convention", "encoder", "decoder", "D_over_uc"]
        obj = {k: out[k] for k in keys}
        if secs is not None:
            obj["seconds"] = secs
        print(json.dumps(obj))
        return 0
    d = out["delay"]
    head = (f"{p.scheme}: K={p.K} q={p.q} mu={p.mu} m={p.m} n={p.n} N={p.N}"
            + (f" T={p.T}" if p.spec.partitioned else "")
            + (f" eps={out['eps']:.4f}" if out["eps"] is not None else "")
            + f" field={out['field']}")
    load = f"{out['load']:.6f}"
    if out["load_exact"] is not None:
        load = f"{out['load_exact']} ({load})"
    print(head)
    print(f"  load {load}  servers_needed {out['servers_needed']:.4f}"
          + ("" if out["exact"] else "  (sampled)"))
    print(f"  delay  encode {d['encode']:.6g}  map {d['map']:.6g}  reduce {d['reduce']:.6g}"
          f"  total {d['total']:.6g}" + (f"  (decoder {out['decoder']})"
                                         if out["decoder"] else "")
          + (f"  (encoder {out['encoder']})"
             if out["encoder"] == "fft" or out["convention"] != "repository" else ""))
    if "D_over_uc" in out:
        print(f"  D/D_UC {out['D_over_uc']:.6f}  (l={out['l']}, {out['convention']} conventions)")
    if secs is not None:
        w, per = secs["wall"], secs["per_server"]
        print(f"  seconds ({secs['field']}, {secs['cores']} cores for {p.K} servers)"
              f"  encode {w['encode']:.4g}"
              f"  map {w['map']:.4g}  reduce {w['reduce']:.4g}  total {w['total']:.4g}"
              f"  (slowest server: encode {per['encode']:.4g} by {secs['encoder']}, map "
              f"{per['map']:.4g}, reduce {per['reduce']:.4g} by {secs['decoder']})")
    return 0


def register_model(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``model`` subcommand to ``subparsers`` (its parser class is used)."""
    p = subparsers.add_parser(
        "model", help="predicted load and delay per phase of a scheme (pure, no MPI)",
        description="Analytic load and D = D_encode + D_map + D_reduce "
                    "(docs/theory.md (B.6)).")
    p.add_argument("--scheme", choices=MODEL_SCHEMES)
    p.add_argument("--K", type=int, help="number of servers")
    p.add_argument("--q", type=int, help="servers the map phase waits for")
    p.add_argument("--mu", help="stored fraction, e.g. 1/3 (mu q integer)")
    p.add_argument("--rows-per-batch", dest="rows_per_batch", type=int, default=None,
                   help="eta_b of the unified/bdc layout: m = eta_b C(K, mu q) q / K")
    p.add_argument("--l", type=int, default=None,
                   help="cost the field as GF(2^l) (default: the degree the runtime uses)")
    p.add_argument("--convention", default="repository", choices=CONVENTIONS,
                   help="repository (docs/theory.md B.6) or the BDC authors' code (C.2)")
    p.add_argument("--calibrate", action="store_true",
                   help="measure seconds per operation of every kernel here, write --out")
    p.add_argument("--quick", action="store_true", help="--calibrate with smaller shapes")
    p.add_argument("--out", default="calibration.json", help="--calibrate: the file written")
    p.add_argument("--calibration", default=None,
                   help="a calibration file: also predict every phase in seconds")
    p.add_argument("--cores", type=int, default=None,
                   help="with --calibration: the cores the K servers share (e.g. 2 for "
                        "mpiexec -n 10 on a 2-core laptop; default: a core per server)")
    p.add_argument("--m", type=int, default=None,
                   help="rows of A (instead of --rows-per-batch; default: smallest valid)")
    p.add_argument("--n", type=int, default=None, help="columns of A (default m)")
    p.add_argument("--N", type=int, default=None, help="number of vectors (default m)")
    p.add_argument("--T", type=int, default=1, help="bdc partitions")
    p.add_argument("--field", default="auto", help="auto, gf2^8, gf2^16 or float64")
    p.add_argument("--eps", type=float, default=None,
                   help="lt overhead (default: the robust Soliton design overhead)")
    p.add_argument("--c", type=float, default=DEFAULT_C, help="lt robust Soliton c")
    p.add_argument("--delta", type=float, default=DEFAULT_DELTA,
                   help="lt robust Soliton delta")
    p.add_argument("--assignment", default=None, help="bdc: a saved P matrix (.npy)")
    p.add_argument("--shift-only", dest="shift_only", action="store_true",
                   help="complexity scales only the shift of the runtime (tail of mean 1)")
    p.add_argument("--samples", type=int, default=2000,
                   help="finishing sets sampled when there are too many to enumerate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run_model, model_parser=p)
    return p


def _strategy(value: str) -> int | str:
    if value in ("1", "2"):
        return int(value)
    if value == "best":
        return value
    raise ConfigError("strategy", "must be best, 1 or 2", value)


def _run_solve(args: argparse.Namespace) -> int:
    inst = make_instance(args.K, args.q, args.mu, args.rows_per_batch, args.T)
    require(args.iterations >= 0, "iterations", "must be >= 0", args.iterations)
    sol = solve(inst, args.solver, seed=args.seed, strategy=_strategy(args.strategy),
                iterations=args.iterations)
    if args.out is not None:
        try:
            save_assignment(args.out, sol.P)
        except OSError as exc:
            raise ConfigError("out", f"cannot write the matrix: {exc.strerror}",
                              args.out) from None
    if args.json:
        print(json.dumps(sol.to_dict()))
        return 0
    print(f"{sol.solver}: K={inst.K} q={inst.q} mu={inst.mu} rows_per_batch="
          f"{inst.rows_per_batch} T={inst.T} load={sol.load} ({float(sol.load):.6f}) "
          f"servers_needed={sol.servers_needed:.4f}"
          + ("" if sol.exact else " (sampled)")
          + (f" saved {args.out}" if args.out is not None else ""))
    return 0


def register_solve(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``solve`` subcommand to ``subparsers`` (its parser class is used)."""
    p = subparsers.add_parser(
        "solve", help="BDC assignment matrix P and its average load (pure, no MPI)",
        description="Assignment solvers of docs/theory.md (B.4): heuristic, random, bnb "
                    "(exact, small), hybrid.")
    p.add_argument("--K", type=int, required=True, help="number of servers")
    p.add_argument("--q", type=int, required=True, help="servers the map phase waits for")
    p.add_argument("--mu", required=True, help="stored fraction, e.g. 1/3 (mu q integer)")
    p.add_argument("--rows-per-batch", dest="rows_per_batch", type=int, required=True,
                   help="coded rows per batch (eta_b)")
    p.add_argument("--T", type=int, required=True, help="partitions")
    p.add_argument("--solver", required=True, choices=SOLVERS)
    p.add_argument("--strategy", default="best",
                   help="shuffle strategy the load assumes: best (per Q, as run), 1 or 2")
    p.add_argument("--iterations", type=int, default=200, help="hybrid: windows tried")
    p.add_argument("--seed", type=int, default=0, help="random, hybrid, and Q sampling")
    p.add_argument("--out", default=None, help="save P here (.npy)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run_solve)
    return p


def register(subparsers: Any) -> None:
    """Add both ``model`` and ``solve`` to the top-level ``subparsers``."""
    register_model(subparsers)
    register_solve(subparsers)
