"""Machines that die (``fault_tolerance = "ulfm"``, mpi_coded/fault_tolerance.py and
mpi_coded/runtime/core/ulfm.py): the rule of which MPI can, checked without MPI; and under
mpiexec, a machine killed (SIGKILL) in setup, while idle, while computing and while sending
its answer: the job goes on, every step verified, the lost machine named with its step.
Under Open MPI (the CI's .venv-ompi) the kills run; under MPICH the same tests check the
one-line refusal that names MPICH's failure."""

from __future__ import annotations

import os
import re
import sys
import time

import pytest

from conftest import launcher_env, mpi_flavor, mpiexec_cmd, processes_matching, run_cmd
from mpi_coded import fault_tolerance as ft
from mpi_coded.cec.config import CECConfig
from mpi_coded.errors import ConfigError
from mpi_coded.faults import parse_fault
from mpi_coded.results import ABANDONED, RUN, STEP, SUMMARY, kind_of, read_results

OPEN_MPI = ("Open MPI v5.0.11, package: Open MPI user@localhost Distribution, ident: 5.0.11, "
            "repo rev: v5.0.11rc1, Sep 16, 2026")
MPICH = "MPICH Version:      5.0.2\nMPICH Release date: unreleased development copy"
FLAGS_ENV = {"OMPI_MCA_mpi_ft_enable": "1"}


def test_ulfm_needs_open_mpi_launched_with_ft():
    assert ft.LAUNCHER_FLAGS == ("--with-ft", "ulfm")  # no heartbeat detector (docs)
    assert ft.ulfm_missing(OPEN_MPI, FLAGS_ENV) is None
    why = ft.ulfm_missing(OPEN_MPI, {})
    assert why == ("Open MPI v5.0.11 was launched without --with-ft ulfm: launch with "
                   "`mpiexec --with-ft ulfm ...`")
    assert ft.ulfm_missing(OPEN_MPI, {"OMPI_MCA_mpi_ft_enable": "0"}) is not None
    why = ft.ulfm_missing(MPICH, FLAGS_ENV)
    assert why.startswith("this MPI is MPICH Version: 5.0.2: MPICH's fault tolerance "
                          "(MPIR_CVAR_ENABLE_FT=1) aborts every rank at start")
    assert "ch4_request.h at line 16" in why
    assert "not Open MPI 5 with ULFM" in ft.ulfm_missing("Intel(R) MPI Library 2021", {})


def test_the_config_key_and_who_may_use_it():
    assert CECConfig().fault_tolerance == "none"
    assert "fault_tolerance" not in CECConfig().to_dict()  # older results still compare
    assert CECConfig(fault_tolerance="ulfm").validate().to_dict()["fault_tolerance"] == "ulfm"
    with pytest.raises(ConfigError, match=r"^fault_tolerance: must be one of none, ulfm"):
        CECConfig(fault_tolerance="yes").validate()
    with pytest.raises(ConfigError, match=r'^fault_tolerance: must be "none" with policy = '
                                          r'"uncoded": a machine that dies takes the only'):
        CECConfig(policy="uncoded", fault_tolerance="ulfm").validate()
    assert CECConfig(fault_tolerance="ulfm", replace_lost="spawn").validate()
    with pytest.raises(ConfigError, match=r'^replace_lost: spawn needs fault_tolerance = '
                                          r'"ulfm"'):
        CECConfig(replace_lost="spawn").validate()
    with pytest.raises(ConfigError, match=r"^replace_lost: must be one of none, spawn"):
        CECConfig(fault_tolerance="ulfm", replace_lost="always").validate()


