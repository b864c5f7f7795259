"""Calibration: seconds per operation of the kernels that really run (docs/theory.md (C.4)).

The delay model counts field operations (docs/theory.md (B.6)); the runtime measures
seconds, and its kernels cost very different seconds per operation: the bit-sliced GF
products of encode and map, the RS FFT codec (:mod:`mpi_coded.codes.rs_fft`), the
generator path's inverses (galois).  :func:`measure` times each on this machine and
:func:`write` stores the table as a small JSON file (``mpi-coded model --calibrate``);
:func:`load` reads it back (``model --calibration FILE``) and :func:`predict_seconds`
predicts every phase of a job in seconds, costing each phase with the algorithm the
runtime picks (the cost rule of :mod:`mpi_coded.codes.rs_sub`, with the same table).

Keys of the table (seconds): ``gf2^8_matmul``, ``gf2^16_matmul`` per multiply-add of a
product, ``gf2^8_thin``, ``gf2^16_thin`` the same for products of a few rows (the scalar
kernel: encoding short partitions row by row); ``gf2^8_inverse``, ``gf2^16_inverse`` per
``k^3`` of a ``k x k`` inverse;
``rs_fft_encode``, ``rs_fft_decode`` per operation counted by
:func:`~mpi_coded.codes.rs_fft.fft_encode_ops` / :func:`~mpi_coded.codes.rs_fft.fft_decode_ops`;
``call`` per sub-code call (the Python work around a kernel, per partition).

When the ``K`` servers share a machine's cores, :func:`predict_seconds` with ``cores`` gives
the wall time of each phase: a phase in which ``g`` servers compute at once lasts
``max(1, g / cores)`` times one server's seconds (default: a core per server).
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.codes.rs_sub import (
    DEFAULT_SECONDS,
    fft_decode_seconds,
    fft_encode_seconds,
    generator_decode_seconds,
    generator_encode_seconds,
    prefer_rs,
    seconds,
)
from mpi_coded.errors import ConfigError, require

KEYS = tuple(DEFAULT_SECONDS)
VERSION = 1


def _best(fn: Callable[[], object], reps: int = 3) -> float:
    best = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def measure(quick: bool = False) -> dict[str, float]:
    """Seconds per operation of every kernel, measured here (``quick``: smaller shapes)."""
    from mpi_coded.codes import rs_fft
    from mpi_coded.fields import get_field

    rng = np.random.default_rng(0)
    out: dict[str, float] = {}
    rows, inner, cols = (64, 512, 512) if quick else (250, 4096, 1024)
    for deg in (8, 16):
        f = get_field(f"gf2^{deg}")
        f.warm_up()
        a = f.random((rows, inner), rng)
        b = f.random((inner, cols), rng)
        out[f"gf2^{deg}_matmul"] = _best(functools.partial(f.matmul, a, b), 2) / (
            rows * inner * cols)
        thin_a = f.random((1, 18), rng)
        thin_b = f.random((18, 8000 if quick else 40000), rng)
        out[f"gf2^{deg}_thin"] = _best(functools.partial(f.matmul, thin_a, thin_b), 3) / (
            thin_b.size)
        k = 48 if quick else 96
        f.inv(f.cauchy(4, 4))  # compile galois's inverse before timing it
        g = f.cauchy(k, k)
        out[f"gf2^{deg}_inverse"] = _best(functools.partial(f.inv, g), 2) / k**3
    # one sub-code call on a tiny partition: the Python work around a kernel (what a code
    # with many short partitions pays per partition)
    from mpi_coded.codes.cauchy import CauchyCode

    f16 = get_field("gf2^16")
    tiny = CauchyCode(f16, 9, 6)
    small = f16.random((6, 4), rng)
    word = tiny.encode_rows(range(9), small)
    tiny.decode([1, 2, 3, 6, 7, 8], word[[1, 2, 3, 6, 7, 8]])
    out["call"] = _best(lambda: (tiny.encode_rows([7], small),
                                 tiny.decode([1, 2, 3, 6, 7, 8], word[[1, 2, 3, 6, 7, 8]])),
                        20) / 2
    rs_fft.warm_up()
    n, k, v = (1080, 720, 64) if quick else (9000, 6000, 512)  # the paper's unified code
    code = rs_fft.RSCode(n, k)
    data = rng.integers(0, 1 << 16, size=(k, v), dtype=np.uint16)
    out["rs_fft_encode"] = _best(lambda: code.parity(data)) / rs_fft.fft_encode_ops(n, k, v)
    word = code.encode(data)
    pos = np.sort(rng.choice(n, size=k, replace=False))
    code.decode(pos, word[pos])  # the erasure pattern's locator, once
    out["rs_fft_decode"] = _best(lambda: code.decode(pos, word[pos])) / rs_fft.fft_decode_ops(
        n, k, v)
    return {key: float(out[key]) for key in KEYS}


def write(table: Mapping[str, float], path: str | Path) -> dict[str, Any]:
    """Write the calibration file; returns what was written."""
    doc = {"version": VERSION, "host": platform.node(), "cpu_count": os.cpu_count(),
           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "seconds_per_op": {k: float(table[k]) for k in KEYS}}
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
    table = doc.get("seconds_per_op") if isinstance(doc, dict) else None
    require(isinstance(table, dict), "calibration", "has no seconds_per_op table", str(path))
    assert isinstance(table, dict)
    for key in KEYS:
        val = table.get(key)
        require(isinstance(val, (int, float)) and not isinstance(val, bool)
                and math.isfinite(val) and val > 0, "calibration",
                f"seconds_per_op.{key} must be a number > 0", val)
    return {k: float(table[k]) for k in KEYS}


def runtime_field(params: Any) -> str:
    """The field the runtime would use for ``params`` (``auto`` resolved by its scheme)."""
    return str(params.field_name)


def phase_seconds(params: Any, table: Mapping[str, float] | None = None,
                  field: str | None = None) -> dict[str, Any]:
    """One server's seconds per phase for a job with ``params`` (a
    :class:`~mpi_coded.coded.params.CodedParams`), with the algorithm the runtime picks.

    ``encode``: the stored rows (the FFT parity per partition touched, or generator rows,
    whichever the cost rule picks); ``map``: ``rows n N`` products; ``reduce``: one
    reducer's ``N / q_eff`` outputs, each partition by the FFT decoder or an inverse
    (stripes of ``sc`` share one erasure pattern: one call).  The paths are the runtime's
    choices (the cost rule with its default table), their seconds come from ``table``.
    Returns also ``encoder`` and ``decoder``.
    """
    p = params
    f = field or runtime_field(p)
    mm = f"{f}_matmul" if f != "float64" else "gf2^8_matmul"
    rows = float(p.mu_eff * p.m)
    n_code, k = p.code_length, p.code_dimension
    w = p.outputs_per_reducer
    out: dict[str, Any] = {"map": rows * p.n * p.N * seconds(mm, table)}
    if n_code <= k or not p.spec.mds_code:
        out.update(encode=0.0, reduce=0.0, encoder=None, decoder=None)
        if not p.spec.mds_code:  # lt: sparse rows and peeling, charged per edge
            out.update(encode=rows * p.n * 3 * seconds(mm, table), encoder="generator")
        return out
    touched = max(1, min(p.partitions, int(rows)))
    parity_rows = rows * (n_code - k) / n_code
    per_part = max(1, round(parity_rows / touched))
    striped = p.partitions > 1 and n_code == p.K and p.partitions == p.m // p.wait_for
    # the runtime's choices (its cost rule, default table), costed with ``table``
    rs = f == "gf2^16" and prefer_rs(n_code, k, p.n, w)
    calls, vec = (1, w * p.partitions) if striped else (p.partitions, w)
    enc = generator_encode_seconds(f, per_part, k, p.n, table) * touched
    dec = generator_decode_seconds(f, k, vec, table=table) * calls
    encoder = decoder = "generator"
    if rs:
        if fft_encode_seconds(n_code, k, p.n) < generator_encode_seconds(f, per_part, k, p.n):
            enc, encoder = fft_encode_seconds(n_code, k, p.n, table) * touched, "rs_fft"
        if fft_decode_seconds(n_code, k, vec) < generator_decode_seconds(f, k, vec):
            dec, decoder = fft_decode_seconds(n_code, k, vec, table) * calls, "rs_fft"
    out.update(encode=enc, reduce=dec, encoder=encoder, decoder=decoder)
    return out


def predict_seconds(params: Any, table: Mapping[str, float] | None = None,
                    cores: int | None = None, field: str | None = None) -> dict[str, Any]:
    """Seconds per phase (module docstring): ``per_server`` (one server's compute) and
    ``wall`` on a machine with ``cores`` cores shared by the servers computing at once
    (encode: all ``K``; map: the servers mapping, ``K``; reduce: the ``q_eff`` reducers);
    ``cores=None``: a core per server (a cluster), so ``wall`` is one server's seconds."""
    per = phase_seconds(params, table, field)
    K, q = params.K, params.wait_for
    c = K if cores is None else max(1, int(cores))
    share = {"encode": max(1.0, K / c), "map": max(1.0, K / c), "reduce": max(1.0, q / c)}
    wall = {ph: per[ph] * share[ph] for ph in ("encode", "map", "reduce")}
    wall["total"] = sum(wall.values())
    return {"per_server": {ph: per[ph] for ph in ("encode", "map", "reduce")},
            "wall": wall, "encoder": per["encoder"], "decoder": per["decoder"], "cores": c,
            "field": field or runtime_field(params)}
