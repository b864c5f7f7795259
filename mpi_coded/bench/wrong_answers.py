"""Wrong answers (issue 44, item 6): the cost of checking every product, and machines that
answer well-formed and wrong, located, decoded around and never accepted (docs/theory.md
A.10).  All numbers are ratios within one run of this script.

(a) ``check``: no fault; the master's checking seconds over the step time
    (``sum verify_s / sum wall_s``; ``wall_s`` holds a check only when it failed) at the
    seed config (7 ranks, ``S = 0`` and ``S = 1``, the seed's 4 steps repeated) and at
    ``--big`` ranks (default 64, oversubscribed: ``N = ranks - 1``, ``L = N // 2``, 60 rows
    of 100 columns per block, speeds cycling 1, 1.5, 2, as ``scripts/bench_scale.py``;
    ``S = 0`` and ``S = 1``).  Target: at most 2%.
(b) ``corrupt``: the elastic job (``N = 6``, ``L = 3``, ``S = 1``, the seed's speeds, a
    square ``X``, each step one seeded machine preempted with probability 1/2),
    ``quarantine_steps = --quarantine-steps`` (default 0: a caught machine is planned on
    probation at once), ``mercurial_strikes = 1000000``; at each step ``t`` one
    ``--fault corrupt:R:answer@t``, ``R`` drawn among the step's available machines not
    quarantined (with ``quarantine_steps = q``, not one of the machines caught at the ``q``
    steps before).  Over float64 with the power workload
    and over GF(2^8) with independent vectors, each beside the fault-free run of the same
    config (and over float64 once more with ``--also-quarantine-steps``, default 1, part
    ``corrupt-q1``: what leaving the caught machine out costs): fired (the rank said it
    corrupted an answer), planned (``R`` had rows), located (the step's
    ``wrong_answers`` name ``R``, or a later line or the summary names its answer of step
    ``t`` ``late``), verified, the step time ratio (mean
    ``wall_s``; target <= 1.2x), and wrong steps accepted: for power, each verified step's
    eigenvalue estimate against an independent numpy power iteration on the same ``X``
    (the iterate advances on verified steps only), its ``max_error`` against rounding
    (:data:`ROUNDING`: a wrong answer under the check's 1e-6 tolerance) and the summary's
    end check.
(c) ``intermittent``: the same config with one seeded machine ``corrupt:R:answer:0.2`` (a
    mercurial machine, every answer with probability 0.2).
(d) ``block``: a job from a coded store (7 ranks), 8 bytes of every 10th row of machine
    2's ``block-2.npy`` overwritten in place once 3 steps are in; the seconds to repair
    (the ``block-repaired`` event's ``repair_s``), machine 2 re-admitted, all verified.

(e) ``coded``: the coded job (``K = 6``, ``q = 4``, ``mu = 1/2``, shifted-exponential
    stragglers), unified and bdc, ``--reps`` repetitions (default 50) with one corrupt
    server in each repetition, drawn at random (seeded), at its map or at its shuffle
    (``corrupt:S:map@r`` / ``corrupt:S:shuffle@r`` for every repetition ``r``), with
    ``quarantine_reps = --quarantine-steps`` and ``mercurial_strikes = 1000000``, beside
    the fault-free run: repetitions verified, fired (the server said it corrupted a value),
    those whose outputs it spoiled (named, and decoded without it or run again), the
    corrupt server named in them, innocent servers named (must be 0), the mean repetition
    time over the fault-free run's.

One JSON line per job appended to ``--out`` as it comes, progress on stderr, a table and
then one JSON object (the last line) on stdout.

    python scripts/bench_wrong_answers.py --out docs/runs/bench_wrong_answers.jsonl
    python scripts/bench_wrong_answers.py --quick          # a few steps, 7 ranks (the test's)

It launches ``mpiexec`` jobs and times them: it lives in :mod:`mpi_coded.bench`, above the
runtime, and ``scripts/bench_wrong_answers.py`` is its command line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.proctree import kill_tree
from mpi_coded.results import STEP, SUMMARY, kind_of, read_results

ROOT = Path(__file__).resolve().parents[2]
"""The working directory of the jobs (the checkout, for ``python -m mpi_coded``)."""


def mpiexec() -> str:
    """The launcher beside this interpreter (the venv's), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if not found:
        raise SystemExit("no mpiexec: install the 'local' extra (the mpich wheel)")
    return found

SEED_SPEEDS = [1, 1, 1.5, 1.5, 2, 2]
SEED_SCHEDULE = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]
ALL = [1, 2, 3, 4, 5, 6]
SPEED_CYCLE = (1, 1.5, 2)
ROUNDING = 1e-12
"""A float64 step's ``max_error`` above this is more than decoding's rounding (about
``1e-16 * cond``; the check's own tolerance is 1e-6): a verified step above it used a wrong
answer whose error fell under the tolerance."""
EIG_RTOL = 1e-8
"""An eigenvalue estimate of a verified step against the independent reference: decoding
costs about ``1e-16 * cond`` (docs/theory.md A.2); one corrupt entry moves it by far more."""
FIRED = re.compile(r"rank (\d+) \(.*\) corrupts entry \d+ of its answer by fault injection "
                   r"in phase answer (\d+)")
OPENMPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def say(msg: str) -> None:
    print(f"[bench_wrong_answers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr,
          flush=True)


def launcher() -> tuple[list[str], dict[str, str]]:
    """``[mpiexec, flags...]`` and the extra environment (Open MPI: oversubscribe, root)."""
    exe = mpiexec()
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, **OPENMPI_ROOT_ENV})
    if "Open MPI" in version.stdout + version.stderr:
        return [exe, "--oversubscribe"], {"OMPI_MCA_btl_tcp_if_include": "lo", **(
            OPENMPI_ROOT_ENV if os.geteuid() == 0 else {})}
    return [exe], {}


def toml_config(*, n: int, L: int, speeds: list[float], rows: int, cols: int, t_row: float,
                schedule: list[list[int]], S: int = 0, field: str = "float64",
                workload: str = "", seed: int = 1, extra: str = "") -> str:
    text = (f'job = "cec"\nN = {n}\nL = {L}\nspeeds = {json.dumps(speeds)}\nrows = {rows}\n'
            f'cols = {cols}\nt_row = {t_row}\nfield = "{field}"\nseed = {seed}\n'
            f'timeout_s = 120.0\n')
    if S:
        text += f"S = {S}\n"
    if workload:
        text += f'workload = "{workload}"\n'
    return text + extra + ('[availability]\nkind = "schedule"\n'
                           f"schedule = {json.dumps(schedule)}\n")


def launch(world: int, cfg: Path, out: Path, faults: list[str], timeout: float
           ) -> subprocess.Popen[str]:
    cmd, env = launcher()
    cmd += ["-n", str(world), sys.executable, "-m", "mpi_coded", "run", "cec", "--config",
            str(cfg), "--out", str(out), *[a for f in faults for a in ("--fault", f)]]
    out.unlink(missing_ok=True)  # results are appended
    return subprocess.Popen(cmd, start_new_session=True, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            env={**os.environ, **env})


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int | None, str, str]:
    """Its return code (None: it hung and was killed), stdout, stderr."""
    try:
        so, se = proc.communicate(timeout=timeout)
        return proc.returncode, so, se
    except BaseException as exc:  # the timeout, or Ctrl-C: no rank is left behind
        kill_tree(proc.pid)
        so, se = proc.communicate()
        if not isinstance(exc, subprocess.TimeoutExpired):
            raise
        return None, so, se


def job(world: int, cfg: Path, out: Path, faults: list[str], timeout: float
        ) -> dict[str, Any]:
    """One job: its return code, steps, summary, stderr's fired corruptions."""
    t0 = time.perf_counter()
    rc, so, se = finish(launch(world, cfg, out, faults, timeout), timeout)
    lines = read_results(out) if out.exists() else []
    fired: dict[int, set[int]] = {}
    for m in FIRED.finditer(se):
        fired.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
    return {"rc": rc, "hung": rc is None, "job_s": time.perf_counter() - t0,
            "steps": [x for x in lines if kind_of(x) == STEP],
            "summary": next((x for x in lines if kind_of(x) == SUMMARY), None),
            "fired": fired, "stdout_tail": so[-1500:], "stderr_tail": se[-1500:]}


def timing(steps: list[dict[str, Any]]) -> dict[str, Any]:
    wall = [float(s["wall_s"]) for s in steps]
    ver = [float(s.get("verify_s", 0.0)) for s in steps]
    return {"steps": len(steps), "wall_s_mean": statistics.fmean(wall) if wall else None,
            "wall_s_median": statistics.median(wall) if wall else None,
            "verify_s_mean": statistics.fmean(ver) if ver else None,
            "check_fraction": sum(ver) / sum(wall) if wall and sum(wall) > 0 else None}


def emit(rec: dict[str, Any], out: str | None) -> None:
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")


# -- (a) the cost of checking ----------------------------------------------------------------

def seed_config(steps: int, S: int) -> str:
    sched = [SEED_SCHEDULE[i % len(SEED_SCHEDULE)] for i in range(steps)]
    return toml_config(n=6, L=3, speeds=SEED_SPEEDS, rows=1260, cols=200, t_row=0.001,
                       schedule=sched, S=S, seed=0)


