"""scripts/figures.py and :mod:`mpi_coded.plotting.figures`: model curves beside real runs
(tiny real jobs through mpiexec)."""

from __future__ import annotations

import json
import statistics
import sys
from fractions import Fraction
from itertools import accumulate
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import ROOT, mpiexec_path, run_cmd

SCRIPT = str(ROOT / "scripts" / "figures.py")
PNGS = ("coded_vs_T.png", "coded_vs_K.png", "cec_steps.png")

pytest.importorskip("matplotlib", reason="matplotlib is not installed: no figures to draw")


# --- drawing in this process, to look at what a figure plots ------------------------------

def load_figures() -> ModuleType:
    """:mod:`mpi_coded.plotting.figures`, what scripts/figures.py runs (its drawers,
    FIGURES, classify, read_results)."""
    import matplotlib

    matplotlib.use("Agg")
    from mpi_coded.plotting import figures

    return figures


class KeepingPlt:
    """``matplotlib.pyplot`` for a drawer, except that ``close(fig)`` keeps the figure:
    every drawer saves its PNG and closes its figure with ``plt.close(fig)``."""

    def __init__(self) -> None:
        import matplotlib.pyplot as plt

        self._plt = plt
        self.figures: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plt, name)

    def close(self, fig: Any = None) -> None:
        self.figures.append(fig)

    def close_all(self) -> None:
        for fig in self.figures:
            self._plt.close(fig)


def lines_of(ax: Any) -> dict[str, Any]:
    """The axes' plotted lines by legend label."""
    return {ln.get_label(): ln for ln in ax.get_lines()}


def bars_of(ax: Any) -> dict[str, Any]:
    """The data line of each errorbar by legend label."""
    return {c.get_label(): c.lines[0] for c in ax.containers}


def xy(line: Any) -> tuple[list[float], list[float]]:
    return [float(v) for v in line.get_xdata()], [float(v) for v in line.get_ydata()]


def at(line: Any, x: float) -> float:
    xs, ys = xy(line)
    assert x in xs, (line.get_label(), x, xs)
    return ys[xs.index(x)]


