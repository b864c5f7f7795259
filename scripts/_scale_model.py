"""bench_scale.py's helpers: rank 0's profile printed, the scaling model fitted."""

from __future__ import annotations

from pathlib import Path


def print_profile(path: Path, top: int = 15) -> None:
    """Rank 0's profile (``MPI_CODED_PROFILE_MASTER``): its top entries by own time."""
    import io
    import pstats

    buf = io.StringIO()
    pstats.Stats(str(path), stream=buf).sort_stats("tottime").print_stats(top)
    print(f"rank 0 profile {path.name} (top {top} by tottime):")
    print("\n".join(buf.getvalue().splitlines()[4:]), flush=True)


def fit_model(points: list[tuple[int, int, float]]) -> dict[str, float]:
    """Least squares ``overhead_ms = a + b * N + c * S`` over every step of every world
    (``N`` machines available, ``S`` row sets in its plan); with the row sets' own fit
    ``S = d + e * N`` it predicts 1000 machines (half of them available, as here)."""
    import numpy as np

    pts = np.array(points, dtype=float)
    n, sets, ms = pts[:, 0], pts[:, 1], pts[:, 2]
    design = np.column_stack([np.ones_like(n), n, sets])
    (a, b, c), *_ = np.linalg.lstsq(design, ms, rcond=None)
    (d, e), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(n), n]), sets, rcond=None)
    resid = ms - design @ np.array([a, b, c])
    out = {"a_ms": float(a), "b_ms_per_machine": float(b), "c_ms_per_rowset": float(c),
           "rowsets_d": float(d), "rowsets_e_per_machine": float(e),
           "rms_residual_ms": float(np.sqrt(np.mean(resid ** 2))), "points": len(pts)}
    for big in (1000,):
        s_big = d + e * big
        out[f"predicted_ms_N{big}"] = float(a + b * big + c * s_big)
        out[f"predicted_rowsets_N{big}"] = float(s_big)
    return out
