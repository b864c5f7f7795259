"""A grid of parameters of the elastic job run locally or through SLURM into one results
file (``scripts/sweep.py`` is its command line).  No MPI here: every run is a subprocess.

A grid key is one of the ``mpi-coded run cec`` override flags (:data:`FLAG_KEYS`) or a
config key (``N``, ``L``, ``speeds``, ``availability.p``, ...), written with the base config
into a TOML file (:func:`job_args`, which validates every point by the job's own rules
before any launch: :class:`SweepError`).  :func:`plan_runs` lists the runs, repetitions
interleaved.  :func:`sweep_local` launches ``mpiexec`` per run in its own process group
with a timeout (:func:`run_group` kills the whole group); :func:`sweep_slurm` submits
``slurm/sweep_array.sh`` as one array job per world size and waits for it.  Every run's
lines are read back with :func:`read_run` (through :func:`mpi_coded.results.scan_results`)
and appended, annotated (:data:`mpi_coded.results.SWEEP_KEYS`), to the one results file by
:class:`SweepCollector`; a run that failed leaves a ``run_failed`` line.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpi_coded import results
from mpi_coded.cec.config import load_config
from mpi_coded.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
"""The repository: the runs' working directory and ``slurm/sweep_array.sh``."""
FLAG_KEYS = {"field": "--field", "policy": "--policy", "t_row": "--t-row", "seed": "--seed",
             "timeout": "--timeout"}
"""Grid keys passed as ``mpi-coded run cec`` flags (the others go into the config)."""


class SweepError(Exception):
    """Bad input: reported in one line, exit status 2."""


# --- the grid ---------------------------------------------------------------------------

