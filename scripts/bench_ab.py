"""The elastic master's per-step overhead of two checkouts, side by side in one run.

Machines here are shared and noisy, so a change's effect is a ratio measured in one run:
this script runs ``scripts/bench_scale.py``'s elastic job (``t_row = 0``, the step's wall
time is the framework's overhead) from the checkout ``--base`` and from this one,
alternating, ``--rounds`` times at each world size, and prints this checkout's overhead
and job wall time over the base's.  Each checkout's jobs run its own code (its
``bench_scale.py`` launches ``python -m mpi_coded`` in its own directory).

    git worktree add /tmp/base <rev>
    python scripts/bench_ab.py --base /tmp/base --worlds 7,64 --rounds 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def bench_of(checkout: Path, name: str) -> ModuleType:
    """``scripts/bench_scale.py`` of ``checkout``, imported as module ``name``."""
    for helper in ("_launch", "_scale_model"):  # its own: its ROOT is where jobs run
        sys.modules.pop(helper, None)
    sys.path.insert(0, str(checkout / "scripts"))
    spec = importlib.util.spec_from_file_location(name, checkout / "scripts" / "bench_scale.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    sys.path.remove(str(checkout / "scripts"))
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the other checkout")
    ap.add_argument("--worlds", default="7,64", help="ranks, comma-separated")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    if not (args.base / "scripts" / "bench_scale.py").is_file():
        ap.error(f"--base: must be a checkout with scripts/bench_scale.py (got {args.base})")
    benches = {"base": bench_of(args.base.resolve(), "bench_scale_base"),
               "this": bench_of(HERE.parent, "bench_scale_this")}
    worlds = [int(w) for w in args.worlds.split(",")]
    got: dict[tuple[str, int], list[dict[str, float]]] = {}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        for rnd in range(args.rounds):
            for world in worlds:
                for label, bench in benches.items():
                    tmp = Path(d) / f"{label}_{world}_{rnd}"
                    tmp.mkdir()
                    print(f"[bench_ab {time.strftime('%H:%M:%S')}] round {rnd + 1} {label}:",
                          end=" ", flush=True)
                    r = bench.overhead(tmp, world, "auto", args.steps, 1, args.timeout)
                    got.setdefault((label, world), []).append(r)
    out: dict[str, object] = {"steps": args.steps, "rounds": args.rounds,
                              "loadavg_start": load0, "loadavg_end": os.getloadavg()[0]}
    for world in worlds:
        for key in ("overhead_ms", "job_s"):
            base = [r[key] for r in got[("base", world)]]
            this = [r[key] for r in got[("this", world)]]
            ratio = statistics.median(t / b for t, b in zip(this, base))
            out[f"{key}_{world}"] = {"base": base, "this": this, "this_over_base": ratio}
            print(f"{world:>3} ranks {key:<11}: base {statistics.median(base):8.2f}, this "
                  f"{statistics.median(this):8.2f}, this/base (median of rounds) {ratio:.3f}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
