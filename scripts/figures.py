"""The analytic side beside the real runs: model curves, measured points (PNG).

    python scripts/figures.py --run [--small] --out docs/figures [--keep-results DIR]
    python scripts/figures.py --results coded_T.jsonl coded_K.jsonl cec.jsonl --out DIR
    python scripts/figures.py --network-bench docs/runs/bench_network.jsonl --out docs/figures

Three figures, the MODEL as curves and REAL runs (JSON lines of ``mpi-coded run``) as points:

``coded_vs_T.png``
    BDC against the unified scheme (the BDC paper) as the number of partitions ``T`` grows:
    (a) communication load, (b) delay ``encode + map + reduce``, (c) the same per phase.
``coded_vs_K.png``
    the same against the number of servers ``K`` (``q = round(2K/3)``, ``mu q = 2``,
    ``m`` close to a target, BDC with the largest ``T`` dividing ``m`` and ``r`` whose
    partitions keep at least ``--part-rows`` rows).
``cec_steps.png``
    heterogeneous against cyclic elastic computing (the heterogeneous CEC paper), per step of
    the schedule:
    (a) step time, (b) cumulative time.

Every model value and parameter rule comes from the package, none is restated here:
:func:`mpi_coded.analysis.model.predict` at the parameters of every measured run (same
``K, q, mu, m, n, N, T`` and field, the runtime's default heuristic assignment), the load
at a realised ``Q`` from :class:`mpi_coded.analysis.bdc_load.LoadEvaluator`, valid
settings from :meth:`mpi_coded.coded.schemes.base.Scheme.params`, and for the elastic
steps ``CECConfig.predicted_s(make_plan(...).time)`` with the job's own config.  Results
are read through :mod:`mpi_coded.results`.

Adding a figure: a ``figure_<name>(plt, lines, out) -> summary`` function, an entry in
:data:`FIGURES`, and a rule in :func:`classify` that recognises its results files.  A
drawer saves its PNG and then closes its figure with ``plt.close(fig)`` on the ``plt`` it
was given: tests/test_figures.py passes a ``plt`` whose ``close`` keeps the figure, and
checks the plotted data, axes and labels.

Normalisation.  Loads are values over ``m N`` in both (exact fractions): plotted as is.
The model's delay is in abstract operation units (field additions ``l/64``,
multiplications ``l log2 l``; shifted-exponential order statistics), the measurements in
seconds, so every coded delay is divided by the UNIFIED scheme's delay of the same setting:
model ``D_bdc / D_unified``, measured ``median(D_bdc) / median(D_unified)`` over the
repetitions (bars: min and max of ``D_bdc`` over that median).  The measured ``D`` is
``encode_s + map_s + reduce_s`` (the model has no shuffle term; the shuffle is the load).
Elastic step times are seconds on both sides: no normalisation.

``--results``: every file is one figure's data, told apart by content: a file with
elastic ``step`` lines feeds ``cec_steps.png``; a coded file whose runs span one ``K``
feeds ``coded_vs_T.png``, several ``K`` ``coded_vs_K.png`` (at every ``K`` the bdc runs
with the largest ``T`` in that file).  Files of one kind are merged.  ``--run`` launches
the jobs itself (each an ``mpiexec`` in its own process group with a timeout), writes
exactly those three files and draws them.  The last output line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _launch import run_mpi  # noqa: E402

from mpi_coded import plotting, results  # noqa: E402
from mpi_coded.analysis.model import model_params, predict  # noqa: E402
from mpi_coded.cec import make_plan  # noqa: E402
from mpi_coded.cec.config import CECConfig, Random, from_record, load_config  # noqa: E402
from mpi_coded.coded.params import CodedParams  # noqa: E402
from mpi_coded.coded.schemes import get as get_scheme  # noqa: E402
from mpi_coded.errors import ConfigError  # noqa: E402
from mpi_coded.plotting import PHASE_COLORS, POLICY_COLORS, SCHEME_COLORS  # noqa: E402
from mpi_coded.results import CodedRun, ElasticConfig, ElasticStep  # noqa: E402

PHASES = ("encode", "map", "reduce")
"""The phases of the model's delay (it has no shuffle term; the shuffle is the load)."""
# the drawing shared with `mpi-coded report` lives in mpi_coded.plotting (its colours too)


class FigError(Exception):
    """A one-line error for the user (exit status 2)."""


# ------------------------------------------------------------------------------------------
# reading results (through mpi_coded.results)


