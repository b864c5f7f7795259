"""The ``mpi-coded`` command line (entry point ``mpi_coded.cli:main``).

:mod:`.main` builds the parser and runs a command; :mod:`.cec`, :mod:`.coded`
and :mod:`.analysis` add the subcommands.  mpi4py is imported lazily, only by
the ``run`` subcommands.
"""

from mpi_coded.cli.main import OneLineParser, build_parser, main

__all__ = ["OneLineParser", "build_parser", "main"]
