"""The analytic side beside the real runs: which figure a results file feeds, drawing every
figure, the jobs that make their data, and the benches' figures (``scripts/figures.py`` is
the command line over this module).

Three figures of real runs, the MODEL as curves and REAL runs (JSON lines of
``mpi-coded run``) as points: ``coded_vs_T.png`` and ``coded_vs_K.png``
(:mod:`.coded_figures`) and ``cec_steps.png`` (:mod:`.elastic_figures`).  Results files are
read through :mod:`mpi_coded.results`; every file is one figure's data, told apart by
content (:func:`classify`): a file with elastic ``step`` lines feeds ``cec_steps.png``; a
coded file whose runs span one ``K`` feeds ``coded_vs_T.png``, several ``K``
``coded_vs_K.png``.  :func:`run_all` makes those three files with a given launcher.

Adding a figure: a ``figure_<name>(plt, lines, out) -> summary`` function, an entry in
:data:`FIGURES`, and a rule in :func:`classify` that recognises its results files.  A
drawer saves its PNG and then closes its figure with ``plt.close(fig)`` on the ``plt`` it
was given: tests/test_figures.py passes a ``plt`` whose ``close`` keeps the figure, and
checks the plotted data, axes and labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from mpi_coded import results
from mpi_coded.cec.config import load_config
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.errors import ConfigError
from mpi_coded.plotting import FigError
from mpi_coded.plotting.bench_figures import (
    NETWORK_PNGS,
    figure_network,
    figure_paper_phases,
    figure_rs_bdc_vs_T,
    network_arrays,
)
from mpi_coded.plotting.coded_figures import (
    CANDIDATE,
    REFERENCE,
    coded_runs,
    figure_coded_K,
    figure_coded_T,
)
from mpi_coded.plotting.elastic_figures import figure_cec

__all__ = ["FIGURES", "NETWORK_PNGS", "PRESETS", "FigError", "Figure", "Preset",
           "classify", "draw_all", "draw_bench", "draw_files", "figure_cec", "figure_coded_K",
           "figure_coded_T", "figure_network", "figure_paper_phases", "figure_rs_bdc_vs_T",
           "last_json", "network_arrays", "read_results", "run_all"]


# ------------------------------------------------------------------------------------------
# reading results (through mpi_coded.results)


def read_results(path: Path) -> list[dict[str, Any]]:
    """The lines of the results file at ``path`` (:func:`mpi_coded.results.read_results`);
    :class:`FigError` if it is missing, unreadable or not JSON lines."""
    if not path.is_file():
        raise FigError(f"results file not found: {path}")
    try:
        return results.read_results(path)
    except OSError as exc:
        raise FigError(f"cannot read {path}: {exc}") from None
    except results.SchemaError as exc:
        raise FigError(str(exc)) from None


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


@dataclass(frozen=True)
class Figure:
    """A figure of real runs: its PNG's name and its drawer."""

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
    """Every figure of :data:`FIGURES` that ``groups`` (key -> its data) has, into
    ``out_dir``; per figure its summary and PNG path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    for kind, fig in FIGURES.items():
        if kind in groups:
            path = out_dir / fig.png
            summary[kind] = fig.draw(plt, groups[kind], path)
            summary[kind]["png"] = str(path)
            print(f"wrote {path} ({path.stat().st_size} bytes)")
    return summary


def draw_files(plt: Any, paths: list[Path], out_dir: Path) -> dict[str, Any]:
    """Every figure the results files feed (files of one kind merged), into ``out_dir``."""
    groups: dict[str, list[Any]] = {}
    for p in paths:
        kind, recs = classify(p, read_results(p))
        groups.setdefault(kind, []).extend(recs)
    return draw_all(plt, groups, out_dir)


# ------------------------------------------------------------------------------------------
# the benches' outputs


def last_json(path: Path) -> dict[str, Any]:
    """The last JSON object line of a bench's output (its other lines are progress)."""
    try:
        lines = results.scan_results(path)
    except OSError as exc:
        raise FigError(f"cannot read {path}: {exc}") from None
    objs = [ln.record for ln in lines if isinstance(ln.record, dict)]
    if not objs:
        raise FigError(f"{path}: no JSON line (the bench's output?)")
    return objs[-1]


BENCHES = ("rs", "paper", "network")
"""The benches :func:`draw_bench` draws: ``scripts/bench_coded.py``, ``bench_paper.py``,
``bench_network.py``."""


