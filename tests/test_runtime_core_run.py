"""runtime/core/run.py: the world-size check on every rank, the run record, and the launch
(world check, wait mode, kept memory, guarded master and workers).  ``check_world`` and
``run_record`` in one process with a stand-in communicator; the launch under mpiexec."""

from __future__ import annotations

import os
import re

import pytest
from runtime_core_ranks import launched, result

from mpi_coded.errors import ConfigError
from mpi_coded.runtime.core import run
from mpi_coded.runtime.core.wait import POLICY
from mpi_coded.wait_modes import choose_mode


class _Comm:
    def __init__(self, size: int) -> None:
        self.size = size

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's name
        return self.size


def test_run_check_world_accepts_the_size_and_names_the_rule_otherwise():
    run.check_world(_Comm(7), 7, "N + 1 = 7")  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as e:
        run.check_world(_Comm(5), 7, "N + 1 = 7 (N = 6 machines)")  # type: ignore[arg-type]
    assert str(e.value) == "mpiexec -n: must be N + 1 = 7 (N = 6 machines) (got 5)"


def test_run_record_has_the_world_size_mpi_library_and_wait_strategy():
    rec = run.run_record(_Comm(4))  # type: ignore[arg-type]
    assert rec["world_size"] == 4
    assert rec["mpi"] and "\n" not in rec["mpi"] and rec["mpi"] == rec["mpi"].strip()
    for k, v in POLICY.to_dict().items():
        assert rec[k] == v


@pytest.mark.mpi
@pytest.mark.portable
def test_run_launch_resolves_auto_wait_from_the_ranks_on_this_node():
    out = result(launched("exchange"))
    got = out["run"]
    cores = len(os.sched_getaffinity(0))
    assert got["world_size"] == 3 and got["ranks_on_node"] == 3 and got["mpi"]
    assert got["cores"] >= 1
    assert got["wait_mode"] == choose_mode("auto", 3, got["cores"])
    assert got["wait_mode"] == out["policy"]["wait_mode"]
    if got["cores"] == cores:  # the ranks were not bound to fewer cores than pytest has
        assert out["policy"]["idle_sleep_s"] == pytest.approx(
            min(1e-2, max(1e-3, 3 / cores / 4000)))


@pytest.mark.mpi
@pytest.mark.portable
def test_run_launch_on_the_wrong_world_size_is_bad_input_on_every_rank():
    r = launched("world")
    # the ranks' lines may interleave on the launcher's stdout: find them, not split them
    got = sorted(re.findall(r"CONFIG rank (\d+): (mpiexec -n: [^\n]*?\(got \d+\))",
                            r.stdout))
    assert got == [(k, "mpiexec -n: must be 3 for this test (got 2)") for k in "01"], \
        r.stdout + r.stderr
