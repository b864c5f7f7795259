"""The elastic job's figure (``cec_steps.png``): heterogeneous against cyclic elastic
computing (the heterogeneous CEC paper), per step of the schedule: (a) step time, (b)
cumulative time.  The MODEL is ``CECConfig.predicted_s(make_plan(...).time)`` with the job's
own config (exactly what the job predicts), the points are the measured ``wall_s`` of the
``step`` lines (median, bars min-max).  Step times are seconds on both sides.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from mpi_coded import plotting, results
from mpi_coded.cec import make_plan
from mpi_coded.cec.config import CECConfig, Random, from_record
from mpi_coded.errors import ConfigError
from mpi_coded.plotting import POLICY_COLORS, FigError
from mpi_coded.results import ElasticConfig, ElasticStep

ElasticRun = tuple[ElasticConfig, list[ElasticStep]]

POLICY_ORDER = ("heterogeneous", "cyclic")
"""The policies drawn first, in this order (any other after them, by name)."""
DASHED = {"heterogeneous": False}
"""Policies whose model lines are solid (every other one: dashed)."""
SPEEDUP = ("cyclic", "heterogeneous")
"""The speedup reported: total time of the first policy over the second's."""
SIGNATURE = ("N", "L", "speeds", "rows", "cols", "field", "t_row", "schedule")
"""Config fields that runs must share to be drawn together."""


def cec_runs(recs: list[dict[str, Any]]) -> list[ElasticRun]:
    """``(config, steps)`` per run in file order (a config line starts a run)."""
    try:
        jobs = results.elastic_jobs(recs)
    except results.SchemaError as exc:
        raise FigError(f"elastic results: {exc}") from None
    return [(j.config, j.steps) for j in jobs if j.steps]


def cec_signature(cfg: ElasticConfig) -> str:
    """The :data:`SIGNATURE` fields of a config line, as one comparable string."""
    return json.dumps({k: cfg.get(k) for k in SIGNATURE}, sort_keys=True)


def cec_config(cfg: ElasticConfig) -> CECConfig:
    """The job's :class:`CECConfig` from its config line, validated (its data file is
    not needed for the model and left out)."""
    try:
        return from_record({**cfg.raw, "data": ""})
    except (ConfigError, TypeError, ValueError, KeyError) as exc:
        raise FigError(f"elastic results: the config line is not a valid job: {exc}") from None


def plan_seconds(cfg: CECConfig, policy: str, available: list[int]) -> float:
    """The step's predicted seconds, exactly as the job predicts them: the plan's time
    through :meth:`CECConfig.predicted_s`."""
    plan = make_plan(policy, cfg.speed_map, cfg.L, available, rows=cfg.rows_per_block)
    return cfg.predicted_s(plan.time)


def _choose(runs: list[ElasticRun]) -> list[ElasticRun]:
    """The runs of the setting with the most steps (a note on stderr if there are others)."""
    by_sig: dict[str, list[ElasticRun]] = defaultdict(list)
    for c, s in runs:
        by_sig[cec_signature(c)].append((c, s))
    sig = max(by_sig, key=lambda k: sum(len(s) for _, s in by_sig[k]))
    if len(by_sig) > 1:
        print(f"figures: elastic results hold {len(by_sig)} settings; drawing the one with "
              "the most steps", file=sys.stderr)
    return by_sig[sig]


def _schedule(cfg: CECConfig, chosen: list[ElasticRun], n_steps: int) -> list[list[int]]:
    """The available machines per step: the config's schedule, or (random availability)
    the step lines'."""
    schedule = ([list(a) for a in cfg.available_sets()]
                if not isinstance(cfg.availability, Random) else [])
    if len(schedule) < n_steps:
        avail_of: dict[int, list[int]] = {}
        for _, steps in chosen:
            for s in steps:
                avail_of.setdefault(int(s.step), list(s.available))
        schedule = [avail_of[t] for t in range(1, n_steps + 1)]
    return schedule


def _check_recorded(pol: str, chosen: list[ElasticRun], model: list[float]) -> None:
    """A note on stderr where a step line's ``predicted_s`` is not :func:`plan_seconds`."""
    rec_pred = {int(s.step): float(s.predicted_s) for _, steps in chosen for s in steps
                if s.policy == pol and not s.replanned}
    mismatch = [t for t, v in rec_pred.items() if abs(v - model[t - 1]) > 1e-9 * max(1, v)]
    if mismatch:
        print(f"figures: {pol}: recorded predicted_s differs from make_plan at steps "
              f"{mismatch}", file=sys.stderr)


