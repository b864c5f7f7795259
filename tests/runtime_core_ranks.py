"""The ranks of the runtime core's MPI tests: ``mpiexec -n N python runtime_core_ranks.py
SCENARIO``.  Not a test module (pytest does not collect it); the tests call :func:`launch`
and read the master's ``RESULT {json}`` line, so every check and its message is in the test.

Scenarios (each through ``runtime.core.run.launch``: world check, wait mode, guard):

``exchange`` (3 ranks)
    handshake with host names; a worker's inbox before anything was sent; an order with
    ``aux``; payloads of every dtype, 1-D and 2-D, non-contiguous, Fortran-ordered, empty
    and large (past the eager limit), collected in kinds order; a 4-field probe record;
    the run record, the wait mode resolved on 3 ranks, freed memory kept.
``late`` (3 ranks)
    a soft deadline returns who is missing; that machine's answer to attempt 0, sent only
    after the master re-asked it for attempt 1, is dropped as stale by (step, attempt); a
    leftover answer of the previous step too; a hard deadline names both machines.
``wire`` (2 ranks)
    wrong kind, wrong step, a record of the wrong shape and a garbled header, each a wire
    error naming the sender; on the worker, an unexpected order from the master.
``abort`` (3 ranks)
    rank 2 raises in phase ``map 4`` while ranks 0 and 1 wait 120 s.
``world`` (2 ranks)
    the job needs 3 ranks: a ConfigError on every rank.
``ulfm_abort`` (7 ranks, ``fault_tolerance = "ulfm"``, Open MPI's ``--with-ft ulfm``)
    ranks 3, 4 and 5 are killed at once; rank 0, once it knows, raises in phase ``map 4``
    while ranks 1, 2 and 6 wait 120 s for its order.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

T = 60.0  # every wait of a scenario; the launch's timeout is larger


def launch(n: int, scenario: str, timeout: float = 120.0, *extra: str) -> Any:
    """Run ``scenario`` on ``n`` ranks (the tree under test first on the ranks' path;
    ``extra``: the launcher's own flags)."""
    from conftest import ROOT, launcher_env, mpiexec_cmd, run_cmd

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return run_cmd([*mpiexec_cmd(n, *extra), sys.executable, str(Path(__file__)), scenario],
                   timeout, {**launcher_env(), "PYTHONPATH": path})


def launch_until_ranks_end(n: int, scenario: str, timeout: float, *extra: str,
                           outlive_s: float = 20.0) -> tuple[Any, bool]:
    """:func:`launch`, watching the ranks' processes too (those of this launch: its
    session, which they keep when orphaned): ``(run, launcher_outlived)``.  When every
    rank's process has ended and the launcher is still up ``outlive_s`` later, the
    launcher is killed and ``launcher_outlived`` is True (Open MPI 5.0.11's ``prterun``
    under ``--with-ft ulfm`` once stayed after all its ranks had ended: the job's ranks,
    what the guard ends, are gone; the launcher's own exit is Open MPI's).  A rank still
    running at ``timeout``, or 5 s after its launcher ended, fails the test."""
    import subprocess
    import threading
    import time

    import pytest

    from conftest import ROOT, Run, launcher_env, mpiexec_cmd
    from mpi_coded.proctree import kill_tree

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen([*mpiexec_cmd(n, *extra), sys.executable, str(Path(__file__)),
                             scenario], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=ROOT,
                            env={**os.environ, **launcher_env(), "PYTHONPATH": path})
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda f=f, to=to: to.extend(f), daemon=True)
               for f, to in ((proc.stdout, out), (proc.stderr, err))]
    for t in readers:
        t.start()

    def ranks() -> list[int]:  # this launch's ranks: its session, Python's command line
        return [pid for pid in _session(proc.pid) if pid != proc.pid
                and _cmdline(pid).startswith(f"{sys.executable} {Path(__file__)} {scenario}")]

    end, seen, gone = time.monotonic() + timeout, False, None
    try:
        while proc.poll() is None and time.monotonic() < end:
            alive = ranks()
            seen = seen or bool(alive)
            gone = (gone or time.monotonic()) if seen and not alive else None
            if gone is not None and time.monotonic() - gone > outlive_s:
                break
            time.sleep(0.2)
        outlived = proc.poll() is None
        if outlived:
            kill_tree(proc.pid)
        proc.wait()
        left = ranks()
        until = time.monotonic() + 5
        while left and time.monotonic() < until:  # the launcher ended: so must they
            time.sleep(0.2)
            left = ranks()
    finally:
        kill_tree(proc.pid)
        for pid in ranks():
            kill_tree(pid)
    for t in readers:
        t.join(10)
    text = "".join(out) + "\n" + "".join(err)
    if left or (outlived and gone is None):
        pytest.fail(f"ranks still running ({len(left)}) after {timeout} s or their launcher's "
                    f"end: {scenario}\n{text}")
    return Run(proc.returncode, "".join(out), "".join(err)), outlived


