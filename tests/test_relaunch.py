"""The relaunch's decisions (mpi_coded/cluster/relaunch.py), pure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpi_coded.cluster.netns import plan_cluster
from mpi_coded.cluster.relaunch import (
    has_steps,
    hosts_up,
    out_arg,
    placement,
    ranks_arg,
    ranks_left,
    relaunch_command,
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
