"""The benches' figures, drawn from a bench's last JSON line: BDC over unified with
Reed-Solomon codes (``scripts/bench_coded.py``, ``rs_bdc_vs_T.png``), the paper's setting
phase by phase (``scripts/bench_paper.py``, ``rs_paper_phases.png``) and the network
figures (``scripts/bench_network.py``: shuffle against the link rate, the ``q`` tradeoff,
the elastic job against the rate).  Each drawer saves its PNG(s), closes its figure with
``plt.close(fig)`` and returns the numbers it drew.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpi_coded import plotting
from mpi_coded.plotting import POLICY_COLORS, SCHEME_COLORS, FigError
from mpi_coded.rates import format_rate, parse_rate


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
NETWORK_COLORS = {"uc": "tab:blue", "cmr": "tab:green", "unified": SCHEME_COLORS["unified"],
                  "bdc": SCHEME_COLORS["bdc"], "lt": "tab:purple"}


def _rate_bps(rate: str) -> float:
    """A link rate (``100mbit``) in bit/s."""
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
    """A log x axis with one tick per rate, labelled as rates are written."""
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
    out: dict[str, Any] = {"arrays": arr}
    modes = [m for m in ("p2p", "bcast") if m in arr["shuffle"]]
    if modes:
        fig, axes = plt.subplots(1, len(modes), figsize=(5.2 * len(modes), 4), sharey=True,
                                 squeeze=False)
        for ax, mode in zip(axes[0], modes):
            rates: list[float] = []
            for scheme, v in arr["shuffle"][mode].items():
                plotting.points_on_model(ax, v["rate_bps"], v["measured"], v["model"],
                                         label=scheme, color=NETWORK_COLORS.get(scheme))
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
