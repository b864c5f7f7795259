"""The emulated cluster as values: names, addresses, rates and the commands that build it.

A cluster ``NAME`` of ``H`` hosts is

* a bridge ``mc-NAME-br`` in the root namespace with address ``.1`` of the cluster's /24
  (chosen inside 198.18.0.0/15, distinct for every cluster that is up);
* per host ``k`` (1-based): a network namespace ``mpi-coded-NAME-nodek``, a veth pair whose
  root end ``mc-NAME-k`` is a port of the bridge and whose other end is the host's
  ``eth0`` with address ``.(k+1)``; the host name is ``NAME-nodek`` (set in a UTS
  namespace by the launcher);
* shaping with ``tbf``: the host's egress on its ``eth0``, its ingress on the bridge port
  (whose egress goes toward the host), both at the host's rate.  Each ``tbf`` holds a
  queue of bytes (``limit``) before it drops: the host's own (``eth0``) always
  :data:`HOST_QUEUE`, so that, as on a real host, its TCP is slowed by backpressure and
  never loses a packet to its own queue; the bridge port's (a switch's output port) the
  cluster's ``queue_bytes`` (``--queue``, default :data:`DEFAULT_QUEUE`: deep enough that
  nothing is dropped either).  A shallow queue is the real behaviour of many switches,
  but every drop that costs TCP a retransmission timeout (at least 200 ms) stalls a
  whole shuffle: with tbf's former 100 ms queues (1.3 MB at 100 Mbit/s) the hosts' own
  queues dropped tens of thousands of packets a run and one repetition in four of the
  coded job's shuffle took 1.5-2.2x the others (docs/clusters.md).
* TCP's congestion control on every host: ``--tcp`` writes it to each host's
  ``net.ipv4.tcp_congestion_control``; without it the hosts keep the machine's own, which
  new namespaces inherit (the cluster records which it is either way).

Everything here is pure but :func:`find_tool` (it looks for a file): :func:`setup_steps`
and :func:`teardown_steps` return the ``ip``/``tc`` command lines (argv lists and batch
text) that :mod:`.manage` runs, each tool found by :func:`find_tool`: on PATH, else in
``/usr/local/sbin``, ``/usr/sbin`` or ``/sbin``, which a user's default PATH leaves out.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import shutil
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mpi_coded.errors import ConfigError, require
from mpi_coded.rates import (  # the one rate parser (re-exported)
    format_rate,
    format_size,
    parse_rate,
    parse_size,
)

BLOCK = ipaddress.ip_network("198.18.0.0/15")
"""The addresses the emulated clusters use (RFC 2544's benchmarking block)."""
SUBNETS = BLOCK.num_addresses // 256  # 512 /24s
MAX_HOSTS = 200
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,5}$")
TCP_RE = re.compile(r"[a-z][a-z0-9_]{0,14}")  # fullmatch: a kernel name, 15 characters
DEFAULT_NAME = "mc"
DEFAULT_RATE = "1gbit"
MIN_BURST = 64 * 1024  # bytes: at least one GSO segment of the veth
NETNS_DIR = "/run/netns"  # where ip netns keeps the namespaces
TCP_SYSCTL = "/proc/sys/net/ipv4/tcp_congestion_control"  # per network namespace
HOST_QUEUE = 64 * 1024 * 1024
"""Bytes a host's own egress queue (``tbf`` on ``eth0``) holds: more than every TCP socket
of the host may leave in it (``tcp_limit_output_bytes`` each), so it never drops."""
DEFAULT_QUEUE = HOST_QUEUE
"""The bridge ports' queue (``--queue``) unless given: as deep, no drops."""
MAX_QUEUE = 4 * 1024**3  # tbf's limit is a 32-bit count of bytes


def check_name(name: str) -> str:
    require(bool(NAME_RE.match(name)), "--name",
            "must be 1-6 characters, a lowercase letter then lowercase letters or digits", name)
    return name


