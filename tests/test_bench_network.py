"""scripts/bench_network.py and the package modules it is a command line over
(:mod:`mpi_coded.bench.network_bench`, :mod:`mpi_coded.analysis.compare`,
:mod:`mpi_coded.cluster.bench`): model values from result lines, the link fit, the
calibration file, the targets, and a short smoke run of ``--quick`` on an emulated cluster
(root; skipped elsewhere with the reason, failing under ``CI=true``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT, load_script, run_cmd
from mpi_coded.analysis import compare as cmp
from mpi_coded.analysis import network as nm
from mpi_coded.analysis.shuffle_fit import fit_shuffle
from mpi_coded.bench import network_bench as nb
from mpi_coded.cluster import bench as cb
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.results import ElasticConfig

SCRIPT = ROOT / "scripts" / "bench_network.py"


def load_bench() -> ModuleType:
    return load_script(SCRIPT, "bench_network_script")


bn = load_bench()


def run_line(scheme: str, order: list[int], rep: int = 0, shuffle_s: float = 0.5,
             K: int = 9, q: int = 6, mu: str = "1/3", m: int = 720, N: int = 540,
             T: int = 1) -> dict:
    """A coded run line as the runtime writes it (the fields the bench reads)."""
    p = nb.coded_params(scheme, K, q, mu, m, 20, N, T, "float64")
    pl = build_placement(p)
    end = map_end(pl, order)
    plan = nm.model_plan(pl, order)
    return {"kind": "run", "scheme": scheme, "K": K, "q": q, "mu": mu,
            "rows_per_batch": p.rows_per_batch, "n": p.n, "N": p.N, "T": p.T,
            "field": "float64", "m": p.m, "rep": rep, "Q": list(end.Q),
            "finishing_order": order, "shuffle_s": shuffle_s, "reduce_s": 1.0,
            "encode_s": 0.01, "map_s": 0.2, "total_s": 1.7, "bytes_on_wire": 1000,
            "load_plan_exact": str(plan.load), "verified": True,
            "server_encode_s": {"0": 0.01}, "server_decode_s": {"0": 0.05}}


def test_the_sizes_are_runnable_and_the_cluster_names_ours():
    for sz in (bn.FULL, bn.QUICK):
        for scheme in sz.schemes:
            p = nb.coded_params(scheme, sz.K, sz.q, sz.mu, sz.m, sz.n, sz.N,
                                sz.bdc_T if scheme == "bdc" else 1, sz.field)
            assert p.m == sz.m, (scheme, p.m)
        assert set(sz.el_traces) <= set(bn.TRACES)
    # every feasible q at K = 9, mu = 1/3 (mu q integer), all at one m
    assert nb.feasible_qs(9, "1/3", 504, 20, 2700, "float64") == [3, 6, 9]
    assert nb.tradeoff_m(9, "1/3", 504, 20, 2700, "float64", [3, 6, 9]) == 504
    name = cb.cluster_name("a")
    assert name.startswith("t19c") and len(name) == 6


def test_reps_below_one_is_refused_before_any_cluster(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:  # --replay: a regression fails fast, no cluster
        bn.main(["--reps", "0", "--replay", str(tmp_path)])
    assert exc.value.code == 2
    assert "--reps: must be at least 1, got 0" in capsys.readouterr().err
    assert bn.FULL.reps == 3 and not bn.FULL.quick and bn.QUICK.quick
    # a quick run with other repetitions is still reported as quick, with its repetitions
    got = nb.assemble(replace(bn.QUICK, reps=2), {}, {}, None, {}, None).to_dict()
    assert got["quick"] is True and got["sizes"]["reps"] == 2
    assert nb.assemble(replace(bn.FULL, reps=5), {}, {}, None, {}, None).quick is False


def test_the_shuffle_model_is_the_plan_of_the_runs_finishing_order():
    order = [3, 1, 2, 5, 0, 6, 4, 7, 8]
    line = run_line("unified", order)
    net = nm.make_network(10, "100mbit", efficiency=0.9, alpha=1e-4)
    got = cmp.coded_model(line, "p2p", net)
    p = cmp.run_params(line)
    want = nm.coded_network(build_placement(p), net, "p2p", order=order)
    assert got.shuffle_s == want.phases["shuffle"].seconds
    assert got.gather_s == want.phases["gather"].seconds
    # another order, another plan (the default order's would be wrong here)
    default = nm.coded_network(build_placement(p), net, "p2p")
    assert list(default.plan.Q) != line["Q"]
    # medians over repetitions: measured over model
    lines = [run_line("unified", order, rep=r, shuffle_s=s) for r, s in
             enumerate((0.4, 0.6, 0.5))]
    raw = nm.make_network(10, "100mbit")
    summ = cmp.summarise_coded(lines, "p2p", net, raw)
    assert summ.shuffle_s == 0.5 and summ.shuffle_iqr == [0.45, 0.55]
    assert summ.shuffle_measured_over_model == pytest.approx(0.5 / got.shuffle_s)
    assert summ.shuffle_model_raw_s is not None
    assert summ.shuffle_model_raw_s < summ.shuffle_model_s  # e = 1, alpha = 0
    assert summ.verified
    # the JSON object: the raw model is there, no prior fit, no same_as
    d = summ.to_dict()
    assert "shuffle_model_raw_s" in d and "shuffle_prior_model_s" not in d
    assert "same_as" not in d and list(d)[:3] == ["reps", "training", "shuffle_s"]


def test_the_link_fit_recovers_alpha_and_efficiency():
    rate = 1e8
    pts = [(b, 2 * 2e-4 + 8 * b / (0.9 * rate)) for b in (1 << 20, 4 << 20, 8 << 20)]
    fit = cb.fit_link(pts, rate)
    assert fit["alpha_s"] == pytest.approx(2e-4)
    assert fit["efficiency"] == pytest.approx(0.9)


def test_the_calibration_file_gains_a_network_object_the_model_reads(tmp_path):
    path = tmp_path / "calib.json"
    path.write_text(json.dumps({"version": 4, "seconds_per_op": {"x": 1.0}}))
    cal = {"100mbit": {"alpha_s": 1e-4, "efficiency": 0.8, "fabric_bps": 6e8,
                       "exchange_efficiency": 0.7, "rate": "100mbit"},
           "1gbit": {"alpha_s": 5e-5, "efficiency": 0.3, "fabric_bps": 2e9,
                     "exchange_efficiency": 0.25, "rate": "1gbit"}}
    nb.write_link_calibration(path, nb.link_section(cal))
    doc = json.loads(path.read_text())
    assert doc["seconds_per_op"] == {"x": 1.0}  # the rest is kept
    assert nm.link_calibration(doc) == (1e-4, 0.8)
    assert doc["network"]["by_rate"]["1gbit"]["efficiency"] == 0.3
    assert nm.link_calibration(doc, rate=1e9) == (5e-5, 0.3)
    assert nm.link_fabric(doc) == 6e8 and nm.link_fabric(doc, rate=1e9) == 2e9


def test_the_map_model_replays_the_jobs_straggler_draws():
    line = run_line("unified", list(range(9)))
    p = cmp.run_params(line)
    pl = build_placement(p)
    job = CodedJob(p, straggler="shiftexp", t_row=0.002, seed=0)
    targets = sorted(job.map_target(s, len(pl.stored_rows(s)), 0) for s in range(9))
    # unified waits for q = 6 servers (any 6 cover the rows of an MDS code)
    assert cmp.map_model(line, 0.002, "shiftexp", 0) == pytest.approx(targets[5])
    point = cmp.tradeoff_point([line], nm.make_network(10, "100mbit"), 0.002, 0)
    assert point.model_phases.map == pytest.approx(targets[5])
    assert point.model_phases.reduce == pytest.approx(
        0.05 + cmp.coded_model(line, "p2p", nm.make_network(10, "100mbit")).gather_s)
    assert point.to_dict()["model_phases"] == point.model_phases.to_dict()


def test_the_elastic_model_prices_the_moves_the_baseline_makes():
    from mpi_coded.cec.uncoded import bytes_moved, moves, uncoded_split

    speeds = [1, 1, 1.5, 1.5, 2, 2]
    cfg = ElasticConfig.from_record({
        "kind": "config", "job": "cec", "N": 6, "L": 3, "speeds": speeds, "rows": 1260,
        "cols": 100, "field": "float64", "policy": "uncoded", "t_row": 0.0})
    sets = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]
    steps = [{"kind": "step", "step": i, "policy": "uncoded", "available": a,
              "predicted_s": 0.1, "wall_s": 0.2, "verified": True, "move_s": 0.01,
              "bytes_moved": 0} for i, a in enumerate(sets)]
    net = nm.make_network(7, "100mbit", rank_name=nm.elastic_rank_name)
    unc = cmp.elastic_model(steps, cfg, "uncoded", net)
    sp = {i + 1: Fraction(str(s)) for i, s in enumerate(speeds)}
    want, prev = 0, uncoded_split(sp, sets[0], 1260)
    for a in sets:
        now = uncoded_split(sp, a, 1260)
        want += bytes_moved(moves(prev, now), 100, 8)
        prev = now
    assert unc.bytes_moved == want > 0
    assert unc.move_s > 0 and unc.compute_s == pytest.approx(0.4)
    assert unc.total_s == pytest.approx(sum(unc.step_s))
    cod = cmp.elastic_model(steps, cfg, "heterogeneous", net)
    assert cod.move_s == 0 and cod.bytes_moved == 0
    assert cod.total_s == pytest.approx(0.4 + cod.network_s)
    # a slower link only makes it longer
    slow = nm.make_network(7, "10mbit", rank_name=nm.elastic_rank_name)
    assert cmp.elastic_model(steps, cfg, "uncoded", slow).move_s > unc.move_s
    meas = cmp.elastic_measured(steps)
    assert meas.total_s == pytest.approx(0.8) and meas.verified
    row = cmp.ElasticComparison(cmp.ElasticCase(meas, cod), cmp.ElasticCase(meas, unc))
    assert row.uncoded_over_coded["measured"] == 1.0
    assert list(row.to_dict()) == ["coded", "uncoded", "uncoded_over_coded"]


def summary(**kw) -> cmp.ShuffleSummary:
    """A coded case with the fields the targets read (the others arbitrary)."""
    base = {"reps": 1, "training": False, "shuffle_s": 1.0, "shuffle_iqr": [1.0, 1.0],
            "shuffle_model_s": 1.0, "shuffle_measured_over_model": 1.0,
            "shuffle_link_model_s": 1.0, "shuffle_measured_over_link_model": 1.0,
            "plan_s": 0.0, "groups_s": 0.0, "transfer_s": 1.0, "transfer_iqr": [1.0, 1.0],
            "transfer_measured_over_model": 1.0, "reduce_s": 0.1, "gather_model_s": 0.1,
            "total_s": 2.0, "bytes_on_wire": 10, "model_bytes": 10, "load": 1.0,
            "slowest_host_model": "server0", "verified": True}
    return cmp.ShuffleSummary(**{**base, **kw})


def elastic_row(coded_s: float, uncoded_s: float, coded_model: float, uncoded_model: float
                ) -> cmp.ElasticComparison:
    def case(meas: float, model: float) -> cmp.ElasticCase:
        return cmp.ElasticCase(cmp.ElasticMeasured(meas, 0.0, 0, 3, True),
                               cmp.ElasticModel(model, 0.0, 0.0, 0, model, [model]))

    return cmp.ElasticComparison(case(coded_s, coded_model), case(uncoded_s, uncoded_model))


def test_the_targets_follow_the_issues_bands():
    def case(mom):
        return summary(shuffle_measured_over_model=mom)

    coded = {"100mbit": {"p2p": {"uc": case(1.1), "cmr": summary(
                 shuffle_measured_over_model=0.8, shuffle_s=0.5, shuffle_model_s=0.52,
                 load=0.4, model_bytes=8)}},
             "1gbit": {"p2p": {"uc": case(1.25)}}}
    row = elastic_row(1.0, 1.5, 1.0, 1.4)
    out = nb.assemble(bn.FULL, {}, coded, None, {"100mbit": {"seed": row}}, None).to_dict()
    t = out["targets"]
    assert t["shuffle 100mbit/p2p/uc in [0.85, 1.15]"] is True
    assert t["shuffle 100mbit/p2p/cmr in [0.85, 1.15]"] is False
    assert t["shuffle 1gbit/p2p/uc in [0.7, 1.3]"] is True
    c = out["cmr_over_uc_shuffle"]["100mbit/p2p"]
    assert c["measured"] == 0.5 and c["model"] == 0.52 and c["load_ratio"] == 0.4
    assert c["bytes_ratio"] == 0.8
    assert t["cmr_over_uc 100mbit/p2p within 10%"] is True
    assert t["elastic seed 100mbit uncoded_over_coded > 1"] is True
    assert t["elastic seed 100mbit within 20% of model"] is True
    assert out["all_verified"] is True and out["targets_total"] == len(t)


# --- the smoke run -------------------------------------------------------------------------

@pytest.mark.mpi
@pytest.mark.multihost
@pytest.mark.timeout(400)
def test_quick_bench_runs_on_an_emulated_cluster_and_leaves_nothing_behind():
    from test_multihost import _need_namespaces

    _need_namespaces()
    out = Path(tempfile.mkdtemp(prefix="t19c-test-"))
    try:
        r = run_cmd([sys.executable, str(SCRIPT), "--quick", "--out", str(out),
                     "--no-write-calibration"], timeout=360)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        res = json.loads(r.stdout.strip().splitlines()[-1])
        assert res["bench"] == "network" and res["quick"] and res["all_verified"]
        cal = res["calibration"]["100mbit"]
        assert 0 < cal["efficiency"] <= 1 and cal["alpha_s"] >= 0
        assert set(res["shuffle_measured_over_model"]) == {"100mbit/p2p/uc",
                                                           "100mbit/p2p/cmr"}
        assert all(v > 0 for v in res["shuffle_measured_over_model"].values())
        # the jobs ran on the bench's network: deep queues, TCP Reno (their config lines)
        cfg = json.loads((out / "coded-100mbit-uc-p2p.jsonl").read_text().splitlines()[0])
        assert cfg["kind"] == "config" and cfg["network"]["tcp"] == "reno"
        assert cfg["network"]["queue_bytes"] == 64 * 2**20
        el = res["elastic"]["100mbit"]["small"]
        assert el["uncoded"]["measured"]["bytes_moved"] == el["uncoded"]["model"]["bytes_moved"]
        assert el["uncoded"]["measured"]["bytes_moved"] > 0
        # the raw lines are kept and --replay recomputes the same object without MPI
        again = run_cmd([sys.executable, str(SCRIPT), "--quick", "--replay", str(out)], 120)
        assert again.returncode == 0, again.stderr[-2000:]
        res2 = json.loads(again.stdout.strip().splitlines()[-1])
        res.pop("wall_s")
        res2.pop("wall_s")
        assert res2 == res
    finally:
        shutil.rmtree(out, ignore_errors=True)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                          timeout=60).stdout
    assert "-t19c" not in left, left
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           timeout=60).stdout
    assert "mc-t19c" not in links, links


def test_the_shuffle_fit_trains_on_uc_and_unified_and_the_rest_is_held_out():
    order = [3, 1, 2, 5, 0, 6, 4, 7, 8]
    net = nm.make_network(10, "100mbit", efficiency=0.9, alpha=1e-4, fabric=6e8)
    lines = {s: [{**run_line(s, order, rep=r, shuffle_s=0.45 + 0.01 * r),
                  "server_shuffle_s": {"0": 0.40 + 0.01 * r, "1": 0.1},
                  "server_plan_s": {"0": 0.01}} for r in range(3)]
             for s in ("uc", "unified", "cmr")}
    cases = [cmp.training_case(f"{s}/p2p", lines[s], "p2p", net) for s in ("uc", "unified")]
    for c, s in zip(cases, ("uc", "unified")):
        m = cmp.coded_model(lines[s][1], "p2p", net)
        assert (c.host_s, c.fabric_s) == (m.host_s, m.fabric_s)
        assert c.transfer_s == pytest.approx(0.41) and c.overhead_s == pytest.approx(0.05)
    fit = fit_shuffle(cases)
    summ = cmp.summarise_coded(lines["cmr"], "p2p", net, None, fit, prior=fit)
    cost = [cmp.coded_model(r, "p2p", net) for r in lines["cmr"]]
    want = cmp.median([0.05 + max(fit.host_scale * c.host_s, fit.fabric_scale * c.fabric_s)
                       + fit.copy_s * c.copies for c in cost])
    assert summ.shuffle_model_s == pytest.approx(want)
    assert summ.shuffle_measured_over_model == pytest.approx(0.46 / want)
    assert summ.shuffle_measured_over_prior_model == pytest.approx(0.46 / want)
    assert summ.shuffle_link_model_s == pytest.approx(cmp.median([c.shuffle_link_s
                                                                  for c in cost]))
    assert summ.transfer_s == pytest.approx(0.41) and not summ.training
    assert "shuffle_model_raw_s" not in summ.to_dict()
    assert summ.to_dict()["shuffle_prior_model_s"] == summ.shuffle_prior_model_s
    # the fit lands in the calibration file per rate, and the targets skip training cases
    cal = {"100mbit": {"alpha_s": 1e-4, "efficiency": 0.8, "fabric_bps": 6e8,
                       "exchange_efficiency": 0.7, "rate": "100mbit"}}
    sec = nb.link_section(cal, {"100mbit": fit})
    assert sec["by_rate"]["100mbit"]["shuffle_fit"] == fit.to_dict()
    coded = {"100mbit": {"p2p": {"uc": replace(summ, training=True), "cmr": summ},
                         "bcast": {"uc": replace(summ, same_as="p2p", training=True)}}}
    out = nb.assemble(bn.FULL, cal, coded, None, {}, None, {"100mbit": fit}).to_dict()
    assert out["shuffle_training_cases"] == ["100mbit/p2p/uc"]
    assert set(out["targets"]) >= {"shuffle 100mbit/p2p/cmr in [0.85, 1.15]"}
    assert not any("/uc in" in k for k in out["targets"])
    assert out["shuffle_fit"]["100mbit"] == fit.to_dict()
    assert out["coded"]["100mbit"]["bcast"]["uc"]["same_as"] == "p2p"
    assert out["shuffle_measured_over_prior_model"]["100mbit/p2p/cmr"] == pytest.approx(
        0.46 / want)


def test_the_bench_sizes_ask_the_scheme_objects():
    """A scheme without multicasts (a batch stored once) runs p2p only; a partitioned one
    gets the bench's T: the bench never names a scheme to decide."""
    sz = bn.FULL
    bench = nb.NetworkBench(sz, bn.TRACES, Path("."), Path("."), replay=True)
    for scheme in sz.schemes:
        p = bench._params(scheme)
        assert p.m == sz.m and (p.T == sz.bdc_T) == p.spec.partitioned
        assert (p.replication > 1) == (scheme != "uc")
