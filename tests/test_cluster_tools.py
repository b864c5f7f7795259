"""How ``mpi-coded cluster`` finds the system tools it runs (``ip``, ``tc``, ``nsenter``,
``unshare``, SLURM's daemons) with :func:`netns.find_tool`: on PATH, else in
``/usr/local/sbin``, ``/usr/sbin`` and ``/sbin``, which Debian's default PATH for a user
(``/usr/local/bin:/usr/bin:/bin``) leaves out; and that a missing privilege is said before a
missing tool.  Pure: no root, no namespace is made (fake tools in a temporary directory
stand in for the real ones).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from conftest import run_cmd
from mpi_coded.cli.main import main
from mpi_coded.cluster import manage, netns
from mpi_coded.cluster.netns import ClusterError, Step

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"  # Debian's PATH for a user: no sbin
ALL_CAPS = (1 << manage.CAP_NET_ADMIN) | (1 << manage.CAP_SYS_ADMIN)


ECHO = 'echo "$0 $*"; while IFS= read -r line; do echo "$line"; done'  # no PATH needed


def fake_tool(directory: Path, name: str, body: str = ECHO) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe


@pytest.fixture
def sbin(tmp_path, monkeypatch) -> Path:
    """An sbin directory of fake tools, and a PATH that does not contain it."""
    d = tmp_path / "sbin"
    d.mkdir()
    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(netns, "SBIN_DIRS", (str(tmp_path / "nowhere"), str(d)))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return d


def test_a_tool_only_in_sbin_is_found_with_a_path_without_sbin(sbin):
    tc = fake_tool(sbin, "tc")
    assert manage.find_tool("tc") == str(tc)
    assert manage.tool_path("tc") == str(tc)


def test_a_tool_on_path_comes_before_the_one_in_sbin(sbin, tmp_path):
    fake_tool(sbin, "ip")
    mine = fake_tool(tmp_path / "bin", "ip")
    assert manage.find_tool("ip") == str(mine)


def test_a_tool_in_neither_is_none_and_the_error_names_it_and_its_package(sbin):
    assert manage.find_tool("tc") is None
    with pytest.raises(ClusterError) as e:
        manage.tool_path("tc")
    msg = str(e.value)
    assert msg.startswith("tc is not installed") and "iproute2" in msg
    assert str(sbin) in msg and "\n" not in msg


def test_this_machines_tc_is_found_with_debians_default_path(monkeypatch):
    real = [d for d in ("/usr/local/sbin", "/usr/sbin", "/sbin") if os.access(f"{d}/tc",
                                                                              os.X_OK)]
    if not real:
        pytest.skip("tc is not installed in an sbin directory here (iproute2)")
    monkeypatch.setenv("PATH", DEFAULT_PATH)
    found = manage.find_tool("tc")
    assert found is not None and os.path.dirname(found) in (*real, "/usr/bin", "/bin")


def test_the_steps_run_the_tool_found_in_sbin(sbin):
    fake_tool(sbin, "ip")
    r = manage.run_step(Step(("ip", "-batch", "-"), "link add x type bridge\n"))
    assert r.returncode == 0
    assert r.stdout == f"{sbin}/ip -batch -\nlink add x type bridge\n"


def test_a_failing_step_is_one_line_naming_its_command(sbin):
    fake_tool(sbin, "tc", 'echo "RTNETLINK answers: Operation not permitted" >&2; exit 2')
    with pytest.raises(ClusterError) as e:
        manage.run_step(Step(("tc", "-batch", "-"), "qdisc add\n"))
    assert str(e.value) == "tc -batch - failed: RTNETLINK answers: Operation not permitted"
    assert manage.run_step(Step(("tc", "qdisc"),), check=False).returncode == 2


def test_the_host_command_runs_the_tools_it_is_given():
    c = netns.plan_cluster("ab1", 2, subnet=3)
    argv = netns.host_command(c, c.hosts[1], ["/usr/sbin/slurmd", "-D"], "/usr/bin/nsenter",
                              "/usr/bin/unshare")
    assert argv[:4] == ["/usr/bin/nsenter", "--net=/run/netns/mpi-coded-ab1-node2",
                        "/usr/bin/unshare", "--uts"]
    assert argv[-2:] == ["/usr/sbin/slurmd", "-D"]
    assert netns.host_command(c, c.hosts[0], ["true"])[0] == "nsenter"


# --- what is missing: the privilege first, then a tool -------------------------------------

def test_without_privilege_and_without_tools_the_privilege_is_said(sbin, monkeypatch):
    monkeypatch.setattr(manage, "effective_caps", lambda: 0)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    why = manage.missing_privilege()
    assert why is not None and why.startswith("needs root with CAP_NET_ADMIN and "
                                              "CAP_SYS_ADMIN") and "not root" in why
    assert "not installed" not in why


def test_root_without_cap_net_admin_is_said_before_a_missing_tool(sbin, monkeypatch):
    monkeypatch.setattr(manage, "effective_caps", lambda: 1 << manage.CAP_SYS_ADMIN)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    why = manage.missing_privilege()
    assert why is not None and "root without CAP_NET_ADMIN" in why


def test_with_privilege_a_missing_tool_is_said(sbin, monkeypatch):
    monkeypatch.setattr(manage, "effective_caps", lambda: ALL_CAPS)
    for tool in ("ip", "nsenter", "unshare"):
        fake_tool(sbin, tool)
    why = manage.missing_privilege()
    assert why is not None and why.startswith("tc is not installed") and "iproute2" in why
    fake_tool(sbin, "tc")
    assert manage.missing_privilege() is None  # every tool only in sbin, none on PATH


@pytest.mark.parametrize("args", [["up", "--hosts", "2"], ["down"], ["link", "2", "down"]])
def test_the_cli_says_the_missing_privilege_in_one_line_exit_2(sbin, monkeypatch, capsys,
                                                               tmp_path, args):
    monkeypatch.setattr(manage, "effective_caps", lambda: 0)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    rc = main(["cluster", *args[:1], "--dir", str(tmp_path / "state"), *args[1:]])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("mpi-coded cluster: error: needs root with CAP_NET_ADMIN"), err


def test_bad_input_is_said_before_the_missing_privilege(sbin, monkeypatch, capsys):
    monkeypatch.setattr(manage, "effective_caps", lambda: 0)
    rc = main(["cluster", "up", "--hosts", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "--hosts: must be an integer from 1 to 200" in err, err
    assert len(err.splitlines()) == 1


def test_as_a_user_with_debians_default_path_up_says_it_needs_root():
    """The report that started this: ``tc is not installed`` for a user whose PATH has no
    /usr/sbin; a real process, its PATH Debian's default."""
    if os.geteuid() == 0:
        pytest.skip("root: tests/test_multihost.py drops the privilege with setpriv")
    r = run_cmd([sys.executable, "-m", "mpi_coded", "cluster", "up", "--hosts", "2"], 60,
                env={"PATH": DEFAULT_PATH})
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "needs root" in r.stderr and "not installed" not in r.stderr, r.stderr
