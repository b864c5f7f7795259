"""Results files: one JSON object per line, appended and flushed at once.

Nothing already measured is lost when a job dies: every line is written and
flushed (and fsync'ed) as soon as it exists.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any, TextIO


def jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays and Fractions to JSON types."""
    import fractions

    import numpy as np

    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, fractions.Fraction):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


class ResultsWriter:
    """Append JSON lines to ``path`` (``None``: keep them in memory only)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lines: list[dict[str, Any]] = []
        self._fh: TextIO | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, record: dict[str, Any]) -> None:
        rec = jsonable(record)
        self.lines.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec, sort_keys=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def run_context() -> dict[str, Any]:
    """Host and versions, for reproducibility."""
    import numpy as np

    from mpi_coded import __version__

    return {
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "mpi_coded": __version__,
    }
