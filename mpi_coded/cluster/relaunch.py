"""A lost host costs a relaunch, not the job: ``mpi-coded cluster relaunch``.

No released MPI launcher survives losing a host's daemon (docs/elastic.md, "Machines that
die and join"): hydra and PRRTE 3.0 end the job.  The elastic job started from a coded
store (docs/storage.md) needs no more than a new launch on the hosts left: each machine
there maps its block from its own disk, the machines of the lost host are lost (or
repaired by a rank without a block), and ``--resume`` continues after the last step line
(power and linreg: from the state saved with it).  The supervisor here does that with the
MPI launcher itself; it is not a launcher of its own:

1. run the job's ``mpiexec`` command across the hosts that are up (:func:`hosts_up`: the
   host's namespace exists and its link is up), with a hostfile of those hosts only;
2. when it ends non-zero for anything but bad input (exit 2), and tries are left, run it
   again on the hosts up then, with ``-n`` lowered by the ranks the lost hosts held
   (:func:`ranks_left`) and ``--resume`` added (:func:`relaunch_command`);
3. print each failure, each relaunch, and the seconds from the failure (the moment a
   ``cluster kill`` or ``cluster link ... down`` was recorded, else the job's end) to the
   next verified step (the first step row ``yes`` the relaunched job prints), and append
   one JSON object per launch to ``--report`` when asked.

The decisions (:func:`hosts_up`, :func:`ranks_left`, :func:`relaunch_command`,
:func:`step_row`) are pure and unit-tested; :func:`supervise` is the thin loop around
``subprocess``.
"""

from __future__ import annotations

import compileall
import json
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mpi_coded
from mpi_coded.cluster import manage
from mpi_coded.cluster.netns import EmulatedCluster, Host
from mpi_coded.errors import ConfigError, require
from mpi_coded.proctree import kill_tree
from mpi_coded.results import CEC, CONFIG, STEP, SUMMARY, kind_of, read_results, records

EXIT_BAD_INPUT = 2
STEP_ROW = re.compile(r"^\s*(\d+)\s+[\d,]+\s+\S+\s+\S+\s+.*\s(yes|NO)\b")


def step_row(line: str) -> tuple[int, bool] | None:
    """``(step, verified)`` of one row of the elastic job's table on stdout, else None."""
    m = STEP_ROW.match(line)
    return (int(m.group(1)), m.group(2) == "yes") if m else None


def hosts_up(hosts: Sequence[Host], netns_exists: Callable[[str], bool],
             port_up: Callable[[str], bool], lost: Sequence[str] = ()) -> list[Host]:
    """The hosts a launch may use: their namespace exists, their link is up, and no fault
    was recorded on them since the first launch (``lost``: a host ``cluster kill`` crashed
    stays lost, as a reclaimed VM does, though its namespace is still there)."""
    return [h for h in hosts if netns_exists(h.netns) and port_up(h.port)
            and h.name not in lost]


