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

Numbers are compared as numbers (:func:`compare_text`, used for both files): every number
in a golden stdout (JSON or text table) or result line must match within a relative
tolerance of :data:`FLOAT_RTOL` (absolute :data:`FLOAT_ATOL` near 0), so the last bits a
different numpy, BLAS or libm prints do not fail the test; everything else, integers
included, must match exactly.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cmd, run_mpi
from mpi_coded.golden import drop_paths  # scripts/make_golden.py's own rule, not a copy

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


# --- comparing outputs: numbers as numbers, everything else exactly ----------------------

FLOAT_RTOL = 1e-9
"""Relative tolerance of a float: numpy, BLAS/LAPACK and libm versions differ in the last
bits (``339812.6497216623`` against ``339812.64972166234``, 1 ulp)."""
FLOAT_ATOL = 1e-12
"""Absolute tolerance, for floats near 0 (``max_error`` of a float64 decode, ~1e-15)."""

NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w]|\.\d)")
"""A number standing on its own: not part of a word (``K9``, ``gf2^8``, ``x86_64``) or of
a dotted version (``1.26.4``); those stay text and must match exactly."""


def split_numbers(line: str) -> tuple[list[str], list[str]]:
    """``(texts, numbers)``: the line is ``texts[0] numbers[0] texts[1] ... texts[-1]``."""
    parts = NUMBER.split(line)
    return parts, NUMBER.findall(line)


def is_float_literal(tok: str) -> bool:
    return any(c in tok for c in ".eE")


def numbers_equal(want: str, got: str) -> bool:
    """Two number tokens are the same value.

    Integers (no ``.``, no exponent: counts, ids, rows, sizes, numerators) must be equal
    exactly.  Floats (``.`` or an exponent) within :data:`FLOAT_RTOL` / :data:`FLOAT_ATOL`.
    An integer never equals a float: ``"3"`` against ``"3.0"`` is a difference, since in
    the JSON outputs it is a changed type (``int`` to ``float``) a reader of the line sees,
    and Python prints every float with a ``.`` or an exponent, so last-bit noise never
    turns one into the other (``%g`` in the text tables rounds to 6 digits either way).
    """
    fw, fg = is_float_literal(want), is_float_literal(got)
    if fw != fg:
        return False
    if not fw:
        return int(want) == int(got)
    return math.isclose(float(want), float(got), rel_tol=FLOAT_RTOL, abs_tol=FLOAT_ATOL)


def compare_line(want: str, got: str) -> str | None:
    """``None`` if the lines match (numbers as numbers), else what differs, in words."""
    wt, wn = split_numbers(want)
    gt, gn = split_numbers(got)
    if len(wn) != len(gn):
        return f"{len(gn)} numbers, golden {len(wn)}"
    if wt != gt:
        bad = next(i for i, (a, b) in enumerate(zip(wt, gt)) if a != b)
        return f"text differs: golden {wt[bad]!r}, current {gt[bad]!r}"
    diffs = []
    for i, (a, b) in enumerate(zip(wn, gn)):
        if not numbers_equal(a, b):
            where = (wt[i][-30:] or "(start)").strip() or repr(wt[i][-30:])
            rel = ""
            if is_float_literal(a) and is_float_literal(b) and float(a) != 0:
                rel = f", relative change {(float(b) - float(a)) / abs(float(a)):.3g}"
            diffs.append(f"number {i + 1} (after {where!r}): golden {a}, current {b}{rel}")
    return "; ".join(diffs) if diffs else None


def compare_text(want: str, got: str, what: str) -> str | None:
    """``None`` if ``got`` matches the golden ``want`` (numbers within tolerance, all else
    exactly), else a readable report: the differing numbers or words per line, then a
    unified diff of the lines that differ."""
    wl, gl = want.splitlines(keepends=True), got.splitlines(keepends=True)
    if len(wl) != len(gl):
        return f"{len(gl)} lines, golden {len(wl)}:\n" + diff(want, got, what)
    problems = []
    for i, (a, b) in enumerate(zip(wl, gl)):
        if a.endswith("\n") != b.endswith("\n"):
            problems.append((i, "a final newline differs"))
            continue
        why = compare_line(a.rstrip("\n"), b.rstrip("\n"))
        if why:
            problems.append((i, why))
    if not problems:
        return None
    report = [f"{what} line {i + 1}: {why}" for i, why in problems]
    shown = [wl[i] for i, _ in problems], [gl[i] for i, _ in problems]
    return "\n".join(report) + "\n" + diff("".join(shown[0]), "".join(shown[1]), what)


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
    report = compare_text(want["stdout"], got["stdout"], "stdout")
    if report:
        problems.append(report)
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


