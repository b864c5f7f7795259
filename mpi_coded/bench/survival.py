"""The survival bench (``scripts/bench_survival.py``): the elastic job from a coded store on
emulated hosts, run by ``mpi-coded cluster relaunch``, one host failing during it.

A run: a fresh cluster (``--hosts`` hosts, ``--slots`` each; rank ``r`` is machine ``r``,
placed by slot as the launcher places it (:func:`mpi_coded.cluster.relaunch.placement`),
its block in its host's store directory), the power iteration over ``--steps`` steps; once
``k`` steps are printed (``k = --after``, or with ``--kill-at random`` a seeded uniform draw
in ``1 .. steps - 1`` per run), host ``--victim`` fails one of four ways:

* ``rank``: its machines' processes killed (``SIGKILL``); the host stays up (the relaunch
  uses it);
* ``host``: ``cluster kill``: every process of the host, the launcher's daemon too; the
  host counts as lost;
* ``link``: ``cluster link ... down`` for good;
* ``netns``: the host's processes killed and its network namespace deleted.

Per run (one JSON line, appended and flushed as it comes): hangs, unverified steps, steps
lost and repeated, relaunches without a failure, the seconds from the failure to the next
verified step and to the relaunched job's first, the bytes re-sent, and where the seconds
of the relaunch went (:func:`breakdown`): the launcher's end after the failure, the
supervisor's gap to the next launch, the relaunched job's start to its master's clock
(mpiexec, the ranks' imports, MPI's start), the store's opening and setup
(``before_steps_s``), its first step; and per launch the summary's ``job_s`` against the sum
of its steps' ``wall_s + master_s``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mpi_coded import start_clock
from mpi_coded.bench.wrong_answers import mpiexec
from mpi_coded.cluster import manage
from mpi_coded.cluster.relaunch import placement, step_row
from mpi_coded.proctree import kill_tree
from mpi_coded.results import CEC, SETUP, STEP, SUMMARY, kind_of, read_results, records

CASES = ("rank", "host", "link", "netns")
CONFIG = """job = "cec"
N = {N}
L = {L}
rows = {rows}
cols = {cols}
t_row = {t_row}
timeout_s = {timeout_s}
workload = "power"
{data}[availability]
kind = "random"
p = {p}
steps = {steps}
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cluster(name: str, d: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpi_coded", "cluster", args[0], "--name",
                           name, "--dir", str(d / "c"), *args[1:]], capture_output=True,
                          text=True, timeout=300)


def machines_on(args: argparse.Namespace) -> dict[int, list[int]]:
    """Host index (0-based) -> the machines (ranks ``1 .. N``) it holds."""
    where = placement(args.N + 1, args.hosts, args.slots)
    out: dict[int, list[int]] = {}
    for m in range(1, args.N + 1):
        out.setdefault(where[m], []).append(m)
    return out


def fail(case: str, args: argparse.Namespace, d: Path) -> tuple[float, str]:
    """Host ``--victim`` fails as ``case`` says (module docstring), in this process (a
    ``cluster`` command would start a Python first: a second and more under load, the job
    going on meanwhile); the Unix time of the failure and what was done."""
    c, _ = manage.load(args.name, str(d / "c"))
    h = c.hosts[args.victim - 1]
    t = time.time()
    if case == "rank":
        pids = [p for p in manage.pids_in(h.netns) if manage.mpi_rank_of(p) is not None]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return t, f"killed ranks {pids}"
    if case == "host":
        _, killed = manage.kill_host(args.name, str(d / "c"), str(args.victim))
        return t, f"killed {len(killed)} processes: " + "; ".join(
            cmd.split(" --")[0] for _, cmd in killed)
    if case == "link":
        manage.set_link(args.name, str(d / "c"), str(args.victim), "down")
        return t, "link down"
    manage.kill_processes_in(type(c)(**{**c.__dict__, "hosts": (h,)}))
    subprocess.run(["ip", "netns", "del", h.netns], capture_output=True, timeout=60)
    return t, "namespace deleted"


