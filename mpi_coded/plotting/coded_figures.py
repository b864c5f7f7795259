"""The coded job's figures: BDC against the unified scheme (the BDC paper), the MODEL as
curves and REAL runs as points, against the number of partitions ``T`` (``coded_vs_T.png``)
or of servers ``K`` (``coded_vs_K.png``).

Three panels each: (a) communication load, (b) delay ``encode + map + reduce``, (c) the same
per phase.  Every model value and parameter rule comes from the package, none is restated:
:func:`mpi_coded.analysis.model.predict` at the parameters of every measured run (same
``K, q, mu, m, n, N, T`` and field, the runs' assignment or the default heuristic one), the
load at a realised ``Q`` from :class:`mpi_coded.analysis.bdc_load.LoadEvaluator`, and valid
settings from :meth:`mpi_coded.coded.schemes.base.Scheme.params`.

Normalisation.  Loads are values over ``m N`` on both sides (exact fractions): plotted as
is.  The model's delay is in abstract operation units, the measurements in seconds, so
every coded delay is divided by the UNIFIED scheme's delay of the same setting: model
``D_bdc / D_unified``, measured ``median(D_bdc) / median(D_unified)`` over the repetitions
(bars: min and max of ``D_bdc`` over that median).  The measured ``D`` is
``encode_s + map_s + reduce_s`` (the model has no shuffle term; the shuffle is the load).

A drawer saves its PNG and then closes its figure with ``plt.close(fig)`` on the ``plt`` it
was given (tests/test_figures.py passes one that keeps the figure to look at it).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded import results
from mpi_coded.analysis.bdc_load import LoadEvaluator, make_instance
from mpi_coded.analysis.model import Prediction, model_params, predict
from mpi_coded.coded.assignment import heuristic_assignment
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.errors import ConfigError
from mpi_coded.plotting import PHASE_COLORS, SCHEME_COLORS, FigError
from mpi_coded.results import CodedRun

PHASES = ("encode", "map", "reduce")
"""The phases of the model's delay (it has no shuffle term; the shuffle is the load)."""
REFERENCE, CANDIDATE = "unified", "bdc"
"""The two schemes a figure compares: every delay is over the REFERENCE's."""
SCHEME_LABELS = {REFERENCE: "unified", CANDIDATE: "BDC"}
MARKER_FACE = {REFERENCE: "white", CANDIDATE: SCHEME_COLORS[CANDIDATE]}
"""Measured load markers: hollow for the reference, filled for the candidate."""


# ------------------------------------------------------------------------------------------
# the measured runs


@dataclass(frozen=True)
class Measured:
    """A verified coded ``run`` line and the assignment of its job ("": the default)."""

    run: CodedRun
    assignment: str


def coded_runs(recs: list[dict[str, Any]], path: Path) -> list[Measured]:
    """Verified ``run`` lines of the coded jobs of a results file, each with the
    ``assignment`` of its job's config line (runs that did not verify are left out, with a
    note on stderr)."""
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


Setting = tuple[int, int, str, int, int, int, str]
"""``(K, q, mu, m, n, N, field)``: what a unified run and a bdc run share to be compared."""


def setting_of(r: CodedRun) -> Setting:
    """The run's :data:`Setting` (``mu`` as a fraction string)."""
    try:
        return (int(r.K), int(r.q), str(Fraction(str(r.mu))), int(r.m), int(r.n), int(r.N),
                str(r.field))
    except (TypeError, ValueError, ZeroDivisionError):
        raise FigError(f"a coded 'run' line has a malformed K, q, mu, m, n, N or field: "
                       f"{json.dumps(r.raw)[:120]}") from None


def bdc_params(setting: Setting, rows_per_batch: int, T: int) -> CodedParams:
    """The runnable candidate (bdc) job at ``setting`` with ``T`` partitions (every rule
    checked; ConfigError if it is not runnable)."""
    K, q, mu, _, n, N, fld = setting
    return get_scheme(CANDIDATE).params(K, q, Fraction(mu), rows_per_batch, n, N, T, fld)


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


# ------------------------------------------------------------------------------------------
# the model's values


_MODEL_CACHE: dict[tuple[Any, ...], Prediction] = {}
_LOAD_AT_Q: dict[tuple[Any, ...], float] = {}


