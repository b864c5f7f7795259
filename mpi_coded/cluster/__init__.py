"""An emulated cluster on one machine: hosts as network namespaces on one bridge (no MPI).

:mod:`.netns` builds everything as values (names, addresses, rates, the ``ip``/``tc``
command lines, hostfiles, the launcher script, the MPI flags), so it is testable without
root; :mod:`.manage` runs them (``mpi-coded cluster up/run/status/down``); :mod:`.slurm`
writes the multi-node SLURM configuration.  See docs/clusters.md ("An emulated cluster").
"""
