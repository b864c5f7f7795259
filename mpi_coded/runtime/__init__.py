"""The MPI runtime: the only package that imports mpi4py.

It executes plans made by the pure packages; it does not invent them.
Modules: :mod:`.wait` (polite waiting with deadlines), :mod:`.protocol` (the
wire format and every tag), :mod:`.throttle` (artificial speeds),
:mod:`.guard` (an exception on one rank ends the whole job, naming the rank),
:mod:`.cec_master` / :mod:`.cec_machine` / :mod:`.cec_job` (the elastic job).
"""
