"""``mpi-coded report`` shows who answered wrong: an elastic job with a corrupt answer and
a coded job with a corrupt map output, run under mpiexec, make one page whose step and
repetition tables name the wrong machine and server and whose quarantine tables list
their events (docs/theory.md A.10, docs/coded.md "A server that answers wrong")."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from test_report import CODED_ARGS, Tables

from conftest import run_cli, run_mpi

pytestmark = pytest.mark.mpi


def test_the_report_names_the_wrong_machine_and_server_and_their_quarantine(tmp_path: Path
                                                                            ) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed (pip install -e '.[report]')")
    cec, coded = tmp_path / "cec.jsonl", tmp_path / "coded.jsonl"
    r = run_mpi(7, ["run", "cec", "--out", str(cec), "--fault", "corrupt:2:answer@2"],
                timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    args = [a if a != "2" or i != CODED_ARGS.index("--reps") + 1 else "3"
            for i, a in enumerate(CODED_ARGS)]
    r = run_mpi(7, [*args, "--fault", "corrupt:2:map@1", "--out", str(coded)], timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    runs = [json.loads(x) for x in coded.read_text().splitlines()]
    spoiled = [x["rep"] for x in runs if x["kind"] == "run" and x.get("wrong_answers")]
    assert spoiled == [1], runs  # the seeded straggler draw: server 1 a finisher at rep 1
    r = run_cli(["report", str(cec), str(coded), "--out", str(tmp_path / "out"), "--quiet"])
    assert r.returncode == 0, r.stdout + r.stderr
    tables = Tables()
    tables.feed((tmp_path / "out" / "report.html").read_text())
    steps = {row["step"]: row for _, row in tables.tables["cec-step"]}
    assert steps["2"]["wrong"] == "2" and steps["1"]["wrong"] == ""
    events = [(row["step"], row["machine"], row["event"])
              for _, row in tables.tables["cec-quarantine"]]
    assert events[:2] == [("2", "2", "caught"), ("2", "2", "block-good")]
    reps = {row["rep"]: row for _, row in tables.tables["coded-run"]}
    assert reps["1"]["wrong"] == "1" and reps["0"]["wrong"] == ""  # named, then caught
    got = [(row["rep"], row["server"], row["event"])
           for _, row in tables.tables["coded-quarantine"]]
    assert got[0] == ("1", "1", "caught")