# The small preset's unified model loads, by hand (SPEC.md B.3): q = round(2K/3), mu q = 2.
#   K=4, q=3, mu=2/3: (q/K) C(4,2) = 9/2; B_2 = C(2,2) C(1,0)/(9/2) = 2/9 <= 1 - mu = 1/3,
#     B_1 = C(2,1) C(1,1)/(9/2) = 4/9, so s_q = 2, L = (2/9)/2 + min(1/3 - 2/9, 4/9) = 2/9.
#   K=5, q=3, mu=2/3: (q/K) C(5,2) = 6; B_2 = 1/6, B_1 = C(2,1) C(2,1)/6 = 2/3, so s_q = 2,
#     L = (1/6)/2 + min(1/3 - 1/6, 2/3) = 1/12 + 1/6 = 1/4.
UNIFIED_LOAD_SMALL = {4: Fraction(2, 9), 5: Fraction(1, 4)}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    if mpiexec_path() is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel)")
    base = tmp_path_factory.mktemp("figures")
    out, kept = base / "png", base / "results"
    r = run_cmd([sys.executable, SCRIPT, "--run", "--small", "--out", str(out),
                 "--keep-results", str(kept)], timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out, kept, json.loads(r.stdout.strip().splitlines()[-1])


RESULTS = {"coded_T": "coded_T.jsonl", "coded_K": "coded_K.jsonl", "cec": "cec.jsonl"}


@pytest.fixture(scope="module")
def drawn(small_run: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory):
    """Each figure drawn again in this process from the kept results: kind -> (Figure,
    summary)."""
    _, kept, _ = small_run
    figures = load_figures()
    plt = KeepingPlt()
    out = tmp_path_factory.mktemp("figures_drawn")
    got = {}
    for kind, name in RESULTS.items():
        path = kept / name
        found, recs = figures.classify(path, figures.read_results(path))
        assert found == kind, (name, found)
        summary = figures.FIGURES[kind].draw(plt, recs, out / figures.FIGURES[kind].png)
        got[kind] = (plt.figures[-1], summary)
    yield got
    plt.close_all()


@pytest.mark.mpi
def test_small_run_draws_every_figure(small_run: tuple[Path, Path, dict]) -> None:
    out, kept, summary = small_run
    for name in PNGS:
        assert (out / name).is_file(), name
    # loads are exact on both sides: every measured bdc load is the model's at its Q
    for kind in ("coded_T", "coded_K"):
        for p in summary[kind]["points"]:
            assert p["load_measured_equals_model_at_Q"], p
            assert p["load_measured_unified"] == pytest.approx(p["load_model_unified"])
    assert len(summary["coded_T"]["points"]) >= 2
    assert [p["K"] for p in summary["coded_K"]["points"]] == sorted(
        {p["K"] for p in summary["coded_K"]["points"]})
    cec = summary["cec"]
    for pol in ("heterogeneous", "cyclic"):
        assert len(cec[pol]["model_s"]) == len(cec[pol]["measured_s"]) == 4
    # the seed's example: cyclic over heterogeneous plan time, integer rows of 420 per block
    assert cec["speedup_model"] == pytest.approx(0.2394 / 0.1936)


@pytest.mark.mpi
def test_coded_vs_T_plots_the_model_and_the_runs(small_run, drawn) -> None:
    fig, summary = drawn["coded_T"]
    assert summary["points"] == small_run[2]["coded_T"]["points"]
    ax_load, ax_tot, ax_ph = fig.axes
    pts = summary["points"]
    Ts = [float(p["T"]) for p in pts]
    assert (ax_load.get_title(), ax_tot.get_title(), ax_ph.get_title()) == (
        "(a) shuffle load", "(b) total delay, normalised to unified",
        "(c) per phase, normalised to unified")
    for ax in fig.axes:
        assert ax.get_xscale() == "log" and ax.get_xlabel().startswith("partitions T")
        assert [float(t) for t in ax.get_xticks()] == Ts
    assert ax_tot.get_yscale() == ax_ph.get_yscale() == "log"
    assert ax_load.get_ylabel().startswith("communication load")
    # (a) the unified model: flat at the hand-computed load; BDC at T = 1 is unified
    load = lines_of(ax_load)
    K = pts[0]["K"]
    flat = xy(load["model: unified"])[1]
    assert flat == pytest.approx([float(UNIFIED_LOAD_SMALL[K])] * len(flat))
    assert at(load["model: BDC"], 1.0) == pytest.approx(float(UNIFIED_LOAD_SMALL[K]))
    for p, T in zip(pts, Ts):
        assert at(load["model: BDC"], T) == pytest.approx(p["load_model_bdc"])
    at_q = load["model: BDC at the runs' finishing sets Q"]
    assert xy(at_q) == (Ts, [pytest.approx(statistics.median(p["load_model_bdc_at_Q"]))
                             for p in pts])
    measured = bars_of(ax_load)
    assert xy(measured["measured: BDC"])[1] == [pytest.approx(p["load_measured_bdc"])
                                               for p in pts]
    assert xy(measured["measured: unified"])[1] == [
        pytest.approx(float(UNIFIED_LOAD_SMALL[K]))] * len(pts)
    # (b) total delay ratio, (c) per phase: the model's curves and the measured medians
    tot = lines_of(ax_tot)["model: D_BDC / D_unified"]
    for p, T in zip(pts, Ts):
        assert at(tot, T) == pytest.approx(p["delay_ratio_model"])
    assert xy(bars_of(ax_tot)["measured: encode+map+reduce"]) == (
        Ts, [pytest.approx(p["delay_ratio_measured"]) for p in pts])
    phase = lines_of(ax_ph)
    for ph in ("encode", "map", "reduce"):
        for p, T in zip(pts, Ts):
            assert at(phase[f"model: {ph}"], T) == pytest.approx(p[f"{ph}_ratio_model"])
        assert xy(bars_of(ax_ph)[f"measured: {ph}"])[1] == [
            pytest.approx(p[f"{ph}_ratio_measured"]) for p in pts]


@pytest.mark.mpi
def test_coded_vs_K_plots_the_model_and_the_runs(drawn) -> None:
    fig, summary = drawn["coded_K"]
    pts = summary["points"]
    Ks = [float(p["K"]) for p in pts]
    assert Ks == [4.0, 5.0]  # the small preset's K sweep
    for ax in fig.axes:
        assert ax.get_xlabel() == "servers K" and ax.get_xscale() == "linear"
        assert [float(t) for t in ax.get_xticks()] == Ks
    ax_load, ax_tot, _ = fig.axes
    load = lines_of(ax_load)
    assert xy(load["model: unified"]) == (
        Ks, [pytest.approx(float(UNIFIED_LOAD_SMALL[int(k)])) for k in Ks])
    assert xy(load["model: BDC"]) == (Ks, [pytest.approx(p["load_model_bdc"]) for p in pts])
    assert xy(lines_of(ax_tot)["model: D_BDC / D_unified"])[1] == [
        pytest.approx(p["delay_ratio_model"]) for p in pts]


@pytest.mark.mpi
def test_cec_steps_plots_the_plan_times_and_the_runs(drawn) -> None:
    fig, summary = drawn["cec"]
    ax, axc = fig.axes
    assert ax.get_ylabel() == "step time (s)" and axc.get_ylabel() == "cumulative time (s)"
    # the seed example's schedule: machines {}, {4}, {4, 6}, {1, 4, 6} preempted
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["1\n{1,2,3,4,5,6}", "2\n{1,2,3,5,6}", "3\n{1,2,3,5}", "4\n{2,3,5}"]
    steps = [1.0, 2.0, 3.0, 4.0]
    model = {c.get_label(): c for c in ax.collections if c.get_label().startswith("model")}
    totals = {}
    for pol in ("heterogeneous", "cyclic"):
        s = summary[pol]
        segs = model[f"model: {pol}"].get_segments()
        assert [float(seg[0][1]) for seg in segs] == pytest.approx(s["model_s"])
        assert [float(seg[:, 0].mean()) for seg in segs] == pytest.approx(steps)
        meas = xy(bars_of(ax)[f"measured: {pol}"])
        assert meas[1] == pytest.approx(s["measured_s"])
        cum = [ln for ln in axc.get_lines() if ln.get_label() == f"model: {pol}"][0]
        assert xy(cum) == ([0.0, *steps], pytest.approx([0.0, *accumulate(s["model_s"])]))
        totals[pol] = sum(s["model_s"])
    # integer rows of 420 per block (``plan cec --rows 420``): the cyclic plan computes
    # 2394 row units over the schedule, the heterogeneous one 1936 (the speedup above)
    assert totals["cyclic"] / totals["heterogeneous"] == pytest.approx(2394 / 1936)


@pytest.mark.mpi
def test_redraw_from_results(small_run: tuple[Path, Path, dict], tmp_path: Path) -> None:
    _, kept, summary = small_run
    files = [str(kept / f) for f in RESULTS.values()]
    r = run_cmd([sys.executable, SCRIPT, "--results", *files, "--out", str(tmp_path)],
                timeout=120)
    assert r.returncode == 0, r.stderr
    for name in PNGS:
        assert (tmp_path / name).is_file(), name
    again = json.loads(r.stdout.strip().splitlines()[-1])
    assert again["coded_T"]["points"] == summary["coded_T"]["points"]
    assert again["cec"]["heterogeneous"]["model_s"] == summary["cec"]["heterogeneous"]["model_s"]


def test_missing_results_file_is_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    r = run_cmd([sys.executable, SCRIPT, "--results", str(missing), "--out", str(tmp_path)],
                timeout=60)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0], r.stderr
    assert lines[0].startswith("figures.py: error:")
    assert not list(tmp_path.glob("*.png"))


