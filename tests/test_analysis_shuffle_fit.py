"""The shuffle fitted on the coded job's training runs (docs/theory.md (B.8)): no MPI."""

from __future__ import annotations

import json

import pytest

from mpi_coded import cli
from mpi_coded.analysis import network as nw
from mpi_coded.analysis.shuffle_fit import (
    ShuffleFit,
    TrainingCase,
    fit_shuffle,
    rate_fit,
    terms,
)
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params, get
from mpi_coded.errors import ConfigError

BASE = ["model", "--scheme", "cmr", "--K", "6", "--q", "4", "--mu", "1/2", "--m", "60",
        "--n", "6", "--N", "24", "--json"]


def test_the_fit_recovers_the_scales_of_each_kind_and_the_measured_overhead():
    cases = [TrainingCase("uc/p2p", host_s=0.20, fabric_s=0.30, transfer_s=0.36,
                          overhead_s=0.02),  # fabric-limited: 0.36 / 0.30
             TrainingCase("unified/p2p", host_s=0.30, fabric_s=0.20, transfer_s=0.39,
                          overhead_s=0.04)]  # host-limited: 0.39 / 0.30
    fit = fit_shuffle(cases)
    assert fit.fabric_scale == pytest.approx(1.2) and fit.host_scale == pytest.approx(1.3)
    assert fit.overhead_s == pytest.approx(0.03)  # the median of the two
    assert fit.trained_on == ("uc/p2p", "unified/p2p")
    # one kind only: the other takes its multiplier
    only = fit_shuffle(cases[:1])
    assert only.host_scale == only.fabric_scale == pytest.approx(1.2)
    with pytest.raises(ConfigError, match="cases"):
        fit_shuffle([])
    with pytest.raises(ConfigError, match="traffic"):
        fit_shuffle([TrainingCase("x", 0.0, 0.0, 0.1, 0.0)])


def test_two_fabric_limited_cases_identify_the_cost_per_message():
    # transfer = 1.2 * 8B/F + 300 us * n_max, exactly, for uc-like and cmr-like cases
    uc = TrainingCase("uc/p2p", 0.02, 0.05, 1.2 * 0.05 + 3e-4 * 16, 0.02, copies=16)
    cmr = TrainingCase("cmr/p2p", 0.03, 0.04, 1.2 * 0.04 + 3e-4 * 112, 0.03, copies=112)
    unified = TrainingCase("unified/p2p", 0.04, 0.03, 1.1 * 0.04 + 3e-4 * 50, 0.01,
                           copies=50)
    fit = fit_shuffle([uc, unified, cmr])
    assert fit.fabric_scale == pytest.approx(1.2) and fit.copy_s == pytest.approx(3e-4)
    assert fit.host_scale == pytest.approx(1.1)  # after the messages' share
    assert fit.overhead_s == pytest.approx(0.02)
    # a negative cost per message is not physical: beta = 0, the median ratio
    neg = TrainingCase("cmr/p2p", 0.03, 0.04, 1.2 * 0.04 - 1e-4 * 112, 0.03, copies=112)
    flat = fit_shuffle([uc, neg])
    assert flat.copy_s == 0.0
    assert flat.fabric_scale == pytest.approx(
        (uc.transfer_s / uc.fabric_s + neg.transfer_s / neg.fabric_s) / 2)
    # the same messages per byte: not identified, beta = 0
    twin = TrainingCase("uc2", 0.04, 0.10, 1.2 * 0.10 + 3e-4 * 32, 0.02, copies=32)
    assert fit_shuffle([uc, twin]).copy_s == 0.0


