"""The emulated cluster (``mpi-coded cluster``): hosts as network namespaces on one bridge
with shaped links, and the jobs run across them.

The pure tests (names, addresses, commands, bad input) run anywhere.  The others need root
(network namespaces, ``ip``, ``tc``): without it they are skipped with the reason, except
under ``CI=true``, where they fail.  Every mpiexec runs through :func:`conftest.run_cmd`
(its own process group, a hard timeout) under ``mpi-coded cluster run``, which picks the
launcher flags and TCP settings for the flavor of the mpiexec next to ``sys.executable``:
under ``.venv-ompi`` the same tests exercise Open MPI.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, mpi_flavor, mpiexec_path, processes_matching, run_cmd
from mpi_coded.cluster import manage, netns

pytestmark = pytest.mark.multihost
IP, TC = (manage.find_tool(t) or t for t in ("ip", "tc"))  # as the tool finds them: also in
# /usr/sbin and /sbin, which a user's default PATH leaves out (Debian's tc is only there)
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"  # Debian's PATH for a user: no sbin

P2P = ROOT / "scripts" / "p2p_throughput.py"
CHECK = ROOT / "scripts" / "check_results.py"
JOBS = ROOT / "tests" / "multihost_coded_jobs.py"
EIGHT_MIB = 8 * 1024 * 1024


# --- pure: names, addresses, rates, commands ----------------------------------------------

def test_rates_parse_in_tc_units_and_bad_rates_name_the_argument():
    assert netns.parse_rate("100mbit") == 10**8
    assert netns.parse_rate("1gbit") == 10**9
    assert netns.parse_rate("12.5mbps") == 10**8
    assert netns.format_rate(10**8) == "100mbit"
    for bad in ("0mbit", "-1gbit", "fast", "10 parsecs", ""):
        with pytest.raises(netns.ConfigError, match=r"^--rate: must be a rate > 0"):
            netns.parse_rate(bad)


def test_queue_sizes_parse_in_tc_units_and_bad_sizes_name_the_argument():
    from mpi_coded.rates import format_size, parse_size

    assert parse_size("64mb", "--queue") == 64 * 2**20
    assert parse_size("1.25MB", "--queue") == 1310720
    assert parse_size("512k", "--queue") == parse_size("512kb", "--queue") == 524288
    assert parse_size("65536", "--queue") == 65536
    assert format_size(64 * 2**20) == "64mb" and format_size(1310720) == "1280kb"
    assert format_size(1000) == "1000b"
    for bad in ("0", "-1mb", "1.25mbit", "lots", "", "1mb/s", "1e400", "1e400mb"):
        with pytest.raises(netns.ConfigError, match=r"^--queue: must be a size > 0"):
            parse_size(bad, "--queue")
    with pytest.raises(netns.ConfigError, match=r"^--rate: must be a rate > 0"):
        netns.parse_rate("1e400mbit")


def test_a_cluster_is_named_and_addressed_inside_the_block(monkeypatch):
    c = netns.plan_cluster("ab1", 3, slots=2, rate="1gbit", rate_of=["2=100mbit"], subnet=7)
    assert c.subnet == "198.18.7.0/24" and c.bridge == "mc-ab1-br"
    assert c.bridge_address == "198.18.7.1"
    assert [h.name for h in c.hosts] == ["ab1-node1", "ab1-node2", "ab1-node3"]
    assert [h.address for h in c.hosts] == ["198.18.7.2", "198.18.7.3", "198.18.7.4"]
    assert [h.rate for h in c.hosts] == ["1gbit", "100mbit", "1gbit"]
    assert all(len(n) <= 15 for h in c.hosts for n in (h.port, c.bridge))
    # two clusters never share a /24, and every /24 is inside 198.18.0.0/15
    a = netns.subnet_index("ab1", [])
    assert netns.subnet_index("ab1", [a]) != a
    assert netns.subnet_of(511).supernet(new_prefix=15) == netns.BLOCK
    # the commands: one root batch, per host an ip -n batch, shaping both ways
    steps = netns.setup_steps(c)
    assert steps[0].argv == ("ip", "-batch", "-")
    assert "link add mc-ab1-2 type veth peer name eth0 netns mpi-coded-ab1-node2" in \
        steps[0].stdin
    assert ("tc", "-n", "mpi-coded-ab1-node2", "qdisc", "add", "dev", "eth0", "root",
            "tbf", "rate", "100000000bit") == steps[-2].argv[:11]
    assert "qdisc add dev mc-ab1-2 root tbf rate 100000000bit" in steps[-4].stdin
    # queues: a host's own never drops; the bridge port's is --queue (default as deep)
    assert steps[-2].argv[-2:] == ("limit", str(netns.HOST_QUEUE))
    assert f"limit {netns.DEFAULT_QUEUE}" in steps[-4].stdin
    assert c.queue_bytes == netns.DEFAULT_QUEUE == 64 * 2**20
    shallow = netns.plan_cluster("ab1", 2, queue="1.25mb")
    assert shallow.queue_bytes == 1310720
    s2 = netns.setup_steps(shallow)
    assert "limit 1310720" in s2[-3].stdin and s2[-1].argv[-1] == str(netns.HOST_QUEUE)
    assert shallow.network_record("tcp")["queue_bytes"] == 1310720
    # the inherited congestion control is recorded, and written only when --tcp differs
    kept = netns.plan_cluster("ab1", 2, inherited="bbr")
    assert (kept.tcp, kept.tcp_set) == ("bbr", False)
    assert not any("nsenter" in st.argv for st in netns.setup_steps(kept))
    assert netns.plan_cluster("ab1", 2, tcp="reno", inherited="bbr").tcp == "reno"
    assert netns.EmulatedCluster.from_dict(json.loads(json.dumps(shallow.to_dict()))) == shallow
    # the state of a cluster made before queues and TCP were set: not known, not invented
    legacy = {k: v for k, v in shallow.to_dict().items()
              if k not in ("queue_bytes", "tcp", "tcp_set")}
    old = netns.EmulatedCluster.from_dict(legacy)
    assert (old.queue_bytes, old.tcp, old.tcp_set) == (None, "", False)
    assert old.network_record("tcp")["queue_bytes"] is None
    with pytest.raises(netns.ConfigError, match=r"^--tcp: must be the name"):
        netns.plan_cluster("ab1", 2, tcp="reno\n")
    # TCP: the machine's unless --tcp names one, then written in every host's namespace
    assert c.tcp == "" and not any("nsenter" in st.argv for st in steps)
    reno = netns.setup_steps(netns.plan_cluster("ab1", 2, tcp="reno"))
    assert [st.argv for st in reno[-2:]] == [
        ("nsenter", f"--net=/run/netns/mpi-coded-ab1-node{k}", "sh", "-c",
         "echo reno > /proc/sys/net/ipv4/tcp_congestion_control") for k in (1, 2)]
    assert netns.hydra_hostfile(c).splitlines() == ["ab1-node1:2", "ab1-node2:2",
                                                    "ab1-node3:2"]
    args, env = netns.mpi_launch("mpich", c, "/s")
    assert args[:4] == ["-launcher", "ssh", "-launcher-exec", "/s/launcher.sh"]
    assert env["UCX_TLS"] == "tcp,self" and json.loads(env["MPI_CODED_NETWORK"])["rates"] == {
        "ab1-node1": "1gbit", "ab1-node2": "100mbit", "ab1-node3": "1gbit"}
    args, env = netns.mpi_launch("openmpi", c, "/s")
    assert "plm_rsh_agent" in args and "198.18.7.0/24" in args
    assert "MPI_CODED_PLUGINS" not in args
    monkeypatch.setenv("MPI_CODED_PLUGINS", "/x/plug.py")  # Open MPI's ranks load them too
    args, env = netns.mpi_launch("openmpi", c, "/s")
    assert args[-4:] == ["-x", "MPI_CODED_NETWORK", "-x", "MPI_CODED_PLUGINS"]


def test_the_launcher_script_is_clean_shell(work):
    exe = shutil.which("shellcheck")
    if exe is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    script = work / "launcher.sh"
    script.write_text(netns.launcher_script(netns.plan_cluster("ab1", 2, subnet=3)))
    r = run_cmd([exe, str(script)], timeout=60)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("args,message", [
    (["--hosts", "0"], "--hosts: must be an integer from 1 to 200"),
    (["--hosts", "2", "--rate", "0mbit"], "--rate: must be a rate > 0"),
    (["--hosts", "2", "--rate", "quick"], "--rate: must be a rate > 0"),
    (["--hosts", "2", "--rate-of", "x-node3=1gbit"], "--rate-of: must name a host"),
    (["--hosts", "2", "--rate-of", "3=1gbit"], "--rate-of: must name a host"),
    (["--hosts", "2", "--rate-of", "2=-5kbit"], "--rate-of: must be a rate > 0"),
    (["--hosts", "2", "--name", "Bad_Name"], "--name: must be 1-6 characters"),
    (["--hosts", "2", "--queue", "1kb"], "--queue: must be at least 64kb"),
    (["--hosts", "2", "--queue", "4gb"], "--queue: must be at least 64kb (one GSO segment of "
                                         "a link) and below 4gb"),
    (["--hosts", "2", "--queue", "100mbit"], "--queue: must be a size > 0 in bytes"),
    (["--hosts", "2", "--queue", "0"], "--queue: must be a size > 0 in bytes"),
    (["--hosts", "2", "--tcp", "reno; reboot"], "--tcp: must be the name of a TCP"),
    (["--hosts", "2", "--tcp", "nosuchcc"], "--tcp: must be one a network namespace may"),
])
def test_bad_input_is_one_line_naming_the_argument(args, message):
    r = run_cmd([sys.executable, "-m", "mpi_coded", "cluster", "up", *args], timeout=60)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.splitlines()) == 1, \
        r.stderr


def test_without_root_or_cap_net_admin_one_line_says_what_is_missing():
    # with a user's default PATH (no sbin): the privilege is checked before any tool
    path = {"PATH": DEFAULT_PATH}
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        r = run_cmd([sys.executable, "-m", "mpi_coded", "cluster", "up", "--hosts", "2"], 60,
                    env=path)
        if os.geteuid() != 0:
            assert r.returncode == 2 and "needs root" in r.stderr, r.stderr
            assert "not root" in r.stderr and "not installed" not in r.stderr, r.stderr
            assert len(r.stderr.splitlines()) == 1
        return
    up = ["cluster", "up", "--hosts", "2", "--dir", "/nonexistent/mc"]
    cases = [(["--bounding-set=-net_admin"], ["-m", "mpi_coded", *up],
              "root without CAP_NET_ADMIN")]
    if _others_can_read(ROOT):
        cases.append((["--reuid=65534", "--regid=65534", "--clear-groups"],
                      ["-m", "mpi_coded", *up], "not root"))
    else:  # nobody cannot reach this checkout: a real process with no capability at all,
        # whose euid reads as a user's (the one thing the message takes from the uid)
        cases.append((["--bounding-set=-all", "--inh-caps=-all"],
                      ["-c", "import os, sys; os.geteuid = lambda: 65534; "
                       "from mpi_coded.cli.main import main; sys.exit(main(sys.argv[1:]))",
                       *up], "not root"))
    for drop, argv, says in cases:
        r = run_cmd(["setpriv", *drop, sys.executable, *argv], timeout=60, env=path)
        assert r.returncode == 2 and says in r.stderr, r.stderr
        assert len(r.stderr.splitlines()) == 1


def _others_can_read(path: Path) -> bool:
    """Every directory from / to ``path`` lets other users through (o+x)."""
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


# --- on this machine: needs root ----------------------------------------------------------

def _need_namespaces() -> None:
    why = manage.missing_privilege()
    if why is None:
        probe = f"mpi-coded-probe-{os.getpid()}"
        r = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True,
                           timeout=60)
        subprocess.run([IP, "netns", "del", probe], capture_output=True, timeout=60)
        if r.returncode != 0:
            why = f"ip netns add fails here: {r.stderr.strip()}"
    if why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no emulated cluster can be made: {why}")
        pytest.skip(f"no emulated cluster here: {why}")


_COUNTER = [0]


@pytest.fixture
def work() -> Iterator[Path]:
    """A directory of this test (not pytest's tmp_path: concurrent pytest runs on one
    machine prune each other's base temp, and a cluster's state must outlive nothing)."""
    d = Path(tempfile.mkdtemp(prefix="mpi-coded-multihost-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _name() -> str:
    """A cluster name of this test process (``t`` + 4 digits + a letter): no collision with
    another test run or a user's cluster."""
    _COUNTER[0] += 1
    return f"t{os.getpid() % 10000:04d}{'abcdefghijklmnopqrstuvwxyz'[_COUNTER[0] % 26]}"


