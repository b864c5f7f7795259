"""Benchmarks on an emulated cluster: bring one up for a block, run jobs on it, always take
it down (no MPI here: everything goes through ``python -m mpi_coded cluster ...``).

:class:`BenchCluster` is ``mpi-coded cluster up`` of ``hosts`` hosts with one slot each;
:func:`bench_cluster` keeps it up for a ``with`` block and takes it down whatever happens
(no signal may interrupt the teardown); :func:`run_coded` and :func:`run_elastic` run a job
on it and read its results file with :func:`mpi_coded.results.read_results` (a line that
did not verify: :class:`BenchFailed`); :func:`calibrate` measures the links
(:mod:`mpi_coded.runtime.linkcal`; docs/theory.md (B.7)).  With ``replay`` nothing runs:
the lines are read from the output directory of a previous run.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpi_coded import results
from mpi_coded.proctree import kill_tree
from mpi_coded.rates import parse_rate
from mpi_coded.results import CodedRun, ElasticConfig, ElasticStep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
"""The repository: the jobs' working directory."""
TCP = "reno"
"""The hosts' TCP congestion control (``mpi-coded cluster up --tcp``; a namespace may always
choose Reno).  Loss-based TCP over the links' deep FIFO queues shares a link's rate among
the flows crossing it as the model's fluid sharing does (docs/benchmarks.md, "The
network")."""

Progress = Callable[[str], None]


def _quiet(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class BenchFailed(Exception):
    """A cluster or a job of the bench failed (or did not verify)."""


@dataclass
class BenchCluster:
    """``mpi-coded cluster up`` of ``hosts`` hosts, one slot each; jobs through :meth:`run`."""

    name: str
    hosts: int
    rate: str
    rate_of: tuple[str, ...] = ()
    base: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    replay: bool = False
    progress: Progress = _quiet
    dir: Path = field(init=False)
    up_ok: bool = False

    def __post_init__(self) -> None:
        self.dir = self.base / f"cluster-{self.name}"

    def cli(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mpi_coded", "cluster", args[0], "--name",
                               self.name, "--dir", str(self.dir), *args[1:]],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT)

    def up(self) -> None:
        args = ["up", "--hosts", str(self.hosts), "--slots", "1", "--rate", self.rate,
                "--tcp", TCP]
        for item in self.rate_of:
            args += ["--rate-of", item]
        r = self.cli(*args)
        if r.returncode != 0:
            raise BenchFailed(f"cluster up {self.name}: {r.stderr.strip() or r.stdout.strip()}")
        self.up_ok = True
        self.progress(r.stdout.strip().splitlines()[0])

    def down(self) -> None:
        if self.up_ok or (self.dir / "cluster.json").exists():
            r = self.cli("down")
            self.up_ok = False
            if r.returncode != 0:
                self.progress(f"cluster down {self.name} failed: {r.stderr.strip()}")

    def run(self, n: int, program: list[str], timeout: float = 600.0) -> str:
        """``cluster run -- mpiexec -n n PROGRAM`` in its own process group (killed with
        every rank on a timeout or an interruption); its output."""
        exe = Path(sys.executable).parent / "mpiexec"
        cmd = [sys.executable, "-m", "mpi_coded", "cluster", "run", "--name", self.name,
               "--dir", str(self.dir), "--timeout", str(timeout), "--", str(exe), "-n",
               str(n), *program]
        proc = subprocess.Popen(cmd, start_new_session=True, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        try:
            out, _ = proc.communicate(timeout=timeout + 60)
        except BaseException:
            kill_tree(proc.pid)
            proc.communicate()
            raise
        if proc.returncode != 0:
            raise BenchFailed(f"failed ({proc.returncode}): {' '.join(program)}\n{out[-3000:]}")
        return out


@contextmanager
def bench_cluster(name: str, hosts: int, rate: str, rate_of: Sequence[str] = (),
                  base: Path | None = None, replay: bool = False,
                  progress: Progress = _quiet) -> Iterator[BenchCluster]:
    """A cluster up for the ``with`` block, down after it whatever happens; ``replay``:
    none (the jobs' lines are read from the output directory)."""
    c = BenchCluster(name, hosts, rate, tuple(rate_of), base or Path(tempfile.gettempdir()),
                     replay, progress)
    if replay:
        yield c
        return
    try:
        c.up()
        yield c
    finally:
        # no signal may interrupt the teardown (a second Ctrl-C would leave the hosts up)
        stop = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, stop)
        try:
            c.down()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def cluster_name(tag: str, prefix: str = "t19c") -> str:
    """``prefix`` + a tag letter + a digit of this process: 6 characters."""
    return f"{prefix}{tag}{os.getpid() % 10}"


# --- the jobs ----------------------------------------------------------------------------

def coded_args(p: Any, multicast: str, reps: int, out: Path, extra: Sequence[str] = ()
               ) -> list[str]:
    """``mpi-coded run coded`` of the job ``p`` (a :class:`CodedParams`)."""
    return [sys.executable, "-m", "mpi_coded", "run", "coded", "--scheme", p.scheme, "--K",
            str(p.K), "--q", str(p.q), "--mu", str(p.mu), "--rows-per-batch",
            str(p.rows_per_batch), "--n", str(p.n), "--N", str(p.N), "--T", str(p.T),
            "--field", p.field_name, "--reps", str(reps), "--multicast", multicast,
            "--timeout", "300", "--out", str(out), *extra]


