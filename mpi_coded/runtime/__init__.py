"""The MPI runtime: the only package that imports mpi4py.

It executes plans made by the pure packages; it does not invent them.

``core/``
    what both jobs share: :mod:`.core.wire` (the wire format and every message
    kind), :mod:`.core.records` (named statistics), :mod:`.core.wait` (deadlines;
    polite, busy or automatic waiting), :mod:`.core.inbox` (one posted receive per
    peer), :mod:`.core.peers` (the master's peers: handshake, collection with
    deadlines and stale-answer dropping; the worker's link to the master),
    :mod:`.core.run` (world-size check, guarded launch, run record),
    :mod:`.core.memory` (ranks keep freed memory and pre-touch their working heap),
    :mod:`.core.guard` (an exception on one rank ends the job, naming it),
    :mod:`.core.throttle` (artificial speeds), :mod:`.core.faults` (fault injection).
``cec/``
    the elastic job: :mod:`.cec.master`, :mod:`.cec.machine`, :mod:`.cec.job`.
``coded/``
    the coded matrix-vector job: :mod:`.coded.master`, :mod:`.coded.server`,
    :mod:`.coded.transfer` (the shuffle's messages, built from the plan),
    :mod:`.coded.setup`, :mod:`.coded.job`.

See docs/architecture.md for the life of a step and of a coded job.
"""
