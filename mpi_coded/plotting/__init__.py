"""The package's one way to draw its figures: phase charts, load figures, step times against
the model, sweeps (matplotlib; the ``plot`` extra).

Every drawer here takes a matplotlib ``Axes`` and the numbers to draw, and draws them: it
reads no results file and computes no model value (the callers do: :mod:`mpi_coded.report`
and the figure modules of this package).  :func:`figure` makes a ``Figure`` without pyplot
(no global state, no display), :func:`png` renders one to PNG bytes and :func:`data_uri` to
a ``data:`` URI an HTML page embeds.  matplotlib is imported only when a figure is made;
without it, :func:`require` raises :class:`PlotUnavailable` with a one-line message.

The figures of ``scripts/figures.py`` (model curves beside real runs, and the benches'
figures) live in the submodules: :mod:`.figures` (the registry, reading and classifying
results files, launching the jobs through a given launcher), :mod:`.coded_figures` (the
coded job against ``T`` and ``K``), :mod:`.elastic_figures` (the elastic job's steps) and
:mod:`.bench_figures` (the outputs of ``scripts/bench_coded.py``, ``bench_paper.py`` and
``bench_network.py``).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

PHASES = ("encode", "map", "shuffle", "reduce")
"""A coded job's phases, in order."""
PHASE_COLORS = {"encode": "tab:blue", "map": "tab:green", "shuffle": "tab:purple",
                "reduce": "tab:red"}
SCHEME_COLORS = {"unified": "tab:gray", "bdc": "tab:orange"}
POLICY_COLORS = {"heterogeneous": "tab:blue", "cyclic": "tab:red"}
BAD_COLOR = "crimson"
"""Marks a repetition or step that failed or did not verify."""


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


class FigError(Exception):
    """A figure cannot be drawn from its input (a missing or unusable results file, a
    setting without both schemes...): one line for the user (``scripts/figures.py`` exits
    with status 2)."""


def require() -> Any:
    """The ``matplotlib.figure`` module; :class:`PlotUnavailable` without matplotlib."""
    try:
        # deferred: matplotlib, only for figures
        import matplotlib
        import matplotlib.figure
    except ImportError:
        raise PlotUnavailable("matplotlib is not installed (pip install 'mpi-coded[plot]' or "
                              "'mpi-coded[report]')") from None
    matplotlib.use("Agg", force=False)
    return matplotlib.figure


def figure(width: float = 6.4, height: float = 3.6, ncols: int = 1) -> tuple[Any, Any]:
    """A new ``Figure`` and its axes (one ``Axes``, or a list of ``ncols``)."""
    fig = require().Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, (list(axes) if ncols > 1 else axes)


def png(fig: Any, dpi: int = 90) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def data_uri(fig: Any, dpi: int = 90) -> str:
    """The figure as a ``data:image/png;base64,...`` URI (nothing to fetch to show it)."""
    return "data:image/png;base64," + base64.b64encode(png(fig, dpi)).decode("ascii")


# ------------------------------------------------------------------------------------------
# the drawers

MANY = 40
"""More labels than this on an axis: every k-th is shown, bars are drawn as a line (a long
job stays quick to draw and readable)."""