def scale_schedule(n: int, L: int, steps: int, seed: int) -> list[list[int]]:
    """``scripts/bench_scale.py``'s: all machines first, then each step without
    1..(N-L)//2 seeded random machines."""
    rng = random.Random(seed)
    machines = list(range(1, n + 1))
    out = [machines]
    for _ in range(steps - 1):
        gone = set(rng.sample(machines, rng.randint(1, max(1, (n - L) // 2))))
        out.append([m for m in machines if m not in gone])
    return out


def big_config(world: int, steps: int, S: int, t_row: float, seed: int) -> str:
    n = world - 1
    L = max(1, n // 2)
    speeds = [SPEED_CYCLE[i % len(SPEED_CYCLE)] for i in range(n)]
    sched = scale_schedule(n, L, steps, seed)  # each step keeps >= L + (N - L) / 2
    return toml_config(n=n, L=L, speeds=speeds, rows=60 * L, cols=100, t_row=t_row,
                       schedule=sched, S=S, seed=seed)


def check_cost(d: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = [("seed", 7, S, seed_config(args.check_steps, S)) for S in (0, 1)]
    if args.big:
        cases += [("big", args.big, S, big_config(args.big, args.big_steps, S, args.big_t_row,
                                                   args.seed)) for S in (0, 1)]
    recs = []
    for name, world, S, text in cases:
        cfg = d / f"check_{name}_{S}.toml"
        cfg.write_text(text)
        r = job(world, cfg, d / f"check_{name}_{S}.jsonl", [], args.timeout * (3 if world > 7
                                                                                else 1))
        rec = {"part": "check", "config": name, "ranks": world, "S": S, "rc": r["rc"],
               "hung": r["hung"], "job_s": r["job_s"], **timing(r["steps"]),
               "verified": sum(bool(s["verified"]) for s in r["steps"]),
               "all_verified": bool(r["summary"] and r["summary"]["all_verified"])}
        if r["rc"] != 0:
            rec["stderr_tail"] = r["stderr_tail"]
        emit(rec, args.out)
        recs.append(rec)
        say(f"(a) {name} {world} ranks S={S}: {rec['steps']} steps, check "
            f"{100 * (rec['check_fraction'] or 0):.3f}% of the step time (verify "
            f"{1e3 * (rec['verify_s_mean'] or 0):.3f} ms, wall "
            f"{1e3 * (rec['wall_s_mean'] or 0):.1f} ms a step), verified {rec['verified']}, "
            f"rc {rec['rc']}")
    return recs


# -- (b), (c): machines that answer wrong ----------------------------------------------------

def elastic_schedule(steps: int, seed: int) -> list[list[int]]:
    """Each step all six machines, or (probability 1/2) one seeded machine preempted."""
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        gone = rng.choice(ALL) if rng.random() < 0.5 else None
        out.append([m for m in ALL if m != gone])
    return out


def fault_plan(schedule: list[list[int]], seed: int, out_steps: int) -> list[int]:
    """``R_t`` per step: among the step's available machines but those corrupted at the
    ``out_steps`` steps before (caught there, they sit out step ``t``)."""
    rng = random.Random(seed + 1000)
    chosen: list[int] = []
    for avail in schedule:
        out = set(chosen[-out_steps:]) if out_steps > 0 else set()
        chosen.append(rng.choice([m for m in avail if m not in out]))
    return chosen


def elastic_config(field: str, steps: int, args: argparse.Namespace,
                   schedule: list[list[int]] | None = None, out_steps: int = 0) -> str:
    workload = {"float64": "power"}.get(field, "")  # GF: independent vectors
    extra = f"quarantine_steps = {out_steps}\nmercurial_strikes = 1000000\n"
    return toml_config(n=6, L=3, speeds=SEED_SPEEDS, rows=args.size, cols=args.size,
                       t_row=args.t_row, schedule=schedule or elastic_schedule(steps, args.seed),
                       S=1,
                       field=field, workload=workload, seed=args.seed, extra=extra)


def reference_eigenvalues(size: int, seed: int, steps: int) -> list[float]:
    """Power iteration on the job's ``X`` with numpy alone (``mpi_coded.cec.data``'s
    generator: ``default_rng([seed, 1])``; ``w_0``: ``default_rng([seed, 3])``, unit)."""
    x = np.random.default_rng([seed, 1]).standard_normal((size, size))
    w = np.random.default_rng([seed, 3]).standard_normal(size)
    w = w / np.linalg.norm(w)
    est = []
    for _ in range(steps):
        y = x @ w
        est.append(float(w @ y) / float(w @ w))
        w = y / np.linalg.norm(y)
    return est


def accepted_wrong(steps: list[dict[str, Any]], ref: list[float]) -> list[int]:
    """Verified steps whose eigenvalue estimate is not the reference's (the reference
    advances on verified steps only: a NOT VERIFIED step keeps the iterate)."""
    bad, k = [], 0
    for s in steps:
        if not s["verified"]:
            continue
        lam = s.get("eigenvalue")
        if lam is None or k >= len(ref) or abs(lam - ref[k]) > EIG_RTOL * max(1.0, abs(ref[k])):
            bad.append(int(s["step"]))
        k += 1
    return bad


def named_by_step(ss: list[dict[str, Any]], summ: dict[str, Any]) -> dict[int, set[int]]:
    """Step -> the machines named wrong for an answer of it: in its own line, or ``late``
    in a later line or the summary (docs/theory.md A.10)."""
    out: dict[int, set[int]] = {}
    for s in ss:
        for a in s.get("wrong_answers", []):
            out.setdefault(int(a.get("step", s["step"])), set()).add(int(a["machine"]))
    for a in summ.get("wrong_answers_after_steps") or []:
        out.setdefault(int(a["step"]), set()).add(int(a["machine"]))
    return out


def wrong_run(d: Path, args: argparse.Namespace, field: str, part: str, steps: int,
              faults: list[str], machines: list[int | None], base: dict[str, Any] | None,
              schedule: list[list[int]] | None = None, out_steps: int | None = None
              ) -> dict[str, Any]:
    """One job of (b)/(c) (``base``: the fault-free run's record, None for it;
    ``schedule``: another than the config's, a matched run's; ``out_steps``: its
    ``quarantine_steps``, ``--quarantine-steps`` by default)."""
    tag = f"{part}_{field.replace('^', '')}"
    cfg = d / f"{tag}.toml"
    q = args.quarantine_steps if out_steps is None else out_steps
    cfg.write_text(elastic_config(field, steps, args, schedule, q))
    r = job(7, cfg, d / f"{tag}.jsonl", faults, args.timeout)
    ss, summ = r["steps"], r["summary"] or {}
    by_step = {int(s["step"]): s for s in ss}
    named_of = named_by_step(ss, summ)
    fired = located = planned = late = 0
    missed: list[dict[str, Any]] = []
    for t in range(1, steps + 1):
        want = machines[t - 1] if t - 1 < len(machines) else None
        if want is None:
            continue
        s = by_step.get(t)
        hit = want in r["fired"].get(t, set())
        fired += hit
        if s is None:
            continue
        planned += int(s.get("rows", {}).get(str(want), 0)) > 0
        if want in named_of.get(t, set()):
            located += 1
            own = {int(a["machine"]) for a in s.get("wrong_answers", []) if "step" not in a}
            late += want not in own
        elif hit:  # decoded without it (cut off, or a spare) or accepted (the check says)
            used = {int(n) for ms in s.get("waited_for", []) for n in ms}
            missed.append({"step": t, "machine": want, "decoded_from": want in used,
                           "cut_off": want in s.get("cut_off", [])})
    wrong_named = sum(len(s.get("wrong_answers", [])) for s in ss)
    named_others = sorted({int(a["machine"]) for s in ss for a in s.get("wrong_answers", [])}
                          - {m for m in machines if m is not None})
    rec: dict[str, Any] = {
        "part": part, "field": field, "workload": "power" if field == "float64" else
        "independent", "steps_planned": steps, "quarantine_steps": q, "rc": r["rc"],
        "hung": r["hung"],
        "job_s": r["job_s"], **timing(ss),
        "verified": sum(bool(s["verified"]) for s in ss),
        "corrupt_steps": sum(m is not None for m in machines[:steps]) if part == "corrupt"
        else None,
        "fired_steps": fired if part == "corrupt" else len(r["fired"]),
        "fired_answers": sum(len(v) for v in r["fired"].values()) if part == "corrupt" else
        None, "planned": planned if part == "corrupt" else None,
        "located": located, "located_late": late, "fired_not_located": missed,
        "fired_unused": sum(1 for m in missed if not m["decoded_from"]),
        "wrong_answers_named": wrong_named, "named_innocent": named_others,
        "found": sorted({a["found"] for s in ss for a in s.get("wrong_answers", [])}),
        "attempts_max": max((int(s.get("attempts", 1)) for s in ss), default=0),
        "events": {e: sum(1 for s in ss for q in s.get("quarantine", []) if q["event"] == e)
                   for e in ("caught", "block-good", "block-repaired", "readmitted", "lost")},
        "all_verified": bool(summ.get("all_verified")),
        "summary_wrong_answers": summ.get("wrong_answers"),
        "steps_repeated": summ.get("steps_repeated"),
        "workload_check": summ.get("workload_check"),
        "predicted_s_mean": statistics.fmean(float(s["predicted_s"]) for s in ss) if ss
        else None,
        "wall_over_predicted": sum(float(s["wall_s"]) for s in ss) /
        max(1e-12, sum(float(s["predicted_s"]) for s in ss)) if ss else None,
        "wall_s_mean_found": statistics.fmean(
            [float(s["wall_s"]) for s in ss if s.get("wrong_answers")] or [0.0]),
        "wall_s_mean_clean": statistics.fmean(
            [float(s["wall_s"]) for s in ss if not s.get("wrong_answers")] or [0.0]),
        "max_error_verified": max((float(s["max_error"]) for s in ss if s["verified"]),
                                  default=None),
        "verified_above_rounding": [int(s["step"]) for s in ss if s["verified"] and
                                    float(s["max_error"]) > ROUNDING],
        # per step: step, wall_s, predicted_s, verify_s, wrong answers, the plan's machines,
        # max_error
        "per_step": [[int(s["step"]), round(float(s["wall_s"]), 6),
                      round(float(s["predicted_s"]), 6), round(float(s.get("verify_s", 0)), 6),
                      len(s.get("wrong_answers", [])), list(s["available"]),
                      float(s["max_error"])] for s in ss],
    }
    if part == "intermittent":  # every answer corrupted with probability P: per step
        rec["fired_answers"] = sum(len(v) for v in r["fired"].values())
        rec["fired_steps_located"] = sum(
            1 for t in r["fired"] if machines[0] in named_of.get(t, set()))
    if field == "float64":
        rec["wrong_accepted"] = sorted(set(accepted_wrong(
            ss, reference_eigenvalues(args.size, args.seed, steps))) |
            set(rec["verified_above_rounding"]))
    else:  # the master's own exact check over GF(2^8): a verified line has max_error 0
        rec["wrong_accepted"] = [int(s["step"]) for s in ss
                                 if s["verified"] and float(s["max_error"]) != 0]
    if base is not None and base.get("wall_s_mean") and rec.get("wall_s_mean"):
        rec["wall_ratio"] = rec["wall_s_mean"] / base["wall_s_mean"]
        rec["wall_ratio_median"] = rec["wall_s_median"] / base["wall_s_median"]
        rec["predicted_ratio"] = rec["predicted_s_mean"] / base["predicted_s_mean"]
    if r["rc"] != 0 or r["hung"]:
        rec["stderr_tail"] = r["stderr_tail"]
    emit(rec, args.out)
    say(f"({'b' if 'corrupt' in part else 'c' if 'intermittent' in part else '-'}) {part} "
        f"{field}: {len(ss)} steps, verified {rec['verified']}, fired {rec['fired_steps']}, "
        f"located {located}, wrong accepted {len(rec['wrong_accepted'])}, step time "
        f"{1e3 * (rec['wall_s_mean'] or 0):.1f} ms"
        + (f" ({rec['wall_ratio']:.3f}x the fault-free run)" if "wall_ratio" in rec else "")
        + f", check {100 * (rec['check_fraction'] or 0):.2f}%, rc {rec['rc']}")
    return rec


def wrong_answers(d: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    steps = args.steps
    sched = elastic_schedule(steps, args.seed)
    recs = []
    for field in args.fields:
        base = wrong_run(d, args, field, "fault-free", steps, [], [], None)
        recs.append(base)
        runs = []
        also = [args.also_quarantine_steps] if field == "float64" and \
            args.also_quarantine_steps is not None else []
        for q in [args.quarantine_steps, *also]:
            chosen = fault_plan(sched, args.seed, q)
            faults = [f"corrupt:{m}:answer@{t}" for t, m in enumerate(chosen, 1)]
            part = "corrupt" if q == args.quarantine_steps else f"corrupt-q{q}"
            runs.append(wrong_run(d, args, field, part, steps, faults, list(chosen), base,
                                  out_steps=q))
        if field == "float64" or not args.intermittent_float_only:
            m = random.Random(args.seed + 7).choice(ALL)
            runs.append(wrong_run(d, args, field, "intermittent", steps,
                                  [f"corrupt:{m}:answer:{args.p}"], [m] * steps, base))
        for run in runs:
            recs.append(run)
            if args.matched and run["per_step"] and (not args.quick or
                                                     run["part"] == "corrupt"):
                recs.append(matched_run(d, args, field, run, base))
    return recs


def matched_run(d: Path, args: argparse.Namespace, field: str, run: dict[str, Any],
                base: dict[str, Any]) -> dict[str, Any]:
    """No fault, each step on the machines ``run`` planned it on (without the machines it
    had quarantined): what ``run``'s steps cost beyond planning without them."""
    sched = [list(p[5]) for p in run["per_step"]]
    rec = wrong_run(d, args, field, f"{run['part']}-matched", len(sched), [], [], base,
                    sched, run["quarantine_steps"])
    if rec.get("wall_s_mean") and run.get("wall_s_mean"):
        ratio = run["wall_s_mean"] / rec["wall_s_mean"]
        rec[f"{run['part']}_over_matched"] = ratio
        say(f"    {run['part']} {field} over its matched fault-free run: {ratio:.3f}x (the "
            f"plans without the quarantined machines: {rec.get('wall_ratio', 0):.3f}x the "
            "fault-free run's)")
    return rec


# -- (d) a stored block corrupted on disk mid-run --------------------------------------------

def block_run(d: Path, args: argparse.Namespace, i: int) -> dict[str, Any]:
    """As tests/test_mpi_wrong_answers.py's stored-block test: 8 bytes of every 10th of
    machine 2's rows overwritten once 3 steps are in."""
    sd = d / f"store{i}"
    sched = [ALL] * 4 + [[1, 2, 3, 4, 5]] * args.block_steps
    cfg = d / f"block{i}.toml"
    cfg.write_text(toml_config(n=6, L=3, speeds=SEED_SPEEDS, rows=600, cols=60, t_row=0.0004,
                               schedule=sched, seed=1, extra=f'store = "{sd}"\n'))
    w = subprocess.run([sys.executable, "-m", "mpi_coded", "store", "write", "--config",
                        str(cfg), "--out", str(sd)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    if w.returncode != 0:
        raise SystemExit(f"bench_wrong_answers: store write failed: {w.stderr}")
    out = d / f"block{i}.jsonl"
    t0 = time.perf_counter()
    proc = launch(7, cfg, out, [], args.timeout)
    t_hit = None
    try:
        while time.perf_counter() - t0 < args.timeout and proc.poll() is None:
            if out.exists() and out.read_text().count('"kind": "step"') >= 3:
                break
            time.sleep(0.005)
        with open(sd / "block-2.npy", "r+b") as f:
            for row in range(0, 200, 10):
                f.seek(128 + 8 * (60 * row + 7))
                f.write(b"\x12\x34\x56\x78\x9a\xbc\xde\xf0")
        t_hit = time.perf_counter() - t0
    except BaseException:
        kill_tree(proc.pid)
        proc.communicate()
        raise
    rc, so, se = finish(proc, args.timeout)
    lines = read_results(out) if out.exists() else []
    ss = [x for x in lines if kind_of(x) == STEP]
    summ = next((x for x in lines if kind_of(x) == SUMMARY), {}) or {}
    ev = [dict(q, step=s["step"]) for s in ss for q in s.get("quarantine", [])]
    rep = [e for e in ev if e["event"] == "block-repaired"]
    back = [e for e in ev if e["event"] == "readmitted" and e["machine"] == 2]
    later = [s for s in ss if back and int(s["step"]) > int(back[0]["step"])]
    rec = {"part": "block", "run": i, "rc": rc, "hung": rc is None, "steps": len(ss),
           "verified": sum(bool(s["verified"]) for s in ss),
           "all_verified": bool(summ.get("all_verified")), "overwritten_after_s": t_hit,
           "caught_step": next((e["step"] for e in ev if e["event"] == "caught"), None),
           "located": sorted({int(a["machine"]) for s in ss
                              for a in s.get("wrong_answers", [])}),
           "repaired": len(rep), "repair_s": rep[0]["repair_s"] if rep else None,
           "repair_bytes": rep[0]["bytes"] if rep else None,
           "readmitted_step": back[0]["step"] if back else None,
           "planned_after": sum(1 for s in later if int(s.get("rows", {}).get("2", 0)) > 0),
           "steps_after": len(later), "events": [e["event"] for e in ev],
           **{k: v for k, v in timing(ss).items() if k != "steps"}}
    if rc != 0:
        rec["stderr_tail"] = se[-1500:]
        rec["stdout_tail"] = so[-1500:]
    emit(rec, args.out)
    say(f"(d) block run {i + 1}: caught at step {rec['caught_step']}, repaired in "
        f"{rec['repair_s']} s ({rec['repair_bytes']} bytes), re-admitted at step "
        f"{rec['readmitted_step']}, planned in {rec['planned_after']}/{rec['steps_after']} "
        f"later steps, verified {rec['verified']}/{rec['steps']}, rc {rc}")
    return rec


# -- the table -------------------------------------------------------------------------------

# -- (e) the coded job -----------------------------------------------------------------------

CODED = ["--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4", "--n", "16",
         "--N", "12", "--field", "float64", "--straggler", "shiftexp", "--t-row", "0.001",
         "--seed", "3"]


CODED_SCHEMES = {"unified": [], "bdc": ["--T", "2"]}
"""(e)'s schemes and their own arguments."""
CODED_K = 6
CODED_FIRED = re.compile(r"rank (\d+) \(.*\) corrupts entry \d+ of its (?:map|shuffle) "
                         r"output by fault injection in phase (?:map|shuffle) (\d+)")


def coded_faults(phase: str, reps: int, seed: int) -> tuple[list[str], list[int]]:
    """One corrupt server a repetition, a seeded draw: the faults and the servers."""
    rng = random.Random(seed + 2000)
    servers = [rng.randrange(CODED_K) for _ in range(reps)]
    return [f"corrupt:{s + 1}:{phase}@{r}" for r, s in enumerate(servers)], servers


def coded_run(d: Path, args: argparse.Namespace, scheme: str, phase: str | None
              ) -> dict[str, Any]:
    """One coded job of ``args.reps`` repetitions (with ``phase``: one seeded corrupt
    server a repetition there)."""
    out = d / f"coded-{scheme}-{phase or 'none'}.jsonl"
    out.unlink(missing_ok=True)
    faults, culprits = coded_faults(phase, args.reps, args.seed) if phase else ([], [])
    cmd, env = launcher()
    cmd += ["-n", str(CODED_K + 1), sys.executable, "-m", "mpi_coded", "run", "coded",
            "--scheme", scheme, *CODED, "--reps", str(args.reps), "--out", str(out),
            "--quarantine-reps", str(args.quarantine_steps), "--mercurial-strikes",
            "1000000", *CODED_SCHEMES[scheme], *[a for f in faults for a in ("--fault", f)]]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, start_new_session=True, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            env={**os.environ, **env})
    rc, _, se = finish(proc, args.timeout * 2)
    lines = read_results(out) if out.exists() else []
    runs = [x for x in lines if x.get("kind") == "run"]
    fired = {(int(m.group(1)) - 1, int(m.group(2))) for m in CODED_FIRED.finditer(se)}
    spoiled = [x for x in runs if x.get("wrong_answers")]
    rec = {"part": "coded", "scheme": scheme, "fault": f"corrupt:S:{phase}@r" if phase
           else None, "phase": phase, "rc": rc, "hung": rc is None,
           "job_s": time.perf_counter() - t0, "reps": len(runs),
           "verified": sum(bool(x.get("verified")) for x in runs),
           "fired": len(fired), "spoiled": len(spoiled),
           "culprit_named": sum(1 for x in spoiled if culprits and culprits[int(x["rep"])]
                                in {w["server"] for w in x["wrong_answers"]}),
           "rerun": sum(int(x.get("rerun") or 0) for x in runs),
           "resumed": sum(bool(x.get("resumed")) for x in runs),
           "quarantined_reps": sum(bool(x.get("quarantined")) for x in runs),
           "named_innocent": sorted({w["server"] for x in runs
                                     for w in x.get("wrong_answers") or []
                                     if not culprits or w["server"] != culprits[int(x["rep"])]}),
           # a repetition's time with its wrong attempts (rerun_s)
           "total_s_mean": statistics.fmean(float(x["total_s"]) + float(x.get("rerun_s") or 0)
                                            for x in runs) if runs else None,
           "stderr_tail": se[-600:] if rc else ""}
    say(f"(e) coded {scheme} {phase or 'no fault'}: {rec['reps']} repetitions, verified "
        f"{rec['verified']}, fired {rec['fired']}, spoiled {rec['spoiled']} (the corrupt "
        f"server named in {rec['culprit_named']}), innocents named "
        f"{rec['named_innocent']}, rc {rc}")
    emit(rec, args.out)
    return rec


def coded_wrong(d: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for scheme in CODED_SCHEMES:
        base = coded_run(d, args, scheme, None)
        out.append(base)
        for phase in ("map", "shuffle"):
            rec = coded_run(d, args, scheme, phase)
            if base["total_s_mean"] and rec["total_s_mean"]:
                rec["total_over_fault_free"] = rec["total_s_mean"] / base["total_s_mean"]
            out.append(rec)
    return out


def coded_table(coded: list[dict[str, Any]]) -> str:
    rows = ["(e) the coded job, one corrupt server a repetition at its map or shuffle",
            "  scheme   fault      reps verified fired spoiled named resumed  rerun "
            "innocent  time ratio"]
    for r in coded:
        ratio = r.get("total_over_fault_free")
        rows.append(f"  {r['scheme']:<8} {r['phase'] or 'none':<9} {r['reps']:>5} "
                    f"{r['verified']:>8} {r['fired']:>5} {r['spoiled']:>7} "
                    f"{r['culprit_named']:>5} {r['resumed']:>7} {r['rerun']:>6} "
                    f"{len(r['named_innocent']):>8}  "
                    f"{'' if ratio is None else f'{ratio:.3f}x'}")
    return "\n".join(rows)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def table(check: list[dict[str, Any]], wrong: list[dict[str, Any]],
          block: list[dict[str, Any]]) -> str:
    rows = ["(a) no fault: the check's seconds over the step time",
            f"  {'config':<8} {'ranks':>5} {'S':>2} {'steps':>5} {'wall ms':>8} "
            f"{'verify ms':>9} {'check':>7} {'verified':>8}"]
    for r in check:
        rows.append(f"  {r['config']:<8} {r['ranks']:>5} {r['S']:>2} {r['steps']:>5} "
                    f"{1e3 * (r['wall_s_mean'] or 0):>8.2f} "
                    f"{1e3 * (r['verify_s_mean'] or 0):>9.3f} {pct(r['check_fraction']):>7} "
                    f"{r['verified']:>8}")
    rows += ["(b), (c) wrong answers (S = 1; q: quarantine_steps; located: of them late)",
             f"  {'run':<22} {'field':<8} {'q':>1} {'steps':>5} {'fired':>5} {'located':>11} "
             f"{'verified':>8} {'accepted':>8} {'wall ms':>8} {'ratio':>6} {'check':>7} "
             f"{'end check':>9}"]
    for r in wrong:
        wc = r.get("workload_check")
        rows.append(
            f"  {r['part']:<22} {r['field']:<8} {r['quarantine_steps']:>1} {r['steps']:>5} "
            f"{r['fired_steps']:>5} {r['located']:>5} ({r['located_late']:>2} late) "
            f"{r['verified']:>8} {len(r['wrong_accepted']):>8} "
            f"{1e3 * (r['wall_s_mean'] or 0):>8.2f} "
            + (f"{r['wall_ratio']:>6.3f}" if "wall_ratio" in r else f"{'1':>6}")
            + f" {pct(r['check_fraction']):>7} "
            + f"{('-' if wc is None else 'ok' if wc['ok'] else 'FAILED'):>9}")
    if block:
        rows += ["(d) a stored block overwritten mid-run",
                 f"  {'run':>3} {'caught':>6} {'repair s':>9} {'bytes':>7} {'back at':>7} "
                 f"{'planned after':>13} {'verified':>9}"]
        for r in block:
            rows.append(f"  {r['run']:>3} {str(r['caught_step']):>6} "
                        f"{(r['repair_s'] or 0):>9.4f} {str(r['repair_bytes']):>7} "
                        f"{str(r['readmitted_step']):>7} "
                        f"{r['planned_after']:>6}/{r['steps_after']:<6} "
                        f"{r['verified']:>4}/{r['steps']:<4}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100, help="steps of (b) and (c)")
    ap.add_argument("--check-steps", dest="check_steps", type=int, default=40,
                    help="steps of (a) at the seed config")
    ap.add_argument("--big", type=int, default=64, help="ranks of (a)'s large job (0: none)")
    ap.add_argument("--big-steps", dest="big_steps", type=int, default=10)
    ap.add_argument("--big-t-row", dest="big_t_row", type=float, default=0.001)
    ap.add_argument("--size", type=int, default=600, help="rows = cols of (b), (c)")
    ap.add_argument("--t-row", dest="t_row", type=float, default=0.001)
    ap.add_argument("--p", type=float, default=0.2, help="(c): corrupt with probability P")
    ap.add_argument("--fields", default="float64,gf2^8")
    ap.add_argument("--intermittent-float-only", dest="intermittent_float_only",
                    action="store_true", help="(c) over float64 only")
    ap.add_argument("--quarantine-steps", dest="quarantine_steps", type=int, default=0,
                    help="(b), (c): the jobs' quarantine_steps (0: on probation at once)")
    ap.add_argument("--also-quarantine-steps", dest="also_quarantine_steps", type=int,
                    default=1, help="(b) over float64 once more with this quarantine_steps "
                    "(part corrupt-qQ; -1: none)")
    ap.add_argument("--no-matched", dest="matched", action="store_false",
                    help="no fault-free run on the faulty runs' plans (their machines)")
    ap.add_argument("--block-runs", dest="block_runs", type=int, default=3)
    ap.add_argument("--block-steps", dest="block_steps", type=int, default=30,
                    help="(d): steps after the 4 with every machine")
    ap.add_argument("--parts", default="check,wrong,block,coded")
    ap.add_argument("--reps", type=int, default=50, help="(e): repetitions of each coded job")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per 7-rank job")
    ap.add_argument("--quick", action="store_true",
                    help="a few steps, 7 ranks only, float64 only, one block run (the test's)")
    ap.add_argument("--out", default=None, help="append one JSON line per job")
    args = ap.parse_args(argv)
    if args.quick:
        args.steps, args.check_steps, args.big, args.block_runs = 6, 4, 0, 1
        args.block_steps, args.size, args.fields = 8, 120, "float64"
        args.reps = 3
        args.timeout = min(args.timeout, 60.0)
    args.fields = [f for f in args.fields.split(",") if f]
    if args.also_quarantine_steps is not None and (args.quick or
                                                   args.also_quarantine_steps < 0 or
                                                   args.also_quarantine_steps ==
                                                   args.quarantine_steps):
        args.also_quarantine_steps = None
    parts = set(args.parts.split(","))
    results: dict[str, Any] = {"cores": len(os.sched_getaffinity(0)),
                               "loadavg_start": round(os.getloadavg()[0], 2),
                               "argv": sys.argv[1:] if argv is None else argv}
    say(f"{results['cores']} cores, load average {results['loadavg_start']}; launcher "
        f"{' '.join(launcher()[0])}")
    check: list[dict[str, Any]] = []
    wrong: list[dict[str, Any]] = []
    block: list[dict[str, Any]] = []
    coded: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mpi-coded-wrong-") as tmp:
        d = Path(tmp)
        if "check" in parts:
            check = check_cost(d, args)
        if "wrong" in parts:
            wrong = wrong_answers(d, args)
        if "block" in parts:
            block = [block_run(d, args, i) for i in range(args.block_runs)]
        if "coded" in parts:
            coded = coded_wrong(d, args)
    results.update(check=check, wrong=wrong, block=block, coded=coded,
                   loadavg_end=round(os.getloadavg()[0], 2))
    fractions = [r["check_fraction"] for r in check if r["check_fraction"] is not None]
    results["check_fraction_max"] = max(fractions) if fractions else None
    results["wrong_accepted"] = sum(len(r["wrong_accepted"]) for r in wrong)
    results["hangs"] = sum(bool(r.get("hung")) for r in [*check, *wrong, *block, *coded])
    results["coded_innocent_named"] = sum(len(r["named_innocent"]) for r in coded)
    print(table(check, wrong, block), flush=True)
    if coded:
        print(coded_table(coded), flush=True)
    print(json.dumps(results), flush=True)
    ok = results["wrong_accepted"] == 0 and results["hangs"] == 0 and \
        results["coded_innocent_named"] == 0 and all(r["verified"] == r["reps"] for r in coded)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
