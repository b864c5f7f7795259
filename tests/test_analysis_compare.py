"""mpi_coded.analysis.compare: result lines joined with the models, for every registered
scheme (the scheme objects decide; nothing here names a scheme to branch on)."""

from __future__ import annotations

import json

import pytest

from mpi_coded.analysis import calibration
from mpi_coded.analysis import compare as cmp
from mpi_coded.analysis import network as nm
from mpi_coded.bench.network_bench import coded_params
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import SCHEMES, get
from mpi_coded.results import CodedConfig, CodedRun

K, Q, MU = 6, 4, "1/2"


def run_line(scheme: str, order: list[int], rep: int = 0, shuffle_s: float = 0.5) -> dict:
    T = 2 if get(scheme).partitioned else 1
    p = coded_params(scheme, K, Q, MU, 120, 8, 48, T, "gf2^8")
    pl = build_placement(p)
    return {"kind": "run", "job": "coded", "scheme": scheme, "K": K, "q": Q, "mu": MU,
            "rows_per_batch": p.rows_per_batch, "n": p.n, "N": p.N, "T": p.T,
            "field": "gf2^8", "m": p.m, "rep": rep, "Q": list(map_end(pl, order).Q),
            "finishing_order": order, "shuffle_s": shuffle_s, "reduce_s": 0.2,
            "encode_s": 0.01, "map_s": 0.1, "total_s": 1.0, "bytes_on_wire": 100,
            "load_plan_exact": str(nm.model_plan(pl, order).load), "verified": True,
            "server_shuffle_s": {"0": shuffle_s / 2}, "server_encode_s": {"0": 0.01},
            "server_decode_s": {"1": 0.02}}


ORDERS = [[0, 1, 2, 3, 4, 5], [5, 3, 1, 0, 2, 4], [2, 4, 0, 5, 1, 3]]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_registered_scheme_is_compared_with_its_plan(scheme):
    net = nm.make_network(K + 1, "100mbit", alpha=1e-4, efficiency=0.9, fabric=3e8)
    lines = [run_line(scheme, o, r, 0.4 + 0.1 * r) for r, o in enumerate(ORDERS)]
    models = [cmp.coded_model(x, "p2p", net) for x in lines]
    for x, m in zip(lines, models):
        cn = nm.coded_network(build_placement(cmp.run_params(x)), net, "p2p",
                              order=x["finishing_order"])
        assert m.shuffle_s == m.shuffle_link_s == cn.phases["shuffle"].seconds
        assert m.gather_s == cn.phases["gather"].seconds and m.load == float(cn.plan.load)
    summ = cmp.summarise_coded(lines, "p2p", net)
    assert summ.reps == 3 and summ.shuffle_s == 0.5 and summ.verified
    assert summ.shuffle_model_s == cmp.median([m.shuffle_s for m in models])
    assert summ.transfer_s == pytest.approx(0.25)
    assert json.loads(json.dumps(summ.to_dict()))["shuffle_iqr"] == [0.45, 0.55]
    # the map replays the draws through the scheme's own map-end rule
    t = cmp.map_model(lines[0], 0.001, "shiftexp", 0)
    point = cmp.tradeoff_point(lines, net, 0.001, 0)
    assert t > 0 and point.model_phases.map > 0 and point.q == Q
    assert point.phases.shuffle == 0.5
    assert point.model_phases.reduce == pytest.approx(
        0.02 + cmp.median([m.gather_s for m in models]))


def test_a_run_line_must_match_the_plan_of_its_order():
    line = run_line(SCHEMES[-1], ORDERS[1])
    net = nm.make_network(K + 1, "100mbit")
    bad = {**line, "Q": [q + 1 for q in line["Q"]]}
    with pytest.raises(ValueError, match="finishing order"):
        cmp.coded_model(bad, "p2p", net)
    # typed views and plain lines are the same input
    view = CodedRun.from_record(line)
    assert cmp.coded_model(view, "p2p", net) == cmp.coded_model(line, "p2p", net)
    assert cmp.as_run(view) is view


def test_job_seconds_is_the_calibrated_model_of_the_config_line():
    p = coded_params(SCHEMES[0], K, Q, MU, 120, 8, 48, 1, "gf2^8")
    cfg = {"kind": "config", "job": "coded", "scheme": p.scheme, "K": K, "q": Q, "mu": MU,
           "rows_per_batch": p.rows_per_batch, "n": p.n, "N": p.N, "T": 1, "field": "gf2^8"}
    got = cmp.job_seconds(cfg, None, cores=2)
    want = calibration.predict_seconds(p, None, cores=2)
    assert got == want and got.cores == 2
    assert cmp.job_seconds(CodedConfig.from_record(cfg), None, cores=2) == want
    d = got.to_dict()
    assert list(d) == ["per_server", "wall", "encoder", "decoder", "cores", "field"]
    assert list(d["per_server"]) == ["encode", "map", "reduce"]
    assert d["wall"]["total"] == pytest.approx(sum(d["wall"][k] for k in ("encode", "map",
                                                                           "reduce")))


def test_small_statistics():
    assert cmp.iqr([]) == [] and cmp.iqr([2.0]) == [2.0, 2.0]
    assert cmp.iqr([1.0, 2.0, 3.0]) == [1.5, 2.5]
    assert cmp.ratio(1.0, 0) is None and cmp.ratio(None, 2.0) is None
    assert cmp.ratio(1.0, 4.0) == 0.25