def make_data(path: Path, rows: int, cols: int, seed: int, chunk: int = 1024) -> None:
    """``X`` (standard normal, seeded) as a ``.npy`` file, written in row chunks: the data
    set of ``--verify exact``, which streams it at the master."""
    # deferred: numpy only for the data set; the bench itself runs none
    import numpy as np

    rng = np.random.default_rng(seed)
    x = np.lib.format.open_memmap(str(path) + ".part", mode="w+", dtype=np.float64,
                                  shape=(rows, cols))
    for r in range(0, rows, chunk):
        x[r:r + chunk] = rng.standard_normal((min(chunk, rows - r), cols))
    x.flush()
    del x
    os.replace(str(path) + ".part", path)


def write_store(args: argparse.Namespace, cfg: Path, store: str) -> float:
    """The store's blocks in their hosts' directories (``mpi-coded store write``): seconds."""
    hosts = [f"{args.name}-node{k}" for k in range(1, args.hosts + 1)]
    place = [a for h, ms in sorted(machines_on(args).items())
             for a in ("--place", f"{hosts[h]}:{','.join(map(str, ms))}")]
    t0 = time.perf_counter()
    w = subprocess.run([sys.executable, "-m", "mpi_coded", "store", "write", "--config",
                        str(cfg), "--out", store, *place, "--if-missing"],
                       capture_output=True, text=True, timeout=3600)
    if w.returncode != 0:
        raise SystemExit(f"bench_survival: store write failed: {w.stderr}")
    return time.perf_counter() - t0


def launch_job(args: argparse.Namespace, d: Path, store: str, cfg: Path, out: Path
               ) -> tuple[subprocess.Popen[str], list[tuple[float, int, bool]], list[str],
                          list[threading.Thread]]:
    """``cluster relaunch`` of the job, its step rows ``(unix, step, verified)`` and stderr
    collected by threads as they come."""
    cmd = [sys.executable, "-m", "mpi_coded", "cluster", "relaunch", "--name", args.name,
           "--dir", str(d / "c"), "--tries", "3", "--timeout", str(args.timeout), "--report",
           str(d / "launches.jsonl"), "--", mpiexec(), "-n", str(args.N + 1), sys.executable,
           "-m", "mpi_coded", "run", "cec", "--config", str(cfg), "--store", store,
           "--out", str(out)] + (["--verify", args.verify] if args.verify else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, start_clock.ENV: "1"})
    rows: list[tuple[float, int, bool]] = []
    err: list[str] = []

    def read() -> None:
        for line in proc.stdout or []:
            row = step_row(line)
            if row is not None:
                rows.append((time.time(), *row))

    threads = [threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True),
               threading.Thread(target=read, daemon=True)]
    for t in threads:
        t.start()
    return proc, rows, err, threads


def one_run(case: str, i: int, kill_after: int, args: argparse.Namespace, d: Path,
            store: str, cfg: Path) -> dict[str, Any]:
    out = d / f"r-{case}-{i}.jsonl"
    r = cluster(args.name, d, "up", "--hosts", str(args.hosts), "--slots", str(args.slots),
                "--rate", args.rate)
    if r.returncode != 0:
        raise SystemExit(f"bench_survival: cluster up failed: {r.stderr}")
    state = Path(f"{out}.state.npz")  # the power iteration's state, saved with each step
    for f in (d / "launches.jsonl", out, state):  # a run interrupted before left them
        f.unlink(missing_ok=True)
    proc, rows, err, threads = launch_job(args, d, store, cfg, out)
    t_fail, said = None, ""
    deadline = time.monotonic() + args.timeout * 2
    while proc.poll() is None and time.monotonic() < deadline:
        if t_fail is None and kill_after >= 0 and len(rows) >= kill_after:
            t_fail, said = fail(case, args, d)
        time.sleep(0.01)
    hung = proc.poll() is None
    if hung:
        kill_tree(proc.pid)
    proc.wait()
    for t in threads:
        t.join(10)
    cluster(args.name, d, "down")
    lines = list(records(read_results(out), job=CEC)) if out.exists() else []
    out.unlink(missing_ok=True)
    state.unlink(missing_ok=True)
    report = d / "launches.jsonl"
    launches = read_results(report) if report.exists() else []
    report.unlink(missing_ok=True)
    traces = [tr for x in err if (tr := start_clock.parse(x)) is not None]
    rec = outcome(lines, launches, rows, t_fail, args.steps)
    if rec["breakdown"] is not None:
        rec["breakdown"]["start_parts"] = start_parts(
            traces, launches[1]["started"],
            launches[2]["started"] if len(launches) > 2 else None)
    return {"case": case, "run": i, "kill_after": kill_after, "hung": hung,
            "rc": proc.returncode, **rec, "fail_said": said, "t_fail": t_fail,
            "start_traces": traces,
            "stderr_tail": "".join(x for x in err if not x.startswith(start_clock.PREFIX)
                                   )[-4000:]}


