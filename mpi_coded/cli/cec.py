"""``mpi-coded plan cec`` (pure) and ``mpi-coded run cec`` (MPI, imported lazily)."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from typing import Any

from mpi_coded import start_clock
from mpi_coded.cec.config import CECConfig, load_config
from mpi_coded.cec.plan import POLICIES, make_plan
from mpi_coded.cec.resume import resume_point
from mpi_coded.config_keys import add_flags, flag_keys
from mpi_coded.errors import ConfigError, require
from mpi_coded.faults import FAULTS, parse_faults
from mpi_coded.fields import FIELD_NAMES


def _ints(text: str, name: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise ConfigError(name, "must be comma-separated integers", text) from None


def _fractions(text: str, name: str) -> list[Fraction]:
    try:
        return [Fraction(x.strip()) for x in text.split(",") if x.strip() != ""]
    except (ValueError, ZeroDivisionError):
        raise ConfigError(name, "must be comma-separated numbers", text) from None


def cmd_plan_cec(args: argparse.Namespace) -> int:
    speeds = _fractions(args.speeds, "--speeds")
    require(len(speeds) >= 1, "--speeds", "needs at least one speed", args.speeds)
    for i, s in enumerate(speeds):
        require(s > 0, "--speeds", f"speed of machine {i + 1} must be > 0", str(s))
    sp = {i + 1: s for i, s in enumerate(speeds)}
    require(args.L >= 1, "--L", "must be >= 1", args.L)
    require(args.L <= len(sp), "--L", f"must be <= the number of machines N={len(sp)}", args.L)
    avail = _ints(args.available, "--available") if args.available else sorted(sp)
    if args.rows is not None:
        require(args.rows >= 1, "--rows", "rows per block must be >= 1", args.rows)
    plan = make_plan(args.policy, sp, args.L, avail, rows=args.rows, S=args.S)
    net = _network(args, plan, sp)  # None without --rate: the output stays as it was
    if args.json:
        print(json.dumps(plan.to_dict() if net is None else {**plan.to_dict(),
                                                             "network": net}))
    else:
        print(plan)
        if net is not None:
            _print_network(net)
    return 0


def _network(args: argparse.Namespace, plan: Any, sp: dict[int, Fraction]
             ) -> dict[str, Any] | None:
    """``--rate``: the coded step and the uncoded baseline over the links (docs/theory.md
    (B.7)); None without it (then none of its options may be given)."""
    if args.rate is None:
        given = [f for f, v in (("--rate-of", args.rate_of), ("--alpha", args.alpha),
                                ("--efficiency", args.efficiency), ("--cols", args.cols),
                                ("--field", args.field),
                                ("--prev-available", args.prev_available)) if v]
        require(not given, given[0] if given else "--rate", "needs --rate RATE (the network "
                "model)")
        return None
    require(args.rows is not None, "--rate", "needs --rows (the network model counts rows)")
    field = args.field or "float64"
    require(field in FIELD_NAMES, "--field", f"must be one of {', '.join(FIELD_NAMES)}",
            field)
    cols = 200 if args.cols is None else args.cols
    require(cols >= 1, "--cols", "must be >= 1", cols)
    # deferred: the network model brings the coded schemes; a run cec rank never needs it
    from mpi_coded.analysis import network as netmodel

    net = netmodel.make_network(len(sp) + 1, args.rate, args.rate_of or (),
                                _float(args.alpha, "--alpha", 0.0),
                                _float(args.efficiency, "--efficiency", 1.0),
                                rank_name=netmodel.elastic_rank_name)
    prev = _ints(args.prev_available, "--prev-available") if args.prev_available else None
    for n in prev or ():
        require(n in sp, "--prev-available", f"machine {n} is not a known machine id", n)
    return netmodel.elastic_report(plan, sp, cols, field, net, prev)


def _float(text: str | None, name: str, default: float) -> float:
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise ConfigError(name, "must be a number", text) from None


def _print_network(net: dict[str, Any]) -> None:
    secs = net["seconds"]
    rates = "/".join(sorted({h["rate"] for h in net["hosts"].values()}))
    print(f"network ({rates}, alpha {net['alpha_s']:.3g} s, efficiency "
          f"{net['efficiency']:.3g}, {net['cols']} columns of {net['field']}):")
    print(f"  coded    setup {secs['coded_setup']:.4g} s  step {secs['coded_step']:.4g} s")
    print(f"  uncoded  setup {secs['uncoded_setup']:.4g} s  step {secs['uncoded_step']:.4g} s"
          f" (moves {net['uncoded']['moves']['seconds']:.4g} s, "
          f"{net['uncoded']['bytes_moved']} bytes moved)")


def register_plan(sub: Any) -> None:
    p = sub.add_parser("cec", help="one step of heterogeneous coded elastic computing")
    p.add_argument("--speeds", required=True, help="comma-separated speeds of machines 1..N")
    p.add_argument("--L", type=int, required=True, help="number of row blocks (any L decode)")
    p.add_argument("--available", default="", help="comma-separated available ids (default all)")
    p.add_argument("--rows", type=int, default=None, help="rows per coded block: plan in rows")
    p.add_argument("--S", type=int, default=0,
                   help="stragglers tolerated: every row set goes to L+S machines")
    p.add_argument("--policy", choices=POLICIES, default="heterogeneous")
    net = p.add_argument_group("network model (docs/theory.md (B.7); needs --rows)")
    net.add_argument("--rate", default=None, metavar="RATE",
                     help="every host's link rate (100mbit, 1gbit): price the step's messages "
                          "and the uncoded baseline's moves")
    net.add_argument("--rate-of", dest="rate_of", action="append", default=None,
                     metavar="HOST=RATE", help="one host's rate: master, machine<n> or rank<r>")
    net.add_argument("--alpha", default=None, metavar="SECONDS", help="cost of one message")
    net.add_argument("--efficiency", default=None, help="achieved fraction of the rate")
    net.add_argument("--cols", type=int, default=None, help="columns of X (default 200)")
    net.add_argument("--field", default=None, help="float64 (default), gf2^8 or gf2^16")
    net.add_argument("--prev-available", dest="prev_available", default=None,
                     help="the previous step's machines: the uncoded baseline moves from "
                          "their split (default all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_plan_cec)


def cmd_run_cec(args: argparse.Namespace) -> int:
    cfg = load_config(args.config).with_overrides(
        **{k: getattr(args, k) for k in flag_keys(CECConfig)})
    faults = parse_faults(args.fault, "cec", cfg.world_size)
    first = 1
    if args.resume:
        first = resume_point(cfg, args.out)  # every rank reads it, before any MPI traffic
    start_clock.mark("imports")
    # deferred: mpi4py: MPI starts here, only for run cec
    from mpi_coded.runtime.cec import job as cec_job

    return cec_job.run(cfg, args.out, faults, first)


def fault_help(job: str) -> str:
    """``--fault``'s help: the usage of every fault mode of ``job`` registered now."""
    return ("inject a fault (repeatable): " + ", ".join(
        m.usage for m in FAULTS.values() if job in m.jobs)).replace("%", "%%")


def register_run(sub: Any) -> None:
    """``run cec``: one override flag per declared key with a flag, its help the key's
    docs text and rule, as registered now (plugins' policies and workloads included)."""
    p = sub.add_parser("cec", help="heterogeneous coded elastic computing (mpiexec -n N+1)")
    p.add_argument("--config", default=None, help="TOML config (default: the seed's example)")
    p.add_argument("--out", default="results/cec.jsonl", help="JSON-lines results file (appended)")
    add_flags(p, CECConfig)  # one override per declared key with a flag (docs/elastic.md)
    p.add_argument("--resume", action="store_true",
                   help="continue the job recorded in --out after its last completed step "
                        "(power and linreg: from the state saved with it, OUT.state.npz)")
    p.add_argument("--fault", action="append", default=None, metavar="FAULT",
                   help=fault_help("cec"))
    p.set_defaults(func=cmd_run_cec)
