"""The survival matrix: the elastic job from a coded store on 4 emulated hosts, one
machine rank per host plus the master's, under four failures, each relaunched by
``mpi-coded cluster relaunch`` on the hosts left (docs/storage.md, docs/clusters.md).

Per run: a fresh cluster (``--hosts 4 --slots 1``: ranks 0-3 on hosts 1-4, rank 4 on host
1; machines 4, 1, 2, 3 on hosts 1, 2, 3, 4, their blocks in their hosts' store
directories), the power iteration over ``--steps`` steps; once ``--after`` steps are in the
results file, host 3 (machine 2) fails one of four ways:

* ``rank``: machine 2's process killed (``SIGKILL``); host 3 stays up (the relaunch uses it);
* ``host``: ``cluster kill 3``: every process of host 3, the launcher's daemon too; the
  host counts as lost;
* ``link``: ``cluster link 3 down`` for good;
* ``netns``: host 3's processes killed and its network namespace deleted.

For each case: hangs (the relaunch not over within ``--timeout``), unverified steps,
verified steps lost (a step of the schedule with no verified line) and repeated,
relaunches without a failure (a relaunched launch that ended non-zero with no failure
recorded during it: a healthy job ended by its supervisor), the seconds from the failure
to the next verified step (the first ``yes`` row printed after it, p50 and p99 over the
runs), and the bytes re-sent at relaunches (``setup_bytes`` and repairs of the setup
lines after the first).  One JSON line per run to ``--out`` as it
comes, progress on stderr, the matrix as one JSON object last on stdout.

    python scripts/bench_survival.py --runs 20
    python scripts/bench_survival.py --runs 1 --cases host      # quick (the test's)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import mpiexec  # noqa: E402

from mpi_coded.cluster import manage  # noqa: E402
from mpi_coded.cluster.relaunch import step_row  # noqa: E402
from mpi_coded.results import CEC, SETUP, STEP, kind_of, read_results, records  # noqa: E402

CASES = ("rank", "host", "link", "netns")
CONFIG = """job = "cec"
N = 4
L = 2
speeds = [1, 1, 1, 1]
rows = 64
cols = 64
t_row = {t_row}
timeout_s = {timeout_s}
workload = "power"
[availability]
kind = "random"
p = 0.2
steps = {steps}
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cluster(name: str, d: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpi_coded", "cluster", args[0], "--name",
                           name, "--dir", str(d / "c"), *args[1:]], capture_output=True,
                          text=True, timeout=300)


def fail(case: str, name: str, d: Path) -> None:
    """Host 3 fails as ``case`` says (module docstring)."""
    c, cd = manage.load(name, str(d / "c"))
    h = c.hosts[2]
    if case == "rank":
        for pid in manage.pids_in(h.netns):
            if manage.mpi_rank_of(pid) is not None:
                os.kill(pid, signal.SIGKILL)
    elif case == "host":
        cluster(name, d, "kill", "3")
    elif case == "link":
        cluster(name, d, "link", "3", "down")
    else:
        manage.kill_processes_in(type(c)(**{**c.__dict__, "hosts": (h,)}))
        subprocess.run(["ip", "netns", "del", h.netns], capture_output=True, timeout=60)


