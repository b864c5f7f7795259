"""mpi_coded: a real MPI cluster for coded distributed computing.

Pure packages (``cec``, ``codes``, ``coded``, ``fields``, ``config``) never import
mpi4py; ``mpi_coded.runtime`` is the only importer of mpi4py.
"""

__version__ = "0.1.0"
