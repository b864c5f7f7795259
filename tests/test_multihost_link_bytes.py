"""Measured phases carry the network (issue 19, item 2): on an emulated cluster of 4 hosts
(``mpi-coded cluster``, tests/test_multihost.py's :class:`Emulated`), every result line
records the network it ran on, and per phase the bytes each host's interface sent and
received (``link_bytes``) beside the bytes of the plan (``plan_bytes``, the network model
of :mod:`mpi_coded.analysis.network`).

The interfaces count frames: payload, TCP/IP and Ethernet headers, acknowledgements and the
MPI library's own control, so a host's link carries at least the plan's bytes; with
payloads of tens of KiB the overhead is a few percent.  A broadcast (``--multicast
bcast``) follows the MPI library's tree, not necessarily the model's binomial one, so
there every host is checked against what any tree must carry (one copy of each multicast
into every other host with a member), and the totals against the plan within a factor.

Needs root (network namespaces); skipped with the reason elsewhere, failing under
``CI=true`` (tests/test_multihost.py).  Under ``.venv-ompi`` the same runs use Open MPI.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_multihost import Emulated, four_host_cluster

from mpi_coded.analysis.network import HEADER_BYTES, ITEMSIZE
from mpi_coded.coded.job import from_mapping
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.placement import build_placement, rank_of
from mpi_coded.coded.shuffle import shuffle_plan

pytestmark = [pytest.mark.multihost, pytest.mark.mpi, pytest.mark.portable]

CODED = ["--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch",
         "40", "--n", "400", "--N", "800", "--field", "float64", "--reps", "2"]
"""A coded job whose shuffle moves about 1.3 MB (float64): large next to the headers."""
PHASES = ["encode", "map", "shuffle", "reduce"]
OVERHEAD = 1.25
"""At most this many interface bytes per plan byte, with payloads of this size."""
SLACK = 64 * 1024
"""Plus this many bytes per phase and host (control: orders, statistics, ACKs)."""

ELASTIC = """job = "cec"
N = 6
L = 3
speeds = [1, 1, 1.5, 1.5, 2, 2]
rows = 1260
cols = 2000
field = "float64"
policy = "{policy}"
t_row = 0.0
seed = 0
timeout_s = 120.0

