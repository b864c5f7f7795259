"""A coded server whose map output or shuffle payload is wrong, under mpiexec: named in the
repetition's line, the repetition run again without it, never a wrong output verified,
the job going on (issue 44, 5); quarantined for the next repetitions where the scheme can
do without it, re-admitted after probation, lost after its strikes (issue 44c)."""

from __future__ import annotations

import json

import pytest

from conftest import run_mpi

pytestmark = pytest.mark.mpi

K = 6
SPEEDS = "speeds = [2.0, 8.0, 1.6, 1.3, 1.0, 1.0]\n"
"""Server 1 (rank 2) finishes first, then 0, 2, 3, each 50 ms or more apart: the same Q in
every run, so the same plan, and the fault's seeded entry is one a reducer uses (a value
no reducer uses leaves the outputs right: nothing to find)."""


def job(tmp_path, scheme, fault, *extra, reps=3, field="float64"):
    cfg = tmp_path / "speeds.toml"
    cfg.write_text(SPEEDS)
    out = tmp_path / "coded.jsonl"
    args = ["run", "coded", "--config", str(cfg), "--K", str(K), "--scheme", scheme,
            "--q", "4", "--mu", "1/2", "--rows-per-batch", "4", "--n", "16", "--N", "12",
            "--field", field, "--straggler", "none", "--t-row", "0.01", "--reps", str(reps),
            "--seed", "3", "--fault", fault, "--out", str(out), *extra]
    if scheme == "bdc":
        args += ["--T", "2"]
    r = run_mpi(K + 1, args, timeout=180)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    return r, [x for x in lines if x["kind"] == "run"], lines[-1]


