"""mpi_coded.golden: the rules that keep a job's deterministic fields (what
scripts/make_golden.py pins in tests/golden/ and tests/test_golden_outputs.py drops)."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import ROOT
from mpi_coded.golden import (
    diff_paths,
    drop_paths,
    golden_records,
    order_is_fixed,
    rule_paths,
    unverified,
)

MPI_RUNS = json.loads((ROOT / "tests" / "golden" / "mpi_runs.json").read_text())


def test_drop_paths_with_wildcards():
    rec = {"a": 1, "server_map": {"0": {"rows_done": 3, "rows": 4}, "1": {"rows_done": 1}},
           "keep": {"x": 1}}
    assert drop_paths(rec, [["server_map", "*", "rows_done"], ["a"]]) == {
        "server_map": {"0": {"rows": 4}, "1": {}}, "keep": {"x": 1}}
    assert drop_paths(rec, [["*"]]) == {}
    assert drop_paths(5, [["a"]]) == 5


def test_rule_paths_drop_measured_seconds_and_the_machine():
    rec = {"kind": "run", "encode_s": 1.0, "target_s": 2.0, "host": "h",
           "server_map": {"3": {"wall_s": 1.0, "target_s": 1.0}}, "load_measured": 0.5}
    assert rule_paths(rec) == {("encode_s",), ("host",), ("server_map", "*", "wall_s")}
    assert diff_paths({"a": 1, "s": {"2": 1}}, {"a": 1, "s": {"2": 2}, "b": 0}) == {
        ("s", "*"), ("b",)}


def test_the_golden_files_hold_no_dropped_path():
    """Every pinned MPI record is free of the paths its case drops and of the fixed rules."""
    for name, case in MPI_RUNS.items():
        for rec in case["records"]:
            assert drop_paths(rec, case["drop"]) == rec, name
            assert rule_paths(rec) == set(), name


def _run(targets: list[float], Q: list[int], loads: float = 0.5) -> dict:
    return {"kind": "run", "Q": Q, "extra": [], "finishing_order": Q, "encode_s": 0.1,
            "load_measured": loads, "verified": True,
            "server_map": {str(i): {"target_s": t, "rows_done": 1, "stopped": False}
                           for i, t in enumerate(targets)}}


def test_order_is_fixed_by_draws_far_apart():
    assert order_is_fixed([{"kind": "config"}, _run([0.1, 0.2, 0.3, 0.4], [0, 1])], 0.05)
    assert not order_is_fixed([_run([0.1, 0.12, 0.3, 0.4], [0, 1])], 0.05)


def test_golden_records_drop_what_the_runs_do_not_decide():
    config = {"kind": "config", "job": "coded", "scheme": "bdc", "host": "h"}
    fixed = [config, _run([0.1, 0.2, 0.3, 0.4], [0, 1])]
    patterns, records, notes = golden_records([fixed, copy.deepcopy(fixed)], True, 0.05,
                                              order_free=False)
    assert ["Q"] not in patterns and records[1]["Q"] == [0, 1] and notes == []
    assert "host" not in records[0] and "encode_s" not in records[1]
    assert "rows_done" not in records[1]["server_map"]["0"]
    close = [config, _run([0.1, 0.11, 0.3, 0.4], [0, 1])]
    patterns, records, notes = golden_records([close, copy.deepcopy(close)], True, 0.05,
                                              order_free=False)
    assert ["Q"] in patterns and ["load_measured"] in patterns and len(notes) == 1
    patterns, _, _ = golden_records([close, copy.deepcopy(close)], True, 0.05, order_free=True)
    assert ["Q"] in patterns and ["load_measured"] not in patterns
    other = copy.deepcopy(fixed)
    other[1]["load_measured"] = 0.75
    patterns, records, notes = golden_records([fixed, other], True, 0.05, order_free=True)
    assert ["load_measured"] in patterns and "load_measured" in notes[-1]
    with pytest.raises(ValueError, match="numbers of lines"):
        golden_records([fixed, fixed[:1]], True, 0.05, order_free=True)


def test_unverified_lines():
    assert unverified([{"verified": True}, {"all_verified": True}]) == []
    assert unverified([{"verified": False}, {"all_verified": False}, {}]) == [
        {"verified": False}, {"all_verified": False}]
