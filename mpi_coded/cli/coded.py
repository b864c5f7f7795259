"""``mpi-coded load`` (pure, no MPI; docs/theory.md (B.3)) and ``mpi-coded run coded``.

Hook-up (in :func:`mpi_coded.cli.main.build_parser`)::

    from mpi_coded.cli import coded as coded_commands
    coded_commands.register_load(sub)
    coded_commands.register_run(run_sub)

where ``sub`` is the top-level subparsers object (created with
``parser_class=OneLineParser``).  Scheme choices come from the registry
(:mod:`mpi_coded.coded.schemes`) as it is when the parser is built (schemes registered
before then are offered), never frozen at import.  ``run coded``'s flags are the coded
job's declared keys (:mod:`mpi_coded.coded.job`, :func:`mpi_coded.config_keys.add_flags`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mpi_coded.analysis.loads import check_reference
from mpi_coded.cli.cec import fault_help
from mpi_coded.coded.job import KEY_CLASSES, load_job
from mpi_coded.coded.schemes import get, names
from mpi_coded.config_keys import add_flags, flag_keys
from mpi_coded.faults import check_steps, parse_faults

LOAD_SCHEMES = names(closed_form_load=True)
"""The built-in schemes with a closed-form load (uc, cmr, sc, unified); ``load``'s
choices are asked of the registry when its parser is built.  Not bdc (its load depends
on ``P`` and ``Q``: ``mpi-coded solve``/``shuffle.average_load``) and not lt: its load
is the unified ``L(q)`` plus the extra unicasts of the LT overhead, which depend on
the seeded code and on ``Q`` (its :meth:`load` returns the unified lower bound; the
coded job measures the real load)."""


def load_result(scheme: str, K: int, q: int, mu: Any) -> dict[str, Any]:
    """The ``load --json`` object: scheme, K, q, mu (string), s_q, strategy, load, load_exact.

    ``K, q, mu`` are echoed as given (the reference parameters); ``s_q`` and
    ``strategy`` are those of the unified formula at the scheme's effective
    parameters (uc: ``q = K, mu = 1/K``; cmr: ``q = K, mu = mu q / K``;
    sc: ``mu = 1/q``).
    """
    spec = get(scheme)
    mu_f = check_reference(K, q, mu)
    res = spec.load(K, q, mu_f)
    return {
        "scheme": scheme,
        "K": K,
        "q": q,
        "mu": str(mu_f),
        "s_q": res.s_q,
        "strategy": res.strategy,
        "load": float(res.load),
        "load_exact": str(res.load),
    }


def _run_load(args: argparse.Namespace) -> int:
    out = load_result(args.scheme, args.K, args.q, args.mu)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['scheme']}: K={out['K']} q={out['q']} mu={out['mu']} "
              f"s_q={out['s_q']} strategy={out['strategy']} "
              f"load={out['load_exact']} ({out['load']:.6f})")
    return 0


def register_load(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``load`` subcommand to ``subparsers`` (its parser class is used)."""
    p = subparsers.add_parser(
        "load", help="analytic shuffle load of uc, cmr, sc, unified (pure, no MPI)",
        description="Communication load L(q) of docs/theory.md (B.3), exact and as a float.")
    p.add_argument("--scheme", required=True, choices=names(closed_form_load=True))
    p.add_argument("--K", type=int, required=True, help="number of servers")
    p.add_argument("--q", type=int, required=True, help="servers the map phase waits for")
    p.add_argument("--mu", required=True, help="stored fraction, e.g. 1/2 (mu q integer)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run_load)
    return p


def _run_coded(args: argparse.Namespace) -> int:
    job = load_job(args.config, {k: getattr(args, k) for k in flag_keys(*KEY_CLASSES)})

    faults = parse_faults(args.fault, "coded", job.world_size)
    check_steps(faults, job.reps - 1)  # repetitions 0..reps-1; bad input before any MPI
    # deferred: mpi4py: MPI starts here, only for run coded
    from mpi_coded.runtime.coded import job as coded_job

    return coded_job.run(job, args.out, faults)


def register_run(subparsers: Any) -> argparse.ArgumentParser:
    """``run coded``: the coded matrix-vector job under mpiexec -n K+1.  One flag per
    declared key of the job (docs/coded.md, "Keys"), built now: ``--scheme``'s help names
    the schemes registered at this moment."""
    p = subparsers.add_parser(
        "coded", help="coded matrix-vector products with straggling servers (mpiexec -n K+1)")
    p.add_argument("--config", default=None, help="TOML file with the same keys as the flags")
    add_flags(p, *KEY_CLASSES)
    p.add_argument("--out", default="results/coded.jsonl", help="JSON-lines results (appended)")

    p.add_argument("--fault", action="append", default=None, metavar="FAULT",
                   help=fault_help("coded") + " (@STEP: the repetition)")
    p.set_defaults(func=_run_coded)
    return p