def test_the_fitted_seconds_are_the_overhead_plus_the_larger_scaled_term():
    p = coded_params("cmr", 6, 4, "1/2", get("cmr").rows_per_batch_for(6, 4, "1/2", 60), 6,
                     24, 1, "float64")
    net = nw.make_network(7, "100mbit", alpha=1e-4, efficiency=0.9, fabric=3e8)
    cost = nw.coded_network(build_placement(p), net).phases["shuffle"]
    host, fab, n = terms(cost)
    assert host == max(cost.host_seconds.values()) and fab == cost.fabric_seconds
    # n_max counts payload copies: cmr p2p sends header + payload, two messages a copy
    assert n == max(max(t.sent_copies, t.recv_copies) for t in cost.hosts.values()) > 0
    assert 2 * n == max(max(t.sent_messages, t.recv_messages) for t in cost.hosts.values())
    fit = ShuffleFit(host_scale=1.5, fabric_scale=2.0, overhead_s=0.01, copy_s=1e-4)
    assert fit.seconds(cost) == pytest.approx(0.01 + max(1.5 * host, 2.0 * fab) + 1e-4 * n)
    # no traffic: no shuffle, no overhead
    empty = nw.phase_seconds(nw.Traffic(), net)
    assert fit.seconds(empty) == 0.0


def test_a_calibration_files_fit_is_read_per_rate_and_checked():
    fit = ShuffleFit(1.1, 1.2, 0.02, ("uc/p2p",), 2e-4)
    assert ShuffleFit.from_dict(fit.to_dict()) == fit
    old = {k: v for k, v in fit.to_dict().items() if k != "copy_s"}  # an earlier file
    assert ShuffleFit.from_dict(old).copy_s == 0.0
    doc = {"alpha_s": 1e-4, "efficiency": 0.9,
           "by_rate": {"100mbit": {"shuffle_fit": fit.to_dict()},
                       "1gbit": {"alpha_s": 3e-5}}}
    assert rate_fit(doc, 1e8) == fit
    assert rate_fit(doc, 1e9) is None  # not fitted at that rate
    assert rate_fit(None, 1e8) is None
    for bad, what in (({**fit.to_dict(), "host_scale": "x"}, "host_scale must be a number"),
                      ({**fit.to_dict(), "fabric_scale": 0}, "fabric_scale must be > 0"),
                      ({**fit.to_dict(), "overhead_s": -1}, "overhead_s must be >= 0"),
                      ({**fit.to_dict(), "copy_s": -1e-3}, "copy_s must be >= 0"),
                      ({**fit.to_dict(), "message_s": 2e-4}, "fitted per MPI message"),
                      ({**fit.to_dict(), "trained_on": "uc"}, "trained_on")):
        with pytest.raises(ConfigError, match=what):
            ShuffleFit.from_dict(bad)


def test_model_prices_the_fitted_shuffle_when_the_calibration_has_one(capsys, tmp_path):
    from mpi_coded.analysis import calibration
    from mpi_coded.codes.work import DEFAULT_SECONDS

    path = tmp_path / "calib.json"
    fit = ShuffleFit(1.5, 1.25, 0.02, ("uc/p2p", "unified/p2p", "cmr/p2p"), 1e-4)
    calibration.write(dict(DEFAULT_SECONDS), path, network={"alpha_s": 1e-4,
                                                            "efficiency": 0.9})
    doc = json.loads(path.read_text())
    doc["network"]["by_rate"] = {"100mbit": {"alpha_s": 1e-4, "efficiency": 0.9,
                                             "fabric_bps": 5e8, "shuffle_fit": fit.to_dict()}}
    path.write_text(json.dumps(doc))
    assert cli.main(BASE + ["--rate", "100mbit", "--calibration", str(path)]) == 0
    net = json.loads(capsys.readouterr().out)["network"]
    sh = net["phases"]["shuffle"]
    host = max(h["seconds"] for h in sh["hosts"].values())
    n = max(max(h["sent_copies"], h["recv_copies"]) for h in sh["hosts"].values())
    want = 0.02 + max(1.5 * host, 1.25 * sh["fabric_seconds"]) + 1e-4 * n
    assert net["shuffle_fitted"]["seconds"] == pytest.approx(want)
    assert net["shuffle_fitted"]["fit"] == fit.to_dict()
    assert net["over_uc"]["shuffle_fitted_s"] > 0
    # a rate without a fit: no fitted shuffle
    assert cli.main(BASE + ["--rate", "1gbit", "--calibration", str(path)]) == 0
    assert "shuffle_fitted" not in json.loads(capsys.readouterr().out)["network"]
