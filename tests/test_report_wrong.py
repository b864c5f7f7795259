"""``mpi-coded report`` shows who answered wrong: an elastic job with a corrupt answer and
a coded job with a corrupt map output, run under mpiexec, make one page whose step and
repetition tables name the wrong machine and server and whose quarantine tables list
their events (docs/theory.md A.10, docs/coded.md "A server that answers wrong")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from test_mpi_coded_wrong import job as coded_job
from test_report import Tables

from conftest import run_cli, run_mpi

pytestmark = pytest.mark.mpi


def test_the_report_names_the_wrong_machine_and_server_and_their_quarantine(tmp_path: Path
                                                                            ) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed (pip install -e '.[report]')")
    cec, coded = tmp_path / "cec.jsonl", tmp_path / "coded.jsonl"  # coded_job's file
    r = run_mpi(7, ["run", "cec", "--out", str(cec), "--fault", "corrupt:2:answer@2"],
                timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r, runs, _ = coded_job(tmp_path, "unified", "corrupt:2:map@1")  # fixed speeds: server
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]  # 1 finishes first
    assert [bool(x.get("wrong_answers")) for x in runs] == [False, True, False]
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
