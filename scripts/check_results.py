"""Check that a JSON-lines results file holds verified results.

    python scripts/check_results.py FILE [FILE ...] [--min-runs K]

Every line with a ``verified`` key must say ``true``, every line with an
``all_verified`` key (the summary) must say ``true``, and each file must hold
at least one step line and at least one summary line (``--min-runs``: at least K
summary lines, for a sweep's combined file).  A line of kind ``run_failed``
(written by ``scripts/sweep.py``) fails the check.  Prints one line per file,
``OK`` or what is wrong; exit status 0 when every file passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def check(path: Path, min_runs: int = 1) -> list[str]:
    """The problems with ``path`` (empty when it verified)."""
    if not path.is_file():
        return [f"{path}: no such file"]
    problems = []
    steps = summaries = 0
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {i}: not JSON ({exc})")
            continue
        kind = rec.get("kind")
        if kind == "run_failed":
            problems.append(f"line {i}: a run failed: {rec.get('reason')}")
        if "verified" in rec:
            steps += 1
            if rec["verified"] is not True:
                problems.append(f"line {i}: {kind} {rec.get('step', '')} not verified")
        if "all_verified" in rec:
            summaries += 1
            if rec["all_verified"] is not True:
                problems.append(f"line {i}: summary says all_verified = {rec['all_verified']}")
    if steps == 0:
        problems.append("no line with 'verified'")
    if summaries < min_runs:
        problems.append(f"{summaries} summary lines with 'all_verified', expected >= {min_runs}")
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