def start_parts(traces: list[dict[str, float]], started: float,
                next_started: float | None = None) -> dict[str, float] | None:
    """The relaunched launch's *start* in parts, from its ranks' start traces
    (:mod:`mpi_coded.start_clock`): ``spawn_s`` from the launch to its last rank's process,
    ``imports_s`` to the last rank's imports (the command line and config read), ``mpi_s``
    to the last rank's ``MPI_Init`` done and runtime imported, ``store_s`` to the store
    opened on every rank; None without the launch's traces.  The launch's ranks: those
    whose process began after it did (to ``/proc``'s 1/100 s) and before the next
    launch (``next_started``), if there was one."""
    ts = [t for t in traces if t["process"] >= started - 0.02  # this launch's ranks
          and (next_started is None or t["process"] < next_started - 0.02)]
    if not ts or not all(k in t for t in ts for k in ("imports", "mpi", "opened")):
        return None
    last = {k: max(t[k] for t in ts) for k in ("process", "imports", "mpi", "opened")}
    return {"ranks": len(ts), "spawn_s": last["process"] - started,
            "imports_s": last["imports"] - last["process"],
            "mpi_s": last["mpi"] - last["imports"], "store_s": last["opened"] - last["mpi"]}


def per_launch(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per launch's job (cut at its setup lines): its setup line's times, its steps' sum of
    ``wall_s + master_s`` and its summary's ``job_s`` and ``before_steps_s`` (when it
    wrote one: a job whose host died may not)."""
    jobs: list[dict[str, Any]] = []
    for x in lines:
        k = kind_of(x)
        if k == SETUP:
            parts = x.get("store_parts") or {}
            jobs.append({"setup_s": x.get("setup_s"), "store_open_s": x.get("store_open_s"),
                         "store_parts": parts, "steps": 0, "steps_s": 0.0,
                         "first_step_s": None})
        elif jobs and k == STEP:
            j = jobs[-1]
            s = float(x.get("wall_s", 0.0)) + float(x.get("master_s", 0.0))
            j["steps"] += 1
            j["steps_s"] += s
            if j["first_step_s"] is None:
                j["first_step_s"] = s
        elif jobs and k == SUMMARY:
            jobs[-1].update(job_s=x.get("job_s"), before_steps_s=x.get("before_steps_s"))
    return jobs


def breakdown(launches: list[dict[str, Any]], jobs: list[dict[str, Any]],
              t_fail: float | None) -> dict[str, Any] | None:
    """Where the seconds from the failure to the relaunched job's first verified step went
    (module docstring); None without a relaunch that verified a step."""
    if t_fail is None or len(launches) < 2 or not launches[1].get("first_verified") \
            or len(jobs) < 2:
        return None
    a, b, job = launches[0], launches[1], jobs[1]
    total = b["first_verified"] - t_fail
    before = job.get("before_steps_s")
    first = job.get("first_step_s")
    start = (b["first_verified"] - b["started"] - before - (first or 0.0)) \
        if before is not None else None
    return {"total_s": total, "launcher_end_s": a["ended"] - t_fail,
            "supervisor_gap_s": b["started"] - a["ended"], "start_to_master_s": start,
            "before_steps_s": before, "store_open_s": job.get("store_open_s"),
            "setup_s": job.get("setup_s"), "first_step_s": first,
            "store_parts": job.get("store_parts")}


def outcome(lines: list[dict[str, Any]], launches: list[dict[str, Any]],
            rows: list[tuple[float, int, bool]], t_fail: float | None, n_steps: int
            ) -> dict[str, Any]:
    steps = [x for x in lines if kind_of(x) == STEP]
    setups = [x for x in lines if kind_of(x) == SETUP]
    verified = [int(x["step"]) for x in steps if x.get("verified")]
    after = [ts for ts, _, ok in rows if ok and t_fail is not None and ts > t_fail]
    resent = sum(int(s.get("setup_bytes", 0)) + sum(
        int(rp["bytes"]) for rp in (s.get("store") or {}).get("repairs", []))
        for s in setups[1:])
    later = [x["first_verified"] for x in launches[1:] if x.get("first_verified")]
    # a relaunched launch ended though no failure was recorded during it (a healthy job
    # killed by its supervisor); the failure itself is recorded during launch 0
    needless = sum(1 for x in launches[1:] if x.get("rc") and not x.get("events"))
    jobs = per_launch(lines)
    return {"relaunch_to_verified_s": (later[0] - t_fail) if later and t_fail else None,
            "failure_to_end_s": (launches[0]["ended"] - t_fail) if launches and t_fail
            else None, "launches": len(setups),
            "unverified": sum(1 for x in steps if not x.get("verified")),
            "lost": len(set(range(1, n_steps + 1)) - set(verified)),
            "repeated": len(verified) - len(set(verified)),
            "failure_to_verified_s": (min(after) - t_fail) if after and t_fail else None,
            "bytes_resent": resent, "needless_relaunches": needless,
            "breakdown": breakdown(launches, jobs, t_fail), "jobs": jobs,
            "launch_s": [x["ended"] - x["started"] for x in launches]}


def pct(xs: list[float], q: float) -> float | None:
    """The ``q`` quantile of ``xs`` (nearest rank), None when empty."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summarize(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """One case's row of the matrix."""
    def vals(k: str) -> list[float]:
        return [r[k] for r in rs if r.get(k) is not None]

    gaps, rel, ends = (vals("failure_to_verified_s"), vals("relaunch_to_verified_s"),
                       vals("failure_to_end_s"))
    return {"runs": len(rs), "hangs": sum(r["hung"] for r in rs),
            "unverified": sum(r["unverified"] for r in rs),
            "lost": sum(r["lost"] for r in rs), "repeated": sum(r["repeated"] for r in rs),
            "failed": sum(1 for r in rs if r["rc"] != 0),
            "p50_s": pct(gaps, 0.5), "p99_s": pct(gaps, 0.99),
            "max_s": max(gaps) if gaps else None,
            "relaunch_p50_s": pct(rel, 0.5), "relaunch_p99_s": pct(rel, 0.99),
            "relaunch_max_s": max(rel) if rel else None, "end_p50_s": pct(ends, 0.5),
            "bytes_resent": sum(r["bytes_resent"] for r in rs),
            "needless_relaunches": sum(r["needless_relaunches"] for r in rs)}