def run_coded(c: BenchCluster, p: Any, multicast: str, reps: int, out: Path,
              extra: Sequence[str] = ()) -> list[CodedRun]:
    """Run the coded job ``p`` on ``c`` (``replay``: read ``out``); its run lines, every
    one verified (else :class:`BenchFailed`)."""
    t0 = time.perf_counter()
    if not c.replay:
        if out.exists():
            out.unlink()
        c.run(p.K + 1, coded_args(p, multicast, reps, out, extra), timeout=900)
    lines = results.read_results(out)
    runs = results.views(lines, CodedRun)
    summ = results.records(lines, results.SUMMARY)
    if not runs or not all(r.verified for r in runs) or not (
            summ and summ[-1].get(results.ALL_VERIFIED)):
        raise BenchFailed(f"{out.name}: not every output verified")
    sh = ", ".join(f"{r.shuffle_s:.3f}" for r in runs)
    tot = ", ".join(f"{r.total_s:.2f}" for r in runs)
    c.progress(f"{out.stem}: shuffle {sh} s, total {tot} s, verified "
               f"({time.perf_counter() - t0:.0f} s)")
    return runs


def run_elastic(c: BenchCluster, toml: str, out: Path
                ) -> tuple[ElasticConfig, list[ElasticStep]]:
    """Run the elastic job of the config ``toml`` on ``c`` (``replay``: read ``out``); its
    config line and step lines, every step verified (else :class:`BenchFailed`)."""
    cfg_path = out.with_suffix(".toml")
    if not c.replay:
        cfg_path.write_text(toml)
        if out.exists():
            out.unlink()
    world = int(tomllib.loads(toml)["N"]) + 1
    t0 = time.perf_counter()
    if not c.replay:
        c.run(world, [sys.executable, "-m", "mpi_coded", "run", "cec", "--config",
                      str(cfg_path), "--out", str(out)], timeout=900)
    lines = results.read_results(out)
    configs = results.views(lines, ElasticConfig)
    steps = results.views(lines, ElasticStep)
    if not configs or not steps or not all(s.verified for s in steps):
        raise BenchFailed(f"{out.name}: not every step verified")
    c.progress(f"{out.stem}: {len(steps)} steps, total {sum(s.wall_s for s in steps):.2f} s, "
               f"moved {sum(int(s.bytes_moved or 0) for s in steps)} B, verified "
               f"({time.perf_counter() - t0:.0f} s)")
    return configs[0], steps


# --- the link calibration ----------------------------------------------------------------

def fit_link(points: Sequence[tuple[int, float]], rate_bps: float) -> dict[str, float]:
    """``t = 2 alpha + 8 bytes / (e rate)`` by least squares over ``(bytes, seconds)``
    (a round trip: the message and a 1-byte answer, each one MPI message)."""
    xs = [float(b) for b, _ in points]
    ys = [float(t) for _, t in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else my / mx
    icpt = my - slope * mx
    eff = min(1.0, 8.0 / (slope * rate_bps)) if slope > 0 else 1.0
    return {"alpha_s": max(0.0, icpt / 2.0), "efficiency": eff, "slope_s_per_byte": slope,
            "intercept_s": icpt}


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def calibrate(c: BenchCluster, sizes: Sequence[int], reps: int, hosts: int, out_dir: Path
              ) -> dict[str, Any]:
    """The link calibration at ``c``'s rate: one stream between two hosts (``sizes``: the
    single stream's efficiency, reported), a burst of header-sized messages (``alpha``,
    seconds per message), then every server host sending to every other at once
    (``fabric``: the bits per second all links carry together on this machine; the
    ``exchange_efficiency``).  Saved as ``calibration-RATE.json`` in ``out_dir`` (what
    ``replay`` reads)."""
    saved = out_dir / f"calibration-{c.rate}.json"
    if c.replay:
        return dict(json.loads(saved.read_text()))
    rate_bps = parse_rate(c.rate, "--rate")
    exchange_bytes = max(sizes) * (4 if rate_bps >= 5e8 else 1)
    out = c.run(hosts, [sys.executable, "-m", "mpi_coded.runtime.linkcal", "--sizes",
                        ",".join(map(str, sizes)), "--reps", str(reps), "--exchange",
                        str(exchange_bytes)], timeout=300)
    docs = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    doc = next(d for d in docs if "walls" in d)
    exch = next(d for d in docs if "exchange_walls" in d)
    if len(set(doc["hosts"])) != len(doc["hosts"]):
        raise BenchFailed(f"the calibration's ranks share hosts: {doc['hosts']}")
    pts = [(int(b), _median(w)) for b, w in doc["walls"].items()
           if b.isdigit() and int(b) in sizes]
    fit = fit_link(pts, rate_bps)
    alpha = _median(doc["walls"]["burst64"])
    wall = _median(exch["exchange_walls"])
    exchange_eff = min(1.0, 8 * int(exch["bytes"]) / (wall * rate_bps))
    fabric = 8 * int(exch["bytes"]) * int(exch["hosts"]) / wall
    cal = {"alpha_s": alpha, "efficiency": fit["efficiency"], "fabric_bps": fabric,
           "rate": c.rate, "exchange_efficiency": exchange_eff,
           "stream_efficiency": fit["efficiency"], "stream_fit": fit,
           "stream_points": [[b, t] for b, t in pts], "exchange_bytes": exchange_bytes,
           "exchange_hosts": exch["hosts"], "exchange_walls": exch["exchange_walls"]}
    shown = ", ".join(f"{b}B {t:.4f}s" for b, t in pts)
    c.progress(f"calibration {c.rate}: alpha {alpha * 1e6:.0f} us; efficiency (one stream) "
               f"{fit['efficiency']:.3f} ({shown}); {exch['hosts']} hosts at once "
               f"{exchange_eff:.3f} of the rate each: fabric {fabric / 1e6:.0f} Mbit/s")
    saved.write_text(json.dumps(cal) + "\n")
    return cal
