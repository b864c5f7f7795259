"""Wrong answers (issue 44, item 6): the cost of checking every product, machines that answer
well-formed and wrong in the elastic job, a stored block changed on disk, and servers that
answer wrong in the coded job (docs/benchmarks.md, "Wrong answers"); the bench itself is
:mod:`mpi_coded.bench.wrong_answers`.

    python scripts/bench_wrong_answers.py --out docs/runs/bench_wrong_answers.jsonl  # ~6 min
    python scripts/bench_wrong_answers.py --quick          # a few steps, 7 ranks (the test's)
"""

from __future__ import annotations

from mpi_coded.bench.wrong_answers import main

if __name__ == "__main__":
    raise SystemExit(main())