def subnet_index(name: str, used: Iterable[int]) -> int:
    """The cluster's /24 inside the block: from a hash of its name, the next free one."""
    taken = set(used)
    start = zlib.crc32(name.encode()) % SUBNETS
    for i in range(SUBNETS):
        idx = (start + i) % SUBNETS
        if idx not in taken:
            return idx
    raise ConfigError("--name", "no free /24 left in 198.18.0.0/15", name)


def subnet_of(index: int) -> ipaddress.IPv4Network:
    base = int(BLOCK.network_address) + 256 * index
    return ipaddress.IPv4Network((base, 24))


def index_of_address(addr: str) -> int | None:
    """The /24 index of ``addr`` if it is inside the block."""
    a = ipaddress.ip_address(addr)
    if a.version != 4 or a not in BLOCK:
        return None
    return (int(a) - int(BLOCK.network_address)) // 256


@dataclass(frozen=True)
class Host:
    index: int  # 1-based
    name: str  # host name (UTS) and the name in the hostfiles
    netns: str
    port: str  # the veth end on the bridge (root namespace)
    address: str
    rate_bps: int  # both directions

    @property
    def rate(self) -> str:
        return format_rate(self.rate_bps)


@dataclass(frozen=True)
class EmulatedCluster:
    name: str
    subnet: str  # e.g. 198.18.42.0/24
    bridge: str
    bridge_address: str
    slots: int
    hosts: tuple[Host, ...]
    queue_bytes: int | None = None
    """The bridge ports' queue in bytes (``--queue``): what a host's link holds toward it;
    None in the state of a cluster made before queues were set (100 ms of its rate)."""
    tcp: str = ""
    """The hosts' TCP congestion control (empty in an older cluster's state: not known)."""
    tcp_set: bool = False
    """Whether ``up`` wrote ``tcp`` into every host (``--tcp`` other than the machine's) or
    the hosts inherited it."""

    @property
    def prefix_len(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    def host(self, key: str) -> Host | None:
        """A host by name, number (``2``) or address."""
        for h in self.hosts:
            if key in (h.name, str(h.index), h.address):
                return h
        return None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EmulatedCluster:
        hosts = tuple(Host(**h) for h in d["hosts"])
        return cls(**{**d, "hosts": hosts})

    def network_record(self, transport: str) -> dict[str, Any]:
        """What a run record says about the network (``MPI_CODED_NETWORK``)."""
        return {"cluster": self.name, "emulated": True, "subnet": self.subnet,
                "hosts": [h.name for h in self.hosts],
                "rates": {h.name: h.rate for h in self.hosts}, "transport": transport,
                "queue_bytes": self.queue_bytes, "tcp": self.tcp,
                "iface": "eth0"}  # every host's link (runtime/core/linkstats.py counts it)


def plan_cluster(name: str, hosts: int, slots: int = 2, rate: str = DEFAULT_RATE,
                 rate_of: Sequence[str] = (), subnet: int = 0,
                 queue: str | int = DEFAULT_QUEUE, tcp: str = "",
                 inherited: str = "") -> EmulatedCluster:
    """Validate the ``up`` arguments and name everything (ConfigError on bad input;
    whether the kernel offers ``tcp`` is :mod:`.manage`'s check).  ``tcp``: the congestion
    control to write into every host, empty to leave the ``inherited`` one (recorded)."""
    check_name(name)
    require(tcp == "" or TCP_RE.fullmatch(tcp) is not None, "--tcp",
            "must be the name of a TCP congestion control like reno or bbr", tcp)
    queue_bytes = parse_size(str(queue), "--queue")
    require(MIN_BURST <= queue_bytes < MAX_QUEUE, "--queue",
            f"must be at least {format_size(MIN_BURST)} (one GSO segment of a link) and below "
            f"{format_size(MAX_QUEUE)} (tc's limit)", queue)
    require(isinstance(hosts, int) and 1 <= hosts <= MAX_HOSTS, "--hosts",
            f"must be an integer from 1 to {MAX_HOSTS}", hosts)
    require(isinstance(slots, int) and slots >= 1, "--slots", "must be an integer >= 1", slots)
    require(0 <= subnet < SUBNETS, "--subnet", f"must be from 0 to {SUBNETS - 1}", subnet)
    default = parse_rate(rate, "--rate")
    names = [f"{name}-node{k}" for k in range(1, hosts + 1)]
    rates = dict.fromkeys(names, default)
    for item in rate_of:
        host, sep, value = str(item).partition("=")
        require(bool(sep) and bool(host), "--rate-of", "must be HOST=RATE", item)
        key = host if host in rates else (names[int(host) - 1] if host.isdigit()
                                          and 1 <= int(host) <= hosts else None)
        require(key is not None, "--rate-of",
                f"must name a host of the cluster ({names[0]}..{names[-1]} or 1..{hosts})",
                host)
        assert key is not None
        rates[key] = parse_rate(value, "--rate-of")
    net = subnet_of(subnet)
    addr = [str(a) for a in net.hosts()]
    return EmulatedCluster(
        name=name, subnet=str(net), bridge=f"mc-{name}-br", bridge_address=addr[0],
        slots=slots, queue_bytes=queue_bytes, tcp=tcp or inherited,
        tcp_set=bool(tcp),
        hosts=tuple(Host(index=k, name=n, netns=f"mpi-coded-{n}", port=f"mc-{name}-{k}",
                         address=addr[k], rate_bps=rates[n])
                    for k, n in enumerate(names, start=1)))


class ClusterError(RuntimeError):
    """The cluster cannot be built, used or found (one line, exit 2)."""


# --- the system tools ---------------------------------------------------------------------

SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")
"""Where system tools are looked for after PATH (Debian's default PATH for a user,
``/usr/local/bin:/usr/bin:/bin``, has none of them; iproute2's ``tc`` is only in
``/usr/sbin``, as are slurm-wlm's daemons and ``munged``)."""
PROVIDERS = {"ip": "iproute2", "tc": "iproute2", "nsenter": "util-linux",
             "unshare": "util-linux", "setpriv": "util-linux", "slurmctld": "slurm-wlm",
             "slurmd": "slurm-wlm", "sinfo": "slurm-wlm", "scontrol": "slurm-wlm",
             "scancel": "slurm-wlm", "munged": "munge", "munge": "munge", "unmunge": "munge"}


def find_tool(name: str) -> str | None:
    """The path of the system tool ``name``: the one on PATH, else the one in
    :data:`SBIN_DIRS`; None if neither has it."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN_DIRS))


def tool_path(name: str) -> str:
    """:func:`find_tool`, or the ClusterError saying ``name`` is not installed (and which
    package provides it)."""
    found = find_tool(name)
    if found is None:
        package = PROVIDERS.get(name)
        raise ClusterError(f"{name} is not installed (not on PATH nor in "
                           f"{', '.join(SBIN_DIRS)}"
                           + (f"; the {package} package provides it)" if package else ")"))
    return found


# --- the commands -------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One command: ``argv`` with ``stdin`` (a batch file's text, or empty)."""

    argv: tuple[str, ...]
    stdin: str = ""


def tbf(bps: int, queue: int) -> list[str]:
    """``tbf`` arguments for ``bps``: a burst of at least 64 KiB (one GSO segment) or 2 ms,
    and a queue of ``queue`` bytes before it drops."""
    burst = max(MIN_BURST, bps // 8 // 500)
    return ["tbf", "rate", f"{bps}bit", "burst", str(burst), "limit", str(queue)]


def setup_steps(c: EmulatedCluster) -> list[Step]:
    """Create the cluster: one ``ip -batch`` in the root namespace, then per host one
    ``ip -n NS -batch`` (addresses, links up) and the shaping (``tc -batch``)."""
    root = [f"link add {c.bridge} type bridge",
            f"link set {c.bridge} type bridge forward_delay 0 stp_state 0",
            f"addr add {c.bridge_address}/{c.prefix_len} dev {c.bridge}",
            f"link set {c.bridge} up"]
    for h in c.hosts:
        root += [f"netns add {h.netns}",
                 f"link add {h.port} type veth peer name eth0 netns {h.netns}",
                 f"link set {h.port} master {c.bridge} up"]
    steps = [Step(("ip", "-batch", "-"), "\n".join(root) + "\n")]
    for h in c.hosts:
        steps.append(Step(("ip", "-n", h.netns, "-batch", "-"),
                          f"addr add {h.address}/{c.prefix_len} dev eth0\n"
                          "link set lo up\nlink set eth0 up\n"))
    port_queue = DEFAULT_QUEUE if c.queue_bytes is None else c.queue_bytes
    shape = [" ".join(["qdisc", "add", "dev", h.port, "root", *tbf(h.rate_bps, port_queue)])
             for h in c.hosts]
    steps.append(Step(("tc", "-batch", "-"), "\n".join(shape) + "\n"))
    for h in c.hosts:
        steps.append(Step(("tc", "-n", h.netns, "qdisc", "add", "dev", "eth0", "root",
                           *tbf(h.rate_bps, HOST_QUEUE))))
    if c.tcp_set:
        for h in c.hosts:
            steps.append(Step(("nsenter", f"--net={NETNS_DIR}/{h.netns}", "sh", "-c",
                               f"echo {c.tcp} > {TCP_SYSCTL}")))
    return steps


def teardown_steps(c: EmulatedCluster, existing_netns: Iterable[str], existing_links: Iterable[str]
                   ) -> list[Step]:
    """Remove what :func:`setup_steps` made and still exists (namespaces take their
    ``eth0`` and its peer with them; then the ports left and the bridge)."""
    ns = set(existing_netns)
    links = set(existing_links)
    lines = [f"netns del {h.netns}" for h in c.hosts if h.netns in ns]
    lines += [f"link del {h.port}" for h in c.hosts if h.port in links]
    if c.bridge in links:
        lines.append(f"link del {c.bridge}")
    return [Step(("ip", "-force", "-batch", "-"), "\n".join(lines) + "\n")] if lines else []


# --- launching MPI across the hosts -------------------------------------------------------

def hydra_hostfile(c: EmulatedCluster) -> str:
    return "".join(f"{h.name}:{c.slots}\n" for h in c.hosts)


def openmpi_hostfile(c: EmulatedCluster) -> str:
    return "".join(f"{h.name} slots={c.slots}\n" for h in c.hosts)


SSH_OPTIONS_WITH_VALUE = "-b|-c|-D|-E|-e|-F|-I|-i|-J|-L|-l|-m|-O|-o|-p|-Q|-R|-S|-W|-w"


def launcher_script(c: EmulatedCluster, nsenter: str = "nsenter", unshare: str = "unshare") -> str:
    """An ``ssh`` look-alike for the MPI launchers: ``SCRIPT [options] HOST COMMAND...``
    runs ``COMMAND`` (joined, through ``sh -c``, as ssh does) in HOST's network
    namespace under its host name."""
    cases = "".join(f"    {h.name}|{h.address}) ns={h.netns}; name={h.name} ;;\n"
                    for h in c.hosts)
    return f"""#!/bin/sh
# Written by `mpi-coded cluster up --name {c.name}`: runs a command on an emulated host,
# called like ssh: [options] HOST COMMAND...
while [ $# -gt 0 ]; do
    case "$1" in
        {SSH_OPTIONS_WITH_VALUE}) shift 2 ;;
        --) shift; break ;;
        -*) shift ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || {{ echo "mpi-coded cluster launcher: no host given" >&2; exit 255; }}
host=$1
shift
case "$host" in
{cases}    *) echo "mpi-coded cluster launcher: $host is not a host of cluster {c.name}" >&2
       exit 255 ;;
esac
# shellcheck disable=SC2016  # $1 and $* expand in the inner shell
exec {nsenter} --net=/run/netns/"$ns" {unshare} --uts sh -c \\
    'hostname "$1" && shift && exec sh -c "$*"' sh "$name" "$@"
"""


def host_command(c: EmulatedCluster, host: Host, argv: Sequence[str], nsenter: str = "nsenter",
                 unshare: str = "unshare") -> list[str]:
    """``argv`` run on ``host`` (its namespace and host name), for daemons and tests
    (``nsenter`` and ``unshare``: their paths, from :func:`find_tool`)."""
    return [nsenter, f"--net=/run/netns/{host.netns}", unshare, "--uts", "sh", "-c",
            'hostname "$1" && shift && exec "$@"', "sh", host.name, *argv]


TRANSPORT = "tcp"


def mpi_launch(flavor: str, c: EmulatedCluster, state_dir: str) -> tuple[list[str], dict[str, str]]:
    """Flags to put after ``mpiexec`` and the environment for ``flavor`` (``mpich`` or
    ``openmpi``): the cluster's launcher and hostfile, and TCP between the hosts (else
    MPICH's UCX would use shared memory across the namespaces)."""
    launcher = f"{state_dir}/launcher.sh"
    transport = {"mpich": "tcp (UCX tcp,self)", "openmpi": "tcp (ob1, btl tcp)"}.get(flavor,
                                                                                  TRANSPORT)
    net = json.dumps(c.network_record(transport), sort_keys=True)
    env = {"MPI_CODED_NETWORK": net}
    if flavor == "mpich":
        env.update(UCX_TLS="tcp,self", FI_PROVIDER="tcp")
        return (["-launcher", "ssh", "-launcher-exec", launcher, "-iface", c.bridge,
                 "-f", f"{state_dir}/hosts.hydra"], env)
    if flavor == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        mca = {"plm_rsh_agent": launcher, "plm_rsh_no_tree_spawn": "1", "pml": "ob1",
               "btl": "tcp,self", "btl_tcp_if_include": c.subnet,
               "oob_tcp_if_include": c.subnet}
        args = ["--hostfile", f"{state_dir}/hosts.openmpi"]
        for k, v in mca.items():
            args += ["--mca", k, v]
        args += ["-x", "MPI_CODED_NETWORK"]
        if os.environ.get("MPI_CODED_PLUGINS"):  # every rank loads the same plugins
            args += ["-x", "MPI_CODED_PLUGINS"]
        return args, env
    raise ConfigError("mpiexec", "must be MPICH (hydra) or Open MPI", flavor)


def job_env(c: EmulatedCluster) -> dict[str, str]:
    """The environment of a job started inside the hosts (``sbatch``/``srun`` on the
    cluster's SLURM, whose ranks MPICH starts with srun or hydra, or Open MPI's mpiexec
    with its daemons started by srun): MPICH's TCP between the hosts through OFI (short
    addresses: UCX's do not fit srun's PMI2 values), hydra's control address from ``eth0``
    (host names do not resolve); Open MPI's ranks and daemons on the cluster's subnet over
    TCP (``OMPI_MCA_*``, ``PRTE_MCA_*``: otherwise they may take loopback or shared memory
    across the namespaces); and the network record."""
    return {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", "UCX_TLS": "tcp,self",
            "HYDRA_IFACE": "eth0",
            "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self",
            "OMPI_MCA_btl_tcp_if_include": c.subnet, "PRTE_MCA_oob_tcp_if_include": c.subnet,
            "MPI_CODED_NETWORK": json.dumps(c.network_record("tcp (OFI tcp)"),
                                            sort_keys=True)}


def shell_line(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
