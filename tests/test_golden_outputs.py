"""Golden outputs: the command line prints and records what it did before.

``tests/golden/pure_commands.json`` pins the exact stdout and exit status of the pure
subcommands (``plan cec``, ``load``, ``model``, ``solve``); ``tests/golden/mpi_runs.json``
pins the deterministic fields of the MPI jobs' JSON result lines (each case lists the
paths it drops: timings, hosts, versions, and a finishing order the scheduler decides).
Both were made by ``scripts/make_golden.py``; regenerate them only on purpose.

Everything runs as ``python -m mpi_coded`` (the package pytest imports), never through
an internal module, so moving modules around cannot change what is tested.  The pure
commands run in one process: a driver executes ``mpi_coded``'s ``__main__`` once per
argv with stdout captured (a few are also checked as separate processes).
"""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, run_cmd, run_mpi

sys.path.insert(0, str(ROOT / "scripts"))
from make_golden import drop_paths  # noqa: E402  (the generator's own rule, not a copy)

GOLDEN = Path(__file__).resolve().parent / "golden"
PURE = json.loads((GOLDEN / "pure_commands.json").read_text())
MPI_RUNS = json.loads((GOLDEN / "mpi_runs.json").read_text())
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

DRIVER = r"""
import contextlib, io, json, runpy, sys, traceback

cases_file, results_file = sys.argv[1:3]
cases = json.loads(open(cases_file).read())
results = {}
for name, argv in cases.items():
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["mpi-coded", *argv]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("mpi_coded", run_name="__main__", alter_sys=False)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    results[name] = {"stdout": out.getvalue(), "returncode": code, "stderr": err.getvalue()}
with open(results_file, "w") as f:
    json.dump(results, f)
"""


def diff(expected: str, got: str, what: str) -> str:
    lines = difflib.unified_diff(expected.splitlines(keepends=True),
                                 got.splitlines(keepends=True),
                                 fromfile=f"golden {what}", tofile=f"current {what}")
    return "".join(lines) or f"(no line diff; repr golden={expected!r} current={got!r})"


def check_pure(name: str, got: dict[str, Any]) -> None:
    want = PURE[name]
    problems = []
    if got["returncode"] != want["returncode"]:
        problems.append(f"exit status {got['returncode']}, golden {want['returncode']}")
    if got["stdout"] != want["stdout"]:
        problems.append(diff(want["stdout"], got["stdout"], "stdout"))
    if problems:
        if got.get("stderr"):
            problems.append(f"stderr:\n{got['stderr']}")
        pytest.fail(f"mpi-coded {' '.join(want['argv'])}\n" + "\n".join(problems),
                    pytrace=False)


@pytest.fixture(scope="module")
def pure_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("golden")
    (tmp / "cases.json").write_text(json.dumps({k: v["argv"] for k, v in PURE.items()}))
    r = run_cmd([sys.executable, "-c", DRIVER, str(tmp / "cases.json"),
                 str(tmp / "results.json")], timeout=120, env=ONE_THREAD)
    assert r.returncode == 0, r.stdout + r.stderr
    results: dict[str, Any] = json.loads((tmp / "results.json").read_text())
    return results


@pytest.mark.parametrize("name", sorted(PURE))
def test_pure_command(pure_results: dict[str, Any], name: str) -> None:
    check_pure(name, pure_results[name])


@pytest.mark.parametrize("name", ["plan_no4_heterogeneous_rows420", "load_unified_K9_json",
                                  "model_bdc_paper_T250", "solve_bnb_tiny_json"])
def test_pure_command_as_its_own_process(name: str) -> None:
    """The in-process driver sees what a real ``python -m mpi_coded`` prints."""
    r = run_cmd([sys.executable, "-m", "mpi_coded", *PURE[name]["argv"]], timeout=60,
                env=ONE_THREAD)
    check_pure(name, {"stdout": r.stdout, "returncode": r.returncode, "stderr": r.stderr})


FLOAT_RTOL = 1e-9
"""Floats from BLAS/LAPACK (``max_error``, ``condition``) may differ in the last bits."""


def restrict(got: Any, want: Any) -> Any:
    """``got`` cut to the keys ``want`` has (new fields are not differences), floats that
    match ``want`` to :data:`FLOAT_RTOL` replaced by ``want``'s value."""
    if isinstance(want, dict) and isinstance(got, dict):
        return {k: restrict(got[k], v) if k in got else got.get(k) for k, v in want.items()}
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [restrict(g, w) for g, w in zip(got, want)]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if abs(got - want) <= FLOAT_RTOL * max(abs(want), 1e-300):
            return want
    return got


def dump(rec: Any) -> str:
    return json.dumps(rec, indent=1, sort_keys=True) + "\n"


@pytest.mark.mpi
@pytest.mark.parametrize("name", list(MPI_RUNS))
def test_mpi_job_deterministic_fields(tmp_path: Path, name: str) -> None:
    case = MPI_RUNS[name]
    out = tmp_path / "out.jsonl"
    r = run_mpi(case["np"], [*case["argv"], "--out", str(out)], timeout=300, env=ONE_THREAD)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    want = case["records"]
    got = [restrict(drop_paths(x, case["drop"]), w) for x, w in zip(lines, want)]
    got += lines[len(want):]
    if got != want:
        head = (f"mpiexec -n {case['np']} mpi-coded {' '.join(case['argv'])}: result lines "
                f"differ from tests/golden/mpi_runs.json ({len(got)} lines, golden "
                f"{len(want)}; dropped paths: {['.'.join(p) for p in case['drop']]})\n")
        parts = []
        for i in range(max(len(got), len(want))):
            a = dump(want[i]) if i < len(want) else ""
            b = dump(got[i]) if i < len(got) else ""
            if a != b:
                parts.append(diff(a, b, f"line {i + 1}"))
        pytest.fail(head + "\n".join(parts), pytrace=False)
