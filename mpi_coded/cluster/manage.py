"""``mpi-coded cluster up/run/status/down``: builds and removes the emulated cluster.

Runs the commands :mod:`.netns` builds (``ip``, ``tc``, ``nsenter``), keeps the cluster's
description, hostfiles and launcher in a state directory (default
``/run/mpi-coded/NAME``) and reads the links' byte counters.  Needs root (or
CAP_NET_ADMIN and CAP_SYS_ADMIN); without them :func:`missing_privilege` says what is
missing.  Every system tool it runs is found by :func:`find_tool`: on PATH, else in the
sbin directories a user's default PATH leaves out (Debian's ``tc`` is only in
``/usr/sbin``).  Never imports mpi4py.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mpi_coded.cluster import netns, slurm
from mpi_coded.cluster.netns import (  # find_tool, tool_path: re-exported
    ClusterError,
    EmulatedCluster,
    Host,
    Step,
    find_tool,
    tool_path,
)
from mpi_coded.errors import require
from mpi_coded.proctree import kill_tree

STATE_ROOT = Path("/run/mpi-coded")
STATE_FILE = "cluster.json"
OWN_FILES = ("cluster.json", "hosts.hydra", "hosts.openmpi", "launcher.sh", "kills.json",
             "faults.json", "hosts-up.hydra", "hosts-up.openmpi")
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
TOOLS = ("ip", "tc", "nsenter", "unshare")
def run_tool(argv: list[str] | tuple[str, ...], stdin: str = "",
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the system tool ``argv[0]`` (found by :func:`tool_path`) with ``argv[1:]``."""
    return subprocess.run([tool_path(argv[0]), *argv[1:]], input=stdin, capture_output=True,
                          text=True, timeout=timeout)


def effective_caps() -> int | None:
    """This process's effective capabilities (a bit mask); None off Linux."""
    caps = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                caps = int(line.split()[1], 16)
    except OSError:  # pragma: no cover - not Linux
        return None
    return caps


def missing_privilege() -> str | None:
    """What is missing to build namespaces: root (CAP_NET_ADMIN and CAP_SYS_ADMIN) first,
    then a tool (``ip``, ``tc``, ``nsenter``, ``unshare``; see :func:`find_tool`)."""
    caps = effective_caps()
    if caps is None:
        return "needs Linux network namespaces (/proc/self/status is unreadable)"
    missing = [n for n, bit in (("CAP_NET_ADMIN", CAP_NET_ADMIN),
                                ("CAP_SYS_ADMIN", CAP_SYS_ADMIN)) if not caps >> bit & 1]
    if missing:
        who = "not root" if os.geteuid() != 0 else "root without " + " and ".join(missing)
        return (f"needs root with {' and '.join(missing)} to make network namespaces "
                f"({who}; run it as root)")
    for tool in TOOLS:
        if find_tool(tool) is None:
            return (f"{tool} is not installed (not on PATH nor in "
                    f"{', '.join(netns.SBIN_DIRS)}; "
                    "iproute2 and util-linux provide ip, tc, nsenter and unshare)")
    return None


