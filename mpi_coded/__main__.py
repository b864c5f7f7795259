"""``python -m mpi_coded`` is the ``mpi-coded`` command."""

from mpi_coded.cli import main

raise SystemExit(main())
