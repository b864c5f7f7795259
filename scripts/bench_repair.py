"""A machine's block repaired from its peers across emulated hosts, beside the link model.

On an emulated cluster (``mpi-coded cluster``, root) of 4 hosts with one slot each at
``--rate`` (default 100 Mbit/s): a store of ``N = 4`` machines with ``L = 3``, whose blocks
of machines 1, 2, 3 are on hosts 2, 3, 4 and machine 4's nowhere.  The elastic job
(``mpiexec -n 5``: rank 0 and rank 4 on host 1) starts from the store: rank 4 holds no
block, so it repairs machine 4's from machines 1, 2, 3 (docs/storage.md (S.3)): ``L``
blocks come over host 1's one link.  Each run deletes the repaired block first.  For each
run: the repair's seconds and bytes (the setup line's ``store.repairs``), the bytes host 1's
link received meanwhile (``cluster status``), and the model (S.4)
``t = L R cols w / B`` (``alpha`` is microseconds here: no latency on the links), with
``measured / model``.  Every step of every run verified.

Progress on stderr; the last line on stdout is one JSON object.

    python scripts/bench_repair.py [--rate 100mbit] [--mib 8] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import mpiexec  # noqa: E402

from mpi_coded.rates import parse_rate  # noqa: E402
from mpi_coded.results import read_results  # noqa: E402

COLS = 1024
CONFIG = """job = "cec"
N = 4
L = 3
rows = {rows}
cols = {cols}
t_row = 0.0
timeout_s = 300
[availability]
schedule = [[1, 2, 3, 4]]
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cli(name: str, d: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpi_coded", "cluster", *args[:1], "--name",
                           name, "--dir", str(d), *args[1:]], capture_output=True, text=True,
                          timeout=timeout)


def received(name: str, d: Path) -> dict[str, int]:
    r = cli(name, d, "status", "--json")
    if r.returncode != 0:
        raise SystemExit(f"bench_repair: cluster status failed: {r.stderr}")
    return {h["host"]: h["received_bytes"] for h in json.loads(r.stdout)["hosts"]}


def one_run(name: str, d: Path, cfg: Path, store: str, host1: str, out: Path
            ) -> dict[str, Any]:
    for f in Path(store.replace("{host}", host1)).glob("*"):
        f.unlink()  # host 1 holds nothing: rank 4 repairs machine 4 again
    before = received(name, d)
    r = cli(name, d, "run", "--timeout", "600", "--", mpiexec(), "-n", "5", sys.executable,
            "-m", "mpi_coded", "run", "cec", "--config", str(cfg), "--store", store, "--out",
            str(out))
    if r.returncode != 0:
        raise SystemExit(f"bench_repair: the job failed:\n{r.stdout}\n{r.stderr}")
    after = received(name, d)
    lines = read_results(out)
    out.unlink()
    setup = next(x for x in lines if x["kind"] == "setup")
    rep = setup["store"]["repairs"]
    if len(rep) != 1 or rep[0]["host"] != host1:
        raise SystemExit(f"bench_repair: expected one repair on {host1}, got {rep}")
    return {"seconds": rep[0]["seconds"], "bytes": rep[0]["bytes"],
            "host1_received": after[host1] - before[host1], "sources": rep[0]["sources"],
            "verified": all(x["verified"] for x in lines if x["kind"] == "step")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", default="100mbit")
    ap.add_argument("--mib", type=float, default=8.0, help="MiB of one block (default 8)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--name", default="rp", help="the cluster's name (default rp)")
    args = ap.parse_args(argv)
    R = max(1, int(args.mib * (1 << 20)) // (8 * COLS))
    name = args.name
    d = Path(tempfile.mkdtemp(prefix="mpi-coded-bench-repair-"))
    try:
        r = cli(name, d, "up", "--hosts", "4", "--slots", "1", "--rate", args.rate)
        if r.returncode != 0:
            raise SystemExit(f"bench_repair: cluster up failed: {r.stderr}")
        hosts = [f"{name}-node{k}" for k in range(1, 5)]
        cfg = d / "job.toml"
        cfg.write_text(CONFIG.format(rows=3 * R, cols=COLS))
        store = str(d / "store" / "{host}")
        w = subprocess.run([sys.executable, "-m", "mpi_coded", "store", "write", "--config",
                            str(cfg), "--out", store, "--machines", "1,2,3", "--place",
                            f"{hosts[1]}:1", "--place", f"{hosts[2]}:2", "--place",
                            f"{hosts[3]}:3", "--place", f"{hosts[0]}:4"],
                           capture_output=True, text=True, timeout=600)
        if w.returncode != 0:
            raise SystemExit(f"bench_repair: store write failed: {w.stderr}")
        Path(store.replace("{host}", hosts[0])).mkdir(parents=True, exist_ok=True)
        runs = []
        for i in range(args.runs):
            runs.append(one_run(name, d, cfg, store, hosts[0], d / "r.jsonl"))
            say(f"run {i + 1}/{args.runs}: repaired {runs[-1]['bytes']} bytes in "
                f"{runs[-1]['seconds']:.3f} s; host 1 received {runs[-1]['host1_received']}")
    finally:
        cli(name, d, "down")
        shutil.rmtree(d, ignore_errors=True)
    rate = parse_rate(args.rate) / 8.0  # bytes per second
    model = runs[0]["bytes"] / rate
    secs = [x["seconds"] for x in runs]
    out = {"rate": args.rate, "block_bytes": R * COLS * 8, "L": 3, "repair_bytes":
           runs[0]["bytes"], "model_s": model, "seconds": secs,
           "median_s": statistics.median(secs), "median_over_model":
           statistics.median(secs) / model, "host1_received": [x["host1_received"]
                                                                for x in runs],
           "all_verified": all(x["verified"] for x in runs)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
