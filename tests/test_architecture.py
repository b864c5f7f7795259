"""Architecture rules: pure packages never import mpi4py; lint and types are clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cmd

PURE_MODULES = [
    "mpi_coded.cli", "mpi_coded.cec", "mpi_coded.cec.config", "mpi_coded.cec.commands",
    "mpi_coded.codes", "mpi_coded.fields", "mpi_coded.results", "mpi_coded.errors",
]


def test_pure_modules_do_not_import_mpi4py():
    code = ("import sys, importlib\n"
            f"for m in {PURE_MODULES!r}: importlib.import_module(m)\n"
            "import pkgutil, mpi_coded\n"
            "for info in pkgutil.walk_packages(mpi_coded.__path__, 'mpi_coded.'):\n"
            "    if not info.name.startswith(('mpi_coded.runtime', 'mpi_coded.__main__')):\n"
            "        importlib.import_module(info.name)\n"
            "bad = [m for m in sys.modules if m.startswith('mpi4py')]\n"
            "print(bad)\nsys.exit(1 if bad else 0)\n")
    r = run_cmd([sys.executable, "-c", code], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_only_the_runtime_imports_mpi4py():
    offenders = []
    for path in (ROOT / "mpi_coded").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("mpi_coded/runtime/"):
            continue
        for line in path.read_text().splitlines():
            s = line.strip()
            if s.startswith(("import mpi4py", "from mpi4py")):
                offenders.append(f"{rel}: {s}")
    assert offenders == []


def test_plan_runs_without_mpi():
    r = run_cmd([sys.executable, "-m", "mpi_coded", "plan", "cec", "--speeds", "1,2,3",
                 "--L", "2", "--json"], timeout=60, env={"MPI4PY_RC_INITIALIZE": "0"})
    assert r.returncode == 0 and '"time": "1/3"' in r.stdout


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (it comes with the 'test' extra)")
    return found


def test_ruff_is_clean():
    r = subprocess.run([_tool("ruff"), "check", "mpi_coded", "tests", "scripts"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_is_clean_on_the_package():
    r = subprocess.run([_tool("mypy"), "mpi_coded"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
