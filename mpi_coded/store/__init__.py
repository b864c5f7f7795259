"""The coded store: each machine's coded block on its host's disk, encoded once.

``mpi-coded store write`` streams ``X`` from an ``.npy`` file (or the seeded ``X`` of a
config) in row chunks and writes one memory-mappable ``.npy`` file per machine (its coded
block ``X~_n = sum_l G[n, l] X_l``, docs/theory.md (A.1)) and a manifest (:mod:`.manifest`)
into the store directory of the host that machine runs on.  The elastic job started with
``store = "DIR"`` (``{host}`` in ``DIR`` is each rank's host name) memory-maps each
machine's block from there; the master loads neither ``X`` nor a coded block.

Pure: files and numpy, never MPI.  Modules, one concept each:

* :mod:`.checksum`: the blocks' checksums (BLAKE2b-128 of the file's bytes, and of each
  chunk of rows);
* :mod:`.manifest`: what a store holds and the rules a job checks it against;
* :mod:`.source`: ``X`` read in row chunks with bounded memory;
* :mod:`.encode`: the streaming encoder;
* :mod:`.sketch`: the Freivalds check of ``y = X w`` without ``X`` (docs/storage.md);
* :mod:`.blocks`: a host's blocks opened and checked (bad storage is never used);
* :mod:`.marks`: a block's verified mark, tied to the file's identity (a start with the
  file unchanged does not read it);
* :mod:`.audit`: the background check, chunk by chunk, of blocks trusted by their mark;
* :mod:`.assign`: which rank is which machine, from the blocks each rank's host holds;
* :mod:`.repair`: a lost machine's block rebuilt from ``L`` surviving blocks;
* :mod:`.checkpoint`: an iterative workload's state, saved durably with each step.
"""
