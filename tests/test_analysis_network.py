"""The network model (docs/theory.md (B.7)): bytes and messages per host from the real
shuffle plan, both multicast modes, the gather, the elastic job's steps, and the
command line's ``--rate`` (pure, no MPI)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from fractions import Fraction

import pytest

from mpi_coded import cli
from mpi_coded.analysis import network as nw
from mpi_coded.analysis.model import model_params
from mpi_coded.cec.plan import make_plan
from mpi_coded.cec.uncoded import bytes_moved, moves, uncoded_split
from mpi_coded.coded.placement import build_placement
from mpi_coded.errors import EXIT_BAD_INPUT, ConfigError
from mpi_coded.rates import format_rate, parse_rate

H = nw.HEADER_BYTES


def job(scheme, K, q, mu, m, N, T=1, field="gf2^8"):
    p = nw.runnable_params(model_params(scheme, K, q, mu, m=m, N=N, T=T, field=field).params)
    return p, build_placement(p)


def independent_count(plan, item, mode):
    """Per rank ``[sent bytes, received bytes, sent messages, received messages, sent
    copies, received copies]`` (every message here carries one payload), counted
    from the plan's messages here (p2p: a header and a payload to every receiver; bcast:
    every receiver gets the payload once, no header; the binomial parent written out as
    MPICH computes it: the lowest set bit of the relative rank)."""
    acc = defaultdict(lambda: [0, 0, 0, 0, 0, 0])

    def edge(src, dst, nbytes, msgs):
        acc[src + 1][0] += nbytes
        acc[src + 1][2] += msgs
        acc[src + 1][4] += 1
        acc[dst + 1][5] += 1
        acc[dst + 1][1] += nbytes
        acc[dst + 1][3] += msgs

    for mc in plan.multicasts:
        if mode == "p2p":
            for k in mc.receivers:
                edge(mc.sender, k, H + mc.length * item, 2)
        else:
            g, root = len(mc.group), mc.group.index(mc.sender)
            for rel in range(1, g):
                mask = 1
                while not rel & mask:
                    mask <<= 1
                edge(mc.group[(rel - mask + root) % g], mc.group[(rel + root) % g],
                     mc.length * item, 1)
    for u in plan.unicasts:
        edge(u.sender, u.receiver, H + u.size * item, 2)
    return {r: nw.HostTraffic(*v) for r, v in sorted(acc.items())}


# --- rates ---------------------------------------------------------------------------------

def test_one_rate_parser_for_the_model_and_the_cluster():
    from mpi_coded.cluster import netns

    assert netns.parse_rate is parse_rate and netns.format_rate is format_rate
    assert parse_rate("100mbit") == 10**8
    assert parse_rate("1gbit") == 10**9
    assert parse_rate("1.5Gbit/s") == 1_500_000_000
    assert parse_rate("250kbit") == 250_000
    assert parse_rate("12.5mbps") == 10**8
    assert parse_rate("5e8") == 5 * 10**8
    assert format_rate(1_500_000_000) == "1500mbit"
    for bad in ("0mbit", "-1gbit", "fast", "10 parsecs", "", "1mbps/s", "0.0001bit"):
        with pytest.raises(ConfigError, match=r"^--rate: must be a rate > 0"):
            parse_rate(bad)


def test_constants_match_the_runtime_and_the_fields():
    from mpi_coded.fields import get_field

    for name, size in nw.ITEMSIZE.items():
        assert get_field(name).dtype.itemsize == size
    pytest.importorskip("mpi4py")
    from mpi_coded.runtime.core import records, wire

    assert nw.HEADER_BYTES == wire.HEADER_WORDS * 8
    assert nw.INLINE_BYTES == wire.INLINE_BYTES
    assert nw.META_WORDS == len(records.TASK_META.fields)


# --- the network value ---------------------------------------------------------------------

def test_hosts_default_to_one_per_rank_and_can_be_grouped():
    net = nw.make_network(5, "1gbit", ["server2=100mbit", "master=10mbit"])
    assert net.names == ("master", "server0", "server1", "server2", "server3")
    assert net.rates == (1e7, 1e9, 1e9, 1e8, 1e9)
    g = nw.make_network(5, "1gbit", ["rank3=100mbit", "host3=1mbit"], ranks_per_host=2)
    assert g.names == ("host1", "host2", "host3") and g.host_of == (0, 0, 1, 1, 2)
    assert g.rates == (1e9, 1e8, 1e6)
    e = nw.make_network(3, "1gbit", ["machine2=1mbit"], rank_name=nw.elastic_rank_name)
    assert e.names == ("master", "machine1", "machine2") and e.rates[2] == 1e6


@pytest.mark.parametrize("kw,field", [
    ({"rate_of": ["server4=1gbit"]}, "--rate-of"),
    ({"rate_of": ["server1"]}, "--rate-of"),
    ({"rate_of": ["rank9=1gbit"]}, "--rate-of"),
    ({"rate_of": ["server1=0"]}, "--rate-of"),
    ({"alpha": -1.0}, "--alpha"),
    ({"efficiency": 1.5}, "--efficiency"),
    ({"ranks_per_host": 0}, "--ranks-per-host"),
])
def test_bad_networks_name_the_argument(kw, field):
    with pytest.raises(ConfigError) as exc:
        nw.make_network(5, "1gbit", **kw)
    assert exc.value.field == field


def test_a_host_is_full_duplex_and_pays_alpha_per_message():
    t = nw.HostTraffic(sent_bytes=1000, recv_bytes=250, sent_messages=2, recv_messages=10)
    assert t.seconds(8000.0) == pytest.approx(1.0)  # 8000 bits out at 8000 bit/s
    assert t.seconds(8000.0, alpha=0.1) == pytest.approx(max(1.2, 0.25 + 1.0))
    assert t.seconds(8000.0, efficiency=0.5) == pytest.approx(2.0)


def test_a_fabric_caps_what_all_links_carry_together():
    # 4 hosts, each sending 1000 bytes to the next: per host 1 s at 8000 bit/s
    t = nw.Traffic()
    for r in range(4):
        t.add(r, (r + 1) % 4, 1000, 1)
    free = nw.phase_seconds(t, nw.make_network(4, "8000bit"))
    assert free.seconds == pytest.approx(1.0) and free.fabric_seconds is None
    assert "fabric_seconds" not in free.to_dict()
    # all links at once carry 32000 bits: a 16000 bit/s fabric takes 2 s
    net = nw.make_network(4, "8000bit", fabric=16000)
    capped = nw.phase_seconds(t, net)
    assert capped.seconds == pytest.approx(2.0) and capped.fabric_seconds == pytest.approx(2)
    assert capped.slowest in net.names and capped.to_dict()["limited_by"] == "fabric"
    assert net.to_dict()["fabric_bps"] == 16000
    # one stream alone is not slowed by a fabric faster than its link
    one = nw.Traffic()
    one.add(0, 1, 1000, 1)
    alone = nw.phase_seconds(one, net)
    assert alone.seconds == pytest.approx(1.0) and alone.to_dict()["limited_by"] == "host"
    with pytest.raises(ConfigError, match="--fabric"):
        nw.make_network(4, "8000bit", fabric=0)


def test_messages_inside_one_host_are_not_on_the_network():
    t = nw.Traffic()
    t.message(1, 2, 100, 1, inline=False)  # ranks 1 and 2 share host 1 below
    t.message(2, 3, 100, 1, inline=False)  # header and payload: 2 MPI messages
    net = nw.make_network(4, "8000bit", ranks_per_host=2)  # host1: 0, 1; host2: 2, 3
    cost = nw.phase_seconds(t, net)
    assert cost.hosts["host1"] == nw.HostTraffic(H + 100, 0, 2, 0, 1, 0)
    assert cost.hosts["host2"] == nw.HostTraffic(0, H + 100, 0, 2, 0, 1)
    assert cost.network_bytes == H + 100 and cost.total_bytes == 2 * (H + 100)
    assert cost.seconds == pytest.approx(8 * (H + 100) / 8000)


# --- the shuffle ---------------------------------------------------------------------------

def test_binomial_trees_as_mpich_builds_them():
    assert nw.bcast_edges(3, 0) == [(0, 1), (0, 2)]
    assert nw.bcast_edges(4, 0) == [(0, 1), (0, 2), (2, 3)]
    assert nw.bcast_edges(5, 0) == [(0, 1), (0, 2), (2, 3), (0, 4)]
    assert nw.bcast_edges(4, 1) == [(1, 2), (1, 3), (3, 0)]
    assert nw.bcast_edges(4, 2, "linear") == [(2, 3), (2, 0), (2, 1)]
    for g in range(2, 12):  # the root sends ceil(log2 g) copies, everyone receives one
        edges = nw.bcast_edges(g, 0)
        assert sum(a == 0 for a, _ in edges) == math.ceil(math.log2(g))
        assert sorted(b for _, b in edges) == list(range(1, g))


def test_uc_k3_by_hand():
    # K = 3, m = 6, N = 3: each server stores 2 rows, reduces 1 output, and gets the 2
    # values of each other server's rows by unicast: 2 messages of H + 2 bytes out and in
    p, pl = job("uc", 3, 2, "1/2", m=6, N=3)
    plan = nw.model_plan(pl)
    for mode in nw.MULTICAST_MODES:
        per = nw.shuffle_traffic(plan, 1, mode).by_rank()
        assert per == {r: nw.HostTraffic(2 * (H + 2), 2 * (H + 2), 4, 4, 2, 2)
                       for r in (1, 2, 3)}


def test_cmr_k3_by_hand():
    # K = 3, mu q = 2: batches {0,1}, {0,2}, {1,2} of eta = 2 rows (m = 6), N = 3, w = 1:
    # one group of 3, v = 2 values per V_k, segments of 1; each server multicasts 1 value
    p, pl = job("cmr", 3, 2, "1", m=6, N=3)
    plan = nw.model_plan(pl)
    assert len(plan.multicasts) == 3 and not plan.unicasts
    assert nw.shuffle_traffic(plan, 1, "p2p").by_rank() == {
        r: nw.HostTraffic(2 * (H + 1), 2 * (H + 1), 4, 4, 2, 2) for r in (1, 2, 3)}
    # bcast: no headers, half the MPI messages, the same copies
    assert nw.shuffle_traffic(plan, 1, "bcast").by_rank() == {
        r: nw.HostTraffic(2, 2, 2, 2, 2, 2) for r in (1, 2, 3)}


def test_cmr_k4_group_of_four_forwards_along_the_binomial_tree():
    # K = 4, mu q = 3: one group of all 4 servers; each sends one multicast of
    # L = ceil(v / 3) values, v = eta w = 3 * 1; the tree root sends 2 copies, one member
    # forwards: every server sends 3 payloads (2 as root, 1 forwarding) and receives 3
    p, pl = job("cmr", 4, 4, "3/4", m=12, N=4, field="float64")
    plan = nw.model_plan(pl)
    assert {len(mc.receivers) for mc in plan.multicasts} == {3}
    L = plan.multicasts[0].length
    tree = nw.shuffle_traffic(plan, 8, "bcast")
    assert tree.by_rank() == {r: nw.HostTraffic(3 * 8 * L, 3 * 8 * L, 3, 3, 3, 3)
                              for r in (1, 2, 3, 4)}
    # server 0's multicast: 0 -> 1, 0 -> 2 and server 2 forwards to 3 (relative rank 2);
    # server 2's: 2 -> 3, 2 -> 0 and 0 forwards to 1.  So 2 -> 3 carries two payloads
    # (rank = server + 1) and 3 -> 2 none: server 3 reaches 2 only through 1 (root 3)
    assert tree.edges[(3, 4)] == [2 * 8 * L, 2]
    assert (4, 3) not in tree.edges and tree.edges[(2, 3)] == [2 * 8 * L, 2]
    assert nw.shuffle_traffic(plan, 8, "bcast", "linear").by_rank() == {
        r: nw.HostTraffic(3 * 8 * L, 3 * 8 * L, 3, 3, 3, 3) for r in (1, 2, 3, 4)}


@pytest.mark.parametrize("scheme,K,q,mu,m,N,T", [
    ("uc", 4, 2, "1/2", 12, 4, 1),
    ("cmr", 4, 2, "1", 12, 4, 1),
    ("cmr", 6, 4, "1/2", 60, 12, 1),
    ("unified", 6, 4, "1/2", 20, 12, 1),  # the B.3 example: L = 7/20
    ("unified", 5, 4, "3/4", 16, 8, 1),  # groups of 4: the binomial tree forwards
    ("sc", 4, 2, "1/2", 8, 4, 1),
    ("bdc", 6, 4, "1/2", 20, 12, 2),
    ("lt", 6, 4, "1/2", 20, 12, 1),
])
@pytest.mark.parametrize("mode", nw.MULTICAST_MODES)
def test_per_rank_bytes_match_an_independent_count_over_the_plan(scheme, K, q, mu, m, N, T,
                                                                 mode):
    p, pl = job(scheme, K, q, mu, m, N, T, field="gf2^16")
    plan = nw.model_plan(pl)
    assert nw.shuffle_traffic(plan, 2, mode).by_rank() == independent_count(plan, 2, mode)
    # one host per rank: the phase is the slowest rank's
    net = nw.make_network(K + 1, "1mbit", alpha=1e-4)
    want = max(t.seconds(1e6, 1e-4) for t in independent_count(plan, 2, mode).values())
    assert nw.coded_network(pl, net, mode).phases["shuffle"].seconds == pytest.approx(want)


def test_every_tree_sends_one_copy_per_receiver():
    # a broadcast tree delivers each multicast once to every receiver: the bytes on the
    # wire are p2p's without the headers, only the senders differ
    p, pl = job("unified", 5, 4, "3/4", 16, 8)
    plan = nw.model_plan(pl)
    p2p = nw.shuffle_traffic(plan, 1, "p2p")
    tree = nw.shuffle_traffic(plan, 1, "bcast")
    copies = sum(len(mc.receivers) for mc in plan.multicasts)
    assert max(len(mc.group) for mc in plan.multicasts) == 4  # a tree that forwards
    assert p2p.total_bytes - tree.total_bytes == H * copies
    assert tree.total_bytes == sum(len(mc.receivers) * mc.length for mc in plan.multicasts) \
        + sum(H + u.size for u in plan.unicasts)
    assert p2p.total_messages - tree.total_messages == copies


@pytest.mark.parametrize("K,q,mu", [(4, 2, "1"), (6, 4, "1/2"), (6, 3, "1")])
def test_cmr_over_uc_in_p2p_is_mu_q_times_the_load_ratio(K, q, mu):
    # p2p sends a level-p multicast to its p receivers: the payload bytes are p times the
    # values counted once, so cmr/uc = p L_cmr / L_uc = (1 - p/K) / (1 - 1/K), while the
    # plain load ratio (a broadcast medium) is L_cmr / L_uc
    m = K * math.comb(K, int(Fraction(mu) * q)) * 2
    N = 2 * K
    _, pl_c = job("cmr", K, q, mu, m, N)
    _, pl_u = job("uc", K, q, mu, m, N)
    c, u = nw.model_plan(pl_c), nw.model_plan(pl_u)
    p = pl_c.params.replication
    assert c.padding == 0
    tc = nw.shuffle_traffic(c, 1, "p2p").total_bytes - H * p * len(c.multicasts)
    tu = nw.shuffle_traffic(u, 1, "p2p").total_bytes - H * len(u.unicasts)
    assert Fraction(tc, tu) == p * c.load / u.load == Fraction(K - p, K - 1)
    net = nw.make_network(K + 1, "100mbit")
    rep = nw.network_report(pl_c.params, net, "p2p")
    assert rep.over_uc.load == pytest.approx(float(c.load / u.load))
    want = (tc + H * p * len(c.multicasts)) / (tu + H * len(u.unicasts))
    assert rep.over_uc.shuffle_bytes == pytest.approx(want)
    # the typed report gives the model's JSON object
    d = rep.to_dict()
    assert d["over_uc"]["load"] == rep.over_uc.load and d["seconds"]["total"] == rep.coded.seconds
    assert list(d)[:2] == ["hosts", "alpha_s"] and list(d)[-1] == "over_uc"


def test_gather_sends_every_output_to_the_master_and_distribution_nothing():
    p, pl = job("unified", 6, 4, "1/2", 20, 12)
    net = nw.make_network(7, "1mbit")
    cn = nw.coded_network(pl, net)
    g = cn.phases["gather"]
    w = 12 // 4
    # gf2^8, 60 bytes each: inline after the header, padded to 64, one MPI message
    assert g.hosts["master"] == nw.HostTraffic(0, 4 * (H + 64), 0, 4, 0, 4)
    assert 20 * w == 60 and g.seconds == pytest.approx(8 * 4 * (H + 64) / 1e6)
    assert cn.phases["distribution"].seconds == 0 and not cn.phases["distribution"].hosts


def test_sizes_the_runtime_cannot_run_are_refused_with_the_rule():
    mp = model_params("uc", 9, 6, "1/3", m=6000, N=6000)
    with pytest.raises(ConfigError, match="network model counts the messages"):
        nw.runnable_params(mp.params)


def test_calibration_network_keys_are_optional_and_checked():
    assert nw.link_calibration({}) == (None, None)
    assert nw.link_calibration({"network": {"alpha_s": 1e-4, "efficiency": 0.9}}) == \
        (1e-4, 0.9)
    with pytest.raises(ConfigError, match="network.efficiency"):
        nw.link_calibration({"network": {"efficiency": 2}})


def test_calibration_by_rate_picks_the_pair_measured_at_the_rate():
    doc = {"network": {"alpha_s": 1e-4, "efficiency": 0.9, "by_rate": {
        "100mbit": {"alpha_s": 1e-4, "efficiency": 0.9},
        "1gbit": {"alpha_s": 3e-5, "efficiency": 0.4}}}}
    assert nw.link_calibration(doc) == (1e-4, 0.9)  # no rate: the top-level pair
    assert nw.link_calibration(doc, rate=10**9) == (3e-5, 0.4)
    assert nw.link_calibration(doc, rate=1e8) == (1e-4, 0.9)
    assert nw.link_calibration(doc, rate=10**7) == (1e-4, 0.9)  # not measured: top level
    with pytest.raises(ConfigError, match="network.efficiency"):
        nw.link_calibration({"network": {"by_rate": {"1gbit": {"efficiency": 0}}}}, 1e9)
    with pytest.raises(ConfigError, match="network.by_rate"):
        nw.link_calibration({"network": {"by_rate": [1]}})
    assert nw.link_fabric(doc) is None
    doc["network"]["fabric_bps"] = 5e8
    doc["network"]["by_rate"]["1gbit"]["fabric_bps"] = 2e9
    assert nw.link_fabric(doc) == 5e8 and nw.link_fabric(doc, rate=10**9) == 2e9
    with pytest.raises(ConfigError, match="network.fabric_bps"):
        nw.link_fabric({"network": {"fabric_bps": -1}})


def test_model_reads_the_calibration_of_its_rate(capsys, tmp_path):
    from mpi_coded.analysis import calibration
    from mpi_coded.codes.work import DEFAULT_SECONDS

    path = tmp_path / "calib.json"
    calibration.write(dict(DEFAULT_SECONDS), path, network={"alpha_s": 2e-4,
                                                            "efficiency": 0.8})
    doc = json.loads(path.read_text())
    doc["network"]["by_rate"] = {"1gbit": {"alpha_s": 1e-5, "efficiency": 0.5}}
    path.write_text(json.dumps(doc))
    doc["network"]["by_rate"]["1gbit"]["fabric_bps"] = 3e9
    path.write_text(json.dumps(doc))
    for rate, want in (("1gbit", (1e-5, 0.5)), ("100mbit", (2e-4, 0.8))):
        assert cli.main(BASE + ["--rate", rate, "--calibration", str(path), "--json"]) == 0
        net = json.loads(capsys.readouterr().out)["network"]
        assert (net["alpha_s"], net["efficiency"]) == want
        assert net.get("fabric_bps") == (3e9 if rate == "1gbit" else None)


# --- the elastic job -----------------------------------------------------------------------

def test_elastic_coded_step_messages():
    sp = {i + 1: Fraction(s) for i, s in enumerate(["1", "1", "1.5", "1.5", "2", "2"])}
    plan = make_plan("heterogeneous", sp, 3, [1, 2, 3, 5, 6], rows=420)
    t = nw.elastic_step_traffic(plan, cols=200, itemsize=8, idle=[4])
    per = t.by_rank()
    counts = plan.row_counts()
    ranges = plan.ranges_by_machine()
    bundled = 0
    for n in plan.available:
        k = len(ranges[n])
        assert per[n].recv_bytes == (H + 16 * k) + (H + 200 * 8)
        assert per[n].sent_bytes == (H + 8 * counts[n]) + (H + 8 * nw.META_WORDS)
        # every payload fits inline (at most 4032 bytes); TASK and VECTOR, RESULT and META
        # travel as one MPI message (a bundle) when both fit 4096 bytes with their headers
        assert max(16 * k, 200 * 8, 8 * counts[n]) <= nw.INLINE_BYTES
        assert per[n].recv_messages == 1 + (per[n].recv_bytes > H + nw.INLINE_BYTES)
        assert per[n].sent_messages == 1 + (per[n].sent_bytes > H + nw.INLINE_BYTES)
        assert per[n].sent_copies == per[n].recv_copies == 2
        bundled += per[n].sent_messages == 1
    assert bundled >= 1
    assert per[4] == nw.HostTraffic(0, H, 0, 1)
    setup = nw.elastic_setup_traffic(range(1, 7), [(420, 200)], 8).by_rank()
    assert setup[0].sent_bytes == 6 * (H + 420 * 200 * 8)


def test_uncoded_moves_carry_the_bytes_the_baseline_reports():
    sp = {i + 1: Fraction(s) for i, s in enumerate(["1", "1", "1.5", "1.5", "2", "2"])}
    a = uncoded_split(sp, range(1, 7), 1260)
    b = uncoded_split(sp, [1, 2, 3, 5, 6], 1260)
    mv = moves(a, b)
    t = nw.uncoded_move_traffic(b, mv, 200, 8, idle=[4])
    rows_bytes = sum(e[0] for (s, d), e in t.edges.items()) - sum(
        H + (1 + sum(1 for m in mv if n in (m.src, m.dst))) * 32 for n in b) - H - H * len(b) \
        - H * len(mv)
    assert rows_bytes == bytes_moved(mv, 200, 8)
    net = nw.make_network(7, "100mbit", rank_name=nw.elastic_rank_name)
    cost = nw.phase_seconds(t, net)
    assert cost.seconds > 0 and cost.slowest is not None
    step = nw.uncoded_step_traffic(b, 200, 8).by_rank()
    # results and statistics, one bundle each (at most 4096 bytes with their headers)
    assert all(2 * H + 8 * (c - a) + 8 * nw.META_WORDS <= H + nw.INLINE_BYTES
               for a, c in b.values())
    assert step[0].recv_messages == len(b) and step[0].recv_copies == 2 * len(b)
    big = nw.uncoded_step_traffic({1: (0, 500)}, 200, 8).by_rank()  # 4000 B: two messages
    assert big[0].recv_messages == 2 and big[1].recv_messages == 1  # TASK and VECTOR: one


# --- the command line ----------------------------------------------------------------------

BASE = ["model", "--scheme", "cmr", "--K", "6", "--q", "4", "--mu", "1/2", "--m", "60",
        "--N", "12"]


def test_model_rate_json(capsys):
    assert cli.main(BASE + ["--rate", "100mbit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    net = out["network"]
    assert set(net["seconds"]) == {"distribution", "shuffle", "gather", "total"}
    assert net["hosts"]["server0"]["rate_bps"] == 10**8 and net["multicast"] == "p2p"
    assert set(net["phases"]["shuffle"]["hosts"]) == {f"server{s}" for s in range(6)}
    assert net["over_uc"]["load"] == pytest.approx(0.4)
    assert cli.main(BASE + ["--rate", "1gbit", "--multicast", "bcast", "--alpha", "1e-4",
                            "--rate-of", "master=10mbit", "--json"]) == 0
    net = json.loads(capsys.readouterr().out)["network"]
    assert net["bcast_tree"] == "binomial" and net["alpha_s"] == 1e-4
    assert net["phases"]["gather"]["slowest_host"] == "master"


def test_model_rate_text(capsys):
    assert cli.main(BASE + ["--rate", "100mbit"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].startswith("  network (100mbit, p2p, alpha 0 s, efficiency 1")
    assert out[-1].startswith("  shuffle over uc: seconds ")


def test_model_without_rate_is_unchanged(capsys):
    assert cli.main(BASE + ["--json"]) == 0
    assert "network" not in json.loads(capsys.readouterr().out)


def test_model_reads_alpha_and_efficiency_from_the_calibration(capsys, tmp_path):
    from mpi_coded.analysis import calibration
    from mpi_coded.codes.work import DEFAULT_SECONDS

    path = tmp_path / "calib.json"
    calibration.write(dict(DEFAULT_SECONDS), path,
                      network={"alpha_s": 2e-4, "efficiency": 0.8})
    assert cli.main(BASE + ["--rate", "1gbit", "--calibration", str(path), "--json"]) == 0
    net = json.loads(capsys.readouterr().out)["network"]
    assert (net["alpha_s"], net["efficiency"]) == (2e-4, 0.8)
    assert cli.main(BASE + ["--rate", "1gbit", "--calibration", str(path), "--alpha", "0",
                            "--json"]) == 0  # the command line wins
    assert json.loads(capsys.readouterr().out)["network"]["alpha_s"] == 0


@pytest.mark.parametrize("argv,needle", [
    (["--rate", "fast"], "--rate: must be a rate > 0"),
    (["--rate", "0"], "--rate: must be a rate > 0"),
    (["--rate=-1gbit"], "--rate: must be a rate > 0"),
    (["--rate", "1gbit", "--rate-of", "server6=1gbit"], "--rate-of: must name a host"),
    (["--rate", "1gbit", "--rate-of", "master"], "--rate-of: must be HOST=RATE"),
    (["--rate", "1gbit", "--rate-of", "master=slow"], "--rate-of: must be a rate > 0"),
    (["--rate-of", "master=1gbit"], "--rate-of: needs --rate"),
    (["--multicast", "bcast"], "--multicast: needs --rate"),
    (["--rate", "1gbit", "--multicast", "tree"], "--multicast: must be one of p2p, bcast"),
    (["--rate", "1gbit", "--alpha", "x"], "--alpha: must be a number"),
    (["--rate", "1gbit", "--alpha", "-1"], "--alpha: must be a number of seconds >= 0"),
    (["--rate", "1gbit", "--finishing-order", "0,1"], "--finishing-order: needs at least 6"),
])
def test_model_rate_bad_input_is_one_line(capsys, argv, needle):
    assert cli.main(BASE + argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


PLAN = ["plan", "cec", "--speeds", "1,1,1.5,1.5,2,2", "--L", "3", "--available", "1,2,3,5,6",
        "--rows", "420"]


def test_plan_cec_rate_prices_the_coded_step_and_the_uncoded_moves(capsys):
    assert cli.main(PLAN + ["--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "network" not in plain
    assert cli.main(PLAN + ["--rate", "100mbit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    net = out.pop("network")
    assert out == plain
    # the coded setup: 6 blocks of 420 x 200 float64 from the master's link
    assert net["seconds"]["coded_setup"] == pytest.approx(8 * 6 * (H + 420 * 200 * 8) / 1e8)
    sp = {i + 1: Fraction(s) for i, s in enumerate(["1", "1", "1.5", "1.5", "2", "2"])}
    mv = moves(uncoded_split(sp, range(1, 7), 1260), uncoded_split(sp, [1, 2, 3, 5, 6], 1260))
    assert net["uncoded"]["bytes_moved"] == bytes_moved(mv, 200, 8)
    assert net["uncoded"]["moves"]["hosts"]["machine4"]["recv_messages"] == 1  # IDLE
    assert cli.main(PLAN + ["--rate", "1gbit"]) == 0
    assert "uncoded  setup" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["--rate", "0"], "--rate: must be a rate > 0"),
    (["--rate", "1gbit", "--rate-of", "machine7=1gbit"], "--rate-of: must name a host"),
    (["--cols", "10"], "--cols: needs --rate"),
    (["--rate", "1gbit", "--field", "gf2^9"], "--field: must be one of"),
])
def test_plan_cec_rate_bad_input_is_one_line(capsys, argv, needle):
    assert cli.main(PLAN + argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_merged_traffic_keeps_bytes_messages_and_copies():
    a, b = nw.Traffic(), nw.Traffic()
    a.message(1, 2, 10, 1)  # header + inline payload (padded to 16): 1 message, 1 copy
    a.message(1, 2, 10, 1, inline=False)  # header + payload: 2 messages, 1 copy
    b.message(1, 2, None, 1)  # a header alone: 1 message, no copy
    b.add(2, 3, 5, 1, copies=1)  # a broadcast edge
    m = a.merged(b)
    assert m.edges[(1, 2)] == [3 * H + 16 + 10, 4] and m.copies[(1, 2)] == 2
    assert m.edges[(2, 3)] == [5, 1] and m.copies[(2, 3)] == 1
    per = m.by_rank()
    assert (per[1].sent_messages, per[1].sent_copies) == (4, 2)
    assert (per[2].recv_copies, per[2].sent_copies, per[3].recv_copies) == (2, 1, 1)