def split_values(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_grid(items: list[str]) -> dict[str, list[Any]]:
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key or not values.strip():
            raise SweepError(f"--grid {item!r}: must be KEY=V1,V2,...")
        if key in grid:
            raise SweepError(f"--grid {key}: given twice")
        vals = [parse_value(v) for v in split_values(values)]
        if any(v == "" for v in vals):
            raise SweepError(f"--grid {item!r}: empty value")
        grid[key] = vals
    return grid


def points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


# --- configs ----------------------------------------------------------------------------

def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise SweepError(f"cannot write {v!r} to TOML")


def dump_toml(d: dict[str, Any]) -> str:
    lines = [f"{k} = {toml_value(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for k, v in d.items():
        if isinstance(v, dict):
            lines.append(f"\n[{k}]")
            lines += [f"{kk} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def job_args(point: dict[str, Any], base: Path | None, cfg_dir: Path, index: int
             ) -> tuple[list[str], int]:
    """The ``mpi_coded`` arguments of one point (without --out) and its world size.

    Validates the point the way the job will (exit 2 before any launch on bad input).
    """
    flags = {k: v for k, v in point.items() if k in FLAG_KEYS}
    keys = {k: v for k, v in point.items() if k not in FLAG_KEYS}
    cfg_path = base
    if keys:
        d: dict[str, Any] = tomllib.loads(base.read_text()) if base else {}
        for key, v in keys.items():
            head, _, tail = key.partition(".")
            if tail:
                d.setdefault(head, {})[tail] = v
            else:
                d[key] = v
        cfg_path = cfg_dir / f"point-{index}.toml"
        cfg_path.write_text(dump_toml(d))
    args = ["run", "cec"]
    if cfg_path is not None:
        args += ["--config", str(cfg_path)]
    for k, v in flags.items():
        args += [FLAG_KEYS[k], str(v)]
    try:
        cfg = load_config(str(cfg_path) if cfg_path else None)
        cfg = cfg.with_overrides(
            field=flags.get("field"), policy=flags.get("policy"), seed=flags.get("seed"),
            t_row=None if "t_row" not in flags else float(flags["t_row"]),
            timeout_s=None if "timeout" not in flags else float(flags["timeout"]))
    except ConfigError as exc:
        raise SweepError(f"point {point}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise SweepError(f"point {point}: {exc}") from None
    return args, cfg.world_size


# --- running ----------------------------------------------------------------------------

def default_mpiexec(python: str) -> str | None:
    here = Path(python).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def run_group(cmd: list[str], timeout: float, env: dict[str, str] | None = None
              ) -> tuple[int | None, str]:
    """Run ``cmd`` in a new session; on timeout kill the whole process group.

    Returns (exit status or None on timeout, combined output).
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, cwd=ROOT, env={**os.environ, **(env or {})})
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
    return proc.returncode, out


def read_run(path: Path) -> list[dict[str, Any]]:
    """The lines of one run's results file ([] if there is none); a torn last line is
    skipped, any other line that is not a JSON object kept as an ``unreadable`` line."""
    if not path.is_file():
        return []
    out = []
    for line in results.scan_results(path):
        if line.torn:
            continue
        if isinstance(line.record, dict):
            out.append(line.record)
        else:
            out.append({"kind": "unreadable", "text": (line.text or json.dumps(line.record))[:200]})
    return out


def local_versions() -> dict[str, Any]:
    """This machine's versions (``mpi``: None), for runs that left no config line."""
    ctx = results.run_context()
    return {k: ctx.get(k) for k in results.VERSION_KEYS}


def run_verdict(lines: list[dict[str, Any]], rc: int | None) -> str | None:
    """Why a run failed, or None when it succeeded and verified."""
    if rc is None:
        return "timed out"
    if rc != 0:
        return f"exit status {rc}"
    return results.verdict(lines)


class SweepCollector:
    """Appends every run's lines, annotated, to the one results file."""

    def __init__(self, out: Path, sweep_id: str, via: str) -> None:
        self.out, self.sweep_id, self.via = out, sweep_id, via
        self.failed = 0
        self.fallback = local_versions()
        out.parent.mkdir(parents=True, exist_ok=True)

    def add(self, run: int, rep: int, params: dict[str, Any], lines: list[dict[str, Any]],
            rc: int | None, output: str, extra: dict[str, Any] | None = None) -> str | None:
        cfg = next(iter(results.records(lines, results.CONFIG)), {})
        host = cfg.get("host") or (extra or {}).get("node") or socket.gethostname()
        versions = {k: cfg.get(k, self.fallback[k]) for k in results.VERSION_KEYS}
        why = run_verdict(lines, rc)
        if why is not None:
            self.failed += 1
            tail = "\n".join(output.strip().splitlines()[-15:])
            lines = [*lines, results.run_failed(why, rc, tail)]
        note = results.sweep_note(self.sweep_id, run, rep, params, host, versions, self.via,
                                  **(extra or {}))
        writer = results.ResultsWriter(str(self.out))
        try:
            for rec in lines:
                writer.write({**rec, **note})
        finally:
            writer.close()
        return why


def describe(params: dict[str, Any], rep: int) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) + f" rep={rep}"


def summary_note(lines: list[dict[str, Any]]) -> str:
    s = next(iter(results.records(lines, results.SUMMARY)), None)
    return f"total_wall_s={s['total_wall_s']:.4f}" if s and "total_wall_s" in s else ""


def sweep_local(runs: list[RunSpec], opts: LaunchOptions, work: Path,
                col: SweepCollector) -> None:
    mpiexec = opts.mpiexec or default_mpiexec(opts.python)
    if mpiexec is None:
        raise SweepError("no mpiexec: install the 'local' extra or pass --mpiexec")
    pre = shlex.split(opts.mpiexec_args)
    if opts.hostfile:
        pre = ["-f", str(opts.hostfile), *pre]
    for k, (run, rep, params, args, world) in enumerate(r.astuple() for r in runs):
        out = work / "runs" / f"{run}.jsonl"
        out.unlink(missing_ok=True)
        cmd = [mpiexec, *pre, "-n", str(world), opts.python, "-m", "mpi_coded", *args,
               "--out", str(out)]
        t0 = time.monotonic()
        rc, text = run_group(cmd, opts.timeout)
        lines = read_run(out)
        why = col.add(run, rep, params, lines, rc, text)
        print(f"[{k + 1}/{len(runs)}] {describe(params, rep)}: "
              f"{'ok ' + summary_note(lines) if why is None else 'FAILED: ' + why} "
              f"({time.monotonic() - t0:.1f} s)", flush=True)
        if why is not None:
            print(text, file=sys.stderr)


def job_gone(job_id: str) -> bool:
    r = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%i"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        return "Invalid job id" in r.stderr  # purged from the controller: finished
    return r.stdout.strip() == ""


def sweep_slurm(runs: list[RunSpec], opts: LaunchOptions, work: Path,
                col: SweepCollector) -> None:
    for tool in ("sbatch", "squeue", "scancel"):
        if shutil.which(tool) is None:
            raise SweepError(f"--via slurm needs {tool} on PATH")
    by_world: dict[int, list[tuple[int, int, dict[str, Any], list[str], int]]] = {}
    for run_spec in runs:
        by_world.setdefault(run_spec.world, []).append(run_spec.astuple())
    submitted: list[tuple[str, int, Path]] = []  # (array job id, world size, its directory)
    try:
        for world, group in by_world.items():
            gdir = work / f"ntasks-{world}"
            (gdir / "tasks").mkdir(parents=True, exist_ok=True)
            (gdir / "runs").mkdir(exist_ok=True)
            for i, (_, _, _, args, _) in enumerate(group):
                (gdir / "tasks" / f"{i}.args").write_text("\n".join(args) + "\n")
            cmd = ["sbatch", "--parsable", f"--array=0-{len(group) - 1}%{opts.max_parallel}",
                   f"--ntasks={world}", f"--time={opts.time}", "--job-name=mpi-coded-sweep",
                   f"--output={gdir}/slurm-%A_%a.out"]
            if opts.max_parallel == 1 and submitted:
                # one run at a time across the arrays too: no co-scheduled timings
                cmd.append(f"--dependency=afterany:{submitted[-1][0]}")
            cmd += [*shlex.split(opts.sbatch_args), str(ROOT / "slurm" / "sweep_array.sh")]
            env = {"SWEEP_DIR": str(gdir), "MPI_CODED_PYTHON": opts.python,
                   "MPI_CODED_ROOT": str(ROOT), "LAUNCHER": opts.launcher}
            sub = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120,
                                 env={**os.environ, **env})
            if sub.returncode != 0:
                raise SweepError(f"sbatch failed ({sub.returncode}): {sub.stderr.strip()}")
            job_id = sub.stdout.strip().split(";")[0]
            submitted.append((job_id, world, gdir))
            print(f"submitted array job {job_id}: {len(group)} runs of {world} ranks "
                  f"(launcher {opts.launcher})", flush=True)
        deadline = time.monotonic() + opts.timeout * len(runs) + opts.queue_wait
        while not all(job_gone(j) for j, _, _ in submitted):
            if time.monotonic() > deadline:
                print("sweep: the array jobs timed out: cancelled", file=sys.stderr)
                break
            time.sleep(1.0)
    finally:  # on timeout, error or Ctrl-C: leave nothing queued or running
        left = [j for j, _, _ in submitted if not job_gone(j)]
        if left:
            subprocess.run(["scancel", *left], timeout=60)
    done = {world: (job_id, gdir) for job_id, world, gdir in submitted}
    for world, group in by_world.items():
        job_id, gdir = done[world]
        for i, (run, rep, params, _, _) in enumerate(group):
            lines = read_run(gdir / "runs" / f"{i}.jsonl")
            rc_file = gdir / "runs" / f"{i}.rc"
            info = json.loads(rc_file.read_text()) if rc_file.is_file() else {}
            rc = info.pop("rc", None)
            log = gdir / f"slurm-{job_id}_{i}.out"
            text = log.read_text() if log.is_file() else f"(no output {log})"
            why = col.add(run, rep, params, lines, rc, text,
                          {"slurm": {**info, "ntasks": world}})
            print(f"[{run + 1}/{len(runs)}] {describe(params, rep)}: "
                  f"{'ok ' + summary_note(lines) if why is None else 'FAILED: ' + why}",
                  flush=True)
            if why is not None:
                print(text, file=sys.stderr)


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its index, repetition, grid point, ``mpi_coded`` arguments
    (without ``--out``) and world size."""

    run: int
    rep: int
    params: dict[str, Any]
    args: list[str]
    world: int

    def astuple(self) -> tuple[int, int, dict[str, Any], list[str], int]:
        return self.run, self.rep, self.params, self.args, self.world


@dataclass(frozen=True)
class LaunchOptions:
    """How the runs are launched (``scripts/sweep.py``'s options)."""

    timeout: float = 300.0
    python: str = sys.executable
    mpiexec: str | None = None
    hostfile: Path | None = None
    mpiexec_args: str = ""
    launcher: str = "srun"
    sbatch_args: str = ""
    max_parallel: int = 1
    time: str = "00:10:00"
    queue_wait: float = 3600.0


def plan_runs(grid: dict[str, list[Any]], reps: int, base: Path | None, work: Path
              ) -> tuple[list[dict[str, Any]], list[RunSpec]]:
    """The grid's points and its runs (``reps`` repetitions, interleaved), every point
    validated (:func:`job_args`, its config written into ``work``) before any launch."""
    pts = points(grid)
    prepared = [job_args(p, base, work, i) for i, p in enumerate(pts)]
    runs: list[RunSpec] = []
    for rep in range(reps):
        for i, p in enumerate(pts):
            args, world = prepared[i]
            runs.append(RunSpec(len(runs), rep, p, args, world))
    return pts, runs


Launch = Callable[[list[RunSpec], LaunchOptions, Path, SweepCollector], None]
LAUNCHERS: dict[str, Launch] = {"local": sweep_local, "slurm": sweep_slurm}
"""``--via``: how the runs are launched."""
