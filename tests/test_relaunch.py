"""The relaunch's decisions (mpi_coded/cluster/relaunch.py), pure."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from mpi_coded.cluster import relaunch
from mpi_coded.cluster.netns import plan_cluster
from mpi_coded.cluster.relaunch import (
    Launch,
    compile_package,
    has_steps,
    hosts_up,
    job_ended,
    out_arg,
    own_summary,
    placement,
    ranks_arg,
    ranks_left,
    relaunch_command,
    run_streaming,
    step_row,
)
from mpi_coded.errors import ConfigError

CMD = ["mpiexec", "-n", "5", "python", "-m", "mpi_coded", "run", "cec", "--store", "S/{host}",
       "--out", "r.jsonl"]


def test_hosts_up_are_reachable_and_not_lost() -> None:
    c = plan_cluster("x", 4, 1)
    up = hosts_up(c.hosts, lambda ns: not ns.endswith("node4"),
                  lambda port: not port.endswith("-2"), lost=["x-node3"])
    assert [h.name for h in up] == ["x-node1"]


def test_ranks_left_follow_the_launchers_placement() -> None:
    assert placement(5, 4, 1) == [0, 1, 2, 3, 0]  # rank 4 wraps to host 1
    assert placement(7, 4, 2) == [0, 0, 1, 1, 2, 2, 3]
    assert ranks_left(5, 4, 1, [0, 1, 3]) == 4  # host 3 (index 2) held rank 2
    assert ranks_left(7, 4, 2, [0, 2, 3]) == 5


def test_the_relaunch_command() -> None:
    assert ranks_arg(CMD) == (2, 5) and out_arg(CMD) == "r.jsonl"
    assert relaunch_command(CMD, 4, True) == [*CMD[:2], "4", *CMD[3:], "--resume"]
    assert relaunch_command(CMD, 4, False) == [*CMD[:2], "4", *CMD[3:]]
    with pytest.raises(ConfigError, match="--out"):
        out_arg(CMD[:-2])
    with pytest.raises(ConfigError, match="-n N"):
        ranks_arg(["mpiexec", "prog"])
    with pytest.raises(ConfigError, match="elastic job"):
        out_arg(["mpiexec", "-n", "3", "python", "-m", "mpi_coded", "run", "coded"])


def test_step_rows_of_the_table() -> None:
    assert step_row("  12 1,2,4                0.0170   0.0206  1.211     0.146  1.34e-16   "
                    "21/25 yes") == (12, True)
    assert step_row("   3 2,3                  0.4200   0.4222  1.005     0.128  8.06e-17"
                    "       0 NO  stand-ins [1]") == (3, False)
    assert step_row("step available            pred_s   wall_s  ratio decode_ms") is None
    assert step_row("setup: 4 coded blocks") is None


def test_has_steps(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    assert not has_steps(str(p))
    p.write_text(json.dumps({"kind": "config", "job": "cec"}) + "\n")
    assert not has_steps(str(p))
    p.write_text(p.read_text() + json.dumps({"kind": "step", "job": "cec", "step": 1}) + "\n")
    assert has_steps(str(p))


def test_check_results_passes_a_job_ended_early_and_resumed(tmp_path: Path) -> None:
    """scripts/check_results.py: a summary that ended early fails the file unless a resumed
    job (config line with first_step > 1) follows it."""
    from conftest import ROOT, load_script

    check = load_script(ROOT / "scripts" / "check_results.py", "check_results_relaunch").check
    lines = [{"kind": "config", "job": "cec", "first_step": 1},
             {"kind": "step", "job": "cec", "step": 1, "verified": True},
             {"kind": "summary", "job": "cec", "all_verified": False,
              "ended_early": "step 2: the launcher ended the job"}]
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert any("ended early and not resumed" in x for x in check(p))
    lines += [{"kind": "config", "job": "cec", "first_step": 2},
              {"kind": "step", "job": "cec", "step": 2, "verified": True},
              {"kind": "summary", "job": "cec", "all_verified": True}]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert check(p) == []


def _line(kind: str, **kw: object) -> dict[str, object]:
    return {"kind": kind, "job": "cec", **kw}


@pytest.mark.parametrize("k", [2, 15, 28])  # the host lost early, midway, late in 30 steps
def test_only_the_launched_jobs_own_summary_ends_its_launch(k: int) -> None:
    """The summary the watcher of the launch before appends (first step 1, ``k`` steps),
    even once the relaunched job's config line (first step ``k + 1``) is there, is not the
    end of the relaunched job; its own summary is."""
    stale = _line("summary", first_step=1, steps=k, all_verified=False,
                  ended_early=f"rank 0 ... after step {k} without writing its summary")
    config = _line("config", first_step=k + 1)
    steps = [_line("step", step=t, verified=True) for t in range(k + 1, 31)]
    own = _line("summary", first_step=k + 1, steps=30 - k, all_verified=True)
    assert not own_summary([stale])
    assert not own_summary([stale, config, *steps])
    assert not own_summary([config, stale, *steps[:3]])  # the watcher later still
    assert own_summary([stale, config, *steps, own])
    assert not own_summary([own])  # no config line of the launch's own before it
    first = [_line("config", first_step=1), _line("step", step=1, verified=True),
             _line("summary", first_step=1, steps=1, all_verified=True)]
    assert own_summary(first)  # a first launch


FAKE_LAUNCHER = """
import json, sys, time
out, stale, rows, hang = sys.argv[1], sys.argv[2] == "stale", int(sys.argv[3]), sys.argv[4]
def add(rec):
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\\n")
if stale:  # the launch before's watcher, a moment after this launch began
    add({"kind": "summary", "job": "cec", "first_step": 1, "steps": 3,
         "all_verified": False, "ended_early": "rank 0 was killed"})
