"""Shared by the benchmark scripts: launch ``mpiexec`` safely; read results through
:mod:`mpi_coded.results`."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from mpi_coded.bench.wrong_answers import mpiexec  # noqa: E402 (after the path above)


def run_mpi(n: int, args: list[str], timeout: float = 600.0, stream: bool = False) -> None:
    """``mpiexec -n n python -m mpi_coded ARGS`` in its own process group, with a timeout;
    ``stream``: forward its output line by line as it comes (long jobs' progress).  On a
    timeout or an interruption the launcher and every rank it started are killed
    (:func:`mpi_coded.proctree.kill_tree`) and what it printed so far is shown."""
    from mpi_coded.proctree import kill_tree

    cmd = [mpiexec(), "-n", str(n), sys.executable, "-m", "mpi_coded", *args]
    proc = subprocess.Popen(cmd, start_new_session=True, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if stream:
                sys.stdout.write(line)
                sys.stdout.flush()
            else:
                lines.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except BaseException as exc:  # the timeout, or Ctrl-C: no rank is left behind
        kill_tree(proc.pid)
        proc.wait()
        reader.join(timeout=10)
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise SystemExit(f"timed out: {' '.join(cmd)}") from None
        raise
    reader.join(timeout=10)
    sys.stdout.write("".join(lines))
    sys.stdout.flush()
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
