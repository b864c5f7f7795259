"""Draw latency against a swept parameter from a sweep's results file (PNG).

    python scripts/plot_results.py results/sweep.jsonl --out sweep.png \\
        [--x t_row] [--metric total_wall_s|wall_s|...] [--step K] [--sweep-id ID] [--logx]

Reads the one JSON-lines file written by ``scripts/sweep.py``.  Each run gives one value:
a key of its ``summary`` line (default ``total_wall_s``), or a key of its ``step`` lines
(``wall_s``, ``decode_s``, ...: the mean over the run's steps, or step ``--step K``).
The x axis is ``--x`` (default: the first parameter that varies); every combination of
the other varying parameters is one line.  Points are the median over repetitions,
bars span min to max.  A categorical parameter (e.g. ``field``) gets one tick per value.
Prints the medians as a table.  Uses matplotlib's Agg backend (no display needed).
The file is read through :mod:`mpi_coded.results` (:func:`~mpi_coded.results.sweep_runs`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mpi_coded import results  # noqa: E402
from mpi_coded.results import SweepRun  # noqa: E402


def load_runs(path: Path, sweep_id: str | None) -> list[SweepRun]:
    """The runs of the sweep file (every sweep's, or only ``sweep_id``'s)."""
    return results.sweep_runs(results.read_results(path), sweep_id)


def run_value(run: SweepRun, metric: str, step: int | None) -> float | None:
    """The run's ``metric``: its summary's, else the mean over its steps (or step ``step``)."""
    summary = run.summary
    if step is None and summary is not None and metric in summary:
        v = summary[metric]
        return float(v) if isinstance(v, (int, float)) else None
    steps = [s for s in run.steps if metric in s and (step is None or s.get("step") == step)]
    vals = [float(s[metric]) for s in steps if isinstance(s[metric], (int, float))]
    return sum(vals) / len(vals) if vals else None


def label(v: Any) -> str:
    return json.dumps(v) if not isinstance(v, str) else v


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="JSON-lines file from scripts/sweep.py")
    ap.add_argument("--out", type=Path, default=None, help="PNG (default: RESULTS with .png)")
    ap.add_argument("--x", default=None, help="the parameter on the x axis")
    ap.add_argument("--metric", default="total_wall_s",
                    help="summary key, or step key averaged over steps (default total_wall_s)")
    ap.add_argument("--step", type=int, default=None, help="use only step K of each run")
    ap.add_argument("--sweep-id", default=None, help="only this sweep of the file")
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)

    try:
        runs = load_runs(args.results, args.sweep_id)
    except (OSError, results.SchemaError) as exc:
        print(f"plot: error: {exc}", file=sys.stderr)
        return 1
    good = [r for r in runs if not r.failed]
    if not good:
        print(f"plot: error: no successful sweep runs in {args.results}", file=sys.stderr)
        return 1
    keys = list(good[0].params)
    varying = [k for k in keys if len({label(r.params.get(k)) for r in good}) > 1]
    x = args.x or (varying[0] if varying else (keys[0] if keys else None))
    if x is None or x not in keys:
        print(f"plot: error: --x must be one of the swept parameters {keys}", file=sys.stderr)
        return 2
    hue = [k for k in varying if k != x]

    series: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    xs_raw: dict[str, Any] = {}
    for r in good:
        v = run_value(r, args.metric, args.step)
        if v is None:
            continue
        name = ", ".join(f"{k}={label(r.params[k])}" for k in hue) or args.metric
        xl = label(r.params[x])
        xs_raw[xl] = r.params[x]
        series[name][xl].append(v)
    if not series:
        print(f"plot: error: no run has a numeric '{args.metric}'", file=sys.stderr)
        return 1

    numeric = all(is_number(v) for v in xs_raw.values())
    order = sorted(xs_raw, key=lambda k: xs_raw[k]) if numeric else list(xs_raw)
    pos = {k: (float(xs_raw[k]) if numeric else i) for i, k in enumerate(order)}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    reps = max(len(v) for s in series.values() for v in s.values())
    print(f"{'series':40s} {x:>14s} {'median':>12s} {'min':>12s} {'max':>12s} {'n':>3s}")
    for name in sorted(series):
        pts = [k for k in order if k in series[name]]
        xv = [pos[k] for k in pts]
        med = [statistics.median(series[name][k]) for k in pts]
        lo = [m - min(series[name][k]) for m, k in zip(med, pts)]
        hi = [max(series[name][k]) - m for m, k in zip(med, pts)]
        ax.errorbar(xv, med, yerr=[lo, hi], marker="o", capsize=4, label=name)
        for k, m in zip(pts, med):
            vals = series[name][k]
            print(f"{name:40s} {k:>14s} {m:12.6g} {min(vals):12.6g} {max(vals):12.6g} "
                  f"{len(vals):3d}")
    if not numeric:
        ax.set_xticks([pos[k] for k in order], order)
    elif args.logx:
        ax.set_xscale("log")
    unit = " (s)" if args.metric.endswith("_s") else ""
    what = args.metric + (f" of step {args.step}" if args.step is not None else "")
    ax.set_xlabel(x)
    ax.set_ylabel(f"{what}{unit}")
    ax.set_title(args.title or f"{what}: median, bars min-max over up to {reps} reps")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    out = args.out or args.results.with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    skipped = len(runs) - len(good)
    print(f"plot: {out} ({len(good)} runs" + (f", {skipped} failed runs left out)" if skipped
                                               else ")"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