def model_of(scheme: str, setting: Setting, T: int, assignment: str = "") -> Prediction:
    """:func:`predict` of ``scheme`` at ``setting`` with ``T`` partitions (and the runs'
    assignment matrix file, "" for the default one), cached."""
    key = (scheme, setting, T, assignment)
    if key not in _MODEL_CACHE:
        K, q, mu, m, n, N, fld = setting
        P = None
        if assignment:
            if not Path(assignment).is_file():
                raise FigError(f"the bdc runs used the assignment {assignment}, which is "
                               "not there: the model needs it")
            P = np.load(assignment)
        try:
            mp = model_params(scheme, K, q, Fraction(mu), m=m, n=n, N=N, T=T, field=fld)
            _MODEL_CACHE[key] = predict(mp, assignment=P)
        except ConfigError as exc:
            raise FigError(f"model of {scheme} K={K} q={q} mu={mu} m={m} T={T}: {exc}") from None
    return _MODEL_CACHE[key]


def model_load(scheme: str, setting: Setting, T: int, assignment: str = "") -> float:
    """The model's communication load of ``scheme`` (:func:`model_of`)."""
    return float(model_of(scheme, setting, T, assignment).load)


def model_delay(scheme: str, setting: Setting, T: int, what: str, assignment: str = ""
                ) -> float:
    """The model's delay ``what`` (a phase of :data:`PHASES` or ``total``) of ``scheme``:
    the one place that reads the prediction's delays."""
    return float(model_of(scheme, setting, T, assignment).delay.to_dict()[what])


def model_load_at_Q(p: Point, r: CodedRun) -> float:
    """Model load of one bdc run at the finishing set ``Q`` it realised (padding included,
    :class:`mpi_coded.analysis.bdc_load.LoadEvaluator`): the measured load must equal it."""
    key = (p.setting, p.T, p.assignment, tuple(sorted(r.Q)), int(r.rows_per_batch))
    if key not in _LOAD_AT_Q:
        K, q, mu, m, n, N, fld = p.setting
        inst = make_instance(K, q, Fraction(mu), int(r.rows_per_batch), p.T)
        P = (np.load(p.assignment) if p.assignment else
             heuristic_assignment(inst.n_batches, inst.rows_per_batch, inst.T))
        ev = LoadEvaluator(inst, np.array([sorted(r.Q)], dtype=np.int64), "best", N)
        _LOAD_AT_Q[key] = float(ev.load(P))
    return _LOAD_AT_Q[key]


# ------------------------------------------------------------------------------------------
# points: a setting's reference and candidate runs beside the model


def measured_delay(r: CodedRun, what: str) -> float:
    """``total``: the model's phases; ``total+shuffle``: the run's total; else one phase."""
    if what == "total":
        return sum(r.phase_s(p) for p in PHASES)
    if what == "total+shuffle":
        return float(r.total_s)
    return r.phase_s(what)


