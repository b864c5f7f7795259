"""The model's price of a death and of a join (mpi_coded/analysis/events.py,
docs/theory.md (A.9)), and the elastic model that adds them up."""

from __future__ import annotations

import pytest

from mpi_coded.analysis import compare as cmp
from mpi_coded.analysis import network as nm
from mpi_coded.analysis.events import (
    DETECTION_S,
    SPAWN_S,
    EventPrices,
    block_seconds,
    planned_deaths,
    step_death_s,
)
from mpi_coded.bench.loss_bench import kill_run
from mpi_coded.results import ElasticConfig


def test_a_death_costs_its_detection_and_the_attempt_before_it_an_idle_one_nothing():
    p = EventPrices(detection_s=0.02, spawn_s=1.0)
    assert p.death_s(planned=True) == 0.02
    assert p.death_s(planned=True, into_attempt_s=0.25) == pytest.approx(0.27)
    assert p.death_s(planned=False, into_attempt_s=0.25) == 0.0
    assert p.join_s(0.5) == 1.5
    assert EventPrices().detection_s == DETECTION_S and EventPrices().spawn_s == SPAWN_S


def test_only_planned_machines_of_a_replanned_step_count():
    lost = [{"machine": 4}, {"machine": 2}]
    assert planned_deaths(lost, preempted=[2], replanned=True) == [4]
    assert planned_deaths(lost, preempted=[], replanned=False) == []  # S > 0: no re-plan
    p = EventPrices(detection_s=0.01)
    # two machines detected together: one detection, one re-plan
    assert step_death_s(lost, [], True, p) == 0.01
    assert step_death_s(lost, [2, 4], True, p) == 0.0


def test_the_block_crosses_the_link_at_its_rate_and_costs_nothing_on_one_host():
    # master and machine 4 on two hosts at 100 Mbit/s: (header + 420 x 200 x 8 bytes) x 8
    net = nm.make_network(7, "100mbit", ranks_per_host=2, rank_name=nm.elastic_rank_name)
    want = (420 * 200 * 8 + nm.HEADER_BYTES) * 8 / 100e6
    assert block_seconds(4, 420, 200, "float64", net) == pytest.approx(want)
    # machine 1 shares the master's host: shared memory, not the network
    assert block_seconds(1, 420, 200, "float64", net) == 0.0


def _step(step, available, preempted=(), lost=(), joined=(), replanned=False):
    return {"kind": "step", "job": "cec", "step": step, "policy": "heterogeneous",
            "available": list(available),
            "preempted": list(preempted), "replanned": replanned, "predicted_s": 0.5,
            "wall_s": 0.6, "verified": True, "lost": list(lost), "joined": list(joined)}


def test_the_elastic_model_adds_deaths_to_their_steps_and_prices_each_join():
    cfg = ElasticConfig.from_record({
        "kind": "config", "job": "cec", "N": 6, "L": 3, "speeds": [1, 1, 1.5, 1.5, 2, 2],
        "rows": 1260, "cols": 200, "t_row": 0.001, "field": "float64",
        "policy": "heterogeneous"})
    net = nm.make_network(7, "1gbit", ranks_per_host=2, rank_name=nm.elastic_rank_name)
    steps = [_step(1, [1, 2, 3, 4, 5, 6]),
             _step(2, [1, 2, 3, 5, 6], lost=[{"machine": 4, "step": 2}], replanned=True),
             _step(3, [1, 2, 3, 4, 5, 6],
                   joined=[{"machine": 4, "step": 3, "spawn_s": 1.7, "block_s": 0.2}])]
    prices = EventPrices(detection_s=0.03, spawn_s=1.2)
    with_events = cmp.elastic_model(steps, cfg, "heterogeneous", net, prices=prices)
    plain = cmp.elastic_model([_step(1, [1, 2, 3, 4, 5, 6]), _step(2, [1, 2, 3, 5, 6]),
                               _step(3, [1, 2, 3, 4, 5, 6])], cfg, "heterogeneous", net)
    assert with_events.death_s == 0.03
    assert with_events.step_s[1] == pytest.approx(plain.step_s[1] + 0.03)
    assert with_events.total_s == pytest.approx(plain.total_s + 0.03)
    [j] = with_events.joins
    block = (420 * 200 * 8 + nm.HEADER_BYTES) * 8 / 1e9
    assert (j.machine, j.step) == (4, 3)
    assert j.total_s == pytest.approx(1.2 + block) and j.measured_s == pytest.approx(1.9)
    assert with_events.to_dict()["joins"][0]["block_s"] == pytest.approx(block)


def test_the_kill_bench_prices_each_phase():
    lines = [{"kind": "config", "job": "cec", "deadline_factor": 1.5, "deadline_slack_s": 0.5},
             {"kind": "step", "job": "cec", "step": 3, "wall_s": 0.62, "predicted_s": 0.30,
              "predicted_planned_s": 0.28, "verified": True},
             {"kind": "summary", "job": "cec", "all_verified": True,
              "lost": [{"machine": 2, "step": 3, "detected_unix": 100.02}],
              "joined": [{"machine": 2, "step": 4, "spawn_s": 1.5, "block_s": 0.08,
                          "block_bytes": 672000}]}]
    err = "rank 2 (vm) killed by fault injection in phase answer 3 at unix 100.0\n"
    p = EventPrices(detection_s=0.015, spawn_s=1.4)
    r = kill_run("kill:2:answer@3", 2, 0, err, lines, prices=p)
    assert r.model_extra_s == pytest.approx(0.28 + 0.015)  # the whole first attempt, + d
    assert r.step_extra_s == pytest.approx(0.32) and r.model_join_s == 1.4
    assert kill_run("kill:2:step@3", 2, 0, err.replace("answer", "step"), lines,
                    prices=p).model_extra_s == 0.015
    assert kill_run("kill:2:idle@3", 2, 0, err.replace("answer", "idle"), lines,
                    prices=p).model_extra_s == 0.0
