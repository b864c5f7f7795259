"""The ``mpi-coded`` command line: the parser and :func:`main`.

Subcommands live beside this module: :mod:`.cec` (``plan cec``, ``run cec``),
:mod:`.coded` (``load``, ``run coded``), :mod:`.analysis` (``model``, ``solve``),
:mod:`.report` (``report``).

mpi4py is imported lazily, only by the ``run`` subcommands, so ``plan``,
``load`` and the other pure subcommands work without MPI.  Bad input ends with
one line on stderr and exit status 2 (:mod:`mpi_coded.errors`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from mpi_coded import __version__
from mpi_coded.errors import EXIT_BAD_INPUT, ConfigError, launcher_rank

EXIT_BROKEN_PIPE = 141
"""Exit status when stdout's reader closed it early (128 + SIGPIPE, as a shell reports a
process SIGPIPE ended)."""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


ELASTIC_RUN = ("run", "cec")
"""The command every rank of an elastic job parses: :func:`build_parser` builds it alone."""


def build_parser(only: tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, with ``only == ELASTIC_RUN``, ``run cec`` alone: every
    rank of an elastic job parses its arguments, and the other subcommands' modules bring
    the coded schemes and numba (about half a second of each rank's start)."""
    parser = OneLineParser(
        prog="mpi-coded",
        description="A real MPI cluster for coded distributed computing: coded elastic "
        "computing (run cec, plan cec) and coded matrix-vector products with straggling "
        "servers (run coded, load, model, solve).")

    parser.add_argument("--version", action="version", version=f"mpi-coded {__version__}")
    parser.add_argument("--plugin", action="append", default=[], metavar="PATH_OR_MODULE",
                        help="load a plugin (a .py file or a module defining "
                             "mpi_coded_register(registry)) before anything else: its schemes, "
                             "policies and workloads become choices (repeatable; also "
                             "MPI_CODED_PLUGINS and the 'mpi_coded.plugins' entry points; "
                             "docs/architecture.md#plugins)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    if only == ELASTIC_RUN:
        # deferred: numpy not before single_threaded_blas(); a run cec rank loads its command only
        from mpi_coded.cli import cec as cec_commands

        run = sub.add_parser("run", help="run a job under mpiexec")
        run_sub = run.add_subparsers(dest="run_kind", required=True,
                                     parser_class=OneLineParser)
        cec_commands.register_run(run_sub)
        return parser

    # deferred: numpy not before single_threaded_blas(); these bring the coded schemes
    from mpi_coded.cli import analysis as analysis_commands
    from mpi_coded.cli import cec as cec_commands
    from mpi_coded.cli import cluster as cluster_commands
    from mpi_coded.cli import coded as coded_commands
    from mpi_coded.cli import report as report_commands
    from mpi_coded.cli import store as store_commands

    coded_commands.register_load(sub)
    analysis_commands.register(sub)  # model, solve

    plan = sub.add_parser("plan", help="print a plan (pure, no MPI)")
    plan_sub = plan.add_subparsers(dest="plan_kind", required=True, parser_class=OneLineParser)
    cec_commands.register_plan(plan_sub)

    run = sub.add_parser("run", help="run a job under mpiexec")
    run_sub = run.add_subparsers(dest="run_kind", required=True, parser_class=OneLineParser)
    cec_commands.register_run(run_sub)
    coded_commands.register_run(run_sub)
    cluster_commands.register(sub)  # cluster up/run/status/down/link
    report_commands.register(sub)  # results files as one HTML page
    store_commands.register(sub)  # store write / check

    return parser


def single_threaded_blas() -> None:
    """One BLAS thread per rank (unless the user says otherwise).

    Ranks already oversubscribe the cores; threaded BLAS inside each rank would
    corrupt every timing.  Must run before numpy is first imported.
    """
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def load_plugins(argv: Sequence[str]) -> list[str]:
    """Load the plugins (entry points, ``MPI_CODED_PLUGINS``, every ``--plugin``) before the
    parser is built, so that their names are choices; the arguments without ``--plugin``.
    The jobs this process starts (sweeps, benches) load the same: they are exported in
    ``MPI_CODED_PLUGINS`` (files as absolute paths)."""
    # deferred: the registries and numpy, not before single_threaded_blas()
    from mpi_coded import plugins

    specs, rest = plugins.split_plugin_args(argv)
    plugins.load_all(specs)
    absolute = [plugins.canonical(s) for s in [*plugins.env_plugins(), *specs]]
    if absolute:
        os.environ[plugins.ENV] = os.pathsep.join(dict.fromkeys(absolute))
    return rest


def main(argv: Sequence[str] | None = None) -> int:
    single_threaded_blas()
    try:
        # Every rank fails the same check; rank 0 (or a process outside MPI) says so.
        rest = load_plugins(sys.argv[1:] if argv is None else list(argv))
        parser = build_parser(ELASTIC_RUN if tuple(rest[:2]) == ELASTIC_RUN else None)
        args = parser.parse_args(rest)
        rc = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader gone shows here, not in the interpreter's exit
        return rc
    except ConfigError as exc:
        if launcher_rank() in (None, 0):
            print(f"mpi-coded: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # its reader stopped early (``mpi-coded cluster kill 3 | head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