def parser(doc: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    a = ap.add_argument
    a("--runs", type=int, default=20)
    a("--cases", default=",".join(CASES))
    a("--steps", type=int, default=30)
    a("--after", type=int, default=5, help="steps printed before the failure")
    a("--kill-at", dest="kill_at", choices=("after", "random", "never"), default="after",
      help="the failure after --after steps, after a seeded uniform 1 .. steps - 1, or "
           "never (a healthy job: its wall time against its steps')")
    a("--seed", type=int, default=45, help="the seed of --kill-at random")
    a("--hosts", type=int, default=4)
    a("--slots", type=int, default=1)
    a("--victim", type=int, default=3, help="the host that fails (1-based)")
    a("--N", type=int, default=4)
    a("--L", type=int, default=2)
    a("--rows", type=int, default=64)
    a("--cols", type=int, default=None, help="default: --rows")
    a("--p", type=float, default=0.2, help="each machine's preemption probability a step")
    a("--data", default=None, help="the .npy of X (needed by --verify exact; written, "
                                   "seeded by --seed, when missing)")
    a("--verify", default=None, choices=("auto", "exact", "sketch"))
    a("--t-row", dest="t_row", type=float, default=0.005)
    a("--job-timeout", dest="job_timeout", type=float, default=4.0,
      help="the job's timeout_s: how long a rank waits for a silent peer")
    a("--timeout", type=float, default=120.0, help="seconds per launch")
    a("--rate", default="1gbit")
    a("--name", default="sv")
    a("--dir", default=None, help="work directory (its store kept and reused); default a "
                                  "new temporary one, deleted at the end")
    a("--out", default=None, help="append one JSON line per run")
    return ap


def config_text(args: argparse.Namespace) -> str:
    data = f'data = "{Path(args.data).resolve()}"\n' if args.data else ""
    return CONFIG.format(N=args.N, L=args.L, rows=args.rows, cols=args.cols or args.rows,
                         t_row=args.t_row, timeout_s=args.job_timeout, data=data, p=args.p,
                         steps=args.steps)


def run_all(args: argparse.Namespace, cases: list[str], d: Path, store: str, cfg: Path
            ) -> list[dict[str, Any]]:
    rng = random.Random(args.seed)
    runs: list[dict[str, Any]] = []
    for case in cases:
        for i in range(args.runs):
            k = rng.randint(1, args.steps - 1) if args.kill_at == "random" else \
                args.after if args.kill_at == "after" else -1
            rec = one_run(case, i, k, args, d, store, cfg)
            runs.append(rec)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")
                    f.flush()
            b = rec["breakdown"] or {}
            say(f"{case} {i + 1}/{args.runs} (kill after {k}): hung {rec['hung']}, rc "
                f"{rec['rc']}, launches {rec['launches']}, unverified {rec['unverified']}, "
                f"lost {rec['lost']}, repeated {rec['repeated']}, relaunches without a "
                f"failure {rec['needless_relaunches']}, to the next verified step "
                f"{_s(rec['failure_to_verified_s'])} (the relaunched job's first: "
                f"{_s(rec['relaunch_to_verified_s'])}; launcher end "
                f"{_s(b.get('launcher_end_s'))}, start {_s(b.get('start_to_master_s'))}, "
                f"before steps {_s(b.get('before_steps_s'))}, first step "
                f"{_s(b.get('first_step_s'))}{_parts(b.get('start_parts'))}), re-sent "
                f"{rec['bytes_resent']} bytes")
    return runs


def _parts(p: dict[str, float] | None) -> str:
    return "" if not p else (f"; start: spawn {_s(p['spawn_s'])}, imports {_s(p['imports_s'])}"
                             f", MPI {_s(p['mpi_s'])}, store {_s(p['store_s'])}")


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s"


def main(argv: list[str] | None = None, doc: str = __doc__ or "") -> int:
    args = parser(doc).parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"bench_survival: --cases: {c} is not one of {', '.join(CASES)}")
    d = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mpi-coded-survival-"))
    d.mkdir(parents=True, exist_ok=True)
    if args.data and not Path(args.data).exists():
        t0 = time.perf_counter()
        make_data(Path(args.data), args.rows, args.cols or args.rows, args.seed)
        say(f"bench_survival: {args.data} written in {time.perf_counter() - t0:.1f} s")
    cfg = d / "job.toml"
    cfg.write_text(config_text(args))
    store = str(d / "store" / "{host}")
    say(f"bench_survival: store in {d / 'store'} written in "
        f"{write_store(args, cfg, store):.1f} s")
    runs = run_all(args, cases, d, store, cfg)
    matrix = {case: summarize([r for r in runs if r["case"] == case]) for case in cases}
    if not args.dir:
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps({"matrix": matrix, "steps": args.steps, "rate": args.rate,
                      "job_timeout_s": args.job_timeout, "N": args.N, "L": args.L,
                      "hosts": args.hosts, "slots": args.slots, "rows": args.rows,
                      "verify": args.verify, "kill_at": args.kill_at, "seed": args.seed}))
    return 0