def _ticks(ax: Any, xs: Sequence[float], labels: Sequence[str], fontsize: float = 8) -> None:
    """Tick labels at ``xs``: all of them, or about a dozen when there are more than
    :data:`MANY`."""
    k = 1 if len(xs) <= MANY else -(-len(xs) // 12)
    ax.set_xticks(list(xs)[::k])
    ax.set_xticklabels(list(labels)[::k], fontsize=fontsize,
                       rotation=30 if len(xs) > 8 and k == 1 else 0)


def phase_chart(ax: Any, labels: Sequence[str], measured: Mapping[str, Sequence[float]],
                model: Mapping[str, float] | None = None, bad: Sequence[bool] = (),
                model_label: str = "model") -> None:
    """Stacked bars of each phase's seconds, one bar per label (a repetition), and the
    model's phases as one more bar (``model``) when given.  A ``bad`` bar (failed or not
    verified) is outlined in :data:`BAD_COLOR` and its label marked."""
    phases = [p for p in PHASES if p in measured]
    names = [f"{lab} (!)" if i < len(bad) and bad[i] else lab for i, lab in enumerate(labels)]
    xs: list[float] = [float(x) for x in range(len(labels))]
    if model is not None:
        names.append(model_label)
        xs.append(len(labels) + 0.5)
    bottom = [0.0] * len(xs)
    for ph in phases:
        vals = [float(v) for v in measured[ph]]
        if model is not None:
            vals.append(float(model.get(ph, 0.0)))
        n = len(labels)
        ax.bar(xs[:n], vals[:n], bottom=bottom[:n], color=PHASE_COLORS.get(ph), label=ph,
               width=0.7)
        if model is not None:
            ax.bar(xs[n:], vals[n:], bottom=bottom[n:], color=PHASE_COLORS.get(ph),
                   width=0.7, hatch="//", edgecolor="white", label="_nolegend_")
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, is_bad in enumerate(bad):
        if is_bad:
            ax.bar([xs[i]], [bottom[i]], width=0.8, fill=False, edgecolor=BAD_COLOR, lw=2)
    _ticks(ax, xs, names)
    ax.set_ylabel("seconds")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def measured_vs_model(ax: Any, xs: Sequence[float], measured: Sequence[float],
                      model: Sequence[float] | None, label: str = "", color: Any = None,
                      model_label: str = "model") -> None:
    """Measured values as ``o-`` and the model's as ``s--`` in the same colour."""
    tag = f"{label}, " if label else ""
    ax.plot(xs, measured, "o-", color=color, label=f"{tag}measured")
    if model is not None:
        ax.plot(xs, model, "s--", color=color, label=f"{tag}{model_label}")


def points_on_model(ax: Any, xs: Sequence[float], measured: Sequence[float | None],
                    model: Sequence[float | None], label: str = "", color: Any = None,
                    marker: str = "o") -> None:
    """The model as a line (``-``, labelled ``LABEL model``) and the measured values as
    markers on it (``LABEL measured``), in one colour; ``None`` values are left out."""
    tag = f"{label}, " if label else ""
    mx = [x for x, v in zip(xs, model) if v is not None]
    ax.plot(mx, [v for v in model if v is not None], "-", color=color, alpha=0.8,
            label=f"{tag}model")
    px = [x for x, v in zip(xs, measured) if v is not None]
    ax.plot(px, [v for v in measured if v is not None], marker, ls="none", color=color,
            label=f"{tag}measured")


def load_chart(ax: Any, labels: Sequence[str], measured: Sequence[float],
               analytic: Sequence[float | None], bad: Sequence[bool] = ()) -> None:
    """Measured communication load per label (bars) beside the analytic one (markers)."""
    xs = list(range(len(labels)))
    colors = [BAD_COLOR if i < len(bad) and bad[i] else "tab:orange" for i in xs]
    ax.bar(xs, [float(v) for v in measured], color=colors, width=0.6, label="measured")
    have = [(x, float(a)) for x, a in zip(xs, analytic) if a is not None]
    if have:
        ax.plot([x for x, _ in have], [a for _, a in have], "k_", ms=22, mew=2,
                label="analytic")
    _ticks(ax, xs, labels)
    ax.set_ylabel("load (values sent / (m N))")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def step_chart(ax: Any, steps: Sequence[int], model: Sequence[float],
               measured: Sequence[float], lo: Sequence[float] | None = None,
               hi: Sequence[float] | None = None, label: str = "", color: Any = None,
               dx: float = 0.0, dashed: bool = False, bad: Sequence[bool] = (),
               measured_at: Sequence[int] | None = None) -> None:
    """Per step: the model's seconds as a short horizontal line, the measured ones as a
    point (shifted by ``dx``; bars ``lo``/``hi`` below and above it when given) at the
    steps ``measured_at`` (default: every step); ``bad`` points in :data:`BAD_COLOR`."""
    tag = f": {label}" if label else ""
    at = list(steps if measured_at is None else measured_at)
    ax.hlines(model, [t - 0.38 for t in steps], [t + 0.38 for t in steps], colors=color,
              lw=2, linestyles="--" if dashed else "-", label=f"model{tag}")
    yerr = [list(lo), list(hi)] if lo is not None and hi is not None else None
    ax.errorbar([t + dx for t in at], measured, yerr=yerr, fmt="o", color=color, capsize=3,
                label=f"measured{tag}")
    marks = [(t + dx, y) for t, y, b in zip(at, measured, bad) if b]
    if marks:
        ax.plot([x for x, _ in marks], [y for _, y in marks], "x", color=BAD_COLOR, ms=12,
                mew=2.5, label="not verified")


def bars(ax: Any, labels: Sequence[str], values: Sequence[float], ylabel: str,
         bad: Sequence[bool] = (), color: Any = "tab:blue") -> None:
    """One bar per label (e.g. transition waste per step)."""
    xs = list(range(len(labels)))
    ys = [float(v) for v in values]
    if len(xs) > MANY:
        ax.plot(xs, ys, drawstyle="steps-mid", color=color, lw=1)
        marks = [i for i in xs if i < len(bad) and bad[i]]
        ax.plot(marks, [ys[i] for i in marks], "x", color=BAD_COLOR)
    else:
        ax.bar(xs, ys, width=0.6,
               color=[BAD_COLOR if i < len(bad) and bad[i] else color for i in xs])
    _ticks(ax, xs, labels)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)


def sweep_chart(ax: Any, xname: str, series: Mapping[str, Sequence[tuple[Any, list[float]]]],
                ylabel: str, logx: bool = False) -> None:
    """One line per series: at each ``x`` (a swept value) the median of its values, bars
    from min to max.  Values that are not all numbers get one tick each (categorical)."""
    xvals = [x for pts in series.values() for x, _ in pts]
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xvals)
    ticks = sorted({str(x) for x in xvals}) if not numeric else []
    for name, pts in series.items():
        pts = sorted(pts, key=lambda p: p[0] if numeric else str(p[0]))
        xs = [p[0] if numeric else ticks.index(str(p[0])) for p in pts]
        med = [_median(v) for _, v in pts]
        ax.errorbar(xs, med, yerr=[[m - min(v) for m, (_, v) in zip(med, pts)],
                                   [max(v) - m for m, (_, v) in zip(med, pts)]],
                    fmt="o-", capsize=3, label=name or None)
    if ticks:
        ax.set_xticks(range(len(ticks)))
        ax.set_xticklabels(ticks, fontsize=8)
    elif logx:
        ax.set_xscale("log")
    ax.set_xlabel(xname)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if any(series):
        ax.legend(fontsize=8)


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    k = len(s) // 2
    return s[k] if len(s) % 2 else (s[k - 1] + s[k]) / 2