@dataclass
class Point:
    """One x of a figure: a setting, the candidate's ``T``, the reference's runs (every
    ``T``) and the candidate's runs at ``T``."""

    x: float
    setting: Setting
    T: int
    unified: list[CodedRun]
    bdc: list[CodedRun]
    assignment: str
    runs: dict[str, list[CodedRun]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.runs = {REFERENCE: self.unified, CANDIDATE: self.bdc}

    def ratio(self, what: str) -> tuple[float, float, float]:
        """``(median, min, max)`` of measured bdc over the median of measured unified."""
        ref = statistics.median(measured_delay(r, what) for r in self.unified)
        vals = [measured_delay(r, what) / ref for r in self.bdc]
        return statistics.median(vals), min(vals), max(vals)

    def model_ratio(self, what: str) -> float:
        """The model's bdc delay ``what`` over the unified one's."""
        b = model_delay(CANDIDATE, self.setting, self.T, what, self.assignment)
        return b / model_delay(REFERENCE, self.setting, 1, what)


Groups = dict[Setting, dict[str, dict[int, list[Measured]]]]


def group_settings(runs: list[Measured]) -> Groups:
    """setting -> scheme -> T -> runs."""
    out: Groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for m in runs:
        out[setting_of(m.run)][m.run.scheme][int(m.run.T)].append(m)
    return out


def point(x: float, setting: Setting, T: int, g: dict[str, dict[int, list[Measured]]]
          ) -> Point:
    """The :class:`Point` at ``x`` of the candidate's runs at ``T`` in ``g``."""
    cand = g[CANDIDATE][T]
    return Point(x, setting, T, [m.run for ms in g[REFERENCE].values() for m in ms],
                 [m.run for m in cand], cand[0].assignment)


def points_vs_T(runs: list[Measured]) -> tuple[Setting, list[Point]]:
    """The setting with both schemes and the most candidate ``T``, one point per ``T``."""
    groups = group_settings(runs)
    good = [(s, g) for s, g in groups.items() if g[REFERENCE] and g[CANDIDATE]]
    if not good:
        raise FigError("coded results: no setting with both unified and bdc runs")
    setting, g = max(good, key=lambda sg: (len(sg[1][CANDIDATE]), sg[0]))
    return setting, [point(T, setting, T, g) for T in sorted(g[CANDIDATE])]


def points_vs_K(runs: list[Measured]) -> list[Point]:
    """One point per ``K`` (its candidate runs at the largest ``T``; of several settings
    at a ``K``, the one with the most runs)."""
    groups = group_settings(runs)
    by_k: dict[int, Point] = {}
    for s, g in sorted(groups.items()):
        if not (g[REFERENCE] and g[CANDIDATE]):
            continue
        pt = point(s[0], s, max(g[CANDIDATE]), g)
        if s[0] not in by_k or len(pt.bdc) > len(by_k[s[0]].bdc):
            by_k[s[0]] = pt
    if len(by_k) < 2:
        raise FigError("coded results over K: need unified and bdc runs at two or more K")
    return [by_k[k] for k in sorted(by_k)]


def point_summary(p: Point, xname: str) -> dict[str, Any]:
    """What the figure shows at one point, as numbers (the drawer's summary)."""
    return {
        xname: p.x, "K": p.setting[0], "q": p.setting[1], "mu": p.setting[2],
        "m": p.setting[3], "T": p.T,
        "load_model_bdc": model_load(CANDIDATE, p.setting, p.T, p.assignment),
        "load_model_unified": model_load(REFERENCE, p.setting, 1),
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
    }


# ------------------------------------------------------------------------------------------
# drawing


def field_label(fld: str) -> str:
    """The field as a title shows it (``GF(2^16)``)."""
    return {"gf2^8": "GF(2^8)", "gf2^16": "GF(2^16)"}.get(fld, fld)


def run_info(r: CodedRun, reps: int) -> str:
    """The stragglers and repetitions, for a title."""
    return f"map stragglers: {r.straggler or '?'}, {reps} rep(s) per point"


def ratio_bars(pts: list[Point], what: str) -> tuple[list[float], list[list[float]]]:
    """Medians and ``[below, above]`` bar lengths of :meth:`Point.ratio` for errorbar."""
    stats = [p.ratio(what) for p in pts]
    return [m for m, _, _ in stats], [[m - a for m, a, _ in stats], [b - m for m, _, b in stats]]


def _draw_load(ax: Any, pts: list[Point], curve_pts: list[Point], logx: bool) -> None:
    """Panel (a): the model's loads as curves, the model at the runs' ``Q`` and the
    measured loads as points."""
    cx = [p.x for p in curve_pts]
    ax.plot(cx, [model_load(CANDIDATE, p.setting, p.T, p.assignment) for p in curve_pts],
            "-", color=SCHEME_COLORS[CANDIDATE], label="model: BDC")
    ax.plot(cx, [model_load(REFERENCE, p.setting, 1) for p in curve_pts], "--",
            color=SCHEME_COLORS[REFERENCE], label="model: unified")
    qy = [statistics.median(model_load_at_Q(p, r) for r in p.bdc) for p in pts]
    ax.plot([p.x for p in pts], qy, "x", color="black", ms=8, mew=1.5,
            label="model: BDC at the runs' finishing sets Q")
    for scheme, shift, marker in ((CANDIDATE, 1.0 if logx else 0.0, "o"),
                                  (REFERENCE, 0.93 if logx else -0.08, "s")):
        ys, lo, hi, xx = [], [], [], []
        for p in pts:
            vals = [float(r.load_measured) for r in p.runs[scheme]]
            ys.append(statistics.median(vals))
            lo.append(ys[-1] - min(vals))
            hi.append(max(vals) - ys[-1])
            xx.append(p.x * shift if logx else p.x + shift)
        ax.errorbar(xx, ys, yerr=[lo, hi], fmt=marker, color=SCHEME_COLORS[scheme],
                    mfc=MARKER_FACE[scheme], capsize=3,
                    label=f"measured: {SCHEME_LABELS[scheme]}")
    ax.set_ylabel("communication load (values sent / (m N))")
    ax.set_title("(a) shuffle load")


def _draw_delays(ax_tot: Any, ax_ph: Any, pts: list[Point], curve_pts: list[Point]) -> None:
    """Panels (b) and (c): the delay ratios, total and per phase, model and measured."""
    cx = [p.x for p in curve_pts]
    xs = [p.x for p in pts]
    ax_tot.axhline(1.0, color=SCHEME_COLORS[REFERENCE], ls="--", lw=1,
                   label="unified (= 1 by definition)")
    ax_tot.plot(cx, [p.model_ratio("total") for p in curve_pts], "-", color="black",
                label="model: D_BDC / D_unified")
    for what, marker, face, label in (("total", "o", "black", "measured: encode+map+reduce"),
                                      ("total+shuffle", "^", "white",
                                       "measured: incl. shuffle")):
        ax_tot.errorbar(xs, *ratio_bars(pts, what), fmt=marker, color="black", mfc=face,
                        capsize=3, label=label)
    ax_tot.set_yscale("log")
    ax_tot.set_ylabel("delay / unified delay (model: op units; measured: s)")
    ax_tot.set_title("(b) total delay, normalised to unified")
    for ph in PHASES:
        ax_ph.plot(cx, [p.model_ratio(ph) for p in curve_pts], "-", color=PHASE_COLORS[ph],
                   label=f"model: {ph}")
        ax_ph.errorbar(xs, *ratio_bars(pts, ph),
                       fmt="o", color=PHASE_COLORS[ph], capsize=3, label=f"measured: {ph}")
    ax_ph.axhline(1.0, color=SCHEME_COLORS[REFERENCE], ls="--", lw=1)
    ax_ph.set_yscale("log")
    ax_ph.set_ylabel("phase delay / unified phase delay")
    ax_ph.set_title("(c) per phase, normalised to unified")


def _x_axis(ax: Any, pts: list[Point], logx: bool) -> None:
    """Ticks at the points: ``T`` on a log axis, or ``K`` with its setting."""
    xs = [p.x for p in pts]
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


def draw_coded(plt: Any, pts: list[Point], xname: str, out: Path, title: str,
               model_T: list[int] | None = None) -> dict[str, Any]:
    """Three panels (load, total delay ratio, per-phase delay ratios) against ``xname``
    (``T``: log axis, the model at every ``model_T``; else at the points), saved to
    ``out``; the points' numbers (:func:`point_summary`)."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    ax_load, ax_tot, ax_ph = axes
    logx = xname == "T"
    if model_T is not None:
        p0 = pts[0]
        curve_pts = [Point(T, p0.setting, T, p0.unified, p0.bdc, p0.assignment)
                     for T in model_T]
    else:
        curve_pts = pts
    _draw_load(ax_load, pts, curve_pts, logx)
    _draw_delays(ax_tot, ax_ph, pts, curve_pts)
    for ax in axes:
        _x_axis(ax, pts, logx)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return {"points": [point_summary(p, xname) for p in pts]}


MODEL_NOTE = ("Curves: model (mpi_coded.analysis.model.predict); points: real MPI runs "
              "(median, bars min-max)")


def figure_coded_T(plt: Any, runs: list[Measured], out: Path) -> dict[str, Any]:
    """``coded_vs_T.png``: BDC against unified as ``T`` grows, at the setting of the runs
    with the most ``T``; the model at every valid ``T`` between the measured ones."""
    setting, pts = points_vs_T(runs)
    K, q, mu, m, n, N, fld = setting
    eta = int(pts[0].bdc[0].rows_per_batch)
    try:
        r = bdc_params(setting, eta, pts[0].T).r
    except ConfigError as exc:
        raise FigError(f"bdc runs at K={K} q={q} mu={mu} m={m} T={pts[0].T}: {exc}") from None
    model_T = valid_Ts(setting, eta, min(p.T for p in pts), max(p.T for p in pts))
    reps = min(len(p.bdc) for p in pts)
    title = (f"BDC vs unified against T (the BDC paper): K={K} q={q} mu={mu} m={m} n={n} N={N} "
             f"r={r} {field_label(fld)}; {run_info(pts[0].bdc[0], reps)}.\n" + MODEL_NOTE)
    return draw_coded(plt, pts, "T", out, title, model_T=model_T)


def figure_coded_K(plt: Any, runs: list[Measured], out: Path) -> dict[str, Any]:
    """``coded_vs_K.png``: BDC (its largest ``T``) against unified at every ``K``."""
    pts = points_vs_K(runs)
    reps = min(len(p.bdc) for p in pts)
    n, N, fld = pts[0].setting[4], pts[0].setting[5], pts[0].setting[6]
    ms = sorted({p.setting[3] for p in pts})
    mtxt = f"m={ms[0]}" if len(ms) == 1 else f"m={ms[0]}..{ms[-1]}"
    title = (f"BDC vs unified against K (the BDC paper): q and mu scaled (labels), {mtxt} n={n} "
             f"N={N} {field_label(fld)}; {run_info(pts[0].bdc[0], reps)}.\n" + MODEL_NOTE)
    return draw_coded(plt, pts, "K", out, title)
