"""``mpi-coded model`` and ``mpi-coded solve``: the analytic side (pure, no MPI;
docs/theory.md (B.3)-(B.6)).

Hook-up (in :func:`mpi_coded.cli.main.build_parser`, next to ``register_load``)::

    from mpi_coded.cli import analysis as analysis_commands
    analysis_commands.register(sub)  # = register_model(sub) and register_solve(sub)

``model`` prints the predicted load, servers waited for and delay per phase of
one scheme (:func:`mpi_coded.analysis.model.predict`); ``--json`` prints exactly
``{"scheme", "load", "servers_needed", "delay": {"encode", "map", "reduce",
"total"}}`` (with ``--calibration`` also ``seconds``; with ``--rate`` also ``network``,
the network model of :func:`mpi_coded.analysis.network.network_report`, docs/theory.md
(B.7); without ``--rate`` nothing of it is printed).  ``solve`` finds a BDC assignment matrix ``P``
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
from mpi_coded.analysis import network as netmodel
from mpi_coded.analysis.bdc_load import make_instance
from mpi_coded.analysis.model import (
    CONVENTIONS,
    Prediction,
    model_params,
    model_schemes,
    predict,
)
from mpi_coded.analysis.network import BCAST_TREES, MULTICAST_MODES
from mpi_coded.analysis.shuffle_fit import rate_fit
from mpi_coded.analysis.solvers import SOLVERS, load_assignment, save_assignment, solve
from mpi_coded.coded.schemes import names
from mpi_coded.codes.lt import DEFAULT_C, DEFAULT_DELTA
from mpi_coded.errors import ConfigError, require
from mpi_coded.rates import format_rate, parse_rate


def _calibrate(args: argparse.Namespace) -> int:
    got = calibration.measure_report(quick=args.quick)
    table = got.table
    doc = calibration.write(table, args.out, got.problems)
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"calibration written to {args.out} (seconds per operation):")
    for key, val in table.items():
        why = got.problems.get(key)
        print(f"  {key:<16} {val:.4g}" + (f"  ({why})" if why else ""))
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
    versus_uc = args.l is not None or args.convention != "repository"
    d_over_uc = None
    if versus_uc:
        uc = predict(model_params("uc", args.K, args.q, args.mu, m=p.m, n=p.n, N=p.N,
                                  field=args.field, scale_tail=not args.shift_only,
                                  degree=mp.l, convention=args.convention))
        d_over_uc = out.delay.total / uc.delay.total
    net = _network(args, p, P)  # None without --rate: the output stays as it was
    secs = None
    if table is not None:
        secs = calibration.predict_seconds(p, table, cores=args.cores)
    if args.json:
        full = out.to_dict()
        keys = ["scheme", "load", "servers_needed", "delay"]
        if versus_uc:
            keys += ["l", "convention", "encoder", "decoder"]
        obj = {k: full[k] for k in keys}
        if versus_uc:
            obj["D_over_uc"] = d_over_uc
        if secs is not None:
            obj["seconds"] = secs.to_dict()
        if net is not None:
            obj["network"] = net.to_dict()
        print(json.dumps(obj))
        return 0
    _print_model(p, out, d_over_uc)
    if secs is not None:
        w, per = secs.wall, secs.per_server
        print(f"  seconds ({secs.field}, {secs.cores} cores for {p.K} servers)"
              f"  encode {w.encode:.4g}"
              f"  map {w.map:.4g}  reduce {w.reduce:.4g}  total {w.total:.4g}"
              f"  (slowest server: encode {per.encode:.4g} by {secs.encoder}, map "
              f"{per.map:.4g}, reduce {per.reduce:.4g} by {secs.decoder})")
    if net is not None:
        _print_network(net)
    return 0


def _print_model(p: Any, out: Prediction, d_over_uc: float | None) -> None:
    d = out.delay
    head = (f"{p.scheme}: K={p.K} q={p.q} mu={p.mu} m={p.m} n={p.n} N={p.N}"
            + (f" T={p.T}" if p.spec.partitioned else "")
            + (f" eps={out.eps:.4f}" if out.eps is not None else "")
            + f" field={out.field}")
    load = f"{out.load:.6f}"
    if out.load_exact is not None:
        load = f"{out.load_exact} ({load})"
    print(head)
    print(f"  load {load}  servers_needed {out.servers_needed:.4f}"
          + ("" if out.exact else "  (sampled)"))
    print(f"  delay  encode {d.encode:.6g}  map {d.map:.6g}  reduce {d.reduce:.6g}"
          f"  total {d.total:.6g}" + (f"  (decoder {out.decoder})"
                                      if out.decoder else "")
          + (f"  (encoder {out.encoder})"
             if out.encoder == "fft" or out.convention != "repository" else ""))
    if d_over_uc is not None:
        print(f"  D/D_UC {d_over_uc:.6f}  (l={out.l}, {out.convention} conventions)")


def _network(args: argparse.Namespace, p: Any, P: Any) -> netmodel.NetworkReport | None:
    """``--rate`` and its options: the ``network`` object (docs/theory.md (B.7)); None
    without ``--rate`` (then none of its options may be given)."""
    if args.rate is None:
        given = [flag for flag, val in (("--rate-of", args.rate_of), ("--alpha", args.alpha),
                                        ("--efficiency", args.efficiency),
                                        ("--multicast", args.multicast),
                                        ("--bcast-tree", args.bcast_tree),
                                        ("--ranks-per-host", args.ranks_per_host),
                                        ("--finishing-order", args.finishing_order)) if val]
        require(not given, given[0] if given else "--rate", "needs --rate RATE (the network "
                "model)")
        return None
    multicast = args.multicast or "p2p"
    require(multicast in MULTICAST_MODES, "--multicast",
            f"must be one of {', '.join(MULTICAST_MODES)}", multicast)
    tree = args.bcast_tree or "binomial"
    require(tree in BCAST_TREES, "--bcast-tree", f"must be one of {', '.join(BCAST_TREES)}",
            tree)
    alpha, eff = (netmodel.link_calibration(calibration_doc(args.calibration),
                                            parse_rate(args.rate, "--rate"))
                  if args.calibration is not None else (None, None))
    alpha = _number(args.alpha, "--alpha") if args.alpha is not None else (alpha or 0.0)
    eff = _number(args.efficiency, "--efficiency") if args.efficiency is not None else (
        eff or 1.0)
    rph = None if args.ranks_per_host is None else _integer(args.ranks_per_host,
                                                            "--ranks-per-host")
    fabric = (netmodel.link_fabric(calibration_doc(args.calibration),
                                   parse_rate(args.rate, "--rate"))
              if args.calibration is not None else None)
    net = netmodel.make_network(p.K + 1, args.rate, args.rate_of or (), alpha, eff, rph,
                                fabric=fabric)
    fit = (rate_fit(calibration_doc(args.calibration).get("network"),
                    parse_rate(args.rate, "--rate"))
           if args.calibration is not None else None)
    order = None
    if args.finishing_order is not None:
        order = [_integer(x, "--finishing-order") for x in args.finishing_order.split(",")
                 if x.strip()]
    try:
        return netmodel.network_report(p, net, multicast, tree, order, P, fit)
    except ConfigError as exc:
        if exc.field in ("order", "Q"):  # the map-end rule on the given order
            raise ConfigError("--finishing-order", exc.rule, exc.got) from None
        raise


def calibration_doc(path: str) -> dict[str, Any]:
    """The calibration file as JSON (already checked by ``calibration.load``)."""
    with open(path) as fh:
        doc = json.load(fh)
    return doc if isinstance(doc, dict) else {}


def _number(text: str, arg: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(arg, "must be a number", text) from None


def _integer(text: str, arg: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ConfigError(arg, "must be an integer", text) from None


def _print_network(rep: netmodel.NetworkReport) -> None:
    net, cn, over = rep.network, rep.coded, rep.over_uc
    rates = sorted({format_rate(int(r)) for r in net.rates})
    secs = {k: ph.seconds for k, ph in cn.phases.items()}
    print(f"  network ({'/'.join(rates)}, {cn.multicast}, alpha {net.alpha:.3g} s, "
          f"efficiency {net.efficiency:.3g}, "
          + (f"fabric {net.fabric / 1e6:.4g} Mbit/s, " if net.fabric is not None else "")
          + f"Q={','.join(map(str, cn.plan.Q))})"
          f"  distribution {secs['distribution']:.4g} s  shuffle {secs['shuffle']:.4g} s"
          f"  gather {secs['gather']:.4g} s  total {cn.seconds:.4g} s")
    sh = cn.phases["shuffle"]
    slow = sh.slowest
    if slow is not None:
        h = sh.hosts[slow]
        print(f"  shuffle: {sh.network_bytes} bytes on the wire; slowest host {slow} "
              f"(sent {h.sent_bytes} B in {h.sent_messages} messages, received "
              f"{h.recv_bytes} B in {h.recv_messages})")

    def ratio(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    if over.uc_not_runnable is not None:
        print(f"  shuffle over uc: n/a (uc is not runnable here: {over.uc_not_runnable})")
        return
    print(f"  shuffle over uc: seconds {ratio(over.shuffle_s)}  bytes "
          f"{ratio(over.shuffle_bytes)}  load {ratio(over.load)} (a broadcast medium)")


def register_model(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``model`` subcommand to ``subparsers`` (its parser class is used)."""
    p = subparsers.add_parser(
        "model", help="predicted load and delay per phase of a scheme (pure, no MPI)",
        description="Analytic load and D = D_encode + D_map + D_reduce "
                    "(docs/theory.md (B.6)).")
    p.add_argument("--scheme", choices=model_schemes())
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
    net = p.add_argument_group("network model (docs/theory.md (B.7))")
    net.add_argument("--rate", default=None, metavar="RATE",
                     help="every host's link rate (100mbit, 1gbit, 1.5Gbit/s): price the "
                          "shuffle, the outputs' gather and the data distribution")
    net.add_argument("--rate-of", dest="rate_of", action="append", default=None,
                     metavar="HOST=RATE", help="one host's rate: master, server<s>, rank<r> "
                     "or host<h> with --ranks-per-host (repeatable)")
    net.add_argument("--multicast", default=None,
                     help="how a multicast travels: p2p (one copy per receiver, default) or "
                          "bcast (MPI_Ibcast: one copy per tree edge)")
    net.add_argument("--bcast-tree", dest="bcast_tree", default=None,
                     help="with bcast: binomial (MPICH, default) or linear (Open MPI, groups "
                          "of at most 4)")
    net.add_argument("--alpha", default=None, metavar="SECONDS",
                     help="cost of one message (default: the calibration file's, else 0)")
    net.add_argument("--efficiency", default=None,
                     help="achieved fraction of the rate, in (0, 1] (default: the "
                          "calibration file's, else 1)")
    net.add_argument("--ranks-per-host", dest="ranks_per_host", default=None,
                     help="ranks per host, filled in rank order (default: one host per rank)")
    net.add_argument("--finishing-order", dest="finishing_order", default=None,
                     help="servers in map finishing order, e.g. 3,0,1,... (default 0..K-1)")
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
