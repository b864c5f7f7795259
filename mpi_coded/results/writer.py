"""Writing results files: :class:`ResultsWriter` appends one line per record, flushed and
fsync'ed before :meth:`~ResultsWriter.write` returns (a job killed mid-write leaves at
most one torn last line, which the readers skip), and :func:`jsonable`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from mpi_coded.results.record import Record


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

    def write(self, record: Record | dict[str, Any]) -> None:
        """Append one line (a :class:`Record`'s :meth:`~Record.to_dict`, or a dict), flushed
        and fsync'ed before returning."""
        rec = jsonable(record.to_dict() if isinstance(record, Record) else record)
        self.lines.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec, sort_keys=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
