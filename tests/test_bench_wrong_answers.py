"""scripts/bench_wrong_answers.py --quick (issue 44, item 6): the bench runs end to end under
mpiexec and its JSON says what it measured (the fields, never the timings)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT, mpiexec_cmd, run_cmd

pytestmark = pytest.mark.mpi


def test_quick_bench_reports_located_verified_and_nothing_accepted(tmp_path: Path) -> None:
    mpiexec_cmd(7)  # skips without a launcher
    out = tmp_path / "bench.jsonl"
    r = run_cmd([sys.executable, str(ROOT / "scripts" / "bench_wrong_answers.py"), "--quick",
                 "--out", str(out)], timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert "(a) no fault" in r.stdout and "(d) a stored block" in r.stdout
    assert res["hangs"] == 0 and res["wrong_accepted"] == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == len(res["check"]) + len(res["wrong"]) + len(res["block"]) + \
        len(res["coded"])
    # (a): the check's share of the step time, every step verified
    assert [(c["config"], c["ranks"], c["S"]) for c in res["check"]] == [("seed", 7, 0),
                                                                       ("seed", 7, 1)]
    for c in res["check"]:
        assert c["rc"] == 0 and c["all_verified"] and c["verified"] == c["steps"] == 4
        assert 0 < c["check_fraction"] < 1 and c["verify_s_mean"] > 0
    # (b), (c): every step verified, the corrupt machine named or its answer not used
    wrong = {w["part"]: w for w in res["wrong"]}
    assert set(wrong) == {"fault-free", "corrupt", "corrupt-matched", "intermittent"}
    for w in wrong.values():
        assert w["field"] == "float64" and w["workload"] == "power" and w["rc"] == 0
        assert w["verified"] == w["steps"] == 6 and w["all_verified"]
        assert w["wrong_accepted"] == w["verified_above_rounding"] == []
        assert w["workload_check"]["ok"] and w["max_error_verified"] < 1e-12
        assert w["named_innocent"] == []
    assert wrong["fault-free"]["located"] == wrong["fault-free"]["wrong_answers_named"] == 0
    bad = wrong["corrupt"]
    assert bad["corrupt_steps"] == 6 and bad["fired_steps"] >= 1 and bad["located"] >= 1
    assert bad["located"] + len(bad["fired_not_located"]) == bad["fired_steps"]
    assert bad["events"]["caught"] >= bad["located"] and bad["events"]["lost"] == 0
    assert bad["found"] and set(bad["found"]) <= {"spare", "re-asked", "unused", "probe",
                                                  "late"}
    assert bad["quarantine_steps"] == 0 and 0 <= bad["located_late"] <= bad["located"]
    assert bad["wall_ratio"] > 0 and "wall_ratio" in wrong["intermittent"]
    # the matched run: no fault, each step on the machines the corrupt run planned it on
    same = wrong["corrupt-matched"]
    assert [p[5] for p in same["per_step"]] == [p[5] for p in bad["per_step"]]
    assert same["located"] == 0 and same["corrupt_over_matched"] > 0
    # (d): the block repaired, its machine back, every step verified
    (blk,) = res["block"]
    assert blk["rc"] == 0 and blk["all_verified"] and blk["verified"] == blk["steps"] == 12
    assert blk["located"] == [2] and blk["repaired"] == 1 and blk["repair_s"] > 0
    assert blk["repair_bytes"] > 0 and blk["readmitted_step"] is not None
    assert blk["events"][:2] == ["caught", "block-repaired"]
    # (e): the coded job, one corrupt server a repetition (seeded) at its map or shuffle:
    # every line verified, the corrupt server named wherever it spoiled an output, no other
    assert [(c["scheme"], c["phase"]) for c in res["coded"]] == [
        (s, f) for s in ("unified", "bdc") for f in (None, "map", "shuffle")]
    for c in res["coded"]:
        assert c["rc"] == 0 and c["reps"] == c["verified"] == 3 and c["named_innocent"] == []
        if c["phase"] is None:
            assert c["spoiled"] == c["fired"] == 0
        else:
            assert 1 <= c["fired"] <= 3 and c["culprit_named"] == c["spoiled"] <= c["fired"]
    assert sum(c["spoiled"] for c in res["coded"]) >= 1 and res["coded_innocent_named"] == 0