def test_deaths_and_joins_are_checked_pairs_of_a_step_and_a_machine():
    from mpi_coded.cec.config import from_mapping

    ok = from_mapping({"fault_tolerance": "ulfm", "deaths": [[2, 4]], "joins": [[3, 4]]})
    assert ok.validate().to_dict()["deaths"] == ((2, 4),)
    assert [(f.kind, f.rank, f.phase, f.step) for f in ok.death_faults()] == [
        ("kill", 4, "step", 2), ("kill", 4, "idle", 2)]
    assert "deaths" not in from_mapping({}).to_dict()  # older results still compare
    bad = [({"deaths": [[2, 4]]}, 'deaths: needs fault_tolerance = "ulfm"'),
           ({"fault_tolerance": "ulfm", "deaths": [[2, 9]]},
            "deaths: must be [step, machine] pairs, step in 1..4, machine in 1..N=6"),
           ({"fault_tolerance": "ulfm", "deaths": [[5, 1]]}, "step in 1..4"),
           ({"fault_tolerance": "ulfm", "deaths": [[2, 4], [3, 4]]},
            "deaths: machine 4 can die once"),
           ({"fault_tolerance": "ulfm", "deaths": [[2, 4]], "joins": [[2, 4]]},
            "joins: machine 4 joins after it died (at step 2)")]
    for mapping, message in bad:
        with pytest.raises(ConfigError) as exc:
            from_mapping(mapping).validate()
        assert message in str(exc.value), (mapping, str(exc.value))


def test_machines_may_be_killed_while_idle_and_while_answering():
    assert parse_fault("kill:3:idle@2", "cec", 7).phase == "idle"
    assert parse_fault("kill:3:answer", "cec", 7).phase == "answer"
    with pytest.raises(ConfigError, match="PHASE"):
        parse_fault("kill:3:idle", "coded", 7)


# -- under mpiexec ----------------------------------------------------------------------


def run_ft(tmp_path, *args: str, timeout: float = 120.0):
    """``mpi-coded run cec --fault-tolerance ulfm`` with the launcher flags it needs."""
    extra = list(ft.LAUNCHER_FLAGS) if mpi_flavor() == "openmpi" else []
    out = tmp_path / "ft.jsonl"
    cmd = [*mpiexec_cmd(7, *extra), sys.executable, "-m", "mpi_coded", "run", "cec",
           "--fault-tolerance", "ulfm", "--t-row", "0.002", "--out", str(out), *args]
    return run_cmd(cmd, timeout, launcher_env()), out


def run_ft_config(tmp_path, toml: str, timeout: float = 180.0):
    """The elastic job of the config ``toml`` (its own fault-tolerance keys) under the
    launcher flags ulfm needs."""
    config = tmp_path / "job.toml"
    config.write_text(toml)
    extra = list(ft.LAUNCHER_FLAGS) if mpi_flavor() == "openmpi" else []
    out = tmp_path / "job.jsonl"
    return run_cmd([*mpiexec_cmd(7, *extra), sys.executable, "-m", "mpi_coded", "run", "cec",
                    "--config", str(config), "--out", str(out)], timeout, launcher_env()), out


def left_behind(text: str, seconds: float = 15.0) -> list[str]:
    """The processes whose command line holds ``text`` still alive after ``seconds`` (an
    aborted job's ranks may outlive its launcher by a moment)."""
    end = time.monotonic() + seconds
    while (found := processes_matching(text)) and time.monotonic() < end:
        time.sleep(0.2)
    return found


def kill_time(stderr: str, rank: int) -> float:
    m = re.search(rf"rank {rank} \(.*\) killed by fault injection in phase .* at unix "
                  r"([0-9.]+)", stderr)
    assert m, stderr
    return float(m.group(1))


def refused_under_mpich(r) -> bool:
    """Under MPICH: the one-line refusal naming MPICH's failure, exit 2.  CI's Open MPI run
    sets ``MPI_CODED_EXPECT_MPI=openmpi``: there the real runs must happen."""
    expected = os.environ.get("MPI_CODED_EXPECT_MPI")
    assert expected in (None, "", mpi_flavor()), f"expected {expected}, got {mpi_flavor()}"
    if mpi_flavor() == "openmpi":
        return False
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("mpi-coded:")]
    assert lines == [f"mpi-coded: error: fault_tolerance: ulfm needs MPI fault tolerance "
                     f"(ULFM): {lines[0].split('(ULFM): ', 1)[1]}"]
    assert "MPIR_CVAR_ENABLE_FT=1" in lines[0] and "use Open MPI 5" in lines[0]
    return True


