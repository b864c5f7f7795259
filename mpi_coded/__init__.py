"""mpi_coded: a real MPI cluster for coded distributed computing.

Layers, lowest first (``tests/test_architecture.py`` enforces them): ``errors``;
``fields`` and ``gf_kernels``; ``codes`` (MDS, LT, RS codes); the formula modules
``analysis.loads`` and ``analysis.delay``; ``cec`` (the elastic job's plans) and
``coded`` (the coded job's plans and its scheme objects); the rest of
``analysis`` (BDC load evaluator, solvers, delay model); ``runtime``; ``cli``.
Everything but ``runtime`` is pure: ``mpi_coded.runtime`` is the only importer
of mpi4py.
"""

__version__ = "0.1.0"