def _draw_policy(ax: Any, axc: Any, pol: str, dx: float, model: list[float],
                 wall: dict[int, list[float]], n_steps: int) -> dict[str, Any]:
    """One policy on both panels; its summary (model and measured seconds per step)."""
    col = POLICY_COLORS.get(pol, "black")
    steps_x = list(range(1, n_steps + 1))
    have = [t for t in steps_x if wall.get(t)]
    med = [statistics.median(wall[t]) for t in have]
    lo = [m - min(wall[t]) for m, t in zip(med, have)]
    hi = [max(wall[t]) - m for m, t in zip(med, have)]
    plotting.step_chart(ax, steps_x, model, med, lo, hi, label=pol, color=col, dx=dx,
                        dashed=DASHED.get(pol, True), measured_at=have)
    axc.plot([0, *steps_x], [0.0, *[sum(model[:t]) for t in steps_x]], "-", color=col,
             label=f"model: {pol}")
    full = len(have) == n_steps
    if full:
        axc.plot(steps_x, [sum(med[:t]) for t in steps_x], "o", color=col,
                 label=f"measured: {pol}")
    return {"model_s": model, "measured_s": med,
            "repeats": min(len(wall[t]) for t in have), "model_total_s": sum(model),
            "measured_total_s": sum(med) if full else None}


def _speedup(axc: Any, summary: dict[str, Any]) -> None:
    """The :data:`SPEEDUP` ratio of the totals, model and measured, into ``summary`` (and
    onto the cumulative panel)."""
    c, h = (summary.get(p) for p in SPEEDUP)
    if not (c and h):
        return
    summary["speedup_model"] = c["model_total_s"] / h["model_total_s"]
    if h["measured_total_s"] and c["measured_total_s"]:
        summary["speedup_measured"] = c["measured_total_s"] / h["measured_total_s"]
        axc.text(0.03, 0.97, f"{SPEEDUP[0]} / {SPEEDUP[1]} total time\n"
                 f"model {summary['speedup_model']:.3f}, measured "
                 f"{summary['speedup_measured']:.3f}", transform=axc.transAxes,
                 va="top", fontsize=9, bbox={"fc": "white", "alpha": 0.8, "ec": "0.7"})


def figure_cec(plt: Any, recs: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """``cec_steps.png`` from the lines of elastic results files: per policy the model's
    and the measured seconds per step and their totals, and the speedup."""
    runs = cec_runs(recs)
    if not runs:
        raise FigError("elastic results: 'step' lines without the 'config' line of their run")
    chosen = _choose(runs)
    cfg0 = chosen[0][0]
    cec_cfg = cec_config(cfg0)
    if cec_cfg.t_row <= 0:
        print("figures: elastic runs with t_row = 0: the model predicts 0 s per step",
              file=sys.stderr)
    wall: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _, steps in chosen:
        for s in steps:
            wall[s.policy][int(s.step)].append(float(s.wall_s))
    policies = [p for p in POLICY_ORDER if p in wall] + \
        sorted(p for p in wall if p not in POLICY_ORDER)
    n_steps = max(max(w) for w in wall.values())
    schedule = _schedule(cec_cfg, chosen, n_steps)
    steps_x = list(range(1, n_steps + 1))
    fig, (ax, axc) = plt.subplots(1, 2, figsize=(12, 4.6))
    summary: dict[str, Any] = {}
    for i, pol in enumerate(policies):
        model = [plan_seconds(cec_cfg, pol, schedule[t - 1]) for t in steps_x]
        _check_recorded(pol, chosen, model)
        dx = 0.1 * (i - (len(policies) - 1) / 2)
        summary[pol] = _draw_policy(ax, axc, pol, dx, model, wall[pol], n_steps)
    _speedup(axc, summary)
    labels = [f"{t}\n{{{','.join(map(str, schedule[t - 1]))}}}" for t in steps_x]
    for a in (ax, axc):
        a.set_xticks(steps_x)
        a.set_xticklabels(labels, fontsize=8)
        a.set_xlabel("step (available machines)")
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8, loc="lower right" if a is axc else "upper left")
    ax.set_ylabel("step time (s)")
    ax.set_title("(a) per step")
    axc.set_ylabel("cumulative time (s)")
    axc.set_title("(b) cumulative over the schedule")
    reps = min(v["repeats"] for v in summary.values() if isinstance(v, dict))
    speeds = ",".join(str(s) for s in cfg0.speeds)
    fig.suptitle(f"Elastic computing (the heterogeneous CEC paper): N={cfg0.N} L={cfg0.L} "
                 f"speeds ({speeds}) "
                 f"rows={cfg0.rows} cols={cfg0.cols} {cfg0.field} "
                 f"t_row={float(cfg0.t_row) * 1e3:g} ms; {reps} run(s) per policy.\n"
                 "Curves: model = plan time x rows per block x t_row (make_plan); points: "
                 "measured wall_s (median, bars min-max)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return summary