KILLS = [("setup", "kill:4:setup", 4, 0), ("idle", "kill:4:idle@2", 4, 2),
         ("computing", "kill:2:step@2", 2, 2), ("answering", "kill:3:answer@1", 3, 1)]


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.parametrize("when,fault,rank,step", KILLS, ids=[k[0] for k in KILLS])
def test_a_killed_machine_is_lost_and_the_job_goes_on(tmp_path, when, fault, rank, step):
    r, out = run_ft(tmp_path, "--fault", fault)
    if refused_under_mpich(r):
        return
    assert r.returncode == 0, r.stdout + r.stderr
    lines = list(read_results(out))
    summary = [ln for ln in lines if kind_of(ln) == SUMMARY][-1]
    steps = [ln for ln in lines if kind_of(ln) == STEP]
    assert summary["all_verified"] and len(steps) == 4 and all(s["verified"] for s in steps)
    [lost] = summary["lost"]
    assert (lost["machine"], lost["step"]) == (rank, step)
    assert lost["phase"] == ("setup" if step == 0 else "step")
    assert summary["machines_left"] == [n for n in range(1, 7) if n != rank]
    # detected by MPI's failure report, not by waiting out the step's deadline (>= 2 s)
    latency = lost["detected_unix"] - kill_time(r.stderr, rank)
    assert 0 <= latency < 1.0, latency
    later = [s for s in steps if s["step"] > max(step, 1)]
    assert later and all(rank not in s["available"] for s in later)
    if step:
        assert [e["machine"] for e in steps[step - 1]["lost"]] == [rank]
    # on one host no step has link bytes, though a machine lost before READY has no host
    assert all(s.get("link_bytes") is None for s in steps)
    assert f"lost machine {rank}" in r.stdout
    assert "Traceback" not in r.stderr
    assert left_behind(str(out)) == []  # every rank ended, none waits for the dead


@pytest.mark.mpi
@pytest.mark.portable
def test_too_few_machines_left_is_one_line_and_a_summary_that_says_why(tmp_path):
    r, out = run_ft(tmp_path, "--fault", "kill:1:setup", "--fault", "kill:2:setup",
                    "--fault", "kill:3:step@1", "--fault", "kill:4:step@1")
    if refused_under_mpich(r):
        return
    assert r.returncode != 0
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("mpi-coded: error:")]
    assert len(said) == 1 and "2 machines left [5, 6], fewer than the L=3 a step needs: " \
        "lost machine 1" in said[0], r.stderr
    summary = [ln for ln in read_results(out) if kind_of(ln) == SUMMARY][-1]
    assert not summary["all_verified"] and summary["ended_early"]
    assert sorted(e["machine"] for e in summary["lost"]) == [1, 2, 3, 4]


@pytest.mark.mpi
@pytest.mark.portable
def test_a_new_machine_joins_gets_its_block_and_its_first_step_verifies(tmp_path):
    r, out = run_ft(tmp_path, "--fault", "kill:2:step@2", "--replace-lost", "spawn")
    if refused_under_mpich(r):
        return
    assert r.returncode == 0, r.stdout + r.stderr
    lines = list(read_results(out))
    summary = [ln for ln in lines if kind_of(ln) == SUMMARY][-1]
    steps = {ln["step"]: ln for ln in lines if kind_of(ln) == STEP}
    assert summary["all_verified"] and all(s["verified"] for s in steps.values())
    [joined] = summary["joined"]
    # the lost machine 2's coded block: 420 rows x 200 float64, sent to the new process
    assert (joined["machine"], joined["step"], joined["block_bytes"]) == (2, 3, 420 * 200 * 8)
    assert joined["spawn_s"] > 0 and joined["block_s"] > 0
    assert steps[3]["joined"] == [joined]
    # planned from the step it joined: the seed schedule has machine 2 at steps 3 and 4
    assert 2 in steps[3]["available"] and 2 in steps[4]["available"]
    assert steps[3]["rows"]["2"] > 0
    assert summary["machines_left"] == [1, 2, 3, 4, 5, 6]
    assert "a new machine 2" in r.stdout and "joined" in r.stdout
    assert left_behind(str(out)) == []


