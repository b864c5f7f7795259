"""Link rates as text: one parser for every command that takes a rate.

``mpi-coded cluster up --rate`` (the emulated links, :mod:`mpi_coded.cluster.netns`) and
``mpi-coded model --rate`` (the network model, :mod:`mpi_coded.analysis.network`) read
the same spelling: a number and a tc unit, ``100mbit``, ``1gbit``, ``1.5Gbit/s``,
``250kbit``, ``12.5mbps``, ``5e8bit`` (units are case-insensitive; ``...bit`` are bits
per second, ``...bps`` bytes per second, as in tc; a trailing ``/s`` is accepted;
a bare number is bits per second).  Queue sizes (``mpi-coded cluster up --queue``) are
bytes in tc's units, :func:`parse_size`.  Pure: no I/O.
"""

from __future__ import annotations

import math
import re

from mpi_coded.errors import require

UNITS: dict[str, int] = {
    "bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
    "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9, "tbps": 8 * 10**12,
}
"""tc's rate units in bits per second: ``...bit`` are bits, ``...bps`` bytes per second."""

RATE_RULE = "must be a rate > 0 like 100mbit, 1gbit, 1.5Gbit/s or 12.5mbps (tc units)"

_RATE_RE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)(/s)?\s*")


def _quantity(text: str, arg: str, rule: str, units: dict[str, int], bare: str,
              per_second: bool) -> int:
    """``text`` as a number and one of ``units`` (``bare`` when none is written; a trailing
    ``/s`` only where ``per_second``, and not after a ``...bps`` unit), in the base unit,
    rounded; not finite, not > 0, unparsable or an unknown unit: the ConfigError ``rule``
    naming ``arg``."""
    m = _RATE_RE.fullmatch(str(text))
    require(m is not None, arg, rule, text)
    assert m is not None
    unit = m.group(2).lower() or bare
    slash = bool(m.group(3))
    require(unit in units and not (slash and (not per_second or unit.endswith("bps"))),
            arg, rule, text)
    value = float(m.group(1)) * units[unit]
    require(math.isfinite(value), arg, rule, text)
    out = int(round(value))
    require(out > 0, arg, rule, text)
    return out


def parse_rate(text: str, arg: str = "--rate") -> int:
    """A rate (module docstring) in bits per second, rounded to an integer.

    Bad input (unparsable, an unknown unit, or not > 0 after rounding): a
    :class:`~mpi_coded.errors.ConfigError` naming ``arg``.
    """
    return _quantity(text, arg, RATE_RULE, UNITS, "bit", per_second=True)


def format_rate(bps: int) -> str:
    """``100000000`` -> ``100mbit`` (exact units only, else ``...bit``)."""
    for unit, mult in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % mult == 0:
            return f"{bps // mult}{unit}"
    return f"{bps}bit"


SIZE_UNITS: dict[str, int] = {"b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2,
                              "g": 1024**3, "gb": 1024**3}
"""tc's size units in bytes (``kb`` is 1024 bytes, as tc reads it)."""

SIZE_RULE = "must be a size > 0 in bytes like 64mb, 1.25mb, 512kb or 65536 (tc units)"


def parse_size(text: str, arg: str) -> int:
    """A size in bytes (``64mb``, ``1.25mb``, ``512kb``, ``65536``; a bare number is
    bytes), rounded to an integer; bad input is a ConfigError naming ``arg``."""
    return _quantity(text, arg, SIZE_RULE, SIZE_UNITS, "b", per_second=False)


def format_size(size: int) -> str:
    """``67108864`` -> ``64mb`` (exact units only, else bytes)."""
    for unit, mult in (("gb", 1024**3), ("mb", 1024**2), ("kb", 1024)):
        if size % mult == 0:
            return f"{size // mult}{unit}"
    return f"{size}b"