def _session(sid: int) -> list[int]:
    """The processes of session ``sid`` (``/proc/PID/stat``'s sixth field)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[3] == str(sid):
                found.append(int(d.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    except OSError:
        return ""


@functools.cache
def launched(scenario: str) -> Any:
    """:func:`launch` of ``scenario`` once per test process (tests of several modules read
    the same run)."""
    return launch(SCENARIOS[scenario][0], scenario)


def result(run: Any) -> dict[str, Any]:
    """The master's ``RESULT`` line of a finished launch."""
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")]
    assert len(lines) == 1, run.stdout + run.stderr
    return json.loads(lines[0][len("RESULT "):])


def payloads(rank: int) -> list[Any]:
    import numpy as np

    rng = np.random.default_rng(rank)
    big = rng.standard_normal(200_000)  # 1.6 MB: sent past the eager limit
    big[7] = np.nan
    return [
        np.arange(12.0).reshape(3, 4) * rank,
        np.arange(7, dtype=np.uint8) + rank,
        (np.arange(12, dtype=np.uint16) * 1000 + rank).reshape(3, 4)[:, ::2],
        np.array([-(2**62), rank], dtype=np.int64),
        np.zeros(0, dtype=np.uint32),
        np.asfortranarray(np.arange(6, dtype=np.uint32).reshape(2, 3) + 2**31),
        np.zeros((0, 5)),
        big,
    ]


def _exchange() -> tuple[Any, Any]:
    import numpy as np

    from mpi_coded.runtime.core import memory
    from mpi_coded.runtime.core.peers import MasterLink, Peers
    from mpi_coded.runtime.core.records import StatsLayout
    from mpi_coded.runtime.core.run import run_record
    from mpi_coded.runtime.core.wait import POLICY, deadline_in
    from mpi_coded.runtime.core.wire import Kind as K

    meta = {"compute_s": 0.5, "sleep_s": 0.25, "target_s": 1.0, "rows": 42.0}
    PROBE_META = StatsLayout("step meta", tuple(meta))

    def master(comm, phase) -> int:
        out: dict[str, Any] = {}
        peers = Peers(comm, [1, 2], label=lambda r: f"machine {r}")
        phase.set("handshake")
        peers.handshake(T)
        out["hosts"] = {str(r): h for r, h in peers.host.items()}
        got, _ = peers.collect([1, 2], [K.DONE], 0, hard=deadline_in(T), what="probe")
        out["probe_empty"] = {str(r): m[0][0].aux for r, m in got.items()}
        peers.order([1, 2], K.TASK, 1, aux=3, timeout=T)
        kinds = [K.RESULT] * len(payloads(1)) + [K.META]
        got, missing = peers.collect([1, 2], kinds, 1, hard=deadline_in(T), what="payloads")
        out["missing"] = missing
        out["payloads"] = {}
        for r, msgs in got.items():
            checks = []
            for i, want in enumerate(payloads(r)):
                h, arr = msgs[i]
                want = np.asarray(want)
                checks.append([h.aux == 10 * r + i, arr is not None and arr.dtype == want.dtype,
                               arr is not None and arr.shape == want.shape,
                               arr is not None and arr.tobytes() == np.ascontiguousarray(
                                   want).tobytes()])
            out["payloads"][str(r)] = checks
            out.setdefault("meta", {})[str(r)] = PROBE_META.unpack(msgs[-1][1], r)
        rec = run_record(comm)
        out["run"] = {k: rec.get(k) for k in ("world_size", "mpi", "wait_mode",
                                              "ranks_on_node", "cores")}
        out["policy"] = POLICY.to_dict()
        out["retained"] = memory._RETAINED
        out["prefault"] = memory.prefault(3 << 20)
        peers.order([1, 2], K.STOP, 2, aux=0, timeout=T)
        print("RESULT " + json.dumps(out), flush=True)
        return 0

    def worker(comm, phase) -> None:
        rank = comm.Get_rank()
        link = MasterLink(comm)
        link.ready(T)
        empty = link.inbox.test({K.TASK}, 1, deadline_in(T)) is None  # nothing sent yet
        link.send(K.DONE, 0, aux=int(empty), timeout=T)
        h, _ = link.recv({K.TASK}, 1, T, "TASK")
        assert h.aux == 3, h
        for i, arr in enumerate(payloads(rank)):
            link.send(K.RESULT, 1, arr, aux=10 * rank + i, timeout=T)
        link.send(K.META, 1, PROBE_META.pack(**meta), timeout=T)
        link.recv({K.STOP}, 2, T, "STOP")

    return master, worker


