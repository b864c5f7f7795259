"""The coded job's records (``mpi_coded.results``, coded section): each kind the runtime
builds is written as one JSON line and read back into the same class, field for field."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mpi_coded import results
from mpi_coded.coded.job import from_mapping
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.results import (
    CodedAbandoned,
    CodedConfig,
    CodedRun,
    CodedServerMap,
    CodedSummary,
    Record,
    ResultsWriter,
    RunContext,
    SchemaError,
)

RUN = RunContext(host="node-7", python="3.11.2", platform="Linux", numpy="2.0",
                 mpi_coded="0.9", mpi="MPICH Version: 4.2", world_size=7, wait_mode="polite",
                 idle_sleep_s=0.002, active_sleep_s=0.0, dormant_sleep_s=0.005, ranks_on_node=7,
                 cores=2,
                 network={"cluster": "t1", "transport": "tcp", "rates": {"t1-node1": 1e8}})

JOB = from_mapping({"scheme": "unified", "K": 6, "q": 4, "mu": "1/2", "rows_per_batch": 4,
                    "n": 30, "N": 12, "field": "gf2^8", "straggler": "shiftexp",
                    "t_row": 0.015, "seed": 83, "reps": 2})

SERVER_MAP = {str(s): CodedServerMap(compute_s=0.01 * s, wall_s=0.5 + s, target_s=0.4 + s,
                                     rows_done=10 + s, rows=20, stopped=s % 2 == 1)
              for s in range(6)}

CODED_RUN = CodedRun(
    scheme="bdc", K=6, q=4, mu="1/2", rows_per_batch=4, n=30, N=12, T=20, field="gf2^8",
    rep=3, m=40, straggler="shiftexp", seed=83, Q=[4, 5, 0, 2], extra=[1],
    finishing_order=[4, 5, 0, 2, 1], encode_s=0.125, map_s=1.5, shuffle_s=0.25,
    reduce_s=0.0625, total_s=1.9375, multicast_values=72, unicast_values=120,
    load_measured=0.4, load_measured_exact="2/5", load_analytic=0.35,
    load_analytic_exact="7/20", load_plan_exact="2/5", padding_values="3", strategy=2, s_q=2,
    bytes_on_wire=264, verified=True, max_error=0.5, verify="freivalds(4)",
    encoder="generator", decoder="generator+rs_fft",
    server_encoder={str(s): "generator" for s in range(6)},
    server_decoder={"4": "rs_fft", "5": "generator"},
    peak_rss_mb={"master": 80.5, "0": 60.25}, max_peak_rss_mb=80.5,
    server_encode_s={str(s): 0.1 + s for s in range(6)}, server_map=SERVER_MAP,
    server_shuffle_s={"4": 0.2, "1": 0.3}, server_plan_s={"4": 0.01, "1": 0.02},
    server_decode_s={"4": 0.05}, unresponsive=[3],
    wrong_answers=[{"server": 1, "phase": "shuffle", "batches": [0, 7],
                    "message": "multicast 4", "values": 1, "attempt": 0,
                    "found": "payload as received by server 0,5"}],
    rerun=1, without=[1], rerun_s=0.25, resumed=True, quarantined=[4], probation=[2],
    quarantine=[{"server": 1, "rank": 2, "host": "node-2", "event": "caught"},
                {"server": 2, "rank": 3, "host": "node-0", "event": "readmitted"}],
    hosts={"0": "node-7", **{str(r): f"node-{r % 3}" for r in range(1, 7)}},
    link=results.LinkBytes(
        link_bytes={"shuffle": {"node-0": [5120, 4096], "node-1": None}},
        plan_bytes={"shuffle": {"node-0": [4800, 3900], "node-1": [0, 0]}}))

CODED_CONFIG = CodedConfig.of(JOB.to_dict(), RUN)
CODED_SUMMARY = CodedSummary(reps=2, all_verified=False, mean_total_s=1.5, wrong_answers=1,
                             reruns=1, quarantine={"caught": 1, "lost": 1}, lost_wrong=[4])
CODED_ABANDONED = CodedAbandoned(
    scheme="unified", K=6, q=4, mu="1/2", rows_per_batch=4, n=8, N=12, T=1, field="gf2^8",
    rep=0, phase="shuffle", why="server 2 = rank 3 (node-1) died in the shuffle", lost=[2],
    Q=[4, 5, 2, 3], finishing_order=[4, 5, 2, 3], missing={"3": 2, "4": 1, "5": 0},
    encode_s=0.01, map_s=0.09, phase_s=0.04, total_s=0.14, hosts={"0": "node-0"})
CODED_ENDED = CodedSummary(reps=3, all_verified=False, lost=[2, 3, 4], abandoned=[0],
                           ended_early="rep 1: server 2 = rank 3 (node-1) died; ...")


def assert_same(got: Record, want: Record) -> None:
    assert type(got) is type(want)
    for f in dataclasses.fields(want):
        if f.name != "raw":
            assert getattr(got, f.name) == getattr(want, f.name), f.name
    assert got == want


@pytest.mark.parametrize("record", [CODED_CONFIG, CODED_RUN, CODED_SUMMARY,
                                    CODED_ABANDONED, CODED_ENDED],
                         ids=lambda r: f"{type(r).__name__}-{r.to_dict().get('ended_early')}")
def test_each_coded_record_is_read_back_into_the_same_class(tmp_path, record):
    path = tmp_path / "out.jsonl"
    writer = ResultsWriter(str(path))
    writer.write(record)
    writer.close()
    (line,) = results.read_results(path)
    assert line == writer.lines[0]
    assert (line["kind"], line["job"]) == (record.KIND, "coded")
    # every declared key, in order (an optional one left out while None)
    assert list(line)[2:] == [k for k in type(record).names() if k in line]
    # the keys absent while None: a repetition with no wrong outputs, a job without any
    assert set(type(record).names()) - set(line) <= {"load_check", "wrong_answers",
                                                     "reruns", "quarantine", "lost_wrong"}
    back = type(record).from_record(line)
    assert_same(back, record)
    assert_same(results.view(line), record)  # the reader picks the same class
    assert back.raw == line


def test_a_config_line_keeps_every_key_of_the_job_and_the_run_context():
    line = json.loads(json.dumps(CODED_CONFIG.to_dict()))
    assert {k: line[k] for k in JOB.to_dict()} == json.loads(json.dumps(JOB.to_dict()))
    assert {k: line[k] for k in RunContext.names()} == dataclasses.asdict(RUN)
    back = CodedConfig.from_record(line)
    assert back.run == RUN and back.host == "node-7" and back.speeds == []
    with pytest.raises(SchemaError, match="does not declare surprise"):
        CodedConfig.of({**JOB.to_dict(), "surprise": 1}, RUN)


def test_a_run_line_of_an_older_runtime_is_still_read():
    old = {"kind": "run", "job": "coded", "rep": 0, "scheme": "bdc", "K": 4, "q": 3,
           "mu": "2/3", "rows_per_batch": 2, "m": 9, "n": 8, "N": 6, "verified": True,
           "server_map": {"0": {"compute_s": 0.1, "wall_s": 0.2, "target_s": 0.0,
                                "rows_done": 3, "rows": 3, "stopped": False}}}
    r = CodedRun.from_record(old)
    assert r.server_map["0"].rows == 3 and r.unresponsive == [] and r.T == 1
    with pytest.raises(SchemaError, match="server_map entry lacks stopped"):
        CodedRun.from_record({**old, "server_map": {"0": {"compute_s": 0.1, "wall_s": 0.2,
                                                          "target_s": 0.0, "rows_done": 3,
                                                          "rows": 3}}})


def test_the_runtime_builds_a_repetition_line_from_its_measurements():
    """``runtime/coded/lines.py``: the master's per-phase statistics become one CodedRun."""
    from mpi_coded.runtime.coded import lines

    p = JOB.params
    placement = build_placement(p)
    end = map_end(placement, [4, 5, 0, 2, 1, 3])
    plan = shuffle_plan(placement, end)
    r = lines.Repetition(rep=1, t=[10.0, 10.5, 12.0, 12.25, 12.5])
    r.encode = {s: {"encode_s": 0.1, "encoder": 1.0, "peak_rss_mb": 50.0 + s}
                for s in range(6)}
    r.map = {s: {"compute_s": 0.2, "wall_s": 1.0, "target_s": 0.9, "rows_done": 20.0,
                 "rows": 20.0, "stopped": 0.0, "peak_rss_mb": 55.0} for s in (4, 5, 0, 2)}
    r.finished, r.end = list(r.map), end
    per = {"multicast_values": plan.multicast_values / 4, "unicast_values":
           plan.unicast_values / 4, "bytes_sent": 60.0, "plan_s": 0.01, "shuffle_s": 0.2,
           "groups_created": 3.0, "groups_s": 0.004}
    r.shuffle = {s: {**per, "peak_rss_mb": 70.0} for s in end.finishers}
    r.reduce = {s: {"decode_s": 0.03, "decoder": 0.0, "peak_rss_mb": 1e6} for s in end.Q}
    r.unresponsive = [1, 3]
    line = lines.repetition_line(JOB, "gf2^8", r, plan, "exact", True, 0.0)
    assert (line.encode_s, line.map_s, line.shuffle_s, line.reduce_s, line.total_s) == \
        (0.5, 1.5, 0.25, 0.25, 2.5)
    assert line.multicast_values + line.unicast_values == plan.values
    assert line.load_measured_exact == line.load_plan_exact == str(plan.load)
    assert line.bytes_on_wire == 240 and line.Q == list(end.Q)
    assert (line.peak_rss_mb["1"], line.peak_rss_mb["0"]) == (51.0, 1e6)  # max over phases
    assert line.max_peak_rss_mb == 1e6 and "master" in line.peak_rss_mb
    assert list(line.server_map) == ["0", "2", "4", "5"]  # sorted by server
    assert line.server_map["4"] == CodedServerMap(compute_s=0.2, wall_s=1.0, target_s=0.9,
                                                  rows_done=20, rows=20, stopped=False)
    assert isinstance(line.server_map["4"].rows, int)
    assert line.server_decoder == {str(s): "none" for s in end.Q}
    assert line.server_groups_created == {str(s): 3 for s in end.finishers}
    assert line.server_groups_s == {str(s): 0.004 for s in end.finishers}
    assert isinstance(line.server_groups_created["4"], int)
    assert_same(CodedRun.from_record(json.loads(json.dumps(line.to_dict()))), line)
    # a finisher that sent its part and died before reporting it: its values from the plan
    def sent(s: int) -> dict[str, float]:
        mc, uc = plan.sends(s)
        return {**per, "peak_rss_mb": 70.0, "multicast_values": float(sum(
            plan.multicasts[i].length for i in mc)), "unicast_values": float(sum(
                plan.unicasts[i].size for i in uc))}

    gone = end.finishers[-1]
    r.shuffle = {s: sent(s) for s in end.finishers if s != gone}
    line = lines.repetition_line(JOB, "gf2^8", r, plan, "exact", True, 0.0)
    assert line.multicast_values + line.unicast_values == plan.values
    mc, uc = plan.sends(gone)
    assert line.bytes_on_wire == 60 * (len(end.finishers) - 1) + sum(
        plan.multicasts[i].length * len(plan.multicasts[i].receivers) for i in mc) + sum(
        plan.unicasts[i].size for i in uc)  # gf2^8: a byte a value
    assert str(gone) not in line.server_shuffle_s
    summary = lines.summary_line(2, True, [1.0, 2.0])
    assert summary == CodedSummary(reps=2, all_verified=True, mean_total_s=1.5)