add({"kind": "config", "job": "cec", "first_step": 4})
for t in range(4, 4 + rows):
    time.sleep(0.15)
    print(f"{t:4d} 1,2,4                0.0170   0.0206  1.211     0.146  1.34e-16   "
          "21/25 yes", flush=True)
add({"kind": "summary", "job": "cec", "first_step": 4, "steps": rows, "all_verified": True})
if hang == "hang":  # a launcher waiting for a vanished host's daemon
    time.sleep(60)
"""


def _fake_launch(tmp_path: Path, *args: str) -> tuple[int, Launch, float]:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(_line("config", first_step=1)) + "\n"
                   + json.dumps(_line("step", step=1, verified=True)) + "\n")
    launch = Launch(1, ["h1"], 4, time.time())
    t0 = time.monotonic()
    rc = run_streaming([sys.executable, "-c", FAKE_LAUNCHER, str(out), *args], dict(os.environ),
                       30.0, launch, job_ended(str(out)))
    return rc, launch, time.monotonic() - t0


def test_a_healthy_relaunched_job_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    """The launch before's summary lands while the relaunched job runs (its launcher ended
    before its master): the relaunched job runs to its end, far past the grace."""
    monkeypatch.setattr(relaunch, "GRACE_S", 0.3)
    rc, launch, took = _fake_launch(tmp_path, "stale", "20", "end")
    assert rc == 0 and launch.steps_verified == 20, (rc, launch)
    assert took > 20 * 0.15


def test_a_launcher_that_hangs_after_its_jobs_summary_is_ended(tmp_path: Path,
                                                               monkeypatch) -> None:
    monkeypatch.setattr(relaunch, "GRACE_S", 0.3)
    rc, launch, took = _fake_launch(tmp_path, "stale", "2", "hang")
    assert rc == 124 and launch.steps_verified == 2, (rc, launch)
    assert took < 10


def test_the_package_is_compiled_once_before_the_launches(tmp_path: Path) -> None:
    """Every rank of every (re)launch imports the package: without bytecode on disk (a
    checkout, ``PYTHONDONTWRITEBYTECODE=1``) each compiled it at its start (issue 45), so
    the supervisor writes it; a package it may not write to is left alone."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "sub" / "b.py").write_text("Y = 2\n")
    assert compile_package(pkg)
    assert list((pkg / "__pycache__").glob("a.*.pyc"))
    assert list((pkg / "sub" / "__pycache__").glob("b.*.pyc"))
    (pkg / "bad.py").write_text("def (:\n")
    assert not compile_package(pkg)  # a module that does not compile: False, no raise


def test_a_job_that_ended_verified_is_not_relaunched(tmp_path: Path) -> None:
    """Whatever its launcher said after the job's verified summary (a hang, ranks ended
    badly), the supervisor takes the job as done; before its summary, or with a summary
    that says it ended early, the launch failed."""
    out = tmp_path / "r.jsonl"
    cfg = {"kind": "config", "job": "cec", "first_step": 1}
    out.write_text(json.dumps(cfg) + "\n")
    assert relaunch.job_status(1, str(out)) == 1 and relaunch.job_status(124, str(out)) == 124
    early = {"kind": "summary", "job": "cec", "first_step": 1,
             "all_verified": False, "ended_early": "rank 0 killed"}
    out.write_text(json.dumps(cfg) + "\n" + json.dumps(early) + "\n")
    assert relaunch.job_status(1, str(out)) == 1
    done = {**early, "all_verified": True, "ended_early": None}
    out.write_text(json.dumps(cfg) + "\n" + json.dumps(done) + "\n")
    assert relaunch.job_status(1, str(out)) == 0 and relaunch.job_status(124, str(out)) == 0
    assert relaunch.job_status(2, str(out)) == 2  # bad input stays bad input
