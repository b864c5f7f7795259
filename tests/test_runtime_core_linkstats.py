"""runtime/core/linkstats.py in one process: the link counters read from a fake procfs and
sysfs, carried in statistics records, merged per host and phase; and the lines both jobs
build from them (``link_bytes`` beside ``plan_bytes``).  The same on a real emulated
cluster: tests/test_multihost_link_bytes.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mpi_coded import results
from mpi_coded.analysis.network import Traffic, bytes_by_host
from mpi_coded.coded.job import from_mapping
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement, rank_of
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.runtime.core import linkstats, records
from mpi_coded.runtime.core.linkstats import Counters, HostBook, LinkReader


def _dev(name: str, received: int, sent: int) -> str:
    """A line of ``/proc/net/dev``: a right-aligned name, 8 receive and 8 transmit numbers
    (a wide counter touches the colon, as the kernel prints it)."""
    return f"{name:>6}:{received:>8} 9 0 0 0 0 0 0 {sent:>8} 9 0 0 0 0 0 0"


NET_DEV = "\n".join([
    "Inter-|   Receive                                                |  Transmit",
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets ...",
    _dev("lo", 71710464, 71710464), _dev("eth0", 2609544869, 3512017),
    _dev("mc-t19ca7-br", 232060, 1270992)]) + "\n"


def _sysfs(root: Path, counters: dict[str, tuple[int, int]]) -> Path:
    for name, (tx, rx) in counters.items():
        d = root / name / "statistics"
        d.mkdir(parents=True)
        (d / "tx_bytes").write_text(f"{tx}\n")
        (d / "rx_bytes").write_text(f"{rx}\n")
    return root


def test_net_dev_is_parsed_sent_and_received_per_interface():
    got = linkstats.parse_net_dev(NET_DEV)
    assert got == {"lo": Counters(71710464, 71710464), "eth0": Counters(3512017, 2609544869),
                   "mc-t19ca7-br": Counters(1270992, 232060)}
    assert linkstats.parse_net_dev("garbage\n\nno: numbers here\n") == {}


def test_the_reader_takes_the_named_interface_or_every_one_but_the_loopback(tmp_path):
    proc = tmp_path / "dev"
    proc.write_text(NET_DEV)
    assert LinkReader("eth0", proc=proc).read() == Counters(3512017, 2609544869)
    assert LinkReader(None, proc=proc).read() == Counters(3512017 + 1270992,
                                                          2609544869 + 232060)
    assert LinkReader("eth9", proc=proc).read() is None  # the named one is not there


def test_without_procfs_the_reader_falls_back_to_sysfs_then_to_none(tmp_path):
    sys_net = _sysfs(tmp_path / "net", {"lo": (9, 9), "eth0": (100, 200), "veth1": (1, 2)})
    missing = tmp_path / "no-such-file"
    assert LinkReader("eth0", proc=missing, sys=sys_net).read() == Counters(100, 200)
    assert LinkReader(None, proc=missing, sys=sys_net).read() == Counters(101, 202)
    (sys_net / "veth1" / "statistics" / "rx_bytes").write_text("not a number")
    assert LinkReader(None, proc=missing, sys=sys_net).read() == Counters(100, 200)
    assert LinkReader(None, proc=missing, sys=tmp_path / "nothing").read() is None
    lo_only = _sysfs(tmp_path / "lo-only", {"lo": (5, 5)})
    assert LinkReader(None, proc=missing, sys=lo_only).read() is None


def test_the_interface_comes_from_the_described_network(monkeypatch):
    monkeypatch.setenv("MPI_CODED_NETWORK", json.dumps({"emulated": True, "iface": "eth0"}))
    assert linkstats.reader_from_env().iface == "eth0"
    assert linkstats.described_network() == {"emulated": True, "iface": "eth0"}
    for text in ("{not json", "[1, 2]", ""):
        monkeypatch.setenv("MPI_CODED_NETWORK", text)
        assert linkstats.described_network() is None
        assert linkstats.reader_from_env().iface is None
    monkeypatch.delenv("MPI_CODED_NETWORK")
    assert linkstats.reader_from_env().iface is None


def test_unacknowledged_bytes_are_summed_over_established_connections(tmp_path, monkeypatch):
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
    rows = ["   0: 00000000:AE81 00000000:0000 0A 00000010:00000000 00:00000000 00000000",
            "   1: 01FE13C6:AE81 09FE13C6:B158 01 00000100:00000000 00:00000000 00000000",
            "   2: 01FE13C6:AE82 09FE13C6:B159 01 0000000A:00000004 00:00000000 00000000"]
    tcp = tmp_path / "tcp"
    tcp.write_text("\n".join([head, *rows]) + "\n")
    assert linkstats.unacknowledged([tcp, tmp_path / "absent"]) == 0x100 + 0xA  # not LISTEN
    assert linkstats.unacknowledged([tmp_path / "absent"]) is None
    idle = tmp_path / "idle"
    idle.write_text("\n".join([head, rows[0]]) + "\n")
    assert linkstats.unacknowledged([idle]) == 0
    monkeypatch.setattr(linkstats, "_READER", [LinkReader("eth0")])  # an emulated host
    t = time.perf_counter()
    linkstats.read_sent(wait=0.05, tables=[tcp])  # never drains: gives up after wait
    assert 0.05 <= time.perf_counter() - t < 1.0
    monkeypatch.setattr(linkstats, "_READER", [LinkReader(None)])  # not described: at once
    t = time.perf_counter()
    linkstats.read_sent(wait=5.0, tables=[tcp])
    assert time.perf_counter() - t < 1.0


def test_this_process_reads_its_own_counters_cheaply():
    c = linkstats.read()
    if c is None:
        pytest.skip("no interface counters here (not Linux)")
    t = time.perf_counter()
    for _ in range(100):
        linkstats.read()
    assert (time.perf_counter() - t) / 100 < 2e-3  # a few file reads, not a subprocess


def test_a_span_travels_in_a_record_and_reads_back_with_none_for_unread():
    a, b = Counters(10, 20), Counters(15, 40)
    vals = linkstats.span_values(a, b)
    assert list(vals) == list(records.LINK)
    assert linkstats.span_of(vals) == (a, b)
    vals = linkstats.span_values(None, b)
    assert vals["link_sent0"] == -1 and linkstats.span_of(vals) == (None, b)
    assert linkstats.span_of({}) == (None, None)  # a record without the fields (older)
    rec = records.TASK_META
    arr = rec.pack(**dict.fromkeys(rec.fields[:8], 0.0), **vals,
                   **linkstats.values(records.MOVED, Counters(12, 30)))
    back = rec.unpack(arr, 3)
    assert linkstats.counters_at(back, *records.MOVED) == Counters(12, 30)
    assert float(2**52 + 1) == 2**52 + 1  # counters up to 4 PB travel exactly as float64


def test_a_host_takes_the_latest_start_and_end_then_tiles_its_phases():
    c = Counters
    phases = [
        ("encode", {"A": [(c(100, 100), c(110, 105)), (c(90, 95), c(120, 101))],
                    "B": [(c(0, 0), c(5, 5))]}),
        ("map", {"A": [(c(110, 105), c(130, 150))]}),   # B: no rank took part
        ("shuffle", {"A": [(c(1, 1), c(200, 300))], "B": [(c(6, 6), c(50, 70))]}),
        ("reduce", {"A": [(None, None)], "B": [(c(50, 70), c(40, 80))]}),  # reset on B
    ]
    got = linkstats.host_phases(phases, ["B", "A", "C"])
    assert got == {
        "encode": {"A": [20, 5], "B": [5, 5], "C": None},        # A: 120-100, 105-100
        "map": {"A": [10, 45], "B": None, "C": None},            # from A's encode end
        "shuffle": {"A": [70, 150], "B": [45, 65], "C": None},   # B: from its encode end
        "reduce": {"A": None, "B": None, "C": None}}
    assert list(got["encode"]) == ["A", "B", "C"]
    book = HostBook()
    book.phase({"A": [(c(0, 0), c(10, 10))]}, ["A"])
    assert book.phase({"A": [(c(5, 5), c(30, 20))]}, ["A"]) == {"A": [20, 10]}  # not from 5


def test_the_plan_is_counted_per_host_and_local_messages_are_left_out():
    t = Traffic()
    t.add(0, 1, 100)   # master -> rank 1, both on h1: shared memory, not counted
    t.add(1, 2, 1000)  # h1 -> h2
    t.add(2, 3, 7)     # h2 -> h2
    host_of = {0: "h1", 1: "h1", 2: "h2", 3: "h2"}
    assert bytes_by_host(t, host_of, ["h3"]) == {"h1": [1000, 0], "h2": [0, 1000],
                                                           "h3": [0, 0]}


def test_link_bytes_mean_something_on_an_emulated_network_or_across_hosts():
    assert linkstats.measured({"emulated": True}, ["a"])
    assert linkstats.measured({"emulated": False}, ["a", "b"])
    assert not linkstats.measured({"emulated": False}, ["a", "a"])
    assert not linkstats.measured(None, [])


def test_every_config_line_names_its_network(monkeypatch):
    from mpi_coded.runtime.core import run

    monkeypatch.delenv("MPI_CODED_NETWORK", raising=False)
    assert run.network_info() == {"emulated": False}
    net = {"cluster": "t1", "emulated": True, "iface": "eth0", "hosts": ["t1-node1"]}
    monkeypatch.setenv("MPI_CODED_NETWORK", json.dumps(net))
    assert run.network_info() == net


# --- the coded job's run line -------------------------------------------------------------

JOB = from_mapping({"scheme": "unified", "K": 6, "q": 4, "mu": "1/2", "rows_per_batch": 4,
                    "n": 30, "N": 12, "field": "gf2^8", "multicast": "p2p"})
HOSTS = {"0": "h1", "1": "h1", "2": "h2", "3": "h2", "4": "h4", "5": "h3", "6": "h4"}
"""Rank -> host: the master and server 0 on h1, servers 1, 2 on h2, 4 on h3, 3, 5 on h4."""


def _at(host: str, t: int) -> Counters:
    """Host ``host``'s counters at time ``t``: 100 bytes sent and 200 received per unit."""
    off = 10**6 * int(host[1:])
    return Counters(100 * t + off, 200 * t + off)


