"""The time a job spends opening its coded store, reading every block at every start
(``store_check = "full"``) against trusting the blocks whose verified mark fits the file
(``"mark"``, the default); and what the background audit costs the steps.

All numbers from one run of this script (docs/storage.md, "What a flipped byte costs"):

1. a store of the seeded ``X`` (``--rows x --cols`` float64; ``N = 5``, ``L = 3``, every
   block in one directory) is written by ``mpi-coded store write`` (which marks the
   blocks it writes);
2. ``--runs`` launches of the job (``mpiexec -n 6``, 3 steps, ``t_row = 0``, the sketch's
   check) in each mode of ``--modes``: the setup line's ``store_open_s`` and
   ``store_parts``, the launch's wall time, every step verified;
3. with ``--audit-steps S``: a job of ``S`` steps with every mark aged past an hour (each
   machine audits its block in the background from step 2) and one with fresh marks (no
   audit): the sum of the steps' ``wall_s``, and whether the audit renewed the marks.

Progress goes to stderr; the last line on stdout is one JSON object.

    python scripts/bench_store_open.py                          # X of 2 GiB
    python scripts/bench_store_open.py --rows 2048 --runs 1     # quick
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import ROOT, mpiexec  # noqa: E402

from mpi_coded.proctree import kill_tree  # noqa: E402
from mpi_coded.results import read_results  # noqa: E402

CONFIG = """job = "cec"
N = 5
L = 3
rows = {rows}
cols = {cols}
t_row = 0.0
timeout_s = 600
[availability]
schedule = [{schedule}]
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def job(d: Path, name: str, rows: int, cols: int, steps: int) -> Path:
    cfg = d / f"{name}.toml"
    cfg.write_text(CONFIG.format(rows=rows, cols=cols,
                                 schedule=", ".join(["[1, 2, 3, 4, 5]"] * steps)))
    return cfg


def launch(cfg: Path, store: Path, out: Path, extra: list[str], timeout: float
           ) -> tuple[float, list[dict[str, Any]]]:
    """One job (its own process group, killed on ``timeout``): wall seconds, its lines."""
    cmd = [mpiexec(), "-n", "6", sys.executable, "-m", "mpi_coded", "run", "cec", "--config",
           str(cfg), "--store", str(store), "--out", str(out), *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        proc.communicate()
        raise SystemExit(f"bench_store_open: timed out: {' '.join(cmd)}") from None
    if proc.returncode != 0:
        raise SystemExit(f"bench_store_open: the job failed ({' '.join(cmd)}):\n{err}")
    return time.perf_counter() - t0, read_results(out)


def opening(wall: float, lines: list[dict[str, Any]]) -> dict[str, Any]:
    setup = next(x for x in lines if x["kind"] == "setup")
    steps = [x for x in lines if x["kind"] == "step"]
    return {"store_open_s": setup["store_open_s"], "parts": setup["store_parts"],
            "launch_s": wall, "verified": bool(steps) and all(x["verified"] for x in steps)}


def age_marks(store: Path, seconds: float) -> None:
    for p in store.glob("*.ok"):
        d = json.loads(p.read_text())
        d["checked_unix"] = time.time() - seconds
        p.write_text(json.dumps(d))


def mark_ages(store: Path) -> list[float]:
    return [round(time.time() - json.loads(p.read_text())["checked_unix"], 1)
            for p in sorted(store.glob("*.ok"))]


def audit_cost(d: Path, store: Path, rows: int, cols: int, steps: int) -> dict[str, Any]:
    """Jobs of ``steps`` steps with aged marks (audited) and fresh ones (not)."""
    cfg = job(d, "audit", rows, cols, steps)
    out: dict[str, Any] = {}
    for name, age in (("aged", 7200.0), ("fresh", 0.0)):
        age_marks(store, age)
        wall, lines = launch(cfg, store, d / f"audit-{name}.jsonl", [], 1800)
        st = [x["wall_s"] for x in lines if x["kind"] == "step"]
        out[name] = {"steps": len(st), "sum_wall_s": sum(st), "launch_s": wall,
                     "mark_ages_after_s": mark_ages(store)}
        say(f"audit {name}: {len(st)} steps, sum wall_s {sum(st):.2f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=16384, help="rows of X (default 16384: "
                    "X of 2 GiB with --cols 16384)")
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--runs", type=int, default=3, help="launches per mode")
    ap.add_argument("--modes", default="full,mark", help="store_check modes, comma-separated")
    ap.add_argument("--audit-steps", type=int, default=0, help="steps of the audit's jobs "
                    "(0: not measured)")
    ap.add_argument("--dir", default=None, help="work directory (default a temporary one)")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for name, v, lo in (("--rows", args.rows, 3), ("--cols", args.cols, 1),
                        ("--runs", args.runs, 1), ("--audit-steps", args.audit_steps, 0)):
        if v < lo:
            ap.error(f"{name} must be >= {lo}, got {v}")
    if not modes or any(m not in ("full", "mark") for m in modes):
        ap.error(f"--modes must list full and/or mark, got {args.modes!r}")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        d, store = Path(tmp), Path(tmp) / "store"
        cfg = job(d, "job", args.rows, args.cols, 3)
        say(f"writing the store: X of {args.rows} x {args.cols} float64")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mpi_coded", "store", "write", "--config",
                        str(cfg), "--out", str(store)], cwd=ROOT, check=True, timeout=3600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out: dict[str, Any] = {"rows": args.rows, "cols": args.cols,
                               "block_bytes": (store / "block-1.npy").stat().st_size,
                               "write_s": time.perf_counter() - t0}
        for mode in modes:
            runs = [opening(*launch(cfg, store, d / f"{mode}-{i}.jsonl",
                                    ["--store-check", mode], 1800))
                    for i in range(args.runs)]
            opens = [r["store_open_s"] for r in runs]
            out[mode] = {"runs": runs, "store_open_s_median": statistics.median(opens),
                         "store_open_s_range": [min(opens), max(opens)]}
            say(f"{mode}: store_open_s {min(opens):.3f}-{max(opens):.3f} s")
        if args.audit_steps:
            out["audit"] = audit_cost(d, store, args.rows, args.cols, args.audit_steps)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
