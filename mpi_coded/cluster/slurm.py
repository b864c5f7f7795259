"""A multi-node SLURM on the emulated cluster (``mpi-coded cluster up --slurm``).

``munged`` (its own key and socket) and ``slurmctld`` run in the root namespace, the
controller reachable at the bridge address; one ``slurmd -N HOST`` per host runs inside
that host's namespace under its host name (``nsenter --net``: ``ip netns exec`` remounts
/sys and slurmd stops).  The state (config, spool, logs, pids) is in
``STATE_DIR/slurm``; ``export SLURM_CONF=STATE_DIR/slurm/slurm.conf`` and ``sbatch -N 4``
runs a job across the hosts.  :func:`config_text` is pure; :func:`start` and :func:`stop`
run the daemons (only those pids are ever signalled); every tool is found by
:func:`.netns.find_tool` (Debian puts ``slurmctld``, ``slurmd`` and ``munged`` in
``/usr/sbin``, which a user's default PATH leaves out).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from mpi_coded.cluster.netns import (
    ClusterError,
    EmulatedCluster,
    find_tool,
    host_command,
    tool_path,
)

SLURM_DIR = "slurm"
PIDS_FILE = "daemons.json"
FIRST_PORT = 17817


def config_text(c: EmulatedCluster, d: Path, controller: str, port: int, auth: str,
                munge_socket: str = "") -> str:
    """slurm.conf for the cluster: controller ``controller`` at the bridge address, one
    node per host at its address with ``slots`` CPUs, one default partition."""
    s = d / SLURM_DIR
    if auth == "munge":
        auth_lines = (f"AuthType=auth/munge\nAuthInfo=socket={munge_socket}\n"
                      "CredType=cred/munge")
    else:
        auth_lines = "AuthType=auth/none\nCredType=cred/none"
    nodes = "\n".join(f"NodeName={h.name} NodeAddr={h.address} CPUs={c.slots} "
                      "State=UNKNOWN" for h in c.hosts)
    # a fresh job id range per cluster: MPICH names its shared-memory segment after the PMI
    # job id, and a segment left in /dev/shm by a killed job 1 breaks the next job 1
    first_job_id = 1000 + secrets.randbelow(60_000) * 1000
    return f"""# Written by `mpi-coded cluster up --slurm --name {c.name}`
