"""The calibration file: a measured cost table as a small JSON document
(``mpi-coded model --calibrate`` writes it, ``model --calibration FILE`` reads it).

Version 5 (:data:`VERSION`): ``seconds_per_op`` holds every key of
:data:`mpi_coded.codes.prices.KEYS`; ``problems`` (optional) names the values that are not
plain measurements (:class:`~mpi_coded.analysis.calibration.measuring.Measurement`).
Version 4 and 3 files are still read.  They have no ``rs_fft_encode_large`` (version 5's
price of an FFT encode whose transforms outgrow a core's cache): it is read as their
``rs_fft_encode``, the one price their model gave every FFT encode.  A version 3 file's
``gf2^8_matmul`` and
``gf2^16_matmul`` (a per-multiply-add price that version 3's model used only for the lt
fallback) are read as 0, the price a version 4 calibration gives them, so that a blocked
product is priced by the kernels' estimate alone, as version 3's model priced it.  Older
versions are refused with a message to calibrate again.

``network`` (optional, any version): ``{"alpha_s": seconds per message, "efficiency":
achieved fraction of the link rate}``, measured on the emulated network; :func:`load`
ignores it, ``model --rate`` reads it (:func:`mpi_coded.analysis.network.link_calibration`,
docs/theory.md (B.7)).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mpi_coded.codes.prices import KEYS, FieldOp, Kernel
from mpi_coded.errors import ConfigError, require

VERSION = 5
READS = (3, 4, 5)
"""The file versions :func:`load` reads."""
ADDED_IN_5 = {str(Kernel.RS_FFT_ENCODE_LARGE): str(Kernel.RS_FFT_ENCODE)}
"""Keys version 5 added, and the key an older file's value is read from (module
docstring)."""
V3_ZEROED = tuple(str(Kernel.gf(f, FieldOp.MATMUL)) for f in ("gf2^8", "gf2^16"))
"""Keys a version 3 file's values are replaced by 0 for (module docstring)."""


def write(table: Mapping[str, float], path: str | Path,
          problems: Mapping[str, str] | None = None,
          network: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Write the calibration file (with the optional ``network`` object); returns what was
    written."""
    doc: dict[str, Any] = {
        "version": VERSION, "host": platform.node(), "cpu_count": os.cpu_count(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds_per_op": {k: float(table[k]) for k in KEYS}}
    if problems:
        doc["problems"] = dict(problems)
    if network:
        doc["network"] = {k: float(v) for k, v in network.items()}
    try:
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        raise ConfigError("out", f"cannot write the calibration file: {exc.strerror}",
                          str(path)) from None
    return doc


def load(path: str | Path) -> dict[str, float]:
    """The table of a calibration file; ConfigError (``calibration``) if it is not one."""
    p = Path(path)
    require(p.is_file(), "calibration", "must be an existing calibration file", str(path))
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError("calibration", f"not a JSON calibration file: {exc}",
                          str(path)) from None
    version = doc.get("version") if isinstance(doc, dict) else None
    require(version in READS, "calibration",
            f"is a version {version} file; this model reads versions "
            f"{', '.join(map(str, READS))} (run mpi-coded model --calibrate again)", str(path))
    table = doc.get("seconds_per_op") if isinstance(doc, dict) else None
    require(isinstance(table, dict), "calibration", "has no seconds_per_op table", str(path))
    assert isinstance(table, dict)
    if version in (3, 4):
        table = {**table, **{new: table.get(old) for new, old in ADDED_IN_5.items()}}
    for key in KEYS:
        val = table.get(key)
        least, rule = (1.0, ">= 1") if key.startswith("contention") else (0.0, ">= 0")
        require(isinstance(val, (int, float)) and not isinstance(val, bool)
                and math.isfinite(val) and val >= least, "calibration",
                f"seconds_per_op.{key} must be a number {rule}", val)
    out = {k: float(table[k]) for k in KEYS}
    if version == 3:
        out.update({k: 0.0 for k in V3_ZEROED})
    return out