def _span(s: int, t0: int, t1: int) -> dict[str, float]:
    """Server ``s``'s statistics (every field 0) with its link span over ``[t0, t1]``."""
    from mpi_coded.runtime.coded import setup

    h = HOSTS[str(s + 1)]
    fields = {f for rec in (setup.ENCODE_STATS, setup.MAP_STATS, setup.SHUFFLE_STATS,
                            setup.REDUCE_STATS) for f in rec.fields}
    return {**dict.fromkeys(fields, 0.0), **linkstats.span_values(_at(h, t0), _at(h, t1))}


def test_a_coded_run_line_carries_link_and_plan_bytes_per_phase_and_host(monkeypatch):
    """The master marks at t = 0, 10, 20, 30, 40; servers encode over [1, 2]; the finishers
    0, 1, 3, 5 end their map at 12, 13, 14, 15, servers 2 and 4 stop late (16, 25); the
    finishers' shuffle ends at 28, their reduce runs over [31, 35] (server 1: [33, 36],
    server 5: [34, 37]).  The master's host follows the master's marks; elsewhere a phase
    ends at the latest end of the host's ranks that took part (not a late server beside a
    finisher: server 2 on h2), the shuffle at the earliest reduce start (h4: server 3's)."""
    from mpi_coded.runtime.coded import lines

    monkeypatch.setenv("MPI_CODED_NETWORK", json.dumps({"emulated": True, "iface": "eth0"}))
    placement = build_placement(JOB.params)
    end = map_end(placement, [0, 1, 3, 5, 2, 4])
    assert (end.Q, end.extra) == ((0, 1, 3, 5), ())
    plan = shuffle_plan(placement, end)
    r = lines.Repetition(rep=0, t=[0.0, 10.0, 20.0, 30.0, 40.0])
    r.link = [_at("h1", t) for t in (0, 10, 20, 30, 40)]
    r.encode = {s: _span(s, 1, 2) for s in range(6)}
    r.map = {s: _span(s, 2, t) for s, t in ((0, 12), (1, 13), (3, 14), (5, 15), (2, 16),
                                            (4, 25))}
    r.finished, r.end = [0, 1, 3, 5], end
    r.shuffle = {s: _span(s, 21, 28) for s in end.Q}
    r.reduce = {s: _span(s, 31, 35) for s in end.Q}
    r.reduce[1] = _span(1, 33, 36)
    r.reduce[5] = _span(5, 34, 37)
    line = lines.repetition_line(JOB, "gf2^8", r, plan, "exact", True, 0.0, HOSTS)
    link, planned = line.link_bytes, line.plan_bytes
    assert link is not None and planned is not None

    def units(t: int) -> list[int]:
        return [100 * t, 200 * t]

    assert link == {
        "encode": {"h1": units(10), "h2": units(1), "h3": units(1), "h4": units(1)},
        "map": {"h1": units(10), "h2": units(11), "h3": units(23), "h4": units(13)},
        "shuffle": {"h1": units(10), "h2": units(20), "h3": None, "h4": units(16)},
        "reduce": {"h1": units(10), "h2": units(3), "h3": None, "h4": units(6)}}
    # the plan: the shuffle between hosts and the reducers' outputs to the master
    assert list(planned) == ["encode", "map", "shuffle", "reduce"]
    assert planned["encode"] == planned["map"] == {h: [0, 0] for h in ("h1", "h2", "h3", "h4")}
    sent = sum(v[0] for v in planned["shuffle"].values() if v)
    assert sent == sum(v[1] for v in planned["shuffle"].values() if v) > 0
    assert planned["shuffle"]["h3"] == [0, 0]  # no finisher there
    hops = sum(1 for mc in plan.multicasts for k in mc.receivers
               if HOSTS[str(rank_of(mc.sender))] != HOSTS[str(rank_of(k))])
    assert sent >= hops * 64  # a header at least per message between hosts
    gather = planned["reduce"]
    assert gather["h1"] is not None and gather["h1"][0] == 0
    assert gather["h1"][1] == sum(v[0] for v in gather.values() if v) > 0
    back = results.CodedRun.from_record(json.loads(json.dumps(results.jsonable(
        line.to_dict()))))
    assert back.link_bytes == link and back.plan_bytes == planned