def run_coded_ft(tmp_path, *args: str, timeout: float = 180.0):
    extra = list(ft.LAUNCHER_FLAGS) if mpi_flavor() == "openmpi" else []
    out = tmp_path / "coded.jsonl"
    cmd = [*mpiexec_cmd(7, *extra), sys.executable, "-m", "mpi_coded", "run", "coded",
           "--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch",
           "4", "--n", "8", "--N", "12", "--fault-tolerance", "ulfm", "--out", str(out), *args]
    return run_cmd(cmd, timeout, launcher_env()), out


@pytest.mark.mpi
@pytest.mark.portable
def test_a_coded_server_killed_in_the_map_is_a_straggler_and_every_rep_verifies(tmp_path):
    r, out = run_coded_ft(tmp_path, "--reps", "3", "--t-row", "0.002",
                          "--fault", "kill:3:map@1")
    if refused_under_mpich(r):
        return
    assert r.returncode == 0, r.stdout + r.stderr
    lines = list(read_results(out))
    runs = [ln for ln in lines if kind_of(ln) == RUN]
    summary = [ln for ln in lines if kind_of(ln) == SUMMARY][-1]
    assert len(runs) == 3 and all(x["verified"] for x in runs) and summary["all_verified"]
    assert summary["lost"] == [2] and runs[1]["lost"] == [2] and runs[0]["lost"] == []
    assert all(2 not in x["Q"] and 2 not in x["finishing_order"] for x in runs[1:])
    assert "server 2 = rank 3" in r.stderr and "lost, the job goes on" in r.stderr
    assert left_behind(str(out)) == []


@pytest.mark.mpi
@pytest.mark.portable
@pytest.mark.parametrize("kill, rep, server, phase", [
    ("kill:3:shuffle@0", 0, 2, "shuffle"),  # before it sends: the reducers miss its messages
    ("kill:5:reduce@1", 1, 4, "reduce"),  # a reducer, after the shuffle: its outputs never come
])
def test_a_coded_finisher_killed_abandons_its_repetition_and_the_job_goes_on(
        tmp_path, kill, rep, server, phase):
    # servers 0 and 1 slowed: the finishers of repetitions 0 and 1 are servers 2..5
    r, out = run_coded_ft(tmp_path, "--reps", "3", "--t-row", "0.004", "--fault", "slow:1:4",
                          "--fault", "slow:2:4", "--fault", kill)
    if refused_under_mpich(r):
        return
    assert r.returncode == 0, r.stdout + r.stderr
    lines = list(read_results(out))
    [gone] = [ln for ln in lines if kind_of(ln) == ABANDONED]
    runs = {ln["rep"]: ln for ln in lines if kind_of(ln) == RUN}
    summary = [ln for ln in lines if kind_of(ln) == SUMMARY][-1]
    who = f"server {server} = rank {server + 1}"
    assert (gone["rep"], gone["phase"], gone["lost"]) == (rep, phase, [server])
    assert gone["why"].startswith(who) and gone["why"].endswith(f"died in the {phase}")
    assert server in gone["Q"] and gone["phase_s"] < 10  # known at once, no deadline
    if phase == "shuffle":  # a reducer left missed the dead one's messages
        assert any(v > 0 for v in gone["missing"].values()) and str(server) not in \
            gone["missing"]
    # every other repetition ran to its end and verified, without the dead server
    assert sorted(runs) == sorted({0, 1, 2} - {rep}) and all(x["verified"] for x in runs.values())
    assert all(server not in x["Q"] for x in runs.values() if x["rep"] > rep)
    assert summary["all_verified"] and summary["abandoned"] == [rep] \
        and summary["lost"] == [server]
    assert re.search(rf"mpi-coded: warning: rep {rep}: {who} \(.*\) died in the {phase}: "
                     "the repetition ends without its outputs; the job goes on with the next",
                     r.stderr), r.stderr
    assert left_behind(str(out)) == []


