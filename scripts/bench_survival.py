"""The survival matrix: the elastic job from a coded store on emulated hosts, one host
failing during it, relaunched by ``mpi-coded cluster relaunch`` on the hosts left
(docs/storage.md, docs/clusters.md; root: network namespaces).

The logic is :mod:`mpi_coded.bench.survival` (its docstring says what a run is and what it
records).  By default (issue 44's matrix): 4 hosts, one slot each, N = 4, L = 2, 64 x 64,
host 3 (machine 2) fails after 5 steps, each of four ways.  Issue 45's matrix: 4 hosts x 2
slots, N = 6, L = 3, host 3 holding machines 4 and 5, ``cluster kill 3`` at a seeded
uniformly random step, X of 32 MiB or (with ``--verify sketch``) 2 GiB.  One JSON line
per run to ``--out`` as it comes, progress on stderr, the matrix as one JSON object last on
stdout.

    python scripts/bench_survival.py --runs 20
    python scripts/bench_survival.py --runs 1 --cases host      # quick (the test's)
    python scripts/bench_survival.py --runs 20 --cases host --hosts 4 --slots 2 --N 6 \\
        --L 3 --rows 2048 --p 0 --t-row 0.0002 --kill-at random --seed 45   # issue 45
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _launch  # noqa: E402,F401 (puts the checkout first on sys.path)

from mpi_coded.bench.survival import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(doc=__doc__ or ""))