def test_results_without_usable_lines_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "summary"}\n')
    r = run_cmd([sys.executable, SCRIPT, "--results", str(bad), "--out", str(tmp_path)],
                timeout=60)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text("not json\n")
    r = run_cmd([sys.executable, SCRIPT, "--results", str(garbled), "--out", str(tmp_path)],
                timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


PAPER_BENCH = {"cores": 2, "paper": {
    str(T): {"encode_s": e, "model_encode_s": e * 0.8, "reduce_s": r, "model_reduce_s": r * 0.7}
    for T, e, r in ((1, 0.9, 0.6), (10, 0.8, 0.5), (1000, 0.3, 0.25))},
    "bdc_over_unified_measured": {"10": 0.87, "1000": 0.37},
    "bdc_over_unified_model": {"10": 0.9, "1000": 0.4}}


def test_bench_outputs_are_drawn(tmp_path: Path) -> None:
    """--rs-bench and --paper-bench draw the RS figures from the benches' last JSON lines."""
    src = tmp_path / "paper.txt"
    src.write_text("progress line\n" + json.dumps(PAPER_BENCH) + "\n")
    r = run_cmd([sys.executable, SCRIPT, "--paper-bench", str(src), "--out",
                 str(tmp_path / "png")], timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("rs_paper_phases.png", "rs_bdc_vs_T_paper.png"):
        assert (tmp_path / "png" / name).is_file(), name
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["phases"]["encode_measured"] == [0.9, 0.8, 0.3]
    assert summary["ratio"]["measured"] == [0.87, 0.37]
    bad = tmp_path / "bad.txt"
    bad.write_text(json.dumps({"bdc_over_unified_measured": {}}) + "\n")
    r = run_cmd([sys.executable, SCRIPT, "--paper-bench", str(bad), "--out",
                 str(tmp_path / "png")], timeout=120)
    assert r.returncode != 0 and "bench_paper.py" in r.stderr


def test_bench_figures_plot_the_bench_numbers(tmp_path: Path) -> None:
    figures = load_figures()
    plt = KeepingPlt()
    try:
        figures.figure_paper_phases(plt, PAPER_BENCH, tmp_path / "phases.png")
        figures.figure_rs_bdc_vs_T(plt, {**PAPER_BENCH, "scaled_m": 6000}, tmp_path / "r.png")
        phases, ratio = plt.figures
        (ax,) = phases.axes
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert ax.get_xlabel() == "partitions T (1: unified)"
        assert ax.get_ylabel() == "seconds (9 servers on 2 cores)"
        got = lines_of(ax)
        Ts = [1.0, 10.0, 1000.0]
        assert xy(got["encode, measured"]) == (Ts, [0.9, 0.8, 0.3])
        assert xy(got["encode, calibrated model"]) == (Ts, pytest.approx([0.72, 0.64, 0.24]))
        assert xy(got["reduce, measured"]) == (Ts, [0.6, 0.5, 0.25])
        assert xy(got["reduce, calibrated model"]) == (Ts, pytest.approx([0.42, 0.35, 0.175]))
        (ax,) = ratio.axes
        assert ax.get_title() == "RS codes over GF(2^16), m = n = N = 6000"
        got = lines_of(ax)
        assert xy(got["measured"]) == ([10.0, 1000.0], [0.87, 0.37])
        assert xy(got["calibrated model"]) == ([10.0, 1000.0], [0.9, 0.4])
        assert not ax.containers  # one run: no spread to draw
    finally:
        plt.close_all()


def test_the_ratio_of_independent_runs_carries_their_iqr(tmp_path: Path) -> None:
    figures = load_figures()
    plt = KeepingPlt()
    merged = {**PAPER_BENCH, "scaled_m": 1800, "scaled_summary": {"per_T": {
        "10": {"measured": {"q1": 0.8, "q3": 0.95, "n": 3}},
        "1000": {"measured": {"q1": 0.3, "q3": 0.5, "n": 3}}}}}
    try:
        figures.figure_rs_bdc_vs_T(plt, merged, tmp_path / "r.png")
        (ax,) = plt.figures[0].axes
        (bars,) = ax.containers
        assert bars.get_label() == "IQR over 3 runs"
        segs = [seg.tolist() for seg in bars.lines[2][0].get_segments()]
        assert segs == [[[10.0, 0.8], [10.0, 0.95]], [[1000.0, 0.3], [1000.0, 0.5]]]
    finally:
        plt.close_all()


def _case(meas: float, model: float) -> dict[str, float]:
    return {"shuffle_s": meas, "shuffle_model_s": model}


NETWORK_BENCH = {
    "coded": {r: {"p2p": {"uc": _case(0.4 * f, 0.38 * f), "cmr": _case(0.35 * f, 0.33 * f)},
                  "bcast": {"cmr": _case(0.36 * f, 0.33 * f)}}
              for r, f in (("1gbit", 0.25), ("100mbit", 1.0))},
    "tradeoff": {"K": 9, "rate": "100mbit", "t_row": 0.003, "best_q_measured": 3,
                 "best_q_model": 3,
                 "points": [{"q": q, "total_s": t, "model_total_s": m, "total_iqr": [t, t]}
                            for q, t, m in ((9, 3.1, 3.0), (3, 2.0, 2.1), (6, 2.3, 2.2))]},
    "elastic": {r: {"seed": {p: {"measured": {"total_s": t}, "model": {"total_s": t * 0.9}}
                             for p, t in (("coded", 1.0 + g), ("uncoded", 1.0 + 3 * g))}}
                for r, g in (("100mbit", 0.5), ("1gbit", 0.05))}}


def test_network_bench_arrays_and_figures(tmp_path: Path) -> None:
    """--network-bench: the arrays of the three network figures, from the bench's JSON."""
    figures = load_figures()
    arr = figures.network_arrays(NETWORK_BENCH)
    uc = arr["shuffle"]["p2p"]["uc"]
    assert uc["rate_bps"] == [1e8, 1e9]  # sorted by rate
    assert uc["measured"] == pytest.approx([0.4, 0.1])
    assert uc["model"] == pytest.approx([0.38, 0.095])
    assert set(arr["shuffle"]["bcast"]) == {"cmr"}
    assert arr["tradeoff"]["q"] == [3, 6, 9]
    assert arr["tradeoff"]["measured"] == [2.0, 2.3, 3.1]
    assert arr["tradeoff"]["model"] == [2.1, 2.2, 3.0]
    el = arr["elastic"]["seed"]
    assert el["uncoded"]["rate_bps"] == [1e8, 1e9]
    assert el["uncoded"]["measured"] == pytest.approx([2.5, 1.15])
    assert el["coded"]["model"] == pytest.approx([1.35, 0.945])
    plt = KeepingPlt()
    try:
        got = figures.figure_network(plt, NETWORK_BENCH, tmp_path)
        shuffle, tradeoff, elastic = plt.figures
        p2p, bcast = shuffle.axes
        assert p2p.get_title() == "shuffle, p2p" and p2p.get_xscale() == "log"
        lines = lines_of(p2p)
        assert xy(lines["uc, measured"]) == ([1e8, 1e9], pytest.approx([0.4, 0.1]))
        assert xy(lines["cmr, model"]) == ([1e8, 1e9], pytest.approx([0.33, 0.0825]))
        (ax,) = tradeoff.axes
        assert xy(lines_of(ax)["measured"]) == ([3.0, 6.0, 9.0], [2.0, 2.3, 3.1])
        assert "best q: measured 3, model 3" in ax.get_title()
        (ax,) = elastic.axes
        assert xy(lines_of(ax)["uncoded, model"])[1] == pytest.approx([2.25, 1.035])
        for key in ("shuffle_png", "tradeoff_png", "elastic_png"):
            assert Path(got[key]).is_file()
    finally:
        plt.close_all()
    with pytest.raises(figures.FigError, match="bench_network.py"):
        figures.network_arrays({"bdc_over_unified_measured": {}})