[availability]
kind = "schedule"
schedule = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]
"""
"""The seed example with 2000 columns: 16 KB vectors, 6.7 MB coded blocks."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Emulated]:
    """4 hosts at 1 Gbit/s, 2 slots each, named ``t19b`` and 2 characters of this process
    (this file's own clusters)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    k = os.getpid() % 36**2
    with four_host_cluster("mpi-coded-linkbytes-",
                           name=f"t19b{digits[k // 36]}{digits[k % 36]}") as c:
        yield c


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _run(c: Emulated, args: list[str], out: Path) -> list[dict]:
    r = c.mpirun(7, [sys.executable, "-m", "mpi_coded", "run", *args, "--out", str(out)], 300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = _lines(out)
    config = next(x for x in lines if x.get("kind") == "config")
    net = config["network"]
    assert net["emulated"] is True and net["cluster"] == c.name and net["iface"] == "eth0"
    assert net["hosts"] == [f"{c.name}-node{k}" for k in range(1, 5)]
    assert set(net["rates"]) == set(net["hosts"]) and net["transport"].startswith("tcp")
    return lines


def _ge(link: list[int] | None, want: list[int], what: str) -> None:
    assert link is not None, what
    assert link[0] >= want[0] and link[1] >= want[1], f"{what}: link {link} < {want}"


def _bcast_floor(run: dict) -> dict[str, list[int]]:
    """Per host, the bytes any broadcast tree carries in the run's shuffle: a multicast's
    payload into every host (but the sender's) with a receiver, out of the sender's host
    once if one is elsewhere; the unicasts point to point, with their headers."""
    keys = ("scheme", "K", "q", "mu", "rows_per_batch", "n", "N", "T", "field")
    job = from_mapping({k: run[k] for k in keys})
    plan = shuffle_plan(build_placement(job.params), MapEnd(tuple(run["Q"]),
                                                            tuple(run["extra"])))
    item = ITEMSIZE[run["field"]]
    host = {int(k): v for k, v in run["hosts"].items()}
    floor = {h: [0, 0] for h in host.values()}
    for mc in plan.multicasts:
        src = host[rank_of(mc.sender)]
        remote = {host[rank_of(k)] for k in mc.receivers} - {src}
        for h in remote:
            floor[h][1] += mc.length * item
        if remote:
            floor[src][0] += mc.length * item
    for u in plan.unicasts:
        a, b = host[rank_of(u.sender)], host[rank_of(u.receiver)]
        if a != b:
            floor[a][0] += HEADER_BYTES + u.size * item
            floor[b][1] += HEADER_BYTES + u.size * item
    return floor


@pytest.mark.parametrize("multicast", ["p2p", "bcast"])
def test_the_coded_job_records_each_hosts_link_bytes_beside_the_plan(cluster, multicast):
    c = cluster
    with tempfile.TemporaryDirectory(prefix="mpi-coded-linkbytes-") as d:
        lines = _run(c, ["coded", *CODED, "--multicast", multicast], Path(d) / "coded.jsonl")
    runs = [x for x in lines if x.get("kind") == "run"]
    assert len(runs) == 2 and all(x["verified"] for x in runs)
    for run in runs:
        link, plan = run["link_bytes"], run["plan_bytes"]
        hosts = sorted(set(run["hosts"].values()))
        assert list(link) == list(plan) == PHASES
        assert all(sorted(link[p]) == sorted(plan[p]) == hosts for p in PHASES)
        master = run["hosts"]["0"]
        for p in PHASES:  # the master's host is measured in every phase
            assert link[p][master] is not None, (p, link)
        shuffle, want = link["shuffle"], plan["shuffle"]
        floor = _bcast_floor(run) if multicast == "bcast" else want
        for h in hosts:
            if want[h] != [0, 0]:
                _ge(shuffle[h], floor[h], f"rep {run['rep']} shuffle {h}")
                assert shuffle[h] is not None
                for i in (0, 1):
                    assert shuffle[h][i] <= OVERHEAD * want[h][i] + SLACK, (h, shuffle, want)
        total = [sum(v[i] for v in shuffle.values() if v) for i in (0, 1)]
        planned = [sum(v[i] for v in want.values()) for i in (0, 1)]
        low = 1.0 if multicast == "p2p" else 0.5
        assert all(low * p <= t <= OVERHEAD * p + SLACK for t, p in zip(total, planned)), \
            (total, planned)
        # the reducers' outputs to the master: in the reduce, every reducer's host measured
        for h in hosts:
            if plan["reduce"][h] != [0, 0]:
                _ge(link["reduce"][h], plan["reduce"][h], f"rep {run['rep']} reduce {h}")
        print(f"coded {multicast} rep {run['rep']} Q={run['Q']} shuffle link/plan per host: "
              + ", ".join(f"{h[-5:]} {shuffle[h]}/{want[h]}" for h in hosts)
              + f"; reduce {master[-5:]} {link['reduce'][master]}/{plan['reduce'][master]}")


@pytest.mark.parametrize("policy", ["heterogeneous", "uncoded"])
def test_the_elastic_job_records_each_hosts_link_bytes_beside_the_plan(cluster, policy):
    c = cluster
    with tempfile.TemporaryDirectory(prefix="mpi-coded-linkbytes-") as d:
        cfg = Path(d) / "cec.toml"
        cfg.write_text(ELASTIC.format(policy=policy))
        lines = _run(c, ["cec", "--config", str(cfg)], Path(d) / "cec.jsonl")
    config = next(x for x in lines if x.get("kind") == "config")
    setup = next(x for x in lines if x.get("kind") == "setup")
    steps = [x for x in lines if x.get("kind") == "step"]
    master = config["host"]
    # setup: the master's host sent every machine's data (on other hosts) once
    _ge(setup["link_bytes"]["setup"][master], setup["plan_bytes"]["setup"][master], "setup")
    assert setup["plan_bytes"]["setup"][master][0] >= 10**7  # the blocks or rows
    phases = ["moves", "step"] if policy == "uncoded" else ["step"]
    received = {p: [0, 0] for p in phases}  # phase -> [link, plan] bytes received
    sent = [0, 0]  # [link, plan] bytes sent, over all phases and steps
    for s in steps:
        assert list(s["link_bytes"]) == list(s["plan_bytes"]) == phases
        for p in phases:
            link, plan = s["link_bytes"][p], s["plan_bytes"][p]
            assert link[master] is not None
            for h, got in link.items():
                if got is None:  # no machine on h answered: all preempted
                    hosted = [n for n, x in setup["hosts"].items() if x == h]
                    assert not set(map(int, hosted)) & set(s["available"]), (s["step"], h)
                    continue
                # what arrived at a host: all of it, within the phase that waited for it
                assert got[1] >= plan[h][1], (s["step"], p, h, got, plan[h])
                assert got[1] <= OVERHEAD * plan[h][1] + SLACK, (s["step"], p, h, got, plan[h])
                received[p][0] += got[1]
                received[p][1] += plan[h][1]
                sent[0] += got[0]
                sent[1] += plan[h][0]
            _ge(link[master], plan[master], f"step {s['step']} {p} on the master's host")
    for p, (link_sum, plan_sum) in received.items():
        assert 0.95 * plan_sum <= link_sum <= OVERHEAD * plan_sum + SLACK, (p, link_sum, plan_sum)
    # what left the hosts, over the whole run: a send completes when the MPI library has
    # handed it to the kernel (Open MPI's TCP transport), and its tail leaves the sender's
    # interface in the sender's next phase (the moves' tail in the step: CI saw 437,688 B
    # sent in the uncoded steps against 281,784 planned), so no per-phase bound holds here
    assert 0.95 * sent[1] <= sent[0] <= OVERHEAD * sent[1] + SLACK * len(steps), sent
    moved = sum(s["bytes_moved"] for s in steps)
    assert (moved > 0) == (policy == "uncoded")
    if moved:  # the rows that changed owner crossed the links (some between two machines
        # of one host, which the plan leaves out too)
        assert received["moves"][0] >= 0.5 * moved
    print(f"cec {policy}: link/plan summed over steps and hosts: sent {sent[0]}/{sent[1]}, "
          "received " + ", ".join(f"{p} {v[0]}/{v[1]}" for p, v in received.items())
          + f"; setup {master[-5:]} {setup['link_bytes']['setup'][master]}/"
          f"{setup['plan_bytes']['setup'][master]}; bytes_moved {moved}")