def test_a_repetition_a_death_ended_is_its_own_line_and_the_summary_counts_it():
    """``fault_tolerance = "ulfm"``: an abandoned repetition is an ``abandoned`` line (no
    ``verified``: nothing was decoded), apart from the ``run`` lines the figures read."""
    from mpi_coded.runtime.coded import lines

    r = lines.Repetition(rep=2, t=[10.0, 10.5, 12.0, 12.25])
    r.end = map_end(build_placement(JOB.params), [4, 5, 0, 2, 1, 3])
    r.finished, r.lost = [4, 5, 0, 2], [5]
    r.shuffle = {s: {"messages_missing": float(s != 0)} for s in (4, 0, 2)}
    r.abandoned = ("shuffle", "server 5 = rank 6 (n) died in the shuffle")
    line = lines.abandoned_line(JOB, "gf2^8", r, {"0": "n"})
    assert (line.rep, line.phase, line.why, line.lost) == (2, "shuffle", r.abandoned[1], [5])
    assert line.missing == {"0": 0, "2": 1, "4": 1}
    assert (line.encode_s, line.map_s, line.phase_s, line.total_s) == (0.5, 1.5, 0.25, 2.25)
    d = line.to_dict()
    assert d["kind"] == "abandoned" and "verified" not in d
    assert results.views([d, CODED_RUN.to_dict()], CodedRun) == [CODED_RUN]
    ended = lines.summary_line(3, True, [1.0], [5], [2], ended_early="rep 3: too few")
    assert not ended.all_verified and ended.abandoned == [2] and ended.lost == [5]


def test_the_coded_classes_are_the_readers_of_their_kinds():
    for record in (CODED_CONFIG, CODED_RUN, CODED_SUMMARY, CODED_ABANDONED):
        line = record.to_dict()
        assert results.VIEWS[("coded", line["kind"])] is type(record)
        assert results.job_of(line) == "coded"