def run_step(step: Step, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = run_tool(step.argv, step.stdin, timeout=120)
    if check and r.returncode != 0:
        last = (r.stderr or r.stdout).strip().splitlines()[-1:]
        raise ClusterError(f"{netns.shell_line(step.argv)} failed: "
                           f"{last[0] if last else f'exit status {r.returncode}'}")
    return r


def existing_netns() -> set[str]:
    r = run_tool(["ip", "netns", "list"])
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def existing_links() -> set[str]:
    r = run_tool(["ip", "-o", "link", "show"])
    out = set()
    for line in r.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            out.add(parts[1].strip().split("@")[0])
    return out


def used_subnets(state_root: Path = STATE_ROOT) -> set[int]:
    """/24 indices of the block taken by addresses of the root namespace or by clusters up."""
    used: set[int] = set()
    r = run_tool(["ip", "-o", "-4", "addr", "show"])
    for line in r.stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            idx = netns.index_of_address(parts[parts.index("inet") + 1].split("/")[0])
            if idx is not None:
                used.add(idx)
    if state_root.is_dir():
        for f in state_root.glob(f"*/{STATE_FILE}"):
            try:
                subnet = json.loads(f.read_text())["subnet"]
            except (OSError, ValueError, KeyError):
                continue
            idx = netns.index_of_address(str(ipaddress.ip_network(subnet).network_address))
            if idx is not None:
                used.add(idx)
    return used


def state_dir(name: str, directory: str | None) -> Path:
    return Path(directory) if directory else STATE_ROOT / name


def load(name: str, directory: str | None) -> tuple[EmulatedCluster, Path]:
    d = state_dir(name, directory)
    f = d / STATE_FILE
    if not f.exists():
        raise ClusterError(f"no cluster {name!r} is up (no {f}; start one with "
                           f"mpi-coded cluster up --name {name})")
    return EmulatedCluster.from_dict(json.loads(f.read_text())), d


def tcp_choices() -> tuple[str, list[str]]:
    """This machine's TCP congestion control and those a network namespace may choose
    (``net.ipv4.tcp_allowed_congestion_control``; a namespace may not pick the others)."""
    base = Path(netns.TCP_SYSCTL)
    try:
        default = base.read_text().strip()
        allowed = (base.parent / "tcp_allowed_congestion_control").read_text().split()
    except OSError:  # pragma: no cover - not Linux
        return "", []
    return default, allowed


def check_tcp(tcp: str) -> tuple[str, str]:
    """``(to write, inherited)``: the machine's own congestion control, which new
    namespaces inherit, and ``tcp`` when it differs (empty: nothing to write); a ``tcp`` a
    namespace may not choose is the ClusterError naming ``--tcp``."""
    default, allowed = tcp_choices()
    if not tcp or tcp == default:
        return "", default
    if tcp not in allowed:
        raise ClusterError(f"--tcp: must be one a network namespace may choose here "
                           f"(net.ipv4.tcp_allowed_congestion_control: {' '.join(allowed)}) "
                           f"(got {tcp})")
    return tcp, default


def up(name: str, hosts: int, slots: int, rate: str, rate_of: list[str],
       directory: str | None, subnet: int | None = None,
       queue: str | int = netns.DEFAULT_QUEUE,
       tcp: str = "") -> tuple[EmulatedCluster, Path, float]:
    """Build the cluster; returns it, its state directory and the seconds it took."""
    netns.plan_cluster(name, hosts, slots, rate, rate_of, queue=queue, tcp=tcp)  # bad input
    write, inherited = check_tcp(tcp)
    why = missing_privilege()
    if why:
        raise ClusterError(why)
    t0 = time.perf_counter()
    d = state_dir(name, directory)
    if (d / STATE_FILE).exists():
        raise ClusterError(f"cluster {name!r} is already up ({d}); "
                           f"mpi-coded cluster down --name {name} first")
    if subnet is None:
        subnet = netns.subnet_index(name, used_subnets())
    c = netns.plan_cluster(name, hosts, slots, rate, rate_of, subnet, queue, write, inherited)
    clash = ({h.netns for h in c.hosts} & existing_netns()) | (
        ({c.bridge} | {h.port for h in c.hosts}) & existing_links())
    if clash:
        raise ClusterError(f"--name {name}: {', '.join(sorted(clash))} already exist "
                           "(another cluster of that name, or left over: "
                           f"mpi-coded cluster down --name {name})")
    d.mkdir(parents=True, exist_ok=True)
    (d / STATE_FILE).write_text(json.dumps(c.to_dict(), indent=1) + "\n")
    try:
        for step in netns.setup_steps(c):
            run_step(step)
    except BaseException:
        teardown(c, d)
        raise
    (d / "hosts.hydra").write_text(netns.hydra_hostfile(c))
    (d / "hosts.openmpi").write_text(netns.openmpi_hostfile(c))
    launcher = d / "launcher.sh"
    launcher.write_text(netns.launcher_script(c, tool_path("nsenter"), tool_path("unshare")))
    launcher.chmod(0o755)
    return c, d, time.perf_counter() - t0


def kill_processes_in(c: EmulatedCluster) -> list[int]:
    """SIGKILL what still runs in the cluster's namespaces (ranks, daemons); their pids."""
    pids: list[int] = []
    present = existing_netns()
    for h in c.hosts:
        if h.netns in present:
            try:
                pids += pids_in(h.netns)
            except ClusterError:  # tearing down: take what can be taken
                continue
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def pids_in(netns: str) -> list[int]:
    """The processes running in a network namespace (``ip netns pids``)."""
    r = run_tool(["ip", "netns", "pids", netns])
    if r.returncode != 0:
        raise ClusterError(f"{netns}: ip netns pids failed: {r.stderr.strip()}")
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def teardown(c: EmulatedCluster, d: Path) -> float:
    t0 = time.perf_counter()

    slurm.stop(c, d)
    kill_processes_in(c)
    for step in netns.teardown_steps(c, existing_netns(), existing_links()):
        run_step(step, check=False)
    for f in OWN_FILES:
        (d / f).unlink(missing_ok=True)
    for empty in (d, STATE_ROOT):  # the default root too, once no cluster is left
        try:
            empty.rmdir()
        except OSError:
            pass
    return time.perf_counter() - t0


def down(name: str, directory: str | None) -> tuple[EmulatedCluster, float]:
    why = missing_privilege()
    if why:
        raise ClusterError(why)
    c, d = load(name, directory)
    return c, teardown(c, d)


def counters(c: EmulatedCluster) -> dict[str, dict[str, Any]]:
    """Per host: bytes it sent and received through its link (the bridge port's
    counters: what the port received came from the host), and whether the link is up."""
    r = run_tool(["ip", "-s", "-j", "link", "show", "master", c.bridge])
    by_port = {p["ifname"]: p for p in json.loads(r.stdout or "[]")} if r.returncode == 0 \
        else {}
    out = {}
    for h in c.hosts:
        p = by_port.get(h.port)
        stats = (p or {}).get("stats64", {})
        out[h.name] = {"sent_bytes": stats.get("rx", {}).get("bytes"),
                       "received_bytes": stats.get("tx", {}).get("bytes"),
                       "link": "up" if p and "UP" in p.get("flags", []) else
                       ("down" if p else "missing")}
    return out


def status(name: str, directory: str | None) -> dict[str, Any]:
    c, d = load(name, directory)
    present = existing_netns()
    count = counters(c)

    hosts = [{"host": h.name, "address": h.address, "netns": h.netns,
              "netns_present": h.netns in present, "port": h.port, "rate": h.rate,
              "rate_bps": h.rate_bps, **count[h.name]} for h in c.hosts]
    return {"cluster": c.name, "subnet": c.subnet, "bridge": c.bridge,
            "bridge_address": c.bridge_address, "slots": c.slots,
            "queue_bytes": c.queue_bytes, "tcp": c.tcp, "state_dir": str(d),
            "slurm": slurm.describe(d), "hosts": hosts}


def privileged_host(name: str, directory: str | None, host: str) -> tuple[Host, Path]:
    """A host of the cluster (by name or number) and its state directory, once the
    privilege to change it is checked."""
    why = missing_privilege()
    if why:
        raise ClusterError(why)
    c, d = load(name, directory)
    h = c.host(host)
    require(h is not None, "HOST", "must be a host of the cluster", host)
    assert h is not None
    return h, d


def set_link(name: str, directory: str | None, host: str, state: str) -> str:
    """Take a host's link down or up (its bridge port: both directions); a link taken down
    is recorded (:func:`faults_since`)."""
    h, d = privileged_host(name, directory, host)
    run_step(Step(("ip", "link", "set", h.port, state)))
    if state == "down":
        record_fault(d, h.name, "link down")
    return h.name


FAULTS = "faults.json"
"""Network faults made by hand (``cluster link HOST down``), a JSON list in the state
directory, beside :data:`KILLS`."""


def record_fault(d: Path, host: str, what: str) -> None:
    """Append ``{host, unix, what}`` to the cluster's fault record."""
    try:
        old = json.loads((d / FAULTS).read_text())
    except (OSError, ValueError):
        old = []
    old = old if isinstance(old, list) else []
    old.append({"host": host, "unix": time.time(), "what": what})
    (d / FAULTS).write_text(json.dumps(old))


def faults_since(d: Path, since: float) -> list[dict[str, Any]]:
    """Every host killed or link taken down since Unix time ``since``: ``{host, unix,
    what}``, oldest first."""
    try:
        faults = json.loads((d / FAULTS).read_text())
    except (OSError, ValueError):
        faults = []
    out = [{"host": k["host"], "unix": float(k["unix"]), "what": f"{k['host']} killed"}
           for k in kills_since(d, since)]
    out += [{"host": f["host"], "unix": float(f["unix"]), "what": f"{f['host']} {f['what']}"}
            for f in (faults if isinstance(faults, list) else [])
            if isinstance(f, dict) and float(f.get("unix", 0)) >= since]
    return sorted(out, key=lambda f: f["unix"])


def port_up(port: str) -> bool:
    """Whether a host's bridge port exists and is up (root namespace)."""
    try:
        return Path(f"/sys/class/net/{port}/operstate").read_text().strip() in ("up",
                                                                                  "unknown")
    except OSError:
        return False


def kill_host(name: str, directory: str | None, host: str) -> tuple[str, list[tuple[int, str]]]:
    """Every process of one host killed at once (SIGKILL), as a node crash ends them: its
    MPI ranks, the launcher's daemon there (hydra's proxy, Open MPI's prted), a slurmd;
    the host's name and the ``(pid, command line)`` of what was killed.  Its link stays up
    (a dead node's port still answers nothing)."""
    h, d = privileged_host(name, directory, host)
    killed = []
    ranks = []
    for pid in pids_in(h.netns):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
            rank = mpi_rank_of(pid)
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue
        killed.append((pid, cmd))
        if rank is not None:
            ranks.append(rank)
    kills = _read_kills(d)  # cluster run names it when its job ends
    kills.append({"host": h.name, "unix": time.time(), "ranks": sorted(ranks),
                  "processes": len(killed)})
    (d / KILLS).write_text(json.dumps(kills))
    return h.name, killed


KILLS = "kills.json"
"""The hosts ``cluster kill`` killed (a JSON list, in the state directory)."""


def _read_kills(d: Path) -> list[dict[str, Any]]:
    try:
        kills = json.loads((d / KILLS).read_text())
    except (OSError, ValueError):
        return []
    return [k for k in kills if isinstance(k, dict)] if isinstance(kills, list) else []


def mpi_rank_of(pid: int) -> int | None:
    """The MPI rank a process runs as (its launcher's variable), if it is one."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        key, _, value = item.partition(b"=")
        if key in (b"PMI_RANK", b"OMPI_COMM_WORLD_RANK", b"PMIX_RANK") and value.isdigit():
            return int(value)
    return None


def kills_since(d: Path, since: float) -> list[dict[str, Any]]:
    """The hosts killed (``cluster kill``) since Unix time ``since``."""
    return [k for k in _read_kills(d) if float(k.get("unix", 0)) >= since]


# --- running MPI across the hosts ---------------------------------------------------------

def default_mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    found = shutil.which("mpiexec")
    if found is None:
        raise ClusterError("no mpiexec next to this python nor on PATH: give the command "
                           "with its mpiexec (mpi-coded cluster run -- mpiexec -n 2 ...)")
    return found


def mpi_flavor(exe: str) -> str:
    """``mpich`` (hydra), ``openmpi`` or ``other`` from ``exe --version``."""
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    text = r.stdout + r.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text:
        return "mpich"
    return "other"


def mpi_command(c: EmulatedCluster, d: Path, command: list[str]) -> tuple[list[str], dict[str, str],
                                                                      str]:
    """``command`` (``mpiexec ...``, or a program to start under the default mpiexec) with
    the cluster's launcher, hostfile and TCP settings; its environment; the flavor."""
    require(bool(command), "COMMAND", "must be given after --, e.g. "
            "mpi-coded cluster run -- mpiexec -n 7 mpi-coded run cec")
    first = Path(command[0]).name
    if first in ("mpiexec", "mpirun", "mpiexec.hydra", "mpirun.openmpi", "mpiexec.openmpi"):
        exe = shutil.which(command[0]) or command[0]
        rest = command[1:]
    else:
        exe, rest = default_mpiexec(), command
    flavor = mpi_flavor(exe)
    if flavor == "other":
        raise ClusterError(f"{exe}: neither MPICH's hydra nor Open MPI (from --version)")
    extra, env = netns.mpi_launch(flavor, c, str(d))
    return [exe, *extra, *rest], env, flavor


def mpi_command_on(c: EmulatedCluster, d: Path, command: list[str], hosts: list[Host]
                   ) -> tuple[list[str], dict[str, str]]:
    """:func:`mpi_command` on ``hosts`` only (a hostfile of theirs, ``hosts-up.*``), with
    the environment to run it in."""
    argv, env, _ = mpi_command(c, d, command)
    up = dataclasses.replace(c, hosts=tuple(hosts))
    (d / "hosts-up.hydra").write_text(netns.hydra_hostfile(up))
    (d / "hosts-up.openmpi").write_text(netns.openmpi_hostfile(up))
    argv = [a.replace(f"{d}/hosts.hydra", f"{d}/hosts-up.hydra").replace(
        f"{d}/hosts.openmpi", f"{d}/hosts-up.openmpi") for a in argv]
    full = {**os.environ, **{k: v for k, v in env.items()
                             if k in ("MPI_CODED_NETWORK",) or k not in os.environ}}
    return argv, full


def run(name: str, directory: str | None, command: list[str], timeout: float | None) -> int:
    c, d = load(name, directory)
    argv, env, flavor = mpi_command(c, d, command)
    before = counters(c)
    full = {**os.environ, **{k: v for k, v in env.items()
                             if k in ("MPI_CODED_NETWORK",) or k not in os.environ}}
    t0 = time.perf_counter()
    started = time.time()
    proc = subprocess.Popen(argv, env=full, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except BaseException as exc:
        kill_tree(proc.pid)
        proc.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            print(f"mpi-coded cluster: {argv[0]} timed out after {timeout} s and was killed",
                  file=sys.stderr)
            return 124
        raise
    ended = time.time()
    for k in kills_since(d, started):  # a host killed meanwhile: one line naming it
        ranks = ", ".join(map(str, k.get("ranks") or [])) or "none"
        print(f"mpi-coded cluster: host {k['host']} was killed during the run "
              f"({k.get('processes', '?')} processes, MPI ranks {ranks}) "
              f"{k['unix'] - started:.2f} s after it started; the run ended "
              f"{ended - k['unix']:.2f} s later, rc {rc}", file=sys.stderr)
    after = counters(c)
    moved = {h: {k: (after[h][k] or 0) - (before[h][k] or 0)
                 for k in ("sent_bytes", "received_bytes")} for h in after}
    total = sum(v["sent_bytes"] for v in moved.values())
    print(f"mpi-coded cluster {c.name}: {flavor}, rc {rc}, {time.perf_counter() - t0:.2f} s; "
          f"links carried {total} bytes: " + ", ".join(
              f"{h} sent {v['sent_bytes']} received {v['received_bytes']}"
              for h, v in moved.items()), file=sys.stderr)
    return rc
