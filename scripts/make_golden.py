"""Regenerate the golden outputs that tests/test_golden_outputs.py compares against.

Two files in ``tests/golden/``:

- ``pure_commands.json``: ``{name: {"argv", "stdout", "returncode"}}`` for the pure
  subcommands (``plan cec``, ``load``, ``model``, ``solve``); each argv is run as its own
  ``python -m mpi_coded ARGV`` process, twice, and must print the same both times.
- ``mpi_runs.json``: ``{name: {"np", "argv", "drop", "records"}}`` for a few MPI jobs
  (``run cec``, ``run coded``).  ``records`` are the job's JSON result lines with the
  ``drop`` paths removed (timings, hosts, versions; ``"*"`` matches any key).  Every job
  runs ``--check-runs`` times (default 2): a field that differs between runs is dropped
  too (and reported).  ``Q``, ``extra`` and ``finishing_order`` of a coded job come from
  the real finishing order; they are kept only when the straggler draws (the recorded
  ``target_s`` of every server) are at least ``--margin`` seconds apart.

The test compares every number in these files as a number (relative 1e-9, see
``compare_text`` there) and everything else exactly: a new numpy or BLAS printing a float
one ulp apart is no reason to regenerate them.

Point it at another checkout (e.g. a worktree of HEAD, to pin the outputs from before a
change) with ``--pythonpath``::

    git worktree add /tmp/base HEAD
    .venv/bin/python scripts/make_golden.py --pythonpath /tmp/base

MPI jobs run with the working directory at that checkout's root (relative ``--config``
paths), ``mpiexec`` next to ``--python`` (or ``--mpiexec``), each in its own process
group with a timeout.  The rules that choose what to drop are :mod:`mpi_coded.golden`
(this checkout's, whichever ``--pythonpath`` the jobs run).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mpi_coded.golden import golden_records, unverified  # noqa: E402
from mpi_coded.results import CODED, read_results  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"

SPEEDS = "1,1,1.5,1.5,2,2"
AVAILABLE = {"all": "1,2,3,4,5,6", "no4": "1,2,3,5,6", "no46": "1,2,3,5", "no146": "2,3,5"}


def pure_cases() -> dict[str, list[str]]:
    cases: dict[str, list[str]] = {}
    # plan cec: the seed's worked example, every availability set of its schedule
    for aname, avail in AVAILABLE.items():
        for policy in ("heterogeneous", "cyclic"):
            for rows in (None, "420"):
                for js in (False, True):
                    argv = ["plan", "cec", "--speeds", SPEEDS, "--L", "3",
                            "--available", avail, "--policy", policy]
                    name = f"plan_{aname}_{policy}"
                    if rows:
                        argv += ["--rows", rows]
                        name += f"_rows{rows}"
                    if js:
                        argv.append("--json")
                        name += "_json"
                    cases[name] = argv
    cases["plan_default_available"] = ["plan", "cec", "--speeds", SPEEDS, "--L", "3"]
    # load: every scheme at the two reference settings (docs/theory.md, Part B)
    for K, q, mu in (("6", "4", "1/2"), ("9", "6", "1/3")):
        for scheme in ("uc", "cmr", "sc", "unified"):
            for js in (False, True):
                argv = ["load", "--scheme", scheme, "--K", K, "--q", q, "--mu", mu]
                name = f"load_{scheme}_K{K}"
                if js:
                    argv.append("--json")
                    name += "_json"
                cases[name] = argv
    # model: the paper's setting (K=9, q=6, mu=1/3, 250 rows per batch), bdc at several T
    paper = ["--K", "9", "--q", "6", "--mu", "1/3", "--rows-per-batch", "250"]
    for scheme in ("uc", "cmr", "sc", "unified"):
        cases[f"model_{scheme}_paper"] = ["model", "--scheme", scheme, *paper]
    cases["model_unified_paper_json"] = ["model", "--scheme", "unified", *paper, "--json"]
    for T in ("1", "10", "50", "250"):
        cases[f"model_bdc_paper_T{T}"] = ["model", "--scheme", "bdc", *paper, "--T", T]
        cases[f"model_bdc_paper_T{T}_json"] = ["model", "--scheme", "bdc", *paper, "--T", T,
                                               "--json"]
    cases["model_bdc_paper_T250_shift_only"] = ["model", "--scheme", "bdc", *paper, "--T",
                                                "250", "--shift-only", "--json"]
    small = ["--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4"]
    for scheme in ("uc", "cmr", "sc", "unified", "lt"):
        cases[f"model_{scheme}_small_json"] = ["model", "--scheme", scheme, *small, "--json"]
    cases["model_lt_small"] = ["model", "--scheme", "lt", *small]
    cases["model_bdc_small_T4"] = ["model", "--scheme", "bdc", *small, "--T", "4"]
    cases["model_bdc_K12_T4_json"] = ["model", "--scheme", "bdc", "--K", "12", "--q", "8",
                                      "--mu", "1/4", "--rows-per-batch", "4", "--T", "4",
                                      "--json"]
    # solve: every fast solver; bnb only on a tiny instance
    for solver in ("heuristic", "random", "hybrid"):
        cases[f"solve_{solver}_paper_T250"] = ["solve", *paper, "--T", "250", "--solver",
                                               solver]
        cases[f"solve_{solver}_small_T5_json"] = [
            "solve", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "2",
            "--T", "5", "--solver", solver, "--json"]
    cases["solve_hybrid_small_T2_strategy2_json"] = [
        "solve", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "2", "--T", "2",
        "--solver", "hybrid", "--strategy", "2", "--json"]
    cases["solve_random_small_T5_seed7"] = [
        "solve", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "2", "--T", "5",
        "--solver", "random", "--seed", "7"]
    tiny = ["--K", "4", "--q", "2", "--mu", "1/2", "--rows-per-batch", "4", "--T", "4"]
    cases["solve_bnb_tiny"] = ["solve", *tiny, "--solver", "bnb"]
    cases["solve_bnb_tiny_json"] = ["solve", *tiny, "--solver", "bnb", "--json"]
    cases["solve_heuristic_tiny_json"] = ["solve", *tiny, "--solver", "heuristic", "--json"]
    return cases


CODED_SMALL = ["--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4", "--n", "30",
               "--N", "12"]
# seed 83: every repetition's six straggler draws are >= 62 ms apart at t_row = 15 ms,
# so the finishing order (Q, extra) is the order of the draws, not of the scheduler
SEEDED = ["--straggler", "shiftexp", "--t-row", "0.015", "--seed", "83", "--reps", "2"]

MPI_CASES: dict[str, dict[str, Any]] = {
    "cec_seed_example": {"np": 7, "argv": ["run", "cec", "--config",
                                           "configs/seed_example.toml"]},
    "cec_seed_example_gf8_cyclic": {"np": 7, "argv": [
        "run", "cec", "--config", "configs/seed_example.toml", "--field", "gf2^8",
        "--policy", "cyclic", "--t-row", "0"]},
    # the README's coded job (no stragglers: Q is whoever the scheduler lets finish first)
    "coded_readme_unified": {"np": 7, "argv": ["run", "coded", "--scheme", "unified",
                                               *CODED_SMALL]},
    "coded_unified_seeded": {"np": 7, "argv": ["run", "coded", "--scheme", "unified",
                                               *CODED_SMALL, *SEEDED]},
    "coded_bdc_T20_seeded": {"np": 7, "argv": ["run", "coded", "--scheme", "bdc", "--T", "20",
                                               *CODED_SMALL, *SEEDED]},
    "coded_lt_seeded": {"np": 7, "argv": ["run", "coded", "--scheme", "lt", *CODED_SMALL,
                                          *SEEDED]},
}

# --- running ---------------------------------------------------------------------------

def make_env(pythonpath: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [pythonpath, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float
        ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise SystemExit(f"timed out after {timeout} s: {' '.join(cmd)}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def which_package(args: argparse.Namespace, env: dict[str, str], cwd: Path) -> None:
    """Print (and check) which mpi_coded the runs import, plain and under mpiexec."""
    code = "import mpi_coded; print(mpi_coded.__file__)"
    for cmd in ([args.python, "-c", code], [args.mpiexec, "-n", "1", args.python, "-c", code]):
        r = run(cmd, env, cwd, 60)
        where = r.stdout.strip()
        print(f"mpi_coded from {where}  ({cmd[0]})", file=sys.stderr)
        if args.pythonpath and not Path(where).resolve().is_relative_to(
                Path(args.pythonpath).resolve()):
            raise SystemExit(f"{cmd[0]} imports mpi_coded from {where}, not {args.pythonpath}")


def make_pure(args: argparse.Namespace, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    golden: dict[str, Any] = {}
    for name, argv in pure_cases().items():
        got = []
        for _ in range(2):
            r = run([args.python, "-m", "mpi_coded", *argv], env, cwd, 120)
            got.append((r.stdout, r.returncode))
        if got[0] != got[1]:
            raise SystemExit(f"{name}: two runs printed different output: {argv}")
        stdout, code = got[0]
        if code != 0 or not stdout:
            print(f"note: {name} exits {code} with {len(stdout)} bytes of stdout",
                  file=sys.stderr)
        golden[name] = {"argv": argv, "stdout": stdout, "returncode": code}
    return golden


def order_free(recs: list[dict[str, Any]]) -> bool:
    """The job's load does not depend on which servers finished: its scheme has a closed
    form load (asked of the scheme object named by its config line)."""
    from mpi_coded.coded.schemes import get as get_scheme

    return get_scheme(str(recs[0].get("scheme"))).closed_form_load


def make_mpi(args: argparse.Namespace, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    golden: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in MPI_CASES.items():
            runs = []
            for i in range(args.check_runs):
                out = Path(tmp) / f"{name}_{i}.jsonl"
                cmd = [args.mpiexec, "-n", str(case["np"]), args.python, "-m", "mpi_coded",
                       *case["argv"], "--out", str(out)]
                r = run(cmd, env, cwd, 300)
                if r.returncode != 0:
                    raise SystemExit(f"{name} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
                recs = read_results(out)
                bad = unverified(recs)
                if bad:
                    raise SystemExit(f"{name}: unverified results: {bad}")
                runs.append(recs)
            coded = case["argv"][1] == CODED
            try:
                patterns, records, notes = golden_records(
                    runs, coded, args.margin, not coded or order_free(runs[0]))
            except ValueError as exc:
                raise SystemExit(f"{name}: {exc}") from None
            for note in notes:
                print(f"{name}: {note}", file=sys.stderr)
            golden[name] = {"np": case["np"], "argv": case["argv"], "drop": patterns,
                            "records": records}
    return golden


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="python with mpi_coded's deps")
    ap.add_argument("--pythonpath", default=None,
                    help="checkout whose mpi_coded to run (prepended to PYTHONPATH)")
    ap.add_argument("--mpiexec", default=None, help="default: next to --python")
    ap.add_argument("--only", choices=("pure", "mpi"), default=None)
    ap.add_argument("--check-runs", type=int, default=2, help="runs of each MPI job")
    ap.add_argument("--margin", type=float, default=0.04,
                    help="seconds between straggler draws for Q to count as fixed")
    ap.add_argument("--out-dir", default=str(GOLDEN))
    args = ap.parse_args()
    if args.mpiexec is None:
        args.mpiexec = str(Path(args.python).parent / "mpiexec")
    env = make_env(args.pythonpath)
    cwd = Path(args.pythonpath) if args.pythonpath else ROOT
    which_package(args, env, cwd)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "pure"):
        pure = make_pure(args, env, cwd)
        (out_dir / "pure_commands.json").write_text(json.dumps(pure, indent=1) + "\n")
        print(f"{len(pure)} pure commands -> {out_dir / 'pure_commands.json'}", file=sys.stderr)
    if args.only in (None, "mpi"):
        mpi = make_mpi(args, env, cwd)
        (out_dir / "mpi_runs.json").write_text(json.dumps(mpi, indent=1) + "\n")
        print(f"{len(mpi)} MPI jobs -> {out_dir / 'mpi_runs.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