def read_results(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FigError(f"results file not found: {path}")
    try:
        return results.read_results(path)
    except OSError as exc:
        raise FigError(f"cannot read {path}: {exc}") from None
    except results.SchemaError as exc:
        raise FigError(str(exc)) from None


@dataclass(frozen=True)
class Measured:
    """A verified coded ``run`` line and the assignment of its job ("": the default)."""

    run: CodedRun
    assignment: str


def coded_runs(recs: list[dict[str, Any]], path: Path) -> list[Measured]:
    """Verified ``run`` lines of coded jobs, each with the ``assignment`` of its config line."""
    try:
        jobs = results.coded_jobs(recs)
    except results.SchemaError as exc:
        raise FigError(f"{path}: {exc}") from None
    out = [Measured(r, job.config.assignment or "") for job in jobs for r in job.runs
           if r.verified]
    bad = sum(not r.verified for job in jobs for r in job.runs)
    if bad:
        print(f"figures: {path}: left out {bad} run(s) that did not verify", file=sys.stderr)
    return out


def classify(path: Path, recs: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """Which figure the file feeds (a key of :data:`FIGURES`) and its lines or runs."""
    if results.records(recs, results.STEP, results.CEC):
        return "cec", recs
    runs = coded_runs(recs, path)
    if not runs:
        raise FigError(f"{path}: no verified 'run' lines of a coded job and no elastic "
                       "'step' lines")
    ks = {m.run.K for m in runs}
    return ("coded_K" if len(ks) > 1 else "coded_T"), runs


# ------------------------------------------------------------------------------------------
# the coded job: parameters and model values, all from the package


Setting = tuple[int, int, str, int, int, int, str]
"""``(K, q, mu, m, n, N, field)``: what a unified run and a bdc run share to be compared."""


def setting_of(r: CodedRun) -> Setting:
    try:
        return (int(r.K), int(r.q), str(Fraction(str(r.mu))), int(r.m), int(r.n), int(r.N),
                str(r.field))
    except (TypeError, ValueError, ZeroDivisionError):
        raise FigError(f"a coded 'run' line has a malformed K, q, mu, m, n, N or field: "
                       f"{json.dumps(r.raw)[:120]}") from None


def bdc_params(setting: Setting, rows_per_batch: int, T: int) -> CodedParams:
    """The runnable bdc job at ``setting`` with ``T`` partitions (every rule checked)."""
    K, q, mu, _, n, N, field = setting
    return get_scheme("bdc").params(K, q, Fraction(mu), rows_per_batch, n, N, T, field)


def valid_Ts(setting: Setting, rows_per_batch: int, lo: int, hi: int) -> list[int]:
    """The ``T`` in ``lo..hi`` a bdc job at ``setting`` accepts."""
    out = []
    for T in range(lo, hi + 1):
        try:
            bdc_params(setting, rows_per_batch, T)
        except ConfigError:
            continue
        out.append(T)
    return out


_MODEL_CACHE: dict[tuple, dict[str, Any]] = {}


def model_of(scheme: str, setting: Setting, T: int, assignment: str = "") -> dict[str, Any]:
    """:func:`predict` of ``scheme`` at ``setting`` (and the bdc runs' assignment)."""
    key = (scheme, setting, T, assignment)
    if key not in _MODEL_CACHE:
        K, q, mu, m, n, N, field = setting
        P = None
        if assignment:
            import numpy as np

            if not Path(assignment).is_file():
                raise FigError(f"the bdc runs used the assignment {assignment}, which is "
                               "not there: the model needs it")
            P = np.load(assignment)
        try:
            mp = model_params(scheme, K, q, Fraction(mu), m=m, n=n, N=N, T=T, field=field)
            _MODEL_CACHE[key] = predict(mp, assignment=P)
        except ConfigError as exc:
            raise FigError(f"model of {scheme} K={K} q={q} mu={mu} m={m} T={T}: {exc}") from None
    return _MODEL_CACHE[key]


def model_load_at_Q(p: Point, r: CodedRun) -> float:
    """Model load of one bdc run at the finishing set ``Q`` it realised (padding included,
    :class:`mpi_coded.analysis.bdc_load.LoadEvaluator`): the measured load must equal it."""
    key = ("loadQ", p.setting, p.T, p.assignment, tuple(sorted(r.Q)), int(r.rows_per_batch))
    if key not in _MODEL_CACHE:
        import numpy as np

        from mpi_coded.analysis.bdc_load import LoadEvaluator, make_instance
        from mpi_coded.coded.assignment import heuristic_assignment

        K, q, mu, m, n, N, field = p.setting
        inst = make_instance(K, q, Fraction(mu), int(r.rows_per_batch), p.T)
        P = (np.load(p.assignment) if p.assignment else
             heuristic_assignment(inst.n_batches, inst.rows_per_batch, inst.T))
        ev = LoadEvaluator(inst, np.array([sorted(r.Q)], dtype=np.int64), "best", N)
        _MODEL_CACHE[key] = {"load": float(ev.load(P)), "exact": str(ev.load(P))}
    return float(_MODEL_CACHE[key]["load"])


def measured_delay(r: CodedRun, what: str) -> float:
    """``total``: the model's phases; ``total+shuffle``: the run's total; else one phase."""
    if what == "total":
        return sum(r.phase_s(p) for p in PHASES)
    if what == "total+shuffle":
        return float(r.total_s)
    return r.phase_s(what)


@dataclass
class Point:
    x: float
    setting: Setting
    T: int
    unified: list[CodedRun]
    bdc: list[CodedRun]
    assignment: str

    def ratio(self, what: str) -> tuple[float, float, float]:
        """``(median, min, max)`` of measured bdc over the median of measured unified."""
        ref = statistics.median(measured_delay(r, what) for r in self.unified)
        vals = [measured_delay(r, what) / ref for r in self.bdc]
        return statistics.median(vals), min(vals), max(vals)

    def model_ratio(self, what: str) -> float:
        b = model_of("bdc", self.setting, self.T, self.assignment)["delay"][what]
        u = model_of("unified", self.setting, 1)["delay"][what]
        return b / u


Groups = dict[Setting, dict[str, dict[int, list[Measured]]]]


def group_settings(runs: list[Measured]) -> Groups:
    """setting -> scheme -> T -> runs."""
    out: Groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for m in runs:
        if m.run.scheme in ("unified", "bdc"):
            out[setting_of(m.run)][m.run.scheme][int(m.run.T)].append(m)
    return out


def point(x: float, setting: Setting, T: int, g: dict[str, dict[int, list[Measured]]]
          ) -> Point:
    bdc = g["bdc"][T]
    return Point(x, setting, T, [m.run for ms in g["unified"].values() for m in ms],
                 [m.run for m in bdc], bdc[0].assignment)


def points_vs_T(runs: list[Measured]) -> tuple[Setting, list[Point]]:
    groups = group_settings(runs)
    good = [(s, g) for s, g in groups.items() if g["unified"] and g["bdc"]]
    if not good:
        raise FigError("coded results: no setting with both unified and bdc runs")
    setting, g = max(good, key=lambda sg: (len(sg[1]["bdc"]), sg[0]))
    return setting, [point(T, setting, T, g) for T in sorted(g["bdc"])]


def points_vs_K(runs: list[Measured]) -> list[Point]:
    groups = group_settings(runs)
    by_k: dict[int, Point] = {}
    for s, g in sorted(groups.items()):
        if not (g["unified"] and g["bdc"]):
            continue
        pt = point(s[0], s, max(g["bdc"]), g)
        if s[0] not in by_k or len(pt.bdc) > len(by_k[s[0]].bdc):
            by_k[s[0]] = pt
    if len(by_k) < 2:
        raise FigError("coded results over K: need unified and bdc runs at two or more K")
    return [by_k[k] for k in sorted(by_k)]


# ------------------------------------------------------------------------------------------
# the coded figures


def field_label(field: str) -> str:
    return {"gf2^8": "GF(2^8)", "gf2^16": "GF(2^16)"}.get(field, field)


def run_info(r: CodedRun, reps: int) -> str:
    return f"map stragglers: {r.straggler or '?'}, {reps} rep(s) per point"


def ratio_bars(pts: list[Point], what: str) -> tuple[list[float], list[list[float]]]:
    """Medians and ``[below, above]`` bar lengths of :meth:`Point.ratio` for errorbar."""
    stats = [p.ratio(what) for p in pts]
    return [m for m, _, _ in stats], [[m - a for m, a, _ in stats], [b - m for m, _, b in stats]]


def draw_coded(plt: Any, pts: list[Point], xname: str, out: Path, title: str,
               model_T: list[int] | None = None) -> dict[str, Any]:
    """Three panels: load, total delay ratio, per-phase delay ratios."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    ax_load, ax_tot, ax_ph = axes
    xs = [p.x for p in pts]
    logx = xname == "T"
    summary: dict[str, Any] = {"points": []}

    # model curves: at every valid T between the measured ones (T figure) or at the points
    if model_T is not None:
        s0 = pts[0].setting
        curve_pts = [Point(T, s0, T, pts[0].unified, pts[0].bdc, pts[0].assignment)
                     for T in model_T]
    else:
        curve_pts = pts
    cx = [p.x for p in curve_pts]

    # (a) load
    ax_load.plot(cx, [model_of("bdc", p.setting, p.T, p.assignment)["load"] for p in curve_pts],
                 "-", color=SCHEME_COLORS["bdc"], label="model: BDC")
    ax_load.plot(cx, [model_of("unified", p.setting, 1)["load"] for p in curve_pts], "--",
                 color=SCHEME_COLORS["unified"], label="model: unified")
    qx, qy = [], []
    for p in pts:
        qx.append(p.x)
        qy.append(statistics.median(model_load_at_Q(p, r) for r in p.bdc))
    ax_load.plot(qx, qy, "x", color="black", ms=8, mew=1.5,
                 label="model: BDC at the runs' finishing sets Q")
    for scheme, shift, marker in (("bdc", 1.0 if logx else 0.0, "o"),
                                  ("unified", 0.93 if logx else -0.08, "s")):
        ys, lo, hi, xx = [], [], [], []
        for p in pts:
            vals = [float(r.load_measured) for r in (p.bdc if scheme == "bdc" else p.unified)]
            ys.append(statistics.median(vals))
            lo.append(ys[-1] - min(vals))
            hi.append(max(vals) - ys[-1])
            xx.append(p.x * shift if logx else p.x + shift)
        ax_load.errorbar(xx, ys, yerr=[lo, hi], fmt=marker, color=SCHEME_COLORS[scheme],
                         mfc="white" if scheme == "unified" else SCHEME_COLORS[scheme],
                         capsize=3, label=f"measured: {'BDC' if scheme == 'bdc' else 'unified'}")
    ax_load.set_ylabel("communication load (values sent / (m N))")
    ax_load.set_title("(a) shuffle load")

    # (b) total delay ratio
    ax_tot.axhline(1.0, color=SCHEME_COLORS["unified"], ls="--", lw=1,
                   label="unified (= 1 by definition)")
    ax_tot.plot(cx, [p.model_ratio("total") for p in curve_pts], "-", color="black",
                label="model: D_BDC / D_unified")
    for what, marker, label in (("total", "o", "measured: encode+map+reduce"),
                                ("total+shuffle", "^", "measured: incl. shuffle")):
        ax_tot.errorbar(xs, *ratio_bars(pts, what),
                        fmt=marker, color="black", mfc="black" if what == "total" else "white",
                        capsize=3, label=label)
    ax_tot.set_yscale("log")
    ax_tot.set_ylabel("delay / unified delay (model: op units; measured: s)")
    ax_tot.set_title("(b) total delay, normalised to unified")

    # (c) per phase
    for ph in PHASES:
        ax_ph.plot(cx, [p.model_ratio(ph) for p in curve_pts], "-", color=PHASE_COLORS[ph],
                   label=f"model: {ph}")
        ax_ph.errorbar(xs, *ratio_bars(pts, ph),
                       fmt="o", color=PHASE_COLORS[ph], capsize=3, label=f"measured: {ph}")
    ax_ph.axhline(1.0, color=SCHEME_COLORS["unified"], ls="--", lw=1)
    ax_ph.set_yscale("log")
    ax_ph.set_ylabel("phase delay / unified phase delay")
    ax_ph.set_title("(c) per phase, normalised to unified")

    for ax in axes:
        if logx:
            ax.set_xscale("log")
            ax.set_xticks(xs)
            ax.set_xticklabels([str(int(x)) for x in xs])
            ax.minorticks_off()
            ax.set_xlabel("partitions T of the block-diagonal code")
        else:
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{p.x:g}\nq={p.setting[1]}\nmu={p.setting[2]}\nT={p.T}"
                                for p in pts], fontsize=7.5)
            ax.set_xlabel("servers K")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7.5, loc="best")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)

    for p in pts:
        mb = model_of("bdc", p.setting, p.T, p.assignment)
        mu_ = model_of("unified", p.setting, 1)
        summary["points"].append({
            xname: p.x, "K": p.setting[0], "q": p.setting[1], "mu": p.setting[2],
            "m": p.setting[3], "T": p.T,
            "load_model_bdc": mb["load"], "load_model_unified": mu_["load"],
            "load_measured_bdc": statistics.median(r.load_measured for r in p.bdc),
            "load_measured_unified": statistics.median(r.load_measured for r in p.unified),
            "delay_ratio_model": p.model_ratio("total"),
            "delay_ratio_measured": p.ratio("total")[0],
            "delay_ratio_measured_with_shuffle": p.ratio("total+shuffle")[0],
            **{f"{ph}_ratio_model": p.model_ratio(ph) for ph in PHASES},
            **{f"{ph}_ratio_measured": p.ratio(ph)[0] for ph in PHASES},
            "load_model_bdc_at_Q": [model_load_at_Q(p, r) for r in p.bdc],
            "load_measured_bdc_all": [r.load_measured for r in p.bdc],
            "load_measured_equals_model_at_Q": all(
                abs(r.load_measured - model_load_at_Q(p, r)) < 1e-12 for r in p.bdc),
            "load_measured_equals_plan": all(r.load_measured_exact == r.load_plan_exact
                                             for r in p.bdc + p.unified),
        })
    return summary


def figure_coded_T(plt: Any, runs: list[Measured], out: Path) -> dict[str, Any]:
    setting, pts = points_vs_T(runs)
    K, q, mu, m, n, N, field = setting
    eta = int(pts[0].bdc[0].rows_per_batch)
    try:
        r = bdc_params(setting, eta, pts[0].T).r
    except ConfigError as exc:
        raise FigError(f"bdc runs at K={K} q={q} mu={mu} m={m} T={pts[0].T}: {exc}") from None
    model_T = valid_Ts(setting, eta, min(p.T for p in pts), max(p.T for p in pts))
    reps = min(len(p.bdc) for p in pts)
    title = (f"BDC vs unified against T (the BDC paper): K={K} q={q} mu={mu} m={m} n={n} N={N} "
             f"r={r} {field_label(field)}; {run_info(pts[0].bdc[0], reps)}.\n"
             "Curves: model (mpi_coded.analysis.model.predict); points: real MPI runs "
             "(median, bars min-max)")
    return draw_coded(plt, pts, "T", out, title, model_T=model_T)


def figure_coded_K(plt: Any, runs: list[Measured], out: Path) -> dict[str, Any]:
    pts = points_vs_K(runs)
    reps = min(len(p.bdc) for p in pts)
    n, N, field = pts[0].setting[4], pts[0].setting[5], pts[0].setting[6]
    ms = sorted({p.setting[3] for p in pts})
    mtxt = f"m={ms[0]}" if len(ms) == 1 else f"m={ms[0]}..{ms[-1]}"
    title = (f"BDC vs unified against K (the BDC paper): q and mu scaled (labels), {mtxt} n={n} "
             f"N={N} {field_label(field)}; {run_info(pts[0].bdc[0], reps)}.\nCurves: model "
             "(mpi_coded.analysis.model.predict); "
             "points: real MPI runs (median, bars min-max)")
    return draw_coded(plt, pts, "K", out, title)


# ------------------------------------------------------------------------------------------
# the elastic job


ElasticRun = tuple[ElasticConfig, list[ElasticStep]]


def cec_runs(recs: list[dict[str, Any]]) -> list[ElasticRun]:
    """``(config, steps)`` per run in file order (a config line starts a run)."""
    try:
        jobs = results.elastic_jobs(recs)
    except results.SchemaError as exc:
        raise FigError(f"elastic results: {exc}") from None
    return [(j.config, j.steps) for j in jobs if j.steps]


SIGNATURE = ("N", "L", "speeds", "rows", "cols", "field", "t_row", "schedule")
"""Config fields that runs must share to be drawn together."""


def cec_signature(cfg: ElasticConfig) -> str:
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


def figure_cec(plt: Any, recs: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    runs = cec_runs(recs)
    if not runs:
        raise FigError("elastic results: 'step' lines without the 'config' line of their run")
    by_sig: dict[str, list] = defaultdict(list)
    for c, s in runs:
        by_sig[cec_signature(c)].append((c, s))
    sig = max(by_sig, key=lambda k: sum(len(s) for _, s in by_sig[k]))
    if len(by_sig) > 1:
        print(f"figures: elastic results hold {len(by_sig)} settings; drawing the one with "
              "the most steps", file=sys.stderr)
    chosen = by_sig[sig]
    cfg0 = chosen[0][0]
    cec_cfg = cec_config(cfg0)
    if cec_cfg.t_row <= 0:
        print("figures: elastic runs with t_row = 0: the model predicts 0 s per step",
              file=sys.stderr)
    schedule = [list(a) for a in cec_cfg.available_sets()] \
        if not isinstance(cec_cfg.availability, Random) else []
    wall: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _, steps in chosen:
        for s in steps:
            wall[s.policy][int(s.step)].append(float(s.wall_s))
    policies = [p for p in ("heterogeneous", "cyclic") if p in wall] + \
        sorted(p for p in wall if p not in ("heterogeneous", "cyclic"))
    n_steps = max(max(w) for w in wall.values())
    if len(schedule) < n_steps:  # random availability: take it from the step lines
        avail_of: dict[int, list[int]] = {}
        for _, steps in chosen:
            for s in steps:
                avail_of.setdefault(int(s.step), list(s.available))
        schedule = [avail_of[t] for t in range(1, n_steps + 1)]
    steps_x = list(range(1, n_steps + 1))
    fig, (ax, axc) = plt.subplots(1, 2, figsize=(12, 4.6))
    summary: dict[str, Any] = {}
    for pol in policies:
        col = POLICY_COLORS.get(pol, "black")
        model = [plan_seconds(cec_cfg, pol, schedule[t - 1]) for t in steps_x]
        rec_pred = {}
        for _, steps in chosen:
            for s in steps:
                if s.policy == pol and not s.replanned:
                    rec_pred[int(s.step)] = float(s.predicted_s)
        mismatch = [t for t, v in rec_pred.items() if abs(v - model[t - 1]) > 1e-9 * max(1, v)]
        if mismatch:
            print(f"figures: {pol}: recorded predicted_s differs from make_plan at steps "
                  f"{mismatch}", file=sys.stderr)
        dx = 0.1 * (policies.index(pol) - (len(policies) - 1) / 2)
        have = [t for t in steps_x if wall[pol].get(t)]
        med = [statistics.median(wall[pol][t]) for t in have]
        lo = [m - min(wall[pol][t]) for m, t in zip(med, have)]
        hi = [max(wall[pol][t]) - m for m, t in zip(med, have)]
        plotting.step_chart(ax, steps_x, model, med, lo, hi, label=pol, color=col, dx=dx,
                            dashed=pol != "heterogeneous", measured_at=have)
        cum_model = [sum(model[:t]) for t in steps_x]
        axc.plot([0, *steps_x], [0.0, *cum_model], "-", color=col, label=f"model: {pol}")
        full = len(have) == n_steps
        if full:
            cum_meas = [sum(med[:t]) for t in steps_x]
            axc.plot(steps_x, cum_meas, "o", color=col, label=f"measured: {pol}")
        summary[pol] = {"model_s": model, "measured_s": med,
                        "repeats": min(len(wall[pol][t]) for t in have),
                        "model_total_s": sum(model),
                        "measured_total_s": sum(med) if full else None}
    if "heterogeneous" in summary and "cyclic" in summary:
        h, c = summary["heterogeneous"], summary["cyclic"]
        summary["speedup_model"] = c["model_total_s"] / h["model_total_s"]
        if h["measured_total_s"] and c["measured_total_s"]:
            summary["speedup_measured"] = c["measured_total_s"] / h["measured_total_s"]
            axc.text(0.03, 0.97, f"cyclic / heterogeneous total time\n"
                     f"model {summary['speedup_model']:.3f}, measured "
                     f"{summary['speedup_measured']:.3f}", transform=axc.transAxes,
                     va="top", fontsize=9, bbox={"fc": "white", "alpha": 0.8, "ec": "0.7"})
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
    reps = min(v["repeats"] for k, v in summary.items() if isinstance(v, dict))
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


# ------------------------------------------------------------------------------------------
# running the jobs


@dataclass(frozen=True)
class Preset:
    K_T: int            # K of the T sweep
    Ts: tuple[int, ...]
    Ks: tuple[int, ...]
    m: int              # target rows of A
    n: int
    N: int
    field: str
    t_row: float
    reps: int
    part_rows: int      # K sweep: smallest partition (rows of A) allowed
    cec_t_row: float
    cec_repeats: int
    timeout: float      # per mpiexec


PRESETS = {
    "small": Preset(K_T=4, Ts=(1, 4, 12), Ks=(4, 5), m=36, n=24, N=6, field="float64",
                    t_row=0.0005, reps=2, part_rows=3, cec_t_row=0.0002, cec_repeats=1,
                    timeout=120),
    "full": Preset(K_T=9, Ts=(1, 3, 10, 30, 90, 360), Ks=(4, 5, 6, 7, 8, 9), m=720, n=720,
                   N=60, field="gf2^16", t_row=0.0002, reps=3, part_rows=24,
                   cec_t_row=0.002, cec_repeats=3, timeout=900),
}


def k_setting(K: int, preset: Preset) -> CodedParams:
    """The unified job at ``K``: ``q = round(2K/3)``, ``mu q = 2``, and the batch size whose
    ``m`` is closest to the preset's (the scheme's own rules decide which are valid)."""
    q = max(2, round(2 * K / 3))
    mu = Fraction(2, q)
    unified = get_scheme("unified")
    best: CodedParams | None = None
    why: ConfigError | None = None
    for eta in range(1, 4 * preset.m + 1):
        try:
            p = unified.params(K, q, mu, eta, preset.n, preset.N, field=preset.field)
        except ConfigError as exc:
            why = exc
            continue
        if best is None or abs(p.m - preset.m) < abs(best.m - preset.m):
            best = p
        if p.m > preset.m:
            break
    if best is None:
        raise FigError(f"no unified job at K={K} q={q} mu={mu}: {why}")
    return best


def largest_T(base: CodedParams, part_rows: int) -> int:
    """The largest ``T`` a bdc job with ``base``'s batches accepts whose partitions keep at
    least ``part_rows`` rows of ``A``."""
    bdc = get_scheme("bdc")
    for T in range(base.m, 0, -1):
        try:
            p = bdc.params(base.K, base.q, base.mu, base.rows_per_batch, base.n, base.N, T,
                           base.field)
        except ConfigError:
            continue
        if p.m // p.partitions >= part_rows:
            return T
    raise FigError(f"no bdc job at K={base.K} m={base.m} with partitions of >= {part_rows} "
                   "rows")


def run_all(preset: Preset, work: Path) -> dict[str, Path]:
    done: dict[tuple, Path] = {}

    def coded(scheme: str, base: CodedParams, T: int) -> Path:
        key = (scheme, base.K, base.q, base.mu, base.rows_per_batch, T)
        if key in done:
            return done[key]
        out = work / f"run_{scheme}_K{base.K}_T{T}.jsonl"
        args = ["run", "coded", "--scheme", scheme, "--K", str(base.K), "--q", str(base.q),
                "--mu", str(base.mu), "--rows-per-batch", str(base.rows_per_batch), "--n",
                str(preset.n), "--N", str(preset.N), "--field", preset.field, "--straggler",
                "shiftexp", "--t-row", str(preset.t_row), "--reps", str(preset.reps),
                "--seed", "0", "--timeout", str(preset.timeout), "--out", str(out)]
        if get_scheme(scheme).partitioned:
            args += ["--T", str(T)]
        run_mpi(base.K + 1, args, timeout=preset.timeout)
        done[key] = out
        return out

    def concat(paths: list[Path], dest: Path) -> Path:
        dest.write_text("".join(p.read_text() for p in paths))
        return dest

    files: dict[str, Path] = {}
    base = k_setting(preset.K_T, preset)
    t_runs = [coded("unified", base, 1)]
    t_runs += [coded("bdc", base, T) for T in preset.Ts]
    files["coded_T"] = concat(t_runs, work / "coded_T.jsonl")
    k_runs = []
    for K in preset.Ks:
        base = k_setting(K, preset)
        k_runs += [coded("unified", base, 1),
                   coded("bdc", base, largest_T(base, preset.part_rows))]
    files["coded_K"] = concat(k_runs, work / "coded_K.jsonl")
    cec = work / "cec.jsonl"
    cec.unlink(missing_ok=True)
    world = load_config(None).world_size  # the default job: the heterogeneous CEC example
    for rep in range(preset.cec_repeats):
        for policy in ("heterogeneous", "cyclic"):
            run_mpi(world, ["run", "cec", "--policy", policy, "--t-row", str(preset.cec_t_row),
                        "--seed", str(rep), "--out", str(cec)], timeout=preset.timeout)
    files["cec"] = cec
    return files


# ------------------------------------------------------------------------------------------
# the figures


@dataclass(frozen=True)
class Figure:
    png: str
    draw: Callable[[Any, Any, Path], dict[str, Any]]
    """``draw(plt, lines or runs of its files, png path) -> summary``."""


FIGURES: dict[str, Figure] = {
    "coded_T": Figure("coded_vs_T.png", figure_coded_T),
    "coded_K": Figure("coded_vs_K.png", figure_coded_K),
    "cec": Figure("cec_steps.png", figure_cec),
}
"""Every figure, in drawing order: its key (what :func:`classify` returns), PNG and drawer."""


def draw_all(plt: Any, groups: dict[str, list[Any]], out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    for kind, fig in FIGURES.items():
        if kind in groups:
            path = out_dir / fig.png
            summary[kind] = fig.draw(plt, groups[kind], path)
            summary[kind]["png"] = str(path)
            print(f"wrote {path} ({path.stat().st_size} bytes)")
    return summary


def figure_rs_bdc_vs_T(plt: Any, bench: dict[str, Any], out: Path) -> dict[str, Any]:
    """BDC over unified, encode + reduce, against ``T`` with RS codes (docs/theory.md
    (C.1), (C.4)): measured and the calibrated model, from ``scripts/bench_coded.py``'s last
    JSON line (``bdc_over_unified_measured``, ``bdc_over_unified_model``, objects keyed by
    ``T``).  Draw it with
    ``figure_rs_bdc_vs_T(plt, json.loads(line), Path("rs_bdc_vs_T.png"))``."""
    meas = {int(T): float(v) for T, v in bench["bdc_over_unified_measured"].items()}
    model = {int(T): float(v) for T, v in bench["bdc_over_unified_model"].items()}
    Ts = sorted(meas)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    plotting.measured_vs_model(ax, Ts, [meas[T] for T in Ts], [model[T] for T in Ts],
                               model_label="calibrated model")
    per = bench.get("scaled_summary", {}).get("per_T", {})  # a merge of independent runs
    bars = {int(T): v["measured"] for T, v in per.items()
            if int(T) in meas and v["measured"].get("n", 0) >= 2}
    if bars:
        xs = sorted(bars)
        ax.errorbar(xs, [meas[T] for T in xs],
                    yerr=[[meas[T] - bars[T]["q1"] for T in xs],
                          [bars[T]["q3"] - meas[T] for T in xs]],
                    fmt="none", ecolor="C0", capsize=4,
                    label=f"IQR over {max(b['n'] for b in bars.values())} runs")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("partitions T")
    ax.set_ylabel("BDC / unified, encode + reduce")
    m = bench.get("scaled_m", "?")
    ax.set_title(f"RS codes over GF(2^16), m = n = N = {m}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return {"png": str(out), "T": Ts, "measured": [meas[T] for T in Ts],
            "model": [model[T] for T in Ts]}


def figure_paper_phases(plt: Any, bench: dict[str, Any], out: Path) -> dict[str, Any]:
    """The paper's setting (``scripts/bench_paper.py``'s last JSON line): measured encode
    and reduce seconds of unified (T = 1) and BDC against ``T``, each beside the
    calibrated model's (docs/theory.md (C.4))."""
    rows = {int(T): r for T, r in bench["paper"].items()}
    Ts = sorted(rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    for ph, color in (("encode", "C0"), ("reduce", "C1")):
        plotting.measured_vs_model(ax, Ts, [rows[T][f"{ph}_s"] for T in Ts],
                                   [rows[T][f"model_{ph}_s"] for T in Ts], label=ph,
                                   color=color, model_label="calibrated model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions T (1: unified)")
    ax.set_ylabel(f"seconds (9 servers on {bench.get('cores', 0)} cores)")
    ax.set_title("K = 9, q = 6, mu = 1/3, m = n = N = 6000, GF(2^16)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return {"png": str(out), "T": Ts,
            **{f"{ph}_{w}": [rows[T][f"{pre}{ph}_s"] for T in Ts]
               for ph in ("encode", "reduce")
               for w, pre in (("measured", ""), ("model", "model_"))}}


# ------------------------------------------------------------------------------------------
# scripts/bench_network.py's output (docs/benchmarks.md, "The network")

NETWORK_SCHEMES = ("uc", "cmr", "unified", "bdc", "lt")
NETWORK_PNGS = {"shuffle": "network_shuffle_vs_rate.png",
                "tradeoff": "network_tradeoff_q.png",
                "elastic": "network_elastic_vs_rate.png"}


def _rate_bps(rate: str) -> float:
    from mpi_coded.rates import parse_rate

    return float(parse_rate(rate, "rate"))


def network_arrays(bench: dict[str, Any]) -> dict[str, Any]:
    """The numbers the three network figures draw, from the bench's JSON object (pure):
    ``shuffle`` (per mode and scheme: rates in bit/s, measured and modelled shuffle
    seconds), ``tradeoff`` (q, measured and modelled total seconds) and ``elastic`` (per
    trace and policy: rates, measured and modelled total step seconds)."""
    if "coded" not in bench or "elastic" not in bench:
        raise FigError("not scripts/bench_network.py's output (no coded or elastic part)")
    coded = bench["coded"]
    rates = sorted(coded, key=_rate_bps)
    shuffle: dict[str, dict[str, dict[str, list[float | None]]]] = {}
    for mode in ("p2p", "bcast"):
        for scheme in NETWORK_SCHEMES:
            cases = [coded[r].get(mode, {}).get(scheme) for r in rates]
            if not any(cases):
                continue
            shuffle.setdefault(mode, {})[scheme] = {
                "rate_bps": [_rate_bps(r) for r in rates],
                "measured": [c["shuffle_s"] if c else None for c in cases],
                "model": [c["shuffle_model_s"] if c else None for c in cases]}
    to = bench.get("tradeoff") or {}
    pts = sorted(to.get("points", []), key=lambda p: p["q"])
    tradeoff = {"q": [p["q"] for p in pts], "measured": [p["total_s"] for p in pts],
                "model": [p["model_total_s"] for p in pts],
                "iqr": [p.get("total_iqr") for p in pts],
                "best_q_measured": to.get("best_q_measured"),
                "best_q_model": to.get("best_q_model"), "rate": to.get("rate"),
                "K": to.get("K"), "t_row": to.get("t_row")}
    el = bench["elastic"]
    erates = sorted(el, key=_rate_bps)
    elastic: dict[str, dict[str, dict[str, list[float]]]] = {}
    for trace in sorted({t for r in erates for t in el[r]}):
        for policy in ("coded", "uncoded"):
            rows = [el[r][trace][policy] for r in erates if trace in el[r]]
            elastic.setdefault(trace, {})[policy] = {
                "rate_bps": [_rate_bps(r) for r in erates if trace in el[r]],
                "measured": [x["measured"]["total_s"] for x in rows],
                "model": [x["model"]["total_s"] for x in rows]}
    return {"shuffle": shuffle, "tradeoff": tradeoff, "elastic": elastic}


def _rate_axis(ax: Any, rates: list[float]) -> None:
    from mpi_coded.rates import format_rate

    ax.set_xscale("log")
    ax.set_xticks(rates)
    ax.set_xticklabels([format_rate(int(r)) for r in rates])
    ax.minorticks_off()


def _save_network(plt: Any, fig: Any, out_dir: Path, key: str) -> str:
    """Lay out, save and close one network figure; its path."""
    fig.tight_layout()
    path = out_dir / NETWORK_PNGS[key]
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def figure_network(plt: Any, bench: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """The network figures (docs/benchmarks.md): (a) shuffle seconds against the link rate
    per scheme, measured points on model lines, p2p and bcast side by side; (b) the
    unified scheme's total latency against ``q`` at one rate, measured and modelled;
    (c) the elastic job's total step time against the rate, coded against uncoded, per
    trace.  Returns the arrays drawn (:func:`network_arrays`) and the PNG paths."""
    arr = network_arrays(bench)
    colors = {"uc": "tab:blue", "cmr": "tab:green", "unified": SCHEME_COLORS["unified"],
              "bdc": SCHEME_COLORS["bdc"], "lt": "tab:purple"}
    out: dict[str, Any] = {"arrays": arr}
    modes = [m for m in ("p2p", "bcast") if m in arr["shuffle"]]
    if modes:
        fig, axes = plt.subplots(1, len(modes), figsize=(5.2 * len(modes), 4), sharey=True,
                                 squeeze=False)
        for ax, mode in zip(axes[0], modes):
            rates: list[float] = []
            for scheme, v in arr["shuffle"][mode].items():
                plotting.points_on_model(ax, v["rate_bps"], v["measured"], v["model"],
                                         label=scheme, color=colors.get(scheme))
                rates = v["rate_bps"]
            _rate_axis(ax, rates)
            ax.set_yscale("log")
            ax.set_xlabel("link rate (every host)")
            ax.set_title(f"shuffle, {mode}")
            ax.grid(True, alpha=0.3)
        axes[0][0].set_ylabel("shuffle seconds (median)")
        axes[0][-1].legend(fontsize=7, ncol=2)
        out["shuffle_png"] = _save_network(plt, fig, out_dir, "shuffle")
    to = arr["tradeoff"]
    if to["q"]:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        plotting.measured_vs_model(ax, to["q"], to["measured"], to["model"],
                                   model_label="model")
        ax.set_xticks(to["q"])
        ax.set_xlabel("q (servers the map waits for)")
        ax.set_ylabel("encode + map + shuffle + reduce, seconds")
        ax.set_title(f"unified, K = {to['K']}, {to['rate']}, t_row = {to['t_row']} s; "
                     f"best q: measured {to['best_q_measured']}, model {to['best_q_model']}",
                     fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        out["tradeoff_png"] = _save_network(plt, fig, out_dir, "tradeoff")
    if arr["elastic"]:
        traces = list(arr["elastic"])
        fig, axes = plt.subplots(1, len(traces), figsize=(5 * len(traces), 4), squeeze=False)
        for ax, trace in zip(axes[0], traces):
            for policy, color in (("coded", POLICY_COLORS["heterogeneous"]),
                                  ("uncoded", "tab:red")):
                v = arr["elastic"][trace][policy]
                plotting.points_on_model(ax, v["rate_bps"], v["measured"], v["model"],
                                         label=policy, color=color)
            _rate_axis(ax, arr["elastic"][trace]["coded"]["rate_bps"])
            ax.set_xlabel("link rate (every host)")
            ax.set_ylabel("total step time, seconds")
            ax.set_title(f"elastic job, {trace} trace")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        out["elastic_png"] = _save_network(plt, fig, out_dir, "elastic")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--run", action="store_true", help="launch the jobs (mpiexec), then draw")
    mode.add_argument("--results", nargs="+", type=Path, metavar="FILE",
                      help="JSON-lines results to draw (one figure's data per file)")
    mode.add_argument("--rs-bench", type=Path, metavar="FILE", default=None,
                      help="the output of scripts/bench_coded.py (its last line): draw "
                           "rs_bdc_vs_T.png, BDC over unified with Reed-Solomon codes")
    mode.add_argument("--paper-bench", type=Path, metavar="FILE", default=None,
                      help="the output of scripts/bench_paper.py (its last line): draw "
                           "rs_paper_phases.png and rs_bdc_vs_T_paper.png")
    mode.add_argument("--network-bench", type=Path, metavar="FILE", default=None,
                      help="the output of scripts/bench_network.py (its last line): draw "
                           + ", ".join(NETWORK_PNGS.values()))
    ap.add_argument("--small", action="store_true",
                    help="with --run: a tiny version (float64, few ranks; well under a minute)")
    ap.add_argument("--out", type=Path, required=True, help="directory for the PNGs")
    ap.add_argument("--keep-results", type=Path, default=None, metavar="DIR",
                    help="with --run: keep coded_T.jsonl, coded_K.jsonl, cec.jsonl here")
    args = ap.parse_args(argv)
    groups: dict[str, list[Any]] = {}
    try:
        if args.small and not args.run:
            raise FigError("--small applies only with --run")
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise FigError("matplotlib is not installed (pip install matplotlib, or the "
                           "'plot' extra)") from None
        bench_file = args.rs_bench or args.paper_bench or args.network_bench
        if bench_file is not None:
            lines = [ln for ln in bench_file.read_text().splitlines() if ln.startswith("{")]
            if not lines:
                raise FigError(f"{bench_file}: no JSON line (the bench's output?)")
            args.out.mkdir(parents=True, exist_ok=True)
            bench = json.loads(lines[-1])
            if args.network_bench is not None:
                summary = figure_network(plt, bench, args.out)
                for key in ("shuffle_png", "tradeoff_png", "elastic_png"):
                    if key in summary:
                        print(f"wrote {summary[key]}")
            elif args.rs_bench is not None:
                summary = figure_rs_bdc_vs_T(plt, bench, args.out / "rs_bdc_vs_T.png")
            else:
                if "paper" not in bench:
                    raise FigError(f"{bench_file}: not scripts/bench_paper.py's output")
                summary = {"phases": figure_paper_phases(
                    plt, bench, args.out / "rs_paper_phases.png")}
                if "bdc_over_unified_measured" in bench:
                    summary["ratio"] = figure_rs_bdc_vs_T(
                        plt, {**bench, "scaled_m": 6000},
                        args.out / "rs_bdc_vs_T_paper.png")
        elif args.run:
            preset = PRESETS["small" if args.small else "full"]
            with tempfile.TemporaryDirectory() as d:
                files = run_all(preset, Path(d))
                if args.keep_results is not None:
                    args.keep_results.mkdir(parents=True, exist_ok=True)
                    for f in files.values():
                        shutil.copy(f, args.keep_results / f.name)
                groups = {k: classify(p, read_results(p))[1] for k, p in files.items()}
                summary = draw_all(plt, groups, args.out)
        else:
            for p in args.results:
                kind, recs = classify(p, read_results(p))
                groups.setdefault(kind, []).extend(recs)
            summary = draw_all(plt, groups, args.out)
    except FigError as exc:
        print(f"figures.py: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
