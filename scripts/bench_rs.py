"""Benchmark the additive-FFT Reed-Solomon code (:mod:`mpi_coded.codes.rs_fft`).

Shapes (``n``, ``k``, ``V`` columns, data rows erased before decoding):

``a``  (1080, 720, 120, 360): also against the old decode, a galois ``np.linalg.inv`` of the
       ``k x k`` generator rows followed by the GF(2^16) product (``mpi_coded.fields``).
``b``  (9000, 6000, 1000, 2000).
``big`` encoding a 6000 x 6000 matrix into 9000 rows (``V = 6000``); skipped by ``--quick``.

Decode times are given for the first batch of an erasure pattern (locator included) and for
later batches (median; the locator is cached).  When the reed-solomon-leopard package is
installed it is timed on shards of the same size and pattern, and its parity is checked against
ours on the first 96 columns.  ``--clock cpu`` times with the process CPU clock instead of the
wall clock (steadier on a shared machine).  The last output line is a JSON object.

    python scripts/bench_rs.py [--reps 3] [--quick] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    from mpi_coded.codes import cantor, rs_fft
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mpi_coded.codes import cantor, rs_fft

SHAPES = {"a": (1080, 720, 120, 360), "b": (9000, 6000, 1000, 2000)}
CLOCK: Callable[[], float] = time.perf_counter


def median_time(func: Callable[[], Any], reps: int) -> float:
    """Median time of ``reps`` calls of ``func`` on :data:`CLOCK`, in seconds."""
    times = []
    for _ in range(reps):
        start = CLOCK()
        func()
        times.append(CLOCK() - start)
    return statistics.median(times)


def bench_library(lib: Any, data: np.ndarray, parity: np.ndarray, lost: np.ndarray,
                  reps: int) -> dict[str, float]:
    """reed-solomon-leopard on shards of ``2 V`` bytes with the same erasure pattern."""
    k, p = data.shape[0], parity.shape[0]
    head = 96 if data.shape[1] >= 96 else 0
    if head:
        got = cantor.from_shards(lib.encode(cantor.to_shards(data[:, :head]), p))
        if not np.array_equal(got, parity[:, :head]):
            raise AssertionError("reed-solomon-leopard's parity differs from ours")
    shards = [row.tobytes() for row in data]
    recovery = lib.encode(shards, p)
    kept = {int(i): shards[i] for i in np.setdiff1d(np.arange(k), lost)}
    rec = {j: recovery[j] for j in range(lost.size)}
    restored = lib.decode(k, p, kept, rec)
    if any(restored[int(i)] != shards[i] for i in lost[:10]):
        raise AssertionError("reed-solomon-leopard did not restore the data")
    return {
        "lib_encode_s": median_time(lambda: lib.encode(shards, p), reps),
        "lib_decode_s": median_time(lambda: lib.decode(k, p, kept, rec), reps),
    }


def bench_old(code: rs_fft.RSCode, pos: np.ndarray, vals: np.ndarray,
              data: np.ndarray) -> dict[str, float]:
    """The old decode: invert the k x k generator rows (galois), then one GF(2^16) product."""
    from mpi_coded.fields import get_field

    field = get_field("gf2^16")
    field.warm_up()
    sub = code.generator()[pos]
    start = CLOCK()
    inv = field.inv(sub)
    t_inv = CLOCK() - start
    start = CLOCK()
    out = field.matmul(inv, vals)
    t_mul = CLOCK() - start
    if not np.array_equal(out, data):
        raise AssertionError("the inversion path did not decode")
    return {"old_inverse_s": t_inv, "old_product_s": t_mul}


def bench_shape(name: str, reps: int, lib: Any, old: bool) -> dict[str, Any]:
    n, k, v, erase = SHAPES[name]
    rng = np.random.default_rng(n + k + v)
    code = rs_fft.RSCode(n, k)
    data = rng.integers(0, 1 << 16, size=(k, v), dtype=np.uint16)
    parity = code.parity(data)
    lost = np.sort(rng.choice(k, size=erase, replace=False))
    # the k positions read: the surviving data rows, then the first `erase` parity rows
    pos = np.concatenate([np.setdiff1d(np.arange(k), lost), k + np.arange(erase)])
    vals = np.concatenate([data, parity])[pos]
    start = CLOCK()
    got = code.decode(pos, vals)
    first = CLOCK() - start
    if not np.array_equal(got, data):
        raise AssertionError(f"{name}: decode failed")
    row: dict[str, Any] = {
        "n": n, "k": k, "V": v, "erased": erase, "kind": code.kind, "N": code.size,
        "encode_s": median_time(lambda: code.parity(data), reps),
        "decode_first_s": first,
        "decode_s": median_time(lambda: code.decode(pos, vals), reps),
    }
    if lib is not None:
        row.update(bench_library(lib, data, parity, lost, reps))
        row["encode_over_lib"] = row["encode_s"] / row["lib_encode_s"]
        row["decode_over_lib"] = row["decode_first_s"] / row["lib_decode_s"]
    if old:
        row.update(bench_old(code, pos, vals, data))
        row["old_over_ours"] = (row["old_inverse_s"] + row["old_product_s"]) / first
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="skip the 6000 x 6000 encode and the old inversion path")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    try:
        import reed_solomon_leopard as lib
    except ImportError:
        lib = None
        print("reed-solomon-leopard is not installed: no library comparison")
    start = CLOCK()
    rs_fft.warm_up()
    print(f"warm-up (compile or load kernels): {CLOCK() - start:.2f} s")
    result: dict[str, Any] = {"clock": args.clock}
    for name in SHAPES:
        row = bench_shape(name, args.reps, lib, old=(name == "a" and not args.quick))
        result[name] = row
        print(f"{name}: n={row['n']} k={row['k']} V={row['V']} ({row['kind']}, N={row['N']}) "
              f"encode {row['encode_s']:.4f} s, decode {row['decode_first_s']:.4f} s "
              f"(cached pattern {row['decode_s']:.4f} s)")
        if "lib_encode_s" in row:
            print(f"   reed-solomon-leopard: encode {row['lib_encode_s']:.4f} s, decode "
                  f"{row['lib_decode_s']:.4f} s; ours/library encode "
                  f"{row['encode_over_lib']:.2f}x, decode {row['decode_over_lib']:.2f}x")
        if "old_inverse_s" in row:
            print(f"   old path: inverse {row['old_inverse_s']:.2f} s + product "
                  f"{row['old_product_s']:.4f} s = {row['old_over_ours']:.0f}x our decode")
    if not args.quick:
        rng = np.random.default_rng(6000)
        code = rs_fft.RSCode(9000, 6000)
        data = rng.integers(0, 1 << 16, size=(6000, 6000), dtype=np.uint16)
        result["encode_6000x6000_s"] = median_time(lambda: code.parity(data), 1)
        print(f"big: parity of a 6000 x 6000 matrix, (9000, 6000) code: "
              f"{result['encode_6000x6000_s']:.3f} s")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