def test_on_one_host_without_a_described_network_the_run_line_has_no_link_bytes(monkeypatch):
    from mpi_coded.runtime.coded import lines

    monkeypatch.delenv("MPI_CODED_NETWORK", raising=False)
    placement = build_placement(JOB.params)
    end = map_end(placement, [0, 1, 2, 3, 4, 5])
    r = lines.Repetition(rep=0, t=[0.0, 1.0, 2.0, 3.0, 4.0])
    r.end, r.finished = end, list(end.Q)
    line = lines.repetition_line(JOB, "gf2^8", r, shuffle_plan(placement, end), "exact",
                                 True, 0.0, dict.fromkeys(HOSTS, "one"))
    assert line.link is None and "link_bytes" not in line.to_dict()


# --- the elastic job's step line ----------------------------------------------------------

def test_a_machine_task_record_splits_into_moves_and_step_spans():
    from mpi_coded.runtime.cec.cluster import meta_spans

    c = Counters
    metas = {
        2: {**linkstats.span_values(c(0, 0), c(50, 60)),
            **linkstats.values(records.MOVED, c(20, 30))},
        3: {**linkstats.span_values(c(5, 5), c(9, 9)),
            **linkstats.values(records.MOVED, None)}}
    before, after = meta_spans(metas, moved=True)
    assert before == {2: (c(0, 0), c(20, 30))} and after == {2: (c(20, 30), c(50, 60)),
                                                             3: (c(5, 5), c(9, 9))}
    before, after = meta_spans(metas, moved=False)
    assert before == {} and after[2] == (c(0, 0), c(50, 60))