ClusterName=mc{c.name}
SlurmctldHost={controller}({c.bridge_address})
SlurmctldPort={port}
SlurmdPort={port + 1}
SlurmUser=root
SlurmdUser=root
{auth_lines}
StateSaveLocation={s}/ctld
SlurmdSpoolDir={s}/spool/%n
SlurmctldPidFile={s}/slurmctld.pid
SlurmdPidFile={s}/slurmd.%n.pid
SlurmctldLogFile={s}/slurmctld.log
SlurmdLogFile={s}/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SwitchType=switch/none
MpiDefault=none
FirstJobId={first_job_id}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={s}/jobcomp.log
ReturnToService=2
MinJobAge=3600
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
{nodes}
PartitionName={c.name} Nodes=ALL Default=YES MaxTime=60 State=UP OverSubscribe=FORCE:4
"""


def _free_port_pair(start: int = FIRST_PORT) -> int:
    for port in range(start, start + 400, 2):
        ok = True
        for p in (port, port + 1):
            with socket.socket() as sk:
                try:
                    sk.bind(("0.0.0.0", p))
                except OSError:
                    ok = False
        if ok:
            return port
    raise RuntimeError("no free port pair for slurmctld")


def _error(msg: str) -> Exception:
    return ClusterError(msg)


def describe(d: Path) -> dict[str, Any] | None:
    f = d / SLURM_DIR / PIDS_FILE
    if not f.exists():
        return None
    info = json.loads(f.read_text())
    alive = {k: _alive(p) for k, p in info["pids"].items()}
    return {**info, "alive": alive}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait(seconds: float, what: str, test: Any, pids: dict[str, int]) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if test():
            return
        dead = [k for k, p in pids.items() if not _alive(p)]
        if dead:
            raise _error(f"slurm: {', '.join(dead)} exited while waiting for {what}")
        time.sleep(0.2)
    raise _error(f"slurm: {what} did not happen within {seconds:.0f} s")


def start(c: EmulatedCluster, d: Path) -> dict[str, Any]:
    """Start munged, slurmctld and the slurmds; wait until every node is idle."""
    for tool in ("slurmctld", "slurmd", "sinfo", "scontrol"):
        if find_tool(tool) is None:
            raise _error(f"{tool} is missing: apt-get install slurm-wlm munge")
    slurmctld, slurmd, sinfo, scontrol = (tool_path(t) for t in ("slurmctld", "slurmd", "sinfo",
                                                                   "scontrol"))
    s = d / SLURM_DIR
    for sub in ("ctld", "spool"):
        (s / sub).mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {"pids": {}, "munge_dir": "", "conf": str(s / "slurm.conf")}
    pids: dict[str, int] = info["pids"]

    def save() -> None:
        (s / PIDS_FILE).write_text(json.dumps(info, indent=1) + "\n")

    env = {**os.environ, "SLURM_CONF": info["conf"]}
    try:
        auth, sock = "none", ""
        munged, munge, unmunge = (find_tool(t) for t in ("munged", "munge", "unmunge"))
        if munged and munge and unmunge:
            # a short directory searchable by the munge user (a socket path is <= 107 bytes)
            mdir = Path(f"/run/mpi-coded-munge-{c.name}")
            mdir.mkdir(mode=0o755, exist_ok=True)
            info["munge_dir"] = str(mdir)
            save()
            key = mdir / "munge.key"
            key.write_bytes(os.urandom(1024))
            shutil.chown(mdir, "munge", "munge")
            shutil.chown(key, "munge", "munge")
            key.chmod(0o400)
            mdir.chmod(0o755)
            sock = str(mdir / "munge.socket")
            proc = subprocess.Popen(
                [tool_path("setpriv"), "--reuid=munge", "--regid=munge", "--init-groups", munged,
                 "--foreground", f"--socket={sock}", f"--key-file={key}",
                 f"--pid-file={mdir}/munged.pid", f"--log-file={mdir}/munged.log",
                 f"--seed-file={mdir}/munged.seed"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            pids["munged"] = proc.pid
            save()
            auth = "munge"

            def munge_ok() -> bool:
                at = shlex.quote(f"--socket={sock}")
                r = subprocess.run(f"{shlex.quote(munge)} -n {at} | {shlex.quote(unmunge)} {at}",
                                   shell=True, capture_output=True, timeout=30)
                return r.returncode == 0

            _wait(20, "munged answering", munge_ok, pids)
        port = _free_port_pair()
        controller = socket.gethostname()
        (s / "slurm.conf").write_text(config_text(c, d, controller, port, auth, sock))
        log = open(s / "slurmctld.out", "ab")
        proc = subprocess.Popen([slurmctld, "-D", "-i", "-f", info["conf"]], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, env=env)
        pids["slurmctld"] = proc.pid
        save()
        _wait(30, "slurmctld answering", lambda: subprocess.run(
            [scontrol, "ping"], capture_output=True, env=env, timeout=30).returncode == 0,
            pids)
        for h in c.hosts:
            out = open(s / f"slurmd.{h.name}.out", "ab")
            proc = subprocess.Popen(host_command(c, h, [slurmd, "-D", "-f", info["conf"],
                                                        "-N", h.name],
                                                 tool_path("nsenter"), tool_path("unshare")),
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, env=env)
            pids[f"slurmd {h.name}"] = proc.pid
        save()

        def idle() -> bool:
            r = subprocess.run([sinfo, "-h", "-N", "-o", "%N %t"], capture_output=True,
                               text=True, env=env, timeout=30)
            states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
            return all(states.get(h.name) == "idle" for h in c.hosts)

        _wait(90, "every node idle", idle, pids)
    except BaseException:
        stop(c, d)
        raise
    info.update(controller=f"{controller}({c.bridge_address}):{port}", auth=auth,
                nodes=[h.name for h in c.hosts])
    save()
    return info


def stop(c: EmulatedCluster, d: Path) -> None:
    """Cancel the jobs, stop the daemons :func:`start` recorded, remove the munge dir."""
    s = d / SLURM_DIR
    f = s / PIDS_FILE
    if not f.exists():
        return
    info = json.loads(f.read_text())
    pids: dict[str, int] = info.get("pids", {})
    scancel = find_tool("scancel")
    if scancel and pids.get("slurmctld") and _alive(pids["slurmctld"]):
        subprocess.run([scancel, "--quiet", f"--partition={c.name}"], capture_output=True,
                       timeout=30, env={**os.environ, "SLURM_CONF": info["conf"]})
    order = [k for k in pids if k.startswith("slurmd")] + ["slurmctld", "munged"]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for k in order:
            if k in pids and _alive(pids[k]):
                try:
                    os.kill(pids[k], sig)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + 10
        while time.monotonic() < end and any(_alive(pids[k]) for k in order if k in pids):
            time.sleep(0.1)
    for k in order:  # reap those that are our children
        try:
            os.waitpid(pids.get(k, -1), os.WNOHANG)
        except (ChildProcessError, OSError):
            pass
    if info.get("munge_dir"):
        shutil.rmtree(info["munge_dir"], ignore_errors=True)
    shutil.rmtree(s, ignore_errors=True)