def placement(n: int, hosts: int, slots: int) -> list[int]:
    """The host index (0-based) of each of ``n`` ranks, placed by slot as the launchers
    place them on a hostfile of ``hosts`` hosts with ``slots`` each (wrapping around)."""
    return [(r // slots) % hosts for r in range(n)]


def ranks_left(n: int, hosts: int, slots: int, up: Sequence[int]) -> int:
    """The ranks of the first launch (``n`` on ``hosts`` hosts) that the hosts ``up``
    (0-based indices) held."""
    return sum(1 for h in placement(n, hosts, slots) if h in set(up))


def tasks_per_node(text: str) -> list[int]:
    """SLURM's ``SLURM_TASKS_PER_NODE`` (``2,1(x3)``) as one count per node."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if m is None:
            raise ConfigError("SLURM_TASKS_PER_NODE", "must read like 2,1(x3)", text)
        out += [int(m.group(1))] * int(m.group(2) or 1)
    return out


def slurm_ranks_left(per_node: str, nodes: Sequence[str], up: Sequence[str]) -> int:
    """The ranks of the first launch (``per_node``: ``SLURM_TASKS_PER_NODE`` over the
    allocation's ``nodes``) that the nodes ``up`` held."""
    counts = tasks_per_node(per_node)
    require(len(counts) == len(nodes), "SLURM_TASKS_PER_NODE",
            f"must count the tasks of the {len(nodes)} nodes", per_node)
    return sum(n for node, n in zip(nodes, counts) if node in set(up))


def ranks_arg(command: Sequence[str]) -> tuple[int, int]:
    """``(index, n)`` of the ``-n N`` (or ``-np N``) of an ``mpiexec`` command."""
    for i, a in enumerate(command[:-1]):
        if a in ("-n", "-np"):
            try:
                return i + 1, int(command[i + 1])
            except ValueError:
                break
    raise ConfigError("COMMAND", "must be an mpiexec command with -n N", " ".join(command))


def out_arg(command: Sequence[str]) -> str:
    """The results file (``--out``) of the ``mpi-coded run cec`` in ``command``."""
    require("run" in command and "cec" in command, "COMMAND",
            "must run the elastic job (mpi-coded run cec ...)", " ".join(command))
    for i, a in enumerate(command[:-1]):
        if a == "--out":
            return command[i + 1]
        if a.startswith("--out="):
            return a.split("=", 1)[1]
    raise ConfigError("COMMAND", "must name its results file (--out): a relaunch resumes "
                      "from it", " ".join(command))


def relaunch_command(command: Sequence[str], n: int, resume: bool) -> list[str]:
    """``command`` with ``-n n``, and ``--resume`` when ``resume`` (the results file has a
    step to continue after; a job lost before its first step starts again)."""
    i, _ = ranks_arg(command)
    out = list(command)
    out[i] = str(n)
    if resume and "--resume" not in out:
        out.append("--resume")
    return out


def has_steps(path: str) -> bool:
    """Whether the results file at ``path`` holds a step line of the elastic job."""
    try:
        return any(kind_of(r) == STEP for r in records(read_results(path), job=CEC))
    except (OSError, ValueError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mpi_coded.cluster.relaunch ranks-left PER_NODE NODES UP`` (the batch
    scripts' relaunch: :func:`slurm_ranks_left`, nodes comma-separated) and ``has-steps
    OUT``: print the answer."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["ranks-left"] and len(args) == 4:
        print(slurm_ranks_left(args[1], args[2].split(","), args[3].split(",")))
        return 0
    if args[:1] == ["has-steps"] and len(args) == 2:
        print("yes" if has_steps(args[1]) else "no")
        return 0
    print("usage: python -m mpi_coded.cluster.relaunch ranks-left PER_NODE NODES UP | "
          "has-steps OUT", file=sys.stderr)
    return EXIT_BAD_INPUT


@dataclass
class Launch:
    """One launch: when it started and ended, its exit status, its verified steps and when
    the first of them was printed."""

    attempt: int
    hosts: list[str]
    ranks: int
    started: float
    ended: float = 0.0
    rc: int = 0
    first_verified: float | None = None
    steps_verified: int = 0
    steps_unverified: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


GRACE_S = 5.0
"""Seconds the launcher may take to end once the job's master wrote its summary line."""


def results_lines(path: str) -> list[dict[str, Any]]:
    """Every line of the results file at ``path`` ([] when it cannot be read yet)."""
    try:
        return read_results(path)
    except (OSError, ValueError):
        return []


def own_summary(lines: Sequence[dict[str, Any]]) -> bool:
    """Whether ``lines``, the lines a launch added to its results file, hold the summary of
    the launch's own job: a summary after a config line, of the config's first step.

    A summary before any config line, or of another first step, is the last word of the
    job of the launch before: a launcher that loses a host ends before its job's master
    does (hydra asserts; the proxies left then kill their ranks), and the master's watcher
    (:mod:`mpi_coded.results.last_word`) appends the summary only once the master is dead,
    often a few milliseconds after the next launch began.  Taken for the end of the job
    just launched, it gave that healthy job :data:`GRACE_S` to end, and killed it (rc
    124) when more than that was left to run: a relaunch without a failure whenever the
    host was lost early in a long job (issue 45).  The one case this cannot tell apart is
    a summary of the same first step written after the new job's config line: the job
    before did no step and its master outlived its launcher by the new job's whole start."""
    first: object = None
    for r in records(lines, job=CEC):
        if kind_of(r) == CONFIG:
            first = r.get("first_step", 1)
        elif kind_of(r) == SUMMARY and first is not None and \
                r.get("first_step", 1) == first:
            return True
    return False


def completed(path: str) -> bool:
    """Whether the last summary line of ``path`` says the job ran to its end verified."""
    try:
        last = [r for r in records(read_results(path), job=CEC) if kind_of(r) == SUMMARY]
    except (OSError, ValueError):
        return False
    return bool(last) and last[-1].get("all_verified") is True and \
        not last[-1].get("ended_early")


def job_status(rc: int, out: str) -> int:
    """The launch's exit status ``rc`` as the supervisor reads it: 0 when the job's summary
    in ``out`` says it ran to its end verified (:func:`completed`), whatever its launcher
    said after it: a launcher that hung (124), or ranks that ended badly once the summary
    was written (a relaunch would have nothing left to run: with ``verify = "exact"`` at
    2 GiB the master's end check once outlasted the machines' wait for STOP, and three
    relaunches of a finished job followed, issue 45)."""
    if rc not in (0, EXIT_BAD_INPUT) and completed(out):
        print(f"mpi-coded cluster relaunch: the job ended verified; its launcher's exit "
              f"status {rc} after that is not relaunched", file=sys.stderr, flush=True)
        return 0
    return rc


def job_ended(out: str) -> Callable[[], bool]:
    """Whether the job of the launch starting now wrote its summary to ``out``
    (:func:`own_summary` of the lines added since this was called)."""
    before = len(results_lines(out))
    return lambda: own_summary(results_lines(out)[before:])


def run_streaming(argv: list[str], env: dict[str, str], timeout: float, launch: Launch,
                  over: Callable[[], bool] = lambda: False) -> int:
    """Run ``argv``, echo its stdout line by line, note its step rows; its exit status
    (124 after ``timeout`` seconds: its process group killed).  Once ``over()`` (the
    master of this launch's job wrote its summary, :func:`job_ended`: the job is over
    whatever its launcher does) the launcher has :data:`GRACE_S` seconds to end: a
    launcher waiting for a daemon on a host that vanished without closing its connection
    would wait for ever."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True, bufsize=1)
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    checked = 0.0
    try:
        while True:
            now = time.monotonic()
            if now - checked > 0.5:
                checked = now
                if over():
                    deadline = min(deadline, now + GRACE_S)
            if time.monotonic() > deadline:
                kill_tree(proc.pid)
                proc.wait()
                print("mpi-coded cluster relaunch: the launcher did not end: killed",
                      file=sys.stderr)
                return 124
            if not sel.select(timeout=0.2):
                continue
            line = proc.stdout.readline()
            if not line:
                break
            print(line, end="", flush=True)
            row = step_row(line)
            if row is not None:
                if row[1]:
                    launch.steps_verified += 1
                    if launch.first_verified is None:
                        launch.first_verified = time.time()
                else:
                    launch.steps_unverified += 1
        return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except BaseException:
        kill_tree(proc.pid)
        proc.wait()
        raise
    finally:
        sel.close()


def compile_package(root: Path = Path(mpi_coded.__file__).parent) -> bool:
    """Write the bytecode of the package's modules that has none (or a stale one) before
    the first launch; whether every module compiled.

    Every rank of every launch imports about 100 of the package's modules.  Without their
    bytecode on disk (an editable install, a checkout, a venv built under
    ``PYTHONDONTWRITEBYTECODE=1``, which also keeps each rank from writing it) each rank
    compiled them all from source at its start: about 0.12 s of CPU a rank, paid again by
    every relaunch, where the ranks start together on the hosts left (issue 45: 5 ranks on
    2 cores).  A wheel's install writes this bytecode; here it is written once.  A package
    the supervisor may not write to is left as it is (its ranks compile, as before)."""
    try:
        return bool(compileall.compile_dir(str(root), quiet=2, workers=1))
    except OSError:
        return False


def supervise(c: EmulatedCluster, d: Path, command: list[str], tries: int, timeout: float,
              report: str | None, events: Callable[[float], list[dict[str, Any]]]) -> int:
    """The loop of the module docstring; the last launch's exit status."""
    _, n0 = ranks_arg(command)
    out = out_arg(command)
    all_hosts = list(c.hosts)
    cmd = list(command)
    rc = 1
    failed_at: float | None = None
    lost: list[str] = []
    compile_package()
    for attempt in range(tries + 1):
        up = hosts_up(all_hosts, lambda ns: Path(f"/run/netns/{ns}").exists(),
                      manage.port_up, lost)
        if not up:
            print("mpi-coded cluster relaunch: no host is up", file=sys.stderr)
            return rc
        if attempt > 0:
            n = ranks_left(n0, len(all_hosts), c.slots, [all_hosts.index(h) for h in up])
            cmd = relaunch_command(command, n, has_steps(out))
        argv, env = manage.mpi_command_on(c, d, cmd, up)
        launch = Launch(attempt, [h.name for h in up], ranks_arg(cmd)[1], time.time())
        print(f"mpi-coded cluster relaunch: launch {attempt} on {launch.hosts} "
              f"({launch.ranks} ranks)", file=sys.stderr, flush=True)
        rc = job_status(run_streaming(argv, env, timeout, launch, job_ended(out)), out)
        launch.ended, launch.rc = time.time(), rc
        record = launch.to_dict()
        failures = events(launch.started)
        lost += [e["host"] for e in failures if e["host"] not in lost]
        record["events"] = failures
        if failed_at is not None and launch.first_verified is not None:
            record["failure_to_verified_s"] = launch.first_verified - failed_at
            print(f"mpi-coded cluster relaunch: the next verified step came "
                  f"{record['failure_to_verified_s']:.2f} s after the failure",
                  file=sys.stderr, flush=True)
        if report:
            with open(report, "a") as f:
                f.write(json.dumps(record) + "\n")
        if rc == 0 or rc == EXIT_BAD_INPUT:
            return rc
        failed_at = min([e["unix"] for e in failures], default=launch.ended)
        print(f"mpi-coded cluster relaunch: launch {attempt} ended with rc {rc} "
              f"{launch.ended - failed_at:.2f} s after the failure"
              + (f" ({', '.join(e['what'] for e in failures)})" if failures else ""),
              file=sys.stderr, flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