def test_a_linreg_step_adds_both_products_link_bytes():
    a = results.ElasticStep(
        step=1, policy="cyclic", available=[1], predicted_s=1.0, wall_s=1.0, verified=True,
        link=results.LinkBytes(link_bytes={"step": {"h1": [10, 20], "h2": None}},
                               plan_bytes={"step": {"h1": [1, 2], "h2": [3, 4]}}))
    b = results.ElasticStep(
        step=1, policy="cyclic", available=[1], predicted_s=1.0, wall_s=1.0, verified=True,
        link=results.LinkBytes(link_bytes={"step": {"h1": [1, 1], "h2": [5, 5]}},
                               plan_bytes=None))
    j = a.with_transpose(b, residual=0.0)
    assert j.link is not None
    assert j.link_bytes == {"step": {"h1": [11, 21], "h2": None}} and j.plan_bytes is None
    line = json.loads(json.dumps(results.jsonable(j.to_dict())))
    assert line["link_bytes"] == j.link_bytes and "plan_bytes" not in line
    assert results.ElasticStep.from_record(line) == j
    unmeasured = results.ElasticStep(step=1, policy="cyclic", available=[1],
                                     predicted_s=1.0, wall_s=1.0, verified=True)
    assert a.with_transpose(unmeasured, 0.0).link is None


def test_a_job_whose_link_bytes_mean_nothing_reads_no_counters():
    """``count(False)`` (a one-host job without a described network, runtime/core/run.py):
    :func:`read` returns None at once, so a machine's task reads no file for numbers no
    record keeps; the records carry -1 (unread), as where nothing can be read."""
    linkstats.count(False)
    try:
        assert linkstats.read() is None
        assert linkstats.span_values(linkstats.read(), linkstats.read()) == \
            dict.fromkeys(("link_sent0", "link_received0", "link_sent1", "link_received1"),
                          linkstats.UNREAD)
    finally:
        linkstats.count(True)
    assert linkstats.measured(None, ["a", "a"]) is False
    assert linkstats.measured({"emulated": True}, ["a"]) is True
    assert linkstats.measured(None, ["a", "b"]) is True