def _draw_rs(plt: Any, bench: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    return figure_rs_bdc_vs_T(plt, bench, out_dir / "rs_bdc_vs_T.png")


def _draw_paper(plt: Any, bench: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    if "paper" not in bench:
        raise FigError("not scripts/bench_paper.py's output")
    summary = {"phases": figure_paper_phases(plt, bench, out_dir / "rs_paper_phases.png")}
    if "bdc_over_unified_measured" in bench:
        summary["ratio"] = figure_rs_bdc_vs_T(plt, {**bench, "scaled_m": 6000},
                                              out_dir / "rs_bdc_vs_T_paper.png")
    return summary


def _draw_network(plt: Any, bench: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    summary = figure_network(plt, bench, out_dir)
    for key in ("shuffle_png", "tradeoff_png", "elastic_png"):
        if key in summary:
            print(f"wrote {summary[key]}")
    return summary


_BENCH_DRAWERS = {"rs": _draw_rs, "paper": _draw_paper, "network": _draw_network}


def draw_bench(plt: Any, bench: str, path: Path, out_dir: Path) -> dict[str, Any]:
    """The figures of a bench's output file (``bench``: one of :data:`BENCHES`) into
    ``out_dir``: ``rs`` draws ``rs_bdc_vs_T.png``; ``paper`` ``rs_paper_phases.png`` and,
    with the ratios, ``rs_bdc_vs_T_paper.png``; ``network`` the :data:`NETWORK_PNGS`."""
    data = last_json(path)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _BENCH_DRAWERS[bench](plt, data, out_dir)
    except FigError as exc:
        raise FigError(f"{path}: {exc}") from None


# ------------------------------------------------------------------------------------------
# running the jobs


@dataclass(frozen=True)
class Preset:
    """The sizes of the jobs :func:`run_all` launches."""

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
    "small": Preset(K_T=4, Ts=(1, 12), Ks=(4, 5), m=36, n=24, N=6, field="float64",
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
    reference = get_scheme(REFERENCE)
    best: CodedParams | None = None
    why: ConfigError | None = None
    for eta in range(1, 4 * preset.m + 1):
        try:
            p = reference.params(K, q, mu, eta, preset.n, preset.N, field=preset.field)
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
    cand = get_scheme(CANDIDATE)
    for T in range(base.m, 0, -1):
        try:
            p = cand.params(base.K, base.q, base.mu, base.rows_per_batch, base.n, base.N, T,
                            base.field)
        except ConfigError:
            continue
        if p.m // p.partitions >= part_rows:
            return T
    raise FigError(f"no bdc job at K={base.K} m={base.m} with partitions of >= {part_rows} "
                   "rows")


Launch = Callable[..., None]
"""``launch(n, args, timeout=...)``: run ``mpiexec -n n python -m mpi_coded ARGS`` and wait
(``scripts/_launch.py``'s ``run_mpi``); this module starts no process itself."""


def coded_args(scheme: str, base: CodedParams, T: int, preset: Preset, out: Path) -> list[str]:
    """The ``run coded`` arguments of ``scheme`` at ``base``'s setting (``T`` if the scheme
    is partitioned) with the preset's stragglers and repetitions."""
    args = ["run", "coded", "--scheme", scheme, "--K", str(base.K), "--q", str(base.q),
            "--mu", str(base.mu), "--rows-per-batch", str(base.rows_per_batch), "--n",
            str(preset.n), "--N", str(preset.N), "--field", preset.field, "--straggler",
            "shiftexp", "--t-row", str(preset.t_row), "--reps", str(preset.reps),
            "--seed", "0", "--timeout", str(preset.timeout), "--out", str(out)]
    if get_scheme(scheme).partitioned:
        args += ["--T", str(T)]
    return args


def run_all(preset: Preset, work: Path, launch: Launch) -> dict[str, Path]:
    """Run the jobs of the three figures with ``launch`` into ``work``: the T sweep, the K
    sweep (each job once, shared by both) and the elastic job's policies ``cec_repeats``
    times; the results file of each figure (a key of :data:`FIGURES`)."""
    done: dict[tuple[Any, ...], Path] = {}

    def coded(scheme: str, base: CodedParams, T: int) -> Path:
        key = (scheme, base.K, base.q, base.mu, base.rows_per_batch, T)
        if key not in done:
            out = work / f"run_{scheme}_K{base.K}_T{T}.jsonl"
            launch(base.K + 1, coded_args(scheme, base, T, preset, out),
                   timeout=preset.timeout)
            done[key] = out
        return done[key]

    def concat(paths: list[Path], dest: Path) -> Path:
        dest.write_text("".join(p.read_text() for p in paths))
        return dest

    files: dict[str, Path] = {}
    base = k_setting(preset.K_T, preset)
    t_runs = [coded(REFERENCE, base, 1)] + [coded(CANDIDATE, base, T) for T in preset.Ts]
    files["coded_T"] = concat(t_runs, work / "coded_T.jsonl")
    k_runs = []
    for K in preset.Ks:
        base = k_setting(K, preset)
        k_runs += [coded(REFERENCE, base, 1),
                   coded(CANDIDATE, base, largest_T(base, preset.part_rows))]
    files["coded_K"] = concat(k_runs, work / "coded_K.jsonl")
    cec = work / "cec.jsonl"
    cec.unlink(missing_ok=True)
    world = load_config(None).world_size  # the default job: the heterogeneous CEC example
    for rep in range(preset.cec_repeats):
        for policy in ("heterogeneous", "cyclic"):
            launch(world, ["run", "cec", "--policy", policy, "--t-row", str(preset.cec_t_row),
                           "--seed", str(rep), "--out", str(cec)], timeout=preset.timeout)
    files["cec"] = cec
    return files