def _late() -> tuple[Any, Any]:
    import time

    import numpy as np

    from mpi_coded.runtime.core.peers import MasterLink, Peers
    from mpi_coded.runtime.core.wait import DeadlineExceeded, deadline_in
    from mpi_coded.runtime.core.wire import Kind as K

    def master(comm, phase) -> int:
        out: dict[str, Any] = {}
        peers = Peers(comm, [1, 2], label=lambda r: f"machine {r}")
        peers.handshake(T)
        key = [(1, 0)]

        def stale(r, h) -> bool:
            return (h.step, h.aux) < key[0]

        peers.order([1, 2], K.TASK, 1, aux=0, timeout=T)
        t0 = time.monotonic()
        got, missing = peers.collect([1, 2], [K.RESULT], 1, aux=0, soft=t0 + 0.3,
                                     hard=t0 + T, stale=stale, what="step 1")
        out["soft"] = {"missing": missing, "got": sorted(got), "took": time.monotonic() - t0}
        key[0] = (1, 1)
        peers.order([1], K.TASK, 1, aux=1, timeout=T)  # machine 1 sends attempt 0's now
        got, missing = peers.collect([1], [K.RESULT], 1, aux=1, hard=deadline_in(T),
                                     stale=stale, what="step 1 attempt 1")
        h, arr = got[1][0]
        assert arr is not None
        out["attempt1"] = {"aux": h.aux, "payload": arr.tolist(), "dropped": peers.dropped,
                           "missing": missing}
        key[0] = (2, 0)
        peers.order([1, 2], K.TASK, 2, aux=0, timeout=T)
        got, missing = peers.collect([1, 2], [K.RESULT], 2, aux=0, hard=deadline_in(T),
                                     stale=stale, what="step 2")
        out["step2"] = {"got": {str(r): np.asarray(m[0][1]).tolist() for r, m in got.items()},
                        "dropped": peers.dropped, "missing": missing}
        t0 = time.monotonic()
        try:
            peers.collect([2, 1], [K.RESULT], 3, hard=t0 + 0.3, what="step 3 results")
            out["hard"] = "returned"
        except DeadlineExceeded as e:
            out["hard"] = {"message": str(e), "took": time.monotonic() - t0}
        peers.cancel()  # the receives still posted for step 3
        peers.order([1, 2], K.STOP, 4, aux=0, timeout=T)
        print("RESULT " + json.dumps(out), flush=True)
        return 0

    def worker(comm, phase) -> None:
        rank = comm.Get_rank()
        link = MasterLink(comm)
        link.ready(T)
        link.recv({K.TASK}, 1, T, "TASK 1")
        if rank == 1:  # answers attempt 0 only once re-asked: after the soft deadline
            h, _ = link.recv({K.TASK}, 1, T, "TASK 1 attempt 1")
            assert h.aux == 1, h
            link.send(K.RESULT, 1, np.array([1.0, 0.0]), aux=0, timeout=T)
            link.send(K.RESULT, 1, np.array([1.0, 1.0]), aux=1, timeout=T)
        else:
            link.send(K.RESULT, 1, np.array([2.0, 0.0]), aux=0, timeout=T)
        link.recv({K.TASK}, 2, T, "TASK 2")
        if rank == 2:  # a leftover answer of step 1 first
            link.send(K.RESULT, 1, np.array([2.0, 9.0]), aux=0, timeout=T)
        link.send(K.RESULT, 2, np.array([float(rank), 2.0]), aux=0, timeout=T)
        link.recv({K.STOP}, 4, T, "STOP")

    return master, worker


