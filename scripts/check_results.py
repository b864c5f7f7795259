"""Check that a JSON-lines results file holds verified results.

    python scripts/check_results.py FILE [FILE ...] [--min-runs K]

Every line with a ``verified`` key must say ``true``, every line with an
``all_verified`` key (the summary) must say ``true``, and each file must hold
at least one step line and at least one summary line (``--min-runs``: at least K
summary lines, for a sweep's combined file).  A summary that says the job ended early
(``ended_early``: a host lost, the launcher's end) passes when a resumed job follows it in
the file (a config line with ``first_step`` > 1: ``--resume``, e.g. a relaunch on the hosts
left, docs/storage.md); its steps are checked all the same.  A line of kind ``run_failed``
(written by ``scripts/sweep.py``) fails the check.  Prints one line per file,
``OK`` or what is wrong; exit status 0 when every file passes, 1 otherwise.  A torn last
line (a job killed mid-write) is reported too.  Files are read through
:mod:`mpi_coded.results`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mpi_coded.results import ALL_VERIFIED, RUN_FAILED, VERIFIED, kind_of, scan_results  # noqa: E402


def check(path: Path, min_runs: int = 1) -> list[str]:
    """The problems with ``path`` (empty when it verified)."""
    if not path.is_file():
        return [f"{path}: no such file"]
    problems = []
    steps = summaries = 0
    early: list[str] = []  # ended early: passes when a resumed job follows
    try:
        lines = scan_results(path)
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: cannot read: {exc}"]
    for line in lines:
        i, rec = line.number, line.record
        if line.error is not None:
            torn = " (torn last line: the job was killed mid-write)" if line.torn else ""
            problems.append(f"line {i}: not JSON ({line.error}){torn}")
            continue
        if not isinstance(rec, dict):
            problems.append(f"line {i}: not a JSON object")
            continue
        kind = kind_of(rec)
        if kind == "config" and int(rec.get("first_step") or 1) > 1:
            early = []  # the job ended early was resumed
        if kind == RUN_FAILED:
            problems.append(f"line {i}: a run failed: {rec.get('reason')}")
        if VERIFIED in rec:
            steps += 1
            if rec[VERIFIED] is not True:
                problems.append(f"line {i}: {kind} {rec.get('step', '')} not verified")
        if ALL_VERIFIED in rec:
            summaries += 1
            if rec[ALL_VERIFIED] is not True:
                what = f"line {i}: summary says {ALL_VERIFIED} = {rec[ALL_VERIFIED]}"
                (early if rec.get("ended_early") else problems).append(what)
    problems += [f"{p} (ended early and not resumed)" for p in early]
    if steps == 0:
        problems.append(f"no line with '{VERIFIED}'")
    if summaries < min_runs:
        problems.append(f"{summaries} summary lines with '{ALL_VERIFIED}', expected >= "
                        f"{min_runs}")
    return [f"{path}: {p}" for p in problems]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--min-runs", type=int, default=1,
                    help="summary lines each file must hold (default 1)")
    args = ap.parse_args(argv)
    bad = False
    for f in args.files:
        problems = check(f, args.min_runs)
        if problems:
            bad = True
            print("\n".join(problems))
        else:
            print(f"{f}: OK, verified")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
