"""The benches: what runs the jobs and times them (``scripts/bench_*.py`` are their command
lines), above the runtime; :mod:`mpi_coded.analysis` is the pure model they are compared
with and never imports them.  :mod:`.bench_coded` (the coded bench's joins),
:mod:`.kernel_bench` (decode and kernel timings), :mod:`.loss_bench` (a death's cost),
:mod:`.network_bench` (both jobs on emulated clusters beside the network model)."""