def _wire() -> tuple[Any, Any]:
    import numpy as np

    from mpi_coded.faults import Fault
    from mpi_coded.runtime.core import faults
    from mpi_coded.runtime.core.peers import MasterLink, Peers
    from mpi_coded.runtime.core.records import StatsLayout

    PROBE_META = StatsLayout("step meta", ("compute_s", "sleep_s", "target_s", "rows"))
    from mpi_coded.runtime.core.wait import deadline_in
    from mpi_coded.runtime.core.wire import Kind as K
    from mpi_coded.runtime.core.wire import WireError

    def master(comm, phase) -> int:
        errors = []
        peers = Peers(comm, [1])
        peers.handshake(T)
        peers.order([1], K.TASK, 1, aux=0, timeout=T)
        for _ in range(2):  # a BYE, then a RESULT for step 9
            try:
                peers.collect([1], [K.RESULT], 1, hard=deadline_in(T), what="result")
                errors.append("no error")
            except WireError as e:
                errors.append(str(e))
        got, _ = peers.collect([1], [K.META], 1, hard=deadline_in(T), what="meta")
        try:
            PROBE_META.unpack(got[1][0][1], 1)
            errors.append("no error")
        except WireError as e:
            errors.append(str(e))
        try:  # the garbled header
            peers.collect([1], [K.RESULT], 1, hard=deadline_in(T), what="result")
            errors.append("no error")
        except WireError as e:
            errors.append(str(e))
        peers.order([1], K.IDLE, 1, aux=0, timeout=T)  # the worker expects STOP
        got, _ = peers.collect([1], [K.DONE], 1, hard=deadline_in(T), what="its error")
        worker_error = np.asarray(got[1][0][1]).tobytes().decode()
        peers.order([1], K.STOP, 2, aux=0, timeout=T)
        print("RESULT " + json.dumps({"errors": errors, "worker": worker_error,
                                      "host": peers.host[1]}), flush=True)
        return 0

    def worker(comm, phase) -> None:
        link = MasterLink(comm)
        link.ready(T)
        link.recv({K.TASK}, 1, T, "TASK")
        link.send(K.BYE, 1, timeout=T)
        link.send(K.RESULT, 9, np.zeros(3), timeout=T)
        link.send(K.META, 1, np.zeros(3), timeout=T)
        faults.at_phase((Fault("garble", 1, "map"),), comm, "map", None)
        try:
            link.recv({K.STOP}, None, T, "STOP")
            text = "no error"
        except WireError as e:
            text = str(e)
        link.send(K.DONE, 1, np.frombuffer(text.encode(), dtype=np.uint8), timeout=T)
        link.recv({K.STOP}, 2, T, "STOP")

    return master, worker


def _abort() -> tuple[Any, Any]:
    from mpi_coded.runtime.core.peers import MasterLink, Peers
    from mpi_coded.runtime.core.wait import deadline_in
    from mpi_coded.runtime.core.wire import Kind as K

    def master(comm, phase) -> int:
        Peers(comm, [1, 2]).collect([1, 2], [K.DONE], 0, hard=deadline_in(120), what="DONE")
        print("UNREACHABLE", flush=True)
        return 0

    def worker(comm, phase) -> None:
        if comm.Get_rank() == 2:
            phase.set("map", 4)
            raise ValueError("boom from rank 2")
        MasterLink(comm).recv({K.STOP}, None, 120, "STOP")
        print("UNREACHABLE", flush=True)

    return master, worker


def _ulfm_abort() -> tuple[Any, Any]:
    import signal
    import time

    from mpi_coded.runtime.core.peers import MasterLink, Peers
    from mpi_coded.runtime.core.wait import deadline_in
    from mpi_coded.runtime.core.wire import Kind as K

    def master(comm, phase) -> int:
        peers, end = Peers(comm, list(range(1, 7))), deadline_in(T)
        while len(peers.lost) < 3 and time.monotonic() < end:
            peers.arrived(list(range(1, 7)), end)
            time.sleep(0.01)
        phase.set("map", 4)
        raise ValueError(f"boom from rank 0: ranks {sorted(peers.lost)} died")

    def worker(comm, phase) -> None:
        if comm.Get_rank() in (3, 4, 5):
            os.kill(os.getpid(), signal.SIGKILL)
        MasterLink(comm).recv({K.STOP}, None, 120, "STOP")
        print("UNREACHABLE", flush=True)

    return master, worker


# name: (ranks launched, world size the job needs, its master and worker)
SCENARIOS = {"exchange": (3, 3, _exchange), "late": (3, 3, _late), "wire": (2, 2, _wire),
             "abort": (3, 3, _abort), "world": (2, 3, _abort),
             "ulfm_abort": (7, 7, _ulfm_abort)}


def main() -> int:
    from mpi_coded.errors import ConfigError
    from mpi_coded.runtime.core.run import launch as run_launch

    _, size, make = SCENARIOS[sys.argv[1]]
    master, worker = make()
    try:
        return run_launch(size, f"{size} for this test", "auto", master, worker,
                          "ulfm" if sys.argv[1].startswith("ulfm") else "none")
    except ConfigError as e:
        from mpi4py import MPI

        print(f"CONFIG rank {MPI.COMM_WORLD.Get_rank()}: {e}", flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
