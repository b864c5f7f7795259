"""mpi_coded.results: the one schema package (writer, readers, typed views)."""

from __future__ import annotations

import ast
import dataclasses
import json
import types
import typing
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_mpi
from mpi_coded import results
from mpi_coded.results import (
    SCHEMA_VERSION,
    CodedConfig,
    CodedRun,
    ElasticConfig,
    ElasticStep,
    ElasticSummary,
    ResultsWriter,
    SchemaError,
)

CEC_CONFIG = {"kind": "config", "job": "cec", "N": 3, "L": 2, "speeds": ["1", "3/2", "2"],
              "rows": 12, "cols": 4, "field": "float64", "policy": "heterogeneous",
              "t_row": 0.0, "seed": 0, "schedule": [[1, 2, 3]], "host": "h"}
CEC_STEP = {"kind": "step", "job": "cec", "step": 1, "policy": "heterogeneous",
            "available": [1, 2, 3], "predicted_s": 0.0, "wall_s": 0.01, "verified": True,
            "load": {"1": "1/3"}, "a_field_added_later": [1, 2]}
CEC_SUMMARY = {"kind": "summary", "job": "cec", "steps": 1, "all_verified": True,
               "total_wall_s": 0.01, "total_predicted_s": 0.0}
CODED_CONFIG = {"kind": "config", "job": "coded", "scheme": "bdc", "K": 4, "q": 3,
                "mu": "2/3", "rows_per_batch": 2, "n": 8, "N": 6, "T": 2, "field": "float64",
                "assignment": ""}
CODED_RUN = {"kind": "run", "job": "coded", "rep": 0, "scheme": "bdc", "K": 4, "q": 3,
             "mu": "2/3", "rows_per_batch": 2, "m": 9, "n": 8, "N": 6, "T": 3,
             "field": "float64", "verified": True, "Q": [0, 1, 2], "encode_s": 0.1,
             "map_s": 0.2, "shuffle_s": 0.3, "reduce_s": 0.4, "total_s": 1.0}
CODED_SUMMARY = {"kind": "summary", "job": "coded", "reps": 1, "all_verified": True}


def write(path: Path, recs: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + tail)
    return path


def test_writer_round_trip(tmp_path):
    out = tmp_path / "sub" / "r.jsonl"
    w = ResultsWriter(str(out))
    w.write({"kind": "step", "x": Fraction(1, 3), "a": np.arange(3), "f": np.float64(0.5),
             "d": {1: np.int64(2)}})
    w.close()
    assert results.read_results(out) == [{"kind": "step", "x": "1/3", "a": [0, 1, 2],
                                          "f": 0.5, "d": {"1": 2}, "schema": SCHEMA_VERSION}]
    assert w.lines == results.read_results(out)


def test_read_skips_blank_lines_and_a_torn_last_line(tmp_path):
    f = write(tmp_path / "r.jsonl", [CEC_CONFIG, CEC_STEP], tail='\n{"kind": "st')
    assert results.read_results(f) == [CEC_CONFIG, CEC_STEP]
    lines = results.scan_results(f)
    assert [x.number for x in lines] == [1, 2, 4]
    assert lines[-1].torn and lines[-1].error and lines[-1].text == '{"kind": "st'


@pytest.mark.parametrize("text", ['{"kind": "config"}\nnot json\n{"kind": "step"}\n',
                                  '{"kind": "config"}\nnot json\n',  # complete, not torn
                                  '[1, 2]\n'])
def test_read_refuses_other_bad_lines(tmp_path, text):
    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    with pytest.raises(SchemaError, match=r"bad.jsonl: line \d"):
        results.read_results(f)


def test_records_filter_by_kind_and_job():
    lines = [CEC_CONFIG, CEC_STEP, CODED_CONFIG, CODED_RUN, {"kind": "step", "step": 2}]
    assert results.records(lines, "config") == [CEC_CONFIG, CODED_CONFIG]
    assert results.records(lines, job="coded") == [CODED_CONFIG, CODED_RUN]
    # lines of older runtimes without a job: the kind implies it
    assert results.records(lines, "step", "cec") == [CEC_STEP, {"kind": "step", "step": 2}]
    assert results.job_of({"kind": "run"}) == "coded"
    assert results.job_of({"kind": "summary"}) is None