@pytest.mark.parametrize("scheme", ["unified", "bdc"])
@pytest.mark.parametrize("phase", ["map", "shuffle"])
def test_a_wrong_server_is_named_and_its_repetition_decoded_without_it(tmp_path, scheme,
                                                                       phase):
    """The spare servers' maps resume where the map end stopped them, and the repetition
    decodes without the wrong server (no encode)."""
    r, runs, summary = job(tmp_path, scheme, f"corrupt:2:{phase}@2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["rep"] for x in runs] == [0, 1, 2]
    assert all(x["verified"] is True for x in runs)
    wrong = runs[2]["wrong_answers"]
    assert [(w["server"], w["phase"], w["attempt"]) for w in wrong] == [(1, phase, 0)]
    assert wrong[0]["batches"] and wrong[0]["values"] == 1
    assert (phase == "map") == (wrong[0]["message"] == "")
    assert runs[2]["rerun"] == 1 and runs[2]["without"] == [1]
    assert runs[2]["resumed"] is True and runs[2]["encode_s"] < 1e-3  # no encode: resumed
    assert 1 not in runs[2]["Q"] + runs[2]["extra"]
    assert all("wrong_answers" not in x and "rerun" not in x for x in runs[:2])
    assert summary["all_verified"] is True
    assert summary["wrong_answers"] == 1 and summary["reruns"] == 1
    assert "server 1 = rank 2" in r.stderr and "runs again" in r.stderr


def test_a_scheme_without_spare_servers_is_never_verified_wrong_and_goes_on(tmp_path):
    """uc waits for every server: a server wrong at every attempt cannot be left out, so
    after three attempts the line is NOT VERIFIED (naming it), and the job goes on."""
    r, runs, summary = job(tmp_path, "uc", "corrupt:2:map:1.0")
    assert r.returncode == 1
    assert [x["rep"] for x in runs] == [0, 1, 2]
    for x in runs:
        assert x["verified"] is False
        assert [w["server"] for w in x["wrong_answers"]] == [1, 1, 1]
        assert x["rerun"] == 2 and "without" not in x and "resumed" not in x
    assert summary["all_verified"] is False and summary["reruns"] == 6
    assert "NOT VERIFIED after 3 attempts" in r.stderr
    # never quarantined (uc cannot end the map without it): in, on probation, checked
    assert [[e["event"] for e in x["quarantine"]] for x in runs] == [
        ["caught"], ["needed"], ["needed"]]
    assert all("quarantined" not in x for x in runs)
    assert "probation" not in runs[0] and runs[1]["probation"] == runs[2]["probation"] == [1]
    assert summary["quarantine"] == {"caught": 1, "needed": 2}
    assert "lost_wrong" not in summary
    assert r.stderr.count("cannot end the map without it: it stays in") == 1


def test_a_mercurial_server_is_left_out_of_each_rerun_and_every_line_verifies(tmp_path):
    """unified: server 1 wrong at every map (P = 1): a repetition it finishes in is run
    again without it (rep 0), the next two leave it out from the start (quarantined), and
    every line verifies."""
    r, runs, summary = job(tmp_path, "unified", "corrupt:2:map:1.0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["rep"] for x in runs] == [0, 1, 2]
    assert all(x["verified"] is True for x in runs)
    rerun = [x for x in runs if x.get("rerun")]
    assert rerun and summary["reruns"] == len(rerun)
    for x in rerun:
        assert x["rerun"] == 1 and x["without"] == [1] and x["resumed"] is True
        assert [(w["server"], w["phase"]) for w in x["wrong_answers"]] == [(1, "map")]
    assert runs[0]["rerun"] == 1
    assert runs[1]["quarantined"] == runs[2]["quarantined"] == [1]


def events(x):
    return [(e["server"], e["rank"], e["event"]) for e in x.get("quarantine", [])]


@pytest.mark.parametrize("scheme", ["unified", "bdc"])
def test_a_server_caught_wrong_sits_out_the_next_repetitions_then_is_readmitted(tmp_path,
                                                                                 scheme):
    """Server 1 (the fastest) wrong at rep 1 only: rep 1 decodes without it; reps 2 and 3
    (quarantine_reps = 2) leave it out from the start though it finishes its map first;
    rep 4 uses it on probation, and its clean answer re-admits it."""
    r, runs, summary = job(tmp_path, scheme, "corrupt:2:map@1", reps=5)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["rep"] for x in runs] == [0, 1, 2, 3, 4]
    assert all(x["verified"] is True for x in runs)
    assert runs[1]["without"] == [1] and events(runs[1]) == [(1, 2, "caught")]
    assert runs[1]["quarantine"][0]["host"]
    for x in runs[2:4]:
        assert x["quarantined"] == [1] and "rerun" not in x and "wrong_answers" not in x
        assert 1 not in x["Q"] + x["extra"] + x["finishing_order"]
        m = x["server_map"]["1"]
        assert m["rows_done"] == m["rows"]  # it mapped everything: its outputs unused
        assert "quarantine" not in x
    assert "quarantined" not in runs[4] and runs[4]["probation"] == [1]
    assert 1 in runs[4]["Q"] and events(runs[4]) == [(1, 2, "readmitted")]
    assert "quarantined" not in runs[0] and "quarantine" not in runs[0]
    assert summary["all_verified"] is True
    assert summary["quarantine"] == {"caught": 1, "readmitted": 1}
    assert summary["wrong_answers"] == 1 and summary["reruns"] == 1


def test_a_mercurial_server_is_lost_after_its_strikes_and_the_job_goes_on(tmp_path):
    """unified, server 1 wrong at every map: caught at rep 0, out at rep 1
    (quarantine_reps = 1), caught again on probation at rep 2: its second strike loses it
    (one warning), and rep 3 runs without it; every line verified, exit 0."""
    r, runs, summary = job(tmp_path, "unified", "corrupt:2:map:1.0", "--quarantine-reps",
                           "1", reps=4)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["rep"] for x in runs] == [0, 1, 2, 3]
    assert all(x["verified"] is True for x in runs)
    assert events(runs[0]) == [(1, 2, "caught")] and runs[0]["without"] == [1]
    assert runs[1]["quarantined"] == [1] and "rerun" not in runs[1]
    assert runs[2]["probation"] == [1] and runs[2]["without"] == [1]
    assert events(runs[2]) == [(1, 2, "lost")]
    assert runs[3]["quarantined"] == [1] and "rerun" not in runs[3]
    assert 1 not in runs[3]["Q"] + runs[3]["extra"]
    assert summary["quarantine"] == {"caught": 1, "lost": 1}
    assert summary["lost_wrong"] == [1] and summary["lost"] == []
    assert summary["all_verified"] is True and summary["reruns"] == 2
    lost = [x for x in r.stderr.splitlines() if "lost for the job" in x]
    assert len(lost) == 1 and "server 1 = rank 2" in lost[0], r.stderr


@pytest.mark.parametrize("field", ["float64", "gf2^8"])
def test_a_consistent_liar_is_named_for_its_map_then_left_out_and_lost(tmp_path, field):
    """``lie:2``: from repetition 0 on, server 1 maps its coded rows with wrong input
    vectors (every value of a consistent product of the wrong x, not one changed entry):
    the master's recomputation names its map output (many values) at rep 0, it sits out
    reps 1 and 2, is caught again on probation at rep 3 (its second strike: lost), and
    every line verifies."""
    r, runs, summary = job(tmp_path, "unified", "lie:2", reps=5, field=field)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(x["verified"] is True for x in runs) and len(runs) == 5
    (w,) = runs[0]["wrong_answers"]
    assert (w["server"], w["phase"]) == (1, "map") and w["values"] > 1
    assert events(runs[0]) == [(1, 2, "caught")]
    assert runs[1]["quarantined"] == runs[2]["quarantined"] == [1]
    assert events(runs[3]) == [(1, 2, "lost")] and runs[4]["quarantined"] == [1]
    assert summary["lost_wrong"] == [1] and summary["all_verified"] is True
    assert "answers for a wrong x from repetition 0 on" in r.stderr
