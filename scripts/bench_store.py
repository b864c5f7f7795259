"""The coded store at a size where ``X`` is at least 1 GB: the encoder's peak memory, and
the elastic master's peak memory and setup time with and without the store.

All numbers from one run of this script (docs/benchmarks.md, "The coded store"):

1. ``X`` (``rows x cols`` float64, ``--gb`` GiB) is written to an ``.npy`` file in row
   chunks (seeded);
2. ``mpi-coded store write`` encodes it (N = 6, L = 3): its wall time and peak RSS
   (``ru_maxrss`` of that child process) against the size of ``X``;
3. the elastic job (``mpiexec -n 7``, 2 steps, ``t_row = 0``) three ways: without a store
   (the master loads ``X``, encodes the N blocks and sends them), from the store with the
   exact check (the master streams ``X`` from its file each product), and from the store
   with the sketch (no ``X`` at all).  For each: the master's peak RSS at the end of its
   setup (the setup line's ``master_peak_rss_mb``), the time from launch to the first
   step (the config line's time to the setup line's), and every step verified.

Progress goes to stderr; the last line on stdout is one JSON object.

    python scripts/bench_store.py                # X of 0.25 and 1 GiB
    python scripts/bench_store.py --gb 0.05     # quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import ROOT, mpiexec  # noqa: E402

from mpi_coded.results import read_results  # noqa: E402

COLS = 2048
CONFIG = """job = "cec"
N = 6
L = 3
rows = {rows}
cols = {cols}
t_row = 0.0
timeout_s = 600
data = "{data}"
[availability]
schedule = [[1, 2, 3, 4, 5, 6], [1, 3, 4, 6]]
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def write_x(path: Path, rows: int, cols: int) -> None:
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(rows, cols))
    rng = np.random.default_rng(11)
    step = max(1, (64 << 20) // (8 * cols))
    for a in range(0, rows, step):
        b = min(rows, a + step)
        mm[a:b] = rng.standard_normal((b - a, cols))
        mm.flush()
    del mm


def run_peak(cmd: list[str], timeout: float) -> tuple[float, float]:
    """Run ``cmd``; its wall seconds and its own peak RSS in MiB (``VmHWM`` of its
    ``/proc`` entry, read until it ends: ``ru_maxrss`` of a child would include what its
    parent had mapped when it forked)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=ROOT)
    peak = 0.0
    while proc.poll() is None:
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024.0)
        except OSError:
            pass
        if time.perf_counter() - t0 > timeout:
            proc.kill()
            raise SystemExit(f"bench_store: timed out: {' '.join(cmd)}")
        time.sleep(0.02)
    if proc.returncode != 0:
        raise SystemExit(f"bench_store: failed: {' '.join(cmd)}")
    return time.perf_counter() - t0, peak


def run_job(cfg: Path, out: Path, extra: list[str]) -> dict[str, Any]:
    cmd = [mpiexec(), "-n", "7", sys.executable, "-m", "mpi_coded", "run", "cec",
           "--config", str(cfg), "--out", str(out), *extra]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"bench_store: the job failed ({' '.join(cmd)}):\n{r.stderr}")
    lines = read_results(out)
    setup = next(x for x in lines if x["kind"] == "setup")
    steps = [x for x in lines if x["kind"] == "step"]
    first = next((x for x in r.stdout.splitlines() if x.strip().startswith("1 ")), "")
    return {"master_peak_rss_mb": setup.get("master_peak_rss_mb"),
            "setup_s": setup["setup_s"], "setup_bytes": setup["setup_bytes"],
            "job_wall_s": wall, "step_wall_s": [x["wall_s"] for x in steps],
            "verified": all(x["verified"] for x in steps) and len(steps) == 2,
            "first_step_line": first.strip()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", default="0.25,1", help="sizes of X, GiB, comma-separated "
                    "(default 0.25,1: the master's memory against the size of X)")
    ap.add_argument("--cols", type=int, default=COLS)
    ap.add_argument("--dir", default=None, help="work directory (default a temporary one)")
    args = ap.parse_args(argv)
    sizes = [float(g) for g in args.gb.split(",") if g.strip()]
    runs = {f"{g:g}GiB": one_size(g, args.cols, args.dir) for g in sizes}
    print(json.dumps(runs))
    return 0


def one_size(gb: float, cols: int, where: str | None) -> dict[str, Any]:
    """Every measurement for one size of ``X``."""
    rows = max(3, int(gb * (1 << 30)) // (8 * cols))
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        d = Path(tmp)
        x = d / "x.npy"
        say(f"writing X: {rows} x {cols} float64 ({rows * cols * 8 / 2**30:.2f} GiB)")
        write_x(x, rows, cols)
        cfg = d / "job.toml"
        cfg.write_text(CONFIG.format(rows=rows, cols=cols, data=x))
        say("encoding the store (mpi-coded store write)")
        secs, peak = run_peak([sys.executable, "-m", "mpi_coded", "store", "write",
                               "--config", str(cfg), "--out", str(d / "store")], 3600)
        enc = {"seconds": secs, "peak_rss_mb": peak,
               "bytes": sum(p.stat().st_size for p in (d / "store").glob("block-*.npy"))}
        say(f"encoded in {enc['seconds']:.1f} s, peak RSS {enc['peak_rss_mb']:.0f} MiB")
        out: dict[str, Any] = {"x_bytes": os.path.getsize(x), "rows": rows, "cols": cols,
                               "encode": enc}
        for name, extra in (("no_store", []), ("store_exact", ["--store", str(d / "store")]),
                            ("store_sketch", ["--store", str(d / "store"), "--verify",
                                              "sketch"])):
            say(f"job: {name}")
            out[name] = run_job(cfg, d / f"{name}.jsonl", extra)
            say(f"  master peak RSS {out[name]['master_peak_rss_mb']:.0f} MiB, setup "
                f"{out[name]['setup_s']:.2f} s, job {out[name]['job_wall_s']:.1f} s, "
                f"verified {out[name]['verified']}")
        base = out["no_store"]
        for name in ("store_exact", "store_sketch"):
            out[f"{name}_rss_ratio"] = out[name]["master_peak_rss_mb"] / \
                base["master_peak_rss_mb"]
            out[f"{name}_job_wall_ratio"] = out[name]["job_wall_s"] / base["job_wall_s"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