def test_views_take_declared_fields_and_keep_the_rest():
    s = ElasticStep.from_record(CEC_STEP)
    assert (s.step, s.available, s.wall_s, s.verified) == (1, [1, 2, 3], 0.01, True)
    assert s.replanned is False and s.late == []  # optional fields default
    assert s.get("a_field_added_later") == [1, 2] and s.raw is CEC_STEP
    assert "step" in ElasticStep.names() and "a_field_added_later" not in ElasticStep.names()
    assert set(ElasticStep.required()) == {"step", "policy", "available", "predicted_s",
                                           "wall_s", "verified"}
    r = CodedRun.from_record(CODED_RUN)
    assert [r.phase_s(p) for p in ("encode", "map", "shuffle", "reduce")] == [.1, .2, .3, .4]
    assert isinstance(results.view(CODED_RUN), CodedRun)
    assert isinstance(results.view(CODED_CONFIG), CodedConfig)
    assert isinstance(results.view(CEC_CONFIG), ElasticConfig)
    assert isinstance(results.view(CEC_SUMMARY), ElasticSummary)
    fail = results.run_failed("timed out", None, "")
    assert results.view(fail).reason == "timed out"


def test_views_refuse_missing_fields_and_other_kinds():
    bad = {k: v for k, v in CEC_STEP.items() if k != "wall_s"}
    with pytest.raises(SchemaError, match="lacks wall_s"):
        ElasticStep.from_record(bad)
    with pytest.raises(SchemaError, match="not a cec 'step' line"):
        ElasticStep.from_record(CODED_RUN)
    with pytest.raises(SchemaError, match="no view"):
        results.view({"kind": "nonsense"})


def test_jobs_group_lines_after_their_config():
    lines = [CEC_STEP,  # before any config: left out
             CEC_CONFIG, CEC_STEP, {**CEC_STEP, "step": 2}, CEC_SUMMARY,
             CODED_CONFIG, CODED_RUN, {**CODED_RUN, "rep": 1}, CODED_SUMMARY,
             {**CEC_CONFIG, "policy": "cyclic"}]
    cec = results.elastic_jobs(lines)
    assert [len(j.steps) for j in cec] == [2, 0]
    assert cec[0].summary is not None and cec[0].summary.all_verified
    assert cec[1].config.policy == "cyclic" and cec[1].summary is None
    coded = results.coded_jobs(lines)
    assert len(coded) == 1 and [r.rep for r in coded[0].runs] == [0, 1]
    assert coded[0].config.T == 2 and coded[0].summary is not None


def test_sweep_runs_and_verdict():
    note = results.sweep_note("S", 0, 0, {"cols": 4}, "h", {"python": "3"}, "local")
    assert tuple(note) == results.SWEEP_KEYS
    ok = [{**r, **note} for r in (CEC_CONFIG, CEC_STEP, CEC_SUMMARY)]
    note1 = results.sweep_note("S", 1, 0, {"cols": 8}, "h", {}, "local")
    failed = [{**CEC_CONFIG, **note1}, {**results.run_failed("exit status 1", 1, ""), **note1}]
    other = [{**CEC_CONFIG, **results.sweep_note("T", 0, 0, {}, "h", {}, "local")}]
    runs = results.sweep_runs([CEC_CONFIG, *ok, *failed, *other], "S")
    assert [(r.run, r.params, r.failed) for r in runs] == [(0, {"cols": 4}, False),
                                                          (1, {"cols": 8}, True)]
    assert runs[0].summary is not None and len(runs[0].steps) == 1
    assert len(results.sweep_runs(ok + other)) == 2
    assert results.verdict([CEC_CONFIG, CEC_STEP, CEC_SUMMARY]) is None
    assert results.verdict([CEC_CONFIG, CEC_STEP]) == "no summary line"
    assert results.verdict([{**CEC_STEP, "verified": False}, CEC_SUMMARY]) == \
        "a step did not verify"
    assert results.verdict([CEC_STEP, {**CEC_SUMMARY, "all_verified": False}]) == \
        "summary: all_verified is false"


