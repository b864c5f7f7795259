"""A coded server whose map output or shuffle payload is wrong, under mpiexec: named in the
repetition's line, the repetition run again without it, never a wrong output verified,
the job going on (issue 44, 5)."""

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


def job(tmp_path, scheme, fault, *extra):
    cfg = tmp_path / "speeds.toml"
    cfg.write_text(SPEEDS)
    out = tmp_path / "coded.jsonl"
    args = ["run", "coded", "--config", str(cfg), "--K", str(K), "--scheme", scheme,
            "--q", "4", "--mu", "1/2", "--rows-per-batch", "4", "--n", "16", "--N", "12",
            "--field", "float64", "--straggler", "none", "--t-row", "0.01", "--reps", "3",
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


def test_a_mercurial_server_is_left_out_of_each_rerun_and_every_line_verifies(tmp_path):
    """unified: server 1 wrong at every map (P = 1): each repetition it finishes in is run
    again without it, and every line verifies."""
    r, runs, summary = job(tmp_path, "unified", "corrupt:2:map:1.0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["rep"] for x in runs] == [0, 1, 2]
    assert all(x["verified"] is True for x in runs)
    rerun = [x for x in runs if x.get("rerun")]
    assert rerun and summary["reruns"] == len(rerun)
    for x in rerun:
        assert x["rerun"] == 1 and x["without"] == [1] and x["resumed"] is True
        assert [(w["server"], w["phase"]) for w in x["wrong_answers"]] == [(1, "map")]
