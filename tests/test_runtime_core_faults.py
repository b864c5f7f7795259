"""runtime/core/faults.py: a worker's injected faults fire on their rank, phase and step,
once each; a garble sends the master a header its parser rejects naming the rank.  In one
process with a stand-in communicator (kill is left to the jobs' fault tests)."""

from __future__ import annotations

import numpy as np
import pytest

from mpi_coded import faults as fault_modes
from mpi_coded.faults import Fault
from mpi_coded.runtime.core import faults, wire


class _Comm:
    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.sent: list[tuple[np.ndarray, int, int]] = []

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's name
        return self.rank

    def Send(self, buf, dest, tag):  # noqa: N802
        self.sent.append((buf.copy(), dest, tag))


@pytest.fixture
def stalls(monkeypatch):
    monkeypatch.setattr(faults, "_FIRED", set())
    got: list[float] = []
    monkeypatch.setattr(fault_modes.time, "sleep", got.append)
    return got


def test_faults_stall_fires_on_its_rank_phase_and_step_once(stalls, capsys):
    f = (Fault("stall", 2, "step", 3, seconds=1.5),)
    for rank, phase, step in [(1, "step", 3), (2, "setup", 3), (2, "step", 2), (2, "step", None)]:
        faults.at_phase(f, _Comm(rank), phase, step)  # type: ignore[arg-type]
    assert stalls == []
    faults.at_phase(f, _Comm(2), "step", 3)  # type: ignore[arg-type]
    faults.at_phase(f, _Comm(2), "step", 3)  # type: ignore[arg-type]
    assert stalls == [1.5]
    assert "rank 2 (" in capsys.readouterr().err


def test_faults_without_a_step_fire_the_first_time_the_phase_is_entered(stalls):
    f = (Fault("stall", 1, "map", None, seconds=0.5),)
    faults.at_phase(f, _Comm(1), "map", 0)  # type: ignore[arg-type]
    faults.at_phase(f, _Comm(1), "map", 1)  # type: ignore[arg-type]
    assert stalls == [0.5]


def test_faults_garble_sends_the_master_a_header_it_rejects_naming_the_rank(stalls):
    comm = _Comm(3)
    faults.at_phase((Fault("garble", 3, "reduce"),), comm, "reduce", 0)  # type: ignore[arg-type]
    ((buf, dest, tag),) = comm.sent
    assert (dest, tag, buf.shape) == (0, wire.TAG_HEADER, (wire.HEADER_WORDS,))
    with pytest.raises(wire.WireError, match=r"^malformed header from rank 3: bad magic"):
        wire.parse_header(buf, 3, set(wire.Kind), None)
    assert stalls == []


def test_faults_slow_and_drift_do_nothing_at_a_phase(stalls):
    comm = _Comm(1)
    faults.at_phase((Fault("slow", 1, "", factor=2.0), Fault("drift", 1, "step", 2, factor=0.5)),
                    comm, "step", 2)  # type: ignore[arg-type]
    assert stalls == [] and comm.sent == []