@pytest.mark.mpi
@pytest.mark.portable
def test_coded_servers_too_few_left_end_the_job_in_one_line_and_a_summary(tmp_path):
    # three of the four finishers die in repetition 0's shuffle: 3 servers left, q = 4
    r, out = run_coded_ft(tmp_path, "--reps", "3", "--t-row", "0.004", "--fault", "slow:1:4",
                          "--fault", "slow:2:4", "--fault", "kill:3:shuffle@0",
                          "--fault", "kill:4:shuffle@0", "--fault", "kill:5:shuffle@0")
    if refused_under_mpich(r):
        return
    assert r.returncode == 1, r.stdout + r.stderr
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("mpi-coded: error:")]
    assert len(said) == 1 and re.search(
        r"rank 0 \(.*\) in phase map 1: rep 1: server 2 = rank 3 \(.*\), server 3 = rank 4 "
        r"\(.*\), server 4 = rank 5 \(.*\) died; the 3 servers left cannot end the map",
        said[0]), r.stderr
    lines = list(read_results(out))
    summary = [ln for ln in lines if kind_of(ln) == SUMMARY][-1]
    assert not summary["all_verified"] and "cannot end the map" in summary["ended_early"]
    assert summary["lost"] == [2, 3, 4] and summary["abandoned"] == [0]
    assert left_behind(str(out)) == []  # the servers left were stopped, none waits


SPOT_MARKET = """job = "cec"
N = 6
L = 3
speeds = [1, 1, 1.5, 1.5, 2, 2]
rows = 1260
cols = 200
t_row = 0.002
fault_tolerance = "ulfm"
deaths = [[2, 4], [3, 1]]
joins = [[4, 4]]

[availability]
kind = "schedule"
schedule = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5, 6]]
"""


@pytest.mark.mpi
@pytest.mark.portable
def test_a_spot_market_replayed_preempted_dead_and_joined_side_by_side(tmp_path):
    """One config: machine 4 preempted at step 2 and killed while idle, machine 1 killed
    computing at step 3, machine 4 back as a new process at step 4; every step verifies."""
    r, out = run_ft_config(tmp_path, SPOT_MARKET)
    if refused_under_mpich(r):
        return
    assert r.returncode == 0, r.stdout + r.stderr
    lines = list(read_results(out))
    steps = {ln["step"]: ln for ln in lines if kind_of(ln) == STEP}
    summary = [ln for ln in lines if kind_of(ln) == SUMMARY][-1]
    assert summary["all_verified"] and len(steps) == 5
    assert [(e["machine"], e["step"]) for e in summary["lost"]] == [(4, 2), (1, 3)]
    assert 4 not in steps[2]["available"] and [e["machine"] for e in steps[2]["lost"]] == [4]
    assert [e["machine"] for e in steps[3]["lost"]] == [1] and 1 not in steps[3]["available"]
    assert [j["machine"] for j in steps[4]["joined"]] == [4] and 4 in steps[4]["available"]
    assert 1 not in steps[5]["available"] and 4 in steps[5]["available"]
    assert "killed by fault injection in phase idle 2" in r.stderr


STRAGGLERS_S1 = """job = "cec"
N = 6
L = 3
S = 1
speeds = [1, 1, 1.5, 1.5, 2, 2]
rows = 1260
cols = 200
t_row = 0.002
fault_tolerance = "ulfm"
deaths = [[2, 2]]

[availability]
kind = "schedule"
schedule = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]]
"""


@pytest.mark.mpi
@pytest.mark.portable
def test_with_stragglers_tolerated_a_death_costs_no_replan(tmp_path):
    """S = 1: every row set is on L + 1 machines, so the step a machine dies in still ends
    from the others' first L answers: not re-planned, verified."""
    r, out = run_ft_config(tmp_path, STRAGGLERS_S1)
    if refused_under_mpich(r):
        return
    assert r.returncode == 0, r.stdout + r.stderr
    steps = {ln["step"]: ln for ln in read_results(out) if kind_of(ln) == STEP}
    assert all(s["verified"] for s in steps.values())
    assert [e["machine"] for e in steps[2]["lost"]] == [2]
    assert not steps[2]["replanned"] and steps[2]["attempts"] == 1
    assert 2 not in steps[3]["available"]