def restrict(got: Any, want: Any) -> Any:
    """``got`` cut to the keys ``want`` has: new fields are not differences."""
    if isinstance(want, dict) and isinstance(got, dict):
        return {k: restrict(got[k], v) if k in got else got.get(k) for k, v in want.items()}
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [restrict(g, w) for g, w in zip(got, want)]
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
    parts = []
    for i in range(max(len(got), len(want))):
        a = dump(want[i]) if i < len(want) else ""
        b = dump(got[i]) if i < len(got) else ""
        report = compare_text(a, b, f"record {i + 1}")
        if report:
            parts.append(report)
    if parts:
        head = (f"mpiexec -n {case['np']} mpi-coded {' '.join(case['argv'])}: result lines "
                f"differ from tests/golden/mpi_runs.json ({len(got)} lines, golden "
                f"{len(want)}; dropped paths: {['.'.join(p) for p in case['drop']]})\n")
        pytest.fail(head + "\n".join(parts), pytrace=False)


# --- the comparator itself ----------------------------------------------------------------

LT_TOTAL = "339812.64972166234"  # model_lt_small_json's encode delay, as golden
LT_FRESH = "339812.6497216623"   # ... as a fresh install printed it (1 ulp below)


def test_compare_passes_one_ulp_and_the_fresh_install_value() -> None:
    x = float(LT_TOTAL)
    assert float(LT_FRESH) == math.nextafter(x, 0)
    for a, b in ((LT_TOTAL, LT_FRESH), (repr(x), repr(math.nextafter(x, math.inf))),
                 ("3.377738443436572e-15", "4.1e-15"), ("0.0", "-1e-17")):
        assert compare_text(f'{{"encode": {a}, "rows": 40}}\n',
                            f'{{"encode": {b}, "rows": 40}}\n', "stdout") is None, (a, b)
    table = "  delay  encode 339813  map 1.5052e+06  total 2.05022e+06\n"
    assert compare_text(table, table, "stdout") is None


def test_compare_fails_a_relative_change_of_1e_6_and_names_the_number() -> None:
    changed = repr(float(LT_TOTAL) * (1 + 1e-6))
    report = compare_text(f'{{"scheme": "lt", "encode": {LT_TOTAL}}}\n',
                          f'{{"scheme": "lt", "encode": {changed}}}\n', "stdout")
    assert report is not None
    assert f"golden {LT_TOTAL}, current {changed}" in report and "relative change 1e-06" in report
    assert "stdout line 1" in report and "-{" in report and "+{" in report  # the line diff
    # inside a text table too
    report = compare_text("load 0.688992  servers 4.0000\n", "load 0.688993  servers 4.0000\n",
                          "stdout")
    assert report is not None and "golden 0.688992, current 0.688993" in report


def test_compare_fails_a_changed_word_or_integer() -> None:
    assert "text differs" in (compare_text("decoder peeling 4\n", "decoder fft 4\n", "o") or "")
    assert compare_text("rows 0..140\n", "rows 0..141\n", "o") is not None
    assert compare_text("load 11/24\n", "load 11/25\n", "o") is not None
    assert compare_text("bytes 4032000\n", "bytes 4032001\n", "o") is not None  # ints: exact
    # numbers inside words and versions are text: compared exactly
    assert compare_text("gf2^8 numpy 1.26.4\n", "gf2^8 numpy 1.26.5\n", "o") is not None
    assert compare_text("field gf2^8\n", "field gf2^16\n", "o") is not None


def test_compare_fails_a_different_count_of_numbers_or_lines() -> None:
    report = compare_text("[1, 2, 3]\n", "[1, 2]\n", "o")
    assert report is not None and "2 numbers, golden 3" in report
    report = compare_text("a 1\nb 2\n", "a 1\n", "o")
    assert report is not None and "1 lines, golden 2" in report
    assert compare_text("a 1\n", "a 1", "o") is not None


def test_compare_an_integer_never_equals_a_float() -> None:
    """``3`` against ``3.0`` is a changed type in a JSON line (see :func:`numbers_equal`)."""
    assert compare_text('{"servers_needed": 4.0}\n', '{"servers_needed": 4}\n', "o") is not None
    assert compare_text("x 3\n", "x 3.0\n", "o") is not None
    assert compare_text("x 3.0\n", "x 3.0000000000000004\n", "o") is None