@pytest.mark.mpi
def test_the_runtime_writes_what_the_views_read(tmp_path):
    """Every line both jobs write has a view, and the jobs group as written."""
    cec, coded = tmp_path / "cec.jsonl", tmp_path / "coded.jsonl"
    r = run_mpi(7, ["run", "cec", "--t-row", "0", "--out", str(cec)], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_mpi(5, ["run", "coded", "--scheme", "bdc", "--K", "4", "--q", "3", "--mu", "2/3",
                    "--rows-per-batch", "2", "--n", "8", "--N", "6", "--T", "3",
                    "--field", "float64", "--t-row", "0", "--reps", "2", "--out", str(coded)],
                timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = results.read_results(cec) + results.read_results(coded)
    for rec in lines:
        v = results.view(rec)
        again = json.loads(json.dumps(results.jsonable(v.to_dict())))
        assert type(v).from_record(again) == v  # read back into the same class
        if results.job_of(rec) == results.CEC:  # the runtime writes every declared field
            assert {k: rec.get(k) for k in again} == again
    (job,) = results.elastic_jobs(lines)
    assert [s.step for s in job.steps] == [1, 2, 3, 4]
    assert job.summary is not None and job.summary.all_verified
    assert all(s.verified and s.sets for s in job.steps)
    assert len(results.views(lines, results.ElasticSetup)) == 1
    (cjob,) = results.coded_jobs(lines)
    assert cjob.config.scheme == "bdc" and len(cjob.runs) == 2
    assert all(r.verified and r.T == 3 and r.load_measured_exact for r in cjob.runs)
    assert cjob.summary is not None and cjob.summary.all_verified


# --- every record kind: written by the same class that reads it back -----------------------


def _sample(tp: Any, salt: int) -> Any:
    """A JSON-typed value of type ``tp`` unlike its default (``salt`` varies it)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return _sample(next(a for a in args if a is not type(None)), salt)
    if origin is list:
        return [_sample(args[0], salt), _sample(args[0], salt + 1)]
    if origin is dict:
        return {str(salt): _sample(args[1], salt)}
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _sample(hints[f.name], salt + i)
                     for i, f in enumerate(dataclasses.fields(tp))
                     if f.name not in ("raw", "schema")})
    if tp is bool:
        return salt % 2 == 0
    if tp is int:
        return 1000 + salt
    if tp is float:
        return 0.5 + salt
    if tp is str:
        return f"s{salt}"
    return {"any": salt}  # Any


def record_kinds() -> list[type[results.Record]]:
    """Every kind of line: the classes :func:`results.view` reads."""
    return list(dict.fromkeys(results.VIEWS.values()))


@pytest.mark.parametrize("cls", record_kinds(), ids=lambda c: c.__name__)
def test_every_record_kind_round_trips_field_for_field(tmp_path, cls):
    rec = _sample(cls, 1)
    out = tmp_path / "r.jsonl"
    w = ResultsWriter(str(out))
    w.write(rec)
    w.close()
    (line,) = results.read_results(out)
    assert (line["kind"], line.get("job")) == (cls.KIND, cls.JOB)
    back = results.view(line)
    assert type(back) is cls
    for f in dataclasses.fields(cls):
        if f.name != "raw":
            assert getattr(back, f.name) == getattr(rec, f.name), f.name
    assert line["schema"] == SCHEMA_VERSION
    assert back == rec and back.to_dict() == line
    assert set(line) == {"kind", *(["job"] if cls.JOB else []), *cls.names()}


def test_optional_fields_and_parts_are_absent_while_none():
    step = ElasticStep(step=1, policy="uncoded", available=[1], predicted_s=0.0, wall_s=0.1,
                       verified=True)
    line = json.loads(json.dumps(results.jsonable(step.to_dict())))
    assert "transpose" not in line and line["eigenvalue"] is None  # None, but written
    assert ElasticStep.from_record(line) == step
    cfg = ElasticConfig(N=1, L=1, speeds=["1"], rows=1, cols=1, field="float64",
                        policy="cyclic", t_row=0.0)
    line = cfg.to_dict()
    assert "host" not in line and "S" not in line
    assert ElasticConfig.from_record(line).run is None
    with_run = dataclasses.replace(cfg, run=results.RunContext(host="h", mpi="MPICH"))
    line = with_run.to_dict()
    assert line["host"] == "h" and ElasticConfig.from_record(line).host == "h"


def test_a_linreg_step_joins_its_transpose_product():
    a = ElasticStep(step=2, policy="cyclic", available=[1, 2], predicted_s=1.0, wall_s=2.0,
                    verified=True, max_error=1e-15, oracle_time_s=1.0, true_time_s=1.0,
                    bytes_step=10)
    b = dataclasses.replace(a, wall_s=3.0, verified=False, max_error=1e-14, bytes_step=5)
    j = a.with_transpose(b, residual=0.25)
    assert (j.wall_s, j.bytes_step, j.verified, j.max_error, j.residual) == \
        (5.0, 15, False, 1e-14, 0.25)
    assert j.true_over_oracle == 1.0 and j.transpose is not None
    assert j.transpose.wall_s == 3.0 and j.transpose.verified is False
    line = json.loads(json.dumps(results.jsonable(j.to_dict())))
    assert line["transpose"]["wall_s"] == 3.0 and ElasticStep.from_record(line) == j


@pytest.mark.parametrize("toml", [
    {}, {"speeds": "auto", "estimator": "median", "estimator_window": 3},
    {"S": 1, "suspect_after": 3, "stragglers": 1, "straggler_factor": 2.0},
    {"workload": "power", "rows": 12, "cols": 12, "policy": "uncoded"},
    {"availability": {"kind": "random", "p": 0.5, "steps": 3}},
])
def test_the_elastic_config_line_declares_every_config_key(toml):
    from mpi_coded.cec.config import from_mapping

    cfg = from_mapping(toml)
    rec = ElasticConfig.of(cfg.to_dict(), results.RunContext.here(), 1)
    line = json.loads(json.dumps(results.jsonable(rec.to_dict())))
    assert {k: v for k, v in line.items() if k in cfg.to_dict()} == \
        json.loads(json.dumps(results.jsonable(cfg.to_dict())))
    assert ElasticConfig.from_record(line) == rec
    with pytest.raises(SchemaError, match="does not declare nonsense"):
        ElasticConfig.of({**cfg.to_dict(), "nonsense": 1}, results.RunContext(), 1)


ROOT = Path(__file__).resolve().parent.parent
NAMES = {results.CEC, results.CODED, results.CONFIG, results.SETUP, results.STEP,
         results.SUMMARY, results.RUN, results.RUN_FAILED}
KEYS = (results.KIND_KEY, results.JOB_KEY)


def _defined(path: Path) -> list[str]:
    """The public names a module defines at its top level."""
    out: list[str] = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                out += [e.id for e in ast.walk(t) if isinstance(e, ast.Name)]
    return [k for k in out if not k.startswith("_") and k not in ("empty_list", "empty_dict")]


def test_the_package_re_exports_every_public_name_of_its_modules():
    import importlib

    for path in sorted((ROOT / "mpi_coded" / "results").glob("*.py")):
        if path.name == "__init__.py":
            continue
        mod = importlib.import_module(f"mpi_coded.results.{path.stem}")
        names = _defined(path)
        assert names and [k for k in names if k not in results.__all__] == [], path.name
        assert all(getattr(results, k) is getattr(mod, k) for k in names)


@pytest.mark.parametrize("rel", [
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "mpi_coded" / "results").glob("*.py")
            if p.name != "names.py"),
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "mpi_coded" / "report").glob("*.py")),
    "mpi_coded/cec/resume.py", "mpi_coded/cli/report.py"])
def test_line_kinds_and_jobs_are_spelled_once(rel):
    """Outside ``results/names.py`` a line's ``kind`` or ``job`` is read with ``kind_of`` /
    ``job_of`` and compared with the constants, never with a string literal."""
    tree = ast.parse((ROOT / rel).read_text())
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            bad += [f"{rel}:{node.lineno} compares with {c.value!r}"
                    for c in [node.left, *node.comparators]
                    if isinstance(c, ast.Constant) and c.value in NAMES]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in KEYS:
            bad.append(f"{rel}:{node.lineno} reads {node.args[0].value!r}")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and node.slice.value in KEYS:
            bad.append(f"{rel}:{node.lineno} reads {node.slice.value!r}")
    assert bad == []


def test_every_line_carries_the_schema_version_and_a_newer_major_is_refused_in_one_line(
        tmp_path):
    out = tmp_path / "r.jsonl"
    w = results.ResultsWriter(str(out))
    w.write({"kind": "step", "verified": True})
    w.close()
    (line,) = results.read_results(out)
    assert line["schema"] == SCHEMA_VERSION
    # an older file (no version) still reads; a newer minor too (it only adds keys)
    major = int(SCHEMA_VERSION.split(".")[0])
    out.write_text('{"kind": "step"}\n' + json.dumps({"kind": "step",
                                                       "schema": f"{major}.99"}) + "\n")
    assert len(results.read_results(out)) == 2
    out.write_text(json.dumps({"kind": "step", "schema": f"{major + 1}.0"}) + "\n")
    with pytest.raises(results.SchemaError) as exc:
        results.read_results(out)
    assert "line 1" in str(exc.value) and f"{major + 1}.0" in str(exc.value)
    assert "\n" not in str(exc.value)