class Emulated:
    """A cluster made by ``mpi-coded cluster up`` for one test (or module)."""

    def __init__(self, tmp: Path, hosts: int, *up_args: str, name: str | None = None) -> None:
        self.name = name or _name()
        self.dir = tmp / f"cluster-{self.name}"
        self.hosts = hosts
        r = self.cli("up", "--hosts", str(hosts), *up_args)
        assert r.returncode == 0, r.stdout + r.stderr
        self.up_output = r.stdout

    def cli(self, command: str, *args: str, timeout: float = 120.0):
        return run_cmd([sys.executable, "-m", "mpi_coded", "cluster", command, "--name",
                        self.name, "--dir", str(self.dir), *args], timeout=timeout)

    def status(self) -> dict:
        r = self.cli("status", "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def sent(self) -> dict[str, int]:
        return {h["host"]: h["sent_bytes"] for h in self.status()["hosts"]}

    def received(self) -> dict[str, int]:
        return {h["host"]: h["received_bytes"] for h in self.status()["hosts"]}

    def mpirun(self, n: int, program: list[str], timeout: float = 300.0, *extra: str):
        exe = mpiexec_path()
        if exe is None:
            pytest.skip("no mpiexec: install the 'local' or the 'openmpi' extra")
        return self.cli("run", "--timeout", str(timeout), "--", exe, *extra, "-n", str(n),
                        *program, timeout=timeout + 60)

    def down(self) -> None:
        if (self.dir / "cluster.json").exists():
            r = self.cli("down")
            assert r.returncode == 0, r.stdout + r.stderr


def _snapshot() -> dict[str, list[str]]:
    def out(*argv: str) -> list[str]:
        return sorted(subprocess.run(list(argv), capture_output=True, text=True,
                                     timeout=60).stdout.splitlines())

    links = sorted(re.split(r":\s+", line, maxsplit=2)[1].split("@")[0]
                   for line in out(IP, "-o", "link", "show"))
    return {"netns": out(IP, "netns", "list"), "links": links,
            "bridges": out(IP, "-o", "link", "show", "type", "bridge"),
            "qdiscs": [q for q in out(TC, "qdisc", "show")]}


def _ours(snapshot: dict[str, list[str]], name: str) -> dict[str, list[str]]:
    return {k: [x for x in v if f"-{name}-" in x or f"mc-{name}" in x]
            for k, v in snapshot.items()}


def test_up_4_then_down_leaves_the_machine_as_found(work):
    _need_namespaces()
    before = _snapshot()
    c = Emulated(work, 4, "--rate", "100mbit", "--rate-of", "3=50mbit", "--queue", "2mb",
                 "--tcp", "reno")
    try:
        during = _snapshot()
        assert len(_ours(during, c.name)["netns"]) == 4
        st = c.status()
        assert [h["rate"] for h in st["hosts"]] == ["100mbit", "100mbit", "50mbit", "100mbit"]
        assert all(h["netns_present"] and h["link"] == "up" for h in st["hosts"])
        # each host has its own host name and address; egress shaped on its eth0
        h3 = st["hosts"][2]
        r = run_cmd([str(c.dir / "launcher.sh"), "-x", h3["host"],
                     f"hostname; {IP} -o -4 addr show dev eth0; {TC} qdisc show dev eth0"], 60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0] == h3["host"] and h3["address"] in r.stdout
        assert "tbf" in r.stdout and "rate 50Mbit" in r.stdout
        # ingress shaped on its bridge port
        q = run_cmd([TC, "qdisc", "show", "dev", h3["port"]], 60)
        assert "tbf" in q.stdout and "rate 50Mbit" in q.stdout
        # the queues, as tc reads them back: seconds of the rate beyond the burst
        assert st["queue_bytes"] == 2 * 2**20 and st["tcp"] == "reno"
        r = run_cmd([str(c.dir / "launcher.sh"), h3["host"],
                     "cat /proc/sys/net/ipv4/tcp_congestion_control"], 60)
        assert r.stdout.strip() == "reno", r
        for where, cmd, limit in (
                ("port", [TC, "-j", "qdisc", "show", "dev", h3["port"]], 2 * 2**20),
                ("eth0", [str(c.dir / "launcher.sh"), h3["host"],
                          f"{TC} -j qdisc show dev eth0"], netns.HOST_QUEUE)):
            got = json.loads(run_cmd(cmd, 60).stdout)[0]["options"]
            want_us = (limit - got["burst"]) / 6.25e6 * 1e6  # 50 Mbit/s in bytes/s
            assert got["lat"] == pytest.approx(want_us, rel=0.01), (where, got)
        assert (c.dir / "hosts.hydra").read_text().count(":2\n") == 4
        # a network fault by hand: host 3's link down, then up again
        assert c.cli("link", "3", "down").returncode == 0
        assert [h["link"] for h in c.status()["hosts"]] == ["up", "up", "down", "up"]
        assert c.cli("link", h3["host"], "up").returncode == 0
        assert c.status()["hosts"][2]["link"] == "up"
    finally:
        c.down()
    after = _snapshot()
    assert _ours(after, c.name) == {k: [] for k in after}
    assert after == before, {k: (sorted(set(before[k]) ^ set(after[k]))) for k in after}
    assert not c.dir.exists()


def test_up_16_hosts_and_down_take_seconds(work):
    _need_namespaces()
    c = Emulated(work, 16)
    try:
        took = float(re.search(r"up in ([0-9.]+) s", c.up_output).group(1))  # type: ignore
        assert took < 5.0, c.up_output
        st = c.status()
        assert len(st["hosts"]) == 16
        # no --tcp: the hosts keep the machine's congestion control, and the state says which
        mine = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
        assert st["tcp"] == mine and st["queue_bytes"] == netns.DEFAULT_QUEUE
        r = run_cmd([str(c.dir / "launcher.sh"), st["hosts"][15]["host"],
                     "cat /proc/sys/net/ipv4/tcp_congestion_control"], 60)
        assert r.stdout.strip() == mine, r
    finally:
        r = c.cli("down")
    assert r.returncode == 0, r.stderr
    assert float(re.search(r"in ([0-9.]+) s", r.stdout).group(1)) < 5.0  # type: ignore
    print(c.up_output.strip(), "|", r.stdout.strip())


def test_two_clusters_at_once_do_not_collide(work):
    _need_namespaces()
    a = Emulated(work, 1)
    try:
        b = Emulated(work, 1)
        try:
            sa, sb = a.status(), b.status()
            assert sa["subnet"] != sb["subnet"] and sa["bridge"] != sb["bridge"]
            # the same name twice: one line, exit 2
            r = a.cli("up", "--hosts", "1")
            assert r.returncode == 2 and "already up" in r.stderr
        finally:
            b.down()
    finally:
        a.down()


# --- MPI across the hosts -----------------------------------------------------------------

@pytest.mark.mpi
@pytest.mark.portable
def test_8_mib_over_a_100_mbit_link_takes_its_time_and_crosses_it(work):
    _need_namespaces()
    c = Emulated(work, 2, "--rate", "100mbit", "--slots", "1")
    try:
        want = EIGHT_MIB * 8 / 100e6  # 0.671 s
        walls = []
        for _ in range(3):  # the best of up to 3 (other jobs share this machine's cores)
            s0, r0 = c.sent(), c.received()
            r = c.mpirun(2, [sys.executable, str(P2P), "--bytes", str(EIGHT_MIB)], 180)
            assert r.returncode == 0, r.stdout + r.stderr
            s1, r1 = c.sent(), c.received()
            out = json.loads(r.stdout.strip().splitlines()[-1])
            assert out["hosts"] == [f"{c.name}-node1", f"{c.name}-node2"]
            crossed = s1[out["hosts"][0]] - s0[out["hosts"][0]]
            arrived = r1[out["hosts"][1]] - r0[out["hosts"][1]]
            assert crossed >= EIGHT_MIB and arrived >= EIGHT_MIB, (crossed, arrived)
            walls.append(out["wall_s"])
            if abs(out["wall_s"] - want) <= 0.1 * want:
                break
        print(f"8 MiB over 100 Mbit/s: {walls} s (ideal {want:.3f} s); "
              f"{crossed} bytes left {out['hosts'][0]}, {arrived} reached {out['hosts'][1]}")
        assert abs(min(walls, key=lambda w: abs(w - want)) - want) <= 0.1 * want, walls
    finally:
        c.down()


@contextlib.contextmanager
def four_host_cluster(prefix: str, name: str | None = None) -> Iterator[Emulated]:
    """4 hosts at 1 Gbit/s, 2 slots each (ranks 0-6 on hosts 1, 1, 2, 2, 3, 3, 4), in a
    directory of their own; taken down and removed afterwards."""
    _need_namespaces()
    d = Path(tempfile.mkdtemp(prefix=prefix))
    c = Emulated(d, 4, "--rate", "1gbit", "--slots", "2", name=name)
    try:
        yield c
    finally:
        c.down()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def four_hosts() -> Iterator[Emulated]:
    with four_host_cluster("mpi-coded-multihost-") as c:
        yield c


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _check(path: Path) -> None:
    r = run_cmd([sys.executable, str(CHECK), str(path)], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def _run_cec(c: Emulated, ranks: int, args: list[str], out: Path, timeout: float,
             *extra: str) -> tuple[Any, list[dict], int]:
    """``mpi-coded run cec ARGS --out OUT`` across the hosts: its result, the checked
    lines and the bytes the hosts' links sent meanwhile."""
    s0 = c.sent()
    r = c.mpirun(ranks, [sys.executable, "-m", "mpi_coded", "run", "cec", *args,
                         "--out", str(out)], timeout, *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    s1 = c.sent()
    _check(out)
    return r, _lines(out), sum(s1[h] - s0[h] for h in s1)


@pytest.mark.mpi
@pytest.mark.portable
def test_the_elastic_job_runs_across_4_hosts(four_hosts, work):
    c = four_hosts
    r, lines, crossed = _run_cec(c, 7, [], work / "cec.jsonl", 300)
    config = next(x for x in lines if x.get("kind") == "config")
    setup = next(x for x in lines if x.get("kind") == "setup")
    hosts = setup["hosts"]
    master = config["host"]
    assert len(set(hosts.values()) | {master}) == 4, hosts
    # auto waiting counts the ranks of this machine, not of the emulated host
    assert config["ranks_on_node"] == 7 and config["wait_mode"] == "polite"
    _check_network(config["network"], c)
    # the coded blocks of the machines on other hosts crossed the links (and more)
    remote = sum(1 for h in hosts.values() if h != master)
    assert crossed >= remote * setup["bytes_per_machine"], (crossed, remote)
    assert "all verified: True" in r.stdout
    print(f"cec across {sorted(set(hosts.values()))}: {crossed} bytes crossed the links "
          f">= {remote} x {setup['bytes_per_machine']} (blocks to remote machines)")


RANDOM_16 = """# 16 machines on 4 hosts, random preemptions (p = 0.3 per step), few steps
job = "cec"
N = 16
L = 5
speeds = [1, 1, 1, 1, 1, 1.5, 1.5, 1.5, 1.5, 1.5, 2, 2, 2, 2, 3, 3]
rows = 1200
cols = 100
field = "float64"
t_row = 0.0005
seed = 1

[availability]
kind = "random"
p = 0.3
steps = 4
"""


@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_16_machines_with_random_preemptions_run_across_4_hosts(four_hosts, work):
    """The elastic job at 16 machines (17 ranks, placed by slot round the 4 hosts), each
    step's available machines drawn at random: every step verified, every host holding
    machines, their coded blocks across the links."""
    c = four_hosts
    config = work / "random16.toml"
    config.write_text(RANDOM_16)
    extra = ["--oversubscribe"] if mpi_flavor() == "openmpi" else []  # 17 ranks, 8 slots
    r, lines, crossed = _run_cec(c, 17, ["--config", str(config)], work / "cec16.jsonl",
                                 400, *extra)
    config_line = next(x for x in lines if x.get("kind") == "config")
    setup = next(x for x in lines if x.get("kind") == "setup")
    steps = [x for x in lines if x.get("kind") == "step"]
    assert config_line["N"] == 16 and config_line["world_size"] == 17
    _check_network(config_line["network"], c)
    hosts = setup["hosts"]
    assert sorted(map(int, hosts)) == list(range(1, 17))
    per_host = {h: sorted(int(m) for m, x in hosts.items() if x == h) for h in set(hosts.values())}
    assert len(per_host) == 4 and all(len(v) >= 3 for v in per_host.values()), per_host
    assert len(steps) == 4 and all(s["verified"] for s in steps)
    preempted = [sorted(set(range(1, 17)) - set(s["available"])) for s in steps]
    assert any(preempted) and len({tuple(p) for p in preempted}) > 1, preempted
    remote = sum(1 for h in hosts.values() if h != config_line["host"])
    assert crossed >= remote * setup["bytes_per_machine"], (crossed, remote)
    assert "all verified: True" in r.stdout
    counts = {h: len(v) for h, v in sorted(per_host.items())}
    print(f"cec 16 machines over 4 hosts {counts}, preempted per step {preempted}: "
          f"{crossed} bytes crossed the links >= {remote} x {setup['bytes_per_machine']}")


def _check_network(net: dict, c) -> None:
    """The run record names the emulated network: its hosts, their rates, TCP."""
    assert net["cluster"] == c.name and net["emulated"] is True
    assert net["hosts"] == [f"{c.name}-node{k}" for k in range(1, 5)]
    assert set(net["rates"]) == set(net["hosts"]) and net["transport"].startswith("tcp")


CODED = ["--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4", "--n", "20",
         "--N", "8"]


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.parametrize("scheme,multicast", [("unified", "p2p"), ("bdc", "bcast")])
def test_the_coded_job_runs_across_4_hosts(four_hosts, work, scheme, multicast):
    c = four_hosts
    out = work / f"coded-{scheme}-{multicast}.jsonl"
    extra = ["--T", "2"] if scheme == "bdc" else []
    s0 = c.sent()
    r = c.mpirun(7, [sys.executable, "-m", "mpi_coded", "run", "coded", "--scheme", scheme,
                     *CODED, *extra, "--multicast", multicast, "--out", str(out)], 300)
    assert r.returncode == 0, r.stdout + r.stderr
    s1 = c.sent()
    _check(out)
    crossed = sum(s1[h] - s0[h] for h in s1)
    assert crossed > 0
    runs = [x for x in _lines(out) if x.get("kind") == "run"]
    assert runs and all(x.get("verified") is True for x in runs)
    config = next(x for x in _lines(out) if x.get("kind") == "config")
    assert config["host"] == f"{c.name}-node1" and config["ranks_on_node"] == 7
    _check_network(config["network"], c)
    for x in runs:  # every rank's host: ranks 0-6 filled over the 4 hosts
        assert sorted(x["hosts"]) == [str(k) for k in range(7)]
        assert len(set(x["hosts"].values())) == 4, x["hosts"]
    # the shuffle's bytes (between ranks, some on one host) are a part of what crossed
    assert crossed >= sum(x["bytes_on_wire"] for x in runs), crossed
    print(f"coded {scheme}/{multicast}: {crossed} bytes crossed the links "
          f"(shuffle {sum(x['bytes_on_wire'] for x in runs)} B)")


# small sizes every scheme takes (K and q divide N; T divides the rows per batch), float64
# and N large enough that the shuffles (a few hundred kB each) outweigh what else crosses
SCHEMES_AT = ["--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "20", "--n", "12",
              "--N", "480", "--field", "float64"]
SCHEME_ARGS = {"uc": SCHEMES_AT, "cmr": SCHEMES_AT, "sc": SCHEMES_AT, "unified": SCHEMES_AT,
               "bdc": [*SCHEMES_AT, "--T", "2"], "lt": SCHEMES_AT}
UNICAST_ONLY = ("uc", "sc")  # no coded multicast: bcast is refused as bad input


def test_bcast_of_a_unicast_only_scheme_is_bad_input():
    from mpi_coded.coded.job import load_job
    from mpi_coded.errors import ConfigError

    for scheme in UNICAST_ONLY:
        with pytest.raises(ConfigError, match=r"^multicast: bcast needs coded multicast "
                                              rf"groups.*scheme {scheme} .*only unicasts"):
            load_job(None, {"scheme": scheme, "K": 6, "q": 4, "mu": "1/2",
                            "rows_per_batch": 4, "n": 20, "N": 12, "multicast": "bcast"})


@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_every_coded_scheme_in_both_multicast_modes_runs_across_4_hosts(four_hosts, work):
    """uc, cmr, sc, unified, bdc and lt, point-to-point and (but uc and sc, which have no
    multicast) ``Ibcast``, with their ranks over the 4 hosts: one launch running the jobs
    one after another (tests/multihost_coded_jobs.py: each as ``mpi-coded run coded``
    runs it, on its own communicator), every output verified, each run record naming
    every rank's host and the network, the links carrying at least the shuffles' bytes."""
    c = four_hosts
    cases = [(s, m) for s in SCHEME_ARGS for m in ("p2p", "bcast")
             if not (m == "bcast" and s in UNICAST_ONLY)]
    outs = [work / f"{s}-{m}.jsonl" for s, m in cases]
    jobs = [{"args": ["--scheme", s, *SCHEME_ARGS[s], "--multicast", m, "--reps", "1"],
             "out": str(out)} for (s, m), out in zip(cases, outs)]
    (work / "jobs.json").write_text(json.dumps(jobs))
    s0 = c.sent()
    r = c.mpirun(7, [sys.executable, str(JOBS), str(work / "jobs.json")], 480)
    assert r.returncode == 0, r.stdout + r.stderr
    s1 = c.sent()
    crossed = sum(s1[h] - s0[h] for h in s1)
    shuffled = {}
    for (scheme, multicast), out in zip(cases, outs):
        _check(out)
        lines = _lines(out)
        config = next(x for x in lines if x.get("kind") == "config")
        assert (config["scheme"], config["multicast"]) == (scheme, multicast)
        assert config["host"] == f"{c.name}-node1" and config["ranks_on_node"] == 7
        assert config["wait_mode"] == "polite"
        _check_network(config["network"], c)
        runs = [x for x in lines if x.get("kind") == "run"]
        assert len(runs) == 1 and runs[0]["verified"] is True, (scheme, multicast)
        x = runs[0]
        assert sorted(x["hosts"]) == [str(k) for k in range(7)]
        assert len(set(x["hosts"].values())) == 4, x["hosts"]
        assert x["bytes_on_wire"] > 0 and x["unicast_values"] + x["multicast_values"] > 0
        if multicast == "bcast" or scheme in ("cmr", "unified", "bdc", "lt"):
            assert x["multicast_values"] > 0, (scheme, multicast)
        shuffled[f"{scheme}/{multicast}"] = x["bytes_on_wire"]
    assert len(shuffled) == 10
    # the shuffles' bytes (between ranks, some on one host) are a part of what crossed
    assert crossed >= sum(shuffled.values()), (crossed, shuffled)
    print(f"{len(shuffled)} coded jobs across 4 hosts, all verified: {crossed} bytes crossed "
          f"the links >= {sum(shuffled.values())} shuffled ({shuffled})")


def test_no_rank_is_left_behind():
    # every mpiexec above ran under a hard timeout; none of their ranks may survive
    assert processes_matching("scripts/p2p_throughput.py --bytes", exclude=os.getpid()) == []


# --- a multi-node SLURM on the hosts ------------------------------------------------------

def _need_slurm() -> None:
    missing = [t for t in ("slurmctld", "slurmd", "sbatch", "srun", "sacct", "munged")
               if manage.find_tool(t) is None]
    if missing:
        why = f"SLURM is not installed ({', '.join(missing)} missing): apt-get install " \
              "slurm-wlm munge"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true: {why}")
        pytest.skip(why)


def _wait_job(env: dict[str, str], job: str, timeout: float) -> dict[str, str]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = run_cmd(["scontrol", "show", "job", "-o", job], 60, env=env)
        fields = dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)
        if fields.get("JobState") not in (None, "PENDING", "RUNNING", "CONFIGURING",
                                          "COMPLETING"):
            return fields
        time.sleep(1)
    run_cmd(["scancel", job], 60, env=env)
    pytest.fail(f"job {job} did not end within {timeout} s")


@pytest.mark.mpi
@pytest.mark.slurm
@pytest.mark.timeout(900)
def test_the_shipped_batch_scripts_run_across_4_slurm_nodes(work):
    """``cluster up --slurm``: slurmctld + munged here, a slurmd per host; slurm/cec.sh and
    slurm/coded.sh, each through srun --mpi=pmi2 and through mpiexec (hydra) inside the
    allocation, with ``sbatch -N 4`` run on the 4 nodes, COMPLETED in sacct, results
    verified, ranks on at least 3 of the nodes."""
    _need_namespaces()
    _need_slurm()
    if mpi_flavor() != "mpich":
        pytest.skip("the SLURM jobs here use MPICH's srun (PMI2) and hydra")
    c = Emulated(work, 4, "--rate", "1gbit", "--slurm")
    try:
        exports = c.cli("env").stdout
        env = dict(re.findall(r"^export (\w+)=(.*)$", exports, re.M))
        env = {k: v.strip("'") for k, v in env.items()}
        assert "SLURM_CONF" in env
        res = work / "results"
        res.mkdir()
        jobs = {"cec-srun": ("slurm/cec.sh", {"LAUNCHER": "srun"}),
                "cec-mpiexec": ("slurm/cec.sh", {"LAUNCHER": "mpiexec"}),
                "coded-srun": ("slurm/coded.sh", {
                    "LAUNCHER": "srun", "CODED_ARGS": " ".join(
                        ["--scheme", "unified", *CODED, "--multicast", "bcast"])}),
                "coded-mpiexec": ("slurm/coded.sh", {
                    "LAUNCHER": "mpiexec", "CODED_ARGS": " ".join(
                        ["--scheme", "bdc", *CODED, "--T", "2", "--multicast", "p2p"])})}
        ids = {}
        for name, (script, extra) in jobs.items():
            r = run_cmd(["sbatch", "--parsable", "-N", "4", "--ntasks=7",
                         f"--output={res}/{name}-%j.out", script], 60,
                        env={**env, **extra, "MPI_CODED_ROOT": str(ROOT),
                             "MPI_CODED_PYTHON": sys.executable, "RESULTS_DIR": str(res),
                             "OUT": str(res / f"{name}.jsonl")})
            assert r.returncode == 0, r.stderr
            ids[name] = r.stdout.strip().split(";")[0]
        for name, job in ids.items():
            fields = _wait_job(env, job, 400)
            log = next(res.glob(f"{name}-{job}.out")).read_text()
            assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), log
            assert fields["NodeList"] == f"{c.name}-node[1-4]"
            _check(res / f"{name}.jsonl")
            hosts = next(x for x in _lines(res / f"{name}.jsonl") if x.get("kind") == "config")
            assert hosts["host"].startswith(f"{c.name}-node")
            if name.startswith("cec"):
                setup = next(x for x in _lines(res / f"{name}.jsonl")
                             if x.get("kind") == "setup")
                assert len(set(setup["hosts"].values())) >= 3, setup["hosts"]
            else:
                runs = [x for x in _lines(res / f"{name}.jsonl") if x.get("kind") == "run"]
                assert runs and all(x["verified"] for x in runs)
                assert all(len(set(x["hosts"].values())) >= 3 for x in runs), runs[0]["hosts"]
            launched = r"^\+ \S*/mpiexec -n 7 " if name.endswith("mpiexec") else \
                r"^\+ srun --mpi=pmi2 -n 7 "  # hydra inside the allocation, or srun
            assert re.search(launched, log, re.M), log
        acct = run_cmd(["sacct", "-c", "-n", "-P", "-o", "JobID,State,NNodes,ExitCode"], 60,
                       env=env).stdout
        got = {line.split("|")[0]: line.split("|")[1:] for line in acct.splitlines()}
        for job in ids.values():
            assert got[job] == ["COMPLETED", "4", "0:0"], acct
        print(f"SLURM across 4 nodes: {ids}, sacct -c: {acct.strip()!r}")
    finally:
        c.down()
    assert processes_matching(str(c.dir)) == []


@pytest.mark.mpi
@pytest.mark.slurm
@pytest.mark.portable
@pytest.mark.timeout(600)
def test_under_slurm_a_machine_killed_is_replaced_and_the_job_completes(work):
    """``sbatch -N 4`` of slurm/cec.sh with Open MPI's mpiexec inside the allocation
    (``MPIEXEC_ARGS="--with-ft ulfm"``; its daemons started by srun): machine 4 killed on
    node3 in step 3 is lost, a new process is spawned there before step 4 and gets its
    block; every step verifies, and the batch job is COMPLETED (before the master
    cancelled its posted receive from the new process, their disconnect could hang and
    mpiexec crash as it ended: 3 of 10 runs).  A run whose daemon crashed during the
    spawn runs again (PRTE_ATTEMPTS)."""
    _need_namespaces()
    _need_slurm()
    if mpi_flavor() != "openmpi":
        assert os.environ.get("MPI_CODED_EXPECT_MPI", "") in ("", mpi_flavor())
        pytest.skip("ULFM needs Open MPI (MPICH's refusal: test_fault_tolerance.py)")
    c = Emulated(work, 4, "--rate", "1gbit", "--slurm")
    try:
        env = dict(re.findall(r"^export (\w+)=(.*)$", c.cli("env").stdout, re.M))
        env = {k: v.strip("'") for k, v in env.items()}
        assert env["OMPI_MCA_btl_tcp_if_include"] == env["PRTE_MCA_oob_tcp_if_include"]
        config = _long_config(work / "slurm_ulfm.toml", steps=8)
        config.write_text(config.read_text().replace(
            "[availability]", 'fault_tolerance = "ulfm"\nreplace_lost = "spawn"\n\n'
            "[availability]"))
        res = work / "slurm-ulfm"
        res.mkdir()
        for attempt in range(1, PRTE_ATTEMPTS + 1):
            out = res / f"cec{attempt}.jsonl"
            r = run_cmd(["sbatch", "--parsable", "-N", "4", "--ntasks=7",
                         f"--output={res}/job-%j.out", "slurm/cec.sh"], 60,
                        env={**env, "LAUNCHER": "mpiexec", "MPIEXEC_ARGS": "--with-ft ulfm",
                             "MPI_CODED_ROOT": str(ROOT), "MPI_CODED_PYTHON": sys.executable,
                             "RESULTS_DIR": str(res), "OUT": str(out),
                             "CEC_CONFIG": str(config), "CEC_ARGS": "--fault kill:4:step@3",
                             "OMPI_ALLOW_RUN_AS_ROOT": "1",
                             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
            assert r.returncode == 0, r.stderr
            job = r.stdout.strip().split(";")[0]
            fields = _wait_job(env, job, 400)
            log = next(res.glob(f"job-{job}.out")).read_text()
            if _mpiexec_crashed_at_exit(log, out) and attempt < PRTE_ATTEMPTS:
                print(f"attempt {attempt}: mpiexec crashed as it ended, after a job that "
                      "verified every step (Open MPI 5.0.11; PRTE_ATTEMPTS)")
                continue
            if _prte_spawn_aborted(log) and attempt < PRTE_ATTEMPTS:
                print(f"attempt {attempt}: PRRTE's PMIx server died of a signal during the "
                      "spawn (Open MPI 5.0.11; PRTE_ATTEMPTS)")
                continue
            if not _prte_daemon_crashed(log, out):
                break
            print(f"attempt {attempt}: a PRRTE daemon crashed after the spawn "
                  "(docs/elastic.md); the job ended early, its results say so")
        assert re.search(r"^\+ \S*/mpiexec --with-ft ulfm -n 7 ", log, re.M), log
        assert "done: 8 steps, all verified: True" in log, log
        assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), (fields, log)
        assert "OK, verified" in log, log
        _check(out)
        summary = _lines(out)[-1]
        assert summary["all_verified"] and summary["ended_early"] is None
        [lost], [joined] = summary["lost"], summary["joined"]
        assert (lost["machine"], lost["host"], lost["step"]) == (4, f"{c.name}-node3", 3)
        assert (joined["machine"], joined["host"], joined["step"]) == \
            (4, f"{c.name}-node3", 4)
        assert joined["block_bytes"] <= joined["master_link_sent_bytes"]
        print(f"SLURM job {job}: {fields['JobState']} {fields['ExitCode']}; machine 4 lost "
              f"on {lost['host']}, replaced there in {joined['spawn_s']:.2f} s, its block "
              f"of {joined['block_bytes']} B in {joined['block_s']:.3f} s")
    finally:
        c.down()
    assert processes_matching(str(c.dir)) == []


# --- network faults -----------------------------------------------------------------------

def _long_config(path: Path, steps: int = 80) -> Path:
    """The seed example for ``steps`` steps, every machine available, tight deadlines."""
    path.write_text(
        'job = "cec"\nN = 6\nL = 3\nspeeds = [1, 1, 1.5, 1.5, 2, 2]\nrows = 1260\n'
        "cols = 200\nt_row = 0.001\ntimeout_s = 120.0\ndeadline_factor = 1.5\n"
        'deadline_slack_s = 0.5\n\n[availability]\nkind = "schedule"\nschedule = ['
        + ", ".join(["[1, 2, 3, 4, 5, 6]"] * steps) + "]\n")
    return path


class Background:
    """``cluster run`` of the elastic job in its own process group, watched by its results."""

    def __init__(self, c: Emulated, config: Path, out: Path, timeout: float,
                 launcher: tuple[str, ...] = (), args: tuple[str, ...] = ()) -> None:
        exe = mpiexec_path()
        if exe is None:
            pytest.skip("no mpiexec: install the 'local' or the 'openmpi' extra")
        self.out, self.timeout = out, timeout
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mpi_coded", "cluster", "run", "--name", c.name, "--dir",
             str(c.dir), "--timeout", str(timeout), "--", exe, *launcher, "-n", "7",
             sys.executable, "-m", "mpi_coded", "run", "cec", "--config", str(config),
             "--out", str(out), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, cwd=ROOT)

    def wait_for_step(self, step: int, timeout: float = 180.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.out.exists() and any(x.get("kind") == "step" and x.get("step") == step
                                         for x in _lines_safe(self.out)):
                return
            if self.proc.poll() is not None:
                out = self.proc.stdout.read() if self.proc.stdout else ""
                pytest.fail(f"the job ended before step {step}: {out}")
            time.sleep(0.1)
        self.kill()
        pytest.fail(f"no step {step} within {timeout} s")

    def finish(self, timeout: float) -> tuple[int, str]:
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the job did not end within {timeout} s")
        return self.proc.returncode, out

    def kill(self) -> None:
        from mpi_coded.proctree import kill_tree

        kill_tree(self.proc.pid)
        self.proc.communicate()


def _lines_safe(path: Path) -> list[dict]:
    out = []
    for x in path.read_text().splitlines():
        try:
            out.append(json.loads(x))
        except ValueError:  # a line being written
            pass
    return out


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.timeout(600)
def test_a_host_whose_link_goes_down_is_left_out_and_rejoins(four_hosts, work):
    c = four_hosts
    out = work / "link.jsonl"
    job = Background(c, _long_config(work / "long.toml", steps=120), out, 300)
    port = next(h["port"] for h in c.status()["hosts"] if h["host"] == f"{c.name}-node4")
    # ``ip`` itself, not ``mpi-coded cluster link`` (a python start can take seconds on a
    # loaded machine): down at step 3 for 4 s
    try:
        job.wait_for_step(3)
        subprocess.run([IP, "link", "set", port, "down"], check=True, timeout=60)
        time.sleep(4.0)
    finally:
        subprocess.run([IP, "link", "set", port, "up"], check=True, timeout=60)
    rc, text = job.finish(300)
    assert rc == 0, text
    _check(out)
    lines = _lines(out)
    setup = next(x for x in lines if x.get("kind") == "setup")
    cut = {int(m) for m, h in setup["hosts"].items() if h == f"{c.name}-node4"}
    assert cut, setup["hosts"]
    steps = [x for x in lines if x.get("kind") == "step"]
    missed = [s["step"] for s in steps if cut & set(s.get("late", []))]
    left_out = [s["step"] for s in steps if cut & set(s.get("suspects", []))
                and not cut & set(s["available"])]
    rejoined = [s["step"] for s in steps if cut & set(s.get("rejoined", []))]
    assert missed and left_out and rejoined, (missed, left_out, rejoined)
    assert all(s["verified"] for s in steps)
    # after the link came back they are planned again
    assert any(cut <= set(s["available"]) for s in steps if s["step"] > max(rejoined) - 1)
    print(f"link of {c.name}-node4 down: machines {sorted(cut)} missed the deadline at "
          f"steps {missed}, left out in {len(left_out)} steps (verified without them), "
          f"rejoined at {rejoined}")


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.timeout(600)
def test_killing_every_rank_of_a_host_ends_the_job_naming_it(four_hosts, work):
    c = four_hosts
    config = _long_config(work / "long.toml")
    job = Background(c, config, work / "kill.jsonl", 300)
    job.wait_for_step(3)
    host = next(h for h in c.status()["hosts"] if h["host"] == f"{c.name}-node3")
    pids = subprocess.run([IP, "netns", "pids", host["netns"]], capture_output=True,
                          text=True, timeout=60).stdout.split()
    victims = [int(p) for p in pids if str(config) in _cmdline(p)]
    assert len(victims) == 2, victims  # ranks 4 and 5
    for p in victims:
        os.kill(p, 9)
    t0 = time.monotonic()
    rc, text = job.finish(60)
    took = time.monotonic() - t0
    assert rc != 0 and took < 30.0, (rc, took, text)
    assert host["host"] in text, text
    assert processes_matching(str(config)) == []
    print(f"killed ranks {victims} on {host['host']}: the job ended in {took:.1f} s, rc {rc}")


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.timeout(600)
def test_cluster_kill_ends_a_whole_host_and_the_run_names_it(four_hosts, work):
    """``cluster kill`` ends every process of a host, its launcher daemon included, as a
    node crash does.  Neither MPI's launcher survives losing its daemon (hydra: "assert
    (!closed) failed", Open MPI: "PRTE has lost communication with a remote daemon ... will
    terminate the job"; docs/elastic.md): the run ends within seconds and ``cluster run``
    names the host and the MPI ranks that were on it."""
    c = four_hosts
    config = _long_config(work / "hostkill.toml")
    job = Background(c, config, work / "hostkill.jsonl", 300)
    job.wait_for_step(3)
    r = c.cli("kill", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    killed = r.stdout.splitlines()
    assert killed[0] == f"{c.name}-node3: killed {len(killed) - 1} processes", r.stdout
    assert sum(str(config) in line for line in killed) == 2  # ranks 4 and 5
    assert any("hydra_pmi_proxy" in line or "prted" in line for line in killed), r.stdout
    t0 = time.monotonic()
    rc, text = job.finish(60)
    assert time.monotonic() - t0 < 30.0, text
    assert re.search(rf"mpi-coded cluster: host {c.name}-node3 was killed during the run "
                     r"\(\d+ processes, MPI ranks 4, 5\)", text), text
    assert processes_matching(str(config)) == []
    # a failure line in the results: the job's summary, unverified, saying why it ended
    # (Open MPI: rank 0's own, on the launcher's SIGTERM; MPICH: hydra SIGKILLs every rank,
    # and rank 0's watcher writes it, mpi_coded/results/last_word.py)
    # (the watcher writes as rank 0's pipe closes: a moment after the launcher's end)
    end = time.monotonic() + 15.0
    while _lines_safe(job.out)[-1].get("kind") != "summary" and time.monotonic() < end:
        time.sleep(0.05)
    lines = _lines(job.out)
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["all_verified"] is False, summary
    assert summary["ended_early"], summary
    steps = [x for x in lines if x.get("kind") == "step"]
    assert summary["steps"] == len(steps) >= 3 and all(x["verified"] for x in steps)
    print(f"host killed after step {len(steps)}; the results' last line: "
          f"ended_early = {summary['ended_early']!r}")
    pids = _netns_pids(c)[f"{c.name}-node3"]
    assert pids == [], pids
    bad = c.cli("kill", "9")
    assert bad.returncode == 2 and "HOST: must be a host of the cluster" in bad.stderr


PRTE_ATTEMPTS = 4
"""Open MPI 5.0.11's daemons crashed in 3 of 26 jobs that spawned onto another host
(docs/elastic.md, "Which MPI, which flags, and why"); a join test across hosts runs
again when that, and only that, ended its job early.  Its ``mpiexec`` also died (SIGSEGV
or SIGABRT) as it ended after a spawn under SLURM, every step verified and the summary
written: 3 of 6 runs on 56fcb18, 5 of 20 on the next commits (the CI run that found
it failed on it); such a run runs again too (:func:`_mpiexec_crashed_at_exit`)."""


def _mpiexec_crashed_at_exit(output: str, out: Path) -> bool:
    """The job itself ended well (every step verified, its summary says so), and then its
    ``mpiexec`` died of a signal (a segmentation fault, an abort): Open MPI 5.0.11's, not
    the job's."""
    if "Segmentation fault" not in output and "Aborted" not in output:
        return False
    lines = _lines_safe(out) if out.exists() else []
    return bool(lines) and lines[-1].get("kind") == "summary" and \
        lines[-1].get("all_verified") is True and not lines[-1].get("ended_early")


def _prte_spawn_aborted(output: str) -> bool:
    """Open MPI 5.0.11's launcher died of a signal in its PMIx server during the spawn
    (``PMIX ERROR ... pmix_server_dyn.c``, then ``free(): invalid pointer`` and an abort: seen
    once in a CI run of this test), the launcher's failure, not the job's."""
    return "PMIX ERROR" in output and "pmix_server_dyn" in output and \
        ("Aborted" in output or "Segmentation fault" in output)


def _prte_daemon_crashed(output: str, out: Path) -> bool:
    """The run ended because PRRTE lost a daemon during a join (no host was killed): its
    launcher said so, and the results end with rank 0's watcher's summary."""
    if "PRTE has lost communication with a remote daemon" not in output:
        return False
    end = time.monotonic() + 15.0  # the watcher writes as rank 0's pipe closes
    while time.monotonic() < end:
        lines = _lines_safe(out) if out.exists() else []
        if lines and lines[-1].get("kind") == "summary":
            return "watcher" in str(lines[-1].get("ended_early") or "")
        time.sleep(0.05)
    return False


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.timeout(600)
def test_a_host_killed_under_ulfm_ends_the_job_naming_its_machines(four_hosts, work):
    """Under ULFM (Open MPI) a whole host killed still ends the job (PRTE cannot lose a
    daemon, docs/elastic.md), but rank 0 learns its machines' deaths first and its own
    summary says so: ``ended_early`` names machines 4 and 5 on node3 found dead."""
    from mpi_coded.fault_tolerance import LAUNCHER_FLAGS

    c = four_hosts
    config = _long_config(work / "hostkill_ulfm.toml")
    if mpi_flavor() != "openmpi":
        assert os.environ.get("MPI_CODED_EXPECT_MPI", "") in ("", mpi_flavor())
        pytest.skip("ULFM needs Open MPI (MPICH's refusal: test_fault_tolerance.py)")
    job = Background(c, config, work / "hostkill_ulfm.jsonl", 300, LAUNCHER_FLAGS,
                     ("--fault-tolerance", "ulfm"))
    job.wait_for_step(3)
    assert c.cli("kill", "3").returncode == 0
    rc, text = job.finish(60)
    # PRRTE's word for the lost daemon: usually that the host was killed; in 2 of 5 CI runs of
    # Open MPI 5.0.11 that a daemon "failed to report back" (the same loss, misnamed, after
    # steps 1-3 ran on every host); either way the job ends, and its summary is checked below
    assert re.search(rf"host {c.name}-node3 was killed during the run|"
                     r"A daemon failed to report back", text), text
    end = time.monotonic() + 15.0
    while _lines_safe(job.out)[-1].get("kind") != "summary" and time.monotonic() < end:
        time.sleep(0.05)
    summary = _lines(job.out)[-1]
    assert summary["kind"] == "summary" and summary["all_verified"] is False, summary
    why = summary["ended_early"]
    assert isinstance(why, str) and why, summary
    print(f"ended_early = {why!r}")
    if "watcher" in why:  # PRTE SIGKILLed rank 0 before its SIGTERM handler ran (0 of 3)
        assert "after step" in why, why
        return
    assert "machine 4 (" + f"{c.name}-node3)" in why and f"machine 5 ({c.name}-node3)" in why
    lost = {(e["machine"], e["host"]): e for e in summary["lost"]}
    node3 = {(4, f"{c.name}-node3"), (5, f"{c.name}-node3")}
    assert node3 <= set(lost), summary["lost"]
    # PRRTE ends the whole job once it has lost node3's daemon: a machine elsewhere may die
    # in that teardown before rank 0's own SIGTERM (once in CI, 2026-12-05: machine 3 on
    # node2). Such a one is found dead after node3's, in a job the launcher ended.
    others = [e for k, e in lost.items() if k not in node3]
    if others:
        assert "the launcher ended the job" in why, why
        first = min(float(lost[k]["detected_unix"] or 0.0) for k in node3)
        assert all(e["detected_unix"] is None or float(e["detected_unix"]) >= first
                   for e in others), summary["lost"]


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.timeout(600)
def test_a_machine_killed_on_a_host_is_replaced_there_and_its_block_crosses_the_link(
        four_hosts, work):
    """``fault_tolerance = "ulfm"``, ``replace_lost = "spawn"`` across the hosts: machine 4
    (on node3) is killed in step 3; a new process is spawned on node3 before step 4 and
    gets machine 4's coded block from the master (node1) over the links: the bytes are in
    the record and on the master's link counter; every step verifies.  Under MPICH: the
    one-line refusal (its fault tolerance aborts at start)."""
    from mpi_coded.fault_tolerance import LAUNCHER_FLAGS

    c = four_hosts
    config = _long_config(work / "join.toml", steps=8)
    extra = LAUNCHER_FLAGS if mpi_flavor() == "openmpi" else ()
    for attempt in range(1, PRTE_ATTEMPTS + 1):
        out = work / f"join{attempt}.jsonl"
        r = c.mpirun(7, [sys.executable, "-m", "mpi_coded", "run", "cec", "--config",
                         str(config), "--fault-tolerance", "ulfm", "--replace-lost", "spawn",
                         "--fault", "kill:4:step@3", "--out", str(out)], 300, *extra)
        if mpi_flavor() != "openmpi":
            assert os.environ.get("MPI_CODED_EXPECT_MPI", "") in ("", mpi_flavor())
            assert r.returncode == 2 and "MPIR_CVAR_ENABLE_FT=1" in r.stderr, r.stderr
            return
        if not _prte_daemon_crashed(r.stdout + r.stderr, out):
            break
        print(f"attempt {attempt}: a PRRTE daemon crashed after the spawn "
              "(docs/elastic.md); the job ended early, its results say so")
    assert r.returncode == 0, r.stdout + r.stderr
    _check(out)
    lines = _lines(out)
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["all_verified"]
    [joined] = summary["joined"]
    assert (joined["machine"], joined["step"], joined["host"]) == (4, 4, f"{c.name}-node3")
    assert joined["block_bytes"] == 420 * 200 * 8
    # the block left the master's host over its link (plus headers and acknowledgements)
    assert joined["block_bytes"] <= joined["master_link_sent_bytes"] \
        <= 1.2 * joined["block_bytes"], joined
    steps = [x for x in lines if x.get("kind") == "step"]
    assert all(s["verified"] for s in steps) and all(4 in s["available"] for s in steps[3:])
    print(f"machine 4 replaced on {joined['host']}: spawned in {joined['spawn_s']:.2f} s, "
          f"its block of {joined['block_bytes']} B in {joined['block_s']:.3f} s, the "
          f"master's link sent {joined['master_link_sent_bytes']} B meanwhile")


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Watched:
    """``cluster run`` of an MPI command in its own process group; its output lines (stdout
    and stderr), each with the time it arrived, read as they come."""

    def __init__(self, c: Emulated, n: int, program: list[str], timeout: float) -> None:
        exe = mpiexec_path()
        if exe is None:
            pytest.skip("no mpiexec: install the 'local' or the 'openmpi' extra")
        self.lines: list[tuple[float, str]] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mpi_coded", "cluster", "run", "--name", c.name, "--dir",
             str(c.dir), "--timeout", str(timeout), "--", exe, "-n", str(n), *program],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, cwd=ROOT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line))

    @property
    def text(self) -> str:
        return "".join(line for _, line in list(self.lines))

    def wait_for(self, pattern: str, timeout: float = 240.0) -> re.Match[str]:
        """The first output line matching ``pattern`` (waits for it)."""
        end = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < end:
            lines = list(self.lines)
            for _, line in lines[seen:]:
                m = re.search(pattern, line)
                if m:
                    return m
            seen = len(lines)
            if self.proc.poll() is not None and not self.reader.is_alive():
                pytest.fail(f"the job ended before {pattern!r}: {self.text}")
            time.sleep(0.02)
        self.kill()
        pytest.fail(f"no {pattern!r} within {timeout} s: {self.text}")

    def at(self, pattern: str) -> float:
        """When the first line matching ``pattern`` arrived."""
        return next(t for t, line in self.lines if re.search(pattern, line))

    def finish(self, timeout: float) -> tuple[int, str, float]:
        """Exit status, output, and when it ended."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the job did not end within {timeout} s: {self.text}")
        ended = time.monotonic()
        self.reader.join(60)
        return self.proc.returncode, self.text, ended

    def kill(self) -> None:
        from mpi_coded.proctree import kill_tree

        kill_tree(self.proc.pid)
        self.proc.wait()


def _netns_pids(c: Emulated) -> dict[str, list[str]]:
    """What runs on each host (``ip netns pids``)."""
    return {h["host"]: subprocess.run([IP, "netns", "pids", h["netns"]], capture_output=True,
                                      text=True, timeout=60).stdout.split()
            for h in c.status()["hosts"]}


@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_a_coded_host_cut_off_in_the_map_is_a_straggler_and_comes_back(four_hosts, work):
    """Host 3's link (servers 3 and 4 = K - q) down for 4 s from the start of repetition 0's
    map: the map ends from the other four servers (servers 0 and 1, slowed by 1.5, which
    otherwise lose), the job verifies every repetition and exits 0; once the link is back
    the two servers are finishers again; the master waited out at most one grace period
    for them (never one per repetition) and no deadline."""
    c = four_hosts
    out = work / "coded-map-cut.jsonl"
    timeout, down_s, t_row = 60.0, 4.0, 0.1
    port = next(h["port"] for h in c.status()["hosts"] if h["host"] == f"{c.name}-node3")
    job = Watched(c, 7, [sys.executable, "-m", "mpi_coded", "run", "coded", "--scheme",
                         "unified", *CODED[:-1], "12", "--t-row", str(t_row), "--reps", "3",
                         "--fault", "slow:1:1.5", "--fault", "slow:2:1.5",
                         "--timeout", str(timeout), "--out", str(out)], 300)
    try:
        job.wait_for(r"rep 0 encode")  # the map order follows at once
        subprocess.run([IP, "link", "set", port, "down"], check=True, timeout=60)
        cut = time.monotonic()
        time.sleep(down_s)
    finally:
        subprocess.run([IP, "link", "set", port, "up"], check=True, timeout=60)
    rc, text, ended = job.finish(300)
    assert rc == 0, text
    _check(out)
    lines = _lines(out)
    runs = [x for x in lines if x.get("kind") == "run"]
    assert len(runs) == 3 and all(x["verified"] for x in runs), text
    cut_servers = {3, 4}
    assert {runs[0]["hosts"][str(s + 1)] for s in cut_servers} == {f"{c.name}-node3"}
    first = set(runs[0]["Q"]) | set(runs[0]["extra"])
    assert not first & cut_servers and first == {0, 1, 2, 5}, runs[0]
    assert runs[0]["map_s"] > 1.2 * runs[1]["map_s"], runs  # it waited for the slow two
    back = [x["rep"] for x in runs[1:] if cut_servers <= set(x["Q"]) | set(x["extra"])]
    assert back, [(x["Q"], x["extra"]) for x in runs]
    # at most one repetition gave up on them (the late-map grace), never a deadline
    assert sum(1 for x in runs if cut_servers & set(x["unresponsive"])) <= 1
    assert ended - cut < timeout, text
    # the master's time outside the phases (late map reports, verification) after the
    # cut: at most one grace period (1 s + twice the map's seconds) and a margin
    phases = sum(x["map_s"] + x["shuffle_s"] + x["reduce_s"] for x in runs)
    phases += sum(x["encode_s"] for x in runs[1:])
    idle = job.at(r"rep 2 reduce") - job.at(r"rep 0 encode") - phases
    grace = 1.0 + 2 * runs[0]["map_s"]
    assert idle <= grace + 3.0, (idle, grace)
    print(f"link of {c.name}-node3 down {down_s} s in the map: rep 0 Q={runs[0]['Q']} "
          f"(map {runs[0]['map_s']:.2f} s), servers 3,4 back in reps {back}; unresponsive "
          f"{[x['unresponsive'] for x in runs]}; master idle {idle:.2f} s (grace "
          f"{grace:.2f} s); job ended {ended - cut:.1f} s after the cut")


@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_a_coded_finisher_cut_off_in_the_shuffle_ends_the_job_naming_it(work):
    """Host 3 (servers 3 and 4) on a 1 Mbit/s link, so the shuffle lasts seconds; servers 0
    and 1 slowed so that 3 and 4 are finishers; host 3's link down when the map ends and
    not up again until the job is over: the job ends within its deadline (+ the abort's
    bound), exit != 0, naming the unreachable servers' ranks and host, and nothing is
    left on any host, the cut-off one included (its ranks end themselves: the bounded
    abort of runtime/core/guard.py)."""
    _need_namespaces()
    c = Emulated(work, 4, "--rate", "1gbit", "--rate-of", "3=1mbit", "--slots", "2")
    timeout = 15.0
    host3 = next(h for h in c.status()["hosts"] if h["host"] == f"{c.name}-node3")
    marker = str(work / "coded-shuffle-cut.jsonl")
    try:
        job = Watched(c, 7, [sys.executable, "-m", "mpi_coded", "run", "coded", "--scheme",
                             "unified", "--K", "6", "--q", "4", "--mu", "1/2",
                             "--rows-per-batch", "40", "--n", "20", "--N", "200", "--field",
                             "float64", "--t-row", "0.01", "--fault", "slow:1:4", "--fault",
                             "slow:2:4", "--timeout", str(timeout), "--out", marker], 300)
        m = job.wait_for(r"rep 0 map .*Q=([0-9,]+)")
        subprocess.run([IP, "link", "set", host3["port"], "down"], check=True, timeout=60)
        cut = time.monotonic()
        rc, text, ended = job.finish(timeout + 120)
        took = ended - cut
        finishers = {int(s) for s in m.group(1).split(",")}
        assert {3, 4} <= finishers, text
        assert rc != 0 and took < timeout + 15.0, (rc, took, text)
        assert re.search(r"failed in phase shuffle 0: DeadlineExceeded", text), text
        # the servers that miss their messages say whom: servers 3, 4 = ranks 4, 5, with
        # their host (the master waits a margin longer: it knows only who is not done)
        said = re.findall(rf"rank \d \({c.name}-node[124]\) failed in phase shuffle 0: "
                          r"DeadlineExceeded: timed out waiting for shuffle messages from "
                          r"(.*)", text)
        named = {int(r) for x in said for r in re.findall(rf"rank (\d) \({host3['host']}\)", x)}
        assert named and named <= {4, 5}, text
        # the cut-off host's ranks end too, on their own deadlines, without their link
        end = time.monotonic() + 20.0
        while (left := _netns_pids(c)) and any(left.values()) and time.monotonic() < end:
            time.sleep(0.5)
        assert not any(left.values()), left
        assert processes_matching(marker) == []
    finally:
        subprocess.run([IP, "link", "set", host3["port"], "up"], timeout=60)
        c.down()
    print(f"link of {host3['host']} down in the shuffle: the job ended {took:.1f} s later "
          f"(timeout {timeout} s), rc {rc}, naming ranks {sorted(named)} on {host3['host']}; "
          "no process left on any host")