def one_run(case: str, i: int, args: argparse.Namespace, d: Path, store: str, cfg: Path
            ) -> dict[str, Any]:
    name = args.name
    out = d / f"r-{case}-{i}.jsonl"
    r = cluster(name, d, "up", "--hosts", "4", "--slots", "1", "--rate", args.rate)
    if r.returncode != 0:
        raise SystemExit(f"bench_survival: cluster up failed: {r.stderr}")
    rows: list[tuple[float, int, bool]] = []
    cmd = [sys.executable, "-m", "mpi_coded", "cluster", "relaunch", "--name", name, "--dir",
           str(d / "c"), "--tries", "3", "--timeout", str(args.timeout), "--report",
           str(d / "launches.jsonl"), "--", mpiexec(),
           "-n", "5", sys.executable, "-m", "mpi_coded", "run", "cec", "--config", str(cfg),
           "--store", store, "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True)
    reader.start()

    def read() -> None:
        for line in proc.stdout or []:
            row = step_row(line)
            if row is not None:
                rows.append((time.time(), *row))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t_fail = None
    deadline = time.monotonic() + args.timeout * 2
    while proc.poll() is None and time.monotonic() < deadline:
        if t_fail is None and len(rows) >= args.after:
            t_fail = time.time()
            fail(case, name, d)
        time.sleep(0.02)
    hung = proc.poll() is None
    if hung:
        from mpi_coded.proctree import kill_tree

        kill_tree(proc.pid)
    proc.wait()
    t.join(10)
    reader.join(10)
    cluster(name, d, "down")
    lines = list(records(read_results(out), job=CEC)) if out.exists() else []
    steps = [x for x in lines if kind_of(x) == STEP]
    setups = [x for x in lines if kind_of(x) == SETUP]
    verified = [int(x["step"]) for x in steps if x.get("verified")]
    after = [ts for ts, _, ok in rows if ok and t_fail is not None and ts > t_fail]
    resent = sum(int(s.get("setup_bytes", 0)) + sum(
        int(rp["bytes"]) for rp in (s.get("store") or {}).get("repairs", []))
        for s in setups[1:])
    out.unlink(missing_ok=True)
    launches = read_results(d / "launches.jsonl") if (d / "launches.jsonl").exists() else []
    (d / "launches.jsonl").unlink(missing_ok=True)
    later = [x["first_verified"] for x in launches[1:] if x.get("first_verified")]
    # a relaunched launch ended though no failure was recorded during it (a healthy job
    # killed by its supervisor); the failure itself is recorded during launch 0
    needless = sum(1 for x in launches[1:] if x.get("rc") and not x.get("events"))
    return {"relaunch_to_verified_s": (later[0] - t_fail) if later and t_fail else None,
            "failure_to_end_s": (launches[0]["ended"] - t_fail) if launches and t_fail
            else None, "case": case, "run": i, "hung": hung, "rc": proc.returncode,
            "launches": len(setups), "unverified": sum(1 for x in steps
                                                        if not x.get("verified")),
            "lost": len(set(range(1, args.steps + 1)) - set(verified)),
            "repeated": len(verified) - len(set(verified)),
            "failure_to_verified_s": (min(after) - t_fail) if after else None,
            "bytes_resent": resent, "needless_relaunches": needless,
            "stderr_tail": "".join(err[-3:])[-400:]}


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--after", type=int, default=5, help="steps before the failure")
    ap.add_argument("--t-row", dest="t_row", type=float, default=0.005)
    ap.add_argument("--job-timeout", dest="job_timeout", type=float, default=4.0,
                    help="the job's timeout_s: how long a rank waits for a silent peer")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per launch")
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--name", default="sv")
    ap.add_argument("--out", default=None, help="append one JSON line per run")
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"bench_survival: --cases: {c} is not one of {', '.join(CASES)}")
    d = Path(tempfile.mkdtemp(prefix="mpi-coded-survival-"))
    cfg = d / "job.toml"
    cfg.write_text(CONFIG.format(t_row=args.t_row, timeout_s=args.job_timeout,
                                 steps=args.steps))
    store = str(d / "store" / "{host}")
    hosts = [f"{args.name}-node{k}" for k in range(1, 5)]
    w = subprocess.run([sys.executable, "-m", "mpi_coded", "store", "write", "--config",
                        str(cfg), "--out", store, "--place", f"{hosts[1]}:1", "--place",
                        f"{hosts[2]}:2", "--place", f"{hosts[3]}:3", "--place",
                        f"{hosts[0]}:4"], capture_output=True, text=True, timeout=300)
    if w.returncode != 0:
        raise SystemExit(f"bench_survival: store write failed: {w.stderr}")
    runs: list[dict[str, Any]] = []
    for case in cases:
        for i in range(args.runs):
            rec = one_run(case, i, args, d, store, cfg)
            runs.append(rec)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            say(f"{case} {i + 1}/{args.runs}: hung {rec['hung']}, rc {rec['rc']}, launches "
                f"{rec['launches']}, unverified {rec['unverified']}, lost {rec['lost']}, "
                f"repeated {rec['repeated']}, relaunches without a failure "
                f"{rec['needless_relaunches']}, to the next verified step "
                f"{rec['failure_to_verified_s']} s (the relaunched job's first: "
                f"{rec['relaunch_to_verified_s']} s), re-sent {rec['bytes_resent']} bytes")
    matrix = {}
    for case in cases:
        rs = [r for r in runs if r["case"] == case]
        gaps = [r["failure_to_verified_s"] for r in rs if r["failure_to_verified_s"] is not None]
        rel = [r["relaunch_to_verified_s"] for r in rs if r["relaunch_to_verified_s"] is not None]
        ends = [r["failure_to_end_s"] for r in rs if r["failure_to_end_s"] is not None]
        matrix[case] = {"runs": len(rs), "hangs": sum(r["hung"] for r in rs),
                        "unverified": sum(r["unverified"] for r in rs),
                        "lost": sum(r["lost"] for r in rs),
                        "repeated": sum(r["repeated"] for r in rs),
                        "failed": sum(1 for r in rs if r["rc"] != 0),
                        "p50_s": pct(gaps, 0.5), "p99_s": pct(gaps, 0.99),
                        "max_s": max(gaps) if gaps else None,
                        "relaunch_p50_s": pct(rel, 0.5), "relaunch_p99_s": pct(rel, 0.99),
                        "end_p50_s": pct(ends, 0.5),
                        "bytes_resent": sum(r["bytes_resent"] for r in rs),
                        "needless_relaunches": sum(r["needless_relaunches"] for r in rs)}
    import shutil

    shutil.rmtree(d, ignore_errors=True)
    print(json.dumps({"matrix": matrix, "steps": args.steps, "rate": args.rate,
                      "job_timeout_s": args.job_timeout}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
