"""``mpi-coded cluster up|run|status|down|link``: an emulated cluster on this machine.

Hosts are network namespaces on one bridge with shaped links (docs/clusters.md, "An
emulated cluster"); :mod:`mpi_coded.cluster`.  No MPI is imported here.  Bad input and a
missing privilege end with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from mpi_coded.cluster import manage, netns, relaunch, slurm
from mpi_coded.errors import EXIT_BAD_INPUT, ConfigError


def register(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "cluster", help="an emulated cluster: hosts as network namespaces with shaped links")
    sub = p.add_subparsers(dest="cluster_command", required=True,
                           parser_class=type(p))

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--name", default=netns.DEFAULT_NAME,
                       help="the cluster's name (prefixes its namespaces and links; "
                            f"default {netns.DEFAULT_NAME})")
        q.add_argument("--dir", default=None,
                       help="state directory (default /run/mpi-coded/NAME)")

    u = sub.add_parser("up", help="create the hosts, the bridge and the shaped links")
    common(u)
    u.add_argument("--hosts", type=int, required=True, help="number of hosts")
    u.add_argument("--slots", type=int, default=2, help="MPI slots per host (default 2)")
    u.add_argument("--rate", default=netns.DEFAULT_RATE,
                   help="every host's link rate, tc units (default 1gbit)")
    u.add_argument("--rate-of", dest="rate_of", action="append", default=[],
                   metavar="HOST=RATE", help="one host's rate (host name or number)")
    u.add_argument("--queue", default=netns.format_size(netns.DEFAULT_QUEUE),
                   help="bytes a link queues toward its host before it drops, tc units "
                        f"(default {netns.format_size(netns.DEFAULT_QUEUE)}: none dropped; "
                        "e.g. 1.25mb for a switch buffer of 100 ms at 100 Mbit/s)")
    u.add_argument("--tcp", default="",
                   help="TCP congestion control of every host, one a network namespace may "
                        "choose (default: this machine's; e.g. reno)")
    u.add_argument("--subnet", type=int, default=None,
                   help="which /24 of 198.18.0.0/15 (0-511; default: from the name, free)")
    u.add_argument("--slurm", action="store_true",
                   help="also start munged, slurmctld and one slurmd per host")
    u.set_defaults(func=_up)

    r = sub.add_parser("run", help="run an MPI command across the hosts: run -- mpiexec ...")
    common(r)
    r.add_argument("--timeout", type=float, default=None, help="kill the run after SECONDS")
    r.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- mpiexec -n N PROGRAM... (or PROGRAM..., under this mpiexec)")
    r.set_defaults(func=_run)

    rl = sub.add_parser("relaunch", help="run an elastic job across the hosts up and, when a "
                        "host is lost, relaunch it on the hosts left with --resume "
                        "(docs/storage.md, docs/clusters.md)")
    common(rl)
    rl.add_argument("--tries", type=int, default=3, help="relaunches at most (default 3)")
    rl.add_argument("--timeout", type=float, default=600.0,
                    help="seconds each launch may take (default 600)")
    rl.add_argument("--report", default=None, metavar="FILE",
                    help="append one JSON object per launch (hosts, ranks, times, steps)")
    rl.add_argument("command", nargs=argparse.REMAINDER,
                    help="-- mpiexec -n N ... mpi-coded run cec ... --out FILE")
    rl.set_defaults(func=_relaunch)

    s = sub.add_parser("status", help="hosts, rates and the bytes through each link")
    common(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_status)

    d = sub.add_parser("down", help="remove everything up made")
    common(d)
    d.set_defaults(func=_down)

    e = sub.add_parser("env", help="shell exports for jobs inside the hosts: "
                       "eval \"$(mpi-coded cluster env)\"; sbatch -N H ...")
    common(e)
    e.set_defaults(func=_env)

    ln = sub.add_parser("link", help="take a host's link down or up (a network fault)")
    common(ln)
    ln.add_argument("host", help="host name or number")
    ln.add_argument("state", choices=("down", "up"))
    ln.set_defaults(func=_link)

    k = sub.add_parser("kill", help="kill every process of a host at once (a node crash)")
    common(k)
    k.add_argument("host", help="host name or number")
    k.set_defaults(func=_kill)
    return p


def _kill(args: argparse.Namespace) -> int:
    try:
        host, killed = manage.kill_host(args.name, args.dir, args.host)
    except manage.ClusterError as exc:
        return _fail(exc)
    print(f"{host}: killed {len(killed)} processes" + "".join(
        f"\n  {pid} {cmd}" for pid, cmd in killed))
    return 0


def _queue(size: int | None) -> str:
    """A queue's size as tc writes it; an older cluster's state has none (100 ms)."""
    return "100 ms (older cluster)" if size is None else netns.format_size(size)


def _fail(exc: Exception) -> int:
    print(f"mpi-coded cluster: error: {exc}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _up(args: argparse.Namespace) -> int:
    try:
        c, d, took = manage.up(args.name, args.hosts, args.slots, args.rate, args.rate_of,
                               args.dir, args.subnet, args.queue, args.tcp)
    except manage.ClusterError as exc:
        return _fail(exc)
    rates = sorted({h.rate for h in c.hosts})
    print(f"cluster {c.name}: {len(c.hosts)} hosts {c.hosts[0].name}..{c.hosts[-1].name} on "
          f"{c.subnet} (bridge {c.bridge} {c.bridge_address}), links {'/'.join(rates)}, "
          f"queues {_queue(c.queue_bytes)}, TCP {c.tcp}, {c.slots} slots each; "
          f"up in {took:.2f} s; state in {d}")
    if args.slurm:
        try:
            info = slurm.start(c, d)
        except manage.ClusterError as exc:
            manage.teardown(c, d)
            return _fail(exc)
        print(f"slurm: controller {info['controller']}, nodes {','.join(info['nodes'])}; "
              f"export SLURM_CONF={info['conf']}")
    return 0


def _run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    try:
        return manage.run(args.name, args.dir, command, args.timeout)
    except manage.ClusterError as exc:
        return _fail(exc)


def _relaunch(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.tries < 0:
        return _fail(ConfigError("--tries", "must be >= 0", args.tries))
    try:
        c, d = manage.load(args.name, args.dir)
        return relaunch.supervise(c, d, command, args.tries, args.timeout, args.report,
                                  lambda since: manage.faults_since(d, since))
    except (manage.ClusterError, ConfigError) as exc:
        return _fail(exc)


def _status(args: argparse.Namespace) -> int:
    try:
        st = manage.status(args.name, args.dir)
    except manage.ClusterError as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps(st))
        return 0
    print(f"cluster {st['cluster']}: {st['subnet']}, bridge {st['bridge']} "
          f"{st['bridge_address']}, {st['slots']} slots per host, queues "
          f"{_queue(st['queue_bytes'])}, TCP {st['tcp'] or '?'}, "
          f"state in {st['state_dir']}")
    if st["slurm"]:
        print(f"slurm: SLURM_CONF={st['slurm']['conf']}, daemons {st['slurm']['alive']}")
    print(f"{'host':<14} {'address':<15} {'rate':>8} {'link':>7} {'sent B':>14} "
          f"{'received B':>14}")
    for h in st["hosts"]:
        print(f"{h['host']:<14} {h['address']:<15} {h['rate']:>8} {h['link']:>7} "
              f"{h['sent_bytes']!s:>14} {h['received_bytes']!s:>14}")
    return 0


def _down(args: argparse.Namespace) -> int:
    try:
        c, took = manage.down(args.name, args.dir)
    except manage.ClusterError as exc:
        return _fail(exc)
    print(f"cluster {c.name}: removed {len(c.hosts)} hosts, their links and the bridge "
          f"in {took:.2f} s")
    return 0


def _env(args: argparse.Namespace) -> int:
    try:
        c, d = manage.load(args.name, args.dir)
    except manage.ClusterError as exc:
        return _fail(exc)
    env = netns.job_env(c)
    info = slurm.describe(d)
    if info:
        env["SLURM_CONF"] = info["conf"]
    for k, v in env.items():
        print(f"export {k}={shlex.quote(v)}")
    return 0


def _link(args: argparse.Namespace) -> int:
    try:
        host = manage.set_link(args.name, args.dir, args.host, args.state)
    except manage.ClusterError as exc:
        return _fail(exc)
    print(f"cluster {args.name}: link of {host} {args.state}")
    return 0
